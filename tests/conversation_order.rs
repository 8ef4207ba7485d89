//! Per-conversation order (issue 10, item 1): `/local` followed at once by a code paste is
//! routed under the flag, however the two messages reach the router. Two router processes
//! share the work; the code paste never reaches the cloud and every route decision of the
//! conversation records `local_only = true`.

mod support;

use std::time::Duration;

use futures::future::join_all;
use ghost::stack::ServiceName;
use ghost_testkit::fake_llm::FakeLlm;
use ghost_testkit::scenarios::local_then_code::{self, CODE_PASTE};
use ghost_testkit::testing::eventually;
use serde_json::{json, Value};
use support::platforms::{line_text_event, slack_event, ChannelApp, BOT};

/// Repetitions of each way of sending the pair (the "Must show").
const REPETITIONS: usize = 50;

/// Ghost with every service but the router in this process, two `ghost run router`
/// processes, fake LINE and Slack, and a fake cloud that must never be called.
struct OrderApp {
    c: ChannelApp,
    cloud: FakeLlm,
    routers: Vec<tokio::process::Child>,
}

impl OrderApp {
    async fn spawn() -> OrderApp {
        let cloud = FakeLlm::start().await.expect("fake cloud");
        let cb = cloud.base_url();
        let vars = local_then_code::config(&cb);
        let services: Vec<ServiceName> = ServiceName::ALL
            .into_iter()
            .filter(|s| *s != ServiceName::Router)
            .collect();
        let c = ChannelApp::spawn_services(&services, &vars).await;
        // Kuro and the classifier say CODE; `ghost-harness chaos --cluster --order-pairs`
        // scripts the same answers.
        local_then_code::script(&c.app.llm, &cloud);
        let routers = (0..2)
            .map(|_| c.app.spawn_child("router", &[("RUST_LOG", "error")]))
            .collect();
        OrderApp { c, cloud, routers }
    }

    async fn post_line(&self, events: Vec<Value>) {
        let body = json!({ "destination": "Ubot", "events": events }).to_string();
        assert_eq!(self.c.post_line_signed(&body).await, 200);
    }

    async fn post_slack(&self, body: String) {
        assert_eq!(self.c.post_slack_signed(&body, None).await, 200);
    }

    /// Waits until every one of `sessions` has two route decisions and two answered
    /// turns; returns the route decisions.
    async fn settled(&self, sessions: &[String]) -> Vec<Value> {
        let pool = self.c.app.store.pool();
        eventually(Duration::from_secs(120), "every turn answered", || async {
            let answered: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM events WHERE stream = ANY($1) \
                 AND event_type IN ('AssistantReplied', 'RenderFailed')",
            )
            .bind(streams(sessions))
            .fetch_one(pool)
            .await
            .expect("count");
            (answered as usize >= 2 * sessions.len()).then_some(())
        })
        .await;
        sqlx::query_scalar(
            "SELECT payload FROM events WHERE stream = ANY($1) AND event_type = 'RouteDecided'",
        )
        .bind(streams(sessions))
        .fetch_all(pool)
        .await
        .expect("route decisions")
    }

    /// The pair was routed under the flag everywhere, and the cloud saw nothing.
    async fn assert_local(&self, sessions: &[String]) {
        let decisions = self.settled(sessions).await;
        assert_eq!(decisions.len(), 2 * sessions.len(), "two decisions each");
        let lost: Vec<&Value> = decisions
            .iter()
            .filter(|d| d["local_only"] != json!(true))
            .collect();
        assert!(lost.is_empty(), "local_only lost: {lost:#?}");
        // Chat calls only: each router process probes the models once at start.
        let calls: Vec<String> = self
            .cloud
            .requests()
            .into_iter()
            .map(|r| r.path)
            .filter(|path| path.contains("chat"))
            .collect();
        assert!(calls.is_empty(), "nothing reached the cloud: {calls:?}");
    }

    async fn cleanup(mut self) {
        for r in &mut self.routers {
            let _ = r.kill().await;
        }
        self.c.cleanup().await;
        self.cloud.shutdown().await;
    }
}

fn streams(sessions: &[String]) -> Vec<String> {
    sessions
        .iter()
        .map(|s| ghost_shared::envelope::session_stream(s))
        .collect()
}

fn line_pair(n: usize, user: &str) -> [Value; 2] {
    [
        line_text_event(
            &format!("{user}-a"),
            user,
            "/local",
            &format!("rt-{n}a"),
            false,
        ),
        line_text_event(
            &format!("{user}-b"),
            user,
            CODE_PASTE,
            &format!("rt-{n}b"),
            false,
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn local_then_code_in_one_line_batch_never_reaches_the_cloud() {
    let o = OrderApp::spawn().await;
    let users: Vec<String> = (0..REPETITIONS).map(|n| format!("Ubatch{n}")).collect();
    join_all(users.iter().enumerate().map(|(n, user)| {
        let o = &o;
        async move { o.post_line(line_pair(n, user).to_vec()).await }
    }))
    .await;
    let sessions: Vec<String> = users.iter().map(|u| format!("line:user:{u}")).collect();
    o.assert_local(&sessions).await;
    o.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn local_then_code_as_two_line_webhooks_never_reaches_the_cloud() {
    let o = OrderApp::spawn().await;
    let users: Vec<String> = (0..REPETITIONS).map(|n| format!("Utwo{n}")).collect();
    join_all(users.iter().enumerate().map(|(n, user)| {
        let o = &o;
        async move {
            let [local, code] = line_pair(n, user);
            o.post_line(vec![local]).await;
            o.post_line(vec![code]).await;
        }
    }))
    .await;
    let sessions: Vec<String> = users.iter().map(|u| format!("line:user:{u}")).collect();
    o.assert_local(&sessions).await;
    o.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn local_then_code_in_one_slack_thread_never_reaches_the_cloud() {
    let o = OrderApp::spawn().await;
    let threads: Vec<String> = (0..REPETITIONS)
        .map(|n| format!("1700000{n:03}.000100"))
        .collect();
    join_all(threads.iter().enumerate().map(|(n, thread)| {
        let o = &o;
        async move {
            for (i, text) in ["/local", CODE_PASTE].into_iter().enumerate() {
                let ts = format!("1700001{n:03}.00010{i}");
                let inner = json!({"type":"app_mention","user":"U7",
                    "text":format!("<@{BOT}> {text}"),"ts":ts,"thread_ts":thread,"channel":"C1"});
                o.post_slack(slack_event(&format!("Ev-{n}-{i}"), inner))
                    .await;
            }
        }
    }))
    .await;
    let sessions: Vec<String> = threads.iter().map(|t| format!("slack:C1:{t}")).collect();
    o.assert_local(&sessions).await;
    o.cleanup().await;
}

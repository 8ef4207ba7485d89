//! Cloud spend has a ceiling (`coder.daily_token_cap`): under the cap a CODE turn reaches
//! the (fake) cloud and its tokens are stored; over it the user gets a short notice in the
//! language of the message and the cloud gets nothing; `/healthz` and `ghost doctor` show
//! the day's use and the cap; a redelivered request counts once, a coder that never
//! called the cloud knows the day's use from the store, and a coder killed between the call
//! and storing its answer is not followed by a second call.

mod routing_support;
mod support;

use std::time::Duration;

use ghost::stack::ServiceName;
use ghost_shared::envelope::EventPayload;
use ghost_shared::events::{
    token_cap_notice, CloudTokensUsed, CoderCallStarted, RenderFailed, WorkerFailed,
};
use ghost_testkit::fake_llm::Script;
use routing_support::{kind, Kind, RoutingApp, Scripts, CONTRACT_OK, PERSONA_REPLY};
use serde_json::Value;
use support::SseEvent;

/// The cap these tests set (the smallest accepted).
const CAP: &str = "1000";

/// Starts `services` in this process with the cap, the fake cloud reporting `usage` per
/// call.
async fn spawn(services: &[ServiceName], usage: (u64, u64)) -> RoutingApp {
    spawn_with(services, usage, &[]).await
}

/// [`spawn`] with `extra` overrides.
async fn spawn_with(
    services: &[ServiceName],
    usage: (u64, u64),
    extra: &[(&str, &str)],
) -> RoutingApp {
    let mut vars = vec![("GHOST_CODER__DAILY_TOKEN_CAP", CAP)];
    vars.extend_from_slice(extra);
    let r = RoutingApp::spawn_services(services, Scripts::default(), &vars).await;
    r.cloud
        .set_responder(move |_| Script::chunks(vec![CONTRACT_OK]).with_usage(usage.0, usage.1));
    r
}

/// Completions the fake cloud was asked for (health probes are GETs of the model list).
fn cloud_calls(r: &RoutingApp) -> usize {
    r.cloud
        .requests()
        .iter()
        .filter(|q| q.path.ends_with("/chat/completions"))
        .count()
}

/// The stored usage events of a session, as (prompt, completion, reported).
async fn usage(r: &RoutingApp, session: &str) -> Vec<(u64, u64, bool)> {
    r.of_type(session, CloudTokensUsed::EVENT_TYPE)
        .await
        .iter()
        .map(|e| {
            let u: CloudTokensUsed = e.decode().expect("CloudTokensUsed");
            (u.prompt_tokens, u.completion_tokens, u.reported)
        })
        .collect()
}

/// Starts a CODE turn in `session` with a coder child that aborts at the fault point
/// `fault`, and waits for the crash; the client's events come once the turn ends.
async fn code_turn_crashing_at(
    r: &RoutingApp,
    session: &str,
    fault: &str,
) -> tokio::task::JoinHandle<Vec<SseEvent>> {
    let mut doomed = r.app.spawn_child("coder", &[("GHOST_FAULTS", fault)]);
    let client = r.start_turn(session, "/code fix this");
    let status = tokio::time::timeout(Duration::from_secs(30), doomed.wait())
        .await
        .expect("the armed coder crashes")
        .expect("coder exit status");
    assert!(!status.success(), "the fault point aborted the coder");
    client
}

/// A chat turn answered by the persona (after the route's declaration line, if any).
async fn replied(r: &RoutingApp, session: &str, text: &str) {
    let reply = r.say(session, text).await;
    assert!(reply.ends_with(PERSONA_REPLY), "{reply}");
}

/// The SSE `error` a refused turn ends with: its code and message.
fn refusal(events: &[SseEvent]) -> (String, String) {
    let last = events.last().expect("an SSE event");
    assert_eq!(last.event, "error", "{events:?}");
    let field = |k: &str| last.data[k].as_str().unwrap_or_default().to_owned();
    (field("code"), field("message"))
}

/// The body of the gateway's answer to `GET path`.
async fn get_text(r: &RoutingApp, path: &str) -> String {
    let url = format!("{}{path}", r.app.base_url);
    let response = r.app.http.get(url).send().await.expect("GET");
    response.text().await.expect("body")
}

/// `GET /healthz`'s `cloud_spend` part.
async fn spend_part(r: &RoutingApp) -> Value {
    let body: Value = serde_json::from_str(&get_text(r, "/healthz").await).expect("JSON");
    body["checks"]["cloud_spend"].clone()
}

/// `ghost doctor`'s `cloud spend` line, run as its own process on the app's database.
async fn doctor_line(r: &RoutingApp) -> String {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_ghost"))
        .arg("doctor")
        .env(
            "GHOST_CONFIG_DIR",
            ghost_testkit::testing::repo_config_dir(),
        )
        .envs(r.app.env.vars.iter().cloned())
        .output()
        .await
        .expect("run ghost doctor");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    stdout
        .lines()
        .find(|l| l.contains("] cloud spend: "))
        .unwrap_or_else(|| panic!("no cloud spend line in:\n{stdout}"))
        .to_owned()
}

#[tokio::test]
async fn under_the_cap_code_reaches_the_cloud_and_over_it_the_user_gets_the_notice() {
    let r = spawn(&ServiceName::ALL, (600, 500)).await;
    replied(&r, "cap", "/code fix this function").await;
    assert_eq!(cloud_calls(&r), 1, "under the cap the cloud is called");
    assert_eq!(usage(&r, "cap").await, vec![(600, 500, true)]);

    // 1100 of 1000 used: the next CODE turns are refused, in the message's language.
    let ja = "/code この関数を直して";
    let (code, message) = refusal(&r.app.chat("cap", ja).await);
    assert_eq!(code, "daily_token_cap");
    assert_eq!(message, token_cap_notice(ja));
    assert!(message.starts_with("ごめんなさい"), "{message}");
    let en = "/code and this one too";
    let (_, message) = refusal(&r.app.chat("cap", en).await);
    assert_eq!(message, token_cap_notice(en));
    assert!(message.starts_with("Sorry"), "{message}");

    r.app.wait_idle().await;
    assert_eq!(cloud_calls(&r), 1, "nothing more was sent to the cloud");
    assert_eq!(usage(&r, "cap").await.len(), 1, "refusals use nothing");
    let refused = r.of_type("cap", RenderFailed::EVENT_TYPE).await;
    assert_eq!(refused.len(), 2);
    assert!(refused
        .iter()
        .all(|e| e.payload["code"] == "daily_token_cap"));
    // The turns ended with the notice: the persona wrote the first reply only.
    let replies = r
        .app
        .llm
        .requests()
        .iter()
        .filter(|q| q.path == "/api/chat" && kind(q) == Kind::Persona)
        .count();
    assert_eq!(replies, 1);
    // Chat goes on as before.
    replied(&r, "cap", "thanks anyway").await;
    r.cleanup().await;
}

#[tokio::test]
async fn healthz_and_doctor_show_the_days_use_and_the_cap() {
    let r = spawn(&ServiceName::ALL, (300, 200)).await;
    replied(&r, "show", "/code fix this function").await;
    r.app.wait_idle().await;
    let part = spend_part(&r).await;
    assert_eq!(part["status"], "ok", "{part}");
    assert_eq!(part["used_today"], 500, "{part}");
    assert_eq!(
        (&part["prompt_tokens"], &part["completion_tokens"]),
        (&Value::from(300), &Value::from(200)),
        "{part}"
    );
    assert_eq!(part["daily_token_cap"], 1000, "{part}");
    assert_eq!(
        doctor_line(&r).await,
        "[ ok ] cloud spend: 500 tokens used today (UTC; prompt 300, completion 200) of the 1000 cap"
    );

    // A second call uses the cap up: both say so.
    replied(&r, "show", "/code and the tests").await;
    r.app.wait_idle().await;
    let part = spend_part(&r).await;
    assert_eq!(
        (&part["status"], &part["used_today"]),
        (&Value::from("degraded"), &Value::from(1000)),
        "{part}"
    );
    assert_eq!(
        doctor_line(&r).await,
        "[note] cloud spend: 1000 tokens used today (UTC; prompt 600, completion 400) of the \
         1000 cap: used up, so CODE turns get a notice and nothing goes to the cloud until \
         00:00 UTC -- fix: wait for 00:00 UTC, or raise coder.daily_token_cap \
         (GHOST_CODER__DAILY_TOKEN_CAP)"
    );
    let metrics = get_text(&r, "/metrics").await;
    assert!(
        metrics.contains("ghost_coder_tokens_today{kind=\"prompt\"}"),
        "{metrics}"
    );
    r.cleanup().await;
}

#[tokio::test]
async fn a_redelivered_request_counts_once_and_a_restarted_coder_reads_the_days_use() {
    let services: Vec<ServiceName> = ServiceName::ALL
        .into_iter()
        .filter(|s| *s != ServiceName::Coder)
        .collect();
    let r = spawn(&services, (600, 500)).await;
    // The coder dies after storing the outcome and its usage, before acknowledging.
    let client = code_turn_crashing_at(&r, "again", "coder.after_append").await;
    assert_eq!(usage(&r, "again").await, vec![(600, 500, true)]);

    // Its successor gets the request again (ack wait 3 s in tests) and stores nothing new.
    let _successor = r.app.spawn_child("coder", &[]);
    let events = client.await.expect("chat client");
    assert_eq!(events.last().map(|e| e.event.as_str()), Some("done"));
    r.app.wait_idle().await;
    assert_eq!(usage(&r, "again").await.len(), 1, "counted once");
    assert_eq!(cloud_calls(&r), 1);
    assert_eq!(spend_part(&r).await["used_today"], 1100);

    // The successor never called the cloud itself, yet refuses: the day's use is the store's.
    let (code, _) = refusal(&r.app.chat("again", "/code one more").await);
    assert_eq!(code, "daily_token_cap");
    r.app.wait_idle().await;
    assert_eq!(cloud_calls(&r), 1);
    r.cleanup().await;
}

#[tokio::test]
async fn a_coder_killed_between_the_call_and_its_outcome_does_not_call_again() {
    let services: Vec<ServiceName> = ServiceName::ALL
        .into_iter()
        .filter(|s| *s != ServiceName::Coder)
        .collect();
    // A short call timeout: the successor waits it out (plus the coder's margin) before it
    // gives the earlier call up.
    let r = spawn_with(
        &services,
        (300, 200),
        &[("GHOST_LLM__CODER__TIMEOUT_SECS", "2")],
    )
    .await;
    let client = code_turn_crashing_at(&r, "cut", "coder.after_call").await;
    assert_eq!(cloud_calls(&r), 1, "called before the crash");
    assert_eq!(
        r.of_type("cut", CoderCallStarted::EVENT_TYPE).await.len(),
        1
    );

    // The successor finds the started call without an outcome and does not repeat it.
    let _successor = r.app.spawn_child("coder", &[]);
    let events = client.await.expect("chat client");
    assert!(!events.is_empty(), "the turn ended");
    r.app.wait_idle().await;
    assert_eq!(cloud_calls(&r), 1, "never called twice");
    let failed = r.of_type("cut", WorkerFailed::EVENT_TYPE).await;
    assert_eq!(failed.len(), 1);
    assert_eq!(
        failed[0].payload["code"], "interrupted",
        "{}",
        failed[0].payload
    );
    assert!(
        usage(&r, "cut").await.is_empty(),
        "the lost call's tokens are unknown"
    );
    r.cleanup().await;
}

/// Over the cap, a LINE user reads the notice in their language, not the channel's
/// generic failure line, and the cloud hears nothing more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_the_cap_a_line_user_reads_the_notice() {
    use support::platforms::{line_text, ChannelApp};
    let c = ChannelApp::spawn(&[("GHOST_CODER__DAILY_TOKEN_CAP", CAP)]).await;
    let coder_model = c.app.env.config.ghost.llm["coder"].model.clone();
    c.app.llm.set_responder(move |r| {
        if r.model.as_deref() == Some(coder_model.as_str()) {
            Script::reply(routing_support::CONTRACT_OK).with_usage(600, 500)
        } else {
            Script::reply("直しておいたよ")
        }
    });
    let first = line_text(
        "ev-cap-1",
        "U1",
        "/code main.rs のバグを直して",
        "rt-cap-1",
        false,
    );
    assert_eq!(c.post_line_signed(&first).await, 200);
    c.wait_events("ReplyDelivered", 1).await;
    let cloud = || {
        let model = c.app.env.config.ghost.llm["coder"].model.clone();
        c.app
            .llm
            .requests()
            .iter()
            .filter(|q| q.body["model"] == model.as_str())
            .count()
    };
    assert_eq!(cloud(), 1, "the first CODE turn reached the cloud");
    let text = "/code もう一度直して";
    let second = line_text("ev-cap-2", "U1", text, "rt-cap-2", false);
    assert_eq!(c.post_line_signed(&second).await, 200);
    let d = c.line_deliveries(2).await;
    assert_eq!(d[1].texts, vec![token_cap_notice(text).to_owned()]);
    assert_eq!(cloud(), 1, "nothing more went to the cloud");
    c.cleanup().await;
}

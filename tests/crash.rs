//! Crash safety with real processes: a `ghost run <service>` child aborts at the worst
//! moment (armed with GHOST_FAULTS), a fresh one takes over, and the turn completes exactly
//! once.

mod support;

use std::time::Duration;

use ghost::stack::ServiceName;
use ghost_shared::events::{AssistantReplied, RenderRequested, RouteDecided, UserMessageReceived};
use ghost_shared::projections::AssistantTextProjection;
use ghost_testkit::fake_llm::Script;
use ghost_testkit::fake_platforms::Scripted;
use ghost_testkit::testing::eventually;
use ghost_testkit::testing::free_loopback_addr;
use support::platforms::{line_sign, line_text, slack_event, slack_sign, ChannelApp, BOT};
use support::{read_sse, TestApp, TOKEN};

async fn wait_for_crash(child: &mut tokio::process::Child) {
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("the armed process crashes")
        .unwrap();
    assert!(!status.success(), "the fault point aborted the process");
}

fn start_chat(
    app: &TestApp,
    session: &str,
    text: &str,
) -> tokio::task::JoinHandle<Vec<support::SseEvent>> {
    let body = serde_json::json!({ "session_id": session, "text": text }).to_string();
    let request = app
        .http
        .post(format!("{}/api/chat", app.base_url))
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .body(body);
    tokio::spawn(async move { read_sse(request.send().await.unwrap()).await })
}

#[tokio::test]
async fn persona_killed_after_storing_the_reply_but_before_the_ack_replies_once() {
    let app = TestApp::spawn_services(&[ServiceName::Router, ServiceName::Gateway], &[]).await;
    app.reply(Script::reply("only once"));
    let mut doomed = app.spawn_child("persona", &[("GHOST_FAULTS", "persona.after_append")]);
    let client = start_chat(&app, "c1", "hello");
    wait_for_crash(&mut doomed).await;

    // The reply was committed before the crash; the request was never acked.
    let replies = |app: &TestApp| {
        let store = app.store.clone();
        async move {
            let events = store.read_stream("session-c1", 0).await.unwrap();
            events.iter().filter(|e| e.is::<AssistantReplied>()).count()
        }
    };
    assert_eq!(replies(&app).await, 1);

    let _successor = app.spawn_child("persona", &[]);
    let events = client.await.unwrap();
    let done = events.last().unwrap();
    assert_eq!(done.event, "done");
    assert_eq!(done.data["reply_text"], "only once");
    // Read your writes: `done` comes only once the turn is listed, also when the successor
    // announces the reply the crashed process stored.
    let listed = AssistantTextProjection::recent(app.store.pool(), "c1", 10)
        .await
        .unwrap();
    assert_eq!(listed.len(), 2, "listed when done arrives: {listed:?}");

    // The successor got the redelivery (the consumer's ack wait is 3 s in tests) and
    // found the stored reply instead of rendering again.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(replies(&app).await, 1, "no second reply");
    assert_eq!(app.model_calls(), 1, "the model was asked once");
    let turns = eventually(
        Duration::from_secs(15),
        "re-query shows the reply",
        || async {
            let t = AssistantTextProjection::recent(app.store.pool(), "c1", 10)
                .await
                .unwrap();
            (t.len() == 2).then_some(t)
        },
    )
    .await;
    assert_eq!(turns[1].text, "only once");
    app.cleanup().await;
}

#[tokio::test]
async fn persona_killed_mid_render_renders_again_and_replies_once() {
    let app = TestApp::spawn_services(&[ServiceName::Router, ServiceName::Gateway], &[]).await;
    app.reply(Script::reply("first try is lost"));
    app.reply(Script::reply("second try"));
    let mut doomed = app.spawn_child("persona", &[("GHOST_FAULTS", "persona.before_append")]);
    let client = start_chat(&app, "c2", "hello");
    wait_for_crash(&mut doomed).await;
    assert_eq!(
        app.session_events("c2")
            .await
            .iter()
            .filter(|e| e.is::<AssistantReplied>())
            .count(),
        0
    );

    let _successor = app.spawn_child("persona", &[]);
    let events = client.await.unwrap();
    assert_eq!(events.last().unwrap().data["reply_text"], "second try");
    let stored = app.session_events("c2").await;
    assert_eq!(
        stored.iter().filter(|e| e.is::<AssistantReplied>()).count(),
        1
    );
    app.cleanup().await;
}

#[tokio::test]
async fn a_redone_reply_is_announced_by_reset_and_its_tokens_add_up_to_done() {
    let app = TestApp::spawn_services(&[ServiceName::Router, ServiceName::Gateway], &[]).await;
    // Slow chunks: the first attempt's tokens reach the client before the crash (a process
    // that aborts loses what its NATS client had not written yet).
    app.reply(
        Script::chunks(vec!["first ", "try ", "is lost"])
            .with_chunk_delay(Duration::from_millis(500)),
    );
    app.reply(Script::chunks(vec!["second ", "try"]));
    let mut doomed = app.spawn_child("persona", &[("GHOST_FAULTS", "persona.before_append")]);
    let client = start_chat(&app, "c5", "hello");
    wait_for_crash(&mut doomed).await;
    let _successor = app.spawn_child("persona", &[]);
    let events = client.await.unwrap();

    let done = events.last().unwrap();
    assert_eq!(done.event, "done", "{events:?}");
    assert_eq!(done.data["reply_text"], "second try");
    // The first attempt's tokens reached the client before the crash; a `reset` comes
    // before the second attempt's, and what follows the last reset is the reply.
    let last_reset = events.iter().rposition(|e| e.event == "reset");
    assert!(last_reset.is_some(), "no reset event: {events:?}");
    let after: String = events[last_reset.unwrap_or(0)..]
        .iter()
        .filter(|e| e.event == "token")
        .filter_map(|e| e.data["delta"].as_str())
        .collect();
    assert_eq!(after, "second try", "{events:?}");

    // Read your own writes: the conversation lists the reply as soon as `done` is sent.
    let listed = app.messages("c5").await;
    let texts: Vec<&str> = listed["messages"]
        .as_array()
        .map(|m| m.iter().filter_map(|t| t["text"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(texts, ["hello", "second try"], "{listed}");
    app.cleanup().await;
}

#[tokio::test]
async fn router_killed_between_commit_and_publish_still_reaches_the_persona_once() {
    let app = TestApp::spawn_services(&[ServiceName::Persona, ServiceName::Gateway], &[]).await;
    app.reply(Script::reply("made it"));
    let mut doomed = app.spawn_child("router", &[("GHOST_FAULTS", "store.after_commit")]);
    let client = start_chat(&app, "c3", "hello");
    wait_for_crash(&mut doomed).await;

    // Committed, never published.
    let stored = app.session_events("c3").await;
    assert_eq!(
        stored.iter().filter(|e| e.is::<RenderRequested>()).count(),
        1
    );
    let unpublished: i64 = sqlx::query_scalar("SELECT count(*) FROM outbox")
        .fetch_one(app.store.pool())
        .await
        .unwrap();
    assert!(unpublished >= 2, "route and render wait in the outbox");

    // A new router's relay publishes the outbox; its redelivered input appends nothing new.
    let _successor = app.spawn_child("router", &[]);
    let events = client.await.unwrap();
    assert_eq!(events.last().unwrap().data["reply_text"], "made it");
    tokio::time::sleep(Duration::from_secs(5)).await;
    let stored = app.session_events("c3").await;
    assert_eq!(stored.iter().filter(|e| e.is::<RouteDecided>()).count(), 1);
    assert_eq!(
        stored.iter().filter(|e| e.is::<RenderRequested>()).count(),
        1
    );
    assert_eq!(
        stored.iter().filter(|e| e.is::<AssistantReplied>()).count(),
        1
    );
    assert_eq!(app.model_calls(), 1, "the persona handled the request once");
    let left: i64 = sqlx::query_scalar("SELECT count(*) FROM outbox")
        .fetch_one(app.store.pool())
        .await
        .unwrap();
    assert_eq!(left, 0, "nothing committed stays unpublished");
    app.cleanup().await;
}

/// POSTs a signed LINE webhook to the gateway at `addr` once it accepts connections.
async fn post_line_to(addr: &str, body: &str) -> reqwest::Result<reqwest::Response> {
    let connected = eventually(
        Duration::from_secs(30),
        "child gateway listening",
        || async { tokio::net::TcpStream::connect(addr).await.ok().map(|_| ()) },
    );
    connected.await;
    reqwest::Client::new()
        .post(format!("http://{addr}/webhooks/line"))
        .header("content-type", "application/json")
        .header("x-line-signature", line_sign(body))
        .body(body.to_owned())
        .send()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_killed_after_a_webhook_commit_replies_once_after_the_redelivery() {
    let others: Vec<ServiceName> = ServiceName::ALL
        .into_iter()
        .filter(|s| *s != ServiceName::Gateway)
        .collect();
    let c = ChannelApp::spawn_services(&others, &[]).await;
    c.app.reply(Script::reply("just once"));
    // The grouped webhook commit is followed by this fault point: the webhook is stored,
    // never answered, its events not yet published.
    let doomed_addr = free_loopback_addr().unwrap();
    let mut doomed = c.app.spawn_child(
        "gateway",
        &[
            ("GHOST_FAULTS", "store.after_commit"),
            ("GHOST_GATEWAY__LISTEN", &doomed_addr),
        ],
    );
    let body = line_text("ev-crash", "U9", "hello", "rt-crash", false);
    let answer = post_line_to(&doomed_addr, &body).await;
    assert!(
        answer.is_err(),
        "no answer from the aborted gateway: {answer:?}"
    );
    wait_for_crash(&mut doomed).await;
    let messages = |events: &[ghost_shared::envelope::RecordedEvent]| {
        events
            .iter()
            .filter(|e| e.is::<UserMessageReceived>())
            .count()
    };
    let session = c
        .app
        .store
        .get(ghost_gateway::webhooks::line::line_event_id("ev-crash"))
        .await
        .unwrap()
        .expect("the webhook's message was committed")
        .stream;

    // LINE redelivers (no 2xx) to a healthy gateway: nothing new is stored, one reply goes out.
    let healthy_addr = free_loopback_addr().unwrap();
    let _healthy = c
        .app
        .spawn_child("gateway", &[("GHOST_GATEWAY__LISTEN", &healthy_addr)]);
    let redelivered = line_text("ev-crash", "U9", "hello", "rt-crash", true);
    let answer = post_line_to(&healthy_addr, &redelivered).await.unwrap();
    assert_eq!(answer.status(), 200);
    let d = c.line_deliveries(1).await;
    assert_eq!(d[0].texts, vec!["just once".to_string()]);
    c.wait_events("ReplyDelivered", 1).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let stored = c.app.store.read_stream(&session, 0).await.unwrap();
    assert_eq!(messages(&stored), 1, "the redelivery appended nothing");
    assert_eq!(c.line.deliveries().len(), 1, "exactly one reply");
    assert_eq!(c.app.model_calls(), 1);
    let left: i64 = sqlx::query_scalar("SELECT count(*) FROM outbox")
        .fetch_one(c.app.store.pool())
        .await
        .unwrap();
    assert_eq!(left, 0, "nothing committed stays unpublished");
    c.cleanup().await;
}

/// POSTs a signed Slack event to the gateway at `addr` once it accepts connections.
async fn post_slack_to(addr: &str, body: &str) -> reqwest::Response {
    eventually(
        Duration::from_secs(30),
        "child gateway listening",
        || async { tokio::net::TcpStream::connect(addr).await.ok().map(|_| ()) },
    )
    .await;
    let ts = chrono::Utc::now().timestamp().to_string();
    reqwest::Client::new()
        .post(format!("http://{addr}/webhooks/slack"))
        .header("content-type", "application/json")
        .header("x-slack-request-timestamp", &ts)
        .header("x-slack-signature", slack_sign(&ts, body))
        .body(body.to_owned())
        .send()
        .await
        .expect("slack webhook")
}

/// A Slack mention answered by a gateway child armed with `fault`, which aborts there; a
/// healthy gateway then takes the reply's redelivery and records `outcome` (the fake
/// Slack set up by `before_restart` first). Short bounds: the redelivery comes after 4 s,
/// and an earlier post attempt cannot post 4.1 s after its marker.
async fn slack_reply_after_gateway_crash(
    fault: &str,
    before_restart: impl FnOnce(&ChannelApp),
    outcome: &str,
) -> ChannelApp {
    let others: Vec<ServiceName> = ServiceName::ALL
        .into_iter()
        .filter(|s| *s != ServiceName::Gateway)
        .collect();
    let quick = [
        ("GHOST_BUS__ACK_WAIT_SECS", "4"),
        ("GHOST_SLACK__REQUEST_TIMEOUT_SECS", "1"),
    ];
    let c = ChannelApp::spawn_services(&others, &quick).await;
    c.app.reply(Script::reply("posted once"));
    let doomed_addr = free_loopback_addr().unwrap();
    let mut doomed = c.app.spawn_child(
        "gateway",
        &[
            ("GHOST_FAULTS", fault),
            ("GHOST_GATEWAY__LISTEN", &doomed_addr),
        ],
    );
    let body = slack_event(
        "Ev-crash",
        serde_json::json!({"type": "app_mention", "user": "U7", "text": format!("<@{BOT}> hi"),
               "ts": "1700000001.000100", "channel": "C1"}),
    );
    assert_eq!(post_slack_to(&doomed_addr, &body).await.status(), 200);
    wait_for_crash(&mut doomed).await;
    c.wait_events("ReplyAttempted", 1).await;
    before_restart(&c);
    let healthy_addr = free_loopback_addr().unwrap();
    let healthy = c
        .app
        .spawn_child("gateway", &[("GHOST_GATEWAY__LISTEN", &healthy_addr)]);
    c.wait_events(outcome, 1).await;
    // Time for a second post, were one coming.
    tokio::time::sleep(Duration::from_secs(2)).await;
    drop(healthy);
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_killed_between_the_slack_marker_and_its_post_posts_once_on_the_redelivery() {
    let c =
        slack_reply_after_gateway_crash("gateway.after_attempt_marked", |_| {}, "ReplyDelivered")
            .await;
    let d = c.slack.deliveries();
    assert_eq!(d.len(), 1, "exactly one post: {d:?}");
    assert_eq!(d[0].texts, vec!["posted once".to_string()]);
    assert_eq!(d[0].thread_ts.as_deref(), Some("1700000001.000100"));
    assert!(c.events_of("ReplyFailed").await.is_empty());
    // The healthy gateway looked for the earlier attempt's post before posting.
    let calls = c.slack.calls();
    let read = calls
        .iter()
        .position(|k| k.path == "/api/conversations.replies")
        .expect("the thread was read");
    let posted = calls
        .iter()
        .position(|k| k.path == "/api/chat.postMessage")
        .expect("posted");
    assert!(read < posted, "read before posting");
    // The post carries the reply's id, by which a later attempt finds it.
    let reply = &c.events_of("ReplyDelivered").await[0];
    assert_eq!(
        calls[posted].body["metadata"]["event_payload"]["reply_event_id"],
        reply["reply_event_id"]
    );
    c.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_killed_after_its_slack_post_finds_it_and_does_not_post_again() {
    let c = slack_reply_after_gateway_crash(
        "gateway.before_delivery_outcome",
        |_| {},
        "ReplyDelivered",
    )
    .await;
    assert_eq!(
        c.slack.deliveries().len(),
        1,
        "the one post before the crash"
    );
    assert!(c.events_of("ReplyFailed").await.is_empty());
    let delivered = &c.events_of("ReplyDelivered").await[0];
    assert_eq!(
        delivered["calls"],
        serde_json::json!(["conversations.replies"])
    );
    c.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_history_scope_a_crashed_slack_attempt_is_not_posted_again() {
    // Slack refuses the read (`missing_scope`): whether the earlier attempt posted is
    // unknown, and the reply is not posted a second time.
    let c = slack_reply_after_gateway_crash(
        "gateway.after_attempt_marked",
        |c| c.slack.script_history(Scripted::fail(403)),
        "ReplyFailed",
    )
    .await;
    assert!(c.slack.deliveries().is_empty(), "nothing posted");
    let failed = &c.events_of("ReplyFailed").await[0];
    assert_eq!(failed["code"], "outcome_unknown");
    assert!(
        failed["message"]
            .as_str()
            .is_some_and(|m| m.contains("missing_scope")),
        "{failed}"
    );
    assert!(c.events_of("ReplyDelivered").await.is_empty());
    c.cleanup().await;
}

//! Graceful stop (issue 10, item 8): on SIGTERM a `ghost run persona` process stops
//! pulling, finishes the reply it is writing within the grace period, and exits 0.

mod support;

use std::time::Duration;

use ghost::stack::ServiceName;
use ghost_testkit::fake_llm::Script;
use ghost_testkit::testing::{eventually, PERSONA_MODEL};
use support::{read_sse, TestApp, TOKEN};

#[tokio::test]
async fn sigterm_finishes_the_reply_in_flight_and_exits_zero() {
    let app = TestApp::spawn_services(
        &[
            ServiceName::Mood,
            ServiceName::Router,
            ServiceName::Worker,
            ServiceName::Gateway,
        ],
        &[],
    )
    .await;
    // The reply takes a moment: the stop request arrives while the persona writes it.
    app.llm.push_for_model(
        PERSONA_MODEL,
        Script::reply("finished before stopping").with_delay(Duration::from_millis(1500)),
    );
    let mut persona = app.spawn_child("persona", &[("GHOST_BUS__SHUTDOWN_GRACE_SECS", "30")]);
    let body = serde_json::json!({ "session_id": "term", "text": "hello" }).to_string();
    let request = app
        .http
        .post(format!("{}/api/chat", app.base_url))
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .body(body);
    let chat = tokio::spawn(async move { read_sse(request.send().await.unwrap()).await });

    eventually(
        Duration::from_secs(60),
        "the persona's model call",
        || async { (app.persona_requests().len() == 1).then_some(()) },
    )
    .await;
    let pid = persona.id().expect("pid").to_string();
    let kill = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(kill.success());

    let status = tokio::time::timeout(Duration::from_secs(60), persona.wait())
        .await
        .expect("the persona stops within its grace period")
        .expect("wait");
    assert_eq!(status.code(), Some(0), "exit 0, not killed: {status:?}");
    let sse = tokio::time::timeout(Duration::from_secs(30), chat)
        .await
        .expect("chat ends")
        .expect("chat task");
    let done = sse.last().expect("an SSE event");
    assert_eq!(done.event, "done", "{sse:?}");
    assert_eq!(done.data["reply_text"], "finished before stopping");
    assert_eq!(
        app.model_calls(),
        1,
        "finished, not handed to another instance"
    );
    app.cleanup().await;
}

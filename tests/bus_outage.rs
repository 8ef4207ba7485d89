//! Ghost cut off from NATS for a while (every service's bus connection through a proxy the
//! test stalls, then cuts): a chat message sent meanwhile is stored, its publish is given up
//! on and lost with the connections, and once the bus is back the outbox relay publishes
//! it: its turn runs to one reply, which the waiting client receives.

mod support;

use std::time::Duration;

use ghost::stack::ServiceName;
use serde_json::json;
use support::tcp_proxy::TcpProxy;
use support::{read_sse_within, TestApp, TOKEN};

/// What an append logs when its publish fails after the commit.
const GIVEN_UP: &str = "publish failed; the outbox relay will retry";

/// What the NATS client logs when its connection is lost.
const DISCONNECTED: &str = "event: disconnected";

#[tokio::test]
async fn a_message_sent_while_the_bus_is_away_is_answered_once_it_is_back() {
    let logs = support::logs::capture();
    let proxy = TcpProxy::start().await;
    let app = TestApp::spawn_adjusted(&ServiceName::ALL, &[], |c| {
        c.ghost.bus.url = proxy.route(&c.ghost.bus.url.clone());
    })
    .await;
    let first = app.chat("s-bus", "hello").await;
    assert_eq!(first.last().map(|e| e.event.as_str()), Some("done"));

    // Stalled: connections stay open and nothing passes (what is sent is held).
    let given_up_before = logs.count(GIVEN_UP);
    proxy.stall();
    let body = json!({"session_id": "s-bus", "text": "still there?", "request_id": "r-bus"});
    let http = app.http.clone();
    let url = format!("{}/api/chat", app.base_url);
    let waiting = tokio::spawn(async move {
        let response = http
            .post(url)
            .bearer_auth(TOKEN)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .expect("chat request");
        assert_eq!(response.status(), 200);
        read_sse_within(response, Duration::from_secs(60)).await
    });
    // Stored while the bus is away (the outbox keeps what could not be published).
    ghost_testkit::testing::eventually(Duration::from_secs(30), "the message stored", || async {
        let texts = app.message_field("s-bus", "text").await;
        texts.iter().any(|t| t == "still there?").then_some(())
    })
    .await;
    // Held until the publish is given up on; then the connections die with it in flight,
    // so only the outbox relay can still publish the event.
    logs.wait_for_more(GIVEN_UP, given_up_before).await;
    let lost_before = logs.count(DISCONNECTED);
    proxy.cut();
    logs.wait_for_more(DISCONNECTED, lost_before).await;
    proxy.restore();

    let events = waiting.await.unwrap();
    let done = events.last().expect("an answer");
    assert_eq!(done.event, "done", "{events:?}");
    assert_eq!(done.data["reply_text"], "ok");
    assert_eq!(
        app.message_field("s-bus", "role").await,
        ["user", "assistant", "user", "assistant"]
    );
    app.cleanup().await;
}

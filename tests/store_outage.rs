//! Ghost cut off from Postgres for a while (every service's connections through a proxy the
//! test cuts): requests are answered 503 with `Retry-After` and nothing is stored, no loop
//! spins on the failure, and once the database is back the same requests are answered and
//! a LINE message sent again during the outage gets its one reply.

mod support;

use std::time::{Duration, Instant};

use ghost::stack::ServiceName;
use ghost_shared::store::EventStore;
use ghost_testkit::testing::eventually;
use serde_json::{json, Value};
use support::platforms::{line_sign, line_text, ChannelApp};
use support::tcp_proxy::TcpProxy;
use support::TOKEN;

/// Asserts a 503 `store_unavailable` answer with `Retry-After`.
async fn unavailable(what: &str, response: reqwest::Response) {
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap_or_default().to_owned());
    let body: Value = response.json().await.unwrap_or_default();
    assert_eq!(
        (
            status,
            body["error"]["code"].as_str(),
            retry_after.as_deref()
        ),
        (503, Some("store_unavailable"), Some("1")),
        "{what}: {body}"
    );
}

#[tokio::test]
async fn an_unreachable_database_is_answered_503_and_nothing_is_lost_once_it_is_back() {
    let logs = support::logs::capture();
    let proxy = TcpProxy::start().await;
    let mut direct = String::new();
    let mut ch = ChannelApp::spawn_adjusted(&ServiceName::ALL, &[], |c| {
        direct = c.ghost.database.url.clone();
        c.ghost.database.url = proxy.route(&direct);
    })
    .await;
    ch.app.store = EventStore::connect(&direct, 4).await.unwrap();
    let app = &ch.app;
    let first = app.chat("s-outage", "hello").await;
    assert_eq!(first.last().map(|e| e.event.as_str()), Some("done"));
    let events_before = app.event_count().await;

    let warnings_before = logs.count("\"WARN\"");
    proxy.cut();
    let cut_at = Instant::now();
    let chat = json!({"session_id": "s-outage", "text": "are you there?", "request_id": "r-2"});
    unavailable(
        "chat",
        app.post_chat_raw(chat.to_string(), Some(TOKEN)).await,
    )
    .await;
    unavailable("messages", app.messages_response("s-outage").await).await;
    let line = line_text("ev-outage", "Uoutage", "hello from LINE", "rt-1", false);
    unavailable(
        "LINE webhook",
        ch.post_line(&line, Some(&line_sign(&line))).await,
    )
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    // Every loop that failed waited its turn: a runner that spun on its listener's instant
    // errors logged thousands of warnings a second.
    let warnings = logs.count("\"WARN\"") - warnings_before;
    let bound = cut_at.elapsed().as_millis() as usize / 5;
    assert!(
        warnings <= bound,
        "{warnings} warnings in {:?} (at most {bound})",
        cut_at.elapsed()
    );
    proxy.restore();
    assert_eq!(app.event_count().await, events_before, "nothing was stored");

    // Back: the same requests are answered (a client retries while it still gets 503:
    // pooled connections lost in the cut fail once each), LINE's redelivery included.
    let again = eventually(Duration::from_secs(30), "the chat accepted", || async {
        let response = app.post_chat_raw(chat.to_string(), Some(TOKEN)).await;
        match response.status().as_u16() {
            200 => Some(support::read_sse(response).await),
            503 => None,
            other => panic!("chat after the outage answered {other}"),
        }
    })
    .await;
    assert_eq!(again.last().map(|e| e.event.as_str()), Some("done"));
    let redelivered = line_text("ev-outage", "Uoutage", "hello from LINE", "rt-1", true);
    eventually(
        Duration::from_secs(30),
        "the LINE redelivery accepted",
        || async {
            match ch.post_line_signed(&redelivered).await {
                200 => Some(()),
                503 => None,
                other => panic!("LINE redelivery after the outage answered {other}"),
            }
        },
    )
    .await;
    let replies = ch.line_deliveries(1).await;
    assert_eq!(replies.len(), 1, "{replies:?}");
    let texts = app.message_field("s-outage", "text").await;
    assert_eq!(
        texts.iter().filter(|t| *t == "are you there?").count(),
        1,
        "{texts:?}"
    );
    ch.cleanup().await;
}

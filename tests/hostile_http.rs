//! A hostile or careless HTTP client: wrong content types, a reused idempotency key with
//! another text. Each answer is a clear 4xx that changes nothing.

mod support;

use std::time::Duration;

use ghost_testkit::fake_llm::Script;
use ghost_testkit::testing::eventually;
use serde_json::{json, Value};
use support::{read_sse, TestApp, TOKEN};

async fn post(app: &TestApp, content_type: Option<&str>, body: String) -> reqwest::Response {
    let mut req = app
        .http
        .post(format!("{}/api/chat", app.base_url))
        .bearer_auth(TOKEN)
        .body(body);
    if let Some(t) = content_type {
        req = req.header("content-type", t);
    }
    req.send().await.expect("request")
}

#[tokio::test]
async fn chat_answers_415_to_a_body_that_is_not_json() {
    let app = TestApp::spawn(&[]).await;
    let body = json!({"session_id": "ct", "text": "hi"}).to_string();
    for content_type in [
        None,
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        Some("multipart/form-data; boundary=x"),
        Some("application/jsonp"),
    ] {
        let response = post(&app, content_type, body.clone()).await;
        assert_eq!(response.status().as_u16(), 415, "{content_type:?}");
        let json: Value = response.json().await.unwrap_or(Value::Null);
        assert_eq!(json["error"]["code"], "unsupported_media_type");
    }
    assert_eq!(app.event_count().await, 0, "nothing was stored");
    // JSON with parameters and in any case is JSON.
    app.reply(Script::reply("ok"));
    let response = post(&app, Some("Application/JSON; charset=utf-8"), body).await;
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(
        read_sse(response).await.last().map(|e| e.event.as_str()),
        Some("done")
    );
    app.cleanup().await;
}

#[tokio::test]
async fn a_reused_request_id_with_another_text_is_an_idempotency_conflict() {
    let app = TestApp::spawn(&[]).await;
    app.reply(Script::reply("first answer"));
    let first = json!({"session_id": "idem", "text": "hello", "request_id": "r-1"}).to_string();
    let events = read_sse(post(&app, Some("application/json"), first.clone()).await).await;
    assert_eq!(
        events.last().map(|e| e.data["reply_text"].clone()),
        Some(json!("first answer"))
    );
    let stored = app.session_events("idem").await.len();

    // The same key, another text: 409, not the first turn's reply, and nothing stored.
    let other = json!({"session_id": "idem", "text": "something else", "request_id": "r-1"});
    let response = post(&app, Some("application/json"), other.to_string()).await;
    assert_eq!(response.status().as_u16(), 409);
    let json: Value = response.json().await.unwrap_or(Value::Null);
    assert_eq!(json["error"]["code"], "idempotency_conflict", "{json}");
    assert_eq!(app.session_events("idem").await.len(), stored);

    // The same key and the same text is a retry: the first reply again, no new turn.
    let events = read_sse(post(&app, Some("application/json"), first).await).await;
    assert_eq!(
        events.last().map(|e| e.data["reply_text"].clone()),
        Some(json!("first answer"))
    );
    assert_eq!(app.session_events("idem").await.len(), stored);
    assert_eq!(app.model_calls(), 1);
    app.cleanup().await;
}

#[tokio::test]
async fn a_nul_character_never_breaks_a_turn() {
    let app = TestApp::spawn(&[]).await;
    app.reply(Script::reply("got it"));
    // In the text: the turn completes and the stored text shows the replacement.
    let body = json!({"session_id": "nul", "text": "a\u{0}b"}).to_string();
    let response = post(&app, Some("application/json"), body).await;
    assert_eq!(response.status().as_u16(), 200);
    let events = read_sse(response).await;
    assert_eq!(
        events.last().map(|e| e.event.as_str()),
        Some("done"),
        "{events:?}"
    );
    let stored = app.session_events("nul").await;
    let messages: Vec<_> = stored
        .iter()
        .filter(|e| e.event_type == "UserMessageReceived")
        .collect();
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].payload["text"], "a\u{FFFD}b");
    assert_eq!(messages[0].payload["_replaced_characters"]["count"], 1);

    // In a session id (body and path): a clear 400, nothing stored.
    let body = json!({"session_id": "n\u{0}ul", "text": "hi"}).to_string();
    let response = post(&app, Some("application/json"), body).await;
    assert_eq!(response.status().as_u16(), 400);
    let json: Value = response.json().await.unwrap_or(Value::Null);
    assert_eq!(json["error"]["code"], "invalid_session_id");
    let response = app
        .http
        .get(format!("{}/api/sessions/n%00ul/messages", app.base_url))
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("request");
    assert_eq!(response.status().as_u16(), 400);
    let json: Value = response.json().await.unwrap_or(Value::Null);
    assert_eq!(json["error"]["code"], "invalid_session_id");
    assert!(
        app.session_events("n\u{FFFD}ul").await.is_empty(),
        "nothing was stored"
    );
    app.cleanup().await;
}

async fn health(app: &TestApp) -> (u16, Value) {
    let response = app
        .http
        .get(format!("{}/healthz", app.base_url))
        .send()
        .await
        .expect("healthz");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn health_reports_every_model_role_postgres_nats_and_consumer_lag() {
    let app = TestApp::spawn(&[]).await;
    // The services create their durable consumers as they start.
    let (status, body) = eventually(Duration::from_secs(30), "consumers listed", || async {
        let (status, body) = health(&app).await;
        let listed = body["checks"]["consumers"]["consumers"]
            .as_object()
            .is_some_and(|m| m.keys().any(|name| name.starts_with("router_")));
        listed.then_some((status, body))
    })
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "ok");
    let checks = &body["checks"];
    assert_eq!(checks["postgres"]["status"], "ok");
    assert_eq!(checks["nats"]["status"], "ok");
    for role in ["persona", "worker", "coder"] {
        assert_eq!(checks["models"][role]["status"], "ok", "{role}: {body}");
    }
    let consumers = &checks["consumers"];
    assert_eq!(consumers["status"], "ok", "{body}");
    let router = consumers["consumers"]
        .as_object()
        .and_then(|m| m.iter().find(|(name, _)| name.starts_with("router_")))
        .map(|(_, v)| v.clone())
        .unwrap_or(Value::Null);
    assert!(
        router["pending"].is_u64() && router["ack_pending"].is_u64(),
        "{body}"
    );
    app.cleanup().await;

    // The cloud coder unreachable: chat still works, so the whole is degraded, not down.
    let app = TestApp::spawn(&[("GHOST_LLM__CODER__BASE_URL", "http://127.0.0.1:9/v1")]).await;
    let (status, body) = health(&app).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["status"], "degraded", "{body}");
    assert_eq!(
        body["checks"]["models"]["coder"]["status"], "down",
        "{body}"
    );
    assert_eq!(body["checks"]["models"]["persona"]["status"], "ok");
    app.cleanup().await;

    // The persona's model unreachable: no reply can be written — down.
    let app = TestApp::spawn(&[("GHOST_LLM__PERSONA__BASE_URL", "http://127.0.0.1:9")]).await;
    let (status, body) = health(&app).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["status"], "down", "{body}");
    assert_eq!(
        body["checks"]["models"]["persona"]["status"], "down",
        "{body}"
    );
    app.cleanup().await;
}

/// Reads what the server sends until it closes the connection (bounded, so a server that
/// never closes fails the test instead of hanging it).
async fn read_until_closed(tcp: &mut tokio::net::TcpStream) -> String {
    use tokio::io::AsyncReadExt;
    let mut out = Vec::new();
    let read = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        tcp.read_to_end(&mut out),
    )
    .await;
    assert!(read.is_ok(), "the server kept the connection open");
    String::from_utf8_lossy(&out).into_owned()
}

fn gateway_addr(app: &TestApp) -> String {
    app.base_url.trim_start_matches("http://").to_owned()
}

#[tokio::test]
async fn slow_and_half_open_connections_are_closed_with_408() {
    use tokio::io::AsyncWriteExt;
    let app = TestApp::spawn(&[
        ("GHOST_GATEWAY__HEADER_READ_TIMEOUT_SECS", "1"),
        ("GHOST_GATEWAY__BODY_READ_TIMEOUT_SECS", "1"),
        ("GHOST_GATEWAY__IDLE_TIMEOUT_SECS", "20"),
    ])
    .await;
    let addr = gateway_addr(&app);

    // Unfinished headers: 408, then the connection closes.
    let mut tcp = tokio::net::TcpStream::connect(&addr)
        .await
        .expect("connect");
    tcp.write_all(b"POST /api/chat HTTP/1.1\r\nHost: ghost\r\nContent-Type: application/json\r\n")
        .await
        .expect("write");
    let answer = read_until_closed(&mut tcp).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer:?}");

    // A body shorter than its Content-Length: 408 with a JSON error, then closed.
    let mut tcp = tokio::net::TcpStream::connect(&addr)
        .await
        .expect("connect");
    let head = format!(
        "POST /api/chat HTTP/1.1\r\nHost: ghost\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"session_id\":"
    );
    tcp.write_all(head.as_bytes()).await.expect("write");
    let answer = read_until_closed(&mut tcp).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer:?}");
    assert!(answer.contains("request_timeout"), "{answer:?}");
    assert_eq!(app.event_count().await, 0, "nothing was stored");

    // A connection that sends nothing at all is closed (no answer is owed).
    let mut tcp = tokio::net::TcpStream::connect(&addr)
        .await
        .expect("connect");
    let answer = read_until_closed(&mut tcp).await;
    assert!(answer.is_empty(), "{answer:?}");
    app.cleanup().await;
}

#[tokio::test]
async fn connections_beyond_the_cap_wait_for_a_free_slot() {
    use tokio::io::AsyncWriteExt;
    let app = TestApp::spawn(&[
        ("GHOST_GATEWAY__MAX_CONNECTIONS", "1"),
        ("GHOST_GATEWAY__HEADER_READ_TIMEOUT_SECS", "600"),
    ])
    .await;
    let addr = gateway_addr(&app);
    // One client holds the only slot with half a request.
    let mut holder = tokio::net::TcpStream::connect(&addr)
        .await
        .expect("connect");
    holder
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: ghost\r\n")
        .await
        .expect("write");
    let url = format!("{}/healthz", app.base_url);
    let waiting = tokio::spawn(async move { reqwest::get(url).await.map(|r| r.status().as_u16()) });
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(
        !waiting.is_finished(),
        "a second connection was served beyond the cap"
    );
    // The slot frees: the waiting request is served.
    drop(holder);
    let status = tokio::time::timeout(std::time::Duration::from_secs(60), waiting)
        .await
        .expect("served once the slot freed")
        .expect("task")
        .expect("request");
    assert_eq!(status, 200);
    app.cleanup().await;
}

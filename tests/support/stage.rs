//! The `/api/stage` WebSocket from a test: connect, send frames, read frames until one.

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use ghost_shared::envelope::RecordedEvent;
use ghost_shared::events::stage_stream;
use serde_json::Value;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

use super::{TestApp, TOKEN};

/// A client WebSocket.
pub type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Opens `/api/stage?stage_id=…` with the test token.
pub async fn connect(app: &TestApp, stage: &str) -> Ws {
    let url = format!(
        "{}/api/stage?stage_id={stage}",
        app.base_url.replace("http://", "ws://")
    );
    let mut request = url.into_client_request().unwrap();
    request
        .headers_mut()
        .insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
    let (ws, _) = tokio_tungstenite::connect_async(request)
        .await
        .expect("websocket upgrade");
    ws
}

/// Sends one JSON frame.
pub async fn send(ws: &mut Ws, frame: Value) {
    ws.send(Message::Text(frame.to_string().into()))
        .await
        .unwrap();
}

/// Frames until one satisfies `last` (included), with a 30 s hang guard.
pub async fn frames_until(ws: &mut Ws, last: impl Fn(&Value) -> bool) -> Vec<Value> {
    frames_until_within(ws, Duration::from_secs(30), last).await
}

/// Frames until one satisfies `last` (included), with a hang guard of `limit`.
pub async fn frames_until_within(
    ws: &mut Ws,
    limit: Duration,
    last: impl Fn(&Value) -> bool,
) -> Vec<Value> {
    let mut frames = Vec::new();
    let read = async {
        while let Some(message) = ws.next().await {
            if let Message::Text(text) = message.expect("frame") {
                let frame: Value = serde_json::from_str(&text).expect("JSON frame");
                let done = last(&frame);
                frames.push(frame);
                if done {
                    return;
                }
            }
        }
    };
    tokio::time::timeout(limit, read)
        .await
        .unwrap_or_else(|_| panic!("no closing frame; got {frames:#?}"));
    frames
}

/// A status frame saying the stage waits for the user again.
pub fn is_active(f: &Value) -> bool {
    f["type"] == "status" && f["state"] == "active"
}

/// The speakers of the message frames, in order.
pub fn speakers(frames: &[Value]) -> Vec<String> {
    frames
        .iter()
        .filter(|f| f["type"] == "message")
        .map(|f| f["speaker"].as_str().unwrap().to_owned())
        .collect()
}

/// Events of a stage's stream.
pub async fn stage_events(app: &TestApp, stage: &str) -> Vec<RecordedEvent> {
    app.store
        .read_stream(&stage_stream(stage), 0)
        .await
        .unwrap()
}

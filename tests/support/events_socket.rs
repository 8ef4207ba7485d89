//! A console client on `GET /api/events`: connects with the token, waits for `ready`, then
//! collects every frame.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use ghost_testkit::testing::eventually;
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;

use super::{TestApp, TOKEN};

/// How long a console waits for a frame.
const WAIT: Duration = Duration::from_secs(30);

/// A console client on `GET /api/events?token=…`, collecting every frame.
pub struct Console {
    frames: Arc<Mutex<Vec<Value>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Console {
    /// Connects and waits for `ready`.
    pub async fn connect(app: &TestApp) -> Console {
        let url = format!(
            "{}/api/events?token={TOKEN}",
            app.base_url.replace("http://", "ws://")
        );
        let (mut ws, _) = tokio_tungstenite::connect_async(url)
            .await
            .expect("websocket upgrade");
        // Subscribed once `ready` arrives: nothing said after it is missed.
        let first = tokio::time::timeout(WAIT, ws.next()).await.unwrap();
        let Some(Ok(Message::Text(t))) = first else {
            panic!("no ready frame: {first:?}")
        };
        assert_eq!(serde_json::from_str::<Value>(&t).unwrap()["type"], "ready");
        let frames = Arc::new(Mutex::new(Vec::new()));
        let sink = frames.clone();
        let task = tokio::spawn(async move {
            while let Some(Ok(frame)) = ws.next().await {
                if let Message::Text(t) = frame {
                    if let Ok(v) = serde_json::from_str::<Value>(&t) {
                        sink.lock().unwrap().push(v);
                    }
                }
            }
        });
        Console { frames, task }
    }

    /// Every frame after `ready`.
    pub fn frames(&self) -> Vec<Value> {
        self.frames.lock().unwrap().clone()
    }

    /// The frames of one `type`.
    pub fn of_type(&self, t: &str) -> Vec<Value> {
        self.frames()
            .into_iter()
            .filter(|f| f["type"] == t)
            .collect()
    }

    /// The `kind` of every activity frame, in order.
    pub fn activity_kinds(&self) -> Vec<String> {
        self.of_type("activity")
            .iter()
            .map(|f| f["kind"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    /// Waits until `n` activity frames of `kind` arrived.
    pub async fn wait_for_activity(&self, kind: &str, n: usize) {
        eventually(WAIT, &format!("{n} {kind} activity"), || async {
            (self.activity_kinds().iter().filter(|k| *k == kind).count() >= n).then_some(())
        })
        .await;
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        self.task.abort();
    }
}

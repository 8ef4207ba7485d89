//! What the fakes share: the call log, delivery log and scripted answers.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::http::HeaderMap;
use axum::Router;
use serde_json::Value;
use tokio::task::JoinHandle;

/// One HTTP call a fake received.
#[derive(Debug, Clone, PartialEq)]
pub struct PlatformCall {
    /// Request path.
    pub path: String,
    /// Headers, names lower-case.
    pub headers: HashMap<String, String>,
    /// JSON body (`Null` when none or not JSON).
    pub body: Value,
    /// Status the fake answered.
    pub status: u16,
}

impl PlatformCall {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }
}

/// One message that reached a user (what the person would see).
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    /// `reply`, `push`, `chat.postMessage` or `sendMessage`.
    pub endpoint: &'static str,
    /// LINE push target / reply token, Slack channel, or Telegram chat id.
    pub to: String,
    /// Slack thread parent, or Telegram forum topic.
    pub thread_ts: Option<String>,
    /// The texts of the call, in order.
    pub texts: Vec<String>,
}

/// A scripted answer for the next call to a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scripted {
    /// Status to answer.
    pub status: u16,
    /// `Retry-After` header to send.
    pub retry_after: Option<String>,
    /// Deliver anyway before failing (a server error after the work was done: the ambiguous
    /// case a retry key exists for).
    pub deliver: bool,
}

impl Scripted {
    /// Fail with `status`, delivering nothing.
    pub fn fail(status: u16) -> Self {
        Self {
            status,
            retry_after: None,
            deliver: false,
        }
    }

    /// 429 with `Retry-After: secs`.
    pub fn rate_limited(secs: u64) -> Self {
        Self {
            status: 429,
            retry_after: Some(secs.to_string()),
            deliver: false,
        }
    }

    /// Deliver, then answer `status` anyway.
    pub fn fail_after_delivery(status: u16) -> Self {
        Self {
            status,
            retry_after: None,
            deliver: true,
        }
    }
}

/// Mutable state of a fake.
#[derive(Debug, Default)]
pub(super) struct State {
    pub calls: Vec<PlatformCall>,
    pub deliveries: Vec<Delivery>,
    pub scripts: HashMap<String, VecDeque<Scripted>>,
    pub used_reply_tokens: std::collections::HashSet<String>,
    pub accepted_retry_keys: std::collections::HashSet<String>,
    pub contents: HashMap<String, (Vec<u8>, String)>,
    pub streamed: HashMap<String, (u64, String)>,
    pub served: HashMap<String, Arc<std::sync::atomic::AtomicU64>>,
    pub next_ts: u64,
    /// The fake Slack's posted messages as its history answers them (`channel`, `ts`,
    /// `thread_ts`, `text`, `metadata`).
    pub slack_messages: Vec<Value>,
    /// The user id the fake Slack's `auth.test` answers (None: `invalid_auth`).
    pub bot_user_id: Option<String>,
    /// Users' profile names (LINE's profile, Slack's `users.info`, Telegram's
    /// `getChatMember`), by user id.
    pub profiles: HashMap<String, String>,
}

/// Shared handle on a fake's state.
#[derive(Debug, Clone, Default)]
pub(super) struct Shared(Arc<Mutex<State>>);

impl Shared {
    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn next_script(&self, path: &str) -> Option<Scripted> {
        self.lock()
            .scripts
            .get_mut(path)
            .and_then(VecDeque::pop_front)
    }

    pub fn record(&self, path: &str, headers: &HeaderMap, body: &[u8], status: u16) {
        let headers = headers
            .iter()
            .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
            .collect();
        let body = serde_json::from_slice(body).unwrap_or(Value::Null);
        self.lock().calls.push(PlatformCall {
            path: path.to_owned(),
            headers,
            body,
            status,
        });
    }
}

/// What every fake is: its state (calls, deliveries, scripts) and its running server. Each
/// fake dereferences to it.
#[derive(Debug, Clone)]
pub struct Fake {
    pub(super) shared: Shared,
    server: Arc<Server>,
}

impl Fake {
    /// Serves `routes` on `127.0.0.1:<port>`, over fresh state.
    pub(super) async fn start(routes: Router<Shared>) -> std::io::Result<Fake> {
        let shared = Shared::default();
        let server = Server::start(routes.with_state(shared.clone())).await?;
        Ok(Fake {
            shared,
            server: Arc::new(server),
        })
    }

    /// Base URL (the platform's `api_base`).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.server.addr)
    }

    /// Every call, in arrival order.
    pub fn calls(&self) -> Vec<PlatformCall> {
        self.shared.lock().calls.clone()
    }

    /// Every delivery (messages a user would see), in order.
    pub fn deliveries(&self) -> Vec<Delivery> {
        self.shared.lock().deliveries.clone()
    }

    /// Gives user `user` the profile name `name` (unknown users are not found).
    pub fn set_profile(&self, user: &str, name: &str) {
        self.shared
            .lock()
            .profiles
            .insert(user.to_owned(), name.to_owned());
    }

    /// Scripts the next answer of the calls scripted under `key`.
    pub(super) fn script(&self, key: &str, s: Scripted) {
        let mut state = self.shared.lock();
        state
            .scripts
            .entry(key.to_owned())
            .or_default()
            .push_back(s);
    }
}

/// A running server.
#[derive(Debug)]
pub(super) struct Server {
    pub addr: SocketAddr,
    pub task: JoinHandle<()>,
}

impl Server {
    pub async fn start(app: Router) -> std::io::Result<Server> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(async move {
            let listener =
                axum::serve::ListenerExt::tap_io(listener, ghost_shared::net::set_nodelay);
            if let Err(e) = axum::serve(listener, app).await {
                tracing::warn!(error = %e, "fake platform server stopped");
            }
        });
        Ok(Server { addr, task })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The texts of `messages: [{type: text, text}]`.
pub(super) fn texts(messages: Option<&Value>) -> Vec<String> {
    messages
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|m| m.get("text").and_then(Value::as_str).map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

//! The fake server: script queues, request log, axum routes.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use bytes::Bytes;
use serde_json::{json, Value};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::recorded::RecordedRequest;
use super::render::{full_body, stream_frames, Format};
use super::script::{Failure, Script};

/// Computes a script for a request when the queues are empty.
type Responder = dyn Fn(&RecordedRequest) -> Script + Send + Sync;

/// How long `shutdown` waits for in-flight responses before abandoning them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Mutable scripting state.
struct Scripts {
    global: VecDeque<Script>,
    per_model: HashMap<String, VecDeque<Script>>,
    default: Script,
    default_per_model: HashMap<String, Script>,
    responder: Option<Arc<Responder>>,
    requests: Vec<RecordedRequest>,
}

/// State shared with the request handlers.
struct Shared {
    scripts: Mutex<Scripts>,
    shutdown: watch::Receiver<bool>,
}

impl Shared {
    /// Lock that survives a panicking test thread (the data stays usable).
    fn lock(&self) -> MutexGuard<'_, Scripts> {
        self.scripts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Resolves once `shutdown` has been called.
    async fn shutting_down(&self) {
        let mut rx = self.shutdown.clone();
        // An error means the sender is gone, which is a shutdown too.
        let _ = rx.wait_for(|v| *v).await;
    }

    /// Sleeps `d`, returning `false` if shutdown came first.
    async fn sleep(&self, d: Duration) -> bool {
        if d.is_zero() {
            return true;
        }
        tokio::select! {
            _ = tokio::time::sleep(d) => true,
            _ = self.shutting_down() => false,
        }
    }
}

/// Handle to a running fake LLM server; clones share the same server.
#[derive(Clone)]
pub struct FakeLlm {
    shared: Arc<Shared>,
    addr: SocketAddr,
    stop: Arc<watch::Sender<bool>>,
    task: Arc<Mutex<Option<JoinHandle<()>>>>,
}

impl std::fmt::Debug for FakeLlm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeLlm").field("addr", &self.addr).finish()
    }
}

impl FakeLlm {
    /// Binds `127.0.0.1:0` and serves on a background tokio task.
    pub async fn start() -> std::io::Result<FakeLlm> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (stop, shutdown) = watch::channel(false);
        let shared = Arc::new(Shared {
            scripts: Mutex::new(Scripts {
                global: VecDeque::new(),
                per_model: HashMap::new(),
                default: Script::default(),
                default_per_model: HashMap::new(),
                responder: None,
                requests: Vec::new(),
            }),
            shutdown,
        });
        let app = Router::new()
            .route("/api/chat", post(ollama_chat))
            .route("/api/tags", get(ollama_tags))
            .route("/v1/chat/completions", post(openai_chat))
            .route("/v1/models", get(openai_models))
            .route("/api/embed", post(ollama_embed))
            .route("/v1/embeddings", post(openai_embed))
            // Inline images easily exceed axum's 2 MB default.
            .layer(DefaultBodyLimit::disable())
            .with_state(shared.clone());
        let signal_shared = shared.clone();
        let task = tokio::spawn(async move {
            let listener =
                axum::serve::ListenerExt::tap_io(listener, ghost_shared::net::set_nodelay);
            let serve = axum::serve(listener, app)
                .with_graceful_shutdown(async move { signal_shared.shutting_down().await });
            if let Err(e) = serve.await {
                tracing::warn!(error = %e, "fake LLM server stopped with an error");
            }
        });
        Ok(FakeLlm {
            shared,
            addr,
            stop: Arc::new(stop),
            task: Arc::new(Mutex::new(Some(task))),
        })
    }

    /// Root URL, e.g. `http://127.0.0.1:PORT` (valid as `base_url` for both providers).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Queues a script for the next chat request (FIFO).
    pub fn push(&self, script: Script) {
        self.shared.lock().global.push_back(script);
    }

    /// Queues a script for the next chat request naming `model`; checked before the global queue.
    pub fn push_for_model(&self, model: &str, script: Script) {
        self.shared
            .lock()
            .per_model
            .entry(model.to_string())
            .or_default()
            .push_back(script);
    }

    /// The answer when the queues are empty and no responder is set (initially: reply "ok").
    pub fn set_default(&self, script: Script) {
        self.shared.lock().default = script;
    }

    /// The answer for `model` when its queue and the global queue are empty (checked after
    /// the responder, before the default): a role that must always answer in one shape.
    pub fn set_default_for_model(&self, model: &str, script: Script) {
        self.shared
            .lock()
            .default_per_model
            .insert(model.to_string(), script);
    }

    /// Computes the answer per request when the queues are empty (takes precedence over the
    /// default).
    pub fn set_responder(&self, f: impl Fn(&RecordedRequest) -> Script + Send + Sync + 'static) {
        self.shared.lock().responder = Some(Arc::new(f));
    }

    /// Every request received (chat and probes), in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().requests.clone()
    }

    /// Number of requests received.
    pub fn request_count(&self) -> usize {
        self.shared.lock().requests.len()
    }

    /// Stops the server: hanging and delayed answers are cut short, then the task is joined
    /// (abandoned after a short grace period).
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let task = self.task.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(mut task) = task {
            if tokio::time::timeout(SHUTDOWN_GRACE, &mut task)
                .await
                .is_err()
            {
                task.abort();
            }
        }
    }
}

async fn ollama_chat(State(s): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    chat(s, Format::Ollama, "/api/chat", &headers, &body).await
}

async fn openai_chat(State(s): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    chat(s, Format::Openai, "/v1/chat/completions", &headers, &body).await
}

async fn ollama_tags(State(s): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    record(&s, "/api/tags", &headers, Value::Null, false);
    axum::Json(json!({"models": [{"name": "fake:latest", "model": "fake:latest"}]})).into_response()
}

async fn openai_models(State(s): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    record(&s, "/v1/models", &headers, Value::Null, false);
    axum::Json(json!({"object": "list", "data": [{"id": "fake", "object": "model"}]}))
        .into_response()
}

async fn ollama_embed(State(s): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    embed(&s, Format::Ollama, "/api/embed", &headers, &body)
}

async fn openai_embed(State(s): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    embed(&s, Format::Openai, "/v1/embeddings", &headers, &body)
}

/// Deterministic vectors (see [`super::embed`]); a body without `input` is a 400.
fn embed(s: &Shared, format: Format, path: &str, headers: &HeaderMap, body: &[u8]) -> Response {
    let body: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    record(s, path, headers, body.clone(), false);
    let Some(texts) = super::embed::inputs(&body) else {
        return (
            axum::http::StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": "input must be a string or an array of strings"})),
        )
            .into_response();
    };
    let vectors: Vec<Vec<f32>> = texts.iter().map(|t| super::embed::vector(t)).collect();
    let reply = match format {
        Format::Ollama => json!({"model": body["model"], "embeddings": vectors}),
        Format::Openai => json!({
            "object": "list",
            "model": body["model"],
            "data": vectors.iter().enumerate()
                .map(|(i, v)| json!({"object": "embedding", "index": i, "embedding": v}))
                .collect::<Vec<_>>(),
        }),
    };
    axum::Json(reply).into_response()
}

fn record(
    s: &Shared,
    path: &str,
    headers: &HeaderMap,
    body: Value,
    stream: bool,
) -> RecordedRequest {
    let req = RecordedRequest {
        path: path.to_string(),
        model: body
            .get("model")
            .and_then(Value::as_str)
            .map(str::to_string),
        stream,
        authorization: headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
        priority: headers
            .get("x-ghost-priority")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
        body,
    };
    s.lock().requests.push(req.clone());
    req
}

/// Per-model queue, then global queue, then responder, then per-model default, then default.
fn next_script(s: &Shared, req: &RecordedRequest) -> Script {
    let responder = {
        let mut g = s.lock();
        if let Some(model) = &req.model {
            if let Some(script) = g.per_model.get_mut(model).and_then(VecDeque::pop_front) {
                return script;
            }
        }
        if let Some(script) = g.global.pop_front() {
            return script;
        }
        match &g.responder {
            Some(r) => r.clone(),
            None => {
                let per_model = req.model.as_ref().and_then(|m| g.default_per_model.get(m));
                return per_model.unwrap_or(&g.default).clone();
            }
        }
    };
    // Called without the lock so a responder may inspect the fake itself.
    responder(req)
}

async fn chat(
    s: Arc<Shared>,
    format: Format,
    path: &str,
    headers: &HeaderMap,
    raw: &[u8],
) -> Response {
    let Ok(body) = serde_json::from_slice::<Value>(raw) else {
        record(&s, path, headers, Value::Null, false);
        return (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": "invalid JSON body"})),
        )
            .into_response();
    };
    // Ollama streams unless told otherwise; OpenAI only when asked.
    let stream = body
        .get("stream")
        .and_then(Value::as_bool)
        .unwrap_or(format == Format::Ollama);
    // A model stops at the request's token budget (each chunk is one token), as real ones do.
    let budget = body
        .get("max_tokens")
        .or_else(|| body.pointer("/options/num_predict"))
        .and_then(Value::as_u64);
    let req = record(&s, path, headers, body, stream);
    let mut script = next_script(&s, &req);
    if let Some(n) = budget {
        script
            .chunks
            .truncate(usize::try_from(n).unwrap_or(usize::MAX));
    }
    let model = req.model.unwrap_or_else(|| "fake".to_string());

    if script.failure == Some(Failure::Hang) {
        s.shutting_down().await;
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    if !s.sleep(script.first_delay).await {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    if let Some(Failure::Status(code, text)) = &script.failure {
        let status = StatusCode::from_u16(*code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let ctype = if serde_json::from_str::<Value>(text).is_ok() {
            "application/json"
        } else {
            "text/plain; charset=utf-8"
        };
        return (status, [(header::CONTENT_TYPE, ctype)], text.clone()).into_response();
    }
    if !stream {
        let n = u32::try_from(script.chunks.len()).unwrap_or(u32::MAX);
        if !s.sleep(script.chunk_delay.saturating_mul(n)).await {
            return StatusCode::SERVICE_UNAVAILABLE.into_response();
        }
        let body = full_body(format, &model, &script);
        return ([(header::CONTENT_TYPE, "application/json")], body).into_response();
    }
    let frames = stream_frames(format, &model, &script);
    let body = if script.chunk_delay.is_zero() {
        // Fast path for throughput benchmarks: one write, no timers.
        Body::from(frames.concat())
    } else {
        paced_body(s, frames, script.chunk_delay)
    };
    (
        [
            (header::CONTENT_TYPE, format.stream_content_type()),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// A body that sends one frame, then waits `delay` before each following frame.
fn paced_body(s: Arc<Shared>, frames: Vec<Bytes>, delay: Duration) -> Body {
    let frames: VecDeque<Bytes> = frames.into();
    let stream = futures::stream::unfold((frames, true), move |(mut frames, first)| {
        let s = s.clone();
        async move {
            let frame = frames.pop_front()?;
            if !first && !s.sleep(delay).await {
                return None;
            }
            Some((
                Ok::<Bytes, std::convert::Infallible>(frame),
                (frames, false),
            ))
        }
    });
    Body::from_stream(stream)
}

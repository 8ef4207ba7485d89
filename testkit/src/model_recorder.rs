//! A recorder between Ghost's services and a model server: forwards every request as is
//! (streams too) and keeps what went each way, so a test or a benchmark can check each
//! structured answer against the schema its own request carried, or replay a request
//! straight to the model.

use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use futures::StreamExt;
use serde_json::Value;

/// One exchange the recorder saw.
#[derive(Debug, Clone)]
pub struct Exchange {
    /// The request body.
    pub request: Value,
    /// `X-Ghost-Priority`.
    pub priority: Option<String>,
    /// The HTTP status of the answer.
    pub status: u16,
    /// The answer's text (a stream's deltas joined).
    pub text: String,
    /// Milliseconds from the request to the answer's end.
    pub elapsed_ms: f64,
    /// The answer's `usage` (`prompt_tokens`, `completion_tokens`), when it had one.
    pub usage: Option<Value>,
}

impl Exchange {
    /// The contract the request asked for: `response_format.json_schema.name`, or
    /// `trailer` for a lazy trailer, or none.
    pub fn contract(&self) -> Option<String> {
        if let Some(name) = self.request["response_format"]["json_schema"]["name"].as_str() {
            return Some(name.to_owned());
        }
        self.request
            .get("trailer_format")
            .filter(|t| !t.is_null())
            .map(|_| "trailer".to_owned())
    }

    /// The schema the request carried (the whole answer's, or the trailer's).
    pub fn schema(&self) -> Option<&Value> {
        let whole = &self.request["response_format"]["json_schema"]["schema"];
        if !whole.is_null() {
            return Some(whole);
        }
        let trailer = &self.request["trailer_format"]["schema"];
        (!trailer.is_null()).then_some(trailer)
    }
}

/// An HTTP recorder in front of the model: forwards every request as is (streams too)
/// and keeps what went each way.
#[derive(Clone)]
pub struct Recorder {
    upstream: String,
    http: reqwest::Client,
    seen: Arc<Mutex<Vec<Exchange>>>,
}

impl Recorder {
    /// Starts one forwarding to `upstream` (`http://host:port`); its base URL.
    pub async fn start(upstream: String) -> (Recorder, String) {
        let recorder = Recorder {
            upstream,
            http: reqwest::Client::new(),
            seen: Arc::default(),
        };
        let app = axum::Router::new()
            .fallback(forward)
            .with_state(recorder.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        (recorder, format!("http://{addr}/v1"))
    }

    /// Every exchange so far, in the order their answers ended.
    pub fn exchanges(&self) -> Vec<Exchange> {
        self.seen.lock().unwrap().clone()
    }
}

async fn forward(
    State(rec): State<Recorder>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let started = std::time::Instant::now();
    let url = format!("{}{}", rec.upstream, uri);
    let mut req = rec.http.request(method, &url).body(body.clone());
    for name in ["content-type", "x-ghost-priority", "authorization"] {
        if let Some(v) = headers.get(name) {
            req = req.header(name, v.clone());
        }
    }
    let resp = match req.send().await {
        Ok(r) => r,
        Err(e) => {
            return Response::builder()
                .status(StatusCode::BAD_GATEWAY)
                .body(Body::from(e.to_string()))
                .unwrap()
        }
    };
    let status = resp.status().as_u16();
    let content_type = resp.headers().get("content-type").cloned();
    let pending = Exchange {
        request: serde_json::from_slice(&body).unwrap_or(Value::Null),
        priority: headers
            .get("x-ghost-priority")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
        status,
        text: String::new(),
        elapsed_ms: 0.0,
        usage: None,
    };
    let state = (
        resp.bytes_stream(),
        Vec::new(),
        Some((pending, rec.seen.clone(), started)),
    );
    let body = futures::stream::unfold(state, |(mut upstream, mut raw, mut done)| async move {
        match upstream.next().await {
            Some(Ok(chunk)) => {
                raw.extend_from_slice(&chunk);
                Some((Ok::<Bytes, std::io::Error>(chunk), (upstream, raw, done)))
            }
            _ => {
                if let Some((mut exchange, seen, started)) = done.take() {
                    exchange.text = answer_text(&raw);
                    exchange.usage = answer_usage(&raw);
                    exchange.elapsed_ms = started.elapsed().as_secs_f64() * 1e3;
                    seen.lock().unwrap().push(exchange);
                }
                None
            }
        }
    });
    let mut builder = Response::builder().status(status);
    if let Some(ct) = content_type {
        builder = builder.header("content-type", ct);
    }
    builder.body(Body::from_stream(body)).unwrap()
}

/// The `usage` of a completion, or of a stream's usage chunk.
fn answer_usage(raw: &[u8]) -> Option<Value> {
    if let Ok(v) = serde_json::from_slice::<Value>(raw) {
        return v.get("usage").filter(|u| !u.is_null()).cloned();
    }
    String::from_utf8_lossy(raw)
        .lines()
        .rev()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find_map(|v| v.get("usage").filter(|u| !u.is_null()).cloned())
}

/// The text of a completion: `choices[0].message.content`, or an SSE stream's deltas.
fn answer_text(raw: &[u8]) -> String {
    if let Ok(v) = serde_json::from_slice::<Value>(raw) {
        return v["choices"][0]["message"]["content"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
    }
    String::from_utf8_lossy(raw)
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .filter_map(|v| {
            v["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}

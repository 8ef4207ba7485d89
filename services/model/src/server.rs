//! HTTP: `POST /v1/chat/completions` (streaming and not), `POST /v1/embeddings`
//! ([`embedding_router`]), `GET /v1/models`, `GET /healthz`.
//!
//! A completion request may carry `X-Ghost-Priority: interactive` (the default) or
//! `background`; see [`crate::engine`] for what each gets.

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures::{Stream, StreamExt};
use serde_json::{json, Value};
use tokio_stream::wrappers::UnboundedReceiverStream;

use crate::api::{parse_request, ApiError, Completion};
use crate::embedding::{wire, EmbedError, Embedder};
use crate::engine::{Engine, Piece, Priority, Rejected};

/// The request header naming a request's priority.
pub const PRIORITY_HEADER: &str = "x-ghost-priority";

/// What the handlers share.
#[derive(Clone)]
pub struct AppState {
    /// The inference thread.
    pub engine: Engine,
    /// The model id requests must name.
    pub name: Arc<str>,
    /// The embedding model's id, when this server embeds (listed by `/v1/models`).
    pub embedding_name: Option<Arc<str>>,
}

/// Largest `/v1/embeddings` body read (a full batch of long texts fits; a text is cut at
/// [`crate::embedding::MAX_TOKENS`] tokens anyway); a larger one gets 413.
pub const MAX_EMBEDDING_BODY: usize = 4 << 20;

/// What the embeddings handler needs.
#[derive(Clone)]
pub struct EmbeddingState {
    /// The loaded model.
    pub embedder: Embedder,
    /// The model id requests must name.
    pub name: Arc<str>,
    /// Texts one request may carry at most.
    pub max_inputs: usize,
}

/// The embedding routes: `POST /v1/embeddings` (and `/embeddings`), bodies up to
/// [`MAX_EMBEDDING_BODY`].
pub fn embedding_router(state: EmbeddingState) -> Router {
    Router::new()
        .route("/v1/embeddings", post(embeddings))
        .route("/embeddings", post(embeddings))
        .layer(DefaultBodyLimit::max(MAX_EMBEDDING_BODY))
        .with_state(state)
}

async fn embeddings(State(app): State<EmbeddingState>, body: Bytes) -> Response {
    let request =
        match wire::parse_request(&body, &app.name, app.embedder.dimensions(), app.max_inputs) {
            Ok(r) => r,
            Err(e) => return error_response(&e),
        };
    match app.embedder.embed(request.inputs).await {
        Ok(done) => Json(wire::reply(
            &app.name,
            &done.vectors,
            done.tokens,
            request.base64,
        ))
        .into_response(),
        Err(e) => {
            let message = e.to_string();
            let (status, code) = match e {
                EmbedError::QueueFull(_) => (503, "queue_full"),
                _ => (500, "embedding_failed"),
            };
            tracing::warn!(code, "{message}");
            error_response(&ApiError {
                status,
                kind: "server_error",
                code,
                message,
            })
        }
    }
}

/// The routes.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(completions))
        .route("/chat/completions", post(completions))
        .route("/v1/models", get(models))
        .route("/healthz", get(health))
        .with_state(state)
}

/// The routes of a server with no chat model loaded (`model.enabled` off): embeddings only.
/// A completion request gets 404 `model_not_loaded`, and `/v1/models` lists the embedding
/// model alone.
pub fn embeddings_only_router(embedding_name: Arc<str>) -> Router {
    let name = embedding_name.clone();
    Router::new()
        .route("/v1/chat/completions", post(no_chat_model))
        .route("/chat/completions", post(no_chat_model))
        .route(
            "/v1/models",
            get(move || {
                let name = name.clone();
                async move {
                    Json(json!({"object": "list", "data": [
                        {"id": &*name, "object": "model", "created": 0, "owned_by": "ghost"}]}))
                }
            }),
        )
        .route(
            "/healthz",
            get(move || {
                let name = embedding_name.clone();
                async move { Json(json!({"status": "ok", "embedding_model": &*name})) }
            }),
        )
}

async fn no_chat_model() -> Response {
    error_response(&ApiError {
        status: 404,
        kind: "invalid_request_error",
        code: "model_not_loaded",
        message: "this server serves embeddings only (model.enabled is false)".into(),
    })
}

fn error_response(e: &ApiError) -> Response {
    let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, Json(e.body())).into_response()
}

fn rejected(e: Rejected) -> ApiError {
    let message = e.to_string();
    match e {
        Rejected::TooLong { .. } => ApiError::invalid("context_length_exceeded", message),
        Rejected::Template(_) => ApiError::invalid("invalid_content", message),
        Rejected::Grammar(_) => ApiError::invalid(crate::grammar::INVALID_FORMAT, message),
        Rejected::QueueFull(_) => ApiError {
            status: 503,
            kind: "server_error",
            code: "queue_full",
            message,
        },
        Rejected::Stopped => ApiError {
            status: 503,
            kind: "server_error",
            code: "engine_stopped",
            message,
        },
    }
}

/// `X-Ghost-Priority`, interactive when absent.
fn priority(headers: &HeaderMap) -> Result<Priority, ApiError> {
    let Some(value) = headers.get(PRIORITY_HEADER) else {
        return Ok(Priority::Interactive);
    };
    value
        .to_str()
        .ok()
        .and_then(Priority::parse)
        .ok_or_else(|| {
            ApiError::invalid(
                "invalid_priority",
                format!("X-Ghost-Priority must be interactive or background, not {value:?}"),
            )
        })
}

async fn completions(State(app): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let parsed = priority(&headers).and_then(|p| Ok((p, parse_request(&body, &app.name)?)));
    let (priority, mut request) = match parsed {
        Ok(r) => r,
        Err(e) => return error_response(&e),
    };
    let completion = Completion::new(&app.name);
    request.generate.priority = priority;
    // The journal's name for it: the caller's request id when it gives one.
    request.generate.label = headers
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .map_or_else(|| completion.id.clone(), str::to_owned);
    if request.dropped_images > 0 {
        tracing::warn!(
            images = request.dropped_images,
            "the embedded model reads text only: image parts dropped"
        );
    }
    let reply = match app.engine.generate(request.generate).await {
        Ok(r) => r,
        Err(e) => {
            let e = rejected(e);
            tracing::warn!(code = e.code, "{}", e.message);
            return error_response(&e);
        }
    };
    if request.stream {
        let events = stream_events(completion, reply.pieces, request.include_usage);
        return Sse::new(events).into_response();
    }
    let mut text = String::new();
    let mut pieces = reply.pieces;
    while let Some(piece) = pieces.recv().await {
        match piece {
            Piece::Text(t) => text.push_str(&t),
            Piece::Done { finish, usage } => {
                return Json(completion.reply(&text, finish, &usage)).into_response()
            }
            Piece::Failed(reason) => return error_response(&generation_failed(reason)),
        }
    }
    error_response(&generation_failed("the engine dropped the reply".into()))
}

fn generation_failed(reason: String) -> ApiError {
    ApiError {
        status: 500,
        kind: "server_error",
        code: "generation_failed",
        message: reason,
    }
}

fn data(v: &Value) -> Result<Event, Infallible> {
    Ok(Event::default().data(v.to_string()))
}

/// The SSE body: a role chunk, one chunk per text piece, the finish chunk, the usage
/// chunk when asked for, and `[DONE]`; a failure ends it with an in-band error instead.
fn stream_events(
    completion: Completion,
    pieces: tokio::sync::mpsc::UnboundedReceiver<Piece>,
    include_usage: bool,
) -> impl Stream<Item = Result<Event, Infallible>> {
    let first = data(&completion.chunk(json!({"role": "assistant", "content": ""}), None));
    let rest = UnboundedReceiverStream::new(pieces).flat_map(move |piece| {
        let events = match piece {
            Piece::Text(t) => vec![data(&completion.chunk(json!({ "content": t }), None))],
            Piece::Done { finish, usage } => {
                let mut v = vec![data(&completion.chunk(json!({}), Some(finish)))];
                if include_usage {
                    v.push(data(&completion.usage_chunk(&usage)));
                }
                v.push(Ok(Event::default().data("[DONE]")));
                v
            }
            Piece::Failed(reason) => vec![data(&generation_failed(reason).body())],
        };
        futures::stream::iter(events)
    });
    futures::stream::iter([first]).chain(rest)
}

async fn models(State(app): State<AppState>) -> Json<Value> {
    let model = |id: &str| json!({"id": id, "object": "model", "created": 0, "owned_by": "ghost"});
    let mut data = vec![model(&app.name)];
    data.extend(app.embedding_name.as_deref().map(model));
    Json(json!({"object": "list", "data": data}))
}

async fn health(State(app): State<AppState>) -> Json<Value> {
    let info = app.engine.info();
    Json(json!({
        "status": "ok", "model": &*app.name, "context_size": info.context_size,
        "parameters": info.parameters,
    }))
}

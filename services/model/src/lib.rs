//! The embedded model server (`ghost run model`): an OpenAI-compatible
//! `/v1/chat/completions` (streaming and not) over a GGUF file on the CPU, so that a machine
//! without Ollama still gets real replies. It runs llama.cpp through `llama-cpp-2`: the
//! GGUF's own tokenizer and chat template, no Python, no other runtime.
//!
//! One model, one warm context, one reply generated at a time, by priority: a request
//! with `X-Ghost-Priority: background` (write plans, reflection) waits while any interactive
//! one (the user's reply; the default) waits, and one in progress pauses for it, so a reply's
//! first token never waits behind background work. Each priority has a bounded queue (one
//! more than `model.queue_depth` gets 503); a prompt larger than the context gets 400
//! `context_length_exceeded`. `response_format` (`json_object`, `json_schema`) and Ghost's
//! `trailer_format` (free text, then a marker, then JSON) constrain decoding with a grammar,
//! so even a tiny model returns JSON that parses and fits the schema. It needs neither
//! Postgres nor NATS.
//!
//! Beside it, `/v1/embeddings` serves the sentence-embedding model of `model.embedding_path`
//! (all-MiniLM-L6-v2 by default, English; see [`embedding`]), which vector recall uses.
//!
//! - [`engine`]: the inference thread (model, context with one sequence per priority,
//!   prompt caches, scheduling with pause and resume, sampling, the journal of service);
//! - [`grammar`]: `response_format` and `trailer_format` to GBNF grammars;
//! - [`embedding`]: the embedding model (candle's BERT, mean-pooled, normalised) and its
//!   wire format;
//! - [`api`]: the wire format (request checks, replies, stream chunks);
//! - [`server`]: the HTTP routes and the priority header;
//! - [`text`]: token bytes to text deltas (split UTF-8, stop sequences);
//! - [`logs`]: llama.cpp's log lines, INFO demoted to DEBUG;
//! - [`metrics`]: queue depth per priority, preemptions.

pub mod api;
pub mod embedding;
pub mod engine;
pub mod grammar;
pub mod logs;
pub mod metrics;
pub mod server;
pub mod text;

use std::sync::Arc;

use ghost_shared::config::Config;
use ghost_shared::service::{no_projections, ServiceDescriptor, ServiceError, ServiceHandle};

pub use embedding::{EmbedError, Embedder};
pub use engine::{Engine, EngineConfig, EngineError};

/// This service's name.
pub const SERVICE: &str = "model";

/// How this service is run, named and rebuilt ([`ServiceDescriptor`]).
pub const DESCRIPTOR: ServiceDescriptor = ServiceDescriptor {
    name: SERVICE,
    consumes: &[],
    appends: &[],
    metrics_port_offset: 7,
    projections: no_projections,
    start: |ctx| Box::pin(async move { start(&ctx.config).await }),
};

/// Loads the model of `model:` (path relative to the repository root) when `model.enabled`,
/// warms it up and serves it on `model.listen`, with the embedding model of
/// `model.embedding_path` when it serves embeddings ([`Config::serves_embeddings`]). With
/// embeddings alone (a chat model elsewhere, such as Ollama), no GGUF is loaded.
pub async fn start(config: &Config) -> Result<ServiceHandle, ServiceError> {
    let settings = &config.ghost.model;
    let engine = match settings.enabled {
        true => Some(
            Engine::start(EngineConfig {
                path: config.resolve(&settings.path),
                threads: settings.threads,
                context_size: settings.context_size,
                max_tokens: settings.max_tokens,
                batch_size: settings.batch_size,
                queue_depth: settings.queue_depth,
            })
            .await
            .map_err(|e| ServiceError::Config(format!("model: {e}")))?,
        ),
        false => None,
    };
    let embedding_dir = settings
        .embedding_path
        .as_ref()
        .filter(|_| config.serves_embeddings());
    let embedding = match embedding_dir {
        Some(dir) => {
            let dir = config.resolve(dir);
            let (threads, queue_depth) = (settings.embedding_threads, settings.queue_depth);
            let embedder =
                tokio::task::spawn_blocking(move || Embedder::load(&dir, threads, queue_depth))
                    .await
                    .map_err(|e| ServiceError::Config(format!("model.embedding_path: {e}")))?
                    .map_err(|e| ServiceError::Config(format!("model.embedding_path: {e}")))?;
            tracing::info!(
                model = %settings.embedding_name, dimensions = embedder.dimensions(),
                "embedding model ready"
            );
            Some(server::EmbeddingState {
                embedder,
                name: Arc::from(settings.embedding_name.as_str()),
                max_inputs: settings.embedding_max_inputs,
            })
        }
        None => None,
    };
    let listener = tokio::net::TcpListener::bind(&settings.listen)
        .await
        .map_err(|e| ServiceError::Config(format!("model.listen {}: {e}", settings.listen)))?;
    let addr = listener.local_addr()?;
    let embedding_name = embedding.as_ref().map(|e| e.name.clone());
    let mut app = match (engine, embedding_name) {
        (Some(engine), embedding_name) => {
            let info = engine.info();
            tracing::info!(
                %addr, model = %settings.name, context = info.context_size,
                trained_context = info.trained_context, parameters = info.parameters,
                own_chat_template = info.own_template, threads = settings.threads,
                "embedded model ready"
            );
            server::router(server::AppState {
                engine,
                name: Arc::from(settings.name.as_str()),
                embedding_name,
            })
        }
        (None, Some(name)) => {
            tracing::info!(%addr, "embedding server ready (no chat model: model.enabled is false)");
            server::embeddings_only_router(name)
        }
        (None, None) => {
            return Err(ServiceError::Config(
                "model: nothing to serve (model.enabled is false and no embedding model: \
                 run deploy/model.sh, or set model.embedding_path)"
                    .into(),
            ))
        }
    };
    if let Some(embedding) = embedding {
        app = app.merge(server::embedding_router(embedding));
    }
    let mut handle = ServiceHandle::new(SERVICE);
    handle.addr = Some(addr);
    handle.spawn(async move { axum::serve(listener, app).await });
    Ok(handle)
}

//! The gateway: Ghost's HTTP front door.
//!
//! - [`chat`]: `POST /api/chat`, a turn streamed back as server-sent events;
//! - [`sessions`]: `GET /api/sessions/{id}/messages`;
//! - [`stage`]: `GET /api/stage` (WebSocket), the multi-character stage;
//! - [`health`]: `GET /healthz`;
//! - [`partner_mood`]: the mood debug API (`GET`/`PUT`/`DELETE /api/partner_mood`);
//! - [`autonomy`]: `POST /api/autonomy/tick` and `GET /api/events` (WebSocket: the
//!   persona's autonomy messages and the activity stream, for consoles);
//! - [`memory`]: the memory debug API (`GET /api/memory?persona=ID`); [`recalls`]: what a
//!   reply recalled (`GET /api/recalls/{event_id}`);
//! - [`auth`]: bearer tokens on `/api/*`; [`error`]: JSON errors;
//! - [`webhooks`]: the HTTP handlers of `POST /webhooks/line` and `POST /webhooks/slack`
//!   (signed, deduplicated);
//! - [`deliver`]: the consumer that sends LINE and Slack replies, each at most once;
//!   [`media`]: LINE images into the media table, and its sweeper;
//! - [`line`] / [`slack`]: each platform's protocol as pure functions — wire types
//!   (`line::wire`, `slack::wire`), signatures, turn classification, reply shaping and
//!   retry policies — used by the handlers and by delivery.

pub mod auth;
pub mod autonomy;
pub mod chat;
pub mod deliver;
pub mod error;
pub mod health;
pub mod line;
pub mod media;
pub mod memory;
pub mod partner_mood;
pub mod recalls;
pub mod sessions;
pub mod slack;
pub mod stage;
pub mod webhooks;

use axum::routing::{get, post};
use axum::serve::ListenerExt;
use axum::Router;
use tokio::net::TcpListener;

use ghost_shared::config::Secret;
use ghost_shared::llm::LlmClient;
use ghost_shared::service::{ServiceContext, ServiceError, ServiceHandle};

/// This service's name.
pub const SERVICE: &str = "gateway";

/// Shared by every request.
#[derive(Clone)]
pub struct AppState {
    /// Store, bus, configuration.
    pub ctx: ServiceContext,
    /// The bearer token `/api/*` requires.
    pub api_token: Secret,
    /// The persona's model, probed by `/healthz`.
    pub llm: LlmClient,
}

/// The HTTP routes.
pub fn router(state: AppState) -> Router {
    let api = Router::new()
        .route("/chat", post(chat::chat))
        .route("/sessions/{id}/messages", get(sessions::messages))
        .route(
            "/partner_mood",
            get(partner_mood::get)
                .put(partner_mood::put)
                .delete(partner_mood::delete),
        )
        .route("/stage", get(stage::stage))
        .route("/autonomy/tick", post(autonomy::tick))
        .route("/memory", get(memory::get))
        .route("/recalls/{event_id}", get(recalls::get))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::require_bearer,
        ));
    Router::new()
        .route("/healthz", get(health::healthz))
        .route("/webhooks/line", post(webhooks::line::webhook))
        .route("/webhooks/slack", post(webhooks::slack::events))
        // Checks its own token: the header, or `?token=` (browser WebSockets).
        .route("/api/events", get(autonomy::events))
        .nest("/api", api)
        .with_state(state)
}

/// Binds `gateway.listen` and serves.
pub async fn start(ctx: ServiceContext) -> Result<ServiceHandle, ServiceError> {
    let api_token = ctx.config.secrets.api_token.clone().ok_or_else(|| {
        ServiceError::Config("GHOST_API_TOKEN is not set: /api/* needs a bearer token".into())
    })?;
    let llm = ctx.llm("persona")?;
    let listener = TcpListener::bind(&ctx.config.ghost.gateway.listen).await?;
    let mut handle = ServiceHandle::new(SERVICE);
    handle.addr = Some(listener.local_addr()?);
    deliver::spawn(ctx.clone(), &mut handle)
        .map_err(|e| ServiceError::Config(format!("HTTP client for replies: {e}")))?;
    media::spawn(ctx.clone(), &mut handle)?;
    let app = router(AppState {
        ctx,
        api_token,
        llm,
    });
    let listener = listener.tap_io(ghost_shared::net::set_nodelay);
    handle.spawn(async move { axum::serve(listener, app).await });
    Ok(handle)
}

/// Runs the gateway until it fails.
pub async fn run(ctx: ServiceContext) -> Result<(), ServiceError> {
    let handle = start(ctx).await?;
    if let Some(addr) = handle.addr {
        tracing::info!(%addr, "gateway listening");
    }
    handle.wait().await;
    Ok(())
}

//! The gateway: Ghost's HTTP front door.
//!
//! - [`chat`]: `POST /api/chat`, a turn streamed back as server-sent events;
//! - [`sessions`]: `GET /api/sessions/{id}/messages`; [`conversations`]: the console's
//!   `GET /api/sessions` (the conversation list) and `GET /api/live` (WebSocket: one
//!   conversation live, and sending to it);
//! - [`stage`]: `GET /api/stage` (WebSocket), the multi-character stage;
//! - [`health`]: `GET /healthz` (every part ok, degraded or down); [`metrics`]: `GET /metrics`
//!   (Prometheus) and the webhook outcome counter;
//! - [`partner_mood`]: the mood debug API (`GET`/`PUT`/`DELETE /api/partner_mood`);
//! - [`autonomy`]: `POST /api/autonomy/tick` and `GET /api/events` (WebSocket: the
//!   persona's autonomy messages and the activity stream, for consoles);
//! - [`memory`]: the memory debug API (`GET /api/memory?persona=ID`), with what people need
//!   to read it ([`memory_view`]: order, duplicates, history, evidence in words; [`people`]:
//!   names, from the platforms' profiles); [`memory_edits`]:
//!   correcting and forgetting one memory (`POST /api/memory/edits`); [`forget_person`]:
//!   forgetting a whole person (`POST /api/memory/forget-person`); [`recalls`]: what a
//!   reply recalled (`GET /api/recalls/{event_id}`);
//! - [`clock`]: the system's clock (`GET /api/clock`, `POST /api/clock/advance` when it is
//!   simulated);
//! - [`reminders`]: a person's reminders (`GET`/`POST /api/reminders`, `PUT`/`DELETE
//!   /api/reminders/{id}`); the gateway also runs the `reminders` projection and the shared
//!   scheduler, and [`deliver::reminder`] says them;
//! - [`console`]: `GET /console`, the web console (static files compiled in);
//! - [`routes`]: every route in one table, the router built from it, and its JSON 404 and
//!   405; [`auth`]: bearer tokens on `/api/*`; [`error`]: JSON errors; [`extract`]: axum's
//!   query, path and WebSocket extractors refusing in that JSON;
//! - [`server`]: the HTTP server loop (connection cap, header, body and idle timeouts, 408);
//! - [`channel`]: what a messaging platform is ([`channel::Platform`]: verify and read a
//!   webhook, deliver a reply once, push, fetch an image) and the list of them
//!   ([`channel::Platforms`]);
//! - [`webhooks`]: `POST /webhooks/<platform>`, one handler for every platform (checked,
//!   deduplicated);
//! - [`deliver`]: the consumer that sends platform replies, each at most once, in order,
//!   and pushes autonomy messages; [`media`]: platform images into the media table, and
//!   its sweeper;
//! - [`line`](mod@line) / [`slack`] / [`telegram`]: one module per platform — its protocol as pure
//!   functions (wire types, signatures, turn classification, reply shaping, retry
//!   policies) and its [`channel::Platform`] (`Line`, `Slack`, `Telegram`).

pub mod auth;
pub mod autonomy;
pub mod channel;
pub mod chat;
pub mod clock;
pub mod console;
pub mod conversations;
pub mod deliver;
pub mod error;
pub mod extract;
pub mod forget_person;
pub mod health;
pub mod line;
pub mod media;
pub mod memory;
pub mod memory_edits;
pub mod memory_view;
pub mod metrics;
pub mod partner_mood;
pub mod people;
pub mod recalls;
pub mod reminders;
pub mod routes;
pub mod server;
pub mod sessions;
pub mod slack;
pub mod stage;
pub mod telegram;
pub mod webhooks;

pub use routes::router;

use std::time::Duration;

use tokio::net::TcpListener;

use ghost_shared::config::Secret;
use ghost_shared::llm::LlmClient;
use ghost_shared::projector::ProjectionRunner;
use ghost_shared::reminders::projection::RemindersProjection;
use ghost_shared::service::{ServiceContext, ServiceDescriptor, ServiceError, ServiceHandle};

/// This service's name.
pub const SERVICE: &str = "gateway";

/// How this service is run, named and rebuilt ([`ServiceDescriptor`]).
pub const DESCRIPTOR: ServiceDescriptor = ServiceDescriptor {
    name: SERVICE,
    consumes: ghost_shared::event_types![
        ghost_shared::events::AssistantReplied,
        ghost_shared::events::RenderFailed,
        ghost_shared::events::TurnTimedOut,
        ghost_shared::autonomy::events::AutonomyMessageRendered,
        ghost_shared::events::LineImageReceived,
        ghost_shared::events::SlackImageReceived,
        channel::ImageReceived,
        ghost_shared::reminders::events::ReminderDue,
    ],
    appends: ghost_shared::event_types![
        ghost_shared::events::UserMessageReceived,
        ghost_shared::events::LineImageReceived,
        ghost_shared::events::SlackImageReceived,
        channel::ImageReceived,
        ghost_shared::events::StageUserInput,
        ghost_shared::autonomy::events::AutonomyTickRequested,
        ghost_shared::events::StageStopRequested,
        ghost_shared::memory::edits::MemoryEditRequested,
        ghost_shared::memory::forget_person::PersonForgetRequested,
        ghost_shared::events::ReplyAttempted,
        ghost_shared::events::ReplyDelivered,
        ghost_shared::events::ReplyFailed,
        ghost_shared::autonomy::events::AutonomyMessagePushed,
        ghost_shared::autonomy::events::AutonomyPushFailed,
        ghost_shared::reminders::events::ReminderScheduled,
        ghost_shared::reminders::events::ReminderChanged,
        ghost_shared::reminders::events::ReminderCancelled,
        ghost_shared::reminders::events::ReminderDue,
        ghost_shared::reminders::events::ReminderDelivered,
        ghost_shared::reminders::events::ReminderMissed,
    ],
    metrics_port_offset: 0,
    projections: |_| vec![std::sync::Arc::new(RemindersProjection)],
    start: |ctx| Box::pin(start(ctx)),
};

/// Shared by every request.
#[derive(Clone)]
pub struct AppState {
    /// Store, bus, configuration.
    pub ctx: ServiceContext,
    /// The bearer token `/api/*` requires.
    pub api_token: Secret,
    /// The persona's model, probed by `/healthz`.
    pub llm: LlmClient,
    /// The messaging platforms (LINE, Slack, Telegram), for their webhooks.
    pub platforms: channel::Platforms,
    /// Every configured model role's client, probed by `/healthz`.
    pub health_models: std::sync::Arc<Vec<(String, LlmClient)>>,
    /// Webhooks' appends, many webhooks per transaction (group commit).
    pub webhook_appends: ghost_shared::event_log::GroupAppender,
    /// People's names, as looked up on their platforms (kept a while).
    pub people: std::sync::Arc<people::People>,
}

/// Transactions of webhook appends in flight at once: while one commits, the next fills.
const WEBHOOK_COMMITTERS: usize = 2;
/// Appends per webhook transaction at most.
const WEBHOOK_MAX_BATCH: usize = 256;

/// Binds `gateway.listen` and serves.
pub async fn start(ctx: ServiceContext) -> Result<ServiceHandle, ServiceError> {
    let api_token = ctx.config.secrets.api_token.clone().ok_or_else(|| {
        ServiceError::Config("GHOST_API_TOKEN is not set: /api/* needs a bearer token".into())
    })?;
    let llm = ctx.llm("persona")?;
    let listener = TcpListener::bind(&ctx.config.ghost.gateway.listen).await?;
    let mut handle = ServiceHandle::new(SERVICE);
    let platforms = channel::Platforms::start(&ctx).await;
    metrics::register(&platforms);
    handle.addr = Some(listener.local_addr()?);
    deliver::spawn(ctx.clone(), platforms.clone(), &mut handle)?;
    media::spawn(ctx.clone(), platforms.clone(), &mut handle)?;
    spawn_reminders(&ctx, &mut handle);
    let ctx_limits = ctx.config.ghost.gateway.clone();
    let health_models = std::sync::Arc::new(health::model_clients(&ctx.config));
    let webhook_appends = ghost_shared::event_log::GroupAppender::spawn(
        ctx.log.clone(),
        WEBHOOK_COMMITTERS,
        WEBHOOK_MAX_BATCH,
    );
    let app = router(AppState {
        ctx,
        api_token,
        llm,
        platforms,
        health_models,
        webhook_appends,
        people: Default::default(),
    });
    let g = &ctx_limits;
    let limits = server::ServerLimits {
        max_connections: g.max_connections,
        header_read_timeout: Duration::from_secs(g.header_read_timeout_secs),
        idle_timeout: Duration::from_secs(g.idle_timeout_secs),
    };
    handle.spawn(server::serve(listener, app, limits));
    Ok(handle)
}

/// The `reminders` projection and, when `reminders.enabled`, the scheduler (every
/// instance may run one: they share due reminders through `SKIP LOCKED`).
fn spawn_reminders(ctx: &ServiceContext, handle: &mut ServiceHandle) {
    let p = &ctx.config.ghost.projections;
    handle.run_projection(ProjectionRunner::new(
        ctx.store().clone(),
        std::sync::Arc::new(RemindersProjection),
        p.batch_size,
        Duration::from_millis(p.poll_interval_ms),
    ));
    if ctx.config.ghost.reminders.enabled {
        let scheduler = ghost_shared::reminders::scheduler::Scheduler::new(ctx.clone());
        handle.spawn(scheduler.run());
    }
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

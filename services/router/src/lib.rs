//! The router: decides which route serves each user message, asks for the work, and runs
//! the loop controller over the workers' results (seed 002).
//!
//! - [`routing`]: the pure decisions (commands, rule dictionary, classifier validation,
//!   gates, loop controller, declarations; masking is `ghost_shared::masking`);
//! - [`flow`]: the event handlers wiring them to NATS and Postgres — a user message
//!   ([`flow::intake`]), the classifier's or Kuro's reply, and each worker result
//!   ([`flow::loops`]);
//! - [`projections`]: session state, the routing log and ANALYZE results;
//! - [`watchdog`]: closes turns nobody answered in time (`TurnTimedOut`).

pub mod flow;
pub mod projections;
pub mod routing;
pub mod watchdog;

use std::sync::Arc;
use std::time::Duration;

use ghost_shared::bus::run_consumer;
use ghost_shared::projector::{Projection, ProjectionRunner};
use ghost_shared::service::{ServiceContext, ServiceDescriptor, ServiceError, ServiceHandle};

pub use flow::{Router, RouterInput};
use projections::RoutingProjection;
use routing::RoutingConfig;

/// This service's name.
pub const SERVICE: &str = "router";

/// How this service is run, named and rebuilt ([`ServiceDescriptor`]).
pub const DESCRIPTOR: ServiceDescriptor = ServiceDescriptor {
    name: SERVICE,
    consumes: RouterInput::TYPES,
    appends: ghost_shared::event_types![
        ghost_shared::events::RouteDecided,
        ghost_shared::events::ClassifyRequested,
        ghost_shared::events::SummarizeRequested,
        ghost_shared::events::WorkRequested,
        ghost_shared::events::LoopDecided,
        ghost_shared::events::ConfirmationPending,
        ghost_shared::events::ConfirmationCheckRequested,
        ghost_shared::events::ConfirmationResolved,
        ghost_shared::events::RenderRequested,
        ghost_shared::events::JudgeRequested,
        ghost_shared::events::RenderFailed,
        ghost_shared::events::TurnTimedOut,
        ghost_shared::reminders::events::ReminderScheduled,
        ghost_shared::reminders::events::ReminderChanged,
        ghost_shared::reminders::events::ReminderCancelled,
        ghost_shared::reminders::events::ReminderZoneSet,
        ghost_shared::reminders::events::ReminderQuietHoursSet,
    ],
    metrics_port_offset: 1,
    projections: |_| projections(),
    start: |ctx| Box::pin(start(ctx)),
};

/// Loads `routing.rules_file` (gates, loop limits, dictionary); errors name the rule or key.
pub fn load_routing_config(ctx: &ServiceContext) -> Result<RoutingConfig, ServiceError> {
    let path = ctx.config.resolve(&ctx.config.ghost.routing.rules_file);
    let yaml = std::fs::read_to_string(&path)
        .map_err(|e| ServiceError::Config(format!("routing.rules_file {}: {e}", path.display())))?;
    RoutingConfig::from_yaml(&yaml)
        .map_err(|e| ServiceError::Config(format!("{}: {e}", path.display())))
}

/// Refuses a configuration whose loops and reply cannot end before the turn watchdog.
fn check_time_budget(ctx: &ServiceContext, config: &RoutingConfig) -> Result<(), ServiceError> {
    let llm = &ctx.config.ghost.llm;
    let secs = |role: &str| llm.get(role).map_or(0, |c| c.timeout_secs);
    config
        .loop_policy
        .fits_turn(
            secs("worker").max(secs("coder")),
            secs("persona"),
            ctx.config.ghost.routing.turn_timeout_secs,
        )
        .map_err(ServiceError::Config)
}

/// The router's projections (rebuilt by `ghost projections rebuild routing`): one
/// runner feeds `routing_sessions`, `routing_log` and `analyze_results`.
pub fn projections() -> Vec<Arc<dyn Projection>> {
    vec![Arc::new(RoutingProjection)]
}

/// Starts the router's consumers and projections.
pub async fn start(ctx: ServiceContext) -> Result<ServiceHandle, ServiceError> {
    let mut handle = ServiceHandle::new(SERVICE);
    let config = load_routing_config(&ctx)?;
    check_time_budget(&ctx, &config)?;
    let router = Arc::new(Router::new(ctx.clone(), config));
    let p = &ctx.config.ghost.projections;
    for projection in projections() {
        let runner = ProjectionRunner::new(
            ctx.store().clone(),
            projection,
            p.batch_size,
            Duration::from_millis(p.poll_interval_ms),
        );
        handle.run_projection(runner);
    }
    for event_type in RouterInput::TYPES {
        handle.spawn(run_consumer(
            ctx.bus().clone(),
            ctx.consumer(event_type)?,
            router.clone(),
        ));
    }
    handle.spawn(watchdog::run(ctx.clone()));
    Ok(handle)
}

/// Runs the router until it fails.
pub async fn run(ctx: ServiceContext) -> Result<(), ServiceError> {
    start(ctx).await?.wait().await;
    Ok(())
}

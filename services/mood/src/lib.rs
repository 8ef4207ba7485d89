//! The mood: what lingers of the persona's reactions (seed 004).
//!
//! - [`mood`]: the mood computation (impact integral, τ(salience), labels, response-policy
//!   knobs) and its incremental form;
//! - [`episodes`]: the `partner_mood_state` projection (each persona's episode window);
//! - [`cache`]: each window in memory, kept current by the projection's announcements;
//! - [`service`]: the service — projection runner, `mood.get` and the debug API over NATS.

pub mod cache;
pub mod episodes;
pub mod mood;
pub mod service;

use std::sync::Arc;

use ghost_shared::service::{ServiceContext, ServiceDescriptor, ServiceError};

pub use service::start;

/// This service's name.
pub const SERVICE: &str = "mood";

/// How this service is run, named and rebuilt ([`ServiceDescriptor`]).
pub const DESCRIPTOR: ServiceDescriptor = ServiceDescriptor {
    name: SERVICE,
    consumes: &[],
    appends: &[],
    metrics_port_offset: 4,
    projections: |config| {
        vec![Arc::new(episodes::MoodEpisodes::new(
            config.ghost.mood.constants,
        ))]
    },
    start: |ctx| Box::pin(start(ctx)),
};

/// Runs the mood service until it fails.
pub async fn run(ctx: ServiceContext) -> Result<(), ServiceError> {
    start(ctx).await?.wait().await;
    Ok(())
}

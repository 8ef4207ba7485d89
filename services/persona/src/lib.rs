//! The persona: the only voice the user hears. Writes every reply from the request, the
//! character and the conversation so far, streaming tokens as it goes.
//!
//! - [`prompt`]: the system prompt template;
//! - [`capsule`]: the mood capsule and tone guide;
//! - [`render`]: the `RenderRequested` handler (idempotent: one reply per request);
//! - [`autonomy_message`]: the persona's message about an autonomous action (stored, then
//!   published; nothing when the render fails);
//! - [`recall`]: what the persona remembers before it replies (seed 001 B-1/B-2);
//! - [`routing_notes`]: what routing adds to a reply (declaration line, summary, notices);
//! - [`next_speaker`]: `[Next: …]` resolution; [`stage`]: the multi-character stage loop.

pub mod autonomy_message;
pub mod capsule;
pub mod next_speaker;
pub mod prompt;
pub mod recall;
pub mod render;
pub mod routing_notes;
pub mod stage;

use std::sync::Arc;
use std::time::Duration;

use ghost_shared::bus::{run_consumer, ConsumerSpec};
use ghost_shared::envelope::EventPayload;
use ghost_shared::events::RenderRequested;
use ghost_shared::projections::AssistantTextProjection;
use ghost_shared::projector::ProjectionRunner;
use ghost_shared::service::{ServiceContext, ServiceDescriptor, ServiceError, ServiceHandle};

pub use render::Renderer;

/// This service's name.
pub const SERVICE: &str = "persona";

/// How this service is run, named and rebuilt ([`ServiceDescriptor`]).
pub const DESCRIPTOR: ServiceDescriptor = ServiceDescriptor {
    name: SERVICE,
    metrics_port_offset: 3,
    projections: |_| vec![Arc::new(AssistantTextProjection)],
    start: |ctx| Box::pin(start(ctx)),
};

/// Starts the renderer, the `assistant_text` projection and the stage loop.
pub async fn start(ctx: ServiceContext) -> Result<ServiceHandle, ServiceError> {
    let mut handle = ServiceHandle::new(SERVICE);
    ghost_shared::metrics::register_turns();
    ghost_shared::metrics::register_stage();
    let renderer = Arc::new(Renderer::new(ctx.clone())?);
    let p = &ctx.config.ghost.projections;
    let runner = ProjectionRunner::new(
        ctx.store().clone(),
        Arc::new(AssistantTextProjection),
        p.batch_size,
        Duration::from_millis(p.poll_interval_ms),
    );
    handle.run_projection(runner);
    handle.spawn(run_consumer(
        ctx.bus().clone(),
        ConsumerSpec::new(SERVICE, RenderRequested::EVENT_TYPE),
        renderer,
    ));
    handle.spawn(run_consumer(
        ctx.bus().clone(),
        ConsumerSpec::new(SERVICE, autonomy_message::CONSUMES),
        Arc::new(autonomy_message::MessageRenderer::new(ctx.clone())?),
    ));
    stage::start(&ctx, &mut handle)?;
    Ok(handle)
}

/// Runs the persona until it fails.
pub async fn run(ctx: ServiceContext) -> Result<(), ServiceError> {
    start(ctx).await?.wait().await;
    Ok(())
}

//! The persona: the only voice the user hears. Writes every reply from the request, the
//! character and the conversation so far, streaming tokens as it goes.
//!
//! - [`prompt`]: the system prompt template;
//! - [`capsule`]: the mood capsule and tone guide;
//! - [`render`]: the `RenderRequested` handler (idempotent: one reply per request);
//! - [`autonomy_message`]: the persona's message about an autonomous action (stored, then
//!   published; nothing when the render fails);
//! - [`recall`]: what the persona remembers before it replies (seed 001 B-1/B-2);
//! - [`reminder_voice`]: a due reminder's line in the persona's words (core NATS
//!   request/reply; the gateway says it plainly when none comes);
//! - [`embeddings`]: everything said (and every state) embedded when it is said, a
//!   projection off the reply's path, so recall embeds only its query;
//! - [`routing_notes`]: what routing adds to a reply (declaration line, summary, notices);
//! - [`next_speaker`]: `[Next: …]` resolution; [`stage`]: the multi-character stage loop.

pub mod autonomy_message;
pub mod capsule;
pub mod embeddings;
pub mod next_speaker;
pub mod prompt;
pub mod recall;
pub mod reminder_voice;
pub mod render;
pub mod routing_notes;
pub mod stage;

use std::sync::Arc;
use std::time::Duration;

use ghost_shared::bus::run_consumer;
use ghost_shared::projections::AssistantTextProjection;
use ghost_shared::projector::ProjectionRunner;
use ghost_shared::service::{ServiceContext, ServiceDescriptor, ServiceError, ServiceHandle};

pub use render::Renderer;

/// This service's name.
pub const SERVICE: &str = "persona";

/// How this service is run, named and rebuilt ([`ServiceDescriptor`]).
pub const DESCRIPTOR: ServiceDescriptor = ServiceDescriptor {
    name: SERVICE,
    consumes: ghost_shared::event_types![
        ghost_shared::events::RenderRequested,
        ghost_shared::events::JudgeRequested,
        ghost_shared::events::StageUserInput,
        ghost_shared::events::StageTurnRequested,
        ghost_shared::events::StageEnded,
        ghost_shared::autonomy::events::ActionResultRecorded,
    ],
    appends: ghost_shared::event_types![
        ghost_shared::autonomy::events::AutonomyMessageRendered,
        ghost_shared::autonomy::events::AutonomyMessageFailed,
        ghost_shared::events::SummarizeRequested,
        ghost_shared::events::RecallPerformed,
        ghost_shared::events::AssistantReplied,
        ghost_shared::events::RenderFailed,
        ghost_shared::events::PersonaProposed,
        ghost_shared::events::StageTurnRequested,
        ghost_shared::events::StageSpoke,
        ghost_shared::events::StageTurnFailed,
        ghost_shared::events::NextSpeakerChosen,
        ghost_shared::events::StageEnded,
        ghost_shared::events::StageMemorySaved,
    ],
    metrics_port_offset: 3,
    projections: |config| {
        let mut projections: Vec<Arc<dyn ghost_shared::projector::Projection>> =
            vec![Arc::new(AssistantTextProjection)];
        if let Some(vectors) = embeddings::projection(config) {
            projections.push(vectors);
        }
        projections
    },
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
    if let Some(vectors) = embeddings::projection(&ctx.config) {
        handle.run_projection(ProjectionRunner::new(
            ctx.store().clone(),
            vectors,
            p.batch_size,
            Duration::from_millis(p.poll_interval_ms),
        ));
    }
    for event_type in render::PersonaRequest::TYPES {
        handle.spawn(run_consumer(
            ctx.bus().clone(),
            ctx.consumer(event_type)?,
            renderer.clone(),
        ));
    }
    handle.spawn(run_consumer(
        ctx.bus().clone(),
        ctx.consumer(autonomy_message::CONSUMES)?,
        Arc::new(autonomy_message::MessageRenderer::new(ctx.clone())?),
    ));
    if ctx.config.ghost.reminders.voice.enabled {
        let voice = Arc::new(reminder_voice::ReminderVoice::new(ctx.clone())?);
        let requests = voice.subscribe().await?;
        handle.spawn(voice.serve(requests));
    }
    stage::start(&ctx, &mut handle)?;
    Ok(handle)
}

/// Runs the persona until it fails.
pub async fn run(ctx: ServiceContext) -> Result<(), ServiceError> {
    start(ctx).await?.wait().await;
    Ok(())
}

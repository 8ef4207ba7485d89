//! The multi-character stage (seeds 000 and 003): a state machine per run, driven by its
//! own events in `stage-<id>`.
//!
//! - [`input`]: `StageUserInput` → the first `StageTurnRequested`;
//! - [`turn`]: `StageTurnRequested` → `StageSpoke`/`StageTurnFailed`, `NextSpeakerChosen`,
//!   then the next `StageTurnRequested` or `StageEnded`, in one append;
//! - [`memory`]: `StageEnded` → `StageMemorySaved` (the run's summary);
//! - [`cast`]: the characters, their models and prompts; [`prompt`]: the shared rules;
//! - [`postprocess`]: `<think>`, tags, greetings, shortening; [`view`]: the stage so far;
//! - [`signal`]: `thinking` and wake-ups for watchers on core NATS.

pub mod cast;
pub mod input;
pub mod memory;
pub mod postprocess;
pub mod prompt;
pub mod signal;
pub mod turn;
pub mod view;

use std::sync::Arc;

use ghost_shared::bus::{run_consumer, ConsumerSpec, HandlerError};
use ghost_shared::envelope::{EventPayload, NewEvent};
use ghost_shared::event_log::EventLogError;
use ghost_shared::events::{StageEnded, StageTurnRequested, StageUserInput};
use ghost_shared::service::{ServiceContext, ServiceError, ServiceHandle};
use ghost_shared::store::{ExpectedVersion, StoreError};

pub use cast::Cast;

/// Appends one step's events; the stream's version after them. A step already stored (a
/// redelivery, or a racing attempt that won) is not an error.
pub(crate) async fn append_steps(
    ctx: &ServiceContext,
    stream: &str,
    events: Vec<NewEvent>,
) -> Result<i32, HandlerError> {
    match ctx.log.append(stream, ExpectedVersion::Any, &events).await {
        Ok(outcome) => Ok(outcome.events.last().map_or(0, |e| e.version)),
        Err(EventLogError::Store(StoreError::PartialDuplicate { .. })) => {
            // Another attempt of this step stored a different outcome first: it stands.
            ctx.store()
                .stream_version(stream)
                .await
                .map_err(HandlerError::transient)
        }
        Err(e) => Err(HandlerError::transient(e)),
    }
}

/// Starts the stage's consumers on `handle`.
pub fn start(ctx: &ServiceContext, handle: &mut ServiceHandle) -> Result<(), ServiceError> {
    let cast = Arc::new(Cast::from_config(&ctx.config)?);
    let service = ctx.service;
    handle.spawn(run_consumer(
        ctx.bus().clone(),
        ConsumerSpec::new(service, StageUserInput::EVENT_TYPE),
        Arc::new(input::InputHandler::new(ctx.clone(), cast.clone())),
    ));
    handle.spawn(run_consumer(
        ctx.bus().clone(),
        ConsumerSpec::new(service, StageTurnRequested::EVENT_TYPE),
        Arc::new(turn::TurnHandler::new(ctx.clone(), cast)),
    ));
    handle.spawn(run_consumer(
        ctx.bus().clone(),
        ConsumerSpec::new(service, StageEnded::EVENT_TYPE),
        Arc::new(memory::MemoryHandler::new(ctx.clone())),
    ));
    Ok(())
}

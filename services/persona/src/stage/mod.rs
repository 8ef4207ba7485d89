//! The multi-character stage (seeds 000 and 003): a state machine per run, driven by its
//! own events in `stage-<id>`.
//!
//! - [`input`]: `StageUserInput` → the first `StageTurnRequested`;
//! - [`turn`]: `StageTurnRequested` → `StageSpoke`/`StageTurnFailed`, `NextSpeakerChosen`,
//!   then the next `StageTurnRequested` or `StageEnded`, in one append;
//! - [`memory`]: `StageEnded` → `StageMemorySaved` (the run's summary);
//! - [`node`]: each graph node's INFO line with the run's correlation id;
//! - [`cast`]: the characters, their models and prompts; [`prompt`]: the shared rules;
//! - [`postprocess`]: `<think>`, tags, greetings, shortening; [`view`]: the stage so far;
//! - [`signal`]: `thinking` and wake-ups for watchers on core NATS;
//! - [`StageLog`]: the steps' appends, many runs' turns per transaction (group commit).

pub mod cast;
pub mod input;
pub mod memory;
pub mod node;
pub mod postprocess;
pub mod prompt;
pub mod signal;
pub mod turn;
pub mod view;

use std::sync::Arc;

use ghost_shared::bus::{run_consumer, HandlerError};
use ghost_shared::envelope::{EventPayload, NewEvent};
use ghost_shared::event_log::{GroupAppendError, GroupAppender};
use ghost_shared::events::{StageEnded, StageTurnRequested, StageUserInput};
use ghost_shared::service::{ServiceContext, ServiceError, ServiceHandle};
use ghost_shared::store::{AppendRequest, ExpectedVersion, StoreError};

pub use cast::Cast;

/// Where the stage's steps are appended: through a group commit, so the turns of many
/// runs at once share a transaction (each step is still answered only after its commit).
#[derive(Clone, Debug)]
pub struct StageLog {
    ctx: ServiceContext,
    appends: GroupAppender,
}

/// Transactions of stage steps in flight at once.
const STAGE_COMMITTERS: usize = 2;
/// Stage steps per transaction at most.
const STAGE_MAX_BATCH: usize = 128;

impl StageLog {
    /// Spawns the committer tasks on `ctx`'s event log.
    pub fn new(ctx: &ServiceContext) -> Self {
        Self {
            ctx: ctx.clone(),
            appends: GroupAppender::spawn(ctx.log.clone(), STAGE_COMMITTERS, STAGE_MAX_BATCH),
        }
    }

    /// Appends one step's events; the stream's version after them. A step already stored
    /// (a redelivery, or a racing attempt that won) is not an error.
    pub(crate) async fn append_steps(
        &self,
        stream: &str,
        events: Vec<NewEvent>,
    ) -> Result<i32, HandlerError> {
        let request = AppendRequest {
            stream: stream.to_owned(),
            expected: ExpectedVersion::Any,
            events,
        };
        match self.appends.append(vec![request]).await {
            Ok(outcomes) => Ok(outcomes
                .last()
                .and_then(|o| o.events.last())
                .map_or(0, |e| e.version)),
            Err(GroupAppendError::Store(StoreError::PartialDuplicate { .. })) => {
                // Another attempt of this step stored a different outcome first: it stands.
                self.ctx
                    .store()
                    .stream_version(stream)
                    .await
                    .map_err(HandlerError::transient)
            }
            Err(e) => Err(HandlerError::transient(e)),
        }
    }
}

/// Starts the stage's consumers on `handle`.
pub fn start(ctx: &ServiceContext, handle: &mut ServiceHandle) -> Result<(), ServiceError> {
    let cast = Arc::new(Cast::from_config(&ctx.config)?);
    let log = StageLog::new(ctx);
    handle.spawn(run_consumer(
        ctx.bus().clone(),
        ctx.consumer(StageUserInput::EVENT_TYPE)?,
        Arc::new(input::InputHandler::new(
            ctx.clone(),
            log.clone(),
            cast.clone(),
        )),
    ));
    handle.spawn(run_consumer(
        ctx.bus().clone(),
        ctx.consumer(StageTurnRequested::EVENT_TYPE)?,
        Arc::new(turn::TurnHandler::new(ctx.clone(), log.clone(), cast)),
    ));
    handle.spawn(run_consumer(
        ctx.bus().clone(),
        ctx.consumer(StageEnded::EVENT_TYPE)?,
        Arc::new(memory::MemoryHandler::new(ctx.clone(), log)?),
    ));
    Ok(())
}

//! `StageUserInput` → the run's first `StageTurnRequested`: the user may nominate a
//! character with a tag; otherwise the fallback picks (round-robin starts at the top).

use std::sync::Arc;

use tracing::info;

use ghost_shared::bus::{EventHandler, HandlerError};
use ghost_shared::envelope::{NewEvent, RecordedEvent};
use ghost_shared::events::{StageTurnRequested, StageUserInput};
use ghost_shared::service::ServiceContext;
use ghost_shared::stage_signal::StageSignal;

use super::cast::Cast;
use super::signal::announce;
use super::StageLog;
use crate::next_speaker::{resolve_next_speaker, RESERVED_USER_ID};

/// Step name of the run's first turn request.
pub const STEP_FIRST_TURN: &str = "stage.first_turn";

/// Starts a run for each user input on a stage.
pub struct InputHandler {
    ctx: ServiceContext,
    log: StageLog,
    cast: Arc<Cast>,
}

impl InputHandler {
    /// A handler over the shared cast.
    pub fn new(ctx: ServiceContext, log: StageLog, cast: Arc<Cast>) -> Self {
        Self { ctx, log, cast }
    }
}

#[async_trait::async_trait]
impl EventHandler for InputHandler {
    async fn handle(&self, event: RecordedEvent) -> Result<(), HandlerError> {
        let input: StageUserInput = event.decode().map_err(HandlerError::permanent)?;
        let decision = resolve_next_speaker(
            &input.text,
            RESERVED_USER_ID,
            &self.cast.registry,
            &self.cast.policy,
        );
        let Some(speaker) = decision.next_id else {
            // A registry is never empty, so the fallback always finds someone.
            return Err(HandlerError::permanent("no character can speak"));
        };
        info!(stage_id = %input.stage_id, %speaker, reason = %decision.reason, "stage run starts");
        let first = StageTurnRequested {
            stage_id: input.stage_id.clone(),
            input_id: event.event_id,
            turn_index: 0,
            speaker,
            spoken_set: Default::default(),
        };
        let e = NewEvent::caused_by(&event, STEP_FIRST_TURN, &first, self.ctx.service)
            .map_err(HandlerError::permanent)?;
        let version = self.log.append_steps(&event.stream, vec![e]).await?;
        announce(
            self.ctx.bus(),
            &input.stage_id,
            &StageSignal::Appended { version },
        )
        .await;
        Ok(())
    }
}

//! The interest state after the persona's own deliberation (seed 001 Phase C): an
//! `ActionDecided` whose `persona_influence` names what the persona now attends to, and the
//! result of an `agent_delegate` job (`ActionResultRecorded`), which names the decision's
//! targets again at the result's time (a long job's subject is fresh again once its result
//! is in). Merged by the write plan's rule ([`InterestState::merged`]) and appended as
//! `InterestStateUpdated` on the persona's stream, its id derived from the cause: a
//! redelivery appends nothing.

use std::sync::Arc;

use tracing::warn;

use ghost_shared::autonomy::decision::{ActionDecision, AGENT_DELEGATE};
use ghost_shared::autonomy::events::{ActionDecided, ActionResultRecorded};
use ghost_shared::bus::{EventHandler, HandlerError};
use ghost_shared::envelope::{NewEvent, RecordedEvent};
use ghost_shared::events::InterestStateUpdated;
use ghost_shared::memory::influence::interest_update;
use ghost_shared::memory::InterestState;
use ghost_shared::service::ServiceContext;

use crate::writer::MemoryWriter;

/// The event types this handler consumes.
pub const CONSUMES: &[&str] = AttentionInput::TYPES;

ghost_shared::event_enum! {
    /// What can move the interest state: a decision, and a delegated action's result.
    pub enum AttentionInput {
        ActionDecided,
        ActionResultRecorded,
    }
}

/// The step the update's id derives from (one per cause).
pub const STEP: &str = "write-plan/interest";

/// Handles decisions and agent results.
pub struct Attention {
    ctx: ServiceContext,
    writer: Arc<MemoryWriter>,
}

impl Attention {
    /// A handler changing memory through `writer`.
    pub fn new(ctx: ServiceContext, writer: Arc<MemoryWriter>) -> Self {
        Self { ctx, writer }
    }
}

/// The persona and decision behind `event`, when it can change the interest state.
fn cause(event: &RecordedEvent) -> Result<Option<(String, ActionDecision)>, HandlerError> {
    match AttentionInput::decode(event).map_err(HandlerError::permanent)? {
        Some(AttentionInput::ActionDecided(d)) => Ok(Some((d.persona, d.decision))),
        Some(AttentionInput::ActionResultRecorded(r)) => {
            Ok((r.decision.capability == AGENT_DELEGATE).then_some((r.persona, r.decision)))
        }
        None => Err(HandlerError::permanent(format!(
            "attention does not handle {}",
            event.event_type
        ))),
    }
}

#[async_trait::async_trait]
impl EventHandler for Attention {
    async fn handle(&self, event: RecordedEvent) -> Result<(), HandlerError> {
        let Some((persona, decision)) = cause(&event)? else {
            return Ok(());
        };
        let update = match interest_update(&decision.persona_influence) {
            Ok(Some(update)) => update,
            Ok(None) => return Ok(()),
            Err(errors) => {
                // Decided before the influence was checked: nothing to merge.
                warn!(event = %event.event_id, ?errors, "persona_influence unreadable; interest unchanged");
                return Ok(());
            }
        };
        if self.ctx.outcome_stored(&event, &[STEP]).await? {
            return Ok(());
        }
        let tau = self.ctx.config.ghost.memory.interest_tau_secs;
        let now = event.recorded_at.timestamp_micros() as f64 / 1e6;
        let _serial = self.writer.serial().await;
        let memory = self.writer.load(&persona).await?;
        let interest = memory
            .interest
            .unwrap_or_else(|| InterestState::empty(now))
            .merged(&update, event.event_id, now, tau);
        let updated = InterestStateUpdated {
            persona: persona.clone(),
            source_event_id: event.event_id,
            interest,
        };
        let new = NewEvent::caused_by(&event, STEP, &updated, self.ctx.service)
            .map_err(HandlerError::permanent)?;
        self.writer.append(&persona, &[new]).await
    }
}

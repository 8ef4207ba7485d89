//! The interest state after the persona's own deliberation (seed 001 Phase C): an
//! `ActionDecided` whose `persona_influence` and `mood_influence` name what the persona now
//! attends to (one update: [`interest::decision_update`]), and the result of an
//! `agent_delegate` job (`ActionResultRecorded`), which names the decision's targets again
//! at the result's time (a long job's subject is fresh again once its result is in) and
//! adds what the result itself is about: the agent's JSON output's `interest` object
//! (`details.interest`, the same three keys), its mode winning. Merged by the write plan's
//! rule ([`InterestState::merged`]) and appended as `InterestStateUpdated` on the persona's
//! stream, its id derived from the cause: a redelivery appends nothing.
//!
//! [`interest::decision_update`]: ghost_shared::memory::influence::decision_update

use std::sync::Arc;

use serde_json::Value;

use tracing::warn;

use ghost_shared::autonomy::decision::AGENT_DELEGATE;
use ghost_shared::autonomy::events::{ActionDecided, ActionResultRecorded};
use ghost_shared::bus::{EventHandler, HandlerError};
use ghost_shared::envelope::{NewEvent, RecordedEvent};
use ghost_shared::events::InterestStateUpdated;
use ghost_shared::memory::influence::{combined, decision_update, interest_update};
use ghost_shared::memory::validate::CheckedInterestUpdate;
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

/// The persona behind `event` and the update it makes (`None` when it cannot change the
/// interest state); a malformed influence or result interest is warned about and left out.
fn cause(event: &RecordedEvent) -> Result<Option<(String, CheckedInterestUpdate)>, HandlerError> {
    let read = |update: Result<Option<CheckedInterestUpdate>, Vec<String>>| match update {
        Ok(update) => update,
        Err(errors) => {
            // Decided (or reported) before this was checked: nothing of it to merge.
            warn!(event = %event.event_id, ?errors, "interest unreadable; that part left out");
            None
        }
    };
    let (persona, update) = match AttentionInput::decode(event).map_err(HandlerError::permanent)? {
        Some(AttentionInput::ActionDecided(d)) => {
            let decision = &d.decision;
            let update = read(decision_update(
                &decision.persona_influence,
                &decision.mood_influence,
            ));
            (d.persona, update)
        }
        Some(AttentionInput::ActionResultRecorded(r)) => {
            if r.decision.capability != AGENT_DELEGATE {
                return Ok(None);
            }
            let decided = read(decision_update(
                &r.decision.persona_influence,
                &r.decision.mood_influence,
            ));
            let found = match r.result.details.get("interest") {
                Some(Value::Object(interest)) => {
                    read(interest_update("result.details.interest", interest))
                }
                _ => None,
            };
            (r.persona, combined(found, decided))
        }
        None => {
            return Err(HandlerError::permanent(format!(
                "attention does not handle {}",
                event.event_type
            )))
        }
    };
    Ok(update.map(|u| (persona, u)))
}

#[async_trait::async_trait]
impl EventHandler for Attention {
    async fn handle(&self, event: RecordedEvent) -> Result<(), HandlerError> {
        let Some((persona, update)) = cause(&event)? else {
            return Ok(());
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

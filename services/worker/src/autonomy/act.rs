//! `ActionDecided`: run the decision's capability once. `ActionStarted` (id derived from the
//! decision) claims the run: a redelivered decision finds the claim and runs nothing; a
//! claim without a result (the process died mid-run) is closed as failed, never run again.

use serde_json::json;

use ghost_shared::autonomy::activity::publish_activity_of;
use ghost_shared::autonomy::decision::DecisionKind;
use ghost_shared::autonomy::events::{steps, ActionDecided, ActionResultRecorded, ActionStarted};
use ghost_shared::autonomy::result::ActionResult;
use ghost_shared::bus::{EventHandler, HandlerError};
use ghost_shared::envelope::{EventPayload, NewEvent, RecordedEvent};
use ghost_shared::ids::derive_event_id;
use ghost_shared::service::ServiceContext;
use ghost_shared::store::ExpectedVersion;

use super::capabilities::Capabilities;

/// Handles `ActionDecided`.
pub struct Actor {
    pub(crate) ctx: ServiceContext,
    pub(crate) capabilities: Capabilities,
}

impl Actor {
    /// An actor running `capabilities`.
    pub fn new(ctx: ServiceContext, capabilities: Capabilities) -> Self {
        Self { ctx, capabilities }
    }

    async fn append(
        &self,
        cause: &RecordedEvent,
        new: Result<NewEvent, serde_json::Error>,
    ) -> Result<(RecordedEvent, bool), HandlerError> {
        let new = new.map_err(HandlerError::permanent)?;
        let appended = self
            .ctx
            .log
            .append(&cause.stream, ExpectedVersion::Any, &[new])
            .await
            .map_err(HandlerError::transient)?;
        let duplicate = appended.duplicate;
        let event = appended
            .events
            .into_iter()
            .next()
            .ok_or_else(|| HandlerError::permanent("append returned no event"))?;
        Ok((event, duplicate))
    }

    async fn record_result(
        &self,
        cause: &RecordedEvent,
        decided: &ActionDecided,
        result: ActionResult,
    ) -> Result<(), HandlerError> {
        let agent_job = (decided.decision.capability == "agent_delegate").then(|| {
            json!({"backend": "cli_agent", "job_id": derive_event_id(cause.event_id, steps::STARTED)})
        });
        let recorded = ActionResultRecorded {
            persona: decided.persona.clone(),
            decision_event_id: cause.event_id,
            decision: decided.decision.clone(),
            result,
            agent_job,
        };
        let (event, duplicate) = self
            .append(
                cause,
                NewEvent::caused_by(cause, steps::RESULT, &recorded, self.ctx.service),
            )
            .await?;
        if !duplicate {
            publish_activity_of(self.ctx.bus(), &event).await;
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl EventHandler for Actor {
    async fn handle(&self, event: RecordedEvent) -> Result<(), HandlerError> {
        let decided: ActionDecided = event.decode().map_err(HandlerError::permanent)?;
        if decided.decision.decision == DecisionKind::Skip
            || self.ctx.outcome_stored(&event, &[steps::RESULT]).await?
        {
            return Ok(());
        }
        let capability_name = decided.decision.capability.clone();
        let started = ActionStarted {
            persona: decided.persona.clone(),
            decision_event_id: event.event_id,
            capability: capability_name.clone(),
        };
        let (started_event, claimed_before) = self
            .append(
                &event,
                NewEvent::caused_by(&event, steps::STARTED, &started, self.ctx.service),
            )
            .await?;
        if claimed_before {
            // Started by an earlier delivery that never recorded its result: it may have
            // done its work, so it is not run a second time.
            let result = ActionResult::failed(
                &capability_name,
                "interrupted: the action started before and recorded no result; not run again",
            );
            return self.record_result(&event, &decided, result).await;
        }
        publish_activity_of(self.ctx.bus(), &started_event).await;
        let result = match self.capabilities.get(&capability_name) {
            Some(capability) => {
                capability
                    .run(&decided.decision.input, started_event.event_id)
                    .await
            }
            None => ActionResult::failed(&capability_name, "unknown capability"),
        };
        self.record_result(&event, &decided, result).await
    }
}

/// The event type this handler consumes.
pub const CONSUMES: &str = ActionDecided::EVENT_TYPE;

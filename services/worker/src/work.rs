//! `WorkRequested` on the local model, once per request. CODE is never done here.

use ghost_shared::bus::{EventHandler, HandlerError};
use ghost_shared::envelope::{session_stream, EventPayload, NewEvent, RecordedEvent};
use ghost_shared::events::{WorkRequested, WorkerCompleted, WorkerFailed};
use ghost_shared::ids::WORK_OUTCOME_STEP;
use ghost_shared::llm::{ChatMessage, LlmClient};
use ghost_shared::service::ServiceContext;
use ghost_shared::store::ExpectedVersion;
use tracing::{info, warn};

use ghost_shared::routing::Route;

/// Handles `WorkRequested` for every route but CODE.
pub struct Worker {
    pub(crate) ctx: ServiceContext,
    pub(crate) llm: LlmClient,
    pub(crate) system: String,
}

#[async_trait::async_trait]
impl EventHandler for Worker {
    async fn handle(&self, event: RecordedEvent) -> Result<(), HandlerError> {
        let work: WorkRequested = event.decode().map_err(HandlerError::permanent)?;
        if work.route == Route::Code {
            return Ok(()); // the coder's
        }
        // The shared outcome id, and the two it replaced (outcomes stored before it).
        let steps = [
            WORK_OUTCOME_STEP,
            WorkerCompleted::EVENT_TYPE,
            WorkerFailed::EVENT_TYPE,
        ];
        if self.ctx.outcome_stored(&event, &steps).await? {
            return Ok(()); // a redelivery changes nothing
        }
        if self.ctx.turn_outcome(work.user_event_id).await?.is_some() {
            return Ok(()); // the turn was closed (timed out): nobody waits for this work
        }
        let messages = [
            ChatMessage::system(self.system.replace("{{route}}", work.route.as_str())),
            ChatMessage::user(work.task.clone()),
        ];
        info!(route = %work.route, loop_index = work.loop_index, "worker run");
        let service = self.ctx.service;
        let outcome = match self.llm.chat(&messages).await {
            Ok(result) => {
                let done = WorkerCompleted {
                    session_id: work.session_id.clone(),
                    user_event_id: work.user_event_id,
                    route: work.route,
                    result,
                };
                NewEvent::caused_by(&event, WORK_OUTCOME_STEP, &done, service)
            }
            Err(e) => {
                warn!(route = %work.route, error = %e, "worker model call failed");
                let failed = WorkerFailed {
                    session_id: work.session_id.clone(),
                    user_event_id: work.user_event_id,
                    route: work.route,
                    code: "llm_error".into(),
                    message: e.to_string(),
                };
                NewEvent::caused_by(&event, WORK_OUTCOME_STEP, &failed, service)
            }
        }
        .map_err(HandlerError::permanent)?;
        self.ctx
            .log
            .append(
                &session_stream(&work.session_id),
                ExpectedVersion::Any,
                &[outcome],
            )
            .await
            .map_err(HandlerError::transient)?;
        Ok(())
    }
}

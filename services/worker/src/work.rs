//! `WorkRequested` on the local model, once per request. CODE is never done here.

use ghost_shared::bus::{EventHandler, HandlerError};
use ghost_shared::contracts;
use ghost_shared::envelope::{session_stream, EventPayload, NewEvent, RecordedEvent};
use ghost_shared::events::{WorkRequested, WorkerCompleted, WorkerFailed, TIME_LIMIT};
use ghost_shared::ids::WORK_OUTCOME_STEP;
use ghost_shared::llm::{Call, ChatMessage, LlmClient};
use ghost_shared::service::ServiceContext;
use ghost_shared::store::ExpectedVersion;
use tracing::{info, warn};

use ghost_shared::routing::Route;
use ghost_shared::web::WebClient;

use crate::research::{self, ResearchError};

/// Handles `WorkRequested` for every route but CODE.
pub struct Worker {
    pub(crate) ctx: ServiceContext,
    pub(crate) llm: LlmClient,
    pub(crate) system: String,
    /// Search and page fetch for RESEARCH.
    pub(crate) web: WebClient,
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
        let service = self.ctx.service;
        let failed = |code: &str, message: String| WorkerFailed {
            session_id: work.session_id.clone(),
            user_event_id: work.user_event_id,
            route: work.route,
            code: code.into(),
            message,
        };
        // RESEARCH works from real sources only: without them, no model call at all.
        let (task, sources) = if work.route == Route::Research {
            match research::gather(&self.web, &work.task).await {
                Ok(found) => (found.task, found.urls),
                Err(e) => {
                    let (code, message) = match e {
                        ResearchError::Unavailable => (
                            "research_unavailable",
                            "no search endpoint is configured (web.search_url)".to_owned(),
                        ),
                        ResearchError::SearchFailed(e) => ("research_search_failed", e.to_string()),
                    };
                    warn!(code, %message, "research has no sources");
                    let e = NewEvent::caused_by(
                        &event,
                        WORK_OUTCOME_STEP,
                        &failed(code, message),
                        service,
                    )
                    .map_err(HandlerError::permanent)?;
                    return self.append(&work.session_id, e).await;
                }
            }
        } else {
            (work.task.clone(), Vec::new())
        };
        let messages = [
            ChatMessage::system(self.system.replace("{{route}}", work.route.as_str())),
            ChatMessage::user(task),
        ];
        info!(route = %work.route, loop_index = work.loop_index, "worker run");
        let contract = contracts::worker_output::contract(&sources);
        let call = Call::interactive().shaped(&contract);
        let outcome = match work
            .within_deadline(self.ctx.clock().now(), self.llm.complete(&messages, call))
            .await
        {
            None => {
                warn!(route = %work.route, "the message's time ran out during the run");
                let failed = failed(
                    TIME_LIMIT,
                    "the message's time limit (loop.max_seconds) ran out during the run".into(),
                );
                NewEvent::caused_by(&event, WORK_OUTCOME_STEP, &failed, service)
            }
            Some(Ok(result)) => {
                let done = WorkerCompleted {
                    session_id: work.session_id.clone(),
                    user_event_id: work.user_event_id,
                    route: work.route,
                    result,
                    sources,
                };
                NewEvent::caused_by(&event, WORK_OUTCOME_STEP, &done, service)
            }
            Some(Err(e)) => {
                warn!(route = %work.route, error = %e, "worker model call failed");
                let failed = failed("llm_error", e.to_string());
                NewEvent::caused_by(&event, WORK_OUTCOME_STEP, &failed, service)
            }
        }
        .map_err(HandlerError::permanent)?;
        self.append(&work.session_id, outcome).await
    }
}

impl Worker {
    /// Appends a run's outcome to the session.
    async fn append(&self, session_id: &str, outcome: NewEvent) -> Result<(), HandlerError> {
        self.ctx
            .log
            .append(
                &session_stream(session_id),
                ExpectedVersion::Any,
                &[outcome],
            )
            .await
            .map_err(HandlerError::transient)?;
        Ok(())
    }
}

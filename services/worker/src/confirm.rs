//! `ConfirmationCheckRequested`: whether the user's message answers the questions a paused
//! task asked them (seed 002), as a structured output on the worker's model. The raw answer
//! goes back to the router, which validates it; a failed call is reported, not retried
//! (the message is then routed as a new topic).

use ghost_shared::bus::{EventHandler, HandlerError};
use ghost_shared::contracts;
use ghost_shared::envelope::{session_stream, EventPayload, NewEvent, RecordedEvent};
use ghost_shared::events::{ConfirmationCheckRequested, ConfirmationChecked};
use ghost_shared::llm::{Call, ChatMessage, Fence, LlmClient};
use ghost_shared::service::ServiceContext;
use ghost_shared::store::ExpectedVersion;
use tracing::{info, warn};

/// Handles `ConfirmationCheckRequested`.
pub struct ConfirmationChecker {
    pub(crate) ctx: ServiceContext,
    pub(crate) llm: LlmClient,
    /// `prompts/confirmation.md`.
    pub(crate) system: String,
}

#[async_trait::async_trait]
impl EventHandler for ConfirmationChecker {
    async fn handle(&self, event: RecordedEvent) -> Result<(), HandlerError> {
        let request: ConfirmationCheckRequested =
            event.decode().map_err(HandlerError::permanent)?;
        if self
            .ctx
            .outcome_stored(&event, &[ConfirmationChecked::EVENT_TYPE])
            .await?
        {
            return Ok(());
        }
        let fence = Fence::new();
        let user = format!(
            "{}\n{}\n{}",
            fence.block("QUESTIONS", &request.questions.join("\n")),
            fence.block("WORK_SO_FAR", &request.result),
            fence.block("MESSAGE", &request.text)
        );
        let messages = [
            ChatMessage::system(self.system.clone()),
            ChatMessage::user(user),
        ];
        // The user waits for this: it goes before background work on the model.
        let contract = contracts::confirmation::contract();
        let call = Call::interactive().shaped(&contract);
        let (raw, error) = match self.llm.complete(&messages, call).await {
            Ok(raw) => (Some(raw), None),
            Err(e) => {
                warn!(error = %e, "confirmation check failed; the message is a new topic");
                (None, Some(e.to_string()))
            }
        };
        info!(answered = raw.is_some(), "confirmation checked");
        let checked = ConfirmationChecked {
            session_id: request.session_id.clone(),
            user_event_id: request.user_event_id,
            pending_event_id: request.pending_event_id,
            raw,
            error,
        };
        let e = NewEvent::caused_by(
            &event,
            ConfirmationChecked::EVENT_TYPE,
            &checked,
            self.ctx.service,
        )
        .map_err(HandlerError::permanent)?;
        self.ctx
            .log
            .append(
                &session_stream(&request.session_id),
                ExpectedVersion::Any,
                &[e],
            )
            .await
            .map_err(HandlerError::transient)?;
        Ok(())
    }
}

//! `SummarizeRequested`: the session's short memory. The worker folds the previous summary
//! and the turns since into a new short summary (`SessionSummarized`, memory stream).

use ghost_shared::bus::{EventHandler, HandlerError};
use ghost_shared::envelope::{EventPayload, NewEvent, RecordedEvent};
use ghost_shared::events::{memory_stream, SessionSummarized, SummarizeRequested};
use ghost_shared::llm::{Call, ChatMessage, LlmClient};
use ghost_shared::projections::AssistantTextProjection;
use ghost_shared::service::ServiceContext;
use ghost_shared::store::ExpectedVersion;
use tracing::warn;

/// Handles `SummarizeRequested`.
pub struct Summarizer {
    pub(crate) ctx: ServiceContext,
    pub(crate) llm: LlmClient,
    pub(crate) system: String,
}

#[async_trait::async_trait]
impl EventHandler for Summarizer {
    async fn handle(&self, event: RecordedEvent) -> Result<(), HandlerError> {
        let request: SummarizeRequested = event.decode().map_err(HandlerError::permanent)?;
        if self
            .ctx
            .outcome_stored(&event, &[SessionSummarized::EVENT_TYPE])
            .await?
        {
            return Ok(());
        }
        let stream = memory_stream(&request.session_id);
        let previous = self
            .ctx
            .store()
            .read_stream_tail(&stream, 8)
            .await
            .map_err(HandlerError::transient)?
            .iter()
            .rev()
            .find_map(|e| e.decode::<SessionSummarized>().ok());
        let every = self.ctx.config.ghost.routing.summarize_after_turns.max(1) as i64;
        let turns = AssistantTextProjection::recent(
            self.ctx.store().pool(),
            &request.session_id,
            every * 2 + 2,
        )
        .await
        .map_err(HandlerError::transient)?;
        let mut text = String::new();
        if let Some(p) = &previous {
            text.push_str("[previous summary]\n");
            text.push_str(&p.summary);
            text.push_str("\n\n");
        }
        text.push_str("[turns since]\n");
        for t in &turns {
            text.push_str(&format!("{}: {}\n", t.role, t.text));
        }
        let messages = [
            ChatMessage::system(self.system.clone()),
            ChatMessage::user(text),
        ];
        // Nobody waits for a summary: it yields to replies on the model.
        let summary = match self.llm.complete(&messages, Call::background()).await {
            Ok(s) => s.trim().to_owned(),
            Err(e) => {
                // Memory is best effort: the next threshold asks again.
                warn!(error = %e, "summary call failed");
                return Ok(());
            }
        };
        let done = SessionSummarized {
            session_id: request.session_id.clone(),
            summary,
            user_turns: request.user_turns,
        };
        let e = NewEvent::caused_by(
            &event,
            SessionSummarized::EVENT_TYPE,
            &done,
            self.ctx.service,
        )
        .map_err(HandlerError::permanent)?;
        self.ctx
            .log
            .append(&stream, ExpectedVersion::Any, &[e])
            .await
            .map_err(HandlerError::transient)?;
        Ok(())
    }
}

//! `SummarizeRequested`: the session's short memory. The worker folds the previous summary
//! and every turn since it, up to the message the request was made at, into a new short
//! summary (`SessionSummarized`, memory stream), which names that message.

use ghost_shared::autonomy::events::AutonomyMessageRendered;
use ghost_shared::bus::{EventHandler, HandlerError};
use ghost_shared::envelope::{EventPayload, NewEvent, RecordedEvent};
use ghost_shared::events::{
    memory_stream, AssistantReplied, SessionSummarized, SummarizeRequested, UserMessageReceived,
};
use ghost_shared::llm::{transcript, Call, ChatMessage, Fence, LlmClient};
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
            .find_map(|e| e.decode::<SessionSummarized>().ok())
            // Emptied when a person who took part was forgotten: start again from the lines.
            .filter(|s| !s.summary.is_empty());
        let turns = self.turns_since(&request, previous.as_ref()).await?;
        let fence = Fence::new();
        let mut text = String::new();
        if let Some(p) = &previous {
            text.push_str("[previous summary]\n");
            text.push_str(&fence.block("PREVIOUS_SUMMARY", &p.summary));
            text.push_str("\n\n");
        }
        text.push_str("[turns since]\n");
        let lines = transcript(turns.iter().map(|(role, said)| (*role, said.as_str())));
        text.push_str(&fence.block("TURNS", &lines));
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
            through_event_id: Some(request.user_event_id),
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

impl Summarizer {
    /// What the new summary folds in: every line of the session after the message the
    /// previous summary was made at, up to and including the message this one is made at,
    /// so consecutive summaries leave nothing out (the prompts' windows start at the
    /// latter: [`ghost_shared::short_memory`]). Without a previous summary (or one stored
    /// before it named its message) the session's lines up to this message, at most
    /// [`MAX_LINES`].
    async fn turns_since(
        &self,
        request: &SummarizeRequested,
        previous: Option<&SessionSummarized>,
    ) -> Result<Vec<(&'static str, String)>, HandlerError> {
        let store = self.ctx.store();
        let Some(through) = store
            .get(request.user_event_id)
            .await
            .map_err(HandlerError::transient)?
        else {
            return Err(HandlerError::permanent(format!(
                "user message {} not found",
                request.user_event_id
            )));
        };
        let after = match previous.and_then(|p| p.through_event_id) {
            Some(id) => store
                .get(id)
                .await
                .map_err(HandlerError::transient)?
                .filter(|e| e.stream == through.stream)
                .map_or(0, |e| e.version),
            None => 0,
        };
        let events = store
            .read_stream(&through.stream, after)
            .await
            .map_err(HandlerError::transient)?;
        let mut lines: Vec<(&'static str, String)> = events
            .iter()
            .filter(|e| e.version <= through.version)
            .filter(|e| !ghost_shared::memory::forget_person::is_redacted(&e.payload))
            .filter_map(|e| {
                if let Ok(m) = e.decode::<UserMessageReceived>() {
                    Some(("user", m.text))
                } else if let Ok(r) = e.decode::<AssistantReplied>() {
                    Some(("assistant", r.text))
                } else if let Ok(m) = e.decode::<AutonomyMessageRendered>() {
                    Some(("assistant", m.text))
                } else {
                    None
                }
            })
            .collect();
        let skip = lines.len().saturating_sub(MAX_LINES);
        lines.drain(..skip);
        Ok(lines)
    }
}

/// Most lines one summary folds in (a summary fallen far behind is made from the newest).
const MAX_LINES: usize = 400;

//! What the reply knows besides the conversation: the memories recall selects (recorded as
//! `RecallPerformed`, off the reply's path) and the persona's current mood.

use super::*;

impl Renderer {
    /// What the persona recalls for this request (the memory pack for the prompt), recorded
    /// as `RecallPerformed` on the persona's stream. Recall never fails a reply.
    pub(super) async fn recall(
        &self,
        request: &RenderRequested,
        cause: &RecordedEvent,
        mood: impl std::future::Future<Output = Option<MoodState>>,
    ) -> Option<String> {
        let recaller = self.recaller.as_ref()?;
        let now = cause.recorded_at.timestamp_micros() as f64 / 1e6;
        // The reply, when there is one, is the turn's one outcome.
        let reply_id = ghost_shared::ids::turn_outcome_id(request.user_event_id);
        let recalled = recaller
            .recall(&self.character, request, reply_id, now, mood)
            .await;
        match NewEvent::caused_by(cause, RECALL_STEP, &recalled.event, self.ctx.service) {
            Ok(event) => {
                let log = self.ctx.log.clone();
                let stream = persona_stream(&self.character.name);
                // Off the reply's path: the record must not hold up the first token.
                tokio::spawn(async move {
                    if let Err(e) = log.append(&stream, ExpectedVersion::Any, &[event]).await {
                        warn!(error = %e, "RecallPerformed not recorded");
                    }
                });
            }
            Err(e) => warn!(error = %e, "RecallPerformed does not encode"),
        }
        recalled.pack
    }

    /// The mood service's answer, or None when it does not answer in time (a reply is never
    /// held hostage by the mood: it answers in the calm default).
    pub(super) async fn current_mood(&self) -> Option<MoodState> {
        let timeout =
            std::time::Duration::from_millis(self.ctx.config.ghost.mood.request_timeout_ms);
        let query = MoodQuery {
            persona: self.character.name.clone(),
            now: None,
        };
        match mood_api::request(self.ctx.bus(), mood_api::GET_SUBJECT, &query, timeout).await {
            Ok(answer) => Some(answer.state),
            Err(e) => {
                warn!(error = %e, "no mood; answering in the calm default");
                None
            }
        }
    }
}

//! Judging a finished work result before any reply (`JudgeRequested`): the persona's
//! proposal, which the router validates and decides on; nothing reaches the user.

use super::*;

impl Renderer {
    /// `JudgeRequested`: one `PersonaProposed`, unless the request was judged already or the
    /// turn is closed (the watchdog's notice): then nothing.
    pub(super) async fn judge(
        &self,
        event: &RecordedEvent,
        request: JudgeRequested,
    ) -> Result<(), HandlerError> {
        let done = [
            ghost_shared::ids::turn_outcome_id(request.user_event_id),
            ghost_shared::ids::derive_event_id(event.event_id, STEP_PROPOSED),
        ];
        if let Some(done) = self
            .ctx
            .store()
            .get_first_of(&done)
            .await
            .map_err(HandlerError::transient)?
        {
            info!(event_id = %done.event_id, "judged already, or the turn is closed");
            return Ok(());
        }
        let proposed = PersonaProposed {
            render_event_id: event.event_id,
            ..self.propose(&request).await
        };
        info!(
            call_failed = proposed.call_failed.is_some(),
            "persona judged the work result"
        );
        let e = NewEvent::caused_by(event, STEP_PROPOSED, &proposed, self.ctx.service)
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

    /// The model's raw proposal on the work result (the router validates it), or why the
    /// call failed.
    async fn propose(&self, request: &JudgeRequested) -> PersonaProposed {
        let result = request.work_result.to_string();
        let fence = Fence::new();
        let messages = [
            ChatMessage::system(self.proposal_prompt.clone()),
            ChatMessage::user(format!(
                "{}\n{}",
                fence.block("USER_MESSAGE", &request.user_text),
                fence.block("TASK_RESULT", &result)
            )),
        ];
        let contract = contracts::proposal::contract();
        let call = Call::interactive().shaped(&contract);
        let (raw, call_failed) = match self.llm.complete(&messages, call).await {
            Ok(raw) => {
                let cut: String = raw.chars().take(MAX_PROPOSAL_CHARS).collect();
                (mask_secrets(&cut).into_owned(), None)
            }
            Err(e) => (String::new(), Some(format!("{}: {e}", e.code()))),
        };
        PersonaProposed {
            session_id: request.session_id.clone(),
            user_event_id: request.user_event_id,
            render_event_id: Uuid::nil(),
            raw,
            call_failed,
        }
    }
}

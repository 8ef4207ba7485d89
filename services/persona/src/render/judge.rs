//! Judging a work result before replying: the persona's proposal (the router validates it
//! and decides); nothing reaches the user.

use super::*;

impl Renderer {
    /// Judges the work result before replying: the model's raw proposal (the router
    /// validates it), or why the call failed. Nothing reaches the user.
    pub(super) async fn propose(&self, request: &RenderRequested) -> PersonaProposed {
        let result = request
            .work_result
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default();
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

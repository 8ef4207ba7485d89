//! What the reply is written from: the stored outcome if there is one, else the
//! conversation since the short-memory summary and the last pause, the user's message (with its image), the
//! mood capsule and what recall brought, as the model's messages.

use super::*;
use ghost_shared::short_memory::{max_lines, sitting_start};

/// A time stamp as seconds.
fn seconds(t: chrono::DateTime<chrono::Utc>) -> f64 {
    t.timestamp_micros() as f64 / 1e6
}

impl Renderer {
    /// The request's outcome if one is stored (one of `outcome_ids`), and else the
    /// conversation before this turn, oldest first, ending with the user's message.
    /// The history read also tells whether an outcome is stored (one statement); only when
    /// one is, or the read cannot tell, is it fetched. The recall (which may call the model
    /// and records what it did) starts only once no outcome is found; the history and the
    /// mood are plain reads and start at once.
    pub(super) async fn messages_unless_done(
        &self,
        request: &RenderRequested,
        cause: &RecordedEvent,
        outcome_ids: &[Uuid],
    ) -> Result<Prepared, HandlerError> {
        let history_turns = self.ctx.config.ghost.persona.history_turns;
        // Every line since the short-memory summary, at least `history_turns`, at most
        // [`max_lines`].
        let summarize_after = self.ctx.config.ghost.routing.summarize_after_turns;
        let max_lines = max_lines(summarize_after, history_turns);
        let read_lines = match request.history_user_messages {
            Some(_) => max_lines,
            None => history_turns,
        };
        // The history, the mood and the recall do not depend on each other: asked at once.
        let store = self.ctx.store();
        let (not_done, proceed) = tokio::sync::oneshot::channel();
        // Only what the history is made of: a turn's routing events in between would be
        // payloads read and decoded for nothing (three of every four rows of the tail).
        let checked_tail = async {
            let read = store
                .read_stream_tail_of_types_checking(
                    &cause.stream,
                    CONVERSATION_TYPES,
                    request.user_event_id,
                    read_lines as i64 + HISTORY_SLACK,
                    outcome_ids,
                )
                .await;
            let done = match &read {
                Ok((_, Some(false))) => Ok(None),
                Ok(_) => store.get_first_of(outcome_ids).await,
                Err(_) => Ok(None),
            };
            let _ = not_done.send(matches!((&read, &done), (Ok(_), Ok(None))));
            (read, done)
        };
        // One mood request: the reply's capsule and recall's selection read the same answer.
        let mood = self
            .current_mood()
            .instrument(info_span!("mood_request"))
            .boxed()
            .shared();
        let recall = async {
            match proceed.await {
                Ok(true) => self.recall(request, cause, mood.clone()).await,
                _ => None,
            }
        };
        let ((tail, done), mood, recalled) = tokio::join!(checked_tail, mood.clone(), recall);
        let mood = mood.unwrap_or_default();
        if let Some(done) = done.map_err(HandlerError::transient)? {
            return Ok(Prepared::Done(done));
        }
        let (tail, _) = tail.map_err(HandlerError::transient)?;
        let mut history: Vec<ChatMessage> = Vec::new();
        let mut is_user: Vec<bool> = Vec::new();
        let mut at: Vec<f64> = Vec::new();
        for e in tail
            .iter()
            .filter(|e| e.version < cause.version && e.event_id != request.user_event_id)
        {
            if let Ok(m) = e.decode::<UserMessageReceived>() {
                history.push(ChatMessage::user(m.text));
                is_user.push(true);
            } else if let Ok(r) = e.decode::<AssistantReplied>() {
                history.push(ChatMessage::assistant(r.text));
                is_user.push(false);
            } else if let Ok(m) = e.decode::<AutonomyMessageRendered>() {
                // What the persona said on its own is part of the conversation.
                history.push(ChatMessage::assistant(m.text));
                is_user.push(false);
            } else {
                continue;
            }
            at.push(seconds(e.recorded_at));
        }
        let message_at = tail
            .iter()
            .find(|e| e.event_id == request.user_event_id)
            .map(|e| seconds(e.recorded_at))
            .or(at.last().copied())
            .unwrap_or_default();
        let skip = window_start(
            &is_user,
            request.history_user_messages,
            history_turns,
            max_lines,
        )
        .max(sitting_start(
            &at,
            message_at,
            self.ctx.config.ghost.persona.history_pause_secs,
        ));
        // The prompt's order is what a model server's cache needs: what never changes first
        // (the persona, its rules), then the conversation (its window starts on the same line
        // between summaries), and what changes every turn last: the mood, what was
        // recalled, the summary, the message. Recalled lines and the summary are data the
        // user and others once wrote: fenced in the user's turn, never system instructions.
        let mut messages = Vec::with_capacity(history.len() - skip + 3);
        messages.push(ChatMessage::system(format!(
            "{}\n\n{}",
            self.system_prompt, self.trailer_prompt
        )));
        messages.extend(history.into_iter().skip(skip));
        messages.push(ChatMessage::system(mood_capsule(&mood)));
        let fence = Fence::new();
        let mut data = String::new();
        if let Some(summary) = routing_notes::summary(request) {
            data.push_str(&fence.block("SUMMARY", summary));
            data.push_str("\n\n");
        }
        if let Some(recalled) = &recalled {
            data.push_str(&fence.block("MEMORY", recalled));
            data.push_str("\n\n");
        }
        let mut message = request.user_text.clone();
        if let Some(result) = &request.work_result {
            message.push_str("\n\n[task result to convey]\n");
            message.push_str(&fence.block("TASK_RESULT", &result.to_string()));
            message.push_str(routing_notes::status_note(request).unwrap_or_default());
        }
        message.push_str(routing_notes::notice_note(request).unwrap_or_default());
        let image = self.image_of(request, &tail).await?;
        let user = |text: String| {
            let user = ChatMessage::user(text);
            match &image {
                Some(image) => user.with_image(image.clone()),
                None => user,
            }
        };
        // The same prompt without the summary and the memories, for a model that began its
        // reply by copying them (see `Prepared::Reply::without_data`).
        let without_data = (!data.is_empty()).then(|| {
            let mut bare = messages.clone();
            bare.push(user(message.clone()));
            bare
        });
        if !data.is_empty() {
            message = format!("{data}[the message you answer]\n{message}");
        }
        messages.push(user(message));
        let user_event = tail
            .iter()
            .find(|e| e.event_id == request.user_event_id)
            .cloned();
        Ok(Prepared::Reply {
            messages,
            without_data,
            user_event,
        })
    }

    /// The image the user sent with this message, if any (LINE images), read from the
    /// media store at request time (whichever machine the gateway that stored it runs on).
    /// The user's message is usually in `tail` (read for the history); only an older one is
    /// read again.
    pub(super) async fn image_of(
        &self,
        request: &RenderRequested,
        tail: &[RecordedEvent],
    ) -> Result<Option<ImagePart>, HandlerError> {
        let user = match tail.iter().find(|e| e.event_id == request.user_event_id) {
            Some(e) => Some(e.clone()),
            None => self
                .ctx
                .store()
                .get(request.user_event_id)
                .await
                .map_err(HandlerError::transient)?,
        };
        let Some(image) = user
            .and_then(|e| e.decode::<UserMessageReceived>().ok())
            .and_then(|m| m.image)
        else {
            return Ok(None);
        };
        let Some(media_id) = image.media_id else {
            warn!(message_id = %image.message_id, "image recorded without a media id (before media moved to the database); answering without it");
            return Ok(None);
        };
        let media = MediaStore::new(self.ctx.store().pool().clone());
        Ok(Some(ImagePart::from_source(Arc::new(
            media.image(media_id),
        ))))
    }
}

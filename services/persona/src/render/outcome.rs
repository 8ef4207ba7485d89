//! The turn's outcome: stored with the turn listed in the conversation before anyone hears
//! of it (read-your-writes), the token-stream message that announces it, the turn's
//! metrics.

use super::*;

impl Renderer {
    /// Read-your-writes: the user's message and the outcome are in the conversation before
    /// anyone hears of the outcome, even if this process stops before its projection runner
    /// gets to them.
    pub(super) async fn list_turn(
        &self,
        turn: Uuid,
        user: Option<&RecordedEvent>,
        outcome: &RecordedEvent,
    ) -> Result<(), HandlerError> {
        let store = self.ctx.store();
        // The history read usually had the user's message; read it only when it did not.
        let read;
        let user = match user {
            Some(user) => Some(user),
            None => {
                read = store
                    .get_any(&[turn])
                    .await
                    .map_err(HandlerError::transient)?;
                read.as_ref()
            }
        };
        let rows: Vec<&RecordedEvent> = user.into_iter().chain(std::iter::once(outcome)).collect();
        AssistantTextProjection::store_now(store.pool(), &rows)
            .await
            .map_err(|e| HandlerError::transient(e.to_string()))
    }

    /// Appends the turn's outcome with the turn listed in the conversation, then runs
    /// `announce` on what is stored, before the events are published: the client hears of
    /// its reply without waiting for the bus. With the user's message at hand (the history
    /// read had it), the listing is written by the append's own statement; else, or when
    /// another outcome was stored first, the stored one is listed before it is announced.
    pub(super) async fn append_listed<F, Fut>(
        &self,
        turn: Uuid,
        stream: &str,
        user: Option<&RecordedEvent>,
        outcome: NewEvent,
        announce: F,
    ) -> Result<AppendOutcome, HandlerError>
    where
        F: FnOnce(AppendOutcome) -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        let log = &self.ctx.log;
        let Some(user) = user else {
            let (stored, listed) = log
                .append_beside_publish(
                    stream,
                    ExpectedVersion::Any,
                    &[outcome],
                    |stored| async move {
                        if let Some(outcome) = stored.events.first() {
                            self.list_turn(turn, None, outcome).await?;
                        }
                        announce(stored).await;
                        Ok::<_, HandlerError>(())
                    },
                )
                .await
                .map_err(HandlerError::transient)?;
            listed?;
            return Ok(stored);
        };
        let listing = AssistantTextProjection::listing(&[user], std::slice::from_ref(&outcome))
            .map_err(HandlerError::permanent)?;
        let (stored, listed) = log
            .append_with_first(
                stream,
                ExpectedVersion::Any,
                &[outcome],
                listing.also(),
                |stored| async move {
                    if stored.duplicate {
                        if let Some(first) = stored.events.first() {
                            self.list_turn(turn, Some(user), first).await?;
                        }
                    }
                    announce(stored).await;
                    Ok::<_, HandlerError>(())
                },
            )
            .await
            .map_err(HandlerError::transient)?;
        listed?;
        Ok(stored)
    }

    /// The turn's metrics: ended with a reply or `failure_code`, timed from the user's
    /// message as stored (`user_at` when the history read already had it).
    pub(super) async fn record_turn_end(
        &self,
        request: &RenderRequested,
        failure_code: Option<&str>,
        user_at: Option<chrono::DateTime<chrono::Utc>>,
    ) {
        let user_at = match user_at {
            Some(at) => Some(at),
            None => match self.ctx.store().get_any(&[request.user_event_id]).await {
                Ok(Some(user)) => Some(user.recorded_at),
                _ => None,
            },
        };
        let took = user_at.and_then(|at| (self.ctx.clock().now() - at).to_std().ok());
        ghost_shared::metrics::turn_ended(request.channel.as_str(), failure_code, took);
    }
}

/// The stream message announcing a stored outcome.
pub(super) fn outcome_message(event: &RecordedEvent) -> TurnStreamMessage {
    TurnStreamMessage::of_outcome(event).unwrap_or_else(|| TurnStreamMessage::Error {
        code: "internal".into(),
        message: format!("{} does not end a turn", event.event_type),
    })
}

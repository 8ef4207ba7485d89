//! What a handler needs to know about the user message it serves, read from the event store
//! (the source of truth, so decisions never depend on a projection's lag).

use ghost_shared::bus::HandlerError;
use ghost_shared::envelope::{EventPayload, RecordedEvent};
use ghost_shared::events::{AssistantReplied, RouteDecided, UserMessageReceived};
use uuid::Uuid;

use super::Router;
use crate::projections::RoutingSessions;
use crate::routing::{parse_commands, Command, SessionRouting};

/// One user message and the session state before it.
pub(crate) struct Turn {
    /// The `UserMessageReceived` event.
    pub event: RecordedEvent,
    /// Its payload.
    pub message: UserMessageReceived,
    /// The session's routing state before this message.
    pub session: SessionRouting,
    /// The session's previous primary route decision, if any.
    pub previous: Option<RouteDecided>,
    /// The session's short-memory summary when the turn was read, if the worker has
    /// written one.
    pub summary: Option<String>,
}

impl Turn {
    /// The user message's id (the correlation id of everything in its turn).
    pub fn id(&self) -> Uuid {
        self.event.event_id
    }

    /// The channel's name.
    pub fn channel(&self) -> &'static str {
        self.message.channel.as_str()
    }
}

impl Router {
    /// The turn of a `UserMessageReceived` event.
    pub(crate) async fn turn_of(&self, event: &RecordedEvent) -> Result<Turn, HandlerError> {
        let message: UserMessageReceived = event.decode().map_err(HandlerError::permanent)?;
        // Independent reads, side by side: every one is a round trip on a chat turn's path.
        let ((session, previous), summary) = tokio::try_join!(
            self.session_before(&event.stream, event.version),
            self.stored_summary(&message.session_id)
        )?;
        Ok(Turn {
            event: event.clone(),
            message,
            session,
            previous,
            summary,
        })
    }

    /// The turn of the user message `user_event_id` (for events later in the turn).
    pub(crate) async fn load_turn(&self, user_event_id: Uuid) -> Result<Turn, HandlerError> {
        let event = self
            .ctx
            .store()
            .get(user_event_id)
            .await
            .map_err(HandlerError::transient)?
            .ok_or_else(|| {
                HandlerError::permanent(format!("user message {user_event_id} not found"))
            })?;
        self.turn_of(&event).await
    }

    /// The session state before the message at `version`: `local_only` from the user
    /// messages before it in the stream (see [`Self::local_only_before`]), the last primary
    /// route from the latest primary `RouteDecided` (only a declaration depends on it). The
    /// two reads run side by side.
    async fn session_before(
        &self,
        stream: &str,
        version: i32,
    ) -> Result<(SessionRouting, Option<RouteDecided>), HandlerError> {
        let (local_only, previous) = tokio::try_join!(
            self.local_only_before(stream, version),
            self.last_primary_decision(stream, version)
        )?;
        let session = SessionRouting {
            local_only,
            last_primary_route: previous.as_ref().map(|d| d.route),
        };
        Ok((session, previous))
    }

    /// The previous primary route decision of the session before this message, if any (read
    /// once with the turn).
    pub(crate) async fn previous_decision(
        &self,
        turn: &Turn,
    ) -> Result<Option<RouteDecided>, HandlerError> {
        Ok(turn.previous.clone())
    }

    /// The latest primary `RouteDecided` of `stream` before `version`.
    async fn last_primary_decision(
        &self,
        stream: &str,
        version: i32,
    ) -> Result<Option<RouteDecided>, HandlerError> {
        let row = sqlx::query_scalar::<_, serde_json::Value>(&format!(
            "SELECT payload FROM events WHERE stream = $1 AND event_type = '{}' \
             AND version < $2 AND COALESCE((payload->>'primary')::boolean, true) \
             ORDER BY version DESC LIMIT 1",
            RouteDecided::EVENT_TYPE
        ))
        .bind(stream)
        .bind(version)
        .fetch_optional(self.ctx.store().pool())
        .await
        .map_err(HandlerError::transient)?;
        row.map(serde_json::from_value::<RouteDecided>)
            .transpose()
            .map_err(HandlerError::permanent)
    }

    /// The `local_only` flag in force before the message at `version`: the last `/local` or
    /// `/cloud` among the user messages before it, in stream (= accepted) order.
    ///
    /// Read from the messages themselves, not from earlier `RouteDecided` events: the
    /// decision of the message before may not be stored yet (another router process, or
    /// another task of this one, is still routing it), and a paste right after `/local`
    /// must never reach the cloud. Whatever order the messages are handled in, each sees the
    /// flag its predecessors set.
    async fn local_only_before(&self, stream: &str, version: i32) -> Result<bool, HandlerError> {
        // The SQL filter only narrows; `parse_commands` decides what is a command.
        let texts: Vec<String> = sqlx::query_scalar(&format!(
            "SELECT payload->>'text' FROM events WHERE stream = $1 AND event_type = '{}' \
             AND version < $2 AND (payload->>'text' ILIKE '%/local%' \
             OR payload->>'text' ILIKE '%/cloud%') ORDER BY version DESC",
            UserMessageReceived::EVENT_TYPE
        ))
        .bind(stream)
        .bind(version)
        .fetch_all(self.ctx.store().pool())
        .await
        .map_err(HandlerError::transient)?;
        Ok(texts
            .iter()
            .find_map(|text| match parse_commands(text).flag {
                Some(Command::Local) => Some(true),
                Some(Command::Cloud) => Some(false),
                _ => None,
            })
            .unwrap_or(false))
    }

    /// Every event of this turn so far (same correlation, after the user message).
    pub(crate) async fn turn_events(
        &self,
        turn: &Turn,
    ) -> Result<Vec<RecordedEvent>, HandlerError> {
        let events = self
            .ctx
            .store()
            .read_stream(&turn.event.stream, turn.event.version)
            .await
            .map_err(HandlerError::transient)?;
        Ok(events
            .into_iter()
            .filter(|e| e.metadata.correlation_id == turn.id())
            .collect())
    }

    /// User messages in the stream of the user message `message`, up to and including it.
    pub(crate) async fn user_turns(&self, message: &RecordedEvent) -> Result<u32, HandlerError> {
        let n: i64 = sqlx::query_scalar(&format!(
            "SELECT count(*) FROM events WHERE stream = $1 AND event_type = '{}' AND version <= $2",
            UserMessageReceived::EVENT_TYPE
        ))
        .bind(&message.stream)
        .bind(message.version)
        .fetch_one(self.ctx.store().pool())
        .await
        .map_err(HandlerError::transient)?;
        Ok(u32::try_from(n).unwrap_or(u32::MAX))
    }

    /// The session's short-memory summary, if the worker has written one (read with the
    /// turn).
    pub(crate) async fn memory_summary(&self, turn: &Turn) -> Result<Option<String>, HandlerError> {
        Ok(turn.summary.clone())
    }

    /// The summary stored for `session_id` now.
    async fn stored_summary(&self, session_id: &str) -> Result<Option<String>, HandlerError> {
        RoutingSessions::summary(self.ctx.store().pool(), session_id)
            .await
            .map_err(HandlerError::transient)
    }

    /// The context worker prompts get: the summary plus the last `routing.recent_turns`
    /// turns before this message, oldest first — never the whole history.
    pub(crate) async fn conversation_context(&self, turn: &Turn) -> Result<String, HandlerError> {
        let recent = self.ctx.config.ghost.routing.recent_turns;
        let mut out = String::new();
        if let Some(summary) = self.memory_summary(turn).await? {
            out.push_str("[summary of the conversation so far]\n");
            out.push_str(summary.trim());
            out.push('\n');
        }
        if recent == 0 {
            return Ok(out);
        }
        let tail = self
            .ctx
            .store()
            .read_stream_tail(&turn.event.stream, (recent as i64) * 12 + 16)
            .await
            .map_err(HandlerError::transient)?;
        let mut lines: Vec<String> = tail
            .iter()
            .filter(|e| e.version < turn.event.version)
            .filter_map(|e| {
                if let Ok(m) = e.decode::<UserMessageReceived>() {
                    Some(format!("user: {}", m.text))
                } else if let Ok(r) = e.decode::<AssistantReplied>() {
                    Some(format!("assistant: {}", r.text))
                } else {
                    None
                }
            })
            .collect();
        let skip = lines.len().saturating_sub(recent);
        lines.drain(..skip);
        if !lines.is_empty() {
            out.push_str("[recent turns]\n");
            out.push_str(&lines.join("\n"));
            out.push('\n');
        }
        Ok(out)
    }
}

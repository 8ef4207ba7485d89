//! What a handler needs to know about the user message it serves, read from the event store
//! (the source of truth, so decisions never depend on a projection's lag).

use ghost_shared::autonomy::events::AutonomyMessageRendered;
use ghost_shared::bus::HandlerError;
use ghost_shared::envelope::{EventPayload, RecordedEvent};
use ghost_shared::events::{
    AssistantReplied, ConfirmationCheckRequested, ConfirmationPending, ConfirmationResolved,
    RouteDecided, UserMessageReceived, WorkRequested,
};
use ghost_shared::routing::Route;
use ghost_shared::short_memory::{
    max_lines, sitting_start, user_messages_since_summary, window_start,
};
use uuid::Uuid;

use super::Router;
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
    /// The user message count the summary was made at (0 without one).
    pub summary_turns: u32,
    /// User messages in the stream up to and including this one.
    pub user_turns: u32,
    /// Work of the session paused to ask the user, not yet claimed by a later message: its
    /// event id and payload.
    pub pending: Option<(Uuid, ConfirmationPending)>,
    /// Whether this message already asked whether it answers paused work (the check's
    /// outcome carries the message on from there).
    pub checking: bool,
}

/// The columns of [`state_before_sql`], in order (read into the router's session state).
pub type StateRow = (
    Option<Vec<String>>,
    Option<serde_json::Value>,
    Option<String>,
    i32,
    i64,
    Option<String>,
    Option<serde_json::Value>,
    bool,
);

/// What [`Router::state_before`] reads of a session, as stored.
struct SessionState {
    /// Texts of earlier user messages that may carry a mode command, newest first.
    command_texts: Vec<String>,
    /// The payload of the latest primary `RouteDecided` before the message.
    previous: Option<serde_json::Value>,
    /// The session's short-memory summary.
    summary: Option<String>,
    /// The user message count the summary was made at.
    summary_turns: i32,
    /// User messages up to and including this one.
    user_turns: i64,
    /// The route of the previous message's automatic reroute, when that reroute is newer
    /// than the latest primary decision: the route that answered it.
    rerouted_to: Option<String>,
    /// `{"event_id", "payload"}` of the session's open `ConfirmationPending`.
    pending: Option<serde_json::Value>,
    /// Whether this message already asked whether it answers one.
    checking: bool,
}

/// The `local_only` flag the newest `/local` or `/cloud` among `texts` (newest first) set;
/// off when none did.
fn local_only_from(texts: &[String]) -> bool {
    texts
        .iter()
        .find_map(|text| match parse_commands(text).flag {
            Some(Command::Local) => Some(true),
            Some(Command::Cloud) => Some(false),
            _ => None,
        })
        .unwrap_or(false)
}

impl Turn {
    /// The user message's id (the correlation id of everything in its turn).
    pub fn id(&self) -> Uuid {
        self.event.event_id
    }

    /// How many user messages before this one a prompt's history reaches back to
    /// ([`ghost_shared::short_memory`]).
    pub fn history_user_messages(&self) -> u32 {
        let summary = self.summary.as_ref().map(|_| self.summary_turns);
        user_messages_since_summary(self.user_turns, summary)
    }

    /// The channel's name.
    pub fn channel(&self) -> &'static str {
        self.message.channel.as_str()
    }
}

/// How many versions back from a message the router first looks for earlier decisions.
/// A bound, not a hint: a plan made while the store was new (kept for the connection's
/// life) fetched every event of the session by bitmap and sorted them to find the last
/// decision, 6 ms a turn at 3,000 turns. A chat turn stores four events; past the window
/// (a worker's long loop, a session's first decision) the previous decision is looked for
/// in the rest of the session, and the count is counted whole.
const DECISION_WINDOW: i32 = 64;

/// How many versions back a paused task's question still waits for its answer: the next
/// few messages of the conversation, not one a day later after a long exchange.
const PENDING_WINDOW: i32 = 256;

/// The statement of `Router::state_before` (`$1` the stream, `$2` the message's version,
/// `$3` the session id): public so a test can check its plan.
pub fn state_before_sql() -> String {
    let user = UserMessageReceived::EVENT_TYPE;
    format!(
        "SELECT \
           (SELECT array_agg(t ORDER BY v DESC) FROM \
              (SELECT payload->>'text' AS t, version AS v FROM events \
               WHERE stream = $1 AND event_type = '{user}' AND version < $2 \
               AND (payload->>'text' ILIKE '%/local%' OR payload->>'text' ILIKE '%/cloud%')) c), \
           COALESCE( \
             (SELECT payload FROM events WHERE stream = $1 AND event_type = '{decided}' \
              AND version < $2 AND version >= $2 - {window} \
              AND COALESCE((payload->>'primary')::boolean, true) ORDER BY version DESC LIMIT 1), \
             (SELECT payload FROM events WHERE stream = $1 AND event_type = '{decided}' \
              AND version < $2 - {window} \
              AND COALESCE((payload->>'primary')::boolean, true) ORDER BY version DESC LIMIT 1)), \
           (SELECT summary FROM routing_sessions WHERE session_id = $3), \
           COALESCE((SELECT summary_turns FROM routing_sessions WHERE session_id = $3), 0), \
           COALESCE( \
             (SELECT (d.payload->>'user_turns')::bigint + \
                     (SELECT count(*) FROM events u WHERE u.stream = $1 \
                      AND u.event_type = '{user}' AND u.version <= $2 AND u.version > \
                        (SELECT m.version FROM events m \
                         WHERE m.event_id = (d.payload->>'user_event_id')::uuid)) \
              FROM events d WHERE d.stream = $1 AND d.event_type = '{decided}' \
              AND d.version < $2 AND d.version >= $2 - {window} AND d.payload ? 'user_turns' \
              ORDER BY d.version DESC LIMIT 1), \
             (SELECT count(*) FROM events WHERE stream = $1 AND event_type = '{user}' \
              AND version <= $2)), \
           (SELECT CASE WHEN event_type = '{work}' THEN payload->>'route' END FROM events \
            WHERE stream = $1 AND version < $2 AND version >= $2 - {window} \
            AND ((event_type = '{decided}' AND COALESCE((payload->>'primary')::boolean, true)) \
              OR (event_type = '{work}' AND COALESCE((payload->>'reroute')::boolean, false))) \
            ORDER BY version DESC LIMIT 1), \
           (SELECT jsonb_build_object('event_id', p.event_id, 'payload', p.payload) \
            FROM events p WHERE p.stream = $1 AND p.event_type = '{pending}' \
            AND p.version < $2 AND p.version >= $2 - {pending_window} \
            AND NOT EXISTS (SELECT 1 FROM events c WHERE c.stream = $1 \
              AND c.event_type IN ('{checking}', '{resolved}') AND c.version > p.version \
              AND c.payload->>'pending_event_id' = p.event_id::text) \
            ORDER BY p.version DESC LIMIT 1), \
           EXISTS (SELECT 1 FROM events c WHERE c.stream = $1 AND c.event_type = '{checking}' \
            AND c.version > $2 AND c.payload->>'user_event_id' = \
              (SELECT m.event_id::text FROM events m WHERE m.stream = $1 AND m.version = $2))",
        decided = RouteDecided::EVENT_TYPE,
        work = WorkRequested::EVENT_TYPE,
        pending = ConfirmationPending::EVENT_TYPE,
        checking = ConfirmationCheckRequested::EVENT_TYPE,
        resolved = ConfirmationResolved::EVENT_TYPE,
        pending_window = PENDING_WINDOW,
        window = DECISION_WINDOW,
    )
}

impl Router {
    /// The turn of a `UserMessageReceived` event: the message and, in one statement, the
    /// session's state before it (see [`Self::state_before`]).
    pub(crate) async fn turn_of(&self, event: &RecordedEvent) -> Result<Turn, HandlerError> {
        let message: UserMessageReceived = event.decode().map_err(HandlerError::permanent)?;
        let state = self
            .state_before(&event.stream, event.version, &message.session_id)
            .await?;
        let local_only = local_only_from(&state.command_texts);
        let previous = state
            .previous
            .map(serde_json::from_value::<RouteDecided>)
            .transpose()
            .map_err(HandlerError::permanent)?;
        // The declaration compares against the route that answered the previous message:
        // its reroute's, when it was rerouted (a reroute past the decision window, after a
        // long loop, is not looked for).
        let rerouted_to = state
            .rerouted_to
            .and_then(|r| serde_json::from_value::<Route>(serde_json::Value::String(r)).ok());
        let session = SessionRouting {
            local_only,
            last_primary_route: rerouted_to.or(previous.as_ref().map(|d| d.route)),
        };
        let pending = match state.pending {
            Some(p) => {
                let id = serde_json::from_value::<Uuid>(p["event_id"].clone())
                    .map_err(HandlerError::permanent)?;
                let payload = serde_json::from_value::<ConfirmationPending>(p["payload"].clone())
                    .map_err(HandlerError::permanent)?;
                Some((id, payload))
            }
            None => None,
        };
        Ok(Turn {
            pending,
            checking: state.checking,
            event: event.clone(),
            message,
            session,
            previous,
            summary: state.summary,
            summary_turns: u32::try_from(state.summary_turns).unwrap_or(0),
            user_turns: u32::try_from(state.user_turns).unwrap_or(u32::MAX),
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

    /// The previous primary route decision of the session before this message, if any (read
    /// once with the turn).
    pub(crate) async fn previous_decision(
        &self,
        turn: &Turn,
    ) -> Result<Option<RouteDecided>, HandlerError> {
        Ok(turn.previous.clone())
    }

    /// Everything a turn reads of its session before the message at `version`, in one
    /// statement (each read was a round trip of its own on a chat turn's path):
    ///
    /// - the texts of the user messages before it that may carry `/local` or `/cloud`,
    ///   newest first. `local_only` is read from the messages themselves, not from earlier
    ///   `RouteDecided` events: the decision of the message before may not be stored yet
    ///   (another router process, or another task of this one, is still routing it), and a
    ///   paste right after `/local` must never reach the cloud. Whatever order the messages
    ///   are handled in, each sees the flag its predecessors set. The SQL filter only
    ///   narrows; `parse_commands` decides what is a command;
    /// - the latest primary `RouteDecided` before it (only a declaration depends on it),
    ///   looked for in the last `DECISION_WINDOW` versions first;
    /// - the session's short-memory summary, if the worker has written one;
    /// - how many user messages the stream holds up to and including it (the summary
    ///   cadence): the count the latest stored decision before it recorded, plus the user
    ///   messages since that decision's message (usually none but this one). Counting the
    ///   whole session instead cost a turn more with every message. Without such a
    ///   decision in the last `DECISION_WINDOW` versions (decisions stored before
    ///   the count was recorded, a long worker loop) the session is counted whole.
    ///
    /// The user-message parts use the partial indexes of migration 0071 (their filters
    /// are the indexes' predicates), so none walks the session's whole stream; the
    /// decisions are found walking back from the message, usually a few events away.
    async fn state_before(
        &self,
        stream: &str,
        version: i32,
        session_id: &str,
    ) -> Result<SessionState, HandlerError> {
        let row: StateRow = sqlx::query_as(&state_before_sql())
            .bind(stream)
            .bind(version)
            .bind(session_id)
            .fetch_one(self.ctx.store().pool())
            .await
            .map_err(HandlerError::transient)?;
        Ok(SessionState {
            command_texts: row.0.unwrap_or_default(),
            previous: row.1,
            summary: row.2,
            summary_turns: row.3,
            user_turns: row.4,
            rerouted_to: row.5,
            pending: row.6,
            checking: row.7,
        })
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

    /// The session's short-memory summary, if the worker has written one (read with the
    /// turn).
    pub(crate) async fn memory_summary(&self, turn: &Turn) -> Result<Option<String>, HandlerError> {
        Ok(turn.summary.clone())
    }

    /// When the message's time runs out (`loop.max_seconds` from its arrival, as stored):
    /// every run of it is cut there.
    pub(crate) fn deadline_of(&self, turn: &Turn) -> chrono::DateTime<chrono::Utc> {
        let max = self.config.loop_policy.max_elapsed();
        turn.event.recorded_at + chrono::Duration::from_std(max).unwrap_or(chrono::Duration::MAX)
    }

    /// The context worker prompts get: the summary plus every turn since it (at least the
    /// last `routing.recent_turns` lines), oldest first — never the whole history. With
    /// `for_cloud`, each line is masked before it is written as JSON: masking the JSON
    /// afterwards would miss what its escapes changed (`\npassword=…`).
    pub(crate) async fn conversation_context(
        &self,
        turn: &Turn,
        for_cloud: bool,
    ) -> Result<String, HandlerError> {
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
        // Every line since the summary (it covers the rest), at least `recent`.
        let since = turn.history_user_messages();
        let max_lines = max_lines(self.ctx.config.ghost.routing.summarize_after_turns, recent);
        let tail = self
            .ctx
            .store()
            .read_stream_tail_of_types(
                &turn.event.stream,
                &[
                    UserMessageReceived::EVENT_TYPE,
                    AssistantReplied::EVENT_TYPE,
                    AutonomyMessageRendered::EVENT_TYPE,
                ],
                turn.id(),
                max_lines as i64 + 2,
            )
            .await
            .map_err(HandlerError::transient)?;
        let seconds = |e: &RecordedEvent| e.recorded_at.timestamp_micros() as f64 / 1e6;
        let mut lines: Vec<(bool, String, f64)> = tail
            .iter()
            .filter(|e| e.version < turn.event.version)
            .filter_map(|e| {
                let line = if let Ok(m) = e.decode::<UserMessageReceived>() {
                    (true, m.text)
                } else if let Ok(r) = e.decode::<AssistantReplied>() {
                    (false, r.text)
                } else if let Ok(m) = e.decode::<AutonomyMessageRendered>() {
                    (false, m.text)
                } else {
                    return None;
                };
                Some((line.0, line.1, seconds(e)))
            })
            .collect();
        let is_user: Vec<bool> = lines.iter().map(|l| l.0).collect();
        let at: Vec<f64> = lines.iter().map(|l| l.2).collect();
        let pause = self.ctx.config.ghost.persona.history_pause_secs;
        let skip = window_start(&is_user, Some(since), recent, max_lines).max(sitting_start(
            &at,
            seconds(&turn.event),
            pause,
        ));
        lines.drain(..skip);
        if !lines.is_empty() {
            // Who said each line is a field of its own: no line can speak as another.
            let masked: Vec<(&str, std::borrow::Cow<'_, str>)> = lines
                .iter()
                .map(|(user, text, _)| {
                    let speaker = if *user { "user" } else { "assistant" };
                    match for_cloud {
                        true => (speaker, ghost_shared::masking::mask_secrets(text)),
                        false => (speaker, std::borrow::Cow::Borrowed(text.as_str())),
                    }
                })
                .collect();
            let said = ghost_shared::llm::transcript(
                masked.iter().map(|(who, text)| (*who, text.as_ref())),
            );
            out.push_str("[recent turns, as JSON: speaker and text]\n");
            out.push_str(&said);
            out.push('\n');
        }
        Ok(out)
    }
}

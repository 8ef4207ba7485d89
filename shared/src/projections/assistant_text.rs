//! `assistant_text`: per session, the user's and the persona's turns as they were said.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::{PgExecutor, Postgres, Row, Transaction};
use uuid::Uuid;

use crate::autonomy::events::AutonomyMessageRendered;
use crate::envelope::{decode_payload, DecodeError, EventPayload, NewEvent, RecordedEvent};
use crate::events::{AssistantReplied, UserMessageReceived};
use crate::memory::document::ConversationLineImported;
use crate::projector::{Projection, ProjectionError};
use crate::reminders::events::ReminderDelivered;
use crate::store::AlsoWritten;

/// One row of `assistant_text`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConversationTurn {
    /// The conversation.
    pub session_id: String,
    /// Global position of the source event.
    pub position: i64,
    /// The source event.
    pub event_id: Uuid,
    /// `user` or `assistant`.
    pub role: String,
    /// Who spoke (user id or character id).
    pub speaker: String,
    /// Channel (`http`, `line`, `slack`).
    pub source: String,
    /// What was said.
    pub text: String,
    /// When it was recorded.
    pub recorded_at: DateTime<Utc>,
}

/// The `source` of the persona's autonomy messages.
pub const AUTONOMY_SOURCE: &str = "autonomy_message";

/// The `source` of reminders said in a conversation.
pub const REMINDER_SOURCE: &str = "reminder";

/// The projection feeding `assistant_text`.
#[derive(Debug, Default, Clone, Copy)]
pub struct AssistantTextProjection;

impl AssistantTextProjection {
    /// Projection name (checkpoint key, CLI argument).
    pub const NAME: &'static str = "assistant_text";

    /// The last `limit` turns of `session_id`, oldest first.
    pub async fn recent<'e>(
        executor: impl PgExecutor<'e>,
        session_id: &str,
        limit: i64,
    ) -> Result<Vec<ConversationTurn>, sqlx::Error> {
        let rows = sqlx::query(
            "SELECT * FROM (SELECT session_id, position, event_id, role, speaker, source, text, recorded_at \
             FROM assistant_text WHERE session_id = $1 ORDER BY position DESC LIMIT $2) t ORDER BY position",
        )
        .bind(session_id)
        .bind(limit)
        .fetch_all(executor)
        .await?;
        rows.iter().map(turn_from_row).collect()
    }

    /// Whether the event (a message or a reply) is projected yet (read-your-writes).
    pub async fn contains<'e>(
        executor: impl PgExecutor<'e>,
        event_id: Uuid,
    ) -> Result<bool, sqlx::Error> {
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM assistant_text WHERE event_id = $1)")
            .bind(event_id)
            .fetch_one(executor)
            .await
    }

    /// Stores the events' rows now, in one statement, as the projection will (it then
    /// finds them there): how a reply or an autonomy message is in `assistant_text` before
    /// it is announced, whether or not this process's projection runner gets to it.
    pub async fn store_now(
        pool: &sqlx::PgPool,
        events: &[&RecordedEvent],
    ) -> Result<(), ProjectionError> {
        insert_rows(pool, &rows_of(events.iter().copied())?).await
    }

    /// The rows of `stored` (events in the store) and of `appending` (events about to be
    /// appended), for that append to write in its own statement
    /// ([`crate::event_log::EventLog::append_with`]): listed the moment they commit, with no
    /// round trip or commit of their own. An appended event that turns out to be a
    /// duplicate is not listed from what was sent (its stored copy may say something
    /// else): its writer lists the stored copy ([`Self::store_now`]).
    pub fn listing(
        stored: &[&RecordedEvent],
        appending: &[NewEvent],
    ) -> Result<Listing, ProjectionError> {
        let mut rows = Vec::new();
        for row in rows_of(stored.iter().copied())? {
            rows.push(serde_json::json!(row));
        }
        for event in appending {
            let said =
                said(&event.event_type, &event.payload).map_err(|e| ProjectionError::Decode {
                    event_id: event.event_id,
                    event_type: event.event_type.clone(),
                    reason: e.to_string(),
                })?;
            // Position and time come from the append.
            rows.extend(said.map(|s| {
                serde_json::json!({
                    "session_id": s.session_id,
                    "event_id": event.event_id,
                    "role": s.role,
                    "speaker": s.speaker,
                    "source": s.source,
                    "text": s.text,
                })
            }));
        }
        Ok(Listing {
            rows: serde_json::Value::Array(rows),
        })
    }

    /// The display style (`chat`, `notify`) of each autonomy message among `event_ids`, from
    /// its `AutonomyMessageRendered` event (the row keeps only what was said).
    pub async fn autonomy_displays<'e>(
        executor: impl PgExecutor<'e>,
        event_ids: &[Uuid],
    ) -> Result<std::collections::HashMap<Uuid, String>, sqlx::Error> {
        let rows: Vec<(Uuid, Option<String>)> = sqlx::query_as(
            "SELECT event_id, payload->'delivery'->>'mode' FROM events \
             WHERE event_id = ANY($1) AND event_type = $2",
        )
        .bind(event_ids)
        .bind(AutonomyMessageRendered::EVENT_TYPE)
        .fetch_all(executor)
        .await?;
        Ok(rows
            .into_iter()
            .filter_map(|(id, mode)| Some((id, mode?)))
            .collect())
    }

    /// Every row, in a stable order (for comparisons and exports).
    pub async fn all<'e>(
        executor: impl PgExecutor<'e>,
    ) -> Result<Vec<ConversationTurn>, sqlx::Error> {
        let rows = sqlx::query(
            "SELECT session_id, position, event_id, role, speaker, source, text, recorded_at \
             FROM assistant_text ORDER BY session_id, position",
        )
        .fetch_all(executor)
        .await?;
        rows.iter().map(turn_from_row).collect()
    }
}

/// Whether the utterance row `t` of another conversation is the person `$person`'s to
/// recall: their own words anywhere, and the persona's words in a conversation nobody else
/// spoke in (with them, or, for the default person, the console's autonomy messages). What
/// the persona said in a group may carry another's memory: it stays in that group.
// "Nobody else spoke" is two range probes of the index on the session's speakers
// (migration 0114): `<>` would scan every line of the session for every candidate.
const OWN_UTTERANCE: &str = "((t.role = 'user' AND t.speaker = $person) OR (t.role = 'assistant' \
     AND NOT EXISTS (SELECT 1 FROM assistant_text o WHERE o.session_id = t.session_id \
       AND o.role = 'user' AND o.speaker < $person) \
     AND NOT EXISTS (SELECT 1 FROM assistant_text o WHERE o.session_id = t.session_id \
       AND o.role = 'user' AND o.speaker > $person) \
     AND ($person = 'user' OR EXISTS (SELECT 1 FROM assistant_text o WHERE o.session_id = t.session_id \
       AND o.role = 'user' AND o.speaker = $person))))";

/// [`OWN_UTTERANCE`] with the person as parameter `n` (recall's utterance sources, and
/// `ghost memory export --person`).
pub fn own_utterance(n: usize) -> String {
    OWN_UTTERANCE.replace("$person", &format!("${n}::text"))
}

/// Conversation rows to be written by an append ([`AssistantTextProjection::listing`]).
#[derive(Debug, Clone)]
pub struct Listing {
    rows: serde_json::Value,
}

/// The listing's statement, run inside the append's: a row of a stored event carries its
/// position and time; a row of an appended one takes them from the append, and only when
/// the append stored it.
const LIST_WITH_APPEND: &str = "INSERT INTO assistant_text \
     (session_id, position, event_id, role, speaker, source, text, recorded_at) \
     SELECT r.session_id, COALESCE(r.position, a.position), r.event_id, r.role, r.speaker, \
     r.source, r.text, COALESCE(r.recorded_at, a.recorded_at) \
     FROM jsonb_to_recordset({param}) AS r(session_id text, position bigint, event_id uuid, \
     role text, speaker text, source text, text text, recorded_at timestamptz) \
     LEFT JOIN appended a ON a.event_id = r.event_id AND NOT a.duplicate \
     WHERE r.position IS NOT NULL OR a.position IS NOT NULL \
     ON CONFLICT DO NOTHING";

impl Listing {
    /// The write the append runs in its statement.
    pub fn also(&self) -> AlsoWritten<'_> {
        AlsoWritten {
            sql: LIST_WITH_APPEND,
            param: &self.rows,
        }
    }
}

fn turn_from_row(r: &sqlx::postgres::PgRow) -> Result<ConversationTurn, sqlx::Error> {
    Ok(ConversationTurn {
        session_id: r.try_get("session_id")?,
        position: r.try_get("position")?,
        event_id: r.try_get("event_id")?,
        role: r.try_get("role")?,
        speaker: r.try_get("speaker")?,
        source: r.try_get("source")?,
        text: r.try_get("text")?,
        recorded_at: r.try_get("recorded_at")?,
    })
}

#[async_trait::async_trait]
impl Projection for AssistantTextProjection {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    /// Woken by none: the writers list their own rows as they store them (the gateway
    /// a chat message, the persona its reply or autonomy message with the user's message),
    /// so a wake-up would buy a pass that finds every row there. What no writer lists (a
    /// webhook's message, before its reply lists it) waits for the poll interval.
    fn wakes_on(&self, _event_type: &str) -> bool {
        false
    }

    async fn apply(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        event: &RecordedEvent,
    ) -> Result<(), ProjectionError> {
        match row_of(event)? {
            Some(row) => insert_rows(&mut **tx, &[row]).await,
            None => Ok(()),
        }
    }

    /// A pass's rows in one statement (a pass holds a few turns' events at load).
    async fn apply_all(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        events: &[RecordedEvent],
    ) -> Result<(), ProjectionError> {
        insert_rows(&mut **tx, &rows_of(events)?).await
    }

    async fn reset(&self, tx: &mut Transaction<'_, Postgres>) -> Result<(), ProjectionError> {
        sqlx::query("DELETE FROM assistant_text")
            .execute(&mut **tx)
            .await?;
        Ok(())
    }
}

/// The rows `events` make, in their order (the first that does not decode fails them all).
fn rows_of<'a>(
    events: impl IntoIterator<Item = &'a RecordedEvent>,
) -> Result<Vec<ConversationTurn>, ProjectionError> {
    let mut rows = Vec::new();
    for event in events {
        rows.extend(row_of(event)?);
    }
    Ok(rows)
}

/// Who said what in an event that is part of the conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Said {
    /// The conversation.
    pub session_id: String,
    /// `user` or `assistant`.
    pub role: &'static str,
    /// The person, or the persona speaking.
    pub speaker: String,
    /// Where it was said (the channel, `autonomy`, an import's source).
    pub source: String,
    /// The words.
    pub text: String,
}

/// What an event of `event_type` says in the conversation, if it says something (nothing
/// once its words were forgotten): the lines `assistant_text` holds.
pub fn said(event_type: &str, payload: &serde_json::Value) -> Result<Option<Said>, DecodeError> {
    // A reply whose words were forgotten with a person says nothing any more.
    if crate::memory::forget_person::is_redacted(payload) {
        return Ok(None);
    }
    let said = match event_type {
        UserMessageReceived::EVENT_TYPE => {
            let m: UserMessageReceived = decode_payload(event_type, payload)?;
            Said {
                session_id: m.session_id,
                role: "user",
                speaker: m.speaker,
                source: m.channel.as_str().to_owned(),
                text: m.text,
            }
        }
        AutonomyMessageRendered::EVENT_TYPE => {
            let m: AutonomyMessageRendered = decode_payload(event_type, payload)?;
            Said {
                session_id: m.session_id,
                role: "assistant",
                speaker: m.persona,
                source: AUTONOMY_SOURCE.to_owned(),
                text: m.text,
            }
        }
        AssistantReplied::EVENT_TYPE => {
            let r: AssistantReplied = decode_payload(event_type, payload)?;
            Said {
                session_id: r.session_id,
                role: "assistant",
                speaker: r.speaker,
                source: r.channel.as_str().to_owned(),
                text: r.text,
            }
        }
        // A reminder said in the conversation (on an HTTP conversation, this is where the
        // person reads it).
        ReminderDelivered::EVENT_TYPE => {
            let m: ReminderDelivered = decode_payload(event_type, payload)?;
            Said {
                session_id: m.session_id,
                role: "assistant",
                speaker: m.speaker,
                source: REMINDER_SOURCE.to_owned(),
                text: m.text,
            }
        }
        ConversationLineImported::EVENT_TYPE => {
            let m: ConversationLineImported = decode_payload(event_type, payload)?;
            Said {
                session_id: m.session_id,
                role: m.line.role.as_str(),
                speaker: m.line.speaker,
                source: m.line.source,
                text: m.line.text,
            }
        }
        _ => return Ok(None),
    };
    Ok(Some(said))
}

/// The `assistant_text` row an event makes, if it makes one.
fn row_of(event: &RecordedEvent) -> Result<Option<ConversationTurn>, ProjectionError> {
    let said =
        said(&event.event_type, &event.payload).map_err(|e| ProjectionError::decode(event, e))?;
    Ok(said.map(|s| ConversationTurn {
        session_id: s.session_id,
        position: event.position,
        event_id: event.event_id,
        role: s.role.to_owned(),
        speaker: s.speaker,
        source: s.source,
        text: s.text,
        recorded_at: event.recorded_at,
    }))
}

/// Inserts `rows` in one statement (one round trip, its own transaction when `executor` is
/// a pool), keeping any row already there.
async fn insert_rows<'e>(
    executor: impl PgExecutor<'e>,
    rows: &[ConversationTurn],
) -> Result<(), ProjectionError> {
    if rows.is_empty() {
        return Ok(());
    }
    let column = |f: fn(&ConversationTurn) -> String| rows.iter().map(f).collect::<Vec<_>>();
    // No conflict target: the same row may be written at the same moment by the
    // projection runner and by one or two personas listing their turn, and with
    // `(event_id)` as the only arbiter the primary key `(session_id, position)` could
    // still raise a unique violation between two such writers.
    // The commit does not wait for its WAL flush (the row is visible at once either way):
    // the events hold what the row says, and a row a crash loses is projected again.
    sqlx::query(
        "INSERT INTO assistant_text (session_id, position, event_id, role, speaker, source, text, recorded_at) \
         SELECT u.* FROM UNNEST($1::text[], $2::bigint[], $3::uuid[], $4::text[], $5::text[], $6::text[], $7::text[], $8::timestamptz[]) AS u, \
         (SELECT set_config('synchronous_commit', 'off', true)) AS asynchronous \
         ON CONFLICT DO NOTHING",
    )
    .bind(column(|r| r.session_id.clone()))
    .bind(rows.iter().map(|r| r.position).collect::<Vec<_>>())
    .bind(rows.iter().map(|r| r.event_id).collect::<Vec<_>>())
    .bind(column(|r| r.role.clone()))
    .bind(column(|r| r.speaker.clone()))
    .bind(column(|r| r.source.clone()))
    .bind(column(|r| r.text.clone()))
    .bind(rows.iter().map(|r| r.recorded_at).collect::<Vec<_>>())
    .execute(executor)
    .await?;
    Ok(())
}

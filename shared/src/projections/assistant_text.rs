//! `assistant_text`: per session, the user's and the persona's turns as they were said.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::{PgExecutor, Postgres, Row, Transaction};
use uuid::Uuid;

use crate::autonomy::events::AutonomyMessageRendered;
use crate::envelope::{EventPayload, RecordedEvent};
use crate::events::{AssistantReplied, UserMessageReceived};
use crate::projector::{Projection, ProjectionError};

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

    fn wakes_on(&self, event_type: &str) -> bool {
        [
            UserMessageReceived::EVENT_TYPE,
            AutonomyMessageRendered::EVENT_TYPE,
            AssistantReplied::EVENT_TYPE,
        ]
        .contains(&event_type)
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

/// The `assistant_text` row an event makes, if it makes one.
fn row_of(event: &RecordedEvent) -> Result<Option<ConversationTurn>, ProjectionError> {
    let (session_id, role, speaker, source, text) = match event.event_type.as_str() {
        UserMessageReceived::EVENT_TYPE => {
            let m: UserMessageReceived = event
                .decode()
                .map_err(|e| ProjectionError::decode(event, e))?;
            (m.session_id, "user", m.speaker, m.channel.as_str(), m.text)
        }
        AutonomyMessageRendered::EVENT_TYPE => {
            let m: AutonomyMessageRendered = event
                .decode()
                .map_err(|e| ProjectionError::decode(event, e))?;
            (
                m.session_id,
                "assistant",
                m.persona,
                AUTONOMY_SOURCE,
                m.text,
            )
        }
        AssistantReplied::EVENT_TYPE => {
            let r: AssistantReplied = event
                .decode()
                .map_err(|e| ProjectionError::decode(event, e))?;
            (
                r.session_id,
                "assistant",
                r.speaker,
                r.channel.as_str(),
                r.text,
            )
        }
        _ => return Ok(None),
    };
    Ok(Some(ConversationTurn {
        session_id,
        position: event.position,
        event_id: event.event_id,
        role: role.to_owned(),
        speaker,
        source: source.to_owned(),
        text,
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

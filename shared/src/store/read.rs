//! Reading: one stream in version order, or everything in gap-safe commit order.

use serde::{Deserialize, Serialize};
use sqlx::{postgres::PgRow, types::Json, Row};
use uuid::Uuid;

use super::tail::{read_tail_checking_in, read_tail_in, TailFilter};
use super::{EventStore, StoreError};
use crate::envelope::{EventMetadata, NewEvent, RecordedEvent};

/// A place in the global, gap-safe order: `(tx_id, position)`.
///
/// Positions alone are not safe to resume from: a transaction that took a lower position
/// can commit after a higher one was read. Transaction ids below the oldest running
/// transaction can no longer gain rows, so reading in `(tx_id, position)` order and only up
/// to that horizon never skips a late commit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ReadPosition {
    /// Writing transaction id.
    pub tx_id: i64,
    /// Position within it.
    pub position: i64,
}

impl ReadPosition {
    /// Before the first event.
    pub const START: ReadPosition = ReadPosition {
        tx_id: 0,
        position: 0,
    };

    /// The position just read.
    pub fn of(event: &RecordedEvent) -> Self {
        Self {
            tx_id: event.tx_id,
            position: event.position,
        }
    }
}

pub(crate) const EVENT_COLUMNS: &str = "position, tx_id, event_id, stream, version, event_type, \
     schema_version, payload, metadata, recorded_at";

/// Decodes one `events` row.
pub(crate) fn row_to_event(row: &PgRow) -> Result<RecordedEvent, StoreError> {
    let position: i64 = row.try_get("position")?;
    let corrupt = |e: sqlx::Error| StoreError::Corrupt {
        position,
        reason: e.to_string(),
    };
    // Straight into the struct: through a `serde_json::Value` first was a map built and
    // dropped for every row read.
    let Json(metadata) = row
        .try_get::<Json<EventMetadata>, _>("metadata")
        .map_err(corrupt)?;
    event_from_row(row, position, row.try_get("payload")?, metadata)
}

/// An appended event: a new one from what the caller sent (the append function returns
/// no payload or metadata for them: the database would only send back what it was sent,
/// encoded to text and parsed again), a stored one (a duplicate) from the row.
pub(crate) fn row_to_appended(
    row: &PgRow,
    duplicate: bool,
    sent: &[NewEvent],
) -> Result<RecordedEvent, StoreError> {
    if duplicate {
        return row_to_event(row);
    }
    let position: i64 = row.try_get("position")?;
    let event_id: Uuid = row.try_get("event_id")?;
    let new = sent
        .iter()
        .find(|e| e.event_id == event_id)
        .ok_or_else(|| StoreError::Corrupt {
            position,
            reason: format!("the append returned event {event_id}, which it was not sent"),
        })?;
    event_from_row(row, position, new.payload.clone(), new.metadata.clone())
}

/// The event of an `events` row, with its payload and metadata given.
fn event_from_row(
    row: &PgRow,
    position: i64,
    payload: serde_json::Value,
    metadata: EventMetadata,
) -> Result<RecordedEvent, StoreError> {
    Ok(RecordedEvent {
        position,
        tx_id: row.try_get("tx_id")?,
        event_id: row.try_get("event_id")?,
        stream: row.try_get("stream")?,
        version: row.try_get("version")?,
        event_type: row.try_get("event_type")?,
        schema_version: row.try_get("schema_version")?,
        payload,
        metadata,
        recorded_at: row.try_get("recorded_at")?,
    })
}

/// Rows read newest first, decoded and put oldest first.
pub(crate) fn oldest_first(rows: &[PgRow]) -> Result<Vec<RecordedEvent>, StoreError> {
    let mut events = rows
        .iter()
        .map(row_to_event)
        .collect::<Result<Vec<_>, _>>()?;
    events.reverse();
    Ok(events)
}

impl EventStore {
    /// Every event of `stream` with a version above `after_version`, in version order.
    pub async fn read_stream(
        &self,
        stream: &str,
        after_version: i32,
    ) -> Result<Vec<RecordedEvent>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {EVENT_COLUMNS} FROM events WHERE stream = $1 AND version > $2 ORDER BY version"
        ))
        .bind(stream)
        .bind(after_version)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(row_to_event).collect()
    }

    /// The newest `limit` events of `stream`, oldest first (read back from the head in
    /// windows: see `tail`).
    pub async fn read_stream_tail(
        &self,
        stream: &str,
        limit: i64,
    ) -> Result<Vec<RecordedEvent>, StoreError> {
        let mut conn = self.pool.acquire().await?;
        read_tail_in(&mut conn, stream, TailFilter::All, limit).await
    }

    /// The newest `limit` events of `stream` whose type is one of `types`, or whose id is
    /// `also`, oldest first: a tail without the events its reader would skip (each one
    /// skipped is a payload not sent and not decoded).
    pub async fn read_stream_tail_of_types(
        &self,
        stream: &str,
        types: &[&str],
        also: Uuid,
        limit: i64,
    ) -> Result<Vec<RecordedEvent>, StoreError> {
        let mut conn = self.pool.acquire().await?;
        read_tail_in(&mut conn, stream, TailFilter::Types { types, also }, limit).await
    }

    /// [`Self::read_stream_tail_of_types`], and in the same statement whether any event of
    /// `ids` is stored (`None`: the read returned no row to tell).
    pub async fn read_stream_tail_of_types_checking(
        &self,
        stream: &str,
        types: &[&str],
        also: Uuid,
        limit: i64,
        ids: &[Uuid],
    ) -> Result<(Vec<RecordedEvent>, Option<bool>), StoreError> {
        let mut conn = self.pool.acquire().await?;
        let filter = TailFilter::Types { types, also };
        read_tail_checking_in(&mut conn, stream, filter, limit, Some(ids)).await
    }

    /// The newest `limit` events of type `event_type` in `stream` below version
    /// `before_version`, oldest first (e.g. what earlier runs of a stage saved to memory).
    pub async fn read_stream_tail_of_type(
        &self,
        stream: &str,
        event_type: &str,
        before_version: i32,
        limit: i64,
    ) -> Result<Vec<RecordedEvent>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {EVENT_COLUMNS} FROM events WHERE stream = $1 AND event_type = $2 \
             AND version < $3 ORDER BY version DESC LIMIT $4"
        ))
        .bind(stream)
        .bind(event_type)
        .bind(before_version)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        oldest_first(&rows)
    }

    /// The stream's newest event, if any.
    pub async fn last_event(&self, stream: &str) -> Result<Option<RecordedEvent>, StoreError> {
        Ok(self.read_stream_tail(stream, 1).await?.pop())
    }

    /// One event by id.
    pub async fn get(&self, event_id: Uuid) -> Result<Option<RecordedEvent>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {EVENT_COLUMNS} FROM events WHERE event_id = $1"
        ))
        .bind(event_id)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(row_to_event).transpose()
    }

    /// The first stored event among `ids`, if any (one round trip for "is any of these done?").
    pub async fn get_any(&self, ids: &[Uuid]) -> Result<Option<RecordedEvent>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {EVENT_COLUMNS} FROM events WHERE event_id = ANY($1) ORDER BY position LIMIT 1"
        ))
        .bind(ids)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(row_to_event).transpose()
    }

    /// The stored event among `ids` that comes first in `ids` (a preference order), if any:
    /// one round trip where a handler would otherwise ask for each in turn.
    pub async fn get_first_of(&self, ids: &[Uuid]) -> Result<Option<RecordedEvent>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {EVENT_COLUMNS} FROM events \
             JOIN unnest($1::uuid[]) WITH ORDINALITY AS wanted(id, n) ON event_id = wanted.id \
             ORDER BY wanted.n LIMIT 1"
        ))
        .bind(ids)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(row_to_event).transpose()
    }

    /// Up to `limit` events after `from` in gap-safe commit order (see [`ReadPosition`]).
    ///
    /// Events of transactions still running anywhere in the cluster are held back until
    /// they can no longer be preceded by a late commit.
    pub async fn read_all_after(
        &self,
        from: ReadPosition,
        limit: i64,
    ) -> Result<Vec<RecordedEvent>, StoreError> {
        read_all_after_in(&self.pool, from, limit).await
    }
}

/// [`EventStore::read_all_after`] on a given connection or transaction (a projection reads
/// inside the transaction that holds its lock, so it never needs a second connection).
pub async fn read_all_after_in<'e>(
    executor: impl sqlx::PgExecutor<'e>,
    from: ReadPosition,
    limit: i64,
) -> Result<Vec<RecordedEvent>, StoreError> {
    let rows = sqlx::query(&format!(
        "SELECT {EVENT_COLUMNS} FROM events \
         WHERE (tx_id, position) > ($1, $2) \
           AND tx_id < pg_snapshot_xmin(pg_current_snapshot())::text::bigint \
         ORDER BY tx_id, position LIMIT $3"
    ))
    .bind(from.tx_id)
    .bind(from.position)
    .bind(limit)
    .fetch_all(executor)
    .await?;
    rows.iter().map(row_to_event).collect()
}

/// Whether any event exists after `at` in gap-safe order, committed or not yet visible to
/// [`read_all_after_in`] (a projection's "held back?" check).
///
/// Written as a one-row read in index order on purpose: a plain `EXISTS` over the same
/// condition gets a generic plan that scans the whole table from its start, which at the
/// head of a long-lived store (the usual case: nothing newer) reads every event each pass.
pub async fn any_after_in<'e>(
    executor: impl sqlx::PgExecutor<'e>,
    at: ReadPosition,
) -> Result<bool, StoreError> {
    Ok(sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM (SELECT tx_id FROM events \
         WHERE (tx_id, position) > ($1, $2) ORDER BY tx_id, position LIMIT 1) newer)",
    )
    .bind(at.tx_id)
    .bind(at.position)
    .fetch_one(executor)
    .await?)
}

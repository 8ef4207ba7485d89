//! Parked events: what a projection could not decode or apply, kept with the error in
//! `projection_parked` (migration 0020) so the projection moves on instead of stalling.
//! [`crate::projector::ProjectionRunner::retry_parked`] applies them again.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::{PgExecutor, Postgres, Row, Transaction};
use uuid::Uuid;

use crate::envelope::RecordedEvent;
use crate::store::read::{row_to_event, EVENT_COLUMNS};
use crate::store::StoreError;

/// One parked event.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParkedEvent {
    /// The projection that could not apply it.
    pub projection: String,
    /// The event.
    pub event_id: Uuid,
    /// Its global position.
    pub position: i64,
    /// Its writing transaction (with `position`, the gap-safe order).
    pub tx_id: i64,
    /// Its type.
    pub event_type: String,
    /// Why it could not be applied, the last time it was tried.
    pub error: String,
    /// How often it was tried.
    pub attempts: i32,
    /// When it was first parked.
    pub parked_at: DateTime<Utc>,
}

/// Records that `projection` could not apply `event` (again: the error is replaced and the
/// attempt counted).
pub async fn park(
    tx: &mut Transaction<'_, Postgres>,
    projection: &str,
    event: &RecordedEvent,
    error: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO projection_parked (projection, event_id, position, tx_id, event_type, error) \
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (projection, event_id) DO UPDATE SET \
         error = EXCLUDED.error, attempts = projection_parked.attempts + 1, \
         retried_at = clock_timestamp()",
    )
    .bind(projection)
    .bind(event.event_id)
    .bind(event.position)
    .bind(event.tx_id)
    .bind(&event.event_type)
    .bind(error)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Removes the parked row of an event that has now been applied.
pub async fn unpark(
    tx: &mut Transaction<'_, Postgres>,
    projection: &str,
    event_id: Uuid,
) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM projection_parked WHERE projection = $1 AND event_id = $2")
        .bind(projection)
        .bind(event_id)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Forgets every parked event of `projection` (before a rebuild, which parks again).
pub async fn clear(
    tx: &mut Transaction<'_, Postgres>,
    projection: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM projection_parked WHERE projection = $1")
        .bind(projection)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Every event parked by `projection`, in the order they were committed.
pub async fn list<'e>(
    executor: impl PgExecutor<'e>,
    projection: &str,
) -> Result<Vec<ParkedEvent>, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT projection, event_id, position, tx_id, event_type, error, attempts, parked_at \
         FROM projection_parked WHERE projection = $1 ORDER BY tx_id, position",
    )
    .bind(projection)
    .fetch_all(executor)
    .await?;
    rows.iter()
        .map(|r| {
            Ok(ParkedEvent {
                projection: r.try_get(0)?,
                event_id: r.try_get(1)?,
                position: r.try_get(2)?,
                tx_id: r.try_get(3)?,
                event_type: r.try_get(4)?,
                error: r.try_get(5)?,
                attempts: r.try_get(6)?,
                parked_at: r.try_get(7)?,
            })
        })
        .collect()
}

/// How many events `projection` has parked.
pub async fn count<'e>(
    executor: impl PgExecutor<'e>,
    projection: &str,
) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar("SELECT count(*) FROM projection_parked WHERE projection = $1")
        .bind(projection)
        .fetch_one(executor)
        .await
}

/// The parked events of `projection` as stored in the event store, in commit order.
pub(crate) async fn parked_events(
    tx: &mut Transaction<'_, Postgres>,
    projection: &str,
) -> Result<Vec<RecordedEvent>, StoreError> {
    let rows = sqlx::query(&format!(
        "SELECT {EVENT_COLUMNS} FROM events WHERE event_id IN \
         (SELECT event_id FROM projection_parked WHERE projection = $1) ORDER BY tx_id, position"
    ))
    .bind(projection)
    .fetch_all(&mut **tx)
    .await?;
    rows.iter().map(row_to_event).collect()
}

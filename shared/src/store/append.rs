//! Appending: one transaction per call, outbox rows written alongside.

use serde::{Deserialize, Serialize};
use sqlx::{Postgres, Transaction};
use uuid::Uuid;

use super::{read::row_to_event, EventStore, StoreError, NOTIFY_CHANNEL};
use crate::event::{NewEvent, RecordedEvent};

/// What the caller believes the stream's version to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ExpectedVersion {
    /// Don't care: append at the end (retried on a concurrent writer).
    Any,
    /// The stream must not exist yet.
    NoStream,
    /// The stream must be exactly at this version.
    Exact(i32),
}

/// The result of an append.
#[derive(Debug, Clone)]
pub struct AppendOutcome {
    /// The events as stored (the earlier copies when `duplicate`).
    pub events: Vec<RecordedEvent>,
    /// True when every event already existed: nothing was written.
    pub duplicate: bool,
}

/// How many times an `Any` append retries after losing a race for a version.
const MAX_VERSION_RETRIES: usize = 16;

const UNIQUE_VIOLATION: &str = "23505";
const EVENT_ID_CONSTRAINT: &str = "events_event_id_key";

enum Attempt {
    Done(AppendOutcome),
    EventIdRace,
    VersionRace,
}

impl EventStore {
    /// Appends `events` to `stream` atomically.
    ///
    /// Idempotent: when all events' ids already exist, nothing is written and the stored
    /// copies come back with `duplicate = true`. Each new event also gets an outbox row in
    /// the same transaction, so a publisher that dies after the commit loses nothing.
    pub async fn append(
        &self,
        stream: &str,
        expected: ExpectedVersion,
        events: &[NewEvent],
    ) -> Result<AppendOutcome, StoreError> {
        if events.is_empty() {
            return Err(StoreError::Empty);
        }
        for _ in 0..MAX_VERSION_RETRIES {
            match self.try_append(stream, expected, events).await? {
                Attempt::Done(outcome) => return Ok(outcome),
                // A concurrent writer stored the same ids: the next attempt finds them.
                Attempt::EventIdRace => continue,
                Attempt::VersionRace => {
                    if expected == ExpectedVersion::Any {
                        continue;
                    }
                    let actual = self.stream_version(stream).await?;
                    return Err(StoreError::Conflict {
                        stream: stream.to_owned(),
                        expected,
                        actual,
                    });
                }
            }
        }
        let actual = self.stream_version(stream).await?;
        Err(StoreError::Conflict {
            stream: stream.to_owned(),
            expected,
            actual,
        })
    }

    async fn try_append(
        &self,
        stream: &str,
        expected: ExpectedVersion,
        events: &[NewEvent],
    ) -> Result<Attempt, StoreError> {
        let mut tx = self.pool.begin().await?;
        let ids: Vec<Uuid> = events.iter().map(|e| e.event_id).collect();
        let existing = sqlx::query(
            "SELECT position, tx_id, event_id, stream, version, event_type, schema_version, \
             payload, metadata, recorded_at FROM events WHERE event_id = ANY($1) ORDER BY position",
        )
        .bind(&ids)
        .fetch_all(&mut *tx)
        .await?;
        if !existing.is_empty() {
            tx.rollback().await?;
            if existing.len() != events.len() {
                return Err(StoreError::PartialDuplicate {
                    stream: stream.to_owned(),
                });
            }
            let events = existing
                .iter()
                .map(row_to_event)
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(Attempt::Done(AppendOutcome {
                events,
                duplicate: true,
            }));
        }

        let current: i32 =
            sqlx::query_scalar("SELECT COALESCE(MAX(version), 0) FROM events WHERE stream = $1")
                .bind(stream)
                .fetch_one(&mut *tx)
                .await?;
        let matches = match expected {
            ExpectedVersion::Any => true,
            ExpectedVersion::NoStream => current == 0,
            ExpectedVersion::Exact(v) => current == v,
        };
        if !matches {
            tx.rollback().await?;
            return Err(StoreError::Conflict {
                stream: stream.to_owned(),
                expected,
                actual: current,
            });
        }

        let mut recorded = Vec::with_capacity(events.len());
        for (i, event) in events.iter().enumerate() {
            let version = current + 1 + i as i32;
            match insert(&mut tx, stream, version, event).await {
                Ok(row) => recorded.push(row),
                Err(sqlx::Error::Database(db))
                    if db.code().as_deref() == Some(UNIQUE_VIOLATION) =>
                {
                    let id_race = db.constraint() == Some(EVENT_ID_CONSTRAINT);
                    tx.rollback().await?;
                    return Ok(if id_race {
                        Attempt::EventIdRace
                    } else {
                        Attempt::VersionRace
                    });
                }
                Err(e) => return Err(e.into()),
            }
        }
        let positions: Vec<i64> = recorded.iter().map(|e| e.position).collect();
        sqlx::query("INSERT INTO outbox (position) SELECT UNNEST($1::bigint[])")
            .bind(&positions)
            .execute(&mut *tx)
            .await?;
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(NOTIFY_CHANNEL)
            .bind(stream)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(Attempt::Done(AppendOutcome {
            events: recorded,
            duplicate: false,
        }))
    }

    /// The stream's current version (0 when it does not exist).
    pub async fn stream_version(&self, stream: &str) -> Result<i32, StoreError> {
        Ok(
            sqlx::query_scalar("SELECT COALESCE(MAX(version), 0) FROM events WHERE stream = $1")
                .bind(stream)
                .fetch_one(&self.pool)
                .await?,
        )
    }
}

async fn insert(
    tx: &mut Transaction<'_, Postgres>,
    stream: &str,
    version: i32,
    event: &NewEvent,
) -> Result<RecordedEvent, sqlx::Error> {
    let metadata =
        serde_json::to_value(&event.metadata).map_err(|e| sqlx::Error::Encode(Box::new(e)))?;
    let row = sqlx::query(
        "INSERT INTO events (event_id, stream, version, event_type, schema_version, payload, metadata) \
         VALUES ($1, $2, $3, $4, $5, $6, $7) \
         RETURNING position, tx_id, event_id, stream, version, event_type, schema_version, \
         payload, metadata, recorded_at",
    )
    .bind(event.event_id)
    .bind(stream)
    .bind(version)
    .bind(&event.event_type)
    .bind(event.schema_version)
    .bind(&event.payload)
    .bind(&metadata)
    .fetch_one(&mut **tx)
    .await?;
    row_to_event(&row).map_err(|e| sqlx::Error::Decode(Box::new(e)))
}

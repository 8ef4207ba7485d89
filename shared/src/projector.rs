//! Checkpointed projections: the read model and its checkpoint change in one transaction,
//! so a crash never applies an event twice or skips one; rebuilding from position 0 gives
//! the same rows as the live run.

use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::PgListener;
use sqlx::{Postgres, Row, Transaction};
use tracing::{debug, warn};

use crate::envelope::RecordedEvent;
use crate::store::{read_all_after_in, EventStore, ReadPosition, StoreError, NOTIFY_CHANNEL};

/// Failure while projecting.
#[derive(Debug, thiserror::Error)]
pub enum ProjectionError {
    /// Reading events or writing the model failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A projected event does not decode (a bug or a corrupt store: stops the runner).
    #[error("event {event_id} ({event_type}) does not decode: {reason}")]
    Decode {
        /// The event.
        event_id: uuid::Uuid,
        /// Its type.
        event_type: String,
        /// What failed.
        reason: String,
    },
}

impl ProjectionError {
    /// A projected `event` that does not decode, and why.
    pub fn decode(event: &RecordedEvent, reason: impl std::fmt::Display) -> Self {
        Self::Decode {
            event_id: event.event_id,
            event_type: event.event_type.clone(),
            reason: reason.to_string(),
        }
    }
}

impl From<sqlx::Error> for ProjectionError {
    fn from(e: sqlx::Error) -> Self {
        Self::Store(StoreError::Database(e))
    }
}

/// A read model fed by events.
#[async_trait::async_trait]
pub trait Projection: Send + Sync + 'static {
    /// Unique name: the checkpoint key and the `ghost projections rebuild <name>` argument.
    fn name(&self) -> &'static str;

    /// Applies one event inside the runner's transaction. Events it does not care about
    /// are simply ignored (the checkpoint moves past them anyway).
    async fn apply(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        event: &RecordedEvent,
    ) -> Result<(), ProjectionError>;

    /// Empties the read model before a rebuild.
    async fn reset(&self, tx: &mut Transaction<'_, Postgres>) -> Result<(), ProjectionError>;
}

/// Drives one projection from the store.
#[derive(Clone)]
pub struct ProjectionRunner {
    store: EventStore,
    projection: Arc<dyn Projection>,
    batch_size: i64,
    poll_interval: Duration,
}

/// The outcome of one catch-up pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CatchUp {
    /// Events read (and applied or skipped) in this pass.
    pub processed: usize,
    /// Whether newer events exist that were held back (still-running transactions).
    pub pending: bool,
}

impl ProjectionRunner {
    /// A runner for `projection`.
    pub fn new(
        store: EventStore,
        projection: Arc<dyn Projection>,
        batch_size: i64,
        poll_interval: Duration,
    ) -> Self {
        Self {
            store,
            projection,
            batch_size: batch_size.max(1),
            poll_interval,
        }
    }

    /// Key of the advisory lock serializing runners of one projection across processes.
    fn lock_key(&self) -> i64 {
        // FNV-1a: stable across builds, unlike std's hasher.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in self.projection.name().bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        h as i64
    }

    /// Applies everything committed so far (in batches). Another process running the same
    /// projection makes this a no-op pass.
    pub async fn catch_up(&self) -> Result<CatchUp, ProjectionError> {
        let mut total = 0;
        loop {
            let (n, locked) = self.batch().await?;
            total += n;
            if !locked {
                return Ok(CatchUp {
                    processed: total,
                    pending: false,
                });
            }
            if (n as i64) < self.batch_size {
                let pending = self.has_newer().await?;
                return Ok(CatchUp {
                    processed: total,
                    pending,
                });
            }
        }
    }

    async fn batch(&self) -> Result<(usize, bool), ProjectionError> {
        let mut tx = self.store.pool().begin().await?;
        let locked: bool = sqlx::query_scalar("SELECT pg_try_advisory_xact_lock($1)")
            .bind(self.lock_key())
            .fetch_one(&mut *tx)
            .await?;
        if !locked {
            return Ok((0, false));
        }
        let from = checkpoint(&mut *tx, self.projection.name()).await?;
        let events = read_all_after_in(&mut *tx, from, self.batch_size).await?;
        let Some(last) = events.last() else {
            return Ok((0, true));
        };
        let last = ReadPosition::of(last);
        for event in &events {
            self.projection.apply(&mut tx, event).await?;
        }
        save_checkpoint(&mut tx, self.projection.name(), last).await?;
        tx.commit().await?;
        Ok((events.len(), true))
    }

    async fn has_newer(&self) -> Result<bool, ProjectionError> {
        let from = checkpoint(self.store.pool(), self.projection.name()).await?;
        Ok(sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM events WHERE (tx_id, position) > ($1, $2))",
        )
        .bind(from.tx_id)
        .bind(from.position)
        .fetch_one(self.store.pool())
        .await?)
    }

    /// Empties the read model and replays every event from position 0, in one transaction
    /// (readers see either the old rows or the rebuilt ones). Returns events replayed.
    pub async fn rebuild(&self) -> Result<usize, ProjectionError> {
        let mut tx = self.store.pool().begin().await?;
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(self.lock_key())
            .execute(&mut *tx)
            .await?;
        self.projection.reset(&mut tx).await?;
        let mut from = ReadPosition::START;
        let mut total = 0;
        loop {
            let events = read_all_after_in(&mut *tx, from, self.batch_size).await?;
            let Some(last) = events.last() else { break };
            from = ReadPosition::of(last);
            for event in &events {
                self.projection.apply(&mut tx, event).await?;
            }
            total += events.len();
        }
        save_checkpoint(&mut tx, self.projection.name(), from).await?;
        tx.commit().await?;
        Ok(total)
    }

    /// Keeps the projection current until the task is aborted: woken by append
    /// notifications, polling as a fallback.
    pub async fn run(self) {
        let mut listener = match PgListener::connect_with(self.store.pool()).await {
            Ok(mut l) => match l.listen(NOTIFY_CHANNEL).await {
                Ok(()) => Some(l),
                Err(e) => {
                    warn!(error = %e, "LISTEN failed; polling only");
                    None
                }
            },
            Err(e) => {
                warn!(error = %e, "no listener connection; polling only");
                None
            }
        };
        loop {
            let wait = match self.catch_up().await {
                Ok(c) if c.pending => Duration::from_millis(5),
                Ok(_) => self.poll_interval,
                Err(e) => {
                    warn!(projection = self.projection.name(), error = %e, "projection pass failed");
                    self.poll_interval
                }
            };
            match listener.as_mut() {
                Some(l) => {
                    if let Ok(Err(e)) = tokio::time::timeout(wait, l.recv()).await {
                        debug!(error = %e, "listener error; it reconnects");
                    }
                }
                None => tokio::time::sleep(wait).await,
            }
        }
    }
}

async fn checkpoint<'e>(
    executor: impl sqlx::PgExecutor<'e>,
    name: &str,
) -> Result<ReadPosition, ProjectionError> {
    let row = sqlx::query("SELECT tx_id, position FROM projection_checkpoints WHERE name = $1")
        .bind(name)
        .fetch_optional(executor)
        .await?;
    Ok(match row {
        Some(r) => ReadPosition {
            tx_id: r.try_get(0)?,
            position: r.try_get(1)?,
        },
        None => ReadPosition::START,
    })
}

async fn save_checkpoint(
    tx: &mut Transaction<'_, Postgres>,
    name: &str,
    at: ReadPosition,
) -> Result<(), ProjectionError> {
    sqlx::query(
        "INSERT INTO projection_checkpoints (name, tx_id, position, updated_at) \
         VALUES ($1, $2, $3, clock_timestamp()) \
         ON CONFLICT (name) DO UPDATE SET tx_id = $2, position = $3, updated_at = clock_timestamp()",
    )
    .bind(name)
    .bind(at.tx_id)
    .bind(at.position)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

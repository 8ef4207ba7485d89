//! Append-then-publish, with an outbox so nothing committed stays unpublished.
//!
//! The fast path publishes right after the commit and then forgets the outbox row; if the
//! process dies in between, [`run_outbox_relay`] publishes the row later. Either way
//! JetStream drops the second copy by `Nats-Msg-Id`. [`GroupAppender`] (in `group`) does
//! the same for many small appends at once, one transaction for all of them.

mod group;

pub use group::{GroupAppendError, GroupAppender};

use std::time::Duration;

use tokio::sync::mpsc;
use tracing::{debug, warn};

use crate::bus::{Bus, BusError};
use crate::envelope::{NewEvent, RecordedEvent};
use crate::store::{
    read::row_to_event, AlsoWritten, AppendOutcome, AppendRequest, EventStore, ExpectedVersion,
    StoreError, TurnGuard,
};

/// Failure of an append-and-publish.
#[derive(Debug, thiserror::Error)]
pub enum EventLogError {
    /// The append failed: nothing was committed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The event store and the bus together (cheap to clone).
#[derive(Clone, Debug)]
pub struct EventLog {
    store: EventStore,
    bus: Bus,
    published: mpsc::UnboundedSender<i64>,
}

impl EventLog {
    /// Couples a store and a bus; spawns the task that clears published outbox rows.
    pub fn new(store: EventStore, bus: Bus) -> Self {
        let (published, rx) = mpsc::unbounded_channel();
        tokio::spawn(clear_published(store.clone(), rx));
        Self {
            store,
            bus,
            published,
        }
    }

    /// The same log for `producer`, which may append only `appends` (see
    /// [`EventStore::declaring`]).
    pub fn declaring(&self, producer: &'static str, appends: &'static [&'static str]) -> Self {
        Self {
            store: self.store.declaring(producer, appends),
            ..self.clone()
        }
    }

    /// The store.
    pub fn store(&self) -> &EventStore {
        &self.store
    }

    /// The bus.
    pub fn bus(&self) -> &Bus {
        &self.bus
    }

    /// Appends, and once committed publishes. A publish failure is not an error: the
    /// outbox relay retries it.
    pub async fn append(
        &self,
        stream: &str,
        expected: ExpectedVersion,
        events: &[NewEvent],
    ) -> Result<AppendOutcome, EventLogError> {
        let (outcome, ()) = self
            .append_beside_publish(stream, expected, events, |_| async {})
            .await?;
        Ok(outcome)
    }

    /// Appends every request in one transaction ([`EventStore::append_batch`]: one result
    /// per request), and publishes what committed; the outbox covers a crash in between.
    pub async fn append_batch(
        &self,
        requests: &[AppendRequest],
    ) -> Result<Vec<Result<AppendOutcome, StoreError>>, StoreError> {
        let results = self.store.append_batch(requests).await?;
        let committed: Vec<AppendOutcome> = results
            .iter()
            .filter_map(|r| r.as_ref().ok().cloned())
            .collect();
        if let Err(e) = self.publish_outcomes(&committed).await {
            warn!(error = %e, "could not check the outbox after a batch; the relay publishes");
        }
        Ok(results)
    }

    /// Appends like [`Self::append`], with `also` written in the append's statement (see
    /// [`EventStore::append_with`]); publishes once committed.
    pub async fn append_with(
        &self,
        stream: &str,
        expected: ExpectedVersion,
        events: &[NewEvent],
        also: AlsoWritten<'_>,
    ) -> Result<AppendOutcome, EventLogError> {
        let outcome = self
            .store
            .append_with(stream, expected, events, Some(also))
            .await?;
        self.publish_committed(outcome).await
    }

    /// [`Self::append_with`], running `first` on the stored events between the commit and
    /// the publish. What must follow the commit at once (telling a waiting client that its
    /// reply is stored) then does not wait for the bus's acknowledgements, nor compete with
    /// the consumers the publish wakes. A crash in between leaves the publish to the outbox
    /// relay, as for any append.
    pub async fn append_with_first<F, Fut, T>(
        &self,
        stream: &str,
        expected: ExpectedVersion,
        events: &[NewEvent],
        also: AlsoWritten<'_>,
        first: F,
    ) -> Result<(AppendOutcome, T), EventLogError>
    where
        F: FnOnce(AppendOutcome) -> Fut,
        Fut: std::future::Future<Output = T>,
    {
        let outcome = self
            .store
            .append_with(stream, expected, events, Some(also))
            .await?;
        let first = first(outcome.clone()).await;
        Ok((self.publish_committed(outcome).await?, first))
    }

    /// Appends a session's next turn, with `also` written in its statement (see
    /// [`EventStore::append_turn`]); publishes once committed.
    pub async fn append_turn(
        &self,
        stream: &str,
        guard: TurnGuard<'_>,
        events: &[NewEvent],
        also: AlsoWritten<'_>,
    ) -> Result<AppendOutcome, EventLogError> {
        let outcome = self
            .store
            .append_turn(stream, guard, events, Some(also))
            .await?;
        self.publish_committed(outcome).await
    }

    /// Publishes what one committed append stored.
    async fn publish_committed(
        &self,
        outcome: AppendOutcome,
    ) -> Result<AppendOutcome, EventLogError> {
        crate::fault::point("store.after_commit");
        self.publish_outcomes(std::slice::from_ref(&outcome))
            .await?;
        Ok(outcome)
    }

    /// Appends like [`Self::append`], and once committed runs `beside` on the stored
    /// outcome while the events are published: work that needs the commit but not the
    /// publish (listing a reply in the conversation) costs no round trip of its own.
    pub async fn append_beside_publish<F, Fut, T>(
        &self,
        stream: &str,
        expected: ExpectedVersion,
        events: &[NewEvent],
        beside: F,
    ) -> Result<(AppendOutcome, T), EventLogError>
    where
        F: FnOnce(AppendOutcome) -> Fut,
        Fut: std::future::Future<Output = T>,
    {
        let outcome = self.store.append(stream, expected, events).await?;
        crate::fault::point("store.after_commit");
        let (published, beside) = tokio::join!(
            self.publish_outcomes(std::slice::from_ref(&outcome)),
            beside(outcome.clone())
        );
        published?;
        Ok((outcome, beside))
    }

    /// Publishes what committed appends stored: all of a new append's events, and of a
    /// duplicate only what the earlier attempt left in the outbox. A publish failure is
    /// not an error (the outbox relay retries it).
    async fn publish_outcomes(&self, outcomes: &[AppendOutcome]) -> Result<(), StoreError> {
        let mut to_publish: Vec<&RecordedEvent> = Vec::new();
        let duplicates: Vec<i64> = outcomes
            .iter()
            .filter(|o| o.duplicate)
            .flat_map(|o| o.events.iter().map(|e| e.position))
            .collect();
        let pending: Vec<i64> = if duplicates.is_empty() {
            Vec::new()
        } else {
            sqlx::query_scalar("SELECT position FROM outbox WHERE position = ANY($1)")
                .bind(&duplicates)
                .fetch_all(self.store.pool())
                .await?
        };
        for outcome in outcomes {
            to_publish.extend(
                outcome
                    .events
                    .iter()
                    .filter(|e| !outcome.duplicate || pending.contains(&e.position)),
            );
        }
        let results = self.bus.publish_events(&to_publish).await;
        for (event, result) in to_publish.iter().zip(results) {
            match result {
                Ok(()) => {
                    let _ = self.published.send(event.position);
                }
                Err(e) => {
                    warn!(event_id = %event.event_id, error = %e, "publish failed; the outbox relay will retry")
                }
            }
        }
        Ok(())
    }
}

/// How long the first published position waits for others before its outbox row is
/// deleted: one `DELETE` then clears every append of that window instead of one each (at
/// one client, three a turn, each planned anew for its array). Far below the relay's
/// grace, so the relay never takes a row only because its delete waited.
const CLEAR_LINGER: Duration = Duration::from_millis(50);

/// Most outbox rows one `DELETE` clears.
const CLEAR_BATCH: usize = 1024;

/// Deletes outbox rows of published events in batches, off the request path.
async fn clear_published(store: EventStore, mut rx: mpsc::UnboundedReceiver<i64>) {
    let mut batch = Vec::with_capacity(256);
    while let Some(first) = rx.recv().await {
        batch.push(first);
        let linger = tokio::time::sleep(CLEAR_LINGER);
        tokio::pin!(linger);
        while batch.len() < CLEAR_BATCH {
            tokio::select! {
                received = rx.recv() => match received {
                    Some(p) => batch.push(p),
                    None => break,
                },
                () = &mut linger => break,
            }
        }
        // Not waiting for the flush: a row whose delete a crash loses is published again
        // by the relay, and JetStream drops the copy. A synchronous delete was a flush of
        // its own, which the next append's commit waited behind.
        if let Err(e) = sqlx::query(
            "DELETE FROM outbox USING (SELECT set_config('synchronous_commit', 'off', true)) \
             AS asynchronous WHERE position = ANY($1)",
        )
        .bind(&batch)
        .execute(store.pool())
        .await
        {
            // Harmless: the relay republishes, JetStream drops the copy.
            debug!(error = %e, "could not clear outbox rows");
        }
        batch.clear();
    }
}

/// Relay ticks between two counts of the outbox's rows (the depth gauge): a count reads
/// every row the fast path deleted since the table's last vacuum, tens of thousands under
/// load, where the oldest row is found through the index.
const DEPTH_EVERY_TICKS: u64 = 20;

/// Publishes committed events that the fast path did not (the process died, or NATS was
/// away), oldest first. Runs until its task is aborted; safe to run in many processes.
///
/// Each tick is one statement while nothing is overdue: the age of the oldest outbox row
/// (a metric) says whether any row is older than `grace`, and only then does a relay pass
/// run (a transaction of its own). Every process ran a pass, its transaction and a count
/// of the outbox on every tick, most of the statements of an idle store.
pub async fn run_outbox_relay(store: EventStore, bus: Bus, interval: Duration, grace: Duration) {
    crate::metrics::register_outbox();
    for tick in 0u64.. {
        let measured = if tick % DEPTH_EVERY_TICKS == 0 {
            outbox_state(&store).await.map(|(depth, lag)| {
                crate::metrics::outbox_observed(depth, lag);
                lag
            })
        } else {
            oldest_outbox_age(&store).await.inspect(|lag| {
                crate::metrics::outbox_lag(*lag);
            })
        };
        let due = match measured {
            Ok(lag) => lag >= grace,
            Err(e) => {
                debug!(error = %e, "could not measure the outbox");
                true
            }
        };
        // Overdue rows: passes until one finds nothing (or fails).
        if due {
            loop {
                match relay_once(&store, &bus, grace).await {
                    Ok(0) => break,
                    Ok(n) => crate::metrics::outbox_relayed(n),
                    Err(e) => {
                        warn!(error = %e, "outbox relay pass failed");
                        break;
                    }
                }
            }
        }
        tokio::time::sleep(interval).await;
    }
}

/// Rows in the outbox and the age of the oldest (for the metrics).
async fn outbox_state(store: &EventStore) -> Result<(u64, Duration), StoreError> {
    let (depth, lag): (i64, f64) = sqlx::query_as(
        "SELECT count(*), COALESCE(EXTRACT(EPOCH FROM clock_timestamp() - min(enqueued_at))::float8, 0) \
         FROM outbox",
    )
    .fetch_one(store.pool())
    .await?;
    Ok((depth.max(0) as u64, Duration::from_secs_f64(lag.max(0.0))))
}

/// The age of the oldest outbox row, zero when there is none. Rows are enqueued in
/// position order (the position is taken as the row is inserted), so the first by the
/// primary key is the oldest, give or take the moment between the two.
async fn oldest_outbox_age(store: &EventStore) -> Result<Duration, StoreError> {
    let lag: Option<f64> = sqlx::query_scalar(
        "SELECT EXTRACT(EPOCH FROM clock_timestamp() - enqueued_at)::float8 \
         FROM outbox ORDER BY position LIMIT 1",
    )
    .fetch_optional(store.pool())
    .await?;
    Ok(Duration::from_secs_f64(lag.unwrap_or(0.0).max(0.0)))
}

/// One relay pass over rows older than `grace` (younger ones are the fast path's).
/// Returns how many events it published.
pub async fn relay_once(
    store: &EventStore,
    bus: &Bus,
    grace: Duration,
) -> Result<usize, RelayError> {
    let mut tx = store.pool().begin().await.map_err(StoreError::from)?;
    // The grace is written into the statement, not bound: with a parameter, Postgres
    // planned the statement anew on nearly every pass (a custom plan for each value),
    // several times a second in every process; without one it keeps one plan.
    let rows = sqlx::query(&format!(
        "SELECT e.position, e.tx_id, e.event_id, e.stream, e.version, e.event_type, \
         e.schema_version, e.payload, e.metadata, e.recorded_at \
         FROM outbox o JOIN events e ON e.position = o.position \
         WHERE o.enqueued_at < clock_timestamp() - make_interval(secs => {:.3}) \
         ORDER BY o.position LIMIT 256 FOR UPDATE OF o SKIP LOCKED",
        grace.as_secs_f64()
    ))
    .fetch_all(&mut *tx)
    .await
    .map_err(StoreError::from)?;
    if rows.is_empty() {
        // Nothing to publish or clear: the transaction ends without another statement.
        tx.rollback().await.map_err(StoreError::from)?;
        return Ok(0);
    }
    let mut published = Vec::with_capacity(rows.len());
    for row in &rows {
        let event = row_to_event(row)?;
        bus.publish_event(&event).await?;
        published.push(event.position);
    }
    sqlx::query("DELETE FROM outbox WHERE position = ANY($1)")
        .bind(&published)
        .execute(&mut *tx)
        .await
        .map_err(StoreError::from)?;
    tx.commit().await.map_err(StoreError::from)?;
    Ok(published.len())
}

/// Failure of a relay pass.
#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    /// Reading or clearing the outbox failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Publishing failed (rows stay for the next pass).
    #[error(transparent)]
    Bus(#[from] BusError),
}

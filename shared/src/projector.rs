//! Checkpointed projections: the read model and its checkpoint change in one transaction,
//! so a crash never applies an event twice or skips one; rebuilding from position 0 gives
//! the same rows as the live run.
//!
//! A projection never stalls: an event it cannot decode or apply for good is parked (see
//! [`crate::parking`]) with the error, logged and counted, and the checkpoint moves on.
//! Each batch is applied inside a savepoint; only when an event of it fails is the batch
//! applied again one event (one savepoint) at a time, so the common path costs nothing
//! extra. Failures that may pass by themselves (a lost connection, a serialization
//! failure) are not parked: the pass fails, nothing of the batch is kept, and the runner
//! tries again.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::PgListener;
use sqlx::{Connection, Postgres, Row, Transaction};
use tracing::{debug, warn};
use uuid::Uuid;

use crate::envelope::RecordedEvent;
use crate::parking;
use crate::store::{
    read_all_after_in, EventStore, ReadPosition, StoreError, WakeUp, NOTIFY_CHANNEL,
};

/// Failure while projecting.
#[derive(Debug, thiserror::Error)]
pub enum ProjectionError {
    /// Reading events or writing the model failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A service the projection needs (a model endpoint) did not answer: the pass is tried
    /// again later, nothing is parked.
    #[error("unavailable: {0}")]
    Unavailable(String),
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

impl ProjectionError {
    /// Whether trying again later could succeed with the same code and data: the connection
    /// or the server failed, or the transaction lost a race. Such failures are retried,
    /// never parked; everything else (a payload that does not decode, a statement the data
    /// violates) is parked.
    pub fn is_transient(&self) -> bool {
        if matches!(self, ProjectionError::Unavailable(_)) {
            return true;
        }
        let ProjectionError::Store(StoreError::Database(e)) = self else {
            return false;
        };
        match e {
            sqlx::Error::Database(db) => {
                let code = db.code().unwrap_or_default();
                // 08 connection, 40 rollback (serialization, deadlock), 53 resources,
                // 57 operator intervention, 58 system; 55P03 lock not available.
                ["08", "40", "53", "57", "58"]
                    .iter()
                    .any(|class| code.starts_with(class))
                    || code == "55P03"
            }
            sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::Protocol(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::WorkerCrashed => true,
            _ => false,
        }
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

    /// Applies a pass's events, in order, inside the runner's transaction. The default
    /// applies them one by one; a projection that can write many events' rows in one
    /// statement overrides it (a statement per event was most of a pass's cost). When it
    /// fails for good, the runner applies the events again one at a time with [`Self::apply`]
    /// and parks those that fail, so both must give the same rows.
    async fn apply_all(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        events: &[RecordedEvent],
    ) -> Result<(), ProjectionError> {
        for event in events {
            self.apply(tx, event).await?;
        }
        Ok(())
    }

    /// Empties the read model before a rebuild.
    async fn reset(&self, tx: &mut Transaction<'_, Postgres>) -> Result<(), ProjectionError>;

    /// Whether an append holding an event of `event_type` wakes this projection's runner at
    /// once. Every event is still applied, in order: one of a type that wakes nobody waits
    /// for the next pass (another event's wake-up or the poll interval). Returning false for
    /// types a projection ignores spares Postgres a pass per append of them; every runner
    /// woken by every append was most of the store's statements on a chat turn.
    fn wakes_on(&self, _event_type: &str) -> bool {
        true
    }
}

/// Drives one projection from the store.
#[derive(Clone)]
pub struct ProjectionRunner {
    store: EventStore,
    projection: Arc<dyn Projection>,
    batch_size: i64,
    poll_interval: Duration,
    /// Events this runner parked since it was created.
    parked: Arc<AtomicU64>,
    /// Catch-up passes this runner ran since it was created.
    passes: Arc<AtomicU64>,
}

/// Key of the advisory lock of the projection named `name` ([`ProjectionRunner::lock_key`]):
/// what holds every projection still while their rows change outside them (forgetting a
/// person).
pub fn projection_lock_key(name: &str) -> i64 {
    // FNV-1a: stable across builds, unlike std's hasher.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h as i64
}

/// The outcome of one catch-up pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CatchUp {
    /// Events read (and applied, skipped or parked) in this pass.
    pub processed: usize,
    /// Events parked in this pass.
    pub parked: usize,
    /// Whether newer events exist that were held back (still-running transactions).
    pub pending: bool,
    /// Whether one of them is of a type the projection wakes on: its wake-up may have come
    /// and gone, so the runner passes again shortly instead of at its poll.
    pub pending_wakes: bool,
    /// Whether another runner (this process's loop or another process) held the projection:
    /// its pass may still be applying, so this pass says nothing about being caught up.
    pub contended: bool,
}

/// The outcome of [`ProjectionRunner::retry_parked`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RetryOutcome {
    /// Parked events that applied this time (their parked rows are gone).
    pub applied: Vec<Uuid>,
    /// Parked events that failed again, with the new error (their rows are kept).
    pub still_parked: Vec<(Uuid, String)>,
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
            parked: Arc::new(AtomicU64::new(0)),
            passes: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The projection's name.
    pub fn name(&self) -> &'static str {
        self.projection.name()
    }

    /// Events this runner (and its clones) parked since it was created.
    pub fn parked_total(&self) -> u64 {
        self.parked.load(Ordering::Relaxed)
    }

    /// Catch-up passes this runner (and its clones) ran since it was created: each costs a
    /// transaction, whether or not it finds events.
    pub fn passes_total(&self) -> u64 {
        self.passes.load(Ordering::Relaxed)
    }

    /// Key of the transaction-level advisory lock serializing runners of one projection
    /// across processes (an operator's session holding it pauses the projection).
    pub fn lock_key(&self) -> i64 {
        projection_lock_key(self.projection.name())
    }

    /// Applies everything committed so far (in batches). Another process running the same
    /// projection makes this a no-op pass.
    pub async fn catch_up(&self) -> Result<CatchUp, ProjectionError> {
        Ok(self.catch_up_through().await?.0)
    }

    /// A [`Self::catch_up`] pass, and how far it read when this process held the lock.
    async fn catch_up_through(&self) -> Result<(CatchUp, Option<ReadPosition>), ProjectionError> {
        self.passes.fetch_add(1, Ordering::Relaxed);
        let mut through = None;
        let mut pass = CatchUp {
            processed: 0,
            parked: 0,
            pending: false,
            pending_wakes: false,
            contended: false,
        };
        loop {
            let batch = self.batch().await?;
            pass.processed += batch.read;
            pass.parked += batch.parked;
            if !batch.locked {
                pass.contended = true;
                return Ok((pass, through));
            }
            through = Some(batch.through);
            if (batch.read as i64) < self.batch_size {
                pass.pending = batch.pending.any;
                pass.pending_wakes = batch.pending.wakes;
                return Ok((pass, through));
            }
        }
    }

    /// One batch, in one transaction: the lock and the checkpoint in one statement, the
    /// read, the model's writes, and the new checkpoint with, when the read came back
    /// short, whether newer events are held back (each statement saved is saved on every
    /// pass). The model's writes run without a savepoint; only when one of its events fails
    /// for good is the batch read and applied again, one event (one savepoint) at a time.
    ///
    /// The transaction commits without waiting for its WAL flush (`synchronous_commit`
    /// off, for this transaction only): a read model is rebuilt from the events, and a
    /// crash that loses the pass loses its rows and its checkpoint together, so the next
    /// pass applies the same events again. The events themselves stay synchronous. Each
    /// pass's flush otherwise queued in front of the commits of the turn that woke it.
    async fn batch(&self) -> Result<Batch, ProjectionError> {
        if let Some(batch) = self.batch_applied(Applying::Together).await? {
            return Ok(batch);
        }
        // Nothing of the failed attempt was kept: its transaction rolled back. One by one
        // parks what fails, so it always comes back with a batch.
        Ok(self
            .batch_applied(Applying::OneByOne)
            .await?
            .unwrap_or_else(Batch::not_locked))
    }

    /// [`Self::batch`] applying as `applying` says: `None` when the events applied
    /// together and one of them failed for good (the transaction rolled back).
    async fn batch_applied(&self, applying: Applying) -> Result<Option<Batch>, ProjectionError> {
        let mut tx = self.store.pool().begin().await?;
        let (locked, tx_id, position): (bool, Option<i64>, Option<i64>) = sqlx::query_as(
            "SELECT l.locked, c.tx_id, c.position \
             FROM (SELECT pg_try_advisory_xact_lock($1) AS locked, \
                          set_config('synchronous_commit', 'off', true) AS asynchronous) l \
             LEFT JOIN projection_checkpoints c ON l.locked AND c.name = $2",
        )
        .bind(self.lock_key())
        .bind(self.projection.name())
        .fetch_one(&mut *tx)
        .await?;
        if !locked {
            return Ok(Some(Batch::not_locked()));
        }
        let mut batch = Batch {
            locked: true,
            ..Batch::not_locked()
        };
        let from = match (tx_id, position) {
            (Some(tx_id), Some(position)) => ReadPosition { tx_id, position },
            _ => ReadPosition::START,
        };
        let events = read_all_after_in(&mut *tx, from, self.batch_size).await?;
        batch.read = events.len();
        let last = events.last().map(ReadPosition::of).unwrap_or(from);
        batch.through = last;
        let short = (events.len() as i64) < self.batch_size;
        if events.is_empty() {
            batch.pending = self.held_back(look_ahead(&mut *tx, last).await?);
        } else {
            match applying {
                Applying::Together => match self.projection.apply_all(&mut tx, &events).await {
                    Ok(()) => {}
                    Err(e) if e.is_transient() => return Err(e),
                    Err(_) => {
                        // Rolled back now, not when the connection is next used: until then
                        // it would keep the projection's lock from the one-by-one pass.
                        tx.rollback().await?;
                        return Ok(None);
                    }
                },
                Applying::OneByOne => {
                    batch.parked = self.apply_one_by_one(&mut tx, &events).await?
                }
            }
            let found =
                save_checkpoint_and_look_ahead(&mut tx, self.projection.name(), last, short)
                    .await?;
            batch.pending = self.held_back(found);
        }
        tx.commit().await?;
        Ok(Some(batch))
    }

    /// Applies `events` in `tx`: all at once inside a savepoint, or, when one of them fails
    /// for good, again one at a time, parking each that fails. Returns how many it parked.
    /// (A rebuild's path; a live pass tries them together without the savepoint.)
    async fn apply_batch(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        events: &[RecordedEvent],
    ) -> Result<usize, ProjectionError> {
        let mut whole = tx.begin().await?;
        match self.projection.apply_all(&mut whole, events).await {
            Ok(()) => {
                whole.commit().await?;
                return Ok(0);
            }
            Err(e) if e.is_transient() => return Err(e),
            Err(_) => whole.rollback().await?,
        }
        self.apply_one_by_one(tx, events).await
    }

    /// Applies `events` one at a time, each in its own savepoint, parking each that fails
    /// for good. Returns how many it parked.
    async fn apply_one_by_one(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        events: &[RecordedEvent],
    ) -> Result<usize, ProjectionError> {
        let mut parked = 0;
        for event in events {
            if let Err(e) = self.apply_one(tx, event).await? {
                self.park(tx, event, &e).await?;
                parked += 1;
            }
        }
        Ok(parked)
    }

    /// Applies one event inside its own savepoint: `Ok(Err(e))` when it failed for good (and
    /// nothing of it was kept), `Err` when the failure may pass.
    async fn apply_one(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        event: &RecordedEvent,
    ) -> Result<Result<(), ProjectionError>, ProjectionError> {
        let mut one = tx.begin().await?;
        match self.projection.apply(&mut one, event).await {
            Ok(()) => {
                one.commit().await?;
                Ok(Ok(()))
            }
            Err(e) if e.is_transient() => Err(e),
            Err(e) => {
                one.rollback().await?;
                Ok(Err(e))
            }
        }
    }

    async fn park(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        event: &RecordedEvent,
        error: &ProjectionError,
    ) -> Result<(), ProjectionError> {
        let name = self.projection.name();
        parking::park(tx, name, event, &error.to_string()).await?;
        let total = self.parked.fetch_add(1, Ordering::Relaxed) + 1;
        warn!(
            projection = name,
            event_id = %event.event_id,
            event_type = %event.event_type,
            position = event.position,
            %error,
            parked_total = total,
            "event parked; the projection moves on (`ghost projections retry {name}` applies it again)"
        );
        Ok(())
    }

    /// Applies every event `projection` parked again, in commit order (after the events
    /// that followed them: a rebuild gives the in-order result). Those that apply leave the
    /// parking table; the others stay with their new error.
    pub async fn retry_parked(&self) -> Result<RetryOutcome, ProjectionError> {
        let name = self.projection.name();
        let mut tx = self.store.pool().begin().await?;
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(self.lock_key())
            .execute(&mut *tx)
            .await?;
        let events = parking::parked_events(&mut tx, name).await?;
        let mut outcome = RetryOutcome::default();
        for event in &events {
            match self.apply_one(&mut tx, event).await? {
                Ok(()) => {
                    parking::unpark(&mut tx, name, event.event_id).await?;
                    outcome.applied.push(event.event_id);
                }
                Err(e) => {
                    parking::park(&mut tx, name, event, &e.to_string()).await?;
                    outcome.still_parked.push((event.event_id, e.to_string()));
                }
            }
        }
        tx.commit().await?;
        Ok(outcome)
    }

    /// How far behind the head of the store this projection is: events committed after
    /// its checkpoint, and the age of the oldest of them.
    pub async fn lag(&self) -> Result<(u64, Duration), ProjectionError> {
        let from = checkpoint(self.store.pool(), self.projection.name()).await?;
        let (events, age): (i64, f64) = sqlx::query_as(
            "SELECT (SELECT count(*) FROM events WHERE position > $1), \
             COALESCE((SELECT EXTRACT(EPOCH FROM ghost_now() - recorded_at)::float8 \
             FROM events WHERE position > $1 ORDER BY position LIMIT 1), 0)",
        )
        .bind(from.position)
        .fetch_one(self.store.pool())
        .await?;
        Ok((events.max(0) as u64, Duration::from_secs_f64(age.max(0.0))))
    }

    /// Empties the read model (and forgets what it parked) and replays every event from
    /// position 0, in one transaction (readers see either the old rows or the rebuilt
    /// ones), parking again what still fails. Returns events replayed.
    pub async fn rebuild(&self) -> Result<usize, ProjectionError> {
        let mut tx = self.store.pool().begin().await?;
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(self.lock_key())
            .execute(&mut *tx)
            .await?;
        self.projection.reset(&mut tx).await?;
        parking::clear(&mut tx, self.projection.name()).await?;
        let mut from = ReadPosition::START;
        let mut total = 0;
        loop {
            let events = read_all_after_in(&mut *tx, from, self.batch_size).await?;
            let Some(last) = events.last() else { break };
            from = ReadPosition::of(last);
            self.apply_batch(&mut tx, &events).await?;
            total += events.len();
        }
        save_checkpoint(&mut tx, self.projection.name(), from).await?;
        tx.commit().await?;
        Ok(total)
    }

    /// Waits until an append notification names a type this projection wakes on and an
    /// event past `through` (what this runner's last pass read), or `wait` passes. The
    /// first listener error (it reconnects, and may have missed notifications) ends the
    /// wait too; while it keeps failing (`lost`), the wait runs out instead: a listener
    /// that cannot reconnect fails at once, and ending every wait on it would spin.
    async fn wait_for_wake(
        &self,
        listener: &mut PgListener,
        lost: &mut bool,
        wait: Duration,
        through: Option<ReadPosition>,
    ) {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            match tokio::time::timeout_at(deadline, listener.recv()).await {
                Err(_) => {
                    *lost = false; // it listened the whole wait
                    return;
                }
                Ok(Ok(n)) => {
                    *lost = false;
                    if wakes(self.projection.as_ref(), n.payload(), through) {
                        return;
                    }
                }
                Ok(Err(e)) if !*lost => {
                    debug!(error = %e, "listener error; it reconnects");
                    *lost = true;
                    return;
                }
                Ok(Err(_)) => {
                    tokio::time::sleep_until(deadline).await;
                    return;
                }
            }
        }
    }

    /// Keeps the projection current until the task is aborted: woken by append
    /// notifications of the types it wakes on, polling as a fallback.
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
        let mut measured: Option<std::time::Instant> = None;
        // How far this runner's passes have read: a wake-up for appends it already read
        // (it arrives after their commit, often after the pass that read them) is skipped.
        let mut through = None;
        let mut listener_lost = false;
        // Passes failed in a row (the store unreachable, say): each waits twice as long.
        let mut failures = 0u32;
        loop {
            let pass = self.catch_up_through().await.map(|(pass, read)| {
                through = read.or(through);
                pass
            });
            if let Ok(c) = &pass {
                crate::metrics::projection_parked(self.projection.name(), c.parked);
            }
            // The lag costs a query: measured at most once a second.
            if measured.is_none_or(|at| at.elapsed() >= Duration::from_secs(1)) {
                measured = Some(std::time::Instant::now());
                match self.lag().await {
                    Ok((events, age)) => {
                        crate::metrics::projection_lag(self.projection.name(), events, age)
                    }
                    Err(e) => {
                        debug!(projection = self.projection.name(), error = %e, "lag not measured")
                    }
                }
            }
            if pass.is_ok() {
                failures = 0;
            }
            let wait = match pass {
                // Held-back events of other types wait for the poll: under load some
                // transaction is always running, and a pass every 5 ms for them was most
                // of the store's statements.
                Ok(c) if c.pending_wakes => Duration::from_millis(5),
                Ok(_) => self.poll_interval,
                Err(e) => {
                    failures = failures.saturating_add(1);
                    warn!(projection = self.projection.name(), error = %e, failures, "projection pass failed");
                    retry_wait(self.poll_interval, failures)
                }
            };
            match listener.as_mut() {
                Some(l) => {
                    self.wait_for_wake(l, &mut listener_lost, wait, through)
                        .await
                }
                None => tokio::time::sleep(wait).await,
            }
        }
    }
}

/// Longest wait between failed passes (unless the poll interval is longer).
const MAX_RETRY_WAIT: Duration = Duration::from_secs(5);

/// The wait after the `failures`-th failed pass in a row: the poll interval, doubled for
/// each failure before it, at most [`MAX_RETRY_WAIT`]. A notification still ends it.
fn retry_wait(poll_interval: Duration, failures: u32) -> Duration {
    let doubled = poll_interval.saturating_mul(1 << failures.saturating_sub(1).min(16));
    doubled.min(MAX_RETRY_WAIT.max(poll_interval))
}

/// Whether an append notification wakes `projection`, whose runner has read `through`:
/// it names a type the projection wakes on (or none, which wakes every projection), and
/// an event past `through` (or none).
fn wakes(projection: &dyn Projection, payload: &str, through: Option<ReadPosition>) -> bool {
    let wake_up = WakeUp::parse(payload);
    let typed = wake_up.names_no_type() || wake_up.types().any(|t| projection.wakes_on(t));
    let unread = match (wake_up.newest, through) {
        (Some(newest), Some(through)) => newest > through,
        _ => true,
    };
    typed && unread
}

impl Batch {
    /// A batch that read nothing because another process held the projection's lock.
    fn not_locked() -> Self {
        Self {
            read: 0,
            parked: 0,
            locked: false,
            pending: HeldBack::default(),
            through: ReadPosition::START,
        }
    }
}

/// How a pass applies its events.
#[derive(Clone, Copy)]
enum Applying {
    /// All in one go ([`Projection::apply_all`]), no savepoint: the common path.
    Together,
    /// One at a time, each in a savepoint, parking those that fail.
    OneByOne,
}

/// What one batch did.
struct Batch {
    /// Events read (and applied, skipped or parked).
    read: usize,
    /// Events parked.
    parked: usize,
    /// Whether this process held the projection's lock.
    locked: bool,
    /// Newer events the read held back (still-running transactions).
    pending: HeldBack,
    /// The position read through (the checkpoint it saved, or the one it started from).
    through: ReadPosition,
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

/// At most this many events past a checkpoint are looked at; more count as waking.
const LOOK_AHEAD: i64 = 1000;

/// The events found past a pass's checkpoint: how many (up to [`LOOK_AHEAD`]) and their
/// types.
type LookAhead = (i64, Option<Vec<String>>);

/// Events held back past a pass's checkpoint.
#[derive(Debug, Clone, Copy, Default)]
struct HeldBack {
    /// Whether there are any.
    any: bool,
    /// Whether one is of a type the projection wakes on (or too many to tell).
    wakes: bool,
}

impl ProjectionRunner {
    fn held_back(&self, (count, types): LookAhead) -> HeldBack {
        let wakes =
            count >= LOOK_AHEAD || types.iter().flatten().any(|t| self.projection.wakes_on(t));
        HeldBack {
            any: count > 0,
            wakes,
        }
    }
}

/// The events past `at`, held back by still-running transactions.
async fn look_ahead<'e>(
    executor: impl sqlx::PgExecutor<'e>,
    at: ReadPosition,
) -> Result<LookAhead, ProjectionError> {
    Ok(sqlx::query_as(
        "SELECT count(*), array_agg(DISTINCT event_type) FROM \
         (SELECT event_type FROM events WHERE (tx_id, position) > ($1, $2) \
          ORDER BY tx_id, position LIMIT $3) newer",
    )
    .bind(at.tx_id)
    .bind(at.position)
    .bind(LOOK_AHEAD)
    .fetch_one(executor)
    .await?)
}

/// Saves the checkpoint and, when `look_ahead`, looks at the events past it (held back by
/// still-running transactions): one statement for both.
async fn save_checkpoint_and_look_ahead(
    tx: &mut Transaction<'_, Postgres>,
    name: &str,
    at: ReadPosition,
    look_ahead: bool,
) -> Result<LookAhead, ProjectionError> {
    Ok(sqlx::query_as(
        "WITH saved AS (\
             INSERT INTO projection_checkpoints (name, tx_id, position, updated_at) \
             VALUES ($1, $2, $3, clock_timestamp()) \
             ON CONFLICT (name) DO UPDATE SET tx_id = $2, position = $3, updated_at = clock_timestamp()) \
         SELECT count(*), array_agg(DISTINCT event_type) FROM \
             (SELECT event_type FROM events WHERE $4 AND (tx_id, position) > ($2, $3) \
              ORDER BY tx_id, position LIMIT $5) newer",
    )
    .bind(name)
    .bind(at.tx_id)
    .bind(at.position)
    .bind(look_ahead)
    .bind(LOOK_AHEAD)
    .fetch_one(&mut **tx)
    .await?)
}

/// Saves the checkpoint alone (a rebuild's end).
async fn save_checkpoint(
    tx: &mut Transaction<'_, Postgres>,
    name: &str,
    at: ReadPosition,
) -> Result<(), ProjectionError> {
    save_checkpoint_and_look_ahead(tx, name, at, false).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_passes_wait_twice_as_long_each_time_up_to_a_bound() {
        let poll = Duration::from_millis(250);
        let waits: Vec<u128> = (1..=7).map(|n| retry_wait(poll, n).as_millis()).collect();
        assert_eq!(waits, [250, 500, 1000, 2000, 4000, 5000, 5000]);
        assert_eq!(retry_wait(poll, u32::MAX), MAX_RETRY_WAIT);
        // A poll interval past the bound is kept: failing never polls more often.
        let slow = Duration::from_secs(60);
        assert_eq!(retry_wait(slow, 3), slow);
    }
}

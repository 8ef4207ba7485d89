//! The Postgres event store: append with optimistic concurrency, idempotent by event id,
//! and gap-safe reads in commit order.
//!
//! - `append`: one append per statement ([`EventStore::append`]);
//! - `append_batch`: group commit, many appends in one transaction
//!   ([`EventStore::append_batch`]);
//! - `read`: gap-safe reads in commit order;
//! - `tail`: a stream's newest events, read back from its head in bounded windows;
//! - `wakeups`: the projection runners' wake-up, sent after each append commits;
//! - `forget`: the audited redaction that forgets a person ([`EventStore::forget_person`]);
//! - `retention`: the same redaction of a channel's lines past their retention
//!   ([`EventStore::expire_raw_text`]);
//! - `unreachable`: whether an error means the database was out of reach.

mod append;
mod append_batch;
mod forget;
pub(crate) mod read;
mod retention;
mod tail;
mod unreachable;
mod wakeups;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use wakeups::Wakeups;
pub use wakeups::{WakeFilter, WakeUp};

pub use append::{AlsoWritten, AppendOutcome, ExpectedVersion, TurnGuard};
pub use append_batch::AppendRequest;
pub use forget::Redaction;
pub use read::{any_after_in, read_all_after_in, ReadPosition};
pub use tail::{read_tail_checking_in, read_tail_in, TailFilter};
pub use unreachable::Unreachable;

/// Channel on which every append's wake-up is sent once it committed, to wake readers
/// (payload: the appended event types, comma separated; empty: wake everyone).
pub const NOTIFY_CHANNEL: &str = "ghost_events";

/// What can go wrong talking to the event store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The stream moved since the caller read it.
    #[error("stream {stream} is at version {actual}, expected {expected:?}")]
    Conflict {
        /// The stream.
        stream: String,
        /// What the caller expected.
        expected: ExpectedVersion,
        /// What the stream is at.
        actual: i32,
    },
    /// Some but not all of the events of one append already exist: the caller reused ids.
    #[error("append to {stream} mixes new events with already stored ones")]
    PartialDuplicate {
        /// The stream.
        stream: String,
    },
    /// A session's next turn was not appended: its current turn is still running.
    #[error("stream {stream} is in the middle of a turn")]
    TurnRunning {
        /// The stream.
        stream: String,
    },
    /// Nothing to append.
    #[error("an append needs at least one event")]
    Empty,
    /// A service appended a type its descriptor does not list (`ServiceDescriptor::appends`):
    /// the table of who appends what is read from the descriptors, so it must not lie.
    #[error("{producer} appends {event_type}, which its ServiceDescriptor::appends does not list")]
    Undeclared {
        /// The appending service.
        producer: &'static str,
        /// The type it tried to append.
        event_type: String,
    },
    /// A stored row does not decode (corrupt metadata).
    #[error("stored event {position} does not decode: {reason}")]
    Corrupt {
        /// Its position.
        position: i64,
        /// What failed.
        reason: String,
    },
    /// The database said no.
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    /// Migrations failed.
    #[error("migration: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
}

/// Handle to the event store (cheap to clone: a pool inside).
#[derive(Clone, Debug)]
pub struct EventStore {
    pool: PgPool,
    /// Wake-ups for the projection runners, sent after each append commits.
    wakeups: Arc<Wakeups>,
    /// When a service's context holds this store: who appends through it, and the only
    /// types it may append (see [`EventStore::declaring`]).
    declared: Option<Declared>,
}

/// A service's declared appends, checked on every append through its store.
#[derive(Clone, Copy, Debug)]
struct Declared {
    producer: &'static str,
    appends: &'static [&'static str],
}

impl EventStore {
    /// Connects a pool to `url`.
    pub async fn connect(url: &str, max_connections: u32) -> Result<Self, StoreError> {
        let options = PgConnectOptions::from_str(url)?.application_name("ghost");
        let pool = PgPoolOptions::new()
            .max_connections(max_connections)
            .acquire_timeout(Duration::from_secs(10))
            // No ping before every query (sqlx's default): it doubled the round trips of a
            // turn. A connection the server dropped fails its next query instead, which
            // every caller already treats as transient (retried or redelivered), and sqlx
            // then discards it.
            .test_before_acquire(false)
            .connect_with(options)
            .await?;
        Ok(Self::from_pool(pool))
    }

    /// Wraps an existing pool.
    pub fn from_pool(pool: PgPool) -> Self {
        Self {
            pool,
            wakeups: Arc::default(),
            declared: None,
        }
    }

    /// The same store for `producer`, which may append only the types in `appends` (its
    /// `ServiceDescriptor::appends`): any other is [`StoreError::Undeclared`], so a service
    /// that starts appending a new type without saying so fails its tests.
    pub fn declaring(&self, producer: &'static str, appends: &'static [&'static str]) -> Self {
        Self {
            declared: Some(Declared { producer, appends }),
            ..self.clone()
        }
    }

    /// Refuses events of a type the store's service does not declare.
    fn check_declared(&self, events: &[crate::envelope::NewEvent]) -> Result<(), StoreError> {
        let Some(d) = self.declared else {
            return Ok(());
        };
        match events
            .iter()
            .find(|e| !d.appends.contains(&e.event_type.as_str()))
        {
            Some(e) => Err(StoreError::Undeclared {
                producer: d.producer,
                event_type: e.event_type.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Wakes the projection runners for what an append stored (new events only; a
    /// redelivery's copies were announced when they were stored).
    fn woken_by<'a>(&self, outcomes: impl IntoIterator<Item = &'a AppendOutcome>) {
        self.wakeups.committed(
            &self.pool,
            outcomes
                .into_iter()
                .filter(|o| !o.duplicate)
                .flat_map(|o| o.events.iter()),
        );
    }

    /// Announces appends only of the types `wakes` names, on this store and its clones.
    /// For a process that knows every projection runner of the database (the `ghost`
    /// binary): a wake-up for types no runner wakes on signals every listening backend
    /// and every runner, each only to skip it. The first filter set stays.
    pub fn announce_only(&self, wakes: WakeFilter) {
        self.wakeups.announce_only(wakes);
    }

    /// The pool, for projections and read models living in the same database.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Applies the repository's migrations (idempotent).
    pub async fn migrate(&self) -> Result<(), StoreError> {
        sqlx::migrate!("./migrations").run(&self.pool).await?;
        Ok(())
    }

    /// The repository's migrations this database has not applied yet, as
    /// `version_description` (all of them on a database never migrated).
    pub async fn pending_migrations(&self) -> Result<Vec<String>, StoreError> {
        let applied: Vec<i64> =
            match sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE success")
                .fetch_all(&self.pool)
                .await
            {
                Ok(v) => v,
                // 42P01: no migrations table yet.
                Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("42P01") => Vec::new(),
                Err(e) => return Err(e.into()),
            };
        Ok(sqlx::migrate!("./migrations")
            .iter()
            .filter(|m| !applied.contains(&m.version))
            .map(|m| format!("{}_{}", m.version, m.description))
            .collect())
    }

    /// Whether the database answers.
    pub async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }
}

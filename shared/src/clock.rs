//! The one clock of the system (issue 45): the wall clock plus an offset kept in Postgres
//! (`ghost_clock`, migration 0121), the same one `ghost_now()` reads for every event's
//! `recorded_at`. Recency, `about_time`, summaries, interest decay, mood and reminders read
//! it, so an evaluation that moves it forward (`clock.simulated: true`, then
//! `POST /api/clock/advance`) lets a week pass in minutes for every service at once.
//!
//! Time limits between machines and people stay on the real clock: model and HTTP timeouts,
//! retries, a LINE reply token's freshness. Those are about how long something takes, not
//! about when it happened.
//!
//! A process keeps the offset in memory and reads it again at most once a second, in the
//! background, when asked for the time ([`Clock::now`] never waits on the database); the
//! process that advances the clock knows the new offset at once.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use sqlx::PgPool;

/// How old the offset in memory may be before it is read again.
const REFRESH: Duration = Duration::from_secs(1);

/// The longest step one advance may take (a year): a typo costs a year, not a century.
pub const MAX_ADVANCE_SECS: f64 = 366.0 * 86_400.0;

/// Why the clock could not be moved.
#[derive(Debug, thiserror::Error)]
pub enum ClockError {
    /// The clock is the system's (`clock.simulated` is off).
    #[error("the clock is not simulated (clock.simulated is false): it cannot be moved")]
    NotSimulated,
    /// A step that is not a positive number of seconds, or longer than a year.
    #[error("an advance must be more than 0 and at most {MAX_ADVANCE_SECS} seconds, got {0}")]
    InvalidStep(f64),
    /// Postgres.
    #[error("clock: {0}")]
    Database(#[from] sqlx::Error),
}

/// The system's clock as this process sees it (cheap to clone).
#[derive(Clone, Debug)]
pub struct Clock {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    pool: Option<PgPool>,
    simulated: bool,
    /// The offset in microseconds.
    offset_micros: AtomicI64,
    /// When the offset was last read.
    read_at: Mutex<Instant>,
    refreshing: AtomicBool,
}

impl Clock {
    /// The wall clock alone, for what runs without a database (probes, unit tests).
    pub fn system() -> Self {
        Self {
            inner: Arc::new(Inner {
                pool: None,
                simulated: false,
                offset_micros: AtomicI64::new(0),
                read_at: Mutex::new(Instant::now()),
                refreshing: AtomicBool::new(false),
            }),
        }
    }

    /// The clock of `pool`'s database, its offset read now; one per database and process.
    /// `simulated` (from `clock.simulated`) says whether it may be moved.
    pub async fn of(pool: &PgPool, simulated: bool) -> Result<Self, sqlx::Error> {
        type Clocks = Mutex<HashMap<(String, bool), Clock>>;
        static CLOCKS: OnceLock<Clocks> = OnceLock::new();
        let options = pool.connect_options();
        let key = (
            format!(
                "{}:{}/{}",
                options.get_host(),
                options.get_port(),
                options.get_database().unwrap_or_default()
            ),
            simulated,
        );
        let known = CLOCKS
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
            .cloned();
        if let Some(clock) = known {
            return Ok(clock);
        }
        let offset = read_offset(pool).await?;
        let clock = Self {
            inner: Arc::new(Inner {
                pool: Some(pool.clone()),
                simulated,
                offset_micros: AtomicI64::new(offset),
                read_at: Mutex::new(Instant::now()),
                refreshing: AtomicBool::new(false),
            }),
        };
        let mut clocks = CLOCKS
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        Ok(clocks.entry(key).or_insert(clock).clone())
    }

    /// Now, on the system's clock.
    pub fn now(&self) -> DateTime<Utc> {
        self.refresh_if_stale();
        Utc::now() + chrono::Duration::microseconds(self.offset_micros())
    }

    /// Now as Unix seconds (what memory's decay formulas take).
    pub fn now_unix(&self) -> f64 {
        self.now().timestamp_micros() as f64 / 1e6
    }

    /// Whether it may be moved.
    pub fn simulated(&self) -> bool {
        self.inner.simulated
    }

    /// How far ahead of the wall clock it is, in seconds.
    pub fn offset_secs(&self) -> f64 {
        self.offset_micros() as f64 / 1e6
    }

    fn offset_micros(&self) -> i64 {
        self.inner.offset_micros.load(Ordering::Relaxed)
    }

    /// Moves the clock forward by `secs` for every process on this database; the new now.
    pub async fn advance(&self, secs: f64) -> Result<DateTime<Utc>, ClockError> {
        if !self.inner.simulated {
            return Err(ClockError::NotSimulated);
        }
        if !(secs.is_finite() && secs > 0.0 && secs <= MAX_ADVANCE_SECS) {
            return Err(ClockError::InvalidStep(secs));
        }
        let pool = self.inner.pool.as_ref().ok_or(ClockError::NotSimulated)?;
        let offset: f64 = sqlx::query_scalar(
            "UPDATE ghost_clock SET offset_secs = offset_secs + $1 RETURNING offset_secs",
        )
        .bind(secs)
        .fetch_one(pool)
        .await?;
        self.set(micros(offset));
        Ok(self.now())
    }

    fn set(&self, offset: i64) {
        // Never backwards, whatever order reads come back in.
        self.inner
            .offset_micros
            .fetch_max(offset, Ordering::Relaxed);
        *self.inner.read_at.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    }

    /// Reads the offset again in the background when it is older than [`REFRESH`] (and a
    /// runtime is there to do it).
    fn refresh_if_stale(&self) {
        let Some(pool) = &self.inner.pool else { return };
        let stale = self
            .inner
            .read_at
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .elapsed()
            > REFRESH;
        if !stale || self.inner.refreshing.swap(true, Ordering::AcqRel) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.inner.refreshing.store(false, Ordering::Release);
            return;
        };
        let (clock, pool) = (self.clone(), pool.clone());
        runtime.spawn(async move {
            match read_offset(&pool).await {
                Ok(offset) => clock.set(offset),
                // The database is away: the offset in memory holds until it is back (and
                // is not asked for again before the next second).
                Err(e) => {
                    tracing::debug!(error = %e, "clock offset not read");
                    clock.set(clock.offset_micros());
                }
            }
            clock.inner.refreshing.store(false, Ordering::Release);
        });
    }
}

async fn read_offset(pool: &PgPool) -> Result<i64, sqlx::Error> {
    let offset: f64 = sqlx::query_scalar("SELECT offset_secs FROM ghost_clock")
        .fetch_optional(pool)
        .await?
        .unwrap_or(0.0);
    Ok(micros(offset))
}

fn micros(secs: f64) -> i64 {
    (secs * 1e6).round() as i64
}

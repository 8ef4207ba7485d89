//! Appending: one statement per call (`ghost_append`, migration 0003) that checks
//! idempotency and the expected version, inserts, queues outbox rows and notifies readers.

use serde::{Deserialize, Serialize};
use serde_json::json;
use sqlx::Row;

use super::{read::row_to_appended, EventStore, StoreError};
use crate::envelope::NewEvent;
use crate::envelope::RecordedEvent;

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

impl ExpectedVersion {
    /// The encoding `ghost_append` takes: -1 any, 0 no stream, n exact.
    pub(super) fn as_sql(self) -> i32 {
        match self {
            ExpectedVersion::Any => -1,
            ExpectedVersion::NoStream => 0,
            ExpectedVersion::Exact(v) => v.max(0),
        }
    }
}

/// The result of an append.
#[derive(Debug, Clone)]
pub struct AppendOutcome {
    /// The events as stored (the earlier copies when `duplicate`).
    pub events: Vec<RecordedEvent>,
    /// True when every event already existed: nothing was written.
    pub duplicate: bool,
}

/// A write that commits with an append, in the append's own statement: one round trip and
/// one commit instead of two, and no moment at which one is stored without the other.
#[derive(Debug, Clone, Copy)]
pub struct AlsoWritten<'a> {
    /// A data-modifying statement (run as a `WITH` query) that may read the append's rows
    /// as `appended` (`ghost_append`'s columns, `duplicate` included) and `param` as
    /// `{param}` (replaced by its placeholder).
    pub sql: &'static str,
    /// Its one parameter.
    pub param: &'a serde_json::Value,
}

/// What a session's next turn checks before it is appended ([`EventStore::append_turn`]):
/// the newest of the session's events that is not one of `not_turn` must end a turn (one
/// of `ends_turn`), or be older than `running` (a turn left hanging).
#[derive(Debug, Clone, Copy)]
pub struct TurnGuard<'a> {
    /// Event types that end a turn.
    pub ends_turn: &'a [&'a str],
    /// Event types that land in a session without being part of a turn.
    pub not_turn: &'a [&'a str],
    /// How long a turn may run before the next one may start anyway.
    pub running: std::time::Duration,
}

/// Where an append goes: at an expected version, or as a session's next turn.
#[derive(Debug, Clone, Copy)]
enum AppendAt<'a> {
    Version(ExpectedVersion),
    NextTurn(TurnGuard<'a>),
}

/// How many times an `Any` append retries after losing a race for a version.
const MAX_VERSION_RETRIES: usize = 16;

const UNIQUE_VIOLATION: &str = "23505";
const EVENT_ID_CONSTRAINT: &str = "events_event_id_key";
const VERSION_CONFLICT: &str = "GH001";
const PARTIAL_DUPLICATE: &str = "GH002";
const TURN_RUNNING: &str = "GH003";

/// The payload and metadata columns of an append's result: only a duplicate's, which may
/// differ from what was sent; a new event's are what the caller has (see
/// `read::row_to_appended`).
pub(super) const SENT_BACK_ONLY_WHEN_STORED: &str =
    "CASE WHEN duplicate THEN payload END AS payload, CASE WHEN duplicate THEN metadata END AS metadata";

/// The events as `ghost_append` takes them (a JSON array).
pub(super) fn events_json(events: &[NewEvent]) -> serde_json::Value {
    serde_json::Value::Array(
        events
            .iter()
            .map(|e| {
                json!({
                    "event_id": e.event_id,
                    "event_type": e.event_type,
                    "schema_version": e.schema_version,
                    "payload": e.payload,
                    "metadata": e.metadata,
                })
            })
            .collect(),
    )
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
        self.append_with(stream, expected, events, None).await
    }

    /// Appends like [`Self::append`], and runs `also` in the same statement: it commits
    /// with the events or not at all (a conflict or a retry rolls both back).
    pub async fn append_with(
        &self,
        stream: &str,
        expected: ExpectedVersion,
        events: &[NewEvent],
        also: Option<AlsoWritten<'_>>,
    ) -> Result<AppendOutcome, StoreError> {
        self.append_call(stream, AppendAt::Version(expected), events, also)
            .await
    }

    /// Appends a session's next turn: at the stream's end, unless the session is mid-turn
    /// ([`TurnGuard`]), checked in the append's own statement (`ghost_append_turn`). A
    /// running turn, or another append that got there first, is
    /// [`StoreError::TurnRunning`].
    pub async fn append_turn(
        &self,
        stream: &str,
        guard: TurnGuard<'_>,
        events: &[NewEvent],
        also: Option<AlsoWritten<'_>>,
    ) -> Result<AppendOutcome, StoreError> {
        self.append_call(stream, AppendAt::NextTurn(guard), events, also)
            .await
    }

    async fn append_call(
        &self,
        stream: &str,
        at: AppendAt<'_>,
        events: &[NewEvent],
        also: Option<AlsoWritten<'_>>,
    ) -> Result<AppendOutcome, StoreError> {
        if events.is_empty() {
            return Err(StoreError::Empty);
        }
        self.check_declared(events)?;
        let body = events_json(events);
        let columns = format!(
            "position, tx_id, event_id, stream, version, event_type, schema_version, \
             {SENT_BACK_ONLY_WHEN_STORED}, recorded_at, duplicate"
        );
        // $1 the stream, $2 the events, then the call's own, then `also`'s.
        let (call, next) = match at {
            AppendAt::Version(_) => ("ghost_append($1, $3, $2)", 4),
            AppendAt::NextTurn(_) => ("ghost_append_turn($1, $2, $3, $4, $5)", 6),
        };
        let sql = match also {
            None => format!("SELECT {columns} FROM {call}"),
            Some(also) => format!(
                "WITH appended AS MATERIALIZED (SELECT * FROM {call}), \
                 also_written AS ({}) SELECT {columns} FROM appended",
                also.sql.replace("{param}", &format!("${next}"))
            ),
        };
        let expected = match at {
            AppendAt::Version(expected) => expected,
            // What a conflict would report, were one possible here (it is `TurnRunning`).
            AppendAt::NextTurn(_) => ExpectedVersion::Any,
        };
        let mut attempts = 0;
        loop {
            attempts += 1;
            let mut query = sqlx::query(&sql).bind(stream).bind(&body);
            query = match at {
                AppendAt::Version(expected) => query.bind(expected.as_sql()),
                AppendAt::NextTurn(guard) => query
                    .bind(guard.ends_turn)
                    .bind(guard.not_turn)
                    .bind(guard.running.as_secs_f64()),
            };
            if let Some(also) = also {
                query = query.bind(also.param);
            }
            let result = query.fetch_all(&self.pool).await;
            let rows = match result {
                Ok(rows) => rows,
                Err(sqlx::Error::Database(db)) => {
                    let code = db.code().map(|c| c.into_owned()).unwrap_or_default();
                    let turn_taken = code == TURN_RUNNING
                        || code == VERSION_CONFLICT
                        || (code == UNIQUE_VIOLATION
                            && db.constraint() != Some(EVENT_ID_CONSTRAINT));
                    if matches!(at, AppendAt::NextTurn(_)) && turn_taken {
                        return Err(StoreError::TurnRunning {
                            stream: stream.to_owned(),
                        });
                    }
                    match code.as_str() {
                        VERSION_CONFLICT => {
                            let actual = self.stream_version(stream).await?;
                            return Err(StoreError::Conflict {
                                stream: stream.to_owned(),
                                expected,
                                actual,
                            });
                        }
                        PARTIAL_DUPLICATE => {
                            return Err(StoreError::PartialDuplicate {
                                stream: stream.to_owned(),
                            })
                        }
                        // A concurrent writer stored the same ids: the next attempt finds them.
                        UNIQUE_VIOLATION if db.constraint() == Some(EVENT_ID_CONSTRAINT) => {}
                        // A concurrent writer took the version.
                        UNIQUE_VIOLATION
                            if expected == ExpectedVersion::Any
                                && attempts < MAX_VERSION_RETRIES => {}
                        UNIQUE_VIOLATION => {
                            let actual = self.stream_version(stream).await?;
                            return Err(StoreError::Conflict {
                                stream: stream.to_owned(),
                                expected,
                                actual,
                            });
                        }
                        _ => return Err(StoreError::Database(sqlx::Error::Database(db))),
                    }
                    if attempts >= MAX_VERSION_RETRIES {
                        let actual = self.stream_version(stream).await?;
                        return Err(StoreError::Conflict {
                            stream: stream.to_owned(),
                            expected,
                            actual,
                        });
                    }
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let duplicate = match rows.first() {
                Some(r) => r.try_get::<bool, _>("duplicate")?,
                None => false,
            };
            let events = rows
                .iter()
                .map(|row| row_to_appended(row, duplicate, events))
                .collect::<Result<Vec<_>, _>>()?;
            let outcome = AppendOutcome { events, duplicate };
            self.woken_by([&outcome]);
            return Ok(outcome);
        }
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

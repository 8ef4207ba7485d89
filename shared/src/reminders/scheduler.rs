//! The reminder scheduler, shared by every instance that runs it: a pass claims the due
//! rows of the `reminders` projection (`due_at <= ghost_now()`, the system's one clock, so
//! a simulated clock lets days pass in seconds) with `FOR UPDATE SKIP LOCKED`, leases them
//! on the real clock, and appends one `ReminderDue` per occurrence. No timer lives only in
//! a process's memory: the row is the schedule, and a claim lost with its process is taken
//! again when its lease ends.
//!
//! Exactly once: the `ReminderDue` id derives from the reminder and the occurrence
//! ([`due_event_id`]), so a second claim of the same occurrence (two instances, a lease run
//! out, a crash between append and projection) appends nothing; delivery keys its one
//! outcome on that event.

use std::time::Duration;

use chrono::{DateTime, Utc};
use tracing::{debug, warn};
use uuid::Uuid;

use super::events::{due_event_id, ReminderDue};
use crate::config::ReminderSettings;
use crate::envelope::{session_stream, EventMetadata, NewEvent};
use crate::events::{Channel, ReplyTarget};
use crate::service::ServiceContext;
use crate::store::{AppendRequest, ExpectedVersion};

/// Why a pass failed (it is tried again at the next poll).
#[derive(Debug, thiserror::Error)]
pub enum SchedulerError {
    /// Postgres.
    #[error("reminder claim: {0}")]
    Database(#[from] sqlx::Error),
    /// Appending an occurrence.
    #[error("reminder append: {0}")]
    Append(String),
}

/// A claimed row.
#[derive(Debug, sqlx::FromRow)]
struct Claimed {
    reminder_id: Uuid,
    person: String,
    session_id: String,
    channel: String,
    target: Option<serde_json::Value>,
    text: String,
    due_at: DateTime<Utc>,
    time_zone: String,
    scheduled_event_id: Uuid,
    now: DateTime<Utc>,
}

/// The scheduler of one process.
pub struct Scheduler {
    ctx: ServiceContext,
    settings: ReminderSettings,
}

impl Scheduler {
    /// A scheduler appending as `ctx`'s service.
    pub fn new(ctx: ServiceContext) -> Self {
        let settings = ctx.config.ghost.reminders.clone();
        Self { ctx, settings }
    }

    /// Runs passes until the task is aborted: one per poll interval, and the next at once
    /// while a pass claims a full batch (many due in the same minute must not wait a poll
    /// per batch and come late).
    pub async fn run(self) -> Result<(), SchedulerError> {
        let poll = Duration::from_millis(self.settings.poll_interval_ms);
        loop {
            match self.pass_claimed().await {
                Ok((claimed, n)) => {
                    if n > 0 {
                        debug!(occurrences = n, "reminders came due");
                    }
                    if claimed as i64 >= self.settings.claim_batch {
                        continue;
                    }
                }
                Err(e) => warn!(error = %e, "reminder scheduler pass failed"),
            }
            tokio::time::sleep(poll).await;
        }
    }

    /// One pass: claims what is due and appends its occurrences; how many it appended.
    pub async fn pass(&self) -> Result<usize, SchedulerError> {
        Ok(self.pass_claimed().await?.1)
    }

    /// One pass: how many rows it claimed, and how many occurrences it appended.
    async fn pass_claimed(&self) -> Result<(usize, usize), SchedulerError> {
        let pool = self.ctx.store().pool();
        // The claim commits before the appends: the lease, not a held lock, keeps other
        // instances off while this one appends (a lock held over an append would hold a
        // connection per claimer for the append's duration).
        let claimed: Vec<Claimed> = sqlx::query_as(
            "WITH due AS ( \
               SELECT reminder_id FROM reminders \
               WHERE status = 'scheduled' AND due_at <= ghost_now() \
                 AND (claimed_until IS NULL OR claimed_until < clock_timestamp()) \
               ORDER BY due_at LIMIT $1 FOR UPDATE SKIP LOCKED) \
             UPDATE reminders r \
               SET claimed_until = clock_timestamp() + make_interval(secs => $2) \
             FROM due WHERE r.reminder_id = due.reminder_id \
             RETURNING r.reminder_id, r.person, r.session_id, r.channel, r.target, r.text, \
               r.due_at, r.time_zone, r.scheduled_event_id, ghost_now() AS now",
        )
        .bind(self.settings.claim_batch)
        .bind(self.settings.lease_secs as f64)
        .fetch_all(pool)
        .await?;
        let rows = claimed.len();
        if rows == 0 {
            return Ok((0, 0));
        }
        crate::fault::point("reminders.after_claim");
        // One transaction for the batch: many due in the same minute are one commit, not
        // one each (10,000 at once came 19 a second, most of them late).
        let requests = claimed
            .into_iter()
            .map(|row| self.due_request(row))
            .collect::<Result<Vec<_>, _>>()?;
        let results = self
            .ctx
            .log
            .append_batch(&requests)
            .await
            .map_err(|e| SchedulerError::Append(e.to_string()))?;
        let mut appended = 0;
        for result in results {
            match result {
                Ok(outcome) => appended += usize::from(!outcome.duplicate),
                // Its lease runs out and a later pass claims it again.
                Err(e) => warn!(error = %e, "a reminder's occurrence was not appended"),
            }
        }
        Ok((rows, appended))
    }

    /// The append of the occurrence's `ReminderDue` (nothing is stored when it is already).
    fn due_request(&self, row: Claimed) -> Result<AppendRequest, SchedulerError> {
        let late_by_secs = (row.now - row.due_at).num_seconds().max(0);
        let channel: Channel =
            serde_json::from_value(serde_json::Value::String(row.channel)).unwrap_or(Channel::Http);
        let target: Option<ReplyTarget> = row.target.and_then(|t| serde_json::from_value(t).ok());
        let due = ReminderDue {
            reminder_id: row.reminder_id,
            person: row.person,
            session_id: row.session_id.clone(),
            channel,
            target,
            text: row.text,
            occurrence_at: row.due_at,
            late_by_secs,
            lateness: self.settings.lateness().classify(late_by_secs),
            time_zone: row.time_zone,
        };
        let (traceparent, tracestate) = crate::telemetry::current_trace_headers();
        let metadata = EventMetadata {
            correlation_id: row.scheduled_event_id,
            causation_id: Some(row.scheduled_event_id),
            traceparent,
            tracestate,
            service: self.ctx.service.to_owned(),
        };
        let event = NewEvent::new(due_event_id(row.reminder_id, row.due_at), &due, metadata)
            .map_err(|e| SchedulerError::Append(e.to_string()))?;
        Ok(AppendRequest {
            stream: session_stream(&row.session_id),
            expected: ExpectedVersion::Any,
            events: vec![event],
        })
    }
}

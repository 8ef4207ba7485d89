//! The `reminders` projection: one row per reminder, its next due time kept from the
//! events (a rebuild gives the same rows: the next occurrence after a `ReminderDue` is
//! computed from the event's own `recorded_at`, never from the clock at apply time).

use chrono::{DateTime, Utc};
use sqlx::{Postgres, Transaction};
use uuid::Uuid;

use super::events::{
    ReminderCancelled, ReminderChanged, ReminderDue, ReminderQuietHoursSet, ReminderScheduled,
    ReminderZoneSet,
};
use crate::envelope::RecordedEvent;
use crate::projector::{Projection, ProjectionError};

/// Its name (`ghost projections rebuild reminders`).
pub const NAME: &str = "reminders";

crate::event_enum! {
    /// What the projection applies.
    pub enum ReminderChange {
        ReminderScheduled, ReminderChanged, ReminderCancelled, ReminderDue, ReminderZoneSet,
        ReminderQuietHoursSet
    }
}

/// The `reminders` table's writer.
pub struct RemindersProjection;

#[async_trait::async_trait]
impl Projection for RemindersProjection {
    fn name(&self) -> &'static str {
        NAME
    }

    /// The scheduler reads the rows: a new or moved reminder may be due within a poll.
    fn wakes_on(&self, event_type: &str) -> bool {
        ReminderChange::takes(event_type)
    }

    async fn apply(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        event: &RecordedEvent,
    ) -> Result<(), ProjectionError> {
        let change =
            ReminderChange::decode(event).map_err(|e| ProjectionError::decode(event, e))?;
        match change {
            None => Ok(()),
            Some(ReminderChange::ReminderScheduled(s)) => scheduled(tx, event, &s).await,
            Some(ReminderChange::ReminderZoneSet(z)) => {
                // The latest by position wins, also when a rebuild replays them.
                sqlx::query(
                    "INSERT INTO reminder_zones (person, time_zone, set_at, position) \
                     VALUES ($1, $2, $3, $4) ON CONFLICT (person) DO UPDATE \
                     SET time_zone = $2, set_at = $3, position = $4 \
                     WHERE reminder_zones.position < $4",
                )
                .bind(&z.person)
                .bind(&z.time_zone)
                .bind(event.recorded_at)
                .bind(event.position)
                .execute(&mut **tx)
                .await?;
                Ok(())
            }
            Some(ReminderChange::ReminderQuietHoursSet(q)) => {
                super::own_settings::apply_quiet_hours(tx, event, &q).await
            }
            Some(ReminderChange::ReminderChanged(c)) => {
                sqlx::query(
                    "UPDATE reminders SET due_at = $2, first_at = $2, rule = $3, \
                     claimed_until = NULL WHERE reminder_id = $1 AND status = 'scheduled'",
                )
                .bind(c.reminder_id)
                .bind(c.due_at)
                .bind(&c.rule)
                .execute(&mut **tx)
                .await?;
                Ok(())
            }
            Some(ReminderChange::ReminderCancelled(c)) => {
                sqlx::query(
                    "UPDATE reminders SET status = 'cancelled', due_at = NULL, \
                     claimed_until = NULL WHERE reminder_id = $1 AND status = 'scheduled'",
                )
                .bind(c.reminder_id)
                .execute(&mut **tx)
                .await?;
                Ok(())
            }
            Some(ReminderChange::ReminderDue(d)) => due(tx, event, &d).await,
        }
    }

    async fn reset(&self, tx: &mut Transaction<'_, Postgres>) -> Result<(), ProjectionError> {
        for table in ["reminders", "reminder_zones", "reminder_quiet_hours"] {
            sqlx::query(&format!("DELETE FROM {table}"))
                .execute(&mut **tx)
                .await?;
        }
        Ok(())
    }
}

async fn scheduled(
    tx: &mut Transaction<'_, Postgres>,
    event: &RecordedEvent,
    s: &ReminderScheduled,
) -> Result<(), ProjectionError> {
    let target = s
        .target
        .as_ref()
        .map(serde_json::to_value)
        .transpose()
        .map_err(|e| ProjectionError::decode(event, e))?;
    sqlx::query(
        "INSERT INTO reminders (reminder_id, person, session_id, channel, target, text, rule, \
         first_at, time_zone, due_at, status, created_at, scheduled_event_id) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $8, 'scheduled', $10, $11) \
         ON CONFLICT (reminder_id) DO NOTHING",
    )
    .bind(s.reminder_id)
    .bind(&s.person)
    .bind(&s.session_id)
    .bind(s.channel.as_str())
    .bind(target)
    .bind(&s.text)
    .bind(&s.rule)
    .bind(s.due_at)
    .bind(&s.time_zone)
    .bind(event.recorded_at)
    .bind(event.event_id)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// An occurrence came due: the row moves to the rule's next occurrence after it (and
/// after the time it was claimed, so one missed while Ghost was down for a week comes
/// back once, not seven times), or is over.
async fn due(
    tx: &mut Transaction<'_, Postgres>,
    event: &RecordedEvent,
    d: &ReminderDue,
) -> Result<(), ProjectionError> {
    /// `rule`, `first_at`, `time_zone`, `due_at`.
    type Schedule = (Option<String>, DateTime<Utc>, String, Option<DateTime<Utc>>);
    let row: Option<Schedule> = sqlx::query_as(
        "SELECT rule, first_at, time_zone, due_at FROM reminders \
             WHERE reminder_id = $1 AND status = 'scheduled' FOR UPDATE",
    )
    .bind(d.reminder_id)
    .fetch_optional(&mut **tx)
    .await?;
    let Some((rule, first_at, zone, due_at)) = row else {
        return Ok(());
    };
    if due_at != Some(d.occurrence_at) {
        return Ok(()); // moved since: the new time stands.
    }
    let next = rule.as_deref().and_then(|rule| {
        let tz = super::parse_zone(&zone).ok()?;
        let after = d.occurrence_at.max(event.recorded_at);
        super::next_after(rule, first_at, tz, after).ok().flatten()
    });
    sqlx::query(
        "UPDATE reminders SET due_at = $2, status = CASE WHEN $2::timestamptz IS NULL \
         THEN 'done' ELSE 'scheduled' END, delivered_count = delivered_count + 1, \
         claimed_until = NULL WHERE reminder_id = $1",
    )
    .bind(d.reminder_id)
    .bind(next)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// A reminder as the API and `/remind list` show it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, sqlx::FromRow)]
pub struct ReminderRow {
    /// Its id.
    pub reminder_id: Uuid,
    /// Whose.
    pub person: String,
    /// Its conversation.
    pub session_id: String,
    /// Its channel.
    pub channel: String,
    /// What to remind of.
    pub text: String,
    /// Its RRULE, when it recurs.
    pub rule: Option<String>,
    /// The time zone its local times are in.
    pub time_zone: String,
    /// When it is next due (`None` once over).
    pub due_at: Option<DateTime<Utc>>,
    /// `scheduled`, `done`, `cancelled`.
    pub status: String,
    /// When it was asked.
    pub created_at: DateTime<Utc>,
}

/// `person`'s reminders still to come, soonest first (what they see: only their own).
pub async fn upcoming(pool: &sqlx::PgPool, person: &str) -> Result<Vec<ReminderRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT reminder_id, person, session_id, channel, text, rule, time_zone, due_at, \
         status, created_at FROM reminders WHERE person = $1 AND status = 'scheduled' \
         ORDER BY due_at, created_at LIMIT 200",
    )
    .bind(person)
    .fetch_all(pool)
    .await
}

/// The time zone `person` set themselves, if they did.
pub async fn zone_set_by(pool: &sqlx::PgPool, person: &str) -> Result<Option<String>, sqlx::Error> {
    sqlx::query_scalar("SELECT time_zone FROM reminder_zones WHERE person = $1")
        .bind(person)
        .fetch_optional(pool)
        .await
}

/// `person`'s time zone: the one they set, else the configuration's.
pub async fn zone_of(
    pool: &sqlx::PgPool,
    settings: &crate::config::ReminderSettings,
    person: &str,
) -> Result<String, sqlx::Error> {
    Ok(zone_set_by(pool, person)
        .await?
        .unwrap_or_else(|| settings.zone_of(person).to_owned()))
}

/// One of `person`'s reminders, by id (`None` when it is someone else's or unknown).
pub async fn one(
    pool: &sqlx::PgPool,
    person: &str,
    reminder_id: Uuid,
) -> Result<Option<ReminderRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT reminder_id, person, session_id, channel, text, rule, time_zone, due_at, \
         status, created_at FROM reminders WHERE person = $1 AND reminder_id = $2",
    )
    .bind(person)
    .bind(reminder_id)
    .fetch_optional(pool)
    .await
}

//! What a person set for their own reminders in a conversation, kept by the `reminders`
//! projection: their quiet hours (`reminder_quiet_hours`, migration 0128), read before the
//! configuration's. (Their time zone sits beside it in `reminder_zones`.)

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use sqlx::{Postgres, Transaction};

use super::events::ReminderQuietHoursSet;
use super::{QuietHours, When};
use crate::config::ReminderSettings;
use crate::envelope::RecordedEvent;
use crate::projector::ProjectionError;

/// Keeps `set` as `person`'s quiet hours: the latest by position wins, also when a rebuild
/// replays them.
pub(super) async fn apply_quiet_hours(
    tx: &mut Transaction<'_, Postgres>,
    event: &RecordedEvent,
    set: &ReminderQuietHoursSet,
) -> Result<(), ProjectionError> {
    sqlx::query(
        "INSERT INTO reminder_quiet_hours (person, quiet_hours, set_at, position) \
         VALUES ($1, $2, $3, $4) ON CONFLICT (person) DO UPDATE \
         SET quiet_hours = $2, set_at = $3, position = $4 \
         WHERE reminder_quiet_hours.position < $4",
    )
    .bind(&set.person)
    .bind(set.quiet_hours.map(|q| q.to_string()))
    .bind(event.recorded_at)
    .bind(event.position)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// `person`'s quiet hours: the ones they set (none when they turned them off), else the
/// configuration's (`reminders.person_quiet_hours`, then `reminders.quiet_hours`).
pub async fn quiet_hours_of(
    pool: &sqlx::PgPool,
    settings: &ReminderSettings,
    person: &str,
) -> Result<Option<QuietHours>, sqlx::Error> {
    let set: Option<Option<String>> =
        sqlx::query_scalar("SELECT quiet_hours FROM reminder_quiet_hours WHERE person = $1")
            .bind(person)
            .fetch_optional(pool)
            .await?;
    Ok(match set {
        // A stored window always parses (it was one when appended); a bad one is no window.
        Some(own) => own.and_then(|q| q.parse().ok()),
        None => settings.quiet_hours_of(person),
    })
}

/// `when` for `person` in zone `tz`, held to the end of their quiet hours ([`quiet_hours_of`])
/// when it is counted from now and would come inside them; with the time asked for when held.
pub async fn hold(
    pool: &sqlx::PgPool,
    settings: &ReminderSettings,
    person: &str,
    when: When,
    tz: Tz,
) -> Result<(When, Option<DateTime<Utc>>), sqlx::Error> {
    Ok(match quiet_hours_of(pool, settings, person).await? {
        Some(quiet) => quiet.hold(when, tz),
        None => (when, None),
    })
}

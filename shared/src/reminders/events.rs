//! Reminder events, all on the conversation's stream (`session-<id>`) the reminder was
//! asked in, so delivery goes back where it came from and a conversation's history shows
//! its reminders.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use ghost_domain::reminders::{Lateness, QuietHours};

use crate::envelope::EventPayload;
use crate::events::{Channel, ReplyTarget};
use crate::reminders::voice::Voice;

/// The step a `ReminderDelivered` or `ReminderMissed` id derives from (with its
/// `ReminderDue`): the two share it, so an occurrence has one outcome.
pub const STEP_OUTCOME: &str = "reminder.outcome";

/// The id of the `ReminderDue` of `reminder_id`'s occurrence at `occurrence_at`: the same
/// for every claim of it, so the store keeps one.
pub fn due_event_id(reminder_id: Uuid, occurrence_at: DateTime<Utc>) -> Uuid {
    crate::ids::derive_event_id(
        reminder_id,
        &format!("reminder.due.{}", occurrence_at.timestamp_micros()),
    )
}

/// A person asked to be reminded (by `/remind`, in words, or through the API).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReminderScheduled {
    /// The reminder (the id of this event).
    pub reminder_id: Uuid,
    /// Whose it is (the speaker who asked): only they see and change it.
    pub person: String,
    /// The conversation it was asked in, and is delivered to.
    pub session_id: String,
    /// The channel of that conversation.
    pub channel: Channel,
    /// Where a platform message goes (absent for HTTP conversations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<ReplyTarget>,
    /// What to remind of.
    pub text: String,
    /// The first time it is due.
    pub due_at: DateTime<Utc>,
    /// For a recurring one, its RFC 5545 RRULE (local times in `time_zone`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// The person's IANA time zone when it was asked.
    pub time_zone: String,
    /// The time asked for, when it fell in the person's quiet hours and `due_at` is their
    /// end instead (only a time counted from now is held).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_from: Option<DateTime<Utc>>,
}

impl EventPayload for ReminderScheduled {
    const EVENT_TYPE: &'static str = "ReminderScheduled";
}

/// A reminder moved (and its rule, when it recurs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReminderChanged {
    /// The reminder.
    pub reminder_id: Uuid,
    /// Whose.
    pub person: String,
    /// Its conversation.
    pub session_id: String,
    /// The new next time.
    pub due_at: DateTime<Utc>,
    /// The rule from then on (`None`: once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// The time asked for, when quiet hours held it to `due_at` (see [`ReminderScheduled`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_from: Option<DateTime<Utc>>,
}

impl EventPayload for ReminderChanged {
    const EVENT_TYPE: &'static str = "ReminderChanged";
}

/// A reminder cancelled: no occurrence after this one is due.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReminderCancelled {
    /// The reminder.
    pub reminder_id: Uuid,
    /// Whose.
    pub person: String,
    /// Its conversation.
    pub session_id: String,
}

impl EventPayload for ReminderCancelled {
    const EVENT_TYPE: &'static str = "ReminderCancelled";
}

/// An occurrence came due on the system's clock and was claimed; the gateway delivers it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReminderDue {
    /// The reminder.
    pub reminder_id: Uuid,
    /// Whose.
    pub person: String,
    /// Its conversation.
    pub session_id: String,
    /// Its channel.
    pub channel: Channel,
    /// Where a platform message goes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<ReplyTarget>,
    /// What to remind of.
    pub text: String,
    /// When this occurrence was due.
    pub occurrence_at: DateTime<Utc>,
    /// How late it was claimed.
    pub late_by_secs: i64,
    /// On time, late (delivered with a note) or missed (dropped, with a notice).
    pub lateness: Lateness,
    /// The person's time zone (the note says the time in it).
    pub time_zone: String,
}

impl EventPayload for ReminderDue {
    const EVENT_TYPE: &'static str = "ReminderDue";
}

/// An occurrence was said: to the platform, or in the HTTP conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReminderDelivered {
    /// The reminder.
    pub reminder_id: Uuid,
    /// Whose.
    pub person: String,
    /// Its conversation.
    pub session_id: String,
    /// Its channel.
    pub channel: Channel,
    /// The occurrence.
    pub occurrence_at: DateTime<Utc>,
    /// Who said it (the persona).
    pub speaker: String,
    /// What was said.
    pub text: String,
    /// Whether it went out late (with a note saying so).
    #[serde(default)]
    pub late: bool,
    /// Whether the persona worded it (its line, then the task) or it was said plainly.
    #[serde(default)]
    pub voice: Voice,
    /// Why it was said plainly, when the persona's line was asked for and did not come.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plain_because: Option<String>,
    /// The platform calls that delivered it (none in an HTTP conversation).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<String>,
}

impl EventPayload for ReminderDelivered {
    const EVENT_TYPE: &'static str = "ReminderDelivered";
}

/// An occurrence was not delivered: too late (a notice was sent instead) or the platform
/// refused it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReminderMissed {
    /// The reminder.
    pub reminder_id: Uuid,
    /// Whose.
    pub person: String,
    /// Its conversation.
    pub session_id: String,
    /// Its channel.
    pub channel: Channel,
    /// The occurrence.
    pub occurrence_at: DateTime<Utc>,
    /// Stable code: `too_late` (past `reminders.max_lateness_secs`), or the delivery's
    /// failure code (`gave_up`, `outcome_unknown`, `no_target`, ...).
    pub code: String,
    /// Short explanation.
    pub message: String,
    /// The notice said instead, if one was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
}

impl EventPayload for ReminderMissed {
    const EVENT_TYPE: &'static str = "ReminderMissed";
}

/// A person set their own time zone (in a conversation): local times they say from then on
/// are read in it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReminderZoneSet {
    /// Whose.
    pub person: String,
    /// The conversation it was said in.
    pub session_id: String,
    /// The IANA zone (`Asia/Tokyo`).
    pub time_zone: String,
}

impl EventPayload for ReminderZoneSet {
    const EVENT_TYPE: &'static str = "ReminderZoneSet";
}

/// A person set their own quiet hours (in a conversation), or turned them off: reminders
/// counted from now and the autonomy loop's messages keep to them from then on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReminderQuietHoursSet {
    /// Whose.
    pub person: String,
    /// The conversation it was said in.
    pub session_id: String,
    /// The window (`22:00-07:00`, local time in their zone), or none: never quiet.
    pub quiet_hours: Option<QuietHours>,
}

impl EventPayload for ReminderQuietHoursSet {
    const EVENT_TYPE: &'static str = "ReminderQuietHoursSet";
}

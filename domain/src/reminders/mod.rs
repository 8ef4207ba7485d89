//! Reminders' pure rules (issue 46): a person's time zone and when a reminder is next due
//! ([`recurrence`], RFC 5545 RRULEs through the `rrule` crate, local times through
//! `chrono-tz`), what a `/remind` command says ([`command`]), what a reminder asked in words
//! comes to ([`words`]), how late is too late ([`lateness`]), and when a person wants quiet
//! ([`quiet`]). No clock is read here: every function takes "now".

pub mod command;
pub mod lateness;
pub mod quiet;
pub mod recurrence;
pub mod words;

pub use command::{parse_remind, RemindCommand, When};
pub use lateness::{Lateness, LatenessPolicy};
pub use quiet::{QuietHours, QuietHoursError};
pub use recurrence::{next_after, parse_zone, validate_rule, zone_named, ReminderRuleError};
pub use words::{understand, Understood};

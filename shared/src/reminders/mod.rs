//! Reminders (issue 46): asked for by people, kept as events, delivered once.
//!
//! - [`events`]: `ReminderScheduled`, `ReminderChanged`, `ReminderCancelled` (what people
//!   asked), `ReminderDue` (an occurrence came due; the scheduler's), `ReminderDelivered` and
//!   `ReminderMissed` (an occurrence's one outcome; the gateway's);
//! - [`own_settings`]: the quiet hours a person set themselves, read before the
//!   configuration's;
//! - [`projection`]: the `reminders` table, written from those events, with each
//!   reminder's next due time;
//! - [`scheduler`]: claims due rows with `FOR UPDATE SKIP LOCKED` on the system's clock
//!   (`ghost_now()`), so several instances share the work and a restart loses nothing, and
//!   appends one `ReminderDue` per occurrence (its id derives from the reminder and the
//!   occurrence: a second claim appends nothing);
//! - [`voice`]: how the gateway asks the persona for a reminder's line (core NATS
//!   request/reply), and what is said when no line comes.
//!
//! The pure rules (time zones, RRULEs, `/remind`, lateness) are `ghost_domain::reminders`.

pub mod events;
pub mod own_settings;
pub mod projection;
pub mod scheduler;
pub mod voice;

pub use ghost_domain::reminders::*;

//! Ghost's pure domain rules: decisions on values, no I/O (no database, bus, network or
//! file), so they are tested as plain functions and every service reads them the same way.
//! `ghost-shared` re-exports each module at its old path (`ghost_shared::affect`, ...).
//!
//! - [`affect`]: the affect trailer a reply ends with, its labels and response policy,
//!   mood constants and the mood state (seed 004);
//! - [`autonomy`]: autonomy's rules: a decision and its validation, a capability's
//!   result, what the persona cares about (seed 001);
//! - [`http_url`]: which URLs are fetched or handed on;
//! - [`masking`]: the masking rules (`config/masking.yaml`) and their engine: what is
//!   replaced before text reaches the cloud or a log line (issue 11);
//! - [`memory`]: long-term memory's rules: the memory, the write plan and its validation,
//!   interest, the retrieval plan (seed 001);
//! - [`reminders`]: reminders' rules: time zones, recurrence (RRULE), the `/remind`
//!   command, lateness (issue 46);
//! - [`routing`]: the routing vocabulary (routes, decision sources and origins, notices;
//!   seed 002);
//! - [`short_memory`]: which history lines a prompt gets beside the session's summary, so
//!   no exchange falls between them.

pub mod affect;
pub mod autonomy;
pub mod http_url;
pub mod masking;
pub mod memory;
pub mod reminders;
pub mod routing;
pub mod short_memory;

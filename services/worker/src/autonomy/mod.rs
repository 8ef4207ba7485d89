//! Autonomy in the worker (seed 001 phase A, B-3): deliberation on a schedule and on demand,
//! and the action a decision names.
//!
//! - [`focus`]: the deliberation input, collected apart from formatting, ordered by
//!   `PersonaDeliberationFocus`;
//! - [`deliberate`]: `AutonomyTickRequested` → `ActionDecided` or `ActionDropped`;
//! - [`act`]: `ActionDecided` → `ActionStarted`, `ActionResultRecorded` (once per decision);
//! - [`capabilities`]: the capability trait, `web_access` and `agent_delegate`;
//! - [`agent`]: the command-line agent as a child process;
//! - [`schedule`]: the `autonomy.interval_secs` ticker.

pub mod act;
pub mod agent;
pub mod capabilities;
pub mod deliberate;
pub mod focus;
pub mod schedule;

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

use ghost_shared::autonomy::activity::{publish_activity, Activity};
use ghost_shared::envelope::RecordedEvent;
use ghost_shared::service::ServiceContext;

/// Publishes `event` on `autonomy.activity` as `kind`, its payload as the detail.
pub(crate) async fn report(ctx: &ServiceContext, kind: &str, persona: &str, event: &RecordedEvent) {
    report_detail(ctx, kind, persona, event, event.payload.clone()).await;
}

/// Publishes `event` on `autonomy.activity` as `kind` with `detail`.
pub(crate) async fn report_detail(
    ctx: &ServiceContext,
    kind: &str,
    persona: &str,
    event: &RecordedEvent,
    detail: serde_json::Value,
) {
    publish_activity(
        ctx.bus(),
        &Activity {
            kind: kind.into(),
            persona: persona.into(),
            event_id: event.event_id,
            detail,
            recorded_at: Some(event.recorded_at),
        },
    )
    .await;
}

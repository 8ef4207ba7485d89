//! The schedule: every `autonomy.interval_secs` one `AutonomyTickRequested` whose id derives
//! from the persona and the time slot, so several workers running the ticker still make
//! one tick per slot.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ghost_shared::autonomy::events::TickTrigger;
use ghost_shared::autonomy::tick::{request_tick, scheduled_tick_id};
use ghost_shared::service::ServiceContext;

/// Runs the ticker until its task is aborted (`interval_secs` 0: returns at once).
pub async fn run_schedule(ctx: ServiceContext, persona: String) {
    let interval = ctx.config.ghost.autonomy.interval_secs;
    if interval == 0 {
        return;
    }
    let mut ticker = tokio::time::interval(Duration::from_secs(interval));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    // The first tick fires at once: the first deliberation comes one interval after start.
    ticker.tick().await;
    loop {
        ticker.tick().await;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        let id = scheduled_tick_id(&persona, now / interval);
        if let Err(e) =
            request_tick(&ctx.log, id, &persona, TickTrigger::Schedule, ctx.service).await
        {
            tracing::warn!(error = %e, "scheduled autonomy tick not recorded");
        }
    }
}

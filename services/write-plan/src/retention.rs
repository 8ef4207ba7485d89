//! The retention of raw conversation text, carried out (seed 002; what and why:
//! `ghost_shared::store::EventStore::expire_raw_text`): every
//! `memory.retention_check_secs`, each channel's lines older than its
//! `memory.raw_text_retention_days` (on the service clock) are redacted. Each run is its own
//! request (the id the redacted events name), logged with its counts.

use std::time::Duration;

use tracing::{info, warn};
use uuid::Uuid;

use ghost_shared::service::ServiceContext;
use ghost_shared::store::Redaction;

/// Redacts what is past its retention now, channel by channel; what each changed.
pub async fn expire_once(ctx: &ServiceContext) -> Vec<(String, Redaction)> {
    let now = ctx.clock().now();
    let mut changed = Vec::new();
    for (channel, days) in &ctx.config.ghost.memory.raw_text_retention_days {
        let before = now - Duration::from_secs(u64::from(*days) * 86_400);
        let request = Uuid::new_v4();
        match ctx.store().expire_raw_text(channel, before, request).await {
            Ok(done) if done.event_ids.is_empty() => {}
            Ok(done) => {
                info!(%channel, days, %request, redacted = ?done.redacted, scrubbed = ?done.scrubbed,
                      "raw conversation text past its retention redacted");
                changed.push((channel.clone(), done));
            }
            // The next run tries again; nothing is half done (one transaction).
            Err(e) => warn!(%channel, error = %e, "retention could not run"),
        }
    }
    changed
}

/// Runs [`expire_once`] every `memory.retention_check_secs`, the first time one period
/// after start.
pub async fn run(ctx: ServiceContext) -> Result<(), std::convert::Infallible> {
    let every = Duration::from_secs(ctx.config.ghost.memory.retention_check_secs);
    loop {
        tokio::time::sleep(every).await;
        expire_once(&ctx).await;
    }
}

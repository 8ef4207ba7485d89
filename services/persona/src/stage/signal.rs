//! Announcing on the stage's core subject (may be lost; watchers read lines from the store).

use bytes::Bytes;
use tracing::debug;

use ghost_shared::bus::Bus;
use ghost_shared::stage_signal::{stage_subject, StageSignal};

/// Publishes `signal` for `stage_id`; a failure only costs a watcher's promptness.
pub async fn announce(bus: &Bus, stage_id: &str, signal: &StageSignal) {
    let Ok(body) = serde_json::to_vec(signal) else {
        return;
    };
    if let Err(e) = bus
        .publish_core(stage_subject(bus, stage_id), Bytes::from(body))
        .await
    {
        debug!(error = %e, stage_id, "stage signal not published");
    }
}

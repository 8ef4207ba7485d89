//! `ghost projections rebuild|retry <name>`: a projection's runner on the configured store,
//! found by name among the services' descriptors.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Result};
use ghost_shared::config::Config;
use ghost_shared::projector::ProjectionRunner;

use crate::doctor::require_infrastructure;
use crate::serve::migrate;
use crate::stack::{projection_by_name, projection_names};

/// The runner of projection `name` on the configured store (migrated).
async fn runner_for(config: &Config, name: &str) -> Result<ProjectionRunner> {
    let Some(projection) = projection_by_name(name, config) else {
        bail!(
            "unknown projection {name}; known: {}",
            projection_names(config).join(", ")
        );
    };
    require_infrastructure(config).await?;
    let store = migrate(config).await?;
    let p = &config.ghost.projections;
    Ok(ProjectionRunner::new(
        store,
        Arc::clone(&projection),
        p.batch_size,
        Duration::from_millis(p.poll_interval_ms),
    ))
}

/// `ghost projections rebuild <name>`: empties it and replays every event.
pub async fn rebuild(config: &Config, name: &str) -> Result<()> {
    let runner = runner_for(config, name).await?;
    let n = runner.rebuild().await?;
    println!("rebuilt {name} from {n} events");
    Ok(())
}

/// `ghost projections retry <name>`: applies its parked events again; fails while any
/// stays parked.
pub async fn retry_parked(config: &Config, name: &str) -> Result<()> {
    let runner = runner_for(config, name).await?;
    let outcome = runner.retry_parked().await?;
    let (applied, left) = (outcome.applied.len(), outcome.still_parked.len());
    println!("{name}: {applied} applied, {left} still parked");
    if left > 0 {
        let list: Vec<String> = outcome
            .still_parked
            .iter()
            .map(|(id, error)| format!("  {id}: {error}"))
            .collect();
        bail!(
            "{left} event(s) of {name} still parked:\n{}",
            list.join("\n")
        );
    }
    Ok(())
}

//! `ghost load`: drives N chat turns through the whole pipeline and reports throughput
//! and latency.

use anyhow::Result;
use clap::Args;

/// Options of `ghost load`.
#[derive(Debug, Args)]
pub struct LoadArgs {
    /// Turns to drive.
    #[arg(long, default_value_t = 2000)]
    pub turns: usize,
}

/// Runs the load.
pub async fn run(_args: LoadArgs) -> Result<()> {
    anyhow::bail!("not written yet")
}

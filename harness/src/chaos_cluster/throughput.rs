//! `ghost-harness chaos --cluster --throughput-turns N`: chat turns per second and latency
//! on the cluster (three NATS servers with R3 streams, two hosts each running every
//! service), no faults. The same clients as `ghost-harness load`, spread over both
//! gateways; beside `load --processes` (one host, one NATS server) on the same machine it
//! shows what replication and a second set of processes cost, not more capacity.

use std::time::Instant;

use anyhow::Result;
use ghost_testkit::testing::TestEnv;
use serde::Serialize;

use super::ClusterReport;
use crate::chaos::ChaosArgs;
use crate::load::{chat_turns, TurnPlan};

/// Figures of the throughput run.
#[derive(Debug, Clone, Serialize)]
pub struct ThroughputFigures {
    /// Measured turns.
    pub turns: usize,
    /// Concurrent clients (sessions).
    pub concurrency: usize,
    /// Measured turns per second.
    pub turns_per_sec: f64,
    /// Request → `done`, median, in milliseconds.
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
}

/// Drives the turns against the gateways at `bases`.
pub async fn run(
    env: &TestEnv,
    client: &reqwest::Client,
    bases: &[String],
    args: &ChaosArgs,
) -> Result<ClusterReport> {
    let start = Instant::now();
    let token = crate::chaos::api_token(env)?;
    let plan = TurnPlan {
        concurrency: args.concurrency,
        warmup: args.throughput_turns / 10,
        turns: args.throughput_turns,
    };
    let run_id = uuid::Uuid::new_v4().simple().to_string();
    let report = chat_turns(client, bases, &token, plan, &run_id).await?;
    let ms = |q: f64| report.quantile(q).as_secs_f64() * 1000.0;
    Ok(ClusterReport {
        throughput: Some(ThroughputFigures {
            turns: report.turns,
            concurrency: args.concurrency,
            turns_per_sec: report.throughput(),
            p50_ms: ms(0.5),
            p90_ms: ms(0.9),
            p99_ms: ms(0.99),
        }),
        ..ClusterReport::check(start.elapsed())
    })
}

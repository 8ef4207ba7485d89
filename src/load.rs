//! `ghost load`: drives N chat turns through the whole pipeline (gateway → router →
//! persona → store → SSE) against a zero-delay fake model, and reports throughput and
//! latency. It creates its own database and NATS stream and removes them afterwards.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use ghost_testkit::fake_llm::{FakeLlm, Script};
use ghost_testkit::testing::TestEnv;

use crate::stack::{start_stack, ServiceName};

/// The affect trailer the fake persona model appends to every reply.
const AFFECT: &str = r#"{"reflection_text":"a friendly hello","partner_affect_label":"joy","partner_affect_intensity":0.4,"salience":0.3,"confidence":0.8,"topic_tags":["greeting"]}"#;

/// Options of `ghost load`.
#[derive(Debug, Clone, Args)]
pub struct LoadArgs {
    /// Turns to measure.
    #[arg(long, default_value_t = 2000)]
    pub turns: usize,
    /// Concurrent clients (each talks in its own session, one turn at a time).
    #[arg(long, default_value_t = 32)]
    pub concurrency: usize,
    /// Unmeasured turns first (connections, caches, JIT-free but pools warm).
    #[arg(long, default_value_t = 200)]
    pub warmup: usize,
    /// Reply the fake model streams (split into word tokens).
    #[arg(long, default_value = "Hello! Nice to hear from you again today.")]
    pub reply: String,
}

/// Latency summary of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadReport {
    /// Turns measured.
    pub turns: usize,
    /// Wall time of the measured part.
    pub elapsed: Duration,
    /// Per-turn latencies, sorted.
    pub latencies: Vec<Duration>,
}

impl LoadReport {
    /// The `q` quantile (0..=1) of turn latency.
    pub fn quantile(&self, q: f64) -> Duration {
        if self.latencies.is_empty() {
            return Duration::ZERO;
        }
        let idx = ((self.latencies.len() as f64 - 1.0) * q).round() as usize;
        self.latencies[idx.min(self.latencies.len() - 1)]
    }

    /// Turns per second.
    pub fn throughput(&self) -> f64 {
        self.turns as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Runs the load and prints the report.
pub async fn run(args: LoadArgs) -> Result<()> {
    let llm = FakeLlm::start().await.context("fake model")?;
    // The persona's model answers as the prompt asks: reply, marker line, affect JSON.
    let marker = ghost_shared::affect::DEFAULT_TRAILER_MARKER;
    llm.set_default(Script::reply(&format!(
        "{}\n{marker}\n{AFFECT}",
        args.reply
    )));
    let env = TestEnv::new(
        &llm.base_url(),
        &[
            ("GHOST_BUS__STORAGE", "file"),
            ("GHOST_BUS__ACK_WAIT_SECS", "30"),
            ("GHOST_DATABASE__MAX_CONNECTIONS", "32"),
        ],
    )
    .await;
    let result = drive(&env, &args).await;
    env.cleanup().await;
    let report = result?;
    println!(
        "ghost load: {} turns, {} concurrent sessions, {:.2} s",
        report.turns,
        args.concurrency,
        report.elapsed.as_secs_f64()
    );
    println!("  throughput: {:.0} turns/s", report.throughput());
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "  latency request -> done: p50 {:.2} ms  p90 {:.2} ms  p99 {:.2} ms  max {:.2} ms",
        ms(report.quantile(0.50)),
        ms(report.quantile(0.90)),
        ms(report.quantile(0.99)),
        ms(report.quantile(1.0))
    );
    Ok(())
}

async fn drive(env: &TestEnv, args: &LoadArgs) -> Result<LoadReport> {
    let stack = start_stack(env.config.clone(), &ServiceName::ALL).await?;
    let addr = stack.gateway_addr().context("no gateway")?;
    let url = format!("http://{addr}/api/chat");
    let token = env
        .config
        .secrets
        .api_token
        .clone()
        .context("no api token")?
        .expose()
        .to_owned();
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(args.concurrency)
        .build()?;
    let run_id = uuid::Uuid::new_v4().simple().to_string();

    let phase = |turns: usize, tag: &'static str| {
        let next = Arc::new(AtomicUsize::new(0));
        let workers: Vec<_> = (0..args.concurrency.max(1))
            .map(|w| {
                let (client, url, token, next) =
                    (client.clone(), url.clone(), token.clone(), next.clone());
                let session = format!("{tag}-{run_id}-{w}");
                tokio::spawn(async move {
                    let mut latencies = Vec::new();
                    while next.fetch_add(1, Ordering::Relaxed) < turns {
                        let body =
                            serde_json::json!({ "session_id": session, "text": "hello there" })
                                .to_string();
                        let start = Instant::now();
                        let response = client
                            .post(&url)
                            .bearer_auth(&token)
                            .header("content-type", "application/json")
                            .body(body)
                            .send()
                            .await?;
                        let status = response.status();
                        let text = response.text().await?;
                        if !status.is_success() || !text.contains("event: done") {
                            bail!(
                                "turn failed ({status}): {}",
                                text.chars().take(300).collect::<String>()
                            );
                        }
                        latencies.push(start.elapsed());
                    }
                    Ok(latencies)
                })
            })
            .collect();
        async move {
            let start = Instant::now();
            let mut all = Vec::new();
            for w in workers {
                all.extend(w.await??);
            }
            Ok::<_, anyhow::Error>((start.elapsed(), all))
        }
    };
    phase(args.warmup, "warm").await?;
    let (elapsed, mut latencies) = phase(args.turns, "load").await?;
    stack.abort();
    latencies.sort();
    Ok(LoadReport {
        turns: latencies.len(),
        elapsed,
        latencies,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_pick_from_sorted_latencies() {
        let report = LoadReport {
            turns: 4,
            elapsed: Duration::from_secs(2),
            latencies: [1, 2, 3, 100]
                .iter()
                .map(|ms| Duration::from_millis(*ms))
                .collect(),
        };
        assert_eq!(report.quantile(0.0), Duration::from_millis(1));
        assert_eq!(report.quantile(1.0), Duration::from_millis(100));
        assert_eq!(report.quantile(0.5), Duration::from_millis(3));
        assert_eq!(report.throughput(), 2.0);
    }
}

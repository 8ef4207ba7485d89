//! `ghost-harness load`: drives N chat turns through the whole pipeline (gateway → router →
//! persona → store → SSE) against a zero-delay fake model, and reports throughput and
//! latency. It creates its own database and NATS stream and removes them afterwards. The
//! services run in this process, or with `--processes` each as its own `ghost run
//! <service>` child (as deployed); `--budget` prints where a turn's time goes
//! ([`crate::budget`]).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use ghost_testkit::fake_llm::{FakeLlm, Script};
use ghost_testkit::testing::TestEnv;

use crate::budget::{ClientTurn, SpanClock};
use crate::children::{wait_ready, Children};
use ghost::stack::{start_stack, ServiceName, Stack};
use ghost_testkit::testing::free_loopback_addr;

/// Where the services run.
enum Services {
    /// In this process.
    Here(Box<Stack>),
    /// As `ghost run <service>` children.
    Children(Arc<Children>),
}

impl Services {
    async fn stop(self) {
        match self {
            Services::Here(stack) => stack.abort(),
            Services::Children(children) => children.kill_all().await,
        }
    }
}

/// The affect trailer the fake persona model appends to every reply.
const AFFECT: &str = r#"{"reflection_text":"a friendly hello","partner_affect_label":"joy","partner_affect_intensity":0.4,"salience":0.3,"confidence":0.8,"topic_tags":["greeting"]}"#;

/// Options of `ghost-harness load`.
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
    /// Every service its own `ghost run <service>` process (as deployed), not all in this
    /// one.
    #[arg(long)]
    pub processes: bool,
    /// Also print the latency budget: each hop of a turn (from the client's times, the
    /// events' insert times and, in one process, the services' spans) with p50 and p90.
    #[arg(long)]
    pub budget: bool,
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
    /// What the client saw of each measured turn.
    pub clients: Vec<ClientTurn>,
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
    let clock = SpanClock::default();
    if args.budget && !args.processes && !clock.install() {
        bail!("--budget: a tracing subscriber is installed already");
    }
    // In processes mode the gateway child listens where the load generator expects it.
    let listen = if args.processes {
        free_loopback_addr()?
    } else {
        "127.0.0.1:0".to_owned()
    };
    // A pool per process: six children at 32 each would pass Postgres' default limit of
    // 100 connections, and a refused connection waits out the pool's 10 s acquire timeout.
    let connections = if args.processes { "12" } else { "32" };
    let env = TestEnv::new(
        &llm.base_url(),
        &[
            ("GHOST_BUS__STORAGE", "file"),
            ("GHOST_BUS__ACK_WAIT_SECS", "30"),
            ("GHOST_DATABASE__MAX_CONNECTIONS", connections),
            ("GHOST_GATEWAY__LISTEN", &listen),
        ],
    )
    .await;
    let run_id = uuid::Uuid::new_v4().simple().to_string();
    let result = drive(&env, &args, &listen, &run_id).await;
    let budget = match (&result, args.budget) {
        (Ok(report), true) => {
            let store = env.store().await;
            let events = crate::budget::stored_events(
                store.pool(),
                &ghost_shared::envelope::session_stream(&format!("load-{run_id}-")),
            )
            .await;
            let spans = clock.spans();
            Some(events.map(|e| crate::budget::budget(&report.clients, &e, &spans)))
        }
        _ => None,
    };
    env.cleanup().await;
    let report = result?;
    println!(
        "ghost-harness load: {} turns, {} concurrent sessions, {:.2} s, services {}",
        report.turns,
        args.concurrency,
        report.elapsed.as_secs_f64(),
        if args.processes {
            "each in its own process"
        } else {
            "all in this process"
        }
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
    if let Some(budget) = budget {
        crate::budget::print(&budget.context("reading the turns' events")?);
    }
    Ok(())
}

async fn drive(env: &TestEnv, args: &LoadArgs, listen: &str, run_id: &str) -> Result<LoadReport> {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(args.concurrency)
        .build()?;
    let (services, addr) = if args.processes {
        let names = ServiceName::ALL.map(ServiceName::as_str);
        let children = Children::start(env, &names);
        wait_ready(&client, &format!("http://{listen}")).await?;
        (Services::Children(children), listen.to_owned())
    } else {
        let stack = start_stack(env.config.clone(), &ServiceName::ALL).await?;
        let addr = stack.gateway_addr().context("no gateway")?.to_string();
        (Services::Here(Box::new(stack)), addr)
    };
    let result = turns(env, args, &client, &addr, run_id).await;
    services.stop().await;
    result
}

async fn turns(
    env: &TestEnv,
    args: &LoadArgs,
    client: &reqwest::Client,
    addr: &str,
    run_id: &str,
) -> Result<LoadReport> {
    let token = crate::chaos::api_token(env)?;
    let plan = TurnPlan {
        concurrency: args.concurrency,
        warmup: args.warmup,
        turns: args.turns,
    };
    chat_turns(client, &[format!("http://{addr}")], &token, plan, run_id).await
}

/// How many chat turns, from how many clients.
#[derive(Debug, Clone, Copy)]
pub struct TurnPlan {
    /// Concurrent clients, each its own session, one turn at a time.
    pub concurrency: usize,
    /// Unmeasured turns first.
    pub warmup: usize,
    /// Measured turns.
    pub turns: usize,
}

/// Drives `plan`'s chat turns over HTTP/SSE against the gateways at `bases` (client `w`
/// talks to `bases[w % len]`, as a load balancer would spread sessions) and measures
/// request → `done`.
pub async fn chat_turns(
    client: &reqwest::Client,
    bases: &[String],
    token: &str,
    plan: TurnPlan,
    run_id: &str,
) -> Result<LoadReport> {
    if bases.is_empty() {
        bail!("no gateway to send to");
    }
    let urls: Vec<String> = bases.iter().map(|b| format!("{b}/api/chat")).collect();
    let token = token.to_owned();
    let phase = |turns: usize, tag: &'static str| {
        let next = Arc::new(AtomicUsize::new(0));
        let workers: Vec<_> = (0..plan.concurrency.max(1))
            .map(|w| {
                let url = urls[w % urls.len()].clone();
                let (client, token, next) = (client.clone(), token.clone(), next.clone());
                let session = format!("{tag}-{run_id}-{w}");
                tokio::spawn(async move {
                    let mut latencies = Vec::new();
                    let mut clients = Vec::new();
                    while next.fetch_add(1, Ordering::Relaxed) < turns {
                        let body =
                            serde_json::json!({ "session_id": session, "text": "hello there" })
                                .to_string();
                        let start = Instant::now();
                        let sent = chrono::Utc::now();
                        let mut response = client
                            .post(&url)
                            .bearer_auth(&token)
                            .header("content-type", "application/json")
                            .body(body)
                            .send()
                            .await?;
                        let status = response.status();
                        let mut body = Vec::new();
                        let mut first_token = None;
                        while let Some(chunk) = response.chunk().await? {
                            if first_token.is_none()
                                && chunk.windows(12).any(|w| w == b"event: token")
                            {
                                first_token = Some(chrono::Utc::now());
                            }
                            body.extend_from_slice(&chunk);
                        }
                        let done = chrono::Utc::now();
                        let text = String::from_utf8_lossy(&body);
                        if !status.is_success() || !text.contains("event: done") {
                            bail!(
                                "turn failed ({status}): {}",
                                text.chars().take(300).collect::<String>()
                            );
                        }
                        latencies.push(start.elapsed());
                        if let Some(reply_event_id) = crate::budget::done_event_id(&text) {
                            clients.push(ClientTurn {
                                reply_event_id,
                                sent,
                                first_token,
                                done,
                            });
                        }
                    }
                    Ok((latencies, clients))
                })
            })
            .collect();
        async move {
            let start = Instant::now();
            let (mut all, mut clients) = (Vec::new(), Vec::new());
            for w in workers {
                let (latencies, seen) = w.await??;
                all.extend(latencies);
                clients.extend(seen);
            }
            Ok::<_, anyhow::Error>((start.elapsed(), all, clients))
        }
    };
    phase(plan.warmup, "warm").await?;
    let (elapsed, mut latencies, clients) = phase(plan.turns, "load").await?;
    latencies.sort();
    Ok(LoadReport {
        turns: latencies.len(),
        elapsed,
        latencies,
        clients,
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
            clients: Vec::new(),
        };
        assert_eq!(report.quantile(0.0), Duration::from_millis(1));
        assert_eq!(report.quantile(1.0), Duration::from_millis(100));
        assert_eq!(report.quantile(0.5), Duration::from_millis(3));
        assert_eq!(report.throughput(), 2.0);
    }
}

//! `ghost-harness webhook-load`: measures how fast the gateway acknowledges signed LINE webhooks.
//!
//! This process is only the sender: N signed webhooks (one new text message each, so every
//! one is verified, classified and durably appended) from `--concurrency` concurrent senders
//! over loopback, reporting p50/p99 acknowledgement latency. The gateway runs in another
//! process: `--url` targets a running one (whose `GHOST_LINE_CHANNEL_SECRET` is passed with
//! `--secret`), otherwise a `ghost run gateway` child is started on a private database and
//! NATS stream, with a fake LINE API, and removed afterwards.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use ghost_testkit::fake_llm::FakeLlm;
use ghost_testkit::fake_platforms::FakeLine;
use ghost_testkit::testing::{repo_config_dir, TestEnv};

/// Options of `ghost-harness webhook-load`.
#[derive(Debug, Clone, Args)]
pub struct WebhookLoadArgs {
    /// Gateway base URL (e.g. http://127.0.0.1:8080); absent: start a private gateway child.
    #[arg(long)]
    pub url: Option<String>,
    /// LINE channel secret the target gateway verifies with (with --url).
    #[arg(long, env = "GHOST_LINE_CHANNEL_SECRET", hide_env_values = true)]
    pub secret: Option<String>,
    /// Webhooks to measure.
    #[arg(long, default_value_t = 5000)]
    pub requests: usize,
    /// Concurrent senders.
    #[arg(long, default_value_t = 200)]
    pub concurrency: usize,
    /// Unmeasured webhooks first.
    #[arg(long, default_value_t = 1000)]
    pub warmup: usize,
    /// Offered load in webhooks/s across all senders (paced, open loop); absent: each
    /// sender sends its next webhook as soon as the previous one is answered (closed loop).
    #[arg(long)]
    pub rate: Option<f64>,
}

/// Secret used for the private gateway.
const OWN_SECRET: &str = "0123456789abcdef0123456789abcdef";

/// Runs the load and prints the report.
pub async fn run(args: WebhookLoadArgs) -> Result<()> {
    match args.url.clone() {
        Some(url) => {
            let secret = args
                .secret
                .clone()
                .context("--secret (or GHOST_LINE_CHANNEL_SECRET) is required with --url")?;
            measure(&url, &secret, &args).await
        }
        None => with_own_gateway(&args).await,
    }
}

async fn with_own_gateway(args: &WebhookLoadArgs) -> Result<()> {
    let llm = FakeLlm::start().await.context("fake model")?;
    let line = FakeLine::start().await.context("fake LINE")?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let listen = format!("127.0.0.1:{port}");
    let lb = line.base_url();
    let env = TestEnv::new(
        &llm.base_url(),
        &[
            ("GHOST_BUS__STORAGE", "file"),
            ("GHOST_DATABASE__MAX_CONNECTIONS", "32"),
            ("GHOST_GATEWAY__LISTEN", &listen),
            ("GHOST_LINE__API_BASE", &lb),
            ("GHOST_LINE__DATA_API_BASE", &lb),
        ],
    )
    .await;
    let mut cmd = tokio::process::Command::new(std::env::current_exe()?);
    cmd.arg("run").arg("gateway").env_clear();
    for key in ["PATH", "HOME"] {
        if let Ok(v) = std::env::var(key) {
            cmd.env(key, v);
        }
    }
    cmd.env("RUST_LOG", "warn")
        .env("GHOST_CONFIG_DIR", repo_config_dir())
        .env("GHOST_LINE_CHANNEL_SECRET", OWN_SECRET)
        .env("GHOST_LINE_CHANNEL_ACCESS_TOKEN", "load-token")
        .envs(env.vars.iter().map(|(k, v)| (k, v)))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true);
    let mut child = cmd.spawn().context("start ghost run gateway")?;
    let url = format!("http://{listen}");
    let result = async {
        wait_ready(&url).await?;
        println!(
            "ghost-harness webhook-load: private gateway (pid {:?}) at {url}",
            child.id()
        );
        measure(&url, OWN_SECRET, args).await
    }
    .await;
    let _ = child.kill().await;
    env.cleanup().await;
    result
}

async fn wait_ready(url: &str) -> Result<()> {
    let client = reqwest::Client::new();
    let body = r#"{"destination":"U","events":[]}"#;
    let sig = ghost_gateway::line::signature::sign(OWN_SECRET.as_bytes(), body.as_bytes())?;
    for _ in 0..300 {
        let sent = client
            .post(format!("{url}/webhooks/line"))
            .header("x-line-signature", &sig)
            .body(body)
            .send()
            .await;
        if sent.is_ok_and(|r| r.status().is_success()) {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!("the gateway at {url} did not come up")
}

fn body(run: &str, i: usize) -> String {
    serde_json::json!({"destination":"Ubot","events":[{
        "type":"message","mode":"active","timestamp":1_762_000_000_000_i64,
        "webhookEventId":format!("load-{run}-{i}"),"deliveryContext":{"isRedelivery":false},
        "source":{"type":"user","userId":format!("Uload{}", i % 1000)},
        "replyToken":format!("rt-{run}-{i}"),
        "message":{"id":format!("{i}"),"type":"text","quoteToken":"q","text":"こんにちは、元気?"}
    }]})
    .to_string()
}

async fn phase(
    client: &reqwest::Client,
    url: &str,
    secret: &str,
    run: &str,
    count: usize,
    concurrency: usize,
    rate: Option<f64>,
) -> Result<Vec<Duration>> {
    // Paced: sender w sends at t0 + (w + k·concurrency) / rate.
    let gap = rate
        .filter(|r| *r > 0.0)
        .map(|r| Duration::from_secs_f64(1.0 / r));
    let t0 = tokio::time::Instant::now();
    let next = Arc::new(AtomicUsize::new(0));
    let endpoint = format!("{url}/webhooks/line");
    let workers: Vec<_> = (0..concurrency.max(1))
        .map(|_| {
            let (client, endpoint, next) = (client.clone(), endpoint.clone(), next.clone());
            let (secret, run) = (secret.to_owned(), run.to_owned());
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= count {
                        break;
                    }
                    if let Some(gap) = gap {
                        tokio::time::sleep_until(t0 + gap * i as u32).await;
                    }
                    let b = body(&run, i);
                    let sig =
                        ghost_gateway::line::signature::sign(secret.as_bytes(), b.as_bytes())?;
                    let start = Instant::now();
                    let r = client
                        .post(&endpoint)
                        .header("x-line-signature", sig)
                        .header("content-type", "application/json")
                        .body(b)
                        .send()
                        .await?;
                    let status = r.status();
                    let _ = r.bytes().await?;
                    latencies.push(start.elapsed());
                    if !status.is_success() {
                        bail!("webhook answered {status}");
                    }
                }
                Ok::<_, anyhow::Error>(latencies)
            })
        })
        .collect();
    let mut all = Vec::with_capacity(count);
    for w in workers {
        all.extend(w.await??);
    }
    Ok(all)
}

async fn measure(url: &str, secret: &str, args: &WebhookLoadArgs) -> Result<()> {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(args.concurrency)
        .tcp_nodelay(true)
        .build()?;
    let run = uuid::Uuid::new_v4().simple().to_string();
    let c = args.concurrency;
    phase(
        &client,
        url,
        secret,
        &format!("w{run}"),
        args.warmup,
        c,
        args.rate,
    )
    .await?;
    let start = Instant::now();
    let mut lat = phase(&client, url, secret, &run, args.requests, c, args.rate).await?;
    let elapsed = start.elapsed();
    lat.sort_unstable();
    let q = |p: f64| {
        let idx = ((lat.len() as f64 - 1.0) * p).round() as usize;
        lat.get(idx).copied().unwrap_or_default().as_secs_f64() * 1000.0
    };
    println!(
        "ghost-harness webhook-load: {} signed LINE webhooks, {} concurrent senders, offered {}, {:.2} s ({:.0} req/s)",
        lat.len(),
        args.concurrency,
        args.rate.map_or("closed loop".to_string(), |r| format!("{r:.0}/s")),
        elapsed.as_secs_f64(),
        lat.len() as f64 / elapsed.as_secs_f64().max(1e-9)
    );
    println!(
        "  ack latency: p50 {:.2} ms  p90 {:.2} ms  p99 {:.2} ms  max {:.2} ms",
        q(0.5),
        q(0.9),
        q(0.99),
        q(1.0)
    );
    Ok(())
}

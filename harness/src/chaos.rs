//! `ghost-harness chaos`: every conversation service as its own `ghost run <service>` process on a
//! private database and NATS stream, with the fake model and fake LINE and Slack APIs of
//! `ghost-testkit`. Mixed HTTP, LINE and Slack messages are sent (each in its own
//! conversation, so every answer can be attributed), random services are killed with
//! SIGKILL at intervals and restarted, and once the system is quiet the answers are
//! counted where a user would see them: fake LINE and Slack deliveries, and the session's
//! assistant messages (`GET /api/sessions/{id}/messages`) for HTTP. A message whose send
//! fails (gateway down) is sent again with the same idempotency key (webhook event id,
//! `request_id`), as the platforms and a careful client do.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use clap::Args;
use ghost_testkit::fake_llm::{FakeLlm, Script};
use ghost_testkit::fake_platforms::{Delivery, FakeLine, FakeSlack};
use ghost_testkit::testing::{pipeline_idle, TestEnv};
use serde::Serialize;

use crate::children::{wait_ready, Children};
use ghost_testkit::testing::free_loopback_addr;

/// Options of `ghost-harness chaos`.
#[derive(Debug, Clone, Args)]
pub struct ChaosArgs {
    /// Messages to send (HTTP, LINE and Slack in turn).
    #[arg(long, default_value_t = 1000)]
    pub messages: usize,
    /// Services to SIGKILL (and restart) during the run.
    #[arg(long, default_value_t = 20)]
    pub kills: usize,
    /// Pause between kills, in milliseconds.
    #[arg(long, default_value_t = 2000)]
    pub kill_interval_ms: u64,
    /// Concurrent senders.
    #[arg(long, default_value_t = 16)]
    pub concurrency: usize,
    /// Seed of the choice of services to kill.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Longest wait for quiescence after the last message, in seconds.
    #[arg(long, default_value_t = 600)]
    pub settle_secs: u64,
    /// Print the report as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Run on a NATS cluster and two Ghost hosts in network namespaces, with faults while
    /// messages are sent (`src/chaos_cluster.rs`; needs root). `--kills` does not apply.
    #[arg(long)]
    pub cluster: bool,
    /// With `--cluster`: how many times each fault is injected.
    #[arg(long, default_value_t = 1)]
    pub fault_rounds: usize,
    /// With `--cluster`: how long a Ghost host stays cut off, in seconds.
    #[arg(long, default_value_t = 30)]
    pub partition_secs: u64,
    /// With `--cluster`: instead of the fault run, send this many `/local` + code paste
    /// pairs over LINE (half in one webhook, half back to back through both hosts) and
    /// count requests that reach the cloud.
    #[arg(long, default_value_t = 0)]
    pub order_pairs: usize,
    /// With `--cluster`: instead of the fault run, drive this many HTTP chat turns from
    /// `--concurrency` clients spread over both hosts' gateways (a tenth more first,
    /// unmeasured) and report turns per second and latency, as `ghost-harness load` does on
    /// one host.
    #[arg(long, default_value_t = 0)]
    pub throughput_turns: usize,
}

/// The services killed and restarted (every conversation service of `ghost up` but the
/// write-plan service, which sends nothing a user sees).
pub(crate) const SERVICES: [&str; 6] = ["gateway", "router", "worker", "coder", "persona", "mood"];

/// Secrets of the private run.
pub(crate) const LINE_SECRET: &str = "0123456789abcdef0123456789abcdef";
pub(crate) const SLACK_SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
pub(crate) const BOT: &str = "UBOT";

/// The affect trailer the fake persona model appends to every reply.
pub(crate) const AFFECT: &str = r#"{"reflection_text":"a friendly hello","partner_affect_label":"joy","partner_affect_intensity":0.4,"salience":0.3,"confidence":0.8,"topic_tags":["greeting"]}"#;

/// The channel a message is sent on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Channel {
    /// `POST /api/chat`.
    Http,
    /// A signed LINE webhook.
    Line,
    /// A signed Slack event.
    Slack,
}

/// Figures of one channel (or of all).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Messages sent.
    pub sent: usize,
    /// Messages the gateway acknowledged (200).
    pub accepted: usize,
    /// Accepted messages with exactly one answer.
    pub answered_once: usize,
    /// Accepted messages with no answer.
    pub lost: usize,
    /// Accepted messages with more than one answer.
    pub duplicated: usize,
}

impl Counts {
    pub(crate) fn add(&mut self, accepted: bool, answers: usize) {
        self.sent += 1;
        if !accepted {
            return;
        }
        self.accepted += 1;
        match answers {
            0 => self.lost += 1,
            1 => self.answered_once += 1,
            _ => self.duplicated += 1,
        }
    }
}

/// The result of a run.
#[derive(Debug, Clone, Serialize)]
pub struct ChaosReport {
    /// All channels.
    pub total: Counts,
    /// Per channel.
    pub http: Counts,
    /// LINE.
    pub line: Counts,
    /// Slack.
    pub slack: Counts,
    /// HTTP turns whose SSE stream ended with `done` (the rest were read back).
    pub http_streamed_replies: usize,
    /// Services killed, in order.
    pub kills: Vec<String>,
    /// Sends repeated because the gateway was unreachable or answered an error.
    pub resends: usize,
    /// Seconds from the first message to quiescence.
    pub elapsed_secs: f64,
    /// Whether the system was quiet (all consumers acknowledged, outbox empty) at the count.
    pub quiescent: bool,
    /// The messages lost or duplicated: `channel:index` and the answers counted.
    pub problems: Vec<String>,
}

impl ChaosReport {
    /// Nothing lost, nothing duplicated, everything accepted.
    pub fn clean(&self) -> bool {
        self.total.lost == 0 && self.total.duplicated == 0 && self.total.accepted == self.total.sent
    }
}

/// Runs the chaos and prints the report; an error when anything was lost or duplicated.
pub async fn run(args: ChaosArgs) -> Result<()> {
    if args.cluster {
        return crate::chaos_cluster::run(args).await;
    }
    let llm = FakeLlm::start().await.context("fake model")?;
    let marker = ghost_shared::affect::DEFAULT_TRAILER_MARKER;
    llm.set_default(Script::reply(&format!(
        "Hello! Nice to hear from you.\n{marker}\n{AFFECT}"
    )));
    let line = FakeLine::start().await.context("fake LINE")?;
    let slack = FakeSlack::start().await.context("fake Slack")?;
    let listen = free_loopback_addr()?;
    let (lb, sb) = (line.base_url(), slack.base_url());
    let mut extra = vec![("GHOST_GATEWAY__LISTEN", listen.as_str())];
    extra.extend(overrides(&lb, &sb));
    let env = TestEnv::new(&llm.base_url(), &extra).await;
    let children = Children::start(&env, &SERVICES);
    let result = drive(&env, &args, &line, &slack, &listen, &children).await;
    children.kill_all().await;
    env.cleanup().await;
    let report = result?;
    print_report(&report, &args)?;
    if !report.clean() {
        bail!(
            "chaos: {} lost, {} duplicated, {} of {} not accepted",
            report.total.lost,
            report.total.duplicated,
            report.total.sent - report.total.accepted,
            report.total.sent
        );
    }
    Ok(())
}

/// What the senders of a run share.
#[derive(Clone)]
pub(crate) struct Traffic {
    pub client: reqwest::Client,
    /// The gateways' base URLs.
    pub bases: Arc<Vec<String>>,
    pub token: String,
    /// The run's id in every conversation's name.
    pub run: String,
    /// Sends repeated.
    pub resends: Arc<AtomicUsize>,
}

/// Sends messages `0..total` from `concurrency` senders, each message once `gate(i)` lets
/// it; returns what became of each, in order.
pub(crate) async fn send_all<G, F>(
    traffic: &Traffic,
    concurrency: usize,
    total: usize,
    gate: G,
) -> Result<Vec<(usize, Sent)>>
where
    G: Fn(usize) -> F + Clone + Send + 'static,
    F: std::future::Future<Output = ()> + Send,
{
    let next = Arc::new(AtomicUsize::new(0));
    let senders: Vec<_> = (0..concurrency.max(1))
        .map(|_| {
            let (t, next, gate) = (traffic.clone(), next.clone(), gate.clone());
            tokio::spawn(async move {
                let mut sent = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= total {
                        break;
                    }
                    gate(i).await;
                    let msg = Message::new(&t.run, i);
                    sent.push((i, msg.send(&t.client, &t.bases, &t.token, &t.resends).await));
                }
                sent
            })
        })
        .collect();
    let mut sent: Vec<(usize, Sent)> = Vec::with_capacity(total);
    for s in senders {
        sent.extend(s.await?);
    }
    sent.sort_by_key(|(i, _)| *i);
    Ok(sent)
}

/// The configuration of a chaos run beside its test environment's: file storage, a 10 s
/// ack wait, the fake LINE (`lb`) and Slack (`sb`) with their secrets and short retries.
pub(crate) fn overrides<'a>(lb: &'a str, sb: &'a str) -> [(&'static str, &'a str); 13] {
    [
        ("GHOST_BUS__STORAGE", "file"),
        ("GHOST_BUS__ACK_WAIT_SECS", "10"),
        ("GHOST_DATABASE__MAX_CONNECTIONS", "8"),
        ("GHOST_LINE_CHANNEL_SECRET", LINE_SECRET),
        ("GHOST_LINE_CHANNEL_ACCESS_TOKEN", "chaos-line-token"),
        ("GHOST_SLACK_SIGNING_SECRET", SLACK_SECRET),
        ("GHOST_SLACK_BOT_TOKEN", "xoxb-chaos"),
        ("GHOST_LINE__API_BASE", lb),
        ("GHOST_LINE__DATA_API_BASE", lb),
        ("GHOST_LINE__RETRY_BASE_DELAY_MS", "20"),
        ("GHOST_SLACK__API_BASE", sb),
        ("GHOST_SLACK__BOT_USER_ID", BOT),
        ("GHOST_SLACK__RETRY_DEFAULT_DELAY_MS", "20"),
    ]
}

/// The API token of a test environment.
pub(crate) fn api_token(env: &TestEnv) -> Result<String> {
    Ok(env
        .config
        .secrets
        .api_token
        .clone()
        .context("no api token")?
        .expose()
        .to_owned())
}

/// One message of the run and what became of it.
pub(crate) struct Sent {
    pub channel: Channel,
    pub accepted: bool,
    pub streamed_reply: bool,
    /// When the gateway acknowledged it.
    pub accepted_at: Option<Instant>,
    /// When its HTTP reply stream ended with `done`.
    pub answered_at: Option<Instant>,
}

async fn drive(
    env: &TestEnv,
    args: &ChaosArgs,
    line: &FakeLine,
    slack: &FakeSlack,
    listen: &str,
    children: &Arc<Children>,
) -> Result<ChaosReport> {
    let base = format!("http://{listen}");
    let token = api_token(env)?;
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()?;
    wait_ready(&client, &base).await?;
    let run = uuid::Uuid::new_v4().simple().to_string()[..8].to_owned();
    let start = Instant::now();
    let sending_done = Arc::new(std::sync::atomic::AtomicBool::new(false));

    // The killer: one SIGKILL every interval until the count is reached.
    let killer = {
        let (children, done) = (children.clone(), sending_done.clone());
        let (kills, interval, mut rng) = (args.kills, args.kill_interval_ms, args.seed | 1);
        tokio::spawn(async move {
            let mut killed = Vec::new();
            for _ in 0..kills {
                tokio::time::sleep(Duration::from_millis(interval)).await;
                // xorshift64: reproducible with --seed, no dependency.
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let service = SERVICES[(rng % SERVICES.len() as u64) as usize];
                children
                    .kill_and_restart(service, Duration::from_millis(300))
                    .await?;
                eprintln!(
                    "ghost-harness chaos: killed {service} ({} of {kills}){}",
                    killed.len() + 1,
                    if done.load(Ordering::Relaxed) {
                        ", after the last message"
                    } else {
                        ""
                    }
                );
                killed.push(service.to_owned());
            }
            Ok::<_, anyhow::Error>(killed)
        })
    };

    let resends = Arc::new(AtomicUsize::new(0));
    let traffic = Traffic {
        client: client.clone(),
        bases: Arc::new(vec![base.clone()]),
        token: token.clone(),
        run: run.clone(),
        resends: resends.clone(),
    };
    let sent = send_all(&traffic, args.concurrency, args.messages, |_| async {}).await?;
    sending_done.store(true, Ordering::Relaxed);
    eprintln!(
        "ghost-harness chaos: {} messages sent in {:.1} s; waiting for the kills and quiescence",
        sent.len(),
        start.elapsed().as_secs_f64()
    );
    let kills = killer.await??;

    let bases = [base];
    let view = Where {
        client: &client,
        bases: &bases,
        token: &token,
        run: &run,
        line,
        slack,
    };
    let (answers, quiescent) = settle(env, args.settle_secs, &view, &sent).await?;
    let mut report = tally(&sent, &answers);
    report.kills = kills;
    report.resends = resends.load(Ordering::Relaxed);
    report.elapsed_secs = start.elapsed().as_secs_f64();
    report.quiescent = quiescent;
    Ok(report)
}

/// Where a run's answers are seen: the gateways (HTTP sessions read back) and the fake
/// platforms.
pub(crate) struct Where<'a> {
    pub client: &'a reqwest::Client,
    /// The gateways' base URLs (asked in turn).
    pub bases: &'a [String],
    pub token: &'a str,
    /// The run's id in every conversation's name.
    pub run: &'a str,
    pub line: &'a FakeLine,
    pub slack: &'a FakeSlack,
}

/// Waits until every accepted message is answered (or `settle_secs` pass) and nothing is
/// in flight (no consumer with pending or unacknowledged messages, outbox empty, twice in
/// a row); returns the answers per message and whether it was quiet.
pub(crate) async fn settle(
    env: &TestEnv,
    settle_secs: u64,
    view: &Where<'_>,
    sent: &[(usize, Sent)],
) -> Result<(Vec<usize>, bool)> {
    let ctx = env.context("chaos").await?;
    let store = env.store().await;
    let deadline = Instant::now() + Duration::from_secs(settle_secs);
    let mut quiet_rounds = 0;
    loop {
        let answers = count_answers(view, sent).await?;
        let all = sent
            .iter()
            .zip(&answers)
            .all(|((_, s), a)| !s.accepted || *a > 0);
        let idle = pipeline_idle(ctx.bus(), &store, &env.config.ghost.bus.stream_name).await;
        quiet_rounds = if idle { quiet_rounds + 1 } else { 0 };
        if all && quiet_rounds >= 2 {
            return Ok((answers, true));
        }
        if Instant::now() > deadline {
            return Ok((answers, idle));
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// The counts of a run (kills, resends, times and quiescence left for the caller).
pub(crate) fn tally(sent: &[(usize, Sent)], answers: &[usize]) -> ChaosReport {
    let mut report = ChaosReport {
        total: Counts::default(),
        http: Counts::default(),
        line: Counts::default(),
        slack: Counts::default(),
        http_streamed_replies: 0,
        kills: Vec::new(),
        resends: 0,
        elapsed_secs: 0.0,
        quiescent: false,
        problems: Vec::new(),
    };
    for ((i, s), a) in sent.iter().zip(answers) {
        report.total.add(s.accepted, *a);
        match s.channel {
            Channel::Http => report.http.add(s.accepted, *a),
            Channel::Line => report.line.add(s.accepted, *a),
            Channel::Slack => report.slack.add(s.accepted, *a),
        }
        report.http_streamed_replies += usize::from(s.streamed_reply);
        if !s.accepted || *a != 1 {
            let what = if s.accepted {
                "answers"
            } else {
                "not accepted"
            };
            report
                .problems
                .push(format!("{:?}:{i} {what} {a}", s.channel).to_lowercase());
        }
    }
    report
}

/// One message: its channel and identities (each in its own conversation).
pub(crate) struct Message {
    channel: Channel,
    run: String,
    i: usize,
}

impl Message {
    pub(crate) fn new(run: &str, i: usize) -> Message {
        let channel = match i % 3 {
            0 => Channel::Http,
            1 => Channel::Line,
            _ => Channel::Slack,
        };
        Message {
            channel,
            run: run.to_owned(),
            i,
        }
    }

    pub(crate) fn channel(&self) -> Channel {
        self.channel
    }

    pub(crate) fn session(run: &str, i: usize) -> String {
        format!("chaos-{run}-{i}")
    }

    pub(crate) fn line_user(run: &str, i: usize) -> String {
        format!("Uchaos{run}{i}")
    }

    pub(crate) fn line_token(run: &str, i: usize) -> String {
        format!("rt-chaos-{run}-{i}")
    }

    pub(crate) fn slack_channel(run: &str, i: usize) -> String {
        format!("Cchaos{run}{i}")
    }

    /// Sends until a gateway accepts it (or two minutes pass). Attempts go to `bases` in
    /// turn, starting at the message's index, as a load balancer would spread them.
    pub(crate) async fn send(
        &self,
        client: &reqwest::Client,
        bases: &[String],
        token: &str,
        resends: &AtomicUsize,
    ) -> Sent {
        let (run, i) = (self.run.as_str(), self.i);
        let give_up = Instant::now() + Duration::from_secs(120);
        let mut attempt = 0_usize;
        loop {
            let base = bases[(i + attempt) % bases.len()].as_str();
            if attempt > 0 {
                resends.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            attempt += 1;
            if Instant::now() > give_up {
                return Sent {
                    channel: self.channel,
                    accepted: false,
                    streamed_reply: false,
                    accepted_at: None,
                    answered_at: None,
                };
            }
            let request = match self.channel {
                Channel::Http => {
                    let body = serde_json::json!({
                        "session_id": Self::session(run, i),
                        "text": "hello there",
                        "request_id": format!("req-{run}-{i}"),
                    });
                    client
                        .post(format!("{base}/api/chat"))
                        .bearer_auth(token)
                        .json(&body)
                }
                Channel::Line => {
                    let body = serde_json::json!({"destination":"Ubot","events":[{
                        "type":"message","mode":"active","timestamp":1_762_000_000_000_i64,
                        "webhookEventId":format!("chaos-{run}-{i}"),
                        "deliveryContext":{"isRedelivery":attempt > 1},
                        "source":{"type":"user","userId":Self::line_user(run, i)},
                        "replyToken":Self::line_token(run, i),
                        "message":{"id":format!("m-{run}-{i}"),"type":"text","quoteToken":"q",
                                   "text":"こんにちは、元気?"}
                    }]})
                    .to_string();
                    let Ok(sig) = ghost_gateway::line::signature::sign(
                        LINE_SECRET.as_bytes(),
                        body.as_bytes(),
                    ) else {
                        continue;
                    };
                    client
                        .post(format!("{base}/webhooks/line"))
                        .header("x-line-signature", sig)
                        .header("content-type", "application/json")
                        .body(body)
                }
                Channel::Slack => {
                    let channel = Self::slack_channel(run, i);
                    let ts = format!("1700000000.{i:06}");
                    let body = serde_json::json!({
                        "type":"event_callback","team_id":"T1","api_app_id":"A1",
                        "event_id":format!("Ev-chaos-{run}-{i}"),"event_time":1_700_000_000,
                        "event":{"type":"app_mention","user":"U7",
                                 "text":format!("<@{BOT}> hello there"),
                                 "ts":ts,"channel":channel,"event_ts":ts}
                    })
                    .to_string();
                    let now = SystemTime::now()
                        .duration_since(UNIX_EPOCH)
                        .unwrap_or_default()
                        .as_secs()
                        .to_string();
                    let Ok(sig) = ghost_gateway::slack::signature::sign(
                        SLACK_SECRET.as_bytes(),
                        &now,
                        body.as_bytes(),
                    ) else {
                        continue;
                    };
                    client
                        .post(format!("{base}/webhooks/slack"))
                        .header("x-slack-request-timestamp", now)
                        .header("x-slack-signature", sig)
                        .header("content-type", "application/json")
                        .body(body)
                }
            };
            let Ok(response) = request.send().await else {
                continue;
            };
            if !response.status().is_success() {
                continue;
            }
            // Accepted. An HTTP turn streams its reply; a cut stream is read back later.
            let accepted_at = Instant::now();
            let streamed_reply = match self.channel {
                Channel::Http => response
                    .text()
                    .await
                    .is_ok_and(|t| t.contains("event: done")),
                _ => false,
            };
            return Sent {
                channel: self.channel,
                accepted: true,
                streamed_reply,
                accepted_at: Some(accepted_at),
                answered_at: streamed_reply.then(Instant::now),
            };
        }
    }
}

/// What LINE and Slack were sent, but reminders (the cluster run asks for some in its LINE
/// conversations): answers to the run's messages.
pub(crate) fn answer_deliveries(line: &FakeLine, slack: &FakeSlack) -> Vec<Delivery> {
    // Plain ("⏰ Reminder: …") or in the persona's words ("…\n⏰ task").
    let reminder = |t: &String| t.contains("⏰ ") || t.starts_with("I missed a reminder");
    line.deliveries()
        .into_iter()
        .chain(slack.deliveries())
        .filter(|d| !d.texts.iter().any(reminder))
        .collect()
}

/// Answers per message, in the order of `sent`.
async fn count_answers(view: &Where<'_>, sent: &[(usize, Sent)]) -> Result<Vec<usize>> {
    let Where {
        client,
        bases,
        token,
        run,
        line,
        slack,
    } = *view;
    let mut per_target: HashMap<String, usize> = HashMap::new();
    for d in answer_deliveries(line, slack) {
        *per_target.entry(d.to).or_default() += 1;
    }
    let mut answers = Vec::with_capacity(sent.len());
    for (i, s) in sent {
        let n = match s.channel {
            Channel::Line => {
                per_target
                    .get(&Message::line_user(run, *i))
                    .copied()
                    .unwrap_or(0)
                    + per_target
                        .get(&Message::line_token(run, *i))
                        .copied()
                        .unwrap_or(0)
            }
            Channel::Slack => per_target
                .get(&Message::slack_channel(run, *i))
                .copied()
                .unwrap_or(0),
            Channel::Http if s.accepted => {
                http_answers(client, bases, token, &Message::session(run, *i)).await?
            }
            Channel::Http => 0,
        };
        answers.push(n);
    }
    Ok(answers)
}

/// Assistant messages of an HTTP session, read back as a client would. The gateway may be
/// restarting; it (or the next of `bases`) is asked again until one answers.
async fn http_answers(
    client: &reqwest::Client,
    bases: &[String],
    token: &str,
    session: &str,
) -> Result<usize> {
    for attempt in 0..600 {
        let base = &bases[attempt % bases.len()];
        let response = client
            .get(format!("{base}/api/sessions/{session}/messages"))
            .bearer_auth(token)
            .send()
            .await;
        if let Ok(r) = response {
            if r.status().is_success() {
                let v: serde_json::Value = r.json().await?;
                let messages = v["messages"].as_array().cloned().unwrap_or_default();
                return Ok(messages.iter().filter(|m| m["role"] == "assistant").count());
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!("the gateway did not answer GET /api/sessions/{session}/messages")
}

fn print_report(report: &ChaosReport, args: &ChaosArgs) -> Result<()> {
    if args.json {
        println!("{}", serde_json::to_string(report)?);
        return Ok(());
    }
    println!(
        "ghost-harness chaos: {} messages, {} kills ({}), {:.1} s, {} resends, quiescent: {}",
        report.total.sent,
        report.kills.len(),
        report.kills.join(" "),
        report.elapsed_secs,
        report.resends,
        report.quiescent
    );
    println!(
        "  {:<8}{:>8}{:>10}{:>16}{:>8}{:>12}",
        "channel", "sent", "accepted", "answered once", "lost", "duplicated"
    );
    for (name, c) in [
        ("http", &report.http),
        ("line", &report.line),
        ("slack", &report.slack),
        ("total", &report.total),
    ] {
        println!(
            "  {:<8}{:>8}{:>10}{:>16}{:>8}{:>12}",
            name, c.sent, c.accepted, c.answered_once, c.lost, c.duplicated
        );
    }
    println!(
        "  HTTP replies streamed to the client: {}",
        report.http_streamed_replies
    );
    for p in &report.problems {
        println!("  problem: {p}");
    }
    Ok(())
}

//! `ghost-harness chaos --cluster`: the chaos run on a NATS cluster and two Ghost hosts, with the
//! faults of a deployment beyond one machine injected while messages are still being sent.
//!
//! On one machine, as root ([`net`]): three NATS servers with routes and JetStream (the
//! event streams at three replicas: `bus.replicas: 3`, `bus.servers`), two Ghost hosts in
//! network namespaces each running every service as `ghost run <service>`, a private
//! Postgres, and the fakes of `ghost-testkit` for the model, LINE and Slack. Messages go to
//! both gateways (a resend goes to the other one, as a load balancer would), in windows: one
//! before the faults, then one per fault, opened as the fault is injected and paced to last
//! through it. The faults, one after another:
//!
//! - `nats-leader`: SIGKILL of the NATS server that leads the event stream (the stream
//!   info's cluster leader), started again 2 s later on the same store;
//! - `host-kill`: SIGKILL of every service of one host, started again 2 s later;
//! - `partition`: one host cut off (its veth down: from NATS, Postgres, the fakes and the
//!   senders) for `--partition-secs`;
//! - `postgres-restart`: a fast shutdown of Postgres and a start.
//!
//! Reminders ([`reminders`]) are asked in the first window's LINE conversations before the
//! first fault, due seconds apart while the faults happen; each must be pushed once.
//!
//! Per fault it reports the messages of its window (accepted, answered once, lost,
//! duplicated), the time from the fault until the first of them is answered (answers flow
//! again), and until every message in flight at the fault is answered. It cleans up every
//! namespace, process and stream it made, also on SIGINT/SIGTERM or a panic, and says
//! what it found left behind.

mod net;
pub mod order;
pub mod reminders;
pub mod throughput;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use ghost_shared::service::ServiceContext;
use ghost_testkit::fake_llm::{FakeLlm, Script};
use ghost_testkit::fake_platforms::{FakeLine, FakeSlack};
use ghost_testkit::scenarios::local_then_code;
use ghost_testkit::testing::TestEnv;
use serde::Serialize;

use crate::chaos::{
    answer_deliveries, api_token, overrides, send_all, settle, tally, Channel, ChaosArgs, Counts,
    Message, Sent, Traffic, Where, AFFECT,
};
use crate::children::{wait_ready, Children};
use net::{Net, HOSTS, NODES};

/// What runs on each host: every service of `ghost up`.
const HOST_SERVICES: [&str; 7] = [
    "gateway",
    "router",
    "worker",
    "coder",
    "persona",
    "mood",
    "write-plan",
];

/// The variable every host process carries, naming the run (`ghostc-<id>`).
const RUN_MARK: &str = "CHAOS_CLUSTER_RUN";

/// How long a killed NATS server or host stays down.
const DOWN: Duration = Duration::from_secs(2);

/// A fault of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fault {
    /// SIGKILL of the event stream's leader.
    NatsLeader,
    /// SIGKILL of every service of one host.
    HostKill,
    /// One host cut off from everything.
    Partition,
    /// Postgres: fast shutdown and start.
    PostgresRestart,
}

/// Figures of one fault.
#[derive(Debug, Clone, Serialize)]
pub struct FaultFigures {
    /// Which fault.
    pub fault: Fault,
    /// What it hit: a NATS server's name, `host1`/`host2`, `postgres`.
    pub target: String,
    /// Seconds from the start of the traffic to the fault.
    pub at_secs: f64,
    /// Seconds the fault lasted (down, cut off, restarting).
    pub held_secs: f64,
    /// The messages sent from the fault until the next one.
    pub window: Counts,
    /// Seconds from the fault until the first of its window's messages was answered.
    pub answers_flow_after_secs: Option<f64>,
    /// Seconds from the fault until every message accepted before it and unanswered at it
    /// was answered (lost ones, and HTTP answers read back at the end, have no time and are
    /// left out).
    pub in_flight_answered_after_secs: Option<f64>,
}

/// What was left after the cleanup.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LeftBehind {
    /// Network namespaces of the run.
    pub namespaces: Vec<String>,
    /// Processes whose command line or environment names the run.
    pub processes: Vec<String>,
    /// Whether the run's directory (NATS stores, Postgres data) still exists.
    pub directory: bool,
}

impl LeftBehind {
    fn empty(&self) -> bool {
        self.namespaces.is_empty() && self.processes.is_empty() && !self.directory
    }
}

/// The report of `ghost-harness chaos --cluster`.
#[derive(Debug, Clone, Serialize)]
pub struct ClusterReport {
    /// The run's id (in its namespaces' and interfaces' names).
    pub run_id: String,
    /// NATS servers and Ghost hosts.
    pub nats_servers: usize,
    /// Ghost hosts, each running every service.
    pub hosts: usize,
    /// All channels.
    pub total: Counts,
    /// HTTP.
    pub http: Counts,
    /// LINE.
    pub line: Counts,
    /// Slack.
    pub slack: Counts,
    /// Per fault, in order.
    pub faults: Vec<FaultFigures>,
    /// Sends repeated (the gateway unreachable or answering an error).
    pub resends: usize,
    /// Services that exited on their own and were started again by the run's supervisor
    /// (`host<k>/<service>`, in order).
    pub supervisor_restarts: Vec<String>,
    /// Seconds from the first message to quiescence.
    pub elapsed_secs: f64,
    /// Whether the system was quiet at the count.
    pub quiescent: bool,
    /// Messages lost, duplicated or not accepted.
    pub problems: Vec<String>,
    /// For each lost or duplicated message (HTTP, LINE, Slack), its conversation's events as stored
    /// (`type@version`), to see where it stopped.
    pub problem_events: HashMap<String, Vec<String>>,
    /// The order check (`--order-pairs`), instead of the faults.
    pub order: Option<order::OrderFigures>,
    /// Chat turns per second on the cluster (`--throughput-turns`), instead of the faults.
    pub throughput: Option<throughput::ThroughputFigures>,
    /// The reminders due during the faults.
    pub reminders: Option<reminders::ReminderFigures>,
    /// What the cleanup left.
    pub left_behind: LeftBehind,
}

impl ClusterReport {
    /// The report of a check run instead of the faults (order, throughput), which fills
    /// in its own figures.
    fn check(elapsed: Duration) -> Self {
        ClusterReport {
            run_id: String::new(),
            nats_servers: NODES,
            hosts: HOSTS,
            total: Counts::default(),
            http: Counts::default(),
            line: Counts::default(),
            slack: Counts::default(),
            faults: Vec::new(),
            resends: 0,
            supervisor_restarts: Vec::new(),
            elapsed_secs: elapsed.as_secs_f64(),
            quiescent: true,
            problems: Vec::new(),
            problem_events: HashMap::new(),
            order: None,
            throughput: None,
            reminders: None,
            left_behind: LeftBehind::default(),
        }
    }

    /// Nothing lost, duplicated or refused, every fault recovered, every reminder said once,
    /// nothing left behind, and (for the order check) nothing reached the cloud.
    pub fn clean(&self) -> bool {
        let faults_recovered = self
            .faults
            .iter()
            .all(|f| f.answers_flow_after_secs.is_some());
        let order_kept = self.order.as_ref().is_none_or(order::OrderFigures::kept);
        let reminded = self
            .reminders
            .as_ref()
            .is_none_or(reminders::ReminderFigures::once_each);
        self.total.lost == 0
            && self.total.duplicated == 0
            && self.total.accepted == self.total.sent
            && faults_recovered
            && order_kept
            && reminded
            && self.left_behind.empty()
    }
}

/// Runs `ghost-harness chaos --cluster` and prints the report; an error when it is not clean.
pub async fn run(args: ChaosArgs) -> Result<()> {
    let mut net = Net::new()?;
    let id = net.id.clone();
    eprintln!(
        "ghost-harness chaos --cluster: run {id} on {}.0/24 in {}",
        net.subnet,
        net.dir.display()
    );
    let outcome = tokio::select! {
        r = run_on(&mut net, &args) => r,
        s = interrupted() => Err(anyhow!("interrupted by {s}; cleaned up")),
    };
    net.teardown();
    let left_behind = left_behind(&net).await;
    let mut report = outcome?;
    report.run_id = id;
    report.left_behind = left_behind;
    print(&report, &args)?;
    if !report.clean() {
        bail!(
            "chaos --cluster: {} lost, {} duplicated, {} of {} not accepted, faults recovered: \
             {}, reminders said once: {:?}, left behind: {:?}",
            report.total.lost,
            report.total.duplicated,
            report.total.sent - report.total.accepted,
            report.total.sent,
            report
                .faults
                .iter()
                .all(|f| f.answers_flow_after_secs.is_some()),
            report
                .reminders
                .as_ref()
                .map(|r| format!("{} of {}", r.delivered_once, r.wanted)),
            report.left_behind
        );
    }
    Ok(())
}

/// SIGINT or SIGTERM.
async fn interrupted() -> &'static str {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => "SIGINT",
        _ = term.recv() => "SIGTERM",
    }
}

/// What of the run is still there after the teardown (processes get a moment to die).
async fn left_behind(net: &Net) -> LeftBehind {
    let marker = format!("ghostc-{}", net.id);
    let mut processes = Vec::new();
    for _ in 0..50 {
        processes = processes_naming(&marker);
        if processes.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    LeftBehind {
        namespaces: net::namespaces_of(&net.id),
        processes,
        directory: net.dir.exists(),
    }
}

/// Live processes (not zombies) whose command line or environment contains `marker`.
fn processes_naming(marker: &str) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let me = std::process::id().to_string();
    dir.flatten()
        .filter_map(|e| {
            let pid = e.file_name().to_string_lossy().into_owned();
            if !pid.bytes().all(|b| b.is_ascii_digit()) || pid == me {
                return None;
            }
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            if stat.rsplit(") ").next()?.starts_with('Z') {
                return None;
            }
            let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            let environ = std::fs::read(e.path().join("environ")).unwrap_or_default();
            let named = cmd.contains(marker) || String::from_utf8_lossy(&environ).contains(marker);
            named.then(|| format!("{pid} {}", cmd.trim()))
        })
        .collect()
}

/// The fakes of a run, reachable from the hosts through the bridge.
struct Fakes {
    llm: FakeLlm,
    line: FakeLine,
    slack: FakeSlack,
    /// The fake cloud of the order check.
    cloud: FakeLlm,
}

async fn run_on(net: &mut Net, args: &ChaosArgs) -> Result<ClusterReport> {
    net.build()?;
    for i in 0..NODES {
        net.start_nats(i)?;
    }
    net.start_postgres().await?;
    let fakes = Fakes {
        llm: FakeLlm::start().await.context("fake model")?,
        line: FakeLine::start().await.context("fake LINE")?,
        slack: FakeSlack::start().await.context("fake Slack")?,
        cloud: FakeLlm::start().await.context("fake cloud")?,
    };
    let llm = net.forward(&fakes.llm.base_url()).await?;
    let lb = net.forward(&fakes.line.base_url()).await?;
    let sb = net.forward(&fakes.slack.base_url()).await?;
    let cb = net.forward(&fakes.cloud.base_url()).await?;
    let others = (1..NODES).map(|i| net.nats_url(i)).collect::<Vec<_>>();
    let servers = others.join(",");
    let admin = format!(
        "postgres://ghost:ghost@{}:{}/ghost",
        net.bridge_ip(),
        net.pg_port
    );
    let mut extra: Vec<(&str, &str)> = vec![
        ("GHOST_BUS__SERVERS", &servers),
        ("GHOST_BUS__REPLICAS", "3"),
        // A deployment's model timeouts (config/ghost.yaml), not the tests' 5 s: the fakes
        // answer in milliseconds, and a call stalled by a fault (a host cut off mid-call,
        // a CPU starved by a host's restart) is what the run is about.
        ("GHOST_LLM__PERSONA__TIMEOUT_SECS", "60"),
        ("GHOST_LLM__WORKER__TIMEOUT_SECS", "60"),
        ("GHOST_LLM__CODER__TIMEOUT_SECS", "60"),
    ];
    extra.extend(overrides(&lb, &sb));
    if args.order_pairs > 0 {
        extra.extend(local_then_code::config(&cb));
        local_then_code::script(&fakes.llm, &fakes.cloud);
    } else {
        let marker = ghost_shared::affect::DEFAULT_TRAILER_MARKER;
        fakes.llm.set_default(Script::reply(&format!(
            "Hello! Nice to hear from you.\n{marker}\n{AFFECT}"
        )));
    }
    let env = TestEnv::on(&admin, &net.nats_url(0), &llm, &extra).await;
    let ctx = cluster_ready(&env).await?;
    let hosts: Vec<Arc<Children>> = (0..HOSTS)
        .map(|i| {
            let mut vars = env.vars.clone();
            // Each host starts at another server; all three are listed.
            let first = i % NODES;
            let rest: Vec<String> = (0..NODES)
                .filter(|k| *k != first)
                .map(|k| net.nats_url(k))
                .collect();
            vars.push(("GHOST_BUS__URL".into(), net.nats_url(first)));
            vars.push(("GHOST_BUS__SERVERS".into(), rest.join(",")));
            vars.push((
                "GHOST_GATEWAY__LISTEN".into(),
                format!("0.0.0.0:{}", net::GATEWAY_PORT),
            ));
            // Not configuration: the mark the check for stray processes looks for.
            vars.push((RUN_MARK.into(), format!("ghostc-{}", net.id)));
            Children::start_with(vars, net.host_wrapper(i), &HOST_SERVICES)
        })
        .collect();
    let bases: Vec<String> = (0..HOSTS).map(|i| net.gateway_base(i)).collect();
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(2))
        .timeout(Duration::from_secs(30))
        .build()?;
    for base in &bases {
        wait_ready(&client, base).await?;
    }
    eprintln!(
        "ghost-harness chaos --cluster: 3 NATS servers (R3), {HOSTS} hosts of 7 services, up"
    );
    let result = if args.throughput_turns > 0 {
        throughput::run(&env, &client, &bases, args).await
    } else if args.order_pairs > 0 {
        order::run(&env, &client, &bases, args.order_pairs, &fakes.cloud).await
    } else {
        drive(net, &env, &ctx, args, &fakes, &hosts, &client, &bases).await
    };
    for host in &hosts {
        host.kill_all().await;
    }
    env.cleanup().await;
    result
}

/// Waits until the cluster has a JetStream meta leader and places the R3 streams (the
/// driver's own connection creates them), up to a minute.
async fn cluster_ready(env: &TestEnv) -> Result<ServiceContext> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match env.context("chaos").await {
            Ok(ctx) => return Ok(ctx),
            Err(e) if Instant::now() > deadline => bail!("the NATS cluster did not form: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    }
}

/// The faults of the run, in order.
fn schedule(rounds: usize) -> Vec<(Fault, usize)> {
    (0..rounds)
        .flat_map(|r| {
            [
                (Fault::NatsLeader, 0),
                // Host 2 is killed and host 1 cut off in the first round; the other way round
                // in the next.
                (Fault::HostKill, (r + 1) % HOSTS),
                (Fault::Partition, r % HOSTS),
                (Fault::PostgresRestart, 0),
            ]
        })
        .collect()
}

/// The traffic's windows: message `i` belongs to window `i * (faults + 1) / messages`;
/// window 0 is before the first fault, window `k` opens with fault `k`.
struct Windows {
    messages: usize,
    count: usize,
    /// When each window opened and the pause between its messages.
    opened: Mutex<Vec<Option<(Instant, Duration)>>>,
    /// Messages that passed their window's gate.
    started: AtomicUsize,
}

impl Windows {
    fn of(&self, i: usize) -> usize {
        i * self.count / self.messages.max(1)
    }

    fn first(&self, w: usize) -> usize {
        (w * self.messages).div_ceil(self.count)
    }

    fn open(&self, w: usize, lasting: Duration) {
        let n = (self.first(w + 1) - self.first(w)).max(1);
        let pace = lasting / u32::try_from(n).unwrap_or(u32::MAX);
        if let Ok(mut opened) = self.opened.lock() {
            opened[w] = Some((Instant::now(), pace));
        }
    }

    /// Waits until message `i` may be sent: its window is open and its turn in the pace.
    async fn gate(&self, i: usize) {
        let w = self.of(i);
        loop {
            let opened = self.opened.lock().ok().and_then(|o| o[w]);
            if let Some((at, pace)) = opened {
                let k = u32::try_from(i - self.first(w)).unwrap_or(0);
                tokio::time::sleep_until((at + pace * k).into()).await;
                self.started.fetch_add(1, Ordering::Relaxed);
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// The fault run: traffic in windows, one fault per window, then quiescence and the count.
#[allow(clippy::too_many_arguments)]
async fn drive(
    net: &mut Net,
    env: &TestEnv,
    ctx: &ServiceContext,
    args: &ChaosArgs,
    fakes: &Fakes,
    hosts: &[Arc<Children>],
    client: &reqwest::Client,
    bases: &[String],
) -> Result<ClusterReport> {
    let token = api_token(env)?;
    let run = uuid::Uuid::new_v4().simple().to_string()[..8].to_owned();
    let faults = schedule(args.fault_rounds);
    let windows = Arc::new(Windows {
        messages: args.messages,
        count: faults.len() + 1,
        opened: Mutex::new(vec![None; faults.len() + 1]),
        started: AtomicUsize::new(0),
    });
    // Reminders, one per ten messages, in turn to the LINE users of window 0, shared among
    // the faults.
    let reminder_persons: Vec<String> = (0..windows.first(1))
        .filter(|i| Message::new(&run, *i).channel() == Channel::Line)
        .map(|i| Message::line_user(&run, i))
        .collect();
    let wanted = if reminder_persons.is_empty() {
        0
    } else {
        args.messages / 10
    };
    let start = Instant::now();
    windows.open(0, Duration::from_secs(3));

    let resends = Arc::new(AtomicUsize::new(0));
    let traffic = Traffic {
        client: client.clone(),
        bases: Arc::new(bases.to_vec()),
        token: token.clone(),
        run: run.clone(),
        resends: resends.clone(),
    };
    let gate = {
        let windows = windows.clone();
        move |i: usize| {
            let windows = windows.clone();
            async move { windows.gate(i).await }
        }
    };

    // Answer times of LINE and Slack messages: when a delivery to their target first shows.
    let seen: Mutex<HashMap<String, Instant>> = Mutex::new(HashMap::new());
    let watching = AtomicBool::new(true);
    // The hosts' supervisor: a service that exits on its own is started again.
    let restarted: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let supervisor = async {
        while watching.load(Ordering::Relaxed) {
            for (k, host) in hosts.iter().enumerate() {
                for name in host.restart_exited().await.unwrap_or_default() {
                    eprintln!(
                        "ghost-harness chaos --cluster: host{} {name} exited; restarted",
                        k + 1
                    );
                    if let Ok(mut r) = restarted.lock() {
                        r.push(format!("host{}/{name}", k + 1));
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    };
    let watcher = async {
        while watching.load(Ordering::Relaxed) {
            let now = Instant::now();
            if let Ok(mut seen) = seen.lock() {
                for d in answer_deliveries(&fakes.line, &fakes.slack) {
                    seen.entry(d.to).or_insert(now);
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let injector = async {
        let mut done = Vec::new();
        let (mut sessions, mut asked) = (Vec::new(), Vec::new());
        for (k, (fault, target)) in faults.iter().enumerate() {
            let w = k + 1;
            // Everything of the earlier windows is on its way, and the last fault healed a
            // little while ago.
            while windows.started.load(Ordering::Relaxed) < windows.first(w).min(args.messages) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            if k == 0 && wanted > 0 {
                // Window 0 is all sent: its LINE users have spoken (a reminder goes where its
                // person spoke).
                sessions = reminders::conversations(client, bases, &token, &reminder_persons).await;
            }
            let hold = hold(*fault, args);
            // This fault's share of the reminders, due while it is held and as it heals.
            let share = wanted * k / faults.len()..wanted * (k + 1) / faults.len();
            let span = hold + Duration::from_secs(2);
            asked.extend(
                reminders::ask(client, bases, &token, &run, &sessions, share, *fault, span).await,
            );
            let at = Instant::now();
            windows.open(w, hold + Duration::from_secs(2));
            let what = inject(net, ctx, env, hosts, *fault, *target, hold).await?;
            let held = at.elapsed();
            eprintln!(
                "ghost-harness chaos --cluster: {fault:?} of {what} at {:.1} s, {:.1} s",
                (at - start).as_secs_f64(),
                held.as_secs_f64()
            );
            done.push((*fault, what, at, held));
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
        Ok::<_, anyhow::Error>((done, asked))
    };
    let sending = send_all(&traffic, args.concurrency, args.messages, gate);
    let view = Where {
        client,
        bases,
        token: &token,
        run: &run,
        line: &fakes.line,
        slack: &fakes.slack,
    };
    let watched = async {
        let outcome = async {
            let (done, sent) = tokio::join!(injector, sending);
            let ((done, asked), sent) = (done?, sent?);
            eprintln!(
                "ghost-harness chaos --cluster: {} messages sent and {} faults in {:.1} s; waiting \
                 for quiescence",
                sent.len(),
                done.len(),
                start.elapsed().as_secs_f64()
            );
            let (answers, quiescent) = settle(env, args.settle_secs, &view, &sent).await?;
            // A reminder whose claimer was killed is taken again when its lease ends.
            let wait = Duration::from_secs(env.config.ghost.reminders.lease_secs + 60);
            let reminded = reminders::outcomes(env, &fakes.line, wanted, &asked, wait).await?;
            Ok::<_, anyhow::Error>((done, sent, answers, quiescent, reminded))
        }
        .await;
        watching.store(false, Ordering::Relaxed);
        outcome
    };
    let (outcome, (), ()) = tokio::join!(watched, watcher, supervisor);
    let (done, sent, answers, quiescent, reminded) = outcome?;
    // A delivery the watcher did not see in time counts as answered at the end.
    let end = Instant::now();
    let seen = seen.into_inner().unwrap_or_default();
    let answered_at = |i: usize, s: &Sent| -> Option<Instant> {
        match s.channel {
            Channel::Http => s.answered_at,
            Channel::Line => seen
                .get(&Message::line_user(&run, i))
                .or_else(|| seen.get(&Message::line_token(&run, i)))
                .copied()
                .or(Some(end)),
            Channel::Slack => seen
                .get(&Message::slack_channel(&run, i))
                .copied()
                .or(Some(end)),
        }
    };
    let base = tally(&sent, &answers);
    let mut problem_events = HashMap::new();
    let store = env.store().await;
    for ((i, s), a) in sent.iter().zip(&answers) {
        if s.accepted && *a != 1 {
            // The conversation's stream: the HTTP session, or the LINE user's or Slack
            // channel's (`session:line:U…`, `session:slack:C…`).
            let (kind, key) = match s.channel {
                Channel::Http => ("http", Message::session(&run, *i)),
                Channel::Line => ("line", Message::line_user(&run, *i)),
                Channel::Slack => ("slack", Message::slack_channel(&run, *i)),
            };
            let pattern = match s.channel {
                Channel::Http => ghost_shared::envelope::session_stream(&key),
                _ => format!("%:{key}%"),
            };
            let events: Vec<(String, i32)> = sqlx::query_as(
                "SELECT event_type || CASE WHEN event_type LIKE '%Failed' \
                 THEN ' ' || left(payload::text, 300) ELSE '' END, version \
                 FROM events WHERE stream LIKE $1 ORDER BY position",
            )
            .bind(pattern)
            .fetch_all(store.pool())
            .await
            .unwrap_or_default();
            let events = events
                .into_iter()
                .map(|(t, v)| format!("{t}@{v}"))
                .collect();
            problem_events.insert(format!("{kind}:{i}"), events);
        }
    }
    let mut figures = Vec::new();
    for (k, (fault, target, at, held)) in done.iter().enumerate() {
        let w = k + 1;
        let (from, to) = (windows.first(w), windows.first(w + 1).min(sent.len()));
        let mut window = Counts::default();
        let mut first: Option<Instant> = None;
        let mut in_flight = Duration::ZERO;
        for ((i, s), a) in sent.iter().zip(&answers) {
            let when = if *a > 0 { answered_at(*i, s) } else { None };
            if (from..to).contains(i) {
                window.add(s.accepted, *a);
                if let Some(t) = when {
                    first = Some(first.map_or(t, |f| f.min(t)));
                }
            } else if *i < from && s.accepted_at.is_some_and(|t| t < *at) {
                // A message never answered is counted as lost, not timed here.
                if let Some(t) = when.filter(|t| *t > *at) {
                    in_flight = in_flight.max(t - *at);
                }
            }
        }
        figures.push(FaultFigures {
            fault: *fault,
            target: target.clone(),
            at_secs: (*at - start).as_secs_f64(),
            held_secs: held.as_secs_f64(),
            window,
            answers_flow_after_secs: first.map(|t| t.saturating_duration_since(*at).as_secs_f64()),
            in_flight_answered_after_secs: Some(in_flight.as_secs_f64()),
        });
    }
    Ok(ClusterReport {
        run_id: net.id.clone(),
        nats_servers: NODES,
        hosts: HOSTS,
        total: base.total,
        http: base.http,
        line: base.line,
        slack: base.slack,
        faults: figures,
        resends: resends.load(Ordering::Relaxed),
        supervisor_restarts: restarted.into_inner().unwrap_or_default(),
        elapsed_secs: start.elapsed().as_secs_f64(),
        quiescent,
        problems: base.problems,
        problem_events,
        order: None,
        throughput: None,
        reminders: Some(reminded),
        left_behind: LeftBehind::default(),
    })
}

/// How long `fault` is held: a host cut off for `--partition-secs`, others down for [`DOWN`].
fn hold(fault: Fault, args: &ChaosArgs) -> Duration {
    match fault {
        Fault::Partition => Duration::from_secs(args.partition_secs),
        _ => DOWN,
    }
}

/// Injects one fault, holds it, ends it; returns what it hit.
async fn inject(
    net: &mut Net,
    ctx: &ServiceContext,
    env: &TestEnv,
    hosts: &[Arc<Children>],
    fault: Fault,
    target: usize,
    hold: Duration,
) -> Result<String> {
    match fault {
        Fault::NatsLeader => {
            let leader = stream_leader(ctx, &env.config.ghost.bus.stream_name).await?;
            let i = (0..NODES)
                .find(|i| net.node_name(*i) == leader)
                .with_context(|| format!("the stream's leader {leader} is none of the run's"))?;
            net.kill_nats(i).await;
            tokio::time::sleep(hold).await;
            net.start_nats(i)?;
            Ok(leader)
        }
        Fault::HostKill => {
            hosts[target].kill_all_and_restart(hold).await?;
            Ok(format!("host{}", target + 1))
        }
        Fault::Partition => {
            net.partition_host(target)?;
            tokio::time::sleep(hold).await;
            net.heal_host(target)?;
            Ok(format!("host{}", target + 1))
        }
        Fault::PostgresRestart => {
            net.restart_postgres().await?;
            Ok("postgres".into())
        }
    }
}

/// The name of the NATS server leading `stream` (asked until the stream has one).
async fn stream_leader(ctx: &ServiceContext, stream: &str) -> Result<String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(mut s) = ctx.bus().jetstream().get_stream(stream).await {
            if let Ok(info) = s.info().await {
                if let Some(leader) = info.cluster.as_ref().and_then(|c| c.leader.clone()) {
                    return Ok(leader);
                }
            }
        }
        if Instant::now() > deadline {
            bail!("stream {stream} has no leader");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn print(report: &ClusterReport, args: &ChaosArgs) -> Result<()> {
    if args.json {
        println!("{}", serde_json::to_string(report)?);
        return Ok(());
    }
    if let Some(t) = &report.throughput {
        println!(
            "ghost-harness chaos --cluster --throughput-turns: {} turns, {} clients over {} \
             hosts: {:.0} turns/s; request -> done p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms",
            t.turns, t.concurrency, report.hosts, t.turns_per_sec, t.p50_ms, t.p90_ms, t.p99_ms
        );
    } else if let Some(o) = &report.order {
        println!(
            "ghost-harness chaos --cluster --order-pairs: {} pairs ({} in one LINE webhook, {} back to \
             back), {} route decisions, {} without local_only, {} requests reached the cloud",
            o.pairs, o.batched, o.back_to_back, o.decisions, o.local_only_lost, o.cloud_calls
        );
    } else {
        println!(
            "ghost-harness chaos --cluster: {} NATS servers (R3), {} hosts, {} messages, {:.1} s, {} \
             resends, quiescent: {}, restarted by the supervisor: {:?}",
            report.nats_servers,
            report.hosts,
            report.total.sent,
            report.elapsed_secs,
            report.resends,
            report.quiescent,
            report.supervisor_restarts
        );
        println!(
            "  {:<18}{:>9}{:>7}{:>10}{:>10}{:>6}{:>6}{:>14}{:>12}",
            "fault",
            "target",
            "held s",
            "accepted",
            "answered",
            "lost",
            "dup",
            "answers in s",
            "in flight s"
        );
        let secs = |v: Option<f64>| v.map_or("never".into(), |s| format!("{s:.1}"));
        for f in &report.faults {
            let name = serde_json::to_value(f.fault)?;
            println!(
                "  {:<18}{:>9}{:>7.1}{:>10}{:>10}{:>6}{:>6}{:>14}{:>12}",
                name.as_str().unwrap_or_default(),
                f.target,
                f.held_secs,
                f.window.accepted,
                f.window.answered_once,
                f.window.lost,
                f.window.duplicated,
                secs(f.answers_flow_after_secs),
                secs(f.in_flight_answered_after_secs)
            );
        }
        let t = &report.total;
        println!(
            "  total: sent {}, accepted {}, answered once {}, lost {}, duplicated {}",
            t.sent, t.accepted, t.answered_once, t.lost, t.duplicated
        );
        if let Some(r) = &report.reminders {
            println!(
                "  reminders due during the faults: asked {} of {}, delivered once {}, doubled {}, \
                 missing {} ({} late)",
                r.asked, r.wanted, r.delivered_once, r.doubled, r.missing, r.late
            );
            for s in r
                .reminders
                .iter()
                .filter(|s| s.pushes != 1 || s.delivered != 1)
            {
                println!("  reminder problem: {s:?}");
            }
        }
    }
    for p in &report.problems {
        println!("  problem: {p}");
    }
    println!("  left behind: {:?}", report.left_behind);
    Ok(())
}

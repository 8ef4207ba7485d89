//! `ghost`: run Ghost's services and operate on its store.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use ghost::doctor::{self, require_infrastructure, Status};
use ghost::stack::{projection_by_name, projection_names, start_stack, ServiceName};
use ghost_shared::config::Config;
use ghost_shared::llm::LlmClient;
use ghost_shared::projector::ProjectionRunner;
use ghost_shared::store::EventStore;

/// mimalloc instead of glibc's allocator (see Cargo.toml and BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Ghost: a self-hosted persona AI backend.
#[derive(Parser)]
#[command(name = "ghost", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Runs every service in this process (they still talk only through NATS and Postgres).
    Up,
    /// Runs one service.
    Run {
        /// Which one.
        service: ServiceName,
    },
    /// Applies database migrations.
    Migrate,
    /// Checks configuration, PostgreSQL, NATS, every model and the platform secrets, one
    /// line each with the fix for what fails; exits non-zero when something fails.
    Doctor {
        /// Check only the model of this `llm.<role>` (repeatable), e.g. `--role persona`.
        #[arg(long)]
        role: Vec<String>,
    },
    /// Read-model maintenance.
    Projections {
        #[command(subcommand)]
        command: ProjectionsCommand,
    },
    /// Prints, from the services' descriptors, who appends and who consumes each event
    /// type, as a Markdown table (docs/architecture/events.md).
    Events,
    /// Computes the mood from a JSON array of episodes on stdin (the format of
    /// tests/fixtures/mood.json) and prints it as JSON.
    Mood {
        /// Evaluate at this Unix time (seconds).
        #[arg(long)]
        now: f64,
    },
    /// Drives chat turns through the whole pipeline against a fake model and reports
    /// throughput and latency (see BENCHMARKS.md).
    Load(ghost::load::LoadArgs),
    /// Routing probe: reads one message on stdin and prints the route the command and
    /// dictionary stages give it (no model call) as one JSON object.
    Route {
        /// Route as if the session were `/local`.
        #[arg(long)]
        local_only: bool,
        /// Dictionary file (default: `routing.rules_file` of the configuration).
        #[arg(long)]
        rules: Option<std::path::PathBuf>,
    },
    /// Masking probe: reads text on stdin and prints {"masked", "categories", "high_risk"}
    /// as one JSON object, with the rules of `masking.yaml` in the config directory.
    Mask {
        /// Rules file (default: `masking.yaml` in `$GHOST_CONFIG_DIR`, else `config/`).
        #[arg(long)]
        rules: Option<std::path::PathBuf>,
    },
    /// Lists the routes users corrected (negation or a command right after an automatically
    /// routed answer), counted by wrong → right route, as JSON (from the routing log).
    RouteReport {
        /// At most this many corrections, newest first.
        #[arg(long, default_value_t = 200)]
        limit: i64,
    },
    /// Resolves who speaks next from a reply on stdin (seed 000) and prints the decision as
    /// JSON: {"next_id", "reason", "extracted", "normalized"}.
    NextSpeaker(ghost::probe::NextSpeakerArgs),
    /// Autonomy on demand.
    Autonomy {
        #[command(subcommand)]
        command: AutonomyCommand,
    },
    /// Drives autonomy ticks (decision, web_access, result, persona message) against a
    /// zero-delay fake model and reports ticks per second and decision-to-message time
    /// (see BENCHMARKS.md).
    AutonomyLoad(ghost::autonomy_load::AutonomyLoadArgs),
    /// ActionDecision probe (seed 001).
    Decision {
        #[command(subcommand)]
        command: DecisionCommand,
    },
    /// Memory write plans (issue 12).
    WritePlan {
        #[command(subcommand)]
        command: WritePlanCommand,
    },
    /// A persona's memory as a versioned JSON document, and such a document applied here.
    Memory {
        #[command(subcommand)]
        command: MemoryCommand,
    },
    /// Seeds a private database with N utterances and measures recall's candidate
    /// collection and the write plan's validation + apply (see BENCHMARKS.md).
    MemoryBench(ghost::memory_bench::MemoryBenchArgs),
    /// Seeds a private database and times forgetting a person (see BENCHMARKS.md).
    ForgetBench(ghost::forget_bench::ForgetBenchArgs),
    /// Seeds a long conversation and measures recall's quality per configuration (see BENCHMARKS.md).
    RecallQuality(ghost::recall_quality::RecallQualityArgs),
    /// Recall (issue 12).
    Recall {
        #[command(subcommand)]
        command: RecallCommand,
    },
    /// Drives stage runs through the persona's durable loop against a zero-delay fake model
    /// and reports stage turns per second (see BENCHMARKS.md).
    LoadStage(ghost::stage_load::StageLoadArgs),
    /// Sends signed LINE webhooks from this process to a gateway in another and reports
    /// acknowledgement latency (see BENCHMARKS.md, Webhooks).
    WebhookLoad(ghost::webhook_load::WebhookLoadArgs),
    /// Measures time to first token and prompt and generation tokens/s of an
    /// OpenAI-compatible model server, e.g. `ghost run model` (see BENCHMARKS.md).
    ModelBench(ghost::model_bench::ModelBenchArgs),
    /// Chat turns through the whole pipeline on the embedded model, background work on:
    /// time to first token beside the model's own, and each contract's answers (see
    /// BENCHMARKS.md).
    ReplyBench(ghost::reply_bench::ReplyBenchArgs),
    /// Runs every service as its own process against fake platforms, SIGKILLs and restarts
    /// random services during mixed HTTP, LINE and Slack traffic, and reports accepted,
    /// answered once, lost and duplicated; exits non-zero when anything was lost or
    /// duplicated (see BENCHMARKS.md, Chaos).
    Chaos(ghost::chaos::ChaosArgs),
}

#[derive(Subcommand)]
enum AutonomyCommand {
    /// Asks the persona to deliberate now (records an AutonomyTickRequested; the worker
    /// decides) and prints the tick's event id.
    Tick,
}

#[derive(Subcommand)]
enum DecisionCommand {
    /// Reads an ActionDecision on stdin and prints {"valid": bool, "errors": [...]} (no
    /// database, no model).
    Validate,
}

#[derive(Subcommand)]
enum WritePlanCommand {
    /// Reads {"memory", "event_id", "plan"} on stdin, validates the plan and prints the
    /// memory after it ({"ok": true, "memory"}) or why it was rejected ({"ok": false,
    /// "errors"}). No database, no model.
    Apply {
        /// Now, in Unix seconds (the interest decay runs from memory.interest.updated_at).
        #[arg(long)]
        now: f64,
    },
}

#[derive(Subcommand)]
enum RecallCommand {
    /// Reads a message on stdin and prints its rule-based RetrievalPlan ({"mode", "queries",
    /// "time_hint", "limits", "focus"}). No database, no model.
    Plan,
}

#[derive(Subcommand)]
enum MemoryCommand {
    /// Writes every persona's memory (or one persona's, or one person's) as JSON.
    Export(ghost::memory_io::ExportArgs),
    /// Applies an exported document as events; a second import of it changes nothing.
    Import(ghost::memory_io::ImportArgs),
}

#[derive(Subcommand)]
enum ProjectionsCommand {
    /// Empties a projection and replays every event from position 0.
    Rebuild {
        /// Projection name (assistant_text, partner_mood_state, routing, memory).
        name: String,
    },
    /// Applies the events a projection parked (could not decode or apply) again; those that
    /// apply leave the parking table. Fails while any stays parked.
    Retry {
        /// Projection name (assistant_text, partner_mood_state, routing, memory).
        name: String,
    },
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(anyhow::Error::from)
        .and_then(|runtime| runtime.block_on(dispatch(cli.command)));
    match result {
        Ok(code) => code,
        Err(e) => {
            // The whole chain on one screen, never a backtrace.
            eprintln!("ghost: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn dispatch(command: Command) -> Result<std::process::ExitCode> {
    if let Command::Doctor { role } = command {
        return Ok(run_doctor(&role).await);
    }
    run(command).await?;
    Ok(std::process::ExitCode::SUCCESS)
}

/// `ghost doctor`: every check (or the named roles' models), one line each; failure when
/// any check failed.
async fn run_doctor(roles: &[String]) -> std::process::ExitCode {
    let checks = match Config::load_default() {
        Ok(config) if !roles.is_empty() => doctor::models_of_roles(&config, roles).await,
        loaded => doctor::run_all(loaded).await,
    };
    for check in &checks {
        println!("{check}");
    }
    let failed = checks.iter().filter(|c| c.status == Status::Fail).count();
    if failed == 0 {
        println!("ghost doctor: all checks passed");
        std::process::ExitCode::SUCCESS
    } else {
        println!("ghost doctor: {failed} check(s) failed");
        std::process::ExitCode::FAILURE
    }
}

/// Loads the configuration, as a `ghost doctor` line with its fix when it does not load.
fn load_config() -> Result<Config> {
    Config::load_default().map_err(|e| anyhow::anyhow!("{}", doctor::config_failure(&e)))
}

async fn run(command: Command) -> Result<()> {
    {
        match command {
            Command::Doctor { .. } => Ok(()),
            Command::Up => {
                let config = load_config()?;
                let services = ServiceName::up(&config);
                serve(config, &services, "ghost").await
            }
            Command::Run {
                service: ServiceName::Model,
            } => serve_model(load_config()?).await,
            Command::Run { service } => serve(load_config()?, &[service], service.as_str()).await,
            Command::Migrate => {
                let config = load_config()?;
                require_infrastructure(&config).await?;
                migrate(&config).await?;
                println!("migrations applied");
                Ok(())
            }
            Command::Projections {
                command: ProjectionsCommand::Rebuild { name },
            } => rebuild(&name).await,
            Command::Projections {
                command: ProjectionsCommand::Retry { name },
            } => retry_parked(&name).await,
            Command::Load(args) => {
                require_infrastructure(&load_config()?).await?;
                ghost::load::run(args).await
            }
            Command::Events => {
                print!("{}", ghost::events_table::markdown());
                Ok(())
            }
            Command::Mood { now } => mood_probe(now),
            Command::Route { local_only, rules } => route_probe(local_only, rules),
            Command::Mask { rules } => mask_probe(rules),
            Command::RouteReport { limit } => route_report(limit).await,
            Command::NextSpeaker(args) => ghost::probe::next_speaker(args),
            Command::Autonomy {
                command: AutonomyCommand::Tick,
            } => autonomy_tick().await,
            Command::AutonomyLoad(args) => {
                require_infrastructure(&load_config()?).await?;
                ghost::autonomy_load::run(args).await
            }
            Command::Decision {
                command: DecisionCommand::Validate,
            } => ghost::probe::decision_validate(),
            Command::WritePlan {
                command: WritePlanCommand::Apply { now },
            } => ghost::memory_probe::write_plan_apply(now),
            // Its own database and configuration (like the tests'): PostgreSQL admin access
            // from GHOST_TEST_ADMIN_DATABASE_URL, not the configured database.
            Command::MemoryBench(args) => ghost::memory_bench::run(args).await,
            Command::ForgetBench(args) => ghost::forget_bench::run(args).await,
            Command::RecallQuality(args) => ghost::recall_quality::run(args).await,
            Command::Memory {
                command: MemoryCommand::Export(args),
            } => {
                let config = load_config()?;
                require_infrastructure(&config).await?;
                ghost::memory_io::export(&config, args).await
            }
            Command::Memory {
                command: MemoryCommand::Import(args),
            } => {
                let config = load_config()?;
                require_infrastructure(&config).await?;
                ghost::memory_io::import(config, args).await
            }
            Command::Recall {
                command: RecallCommand::Plan,
            } => ghost::memory_probe::recall_plan(&load_config()?.ghost.memory),
            Command::LoadStage(args) => {
                require_infrastructure(&load_config()?).await?;
                ghost::stage_load::run(args).await
            }
            Command::ModelBench(args) => ghost::model_bench::run(args).await,
            // Its own database and configuration, like `ghost load`.
            Command::ReplyBench(args) => {
                require_infrastructure(&load_config()?).await?;
                ghost::reply_bench::run(args).await
            }
            Command::WebhookLoad(args) => {
                require_infrastructure(&load_config()?).await?;
                ghost::webhook_load::run(args).await
            }
            Command::Chaos(args) => {
                require_infrastructure(&load_config()?).await?;
                ghost::chaos::run(args).await
            }
        }
    }
}

/// `ghost autonomy tick`.
async fn autonomy_tick() -> Result<()> {
    let config = load_config()?;
    require_infrastructure(&config).await?;
    let persona = config.ghost.persona.character.clone();
    let ctx = ghost_shared::service::ServiceContext::connect(config, "cli").await?;
    let id = ghost_shared::autonomy::tick::request_tick(
        &ctx.log,
        uuid::Uuid::new_v4(),
        &persona,
        ghost_shared::autonomy::events::TickTrigger::Cli,
        ctx.service,
    )
    .await?;
    println!(
        "{}",
        serde_json::json!({"tick_event_id": id, "persona": persona})
    );
    Ok(())
}

async fn migrate(config: &Config) -> Result<EventStore> {
    let store = EventStore::connect(&config.ghost.database.url, 2)
        .await
        .with_context(|| format!("cannot reach Postgres at {}", config.ghost.database.url))?;
    store.migrate().await.context("migrations failed")?;
    Ok(store)
}

/// Says at start-up which model answers for each role: the choice is made before start
/// (by the configuration, or by ./deploy/run-local.sh) and logged, never switched later.
fn log_model_choice(config: &Config) {
    let embedded = &config.ghost.model;
    let mut roles: Vec<_> = config.ghost.llm.iter().collect();
    roles.sort_by_key(|(role, _)| role.as_str());
    for (role, cfg) in roles {
        let is_embedded = embedded.enabled && cfg.base_url.contains(&embedded.listen);
        tracing::info!(
            role = %role, provider = cfg.provider.as_str(), model = %cfg.model,
            base_url = %cfg.base_url, embedded = is_embedded,
            "model for role {role}: {} {}{}", cfg.provider.as_str(), cfg.model,
            if is_embedded { " (embedded, a tiny English model meant to show the system working)" } else { "" }
        );
    }
}

/// Says clearly, at start-up, which configured models do not answer.
async fn check_models(config: &Config) {
    for (role, cfg) in &config.ghost.llm {
        let Ok(client) = LlmClient::new(cfg.clone(), None) else {
            continue;
        };
        if let Err(e) = client.probe().await {
            let hint = cfg.unreachable_hint();
            tracing::warn!(
                role = %role, base_url = %cfg.base_url, model = %cfg.model, error = %e,
                "NO MODEL REACHABLE for role {role} at {}: work needing it fails with an `error` event until it answers ({hint})",
                cfg.base_url
            );
        }
    }
}

/// `ghost run model`: the embedded model server alone (no Postgres, no NATS).
async fn serve_model(config: Config) -> Result<()> {
    let _telemetry = ghost_shared::telemetry::init(
        "ghost-model",
        config.ghost.telemetry.otlp_endpoint.as_deref(),
        config.ghost.telemetry.json_logs,
    )?;
    let handle = ghost_model::start(&config).await?;
    if let Some(addr) = handle.addr {
        println!(
            "ghost: model {} serving http://{addr}/v1/chat/completions",
            config.ghost.model.name
        );
    }
    tokio::select! {
        _ = tokio::signal::ctrl_c() => { tracing::info!("shutting down"); Ok(()) }
        _ = handle.wait() => bail!("the model server stopped unexpectedly"),
    }
}

async fn serve(config: Config, services: &[ServiceName], name: &str) -> Result<()> {
    // Listening from the start: a SIGTERM during start-up stops gracefully once started.
    let mut stop = StopSignal::install();
    let _telemetry = ghost_shared::telemetry::init(
        &format!("ghost-{name}"),
        config.ghost.telemetry.otlp_endpoint.as_deref(),
        config.ghost.telemetry.json_logs,
    )?;
    require_infrastructure(&config).await?;
    migrate(&config).await?;
    log_model_choice(&config);
    // The embedded model starts first, so the others find it answering.
    let model = if services.contains(&ServiceName::Model) {
        let handle = ghost_model::start(&config).await?;
        if let Some(addr) = handle.addr {
            println!(
                "ghost: embedded model {} on http://{addr}",
                config.ghost.model.name
            );
        }
        Some(handle)
    } else {
        None
    };
    check_models(&config).await;
    let others: Vec<ServiceName> = services
        .iter()
        .copied()
        .filter(|s| *s != ServiceName::Model)
        .collect();
    let metrics_listen = config.ghost.telemetry.metrics_listen.clone();
    let mut stack = start_stack(config, &others).await?;
    stack.services.extend(model);
    if let (Some(listen), false) = (metrics_listen, others.contains(&ServiceName::Gateway)) {
        let metrics =
            ghost::stack::serve_metrics(ghost::stack::metrics_address(&listen, services)?).await?;
        if let Some(addr) = metrics.addr {
            tracing::info!(%addr, "metrics listening");
            println!("ghost: metrics on http://{addr}/metrics");
        }
        stack.services.push(metrics);
    }
    if let Some(addr) = stack.gateway_addr() {
        tracing::info!(%addr, "gateway listening");
        println!("ghost: gateway listening on http://{addr}");
    }
    tracing::info!(services = ?services.iter().map(|s| s.as_str()).collect::<Vec<_>>(), "running");
    let grace = Duration::from_secs(stack.ctx.config.ghost.bus.shutdown_grace_secs);
    tokio::select! {
        _ = stop.recv() => {}
        _ = stack.wait_any() => bail!("a service stopped unexpectedly"),
    }
    // Graceful stop: no more pulls; what is in flight finishes or is handed back within the
    // grace period; then the traces are flushed (the telemetry guard drops) and we exit 0.
    tracing::info!(in_flight = ghost_shared::shutdown::in_flight(), "stopping");
    ghost_shared::shutdown::request();
    let deadline = tokio::time::Instant::now() + grace + Duration::from_secs(1);
    while ghost_shared::shutdown::in_flight() > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stack.abort();
    tracing::info!(left = ghost_shared::shutdown::in_flight(), "stopped");
    Ok(())
}

/// SIGTERM (how service managers stop a process) or Ctrl-C.
struct StopSignal {
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
}

impl StopSignal {
    /// Starts listening (a signal that arrives before [`Self::recv`] is kept).
    fn install() -> Self {
        Self {
            #[cfg(unix)]
            term: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok(),
        }
    }

    /// Resolves on SIGTERM or Ctrl-C.
    async fn recv(&mut self) {
        #[cfg(unix)]
        if let Some(term) = &mut self.term {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            return;
        }
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// The runner of projection `name` on the configured store (migrated).
async fn runner_for(name: &str) -> Result<ProjectionRunner> {
    let config = load_config()?;
    let Some(projection) = projection_by_name(name, &config) else {
        bail!(
            "unknown projection {name}; known: {}",
            projection_names(&config).join(", ")
        );
    };
    require_infrastructure(&config).await?;
    let store = migrate(&config).await?;
    let p = &config.ghost.projections;
    Ok(ProjectionRunner::new(
        store,
        Arc::clone(&projection),
        p.batch_size,
        Duration::from_millis(p.poll_interval_ms),
    ))
}

async fn rebuild(name: &str) -> Result<()> {
    let runner = runner_for(name).await?;
    let n = runner.rebuild().await?;
    println!("rebuilt {name} from {n} events");
    Ok(())
}

async fn retry_parked(name: &str) -> Result<()> {
    let runner = runner_for(name).await?;
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

/// `ghost mood --now`: episodes on stdin, the mood as JSON on stdout. Constants come from
/// the configuration (the seed's defaults when there is no configuration directory).
fn mood_probe(now: f64) -> Result<()> {
    let mut input = String::new();
    std::io::Read::read_to_string(&mut std::io::stdin(), &mut input).context("reading stdin")?;
    let constants = match Config::load_default() {
        Ok(config) => config.ghost.mood.constants,
        Err(ghost_shared::config::ConfigError::Read { .. }) => Default::default(),
        Err(e) => return Err(e.into()),
    };
    let state = ghost_mood::mood::probe(&input, now, &constants)?;
    println!("{}", serde_json::to_string(&state)?);
    Ok(())
}

/// `ghost route`: the first routing stage for stdin, as JSON on stdout.
/// `ghost route-report`: the corrected routes as one JSON object.
async fn route_report(limit: i64) -> Result<()> {
    let config = load_config()?;
    require_infrastructure(&config).await?;
    let store = migrate(&config).await?;
    let report = ghost::route_report::report(store.pool(), limit).await?;
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}

fn route_probe(local_only: bool, rules: Option<std::path::PathBuf>) -> Result<()> {
    use std::io::Read;
    let path = match rules {
        Some(path) => path,
        None => {
            let config = Config::load_default()?;
            config.resolve(&config.ghost.routing.rules_file)
        }
    };
    let yaml = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let routing = ghost_router::routing::RoutingConfig::from_yaml(&yaml)
        .with_context(|| format!("{} is not a valid routing file", path.display()))?;
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .context("stdin is not UTF-8 text")?;
    let text = text.strip_suffix('\n').unwrap_or(&text);
    let output = ghost_router::routing::probe(text, local_only, &routing.dictionary);
    println!("{}", serde_json::to_string(&output)?);
    Ok(())
}

/// `ghost mask`: stdin text masked with the rules file, as JSON.
fn mask_probe(rules: Option<std::path::PathBuf>) -> Result<()> {
    use std::io::Read;
    let path = rules.unwrap_or_else(|| {
        std::env::var_os(ghost_shared::config::CONFIG_DIR_ENV)
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| std::path::PathBuf::from("config"))
            .join(ghost_shared::config::MASKING_FILE)
    });
    let masker = ghost_shared::masking::Masker::from_file(&path)?;
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .context("stdin is not UTF-8 text")?;
    let text = text.strip_suffix('\n').unwrap_or(&text);
    println!("{}", serde_json::to_string(&masker.mask(text))?);
    Ok(())
}

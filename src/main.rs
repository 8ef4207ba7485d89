//! `ghost`: run Ghost's services and operate on its store.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use ghost::stack::{projection_by_name, start_stack, ServiceName, PROJECTIONS};
use ghost_shared::config::Config;
use ghost_shared::llm::LlmClient;
use ghost_shared::projection::ProjectionRunner;
use ghost_shared::store::EventStore;

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
    /// Read-model maintenance.
    Projections {
        #[command(subcommand)]
        command: ProjectionsCommand,
    },
    /// Drives chat turns through the whole pipeline against a fake model and reports
    /// throughput and latency (see BENCHMARKS.md).
    Load(ghost::load::LoadArgs),
    /// Sends signed LINE webhooks from this process to a gateway in another and reports
    /// acknowledgement latency (see BENCHMARKS.md, Webhooks).
    WebhookLoad(ghost::webhook_load::WebhookLoadArgs),
}

#[derive(Subcommand)]
enum ProjectionsCommand {
    /// Empties a projection and replays every event from position 0.
    Rebuild {
        /// Projection name (assistant_text).
        name: String,
    },
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        match cli.command {
            Command::Up => serve(&ServiceName::ALL, "ghost").await,
            Command::Run { service } => serve(&[service], service.as_str()).await,
            Command::Migrate => {
                let config = Config::load_default()?;
                migrate(&config).await?;
                println!("migrations applied");
                Ok(())
            }
            Command::Projections {
                command: ProjectionsCommand::Rebuild { name },
            } => rebuild(&name).await,
            Command::Load(args) => ghost::load::run(args).await,
            Command::WebhookLoad(args) => ghost::webhook_load::run(args).await,
        }
    })
}

async fn migrate(config: &Config) -> Result<EventStore> {
    let store = EventStore::connect(&config.ghost.database.url, 2)
        .await
        .with_context(|| format!("cannot reach Postgres at {}", config.ghost.database.url))?;
    store.migrate().await.context("migrations failed")?;
    Ok(store)
}

/// Says clearly, at start-up, which configured models do not answer.
async fn check_models(config: &Config) {
    for (role, cfg) in &config.ghost.llm {
        let Ok(client) = LlmClient::new(cfg.clone(), None) else {
            continue;
        };
        if let Err(e) = client.probe().await {
            tracing::warn!(
                role = %role, base_url = %cfg.base_url, model = %cfg.model, error = %e,
                "NO MODEL REACHABLE for role {role} at {}: replies needing it will fail with an `error` event until it answers (start Ollama and `ollama pull {}`)",
                cfg.base_url, cfg.model
            );
        }
    }
}

async fn serve(services: &[ServiceName], name: &str) -> Result<()> {
    let config = Config::load_default()?;
    let _telemetry = ghost_shared::telemetry::init(
        &format!("ghost-{name}"),
        config.ghost.telemetry.otlp_endpoint.as_deref(),
        config.ghost.telemetry.json_logs,
    )?;
    migrate(&config).await?;
    check_models(&config).await;
    let stack = start_stack(config, services).await?;
    if let Some(addr) = stack.gateway_addr() {
        tracing::info!(%addr, "gateway listening");
        println!("ghost: gateway listening on http://{addr}");
    }
    tracing::info!(services = ?services.iter().map(|s| s.as_str()).collect::<Vec<_>>(), "running");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => { tracing::info!("shutting down"); Ok(()) }
        _ = stack.wait() => bail!("a service stopped unexpectedly"),
    }
}

async fn rebuild(name: &str) -> Result<()> {
    let Some(projection) = projection_by_name(name) else {
        bail!(
            "unknown projection {name}; known: {}",
            PROJECTIONS.join(", ")
        );
    };
    let config = Config::load_default()?;
    let store = migrate(&config).await?;
    let p = &config.ghost.projections;
    let runner = ProjectionRunner::new(
        store,
        Arc::clone(&projection),
        p.batch_size,
        Duration::from_millis(p.poll_interval_ms),
    );
    let n = runner.rebuild().await?;
    println!("rebuilt {name} from {n} events");
    Ok(())
}

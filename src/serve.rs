//! Serving: `ghost up` and `ghost run <service>` start the services on one set of
//! connections, serve until SIGTERM or Ctrl-C, and drain what is in flight before exiting
//! (the binary only parses arguments and calls these).

use std::time::Duration;

use anyhow::{bail, Context, Result};
use ghost_shared::config::Config;
use ghost_shared::llm::LlmClient;
use ghost_shared::store::EventStore;

use crate::doctor::require_infrastructure;
use crate::stack::{start_stack, ServiceName};

/// Applies the migrations to the configured database.
pub async fn migrate(config: &Config) -> Result<EventStore> {
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
pub async fn serve_model(config: Config) -> Result<()> {
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

/// `ghost up` / `ghost run <service>`: checks the infrastructure, migrates, starts
/// `services` (the embedded model first), serves until SIGTERM or Ctrl-C, then drains: no
/// more pulls, in-flight work finishes within `bus.shutdown_grace_secs`, traces flush.
pub async fn serve(config: Config, services: &[ServiceName], name: &str) -> Result<()> {
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
            crate::stack::serve_metrics(crate::stack::metrics_address(&listen, services)?).await?;
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

/// Runs a command's future on a new multi-threaded runtime and turns its result into the
/// exit code: an error is printed as its whole chain on one line after `name`, never a
/// backtrace.
pub fn run_command<F>(name: &str, command: F) -> std::process::ExitCode
where
    F: std::future::Future<Output = Result<std::process::ExitCode>>,
{
    let result = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(anyhow::Error::from)
        .and_then(|runtime| runtime.block_on(command));
    // The runtime is gone, and with it every handle of an embedded model: let its thread
    // stop before the process exits.
    ghost_model::engine::wait_stopped(std::time::Duration::from_secs(10));
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("{name}: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

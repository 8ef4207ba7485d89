//! Services as separate `ghost run <service>` child processes of this one, as they are
//! deployed: what `ghost chaos` kills and restarts, and what `ghost load --processes` and
//! `ghost load-stage --processes` measure.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use ghost_testkit::testing::{repo_config_dir, TestEnv};
use tokio::sync::Mutex;

/// The running `ghost run <service>` children.
pub struct Children {
    procs: Mutex<HashMap<&'static str, tokio::process::Child>>,
    vars: Vec<(String, String)>,
}

impl Children {
    /// Starts one child per service, each with `env`'s configuration. A child that cannot
    /// be started is left out (the caller notices it does not answer).
    pub fn start(env: &TestEnv, services: &[&'static str]) -> Arc<Children> {
        let mut procs = HashMap::new();
        let children = Children {
            procs: Mutex::new(HashMap::new()),
            vars: env.vars.clone(),
        };
        for name in services {
            if let Ok(child) = children.spawn(name) {
                procs.insert(*name, child);
            }
        }
        children.procs.try_lock().expect("fresh lock").extend(procs);
        Arc::new(children)
    }

    fn spawn(&self, service: &str) -> Result<tokio::process::Child> {
        let mut cmd = tokio::process::Command::new(std::env::current_exe()?);
        cmd.arg("run").arg(service).env_clear();
        // TOKIO_WORKER_THREADS sets each process's scheduler threads, as a deployment
        // running several services on one small machine may (BENCHMARKS.md).
        for key in ["PATH", "HOME", "TOKIO_WORKER_THREADS"] {
            if let Ok(v) = std::env::var(key) {
                cmd.env(key, v);
            }
        }
        cmd.env("RUST_LOG", "error")
            .env("GHOST_CONFIG_DIR", repo_config_dir())
            .envs(self.vars.iter().map(|(k, v)| (k, v)))
            // Every child serves its metrics on a port of its own: a shared default port
            // would let only the first one start.
            .env("GHOST_TELEMETRY__METRICS_LISTEN", "127.0.0.1:0")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .kill_on_drop(true);
        cmd.spawn()
            .with_context(|| format!("start ghost run {service}"))
    }

    /// SIGKILLs `service` and starts it again after `pause`.
    pub async fn kill_and_restart(&self, service: &'static str, pause: Duration) -> Result<()> {
        let mut procs = self.procs.lock().await;
        if let Some(mut child) = procs.remove(service) {
            child.kill().await.ok(); // SIGKILL, then reaped
        }
        tokio::time::sleep(pause).await;
        procs.insert(service, self.spawn(service)?);
        Ok(())
    }

    /// SIGKILLs every child and reaps it.
    pub async fn kill_all(&self) {
        for (_, mut child) in self.procs.lock().await.drain() {
            child.kill().await.ok();
        }
    }
}

/// Waits until the gateway at `base` answers `GET /healthz` (up to a minute).
pub async fn wait_ready(client: &reqwest::Client, base: &str) -> Result<()> {
    for _ in 0..600 {
        if let Ok(r) = client.get(format!("{base}/healthz")).send().await {
            if r.status().is_success() {
                return Ok(());
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!("the gateway at {base} did not come up")
}

/// A free loopback address for a child's listener (`GHOST_GATEWAY__LISTEN`).
pub fn free_loopback_addr() -> Result<String> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    Ok(format!("127.0.0.1:{port}"))
}

//! Services as separate `ghost run <service>` child processes of this one, as they are
//! deployed: what `ghost-harness chaos` kills and restarts, and what `ghost-harness load --processes` and
//! `ghost-harness load-stage --processes` measure.

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
    /// A command each child runs under (`setpriv ... ip netns exec <ns>` for a host of
    /// `ghost-harness chaos --cluster`); empty for a plain child.
    wrapper: Vec<String>,
}

impl Children {
    /// Starts one child per service, each with `env`'s configuration. A child that cannot
    /// be started is left out (the caller notices it does not answer).
    pub fn start(env: &TestEnv, services: &[&'static str]) -> Arc<Children> {
        Children::start_with(env.vars.clone(), Vec::new(), services)
    }

    /// Like [`Children::start`] with the `GHOST_*` variables `vars` (later ones win), each
    /// child started as `wrapper... ghost run <service>`.
    pub fn start_with(
        vars: Vec<(String, String)>,
        wrapper: Vec<String>,
        services: &[&'static str],
    ) -> Arc<Children> {
        let mut procs = HashMap::new();
        let children = Children {
            procs: Mutex::new(HashMap::new()),
            vars,
            wrapper,
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
        let exe = std::env::current_exe()?;
        let mut cmd = match self.wrapper.split_first() {
            Some((program, args)) => {
                let mut cmd = tokio::process::Command::new(program);
                cmd.args(args).arg(exe);
                cmd
            }
            None => tokio::process::Command::new(exe),
        };
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
            .kill_on_drop(true);
        // CHAOS_CHILD_LOG=<filter> shows the children's logs (they write them to stdout).
        match std::env::var("CHAOS_CHILD_LOG") {
            Ok(filter) => cmd.env("RUST_LOG", filter).stdout(Stdio::inherit()),
            Err(_) => cmd.stdout(Stdio::null()),
        };
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

    /// SIGKILLs every child (a whole host going down) and starts them all again after
    /// `pause`.
    pub async fn kill_all_and_restart(&self, pause: Duration) -> Result<()> {
        let mut procs = self.procs.lock().await;
        let names: Vec<&'static str> = procs.keys().copied().collect();
        for child in procs.values_mut() {
            child.start_kill().ok();
        }
        for (_, mut child) in procs.drain() {
            child.wait().await.ok();
        }
        tokio::time::sleep(pause).await;
        for name in names {
            procs.insert(name, self.spawn(name)?);
        }
        Ok(())
    }

    /// Starts again every child that exited on its own, as a supervisor (compose's
    /// `restart: unless-stopped`, systemd) would; returns their names.
    pub async fn restart_exited(&self) -> Result<Vec<&'static str>> {
        let mut procs = self.procs.lock().await;
        let exited: Vec<&'static str> = procs
            .iter_mut()
            .filter_map(|(name, child)| matches!(child.try_wait(), Ok(Some(_))).then_some(*name))
            .collect();
        for name in &exited {
            procs.insert(name, self.spawn(name)?);
        }
        Ok(exited)
    }

    /// SIGKILLs every child without waiting (for a `Drop`, where nothing can be awaited);
    /// a child whose lock is held is killed when it is dropped (`kill_on_drop`).
    pub fn start_kill_all(&self) {
        if let Ok(mut procs) = self.procs.try_lock() {
            for child in procs.values_mut() {
                child.start_kill().ok();
            }
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

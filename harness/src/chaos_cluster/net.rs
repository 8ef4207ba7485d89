//! The machine of `ghost-harness chaos --cluster`, built with `ip` and kept by one owner.
//!
//! - A bridge in the root namespace (`gc<id>br`, `10.X.Y.1/24`) and one network namespace
//!   per node: three NATS servers (`.11`–`.13`, routes between them, JetStream) and two
//!   Ghost hosts (`.21`, `.22`), each joined to the bridge by a veth pair.
//! - A private PostgreSQL (`initdb` in the run's directory, run as the `postgres` user on a
//!   free port of `127.0.0.1` and the bridge's address): the run restarts it, which the
//!   machine's Postgres, shared with the tests running beside it, must not be.
//! - Forwarders from the bridge's address to the fakes on `127.0.0.1` (model, LINE, Slack),
//!   so the fakes of `ghost-testkit` serve the hosts unchanged.
//!
//! Why Rust and not a script: one owner knows every name it made, and [`Net`]'s teardown
//! runs on every way out: the end of the run, an error, a panic (`Drop`), SIGINT/SIGTERM
//! (the caller's signal handler). Every child runs under `setpriv --pdeathsig KILL`, so a
//! SIGKILLed `ghost-harness chaos` takes its servers with it; what it leaves (namespaces, the
//! bridge, the directory) is swept by the next run ([`sweep_stale`]): the namespaces carry
//! the owner's pid.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use tokio::process::{Child, Command};

/// NATS servers of the cluster.
pub const NODES: usize = 3;
/// Ghost hosts.
pub const HOSTS: usize = 2;
/// Prefix of every namespace a run makes: `ghostc-<owner pid>-<id>-<role>`.
pub const NS_PREFIX: &str = "ghostc-";
/// The gateway's port inside a host's namespace.
pub const GATEWAY_PORT: u16 = 8080;

/// Runs `ip` (or any command) and fails with its stderr.
fn sh(program: &str, args: &[&str]) -> Result<String> {
    let out = std::process::Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("run {program}"))?;
    if !out.status.success() {
        bail!(
            "{program} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The namespaces, bridge, servers and directory of one run.
pub struct Net {
    /// Six hex digits naming everything of this run.
    pub id: String,
    /// `10.X.Y`: the run's /24.
    pub subnet: String,
    /// The run's directory (NATS stores, Postgres data).
    pub dir: PathBuf,
    namespaces: Vec<String>,
    bridge: Option<String>,
    nats: Vec<Option<Child>>,
    postgres: Option<Child>,
    /// Postgres's port (on `127.0.0.1` and the bridge's address).
    pub pg_port: u16,
    pg_bin: PathBuf,
    forwarders: Vec<tokio::task::JoinHandle<()>>,
    torn_down: bool,
}

impl Net {
    /// Checks the machine (root, `ip`, `nats-server`, `initdb`) and picks the run's names.
    pub fn new() -> Result<Net> {
        let uid = sh("id", &["-u"])?;
        if uid.trim() != "0" {
            bail!(
                "ghost-harness chaos --cluster needs root (network namespaces and veth pairs); \
                 run it as root"
            );
        }
        sh("ip", &["netns", "list"])
            .context("ghost-harness chaos --cluster needs iproute2 (ip)")?;
        sh("setpriv", &["--version"]).context("ghost-harness chaos --cluster needs setpriv")?;
        let pg_bin = postgres_bindir()?;
        sweep_stale();
        let id = uuid::Uuid::new_v4().simple().to_string()[..6].to_owned();
        let subnet = free_subnet(&id)?;
        let dir = std::env::temp_dir().join(format!("ghostc-{id}"));
        std::fs::create_dir_all(&dir)?;
        Ok(Net {
            id,
            subnet,
            dir,
            namespaces: Vec::new(),
            bridge: None,
            nats: Vec::new(),
            postgres: None,
            pg_port: 0,
            pg_bin,
            forwarders: Vec::new(),
            torn_down: false,
        })
    }

    /// The bridge's address: Postgres and the forwarders to the fakes listen on it.
    pub fn bridge_ip(&self) -> String {
        format!("{}.1", self.subnet)
    }

    /// NATS server `i`'s address.
    pub fn node_ip(&self, i: usize) -> String {
        format!("{}.{}", self.subnet, 11 + i)
    }

    /// Ghost host `i`'s address.
    pub fn host_ip(&self, i: usize) -> String {
        format!("{}.{}", self.subnet, 21 + i)
    }

    /// Host `i`'s gateway, as the senders reach it.
    pub fn gateway_base(&self, i: usize) -> String {
        format!("http://{}:{GATEWAY_PORT}", self.host_ip(i))
    }

    /// NATS server `i`'s client URL.
    pub fn nats_url(&self, i: usize) -> String {
        format!("nats://{}:4222", self.node_ip(i))
    }

    /// NATS server `i`'s name (as JetStream names a stream's leader).
    pub fn node_name(&self, i: usize) -> String {
        format!("gc{}-n{}", self.id, i + 1)
    }

    fn ns(&self, role: &str) -> String {
        format!("{NS_PREFIX}{}-{}-{role}", std::process::id(), self.id)
    }

    fn veth(&self, role: &str) -> String {
        format!("gc{}{role}", self.id)
    }

    /// Host `i`'s namespace.
    pub fn host_ns(&self, i: usize) -> String {
        self.ns(&format!("h{}", i + 1))
    }

    /// The command a host's process runs under: its namespace, killed with its owner.
    pub fn host_wrapper(&self, i: usize) -> Vec<String> {
        [
            "setpriv",
            "--pdeathsig",
            "KILL",
            "--",
            "ip",
            "netns",
            "exec",
        ]
        .into_iter()
        .map(String::from)
        .chain([self.host_ns(i)])
        .collect()
    }

    /// The bridge and one namespace per node and host, each on the bridge.
    pub fn build(&mut self) -> Result<()> {
        let bridge = format!("gc{}br", self.id);
        sh("ip", &["link", "add", &bridge, "type", "bridge"])?;
        self.bridge = Some(bridge.clone());
        let cidr = format!("{}/24", self.bridge_ip());
        sh("ip", &["addr", "add", &cidr, "dev", &bridge])?;
        sh("ip", &["link", "set", &bridge, "up"])?;
        let ips = (0..NODES)
            .map(|i| self.node_ip(i))
            .chain((0..HOSTS).map(|i| self.host_ip(i)));
        let roles: Vec<(String, String)> = roles().zip(ips).collect();
        for (role, ip) in roles {
            let (ns, veth) = (self.ns(&role), self.veth(&role));
            sh("ip", &["netns", "add", &ns])?;
            self.namespaces.push(ns.clone());
            sh(
                "ip",
                &[
                    "link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns", &ns,
                ],
            )?;
            sh("ip", &["link", "set", &veth, "master", &bridge, "up"])?;
            let cidr = format!("{ip}/24");
            sh("ip", &["-n", &ns, "addr", "add", &cidr, "dev", "eth0"])?;
            sh("ip", &["-n", &ns, "link", "set", "eth0", "up"])?;
            sh("ip", &["-n", &ns, "link", "set", "lo", "up"])?;
        }
        Ok(())
    }

    /// Starts NATS server `i` (again, after a kill: same store, same name).
    pub fn start_nats(&mut self, i: usize) -> Result<()> {
        let store = self.dir.join(format!("n{}", i + 1));
        std::fs::create_dir_all(&store)?;
        let routes: Vec<String> = (0..NODES)
            .map(|k| format!("nats://{}:6222", self.node_ip(k)))
            .collect();
        let ns = self.ns(&format!("n{}", i + 1));
        let log = self.dir.join(format!("n{}.log", i + 1));
        let mut cmd = Command::new("setpriv");
        cmd.args(["--pdeathsig", "KILL", "--", "ip", "netns", "exec", &ns])
            .arg(nats_server())
            .args(["--server_name", &self.node_name(i)])
            .args(["-a", "0.0.0.0", "-p", "4222", "-js", "-sd"])
            .arg(&store)
            .args(["--cluster_name", &format!("gc{}", self.id)])
            .args([
                "--cluster",
                "nats://0.0.0.0:6222",
                "--routes",
                &routes.join(","),
            ])
            // Clients keep to the URLs they were given (bus.url, bus.servers).
            .arg("--no_advertise")
            .arg("-l")
            .arg(log);
        let child = quiet_spawn(&mut cmd).context("start nats-server")?;
        if self.nats.len() <= i {
            self.nats.resize_with(i + 1, || None);
        }
        self.nats[i] = Some(child);
        Ok(())
    }

    /// SIGKILLs NATS server `i` and reaps it.
    pub async fn kill_nats(&mut self, i: usize) {
        if let Some(mut child) = self.nats.get_mut(i).and_then(Option::take) {
            child.kill().await.ok();
        }
    }

    /// `initdb` and start the private Postgres: role and database `ghost` as on a
    /// development machine (`deploy/services.sh`), trust for the run's /24.
    pub async fn start_postgres(&mut self) -> Result<()> {
        let data = self.dir.join("pg");
        std::fs::create_dir_all(&data)?;
        sh("chown", &["postgres:postgres", &path_str(&data)?])?;
        let initdb = self.pg_bin.join("initdb");
        let out = std::process::Command::new("setpriv")
            .args([
                "--reuid",
                "postgres",
                "--regid",
                "postgres",
                "--init-groups",
                "--",
            ])
            .arg(initdb)
            .arg("-D")
            .arg(&data)
            .args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"])
            .stdin(Stdio::null())
            .output()
            .context("initdb")?;
        if !out.status.success() {
            bail!("initdb: {}", String::from_utf8_lossy(&out.stderr).trim());
        }
        let hba = format!("host all all {}.0/24 trust\n", self.subnet);
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(data.join("pg_hba.conf"))?;
        std::io::Write::write_all(&mut file, hba.as_bytes())?;
        self.pg_port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        self.spawn_postgres()?;
        self.wait_postgres().await?;
        let admin = sqlx::PgPool::connect(&self.pg_url("postgres", "postgres")).await?;
        sqlx::query("CREATE ROLE ghost LOGIN PASSWORD 'ghost' CREATEDB")
            .execute(&admin)
            .await?;
        sqlx::query("CREATE DATABASE ghost OWNER ghost")
            .execute(&admin)
            .await?;
        admin.close().await;
        Ok(())
    }

    fn spawn_postgres(&mut self) -> Result<()> {
        let listen = format!("listen_addresses=127.0.0.1,{}", self.bridge_ip());
        let mut cmd = Command::new("setpriv");
        cmd.args([
            "--reuid",
            "postgres",
            "--regid",
            "postgres",
            "--init-groups",
        ])
        .args(["--pdeathsig", "KILL", "--"])
        .arg(self.pg_bin.join("postgres"))
        .arg("-D")
        .arg(self.dir.join("pg"))
        .args(["-p", &self.pg_port.to_string(), "-c", &listen])
        .args([
            "-c",
            "unix_socket_directories=",
            "-c",
            "max_connections=400",
        ]);
        let child = quiet_spawn(&mut cmd).context("start postgres")?;
        self.postgres = Some(child);
        Ok(())
    }

    async fn wait_postgres(&self) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(pool) = sqlx::PgPool::connect(&self.pg_url("postgres", "postgres")).await {
                pool.close().await;
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "the private Postgres did not come up on port {}",
                    self.pg_port
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// A URL of the private Postgres from the root namespace.
    pub fn pg_url(&self, user: &str, database: &str) -> String {
        format!("postgres://{user}@127.0.0.1:{}/{database}", self.pg_port)
    }

    /// Restarts Postgres: a fast shutdown (SIGINT: sessions end, a checkpoint), then a
    /// start on the same data.
    pub async fn restart_postgres(&mut self) -> Result<()> {
        if let Some(mut child) = self.postgres.take() {
            if let Some(pid) = child.id() {
                sh("kill", &["-INT", &pid.to_string()])?;
            }
            if tokio::time::timeout(Duration::from_secs(30), child.wait())
                .await
                .is_err()
            {
                child.kill().await.ok();
            }
        }
        self.spawn_postgres()?;
        self.wait_postgres().await
    }

    /// Cuts host `i` off (its veth down: NATS, Postgres, the fakes and the senders all
    /// lose it; connections stay open and resume when it heals).
    pub fn partition_host(&self, i: usize) -> Result<()> {
        sh(
            "ip",
            &["link", "set", &self.veth(&format!("h{}", i + 1)), "down"],
        )?;
        Ok(())
    }

    /// Ends [`Net::partition_host`].
    pub fn heal_host(&self, i: usize) -> Result<()> {
        sh(
            "ip",
            &["link", "set", &self.veth(&format!("h{}", i + 1)), "up"],
        )?;
        Ok(())
    }

    /// A forwarder from the bridge's address to `target_base` (`http://127.0.0.1:PORT`);
    /// returns the base URL the hosts use.
    pub async fn forward(&mut self, target_base: &str) -> Result<String> {
        let target: SocketAddr = target_base
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .parse()
            .with_context(|| format!("forward to {target_base}"))?;
        let listener = tokio::net::TcpListener::bind((self.bridge_ip().as_str(), 0)).await?;
        let port = listener.local_addr()?.port();
        self.forwarders.push(tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                tokio::spawn(async move {
                    if let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
            }
        }));
        Ok(format!("http://{}:{port}", self.bridge_ip()))
    }

    /// Stops every server, deletes every namespace, the bridge and the directory. Runs
    /// once; safe on a half-built run.
    pub fn teardown(&mut self) {
        if self.torn_down {
            return;
        }
        self.torn_down = true;
        for f in &self.forwarders {
            f.abort();
        }
        for child in self.nats.iter_mut().flatten() {
            child.start_kill().ok();
        }
        if let Some(child) = self.postgres.as_mut() {
            child.start_kill().ok();
        }
        // Each veth pair first, by its host end: deleted with its namespace, it goes later,
        // in the kernel's own time (a loaded run's check found them still there).
        for role in roles() {
            let _ = sh("ip", &["link", "del", &self.veth(&role)]);
        }
        for ns in &self.namespaces {
            remove_namespace(ns);
        }
        if let Some(bridge) = &self.bridge {
            let _ = sh("ip", &["link", "del", bridge]);
        }
        // Postgres may still be writing for a moment after its SIGKILL.
        for _ in 0..20 {
            if std::fs::remove_dir_all(&self.dir).is_ok() || !self.dir.exists() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        self.teardown();
    }
}

/// The roles with a namespace and a veth: every NATS node, every host.
fn roles() -> impl Iterator<Item = String> {
    (0..NODES)
        .map(|i| format!("n{}", i + 1))
        .chain((0..HOSTS).map(|i| format!("h{}", i + 1)))
}

/// Kills whatever still runs in `ns` and deletes it (its veth pair goes with it).
fn remove_namespace(ns: &str) {
    if let Ok(pids) = sh("ip", &["netns", "pids", ns]) {
        for pid in pids.split_whitespace() {
            let _ = sh("kill", &["-KILL", pid]);
        }
    }
    let _ = sh("ip", &["netns", "del", ns]);
}

/// Removes what runs of a `ghost-harness chaos --cluster` that no longer exists left behind (it
/// was SIGKILLed): their namespaces, bridges and directories.
pub fn sweep_stale() {
    let Ok(list) = sh("ip", &["netns", "list"]) else {
        return;
    };
    for line in list.lines() {
        let name = line.split_whitespace().next().unwrap_or_default();
        let Some(rest) = name.strip_prefix(NS_PREFIX) else {
            continue;
        };
        let mut parts = rest.splitn(3, '-');
        let (Some(pid), Some(id)) = (parts.next(), parts.next()) else {
            continue;
        };
        if Path::new("/proc").join(pid).exists() {
            continue;
        }
        for role in roles() {
            let _ = sh("ip", &["link", "del", &format!("gc{id}{role}")]);
        }
        remove_namespace(name);
        let _ = sh("ip", &["link", "del", &format!("gc{id}br")]);
        let _ = std::fs::remove_dir_all(std::env::temp_dir().join(format!("ghostc-{id}")));
    }
}

/// The namespaces of runs still present (for the report's check that nothing is left).
pub fn namespaces_of(id: &str) -> Vec<String> {
    sh("ip", &["netns", "list"])
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(NS_PREFIX) && n.contains(&format!("-{id}-")))
        .map(String::from)
        .collect()
}

/// A `10.X.Y` /24 no address or route of this machine uses.
fn free_subnet(id: &str) -> Result<String> {
    let used = sh("ip", &["-4", "route", "show", "table", "all"])? + &sh("ip", &["-4", "addr"])?;
    let seed = u32::from_str_radix(id, 16).unwrap_or(1);
    for k in 0..64_u32 {
        let v = seed.wrapping_add(k.wrapping_mul(2_654_435_761));
        let subnet = format!("10.{}.{}", 64 + (v >> 8) % 64, v % 256);
        if !used.contains(&format!("{subnet}.")) {
            return Ok(subnet);
        }
    }
    bail!("no free 10.x.y.0/24 for the cluster")
}

fn nats_server() -> String {
    for candidate in ["/usr/sbin/nats-server", "/usr/local/bin/nats-server"] {
        if Path::new(candidate).exists() {
            return candidate.to_owned();
        }
    }
    "nats-server".to_owned()
}

/// The directory of `postgres` and `initdb` (`pg_config --bindir`, else `initdb` on PATH).
fn postgres_bindir() -> Result<PathBuf> {
    if let Ok(dir) = sh("pg_config", &["--bindir"]) {
        let dir = PathBuf::from(dir.trim());
        if dir.join("postgres").exists() {
            return Ok(dir);
        }
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let initdb = dir.join("initdb");
        if let Ok(real) = std::fs::canonicalize(&initdb) {
            if let Some(bin) = real.parent().filter(|b| b.join("postgres").exists()) {
                return Ok(bin.to_path_buf());
            }
        }
    }
    bail!("ghost-harness chaos --cluster runs its own PostgreSQL: initdb and postgres not found")
}

/// Starts `cmd` with no input or output, killed when its handle is dropped.
fn quiet_spawn(cmd: &mut Command) -> std::io::Result<Child> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
}

fn path_str(p: &Path) -> Result<String> {
    p.to_str()
        .map(String::from)
        .context("a non-UTF-8 temporary directory")
}

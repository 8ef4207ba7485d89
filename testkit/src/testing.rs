//! Test environments on the real Postgres and NATS: a fresh database and a private
//! subject prefix and stream per test, so tests run in parallel and repeatedly.

use std::path::PathBuf;
use std::time::Duration;

use uuid::Uuid;

use ghost_shared::config::Config;
use ghost_shared::service::{ServiceContext, ServiceError};
use ghost_shared::store::EventStore;

/// Admin URL used to create and drop test databases.
pub const TEST_ADMIN_URL_ENV: &str = "GHOST_TEST_ADMIN_DATABASE_URL";
/// Base URL of test databases (the database name is appended).
const DEFAULT_ADMIN_URL: &str = "postgres://ghost:ghost@127.0.0.1:5432/ghost";
/// Model name test configurations give the persona (so a fake can tell roles apart).
pub const PERSONA_MODEL: &str = "persona-model";
/// Model name test configurations give the worker.
pub const WORKER_MODEL: &str = "worker-model";

/// NATS URL for tests.
pub const TEST_NATS_URL_ENV: &str = "GHOST_TEST_NATS_URL";

/// One test's private slice of Postgres and NATS.
pub struct TestEnv {
    /// Unique id of this environment.
    pub id: String,
    /// The database created for it.
    pub database: String,
    /// Configuration pointing at it (repository config files + overrides).
    pub config: Config,
    /// The overrides used, as `GHOST_*` variables (to hand to a child `ghost` process).
    pub vars: Vec<(String, String)>,
    admin_url: String,
    /// Set by [`TestEnv::cleanup`]; a test that panics before it is cleaned up on drop.
    cleaned: bool,
}

/// The repository's `config/` directory.
pub fn repo_config_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../config"))
}

impl TestEnv {
    /// Creates the database (migrated) and a configuration whose persona model is at
    /// `llm_base_url`; `extra` overrides come last.
    pub async fn new(llm_base_url: &str, extra: &[(&str, &str)]) -> TestEnv {
        let admin_url =
            std::env::var(TEST_ADMIN_URL_ENV).unwrap_or_else(|_| DEFAULT_ADMIN_URL.into());
        let nats =
            std::env::var(TEST_NATS_URL_ENV).unwrap_or_else(|_| "nats://127.0.0.1:4222".into());
        TestEnv::on(&admin_url, &nats, llm_base_url, extra).await
    }

    /// This environment's database URL with a role that does not exist: a command given it
    /// must say so, not panic.
    pub fn database_url_with_unknown_role(&self) -> String {
        self.config
            .ghost
            .database
            .url
            .replacen("ghost:ghost@", "nosuchrole:x@", 1)
    }

    /// [`TestEnv::new`] on the Postgres of `admin_url` and the NATS server at `nats`
    /// (`ghost-harness chaos --cluster` runs its own of both).
    pub async fn on(
        admin_url: &str,
        nats: &str,
        llm_base_url: &str,
        extra: &[(&str, &str)],
    ) -> TestEnv {
        let id = Uuid::new_v4().simple().to_string()[..12].to_owned();
        let admin_url = admin_url.to_owned();
        let nats = nats.to_owned();
        let database = format!("ghost_t_{id}");
        create_database(&admin_url, &database).await;
        let db_url = match admin_url.rsplit_once('/') {
            Some((base, _)) => format!("{base}/{database}"),
            None => panic!("admin url without a database: {admin_url}"),
        };
        let mut vars: Vec<(String, String)> = vec![
            ("GHOST_DATABASE__URL".into(), db_url),
            ("GHOST_DATABASE__MAX_CONNECTIONS".into(), "8".into()),
            ("GHOST_BUS__URL".into(), nats),
            ("GHOST_BUS__SUBJECT_PREFIX".into(), format!("t{id}")),
            ("GHOST_BUS__STREAM_NAME".into(), format!("GHOSTTEST_{id}")),
            ("GHOST_BUS__STORAGE".into(), "memory".into()),
            ("GHOST_BUS__ACK_WAIT_SECS".into(), "3".into()),
            // JetStream reserves max_bytes per memory stream: keep tests' reservations small.
            (
                "GHOST_BUS__MAX_BYTES".into(),
                (64 * 1024 * 1024).to_string(),
            ),
            ("GHOST_BUS__MAX_AGE_SECS".into(), "3600".into()),
            ("GHOST_OUTBOX__RELAY_INTERVAL_MS".into(), "100".into()),
            ("GHOST_OUTBOX__GRACE_MS".into(), "300".into()),
            ("GHOST_PROJECTIONS__POLL_INTERVAL_MS".into(), "50".into()),
            ("GHOST_GATEWAY__LISTEN".into(), "127.0.0.1:0".into()),
            // Child processes of one test run side by side: each takes a free port.
            (
                "GHOST_TELEMETRY__METRICS_LISTEN".into(),
                "127.0.0.1:0".into(),
            ),
            ("GHOST_LLM__PERSONA__PROVIDER".into(), "ollama".into()),
            ("GHOST_LLM__PERSONA__BASE_URL".into(), llm_base_url.into()),
            ("GHOST_LLM__PERSONA__TIMEOUT_SECS".into(), "5".into()),
            ("GHOST_LLM__PERSONA__MODEL".into(), PERSONA_MODEL.into()),
            // Channel tests are about delivery, not Kuro's delegation: every channel routes by
            // the (catch-all CHAT) dictionary unless a test asks for kuro mode.
            ("GHOST_ROUTING__ENTRY_MODES__LINE".into(), "router".into()),
            // The default configuration reaches Ollama through /v1; the tests' fake serves
            // both wires and most tests were written against Ollama's.
            ("GHOST_LLM__WORKER__PROVIDER".into(), "ollama".into()),
            ("GHOST_LLM__WORKER__MODEL".into(), WORKER_MODEL.into()),
            ("GHOST_LLM__WORKER__BASE_URL".into(), llm_base_url.into()),
            ("GHOST_LLM__WORKER__TIMEOUT_SECS".into(), "5".into()),
            // Never the real cloud from a test: tests of CODE point it at their own fake.
            ("GHOST_LLM__CODER__BASE_URL".into(), llm_base_url.into()),
            ("GHOST_LLM__CODER__TIMEOUT_SECS".into(), "5".into()),
            // Plumbing tests route every message to CHAT by rule (no classifier to wait
            // for); routing tests set config/routing.yaml again.
            (
                "GHOST_ROUTING__RULES_FILE".into(),
                "tests/fixtures/routing_chat_only.yaml".into(),
            ),
            ("GHOST_API_TOKEN".into(), "test-token".into()),
            // No embedding server runs in a test unless it starts one (the model's files
            // are on every machine that ran deploy/model.sh).
            ("GHOST_MODEL__EMBEDDINGS".into(), "false".into()),
            // Recall's selection asks the worker model: off unless a test of memory turns it
            // on, so tests that script the worker's answers in order get only their calls.
            ("GHOST_MEMORY__RECALL_ENABLED".into(), "false".into()),
        ];
        for (k, v) in extra {
            vars.push(((*k).into(), (*v).into()));
        }
        let config = Config::load(&repo_config_dir(), vars.clone())
            .unwrap_or_else(|e| panic!("test config: {e}"));
        let env = TestEnv {
            id,
            database,
            config,
            vars,
            admin_url,
            cleaned: false,
        };
        env.store()
            .await
            .migrate()
            .await
            .unwrap_or_else(|e| panic!("migrate: {e}"));
        env
    }

    /// A fresh store connection to this environment's database.
    pub async fn store(&self) -> EventStore {
        EventStore::connect(&self.config.ghost.database.url, 8)
            .await
            .unwrap_or_else(|e| panic!("connect store: {e}"))
    }

    /// A connected service context.
    pub async fn context(&self, service: &'static str) -> Result<ServiceContext, ServiceError> {
        ServiceContext::connect(self.config.clone(), service).await
    }

    /// Drops the database and the streams (best effort).
    pub async fn cleanup(mut self) {
        remove(&self.config, &self.admin_url, &self.database).await;
        self.cleaned = true;
    }
}

/// A test that panics never reaches its `cleanup`: its database and streams are removed
/// here instead, so failing runs do not pile up databases. Only while panicking: a test
/// that ends without `cleanup` may have left children that still use them.
impl Drop for TestEnv {
    fn drop(&mut self) {
        if self.cleaned || !std::thread::panicking() {
            return;
        }
        let (config, admin_url, database) = (
            self.config.clone(),
            self.admin_url.clone(),
            self.database.clone(),
        );
        // Its own thread and runtime: this may run on a runtime's thread, which cannot block
        // on another runtime. A failure there is only a leak, never a second panic here.
        let _ = std::thread::spawn(move || {
            if let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                runtime.block_on(remove(&config, &admin_url, &database));
            }
        })
        .join();
    }
}

/// Deletes an environment's streams and drops its database, ignoring failures.
async fn remove(config: &Config, admin_url: &str, database: &str) {
    if let Ok(bus) = ghost_shared::bus::Bus::connect(config.ghost.bus.clone()).await {
        let _ = bus.delete_streams().await;
    }
    if let Ok(admin) = sqlx::PgPool::connect(admin_url).await {
        let _ = sqlx::query(&format!(
            "DROP DATABASE IF EXISTS \"{database}\" WITH (FORCE)"
        ))
        .execute(&admin)
        .await;
        admin.close().await;
    }
}

async fn create_database(admin_url: &str, name: &str) {
    let admin = sqlx::PgPool::connect(admin_url)
        .await
        .unwrap_or_else(|e| panic!("connect {admin_url}: {e}"));
    for attempt in 0..10 {
        match sqlx::query(&format!("CREATE DATABASE \"{name}\""))
            .execute(&admin)
            .await
        {
            Ok(_) => return,
            // Concurrent CREATE DATABASE from template1 can collide; try again.
            Err(e) if attempt < 9 => {
                let _ = e;
                tokio::time::sleep(Duration::from_millis(100 * (attempt + 1))).await;
            }
            Err(e) => panic!("create database {name}: {e}"),
        }
    }
}

/// Whether nothing is in flight: the outbox is empty (every committed event is published)
/// and no durable consumer of the event stream `stream_name` has pending or unacknowledged
/// messages. After this, nothing more happens on its own (but timers such as the turn
/// watchdog).
pub async fn pipeline_idle(
    bus: &ghost_shared::bus::Bus,
    store: &EventStore,
    stream_name: &str,
) -> bool {
    use futures::TryStreamExt;
    let check = async {
        let outbox: i64 = sqlx::query_scalar("SELECT count(*) FROM outbox")
            .fetch_one(store.pool())
            .await
            .ok()?;
        if outbox > 0 {
            return None;
        }
        let stream = bus.jetstream().get_stream(stream_name).await.ok()?;
        let names: Vec<String> = stream.consumer_names().try_collect().await.ok()?;
        for name in names {
            let mut consumer: async_nats::jetstream::consumer::PullConsumer =
                stream.get_consumer(&name).await.ok()?;
            let info = consumer.info().await.ok()?;
            if info.num_pending > 0 || info.num_ack_pending > 0 {
                return None;
            }
        }
        Some(())
    };
    check.await.is_some()
}

/// Polls `count` every 50 ms until it reaches `target`, for as long as it keeps growing: it
/// panics only when `stall` passes without progress. A slow machine shows as a slow test,
/// not as a failure, while the work it waits for is still being done (issue 50).
pub async fn progressing<F, Fut>(stall: Duration, what: &str, target: usize, mut count: F) -> usize
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = usize>,
{
    let (mut best, mut since) = (0, tokio::time::Instant::now());
    loop {
        let now = count().await;
        if now >= target {
            return now;
        }
        if now > best {
            (best, since) = (now, tokio::time::Instant::now());
        } else if since.elapsed() > stall {
            panic!("timed out waiting for {what}: {now} of {target}, none more in {stall:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Polls `check` every 20 ms until it yields `Some`, or panics after `timeout`
/// (a generous bound against hangs, not a performance assertion).
pub async fn eventually<T, F, Fut>(timeout: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("timed out waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// An origin event (no cause, its own correlation) from the `test` producer, for tests
/// that append directly.
pub fn origin_event<P: ghost_shared::envelope::EventPayload>(
    id: Uuid,
    payload: &P,
) -> ghost_shared::envelope::NewEvent {
    let metadata = ghost_shared::envelope::EventMetadata {
        correlation_id: id,
        causation_id: None,
        traceparent: None,
        tracestate: None,
        service: "test".into(),
    };
    ghost_shared::envelope::NewEvent::new(id, payload, metadata)
        .unwrap_or_else(|e| panic!("encode test event: {e}"))
}

/// A `UserMessageReceived` over HTTP in session `s` saying `text`.
pub fn user_message(id: Uuid, text: &str) -> ghost_shared::envelope::NewEvent {
    let payload = ghost_shared::events::UserMessageReceived {
        session_id: "s".into(),
        channel: ghost_shared::events::Channel::Http,
        speaker: "user".into(),
        text: text.into(),
        external_id: None,
        reply_to: None,
        image: None,
    };
    origin_event(id, &payload)
}

/// The embedded model's default GGUF file for tests that run the real model: prepared (and
/// cached outside the clone) by `deploy/model.sh`, which this runs once per process when
/// the file is not there yet (it takes a lock, so parallel test binaries fetch it once).
pub fn embedded_model_file() -> PathBuf {
    static PATH: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
        let output = std::process::Command::new("bash")
            .arg(root.join("deploy/model.sh"))
            .output()
            .unwrap_or_else(|e| panic!("cannot run deploy/model.sh: {e}"));
        assert!(
            output.status.success(),
            "deploy/model.sh failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let path = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
        assert!(path.is_file(), "deploy/model.sh printed {}", path.display());
        path
    })
    .clone()
}

/// The embedded embedding model's directory (all-MiniLM-L6-v2: `model.safetensors`,
/// `tokenizer.json`, `config.json`), prepared by `deploy/model.sh` beside the chat model's
/// file.
pub fn embedding_model_dir() -> PathBuf {
    let chat = embedded_model_file();
    let dir = chat
        .parent()
        .expect("the model file's directory")
        .join(ghost_shared::config::DEFAULT_EMBEDDING_DIR);
    assert!(
        dir.join("model.safetensors").is_file(),
        "deploy/model.sh left no {}",
        dir.display()
    );
    dir
}

/// Overrides that enable the embedded model (`model.path` the default file, served on
/// `port` as `name`) and point each of `roles` at `roles_url` (the model itself, or a
/// recorder in front of it) over the OpenAI wire, each call bounded by `timeout_secs`.
/// The turn watchdog waits for the routing loops and the reply at those timeouts (the
/// router refuses less), and an HTTP client a little longer.
pub fn embedded_model_overrides(
    port: u16,
    name: &str,
    roles_url: &str,
    roles: &[&str],
    timeout_secs: u64,
) -> Vec<(String, String)> {
    let mut vars = vec![
        ("GHOST_MODEL__ENABLED".to_owned(), "true".to_owned()),
        (
            "GHOST_MODEL__LISTEN".to_owned(),
            format!("127.0.0.1:{port}"),
        ),
        (
            "GHOST_MODEL__PATH".to_owned(),
            embedded_model_file().display().to_string(),
        ),
        ("GHOST_MODEL__NAME".to_owned(), name.to_owned()),
        ("GHOST_MODEL__EMBEDDINGS".to_owned(), "true".to_owned()),
        (
            "GHOST_MODEL__EMBEDDING_PATH".to_owned(),
            embedding_model_dir().display().to_string(),
        ),
        // Every coder call of the tests is faked, bounded like the rest.
        (
            "GHOST_LLM__CODER__TIMEOUT_SECS".to_owned(),
            timeout_secs.to_string(),
        ),
        (
            "GHOST_ROUTING__TURN_TIMEOUT_SECS".to_owned(),
            (timeout_secs * 4).to_string(),
        ),
        (
            "GHOST_GATEWAY__TURN_TIMEOUT_SECS".to_owned(),
            (timeout_secs * 4 + 10).to_string(),
        ),
    ];
    for role in roles {
        let key = role.to_uppercase();
        for (field, value) in [
            ("PROVIDER", "openai".to_owned()),
            ("BASE_URL", roles_url.to_owned()),
            ("MODEL", name.to_owned()),
            ("TIMEOUT_SECS", timeout_secs.to_string()),
        ] {
            vars.push((format!("GHOST_LLM__{key}__{field}"), value));
        }
    }
    vars
}

/// A free loopback address for a child's listener (`GHOST_GATEWAY__LISTEN`).
pub fn free_loopback_addr() -> std::io::Result<String> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    Ok(format!("127.0.0.1:{port}"))
}

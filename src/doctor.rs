//! `ghost doctor`: what is missing on this machine and how to fix it, one line per check:
//! configuration, PostgreSQL (reachable, role, database, migrations), the cloud coder's
//! token use this UTC day against its cap, NATS (reachable, JetStream), every model role
//! (reachable, model present, a one-token completion), and which LINE/Slack secrets are set.
//! The other commands run the infrastructure part first ([`require_infrastructure`]) so a
//! missing Postgres or NATS is a message, not a panic.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use ghost_shared::config::{Config, ConfigError};
use ghost_shared::llm::{
    refusal, Call, ChatMessage, Contract, LlmClient, LlmError, LlmRoleConfig, Provider,
};
use ghost_shared::store::EventStore;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

/// How long a connection attempt may take before the service counts as not answering.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Bound on the one-token completion (a cold local model may need a while to load).
const COMPLETION_TIMEOUT_SECS: u64 = 60;
/// What starts PostgreSQL and NATS and creates the role on this machine.
const SERVICES_FIX: &str = "run `bash deploy/services.sh`";

/// The outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Fine.
    Ok,
    /// Works, but something a user may want is off (an optional secret, the cloud key).
    Note,
    /// Broken: Ghost cannot work like this.
    Fail,
}

/// One check: what, how it went, and the fix when it failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// What was checked (`postgres`, `nats`, `model persona`, …).
    pub name: String,
    /// Outcome.
    pub status: Status,
    /// What was found.
    pub detail: String,
    /// What to do about it.
    pub fix: Option<String>,
}

impl Check {
    fn ok(name: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            status: Status::Ok,
            detail: detail.into(),
            fix: None,
        }
    }

    fn note(name: impl Into<String>, detail: impl Into<String>, fix: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            status: Status::Note,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }

    fn fail(name: impl Into<String>, detail: impl Into<String>, fix: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            status: Status::Fail,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tag = match self.status {
            Status::Ok => " ok ",
            Status::Note => "note",
            Status::Fail => "FAIL",
        };
        write!(f, "[{tag}] {}: {}", self.name, self.detail)?;
        if let Some(fix) = &self.fix {
            write!(f, " -- fix: {fix}")?;
        }
        Ok(())
    }
}

/// Every check, in order. A configuration that does not load is the only check then.
pub async fn run_all(config: Result<Config, ConfigError>) -> Vec<Check> {
    let config = match config {
        Ok(c) => c,
        Err(e) => return vec![config_failure(&e)],
    };
    let mut checks = vec![Check::ok(
        "config",
        format!(
            "loaded (persona {}, {} model roles)",
            config.ghost.persona.character,
            config.ghost.llm.len()
        ),
    )];
    checks.extend(postgres(&config, true).await);
    checks.extend(nats(&config).await);
    checks.extend(models(&config).await);
    checks.extend(secrets(&config));
    checks
}

/// The check line for a configuration that does not load.
pub fn config_failure(e: &ConfigError) -> Check {
    let fix = match e {
        ConfigError::Read { .. } => {
            "run ghost from the repository root, or set GHOST_CONFIG_DIR to the config directory"
                .to_owned()
        }
        ConfigError::Schema { .. } => {
            "correct or remove the key named (config/*.yaml or its GHOST_* override)".to_owned()
        }
        ConfigError::Invalid { key, .. } => {
            format!("set {key} in config/ghost.yaml (or its GHOST_* override) to a valid value")
        }
    };
    Check::fail("config", e.to_string(), fix)
}

/// Loads the configuration, as a `ghost doctor` line with its fix when it does not load.
pub fn load_config() -> anyhow::Result<Config> {
    Config::load_default().map_err(|e| anyhow::anyhow!("{}", config_failure(&e)))
}

/// PostgreSQL and NATS reachable (with the role and database); the commands that need them
/// call this first and stop with its lines instead of failing deep inside.
pub async fn require_infrastructure(config: &Config) -> anyhow::Result<()> {
    let mut checks = postgres(config, false).await;
    checks.extend(nats(config).await);
    let failed: Vec<String> = checks
        .iter()
        .filter(|c| c.status == Status::Fail)
        .map(ToString::to_string)
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        anyhow::bail!("{}\n(`ghost doctor` checks everything)", failed.join("\n"))
    }
}

/// Where `database.url` points, without the password.
fn describe_database(options: &PgConnectOptions) -> String {
    let at = match options.get_socket() {
        Some(dir) => format!("socket {}/.s.PGSQL.{}", dir.display(), options.get_port()),
        None => format!("{}:{}", options.get_host(), options.get_port()),
    };
    format!(
        "{at} as {}, database {}",
        options.get_username(),
        options.get_database().unwrap_or("(default)")
    )
}

/// Reachable, role, database; then pending migrations when `migrations`.
pub async fn postgres(config: &Config, migrations: bool) -> Vec<Check> {
    let url = &config.ghost.database.url;
    let options = match PgConnectOptions::from_str(url) {
        Ok(o) => o,
        Err(e) => {
            return vec![Check::fail(
                "postgres",
                format!("database.url is not a PostgreSQL URL: {e}"),
                "set database.url (or GHOST_DATABASE__URL) to postgres://user:password@host:port/database",
            )]
        }
    };
    let target = describe_database(&options);
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(CONNECT_TIMEOUT)
        .connect_with(options.clone())
        .await;
    let pool = match pool {
        Ok(p) => p,
        Err(e) => return vec![postgres_failure(&e, &options)],
    };
    let mut checks = vec![Check::ok("postgres", format!("reachable at {target}"))];
    if migrations {
        let store = EventStore::from_pool(pool.clone());
        checks.push(match store.pending_migrations().await {
            Ok(p) if p.is_empty() => Check::ok("migrations", "up to date"),
            Ok(p) => Check::fail(
                "migrations",
                format!("{} not applied ({})", p.len(), p.join(", ")),
                "run `ghost migrate` (ghost up and ghost run apply them at start too)",
            ),
            Err(e) => Check::fail(
                "migrations",
                format!("cannot read the migrations table: {e}"),
                "check that the role owns the database; `ghost migrate` creates the table",
            ),
        });
        if checks.last().is_some_and(|c| c.status == Status::Ok) {
            checks.push(cloud_spend(&pool, config).await);
        }
    }
    pool.close().await;
    checks
}

/// The cloud coder's tokens this UTC day against `coder.daily_token_cap`: a note once the
/// cap is used up (CODE turns then get a notice until 00:00 UTC; nothing else stops).
async fn cloud_spend(pool: &sqlx::PgPool, config: &Config) -> Check {
    const NAME: &str = "cloud spend";
    let used = match ghost_shared::spend::today(pool).await {
        Ok(u) => u,
        Err(e) => {
            return Check::fail(
                NAME,
                format!("cannot sum the day's cloud tokens: {e}"),
                "check that the role can read the events table",
            )
        }
    };
    let today = format!(
        "{} tokens used today (UTC; prompt {}, completion {})",
        used.total(),
        used.prompt,
        used.completion
    );
    match config.ghost.coder.cap() {
        None => Check::ok(NAME, format!("{today}, no cap (coder.daily_token_cap)")),
        Some(cap) if used.reached(Some(cap)) => Check::note(
            NAME,
            format!(
                "{today} of the {cap} cap: used up, so CODE turns get a notice and nothing goes to the cloud until 00:00 UTC"
            ),
            "wait for 00:00 UTC, or raise coder.daily_token_cap (GHOST_CODER__DAILY_TOKEN_CAP)",
        ),
        Some(cap) => Check::ok(NAME, format!("{today} of the {cap} cap")),
    }
}

fn postgres_failure(e: &sqlx::Error, options: &PgConnectOptions) -> Check {
    let target = describe_database(options);
    let user = options.get_username();
    let database = options.get_database().unwrap_or(user);
    if let sqlx::Error::Database(db) = e {
        match db.code().as_deref() {
            // invalid_authorization_specification: no such role (or not allowed to log in).
            Some("28000") => {
                return Check::fail(
                    "postgres",
                    format!("reachable, but the role {user:?} cannot log in: {}", db.message()),
                    format!("{SERVICES_FIX} (creates role {user} with password {user}), or CREATE ROLE {user} LOGIN PASSWORD '…' CREATEDB"),
                )
            }
            Some("28P01") => {
                return Check::fail(
                    "postgres",
                    format!("reachable, but the password of role {user:?} is wrong"),
                    "set the right password in database.url (or GHOST_DATABASE__URL)",
                )
            }
            Some("3D000") => {
                return Check::fail(
                    "postgres",
                    format!("reachable, but database {database:?} does not exist"),
                    format!("{SERVICES_FIX} (creates database ghost), or createdb -O {user} {database}"),
                )
            }
            _ => {}
        }
    }
    Check::fail(
        "postgres",
        format!("nothing usable answers at {target}: {e}"),
        format!("{SERVICES_FIX} to install and start PostgreSQL, or point database.url (GHOST_DATABASE__URL) at a running server"),
    )
}

/// Reachable, then JetStream enabled.
pub async fn nats(config: &Config) -> Vec<Check> {
    let url = &config.ghost.bus.url;
    let connect = async_nats::ConnectOptions::new()
        .name("ghost-doctor")
        .connection_timeout(CONNECT_TIMEOUT)
        .connect(url.as_str());
    let client = match tokio::time::timeout(CONNECT_TIMEOUT * 2, connect).await {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => {
            return vec![Check::fail(
                "nats",
                format!("nothing answers at {url}: {e}"),
                format!("{SERVICES_FIX} to install and start nats-server with JetStream, or point bus.url (GHOST_BUS__URL) at a running server"),
            )]
        }
        Err(_) => {
            return vec![Check::fail(
                "nats",
                format!("no NATS handshake from {url} within {:?}", CONNECT_TIMEOUT * 2),
                format!("check that {url} is a NATS server; {SERVICES_FIX} starts one"),
            )]
        }
    };
    // `$JS.API.INFO` answers with the account's JetStream limits when JetStream is on, an
    // error when it is off for the account, and nobody when the server runs without -js.
    let off = |why: String| {
        Check::fail(
            "nats",
            format!("reachable at {url}, but JetStream is off ({why})"),
            "start nats-server with -js (JetStream); deploy/services.sh does",
        )
    };
    let info =
        tokio::time::timeout(CONNECT_TIMEOUT, client.request("$JS.API.INFO", "".into())).await;
    let check = match info {
        Ok(Ok(reply)) => match serde_json::from_slice::<serde_json::Value>(&reply.payload) {
            Ok(v) if v.get("error").is_none() => {
                Check::ok("nats", format!("reachable at {url}, JetStream on"))
            }
            Ok(v) => off(v["error"]["description"]
                .as_str()
                .unwrap_or("error")
                .to_owned()),
            Err(e) => off(format!("unreadable JetStream reply: {e}")),
        },
        Ok(Err(e)) => off(e.to_string()),
        Err(_) => off("no JetStream reply".into()),
    };
    drop(client);
    vec![check]
}

/// One model endpoint to check and the roles that use it.
struct ModelTarget {
    roles: Vec<String>,
    cfg: LlmRoleConfig,
    key: Option<String>,
}

/// Every model endpoint: the `llm.*` roles and the characters' own models (each endpoint
/// and model once).
fn model_targets(config: &Config) -> Vec<ModelTarget> {
    let mut targets: Vec<ModelTarget> = Vec::new();
    let cloud_key = config
        .secrets
        .cloud_api_key
        .as_ref()
        .map(|k| k.expose().to_owned());
    let mut roles: Vec<(&String, &LlmRoleConfig)> = config.ghost.llm.iter().collect();
    roles.sort_by_key(|(role, _)| role.as_str() != "persona");
    let mut add = |role: String, cfg: &LlmRoleConfig, key: Option<String>| match targets
        .iter_mut()
        .find(|t| {
            t.cfg.provider == cfg.provider
                && t.cfg.base_url == cfg.base_url
                && t.cfg.model == cfg.model
        }) {
        Some(t) => t.roles.push(role),
        None => targets.push(ModelTarget {
            roles: vec![role],
            cfg: cfg.clone(),
            key,
        }),
    };
    for (role, cfg) in roles {
        let key = (role == "coder").then(|| cloud_key.clone()).flatten();
        add(role.clone(), cfg, key);
    }
    for c in &config.characters.characters {
        if config.ghost.llm.contains_key(&c.name.to_lowercase()) {
            continue;
        }
        if let Some(cfg) = &c.llm {
            add(format!("character {}", c.name), cfg, None);
        }
    }
    targets
}

/// Per model endpoint: reachable, model present, one-token completion.
pub async fn models(config: &Config) -> Vec<Check> {
    check_targets(config, model_targets(config)).await
}

/// The model checks of the `llm.<role>` roles named (`ghost doctor --role`), and nothing else.
pub async fn models_of_roles(config: &Config, roles: &[String]) -> Vec<Check> {
    let mut checks = Vec::new();
    for role in roles {
        if !config.ghost.llm.contains_key(role) {
            checks.push(Check::fail(
                format!("model {role}"),
                format!("no llm.{role} in the configuration"),
                format!("add llm.{role} to config/ghost.yaml, or name a configured role"),
            ));
        }
    }
    let targets = model_targets(config)
        .into_iter()
        .filter(|t| t.roles.iter().any(|r| roles.contains(r)))
        .collect();
    checks.extend(check_targets(config, targets).await);
    checks
}

async fn check_targets(config: &Config, targets: Vec<ModelTarget>) -> Vec<Check> {
    let embedded = config.ghost.model.listen.clone();
    let mut checks = Vec::new();
    for target in targets {
        let name = format!("model {}", target.roles.join(", "));
        let cfg = &target.cfg;
        let is_embedded = cfg.base_url.contains(&embedded);
        if target.roles.iter().any(|r| r == "coder")
            && target.key.is_none()
            && cfg.provider == Provider::Openai
            && !is_embedded
        {
            checks.push(Check::note(
                name,
                format!(
                    "{} at {}: GHOST_CLOUD_API_KEY is not set, so /code requests fail",
                    cfg.model, cfg.base_url
                ),
                "export GHOST_CLOUD_API_KEY=… to use the cloud coder (optional)",
            ));
            continue;
        }
        let check = model_check(&name, &target, is_embedded, config).await;
        let answers = check.status == Status::Ok;
        checks.push(check);
        if answers && !embeds_only(&target) {
            checks.push(structured_check(&target).await);
        }
    }
    checks
}

/// Whether the endpoint holds an answer to a JSON Schema: one constrained token, whose only
/// allowed start is `[`, which a model writing prose would not begin with. An endpoint
/// that refuses the schema or ignores it still works, prompt-only: a note, not a failure.
async fn structured_check(target: &ModelTarget) -> Check {
    let cfg = &target.cfg;
    let roles = target.roles.join(", ");
    let name = format!("structured output {roles}");
    let what = format!(
        "{} {} at {}",
        cfg.provider.as_str(),
        cfg.model,
        cfg.base_url
    );
    let mut probe = cfg.clone();
    probe.timeout_secs = cfg.timeout_secs.min(COMPLETION_TIMEOUT_SECS);
    let role = format!("doctor {roles}");
    let client = match LlmClient::new(probe, target.key.clone()) {
        Ok(c) => c.with_role(&role),
        Err(e) => return Check::fail(name, format!("{what}: {e}"), "check the role's settings"),
    };
    let contract = Contract {
        name: "doctor_probe",
        schema: serde_json::json!({"type": "array", "items": {"type": "integer"}, "maxItems": 0}),
        max_tokens: 1,
    };
    let call = Call::interactive().shaped(&contract);
    let fix = "use an endpoint that constrains output to a JSON Schema (Ollama's `format`, \
               OpenAI's `response_format` json_schema, or the embedded model)";
    match client.complete(&[ChatMessage::user("Say OK.")], call).await {
        Ok(_) if refusal::of(&role).is_some() => Check::note(
            name,
            format!(
                "{what} refuses structured output ({}): its structured calls go prompt-only",
                refusal::of(&role).unwrap_or_default()
            ),
            fix,
        ),
        Ok(text) if text.trim_start().starts_with('[') => Check::ok(
            name,
            format!("{what} holds answers to their JSON Schema (one constrained token)"),
        ),
        Ok(text) => Check::note(
            name,
            format!(
                "{what} ignores the JSON Schema (answered {:?}): structured calls depend on the model's goodwill",
                text.chars().take(40).collect::<String>()
            ),
            fix,
        ),
        Err(e) => Check::fail(name, format!("{what}: a constrained call failed: {}", short(&e)), fix),
    }
}

fn model_fix(cfg: &LlmRoleConfig, is_embedded: bool, config: &Config) -> String {
    if is_embedded {
        return format!(
            "start the embedded model: `bash deploy/model.sh` then `ghost run model` (or `ghost up` with model.enabled), listening on {}",
            config.ghost.model.listen
        );
    }
    format!(
        "{}; or run ./deploy/run-local.sh, which falls back to the embedded model",
        cfg.unreachable_hint()
    )
}

async fn model_check(
    name: &str,
    target: &ModelTarget,
    is_embedded: bool,
    config: &Config,
) -> Check {
    let cfg = &target.cfg;
    let what = format!(
        "{} {} at {}",
        cfg.provider.as_str(),
        cfg.model,
        cfg.base_url
    );
    let fix = model_fix(cfg, is_embedded, config);
    let mut one_token = cfg.clone();
    one_token.options.max_tokens = Some(1);
    one_token.timeout_secs = cfg.timeout_secs.min(COMPLETION_TIMEOUT_SECS);
    let client = match LlmClient::new(one_token, target.key.clone()) {
        Ok(c) => c,
        Err(e) => return Check::fail(name, format!("{what}: {e}"), fix),
    };
    let names = match client.models().await {
        Ok(n) => n,
        Err(e) => return Check::fail(name, format!("{what} is not reachable: {}", short(&e)), fix),
    };
    if !client.model_listed(&names) {
        let offered = if names.is_empty() {
            "none".to_owned()
        } else {
            names.join(", ")
        };
        let fix = match (cfg.provider, is_embedded) {
            (_, false) if cfg.is_local_server() => format!("`ollama pull {}`", cfg.model),
            _ => format!("set the model name to one the server offers ({offered})"),
        };
        return Check::fail(
            name,
            format!("{what} answers but does not offer the model (offers: {offered})"),
            fix,
        );
    }
    if embeds_only(target) {
        return match client.embed(&["OK".to_owned()]).await {
            Ok(v) => Check::ok(
                name,
                format!(
                    "{what} answers (one embedding, {} dimensions)",
                    v.first().map_or(0, Vec::len)
                ),
            ),
            Err(e) => Check::fail(
                name,
                format!(
                    "{what} lists the model but an embedding failed: {}",
                    short(&e)
                ),
                fix,
            ),
        };
    }
    match client.chat(&[ChatMessage::user("Say OK.")]).await {
        Ok(_) => Check::ok(name, format!("{what} answers (one-token completion)")),
        Err(e) => Check::fail(
            name,
            format!(
                "{what} lists the model but a completion failed: {}",
                short(&e)
            ),
            fix,
        ),
    }
}

/// An endpoint only `llm.embedding` uses: checked with one embedding, not a completion.
fn embeds_only(target: &ModelTarget) -> bool {
    target.roles.iter().all(|r| r == "embedding")
}

fn short(e: &LlmError) -> String {
    let s = e.to_string();
    match s.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}

/// Which platform secrets are set (optional: without them those webhooks are off).
fn secrets(config: &Config) -> Vec<Check> {
    let s = &config.secrets;
    let mut checks = Vec::new();
    checks.push(if s.api_token.is_some() {
        Check::ok("api token", "GHOST_API_TOKEN is set")
    } else {
        Check::note(
            "api token",
            "GHOST_API_TOKEN is not set, so /api/* refuses every request",
            "export GHOST_API_TOKEN=… (./deploy/run-local.sh makes one in .ghost-data/api_token)",
        )
    });
    for (platform, set, vars) in [
        (
            "line",
            [
                s.line_channel_secret.is_some(),
                s.line_channel_access_token.is_some(),
            ],
            [
                "GHOST_LINE_CHANNEL_SECRET",
                "GHOST_LINE_CHANNEL_ACCESS_TOKEN",
            ],
        ),
        (
            "slack",
            [
                s.slack_signing_secret.is_some(),
                s.slack_bot_token.is_some(),
            ],
            ["GHOST_SLACK_SIGNING_SECRET", "GHOST_SLACK_BOT_TOKEN"],
        ),
    ] {
        let missing: Vec<&str> = vars
            .iter()
            .zip(set)
            .filter(|(_, is_set)| !is_set)
            .map(|(v, _)| *v)
            .collect();
        checks.push(if missing.is_empty() {
            Check::ok(platform, format!("{} and {} are set", vars[0], vars[1]))
        } else {
            Check::note(
                platform,
                format!(
                    "{} not set: the {platform} webhook is off",
                    missing.join(" and ")
                ),
                format!(
                    "export {} to use {platform} (optional)",
                    missing.join(" and ")
                ),
            )
        });
    }
    checks
}

//! The run's Ghost: the shipped `config/ghost.yaml` with only what a newcomer's install sets
//! anyway (what `deploy/run-local.sh` exports when it chooses the embedded model, the API
//! token and LINE secrets, model files and ports) plus a private database and NATS stream,
//! the fake LINE's address, the recorder in front of the model, and `clock.simulated`.
//! Every override is kept (and printed by the run): a figure measured with settings a new
//! user does not get would not count (issue 45).

use anyhow::{Context, Result};
use ghost_shared::config::Config;
use ghost_shared::store::EventStore;
use ghost_testkit::testing::{embedded_model_file, embedding_model_dir, repo_config_dir};

/// The LINE channel secret the run signs its webhooks with.
pub const LINE_SECRET: &str = "c0nverse0c0nverse0c0nverse0c0nve";

/// Where the run's Ghost reaches things, and how it was configured.
pub struct Shipped {
    /// The configuration the stack runs with.
    pub config: Config,
    /// Every override applied to `config/ghost.yaml`, with why.
    pub overrides: Vec<Override>,
    /// The API token `/api/chat` and `/api/clock/advance` take.
    pub token: String,
    admin_url: String,
    database: String,
}

/// One `GHOST_*` variable applied on top of the shipped file.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Override {
    /// The variable.
    pub key: String,
    /// Its value.
    pub value: String,
    /// Why a newcomer's install has it too (or why the run needs it).
    pub why: &'static str,
}

/// What the run's set-up needs from outside.
pub struct Wiring<'a> {
    /// The embedded model server's port.
    pub model_port: u16,
    /// The recorder in front of it (its `http://…/v1`).
    pub recorder_url: &'a str,
    /// The fake LINE API.
    pub line_url: &'a str,
    /// The model's threads, when not the shipped value.
    pub threads: Option<u32>,
    /// `KEY=VALUE` overrides asked for (`--set`).
    pub set: &'a [String],
}

impl Shipped {
    /// A private, migrated database and the configuration pointing at it.
    pub async fn new(wiring: Wiring<'_>) -> Result<Shipped> {
        let id = uuid::Uuid::new_v4().simple().to_string()[..12].to_owned();
        let admin_url = std::env::var(ghost_testkit::testing::TEST_ADMIN_URL_ENV)
            .unwrap_or_else(|_| "postgres://ghost:ghost@127.0.0.1:5432/ghost".into());
        let database = format!("ghost_converse_{id}");
        let (base, _) = admin_url
            .rsplit_once('/')
            .context("the admin database URL names no database")?;
        let token = format!("converse-{id}");
        let overrides = overrides(&wiring, &id, &format!("{base}/{database}"), &token);
        let admin = sqlx::PgPool::connect(&admin_url).await?;
        sqlx::query(&format!("CREATE DATABASE \"{database}\""))
            .execute(&admin)
            .await?;
        admin.close().await;
        let vars = overrides.iter().map(|o| (o.key.clone(), o.value.clone()));
        let config = Config::load(&repo_config_dir(), vars)?;
        EventStore::connect(&config.ghost.database.url, 4)
            .await?
            .migrate()
            .await?;
        Ok(Shipped {
            config,
            overrides,
            token,
            admin_url,
            database,
        })
    }

    /// The run's database.
    pub fn database(&self) -> &str {
        &self.database
    }

    /// Removes the stream and the database (best effort).
    pub async fn cleanup(self) {
        if let Ok(bus) = ghost_shared::bus::Bus::connect(self.config.ghost.bus.clone()).await {
            let _ = bus.delete_streams().await;
        }
        if let Ok(admin) = sqlx::PgPool::connect(&self.admin_url).await {
            let drop = format!("DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)", self.database);
            let _ = sqlx::query(&drop).execute(&admin).await;
            admin.close().await;
        }
    }
}

fn overrides(wiring: &Wiring<'_>, id: &str, db_url: &str, token: &str) -> Vec<Override> {
    let mut out = Vec::new();
    let mut set = |key: &str, value: String, why: &'static str| {
        out.push(Override {
            key: key.to_owned(),
            value,
            why,
        })
    };
    let private = "a private database and stream (the run's own)";
    set("GHOST_DATABASE__URL", db_url.to_owned(), private);
    set("GHOST_BUS__SUBJECT_PREFIX", format!("conv{id}"), private);
    set("GHOST_BUS__STREAM_NAME", format!("GHOSTCONV_{id}"), private);
    if let Ok(nats) = std::env::var(ghost_testkit::testing::TEST_NATS_URL_ENV) {
        set("GHOST_BUS__URL", nats, private);
    }
    let port = "a free port (the shipped one may be taken)";
    set("GHOST_GATEWAY__LISTEN", "127.0.0.1:0".into(), port);
    set(
        "GHOST_TELEMETRY__METRICS_LISTEN",
        "127.0.0.1:0".into(),
        port,
    );
    let listen = format!("127.0.0.1:{}", wiring.model_port);
    set("GHOST_MODEL__LISTEN", listen, port);
    let files = "the model files deploy/model.sh fetched";
    set(
        "GHOST_MODEL__PATH",
        embedded_model_file().display().to_string(),
        files,
    );
    set(
        "GHOST_MODEL__EMBEDDING_PATH",
        embedding_model_dir().display().to_string(),
        files,
    );
    if let Some(threads) = wiring.threads {
        set(
            "GHOST_MODEL__THREADS",
            threads.to_string(),
            "asked for (--threads)",
        );
    }
    let local = "run-local.sh, embedded model chosen";
    set("GHOST_MODEL__ENABLED", "true".into(), local);
    // run-local.sh points every role at the model; here the recorder stands in front of it.
    let mut roles = vec!["PERSONA".to_owned(), "WORKER".to_owned()];
    if let Ok(text) = std::fs::read_to_string(repo_config_dir().join("characters.yaml")) {
        roles.extend(
            text.lines()
                .filter_map(|l| l.trim().strip_prefix("- name:"))
                .map(|n| n.trim().to_uppercase()),
        );
    }
    let base = wiring.recorder_url.to_owned();
    for role in roles {
        let via = "run-local.sh (through the run's recorder, in front of the model)";
        set(
            &format!("GHOST_LLM__{role}__PROVIDER"),
            "openai".into(),
            local,
        );
        set(&format!("GHOST_LLM__{role}__BASE_URL"), base.clone(), via);
        set(
            &format!("GHOST_LLM__{role}__MODEL"),
            "smollm2-135m-instruct".into(),
            local,
        );
        set(
            &format!("GHOST_LLM__{role}__TIMEOUT_SECS"),
            "120".into(),
            local,
        );
    }
    set("GHOST_ROUTING__TURN_TIMEOUT_SECS", "480".into(), local);
    set("GHOST_GATEWAY__TURN_TIMEOUT_SECS", "490".into(), local);
    set(
        "GHOST_LLM__PERSONA__OPTIONS__MAX_TOKENS",
        "160".into(),
        local,
    );
    set("GHOST_MEMORY__RECALL_MAX_CANDIDATES", "6".into(), local);
    set(
        "GHOST_MEMORY__RECALL_SELECTION_TIMEOUT_MS",
        "30000".into(),
        local,
    );
    set(
        "GHOST_API_TOKEN",
        token.to_owned(),
        "run-local.sh makes one",
    );
    let line = "a LINE channel's secrets (the install's own)";
    set("GHOST_LINE_CHANNEL_SECRET", LINE_SECRET.into(), line);
    set(
        "GHOST_LINE_CHANNEL_ACCESS_TOKEN",
        "converse-access".into(),
        line,
    );
    let fake = "the fake LINE platform of the run";
    set("GHOST_LINE__API_BASE", wiring.line_url.to_owned(), fake);
    set(
        "GHOST_LINE__DATA_API_BASE",
        wiring.line_url.to_owned(),
        fake,
    );
    set(
        "GHOST_CLOCK__SIMULATED",
        "true".into(),
        "days pass through POST /api/clock/advance",
    );
    for pair in wiring.set {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        set(
            key,
            value.to_owned(),
            "asked for (--set): NOT the shipped configuration",
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every default `deploy/run-local.sh` exports for the embedded model
    /// (`export GHOST_X=${GHOST_X:-value}`) is one of the run's overrides, with that value:
    /// the run is the install a newcomer gets, not a copy that drifted from it.
    #[test]
    fn the_run_sets_what_run_local_sets_for_the_embedded_model() {
        let script = std::fs::read_to_string(repo_config_dir().join("../deploy/run-local.sh"))
            .expect("deploy/run-local.sh");
        let set = [];
        let wiring = Wiring {
            model_port: 1,
            recorder_url: "http://127.0.0.1:2/v1",
            line_url: "http://127.0.0.1:3",
            threads: None,
            set: &set,
        };
        let overrides = overrides(&wiring, "x", "postgres://x/y", "t");
        let mut checked = 0;
        for line in script.lines().map(str::trim) {
            let Some(rest) = line.strip_prefix("export GHOST_") else {
                continue;
            };
            let Some((key, value)) = rest.split_once("=${") else {
                continue;
            };
            let Some(default) = value.split_once(":-").map(|(_, d)| d.trim_end_matches('}')) else {
                continue;
            };
            let key = format!("GHOST_{key}");
            let ours = overrides.iter().find(|o| o.key == key);
            assert_eq!(ours.map(|o| o.value.as_str()), Some(default), "{key}");
            checked += 1;
        }
        assert!(
            checked >= 4,
            "only {checked} defaults found in run-local.sh"
        );
    }
}

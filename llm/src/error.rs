//! Typed errors of the LLM client.

use std::time::Duration;

/// Why an LLM call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LlmError {
    /// The whole call (connect plus streaming) exceeded the configured budget.
    #[error("LLM call timed out after {after:?}")]
    Timeout {
        /// The budget that was exceeded.
        after: Duration,
    },
    /// The server could not be reached or the connection failed before a response.
    #[error("LLM connection failed: {0}")]
    Connect(String),
    /// The server answered with a non-2xx status.
    #[error("LLM HTTP status {status}: {body}")]
    HttpStatus {
        /// HTTP status code.
        status: u16,
        /// Response body, truncated to a few hundred characters.
        body: String,
    },
    /// The response body was not the expected format, reported an error in-band, or ended early.
    #[error("LLM stream malformed: {0}")]
    MalformedStream(String),
    /// The response body grew past the role's `max_response_bytes`; reading stopped there.
    #[error("the model's response is larger than the limit of {limit} bytes (max_response_bytes)")]
    ResponseTooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// The request could not be built (bad config, unusable input).
    #[error("invalid LLM request: {0}")]
    InvalidRequest(String),
}

impl LlmError {
    /// A stable machine-readable code for events (`llm_timeout`, `llm_http`, `llm_stream`,
    /// `llm_unavailable`, `llm_too_large`, `llm_error`).
    pub fn code(&self) -> &'static str {
        match self {
            LlmError::Timeout { .. } => "llm_timeout",
            LlmError::HttpStatus { .. } => "llm_http",
            LlmError::MalformedStream(_) => "llm_stream",
            LlmError::Connect(_) => "llm_unavailable",
            LlmError::ResponseTooLarge { .. } => "llm_too_large",
            LlmError::InvalidRequest(_) => "llm_error",
        }
    }
}

//! LLM client speaking the Ollama (`/api/chat`, NDJSON) and OpenAI-compatible
//! (`/v1/chat/completions`, SSE) wire formats, with streaming, timeouts and image audit logging.

mod client;
mod config;
mod decode;
mod error;
mod image;
mod message;
mod wire;

pub use client::{LlmClient, TokenStream};
pub use config::{GenerationOptions, LlmRoleConfig, Provider, DEFAULT_MAX_RESPONSE_BYTES};
pub use error::LlmError;
pub use message::{ChatMessage, ContentPart, FileImage, ImagePart, ImageSource, Role};

/// Tracing target of every HTTP-level log line of the client (image audit included).
pub const LOG_TARGET: &str = "provider.http";

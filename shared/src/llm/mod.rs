//! LLM client speaking the Ollama (`/api/chat`, NDJSON) and OpenAI-compatible
//! (`/v1/chat/completions`, SSE) wire formats, with streaming, timeouts and image audit logging.
//!
//! - [`client`](LlmClient): requests, timeouts, streaming, the background-call limit;
//! - [`contract`](Contract): what a call asks for beyond text (urgency, the answer's JSON
//!   Schema, the affect trailer) and how a schema is made from a Rust type;
//! - `wire`: both providers' bodies (Ollama `format`, OpenAI `response_format`);
//! - [`refusal`]: endpoints that refuse structured output, noted per role;
//! - [`fence`](Fence): data in a prompt behind a per-prompt random boundary.

mod client;
mod config;
mod contract;
mod decode;
mod error;
pub mod fence;
mod image;
mod message;
pub mod refusal;
mod wire;

pub use client::{LlmClient, TokenStream};
pub use config::{GenerationOptions, LlmRoleConfig, Provider, DEFAULT_MAX_RESPONSE_BYTES};
pub use contract::{Call, Contract, Urgency, PRIORITY_HEADER};
pub use error::LlmError;
pub use fence::Fence;
pub use message::{ChatMessage, ContentPart, FileImage, ImagePart, ImageSource, Role};

/// Tracing target of every HTTP-level log line of the client (image audit included).
pub const LOG_TARGET: &str = "provider.http";

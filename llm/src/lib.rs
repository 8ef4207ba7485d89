//! LLM client speaking the Ollama (`/api/chat`, NDJSON) and OpenAI-compatible
//! (`/v1/chat/completions`, SSE) wire formats, with streaming, timeouts and image audit logging.
//!
//! - [`client`](LlmClient): requests, timeouts, streaming, the background-call limit;
//! - [`contract`](Contract): what a call asks for beyond text (urgency, the answer's JSON
//!   Schema, the affect trailer) and how a schema is made from a Rust type;
//! - `wire`: both providers' bodies (Ollama `format`, OpenAI `response_format`);
//! - [`refusal`]: endpoints that refuse structured output, noted per role;
//! - [`fence`](Fence): data in a prompt behind a per-prompt random boundary;
//! - [`repetition`]: where a reply starts repeating itself (a small model's loop);
//! - `echo`: where a reply starts copying its prompt's fenced data ([`FenceEchoGuard`]);
//! - [`transcript`]: who said what, as JSON, so no utterance can speak for another;
//! - `write`: a free-text answer streamed to its end, cut at a loop ([`Written`]);
//! - [`contracts`]: the shapes of every model answer Ghost parses, as JSON Schemas.
//!
//! Model access, a crate of its own (`ghost-llm`) below `ghost-shared`, which re-exports it
//! as `ghost_shared::llm` and `ghost_shared::contracts`: it needs the pure rules
//! (`ghost-domain`) and the metrics (`ghost-metrics`), no store and no bus.

mod client;
mod config;
mod contract;
pub mod contracts;
mod decode;
mod echo;
mod error;
pub mod fence;
mod image;
mod message;
pub mod refusal;
pub mod repetition;
pub mod transcript;
mod wire;
mod write;

pub use client::{LlmClient, TokenStream};
pub use config::{GenerationOptions, LlmRoleConfig, Provider, DEFAULT_MAX_RESPONSE_BYTES};
pub use contract::{Call, Contract, Urgency, PRIORITY_HEADER};
pub use echo::FenceEchoGuard;
pub use error::LlmError;
pub use fence::Fence;
pub use message::{ChatMessage, ContentPart, FileImage, ImagePart, ImageSource, Role};
pub use repetition::RepetitionGuard;
pub use transcript::transcript;
pub use write::{Ending, Written};

/// Tracing target of every HTTP-level log line of the client (image audit included).
pub const LOG_TARGET: &str = "provider.http";

//! A fake LLM HTTP server speaking both the Ollama and the OpenAI-compatible wire formats,
//! scripted per request. Used by tests and by the load command's throughput benchmark.

pub mod embed;
mod recorded;
mod render;
mod script;
mod server;

pub use recorded::RecordedRequest;
pub use script::{Failure, Script};
pub use server::FakeLlm;

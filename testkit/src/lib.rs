//! Ghost's test doubles, kept out of the production crates: services depend on this crate
//! only as a dev-dependency; the `ghost` binary uses it for its load commands (`ghost load`,
//! `load-stage`, `webhook-load`), which drive the real pipeline against these fakes.
//!
//! - [`fake_llm`]: a fake LLM server speaking the Ollama and OpenAI-compatible wire formats
//!   (streaming included), scripted per request;
//! - [`fake_platforms`]: fake LINE, Slack and Telegram API servers that record every call;
//! - [`fake_search`]: a fake web: SearXNG-JSON search endpoint and pages (delays, types);
//! - [`model_recorder`]: a recording proxy in front of a real model server;
//! - [`plans`]: tests of query plans (a connection keeping its first plans, a table's
//!   reads in a transaction);
//! - [`testing`]: per-test environments on the real Postgres and NATS (own database, own
//!   subject prefix and stream), plus event builders and `eventually`;
//! - `fuzz` (feature `fuzz`): hostile inputs and the case count for the boundary parsers'
//!   fuzz tests (`tests/fuzz_*.rs`).
//!
//! The crash points tests arm (`GHOST_FAULTS`) are not here: they are the production-side
//! hook [`ghost_shared::fault`].

pub mod fake_llm;
pub mod fake_platforms;
pub mod fake_search;
#[cfg(feature = "fuzz")]
pub mod fuzz;
pub mod model_recorder;
pub mod plans;
pub mod testing;

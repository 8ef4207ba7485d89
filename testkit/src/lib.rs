//! Ghost's test doubles, kept out of the production crates: services and `ghost` depend on
//! this crate only as a dev-dependency; `ghost-harness` (the load, benchmark and chaos
//! harnesses) is its one other dependent, driving the real pipeline against these fakes.
//!
//! - [`commands`]: a built binary of the workspace run as a test runs it;
//! - [`fake_llm`]: a fake LLM server speaking the Ollama and OpenAI-compatible wire formats
//!   (streaming included), scripted per request;
//! - [`fake_platforms`]: fake LINE, Slack and Telegram API servers that record every call;
//! - [`fake_search`]: a fake web: SearXNG-JSON search endpoint and pages (delays, types);
//! - [`model_recorder`]: a recording proxy in front of a real model server;
//! - [`scenarios`]: model scripts and settings a test and a harness share;
//! - [`plans`]: tests of query plans (a connection keeping its first plans, a table's
//!   reads in a transaction);
//! - [`testing`]: per-test environments on the real Postgres and NATS (own database, own
//!   subject prefix and stream), plus event builders and `eventually`;
//! - `fuzz` (feature `fuzz`): hostile inputs and the case count for the boundary parsers'
//!   fuzz tests (`tests/fuzz_*.rs`).
//!
//! The crash points tests arm (`GHOST_FAULTS`) are not here: they are the production-side
//! hook [`ghost_shared::fault`].

pub mod commands;
pub mod fake_llm;
pub mod fake_platforms;
pub mod fake_search;
#[cfg(feature = "fuzz")]
pub mod fuzz;
pub mod model_recorder;
pub mod plans;
pub mod scenarios;
pub mod testing;

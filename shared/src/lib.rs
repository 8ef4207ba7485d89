//! Ghost's common crate: what more than one service needs, written once.
//!
//! - [`event`] / [`events`]: the event envelope and the catalogue of payloads;
//! - [`ids`]: deterministic event ids (idempotency);
//! - [`store`]: the Postgres event store (append, read, gap-safe global order);
//! - [`bus`]: NATS — JetStream publishing, durable consumers, dead letters;
//! - [`event_log`]: append-then-publish with an outbox relay;
//! - [`projection`]: checkpointed read models, rebuildable from zero, that never stall;
//! - [`parking`]: the events a projection could not apply, kept with the error;
//! - [`projections`]: the read models several services read (`assistant_text`);
//! - [`config`]: YAML + environment configuration, secrets;
//! - [`media`]: images users send, in Postgres so every service reaches them;
//! - [`llm`]: Ollama and OpenAI-compatible clients; [`fake_llm`]: a fake server for tests;
//! - [`fake_platforms`]: fake LINE and Slack API servers for tests and load runs;
//! - [`telemetry`]: tracing + OpenTelemetry, trace context over NATS;
//! - [`service`]: the context every service runs with;
//! - [`fault`]: crash points for crash-safety tests; [`testing`]: test environments;
//! - `fuzz` (feature `fuzz`, tests only): hostile inputs for the boundary parsers' fuzz tests.

pub mod affect;
pub mod bus;
pub mod config;
pub mod event;
pub mod event_log;
pub mod events;
pub mod fake_llm;
pub mod fake_platforms;
pub mod fault;
#[cfg(any(test, feature = "fuzz"))]
pub mod fuzz;
pub mod ids;
pub mod llm;
pub mod media;
pub mod mood_api;
pub mod net;
pub mod parking;
pub mod projection;
pub mod projections;
pub mod service;
pub mod stage_signal;
pub mod store;
pub mod telemetry;
pub mod testing;
pub mod turn_stream;

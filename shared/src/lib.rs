//! Ghost's common crate: what more than one service needs, written once.
//!
//! - [`envelope`]: events as stored and carried (`NewEvent`, `RecordedEvent`, metadata,
//!   stream names); [`events`]: the catalogue of payloads; [`event_enum!`]: the payloads a
//!   handler takes as one enum, and [`event_types!`]: a descriptor's lists of types;
//! - [`ids`]: deterministic event ids (idempotency); [`clock`]: the one clock every
//!   service and `recorded_at` read (simulated in evaluations);
//! - [`store`]: the Postgres event store (append, read, gap-safe global order);
//! - [`bus`]: NATS — JetStream publishing, durable consumers, dead letters;
//! - [`event_log`]: append-then-publish with an outbox relay;
//! - [`reminders`]: reminder events, their projection and the shared scheduler (issue 46);
//! - [`projector`]: the `Projection` trait and its checkpointed runner (rebuildable from
//!   zero, never stalled: what cannot be applied is parked, see [`parking`]);
//!   [`projections`]: the read models several services read (`assistant_text`);
//! - [`routing`]: the routing vocabulary (routes, decision sources and origins, notices);
//!   [`short_memory`]: which history lines a prompt gets beside the session's summary (both
//!   from `ghost-domain`, the pure rules, re-exported here);
//! - [`masking`]: secrets and personal data masked before logs or the cloud;
//! - [`autonomy`]: action decisions, capability results, autonomy events and subjects;
//! - [`affect`]: the affect trailer, mood constants and mood state (seed 004; from
//!   `ghost-domain`);
//! - [`mood_api`]: the mood service's request/reply protocol on core NATS;
//! - [`turn_stream`] / [`stage_signal`]: what travels on a turn's / a stage's core-NATS
//!   subject;
//! - [`config`]: YAML + environment configuration, secrets;
//! - [`media`]: images users send, in Postgres so every service reaches them;
//! - [`memory`]: long-term memory (seed 001): the write plan, its rules, states, preferences
//!   and the interest state (pure code);
//! - [`llm`]: Ollama and OpenAI-compatible clients, structured output; [`contracts`]: the
//!   JSON Schema of every model answer Ghost parses (both `ghost-llm`, re-exported);
//!   [`template`]: prompt placeholder checks;
//! - [`telemetry`]: tracing + OpenTelemetry, trace context over NATS; [`metrics`]: the
//!   Prometheus metrics every service records, named and described once (`ghost-metrics`);
//! - [`service`]: the context every service runs with (and "is this step done already?");
//!   [`shutdown`]: the graceful stop of a service process (SIGTERM);
//! - [`net`]: socket settings for our HTTP servers;
//! - [`web`]: web search (SearXNG JSON) and page fetching, bounded, as text with sources;
//! - [`spend`]: the cloud coder's token use this UTC day, from the store (its daily cap);
//! - [`fault`]: crash points for crash-safety tests (the production-side hook).
//!
//! Test doubles (fake LLM and platform servers, test environments) live in `ghost-testkit`.

pub use ghost_domain::{affect, routing, short_memory};
/// Model access and metrics are crates of their own, re-exported at their old paths.
pub use ghost_llm::contracts;
pub use ghost_metrics as metrics;

pub mod autonomy;
pub mod bus;
pub mod clock;
pub mod config;
pub mod envelope;
mod event_enum;
pub mod event_log;
pub mod events;
pub mod fault;
pub mod ids;
pub mod llm {
    //! [`ghost_llm`], at its old path.
    pub use ghost_llm::*;
}
pub mod masking;
pub mod media;
pub mod memory;
pub mod mood_api;
pub mod net;
pub mod parking;
pub mod projections;
pub mod projector;
pub mod reminders;
pub mod service;
pub mod shutdown;
pub mod spend;
pub mod stage_signal;
pub mod store;
pub mod telemetry;
pub mod template;
pub mod turn_stream;
pub mod web;

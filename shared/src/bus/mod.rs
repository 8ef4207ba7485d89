//! The NATS bus: JetStream for committed events, core NATS for what may be lost.
//!
//! Subjects (`<prefix>` is per deployment, and per test):
//! - `<prefix>.evt.<stream-kind>.<EventType>`: committed events (JetStream, deduplicated by
//!   `Nats-Msg-Id` = event id);
//! - `<prefix>.dlq.<consumer>`: poison messages (JetStream, kept for operators);
//! - `<prefix>.stream.<turn>`: token deltas of one reply (core NATS).
//!
//! Both JetStream streams are bounded (`bus.max_age_secs`, `bus.max_bytes`) and drop their
//! oldest messages first. Postgres is the record (projections read it, not the bus); the
//! streams only carry events from commit to consumer, so the limits bound the server's
//! storage at the price that a consumer stopped for longer than they allow misses what
//! expired. Dropping the oldest (rather than refusing new publishes) keeps the live system
//! moving when a stream fills. Forgetting a person deletes their events' copies from both
//! (`purge`).

mod consumer;
mod purge;

use std::time::Duration;

use async_nats::jetstream::{self, stream::StorageType};
use async_nats::HeaderMap;
use bytes::Bytes;
use serde::Deserialize;

pub use consumer::{run_consumer, ConsumerSpec, EventHandler, HandlerError};

use crate::envelope::RecordedEvent;

/// Bus settings (`bus:` in ghost.yaml).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BusConfig {
    /// NATS server URL.
    pub url: String,
    /// More servers of the same NATS cluster: the client connects to any of `url` and
    /// these and fails over between them (`GHOST_BUS__SERVERS` takes them comma-separated).
    #[serde(deserialize_with = "one_or_many")]
    pub servers: Vec<String>,
    /// JetStream replicas of the event and dead-letter streams (and so of their consumers):
    /// 1 on a single server, 3 in a cluster. Checked against the server at start.
    pub replicas: usize,
    /// Subject prefix; distinct deployments on one server use distinct prefixes.
    pub subject_prefix: String,
    /// JetStream stream holding committed events.
    pub stream_name: String,
    /// `file` (durable) or `memory`.
    pub storage: BusStorage,
    /// Deliveries of one message before it goes to the dead-letter subject.
    pub max_deliver: i64,
    /// Seconds a consumer may hold a message without acking before it is redelivered.
    /// Long handlers keep it alive with progress acks.
    pub ack_wait_secs: u64,
    /// Seconds within which a repeated `Nats-Msg-Id` is dropped.
    pub duplicate_window_secs: u64,
    /// Messages one service instance handles at once per consumer.
    pub concurrency: usize,
    /// Seconds JetStream keeps a message (events and dead letters) before discarding it.
    /// Postgres keeps every event for good; this only bounds the server's storage, so a
    /// consumer stopped for longer than this misses what expired (rebuild from the store).
    pub max_age_secs: u64,
    /// Bytes each stream (events, dead letters) may hold; the oldest messages are
    /// discarded beyond it.
    pub max_bytes: i64,
    /// Seconds the messages in flight get to finish after a stop is requested (SIGTERM);
    /// what is still running then is handed back to the server for another instance.
    pub shutdown_grace_secs: u64,
}

impl Default for BusConfig {
    fn default() -> Self {
        Self {
            url: "nats://127.0.0.1:4222".into(),
            servers: Vec::new(),
            replicas: 1,
            subject_prefix: "ghost".into(),
            stream_name: "GHOST_EVENTS".into(),
            storage: BusStorage::File,
            max_deliver: 5,
            ack_wait_secs: 30,
            duplicate_window_secs: 120,
            concurrency: 64,
            max_age_secs: 7 * 24 * 3600,
            max_bytes: 1024 * 1024 * 1024,
            shutdown_grace_secs: 20,
        }
    }
}

/// A list in YAML, or one comma-separated string (an environment override).
fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(s) => s
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
        OneOrMany::Many(v) => v,
    })
}

/// Most replicas a JetStream stream can have.
pub const MAX_REPLICAS: usize = 5;

/// The smallest `bus.max_bytes` accepted (a few events would not fit in less).
pub const MIN_STREAM_BYTES: i64 = 1024 * 1024;

/// Where JetStream keeps messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BusStorage {
    /// On disk: survives a server restart.
    File,
    /// In memory: for tests.
    Memory,
}

/// What can go wrong on the bus.
#[derive(Debug, thiserror::Error)]
pub enum BusError {
    /// Could not connect.
    #[error("cannot connect to NATS at {url}: {reason}")]
    Connect {
        /// The URL tried.
        url: String,
        /// Why.
        reason: String,
    },
    /// A JetStream call failed.
    #[error("jetstream: {0}")]
    JetStream(String),
    /// `bus.replicas` cannot be placed by the servers connected to.
    #[error("{0}")]
    Replicas(String),
    /// A core publish failed.
    #[error("publish: {0}")]
    Publish(String),
    /// An event does not serialize.
    #[error("encode: {0}")]
    Encode(#[from] serde_json::Error),
}

/// Connected bus handle (cheap to clone).
#[derive(Clone, Debug)]
pub struct Bus {
    client: async_nats::Client,
    js: jetstream::Context,
    config: BusConfig,
}

impl Bus {
    /// Connects and makes sure the event and dead-letter streams exist.
    pub async fn connect(config: BusConfig) -> Result<Self, BusError> {
        let urls: Vec<&str> = std::iter::once(config.url.as_str())
            .chain(config.servers.iter().map(String::as_str))
            .collect();
        let addresses = urls
            .iter()
            .map(|u| u.parse::<async_nats::ServerAddr>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| BusError::Connect {
                url: urls.join(","),
                reason: e.to_string(),
            })?;
        let client = async_nats::ConnectOptions::new()
            .name("ghost")
            .connect(addresses)
            .await
            .map_err(|e| BusError::Connect {
                url: urls.join(","),
                reason: e.to_string(),
            })?;
        let js = jetstream::new(client.clone());
        let bus = Self { client, js, config };
        bus.check_replicas()?;
        bus.ensure_streams().await?;
        Ok(bus)
    }

    /// Refuses `bus.replicas` above 1 on a server that is not part of a cluster: JetStream
    /// would refuse every stream, with a message that names neither the setting nor the fix.
    fn check_replicas(&self) -> Result<(), BusError> {
        let replicas = self.config.replicas;
        if replicas <= 1 {
            return Ok(());
        }
        let info = self.client.server_info();
        if info.cluster.as_deref().is_none_or(str::is_empty) {
            return Err(BusError::Replicas(format!(
                "bus.replicas is {replicas}, but the NATS server {} at {} is not part of a \
                 cluster, so it can keep only one replica of a stream. Set bus.replicas: 1 \
                 (GHOST_BUS__REPLICAS=1) for a single server, or run a cluster of at least \
                 {replicas} JetStream nodes and list them in bus.servers",
                info.server_name, self.config.url
            )));
        }
        Ok(())
    }

    /// Creates the event and dead-letter streams, or brings an existing stream's limits to
    /// the configured ones.
    async fn ensure_streams(&self) -> Result<(), BusError> {
        let storage = match self.config.storage {
            BusStorage::File => StorageType::File,
            BusStorage::Memory => StorageType::Memory,
        };
        let prefix = &self.config.subject_prefix;
        for (name, subject) in [
            (self.config.stream_name.clone(), format!("{prefix}.evt.>")),
            (self.dlq_stream_name(), format!("{prefix}.dlq.>")),
        ] {
            self.js
                .create_or_update_stream(jetstream::stream::Config {
                    name: name.clone(),
                    subjects: vec![subject],
                    storage,
                    duplicate_window: Duration::from_secs(self.config.duplicate_window_secs),
                    max_age: Duration::from_secs(self.config.max_age_secs),
                    max_bytes: self.config.max_bytes,
                    discard: jetstream::stream::DiscardPolicy::Old,
                    num_replicas: self.config.replicas,
                    ..Default::default()
                })
                .await
                .map_err(|e| {
                    let e = e.to_string();
                    if self.config.replicas > 1 && e.contains("replica") {
                        BusError::Replicas(format!(
                            "stream {name}: {e}: bus.replicas is {} and the cluster cannot \
                             place that many (fewer JetStream nodes): lower bus.replicas or \
                             add nodes",
                            self.config.replicas
                        ))
                    } else {
                        BusError::JetStream(format!("stream {name}: {e}"))
                    }
                })?;
        }
        Ok(())
    }

    fn dlq_stream_name(&self) -> String {
        format!("{}_DLQ", self.config.stream_name)
    }

    /// The settings in force.
    pub fn config(&self) -> &BusConfig {
        &self.config
    }

    /// The core client, for request/reply and token streams.
    pub fn client(&self) -> &async_nats::Client {
        &self.client
    }

    /// The JetStream context.
    pub fn jetstream(&self) -> &jetstream::Context {
        &self.js
    }

    /// `<prefix>.evt.<kind>.<type>` for an event.
    pub fn event_subject(&self, event: &RecordedEvent) -> String {
        format!(
            "{}.evt.{}.{}",
            self.config.subject_prefix,
            event.stream_kind(),
            event.event_type
        )
    }

    /// The subject filter matching one event type in every stream kind.
    pub fn event_type_filter(&self, event_type: &str) -> String {
        format!("{}.evt.*.{}", self.config.subject_prefix, event_type)
    }

    /// `<prefix>.dlq.<consumer>`.
    pub fn dead_letter_subject(&self, consumer: &str) -> String {
        format!("{}.dlq.{}", self.config.subject_prefix, consumer)
    }

    /// `<prefix>.stream.<turn>`: token deltas of one reply.
    pub fn token_subject(&self, turn: &uuid::Uuid) -> String {
        format!("{}.stream.{}", self.config.subject_prefix, turn)
    }

    /// `<prefix>.<name>` for core request/reply and monitor subjects.
    pub fn core_subject(&self, name: &str) -> String {
        format!("{}.{}", self.config.subject_prefix, name)
    }

    /// Publishes a committed event to JetStream and waits for the server's acknowledgement.
    /// The event id is the `Nats-Msg-Id`, so publishing twice delivers once.
    pub async fn publish_event(&self, event: &RecordedEvent) -> Result<(), BusError> {
        self.publish_events(&[event]).await.remove(0)
    }

    /// Publishes several committed events in order, then waits for all acknowledgements
    /// (one round trip for the batch instead of one per event). One result per event.
    pub async fn publish_events(&self, events: &[&RecordedEvent]) -> Vec<Result<(), BusError>> {
        let mut pending = Vec::with_capacity(events.len());
        for event in events {
            pending.push(self.send_event(event).await);
        }
        let mut results = Vec::with_capacity(events.len());
        for p in pending {
            results.push(match p {
                Ok(ack) => ack
                    .await
                    .map(|_| ())
                    .map_err(|e| BusError::JetStream(e.to_string())),
                Err(e) => Err(e),
            });
        }
        results
    }

    async fn send_event(
        &self,
        event: &RecordedEvent,
    ) -> Result<jetstream::context::PublishAckFuture, BusError> {
        let mut headers = HeaderMap::new();
        headers.insert(
            async_nats::header::NATS_MESSAGE_ID,
            event.event_id.to_string().as_str(),
        );
        if let Some(tp) = &event.metadata.traceparent {
            headers.insert("traceparent", tp.as_str());
        }
        if let Some(ts) = &event.metadata.tracestate {
            headers.insert("tracestate", ts.as_str());
        }
        let payload = Bytes::from(serde_json::to_vec(event)?);
        self.js
            .publish_with_headers(self.event_subject(event), headers, payload)
            .await
            .map_err(|e| BusError::JetStream(e.to_string()))
    }

    /// Publishes on core NATS (may be lost; for token streams and monitors), carrying the
    /// current trace context.
    pub async fn publish_core(&self, subject: String, payload: Bytes) -> Result<(), BusError> {
        let headers = crate::telemetry::current_trace_header_map();
        self.client
            .publish_with_headers(subject, headers, payload)
            .await
            .map_err(|e| BusError::Publish(e.to_string()))
    }

    /// Whether the server is reachable now (a round trip).
    pub async fn ping(&self) -> Result<(), BusError> {
        self.client
            .flush()
            .await
            .map_err(|e| BusError::Publish(e.to_string()))
    }

    /// Deletes this bus's streams (test clean-up).
    pub async fn delete_streams(&self) -> Result<(), BusError> {
        for name in [self.config.stream_name.clone(), self.dlq_stream_name()] {
            let _ = self.js.delete_stream(&name).await;
        }
        Ok(())
    }
}

//! Durable pull consumers: explicit ack, progress while working, bounded redelivery,
//! and a dead-letter subject for poison messages.

use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::{
    self,
    consumer::{pull, AckPolicy},
    AckKind,
};
use async_nats::HeaderMap;
use futures::StreamExt;
use tracing::{error, info_span, warn, Instrument};
use tracing_opentelemetry::OpenTelemetrySpanExt;

use super::{Bus, BusError};
use crate::envelope::RecordedEvent;

/// Why handling an event failed.
#[derive(Debug, thiserror::Error)]
pub enum HandlerError {
    /// Worth another delivery (database or bus hiccup).
    #[error("transient: {0}")]
    Transient(String),
    /// Will never succeed (invalid payload): dead-letter at once.
    #[error("permanent: {0}")]
    Permanent(String),
}

impl HandlerError {
    /// A transient error from anything displayable.
    pub fn transient(e: impl std::fmt::Display) -> Self {
        Self::Transient(e.to_string())
    }

    /// A permanent error from anything displayable.
    pub fn permanent(e: impl std::fmt::Display) -> Self {
        Self::Permanent(e.to_string())
    }
}

/// A service's reaction to one event type. Must be idempotent: any message may come again.
#[async_trait::async_trait]
pub trait EventHandler: Send + Sync + 'static {
    /// Handles one committed event.
    async fn handle(&self, event: RecordedEvent) -> Result<(), HandlerError>;

    /// Told once when an event is given up on, so the service can close what it opened
    /// (for example end the turn with a failure). `event` is `None` when the message did not
    /// even decode.
    async fn on_dead_letter(&self, _event: Option<&RecordedEvent>, _reason: &str) {}
}

/// Which events a consumer takes, and under which durable name.
#[derive(Debug, Clone)]
pub struct ConsumerSpec {
    /// The producing/handling service (for spans and logs).
    pub service: String,
    /// Event type to receive (from every stream kind).
    pub event_type: String,
    /// Durable consumer name: instances sharing it share the work.
    pub durable: String,
}

impl ConsumerSpec {
    /// The consumer `service` uses for `event_type` (durable `<service>_<event_type>`).
    pub fn new(service: &str, event_type: &str) -> Self {
        Self {
            service: service.to_owned(),
            event_type: event_type.to_owned(),
            durable: format!("{}_{}", service.replace(['.', ' ', '-'], "_"), event_type),
        }
    }
}

/// Runs one durable consumer until its task is dropped or aborted.
///
/// Messages are handled concurrently (up to `bus.concurrency`); a message is acked only
/// after its handler succeeded, so a crash at any point means redelivery, never loss.
pub async fn run_consumer(
    bus: Bus,
    spec: ConsumerSpec,
    handler: Arc<dyn EventHandler>,
) -> Result<(), BusError> {
    let stream = bus
        .jetstream()
        .get_stream(&bus.config().stream_name)
        .await
        .map_err(|e| BusError::JetStream(e.to_string()))?;
    let ack_wait = Duration::from_secs(bus.config().ack_wait_secs.max(1));
    let consumer: jetstream::consumer::PullConsumer = stream
        .get_or_create_consumer(
            &spec.durable,
            pull::Config {
                durable_name: Some(spec.durable.clone()),
                filter_subject: bus.event_type_filter(&spec.event_type),
                ack_policy: AckPolicy::Explicit,
                ack_wait,
                max_deliver: bus.config().max_deliver,
                max_ack_pending: (bus.config().concurrency as i64) * 4,
                ..Default::default()
            },
        )
        .await
        .map_err(|e| BusError::JetStream(e.to_string()))?;
    let concurrency = bus.config().concurrency.max(1);
    crate::metrics::register_consumer(&spec.durable);
    loop {
        let messages = match consumer.messages().await {
            Ok(m) => m,
            Err(e) => {
                warn!(consumer = %spec.durable, error = %e, "cannot pull; retrying");
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            }
        };
        messages
            .for_each_concurrent(concurrency, |message| {
                let bus = &bus;
                let spec = &spec;
                let handler = handler.clone();
                async move {
                    match message {
                        Ok(message) => {
                            process(bus, spec, handler.as_ref(), message, ack_wait).await
                        }
                        Err(e) => warn!(consumer = %spec.durable, error = %e, "pull stream error"),
                    }
                }
            })
            .await;
        // The message stream ended (connection trouble): pull again.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn process(
    bus: &Bus,
    spec: &ConsumerSpec,
    handler: &dyn EventHandler,
    message: jetstream::Message,
    ack_wait: Duration,
) {
    let delivered = message.info().map(|i| i.delivered).unwrap_or(1);
    crate::metrics::consumer_delivery(&spec.durable, delivered);
    let started = std::time::Instant::now();
    let event: RecordedEvent = match serde_json::from_slice(&message.payload) {
        Ok(event) => event,
        Err(e) => {
            let reason = format!("undecodable event: {e}");
            dead_letter(bus, spec, handler, &message, None, &reason).await;
            return;
        }
    };
    let span = info_span!(
        "handle",
        otel.name = %format!("{} {}", spec.service, event.event_type),
        ghost.service = %spec.service,
        event_type = %event.event_type,
        event_id = %event.event_id,
        correlation_id = %event.metadata.correlation_id,
        delivered,
    );
    let _ = span.set_parent(crate::telemetry::extract_context(message.headers.as_ref()));

    let result = {
        let work = handler.handle(event.clone()).instrument(span.clone());
        tokio::pin!(work);
        // Keep the message ours while the handler works (an LLM call can take a minute).
        let mut ticker = tokio::time::interval(ack_wait / 3);
        ticker.tick().await;
        loop {
            tokio::select! {
                r = &mut work => break r,
                _ = ticker.tick() => { let _ = message.ack_with(AckKind::Progress).await; }
            }
        }
    };
    let _guard = span.enter();
    let outcome = match &result {
        Ok(()) => "ok",
        Err(HandlerError::Transient(_)) if delivered < bus.config().max_deliver => "retry",
        Err(_) => "dead_letter",
    };
    crate::metrics::consumer_handled(&spec.durable, outcome, started.elapsed());
    match result {
        Ok(()) => {
            if let Err(e) = message.ack().await {
                warn!(error = %e, "ack failed; the message will come again");
            }
        }
        Err(HandlerError::Transient(reason)) if delivered < bus.config().max_deliver => {
            warn!(%reason, delivered, "handler failed; will retry");
            let delay = Duration::from_millis(200 * (1 << delivered.clamp(0, 6)) as u64);
            let _ = message.ack_with(AckKind::Nak(Some(delay))).await;
        }
        Err(e) => {
            let reason = e.to_string();
            drop(_guard);
            dead_letter(bus, spec, handler, &message, Some(&event), &reason).await;
        }
    }
}

async fn dead_letter(
    bus: &Bus,
    spec: &ConsumerSpec,
    handler: &dyn EventHandler,
    message: &jetstream::Message,
    event: Option<&RecordedEvent>,
    reason: &str,
) {
    error!(consumer = %spec.durable, %reason, "dead-lettering message");
    let mut headers = HeaderMap::new();
    headers.insert(
        "Ghost-Dead-Letter-Reason",
        reason.replace(['\r', '\n'], " ").as_str(),
    );
    headers.insert("Ghost-Original-Subject", message.subject.as_str());
    if let Some(event) = event {
        headers.insert(
            async_nats::header::NATS_MESSAGE_ID,
            format!("{}:{}", spec.durable, event.event_id).as_str(),
        );
    }
    let published = match bus
        .jetstream()
        .publish_with_headers(
            bus.dead_letter_subject(&spec.durable),
            headers,
            message.payload.clone(),
        )
        .await
    {
        Ok(ack) => ack.await.is_ok(),
        Err(_) => false,
    };
    if !published {
        // Not parked anywhere yet: let the server deliver it again rather than lose it.
        let _ = message
            .ack_with(AckKind::Nak(Some(Duration::from_secs(1))))
            .await;
        return;
    }
    crate::metrics::consumer_dead_letter(&spec.durable);
    handler.on_dead_letter(event, reason).await;
    let _ = message.ack_with(AckKind::Term).await;
}

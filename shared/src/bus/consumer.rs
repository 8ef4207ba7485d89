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
use tracing::{error, info, info_span, warn, Instrument};
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
    /// Not yet: deliver again after `after` (the step waits for something with a known
    /// end, such as an earlier attempt's time running out). One delivery, not a backoff
    /// series, is spent on it.
    #[error("later ({after:?}): {reason}")]
    Later {
        /// Why.
        reason: String,
        /// When to try again.
        after: Duration,
    },
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

    /// Try again after `after`, for `reason`.
    pub fn later(after: Duration, reason: impl std::fmt::Display) -> Self {
        Self::Later {
            reason: reason.to_string(),
            after,
        }
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

/// How long one pull request stands at the server. The server hands messages to the pull
/// requests it holds; it learns that a client is cut off (a partition, not a crash, which
/// closes the connection) only from missed pings, minutes later. Until then the cut-off
/// instance's request keeps taking messages it will never handle (they wait out the ack
/// wait). A short expiry (async-nats' default is 30 s) retires such a request soon, and
/// the instances still reachable take the work: in the cluster fault run, answers flowed
/// again 10.6–23.9 s after a host was cut off with the default. Each pull asks for at most
/// `bus.concurrency` messages (200 by default), so a cut-off instance holds no more than
/// it could have been handling.
const PULL_EXPIRES: Duration = Duration::from_secs(4);
/// The server's idle heartbeat on a standing pull (under half the expiry): a client that
/// misses two pulls again.
const PULL_HEARTBEAT: Duration = Duration::from_millis(1500);

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
    // A message whose handler never finishes (it crashes the process, or hangs past every
    // ack wait) runs out of deliveries without a handler ever seeing its last one: the
    // server then announces it on the max-deliveries advisory, and one instance (queue
    // group per consumer) parks it and closes what it opened.
    let advisories = tokio::spawn(watch_max_deliveries(
        bus.clone(),
        spec.clone(),
        handler.clone(),
    ));
    let _stop_advisories = AbortOnDrop(advisories);
    loop {
        if crate::shutdown::is_requested() {
            return Ok(());
        }
        let messages = match consumer
            .stream()
            .max_messages_per_batch(concurrency)
            .expires(PULL_EXPIRES)
            .heartbeat(PULL_HEARTBEAT)
            .messages()
            .await
        {
            Ok(m) => m,
            Err(e) => {
                warn!(consumer = %spec.durable, error = %e, "cannot pull; retrying");
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            }
        };
        // On a stop request the stream ends (no more pulls) and the handlers in flight
        // finish (or are handed back after the grace period) before this returns.
        messages
            .take_until(crate::shutdown::requested())
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
        if crate::shutdown::is_requested() {
            info!(consumer = %spec.durable, "stopped pulling; nothing left in flight");
            return Ok(());
        }
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
    let _in_flight = crate::shutdown::InFlight::start();
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
        // The handler owns the event; a dead letter (rare) decodes it again.
        let work = handler.handle(event).instrument(span.clone());
        tokio::pin!(work);
        // Keep the message ours while the handler works (an LLM call can take a minute).
        // The first tick is one period away: an interval's "immediate" first tick, awaited
        // before the work, waits for the timer's next millisecond (0.6 ms at the median,
        // on every message of every consumer).
        let period = ack_wait / 3;
        let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        let grace = Duration::from_secs(bus.config().shutdown_grace_secs);
        let grace_over = async {
            crate::shutdown::requested().await;
            tokio::time::sleep(grace).await;
        };
        tokio::pin!(grace_over);
        loop {
            tokio::select! {
                r = &mut work => break r,
                _ = &mut grace_over => {
                    // Stopping, and the handler did not finish in time: hand the message
                    // back at once (its step ids make the other instance's run safe).
                    // On its final delivery a NAK would drop it: leave it to the ack wait
                    // and the max-deliveries advisory instead.
                    if delivered < bus.config().max_deliver {
                        warn!(delivered, "stopping: handing an unfinished message back");
                        if let Err(e) = message.ack_with(AckKind::Nak(None)).await {
                            warn!(error = %e, "could not hand the message back; it returns after the ack wait");
                        }
                    }
                    return;
                }
                _ = ticker.tick() => {
                    if let Err(e) = message.ack_with(AckKind::Progress).await {
                        // The server may redeliver to another instance while this one works;
                        // the step's derived ids keep that harmless, but it should be seen.
                        warn!(error = %e, delivered, "progress ack failed; the message may be redelivered");
                    }
                }
            }
        }
    };
    // The ack and what follows belong to the handling span too. Instrumented, not entered:
    // a guard held across an await puts whatever else runs on this thread meanwhile inside
    // the span, and may be dropped on another thread than the one that entered it.
    let finish = async {
        let outcome = match &result {
            Ok(()) => "ok",
            Err(HandlerError::Transient(_) | HandlerError::Later { .. })
                if delivered < bus.config().max_deliver =>
            {
                "retry"
            }
            Err(_) => "dead_letter",
        };
        crate::metrics::consumer_handled(&spec.durable, outcome, started.elapsed());
        match result {
            Ok(()) => {
                if let Err(e) = message.ack().await {
                    warn!(error = %e, "ack failed; the message will come again");
                }
                None
            }
            Err(HandlerError::Later { reason, after }) if delivered < bus.config().max_deliver => {
                info!(%reason, delivered, ?after, "not yet; will deliver again");
                let _ = message.ack_with(AckKind::Nak(Some(after))).await;
                None
            }
            Err(HandlerError::Transient(reason)) if delivered < bus.config().max_deliver => {
                warn!(%reason, delivered, "handler failed; will retry");
                let delay = Duration::from_millis(200 * (1 << delivered.clamp(0, 6)) as u64);
                let _ = message.ack_with(AckKind::Nak(Some(delay))).await;
                None
            }
            Err(e) => Some(e.to_string()),
        }
    };
    if let Some(reason) = finish.instrument(span).await {
        let event: Option<RecordedEvent> = serde_json::from_slice(&message.payload).ok();
        dead_letter(bus, spec, handler, &message, event.as_ref(), &reason).await;
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
    let delivered = message.info().map(|i| i.delivered).unwrap_or(1);
    if !published && delivered < bus.config().max_deliver {
        // Not parked anywhere yet: let the server deliver it again rather than lose it.
        let _ = message
            .ack_with(AckKind::Nak(Some(Duration::from_secs(1))))
            .await;
        return;
    }
    crate::metrics::consumer_dead_letter(&spec.durable);
    if !published {
        // The final delivery: a NAK would only drop it silently. Close what it opened and
        // say so; the original stays in the event stream (and the store) for an operator.
        error!(consumer = %spec.durable, %reason, "cannot park the message on its final delivery");
    }
    handler.on_dead_letter(event, reason).await;
    let _ = message.ack_with(AckKind::Term).await;
}

/// Aborts a task when dropped (the advisory watcher lives as long as its consumer).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The body of a JetStream max-deliveries advisory (the fields used).
#[derive(Debug, serde::Deserialize)]
struct MaxDeliveriesAdvisory {
    stream_seq: u64,
    deliveries: i64,
}

/// `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.<stream>.<consumer>`.
pub(crate) fn max_deliveries_subject(stream: &str, durable: &str) -> String {
    format!("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.{stream}.{durable}")
}

/// Listens for the consumer's max-deliveries advisories (one instance per advisory) and
/// dead-letters each message named there. Runs until aborted.
async fn watch_max_deliveries(bus: Bus, spec: ConsumerSpec, handler: Arc<dyn EventHandler>) {
    let subject = max_deliveries_subject(&bus.config().stream_name, &spec.durable);
    loop {
        let mut advisories = match bus
            .client()
            .queue_subscribe(subject.clone(), spec.durable.clone())
            .await
        {
            Ok(s) => s,
            Err(e) => {
                warn!(consumer = %spec.durable, error = %e, "cannot watch max-deliveries advisories; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        while let Some(advisory) = advisories.next().await {
            match serde_json::from_slice::<MaxDeliveriesAdvisory>(&advisory.payload) {
                Ok(a) => dead_letter_exhausted(&bus, &spec, handler.as_ref(), a).await,
                Err(e) => {
                    warn!(consumer = %spec.durable, error = %e, "unreadable max-deliveries advisory")
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Parks the message a max-deliveries advisory names and tells the handler.
async fn dead_letter_exhausted(
    bus: &Bus,
    spec: &ConsumerSpec,
    handler: &dyn EventHandler,
    advisory: MaxDeliveriesAdvisory,
) {
    let reason = format!(
        "no handler finished it in {} deliveries (crash or hang)",
        advisory.deliveries
    );
    let stream = match bus.jetstream().get_stream(&bus.config().stream_name).await {
        Ok(s) => s,
        Err(e) => {
            error!(consumer = %spec.durable, error = %e, seq = advisory.stream_seq, "cannot read the exhausted message");
            return;
        }
    };
    let raw = match stream.get_raw_message(advisory.stream_seq).await {
        Ok(m) => m,
        Err(e) => {
            // Expired from the stream (limits): the store keeps the event, the watchdog the turn.
            error!(consumer = %spec.durable, error = %e, seq = advisory.stream_seq, "exhausted message is gone from the stream");
            return;
        }
    };
    let event: Option<RecordedEvent> = serde_json::from_slice(&raw.payload).ok();
    error!(consumer = %spec.durable, %reason, seq = advisory.stream_seq, "dead-lettering exhausted message");
    let mut headers = HeaderMap::new();
    headers.insert("Ghost-Dead-Letter-Reason", reason.as_str());
    headers.insert("Ghost-Original-Subject", raw.subject.as_str());
    if let Some(event) = &event {
        headers.insert(
            async_nats::header::NATS_MESSAGE_ID,
            format!("{}:{}", spec.durable, event.event_id).as_str(),
        );
    }
    let published = match bus
        .jetstream()
        .publish_with_headers(bus.dead_letter_subject(&spec.durable), headers, raw.payload)
        .await
    {
        Ok(ack) => ack.await.is_ok(),
        Err(_) => false,
    };
    if !published {
        error!(consumer = %spec.durable, seq = advisory.stream_seq, "cannot park the exhausted message");
    }
    handler.on_dead_letter(event.as_ref(), &reason).await;
}

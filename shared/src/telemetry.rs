//! Tracing and OpenTelemetry: one user message is one trace across every service.
//!
//! W3C trace context rides in event metadata and NATS headers; consumers continue the
//! producer's trace. Spans are exported over OTLP/HTTP when an endpoint is configured and
//! dropped otherwise (trace ids are still created, so logs and events can be correlated).

use std::collections::HashMap;

use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry::Context;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanExporter};
use opentelemetry_sdk::Resource;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::EnvFilter;

/// Keeps the tracer provider alive; flushes spans when dropped.
pub struct TelemetryGuard {
    provider: SdkTracerProvider,
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        let _ = self.provider.force_flush();
        let _ = self.provider.shutdown();
    }
}

/// Failure to set up telemetry.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The OTLP exporter could not be built.
    #[error("otlp exporter: {0}")]
    Exporter(String),
    /// A global subscriber was already installed.
    #[error("a tracing subscriber is already installed")]
    AlreadyInstalled,
}

/// Installs logging (`RUST_LOG`, default `info`) and the OpenTelemetry layer for `service`.
/// With `otlp_endpoint` (e.g. `http://127.0.0.1:4318/v1/traces`), spans are exported.
pub fn init(
    service: &str,
    otlp_endpoint: Option<&str>,
    json_logs: bool,
) -> Result<TelemetryGuard, TelemetryError> {
    let mut builder = SdkTracerProvider::builder().with_resource(
        Resource::builder()
            .with_service_name(service.to_owned())
            .build(),
    );
    if let Some(endpoint) = otlp_endpoint {
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_endpoint(endpoint)
            .build()
            .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
        builder = builder.with_batch_exporter(exporter);
    }
    install(builder.build(), json_logs)
}

/// Installs telemetry exporting every span to `exporter` synchronously (tests).
pub fn init_with_exporter<E: SpanExporter + 'static>(
    service: &str,
    exporter: E,
) -> Result<TelemetryGuard, TelemetryError> {
    let provider = SdkTracerProvider::builder()
        .with_resource(
            Resource::builder()
                .with_service_name(service.to_owned())
                .build(),
        )
        .with_simple_exporter(exporter)
        .build();
    install(provider, false)
}

fn install(provider: SdkTracerProvider, json_logs: bool) -> Result<TelemetryGuard, TelemetryError> {
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    let tracer = provider.tracer("ghost");
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let otel = tracing_opentelemetry::layer().with_tracer(tracer);
    let registry = tracing_subscriber::registry().with(filter).with(otel);
    // Every log line passes through the masking rules (a secret in an error message or a
    // field never reaches a log file).
    let writer = crate::masking::MaskingMakeWriter::new(std::io::stdout);
    let result = if json_logs {
        registry
            .with(tracing_subscriber::fmt::layer().json().with_writer(writer))
            .try_init()
    } else {
        registry
            .with(tracing_subscriber::fmt::layer().with_writer(writer))
            .try_init()
    };
    result.map_err(|_| TelemetryError::AlreadyInstalled)?;
    Ok(TelemetryGuard { provider })
}

struct MapCarrier<'a>(&'a mut HashMap<String, String>);

impl Injector for MapCarrier<'_> {
    fn set(&mut self, key: &str, value: String) {
        self.0.insert(key.to_owned(), value);
    }
}

struct NatsHeaders<'a>(&'a async_nats::HeaderMap);

impl Extractor for NatsHeaders<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(|v| v.as_str())
    }
    fn keys(&self) -> Vec<&str> {
        vec!["traceparent", "tracestate"]
    }
}

struct Pair<'a>(Option<&'a str>, Option<&'a str>);

impl Extractor for Pair<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            "traceparent" => self.0,
            "tracestate" => self.1,
            _ => None,
        }
    }
    fn keys(&self) -> Vec<&str> {
        vec!["traceparent", "tracestate"]
    }
}

/// `traceparent` and `tracestate` of the current span (None outside any trace).
pub fn current_trace_headers() -> (Option<String>, Option<String>) {
    let cx = tracing::Span::current().context();
    let mut map = HashMap::new();
    TraceContextPropagator::new().inject_context(&cx, &mut MapCarrier(&mut map));
    (
        map.remove("traceparent"),
        map.remove("tracestate").filter(|s| !s.is_empty()),
    )
}

/// The current trace context as NATS headers.
pub fn current_trace_header_map() -> async_nats::HeaderMap {
    let mut headers = async_nats::HeaderMap::new();
    let (tp, ts) = current_trace_headers();
    if let Some(tp) = tp {
        headers.insert("traceparent", tp.as_str());
    }
    if let Some(ts) = ts {
        headers.insert("tracestate", ts.as_str());
    }
    headers
}

/// The remote parent carried by NATS headers (empty context without them).
pub fn extract_context(headers: Option<&async_nats::HeaderMap>) -> Context {
    match headers {
        Some(h) => TraceContextPropagator::new().extract(&NatsHeaders(h)),
        None => Context::new(),
    }
}

/// The remote parent carried by a `traceparent`/`tracestate` pair (HTTP headers, metadata).
pub fn context_from(traceparent: Option<&str>, tracestate: Option<&str>) -> Context {
    TraceContextPropagator::new().extract(&Pair(traceparent, tracestate))
}

//! One user message is one trace: spans from every service it crossed share a trace id.
//! (Its own test binary: it installs the process-wide tracing subscriber.)

mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use ghost_testkit::fake_llm::Script;
use ghost_testkit::testing::eventually;
use opentelemetry::trace::TraceId;
use opentelemetry::Value;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SpanData};
use support::TestApp;

fn service_of(span: &SpanData) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == "ghost.service")
        .map(|kv| match &kv.value {
            Value::String(s) => s.to_string(),
            other => other.to_string(),
        })
}

#[tokio::test]
async fn every_service_span_of_a_turn_shares_one_trace() {
    let exporter = InMemorySpanExporter::default();
    let _telemetry =
        ghost_shared::telemetry::init_with_exporter("ghost-test", exporter.clone()).unwrap();
    let app = TestApp::spawn(&[]).await;
    app.reply(Script::reply("traced reply"));
    app.chat("t1", "trace me").await;

    let root: TraceId = eventually(Duration::from_secs(10), "the gateway span", || async {
        let spans = exporter.get_finished_spans().unwrap();
        spans
            .iter()
            .find(|s| s.name == "gateway chat_turn")
            .map(|s| s.span_context.trace_id())
    })
    .await;
    let services = eventually(
        Duration::from_secs(10),
        "spans from every service",
        || async {
            let spans = exporter.get_finished_spans().unwrap();
            let services: BTreeSet<String> = spans
                .iter()
                .filter(|s| s.span_context.trace_id() == root)
                .filter_map(service_of)
                .collect();
            ["gateway", "router", "persona"]
                .iter()
                .all(|s| services.contains(*s))
                .then_some(services)
        },
    )
    .await;
    // The worker may join too (it reflects on replies without an affect trailer).
    let known = ["gateway", "router", "persona", "worker", "mood"];
    assert!(
        services.iter().all(|s| known.contains(&s.as_str())),
        "{services:?}"
    );

    // No service span of this turn started a trace of its own.
    let spans = exporter.get_finished_spans().unwrap();
    let strays: Vec<&SpanData> = spans
        .iter()
        .filter(|s| service_of(s).is_some() && s.span_context.trace_id() != root)
        .collect();
    assert!(
        strays.is_empty(),
        "spans outside the turn's trace: {:?}",
        strays.iter().map(|s| &s.name).collect::<Vec<_>>()
    );

    // The trace id is also stored with every event of the turn.
    for event in app.session_events("t1").await {
        let tp = event.metadata.traceparent.expect("traceparent stored");
        assert!(tp.contains(&root.to_string()), "{}: {tp}", event.event_type);
    }
    app.cleanup().await;
}

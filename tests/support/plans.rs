//! WritePlan answers for the fake worker model, and turns whose plans are applied.

use std::sync::Arc;
use std::time::Duration;

use ghost::stack::ServiceName;
use ghost_shared::projections::MemoryProjection;
use ghost_shared::projector::ProjectionRunner;
use ghost_testkit::fake_llm::{RecordedRequest, Script};
use ghost_testkit::testing::eventually;
use serde_json::{json, Value};

use super::TestApp;

/// A valid plan with these state and preference updates, a joyful affect and one attention
/// target `topic` in `mode`.
pub fn write_plan(
    state_updates: Value,
    preference_updates: Value,
    topic: &str,
    mode: &str,
) -> Value {
    json!({
        "event_annotations": {"life_stage": "unknown", "about_time_confidence": 0.0, "entities": []},
        "state_updates": state_updates,
        "preference_updates": preference_updates,
        "event_affect": {"moment_affect_text": "分かって嬉しい", "moment_affect_labels": ["joy"],
                          "moment_affect_score_vad": {"v": 0.4, "a": 0.1, "d": 0.0},
                          "moment_affect_confidence": 0.7},
        "context_updates": {"threads": [], "links": []},
        "interest_update": {"attention_targets": [{"type": "topic", "value": topic, "weight": 0.6}],
                            "interaction_mode": mode}
    })
}

/// A second write-plan handler (another instance, or this one restarted) with its own
/// `memory` projection runner, for redelivering utterances by hand.
pub fn second_planner(
    app: &super::TestApp,
) -> (ghost_write_plan::planner::Planner, ProjectionRunner) {
    let ctx = app.stack.ctx.for_service("write-plan");
    let runner = ProjectionRunner::new(
        app.store.clone(),
        Arc::new(MemoryProjection),
        100,
        Duration::from_millis(50),
    );
    let planner = ghost_write_plan::planner::Planner::new(ctx, runner.clone()).unwrap();
    (planner, runner)
}

/// An upsert of a new task filed under `topic` with `salience`, resting on `current`.
pub fn task(body: &str, topic: &str, salience: f64, current: &Value) -> Value {
    json!({"kind": "task", "op": "upsert", "state_id": null, "body_text": body,
           "payload": {"topic": topic}, "confidence": 0.9, "salience": salience,
           "evidence_event_ids": [current], "reason": "said so"})
}

/// A plan that only annotates the utterance with `entities` (names) and `threads` (keys).
pub fn annotation(entities: &[&str], threads: &[&str]) -> Value {
    let entities: Vec<Value> = entities
        .iter()
        .map(|n| json!({"type": "TOPIC", "name": n, "confidence": 0.9}))
        .collect();
    let threads: Vec<Value> = threads
        .iter()
        .map(|k| json!({"thread_key": k, "confidence": 0.9}))
        .collect();
    json!({
        "event_annotations": {"life_stage": "unknown", "about_time_confidence": 0.0,
                              "entities": entities},
        "context_updates": {"threads": threads, "links": []}
    })
}

/// The input of `request` when it asks for a write plan.
pub fn plan_input(request: &RecordedRequest) -> Option<Value> {
    if !request.system_text()?.contains("long-term memory") {
        return None;
    }
    serde_json::from_str(&request.last_user_text()?).ok()
}

/// Every service plus the write-plan service, with `extra` settings.
pub async fn spawn_with_planner(extra: &[(&str, &str)]) -> TestApp {
    let mut services = ServiceName::ALL.to_vec();
    services.push(ServiceName::WritePlan);
    TestApp::spawn_services(&services, extra).await
}

/// Says `text` in `session` and waits until `applied` plans in all are applied (a plan's
/// annotation is its last event: once its row is projected, so is all it changed).
pub async fn planned(app: &TestApp, session: &str, text: &str, applied: i64) {
    app.chat(session, text).await;
    eventually(Duration::from_secs(30), "the plan applied", || async {
        let n: i64 = sqlx::query_scalar("SELECT count(*) FROM memory_event_annotations")
            .fetch_one(app.store.pool())
            .await
            .unwrap();
        (n >= applied).then_some(())
    })
    .await;
}

/// The fake worker's answer when `request` asks recall's selection: every candidate `keep`
/// takes (by its `id`, `source` and `text`); `None` for any other request.
pub fn select_candidates(
    request: &RecordedRequest,
    keep: impl Fn(&Value) -> bool,
) -> Option<Script> {
    if !request
        .system_text()?
        .contains("Before you answer, you recall")
    {
        return None;
    }
    // As a model held to the request's schema: no more ids than it allows.
    let schema = request
        .body
        .get("format")
        .or_else(|| request.body.pointer("/response_format/json_schema/schema"));
    let most = schema
        .and_then(|s| s.pointer("/properties/selected_ids/maxItems"))
        .and_then(Value::as_u64)
        .unwrap_or(u64::MAX) as usize;
    let ids: Vec<Value> = request.last_user_json()["candidates"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| keep(c))
        .map(|c| c["id"].clone())
        .take(most)
        .collect();
    Some(Script::reply(&json!({"selected_ids": ids}).to_string()))
}

/// Whether a recall candidate is a state or a preference (not an utterance).
pub fn is_state_or_preference(candidate: &Value) -> bool {
    let source = candidate["source"].as_str().unwrap_or_default();
    source == "preferences" || source.ends_with("states")
}

/// Plans applied so far (a plan's annotation is its last event).
pub async fn applied(app: &TestApp) -> usize {
    sqlx::query_scalar::<_, i64>("SELECT count(*) FROM memory_event_annotations")
        .fetch_one(app.store.pool())
        .await
        .unwrap() as usize
}

/// Waits until at least `n` plans are applied.
pub async fn wait_applied(app: &TestApp, n: usize) {
    eventually(Duration::from_secs(30), "the plans applied", || async {
        (applied(app).await >= n).then_some(())
    })
    .await;
}

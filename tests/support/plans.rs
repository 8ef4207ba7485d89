//! WritePlan answers for the fake worker model.

use std::sync::Arc;
use std::time::Duration;

use ghost_shared::projections::MemoryProjection;
use ghost_shared::projector::ProjectionRunner;
use serde_json::{json, Value};

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

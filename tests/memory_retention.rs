//! Retention of raw conversation text (seed 002: history is not stored in full text, to
//! limit what can leak; issue 47 item 3), over the real Postgres and NATS: an HTTP
//! conversation's line older than the channel's `memory.raw_text_retention_days` is redacted
//! as forgetting a person redacts it (the message whole, the reply's text emptied, their
//! `assistant_text` rows gone), while what memory made of it (the plan's state, the
//! annotation) stays and a line within the window is untouched.

mod support;

use std::time::Duration;

use ghost_shared::events::{AssistantReplied, UserMessageReceived};
use ghost_shared::memory::forget_person::REDACTED;
use ghost_testkit::fake_llm::{RecordedRequest, Script};
use ghost_testkit::testing::{eventually, WORKER_MODEL};
use serde_json::json;
use support::plans::{planned, spawn_with_planner, write_plan};
use support::{NEUTRAL_AFFECT, TOKEN};

/// Plans remember each message as a fact.
fn answer(r: &RecordedRequest) -> Script {
    if r.system_text()
        .unwrap_or_default()
        .contains("long-term memory")
    {
        let input = r.last_user_json();
        let current = input["current_event_id"].clone();
        let said = input["turn"]["user_text"].as_str().unwrap_or_default();
        let fact = json!({"kind": "fact", "op": "upsert", "body_text": format!("聞いた: {said}"),
            "confidence": 0.9, "evidence_event_ids": [current], "reason": "said so"});
        return Script::reply(&write_plan(json!([fact]), json!([]), "tea", "observe").to_string());
    }
    match r.model.as_deref() {
        Some(WORKER_MODEL) => Script::reply(NEUTRAL_AFFECT),
        _ => Script::reply("そうなんだ"),
    }
}

#[tokio::test]
async fn lines_past_their_channel_s_retention_are_redacted_and_memory_stays() {
    let app = spawn_with_planner(&[
        ("GHOST_CLOCK__SIMULATED", "true"),
        ("GHOST_MEMORY__RAW_TEXT_RETENTION_DAYS__HTTP", "30"),
    ])
    .await;
    app.llm.set_responder(answer);
    planned(&app, "kept", "my locker code is 4711", 1).await;
    let moved = app
        .http
        .post(format!("{}/api/clock/advance", app.base_url))
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .body(json!({"secs": 31 * 86_400}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(moved.status(), 200);
    planned(&app, "kept", "今日はいい天気", 2).await;

    let ctx = app.stack.ctx.for_service("write-plan");
    let changed = eventually(Duration::from_secs(10), "the old line redacted", || async {
        let changed = ghost_write_plan::retention::expire_once(&ctx).await;
        (!changed.is_empty()).then_some(changed)
    })
    .await;
    assert_eq!(changed[0].0, "http");
    assert_eq!(changed[0].1.event_ids.len(), 2, "{changed:?}");

    let events = app.session_events("kept").await;
    let old_said = events
        .iter()
        .find(|e| e.event_type == REDACTED)
        .expect("the old message redacted whole");
    assert_eq!(old_said.payload["redacted_type"], "UserMessageReceived");
    let replies: Vec<_> = events
        .iter()
        .filter(|e| e.is::<AssistantReplied>())
        .collect();
    assert_eq!(replies.len(), 2);
    assert_eq!(
        replies[0].payload["text"], "",
        "the old reply's words emptied"
    );
    assert!(replies[0].payload.get("redacted_by").is_some());
    assert_eq!(
        replies[1].payload["text"], "そうなんだ",
        "the new reply kept"
    );
    let kept: Vec<_> = events
        .iter()
        .filter(|e| e.is::<UserMessageReceived>())
        .collect();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].payload["text"], "今日はいい天気");
    // Nowhere in the conversation's rows any more; memory made of it stays.
    let rows: Vec<String> =
        sqlx::query_scalar("SELECT text FROM assistant_text WHERE session_id = 'kept'")
            .fetch_all(app.store.pool())
            .await
            .unwrap();
    assert!(rows.iter().all(|t| !t.contains("4711")), "{rows:?}");
    assert!(rows.iter().any(|t| t.contains("いい天気")), "{rows:?}");
    let states: Vec<String> = sqlx::query_scalar("SELECT body_text FROM memory_states")
        .fetch_all(app.store.pool())
        .await
        .unwrap();
    assert!(
        states.iter().any(|s| s.contains("4711")),
        "the state the plan made stays: {states:?}"
    );
    // Run again: nothing more to do.
    assert!(ghost_write_plan::retention::expire_once(&ctx)
        .await
        .is_empty());
    app.cleanup().await;
}

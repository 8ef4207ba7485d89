//! Memory end to end (issue 12): the write-plan service after each reply, over the real
//! Postgres and NATS with a fake worker model that writes the plans.

mod support;

use std::time::Duration;

use ghost::stack::ServiceName;
use ghost_shared::bus::EventHandler;
use ghost_shared::envelope::EventPayload;
use ghost_shared::events::{persona_stream, AssistantReplied, EventAnnotated, WritePlanRejected};
use ghost_shared::projections::MemoryProjection;
use ghost_testkit::fake_llm::{Failure, RecordedRequest, Script};
use ghost_testkit::testing::{eventually, WORKER_MODEL};
use serde_json::{json, Value};
use support::autonomy::persona_events;
use support::plans::{second_planner, task, write_plan};
use support::{TestApp, NEUTRAL_AFFECT, TOKEN};

/// The plan the fake worker writes for a user message (by its words), or `None` when the
/// request is not a write plan.
fn plan_for(request: &RecordedRequest) -> Option<Value> {
    if !request.system_text()?.contains("long-term memory") {
        return None;
    }
    let input: Value = serde_json::from_str(&request.last_user_text()?).ok()?;
    let current = input["current_event_id"].clone();
    let text = input["turn"]["user_text"].as_str()?.to_owned();
    let pref = |op: &str, domain: &str, polarity: &str| {
        json!({"op": op, "domain": domain, "polarity": polarity, "subject": "ピーマン",
               "confidence": 0.8, "evidence_event_ids": [current], "reason": "the user said so"})
    };
    if text.contains("file it") {
        // A task filed under an empty topic, and a goal naming no task held.
        let mut plan = write_plan(
            json!([task("buy tea", "  ", 0.5, &current)]),
            json!([]),
            "-",
            "support",
        );
        plan["interest_update"]["attention_targets"] = json!([{"type": "goal",
            "value": format!("goal_id:{}", uuid::Uuid::new_v4()), "weight": 0.8}]);
        return Some(plan);
    }
    let updates = if text.contains("like green peppers") {
        vec![pref("upsert_candidate", "food", "like")]
    } else if text.contains("really do like") {
        vec![pref("confirm", "food", "like")]
    } else if text.contains("hate green peppers") {
        vec![pref("confirm", "food", "dislike")]
    } else if text.contains("sports") {
        vec![pref("confirm", "sport", "like")]
    } else {
        Vec::new()
    };
    Some(write_plan(json!([]), json!(updates), "食べ物", "support"))
}

/// Every service plus the write-plan service; the fake worker writes plans by `plan_for`.
async fn spawn_with_planner() -> TestApp {
    let mut services = ServiceName::ALL.to_vec();
    services.push(ServiceName::WritePlan);
    let app = TestApp::spawn_services(&services, &[]).await;
    app.llm.set_responder(|r| match plan_for(r) {
        Some(plan) => Script::reply(&plan.to_string()),
        None if r.model.as_deref() == Some(WORKER_MODEL) => Script::reply(NEUTRAL_AFFECT),
        None => Script::reply("ok"),
    });
    app
}

/// The rows of `preferences` as (subject, polarity, status), in a stable order.
async fn preferences(app: &TestApp) -> Vec<(String, String, String)> {
    let mut rows: Vec<(String, String, String)> =
        sqlx::query_as("SELECT subject, polarity, status FROM preferences WHERE persona = 'kuro'")
            .fetch_all(app.store.pool())
            .await
            .unwrap();
    rows.sort();
    rows
}

/// Chats one turn and waits until its plan is applied (`applied` annotations in total).
async fn turn(app: &TestApp, text: &str, applied: usize) {
    app.reply(Script::reply("そうなんですね。"));
    let events = app.chat("memory-s1", text).await;
    assert_eq!(events.last().unwrap().event, "done", "{events:?}");
    eventually(Duration::from_secs(30), "the plan applied", || async {
        (annotated_rows(app).await >= applied).then_some(())
    })
    .await;
}

/// Rows of `memory_event_annotations`: a plan's annotation is its last event, so once its
/// row is projected, so is everything the plan changed.
async fn annotated_rows(app: &TestApp) -> usize {
    sqlx::query_scalar::<_, i64>("SELECT count(*) FROM memory_event_annotations")
        .fetch_one(app.store.pool())
        .await
        .unwrap() as usize
}

fn s(v: &str) -> String {
    v.to_owned()
}

#[tokio::test]
async fn like_then_confirm_then_opposite_revokes_and_survives_redelivery_and_rebuild() {
    let app = spawn_with_planner().await;
    turn(&app, "I like green peppers", 1).await;
    assert_eq!(
        preferences(&app).await,
        [(s("ピーマン"), s("like"), s("candidate"))]
    );
    turn(&app, "Yes, I really do like them", 2).await;
    assert_eq!(
        preferences(&app).await,
        [(s("ピーマン"), s("like"), s("confirmed"))]
    );
    turn(&app, "Actually I hate green peppers now", 3).await;
    assert_eq!(
        preferences(&app).await,
        [
            (s("ピーマン"), s("dislike"), s("confirmed")),
            (s("ピーマン"), s("like"), s("revoked")),
        ]
    );
    let memory = MemoryProjection::load(app.store.pool(), "kuro")
        .await
        .unwrap();
    let interest = memory.interest.expect("interest state");
    assert_eq!(interest.attention_targets[0].value, "食べ物");
    assert_eq!(interest.updated_from_event_ids.len(), 3);

    // Redeliver every utterance to a second planner: nothing is appended, nothing changes.
    let (planner, runner) = second_planner(&app);
    let before_events = app.event_count().await;
    let before_rows = MemoryProjection::dump(app.store.pool()).await.unwrap();
    let replies: Vec<_> = app
        .session_events("memory-s1")
        .await
        .into_iter()
        .filter(|e| e.event_type == AssistantReplied::EVENT_TYPE)
        .collect();
    assert_eq!(replies.len(), 3);
    let plan_calls = plan_requests(&app);
    for reply in replies {
        planner.handle(reply).await.unwrap();
    }
    assert_eq!(app.event_count().await, before_events);
    assert_eq!(
        plan_requests(&app),
        plan_calls,
        "a redelivery asks the model nothing"
    );
    assert_eq!(
        MemoryProjection::dump(app.store.pool()).await.unwrap(),
        before_rows
    );

    // Rebuild from zero: the same rows.
    runner.rebuild().await.unwrap();
    assert_eq!(
        MemoryProjection::dump(app.store.pool()).await.unwrap(),
        before_rows
    );

    // The debug API shows the same memory.
    let (status, body) = get_memory(&app, "?persona=kuro", Some(TOKEN)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["persona"], "kuro");
    let statuses: Vec<(&str, &str)> = body["preferences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["polarity"].as_str().unwrap(),
                p["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert!(
        statuses.contains(&("like", "revoked")) && statuses.contains(&("dislike", "confirmed")),
        "{body}"
    );
    assert_eq!(body["interest"]["interaction_mode"], "support");
    app.cleanup().await;
}

async fn get_memory(app: &TestApp, query: &str, token: Option<&str>) -> (u16, Value) {
    let mut req = app.http.get(format!("{}/api/memory{query}", app.base_url));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

#[tokio::test]
async fn the_memory_debug_api_refuses_bad_requests_clearly() {
    let app = TestApp::spawn(&[]).await;
    let (status, body) = get_memory(&app, "", Some(TOKEN)).await;
    assert_eq!(status, 200, "the chat persona by default: {body}");
    assert_eq!(
        (body["persona"].as_str(), body["interest"].is_null()),
        (Some("kuro"), true)
    );
    assert_eq!(get_memory(&app, "?persona=kuro", None).await.0, 401);
    assert_eq!(
        get_memory(&app, "?persona=kuro", Some("wrong")).await.0,
        401
    );
    let (status, body) = get_memory(&app, "?persona=nobody", Some(TOKEN)).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (404, Some("unknown_persona")),
        "{body}"
    );
    assert_eq!(get_memory(&app, "?persona=", Some(TOKEN)).await.0, 400);
    assert_eq!(get_memory(&app, "?persona=a%20b", Some(TOKEN)).await.0, 400);
    assert_eq!(get_memory(&app, "?persons=kuro", Some(TOKEN)).await.0, 400);
    app.cleanup().await;
}

fn plan_requests(app: &TestApp) -> usize {
    app.llm
        .requests()
        .iter()
        .filter(|r| plan_for(r).is_some())
        .count()
}

/// Says `text` in `session` and waits for its plan's rejection.
async fn rejected(app: &TestApp, session: &str, text: &str) -> WritePlanRejected {
    app.reply(Script::reply("へえ。"));
    app.chat(session, text).await;
    let rejected = eventually(Duration::from_secs(30), "the rejection", || async {
        app.store
            .read_stream(&persona_stream("kuro"), 0)
            .await
            .unwrap()
            .into_iter()
            .find(|e| e.event_type == WritePlanRejected::EVENT_TYPE)
    })
    .await;
    rejected.decode().unwrap()
}

#[tokio::test]
async fn a_rule_breaking_plan_is_rejected_whole_with_its_reason() {
    let app = spawn_with_planner().await;
    let r = rejected(&app, "memory-s2", "I love sports").await;
    assert!(
        r.errors
            .iter()
            .any(|e| e.contains("preference_updates[0].domain")),
        "{:?}",
        r.errors
    );
    assert_eq!(
        persona_events(&app, EventAnnotated::EVENT_TYPE).await,
        0,
        "nothing applied"
    );
    assert!(preferences(&app).await.is_empty());
    let memory = MemoryProjection::load(app.store.pool(), "kuro")
        .await
        .unwrap();
    assert!(
        memory.interest.is_none(),
        "not even the valid interest update"
    );
    app.cleanup().await;
}

/// The keys the deliberation and recall order by have one format (issue 34 item 14): a
/// state's `payload` is `{topic}` and a goal target refers to a held task; a plan breaking
/// either is rejected whole, each reason named.
#[tokio::test]
async fn a_malformed_ordering_key_rejects_the_plan_whole() {
    let app = spawn_with_planner().await;
    let r = rejected(&app, "memory-keys", "Please file it as a task").await;
    let named = |at: &str| r.errors.iter().any(|e| e.starts_with(at));
    assert!(named("state_updates[0].payload.topic"), "{:?}", r.errors);
    assert!(
        named("interest_update.attention_targets[0].value"),
        "{:?}",
        r.errors
    );
    assert_eq!(persona_events(&app, "StateUpserted").await, 0);
    assert_eq!(persona_events(&app, EventAnnotated::EVENT_TYPE).await, 0);
    app.cleanup().await;
}

#[tokio::test]
async fn a_hanging_or_failing_write_plan_never_holds_up_a_reply() {
    let app = spawn_with_planner().await;
    // The plan call never answers: the reply still completes.
    app.llm.set_responder(|r| {
        if plan_for(r).is_some() {
            Script::failing(Failure::Hang)
        } else if r.model.as_deref() == Some(WORKER_MODEL) {
            Script::reply(NEUTRAL_AFFECT)
        } else {
            Script::reply("ok")
        }
    });
    app.reply(Script::reply("こんにちは、マスター。"));
    let events = app.chat("memory-s3", "hello").await;
    let done = events.last().unwrap();
    assert_eq!(
        (done.event.as_str(), done.data["reply_text"].as_str()),
        ("done", Some("こんにちは、マスター。"))
    );
    eventually(Duration::from_secs(30), "the plan request", || async {
        (plan_requests(&app) > 0).then_some(())
    })
    .await;
    // The plan call fails: the next reply is not affected either.
    app.llm.set_responder(|r| {
        if plan_for(r).is_some() {
            Script::failing(Failure::Status(500, "boom".into()))
        } else {
            Script::reply(NEUTRAL_AFFECT)
        }
    });
    app.reply(Script::reply("元気です。"));
    let events = app.chat("memory-s3", "how are you").await;
    assert_eq!(events.last().unwrap().data["reply_text"], "元気です。");
    app.cleanup().await;
}

#[tokio::test]
async fn without_the_write_plan_service_replies_go_on() {
    let app = TestApp::spawn(&[]).await;
    app.reply(Script::reply("はい。"));
    let events = app.chat("memory-s4", "I like green peppers").await;
    assert_eq!(events.last().unwrap().data["reply_text"], "はい。");
    assert_eq!(persona_events(&app, EventAnnotated::EVENT_TYPE).await, 0);
    app.cleanup().await;
}

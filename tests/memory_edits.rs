//! Correcting and forgetting (issue 35 item 2) end to end: `POST /api/memory/edits` records
//! the request, the write-plan service applies it; a rebuild keeps it, a redelivery adds
//! nothing, and a later write plan resting on a forgotten memory's evidence cannot bring it
//! back. Real Postgres and NATS, a fake worker writing the plans.

mod support;

use std::time::Duration;

use ghost::stack::ServiceName;
use ghost_shared::bus::EventHandler;
use ghost_shared::envelope::EventPayload;
use ghost_shared::events::persona_stream;
use ghost_shared::memory::edits::MemoryEditRequested;
use ghost_shared::projections::MemoryProjection;
use ghost_testkit::fake_llm::{RecordedRequest, Script};
use ghost_testkit::testing::{eventually, WORKER_MODEL};
use ghost_write_plan::edits::Edits;
use serde_json::{json, Value};
use support::plans::{second_planner, wait_applied, write_plan};
use support::{TestApp, NEUTRAL_AFFECT, TOKEN};

const WAIT: Duration = Duration::from_secs(30);
const SOUP: &str = "セロリのスープを毎週作る人";

/// The fake worker's plans: "I love celery" → a fact about the speaker and a confirmed
/// like; "again" → the same fact resting on the first turn's reply too, and a new fact
/// resting on this turn only.
fn answer(r: &RecordedRequest) -> Script {
    if !r
        .system_text()
        .is_some_and(|s| s.contains("long-term memory"))
    {
        return match r.model.as_deref() {
            Some(WORKER_MODEL) => Script::reply(NEUTRAL_AFFECT),
            _ => Script::reply("ok"),
        };
    }
    let input = r.last_user_json();
    let current = input["current_event_id"].clone();
    let text = input["turn"]["user_text"].as_str().unwrap_or_default();
    let fact = |body: &str, evidence: Value| {
        json!({"kind": "fact", "op": "upsert", "about": "speaker", "body_text": body,
               "confidence": 0.9, "evidence_event_ids": evidence, "reason": "said so"})
    };
    let plan = if text.contains("love celery") {
        let like = json!({"op": "confirm", "domain": "food", "polarity": "like",
            "subject": "celery", "confidence": 0.9, "evidence_event_ids": [current],
            "reason": "said so"});
        write_plan(
            json!([fact(SOUP, json!([current]))]),
            json!([like]),
            "celery",
            "observe",
        )
    } else if text.contains("again") {
        let earlier = input["recent_events"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|e| e["role"] == "assistant")
            .map(|e| e["event_id"].clone())
            .expect("the first turn's reply among the recent events");
        write_plan(
            json!([
                fact(SOUP, json!([current, earlier])),
                fact("お茶も好きな人", json!([current]))
            ]),
            json!([]),
            "celery",
            "observe",
        )
    } else {
        write_plan(json!([]), json!([]), "celery", "observe")
    };
    Script::reply(&plan.to_string())
}

async fn turn(app: &TestApp, text: &str, n: usize) {
    let events = app.chat("edits-1", text).await;
    assert_eq!(events.last().unwrap().event, "done", "{events:?}");
    wait_applied(app, n).await;
}

async fn edit(app: &TestApp, body: Value, token: Option<&str>) -> (u16, Value) {
    let mut req = app
        .http
        .post(format!("{}/api/memory/edits", app.base_url))
        .header("content-type", "application/json")
        .body(body.to_string());
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

/// An edit the API refuses with `status` and error `code`.
async fn refused(app: &TestApp, body: Value, status: u16, code: &str) {
    let (got, answer) = edit(app, body, Some(TOKEN)).await;
    assert_eq!(
        (got, answer["error"]["code"].as_str()),
        (status, Some(code)),
        "{answer}"
    );
}

/// An edit the API accepts.
async fn accepted(app: &TestApp, body: Value) {
    let (status, answer) = edit(app, body, Some(TOKEN)).await;
    assert_eq!(status, 202, "{answer}");
}

/// The states as (body, status, revision).
async fn states(app: &TestApp) -> Vec<(String, String, i32)> {
    let mut rows: Vec<(String, String, i32)> = sqlx::query_as(
        "SELECT body_text, status, revision FROM memory_states WHERE persona = 'kuro'",
    )
    .fetch_all(app.store.pool())
    .await
    .unwrap();
    rows.sort();
    rows
}

async fn revisions(app: &TestApp, state_id: uuid::Uuid) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM memory_state_revisions WHERE state_id = $1")
        .bind(state_id)
        .fetch_one(app.store.pool())
        .await
        .unwrap()
}

async fn preferences(app: &TestApp) -> Vec<(String, String)> {
    let mut rows: Vec<(String, String)> =
        sqlx::query_as("SELECT polarity, status FROM preferences WHERE persona = 'kuro'")
            .fetch_all(app.store.pool())
            .await
            .unwrap();
    rows.sort();
    rows
}

fn s(v: &str) -> String {
    v.to_owned()
}

#[tokio::test]
async fn a_memory_is_corrected_and_forgotten_and_stays_so() {
    let mut services = ServiceName::ALL.to_vec();
    services.push(ServiceName::WritePlan);
    let app = TestApp::spawn_services(&services, &[]).await;
    app.llm.set_responder(answer);
    turn(&app, "I love celery", 1).await;
    let memory = MemoryProjection::load(app.store.pool(), "kuro")
        .await
        .unwrap();
    let state_id = memory.states[0].state_id;
    let state = json!({"state": {"state_id": state_id}});
    let like = json!({"preference": {"person": "user", "domain": "food",
                                     "subject": "Celery", "polarity": "like"}});

    // Refused, and nothing recorded: no such memory, an edit that does not apply, a body
    // that is not an edit, no token.
    let before = app.event_count().await;
    let unknown = json!({"state": {"state_id": uuid::Uuid::new_v4()}});
    refused(
        &app,
        json!({"target": unknown, "edit": {"op": "close"}}),
        404,
        "no_such_memory",
    )
    .await;
    let body = json!({"target": like, "edit": {"op": "edit_body", "body_text": "x"}});
    refused(&app, body, 400, "invalid_edit").await;
    let (status, _) = edit(
        &app,
        json!({"target": state, "edit": {"op": "rewrite"}}),
        Some(TOKEN),
    )
    .await;
    assert_eq!(status, 400);
    let (status, _) = edit(
        &app,
        json!({"target": state, "edit": {"op": "close"}}),
        None,
    )
    .await;
    assert_eq!(status, 401);
    assert_eq!(app.event_count().await, before);

    // Correct the body: a new revision, the old one kept in the history.
    let fix = json!({"target": state,
                     "edit": {"op": "edit_body", "body_text": "セロリのスープは月に一度"},
                     "reason": "毎週ではない", "request_id": "fix-1"});
    accepted(&app, fix.clone()).await;
    eventually(WAIT, "the correction", || async {
        (states(&app).await == [(s("セロリのスープは月に一度"), s("active"), 2)]).then_some(())
    })
    .await;
    assert_eq!(revisions(&app, state_id).await, 2);
    // The same request again records nothing new.
    let events = app.event_count().await;
    accepted(&app, fix).await;
    assert_eq!(app.event_count().await, events);

    // Flip the preference: the like revoked, a confirmed dislike.
    accepted(
        &app,
        json!({"target": like, "edit": {"op": "flip_polarity"}}),
    )
    .await;
    eventually(WAIT, "the flip", || async {
        (preferences(&app).await == [(s("dislike"), s("confirmed")), (s("like"), s("revoked"))])
            .then_some(())
    })
    .await;

    // Forget the state: its rows and revisions go.
    accepted(&app, json!({"target": state, "edit": {"op": "forget"}})).await;
    eventually(WAIT, "forgotten", || async {
        states(&app).await.is_empty().then_some(())
    })
    .await;
    assert_eq!(revisions(&app, state_id).await, 0);

    // A later plan resting on the forgotten evidence does not bring it back; the rest of
    // the plan applies.
    turn(&app, "I said it again", 2).await;
    assert_eq!(states(&app).await, [(s("お茶も好きな人"), s("active"), 1)]);

    // Redelivered edit requests append nothing; a rebuild keeps every edit.
    let requests: Vec<_> = app
        .store
        .read_stream(&persona_stream("kuro"), 0)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.event_type == MemoryEditRequested::EVENT_TYPE)
        .collect();
    assert_eq!(requests.len(), 3);
    let (_, runner) = second_planner(&app);
    let ctx = app.stack.ctx.for_service("write-plan");
    let again = Edits::new(
        ctx.clone(),
        std::sync::Arc::new(ghost_write_plan::writer::MemoryWriter::new(
            ctx,
            runner.clone(),
        )),
    );
    let (events, rows) = (
        app.event_count().await,
        MemoryProjection::dump(app.store.pool()).await.unwrap(),
    );
    for r in requests {
        again.handle(r).await.unwrap();
    }
    assert_eq!(app.event_count().await, events);
    runner.rebuild().await.unwrap();
    assert_eq!(
        MemoryProjection::dump(app.store.pool()).await.unwrap(),
        rows
    );
    assert_eq!(states(&app).await, [(s("お茶も好きな人"), s("active"), 1)]);

    // Forget the dislike too.
    let dislike = json!({"preference": {"person": "user", "domain": "food",
                                        "subject": "celery", "polarity": "dislike"}});
    accepted(&app, json!({"target": dislike, "edit": {"op": "forget"}})).await;
    eventually(WAIT, "the dislike forgotten", || async {
        (preferences(&app).await == [(s("like"), s("revoked"))]).then_some(())
    })
    .await;
    app.cleanup().await;
}

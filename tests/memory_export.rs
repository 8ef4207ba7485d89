//! Export and import (issue 35 item 4): a persona's memory exported from one deployment and
//! imported into a fresh one gives the same memory, row by row; a second import changes
//! nothing; a broken document or one of an unknown version is refused whole with the
//! reason. Real Postgres and NATS; the memory is made by the write-plan service from a
//! fake worker's plans and a person's correction.

mod support;

use std::time::Duration;

use ghost::stack::ServiceName;
use ghost_testkit::fake_llm::{RecordedRequest, Script};
use ghost_testkit::testing::{eventually, WORKER_MODEL};
use serde_json::{json, Value};
use support::plans::write_plan;
use support::{TestApp, NEUTRAL_AFFECT, TOKEN};

const WAIT: Duration = Duration::from_secs(30);

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
    let fact = json!({"kind": "fact", "op": "upsert", "about": "speaker",
        "body_text": "セロリのスープを毎週作る人", "confidence": 0.9,
        "evidence_event_ids": [current], "reason": "said so"});
    let like = json!({"op": "confirm", "domain": "food", "polarity": "like",
        "subject": "Celery", "confidence": 0.9, "evidence_event_ids": [current],
        "reason": "said so"});
    Script::reply(&write_plan(json!([fact]), json!([like]), "celery", "support").to_string())
}

/// Every memory row that says what is remembered (positions and the ids of the events
/// that set them differ between deployments by nature).
async fn memory_rows(app: &TestApp) -> Vec<Value> {
    let queries = [
        "SELECT to_jsonb(t) - 'position' - 'source_event_id' FROM memory_states t",
        "SELECT to_jsonb(t) - 'position' - 'source_event_id' FROM memory_state_revisions t",
        "SELECT to_jsonb(t) - 'position' - 'source_event_id' FROM preferences t",
        "SELECT to_jsonb(t) - 'position' - 'source_event_id' FROM persona_interest_state t",
    ];
    let mut rows = Vec::new();
    for q in queries {
        let mut some: Vec<Value> = sqlx::query_scalar(q)
            .fetch_all(app.store.pool())
            .await
            .unwrap();
        some.sort_by_key(|v| v.to_string());
        rows.extend(some);
    }
    rows
}

/// The conversation lines as (session, role, speaker, source, text), in order.
async fn lines(app: &TestApp) -> Vec<(String, String, String, String, String)> {
    sqlx::query_as(
        "SELECT session_id, role, speaker, source, text FROM assistant_text \
         ORDER BY session_id, position",
    )
    .fetch_all(app.store.pool())
    .await
    .unwrap()
}

#[tokio::test]
async fn an_exported_memory_imports_the_same_once_and_bad_documents_are_refused() {
    let mut services = ServiceName::ALL.to_vec();
    services.push(ServiceName::WritePlan);
    let from = TestApp::spawn_services(&services, &[]).await;
    from.llm.set_responder(answer);
    let body = json!({"session_id": "export-1", "text": "I love celery", "user_id": "ann"});
    let response = from.post_chat_raw(body.to_string(), Some(TOKEN)).await;
    assert_eq!(response.status(), 200);
    support::read_sse(response).await;
    let state_id = eventually(WAIT, "the plan applied", || async {
        sqlx::query_scalar::<_, uuid::Uuid>("SELECT state_id FROM memory_states")
            .fetch_optional(from.store.pool())
            .await
            .unwrap()
    })
    .await;
    // A person's correction: a second revision.
    let edit = json!({"target": {"state": {"state_id": state_id}},
                      "edit": {"op": "edit_body", "body_text": "セロリのスープは月に一度"}});
    let response = from
        .http
        .post(format!("{}/api/memory/edits", from.base_url))
        .bearer_auth(TOKEN)
        .json(&edit)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 202);
    eventually(WAIT, "the correction", || async {
        let n: i64 = sqlx::query_scalar("SELECT count(*) FROM memory_state_revisions")
            .fetch_one(from.store.pool())
            .await
            .unwrap();
        (n == 2).then_some(())
    })
    .await;

    let dir = std::env::temp_dir().join(format!("ghost-export-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("kuro.json");
    let path = file.to_str().unwrap();
    let (ok, _, err) = from
        .ghost(&["memory", "export", "--persona", "kuro", "--out", path])
        .await;
    assert!(ok, "{err}");
    let document: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(
        (document["format"].clone(), document["version"].clone()),
        (json!("ghost-memory"), json!(1))
    );
    let expected = memory_rows(&from).await;

    // A fresh deployment: the same rows.
    let to = TestApp::spawn_services(&[ServiceName::WritePlan, ServiceName::Persona], &[]).await;
    let (ok, out, err) = to.ghost(&["memory", "import", path]).await;
    assert!(ok, "{err}");
    assert!(out.contains("\"appended\":4"), "{out}");
    eventually(WAIT, "the imported rows", || async {
        (memory_rows(&to).await == expected).then_some(())
    })
    .await;

    // Again: nothing appended, nothing changed.
    let events = to.event_count().await;
    let (ok, out, err) = to.ghost(&["memory", "import", path]).await;
    assert!(ok, "{err}");
    assert!(out.contains("\"appended\":0"), "{out}");
    assert_eq!(to.event_count().await, events);
    assert_eq!(memory_rows(&to).await, expected);

    // Refused whole, with the reason, nothing appended.
    let mut future = document.clone();
    future["version"] = json!(2);
    let mut stranger = document.clone();
    stranger["personas"][0]["persona"] = json!("nobody-here");
    let mut truncated = serde_json::to_string(&document).unwrap();
    truncated.truncate(truncated.len() / 2);
    for (name, text, why) in [
        ("future.json", future.to_string(), "version 2 is unknown"),
        ("stranger.json", stranger.to_string(), "has no character"),
        ("broken.json", truncated, "not JSON"),
    ] {
        let bad = dir.join(name);
        std::fs::write(&bad, text).unwrap();
        let (ok, _, err) = to.ghost(&["memory", "import", bad.to_str().unwrap()]).await;
        assert!(!ok && err.contains(why), "{name}: {err}");
    }
    assert_eq!(to.event_count().await, events);

    // With the conversations: the lines join the new deployment's conversation text, once.
    let full = dir.join("history.json");
    let full = full.to_str().unwrap();
    let (ok, _, err) = from
        .ghost(&["memory", "export", "--history", "--out", full])
        .await;
    assert!(ok, "{err}");
    let (ok, out, err) = to.ghost(&["memory", "import", full]).await;
    assert!(ok, "{err}");
    assert!(out.contains("\"appended\":2"), "the two lines: {out}");
    let said = lines(&from).await;
    assert_eq!(said.len(), 2);
    eventually(WAIT, "the imported lines", || async {
        (lines(&to).await == said).then_some(())
    })
    .await;
    let (ok, out, _) = to.ghost(&["memory", "import", full]).await;
    assert!(ok && out.contains("\"appended\":0"), "{out}");
    std::fs::remove_dir_all(&dir).ok();
    to.cleanup().await;
    from.cleanup().await;
}

//! The write plan runs on the persona's autonomy messages like on any utterance (issue 13,
//! item 4): once per message, with the message as the turn and no invented user message.

mod support;

use std::time::Duration;

use serde_json::{json, Value};

use ghost::stack::ServiceName;
use ghost_shared::bus::EventHandler;
use ghost_testkit::fake_llm::{RecordedRequest, Script};
use ghost_testkit::fake_search::FakeSearch;
use ghost_testkit::testing::{eventually, WORKER_MODEL};
use support::autonomy::{decision, persona_events, spawn_searching, tea_hits};
use support::plans::{second_planner, write_plan};
use support::{TestApp, NEUTRAL_AFFECT};

const SAID: &str = "煎茶は70度くらいで一分がいいみたいだよ。";

/// The write-plan input of `request`, when it is a write-plan request.
fn plan_input(request: &RecordedRequest) -> Option<Value> {
    if !request.system_text()?.contains("long-term memory") {
        return None;
    }
    serde_json::from_str(&request.last_user_text()?).ok()
}

/// A plan remembering what the persona found out, with the utterance as evidence.
fn plan_for(input: &Value) -> Value {
    let current = input["current_event_id"].clone();
    let fact = json!({"kind": "fact", "op": "upsert", "state_id": null,
        "body_text": "煎茶は70度で一分", "confidence": 0.7, "valid_from_ts": null,
        "valid_to_ts": null, "evidence_event_ids": [current], "reason": "調べて分かった"});
    write_plan(json!([fact]), json!([]), "お茶", "explore")
}

fn plan_requests(app: &TestApp) -> Vec<Value> {
    app.llm.requests().iter().filter_map(plan_input).collect()
}

#[tokio::test]
async fn an_autonomy_message_gets_one_write_plan_even_when_redelivered() {
    let search = FakeSearch::start().await.unwrap();
    tea_hits(&search);
    let mut services = ServiceName::ALL.to_vec();
    services.push(ServiceName::WritePlan);
    let app = spawn_searching(&search, &services).await;
    app.llm.set_responder(|r| match plan_input(r) {
        Some(input) => Script::reply(&plan_for(&input).to_string()),
        None if r.model.as_deref() == Some(WORKER_MODEL) => Script::reply(NEUTRAL_AFFECT),
        None => Script::reply("ok"),
    });
    let decision = decision("web_access", json!({"query": "sencha"}), "chat", "report");
    app.llm
        .push_for_model(WORKER_MODEL, Script::reply(&decision));
    app.reply(Script::reply(SAID));
    app.tick().await;

    eventually(Duration::from_secs(30), "the plan applied", || async {
        (persona_events(&app, "EventAnnotated").await >= 1).then_some(())
    })
    .await;
    let requests = plan_requests(&app);
    assert_eq!(requests.len(), 1, "{requests:?}");
    let message = app
        .session_events("console")
        .await
        .into_iter()
        .find(|e| e.event_type == "AutonomyMessageRendered")
        .expect("the stored message");
    let turn = &requests[0]["turn"];
    // The model names the utterance by its handle; the plan applied is the message's.
    assert_eq!(requests[0]["current_event_id"], "e0");
    let annotated = app
        .store
        .read_stream(&ghost_shared::events::persona_stream("kuro"), 0)
        .await
        .unwrap()
        .into_iter()
        .find(|e| e.event_type == "EventAnnotated")
        .expect("annotated");
    assert_eq!(
        annotated.payload["source_event_id"],
        json!(message.event_id)
    );
    assert_eq!(turn["kind"], "autonomy_message");
    // The plan's prompt takes the persona's addon_text as its interest axis (row 001-25).
    let system = app
        .llm
        .requests()
        .iter()
        .find(|r| plan_input(r).is_some())
        .and_then(|r| r.system_text())
        .expect("the plan's prompt");
    assert!(
        system.contains("What you care about (your interest axis")
            && system.contains("the small projects on their server"),
        "{system}"
    );
    assert_eq!(turn["reply_text"], SAID);
    assert_eq!(
        turn["user_text"],
        Value::Null,
        "no user message is invented"
    );
    assert_eq!(turn["user_event_id"], Value::Null);
    assert_eq!(persona_events(&app, "StateUpserted").await, 1);

    // Redelivered to a second planner: no model call, nothing appended.
    let (planner, _) = second_planner(&app);
    let before = app.event_count().await;
    for _ in 0..2 {
        planner.handle(message.clone()).await.unwrap();
    }
    assert_eq!(app.event_count().await, before);
    assert_eq!(plan_requests(&app).len(), 1);
    assert_eq!(persona_events(&app, "EventAnnotated").await, 1);
    assert_eq!(persona_events(&app, "StateUpserted").await, 1);
    app.cleanup().await;
}

/// The autonomy message knows what the persona cares about (seed 001 A-1): its input carries
/// the confirmed preferences and the interest state the write plans stored, and the facts
/// come most cared-about first by meaning (embeddings), never by spelling (seed 001 forbids
/// string matching): the persona loves cats, and "Kitten adoption day" leads although it
/// does not spell "cat", while "Category theory", which does, does not. It speaks in its
/// mood: the long mood and `recent_vad_average`, the stored affects' average.
#[tokio::test]
async fn the_message_knows_what_the_persona_cares_about_and_reports_it_first() {
    let search = FakeSearch::start().await.unwrap();
    search.set_hits(vec![
        ghost_testkit::fake_search::FakeHit {
            title: "Category theory for programmers".into(),
            url: "https://news.example/category".into(),
            content: "monads".into(),
        },
        ghost_testkit::fake_search::FakeHit {
            title: "Kitten adoption day".into(),
            url: "https://news.example/shelter".into(),
            content: "shelter".into(),
        },
    ]);
    let mut services = ServiceName::ALL.to_vec();
    services.push(ServiceName::WritePlan);
    let url = search.search_url();
    // The fake model's embeddings read "kitten" as "cat" (testkit's fake_llm::embed).
    let app = TestApp::spawn_adjusted(
        &services,
        &[("GHOST_AUTONOMY__INTERVAL_SECS", "0")],
        move |c| {
            c.ghost.web.search_url = Some(url);
            let mut embedding = c.ghost.llm["persona"].clone();
            embedding.model = "embed-test".into();
            c.ghost.llm.insert("embedding".into(), embedding);
        },
    )
    .await;
    app.llm.set_responder(|r| match plan_input(r) {
        Some(input) => {
            let current = input["current_event_id"].clone();
            let said = input["turn"]["user_text"].as_str().unwrap_or_default();
            let confirm = |subject: &str| {
                json!([{"op": "confirm", "domain": "topic", "polarity": "like",
                        "subject": subject, "confidence": 0.9,
                        "evidence_event_ids": [current], "reason": "the user said so"}])
            };
            let plan = if said.contains("cats") {
                write_plan(json!([]), confirm("cat"), "cat", "explore")
            } else {
                write_plan(json!([]), json!([]), "news", "explore")
            };
            Script::reply(&plan.to_string())
        }
        None if r.model.as_deref() == Some(WORKER_MODEL) => Script::reply(NEUTRAL_AFFECT),
        None => Script::reply("ok"),
    });
    app.chat("cares", "I really love cats, tell me about them")
        .await;
    eventually(Duration::from_secs(30), "the preference", || async {
        let n: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM preferences WHERE subject = 'cat' AND status = 'confirmed'",
        )
        .fetch_one(app.store.pool())
        .await
        .unwrap();
        (n == 1).then_some(())
    })
    .await;

    let decision = decision("web_access", json!({"query": "news"}), "chat", "report");
    app.llm
        .push_for_model(WORKER_MODEL, Script::reply(&decision));
    app.reply(Script::reply("子猫の譲渡会があるんだって。"));
    app.tick().await;
    let input = eventually(Duration::from_secs(30), "the message's input", || async {
        app.persona_requests()
            .iter()
            .filter_map(|r| serde_json::from_str::<Value>(&r.last_user_text()?).ok())
            .find(|v| v.get("result").is_some())
    })
    .await;
    let cares = &input["cares"];
    assert_eq!(
        cares["confirmed_preferences"][0]["subject"], "cat",
        "{cares}"
    );
    assert_eq!(cares["attention_targets"][0]["value"], "cat");
    assert_eq!(
        input["result"]["result_payload"]["hits"][0]["title"],
        "Kitten adoption day"
    );
    // The mood it speaks in (seed 001 A-1 input): the mood service's long mood, and what the
    // persona felt lately, the stored plan's event_affect (every plan here feels the same).
    let mood = &input["mood"];
    assert!(mood["long_mood_state"]["label"].is_string(), "{mood}");
    assert_eq!(
        mood["recent_vad_average"],
        json!({"v": 0.4, "a": 0.1, "d": 0.0}),
        "{mood}"
    );
    app.cleanup().await;
}

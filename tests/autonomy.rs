//! Autonomy end to end (seed 001 phase A): a tick → the worker's decision (fake model) → the
//! capability (fake search server, a real child process) → the persona's message (fake
//! model), stored in `assistant_text` before it is published, delivered to a console over
//! `GET /api/events` with the activity stream beside it.

mod support;

/// Scheduled ticks that keep quiet (`tests/autonomy/quiet.rs`).
#[path = "autonomy/quiet.rs"]
mod quiet;

use std::time::Duration;

use serde_json::{json, Value};

use ghost_shared::autonomy::events::{
    ActionDecided, ActionDropped, ActionResultRecorded, ActionStarted, AutonomyMessageFailed,
    AutonomyMessageRendered,
};
use ghost_shared::config::CliAgentSettings;
use ghost_shared::envelope::EventPayload;
use ghost_shared::projections::AssistantTextProjection;
use ghost_testkit::fake_llm::{Failure, RecordedRequest, Script};
use ghost_testkit::fake_search::FakeSearch;
use ghost_testkit::testing::{eventually, WORKER_MODEL};
use support::autonomy::{decision, tea_hits};
use support::events_socket::Console;
use support::logs::capture;
use support::plans::{plan_input, planned, spawn_with_planner, task, write_plan};
use support::{TestApp, NEUTRAL_AFFECT};

const WAIT: Duration = Duration::from_secs(30);

async fn spawn(search: &FakeSearch, agent: Option<CliAgentSettings>) -> TestApp {
    let url = search.search_url();
    TestApp::spawn_adjusted(
        &ghost::stack::ServiceName::ALL,
        &[("GHOST_AUTONOMY__INTERVAL_SECS", "0")],
        move |c| {
            c.ghost.web.search_url = Some(url);
            c.ghost.autonomy.cli_agent = agent;
        },
    )
    .await
}

/// A command-line agent running `script` with `/bin/sh` in a fresh directory (returned, for
/// the test to remove).
fn shell_agent(script: &str) -> (CliAgentSettings, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("ghost-agent-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let agent = CliAgentSettings {
        program: "/bin/sh".into(),
        args: vec!["-c".into(), script.to_owned()],
        working_dir: Some(dir.clone()),
        timeout_secs: 30,
        max_output_bytes: 4096,
    };
    (agent, dir)
}

async fn count(app: &TestApp, event_type: &str) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM events WHERE event_type = $1")
        .bind(event_type)
        .fetch_one(app.store.pool())
        .await
        .unwrap()
}

/// The persona model's requests that rendered an autonomy message (their user message is
/// the structured input).
fn render_requests(app: &TestApp) -> Vec<Value> {
    app.persona_requests()
        .iter()
        .filter_map(|r| serde_json::from_str::<Value>(&r.last_user_text()?).ok())
        .filter(|v| v.get("result").is_some())
        .collect()
}

#[tokio::test]
async fn a_web_access_tick_with_chat_delivery_is_said_by_the_persona() {
    let search = FakeSearch::start().await.unwrap();
    tea_hits(&search);
    let app = spawn(&search, None).await;
    let console = Console::connect(&app).await;
    app.llm.push_for_model(
        WORKER_MODEL,
        Script::reply(&decision(
            "web_access",
            json!({"query": "sencha temperature"}),
            "chat",
            "report",
        )),
    );
    let said = "煎茶は70度くらいで一分がいいみたいだよ。";
    app.reply(Script::reply(said));
    app.tick().await;

    let message = eventually(WAIT, "the persona's message", || async {
        console.of_type("message").into_iter().next()
    })
    .await;
    // Stored before published: the row was there when the console got it.
    let event_id: uuid::Uuid = serde_json::from_value(message["event_id"].clone()).unwrap();
    let rows = AssistantTextProjection::all(app.store.pool())
        .await
        .unwrap();
    let row = rows
        .iter()
        .find(|r| r.event_id == event_id)
        .expect("assistant_text row");
    assert_eq!(row.source, "autonomy_message");
    assert_eq!(row.text, said);
    assert_eq!(row.session_id, "console");
    assert_eq!(message["text"], said);
    assert_eq!(message["speaker"], "kuro");
    assert_eq!(message["display"], "chat");

    assert_eq!(search.queries(), vec!["sencha temperature".to_owned()]);
    console.wait_for_activity("result", 1).await;
    let kinds = console.activity_kinds();
    assert_eq!(kinds, vec!["decided", "started", "result"]);
    // Activity is monitoring, never conversation: the only autonomy row is the message.
    assert_eq!(
        rows.iter()
            .filter(|r| r.source == "autonomy_message")
            .count(),
        1
    );

    // Rendered from the structured input: persona fields and result_payload (the facts).
    let renders = render_requests(&app);
    assert_eq!(renders.len(), 1);
    let input = &renders[0];
    assert!(!input["persona"]["persona_text"]
        .as_str()
        .unwrap()
        .is_empty());
    assert!(input["persona"].get("addon_text").is_some());
    assert!(input["persona"].get("second_person_label").is_some());
    assert_eq!(
        input["result"]["result_payload"]["hits"][0]["url"],
        "https://tea.example/sencha"
    );
    assert_eq!(
        input["result"]["result_payload"]["source_urls"],
        json!(["https://tea.example/sencha"])
    );
    assert_eq!(
        input["decision"]["console_delivery"]["message_kind"],
        "report"
    );
    assert_eq!(input["result"]["capability_name"], "web_access");

    // The next chat reply in that conversation sees what the persona said.
    app.reply(Script::reply("そうそう、さっきの話だよ。"));
    app.chat("console", "さっき何を調べたの?").await;
    let last = app.persona_requests().pop().unwrap();
    let history: Vec<&Value> = last.messages().iter().collect();
    assert!(
        history
            .iter()
            .any(|m| m["role"] == "assistant" && m["content"] == said),
        "{history:?}"
    );
    app.cleanup().await;
}

#[tokio::test]
async fn silent_and_activity_only_say_nothing_notify_speaks_as_the_persona() {
    let search = FakeSearch::start().await.unwrap();
    tea_hits(&search);
    let app = spawn(&search, None).await;
    let console = Console::connect(&app).await;
    for mode in ["silent", "activity_only"] {
        app.llm.push_for_model(
            WORKER_MODEL,
            Script::reply(&decision(
                "web_access",
                json!({"query": mode}),
                mode,
                "report",
            )),
        );
        app.tick().await;
        let n = if mode == "silent" { 1 } else { 2 };
        console.wait_for_activity("result", n).await;
    }
    let notify = decision(
        "web_access",
        json!({"query": "notify"}),
        "notify",
        "progress",
    );
    tick_with(&app, notify, "ちょっと調べものが進んだよ。").await;
    let message = eventually(WAIT, "the notify message", || async {
        console.of_type("message").into_iter().next()
    })
    .await;
    assert_eq!(message["display"], "notify");
    assert_eq!(message["message_kind"], "progress");
    assert_eq!(message["speaker"], "kuro", "the sender is the persona");
    console.wait_for_activity("result", 3).await;
    // Exactly one message (the notify one) was ever rendered, stored or sent.
    assert_eq!(render_requests(&app).len(), 1);
    assert_eq!(count(&app, AutonomyMessageRendered::EVENT_TYPE).await, 1);
    assert_eq!(console.of_type("message").len(), 1);
    assert_eq!(search.queries(), vec!["silent", "activity_only", "notify"]);
    // The history shows it as the persona's, with its display style (as the socket did).
    let history = app.messages("console").await;
    let said = &history["messages"][0];
    assert_eq!(said["source"], "autonomy_message");
    assert_eq!(said["speaker"], "kuro");
    assert_eq!(said["display"], "notify");
    app.cleanup().await;
}

#[tokio::test]
async fn a_failed_render_says_nothing_and_never_shows_the_summary() {
    let logs = capture();
    let search = FakeSearch::start().await.unwrap();
    let marker = format!("MARKER-{}", uuid::Uuid::new_v4().simple());
    let link = "[the notes](https://agent.example/notes)";
    // The agent prints the marker and a Markdown link: they land in summary_text.
    let (agent, dir) = shell_agent(&format!("echo '{marker} {link}'"));
    let app = spawn(&search, Some(agent)).await;
    let console = Console::connect(&app).await;
    app.llm.push_for_model(
        WORKER_MODEL,
        Script::reply(&decision(
            "agent_delegate",
            json!({"task": "メモを整理"}),
            "chat",
            "report",
        )),
    );
    app.reply(Script::failing(Failure::Status(500, "model down".into())));
    app.tick().await;
    console.wait_for_activity("message_failed", 1).await;

    let result = sqlx::query_scalar::<_, Value>(
        "SELECT payload FROM events WHERE event_type = 'ActionResultRecorded'",
    )
    .fetch_one(app.store.pool())
    .await
    .unwrap();
    assert!(result["result"]["summary_text"]
        .as_str()
        .unwrap()
        .contains(&marker));
    let result_id: uuid::Uuid =
        sqlx::query_scalar("SELECT event_id FROM events WHERE event_type = 'ActionResultRecorded'")
            .fetch_one(app.store.pool())
            .await
            .unwrap();
    assert_eq!(count(&app, AutonomyMessageFailed::EVENT_TYPE).await, 1);
    assert_eq!(count(&app, AutonomyMessageRendered::EVENT_TYPE).await, 0);
    assert!(console.of_type("message").is_empty());
    for row in AssistantTextProjection::all(app.store.pool())
        .await
        .unwrap()
    {
        assert!(
            !row.text.contains(&marker) && !row.text.contains(link),
            "{row:?}"
        );
    }
    for frame in console.frames() {
        let text = frame.to_string();
        assert!(
            !text.contains(&marker) && !text.contains("agent.example"),
            "{text}"
        );
    }
    let warnings: Vec<Value> = logs
        .text()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["level"] == "WARN" && v["fields"]["result"] == result_id.to_string())
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let _ = std::fs::remove_dir_all(dir);
    app.cleanup().await;
}

#[tokio::test]
async fn invalid_decisions_are_dropped_with_a_reason_and_nothing_runs() {
    let search = FakeSearch::start().await.unwrap();
    tea_hits(&search);
    let app = spawn(&search, None).await;
    let console = Console::connect(&app).await;
    let mut no_delivery: Value = serde_json::from_str(&decision(
        "web_access",
        json!({"query": "q"}),
        "chat",
        "report",
    ))
    .unwrap();
    no_delivery
        .as_object_mut()
        .unwrap()
        .remove("console_delivery");
    let unknown = decision("shell_exec", json!({"cmd": "rm -rf /"}), "chat", "report");
    let cases = [
        (no_delivery.to_string(), "console_delivery: required"),
        (unknown, "capability: unknown"),
        (
            "{\"decision\": \"do_action\", ".to_owned(),
            "not a JSON object",
        ),
    ];
    for (i, (answer, reason)) in cases.iter().enumerate() {
        app.llm.push_for_model(WORKER_MODEL, Script::reply(answer));
        app.tick().await;
        console.wait_for_activity("dropped", i + 1).await;
        let dropped = console
            .of_type("activity")
            .into_iter()
            .filter(|f| f["kind"] == "dropped")
            .nth(i)
            .unwrap();
        let errors = dropped["detail"]["errors"].to_string();
        assert!(errors.contains(reason), "{reason}: {errors}");
    }
    assert_eq!(count(&app, ActionDropped::EVENT_TYPE).await, 3);
    assert_eq!(count(&app, ActionDecided::EVENT_TYPE).await, 0);
    assert_eq!(count(&app, ActionStarted::EVENT_TYPE).await, 0);
    assert_eq!(count(&app, ActionResultRecorded::EVENT_TYPE).await, 0);
    assert!(search.queries().is_empty());
    assert!(render_requests(&app).is_empty());
    app.cleanup().await;
}

#[tokio::test]
async fn the_events_socket_needs_the_token() {
    let search = FakeSearch::start().await.unwrap();
    let app = spawn(&search, None).await;
    let base = app.base_url.replace("http://", "ws://");
    for url in [
        format!("{base}/api/events"),
        format!("{base}/api/events?token=wrong"),
    ] {
        assert!(tokio_tungstenite::connect_async(url).await.is_err());
    }
    let response = app
        .http
        .post(format!("{}/api/autonomy/tick", app.base_url))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    assert_eq!(count(&app, "AutonomyTickRequested").await, 0);
    app.cleanup().await;
}

/// The write plans of `deliberation_input`: the turn "tasks" files two tasks (tea, salience
/// 0.6; master_health, 0.4) and a confirmed preference (a tea lover likes tea and attends
/// to it; a carer dislikes coffee); the turn "goal" attends to the health task as a goal,
/// naming it by the handle its input gives it.
fn plan_for(input: &Value, likes_tea: bool) -> Value {
    let current = &input["current_event_id"];
    if input["turn"]["user_text"] == "goal" {
        let health = input["memory"]["states"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["payload"]["topic"] == "master_health")
            .expect("the health task in the plan's input");
        let mut plan = write_plan(json!([]), json!([]), "-", "support");
        plan["interest_update"]["attention_targets"] = json!([{"type": "goal",
            "value": format!("goal_id:{}", health["state_id"].as_str().unwrap()), "weight": 0.8}]);
        return plan;
    }
    let tasks = json!([
        task("find a new tea", "tea", 0.6, current),
        task("ask how master slept", "master_health", 0.4, current)
    ]);
    let (subject, polarity) = if likes_tea {
        ("tea", "like")
    } else {
        ("coffee", "dislike")
    };
    let preference = json!([{"op": "confirm", "domain": "topic", "polarity": polarity,
        "subject": subject, "confidence": 0.9, "evidence_event_ids": [current], "reason": "said so"}]);
    let mut plan = write_plan(tasks, preference, "tea", "explore");
    if !likes_tea {
        plan["interest_update"]["attention_targets"] = json!([]);
    }
    plan
}

/// The schema a model request was constrained by (either wire format).
fn schema_of(request: &RecordedRequest) -> Option<&Value> {
    request
        .body
        .get("format")
        .or_else(|| request.body.pointer("/response_format/json_schema/schema"))
}

/// The deliberation request's input after the write plans of [`plan_for`] (through the
/// write-plan service) and one tick answered with a skip; and the first plan request.
async fn deliberation_input(likes_tea: bool) -> (Value, RecordedRequest) {
    let app = spawn_with_planner(&[("GHOST_AUTONOMY__INTERVAL_SECS", "0")]).await;
    app.llm.set_responder(move |r| {
        if let Some(input) = plan_input(r) {
            return Script::reply(&plan_for(&input, likes_tea).to_string());
        }
        let deliberation = r
            .last_user_text()
            .is_some_and(|t| t.contains("deliberation_input"));
        match r.model.as_deref() {
            Some(WORKER_MODEL) if deliberation => {
                Script::reply(r#"{"decision": "skip", "reason": "今は待つ"}"#)
            }
            Some(WORKER_MODEL) => Script::reply(NEUTRAL_AFFECT),
            _ => Script::reply("ok"),
        }
    });
    planned(&app, "plans", "tasks", 1).await;
    if !likes_tea {
        planned(&app, "plans", "goal", 2).await;
    }
    app.tick().await;
    eventually(WAIT, "the decision", || async {
        (count(&app, ActionDecided::EVENT_TYPE).await == 1).then_some(())
    })
    .await;
    let requests = app.llm.requests();
    let request = requests
        .iter()
        .filter(|r| r.model.as_deref() == Some(WORKER_MODEL))
        .filter_map(|r| serde_json::from_str::<Value>(&r.last_user_text()?).ok())
        .find(|v| v.get("deliberation_input").is_some())
        .expect("the deliberation request");
    let plan = requests
        .into_iter()
        .find(|r| plan_input(r).is_some())
        .expect("a plan request");
    assert_eq!(
        count(&app, ActionStarted::EVENT_TYPE).await,
        0,
        "a skip runs nothing"
    );
    app.cleanup().await;
    (request, plan)
}

/// The keys the deliberation orders by are the write plan's (issue 34 item 14): the plan is
/// asked for a task's topic and salience and for goals that refer to held tasks, and what it
/// writes orders the deliberation's material.
#[tokio::test]
async fn deliberation_order_follows_the_persona_state() {
    let titles = |input: &Value| -> Vec<String> {
        input["deliberation_input"]["open_items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["title"].as_str().unwrap().to_owned())
            .collect()
    };
    // Likes tea and attends to it: the tea task first.
    let (tea_lover, plan) = deliberation_input(true).await;
    let state = schema_of(&plan).expect("a constrained plan")["properties"]["state_updates"]
        ["items"]["properties"]
        .clone();
    assert_eq!(state["payload"]["properties"]["topic"]["type"], "string");
    assert!(state["salience"].is_object(), "{state}");
    assert_eq!(
        titles(&tea_lover),
        vec!["find a new tea", "ask how master slept"]
    );
    assert_eq!(
        tea_lover["deliberation_input"]["persona_deliberation_focus"]["topic_bias"][0],
        "tea"
    );
    // Attends to the user's health as a goal: that task first, though the tea task matters
    // more on its own.
    let (carer, _) = deliberation_input(false).await;
    let input = &carer["deliberation_input"];
    assert_eq!(
        titles(&carer),
        vec!["ask how master slept", "find a new tea"]
    );
    let health = &input["open_items"][0];
    assert_eq!(health["topic"], "master_health");
    assert_eq!(
        input["attention_targets"][0]["value"],
        format!("goal_id:{}", health["id"].as_str().unwrap())
    );
    assert_eq!(
        input["persona_deliberation_focus"]["avoid_bias"],
        json!(["coffee"])
    );
    assert_eq!(input["interaction_mode"], "support");
    // The persona fields go in as they are configured.
    assert!(carer["persona"]["second_person_label"].as_str().is_some());
}

/// Intents are deliberation material (seed 001 B-3 collects events/states/goals/intents):
/// the next deliberation is told what the persona decided lately and how it went, here the
/// search it ran on the tick before, succeeded.
#[tokio::test]
async fn the_next_deliberation_knows_the_persona_s_recent_intents() {
    let search = FakeSearch::start().await.unwrap();
    tea_hits(&search);
    let app = spawn(&search, None).await;
    let searched = decision("web_access", json!({"query": "sencha"}), "silent", "report");
    app.llm
        .push_for_model(WORKER_MODEL, Script::reply(&searched));
    app.tick().await;
    eventually(WAIT, "the search's result", || async {
        (count(&app, "ActionResultRecorded").await == 1).then_some(())
    })
    .await;
    app.llm.push_for_model(
        WORKER_MODEL,
        Script::reply(r#"{"decision": "skip", "reason": "今は待つ"}"#),
    );
    app.tick().await;
    let inputs = || {
        app.llm
            .requests()
            .iter()
            .filter_map(|r| serde_json::from_str::<Value>(&r.last_user_text()?).ok())
            .filter(|v| v.get("deliberation_input").is_some())
            .collect::<Vec<_>>()
    };
    let second = eventually(WAIT, "the second deliberation", || async {
        inputs().get(1).cloned()
    })
    .await;
    assert_eq!(
        inputs()[0]["deliberation_input"]["intents"],
        json!([]),
        "nothing decided before the first tick"
    );
    let intents = &second["deliberation_input"]["intents"];
    assert_eq!(intents.as_array().map(Vec::len), Some(1), "{intents}");
    assert_eq!(intents[0]["action_type"], "web_research");
    assert_eq!(intents[0]["capability"], "web_access");
    assert_eq!(intents[0]["status"], "success");
    app.cleanup().await;
}

/// The message's prompt as seed 001 asks (§プロンプト方針, §プロンプト要件): its own prompt,
/// after the persona rules of the reply prompt, telling the persona to speak as itself, to
/// build on `result_payload`, to keep `summary_text` internal, to use no Markdown or tool
/// format, and to set its tone by `message_kind` (rows 001-19 and 001-20 had no test).
#[tokio::test]
async fn the_message_prompt_follows_the_persona_rules_and_says_what_the_seed_requires() {
    let search = FakeSearch::start().await.unwrap();
    tea_hits(&search);
    let app = spawn(&search, None).await;
    let said = "煎茶の話を見つけたよ。";
    searched_and_said(&app, said).await;
    let system = app
        .persona_requests()
        .iter()
        .filter(|r| {
            r.last_user_text()
                .is_some_and(|t| t.contains("\"result_payload\""))
        })
        .find_map(|r| r.system_text())
        .expect("the message's request");
    let rules = system
        .find("You are クロ (internal id: kuro).")
        .expect("the persona rules");
    let own = system
        .find("Now you report something you did on your own")
        .expect("the message prompt");
    assert!(rules < own, "the persona rules come first");
    for required in [
        "Speak in your own voice",
        "`result.result_payload` holds the facts",
        "`result.summary_text` is an internal note",
        "no Markdown links",
        "Tone by `decision.console_delivery.message_kind`",
    ] {
        assert!(system[own..].contains(required), "{required}");
    }
    app.cleanup().await;
}

/// Ticks once: the worker decides `decision`, the persona says `said`.
async fn tick_with(app: &TestApp, decision: String, said: &str) {
    app.llm
        .push_for_model(WORKER_MODEL, Script::reply(&decision));
    app.reply(Script::reply(said));
    app.tick().await;
}

/// Ticks once with a `web_access` decision delivered as `chat`; the persona says `said`.
/// The stored `AutonomyMessageRendered`.
async fn searched_and_said(app: &TestApp, said: &str) -> ghost_shared::envelope::RecordedEvent {
    let chat = decision("web_access", json!({"query": "sencha"}), "chat", "report");
    tick_with(app, chat, said).await;
    eventually(WAIT, "the autonomy message", || async {
        app.session_events("console")
            .await
            .into_iter()
            .find(|e| e.is::<AutonomyMessageRendered>())
    })
    .await
}

/// The persona's own messages count in its mood (seed 004: entry points other than a reply
/// are filled in by reflection): an autonomy message is reflected on once, as an episode of
/// the persona, and the mood service counts it.
#[tokio::test]
async fn an_autonomy_message_is_reflected_into_the_mood() {
    let search = FakeSearch::start().await.unwrap();
    tea_hits(&search);
    let app = spawn(&search, None).await;
    // Every worker call after the decision (the reflection) reads a joyful reaction.
    app.llm.set_default_for_model(
        WORKER_MODEL,
        Script::reply(
            r#"{"reflection_text":"proud of the find","partner_affect_label":"joy","partner_affect_intensity":0.8,"salience":0.9,"confidence":0.9,"topic_tags":["tea"]}"#,
        ),
    );
    let message = searched_and_said(&app, "いいお茶の淹れ方を見つけたよ!").await;
    let reflected = eventually(WAIT, "the reflection on it", || async {
        app.store
            .read_stream(&ghost_shared::events::persona_stream("kuro"), 0)
            .await
            .ok()?
            .into_iter()
            .filter_map(|e| e.decode::<ghost_shared::events::AffectReflected>().ok())
            .find(|r| r.episode_event_id == message.event_id)
    })
    .await;
    assert_eq!(reflected.persona, "kuro");
    let episodes = eventually(WAIT, "the mood's episode", || async {
        sqlx::query_scalar::<_, i32>(
            "SELECT episode_count FROM partner_mood_state WHERE persona = 'kuro'",
        )
        .fetch_optional(app.store.pool())
        .await
        .ok()
        .flatten()
        .filter(|n| *n >= 1)
    })
    .await;
    assert_eq!(episodes, 1, "the message is the persona's one episode");
    app.cleanup().await;
}

/// An autonomy message is embedded when it is said, like an utterance recall compares
/// against, not lazily by a later recall (recall is off in this test: nothing else embeds).
#[tokio::test]
async fn an_autonomy_message_is_embedded_when_said() {
    let search = FakeSearch::start().await.unwrap();
    tea_hits(&search);
    let url = search.search_url();
    let app = TestApp::spawn_adjusted(
        &ghost::stack::ServiceName::ALL,
        &[("GHOST_AUTONOMY__INTERVAL_SECS", "0")],
        move |c| {
            c.ghost.web.search_url = Some(url);
            let mut embedding = c.ghost.llm["persona"].clone();
            embedding.model = "embed-test".into();
            c.ghost.llm.insert("embedding".into(), embedding);
        },
    )
    .await;
    let said = "煎茶の淹れ方を調べておいたよ。";
    let message = searched_and_said(&app, said).await;
    let (text, dims): (String, i32) = eventually(WAIT, "its vector", || async {
        sqlx::query_as(
            "SELECT text, cardinality(vector) FROM memory_embeddings \
             WHERE item_id = $1 AND model = 'embed-test'",
        )
        .bind(format!("event:{}", message.event_id))
        .fetch_optional(app.store.pool())
        .await
        .ok()
        .flatten()
    })
    .await;
    assert_eq!(text, format!("(I said) {said}"));
    assert!(dims > 0);
    app.cleanup().await;
}

/// A delegated job's output reaches the message as facts (`result_payload.output`), its raw
/// text is named raw material in the prompt, and neither the stored payload nor the
/// activity carries it.
#[tokio::test]
async fn an_agent_job_s_output_reaches_the_message_as_facts() {
    let search = FakeSearch::start().await.unwrap();
    let (agent, dir) = shell_agent(r#"echo '{"sorted_notes": 12, "oldest": "2024-01-03"}'"#);
    let app = spawn(&search, Some(agent)).await;
    let console = Console::connect(&app).await;
    let job = decision(
        "agent_delegate",
        json!({"task": "メモを整理"}),
        "chat",
        "report",
    );
    tick_with(&app, job, "メモを12件整理しておいたよ。").await;
    eventually(WAIT, "the message", || async {
        console.of_type("message").into_iter().next()
    })
    .await;
    let renders = render_requests(&app);
    let input = &renders[0];
    assert_eq!(
        input["result"]["result_payload"]["output"],
        json!({"sorted_notes": 12, "oldest": "2024-01-03"})
    );
    assert!(input["result"]["raw_output_text"].is_string());
    let system = app
        .persona_requests()
        .iter()
        .find_map(|r| {
            let s = r.system_text()?;
            s.contains("raw_output_text").then_some(s)
        })
        .expect("the message prompt");
    assert!(system.contains("raw material"), "{system}");
    let stored = sqlx::query_scalar::<_, Value>(
        "SELECT payload FROM events WHERE event_type = 'ActionResultRecorded'",
    )
    .fetch_one(app.store.pool())
    .await
    .unwrap();
    assert!(stored["result"]["result_payload"].get("output").is_none());
    console.wait_for_activity("result", 1).await;
    assert!(console
        .frames()
        .iter()
        .filter(|f| f["type"] != "message")
        .all(|f| !f.to_string().contains("sorted_notes")));
    std::fs::remove_dir_all(&dir).ok();
    app.cleanup().await;
}

/// Seed 001 step 6: a said autonomy message is summarised too: the persona asks for its
/// conversation's summary through it (once, however often the message is redelivered), and
/// the worker's summary reads it.
#[tokio::test]
async fn an_autonomy_message_is_summarised_when_said() {
    let search = FakeSearch::start().await.unwrap();
    tea_hits(&search);
    let app = spawn(&search, None).await;
    let said = "玉露は低い温度で淹れるといいんだって。";
    let message = searched_and_said(&app, said).await;
    let memory = ghost_shared::events::memory_stream("console");
    let summarized = eventually(WAIT, "the summary through the message", || async {
        app.store
            .read_stream(&memory, 0)
            .await
            .ok()?
            .into_iter()
            .filter_map(|e| e.decode::<ghost_shared::events::SessionSummarized>().ok())
            .find(|s| s.through_event_id == Some(message.event_id))
    })
    .await;
    assert_eq!(summarized.session_id, "console");
    let asked: Vec<_> = app
        .llm
        .requests()
        .into_iter()
        .filter(|r| {
            r.last_user_text()
                .is_some_and(|t| t.contains("[turns since]"))
        })
        .collect();
    assert_eq!(asked.len(), 1, "one summary asked");
    assert!(
        asked[0].last_user_text().unwrap().contains(said),
        "the summary reads the message"
    );
    let requests = app
        .store
        .read_stream(&memory, 0)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.event_type == "SummarizeRequested")
        .count();
    assert_eq!(requests, 1);
    app.cleanup().await;
}

//! Affect and mood (seed 004) end to end: the probe, the mood service, the trailer never
//! reaching a client, reflection, the debug API and the capsule in the persona's prompt.

mod support;

use std::time::Duration;

use ghost::stack::ServiceName;
use ghost_shared::affect::{
    Affect, AffectLabel, MoodConstants, ResponsePolicy, DEFAULT_TRAILER_MARKER,
};
use ghost_shared::envelope::NewEvent;
use ghost_shared::events::{persona_stream, AffectReflected, AssistantReplied};
use ghost_shared::mood_api::{self, MoodAnswer, MoodQuery};
use ghost_shared::store::{EventStore, ExpectedVersion};
use ghost_testkit::fake_llm::Script;
use ghost_testkit::testing::{eventually, origin_event, repo_config_dir, WORKER_MODEL};
use serde_json::{json, Value};
use support::{TestApp, TOKEN};
use uuid::Uuid;

fn fixture() -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/mood.json"
    ))
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

fn assert_mood(actual: &Value, expected: &Value, what: &str) {
    assert_eq!(actual["label"], expected["label"], "{what}: label");
    assert_eq!(
        actual["response_policy"]["refusal_allowed"],
        expected["response_policy"]["refusal_allowed"],
        "{what}: refusal_allowed"
    );
    let close = |a: &Value, e: &Value, field: &str| {
        let (a, e) = (a.as_f64().unwrap(), e.as_f64().unwrap());
        assert!((a - e).abs() <= 1e-9, "{what}: {field} = {a}, expected {e}");
    };
    close(&actual["intensity"], &expected["intensity"], "intensity");
    for c in ["joy", "sadness", "anger", "fear"] {
        close(&actual["components"][c], &expected["components"][c], c);
    }
    for k in ["cooperation", "refusal_bias"] {
        close(
            &actual["response_policy"][k],
            &expected["response_policy"][k],
            k,
        );
    }
}

#[test]
fn the_configured_constants_are_the_fixture_params() {
    let config = ghost_shared::config::Config::load(&repo_config_dir(), Vec::new()).unwrap();
    let params: MoodConstants = serde_json::from_value(fixture()["params"].clone()).unwrap();
    assert_eq!(config.ghost.mood.constants, params);
}

#[tokio::test]
async fn every_fixture_case_through_the_probe() {
    for (i, case) in fixture()["cases"].as_array().unwrap().iter().enumerate() {
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_ghost"))
            .args(["mood", "--now", &case["now"].to_string()])
            .env("GHOST_CONFIG_DIR", repo_config_dir())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        tokio::io::AsyncWriteExt::write_all(&mut stdin, case["episodes"].to_string().as_bytes())
            .await
            .unwrap();
        drop(stdin);
        let output = child.wait_with_output().await.unwrap();
        assert!(output.status.success(), "case {i}");
        let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_mood(&printed, &case["expect"], &format!("probe case {i}"));
    }
    // Bad input: a clear error, no output.
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_ghost"))
        .args(["mood", "--now", "1"])
        .env("GHOST_CONFIG_DIR", repo_config_dir())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(output.stdout.is_empty());
}

fn reflected(persona: &str, at: f64, affect: Affect) -> NewEvent {
    let id = Uuid::new_v4();
    let payload = AffectReflected {
        persona: persona.into(),
        episode_event_id: Uuid::new_v4(),
        at,
        affect,
    };
    origin_event(id, &payload)
}

fn affect_of(episode: &Value) -> Affect {
    Affect {
        label: serde_json::from_value(episode["label"].clone()).unwrap(),
        intensity: episode["intensity"].as_f64().unwrap(),
        salience: episode["salience"].as_f64().unwrap(),
        confidence: episode["confidence"].as_f64(),
        reflection_text: None,
        topic_tags: Vec::new(),
        policy: episode
            .get("policy")
            .map(|p| serde_json::from_value::<ResponsePolicy>(p.clone()).unwrap()),
    }
}

async fn episode_count(store: &EventStore, persona: &str) -> i64 {
    sqlx::query_scalar("SELECT episode_count::bigint FROM partner_mood_state WHERE persona = $1")
        .bind(persona)
        .fetch_optional(store.pool())
        .await
        .unwrap()
        .unwrap_or(0)
}

async fn mood_rows(
    store: &EventStore,
) -> (Vec<(String, i32, Uuid)>, Vec<(String, i64, f64, String)>) {
    let states = sqlx::query_as(
        "SELECT persona, episode_count, last_event_id FROM partner_mood_state ORDER BY persona",
    )
    .fetch_all(store.pool())
    .await
    .unwrap();
    let episodes = sqlx::query_as(
        "SELECT persona, position, at, label FROM mood_episodes ORDER BY persona, position",
    )
    .fetch_all(store.pool())
    .await
    .unwrap();
    (states, episodes)
}

#[tokio::test]
async fn every_fixture_case_through_the_service_and_rebuild_equals_live() {
    let app = TestApp::spawn_services(&[ServiceName::Mood], &[]).await;
    let cases = fixture()["cases"].as_array().unwrap().clone();
    for (i, case) in cases.iter().enumerate() {
        let persona = format!("fx{i}");
        let events: Vec<NewEvent> = case["episodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| reflected(&persona, e["at"].as_f64().unwrap(), affect_of(e)))
            .collect();
        for chunk in events.chunks(100) {
            append_reflected(&app, &persona, chunk).await;
        }
        let expected_window = events.len().min(500) as i64;
        eventually(Duration::from_secs(30), "episodes projected", || async {
            (episode_count(&app.store, &persona).await == expected_window).then_some(())
        })
        .await;
        let answer = app.ask_mood(&persona, case["now"].as_f64()).await.unwrap();
        assert!(!answer.overridden);
        assert_mood(
            &serde_json::to_value(answer.state).unwrap(),
            &case["expect"],
            &format!("service case {i}"),
        );
    }

    // Rebuilding the projection from position 0 gives the same rows.
    let live = mood_rows(&app.store).await;
    assert!(!live.0.is_empty() && !live.1.is_empty());
    // Each summary row's count (moved by every insert and trim, never recounted) is the
    // number of rows its window has.
    for (persona, count, _) in &live.0 {
        let rows = live.1.iter().filter(|e| &e.0 == persona).count();
        assert_eq!(*count as usize, rows, "{persona}");
    }
    // Start from deliberately wrong rows in both tables.
    support::execute_all(
        &app.store,
        &[
            "INSERT INTO mood_episodes VALUES ('nobody', 999999, 1, 'anger', 1, 1, 1, NULL)",
            "UPDATE mood_episodes SET label = 'fear' WHERE persona = 'fx0'",
            "INSERT INTO partner_mood_state VALUES ('nobody', 1, gen_random_uuid(), now())",
            "UPDATE partner_mood_state SET episode_count = 77 WHERE persona = 'fx0'",
        ],
    )
    .await;
    app.run_ghost_command(&["projections", "rebuild", "partner_mood_state"], &[])
        .await;
    assert_eq!(mood_rows(&app.store).await, live);
    app.cleanup().await;
}

/// The service keeps each window in memory after the first answer: episodes projected later
/// must still count in the next answer.
#[tokio::test]
async fn the_mood_service_counts_episodes_projected_after_its_first_answer() {
    let app = TestApp::spawn_services(&[ServiceName::Mood], &[]).await;
    let cases = fixture()["cases"].as_array().unwrap().clone();
    let case = cases
        .iter()
        .max_by_key(|c| c["episodes"].as_array().unwrap().len())
        .unwrap();
    let persona = "catchup";
    let events: Vec<NewEvent> = case["episodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| reflected(persona, e["at"].as_f64().unwrap(), affect_of(e)))
        .collect();
    assert!(
        events.len() >= 2,
        "the fixture needs a case with two episodes"
    );
    let ask = || async {
        let answer = app.ask_mood(persona, case["now"].as_f64()).await.unwrap();
        serde_json::to_value(answer.state).unwrap()
    };
    let half = events.len() / 2;
    let mut first = None;
    for (part, upto) in [(&events[..half], half), (&events[half..], events.len())] {
        append_reflected(&app, persona, part).await;
        eventually(Duration::from_secs(30), "episodes projected", || async {
            (episode_count(&app.store, persona).await == upto as i64).then_some(())
        })
        .await;
        if first.is_none() {
            first = Some(ask().await);
        }
    }
    let later = ask().await;
    // The later episodes change the mood, so an answer from the first window alone fails.
    assert_ne!(
        first,
        Some(later.clone()),
        "the later episode changes the mood"
    );
    assert_mood(&later, &case["expect"], "after the later episodes");
    app.cleanup().await;
}

/// The window keeps the newest `max_episodes` by time, whatever order they arrive in, and
/// its summary row counts exactly the rows kept.
#[tokio::test]
async fn the_window_keeps_the_newest_episodes_and_counts_them() {
    let app = TestApp::spawn_adjusted(&[ServiceName::Mood], &[], |c| {
        c.ghost.mood.constants.max_episodes = 3;
    })
    .await;
    let persona = "trimmed";
    let joy = |at: f64| {
        let affect = json!({"label": "joy", "intensity": 0.5, "salience": 0.5, "confidence": 0.5});
        reflected(persona, at, affect_of(&affect))
    };
    append_reflected(&app, persona, &[joy(10.0), joy(20.0), joy(30.0), joy(40.0)]).await;
    assert_eq!(window_becomes(&app, persona, &[20.0, 30.0, 40.0]).await, 3);
    // An episode older than the whole window arrives late: it is not kept.
    append_reflected(&app, persona, &[joy(5.0)]).await;
    append_reflected(&app, persona, &[joy(50.0)]).await;
    assert_eq!(window_becomes(&app, persona, &[30.0, 40.0, 50.0]).await, 3);
    app.cleanup().await;
}

async fn append_reflected(app: &TestApp, persona: &str, events: &[NewEvent]) {
    app.append_to_persona(persona, events).await;
}

/// Waits until `persona`'s window holds exactly the episodes at `ats`; its summary count.
async fn window_becomes(app: &TestApp, persona: &str, ats: &[f64]) -> i64 {
    eventually(Duration::from_secs(30), "episodes projected", || async {
        let kept: Vec<f64> =
            sqlx::query_scalar("SELECT at FROM mood_episodes WHERE persona = $1 ORDER BY at")
                .bind(persona)
                .fetch_all(app.store.pool())
                .await
                .unwrap();
        if kept != ats {
            return None;
        }
        Some(episode_count(&app.store, persona).await)
    })
    .await
}

const REPLY: &str = "今日はいい天気だね。散歩に行こうか？";
const AFFECT_JSON: &str = r#"{"reflection_text":"a nice chat","partner_affect_label":"joy","partner_affect_intensity":0.6,"salience":0.4,"confidence":0.8,"topic_tags":["weather"]}"#;

#[tokio::test]
async fn the_trailer_never_reaches_the_client_wherever_the_chunks_split() {
    let app = TestApp::spawn(&[]).await;
    let full = format!("{REPLY}\n{DEFAULT_TRAILER_MARKER}\n{AFFECT_JSON}");
    let start = REPLY.len() - "か？".len();
    let end = REPLY.len() + 1 + DEFAULT_TRAILER_MARKER.len() + 3;
    let splits: Vec<usize> = (start..=end)
        .filter(|i| full.is_char_boundary(*i))
        .collect();
    for (n, split) in splits.iter().enumerate() {
        // Two cuts: one at `split`, one a few characters later (inside the marker or JSON).
        let second = (split + 7..full.len())
            .find(|i| full.is_char_boundary(*i))
            .unwrap_or(full.len());
        app.reply(Script::chunks(vec![
            &full[..*split],
            &full[*split..second],
            &full[second..],
        ]));
        let session = format!("split{n}");
        let events = app.chat(&session, "天気どう？").await;
        let streamed: String = events
            .iter()
            .filter(|e| e.event == "token")
            .map(|e| e.data["delta"].as_str().unwrap())
            .collect();
        assert_eq!(streamed, REPLY, "split at {split}");
        assert!(
            !streamed.contains('<') && !streamed.contains('{'),
            "split at {split}"
        );
        let done = events.last().unwrap();
        assert_eq!(done.data["reply_text"], REPLY, "split at {split}");
        let stored = app.session_events(&session).await;
        let reply: AssistantReplied = stored.iter().find_map(|e| e.decode().ok()).unwrap();
        assert_eq!(reply.text, REPLY);
        let affect = reply.affect.expect("affect stored with the reply");
        assert_eq!(
            (affect.label, affect.intensity, affect.salience),
            (AffectLabel::Joy, 0.6, 0.4)
        );
    }
    // An out-of-range field is rejected on its own; the rest is kept.
    app.reply(Script::reply(&format!(
        "{REPLY}\n{DEFAULT_TRAILER_MARKER}\n{}",
        AFFECT_JSON.replace("\"confidence\":0.8", "\"confidence\":3")
    )));
    app.chat("partial", "hi").await;
    let reply: AssistantReplied = app
        .session_events("partial")
        .await
        .iter()
        .find_map(|e| e.decode().ok())
        .unwrap();
    let affect = reply.affect.unwrap();
    assert_eq!(affect.confidence, None);
    assert!(
        reply
            .affect_rejected
            .iter()
            .any(|r| r.starts_with("confidence")),
        "{:?}",
        reply.affect_rejected
    );
    app.cleanup().await;
}

fn worker_calls(app: &TestApp) -> usize {
    app.llm
        .requests()
        .iter()
        .filter(|r| r.model.as_deref() == Some(WORKER_MODEL))
        .count()
}

#[tokio::test]
async fn a_reply_without_trailer_is_reflected_once_even_when_redelivered() {
    let app = TestApp::spawn(&[]).await;
    app.reply(Script::reply("Just words, no trailer."));
    app.chat("r1", "hello").await;
    let reply = app
        .session_events("r1")
        .await
        .into_iter()
        .find(|e| e.is::<AssistantReplied>())
        .unwrap();
    assert!(reply.decode::<AssistantReplied>().unwrap().affect.is_none());

    let reflections = |app: &TestApp| {
        let store = app.store.clone();
        async move {
            store
                .read_stream(&persona_stream("kuro"), 0)
                .await
                .unwrap()
                .into_iter()
                .filter_map(|e| e.decode::<AffectReflected>().ok())
                .collect::<Vec<_>>()
        }
    };
    let found = eventually(Duration::from_secs(15), "reflection", || async {
        let r = reflections(&app).await;
        (!r.is_empty()).then_some(r)
    })
    .await;
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].episode_event_id, reply.event_id);
    assert_eq!(worker_calls(&app), 1);

    // Deliver the same reply to the worker again (a new message id defeats deduplication).
    let bus = app.stack.ctx.bus();
    let mut headers = async_nats::HeaderMap::new();
    headers.insert("Nats-Msg-Id", "redelivery-1");
    let ack = bus
        .jetstream()
        .publish_with_headers(
            bus.event_subject(&reply),
            headers,
            serde_json::to_vec(&reply).unwrap().into(),
        )
        .await
        .unwrap()
        .await
        .unwrap();
    let stream = bus
        .jetstream()
        .get_stream(&bus.config().stream_name)
        .await
        .unwrap();
    // Wait until the worker's consumer has acked past the redelivered message.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let mut consumer: async_nats::jetstream::consumer::PullConsumer = stream
            .get_consumer("worker_AssistantReplied")
            .await
            .unwrap();
        if consumer.info().await.unwrap().ack_floor.stream_sequence >= ack.sequence {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the worker never handled the redelivery"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(reflections(&app).await.len(), 1, "no second reflection");
    assert_eq!(worker_calls(&app), 1, "the model was not asked again");
    app.cleanup().await;
}

async fn api(app: &TestApp, method: reqwest::Method, body: Option<String>) -> (u16, Value) {
    let mut req = app
        .http
        .request(method, format!("{}/api/partner_mood", app.base_url))
        .bearer_auth(TOKEN);
    if let Some(b) = body {
        req = req.body(b);
    }
    let response = req.send().await.unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

fn angry() -> Value {
    json!({
        "label": "anger", "intensity": 0.9,
        "components": {"joy": 0.0, "sadness": 0.1, "anger": 0.9, "fear": 0.0},
        "response_policy": {"cooperation": 0.2, "refusal_bias": 0.9, "refusal_allowed": true}
    })
}

#[tokio::test]
async fn the_override_lifecycle() {
    let app = TestApp::spawn(&[]).await;
    let (status, body) = api(&app, reqwest::Method::GET, None).await;
    assert_eq!(status, 200);
    assert_eq!(body["overridden"], false);
    assert_eq!(body["state"]["label"], "neutral");

    let (status, body) = api(&app, reqwest::Method::PUT, Some(angry().to_string())).await;
    assert_eq!((status, &body["overridden"]), (200, &json!(true)));
    let (_, body) = api(&app, reqwest::Method::GET, None).await;
    assert_eq!(body["state"], angry());

    let mut out_of_range = angry();
    out_of_range["components"]["anger"] = json!(1.5);
    let mut unknown_label = angry();
    unknown_label["label"] = json!("rage");
    let mut missing = angry();
    missing.as_object_mut().unwrap().remove("response_policy");
    let mut extra = angry();
    extra["mood"] = json!("x");
    for bad in [
        "{not json".to_string(),
        out_of_range.to_string(),
        unknown_label.to_string(),
        missing.to_string(),
        extra.to_string(),
    ] {
        let (status, body) = api(&app, reqwest::Method::PUT, Some(bad.clone())).await;
        assert_eq!(status, 400, "{bad}");
        assert_eq!(body["error"]["code"], "invalid_mood");
    }
    let (_, body) = api(&app, reqwest::Method::GET, None).await;
    assert_eq!(body["state"], angry(), "a refused PUT changed nothing");

    // The override is what the next reply is written in.
    app.reply(Script::reply("Hmph."));
    app.chat("o1", "help me").await;
    let system = app
        .persona_requests()
        .last()
        .unwrap()
        .system_text()
        .unwrap();
    assert!(
        system.contains(r#""label":"anger""#) && system.contains(r#""refusal_allowed":true"#),
        "{system}"
    );

    let (status, body) = api(&app, reqwest::Method::DELETE, None).await;
    assert_eq!((status, &body["overridden"]), (200, &json!(false)));
    let (_, body) = api(&app, reqwest::Method::GET, None).await;
    assert_eq!(body["overridden"], false);
    assert_ne!(body["state"], angry());
    app.cleanup().await;
}

#[tokio::test]
async fn an_angry_episode_changes_the_next_capsule_and_refusal_reaches_the_prompt() {
    let app = TestApp::spawn(&[]).await;
    app.reply(Script::reply("Sure!"));
    app.chat("a1", "hi").await;
    let calm = app
        .persona_requests()
        .last()
        .unwrap()
        .system_text()
        .unwrap();
    assert!(
        calm.contains(r#""label":"neutral""#) && calm.contains(r#""refusal_allowed":false"#),
        "{calm}"
    );
    assert!(!calm.contains("decline"));

    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let rage = Affect {
        label: AffectLabel::Anger,
        intensity: 1.0,
        salience: 1.0,
        confidence: Some(1.0),
        reflection_text: None,
        topic_tags: Vec::new(),
        policy: None,
    };
    let events = [
        reflected("kuro", now, rage.clone()),
        reflected("kuro", now, rage),
    ];
    app.stack
        .ctx
        .log
        .append(&persona_stream("kuro"), ExpectedVersion::Any, &events)
        .await
        .unwrap();
    eventually(Duration::from_secs(15), "anger projected", || async {
        let query = MoodQuery {
            persona: "kuro".into(),
            now: None,
        };
        let answer: MoodAnswer = mood_api::request(
            app.stack.ctx.bus(),
            mood_api::GET_SUBJECT,
            &query,
            Duration::from_secs(5),
        )
        .await
        .ok()?;
        (answer.state.label == AffectLabel::Anger).then_some(())
    })
    .await;

    app.reply(Script::reply("No."));
    app.chat("a1", "do my homework").await;
    let angry = app
        .persona_requests()
        .last()
        .unwrap()
        .system_text()
        .unwrap();
    assert!(angry.contains(r#""label":"anger""#), "{angry}");
    assert!(angry.contains(r#""refusal_allowed":true"#), "{angry}");
    assert!(
        angry.contains("decline"),
        "the tone guide lets the persona decline: {angry}"
    );
    app.cleanup().await;
}

#[tokio::test]
async fn the_override_map_is_bounded() {
    // Overrides are for characters: one per override the bound allows, and one more.
    let app = TestApp::spawn_adjusted(&[ServiceName::Mood, ServiceName::Gateway], &[], |c| {
        let kuro = c.characters.get("kuro").expect("kuro").clone();
        let names = (0..64).map(|i| format!("p{i}"));
        for name in names.chain(["one-too-many".to_owned()]) {
            let mut character = kuro.clone();
            character.display_name = name.clone();
            character.name = name;
            c.characters.characters.push(character);
        }
    })
    .await;
    let put = |persona: String| {
        let app = &app;
        async move {
            let response = app
                .http
                .put(format!(
                    "{}/api/partner_mood?persona={persona}",
                    app.base_url
                ))
                .bearer_auth(TOKEN)
                .body(angry().to_string())
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            (status, response.json::<Value>().await.unwrap())
        }
    };
    let limit = app.env.config.ghost.mood.max_overrides;
    assert_eq!(limit, 64, "the default");
    for i in 0..limit {
        let (status, body) = put(format!("p{i}")).await;
        assert_eq!(status, 200, "{body}");
    }
    let (status, body) = put("one-too-many".into()).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "too_many_overrides");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("64"),
        "{body}"
    );
    // Replacing an existing override is still fine; clearing one makes room.
    assert_eq!(put("p0".into()).await.0, 200);
    let cleared = app
        .http
        .delete(format!("{}/api/partner_mood?persona=p1", app.base_url))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(cleared.status(), 200);
    assert_eq!(put("one-too-many".into()).await.0, 200);
    // A persona id no character could have is refused outright; one no character has is
    // not found.
    let (status, body) = put("x".repeat(200)).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], "invalid_persona");
    let (status, body) = put("nobody".into()).await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["error"]["code"], "unknown_persona");
    app.cleanup().await;
}

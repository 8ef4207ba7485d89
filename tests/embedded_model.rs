//! The embedded model (the real SmolLM2 file, fetched by deploy/model.sh and cached) behind
//! the whole pipeline: `ghost up`'s service list with `model.enabled`, the persona and the
//! stage's characters pointed at it over the OpenAI wire format.

mod support;

use std::time::Duration;

use ghost::doctor::Status;
use ghost::stack::ServiceName;
use ghost_shared::events::{StageEnded, StageSpoke, StageTurnFailed};
use serde_json::json;
use support::embedded::{free_port, overrides};
use support::stage::{connect, frames_until_within, is_active, send, speakers, stage_events};
use support::TestApp;

async fn spawn_with_model(
    roles: &[&str],
    extra: &[(&str, &str)],
    adjust: impl FnOnce(&mut ghost_shared::config::Config),
) -> TestApp {
    let port = free_port();
    let mut vars = overrides(port, &format!("http://127.0.0.1:{port}/v1"), roles);
    vars.extend(
        extra
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    let refs: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    // What `ghost up` runs when model.enabled: the model first, then every service (the
    // write-plan service too, which this test of the reply path leaves out).
    let mut services = vec![ServiceName::Model];
    services.extend(ServiceName::ALL);
    let app = TestApp::spawn_adjusted(&services, &refs, adjust).await;
    let mut up = services.clone();
    up.push(ServiceName::WritePlan);
    assert_eq!(ServiceName::up(&app.env.config), up);
    assert!(
        app.stack.model_addr().is_some(),
        "the model runs in the stack"
    );
    app
}

#[tokio::test]
async fn a_chat_is_answered_by_the_embedded_model_through_the_whole_pipeline() {
    // The persona writes the reply on the embedded model; the worker's reflection stays on
    // the fake (a calm affect), as this test is about the reply path.
    let app = spawn_with_model(&["persona"], &[], |_| {}).await;
    let events = app
        .chat_within("newcomer", "Hello! Who are you?", Duration::from_secs(600))
        .await;
    let tokens: String = events
        .iter()
        .filter(|e| e.event == "token")
        .filter_map(|e| e.data["delta"].as_str())
        .collect();
    let last = events.last().expect("events");
    assert_eq!(last.event, "done", "{events:#?}");
    let reply = last.data["reply_text"].as_str().expect("reply_text");
    assert!(!reply.trim().is_empty(), "a real, non-empty reply");
    assert!(!tokens.trim().is_empty(), "the reply was streamed");
    assert!(
        !reply.contains("<|im_end|>") && !reply.contains("<|im_start|>"),
        "no template tokens leak: {reply:?}"
    );
    // The persona's call went to the embedded model, not to the fake.
    assert_eq!(app.model_calls(), 0);
    // `ghost doctor`'s model check passes on it: listed, and a one-token completion.
    let checks = ghost::doctor::models_of_roles(&app.env.config, &["persona".into()]).await;
    // ... and it holds an answer to a JSON Schema.
    assert!(
        checks.len() == 2 && checks.iter().all(|c| c.status == Status::Ok),
        "{checks:?}"
    );
    assert!(
        checks[1].name.starts_with("structured output"),
        "{checks:?}"
    );
    let stored = app.session_events("newcomer").await;
    assert!(stored.iter().any(|e| e.event_type == "AssistantReplied"));
    app.cleanup().await;
}

#[tokio::test]
async fn three_characters_take_their_stage_turns_on_the_embedded_model() {
    let app = spawn_with_model(
        &["lumina", "claris", "nox"],
        &[("GHOST_STAGE__AUTO_LOOPS", "3")],
        |c| c.ghost.stage.cast = vec!["LUMINA".into(), "CLARIS".into(), "NOX".into()],
    )
    .await;
    let mut ws = connect(&app, "embedded").await;
    send(
        &mut ws,
        json!({"type": "user", "text": "What should we cook tonight? [Next: LUMINA]"}),
    )
    .await;
    let frames = frames_until_within(&mut ws, Duration::from_secs(600), is_active).await;
    let events = stage_events(&app, "embedded").await;
    let spoke: Vec<StageSpoke> = events.iter().filter_map(|e| e.decode().ok()).collect();
    let failed: Vec<StageTurnFailed> = events.iter().filter_map(|e| e.decode().ok()).collect();
    assert!(failed.is_empty(), "every turn answered: {failed:?}");
    assert_eq!(spoke.len(), 3, "three turns: {spoke:?}");
    assert_eq!(speakers(&frames).len(), 3);
    assert_eq!(
        spoke[0].speaker, "LUMINA",
        "the user's nomination is followed"
    );
    assert!(spoke.iter().any(|s| !s.text.trim().is_empty()));
    let ended: StageEnded = events.iter().find_map(|e| e.decode().ok()).expect("ended");
    assert_eq!((ended.turns, ended.reason.as_str()), (3, "cap"));
    app.cleanup().await;
}

/// A reminder asked by `/remind` is confirmed and, when the clock reaches it, said in the
/// persona's words on the embedded model, the task after them (issue 46: the fake model
/// shows the wiring in `tests/reminders.rs`; this shows the real one writes a line).
#[tokio::test]
async fn a_due_reminder_is_said_in_the_personas_words_on_the_embedded_model() {
    let app = spawn_with_model(
        &["persona"],
        &[
            ("GHOST_CLOCK__SIMULATED", "true"),
            ("GHOST_REMINDERS__POLL_INTERVAL_MS", "200"),
            // A loaded CI machine: the line is waited for rather than said plainly.
            ("GHOST_REMINDERS__VOICE__TIMEOUT_MS", "600000"),
            ("GHOST_REMINDERS__VOICE__WITHIN_SECS", "600"),
        ],
        |_| {},
    )
    .await;
    let events = app
        .chat_within(
            "kitchen",
            "/remind in 20 minutes call Mom",
            Duration::from_secs(600),
        )
        .await;
    assert_eq!(events.last().unwrap().event, "done", "{events:#?}");
    let (status, body) = app
        .api(
            reqwest::Method::POST,
            "/api/clock/advance",
            Some(&json!({"secs": 20 * 60 + 1})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let delivered = ghost_testkit::testing::eventually(
        Duration::from_secs(600),
        "the reminder said",
        || async {
            sqlx::query_scalar::<_, serde_json::Value>(
                "SELECT payload FROM events WHERE event_type = 'ReminderDelivered'",
            )
            .fetch_optional(app.store.pool())
            .await
            .ok()
            .flatten()
        },
    )
    .await;
    let text = delivered["text"].as_str().unwrap_or_default();
    assert_eq!(delivered["voice"], "persona", "{delivered}");
    let (line, task) = text.split_once("\n⏰ ").expect("a line, then the task");
    assert_eq!(task, "call Mom");
    assert!(!line.trim().is_empty(), "{text}");
    eprintln!("the embedded model's reminder line: {line:?}");
    app.cleanup().await;
}

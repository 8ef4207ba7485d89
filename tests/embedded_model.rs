//! The embedded model (the real SmolLM2 file, fetched by deploy/model.sh and cached) behind
//! the whole pipeline: `ghost up`'s service list with `model.enabled`, the persona and the
//! stage's characters pointed at it over the OpenAI wire format.

mod support;

use std::time::Duration;

use ghost::doctor::Status;
use ghost::stack::ServiceName;
use ghost_shared::events::{StageEnded, StageSpoke, StageTurnFailed};
use ghost_testkit::testing::embedded_model_file;
use serde_json::json;
use support::stage::{connect, frames_until_within, is_active, send, speakers, stage_events};
use support::TestApp;

/// The model id the tests give the embedded server.
const NAME: &str = "smollm2-test";

/// A port nobody listens on right now (the model server binds it a moment later).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// Overrides that enable the embedded model on `port` and point `roles` at it.
fn embedded_overrides(port: u16, roles: &[&str]) -> Vec<(String, String)> {
    let path = embedded_model_file();
    let mut vars = vec![
        ("GHOST_MODEL__ENABLED".to_owned(), "true".to_owned()),
        (
            "GHOST_MODEL__LISTEN".to_owned(),
            format!("127.0.0.1:{port}"),
        ),
        ("GHOST_MODEL__PATH".to_owned(), path.display().to_string()),
        ("GHOST_MODEL__NAME".to_owned(), NAME.to_owned()),
        ("GHOST_MODEL__MAX_TOKENS".to_owned(), "64".to_owned()),
        // One thread: two tests run a model each at once on two cores, and llama.cpp's
        // threads wait for each other by spinning (two threads each crawl when contended).
        ("GHOST_MODEL__THREADS".to_owned(), "1".to_owned()),
        (
            "GHOST_GATEWAY__TURN_TIMEOUT_SECS".to_owned(),
            "600".to_owned(),
        ),
        (
            "GHOST_STAGE__MODEL_TIMEOUT_SECS".to_owned(),
            "300".to_owned(),
        ),
    ];
    for role in roles {
        let key = role.to_uppercase();
        for (field, value) in [
            ("PROVIDER", "openai".to_owned()),
            ("BASE_URL", format!("http://127.0.0.1:{port}/v1")),
            ("MODEL", NAME.to_owned()),
            ("TIMEOUT_SECS", "300".to_owned()),
        ] {
            vars.push((format!("GHOST_LLM__{key}__{field}"), value));
        }
    }
    vars
}

async fn spawn_with_model(
    roles: &[&str],
    extra: &[(&str, &str)],
    adjust: impl FnOnce(&mut ghost_shared::config::Config),
) -> TestApp {
    let mut vars = embedded_overrides(free_port(), roles);
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
    assert!(
        checks.len() == 1 && checks.iter().all(|c| c.status == Status::Ok),
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

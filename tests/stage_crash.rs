//! A stage killed mid-run resumes from its stream: a `ghost run persona` child aborts at a
//! fault point, a fresh one takes over, and no spoken turn is repeated.

mod support;

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use ghost::stack::ServiceName;
use ghost_shared::events::{stage_stream, StageMemorySaved, StageSpoke};
use ghost_testkit::fake_llm::{FakeLlm, Script};
use ghost_testkit::scenarios::cast_model_overrides;
use ghost_testkit::testing::{eventually, TestEnv};
use serde_json::{json, Value};
use support::{TestApp, TOKEN};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

const CAST: [&str; 4] = ["kuro", "LUMINA", "CLARIS", "NOX"];

fn model(id: &str) -> String {
    format!("{}-model", id.to_lowercase())
}

/// The gateway in-process; the persona will run as child processes.
async fn spawn() -> TestApp {
    let llm = FakeLlm::start().await.expect("fake llm");
    let mut vars = cast_model_overrides(&llm.base_url(), &CAST);
    vars.push(("GHOST_STAGE__AUTO_LOOPS".into(), "3".into()));
    let refs: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let env = TestEnv::new(&llm.base_url(), &refs).await;
    let store = env.store().await;
    let stack = ghost::stack::start_stack(env.config.clone(), &[ServiceName::Gateway])
        .await
        .expect("gateway");
    let base_url = format!("http://{}", stack.gateway_addr().expect("gateway"));
    TestApp {
        env,
        llm,
        stack,
        base_url,
        http: reqwest::Client::new(),
        store,
    }
}

/// Opens a watcher, says `text`, and collects message frames until the run's end.
fn watch_run(app: &TestApp, stage: &str, text: &str) -> tokio::task::JoinHandle<Vec<Value>> {
    let url = format!(
        "{}/api/stage?stage_id={stage}",
        app.base_url.replace("http://", "ws://")
    );
    let text = text.to_owned();
    tokio::spawn(async move {
        let mut request = url.into_client_request().unwrap();
        request
            .headers_mut()
            .insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
        let (mut ws, _) = tokio_tungstenite::connect_async(request).await.unwrap();
        let frame = json!({"type": "user", "text": text}).to_string();
        ws.send(Message::Text(frame.into())).await.unwrap();
        let mut messages = Vec::new();
        let read = async {
            while let Some(Ok(message)) = ws.next().await {
                let Message::Text(t) = message else { continue };
                let f: Value = serde_json::from_str(&t).unwrap();
                if f["type"] == "message" {
                    messages.push(f);
                } else if f["type"] == "status" && f["state"] == "active" {
                    return;
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(60), read)
            .await
            .expect("the run ends");
        messages
    })
}

async fn wait_for_crash(child: &mut tokio::process::Child) {
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("the armed process crashes")
        .unwrap();
    assert!(!status.success(), "the fault point aborted the process");
}

async fn spoken(app: &TestApp, stage: &str) -> Vec<(u32, String)> {
    app.store
        .read_stream(&stage_stream(stage), 0)
        .await
        .unwrap()
        .iter()
        .filter_map(|e| e.decode::<StageSpoke>().ok())
        .map(|s| (s.turn_index, s.speaker))
        .collect()
}

fn speakers(messages: &[Value]) -> Vec<&str> {
    messages
        .iter()
        .map(|m| m["speaker"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn killed_after_a_turn_was_stored_resumes_without_repeating_it() {
    let app = spawn().await;
    app.llm
        .push_for_model(&model("LUMINA"), Script::reply("one [Next: NOX]"));
    app.llm
        .push_for_model(&model("NOX"), Script::reply("two [Next: CLARIS]"));
    app.llm
        .push_for_model(&model("CLARIS"), Script::reply("three [Next: kuro]"));
    // Dies right after the second turn committed, before its message was acked.
    let mut doomed = app.spawn_child("persona", &[("GHOST_FAULTS", "stage.after_append.1")]);
    let watcher = watch_run(&app, "k1", "[Next: LUMINA] start");
    wait_for_crash(&mut doomed).await;
    assert_eq!(
        spoken(&app, "k1").await,
        [(0, "LUMINA".to_owned()), (1, "NOX".to_owned())],
        "two turns were stored before the crash"
    );

    let _successor = app.spawn_child("persona", &[]);
    let messages = watcher.await.unwrap();
    assert_eq!(speakers(&messages), ["LUMINA", "NOX", "CLARIS"]);
    // The redelivered second turn (ack wait 3 s in tests) finds its stored outcome.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        spoken(&app, "k1").await,
        [
            (0, "LUMINA".to_owned()),
            (1, "NOX".to_owned()),
            (2, "CLARIS".to_owned())
        ],
        "no turn spoken twice"
    );
    assert_eq!(app.character_calls(), 3, "each character was asked once");
    let saved = app
        .store
        .read_stream(&stage_stream("k1"), 0)
        .await
        .unwrap()
        .iter()
        .filter(|e| e.is::<StageMemorySaved>())
        .count();
    assert_eq!(saved, 1);
    app.cleanup().await;
}

#[tokio::test]
async fn killed_mid_call_asks_again_and_speaks_once() {
    let app = spawn().await;
    app.llm
        .push_for_model(&model("LUMINA"), Script::reply("lost [Next: NOX]"));
    app.llm
        .push_for_model(&model("LUMINA"), Script::reply("kept [Next: NOX]"));
    app.llm.set_default(Script::reply("fine"));
    let mut doomed = app.spawn_child("persona", &[("GHOST_FAULTS", "stage.before_append")]);
    let watcher = watch_run(&app, "k2", "[Next: LUMINA] start");
    wait_for_crash(&mut doomed).await;
    assert!(spoken(&app, "k2").await.is_empty(), "nothing stored yet");

    let _successor = app.spawn_child("persona", &[]);
    let messages = watcher.await.unwrap();
    assert_eq!(messages[0]["text"], "kept");
    assert_eq!(speakers(&messages), ["LUMINA", "NOX", "kuro"]);
    let stored = eventually(Duration::from_secs(15), "three turns", || async {
        let s = spoken(&app, "k2").await;
        (s.len() == 3).then_some(s)
    })
    .await;
    assert_eq!(
        stored.iter().map(|(i, _)| *i).collect::<Vec<_>>(),
        [0, 1, 2]
    );
    app.cleanup().await;
}

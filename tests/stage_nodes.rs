//! Seed 003's run state and graph nodes over the real NATS and Postgres: the `spoken_set`
//! a run carries from turn to turn, the fallback node a reply without a usable nomination
//! passes, and the status nodes.

mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use ghost::stack::ServiceName;
use ghost_shared::events::{NextSpeakerChosen, StageTurnRequested};
use ghost_testkit::fake_llm::{Failure, FakeLlm, Script};
use ghost_testkit::scenarios::cast_model_overrides;
use ghost_testkit::testing::WORKER_MODEL;
use serde_json::{json, Value};
use support::stage::{connect, frames_until, is_active, send, speakers, stage_events};
use support::TestApp;

const CAST: [&str; 4] = ["kuro", "LUMINA", "CLARIS", "NOX"];

fn model(id: &str) -> String {
    format!("{}-model", id.to_lowercase())
}

/// Every service in-process, each character on its own fake model; `vars` override config.
async fn spawn(vars: &[(&str, &str)]) -> TestApp {
    let llm = FakeLlm::start().await.expect("fake llm");
    let mut all = cast_model_overrides(&llm.base_url(), &CAST);
    all.extend(vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
    let refs: Vec<(&str, &str)> = all.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    llm.set_default_for_model(WORKER_MODEL, Script::reply("A short summary."));
    TestApp::spawn_on(llm, &ServiceName::ALL, &refs, |config| {
        config.ghost.stage.cast = CAST.iter().map(|c| (*c).to_owned()).collect();
    })
    .await
}

/// The run's turn requests in order: (speaker, spoken_set).
async fn requests(app: &TestApp, stage: &str) -> Vec<(String, Vec<String>)> {
    stage_events(app, stage)
        .await
        .iter()
        .filter_map(|e| e.decode::<StageTurnRequested>().ok())
        .map(|r| (r.speaker, r.spoken_set.into_iter().collect()))
        .collect()
}

fn set(ids: &[&str]) -> Vec<String> {
    ids.iter()
        .map(|s| (*s).to_owned())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// Seed 003 §3: each turn request carries who has spoken in the run so far; a character
/// whose model failed has said nothing and is not in it.
#[tokio::test]
async fn each_turn_carries_who_has_spoken_in_the_run() {
    let app = spawn(&[
        ("GHOST_STAGE__AUTO_LOOPS", "4"),
        ("GHOST_STAGE__MODEL_TIMEOUT_SECS", "0.5"),
    ])
    .await;
    let say = |id: &str, s: Script| app.llm.push_for_model(&model(id), s);
    say("LUMINA", Script::reply("星を見よう。[Next: NOX]"));
    say("NOX", Script::failing(Failure::Hang)); // round-robin after NOX: kuro
    say("kuro", Script::reply("Lumina again. [Next: LUMINA]"));
    say("LUMINA", Script::reply("うん。[Next: CLARIS]"));
    let mut ws = connect(&app, "spoken").await;
    send(
        &mut ws,
        json!({"type": "user", "text": "[Next: LUMINA] 夜だね"}),
    )
    .await;
    frames_until(&mut ws, is_active).await;
    assert_eq!(
        requests(&app, "spoken").await,
        [
            ("LUMINA".to_owned(), set(&[])),
            ("NOX".to_owned(), set(&["LUMINA"])),
            ("kuro".to_owned(), set(&["LUMINA"])),
            ("LUMINA".to_owned(), set(&["LUMINA", "kuro"])),
        ]
    );
    app.cleanup().await;
}

/// The spoken set is what the random fallback reads: with no tags at all, a run of as many
/// turns as characters gives each the floor once. Drawn blind, three runs of four would all
/// come out that way only (2/9)³ ≈ 1% of the time.
#[tokio::test]
async fn a_random_fallback_gives_the_floor_to_those_yet_to_speak() {
    let app = spawn(&[
        ("GHOST_STAGE__AUTO_LOOPS", "4"),
        ("GHOST_STAGE__FALLBACK", "random"),
    ])
    .await;
    app.llm.set_default(Script::reply("そうだね。"));
    for stage in ["r1", "r2", "r3"] {
        let mut ws = connect(&app, stage).await;
        send(&mut ws, json!({"type": "user", "text": "話そう"})).await;
        let frames = frames_until(&mut ws, is_active).await;
        let spoke: BTreeSet<String> = speakers(&frames).into_iter().collect();
        assert_eq!(spoke.len(), 4, "{stage}: {:?}", speakers(&frames));
        let reasons: Vec<String> = stage_events(&app, stage)
            .await
            .iter()
            .filter_map(|e| e.decode::<NextSpeakerChosen>().ok())
            .map(|c| c.reason.as_str().to_owned())
            .collect();
        assert_eq!(reasons, ["random"; 4]);
    }
    app.cleanup().await;
}

/// The `stage.node` INFO lines of run `run`, as (turn, node), once `last` was logged.
async fn nodes_of(logs: &support::logs::LogCapture, run: &str, last: &str) -> Vec<(u64, String)> {
    ghost_testkit::testing::eventually(Duration::from_secs(20), last, || async {
        let nodes: Vec<(u64, String)> = logs
            .text()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["target"] == "stage.node" && v["level"] == "INFO")
            .filter(|v| v["fields"]["correlation_id"] == run)
            .filter_map(|v| {
                let f = &v["fields"];
                Some((f["turn"].as_u64()?, f["node"].as_str()?.to_owned()))
            })
            .collect();
        nodes.iter().any(|(_, n)| n == last).then_some(nodes)
    })
    .await
}

/// Seed 003 §5: a reply with no usable tag, or one nominating its own speaker, goes from
/// `extract_next` through `choose_next_fallback`; a usable tag does not. The status updates
/// are nodes too: thinking before the call, idle once the outcome is stored, active once the
/// run's memory is.
#[tokio::test]
async fn a_reply_without_a_usable_nomination_passes_choose_next_fallback() {
    let logs = support::logs::capture();
    let app = spawn(&[("GHOST_STAGE__AUTO_LOOPS", "3")]).await;
    let say = |id: &str, text: &str| app.llm.push_for_model(&model(id), Script::reply(text));
    say("LUMINA", "今日は晴れだね。"); // no tag → round-robin: CLARIS
    say("CLARIS", "私がまた話すわ。[Next: CLARIS]"); // itself → round-robin: NOX
    say("NOX", "そうか。[Next: LUMINA]"); // a tag; the cap ends the run
    let mut ws = connect(&app, "fallback-node").await;
    send(
        &mut ws,
        json!({"type": "user", "text": "[Next: LUMINA] 天気は？"}),
    )
    .await;
    let frames = frames_until(&mut ws, is_active).await;
    assert_eq!(speakers(&frames), ["LUMINA", "CLARIS", "NOX"]);

    let events = stage_events(&app, "fallback-node").await;
    let input = events
        .iter()
        .find(|e| e.event_type == "StageUserInput")
        .expect("the input");
    let run = input.metadata.correlation_id.to_string();
    let nodes = nodes_of(logs, &run, "update_status_active").await;
    let turn = |t: u64| -> Vec<&str> {
        nodes
            .iter()
            .filter(|(n, _)| *n == t)
            .map(|(_, name)| name.as_str())
            .collect()
    };
    let through_fallback = [
        "prepare_context",
        "update_status_thinking",
        "call_llm",
        "postprocess_response",
        "extract_next",
        "choose_next_fallback",
        "end_or_continue",
        "send_message",
        "update_status_idle",
    ];
    assert_eq!(turn(0), through_fallback, "no tag");
    assert_eq!(turn(1), through_fallback, "self-nominated");
    let decided: Vec<&str> = through_fallback
        .into_iter()
        .filter(|n| *n != "choose_next_fallback")
        .collect();
    assert_eq!(turn(2), decided, "a usable tag");
    assert_eq!(turn(3), ["persist_memory", "update_status_active"]);
    app.cleanup().await;
}

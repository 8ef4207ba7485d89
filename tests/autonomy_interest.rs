//! One interest state for conversation and autonomy (issue 34 item 15, seed 001 Phase C):
//! the deliberation reads it decayed like recall and the write plan do, and it changes
//! after a deliberation (its `persona_influence`) and after an `agent_delegate` result,
//! once per cause, merged by the write plan's rule.

mod support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use ghost::stack::ServiceName;
use ghost_shared::autonomy::events::{autonomy_stream, ActionDecided, ActionResultRecorded};
use ghost_shared::bus::EventHandler;
use ghost_shared::config::CliAgentSettings;
use ghost_shared::envelope::{EventPayload, RecordedEvent};
use ghost_shared::events::InterestStateUpdated;
use ghost_shared::projections::MemoryProjection;
use ghost_testkit::fake_llm::{RecordedRequest, Script};
use ghost_testkit::testing::{eventually, WORKER_MODEL};
use ghost_write_plan::attention::Attention;
use ghost_write_plan::writer::MemoryWriter;
use support::autonomy::persona_events;
use support::plans::{plan_input, planned, second_planner, spawn_with_planner, write_plan};
use support::{TestApp, NEUTRAL_AFFECT};

const WAIT: Duration = Duration::from_secs(30);

/// Whether `r` asks for a deliberation.
fn deliberation(r: &RecordedRequest) -> bool {
    r.last_user_text()
        .is_some_and(|t| t.contains("deliberation_input"))
}

/// The fake worker: plans attend to tea (0.6), deliberations answer `decision`.
fn answer(r: &RecordedRequest, decision: &str) -> Script {
    if plan_input(r).is_some() {
        return Script::reply(&write_plan(json!([]), json!([]), "tea", "observe").to_string());
    }
    match r.model.as_deref() {
        Some(WORKER_MODEL) if deliberation(r) => Script::reply(decision),
        Some(WORKER_MODEL) => Script::reply(NEUTRAL_AFFECT),
        _ => Script::reply("ok"),
    }
}

fn seconds(e: &RecordedEvent) -> f64 {
    e.recorded_at.timestamp_micros() as f64 / 1e6
}

/// The deliberation reads the interest state as recall and the write plan do: each weight
/// decayed from the state's `updated_at` to the tick's time (a short τ makes a second
/// visible).
#[tokio::test]
async fn the_deliberation_reads_the_interest_state_decayed() {
    let tau = 20.0;
    let app = spawn_with_planner(&[
        ("GHOST_AUTONOMY__INTERVAL_SECS", "0"),
        ("GHOST_MEMORY__INTEREST_TAU_SECS", "20"),
    ])
    .await;
    let skip = r#"{"decision": "skip", "reason": "今は待つ"}"#;
    app.llm.set_responder(move |r| answer(r, skip));
    planned(&app, "decay", "お茶が好き", 1).await;
    let stored = MemoryProjection::load(app.store.pool(), "kuro")
        .await
        .unwrap()
        .interest
        .expect("the interest state");
    tokio::time::sleep(Duration::from_millis(1200)).await;
    app.tick().await;
    let input = eventually(WAIT, "the deliberation", || async {
        app.llm
            .requests()
            .iter()
            .filter(|r| deliberation(r))
            .find_map(|r| serde_json::from_str::<Value>(&r.last_user_text()?).ok())
    })
    .await;
    let tick = app
        .store
        .read_stream(&autonomy_stream("kuro"), 0)
        .await
        .unwrap()
        .into_iter()
        .next()
        .expect("the tick");
    let expected = 0.6 * (-(seconds(&tick) - stored.updated_at) / tau).exp();
    let target = &input["deliberation_input"]["attention_targets"][0];
    assert_eq!(target["value"], "tea");
    let weight = target["weight"].as_f64().unwrap();
    assert!(weight < 0.58, "decayed over a second: {weight}");
    assert!((weight - expected).abs() < 1e-9, "{weight} vs {expected}");
    app.cleanup().await;
}

/// A command-line agent printing one line.
fn agent() -> (CliAgentSettings, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("ghost-agent-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let agent = CliAgentSettings {
        program: "/bin/sh".into(),
        // The agent answers in JSON and says what its result is about.
        args: vec![
            "-c".into(),
            r#"echo '{"output": "sorted", "interest": {"topic": "archive"}}'"#.into(),
        ],
        working_dir: Some(dir.clone()),
        timeout_secs: 30,
        max_output_bytes: 4096,
    };
    (agent, dir)
}

/// The autonomy stream's event of type `T`.
async fn autonomy_event<T: EventPayload>(app: &TestApp) -> RecordedEvent {
    eventually(WAIT, T::EVENT_TYPE, || async {
        app.store
            .read_stream(&autonomy_stream("kuro"), 0)
            .await
            .ok()?
            .into_iter()
            .find(|e| e.event_type == T::EVENT_TYPE)
    })
    .await
}

/// A decision naming what the persona attends to (`persona_influence`, and its mood's pull,
/// `mood_influence`) and delegating a job: the decision merges both topics and the persona's
/// mode into the interest state; the job's result names them again at its own time and adds
/// what the result itself is about (the agent's JSON `interest`). Each cause once:
/// redelivered, nothing is appended; a rebuild of `memory` gives the same rows.
#[tokio::test]
async fn a_deliberation_and_an_agent_s_result_change_the_interest_state_once() {
    let (agent, dir) = agent();
    let mut services = ServiceName::ALL.to_vec();
    services.push(ServiceName::WritePlan);
    let app = TestApp::spawn_adjusted(
        &services,
        &[("GHOST_AUTONOMY__INTERVAL_SECS", "0")],
        move |c| c.ghost.autonomy.cli_agent = Some(agent),
    )
    .await;
    let delegate = json!({
        "decision": "do_action", "action_type": "tidy", "capability": "agent_delegate",
        "input": {"task": "メモを整理"}, "reason": "散らかっていた",
        "persona_influence": {"topic": "notes", "interaction_mode": "support", "why": "片付けたい"},
        "mood_influence": {"topic": "quiet", "interaction_mode": "wait"},
        "console_delivery": {"mode": "activity_only", "message_kind": "report"}
    })
    .to_string();
    app.llm.set_responder(move |r| answer(r, &delegate));
    planned(&app, "interest", "お茶が好き", 1).await;
    app.tick().await;
    let decided = autonomy_event::<ActionDecided>(&app).await;
    let result = autonomy_event::<ActionResultRecorded>(&app).await;
    eventually(WAIT, "both updates", || async {
        (persona_events(&app, InterestStateUpdated::EVENT_TYPE).await == 3).then_some(())
    })
    .await;
    let interest = || async {
        MemoryProjection::load(app.store.pool(), "kuro")
            .await
            .unwrap()
            .interest
            .unwrap()
    };
    // Two consumers: either update may come first.
    let now = eventually(WAIT, "both updates projected", || async {
        let i = interest().await;
        let sources = &i.updated_from_event_ids;
        (sources.contains(&decided.event_id) && sources.contains(&result.event_id)).then_some(i)
    })
    .await;
    assert_eq!(
        now.updated_from_event_ids.len(),
        3,
        "the reply, the decision, the result"
    );
    assert_eq!(now.interaction_mode.as_str(), "support");
    assert_eq!(now.updated_at, seconds(&result));
    let notes = now
        .attention_targets
        .iter()
        .find(|t| t.value == "notes")
        .expect("the decision's topic");
    assert_eq!(notes.weight, 0.6, "named again when the result came in");
    assert!(now.attention_targets.iter().any(|t| t.value == "tea"));
    // The mood's pull and the result's own content are attended to as well; the persona's
    // mode (support) wins over the mood's (wait).
    for value in ["quiet", "archive"] {
        assert!(
            now.attention_targets.iter().any(|t| t.value == value),
            "{value}: {:?}",
            now.attention_targets
        );
    }
    let updates = app
        .store
        .read_stream(&ghost_shared::events::persona_stream("kuro"), 0)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.event_type == InterestStateUpdated::EVENT_TYPE)
        .filter_map(|e| e.decode::<InterestStateUpdated>().ok())
        .collect::<Vec<_>>();
    let by_decision = updates
        .iter()
        .find(|u| u.source_event_id == decided.event_id)
        .expect("the decision's update");
    let named = |u: &InterestStateUpdated, value: &str| {
        u.interest
            .attention_targets
            .iter()
            .any(|t| t.value == value)
    };
    assert!(named(by_decision, "quiet") && !named(by_decision, "archive"));
    assert_eq!(by_decision.interest.interaction_mode.as_str(), "support");

    // Redelivered to another instance: nothing appended, nothing changed.
    let (_, runner) = second_planner(&app);
    let ctx = app.stack.ctx.for_service("write-plan");
    let again = Attention::new(ctx.clone(), Arc::new(MemoryWriter::new(ctx, runner)));
    let (events, rows) = (
        app.event_count().await,
        MemoryProjection::dump(app.store.pool()).await.unwrap(),
    );
    for e in [&decided, &result, &decided] {
        again.handle(e.clone()).await.unwrap();
    }
    assert_eq!(app.event_count().await, events);
    assert_eq!(
        MemoryProjection::dump(app.store.pool()).await.unwrap(),
        rows
    );

    // Rebuilt from zero by the command: the same rows.
    app.run_ghost_command(&["projections", "rebuild", "memory"], &[])
        .await;
    assert_eq!(
        MemoryProjection::dump(app.store.pool()).await.unwrap(),
        rows
    );
    std::fs::remove_dir_all(&dir).ok();
    app.cleanup().await;
}

//! `agent_delegate` with a real child process as the command-line agent: its stdout is kept
//! in `details.raw_output_text`, its exit status recorded, a timeout kills it (and what it
//! started), and a redelivered decision does not run the command twice.

use std::path::PathBuf;

use serde_json::{json, Value};
use uuid::Uuid;

use ghost_shared::autonomy::decision::validate_decision;
use ghost_shared::autonomy::events::{
    autonomy_stream, steps, ActionDecided, ActionResultRecorded, ActionStarted,
};
use ghost_shared::autonomy::result::ResultStatus;
use ghost_shared::bus::EventHandler;
use ghost_shared::config::{CliAgentSettings, WebSettings};
use ghost_shared::envelope::{EventMetadata, EventPayload, NewEvent, RecordedEvent};
use ghost_shared::ids::derive_event_id;
use ghost_shared::store::ExpectedVersion;
use ghost_shared::web::WebClient;
use ghost_testkit::testing::TestEnv;
use ghost_worker::autonomy::act::Actor;
use ghost_worker::autonomy::agent::run_cli_agent;
use ghost_worker::autonomy::capabilities::Capabilities;

/// A scratch directory with an agent script that counts its runs in `runs`.
struct AgentDir(PathBuf);

impl AgentDir {
    fn new(script: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("ghost-agent-{}", Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("agent.sh"), script).unwrap();
        Self(dir)
    }

    fn settings(&self, timeout_secs: u64) -> CliAgentSettings {
        CliAgentSettings {
            program: "/bin/sh".into(),
            args: vec!["agent.sh".into(), "{task}".into()],
            working_dir: Some(self.0.clone()),
            timeout_secs,
            max_output_bytes: 64 * 1024,
        }
    }

    fn runs(&self) -> usize {
        std::fs::read_to_string(self.0.join("runs"))
            .map(|s| s.lines().count())
            .unwrap_or(0)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for AgentDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const COUNTING_AGENT: &str = "echo run >> runs\nread -r line\necho \"stdin: $line\"\necho \"sorted notes for: $1\"\nexit 3\n";

#[tokio::test]
async fn stdout_is_kept_and_the_exit_status_recorded() {
    let dir = AgentDir::new(COUNTING_AGENT);
    let result = run_cli_agent(&dir.settings(30), "今日のメモを整理", Uuid::new_v4()).await;
    assert_eq!(dir.runs(), 1);
    assert_eq!(result.result_status, ResultStatus::Failed);
    assert_eq!(result.result_payload["exit_code"], json!(3));
    assert_eq!(result.result_payload["timed_out"], json!(false));
    assert_eq!(
        result.details["raw_output_text"],
        json!("stdin: 今日のメモを整理\nsorted notes for: 今日のメモを整理\n")
    );
    assert!(result
        .summary_text
        .starts_with("cli_agent exited with status 3"));
}

fn alive(pid: &str) -> bool {
    // A killed and reaped process has no /proc entry; a zombie would say so in its status.
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map(|s| !s.contains("State:\tZ"))
        .unwrap_or(false)
}

/// Whether `pid` is gone within a few seconds. SIGKILL is delivered when the process is next
/// scheduled, so on a busy machine a killed process can still show as running for a moment;
/// one that was never sent the signal would still be sleeping out its 300 s.
async fn dies_soon(pid: &str) -> bool {
    for _ in 0..100 {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test]
async fn a_timeout_kills_the_agent_and_what_it_started() {
    // The agent starts a child of its own that would outlive it, then hangs.
    let dir = AgentDir::new(
        "sleep 300 &\necho $! > child.pid\necho $$ > agent.pid\necho working\nsleep 300\n",
    );
    let result = run_cli_agent(&dir.settings(1), "hang", Uuid::new_v4()).await;
    assert_eq!(result.result_status, ResultStatus::Timeout);
    assert_eq!(result.result_payload["killed"], json!(true));
    assert_eq!(
        result.result_payload["exit_code"],
        Value::Null,
        "killed by a signal"
    );
    assert_eq!(result.details["raw_output_text"], json!("working\n"));
    for file in ["agent.pid", "child.pid"] {
        let pid = std::fs::read_to_string(dir.path(file)).unwrap();
        assert!(dies_soon(pid.trim()).await, "{file} {pid} still running");
    }
}

#[tokio::test]
async fn a_missing_program_is_a_failed_result() {
    let settings = CliAgentSettings {
        program: "/nonexistent/agent".into(),
        args: vec![],
        working_dir: None,
        timeout_secs: 5,
        max_output_bytes: 1024,
    };
    let result = run_cli_agent(&settings, "x", Uuid::new_v4()).await;
    assert_eq!(result.result_status, ResultStatus::Failed);
    assert!(result.summary_text.contains("could not start"));
}

async fn decided_event(log: &ghost_shared::event_log::EventLog) -> RecordedEvent {
    let decision = validate_decision(&json!({
        "decision": "do_action", "action_type": "agent_delegate", "capability": "agent_delegate",
        "input": {"task": "今日のメモを整理"}, "reason": "散らかっていると言っていた",
        "persona_influence": {}, "mood_influence": {},
        "console_delivery": {"mode": "notify", "message_kind": "report"}
    }))
    .unwrap();
    let id = Uuid::new_v4();
    let event = NewEvent::new(
        id,
        &ActionDecided {
            persona: "kuro".into(),
            tick_event_id: Uuid::new_v4(),
            decision,
        },
        EventMetadata {
            correlation_id: id,
            causation_id: None,
            traceparent: None,
            tracestate: None,
            service: "test".into(),
        },
    )
    .unwrap();
    log.append(&autonomy_stream("kuro"), ExpectedVersion::Any, &[event])
        .await
        .unwrap()
        .events
        .remove(0)
}

async fn count(env_store: &ghost_shared::store::EventStore, event_type: &str) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM events WHERE event_type = $1")
        .bind(event_type)
        .fetch_one(env_store.pool())
        .await
        .unwrap()
}

fn actor(ctx: ghost_shared::service::ServiceContext, dir: &AgentDir) -> Actor {
    let web = WebClient::new(WebSettings::default()).unwrap();
    Actor::new(ctx, Capabilities::new(web, Some(dir.settings(30))))
}

#[tokio::test]
async fn a_redelivered_decision_runs_the_command_once() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let ctx = env.context("worker").await.unwrap();
    let dir = AgentDir::new(COUNTING_AGENT);
    let actor = actor(ctx.clone(), &dir);
    let decided = decided_event(&ctx.log).await;
    actor.handle(decided.clone()).await.unwrap();
    actor.handle(decided.clone()).await.unwrap();
    assert_eq!(dir.runs(), 1);
    let store = env.store().await;
    assert_eq!(count(&store, ActionStarted::EVENT_TYPE).await, 1);
    assert_eq!(count(&store, ActionResultRecorded::EVENT_TYPE).await, 1);
    let result = store
        .get(derive_event_id(decided.event_id, steps::RESULT))
        .await
        .unwrap()
        .unwrap()
        .decode::<ActionResultRecorded>()
        .unwrap();
    assert_eq!(result.result.result_payload["exit_code"], json!(3));
    assert!(result.result.details["raw_output_text"]
        .as_str()
        .unwrap()
        .contains("sorted notes for: 今日のメモを整理"));
    assert_eq!(
        result.agent_job,
        Some(
            json!({"backend": "cli_agent", "job_id": derive_event_id(decided.event_id, steps::STARTED)})
        )
    );
    env.cleanup().await;
}

#[tokio::test]
async fn a_run_interrupted_before_its_result_is_not_run_again() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let ctx = env.context("worker").await.unwrap();
    let dir = AgentDir::new(COUNTING_AGENT);
    let decided = decided_event(&ctx.log).await;
    // An earlier delivery claimed the run and died before recording a result.
    let started = NewEvent::caused_by(
        &decided,
        steps::STARTED,
        &ActionStarted {
            persona: "kuro".into(),
            decision_event_id: decided.event_id,
            capability: "agent_delegate".into(),
        },
        "worker",
    )
    .unwrap();
    ctx.log
        .append(&decided.stream, ExpectedVersion::Any, &[started])
        .await
        .unwrap();
    actor(ctx.clone(), &dir)
        .handle(decided.clone())
        .await
        .unwrap();
    assert_eq!(dir.runs(), 0);
    let result = env
        .store()
        .await
        .get(derive_event_id(decided.event_id, steps::RESULT))
        .await
        .unwrap()
        .unwrap()
        .decode::<ActionResultRecorded>()
        .unwrap();
    assert_eq!(result.result.result_status, ResultStatus::Failed);
    assert!(result.result.summary_text.starts_with("interrupted"));
    env.cleanup().await;
}

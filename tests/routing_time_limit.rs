//! The time limit stops work and the user hears what was done (seed 002): `loop.max_seconds`
//! cuts the running worker call, and the persona reports the work so far and the input it
//! needs instead of the watchdog's canned notice. A configuration whose loops and reply
//! cannot end before the watchdog is refused at start.

mod routing_support;
mod support;

use std::time::Duration;

use ghost_shared::envelope::EventPayload;
use ghost_shared::events::{LoopDecided, RenderRequested, WorkerFailed, TIME_LIMIT};
use ghost_testkit::fake_llm::Script;
use ghost_testkit::testing::TestEnv;
use routing_support::{kind, payload, Kind, RoutingApp, Scripts, CONTRACT_OK, PERSONA_REPLY};

/// `config/routing.yaml` with `loop.max_seconds` set to `secs`, in a file of its own
/// (removed when dropped, also when the test fails).
struct RoutingFile(std::path::PathBuf);

impl RoutingFile {
    fn with_max_seconds(secs: u64) -> Self {
        let yaml = std::fs::read_to_string("config/routing.yaml").expect("routing.yaml");
        let changed = yaml.replace("max_seconds: 120", &format!("max_seconds: {secs}"));
        assert_ne!(changed, yaml, "routing.yaml names max_seconds: 120");
        let path = std::env::temp_dir().join(format!("routing-{}.yaml", uuid::Uuid::new_v4()));
        std::fs::write(&path, changed).expect("write the routing file");
        Self(path)
    }
}

impl Drop for RoutingFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[tokio::test]
async fn a_run_cut_at_the_time_limit_is_reported_with_the_work_so_far() {
    let routing = RoutingFile::with_max_seconds(2);
    let file = routing.0.display().to_string();
    let r = RoutingApp::spawn(Scripts::default(), &[("GHOST_ROUTING__RULES_FILE", &file)]).await;
    // The first run wants another; the second would take longer than the message has.
    r.app.llm.set_responder(|q| match kind(q) {
        Kind::Work if q.last_user_text().unwrap_or_default().contains("[previous run's result]") => {
            Script::reply(CONTRACT_OK).with_delay(Duration::from_secs(4))
        }
        Kind::Work => Script::reply(
            r#"{"result":"outline done","needs_next_loop":true,"why":"details left","next_actions":["detail it"],"questions_for_user":[],"confidence":0.9,"risk":"low"}"#,
        ),
        Kind::Reflect => Script::reply(support::NEUTRAL_AFFECT),
        _ => Script::reply(PERSONA_REPLY),
    });

    let reply = r.say("slow", "/plan a long plan").await;
    assert_eq!(
        reply,
        format!("段取りを組むね。\n{PERSONA_REPLY}"),
        "the persona answered"
    );
    let failed = payload(&r.of_type("slow", WorkerFailed::EVENT_TYPE).await);
    assert_eq!(failed["code"], TIME_LIMIT, "{failed}");
    let decisions: Vec<String> = r
        .of_type("slow", LoopDecided::EVENT_TYPE)
        .await
        .iter()
        .map(|e| {
            e.payload["decision"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    assert_eq!(decisions, ["another_loop", "limit_reached"]);
    let render = payload(&r.of_type("slow", RenderRequested::EVENT_TYPE).await);
    assert_eq!(render["work_result"]["status"], "limit_reached");
    assert_eq!(
        render["work_result"]["result"], "outline done",
        "the work so far"
    );
    let prompt = r.last_prompt(Kind::Persona);
    assert!(prompt.contains("what input is needed"), "{prompt}");
    assert!(
        r.of_type("slow", "TurnTimedOut").await.is_empty(),
        "no watchdog notice"
    );
    r.cleanup().await;
}

#[tokio::test]
async fn loops_and_a_reply_longer_than_the_watchdog_are_refused_at_start() {
    let llm = ghost_testkit::fake_llm::FakeLlm::start().await.unwrap();
    let env = TestEnv::new(
        &llm.base_url(),
        &[
            // 3 loops x 5 s + a 5 s reply = 20 s, under a 19 s watchdog.
            ("GHOST_ROUTING__TURN_TIMEOUT_SECS", "19"),
        ],
    )
    .await;
    let ctx = env.context("router").await.expect("context");
    let refused = ghost_router::start(ctx).await.expect_err("refused");
    let message = refused.to_string();
    for named in [
        "loop.max_loops",
        "routing.turn_timeout_secs",
        "llm.persona.timeout_secs",
        "at least 20",
    ] {
        assert!(message.contains(named), "{message}");
    }
    env.cleanup().await;
    llm.shutdown().await;
}

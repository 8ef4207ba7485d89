//! LINE's entry as the 2026-02-20 update fixes it (seed 002), end to end: a signed webhook,
//! Kuro (the conversation model) decides to delegate, the gates apply as for any entry, and
//! the reply goes out once, also when LINE redelivers the event.

mod routing_support;
mod support;

use std::time::Duration;

use ghost_shared::envelope::EventPayload;
use ghost_shared::events::RouteDecided;
use ghost_testkit::fake_platforms::FakeLine;
use ghost_testkit::testing::eventually;
use routing_support::{payload, Kind, RoutingApp, Scripts, PERSONA_REPLY};
use support::platforms::{line_sign, line_text, LINE_SECRET};

const CODE_TEXT: &str = "これ直して\n```python\nprint(1/0)\n```";
const CODE_DECISION: &str =
    r#"{"route":"CODE","confidence":0.97,"reason":"コードの修正","evidence":["```python"]}"#;

async fn post(r: &RoutingApp, body: &str) -> u16 {
    r.app
        .http
        .post(format!("{}/webhooks/line", r.app.base_url))
        .header("content-type", "application/json")
        .header("x-line-signature", line_sign(body))
        .body(body.to_owned())
        .send()
        .await
        .expect("webhook")
        .status()
        .as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn line_enters_through_kuro_who_delegates_under_the_gates_and_replies_once() {
    let line = FakeLine::start().await.expect("fake line");
    let base = line.base_url();
    let mut scripts = Scripts::default();
    scripts.kuro.insert(CODE_TEXT.into(), CODE_DECISION.into());
    // No ENTRY_MODES__LINE here beyond the shipped default: the test app's plumbing default
    // (router) is put back to what config/ghost.yaml ships.
    let shipped = ghost_shared::config::Config::load(
        &ghost_testkit::testing::repo_config_dir(),
        Vec::<(String, String)>::new(),
    )
    .expect("config");
    let mode = shipped.ghost.routing.entry_modes["line"].clone();
    assert_eq!(mode, "kuro", "LINE enters through Kuro by default");
    let r = RoutingApp::spawn(
        scripts,
        &[
            ("GHOST_LINE_CHANNEL_SECRET", LINE_SECRET),
            ("GHOST_LINE_CHANNEL_ACCESS_TOKEN", "line-access-token"),
            ("GHOST_LINE__API_BASE", &base),
            ("GHOST_LINE__DATA_API_BASE", &base),
            ("GHOST_LINE__RETRY_BASE_DELAY_MS", "20"),
            ("GHOST_ROUTING__ENTRY_MODES__LINE", &mode),
        ],
    )
    .await;

    let body = line_text("ev-k1", "UK1", CODE_TEXT, "rt-k1", false);
    assert_eq!(post(&r, &body).await, 200);
    let delivered = eventually(Duration::from_secs(30), "the LINE reply", || async {
        let d = line.deliveries();
        (!d.is_empty()).then_some(d)
    })
    .await;
    assert_eq!(
        delivered[0].texts.concat(),
        format!("コーディングするね。\n{PERSONA_REPLY}")
    );
    let decided = payload(&r.of_type("line:user:UK1", RouteDecided::EVENT_TYPE).await);
    assert_eq!(decided["route"], "CODE");
    assert_eq!(decided["source"], "kuro");
    assert_eq!(decided["entry"], "line_forced_chat");
    assert_eq!(r.requests(Kind::Kuro).len(), 1, "Kuro decided");
    assert_eq!(r.requests(Kind::Classifier).len(), 0, "no front router");
    assert_eq!(
        r.cloud.request_count(),
        1,
        "the code went to the cloud once"
    );

    // LINE redelivers the event: nothing runs or is sent again.
    let again = line_text("ev-k1", "UK1", CODE_TEXT, "rt-k1", true);
    assert_eq!(post(&r, &again).await, 200);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(line.deliveries().len(), 1, "one reply");
    assert_eq!(r.cloud.request_count(), 1);
    assert_eq!(r.requests(Kind::Kuro).len(), 1);

    // The gates hold for Kuro's delegation: after /local the same delegation stays local.
    let local = line_text("ev-k2", "UK2", "/local", "rt-k2", false);
    assert_eq!(post(&r, &local).await, 200);
    eventually(Duration::from_secs(30), "the /local notice", || async {
        (line.deliveries().len() >= 2).then_some(())
    })
    .await;
    let code = line_text("ev-k3", "UK2", CODE_TEXT, "rt-k3", false);
    assert_eq!(post(&r, &code).await, 200);
    let delivered = eventually(
        Duration::from_secs(30),
        "the reply after /local",
        || async {
            let d = line.deliveries();
            (d.len() >= 3).then_some(d)
        },
    )
    .await;
    let decided = payload(&r.of_type("line:user:UK2", RouteDecided::EVENT_TYPE).await);
    assert_eq!(decided["source"], "kuro");
    assert_eq!(decided["local_only"], true);
    assert_ne!(decided["route"], "CODE", "{decided}");
    assert_eq!(r.cloud.request_count(), 1, "nothing more reached the cloud");
    assert!(!delivered[2].texts.concat().is_empty());
    r.cleanup().await;
}

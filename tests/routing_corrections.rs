//! The user's negation (seed 002: the strongest misclassification signal), end to end over
//! NATS and Postgres with the fake model: a rejection right after a routed answer, read by
//! the classifier as a structured field, routes the message by the correction and marks the
//! previous route as misclassified; so does an explicit command. `ghost route-report` lists
//! them.

mod routing_support;
mod support;

use std::time::Duration;

use ghost_shared::envelope::EventPayload;
use ghost_shared::events::{RouteDecided, WorkRequested};
use ghost_testkit::testing::eventually;
use routing_support::{payload, Kind, RoutingApp, Scripts, PERSONA_REPLY};

const CODE_REQUEST: &str =
    "```rust\nfn main() { let v: Vec<i32> = vec![]; v[0]; }\n```\nこれ直して";
const NEGATION: &str = "違う、コードじゃなくて相談したいだけ";
const NEGATION_REPLY: &str = r#"{"route":"CHAT","confidence":0.9,"reason":"the user only wants to talk","evidence":["相談したいだけ"],"corrects_previous":true}"#;
const VAGUE: &str = "ちょっと手伝ってほしい";
const VAGUE_REPLY: &str =
    r#"{"route":"PLAN","confidence":0.8,"reason":"help","evidence":["手伝って"]}"#;

#[tokio::test]
async fn a_negation_after_a_code_answer_reroutes_to_chat_and_is_logged() {
    let mut scripts = Scripts::default();
    scripts
        .classifier
        .insert(NEGATION.to_owned(), NEGATION_REPLY.to_owned());
    scripts
        .classifier
        .insert(VAGUE.to_owned(), VAGUE_REPLY.to_owned());
    let r = RoutingApp::spawn(scripts, &[]).await;

    // A CODE answer (by the dictionary), then the user's negation.
    let first = r.say("neg", CODE_REQUEST).await;
    assert_eq!(first, format!("コーディングするね。\n{PERSONA_REPLY}"));
    let reply = r.say("neg", NEGATION).await;
    assert_eq!(reply, PERSONA_REPLY, "CHAT: no declaration, no work");
    let decided = r.of_type("neg", RouteDecided::EVENT_TYPE).await;
    let second: RouteDecided = decided[1].decode().unwrap();
    assert_eq!(second.route.as_str(), "CHAT");
    let corrects = second
        .corrects
        .expect("the CODE route is marked misclassified");
    assert_eq!(
        corrects.user_event_id,
        decided[0].decode::<RouteDecided>().unwrap().user_event_id
    );
    assert_eq!(
        (corrects.route.as_str(), corrects.signal.as_str()),
        ("CODE", "negation")
    );
    assert_eq!(corrects.source.as_str(), "rule");
    assert_eq!(r.of_type("neg", WorkRequested::EVENT_TYPE).await.len(), 1);
    assert_eq!(
        r.cloud.request_count(),
        1,
        "the negation went nowhere near the cloud"
    );
    // The classifier was told which route the previous answer took.
    let asked = r
        .requests(Kind::Classifier)
        .into_iter()
        .find(|q| routing_support::routed_text(q) == NEGATION)
        .and_then(|q| q.last_user_text())
        .unwrap();
    assert!(asked.contains("answered on route CODE"), "{asked}");

    // An explicit command right after a classifier-routed answer is a correction too.
    r.say("cmd", VAGUE).await;
    r.say("cmd", "/chat 雑談でいいよ").await;
    let corrected: RouteDecided = r
        .of_type("cmd", RouteDecided::EVENT_TYPE)
        .await
        .last()
        .unwrap()
        .decode()
        .unwrap();
    let c = corrected.corrects.expect("PLAN marked misclassified");
    assert_eq!((c.route.as_str(), c.signal.as_str()), ("PLAN", "explicit"));

    // Not a correction: the same route again, or a command after the user's own command.
    r.say("same", CODE_REQUEST).await;
    r.say("same", "/code もう一度").await;
    r.say("own", "/plan 引っ越し").await;
    r.say("own", "/chat やっぱり雑談").await;
    for session in ["same", "own"] {
        let last = payload(&r.of_type(session, RouteDecided::EVENT_TYPE).await);
        assert!(last.get("corrects").is_none(), "{session}: {last}");
    }

    // The routing log holds both routes; the report lists them for the dictionary.
    let pool = r.app.store.pool().clone();
    let report = eventually(
        Duration::from_secs(30),
        "two corrections in the log",
        || {
            let pool = pool.clone();
            async move {
                let report = ghost::route_report::report(&pool, 50).await.ok()?;
                (report.total == 2).then_some(report)
            }
        },
    )
    .await;
    assert_eq!(report.by_pair.get("CODE->CHAT"), Some(&1));
    assert_eq!(report.by_pair.get("PLAN->CHAT"), Some(&1));
    let negation = report
        .items
        .iter()
        .find(|m| m.signal == "negation")
        .unwrap();
    assert!(negation
        .input_masked
        .as_deref()
        .unwrap_or_default()
        .contains("これ直して"));
    assert_eq!(negation.correction_masked.as_deref(), Some(NEGATION));
    assert_eq!(negation.misrouted_source.as_deref(), Some("rule"));
    let explicit = report
        .items
        .iter()
        .find(|m| m.signal == "explicit")
        .unwrap();
    assert_eq!(explicit.misrouted_source.as_deref(), Some("classifier"));
    assert_eq!(explicit.classifier_confidence, Some(0.8));
    r.cleanup().await;
}

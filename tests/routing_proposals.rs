//! The persona's proposal before a reply (seed 002), end to end over NATS and Postgres with
//! the fake model: the persona judges a finished work result and may propose continue,
//! stop, confirm or reroute; the router validates the proposal like the classifier's output
//! and decides within its limits; an invalid proposal is ignored and logged.

mod routing_support;
mod support;

use std::time::Duration;

use ghost_router::projections::RoutingLog;
use ghost_shared::bus::EventHandler;
use ghost_shared::envelope::EventPayload;
use ghost_shared::events::{
    JudgeRequested, LoopDecided, PersonaProposed, RenderRequested, WorkRequested,
};
use ghost_testkit::testing::eventually;
use routing_support::{payload, Kind, RoutingApp, Scripts, PERSONA_REPLY};
use serde_json::json;

const CONTINUE: &str =
    r#"{"goal_reached":false,"proposal":"continue","reason":"only half of the steps are listed"}"#;
const REROUTE: &str =
    r#"{"goal_reached":false,"proposal":"reroute","route":"RESEARCH","reason":"needs sources"}"#;
const CONFIRM: &str = r#"{"goal_reached":false,"proposal":"confirm","reason":"which city?"}"#;
const REROUTE_TO_CODE: &str =
    r#"{"goal_reached":false,"proposal":"reroute","route":"CODE","reason":"write it"}"#;
const INVALID: &str = "Sure, let's continue!";

fn decisions(events: &[ghost_shared::envelope::RecordedEvent]) -> Vec<(String, Option<String>)> {
    events
        .iter()
        .filter_map(|e| e.decode::<LoopDecided>().ok())
        .map(|l| (l.decision, l.persona_proposal))
        .collect()
}

#[tokio::test]
async fn the_persona_proposes_and_the_loop_controller_decides() {
    let mut scripts = Scripts::default();
    for (text, proposal) in [
        ("/plan move-continue", CONTINUE),
        ("/plan move-reroute", REROUTE),
        ("/plan move-confirm", CONFIRM),
        ("/plan move-code", REROUTE_TO_CODE),
        ("/plan move-invalid", INVALID),
    ] {
        scripts
            .proposal
            .insert(text.to_owned(), proposal.to_owned());
    }
    let r = RoutingApp::spawn(scripts, &[]).await;

    // continue: one more run on the same route, with the persona's reason in its task;
    // the persona judges once per message, so the second result is replied to.
    let reply = r.say("continue", "/plan move-continue").await;
    assert_eq!(reply, format!("段取りを組むね。\n{PERSONA_REPLY}"));
    let works = r.of_type("continue", WorkRequested::EVENT_TYPE).await;
    assert_eq!(works.len(), 2);
    assert_eq!(works[1].payload["route"], "PLAN");
    assert!(works[1].payload["task"]
        .as_str()
        .unwrap_or_default()
        .contains("only half of the steps are listed"));
    assert_eq!(
        r.of_type("continue", PersonaProposed::EVENT_TYPE)
            .await
            .len(),
        1
    );
    let events = r.app.session_events("continue").await;
    assert_eq!(
        decisions(&events),
        [
            ("render".into(), None),
            (
                "another_loop".into(),
                Some("continue: only half of the steps are listed".into())
            ),
            ("render".into(), None),
        ]
    );
    // The first result was judged (its own request type), the second replied to.
    let judged = r.of_type("continue", JudgeRequested::EVENT_TYPE).await;
    assert_eq!(judged.len(), 1, "judged, not replied to");
    assert_eq!(judged[0].payload["work_result"]["status"], "done");
    let proposal = &r.of_type("continue", PersonaProposed::EVENT_TYPE).await[0];
    assert_eq!(
        proposal.payload["render_event_id"],
        json!(judged[0].event_id)
    );
    let renders = r.of_type("continue", RenderRequested::EVENT_TYPE).await;
    assert_eq!(renders.len(), 1);
    assert_eq!(payload(&renders)["work_result"]["status"], "done");
    let replies = r.of_type("continue", "AssistantReplied").await;
    assert_eq!(replies.len(), 1, "one reply, after the second run");

    // The judge request redelivered (to a second persona): judged once, nothing appended,
    // the model not asked again.
    let asked = r.requests(Kind::Proposal).len();
    let stored = r.app.session_events("continue").await.len();
    let persona =
        ghost_persona::Renderer::new(r.app.env.context("persona").await.expect("persona context"))
            .expect("renderer");
    for _ in 0..2 {
        persona
            .handle(judged[0].clone())
            .await
            .expect("a redelivered judge request");
    }
    assert_eq!(r.requests(Kind::Proposal).len(), asked);
    assert_eq!(r.app.session_events("continue").await.len(), stored);

    // reroute: once, to the proposed route.
    r.say("reroute", "/plan move-reroute").await;
    let works = r.of_type("reroute", WorkRequested::EVENT_TYPE).await;
    let routes: Vec<(&str, bool)> = works
        .iter()
        .map(|w| {
            (
                w.payload["route"].as_str().unwrap_or_default(),
                w.payload["reroute"].as_bool().unwrap_or(false),
            )
        })
        .collect();
    assert_eq!(routes, [("PLAN", false), ("RESEARCH", true)]);
    let proposed = r.app.session_events("reroute").await;
    assert_eq!(
        decisions(&proposed)[1],
        (
            "reroute".into(),
            Some("reroute RESEARCH: needs sources".into())
        )
    );

    // confirm: the user is asked before going on.
    r.say("confirm", "/plan move-confirm").await;
    assert_eq!(
        r.of_type("confirm", WorkRequested::EVENT_TYPE).await.len(),
        1
    );
    let render = payload(&r.of_type("confirm", RenderRequested::EVENT_TYPE).await);
    assert_eq!(render["work_result"]["status"], "ask_user");

    // A reroute to CODE without CODE evidence is refused by the controller: reply as is.
    r.say("code", "/plan move-code").await;
    assert_eq!(r.of_type("code", WorkRequested::EVENT_TYPE).await.len(), 1);
    assert_eq!(r.cloud.request_count(), 0);
    let events = r.app.session_events("code").await;
    assert_eq!(
        decisions(&events)[1],
        ("render".into(), Some("reroute CODE: write it".into()))
    );

    // Invalid: ignored, logged, and the reply goes ahead.
    let reply = r.say("invalid", "/plan move-invalid").await;
    assert!(reply.ends_with(PERSONA_REPLY));
    assert_eq!(
        r.of_type("invalid", WorkRequested::EVENT_TYPE).await.len(),
        1
    );
    let events = r.app.session_events("invalid").await;
    let (decision, logged) = decisions(&events).pop().unwrap();
    assert_eq!(decision, "render");
    assert!(logged.unwrap_or_default().starts_with("invalid unparsable"));
    let user_event_id = events[0].event_id;
    let pool = r.app.store.pool().clone();
    let row = eventually(Duration::from_secs(30), "the routing log row", || {
        let pool = pool.clone();
        async move {
            RoutingLog::get(&pool, user_event_id)
                .await
                .ok()
                .flatten()
                .filter(|row| {
                    row.final_route.is_some()
                        && row.loop_decisions.as_array().is_some_and(|d| d.len() == 2)
                })
        }
    })
    .await;
    assert!(
        row.parse_failures
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["stage"] == "persona_proposal" && f["kind"] == "unparsable"),
        "{}",
        row.parse_failures
    );

    // The persona judged each message exactly once.
    assert_eq!(r.requests(Kind::Proposal).len(), 5);
    r.cleanup().await;
}

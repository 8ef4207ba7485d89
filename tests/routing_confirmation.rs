//! A question to the user resumes the work (seed 002), end to end over NATS and Postgres:
//! the loop controller asks (high risk, questions), the turn records the paused work; the
//! user's next message is checked as a structured output: an answer resumes the work on its
//! route with the answer, a new topic or a route command drops it (logged) and the message
//! is routed as any other.

mod routing_support;
mod support;

use std::sync::Arc;

use ghost_shared::bus::EventHandler;
use ghost_shared::envelope::EventPayload;
use ghost_shared::events::{
    ConfirmationChecked, ConfirmationPending, ConfirmationResolved, RouteDecided,
    UserMessageReceived, WorkRequested,
};
use ghost_shared::llm::Fence;
use routing_support::{payload, Kind, RoutingApp, Scripts, CONTRACT_OK, NEW_TOPIC};
use serde_json::json;

/// The worker: a deployment asks which port first (high risk); anything else is done.
fn cautious_worker(task: &str) -> String {
    let request = Fence::data_of(task, "REQUEST").unwrap_or(task);
    if request.contains("deploy") && !task.contains("[the user's answer") {
        json!({
            "result": "deployment plan drafted, port unknown", "needs_next_loop": false,
            "why": "", "next_actions": [], "questions_for_user": ["Which port should it use?"],
            "confidence": 0.8, "risk": "high"
        })
        .to_string()
    } else {
        CONTRACT_OK.to_owned()
    }
}

#[tokio::test]
async fn an_answer_resumes_the_paused_work_and_a_new_topic_drops_it() {
    let mut scripts = Scripts {
        worker: Some(Arc::new(cautious_worker)),
        ..Scripts::default()
    };
    scripts
        .confirmation
        .insert("ところで今日の天気は？".into(), NEW_TOPIC.into());
    let r = RoutingApp::spawn(scripts, &[]).await;

    // Asked: the work waits.
    r.say("c", "/plan deploy the app").await;
    let pending = r.of_type("c", ConfirmationPending::EVENT_TYPE).await;
    assert_eq!(pending.len(), 1);
    let paused: ConfirmationPending = pending[0].decode().unwrap();
    assert_eq!(paused.questions, ["Which port should it use?"]);
    assert_eq!(paused.result, "deployment plan drafted, port unknown");

    // The answer resumes it on its route, with the work so far and the answer.
    r.say("c", "8080 でお願い").await;
    let resolved = payload(&r.of_type("c", ConfirmationResolved::EVENT_TYPE).await);
    assert_eq!(resolved["outcome"], "resumed", "{resolved}");
    assert_eq!(resolved["pending_event_id"], json!(pending[0].event_id));
    let decided = payload(&r.of_type("c", RouteDecided::EVENT_TYPE).await);
    assert_eq!(
        (decided["route"].as_str(), decided["source"].as_str()),
        (Some("PLAN"), Some("resumed"))
    );
    let works = r.of_type("c", WorkRequested::EVENT_TYPE).await;
    assert_eq!(works.len(), 2);
    let task = works[1].payload["task"].as_str().unwrap();
    assert_eq!(Fence::data_of(task, "ANSWER"), Some("8080 でお願い"));
    assert_eq!(
        Fence::data_of(task, "WORK_SO_FAR"),
        Some("deployment plan drafted, port unknown")
    );
    assert_eq!(Fence::data_of(task, "REQUEST"), Some("deploy the app"));
    assert_eq!(
        r.requests(Kind::Classifier).len(),
        0,
        "not routed from scratch"
    );

    // Every event of the conversation handed to the router again: nothing is appended,
    // nothing resumed twice, no message routed from scratch.
    let before = r.app.session_events("c").await.len();
    let ctx = r.app.env.context("router").await.expect("router ctx");
    let config = ghost_router::load_routing_config(&ctx).expect("routing.yaml");
    let router = ghost_router::Router::new(ctx, config);
    for event in r.app.session_events("c").await {
        if [
            UserMessageReceived::EVENT_TYPE,
            ConfirmationChecked::EVENT_TYPE,
        ]
        .contains(&event.event_type.as_str())
        {
            router.handle(event).await.expect("router redelivery");
        }
    }
    assert_eq!(
        r.app.session_events("c").await.len(),
        before,
        "nothing appended"
    );

    // Asked again; this time the user changes the subject: the work is dropped, the
    // message routed as any other.
    r.say("c", "/plan deploy the api").await;
    r.say("c", "ところで今日の天気は？").await;
    let resolved = r.of_type("c", ConfirmationResolved::EVENT_TYPE).await;
    assert_eq!(resolved.len(), 2);
    assert_eq!(resolved[1].payload["outcome"], "dropped");
    let decided = payload(&r.of_type("c", RouteDecided::EVENT_TYPE).await);
    assert_ne!(decided["source"], "resumed", "{decided}");
    assert_eq!(r.of_type("c", WorkRequested::EVENT_TYPE).await.len(), 3);

    // A route command while work waits drops it without asking the model.
    let checks = r.requests(Kind::Confirmation).len();
    r.say("c", "/plan deploy the db").await;
    r.say("c", "/ops restart nginx").await;
    let resolved = r.of_type("c", ConfirmationResolved::EVENT_TYPE).await;
    assert_eq!(resolved.len(), 3);
    assert_eq!(resolved[2].payload["outcome"], "dropped");
    assert_eq!(resolved[2].payload["reason"], "a route command");
    assert_eq!(r.requests(Kind::Confirmation).len(), checks);
    let decided = payload(&r.of_type("c", RouteDecided::EVENT_TYPE).await);
    assert_eq!(decided["route"], "OPS");
    r.cleanup().await;
}

//! The classifier is called at most once per user message: redelivered events append
//! nothing and ask nothing, and a worker killed right after the call does not call again.

mod routing_support;
mod support;

use std::time::Duration;

use ghost::stack::ServiceName;
use ghost_shared::bus::EventHandler;
use ghost_shared::envelope::EventPayload;
use ghost_shared::events::{
    ClassifierCallStarted, ClassifierReplied, ClassifyRequested, RouteDecided, UserMessageReceived,
    WorkRequested,
};
use routing_support::{payload, Kind, RoutingApp, Scripts};

const TEXT: &str = "最近ちょっと疲れてるんだよね";

#[tokio::test]
async fn redelivered_events_never_call_the_classifier_again() {
    let r = RoutingApp::spawn(Scripts::default(), &[]).await;
    r.say("rd", TEXT).await;
    assert_eq!(r.requests(Kind::Classifier).len(), 1);
    // The session's own stream: the worker's reflection on the reply lands elsewhere, later.
    let events_before = r.app.session_events("rd").await.len();

    // Deliver every event of the turn again to the handlers that consume them.
    let router_ctx = r.app.env.context("router").await.expect("router ctx");
    let config = ghost_router::load_routing_config(&router_ctx).expect("routing.yaml");
    let router = ghost_router::Router::new(router_ctx, config);
    let worker_ctx = r.app.env.context("worker").await.expect("worker ctx");
    let classifier = ghost_worker::classify::Classifier::new(
        worker_ctx.clone(),
        worker_ctx.llm("worker").expect("worker llm"),
        worker_ctx.llm("persona").expect("persona llm"),
    )
    .expect("classifier");
    for event in r.app.session_events("rd").await {
        match event.event_type.as_str() {
            UserMessageReceived::EVENT_TYPE | ClassifierReplied::EVENT_TYPE => {
                router.handle(event).await.expect("router redelivery")
            }
            ClassifyRequested::EVENT_TYPE => {
                classifier.handle(event).await.expect("worker redelivery")
            }
            _ => {}
        }
    }
    assert_eq!(
        r.app.session_events("rd").await.len(),
        events_before,
        "nothing appended"
    );
    assert_eq!(
        r.requests(Kind::Classifier).len(),
        1,
        "the classifier was not asked again"
    );
    r.cleanup().await;
}

#[tokio::test]
async fn a_worker_killed_after_the_classifier_call_does_not_call_it_again() {
    let r = RoutingApp::spawn_services(
        &[
            ServiceName::Router,
            ServiceName::Coder,
            ServiceName::Persona,
            ServiceName::Gateway,
        ],
        Scripts::default(),
        &[],
    )
    .await;
    let mut doomed = r
        .app
        .spawn_child("worker", &[("GHOST_FAULTS", "worker.classify.after_call")]);
    let turn = r.start_turn("kill", TEXT);
    let status = tokio::time::timeout(Duration::from_secs(30), doomed.wait())
        .await
        .expect("the armed worker crashes")
        .expect("exit status");
    assert!(!status.success());
    assert_eq!(
        r.requests(Kind::Classifier).len(),
        1,
        "called once before the crash"
    );
    assert_eq!(
        r.of_type("kill", ClassifierCallStarted::EVENT_TYPE)
            .await
            .len(),
        1
    );

    // The successor gets the redelivery, finds the started call and does not repeat it.
    let _successor = r.app.spawn_child("worker", &[]);
    let events = turn.await.expect("client");
    assert_eq!(events.last().map(|e| e.event.as_str()), Some("done"));
    assert_eq!(r.requests(Kind::Classifier).len(), 1, "never called twice");
    let reply = payload(&r.of_type("kill", ClassifierReplied::EVENT_TYPE).await);
    assert!(
        reply["raw"].is_null() && reply["error"].is_string(),
        "{reply}"
    );
    let decided = payload(&r.of_type("kill", RouteDecided::EVENT_TYPE).await);
    assert_eq!(decided["route"], "CHAT");
    assert_eq!(decided["source"], "classifier_failed");
    assert!(r
        .of_type("kill", WorkRequested::EVENT_TYPE)
        .await
        .is_empty());
    r.cleanup().await;
}

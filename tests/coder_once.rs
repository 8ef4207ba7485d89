//! The cloud is called at most once per CODE request: two coder handlers of the same
//! `WorkRequested` at once (a redelivery after the ack wait while the first still waits for
//! the cloud) make one call, and store one outcome and one usage.

mod routing_support;
mod support;

use std::time::Duration;

use ghost::stack::ServiceName;
use ghost_coder::Coder;
use ghost_shared::bus::{EventHandler, HandlerError};
use ghost_shared::envelope::EventPayload;
use ghost_shared::events::{CloudTokensUsed, CoderCallStarted, WorkRequested, WorkerCompleted};
use ghost_testkit::fake_llm::Script;
use ghost_testkit::testing::eventually;
use routing_support::{RoutingApp, Scripts, CONTRACT_OK};

const SESSION: &str = "twice";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_coder_handlers_of_one_request_call_the_cloud_once() {
    // Everything but the coder runs as a service; the two coders are driven directly.
    let services: Vec<ServiceName> = ServiceName::ALL
        .into_iter()
        .filter(|s| *s != ServiceName::Coder)
        .collect();
    let r = RoutingApp::spawn_services(&services, Scripts::default(), &[]).await;
    // Slow enough that both handlers are past their "already done?" check before either
    // stores an outcome.
    r.cloud.set_responder(|_| {
        Script::chunks(vec![CONTRACT_OK])
            .with_usage(300, 200)
            .with_delay(Duration::from_secs(1))
    });
    let turn = r.start_turn(SESSION, "/code fix this");
    let work = eventually(Duration::from_secs(30), "the CODE request", || async {
        r.of_type(SESSION, WorkRequested::EVENT_TYPE)
            .await
            .into_iter()
            .next()
    })
    .await;
    assert_eq!(work.payload["route"], "CODE", "{}", work.payload);

    let a = Coder::new(r.app.env.context("coder").await.expect("ctx a")).expect("coder a");
    let b = Coder::new(r.app.env.context("coder").await.expect("ctx b")).expect("coder b");
    let (ra, rb) = tokio::join!(a.handle(work.clone()), b.handle(work.clone()));
    let later = |r: &Result<(), HandlerError>| matches!(r, Err(HandlerError::Later { .. }));
    assert!(
        (ra.is_ok() && later(&rb)) || (later(&ra) && rb.is_ok()),
        "one calls, the other is told to come back later: {ra:?} {rb:?}"
    );
    // Its next delivery finds the outcome.
    b.handle(work.clone()).await.expect("b again");
    a.handle(work).await.expect("a again");

    let events = turn.await.expect("chat client");
    assert_eq!(events.last().map(|e| e.event.as_str()), Some("done"));
    r.app.wait_idle().await;
    let calls = r
        .cloud
        .requests()
        .iter()
        .filter(|q| q.path.ends_with("/chat/completions"))
        .count();
    assert_eq!(calls, 1, "one cloud call");
    for (event_type, n) in [
        (CoderCallStarted::EVENT_TYPE, 1),
        (WorkerCompleted::EVENT_TYPE, 1),
        (CloudTokensUsed::EVENT_TYPE, 1),
    ] {
        assert_eq!(
            r.of_type(SESSION, event_type).await.len(),
            n,
            "{event_type}"
        );
    }
    r.cleanup().await;
}

//! A service run under its descriptor is held to it: it appends only the event types its
//! `appends` lists and opens consumers only for those its `consumes` lists, so the table
//! `ghost events` prints from the descriptors cannot miss a producer or a consumer.

use ghost_shared::envelope::EventPayload;
use ghost_shared::event_log::EventLogError;
use ghost_shared::events::UserMessageReceived;
use ghost_shared::service::{no_projections, ServiceDescriptor, ServiceHandle};
use ghost_shared::store::{AppendRequest, ExpectedVersion, StoreError};
use ghost_testkit::testing::{user_message, TestEnv};
use uuid::Uuid;

/// A service that appends and consumes user messages only.
static TESTER: ServiceDescriptor = ServiceDescriptor {
    name: "tester",
    consumes: ghost_shared::event_types![UserMessageReceived],
    appends: ghost_shared::event_types![UserMessageReceived],
    metrics_port_offset: 0,
    projections: no_projections,
    start: |_| Box::pin(async { Ok(ServiceHandle::new("tester")) }),
};

/// A stored user message relabelled as a type the tester does not declare.
fn undeclared(text: &str) -> ghost_shared::envelope::NewEvent {
    let mut e = user_message(Uuid::new_v4(), text);
    e.event_type = "AssistantReplied".into();
    e
}

fn is_undeclared(e: &StoreError) -> bool {
    matches!(e, StoreError::Undeclared { producer: "tester", event_type } if event_type == "AssistantReplied")
}

#[tokio::test]
async fn a_service_appends_and_consumes_only_what_its_descriptor_lists() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let ctx = env
        .context("tester")
        .await
        .expect("context")
        .for_descriptor(&TESTER);

    ctx.log
        .append(
            "session-d",
            ExpectedVersion::Any,
            &[user_message(Uuid::new_v4(), "declared")],
        )
        .await
        .expect("a declared type is appended");
    // One undeclared event refuses the whole append: the declared one beside it is not
    // stored either.
    let refused = ctx
        .log
        .append(
            "session-d",
            ExpectedVersion::Any,
            &[user_message(Uuid::new_v4(), "beside"), undeclared("x")],
        )
        .await;
    assert!(
        matches!(&refused, Err(EventLogError::Store(e)) if is_undeclared(e)),
        "{refused:?}"
    );
    // The batch path (the gateway's webhooks) refuses that request alone.
    let batch = ctx
        .store()
        .append_batch(&[
            AppendRequest {
                stream: "session-d".into(),
                expected: ExpectedVersion::Any,
                events: vec![undeclared("y")],
            },
            AppendRequest {
                stream: "session-d".into(),
                expected: ExpectedVersion::Any,
                events: vec![user_message(Uuid::new_v4(), "batched")],
            },
        ])
        .await
        .expect("batch");
    assert!(matches!(&batch[0], Err(e) if is_undeclared(e)), "{batch:?}");
    assert!(batch[1].is_ok(), "{batch:?}");
    let stored = ctx.store().read_stream("session-d", 0).await.expect("read");
    let texts: Vec<&str> = stored
        .iter()
        .map(|e| e.payload["text"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(texts, ["declared", "batched"]);

    assert_eq!(
        ctx.consumer(UserMessageReceived::EVENT_TYPE)
            .expect("a declared consumer")
            .durable,
        "tester_UserMessageReceived"
    );
    let err = ctx.consumer("AssistantReplied").expect_err("undeclared");
    assert!(
        err.to_string()
            .contains("tester consumes AssistantReplied, which its ServiceDescriptor::consumes"),
        "{err}"
    );

    // A bare context (a test's, a CLI's) is held to nothing.
    let bare = env.context("tester").await.expect("context");
    assert!(bare.consumer("AssistantReplied").is_ok());
    bare.log
        .append("session-e", ExpectedVersion::Any, &[undeclared("z")])
        .await
        .expect("a bare context appends any type");
    env.cleanup().await;
}

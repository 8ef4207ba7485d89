//! Group commit (`EventStore::append_batch`, `GroupAppender`) against the real Postgres and
//! NATS: many appends in one transaction, each keeping the meaning of a lone append.

use ghost_shared::envelope::NewEvent;
use ghost_shared::event_log::GroupAppender;
use ghost_shared::store::{AppendRequest, ExpectedVersion, StoreError};
use std::time::Duration;

use ghost_testkit::testing::{eventually, user_message, TestEnv};
use uuid::Uuid;

fn request(stream: &str, expected: ExpectedVersion, events: Vec<NewEvent>) -> AppendRequest {
    AppendRequest {
        stream: stream.into(),
        expected,
        events,
    }
}

fn message(text: &str) -> NewEvent {
    user_message(Uuid::new_v4(), text)
}

#[tokio::test]
async fn a_batch_keeps_each_appends_meaning_and_a_refused_one_stops_no_other() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    let stored_id = Uuid::new_v4();
    store
        .append(
            "session-b",
            ExpectedVersion::NoStream,
            &[user_message(stored_id, "first")],
        )
        .await
        .unwrap();

    let results = store
        .append_batch(&[
            request("session-a", ExpectedVersion::Any, vec![message("a1")]),
            // Already exists: refused alone.
            request("session-b", ExpectedVersion::NoStream, vec![message("x")]),
            request("session-a", ExpectedVersion::Any, vec![message("a2")]),
            // A redelivery: nothing new, the stored copy comes back.
            request(
                "session-b",
                ExpectedVersion::Any,
                vec![user_message(stored_id, "first")],
            ),
            // Reused id next to a new one.
            request(
                "session-b",
                ExpectedVersion::Any,
                vec![user_message(stored_id, "first"), message("y")],
            ),
            request("session-c", ExpectedVersion::Any, vec![]),
            request(
                "session-a",
                ExpectedVersion::Exact(2),
                vec![message("a3"), message("a4")],
            ),
        ])
        .await
        .unwrap();
    assert_eq!(results.len(), 7);
    let versions = |i: usize| -> Vec<i32> {
        results[i]
            .as_ref()
            .unwrap()
            .events
            .iter()
            .map(|e| e.version)
            .collect()
    };
    assert_eq!(versions(0), [1]);
    assert!(
        matches!(results[1], Err(StoreError::Conflict { actual: 1, .. })),
        "{:?}",
        results[1]
    );
    assert_eq!(versions(2), [2]);
    assert!(results[3].as_ref().unwrap().duplicate);
    assert_eq!(results[3].as_ref().unwrap().events[0].event_id, stored_id);
    assert!(
        matches!(results[4], Err(StoreError::PartialDuplicate { .. })),
        "{:?}",
        results[4]
    );
    assert!(matches!(results[5], Err(StoreError::Empty)));
    assert_eq!(versions(6), [3, 4]);

    // Stored in the batch's order, and nothing of the refused ones.
    let texts = |stream: &'static str| {
        let store = store.clone();
        async move {
            store
                .read_stream(stream, 0)
                .await
                .unwrap()
                .iter()
                .map(|e| e.payload["text"].as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(texts("session-a").await, ["a1", "a2", "a3", "a4"]);
    assert_eq!(texts("session-b").await, ["first"]);
    // The new appends of the batch committed in one transaction.
    let a = results[0].as_ref().unwrap();
    let b = results[6].as_ref().unwrap();
    assert_eq!(a.events[0].tx_id, b.events[1].tx_id);
    env.cleanup().await;
}

#[tokio::test]
async fn concurrent_callers_share_one_transaction_and_are_answered_after_it_commits() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let ctx = env.context("test").await.unwrap();
    let appender = GroupAppender::spawn(ctx.log.clone(), 1, 256);
    let ids: Vec<Uuid> = (0..40).map(|_| Uuid::new_v4()).collect();
    let send = |ids: Vec<Uuid>| {
        let appender = appender.clone();
        async move {
            // Every caller sends before the committer runs (one thread: it runs when this
            // task waits), so one transaction takes them all.
            futures::future::join_all(ids.iter().enumerate().map(|(i, id)| {
                appender.append(vec![request(
                    &format!("session-{}", i % 7),
                    ExpectedVersion::Any,
                    vec![user_message(*id, &i.to_string())],
                )])
            }))
            .await
        }
    };
    let answers = send(ids.clone()).await;
    let reader = env.store().await;
    let mut tx_ids = Vec::new();
    for (answer, id) in answers.iter().zip(&ids) {
        let outcome = &answer.as_ref().unwrap()[0];
        assert!(!outcome.duplicate);
        assert_eq!(outcome.events[0].event_id, *id);
        tx_ids.push(outcome.events[0].tx_id);
        // Answered after the commit: another connection reads it.
        let seen = reader.get(*id).await.unwrap();
        assert!(seen.is_some(), "event {id} not visible after its answer");
    }
    tx_ids.dedup();
    assert_eq!(tx_ids.len(), 1, "one transaction for all callers");
    // Published: the fast path clears each published event's outbox row.
    eventually(Duration::from_secs(10), "outbox cleared", || {
        let pool = ctx.log.store().pool().clone();
        async move {
            let n: i64 = sqlx::query_scalar("SELECT count(*) FROM outbox")
                .fetch_one(&pool)
                .await
                .unwrap();
            (n == 0).then_some(())
        }
    })
    .await;

    // Redelivered: every caller gets the stored copy back, nothing new is written.
    let again = send(ids.clone()).await;
    assert!(again.iter().all(|a| a.as_ref().unwrap()[0].duplicate));
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM events")
        .fetch_one(ctx.log.store().pool())
        .await
        .unwrap();
    assert_eq!(count, 40);
    env.cleanup().await;
}

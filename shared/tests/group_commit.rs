//! Group commit (`EventStore::append_batch`, `GroupAppender`) against the real Postgres and
//! NATS: many appends in one transaction, each keeping the meaning of a lone append.

use ghost_shared::envelope::NewEvent;
use ghost_shared::event_log::GroupAppender;
use ghost_shared::store::{AppendRequest, ExpectedVersion, ReadPosition, StoreError, WakeUp};
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

/// A listener on the channel of the runners' wake-ups.
async fn wake_up_listener(store: &ghost_shared::store::EventStore) -> sqlx::postgres::PgListener {
    let mut listener = sqlx::postgres::PgListener::connect_with(store.pool())
        .await
        .unwrap();
    listener
        .listen(ghost_shared::store::NOTIFY_CHANNEL)
        .await
        .unwrap();
    listener
}

/// An event of `event_type` (the notification names it), with a user message's payload.
fn typed(event_type: &str, text: &str) -> NewEvent {
    NewEvent {
        event_type: event_type.into(),
        ..message(text)
    }
}

#[tokio::test]
async fn a_batch_of_new_events_at_any_version_is_one_insert_with_one_wake_up() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    let mut listener = wake_up_listener(&store).await;
    let results = store
        .append_batch(&[
            request(
                "stage-a",
                ExpectedVersion::Any,
                vec![typed("Alpha", "a1"), typed("Beta", "a2")],
            ),
            request("stage-b", ExpectedVersion::Any, vec![typed("Beta", "b1")]),
            request("stage-a", ExpectedVersion::Any, vec![typed("Alpha", "a3")]),
        ])
        .await
        .unwrap();
    let outcomes: Vec<_> = results.into_iter().map(Result::unwrap).collect();
    let versions: Vec<Vec<i32>> = outcomes
        .iter()
        .map(|o| o.events.iter().map(|e| e.version).collect())
        .collect();
    // Each stream's versions follow the batch's order, across its requests.
    assert_eq!(versions, [vec![1, 2], vec![1], vec![3]]);
    let positions: Vec<i64> = outcomes
        .iter()
        .flat_map(|o| o.events.iter().map(|e| e.position))
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");
    assert!(outcomes.iter().all(|o| !o.duplicate));
    let queued: i64 = sqlx::query_scalar("SELECT count(*) FROM outbox WHERE position = ANY($1)")
        .bind(&positions)
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(queued, 4, "every event has its outbox row");
    // One wake-up naming both types (a request at a time would send one per type).
    let first = listener.recv().await.unwrap();
    let mut types: Vec<&str> = WakeUp::parse(first.payload()).types().collect();
    types.sort_unstable();
    assert_eq!(types, ["Alpha", "Beta"]);
    let more = tokio::time::timeout(Duration::from_millis(300), listener.recv()).await;
    assert!(more.is_err(), "a second notification: {more:?}");
    env.cleanup().await;
}

#[tokio::test]
async fn an_append_of_types_no_runner_wakes_for_sends_no_wake_up() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    store.announce_only(std::sync::Arc::new(|t: &str| t == "Alpha"));
    let mut listener = wake_up_listener(&store).await;
    store
        .append("stage-a", ExpectedVersion::Any, &[typed("Beta", "b1")])
        .await
        .unwrap();
    store
        .append(
            "stage-a",
            ExpectedVersion::Any,
            &[typed("Alpha", "a1"), typed("Beta", "b2")],
        )
        .await
        .unwrap();
    // Notifications arrive in commit order: the first names the second append, and only
    // the type a runner wakes for.
    let first = listener.recv().await.unwrap();
    assert_eq!(
        WakeUp::parse(first.payload()).types().collect::<Vec<_>>(),
        ["Alpha"]
    );
    env.cleanup().await;
}

#[tokio::test]
async fn a_batch_that_cannot_be_one_insert_is_stored_a_request_at_a_time() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    let stored = Uuid::new_v4();
    store
        .append(
            "stage-s",
            ExpectedVersion::Any,
            &[user_message(stored, "old")],
        )
        .await
        .unwrap();
    // A redelivered event beside new ones: the stored copy comes back, the others store.
    let fresh = message("new");
    let results = store
        .append_batch(&[
            request("stage-s", ExpectedVersion::Any, vec![fresh.clone()]),
            request(
                "stage-s",
                ExpectedVersion::Any,
                vec![user_message(stored, "old")],
            ),
        ])
        .await
        .unwrap();
    let first = results[0].as_ref().unwrap();
    assert!(!first.duplicate);
    assert_eq!(first.events[0].version, 2);
    let again = results[1].as_ref().unwrap();
    assert!(again.duplicate);
    assert_eq!(again.events[0].event_id, stored);

    // One id twice in a batch (two copies of one webhook): the one INSERT fails on it, is
    // undone whole, and each request then gets what a lone append would have.
    let twice = message("twice");
    let other = message("other");
    let results = store
        .append_batch(&[
            request("stage-t", ExpectedVersion::Any, vec![twice.clone()]),
            request("stage-u", ExpectedVersion::Any, vec![other.clone()]),
            request("stage-t", ExpectedVersion::Any, vec![twice.clone()]),
        ])
        .await
        .unwrap();
    let outcomes: Vec<_> = results.into_iter().map(Result::unwrap).collect();
    assert!(!outcomes[0].duplicate && !outcomes[1].duplicate);
    assert!(outcomes[2].duplicate);
    assert_eq!(
        outcomes[2].events[0].position,
        outcomes[0].events[0].position
    );
    let stream_t = store.read_stream("stage-t", 0).await.unwrap();
    assert_eq!(stream_t.len(), 1, "stored once");
    assert_eq!(stream_t[0].version, 1);
    let stream_u = store.read_stream("stage-u", 0).await.unwrap();
    assert_eq!(stream_u.len(), 1);
    env.cleanup().await;
}

#[tokio::test]
async fn concurrent_batches_on_one_stream_never_share_a_version() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    let batches = (0..8).map(|b| {
        let store = store.clone();
        async move {
            let requests: Vec<_> = (0..5)
                .map(|i| {
                    request(
                        "stage-race",
                        ExpectedVersion::Any,
                        vec![message(&format!("{b}-{i}"))],
                    )
                })
                .collect();
            store.append_batch(&requests).await.unwrap()
        }
    });
    for results in futures::future::join_all(batches).await {
        assert!(results
            .iter()
            .all(|r| r.as_ref().is_ok_and(|o| !o.duplicate)));
    }
    let versions: Vec<i32> = store
        .read_stream("stage-race", 0)
        .await
        .unwrap()
        .iter()
        .map(|e| e.version)
        .collect();
    assert_eq!(versions, (1..=40).collect::<Vec<_>>());
    env.cleanup().await;
}

/// The wake-up is sent after the append commits, in a transaction of its own: an append
/// function that notified would hold Postgres' notification lock through its commit's
/// flush, and every appending commit would wait for the previous one's (migration 0098).
#[tokio::test]
async fn the_wake_up_follows_the_commit_and_the_append_functions_send_none() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    let mut listener = wake_up_listener(&store).await;
    // The functions themselves, called as the store calls them: stored, and no notification.
    let event = serde_json::json!([{
        "event_id": Uuid::new_v4(), "event_type": "Gamma", "schema_version": 1,
        "payload": {}, "metadata": {"correlation_id": Uuid::new_v4()}
    }]);
    let stored: Vec<i64> = sqlx::query_scalar("SELECT position FROM ghost_append($1, -1, $2)")
        .bind("direct-a")
        .bind(&event)
        .fetch_all(store.pool())
        .await
        .unwrap();
    assert_eq!(stored.len(), 1);
    let batch = serde_json::json!([
        {"stream": "direct-b", "expected": -1, "events": [{
            "event_id": Uuid::new_v4(), "event_type": "Gamma", "schema_version": 1,
            "payload": {}, "metadata": {"correlation_id": Uuid::new_v4()}}]},
        {"stream": "direct-c", "expected": -1, "events": [{
            "event_id": Uuid::new_v4(), "event_type": "Gamma", "schema_version": 1,
            "payload": {}, "metadata": {"correlation_id": Uuid::new_v4()}}]}
    ]);
    let stored: Vec<i64> = sqlx::query_scalar("SELECT position FROM ghost_append_batch($1)")
        .bind(&batch)
        .fetch_all(store.pool())
        .await
        .unwrap();
    assert_eq!(stored.len(), 2);
    let none = tokio::time::timeout(Duration::from_millis(300), listener.recv()).await;
    assert!(none.is_err(), "an append function notified: {none:?}");

    // Through the store, the wake-up names what was stored; a redelivery sends none.
    let delta = typed("Delta", "d1");
    let stored = store
        .append(
            "store-d",
            ExpectedVersion::Any,
            std::slice::from_ref(&delta),
        )
        .await
        .unwrap();
    let woken = listener.recv().await.unwrap();
    let wake_up = WakeUp::parse(woken.payload());
    assert_eq!(wake_up.types().collect::<Vec<_>>(), ["Delta"]);
    // It names the stored event, so a runner that read it already skips the wake-up.
    assert_eq!(wake_up.newest, Some(ReadPosition::of(&stored.events[0])));
    let again = store
        .append("store-d", ExpectedVersion::Any, &[delta])
        .await
        .unwrap();
    assert!(again.duplicate);
    let more = tokio::time::timeout(Duration::from_millis(300), listener.recv()).await;
    assert!(more.is_err(), "a redelivery woke the runners: {more:?}");
    env.cleanup().await;
}

//! A session's next turn (`EventStore::append_turn`, how the gateway stores a chat
//! message): appended unless the session is mid-turn, checked in the append's own
//! statement (`ghost_append_turn`, migration 0101).

use std::time::Duration;

use ghost_shared::envelope::NewEvent;
use ghost_shared::events::{OUT_OF_TURN_TYPES, TURN_ENDING_TYPES};
use ghost_shared::projections::AssistantTextProjection;
use ghost_shared::store::{EventStore, ExpectedVersion, StoreError, TurnGuard};
use ghost_testkit::testing::{user_message, TestEnv};
use uuid::Uuid;

const STREAM: &str = "session-s";

fn guard(running: Duration) -> TurnGuard<'static> {
    TurnGuard {
        ends_turn: &TURN_ENDING_TYPES,
        not_turn: &OUT_OF_TURN_TYPES,
        running,
    }
}

/// An event of `event_type` with a user message's payload.
fn typed(event_type: &str) -> NewEvent {
    NewEvent {
        event_type: event_type.into(),
        ..user_message(Uuid::new_v4(), "x")
    }
}

async fn store_any(store: &EventStore, event_type: &str) {
    store
        .append(STREAM, ExpectedVersion::Any, &[typed(event_type)])
        .await
        .unwrap();
}

async fn next_turn(store: &EventStore, running: Duration) -> Result<i32, StoreError> {
    let outcome = store
        .append_turn(
            STREAM,
            guard(running),
            &[user_message(Uuid::new_v4(), "next")],
            None,
        )
        .await?;
    Ok(outcome.events[0].version)
}

#[tokio::test]
async fn a_turn_starts_only_once_the_previous_one_ended() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    let minute = Duration::from_secs(60);
    // A new session: the first turn is version 1.
    assert_eq!(next_turn(&store, minute).await.unwrap(), 1);
    // Its message is the newest turn event: mid-turn.
    assert!(matches!(
        next_turn(&store, minute).await,
        Err(StoreError::TurnRunning { .. })
    ));
    store_any(&store, "RouteDecided").await;
    assert!(matches!(
        next_turn(&store, minute).await,
        Err(StoreError::TurnRunning { .. })
    ));
    // The reply ends it; an autonomy message, its push, a reminder asked through the API
    // and its occurrence after it do not start another.
    store_any(&store, "AssistantReplied").await;
    for out_of_turn in [
        "AutonomyMessageRendered",
        "AutonomyMessagePushed",
        "ReminderScheduled",
        "ReminderDue",
        "ReminderDelivered",
    ] {
        store_any(&store, out_of_turn).await;
    }
    assert_eq!(next_turn(&store, minute).await.unwrap(), 9);
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM events")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(count, 9, "a refused turn stores nothing");
    env.cleanup().await;
}

#[tokio::test]
async fn a_turn_left_running_longer_than_the_limit_lets_the_next_one_start() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    store_any(&store, "UserMessageReceived").await;
    assert!(matches!(
        next_turn(&store, Duration::from_secs(60)).await,
        Err(StoreError::TurnRunning { .. })
    ));
    assert_eq!(next_turn(&store, Duration::ZERO).await.unwrap(), 2);
    env.cleanup().await;
}

#[tokio::test]
async fn of_two_turns_started_at_once_one_is_stored() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    let minute = Duration::from_secs(60);
    let attempts: Vec<_> = (0..8)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move { next_turn(&store, minute).await })
        })
        .collect();
    let mut stored = 0;
    for attempt in attempts {
        match attempt.await.unwrap() {
            Ok(version) => {
                assert_eq!(version, 1);
                stored += 1;
            }
            Err(StoreError::TurnRunning { .. }) => {}
            Err(e) => panic!("neither stored nor busy: {e}"),
        }
    }
    assert_eq!(stored, 1);
    env.cleanup().await;
}

#[tokio::test]
async fn the_turn_is_listed_by_its_append() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    let message = user_message(Uuid::new_v4(), "hello");
    let listing = AssistantTextProjection::listing(&[], std::slice::from_ref(&message)).unwrap();
    let stored = store
        .append_turn(
            STREAM,
            guard(Duration::from_secs(60)),
            &[message],
            Some(listing.also()),
        )
        .await
        .unwrap();
    let rows = AssistantTextProjection::all(store.pool()).await.unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].position, stored.events[0].position);
    assert_eq!(rows[0].text, "hello");
    env.cleanup().await;
}

#[tokio::test]
async fn a_message_stored_again_is_refused_mid_turn_and_comes_back_as_stored_after_it() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    let minute = Duration::from_secs(60);
    let message = user_message(Uuid::new_v4(), "hello");
    let first = store
        .append_turn(STREAM, guard(minute), std::slice::from_ref(&message), None)
        .await
        .unwrap();
    assert!(!first.duplicate);
    // Redelivered while its own turn runs: the turn is running, nothing more is stored.
    assert!(matches!(
        store
            .append_turn(STREAM, guard(minute), std::slice::from_ref(&message), None)
            .await,
        Err(StoreError::TurnRunning { .. })
    ));
    store_any(&store, "AssistantReplied").await;
    // Redelivered after it: the stored copy, marked a duplicate, with its payload.
    let again = store
        .append_turn(STREAM, guard(minute), std::slice::from_ref(&message), None)
        .await
        .unwrap();
    assert!(again.duplicate);
    assert_eq!(again.events.len(), 1);
    assert_eq!(again.events[0].position, first.events[0].position);
    assert_eq!(again.events[0].version, 1);
    assert_eq!(again.events[0].payload, message.payload);
    // With a new event beside it: refused as a partial duplicate.
    assert!(matches!(
        store
            .append_turn(
                STREAM,
                guard(minute),
                &[message, user_message(Uuid::new_v4(), "new")],
                None,
            )
            .await,
        Err(StoreError::PartialDuplicate { .. })
    ));
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM events")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(count, 2, "the message and the reply, nothing else");
    env.cleanup().await;
}

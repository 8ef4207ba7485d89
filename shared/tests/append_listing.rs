//! An append that lists its turn in the conversation in its own statement
//! (`EventStore::append_with` with `AssistantTextProjection::listing`, how the gateway
//! stores a chat message and the persona its reply): the rows commit with the events or not
//! at all, at the positions and times the store gave, and a duplicate lists nothing of what
//! was sent. No projection runner runs here: every row is the append's own.

use ghost_shared::envelope::NewEvent;
use ghost_shared::events::{AssistantReplied, Channel};
use ghost_shared::projections::AssistantTextProjection;
use ghost_shared::store::{ExpectedVersion, StoreError};
use ghost_testkit::testing::{origin_event, user_message, TestEnv};
use uuid::Uuid;

fn reply(id: Uuid, user_event_id: Uuid, text: &str) -> NewEvent {
    origin_event(
        id,
        &AssistantReplied {
            session_id: "s".into(),
            channel: Channel::Http,
            user_event_id,
            speaker: "persona".into(),
            text: text.into(),
            affect: None,
            affect_rejected: Vec::new(),
            cut: None,
        },
    )
}

/// Each row as (position, role, text).
async fn listed(pool: &sqlx::PgPool) -> Vec<(i64, String, String)> {
    AssistantTextProjection::all(pool)
        .await
        .unwrap()
        .into_iter()
        .map(|t| (t.position, t.role, t.text))
        .collect()
}

#[tokio::test]
async fn the_turn_is_listed_by_the_append_at_the_stored_positions() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    let user_id = Uuid::new_v4();
    let user = store
        .append(
            "session-s",
            ExpectedVersion::NoStream,
            &[user_message(user_id, "hello")],
        )
        .await
        .unwrap()
        .events
        .remove(0);
    let answer = reply(Uuid::new_v4(), user_id, "hi there");
    let listing =
        AssistantTextProjection::listing(&[&user], std::slice::from_ref(&answer)).unwrap();

    let stored = store
        .append_with(
            "session-s",
            ExpectedVersion::Exact(1),
            &[answer],
            Some(listing.also()),
        )
        .await
        .unwrap();

    assert!(!stored.duplicate);
    let replied = &stored.events[0];
    assert_eq!(
        listed(store.pool()).await,
        [
            (user.position, "user".to_owned(), "hello".to_owned()),
            (
                replied.position,
                "assistant".to_owned(),
                "hi there".to_owned()
            ),
        ]
    );
    let rows = AssistantTextProjection::all(store.pool()).await.unwrap();
    assert_eq!(rows[0].recorded_at, user.recorded_at);
    assert_eq!(rows[1].recorded_at, replied.recorded_at);
    assert_eq!(rows[1].event_id, replied.event_id);
    assert_eq!(rows[1].speaker, "persona");
    assert_eq!(rows[1].source, "http");
    env.cleanup().await;
}

#[tokio::test]
async fn a_refused_append_lists_nothing() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    let user = store
        .append(
            "session-s",
            ExpectedVersion::NoStream,
            &[user_message(Uuid::new_v4(), "hello")],
        )
        .await
        .unwrap()
        .events
        .remove(0);
    let second = user_message(Uuid::new_v4(), "again");
    let listing =
        AssistantTextProjection::listing(&[&user], std::slice::from_ref(&second)).unwrap();

    // The session moved on meanwhile (version 1, not 0): the append is refused whole.
    let refused = store
        .append_with(
            "session-s",
            ExpectedVersion::NoStream,
            &[second],
            Some(listing.also()),
        )
        .await;

    assert!(
        matches!(refused, Err(StoreError::Conflict { actual: 1, .. })),
        "{refused:?}"
    );
    assert_eq!(listed(store.pool()).await, []);
    env.cleanup().await;
}

#[tokio::test]
async fn a_duplicate_lists_nothing_of_what_was_sent() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    let user_id = Uuid::new_v4();
    let reply_id = Uuid::new_v4();
    store
        .append(
            "session-s",
            ExpectedVersion::Any,
            &[reply(reply_id, user_id, "the stored reply")],
        )
        .await
        .unwrap();
    // A second rendering of the same turn: same id, other words.
    let again = reply(reply_id, user_id, "another rendering");
    let listing = AssistantTextProjection::listing(&[], std::slice::from_ref(&again)).unwrap();

    let stored = store
        .append_with(
            "session-s",
            ExpectedVersion::Any,
            &[again],
            Some(listing.also()),
        )
        .await
        .unwrap();

    assert!(stored.duplicate);
    assert_eq!(
        stored.events[0].decode::<AssistantReplied>().unwrap().text,
        "the stored reply"
    );
    assert_eq!(listed(store.pool()).await, []);
    env.cleanup().await;
}

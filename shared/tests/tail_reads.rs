//! A stream's newest events (`read_tail_in`, behind `read_stream_tail` and
//! `read_stream_tail_of_types`): the same answer as reading the whole stream, at a cost
//! that does not grow with the stream.

use ghost_shared::envelope::RecordedEvent;
use ghost_shared::store::{read_tail_in, EventStore, TailFilter};
use ghost_testkit::plans::{
    analyse_events, connection_keeping_first_plans, index_reads_in_transaction,
    table_reads_in_transaction,
};
use ghost_testkit::testing::TestEnv;
use uuid::Uuid;

/// The utterance types the persona's history reads.
const UTTERANCES: &[&str] = &["UserMessageReceived", "AssistantReplied"];

/// The utterances, and no event asked for by id.
const UTTERANCES_ONLY: TailFilter<'static> = TailFilter::Types {
    types: UTTERANCES,
    also: Uuid::nil(),
};

/// Stores `count` events in `stream` from version `from` on, typed by `kind(version)`.
async fn fill(store: &EventStore, stream: &str, from: i32, count: i32, kinds: &[&str]) {
    sqlx::query(
        "INSERT INTO events (event_id, stream, version, event_type, payload, metadata) \
         SELECT gen_random_uuid(), $1, g, $4[(g % array_length($4, 1)) + 1], \
                jsonb_build_object('text', 'event ' || g), \
                jsonb_build_object('correlation_id', gen_random_uuid(), 'service', 'test') \
         FROM generate_series($2, $2 + $3 - 1) g",
    )
    .bind(stream)
    .bind(from)
    .bind(count)
    .bind(kinds)
    .execute(store.pool())
    .await
    .unwrap();
}

/// The reference answer: the whole stream read, filtered and cut in Rust.
async fn expected(
    store: &EventStore,
    stream: &str,
    types: Option<&[&str]>,
    also: Uuid,
    limit: usize,
) -> Vec<(i32, String)> {
    let all = store.read_stream(stream, 0).await.unwrap();
    let wanted: Vec<(i32, String)> = all
        .iter()
        .filter(|e| types.is_none_or(|t| t.contains(&e.event_type.as_str()) || e.event_id == also))
        .map(|e| (e.version, e.event_type.clone()))
        .collect();
    wanted[wanted.len().saturating_sub(limit)..].to_vec()
}

fn versions(events: &[RecordedEvent]) -> Vec<(i32, String)> {
    events
        .iter()
        .map(|e| (e.version, e.event_type.clone()))
        .collect()
}

/// Reads the long session's newest 20 utterances in a transaction on `conn` and checks
/// what they are and how much of the store the read visited.
async fn check_bounded_read(store: &EventStore, conn: &mut sqlx::PgConnection, when: &str) {
    let mut tx = sqlx::Connection::begin(conn).await.unwrap();
    let tail = read_tail_in(&mut tx, "session-long", UTTERANCES_ONLY, 20)
        .await
        .unwrap();
    let (seq_scans, fetched) = table_reads_in_transaction(&mut tx, "events").await;
    let (_, index_entries) = index_reads_in_transaction(&mut tx, "events_stream_version").await;
    tx.rollback().await.unwrap();

    assert_eq!(
        versions(&tail),
        expected(store, "session-long", Some(UTTERANCES), Uuid::nil(), 20).await,
        "{when}"
    );
    assert_eq!(tail.last().map(|e| e.version), Some(1600), "{when}");
    assert_eq!(seq_scans, 0, "{when}: the read scanned the whole store");
    assert!(
        index_entries < 200 && fetched < 200,
        "{when}: {index_entries} index entries and {fetched} rows read for 20 of 1,600 \
         events: the read grows with the conversation"
    );
}

#[tokio::test]
async fn a_tail_read_of_a_long_conversation_reads_a_window_not_the_whole_stream() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    // A service's pooled connection keeps its plans: they were made while the store was
    // new and no ANALYZE had run (a deployment's first minute). Such a plan fetched all
    // of a long session's events by bitmap and sorted them.
    let mut conn = connection_keeping_first_plans(store.pool()).await;
    fill(&store, "session-new", 1, 3, UTTERANCES).await;
    let tail = read_tail_in(&mut conn, "session-new", UTTERANCES_ONLY, 20)
        .await
        .unwrap();
    assert_eq!(tail.len(), 3);

    // 400 turns of four events each, among 200 other sessions' events.
    fill(
        &store,
        "session-long",
        1,
        1600,
        &[
            "UserMessageReceived",
            "RouteDecided",
            "RenderRequested",
            "AssistantReplied",
        ],
    )
    .await;
    for s in 0..200 {
        fill(
            &store,
            &format!("session-{s}"),
            1,
            100,
            &["UserMessageReceived", "Filler"],
        )
        .await;
    }
    check_bounded_read(&store, &mut conn, "plan made on a new store").await;

    // Analysed: the plan is made again, from statistics of the grown store.
    analyse_events(store.pool()).await;
    check_bounded_read(&store, &mut conn, "plan made on the analysed store").await;
    drop(conn);
    env.cleanup().await;
}

#[tokio::test]
async fn a_tail_read_widens_its_window_until_it_has_enough_or_the_whole_stream() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    // Utterances early on, then a long run of worker events with none: the first windows
    // hold too few of them.
    fill(
        &store,
        "session-sparse",
        1,
        30,
        &["UserMessageReceived", "AssistantReplied"],
    )
    .await;
    fill(&store, "session-sparse", 31, 3000, &["WorkerStep"]).await;
    fill(
        &store,
        "session-sparse",
        3031,
        2,
        &["UserMessageReceived", "AssistantReplied"],
    )
    .await;
    // A short stream: fewer wanted events than asked for.
    fill(
        &store,
        "session-short",
        1,
        5,
        &["UserMessageReceived", "RouteDecided"],
    )
    .await;
    let id_of = |stream: &'static str, version: i32| {
        let pool = store.pool().clone();
        async move {
            sqlx::query_scalar::<_, Uuid>(
                "SELECT event_id FROM events WHERE stream = $1 AND version = $2",
            )
            .bind(stream)
            .bind(version)
            .fetch_one(&pool)
            .await
            .unwrap()
        }
    };
    let also = id_of("session-sparse", 100).await;
    let mut conn = store.pool().acquire().await.unwrap();

    for (stream, types, also, limit) in [
        ("session-sparse", Some(UTTERANCES), Uuid::nil(), 20usize),
        ("session-sparse", Some(UTTERANCES), also, 20),
        ("session-sparse", Some(&["Nothing"][..]), Uuid::nil(), 20),
        ("session-sparse", None, Uuid::nil(), 20),
        ("session-sparse", None, Uuid::nil(), 5000),
        (
            "session-short",
            Some(&["RouteDecided"][..]),
            Uuid::nil(),
            20,
        ),
        ("session-short", None, Uuid::nil(), 3),
        ("session-none", None, Uuid::nil(), 3),
        ("session-none", Some(UTTERANCES), Uuid::nil(), 3),
    ] {
        let filter = match types {
            Some(types) => TailFilter::Types { types, also },
            None => TailFilter::All,
        };
        let tail = read_tail_in(&mut conn, stream, filter, limit as i64)
            .await
            .unwrap();
        assert_eq!(
            versions(&tail),
            expected(&store, stream, types, also, limit).await,
            "{stream} {types:?} also {also} limit {limit}"
        );
    }
    // The one event asked for by id comes with the utterances, whatever its type.
    let filter = TailFilter::Types {
        types: UTTERANCES,
        also,
    };
    let tail = read_tail_in(&mut conn, "session-sparse", filter, 40)
        .await
        .unwrap();
    assert!(tail
        .iter()
        .any(|e| e.event_id == also && e.event_type == "WorkerStep"));
    drop(conn);

    // The store's methods answer the same.
    let tail = store.read_stream_tail("session-sparse", 3).await.unwrap();
    assert_eq!(
        versions(&tail),
        expected(&store, "session-sparse", None, Uuid::nil(), 3).await
    );
    let tail = store
        .read_stream_tail_of_types("session-sparse", UTTERANCES, Uuid::nil(), 4)
        .await
        .unwrap();
    assert_eq!(
        versions(&tail),
        [
            (29, "AssistantReplied".to_owned()),
            (30, "UserMessageReceived".to_owned()),
            (3031, "AssistantReplied".to_owned()),
            (3032, "UserMessageReceived".to_owned()),
        ]
    );
    env.cleanup().await;
}

#[tokio::test]
async fn a_tail_read_can_tell_in_its_statement_whether_an_answer_is_stored() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    fill(
        &store,
        "session-a",
        1,
        40,
        &["UserMessageReceived", "RouteDecided", "AssistantReplied"],
    )
    .await;
    // An answer stored in another stream still counts: the check is by id alone.
    fill(&store, "session-b", 1, 1, &["AssistantReplied"]).await;
    let stored_elsewhere: Uuid =
        sqlx::query_scalar("SELECT event_id FROM events WHERE stream = 'session-b'")
            .fetch_one(store.pool())
            .await
            .unwrap();
    let plain = store
        .read_stream_tail_of_types("session-a", UTTERANCES, Uuid::nil(), 5)
        .await
        .unwrap();

    for (ids, stored) in [
        (vec![Uuid::new_v4(), Uuid::new_v4()], false),
        (vec![Uuid::new_v4(), stored_elsewhere], true),
    ] {
        let (tail, answer) = store
            .read_stream_tail_of_types_checking("session-a", UTTERANCES, Uuid::nil(), 5, &ids)
            .await
            .unwrap();
        assert_eq!(versions(&tail), versions(&plain));
        assert_eq!(answer, Some(stored));
    }
    // No row to carry the answer: it cannot tell.
    let (tail, answer) = store
        .read_stream_tail_of_types_checking("session-none", UTTERANCES, Uuid::nil(), 5, &[])
        .await
        .unwrap();
    assert!(tail.is_empty());
    assert_eq!(answer, None);
    env.cleanup().await;
}

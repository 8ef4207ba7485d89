//! The event store against the real Postgres.

use ghost_shared::envelope::{EventMetadata, NewEvent};
use ghost_shared::ids::derive_event_id;
use ghost_shared::store::{any_after_in, AppendRequest, ExpectedVersion, ReadPosition, StoreError};
use serde_json::json;
use std::time::Duration;

use ghost_testkit::plans::{
    analyse_events, connection_keeping_first_plans, store_filler_events, table_reads_in_transaction,
};
use ghost_testkit::testing::{eventually, user_message, TestEnv};
use uuid::Uuid;

fn message(id: Uuid, text: &str) -> NewEvent {
    user_message(id, text)
}

#[tokio::test]
async fn append_assigns_versions_and_enforces_expected_version() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    let a = store
        .append(
            "session-s",
            ExpectedVersion::NoStream,
            &[message(Uuid::new_v4(), "a")],
        )
        .await
        .unwrap();
    assert_eq!(a.events[0].version, 1);
    let b = store
        .append(
            "session-s",
            ExpectedVersion::Exact(1),
            &[message(Uuid::new_v4(), "b"), message(Uuid::new_v4(), "c")],
        )
        .await
        .unwrap();
    assert_eq!(
        b.events.iter().map(|e| e.version).collect::<Vec<_>>(),
        [2, 3]
    );

    let stale = store
        .append(
            "session-s",
            ExpectedVersion::Exact(1),
            &[message(Uuid::new_v4(), "d")],
        )
        .await;
    assert!(
        matches!(stale, Err(StoreError::Conflict { actual: 3, .. })),
        "{stale:?}"
    );
    let exists = store
        .append(
            "session-s",
            ExpectedVersion::NoStream,
            &[message(Uuid::new_v4(), "e")],
        )
        .await;
    assert!(matches!(exists, Err(StoreError::Conflict { .. })));
    assert!(matches!(
        store.append("session-s", ExpectedVersion::Any, &[]).await,
        Err(StoreError::Empty)
    ));

    let texts: Vec<String> = store
        .read_stream("session-s", 0)
        .await
        .unwrap()
        .iter()
        .map(|e| e.payload["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(texts, ["a", "b", "c"]);
    assert_eq!(store.read_stream("session-s", 2).await.unwrap().len(), 1);
    assert_eq!(
        store
            .last_event("session-s")
            .await
            .unwrap()
            .unwrap()
            .version,
        3
    );
    env.cleanup().await;
}

#[tokio::test]
async fn a_replayed_step_appends_nothing() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    let id = derive_event_id(Uuid::new_v4(), "step");
    let first = store
        .append("session-s", ExpectedVersion::Any, &[message(id, "once")])
        .await
        .unwrap();
    assert!(!first.duplicate);
    let again = store
        .append("session-s", ExpectedVersion::Any, &[message(id, "once")])
        .await
        .unwrap();
    assert!(again.duplicate);
    assert_eq!(again.events, first.events);
    // Even with a stale expected version, a replay is recognised as such.
    let replay = store
        .append(
            "session-s",
            ExpectedVersion::NoStream,
            &[message(id, "once")],
        )
        .await
        .unwrap();
    assert!(replay.duplicate);
    assert_eq!(store.stream_version("session-s").await.unwrap(), 1);
    env.cleanup().await;
}

/// An event whose payload has what JSON encodings may write differently: escapes, non-ASCII
/// text, a float at full precision, an integer beyond i64, a tiny exponent, nesting.
fn probe(id: Uuid, marker: &str) -> NewEvent {
    NewEvent {
        event_id: id,
        event_type: "Probe".into(),
        schema_version: 2,
        payload: json!({
            "marker": marker,
            "text": "é 日本語 \"quoted\" \\ tab\t",
            "sum": 0.1 + 0.2,
            "big": 12_345_678_901_234_567_890u64,
            "tiny": -1e-7,
            "nested": {"b": [1, 2, {"c": null}], "a": true},
        }),
        metadata: EventMetadata {
            correlation_id: id,
            causation_id: Some(Uuid::new_v4()),
            traceparent: Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into()),
            tracestate: None,
            service: "probe".into(),
        },
    }
}

/// An append answers with the events as stored: a new event's payload and metadata are
/// what was sent (the database does not send them back), a duplicate's are the stored ones
/// even when the retry sent something else. Both for one append and for a batch.
#[tokio::test]
async fn an_append_answers_with_the_events_as_stored() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
    let new = store
        .append(
            "probe-one",
            ExpectedVersion::Any,
            &[probe(a, "first"), probe(b, "second")],
        )
        .await
        .unwrap();
    assert!(!new.duplicate);
    assert_eq!(new.events, store.read_stream("probe-one", 0).await.unwrap());
    let retried = store
        .append(
            "probe-one",
            ExpectedVersion::Any,
            &[probe(a, "changed"), probe(b, "changed")],
        )
        .await
        .unwrap();
    assert!(retried.duplicate);
    assert_eq!(retried.events, new.events);

    let c = Uuid::new_v4();
    let results = store
        .append_batch(&[
            AppendRequest {
                stream: "probe-batch".into(),
                expected: ExpectedVersion::Any,
                events: vec![probe(c, "batched")],
            },
            AppendRequest {
                stream: "probe-one".into(),
                expected: ExpectedVersion::Any,
                events: vec![probe(a, "changed again"), probe(b, "changed again")],
            },
        ])
        .await
        .unwrap();
    let [batched, again] = &results[..] else {
        panic!("{results:?}")
    };
    let (batched, again) = (batched.as_ref().unwrap(), again.as_ref().unwrap());
    assert!(!batched.duplicate && again.duplicate);
    assert_eq!(
        batched.events,
        store.read_stream("probe-batch", 0).await.unwrap()
    );
    assert_eq!(again.events, new.events);
    env.cleanup().await;
}

#[tokio::test]
async fn concurrent_appends_to_one_stream_never_share_a_version() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    let tasks: Vec<_> = (0..20)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .append(
                        "session-race",
                        ExpectedVersion::Any,
                        &[message(Uuid::new_v4(), &i.to_string())],
                    )
                    .await
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    let versions: Vec<i32> = store
        .read_stream("session-race", 0)
        .await
        .unwrap()
        .iter()
        .map(|e| e.version)
        .collect();
    assert_eq!(versions, (1..=20).collect::<Vec<_>>());
    env.cleanup().await;
}

#[tokio::test]
async fn events_are_immutable() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    store
        .append(
            "session-s",
            ExpectedVersion::Any,
            &[message(Uuid::new_v4(), "x")],
        )
        .await
        .unwrap();
    assert!(sqlx::query("UPDATE events SET stream = 'other'")
        .execute(store.pool())
        .await
        .is_err());
    assert!(sqlx::query("DELETE FROM events")
        .execute(store.pool())
        .await
        .is_err());
    env.cleanup().await;
}

/// A transaction that took a lower position but commits later must not be skipped.
#[tokio::test]
async fn reading_after_a_position_never_skips_a_late_commit() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    let insert = "INSERT INTO events (event_id, stream, version, event_type, payload, metadata) \
                  VALUES ($1, $2, 1, 'Test', '{}', '{\"correlation_id\":\"00000000-0000-0000-0000-000000000000\",\"service\":\"t\"}') \
                  RETURNING position";
    let mut early = store.pool().begin().await.unwrap();
    let low: i64 = sqlx::query_scalar(insert)
        .bind(Uuid::new_v4())
        .bind("early")
        .fetch_one(&mut *early)
        .await
        .unwrap();
    let mut late = store.pool().begin().await.unwrap();
    let high: i64 = sqlx::query_scalar(insert)
        .bind(Uuid::new_v4())
        .bind("late")
        .fetch_one(&mut *late)
        .await
        .unwrap();
    assert!(low < high);
    late.commit().await.unwrap();

    // The higher position is committed, but a lower one may still come: hold it back.
    let seen = store
        .read_all_after(ReadPosition::START, 100)
        .await
        .unwrap();
    assert!(
        seen.is_empty(),
        "read {:?} while position {low} was still open",
        seen.iter().map(|e| e.position).collect::<Vec<_>>()
    );

    early.commit().await.unwrap();
    // Other tests' transactions elsewhere in the cluster may hold the horizon briefly.
    let seen = eventually(Duration::from_secs(10), "both events readable", || async {
        let seen = store
            .read_all_after(ReadPosition::START, 100)
            .await
            .unwrap();
        (seen.len() == 2).then_some(seen)
    })
    .await;
    assert_eq!(
        seen.iter().map(|e| e.position).collect::<Vec<_>>(),
        [low, high]
    );
    // Resuming from the last one read yields nothing more; from the first, the second.
    assert!(store
        .read_all_after(ReadPosition::of(&seen[1]), 100)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        store
            .read_all_after(ReadPosition::of(&seen[0]), 100)
            .await
            .unwrap()[0]
            .position,
        high
    );
    env.cleanup().await;
}

#[tokio::test]
async fn get_first_of_prefers_the_order_asked_not_the_order_stored() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    let (older, newer, missing) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    store
        .append(
            "session-first-of",
            ExpectedVersion::Any,
            &[message(older, "older"), message(newer, "newer")],
        )
        .await
        .unwrap();
    let first = |ids: Vec<Uuid>| {
        let store = store.clone();
        async move { store.get_first_of(&ids).await.unwrap().map(|e| e.event_id) }
    };
    assert_eq!(first(vec![missing, newer, older]).await, Some(newer));
    assert_eq!(first(vec![older, newer]).await, Some(older));
    assert_eq!(first(vec![missing]).await, None);
    assert_eq!(first(Vec::new()).await, None);
    env.cleanup().await;
}

#[tokio::test]
async fn the_held_back_check_reads_the_index_not_the_whole_store() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    // A store big enough that a scan of it is a plan the planner would pick, analysed.
    store_filler_events(store.pool(), "bulk-", 500, 20_000).await;
    analyse_events(store.pool()).await;
    let end = |order: &'static str| {
        let pool = store.pool().clone();
        async move {
            let (tx_id, position): (i64, i64) = sqlx::query_as(&format!(
                "SELECT tx_id, position FROM events ORDER BY tx_id {order}, position {order} LIMIT 1"
            ))
            .fetch_one(&pool)
            .await
            .unwrap();
            ReadPosition { tx_id, position }
        }
    };
    let (first, last) = (end("ASC").await, end("DESC").await);

    // A long-lived connection's plan: generic, as Postgres settles on after a few runs.
    let mut tx = store.pool().begin().await.unwrap();
    sqlx::query("SET LOCAL plan_cache_mode = force_generic_plan")
        .execute(&mut *tx)
        .await
        .unwrap();
    assert!(
        !any_after_in(&mut *tx, last).await.unwrap(),
        "nothing after the head"
    );
    assert!(
        any_after_in(&mut *tx, first).await.unwrap(),
        "events after the first"
    );
    let (seq_scans, index_scans): (i64, i64) = sqlx::query_as(
        "SELECT seq_scan, idx_scan FROM pg_stat_xact_user_tables WHERE relname = 'events'",
    )
    .fetch_one(&mut *tx)
    .await
    .unwrap();
    assert_eq!(seq_scans, 0, "the check scanned the whole store");
    assert!(index_scans >= 2, "{index_scans} index scans");
    tx.rollback().await.unwrap();
    env.cleanup().await;
}

/// Calls `ghost_append` on `conn` with one new user message in `stream`.
/// `ghost_append` at any version.
const APPEND: &str = "SELECT duplicate FROM ghost_append($1, -1, $2)";
/// `ghost_append_turn`, with the message (and the filler) a turn's end: never mid-turn.
const APPEND_TURN: &str = "SELECT duplicate FROM ghost_append_turn($1, $2, \
     ARRAY['UserMessageReceived', 'Filler'], ARRAY['AutonomyMessageRendered'], 60)";

async fn append_message_on(conn: &mut sqlx::PgConnection, call: &str, stream: &str) {
    let events = json!([{
        "event_id": Uuid::new_v4(),
        "event_type": "UserMessageReceived",
        "schema_version": 1,
        "payload": {"text": "hello"},
        "metadata": {"correlation_id": Uuid::new_v4(), "service": "test"},
    }]);
    let duplicate: bool = sqlx::query_scalar(call)
        .bind(stream)
        .bind(events)
        .fetch_one(conn)
        .await
        .unwrap();
    assert!(!duplicate);
}

#[tokio::test]
async fn an_append_reads_the_store_by_key_with_plans_made_when_it_was_new() {
    reads_by_key_with_plans_made_when_new(APPEND).await;
}

#[tokio::test]
async fn a_turn_append_reads_the_store_by_key_with_plans_made_when_it_was_new() {
    reads_by_key_with_plans_made_when_new(APPEND_TURN).await;
}

async fn reads_by_key_with_plans_made_when_new(call: &str) {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    // A service's pooled connection keeps the append function's plans: they were made
    // on the first appends to a new store, before any ANALYZE. Such a plan checked the
    // event ids by scanning the whole table, on every append.
    // Made with a few events stored (a page of them): the planner reads that page rather
    // than the index, and the plan stays.
    store_filler_events(store.pool(), "session-early-", 20, 20).await;
    let mut conn = connection_keeping_first_plans(store.pool()).await;
    for _ in 0..3 {
        append_message_on(&mut conn, call, "session-a").await;
    }
    // The store grows (other sessions, one long one).
    store_filler_events(store.pool(), "session-", 100, 5000).await;

    let mut tx = sqlx::Connection::begin(&mut *conn).await.unwrap();
    append_message_on(&mut tx, call, "session-a").await;
    append_message_on(&mut tx, call, "session-1").await;
    let (seq_scans, fetched) = table_reads_in_transaction(&mut tx, "events").await;
    tx.commit().await.unwrap();
    assert_eq!(seq_scans, 0, "an append scanned the whole store");
    assert!(fetched < 20, "{fetched} events read by two appends");
    // Only inside the function: the connection plans as configured.
    let setting: String = sqlx::query_scalar("SELECT current_setting('enable_seqscan')")
        .fetch_one(&mut *conn)
        .await
        .unwrap();
    assert_eq!(setting, "on");
    drop(conn);
    let versions: Vec<i32> = sqlx::query_scalar(
        "SELECT version FROM events WHERE stream = 'session-a' ORDER BY version",
    )
    .fetch_all(store.pool())
    .await
    .unwrap();
    assert_eq!(versions, [1, 2, 3, 4]);
    env.cleanup().await;
}

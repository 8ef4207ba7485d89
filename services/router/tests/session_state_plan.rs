//! The router's per-turn read of a session (`state_before_sql`) stays cheap however long
//! the conversation: the user-message parts read the partial indexes of migration 0071,
//! the decisions are found walking back a few events from the message, and the count of
//! user messages goes on from the one the latest decision recorded.

use ghost_router::flow::turn::{state_before_sql, StateRow};
use ghost_testkit::plans::{
    analyse_events, connection_keeping_first_plans, index_reads_in_transaction,
    store_filler_events, table_reads_in_transaction,
};
use ghost_testkit::testing::TestEnv;

/// Turns in the long session; each stores four events.
const TURNS: i32 = 400;

/// The columns of the state read this test checks.
type State = (
    Option<Vec<String>>,
    Option<serde_json::Value>,
    Option<String>,
    i64,
);

/// The state read of the user message at `version` in `stream`, on `tx`: the commands,
/// the previous decision, the summary and the user-message count (the summary's count, the
/// reroute, the paused work and the check flag are read too, and must be absent here).
async fn state_at(tx: &mut sqlx::PgConnection, stream: &str, version: i32) -> State {
    let row: StateRow = sqlx::query_as(&state_before_sql())
        .bind(stream)
        .bind(version)
        .bind(stream.trim_start_matches("session-"))
        .fetch_one(tx)
        .await
        .unwrap();
    assert_eq!((row.3, &row.5, &row.6, row.7), (0, &None, &None, false));
    (row.0, row.1, row.2, row.4)
}

/// Stores `turns` turns in `stream`: a user message, its decision and two more events per
/// turn; one early message turns `/local` on. Decisions record their count when `counted`;
/// the decision of turn `undecided` is not stored yet (another task is still routing it).
async fn conversation(
    pool: &sqlx::PgPool,
    stream: &str,
    turns: i32,
    counted: bool,
    undecided: i32,
) {
    sqlx::query(
        "INSERT INTO events (event_id, stream, version, event_type, payload, metadata) \
         SELECT md5($1 || g)::uuid, $1, g + 1, \
                CASE WHEN g % 4 = 1 AND g / 4 = $4 THEN 'Filler' \
                ELSE (ARRAY['UserMessageReceived', 'RouteDecided', 'RenderRequested', 'AssistantReplied'])[g % 4 + 1] END, \
                CASE g % 4 \
                  WHEN 0 THEN jsonb_build_object('text', CASE WHEN g = 40 THEN '/local please' ELSE 'message ' || g END) \
                  WHEN 1 THEN jsonb_build_object('route', 'CHAT', 'primary', true, 'turn', g / 4, \
                                'user_event_id', md5($1 || (g - 1))::uuid) \
                              || CASE WHEN $3 THEN jsonb_build_object('user_turns', g / 4 + 1) ELSE '{}' END \
                  ELSE '{}'::jsonb END, \
                '{}' \
         FROM generate_series(0, $2 * 4 - 1) g",
    )
    .bind(stream)
    .bind(turns)
    .bind(counted)
    .bind(undecided)
    .execute(pool)
    .await
    .unwrap();
}

/// Reads the state of the long session's last message in a transaction on `conn` and
/// checks what it returned and how much of the store it read.
async fn check_bounded_read(conn: &mut sqlx::PgConnection, when: &str) {
    let mut tx = sqlx::Connection::begin(conn).await.unwrap();
    // The last turn's user message.
    let version = (TURNS - 1) * 4 + 1;
    let (commands, previous, summary, user_turns) =
        state_at(&mut tx, "session-long", version).await;
    assert_eq!(commands, Some(vec!["/local please".to_owned()]), "{when}");
    // The decision before the message still being routed.
    let previous = previous.expect("the latest stored decision");
    assert_eq!(previous["turn"], TURNS - 3, "{when}");
    assert_eq!(summary, None, "{when}");
    // The stored decision's count, and the two messages since.
    assert_eq!(user_turns, i64::from(TURNS), "{when}");

    let (seq_scans, _) = table_reads_in_transaction(&mut tx, "events").await;
    assert_eq!(seq_scans, 0, "{when}: the read scanned the whole store");
    let (_, tuples) = index_reads_in_transaction(&mut tx, "events_user_messages_by_stream").await;
    assert!(
        tuples <= 8,
        "{when}: {tuples} user messages read to count on from the last decision: the \
         count grows with the conversation"
    );
    let (scans, tuples) = index_reads_in_transaction(&mut tx, "events_mode_commands").await;
    assert!(
        scans >= 1,
        "{when}: the commands are not read from their index"
    );
    assert!(tuples <= 4, "{when}: {tuples} entries read for one command");
    // The decisions walk back from the message: a few entries, not the session's 1,600.
    let (_, tuples) = index_reads_in_transaction(&mut tx, "events_stream_version").await;
    assert!(
        tuples < 200,
        "{when}: {tuples} entries of the session's key read: the read grows with the \
         conversation"
    );
    tx.rollback().await.unwrap();
}

#[tokio::test]
async fn the_session_read_never_visits_the_whole_conversation() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    // A service's pooled connection keeps its plans: they were made while the store was
    // new, for a short session, and no ANALYZE has run yet (a deployment's first minute).
    let mut conn = connection_keeping_first_plans(store.pool()).await;
    conversation(store.pool(), "session-new", 5, true, -1).await;
    let (_, _, _, user_turns) = state_at(&mut conn, "session-new", 17).await;
    assert_eq!(user_turns, 5);

    // One long conversation whose second-to-last message is still being routed, among
    // other streams' events.
    conversation(store.pool(), "session-long", TURNS, true, TURNS - 2).await;
    sqlx::query(
        "INSERT INTO events (event_id, stream, version, event_type, payload, metadata) \
         SELECT gen_random_uuid(), 'session-' || (g % 200), g / 200 + 1, \
                (ARRAY['UserMessageReceived', 'RouteDecided', 'Filler'])[g % 3 + 1], \
                jsonb_build_object('text', 'other ' || g), '{}'::jsonb \
         FROM generate_series(0, 19999) g",
    )
    .execute(store.pool())
    .await
    .unwrap();
    store_filler_events(store.pool(), "memory-", 20_000, 20_000).await;
    check_bounded_read(&mut conn, "plan made on a new store").await;
    // A connection opened now plans for the grown store, still without statistics.
    let mut fresh = connection_keeping_first_plans(store.pool()).await;
    check_bounded_read(&mut fresh, "plan made on a grown store never analysed").await;
    drop(fresh);

    // Analysed: the plan is made again, from statistics of the grown store.
    analyse_events(store.pool()).await;
    check_bounded_read(&mut conn, "plan made on the analysed store").await;
    drop(conn);
    env.cleanup().await;
}

#[tokio::test]
async fn decisions_stored_before_the_count_was_recorded_are_counted_whole() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    conversation(store.pool(), "session-old", 50, false, -1).await;
    let mut conn = store.pool().acquire().await.unwrap();
    for turn in [0, 1, 2, 49] {
        let (_, _, _, user_turns) = state_at(&mut conn, "session-old", turn * 4 + 1).await;
        assert_eq!(user_turns, i64::from(turn + 1), "turn {turn}");
    }
    // Old decisions, then one that records its count: the turns after it count on from it.
    drop(conn);
    let mut tx = store.pool().begin().await.unwrap();
    sqlx::query(
        "INSERT INTO events (event_id, stream, version, event_type, payload, metadata) VALUES \
         (gen_random_uuid(), 'session-old', 201, 'UserMessageReceived', '{\"text\": \"a\"}', '{}'), \
         (md5('late')::uuid, 'session-old', 202, 'UserMessageReceived', '{\"text\": \"b\"}', '{}'), \
         (gen_random_uuid(), 'session-old', 203, 'RouteDecided', \
          jsonb_build_object('route', 'CHAT', 'user_event_id', md5('late')::uuid, 'user_turns', 52), '{}'), \
         (gen_random_uuid(), 'session-old', 204, 'UserMessageReceived', '{\"text\": \"c\"}', '{}')",
    )
    .execute(&mut *tx)
    .await
    .unwrap();
    let (_, _, _, user_turns) = state_at(&mut tx, "session-old", 204).await;
    assert_eq!(user_turns, 53);
    // A long worker loop later, the decisions are out of the first window: the previous
    // one is found further back, and the session is counted whole.
    sqlx::query(
        "INSERT INTO events (event_id, stream, version, event_type, payload, metadata) \
         SELECT gen_random_uuid(), 'session-old', g, 'WorkerStep', '{}'::jsonb, '{}'::jsonb \
         FROM generate_series(205, 304) g \
         UNION ALL SELECT gen_random_uuid(), 'session-old', 305, 'UserMessageReceived', \
                          '{\"text\": \"d\"}', '{}'",
    )
    .execute(&mut *tx)
    .await
    .unwrap();
    let (_, previous, _, user_turns) = state_at(&mut tx, "session-old", 305).await;
    assert_eq!(
        previous.expect("the decision before the loop")["user_turns"],
        52
    );
    assert_eq!(user_turns, 54);
    tx.rollback().await.unwrap();
    env.cleanup().await;
}

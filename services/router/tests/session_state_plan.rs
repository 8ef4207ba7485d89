//! The router's per-turn read of a session (`state_before_sql`) stays cheap however long
//! the conversation: the user-message parts read the partial indexes of migration 0071,
//! and the previous decision is found walking back a few events from the message.

use ghost_router::flow::turn::state_before_sql;
use ghost_testkit::testing::TestEnv;

/// Scans of `index` and entries they read, in this transaction.
async fn index_reads(conn: &mut sqlx::PgConnection, index: &str) -> (i64, i64) {
    // Postgres 15 has no per-transaction index view; these are the functions behind the
    // cumulative one (`idx_scan`, `idx_tup_read`).
    sqlx::query_as(
        "SELECT pg_stat_get_xact_numscans($1::regclass), \
                pg_stat_get_xact_tuples_returned($1::regclass)",
    )
    .bind(index)
    .fetch_one(conn)
    .await
    .unwrap()
}

/// Turns in the long session; each stores four events.
const TURNS: i32 = 400;

#[tokio::test]
async fn the_session_read_never_visits_the_whole_conversation() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    // One long conversation (a user message, its decision and two more events per turn; one
    // early message turns `/local` on) among other streams' events, analysed.
    sqlx::query(
        "INSERT INTO events (event_id, stream, version, event_type, payload, metadata) \
         SELECT gen_random_uuid(), 'session-long', g + 1, \
                (ARRAY['UserMessageReceived', 'RouteDecided', 'RenderRequested', 'AssistantReplied'])[g % 4 + 1], \
                CASE g % 4 \
                  WHEN 0 THEN jsonb_build_object('text', CASE WHEN g = 40 THEN '/local please' ELSE 'message ' || g END) \
                  WHEN 1 THEN jsonb_build_object('route', 'CHAT', 'primary', true, 'turn', g / 4) \
                  ELSE '{}'::jsonb END, \
                '{}' \
         FROM generate_series(0, $1 * 4 - 1) g",
    )
    .bind(TURNS)
    .execute(store.pool())
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO events (event_id, stream, version, event_type, payload, metadata) \
         SELECT gen_random_uuid(), 'session-' || (g % 200), g / 200 + 1, \
                (ARRAY['UserMessageReceived', 'RouteDecided', 'Filler'])[g % 3 + 1], \
                jsonb_build_object('text', 'other ' || g), '{}' \
         FROM generate_series(0, 19999) g",
    )
    .execute(store.pool())
    .await
    .unwrap();
    sqlx::query("ANALYZE events")
        .execute(store.pool())
        .await
        .unwrap();

    // A long-lived connection's plan: generic, as Postgres settles on after a few runs.
    let mut tx = store.pool().begin().await.unwrap();
    sqlx::query("SET LOCAL plan_cache_mode = force_generic_plan")
        .execute(&mut *tx)
        .await
        .unwrap();
    // The last turn's user message.
    let version = (TURNS - 1) * 4 + 1;
    let (commands, previous, summary, user_turns): (
        Option<Vec<String>>,
        Option<serde_json::Value>,
        Option<String>,
        i64,
    ) = sqlx::query_as(&state_before_sql())
        .bind("session-long")
        .bind(version)
        .bind("long")
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    assert_eq!(commands, Some(vec!["/local please".to_owned()]));
    let previous = previous.expect("the previous turn's decision");
    assert_eq!(previous["turn"], TURNS - 2);
    assert_eq!(summary, None);
    assert_eq!(user_turns, i64::from(TURNS));

    let seq_scans: i64 = sqlx::query_scalar(
        "SELECT seq_scan FROM pg_stat_xact_user_tables WHERE relname = 'events'",
    )
    .fetch_one(&mut *tx)
    .await
    .unwrap();
    assert_eq!(seq_scans, 0, "the read scanned the whole store");
    let (scans, _) = index_reads(&mut tx, "events_user_messages_by_stream").await;
    assert!(
        scans >= 1,
        "the count does not read the user messages' index"
    );
    let (scans, tuples) = index_reads(&mut tx, "events_mode_commands").await;
    assert!(scans >= 1, "the commands are not read from their index");
    assert!(tuples <= 1, "{tuples} entries read for one command");
    // The decision walks back from the message: a few entries, not the session's 1,600.
    let (_, tuples) = index_reads(&mut tx, "events_stream_version").await;
    assert!(
        tuples < 20,
        "{tuples} entries of the session's key read: the read grows with the conversation"
    );
    tx.rollback().await.unwrap();
    env.cleanup().await;
}

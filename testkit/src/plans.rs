//! Tests of query plans: a connection that keeps the plans made at a statement's first run
//! (as a service's long-lived connection keeps the one it settles on), and what a
//! transaction has read of a table.

use sqlx::pool::PoolConnection;
use sqlx::{PgConnection, PgPool, Postgres};

/// A pooled connection whose statements keep the generic plan made at their first run:
/// run them on a small store, grow it, and the plans are still the small store's.
pub async fn connection_keeping_first_plans(pool: &PgPool) -> PoolConnection<Postgres> {
    let mut conn = pool.acquire().await.expect("a pooled connection");
    sqlx::query("SET plan_cache_mode = force_generic_plan")
        .execute(&mut *conn)
        .await
        .expect("generic plans");
    conn
}

/// Sequential scans of `table`, and rows fetched from it by an index or a bitmap, in the
/// transaction `conn` is in.
pub async fn table_reads_in_transaction(conn: &mut PgConnection, table: &str) -> (i64, i64) {
    sqlx::query_as(
        "SELECT seq_scan, pg_stat_get_xact_tuples_fetched(relid) \
         FROM pg_stat_xact_user_tables WHERE relname = $1",
    )
    .bind(table)
    .fetch_one(conn)
    .await
    .expect("the transaction's table statistics")
}

/// Stores `count` events of type `Filler` straight into `events`, spread over `streams`
/// streams named `<prefix><n>` (a store of a given size, for the planner to see).
pub async fn store_filler_events(pool: &PgPool, prefix: &str, streams: i32, count: i32) {
    sqlx::query(
        "INSERT INTO events (event_id, stream, version, event_type, payload, metadata) \
         SELECT gen_random_uuid(), $1 || (g % $2), g / $2 + 1, 'Filler', '{}', '{}' \
         FROM generate_series(0, $3 - 1) g",
    )
    .bind(prefix)
    .bind(streams)
    .bind(count)
    .execute(pool)
    .await
    .expect("filler events stored");
}

/// Scans of `index` and the entries they read, in the transaction `conn` is in.
pub async fn index_reads_in_transaction(conn: &mut PgConnection, index: &str) -> (i64, i64) {
    // Postgres 15 has no per-transaction index view; these are the functions behind the
    // cumulative one (`idx_scan`, `idx_tup_read`).
    sqlx::query_as(
        "SELECT pg_stat_get_xact_numscans($1::regclass), \
                pg_stat_get_xact_tuples_returned($1::regclass)",
    )
    .bind(index)
    .fetch_one(conn)
    .await
    .expect("the transaction's index statistics")
}

/// Analyses `events`, so the next plans are made from statistics of the store as it is.
pub async fn analyse_events(pool: &PgPool) {
    sqlx::query("ANALYZE events")
        .execute(pool)
        .await
        .expect("events analysed");
}

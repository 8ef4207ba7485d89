//! The persona's vector cache against the real Postgres: it loads what was stored, picks up
//! rows stored after its first load (a just-written one too, which is read again until it
//! settles), ranks by cosine with ties by id, and keeps each model apart.

use ghost_persona::recall::vector_cache::VectorCache;
use ghost_testkit::testing::TestEnv;

const MODEL: &str = "test-embedding";

async fn store(pool: &sqlx::PgPool, id: &str, vector: &[f32], age_secs: i64) {
    sqlx::query(
        "INSERT INTO memory_embeddings (item_id, model, persona, session_id, text, vector, created_at) \
         VALUES ($1, $2, 'kuro', NULL, 'text', $3, clock_timestamp() - make_interval(secs => $4))",
    )
    .bind(id)
    .bind(MODEL)
    .bind(vector)
    .bind(age_secs as f64)
    .execute(pool)
    .await
    .unwrap();
}

#[tokio::test]
async fn the_cache_loads_later_rows_and_ranks_by_cosine() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store_ = env.store().await;
    let pool = store_.pool();
    store(pool, "state:a", &[1.0, 0.0, 0.0], 60).await;
    store(pool, "state:b", &[0.6, 0.8, 0.0], 60).await;
    let cache = VectorCache::of(pool, MODEL);
    let near = cache
        .clone()
        .nearest(pool, MODEL, &[2.0, 0.0, 0.0], 0.5)
        .await
        .unwrap();
    let ids: Vec<&str> = near.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["state:a", "state:b"]);
    assert!(
        (near[0].1 - 1.0).abs() < 1e-6 && (near[1].1 - 0.6).abs() < 1e-6,
        "{near:?}"
    );

    // Stored after the first load, one of them just now (not settled yet): both found, at
    // this load and the next.
    store(pool, "state:c", &[0.0, 0.0, 1.0], 0).await;
    store(pool, "state:d", &[0.0, 0.0, 3.0], 60).await;
    let query = [0.0, 0.0, 1.0];
    for _ in 0..2 {
        let near = VectorCache::of(pool, MODEL)
            .nearest(pool, MODEL, &query, 0.5)
            .await
            .unwrap();
        let ids: Vec<&str> = near.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(ids, ["state:c", "state:d"], "ties by id");
    }
    // Below the threshold: nothing; another model: its own cache.
    let near = cache
        .clone()
        .nearest(pool, MODEL, &[0.0, 1.0, 0.0], 0.9)
        .await
        .unwrap();
    assert!(near.is_empty(), "{near:?}");
    let other = VectorCache::of(pool, "another-model")
        .nearest(pool, "another-model", &query, 0.0)
        .await
        .unwrap();
    assert!(other.is_empty());
    env.cleanup().await;
}

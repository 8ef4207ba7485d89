//! `TestEnv`: what a test leaves behind when it panics before its `cleanup`.

use ghost_shared::bus::Bus;
use ghost_testkit::testing::TestEnv;

#[tokio::test]
async fn a_test_that_panics_leaves_no_database_or_stream_behind() {
    let (sent, received) = tokio::sync::oneshot::channel();
    let failing = tokio::spawn(async move {
        let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
        // Its streams exist once a bus connects.
        Bus::connect(env.config.ghost.bus.clone()).await.unwrap();
        let _ = sent.send((
            env.database.clone(),
            env.config.ghost.bus.stream_name.clone(),
        ));
        panic!("a failing test (on purpose)");
    });
    assert!(failing.await.unwrap_err().is_panic());
    let (database, stream) = received.await.unwrap();

    let probe = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = probe.store().await;
    let left: i64 = sqlx::query_scalar("SELECT count(*) FROM pg_database WHERE datname = $1")
        .bind(&database)
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(left, 0, "database {database} is left");
    let bus = Bus::connect(probe.config.ghost.bus.clone()).await.unwrap();
    assert!(
        bus.jetstream().get_stream(&stream).await.is_err(),
        "stream {stream} is left"
    );
    store.pool().close().await;
    probe.cleanup().await;
}

#[tokio::test]
async fn an_environment_dropped_without_panicking_is_left_for_its_owner() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let database = env.database.clone();
    let config = env.config.clone();
    drop(env);
    // Still there: a child process may be using it.
    let store = ghost_shared::store::EventStore::connect(&config.ghost.database.url, 1)
        .await
        .unwrap();
    let events: i64 = sqlx::query_scalar("SELECT count(*) FROM events")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(events, 0, "{database} is still usable");
    store.pool().close().await;
    // Dropped here by hand, as its owner would.
    let owner = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let admin = owner.store().await;
    sqlx::query(&format!("DROP DATABASE \"{database}\" WITH (FORCE)"))
        .execute(admin.pool())
        .await
        .unwrap();
    admin.pool().close().await;
    owner.cleanup().await;
}

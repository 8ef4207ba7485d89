//! Configuration for a NATS cluster (issue 36, item 1): `bus.servers` lists more nodes and
//! the client fails over between them; `bus.replicas` above 1 against a single server is
//! refused at start with a message naming the setting and the fix.

use ghost_testkit::testing::TestEnv;

#[tokio::test]
async fn replicas_a_single_server_cannot_place_are_refused_at_start() {
    let env = TestEnv::new("http://127.0.0.1:9", &[("GHOST_BUS__REPLICAS", "3")]).await;
    let refused = env
        .context("router")
        .await
        .expect_err("three replicas on one NATS server");
    let message = refused.to_string();
    for named in [
        "bus.replicas is 3",
        "not part of a cluster",
        "GHOST_BUS__REPLICAS=1",
        "bus.servers",
    ] {
        assert!(message.contains(named), "{message}");
    }
    env.cleanup().await;
}

#[tokio::test]
async fn the_client_fails_over_to_a_listed_server() {
    let live = std::env::var(ghost_testkit::testing::TEST_NATS_URL_ENV)
        .unwrap_or_else(|_| "nats://127.0.0.1:4222".into());
    // Nothing listens on port 1: the client goes on to the next server of the list.
    let env = TestEnv::new(
        "http://127.0.0.1:9",
        &[
            ("GHOST_BUS__URL", "nats://127.0.0.1:1"),
            ("GHOST_BUS__SERVERS", &live),
        ],
    )
    .await;
    let ctx = env
        .context("router")
        .await
        .expect("connected through bus.servers");
    assert_eq!(ctx.config.ghost.bus.servers, std::slice::from_ref(&live));
    drop(ctx);
    env.cleanup().await;
}

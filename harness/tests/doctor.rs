//! The harnesses that run on the configured PostgreSQL and NATS check both first: pointed
//! at what is missing (a closed NATS port, a role that does not exist), they say what and
//! the fix, and do not panic.

mod support;

use ghost_testkit::testing::{free_loopback_addr, TestEnv};
use support::run_harness_with;

#[tokio::test]
async fn harnesses_without_their_infrastructure_say_what_is_missing_instead_of_panicking() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    // Nobody listens there once the probe's listener is dropped.
    let nats = format!("nats://{}", free_loopback_addr().expect("port"));
    let no_role = env.database_url_with_unknown_role();
    for (args, var, value, expect) in [
        (
            vec!["load", "--turns", "1"],
            "GHOST_DATABASE__URL",
            no_role.as_str(),
            "deploy/services.sh",
        ),
        (
            vec!["load-stage", "--runs", "1"],
            "GHOST_BUS__URL",
            nats.as_str(),
            "[FAIL] nats:",
        ),
        (
            vec!["chaos", "--messages", "1"],
            "GHOST_BUS__URL",
            nats.as_str(),
            "[FAIL] nats:",
        ),
    ] {
        let mut vars = env.vars.clone();
        vars.push((var.to_owned(), value.to_owned()));
        let (ok, _, stderr) = run_harness_with(&args, &vars);
        assert!(!ok, "{args:?} fails");
        assert!(stderr.contains(expect), "{args:?} with {var}: {stderr}");
        assert!(
            !stderr.contains("panicked"),
            "{args:?} with {var}: {stderr}"
        );
    }
    env.cleanup().await;
}

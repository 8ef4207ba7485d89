//! Planted secrets in a CODE request never reach the (fake) cloud server and never appear in
//! a log line. Its own test binary: it installs the one global tracing subscriber, capturing
//! every line the in-process services write (debug for Ghost's crates, info for the rest).

mod routing_support;
mod support;

use std::time::Duration;

use ghost_router::projections::RoutingLog;
use ghost_testkit::testing::eventually;
use routing_support::{RoutingApp, Scripts};
use support::logs::LogCapture;

const SECRETS: [&str; 7] = [
    "sk-proj-AbCdEfGhIjKlMnOpQrStUv123456",
    "Sup3rS3cret",
    "ren.kuro@example.com",
    "090-1234-5678",
    "hunter2hunter2",
    "abcdefghijklmnopqrstuvwxyz123456",
    "MIIEowIBAAKCAQEA1234567890abcdef",
];

const REQUEST: &str = "/code このPythonを直して\n```python\nAPI_KEY = \"sk-proj-AbCdEfGhIjKlMnOpQrStUv123456\"\nDB = \"postgres://admin:Sup3rS3cret@db.internal:5432/app\"\n# contact ren.kuro@example.com / 090-1234-5678\npassword=hunter2hunter2\nprint(1/0)\n```\nAuthorization: Bearer abcdefghijklmnopqrstuvwxyz123456\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1234567890abcdef\n-----END RSA PRIVATE KEY-----";

#[tokio::test]
async fn planted_secrets_never_reach_the_cloud_or_the_logs() {
    let capture = LogCapture::default();
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(
            "info,ghost=debug,ghost_shared=debug,ghost_router=debug,ghost_worker=debug,\
             ghost_coder=debug,ghost_persona=debug,ghost_gateway=debug",
        ))
        .with_writer(capture.clone())
        .with_ansi(false)
        .init();
    let r = RoutingApp::spawn(Scripts::default(), &[]).await;

    let reply = r.say("sec", REQUEST).await;
    assert!(reply.starts_with("コーディングするね。"), "{reply}");
    // A follow-up: its context (the earlier turn) goes to the cloud too, masked.
    r.say("sec", "/code 続きもお願い").await;

    let cloud = r.cloud.requests();
    assert_eq!(cloud.len(), 2, "both CODE messages reached the cloud");
    for request in &cloud {
        let body = request.body.to_string();
        assert!(
            body.contains("[REDACTED"),
            "the masked task was sent: {body}"
        );
        for secret in SECRETS {
            assert!(!body.contains(secret), "{secret} reached the cloud: {body}");
        }
    }
    // The routing log keeps the input masked.
    let users = r.of_type("sec", "UserMessageReceived").await;
    let row = eventually(Duration::from_secs(15), "routing log row", || async {
        RoutingLog::get(r.app.store.pool(), users[0].event_id)
            .await
            .ok()?
    })
    .await;
    let input = row.input_masked.unwrap_or_default();
    for secret in SECRETS {
        assert!(
            !input.contains(secret),
            "{secret} in the routing log: {input}"
        );
    }

    let logs = capture.text();
    assert!(logs.contains("route decided"), "logs were captured");
    assert!(
        logs.contains("coder run on the cloud model"),
        "logs were captured"
    );
    for secret in SECRETS {
        assert!(!logs.contains(secret), "{secret} appears in the logs");
    }
    r.cleanup().await;
}

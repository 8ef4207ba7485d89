//! Planted secrets and personal data of every masking category never reach the (fake) cloud
//! server and never appear in a log line: in the CODE message itself, in earlier turns, in
//! the session summary the worker wrote and in the cloud's own earlier results. The persona's
//! reply says that the message's secrets were withheld. Its own test binary: it installs the
//! one global tracing subscriber (masking writer, as production's), capturing every line the
//! in-process services write (debug for Ghost's crates, info for the rest).

mod routing_support;
mod support;

use std::time::Duration;

use ghost_router::projections::{RoutingLog, RoutingSessions};
use ghost_shared::masking::MaskingMakeWriter;
use ghost_testkit::testing::eventually;
use routing_support::{RoutingApp, Scripts};
use support::logs::LogCapture;

/// One planted value per category, with the category it belongs to.
const PLANTED: [(&str, &str); 16] = [
    ("api_key", "sk-proj-AbCdEfGhIjKlMnOpQrStUv123456"),
    ("api_key", "AKIAIOSFODNN7EXAMPLE"),
    ("aws_secret_key", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    (
        "jwt",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlMTIz",
    ),
    ("private_key", "MIIEowIBAAKCAQEA1234567890abcdef"),
    ("url_credentials", "Sup3rS3cret"),
    ("auth_header", "abcdefghijklmnopqrstuvwxyz123456"),
    ("secret_assignment", "hunter2hunter2"),
    ("secret_in_words", "correcthorsebattery9"),
    ("secret_in_words", "ひみつのあいことば"),
    ("payment_card", "4111 1111 1111 1111"),
    ("national_id", "1234 5678 9018"),
    ("phone", "090-1234-5678"),
    ("email", "ren.kuro@example.com"),
    ("street_address", "東京都千代田区千代田1-1"),
    ("payment_card", "5500 0000 0000 0004"),
];

/// An earlier, local-only turn: a card, a My Number, an address and a password in words.
const EARLIER: &str = "覚えておいてね。カードは 4111 1111 1111 1111、マイナンバーは 1234 5678 9018、住所は東京都千代田区千代田1-1、my password is correcthorsebattery9";

const REQUEST: &str = "/code このPythonを直して\n```python\nAPI_KEY = \"sk-proj-AbCdEfGhIjKlMnOpQrStUv123456\"\nAWS_ACCESS_KEY_ID = \"AKIAIOSFODNN7EXAMPLE\"\nAWS_SECRET_ACCESS_KEY = \"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\"\nDB = \"postgres://admin:Sup3rS3cret@db.internal:5432/app\"\nJWT = \"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlMTIz\"\n# contact ren.kuro@example.com / 090-1234-5678\npassword=hunter2hunter2\nprint(1/0)\n```\nAuthorization: Bearer abcdefghijklmnopqrstuvwxyz123456\nパスワードは「ひみつのあいことば」\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1234567890abcdef\n-----END RSA PRIVATE KEY-----";

#[tokio::test]
async fn planted_secrets_never_reach_the_cloud_or_the_logs() {
    let capture = LogCapture::default();
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(
            "info,ghost=debug,ghost_shared=debug,ghost_router=debug,ghost_worker=debug,\
             ghost_coder=debug,ghost_persona=debug,ghost_gateway=debug",
        ))
        .with_writer(MaskingMakeWriter::new(capture.clone()))
        .with_ansi(false)
        .init();
    // The worker's summary of the session repeats a card number: the summary goes to the
    // cloud as context, masked.
    let scripts = Scripts {
        summary: Some("ユーザーはカード 5500 0000 0000 0004 を登録したいと言った".into()),
        ..Scripts::default()
    };
    let r = RoutingApp::spawn(scripts, &[("GHOST_ROUTING__SUMMARIZE_AFTER_TURNS", "1")]).await;

    // An earlier turn that stays local; then the summary is written.
    r.say("sec", EARLIER).await;
    eventually(Duration::from_secs(20), "the session summary", || async {
        RoutingSessions::summary(r.app.store.pool(), "sec")
            .await
            .ok()
            .flatten()
    })
    .await;
    assert!(r.cloud.requests().is_empty(), "the first turn stayed local");

    let reply = r.say("sec", REQUEST).await;
    assert!(reply.starts_with("コーディングするね。"), "{reply}");
    assert!(
        reply.contains("クラウドには送っていない") && reply.contains("api_key"),
        "the reply says the secrets were withheld: {reply}"
    );
    // A follow-up: the earlier turns (and the cloud's own earlier result) go along, masked;
    // this message holds no secret, so nothing is announced.
    let follow_up = r.say("sec", "/code 続きもお願い").await;
    assert!(
        !follow_up.contains("クラウドには送っていない"),
        "{follow_up}"
    );

    let cloud = r.cloud.requests();
    assert_eq!(cloud.len(), 2, "both CODE messages reached the cloud");
    for request in &cloud {
        let body = request.body.to_string();
        for (category, secret) in PLANTED {
            assert!(
                !body.contains(secret),
                "{category} {secret} reached the cloud: {body}"
            );
        }
    }
    // The earlier turn and the summary did go along, masked.
    let first = cloud[0].body.to_string();
    for label in [
        "[REDACTED:payment_card]",
        "[REDACTED:national_id]",
        "[REDACTED:street_address]",
        "[REDACTED:secret_in_words]",
        "[REDACTED:api_key]",
        "[REDACTED:aws_secret_key]",
        "[REDACTED:private_key]",
        "[REDACTED:url_credentials]",
        "[REDACTED:jwt]",
    ] {
        assert!(first.contains(label), "{label} missing: {first}");
    }
    assert!(first.contains("summary of the conversation"), "{first}");
    let second = cloud[1].body.to_string();
    assert!(
        second.contains("このPythonを直して"),
        "the earlier CODE turn: {second}"
    );

    // The routing log keeps the input masked.
    let users = r.of_type("sec", "UserMessageReceived").await;
    let row = eventually(Duration::from_secs(15), "routing log row", || async {
        RoutingLog::get(r.app.store.pool(), users[1].event_id)
            .await
            .ok()?
    })
    .await;
    let input = row.input_masked.unwrap_or_default();
    for (category, secret) in PLANTED {
        assert!(
            !input.contains(secret),
            "{category} {secret} in the routing log: {input}"
        );
    }

    let logs = capture.text();
    assert!(logs.contains("route decided"), "logs were captured");
    assert!(
        logs.contains("coder run on the cloud model"),
        "logs were captured"
    );
    for (category, secret) in PLANTED {
        assert!(
            !logs.contains(secret),
            "{category} {secret} appears in the logs"
        );
    }
    r.cleanup().await;
}

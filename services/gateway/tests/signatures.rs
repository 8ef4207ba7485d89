//! Signature checks against every vector in `tests/fixtures/webhook_signatures.json`, plus the
//! ways a real request can be wrong (forged, missing, stale, future, malformed).

use base64::Engine as _;
use ghost_gateway::{line, slack};
use serde::Deserialize;

const FIXTURE: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/webhook_signatures.json"
));

#[derive(Deserialize)]
struct Fixture {
    slack: SlackVector,
    line: LineVector,
}

#[derive(Deserialize)]
struct SlackVector {
    signing_secret: String,
    timestamp: String,
    body: String,
    signature: String,
}

#[derive(Deserialize)]
struct LineVector {
    channel_secret: String,
    body: String,
    x_line_signature: String,
}

fn fixture() -> Fixture {
    match serde_json::from_str(FIXTURE) {
        Ok(f) => f,
        Err(e) => panic!("fixture does not parse: {e}"),
    }
}

fn slack_ts(v: &SlackVector) -> i64 {
    v.timestamp
        .parse()
        .unwrap_or_else(|e| panic!("fixture timestamp: {e}"))
}

// ---------------------------------------------------------------- LINE

#[test]
fn line_fixture_vector_verifies() {
    let f = fixture().line;
    assert_eq!(
        line::verify_signature(
            f.channel_secret.as_bytes(),
            f.body.as_bytes(),
            Some(&f.x_line_signature)
        ),
        Ok(())
    );
}

#[test]
fn line_fixture_sign_reproduces_header() {
    let f = fixture().line;
    assert_eq!(
        line::signature::sign(f.channel_secret.as_bytes(), f.body.as_bytes()).as_deref(),
        Ok(f.x_line_signature.as_str())
    );
}

#[test]
fn line_fixture_body_parses_and_starts_a_turn() {
    let f = fixture().line;
    let body = line::WebhookBody::from_slice(f.body.as_bytes())
        .unwrap_or_else(|e| panic!("fixture body: {e}"));
    assert_eq!(body.destination, "U00000000000000000000000000000000");
    let ev = body.events.first().unwrap_or_else(|| panic!("no event"));
    match line::classify(ev, &line::LineConfig::default()) {
        line::LineAction::StartTurn(t) => {
            assert_eq!(t.session_key, "line:user:U11111111111111111111111111111111");
            assert_eq!(t.webhook_event_id, "01JCTESTEVENT0000000000000");
            assert_eq!(
                t.reply_token.as_deref(),
                Some("rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr")
            );
            assert_eq!(
                t.input,
                line::TurnInput::Text {
                    text: "こんにちは".into()
                }
            );
        }
        other => panic!("fixture event not started: {other:?}"),
    }
}

#[test]
fn line_fixture_tampered_body_is_mismatch() {
    let f = fixture().line;
    let tampered = f.body.replace("こんにちは", "こんばんは");
    assert_ne!(tampered, f.body);
    assert_eq!(
        line::verify_signature(
            f.channel_secret.as_bytes(),
            tampered.as_bytes(),
            Some(&f.x_line_signature)
        ),
        Err(line::SignatureError::Mismatch)
    );
}

#[test]
fn line_fixture_reformatted_json_is_mismatch() {
    // Same JSON value, different bytes: the signature covers the raw body, not its meaning.
    let f = fixture().line;
    let value: serde_json::Value =
        serde_json::from_str(&f.body).unwrap_or_else(|e| panic!("fixture body: {e}"));
    let pretty = serde_json::to_string_pretty(&value).unwrap_or_default();
    assert_eq!(
        line::verify_signature(
            f.channel_secret.as_bytes(),
            pretty.as_bytes(),
            Some(&f.x_line_signature)
        ),
        Err(line::SignatureError::Mismatch)
    );
}

#[test]
fn line_fixture_wrong_secret_and_forged_signature_are_mismatch() {
    let f = fixture().line;
    let mut secret = f.channel_secret.clone().into_bytes();
    if let Some(b) = secret.first_mut() {
        *b ^= 1;
    }
    assert_eq!(
        line::verify_signature(&secret, f.body.as_bytes(), Some(&f.x_line_signature)),
        Err(line::SignatureError::Mismatch)
    );
    let mut forged = base64::engine::general_purpose::STANDARD
        .decode(&f.x_line_signature)
        .unwrap_or_default();
    if let Some(b) = forged.last_mut() {
        *b ^= 0x80;
    }
    let forged = base64::engine::general_purpose::STANDARD.encode(forged);
    assert_eq!(
        line::verify_signature(
            f.channel_secret.as_bytes(),
            f.body.as_bytes(),
            Some(&forged)
        ),
        Err(line::SignatureError::Mismatch)
    );
}

#[test]
fn line_fixture_missing_and_malformed_headers() {
    let f = fixture().line;
    let secret = f.channel_secret.as_bytes();
    let body = f.body.as_bytes();
    assert_eq!(
        line::verify_signature(secret, body, None),
        Err(line::SignatureError::MissingSignature)
    );
    for bad in ["%%%%", "w5kq9pOHKIsNVKXRZmCAme", "not base64 at all!"] {
        assert_eq!(
            line::verify_signature(secret, body, Some(bad)),
            Err(line::SignatureError::MalformedSignature),
            "{bad}"
        );
    }
    // The Slack-style hex form is not what LINE sends.
    let hex = format!("v0={}", "ab".repeat(32));
    assert_eq!(
        line::verify_signature(secret, body, Some(&hex)),
        Err(line::SignatureError::MalformedSignature)
    );
}

// ---------------------------------------------------------------- Slack

#[test]
fn slack_fixture_vector_verifies_at_its_timestamp() {
    let f = fixture().slack;
    let now = slack_ts(&f);
    assert_eq!(
        slack::verify_signature(
            f.signing_secret.as_bytes(),
            f.body.as_bytes(),
            Some(&f.timestamp),
            Some(&f.signature),
            now,
            slack::DEFAULT_WINDOW_SECS,
        ),
        Ok(())
    );
}

#[test]
fn slack_fixture_sign_reproduces_header() {
    let f = fixture().slack;
    assert_eq!(
        slack::signature::sign(f.signing_secret.as_bytes(), &f.timestamp, f.body.as_bytes())
            .as_deref(),
        Ok(f.signature.as_str())
    );
}

#[test]
fn slack_fixture_window_edges() {
    let f = fixture().slack;
    let ts = slack_ts(&f);
    let check = |now: i64| {
        slack::verify_signature(
            f.signing_secret.as_bytes(),
            f.body.as_bytes(),
            Some(&f.timestamp),
            Some(&f.signature),
            now,
            slack::DEFAULT_WINDOW_SECS,
        )
    };
    assert_eq!(check(ts + 300), Ok(()));
    assert_eq!(check(ts - 300), Ok(()));
    assert_eq!(
        check(ts + 301),
        Err(slack::SignatureError::Stale { age_secs: 301 })
    );
    assert_eq!(
        check(ts - 301),
        Err(slack::SignatureError::Future { ahead_secs: 301 })
    );
    // Verified "today", the 2018 example is a replay.
    assert!(matches!(
        check(1_762_000_000),
        Err(slack::SignatureError::Stale { .. })
    ));
}

#[test]
fn slack_fixture_forged_and_tampered_are_mismatch() {
    let f = fixture().slack;
    let now = slack_ts(&f);
    let verify = |secret: &[u8], body: &[u8], ts: &str, sig: &str| {
        slack::verify_signature(secret, body, Some(ts), Some(sig), now, 300)
    };
    let secret = f.signing_secret.as_bytes();
    let body = f.body.as_bytes();
    let tampered = f.body.replace("roadrunner", "coyote");
    assert_eq!(
        verify(secret, tampered.as_bytes(), &f.timestamp, &f.signature),
        Err(slack::SignatureError::Mismatch)
    );
    assert_eq!(
        verify(b"wrong-secret", body, &f.timestamp, &f.signature),
        Err(slack::SignatureError::Mismatch)
    );
    // One changed hex digit.
    let mut forged = f.signature.clone();
    let last = if forged.ends_with('3') { "4" } else { "3" };
    forged.pop();
    forged.push_str(last);
    assert_eq!(
        verify(secret, body, &f.timestamp, &forged),
        Err(slack::SignatureError::Mismatch)
    );
    // Timestamp moved by one second (still inside the window) breaks the signature.
    let moved = (now + 1).to_string();
    assert_eq!(
        verify(secret, body, &moved, &f.signature),
        Err(slack::SignatureError::Mismatch)
    );
}

#[test]
fn slack_fixture_missing_and_malformed_headers() {
    let f = fixture().slack;
    let now = slack_ts(&f);
    let secret = f.signing_secret.as_bytes();
    let body = f.body.as_bytes();
    let v = |ts: Option<&str>, sig: Option<&str>| {
        slack::verify_signature(secret, body, ts, sig, now, 300)
    };
    assert_eq!(
        v(None, Some(&f.signature)),
        Err(slack::SignatureError::MissingTimestamp)
    );
    assert_eq!(
        v(Some(&f.timestamp), None),
        Err(slack::SignatureError::MissingSignature)
    );
    assert_eq!(
        v(Some("yesterday"), Some(&f.signature)),
        Err(slack::SignatureError::MalformedTimestamp)
    );
    let hex = f.signature.trim_start_matches("v0=");
    for bad in [
        hex.to_string(),
        format!("v1={hex}"),
        format!("v0={}", &hex[..hex.len() - 1]),
        format!("v0={}g", &hex[..hex.len() - 1]),
        line_style_base64(),
    ] {
        assert_eq!(
            v(Some(&f.timestamp), Some(&bad)),
            Err(slack::SignatureError::MalformedSignature),
            "{bad}"
        );
    }
}

fn line_style_base64() -> String {
    fixture().line.x_line_signature
}

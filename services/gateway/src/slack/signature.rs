//! Slack request signing (v0): `v0=` + hex(HMAC-SHA256(signing secret, "v0:{ts}:{body}")),
//! with a timestamp window against replay.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Header carrying the signature.
pub const SIGNATURE_HEADER: &str = "x-slack-signature";

/// Header carrying the request timestamp (Unix seconds).
pub const TIMESTAMP_HEADER: &str = "x-slack-request-timestamp";

/// Slack's recommended replay window: five minutes either way.
pub const DEFAULT_WINDOW_SECS: i64 = 300;

const VERSION_PREFIX: &str = "v0=";
const DIGEST_LEN: usize = 32;

/// Why a Slack request was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// The configured signing secret is empty: every signature would be forgeable.
    #[error("Slack signing secret is empty")]
    InvalidSecret,
    /// The window is negative, which would reject everything.
    #[error("timestamp window {0} is negative")]
    InvalidWindow(i64),
    /// No (or an empty) `X-Slack-Request-Timestamp` header.
    #[error("x-slack-request-timestamp header is missing")]
    MissingTimestamp,
    /// The timestamp is not a plain decimal number of seconds.
    #[error("x-slack-request-timestamp header is not a Unix timestamp")]
    MalformedTimestamp,
    /// The timestamp is older than the window: possibly a replay.
    #[error("request timestamp is {age_secs}s old, outside the window")]
    Stale {
        /// How far in the past the timestamp is.
        age_secs: i64,
    },
    /// The timestamp is further in the future than the window allows.
    #[error("request timestamp is {ahead_secs}s in the future, outside the window")]
    Future {
        /// How far in the future the timestamp is.
        ahead_secs: i64,
    },
    /// No (or an empty) `X-Slack-Signature` header.
    #[error("x-slack-signature header is missing")]
    MissingSignature,
    /// The signature is not `v0=` followed by 64 hex digits.
    #[error("x-slack-signature header is not v0= followed by a hex SHA-256 digest")]
    MalformedSignature,
    /// Well-formed, but not the signature of this request under our secret.
    #[error("x-slack-signature does not match the request")]
    Mismatch,
}

/// Verifies a Slack request against its raw body and the two headers.
///
/// The timestamp must be within `window_secs` of `now_unix` in either direction (use
/// [`DEFAULT_WINDOW_SECS`]); the digest comparison is constant-time (`Mac::verify_slice`). The
/// timestamp is signed exactly as received, so the header text (not a re-formatted number)
/// goes into the base string.
pub fn verify_signature(
    signing_secret: &[u8],
    raw_body: &[u8],
    timestamp_header: Option<&str>,
    signature_header: Option<&str>,
    now_unix: i64,
    window_secs: i64,
) -> Result<(), SignatureError> {
    if signing_secret.is_empty() {
        return Err(SignatureError::InvalidSecret);
    }
    if window_secs < 0 {
        return Err(SignatureError::InvalidWindow(window_secs));
    }
    let ts_text = match timestamp_header.map(str::trim) {
        None | Some("") => return Err(SignatureError::MissingTimestamp),
        Some(t) => t,
    };
    let sig_text = match signature_header.map(str::trim) {
        None | Some("") => return Err(SignatureError::MissingSignature),
        Some(s) => s,
    };
    let ts = parse_timestamp(ts_text)?;
    check_window(ts, now_unix, window_secs)?;
    let expected = parse_signature(sig_text)?;
    let mac = mac_for(signing_secret, ts_text, raw_body)?;
    mac.verify_slice(&expected)
        .map_err(|_| SignatureError::Mismatch)
}

/// Computes the `X-Slack-Signature` value for a request; used by tests and local fakes.
pub fn sign(
    signing_secret: &[u8],
    timestamp: &str,
    raw_body: &[u8],
) -> Result<String, SignatureError> {
    if signing_secret.is_empty() {
        return Err(SignatureError::InvalidSecret);
    }
    let digest = mac_for(signing_secret, timestamp, raw_body)?
        .finalize()
        .into_bytes();
    let mut out = String::with_capacity(VERSION_PREFIX.len() + 2 * DIGEST_LEN);
    out.push_str(VERSION_PREFIX);
    for b in digest {
        out.push(hex_digit(b >> 4));
        out.push(hex_digit(b & 0x0f));
    }
    Ok(out)
}

fn mac_for(secret: &[u8], ts: &str, body: &[u8]) -> Result<Hmac<Sha256>, SignatureError> {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret).map_err(|_| SignatureError::InvalidSecret)?;
    mac.update(b"v0:");
    mac.update(ts.as_bytes());
    mac.update(b":");
    mac.update(body);
    Ok(mac)
}

/// Accepts only plain ASCII digits (no sign, no spaces), at most 18 of them so it fits `i64`.
fn parse_timestamp(text: &str) -> Result<i64, SignatureError> {
    if text.is_empty() || text.len() > 18 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(SignatureError::MalformedTimestamp);
    }
    text.parse::<i64>()
        .map_err(|_| SignatureError::MalformedTimestamp)
}

fn check_window(ts: i64, now: i64, window: i64) -> Result<(), SignatureError> {
    // i128 so that extreme `now` values cannot overflow the subtraction.
    let diff = i128::from(now) - i128::from(ts);
    let window = i128::from(window);
    let clamp = |v: i128| i64::try_from(v).unwrap_or(i64::MAX);
    if diff > window {
        Err(SignatureError::Stale {
            age_secs: clamp(diff),
        })
    } else if -diff > window {
        Err(SignatureError::Future {
            ahead_secs: clamp(-diff),
        })
    } else {
        Ok(())
    }
}

fn parse_signature(text: &str) -> Result<[u8; DIGEST_LEN], SignatureError> {
    let hex = text
        .strip_prefix(VERSION_PREFIX)
        .ok_or(SignatureError::MalformedSignature)?
        .as_bytes();
    if hex.len() != 2 * DIGEST_LEN {
        return Err(SignatureError::MalformedSignature);
    }
    let mut out = [0u8; DIGEST_LEN];
    for (slot, pair) in out.iter_mut().zip(hex.chunks_exact(2)) {
        let (Some(hi), Some(lo)) = (
            pair.first().copied().and_then(hex_value),
            pair.get(1).copied().and_then(hex_value),
        ) else {
            return Err(SignatureError::MalformedSignature);
        };
        *slot = (hi << 4) | lo;
    }
    Ok(out)
}

fn hex_value(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

fn hex_digit(nibble: u8) -> char {
    char::from(
        b"0123456789abcdef"
            .get(usize::from(nibble & 0x0f))
            .copied()
            .unwrap_or(b'0'),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"slack-secret";
    const BODY: &[u8] = br#"{"type":"event_callback"}"#;
    const TS: &str = "1700000000";
    const NOW: i64 = 1_700_000_000;

    fn good() -> String {
        sign(SECRET, TS, BODY).unwrap_or_default()
    }

    fn verify(ts: Option<&str>, sig: Option<&str>, now: i64) -> Result<(), SignatureError> {
        verify_signature(SECRET, BODY, ts, sig, now, DEFAULT_WINDOW_SECS)
    }

    #[test]
    fn accepts_own_signature_inside_window() {
        let sig = good();
        assert_eq!(verify(Some(TS), Some(&sig), NOW), Ok(()));
        assert_eq!(verify(Some(TS), Some(&sig), NOW + 300), Ok(()));
        assert_eq!(verify(Some(TS), Some(&sig), NOW - 300), Ok(()));
    }

    #[test]
    fn uppercase_hex_is_accepted() {
        let sig = good();
        let upper = format!("v0={}", sig.trim_start_matches("v0=").to_uppercase());
        assert_eq!(verify(Some(TS), Some(&upper), NOW), Ok(()));
    }

    #[test]
    fn stale_and_future_are_distinct() {
        let sig = good();
        assert_eq!(
            verify(Some(TS), Some(&sig), NOW + 301),
            Err(SignatureError::Stale { age_secs: 301 })
        );
        assert_eq!(
            verify(Some(TS), Some(&sig), NOW - 301),
            Err(SignatureError::Future { ahead_secs: 301 })
        );
    }

    #[test]
    fn window_is_configurable() {
        let sig = good();
        assert_eq!(
            verify_signature(SECRET, BODY, Some(TS), Some(&sig), NOW + 61, 60),
            Err(SignatureError::Stale { age_secs: 61 })
        );
        assert_eq!(
            verify_signature(SECRET, BODY, Some(TS), Some(&sig), NOW + 61, 3600),
            Ok(())
        );
        assert_eq!(
            verify_signature(SECRET, BODY, Some(TS), Some(&sig), NOW, -1),
            Err(SignatureError::InvalidWindow(-1))
        );
    }

    #[test]
    fn extreme_clock_values_do_not_overflow() {
        let sig = good();
        assert!(matches!(
            verify(Some(TS), Some(&sig), i64::MAX),
            Err(SignatureError::Stale { .. })
        ));
        assert!(matches!(
            verify(Some(TS), Some(&sig), i64::MIN),
            Err(SignatureError::Future { .. })
        ));
    }

    #[test]
    fn missing_headers_are_reported_separately() {
        let sig = good();
        assert_eq!(
            verify(None, Some(&sig), NOW),
            Err(SignatureError::MissingTimestamp)
        );
        assert_eq!(
            verify(Some(""), Some(&sig), NOW),
            Err(SignatureError::MissingTimestamp)
        );
        assert_eq!(
            verify(Some(TS), None, NOW),
            Err(SignatureError::MissingSignature)
        );
        assert_eq!(
            verify(Some(TS), Some(" "), NOW),
            Err(SignatureError::MissingSignature)
        );
    }

    #[test]
    fn malformed_timestamps() {
        let sig = good();
        for ts in [
            "abc",
            "-1700000000",
            "+1700000000",
            "17e8",
            "1700000000.5",
            "9999999999999999999",
        ] {
            assert_eq!(
                verify(Some(ts), Some(&sig), NOW),
                Err(SignatureError::MalformedTimestamp),
                "{ts}"
            );
        }
    }

    #[test]
    fn malformed_signatures() {
        let hex = "a".repeat(64);
        for s in [
            hex.clone(),                    // no prefix
            format!("v1={hex}"),            // wrong version
            format!("v0={}", &hex[..62]),   // too short
            format!("v0={hex}00"),          // too long
            format!("v0={}zz", &hex[..62]), // not hex
            "v0=".to_string(),              // empty digest
            format!("v0={}é", &hex[..62]),  // non-ASCII
        ] {
            assert_eq!(
                verify(Some(TS), Some(&s), NOW),
                Err(SignatureError::MalformedSignature),
                "{s}"
            );
        }
    }

    #[test]
    fn forged_tampered_and_wrong_secret_are_mismatch() {
        let sig = good();
        let forged = format!("v0={}", "0".repeat(64));
        assert_eq!(
            verify(Some(TS), Some(&forged), NOW),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify_signature(SECRET, b"{}", Some(TS), Some(&sig), NOW, 300),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify_signature(b"other", BODY, Some(TS), Some(&sig), NOW, 300),
            Err(SignatureError::Mismatch)
        );
        // The timestamp is part of what is signed: replaying the signature with a new
        // timestamp (to get past the window) fails.
        assert_eq!(
            verify(Some("1700000100"), Some(&sig), NOW),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn empty_secret_is_refused() {
        assert_eq!(
            verify_signature(b"", BODY, Some(TS), Some(&good()), NOW, 300),
            Err(SignatureError::InvalidSecret)
        );
        assert_eq!(sign(b"", TS, BODY), Err(SignatureError::InvalidSecret));
    }
}

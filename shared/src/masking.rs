//! Masking of secrets and personal data before text reaches logs or the cloud (the router's
//! routing log and classifier evidence, the coder's cloud requests and error messages).
//!
//! Order matters: whole blocks and URLs with credentials go first so that later, narrower
//! patterns (e-mail, generic `key=value`) do not cut them into pieces.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::{Captures, Regex};

/// Compiles a built-in pattern. The patterns are constants covered by tests, so a failure is a
/// programming error; it still must not panic at runtime: that one pattern is skipped instead.
fn compile(pattern: &str) -> Option<Regex> {
    match Regex::new(pattern) {
        Ok(re) => Some(re),
        Err(err) => {
            tracing::error!(%err, pattern, "built-in masking regex does not compile");
            None
        }
    }
}

static PRIVATE_KEY: LazyLock<Option<Regex>> = LazyLock::new(|| {
    compile(
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\z)",
    )
});

static URL_CREDENTIALS: LazyLock<Option<Regex>> =
    LazyLock::new(|| compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s:/@]+:[^\s@/]+@"));

static BEARER: LazyLock<Option<Regex>> =
    LazyLock::new(|| compile(r"(?i)\b(bearer)(\s+)[A-Za-z0-9\-._~+/]{8,}=*"));

static AUTH_HEADER: LazyLock<Option<Regex>> = LazyLock::new(|| {
    compile(
        r#"(?i)\b(authorization\s*[:=]\s*(?:(?:basic|digest|token|bearer)\s+)?)([^\s"',;]{8,})"#,
    )
});

static KNOWN_TOKENS: LazyLock<Option<Regex>> = LazyLock::new(|| {
    compile(concat!(
        r"(?:\bsk-(?:proj-|ant-(?:api\d+-)?|live_|test_)?[A-Za-z0-9_-]{16,}",
        r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
        r"|\bgh[pousr]_[A-Za-z0-9]{20,}",
        r"|\bgithub_pat_[A-Za-z0-9_]{20,}",
        r"|\bxox[abposr]-[A-Za-z0-9-]{10,}",
        r"|\bAIza[0-9A-Za-z_-]{35}",
        r"|\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,})",
    ))
});

static KEY_VALUE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    compile(concat!(
        r#"(?i)((?:api[_-]?key|apikey|secret(?:[_-]?key)?|client[_-]?secret|access[_-]?token|refresh[_-]?token|auth[_-]?token|token|password|passwd|pwd|private[_-]?key|パスワード|トークン|シークレット)"#,
        r#"["']?\s*[:=：]\s*["']?)([^\s"',;}]+)"#,
    ))
});

static EMAIL: LazyLock<Option<Regex>> =
    LazyLock::new(|| compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"));

static PHONE_INTL: LazyLock<Option<Regex>> =
    LazyLock::new(|| compile(r"\+\d{1,3}(?:[ .-]?(?:\(\d{1,4}\)|\d{1,4})){1,6}"));

/// Japanese numbers: `0X0-XXXX-XXXX` mobiles, `0X-XXXX-XXXX` landlines, `0120` toll-free, with
/// or without hyphens (full-width digits and hyphens are not normalised here). The neighbours
/// are checked in code because `regex` has no look-around.
static PHONE_JP: LazyLock<Option<Regex>> =
    LazyLock::new(|| compile(r"0\d{1,4}[- ]\d{1,4}[- ]\d{3,4}|0[5789]0\d{8}|0\d{9}"));

const REDACTED_PRIVATE_KEY: &str = "[REDACTED:private_key]";
const REDACTED_SECRET: &str = "[REDACTED:secret]";
const REDACTED_EMAIL: &str = "[REDACTED:email]";
const REDACTED_PHONE: &str = "[REDACTED:phone]";

/// Replaces API keys, bearer tokens, private key blocks, credentials in connection strings,
/// generic `key=value` secrets, e-mail addresses and phone numbers with `[REDACTED:…]`.
/// Returns the input borrowed when nothing was found.
pub fn mask_secrets(text: &str) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(text);
    replace(&mut out, &PRIVATE_KEY, |_, _| {
        Some(REDACTED_PRIVATE_KEY.to_owned())
    });
    replace(&mut out, &URL_CREDENTIALS, |_, c| {
        Some(format!("{}{REDACTED_SECRET}@", cap(c, 1)))
    });
    replace(&mut out, &BEARER, |_, c| {
        Some(format!("{}{}{REDACTED_SECRET}", cap(c, 1), cap(c, 2)))
    });
    replace(&mut out, &AUTH_HEADER, |_, c| {
        let value = cap(c, 2);
        (!value.starts_with("[REDACTED")).then(|| format!("{}{REDACTED_SECRET}", cap(c, 1)))
    });
    replace(&mut out, &KNOWN_TOKENS, |_, _| {
        Some(REDACTED_SECRET.to_owned())
    });
    replace(&mut out, &KEY_VALUE, |_, c| {
        // A value already masked by a narrower pattern is kept as it is.
        let value = cap(c, 2);
        (!value.starts_with("[REDACTED")).then(|| format!("{}{REDACTED_SECRET}", cap(c, 1)))
    });
    replace(&mut out, &EMAIL, |_, _| Some(REDACTED_EMAIL.to_owned()));
    replace(&mut out, &PHONE_INTL, |_, c| {
        let digits = cap(c, 0).chars().filter(char::is_ascii_digit).count();
        // E.164 allows at most 15 digits; fewer than 8 is a short code or a version number.
        (8..=15)
            .contains(&digits)
            .then(|| REDACTED_PHONE.to_owned())
    });
    replace(&mut out, &PHONE_JP, |hay, c| {
        let m = c.get(0)?;
        let before = hay.get(..m.start()).and_then(|s| s.chars().next_back());
        let after = hay.get(m.end()..).and_then(|s| s.chars().next());
        // Part of a longer number, a date, a decimal or an already-masked international one.
        let glued = |ch: char| ch.is_ascii_digit() || matches!(ch, '-' | '.' | '+' | '/' | ':');
        (!before.is_some_and(glued) && !after.is_some_and(glued)).then(|| REDACTED_PHONE.to_owned())
    });
    out
}

fn cap<'t>(caps: &Captures<'t>, i: usize) -> &'t str {
    caps.get(i).map_or("", |m| m.as_str())
}

/// Applies one pattern, allocating only when it matches. `f` sees the whole text (for
/// neighbour checks) and returns `None` to keep a match unchanged.
fn replace(
    text: &mut Cow<'_, str>,
    re: &Option<Regex>,
    f: impl Fn(&str, &Captures<'_>) -> Option<String>,
) {
    let Some(re) = re else { return };
    if !re.is_match(text) {
        return;
    }
    let hay: &str = text;
    let replaced = re
        .replace_all(hay, |c: &Captures<'_>| {
            f(hay, c).unwrap_or_else(|| cap(c, 0).to_owned())
        })
        .into_owned();
    if replaced != hay {
        *text = Cow::Owned(replaced);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn masked(text: &str) -> String {
        mask_secrets(text).into_owned()
    }

    #[test]
    fn all_builtin_patterns_compile() {
        for re in [
            &PRIVATE_KEY,
            &URL_CREDENTIALS,
            &BEARER,
            &AUTH_HEADER,
            &KNOWN_TOKENS,
            &KEY_VALUE,
            &EMAIL,
            &PHONE_INTL,
            &PHONE_JP,
        ] {
            assert!(re.is_some());
        }
    }

    #[test]
    fn clean_text_is_borrowed_unchanged() {
        let text = "今日はいい天気だね。Rust 1.95 の新機能を教えて。2026-02-20 10:00";
        assert!(matches!(mask_secrets(text), Cow::Borrowed(t) if t == text));
    }

    #[test]
    fn api_keys_are_masked() {
        for secret in [
            "sk-abcdefghijklmnop1234567890",
            "sk-proj-AbCdEfGhIjKlMnOpQrStUv123456",
            "sk-ant-api03-abcdefghijklmnopqrstuv",
            "AKIAIOSFODNN7EXAMPLE",
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "github_pat_11ABCDEFG0123456789_abcdefghijkl",
            "xoxb-1234567890-abcdefghij",
            "xoxp-1234567890-abcdefghij",
        ] {
            let out = masked(&format!("キーは {secret} です"));
            assert!(!out.contains(secret), "{secret} -> {out}");
            assert!(out.contains(REDACTED_SECRET), "{out}");
        }
    }

    #[test]
    fn generic_key_value_secrets_are_masked() {
        let out =
            masked("api_key=abc123def456 token: zyx987 password=\"hunter2\" パスワード：ひみつ123");
        for secret in ["abc123def456", "zyx987", "hunter2", "ひみつ123"] {
            assert!(!out.contains(secret), "{out}");
        }
        assert!(out.contains("api_key=[REDACTED:secret]"), "{out}");
        let json = masked(r#"{"password": "s3cr3t", "user": "ren"}"#);
        assert!(!json.contains("s3cr3t") && json.contains("ren"), "{json}");
    }

    #[test]
    fn bearer_tokens_are_masked() {
        let out = masked("Authorization: Bearer eyJhbGciOi.abc.def123456");
        assert!(!out.contains("eyJhbGciOi"), "{out}");
        assert!(out.contains("Bearer [REDACTED:secret]"), "{out}");
        let basic = masked("authorization: Basic dXNlcjpwYXNzd29yZA==");
        assert_eq!(basic, "authorization: Basic [REDACTED:secret]");
        let words = "a basic understanding of token validation";
        assert_eq!(masked(words), words);
    }

    #[test]
    fn private_key_blocks_are_masked_whole() {
        let text = "鍵:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nAAAABG5vbmU=\n-----END OPENSSH PRIVATE KEY-----\n以上";
        let out = masked(text);
        assert_eq!(out, "鍵:\n[REDACTED:private_key]\n以上");
        let unterminated = masked("-----BEGIN RSA PRIVATE KEY-----\nMIIEow");
        assert_eq!(unterminated, REDACTED_PRIVATE_KEY);
    }

    #[test]
    fn connection_string_credentials_are_masked() {
        let out = masked("DATABASE_URL=postgres://ghost:s3cret@db.local:5432/ghost");
        assert!(!out.contains("s3cret") && !out.contains("ghost:"), "{out}");
        assert!(
            out.contains("postgres://[REDACTED:secret]@db.local:5432/ghost"),
            "{out}"
        );
        let nats = masked("nats://user:pw@localhost:4222");
        assert_eq!(nats, "nats://[REDACTED:secret]@localhost:4222");
    }

    #[test]
    fn email_addresses_are_masked() {
        let out = masked("連絡先は ren.k+ghost@example.co.jp まで");
        assert_eq!(out, "連絡先は [REDACTED:email] まで");
    }

    #[test]
    fn japanese_phone_numbers_are_masked() {
        for phone in [
            "090-1234-5678",
            "03-1234-5678",
            "0120-123-456",
            "09012345678",
            "0312345678",
        ] {
            let out = masked(&format!("電話は{phone}です"));
            assert_eq!(out, "電話は[REDACTED:phone]です", "{phone}");
        }
    }

    #[test]
    fn international_phone_numbers_are_masked() {
        for phone in [
            "+81 90-1234-5678",
            "+1 (415) 555-2671",
            "+44 20 7946 0958",
            "+819012345678",
        ] {
            let out = masked(&format!("call {phone} now"));
            assert_eq!(out, "call [REDACTED:phone] now", "{phone}");
        }
    }

    #[test]
    fn ordinary_numbers_are_left_alone() {
        for text in [
            "2026-02-20 の予定",
            "version 1.2.3",
            "port 5432",
            "id 123456789",
            "+1 point",
            "x = 0.5 + 3",
            "name,score\nA,1\nB,2",
        ] {
            assert_eq!(masked(text), text);
        }
    }

    #[test]
    fn several_kinds_in_one_text_are_all_masked() {
        let out = masked(
            "ren@example.com / 090-1111-2222 / sk-abcdefghijklmnop12345 / postgres://a:b@h/d",
        );
        assert!(!out.contains("ren@"));
        assert!(!out.contains("1111"));
        assert!(!out.contains("sk-abc"));
        assert!(!out.contains("a:b@"));
    }
}

//! The checks a rule may require of a match (`checks:` in `config/masking.yaml`): check
//! digits (Luhn, My Number, ISO 7064), neighbours (the `regex` crate has no look-around) and
//! the shape of a secret's name and value.

use serde::Deserialize;

/// One named check; all of a rule's checks must pass for a match to be masked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Check {
    /// 13-19 digits with a valid Luhn check digit (payment cards).
    Luhn,
    /// 12 digits with a valid My Number check digit (Japan).
    MyNumber,
    /// 18 characters with a valid ISO 7064 MOD 11-2 check (China resident ID).
    CnResidentId,
    /// A US SSN that can be issued (area not 000/666/9xx, group not 00, serial not 0000).
    UsSsn,
    /// 8 to 15 digits (E.164 allows at most 15; fewer is a short code or a version).
    PhoneDigits,
    /// No digit right before or after the match.
    NoDigitAround,
    /// Not part of a longer number, date, decimal, version or an already-masked number.
    IsolatedNumber,
    /// No digit right before or after, nor a separator followed by more digits.
    StandaloneNumber,
    /// No token character right before or after the match.
    IsolatedToken,
    /// The masked text has upper case, lower case and a digit.
    HighEntropy,
    /// The masked text has a digit.
    HasDigit,
    /// The group named `name` names a secret.
    SecretName,
    /// The value is not a code expression, a variable reference, a type or a placeholder.
    NotCode,
    /// The value is not an ordinary English word.
    NotWord,
}

impl Check {
    /// Whether the check passes for a match: `hay` is the whole text, `whole` the match's
    /// byte range, `value` the text to be masked and `name` the `name` group, if any.
    pub fn passes(self, hay: &str, whole: (usize, usize), value: &str, name: Option<&str>) -> bool {
        let before = hay.get(..whole.0).and_then(|s| s.chars().next_back());
        let after = hay.get(whole.1..).and_then(|s| s.chars().next());
        match self {
            Check::Luhn => luhn(value),
            Check::MyNumber => my_number(value),
            Check::CnResidentId => cn_resident_id(value),
            Check::UsSsn => us_ssn(value),
            Check::PhoneDigits => (8..=15).contains(&digits(value).count()),
            Check::NoDigitAround => !before.is_some_and(is_digit) && !after.is_some_and(is_digit),
            Check::IsolatedNumber => {
                let glued = |c: char| is_digit(c) || matches!(c, '-' | '.' | '+' | '/' | ':');
                !before.is_some_and(glued) && !after.is_some_and(glued)
            }
            Check::StandaloneNumber => {
                let sep = |c: char| matches!(c, ' ' | '-' | '.');
                let mut left = hay.get(..whole.0).unwrap_or("").chars().rev();
                let mut right = hay.get(whole.1..).unwrap_or("").chars();
                let glued = |first: Option<char>, second: Option<char>| match first {
                    Some(c) if is_digit(c) => true,
                    Some(c) if sep(c) => second.is_some_and(is_digit),
                    _ => false,
                };
                let (l1, l2) = (left.next(), left.next());
                let (r1, r2) = (right.next(), right.next());
                !glued(l1, l2) && !glued(r1, r2)
            }
            Check::IsolatedToken => {
                let token = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '+' | '/');
                !before.is_some_and(|c| token(c) || c == '-')
                    && !after.is_some_and(|c| token(c) || matches!(c, '=' | '-'))
            }
            Check::HighEntropy => {
                value.chars().any(|c| c.is_ascii_uppercase())
                    && value.chars().any(|c| c.is_ascii_lowercase())
                    && value.chars().any(|c| c.is_ascii_digit())
            }
            Check::HasDigit => value.chars().any(|c| c.is_ascii_digit()),
            Check::SecretName => name.is_some_and(names_a_secret),
            Check::NotCode => !looks_like_code(value),
            Check::NotWord => !is_ordinary_word(value),
        }
    }
}

fn is_digit(c: char) -> bool {
    c.is_ascii_digit() || ('０'..='９').contains(&c)
}

fn digits(text: &str) -> impl Iterator<Item = u32> + '_ {
    text.chars().filter_map(|c| c.to_digit(10))
}

/// The Luhn check over 13-19 digits (separators ignored).
pub fn luhn(text: &str) -> bool {
    let ds: Vec<u32> = digits(text).collect();
    if !(13..=19).contains(&ds.len()) {
        return false;
    }
    let sum: u32 = ds
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| match (i % 2 == 1, d * 2) {
            (true, x) if x > 9 => x - 9,
            (true, x) => x,
            (false, _) => d,
        })
        .sum();
    sum.is_multiple_of(10)
}

/// The My Number check digit: weights 2-7 then 2-6 from the right over the first 11 digits.
pub fn my_number(text: &str) -> bool {
    let ds: Vec<u32> = digits(text).collect();
    let [body @ .., check] = ds.as_slice() else {
        return false;
    };
    if body.len() != 11 {
        return false;
    }
    let sum: u32 = body
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &p)| {
            let n = i as u32 + 1;
            p * if n <= 6 { n + 1 } else { n - 5 }
        })
        .sum();
    let rest = sum % 11;
    let expected = if rest <= 1 { 0 } else { 11 - rest };
    *check == expected
}

/// The China resident ID check (ISO 7064 MOD 11-2, `X` for 10).
pub fn cn_resident_id(text: &str) -> bool {
    const WEIGHTS: [u32; 17] = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2];
    const CHECK: &[u8; 11] = b"10X98765432";
    let bytes = text.as_bytes();
    if bytes.len() != 18 || !bytes[..17].iter().all(u8::is_ascii_digit) {
        return false;
    }
    let sum: u32 = bytes[..17]
        .iter()
        .zip(WEIGHTS)
        .map(|(b, w)| u32::from(b - b'0') * w)
        .sum();
    CHECK[(sum % 11) as usize] == bytes[17].to_ascii_uppercase()
}

/// A US SSN that can be issued.
pub fn us_ssn(text: &str) -> bool {
    let mut parts = text.split('-');
    let (Some(area), Some(group), Some(serial)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    area != "000" && area != "666" && !area.starts_with('9') && group != "00" && serial != "0000"
}

/// Words that make a name a secret's when they are its last word (`db_password`,
/// `clientSecret`, `API_KEY`, `--auth-token`).
const SECRET_LAST_WORDS: &[&str] = &[
    "password",
    "passwd",
    "pwd",
    "pass",
    "passphrase",
    "passcode",
    "secret",
    "token",
    "key",
    "apikey",
    "credential",
    "credentials",
    "creds",
    "pat",
];

/// Words that make a name a secret's wherever they stand (`secret_key_base`).
const SECRET_ANYWHERE: [&str; 3] = ["password", "passwd", "secret"];

/// Whether an identifier names a secret: split at `_`, `-`, `.` and camelCase humps.
pub fn names_a_secret(name: &str) -> bool {
    let words = split_identifier(name);
    let Some(last) = words.last() else {
        return false;
    };
    let joined_secret = ["password", "passwd", "secret", "token", "apikey"]
        .iter()
        .any(|w| last.ends_with(w));
    SECRET_LAST_WORDS.contains(&last.as_str())
        || joined_secret
        || words
            .iter()
            .any(|w| SECRET_ANYWHERE.iter().any(|s| w.contains(s)))
}

fn split_identifier(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let chars: Vec<char> = name.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if matches!(c, '_' | '-' | '.') {
            if !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            continue;
        }
        let prev = i.checked_sub(1).and_then(|j| chars.get(j)).copied();
        let next = chars.get(i + 1).copied();
        let hump = c.is_uppercase()
            && (prev.is_some_and(char::is_lowercase)
                || (prev.is_some_and(char::is_uppercase) && next.is_some_and(char::is_lowercase)));
        if hump && !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        word.extend(c.to_lowercase());
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// Values that are code or placeholders rather than secrets: `os.getenv("X")`, `${TOKEN}`,
/// `<your-key>`, `null`, `str`, `process.env.KEY`, another flag.
fn looks_like_code(value: &str) -> bool {
    const LITERALS: &[&str] = &[
        "null",
        "none",
        "nil",
        "true",
        "false",
        "undefined",
        "str",
        "string",
        "&str",
        "int",
        "bool",
        "number",
        "any",
        "bytes",
        "optional",
        "option<string>",
        "string?",
        "required",
        "***",
        "xxx",
        "changeme",
    ];
    let v = value.trim();
    if v.is_empty() {
        return true;
    }
    let lower = v.to_lowercase();
    v.contains('(')
        || v.contains(')')
        || v.contains('[')
        || v.starts_with(['$', '{', '<', '%', '-', '&', '*', '|', '>'])
        || lower.starts_with("process.env")
        || lower.starts_with("os.environ")
        || lower.starts_with("env.")
        || LITERALS.contains(&lower.as_str())
        || v.chars()
            .all(|c| c == '*' || c == 'x' || c == 'X' || c == '.')
}

/// Ordinary words after "the password is": "wrong", "too short", "missing".
fn is_ordinary_word(value: &str) -> bool {
    const WORDS: &[&str] = &[
        "a",
        "an",
        "the",
        "not",
        "no",
        "wrong",
        "missing",
        "invalid",
        "valid",
        "correct",
        "incorrect",
        "expired",
        "required",
        "needed",
        "empty",
        "set",
        "unset",
        "too",
        "very",
        "in",
        "on",
        "at",
        "stored",
        "saved",
        "changed",
        "same",
        "different",
        "long",
        "short",
        "weak",
        "strong",
        "secure",
        "insecure",
        "ok",
        "okay",
        "fine",
        "here",
        "there",
        "below",
        "above",
        "this",
        "that",
        "it",
        "what",
        "unknown",
        "leaked",
        "revoked",
        "correctly",
    ];
    let word = value
        .trim_end_matches(['.', ',', '!', '?', ';'])
        .to_lowercase();
    WORDS.contains(&word.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn luhn_accepts_test_cards_and_rejects_changed_digits() {
        assert!(luhn("4111 1111 1111 1111"));
        assert!(luhn("5500-0000-0000-0004"));
        assert!(luhn("378282246310005"));
        assert!(!luhn("4111 1111 1111 1112"));
        assert!(!luhn("1234"));
    }

    #[test]
    fn my_number_check_digit() {
        assert!(my_number("123456789018"));
        assert!(my_number("1234 5678 9018"));
        assert!(!my_number("123456789012"));
        assert!(!my_number("12345678901"));
    }

    #[test]
    fn cn_resident_id_check() {
        assert!(cn_resident_id("11010519491231002X"));
        assert!(!cn_resident_id("110105194912310021"));
    }

    #[test]
    fn ssn_ranges() {
        assert!(us_ssn("123-45-6789"));
        assert!(!us_ssn("000-45-6789"));
        assert!(!us_ssn("666-45-6789"));
        assert!(!us_ssn("923-45-6789"));
        assert!(!us_ssn("123-00-6789"));
    }

    #[test]
    fn secret_names() {
        for name in [
            "password",
            "DB_PASSWORD",
            "api_key",
            "apiKey",
            "clientSecret",
            "secret_key_base",
            "AUTH_TOKEN",
            "X-Api-Key",
            "aws_secret_access_key",
            "githubToken",
            "dbpassword",
            "credentials",
        ] {
            assert!(names_a_secret(name), "{name}");
        }
        for name in [
            "user",
            "token_count",
            "max_tokens",
            "monkey_name",
            "tokenizer",
            "host",
            "key_id",
        ] {
            assert!(!names_a_secret(name), "{name}");
        }
    }

    #[test]
    fn code_values_are_not_secrets() {
        for v in [
            "os.getenv(\"X\")",
            "${DB_PASSWORD}",
            "<your-key>",
            "null",
            "str",
            "--verbose",
            "",
        ] {
            assert!(looks_like_code(v), "{v}");
        }
        assert!(!looks_like_code("hunter2"));
    }
}

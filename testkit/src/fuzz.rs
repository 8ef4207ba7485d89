//! Hostile inputs for the parsers at Ghost's boundaries (webhook bodies, model output), as
//! proptest strategies, and the case count every fuzz test runs (feature `fuzz`, so the
//! load commands that use this crate do not carry proptest).
//!
//! Each parser gets one property in its crate's `tests/fuzz_*.rs`: given samples of valid
//! input, every generated input must parse or fail with a clear error, never panic:
//!
//! ```ignore
//! proptest! {
//!     #![proptest_config(fuzz::config())]
//!     #[test]
//!     fn write_plan(input in fuzz::model_output(&[VALID_PLAN])) {
//!         fuzz::clear_error(&parse_write_plan(&input))?;
//!     }
//! }
//! ```
//!
//! The inputs: arbitrary bytes and text, the samples verbatim, truncated at any byte,
//! with invalid UTF-8 spliced in, with a value replaced by a huge or non-finite number, by
//! another JSON type or by deep nesting, with a key removed, and deeply nested JSON on its
//! own. [`model_output`] also wraps them the way models do (code fences, prose around).
//!
//! `PROPTEST_CASES` sets the number of inputs per parser ([`DEFAULT_CASES`] when unset; the
//! full run recorded in BENCHMARKS.md uses 10,000).

use std::fmt::Display;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError};
use serde_json::Value;

/// Inputs per parser when `PROPTEST_CASES` is not set (CI); the recorded run sets 10,000.
pub const DEFAULT_CASES: u32 = 1_000;

/// Deepest nesting generated (far beyond serde_json's recursion limit of 128).
const MAX_DEPTH: usize = 20_000;

/// Number tokens JSON parsers and `f64`/`i64` conversions choke on.
const HUGE_NUMBERS: &[&str] = &[
    "1e999999",
    "-1e999999",
    "1E400",
    "1.7976931348623157e309",
    "18446744073709551616",
    "-9223372036854775809",
    "123456789012345678901234567890123456789012345678901234567890",
    "0.00000000000000000000000000000000000000000000000000000000000001",
    "-0",
    "NaN",
    "Infinity",
    "-Infinity",
    "0x7fffffff",
    "1_000",
    "01",
    "1.",
    ".5",
];

/// Byte sequences that are not UTF-8 (lone continuation bytes, overlong forms, surrogates,
/// a truncated multi-byte character).
const INVALID_UTF8: &[&[u8]] = &[
    &[0xFF],
    &[0xFE, 0xFF],
    &[0x80],
    &[0xC0, 0xAF],
    &[0xED, 0xA0, 0x80],
    &[0xE3, 0x81],
    &[0xF4, 0x90, 0x80, 0x80],
];

/// The number of inputs each fuzz property runs: `PROPTEST_CASES`, else [`DEFAULT_CASES`].
pub fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(DEFAULT_CASES)
}

/// The proptest configuration of a fuzz property: [`cases`] inputs, no slow shrinking of
/// megabyte inputs beyond what pinpoints the failure.
pub fn config() -> Config {
    Config {
        cases: cases(),
        max_shrink_iters: 2_000,
        ..Config::default()
    }
}

/// Fails the case unless `result` is `Ok` or an error that says something.
pub fn clear_error<T, E: Display>(result: &Result<T, E>) -> Result<(), TestCaseError> {
    if let Err(e) = result {
        let message = e.to_string();
        prop_assert!(!message.trim().is_empty(), "an error without a message");
    }
    Ok(())
}

/// Hostile byte inputs derived from `samples` (valid inputs of the parser under test).
pub fn bytes(samples: &[&str]) -> BoxedStrategy<Vec<u8>> {
    let samples: Vec<String> = samples.iter().map(|s| (*s).to_owned()).collect();
    let pick = prop::sample::select(if samples.is_empty() {
        vec![String::from("{}")]
    } else {
        samples
    });
    prop_oneof![
        2 => prop::collection::vec(any::<u8>(), 0..512),
        1 => any::<String>().prop_map(String::into_bytes),
        1 => pick.clone().prop_map(String::into_bytes),
        2 => (pick.clone(), any::<prop::sample::Index>()).prop_map(|(s, at)| truncate(&s, at)),
        2 => (pick.clone(), any::<prop::sample::Index>(), prop::sample::select(INVALID_UTF8))
            .prop_map(|(s, at, bad)| splice(s.as_bytes(), at, bad)),
        2 => (pick.clone(), any::<prop::sample::Index>(), prop::sample::select(HUGE_NUMBERS))
            .prop_map(|(s, at, n)| replace_leaf_raw(&s, at, n)),
        2 => (pick.clone(), any::<prop::sample::Index>(), other_json())
            .prop_map(|(s, at, v)| replace_leaf(&s, at, v)),
        1 => (pick.clone(), any::<prop::sample::Index>(), 1..MAX_DEPTH)
            .prop_map(|(s, at, depth)| replace_leaf_raw(&s, at, &nested(depth, true))),
        1 => (pick.clone(), any::<prop::sample::Index>()).prop_map(|(s, at)| drop_key(&s, at)),
        1 => (pick.clone(), any::<prop::sample::Index>(), prop::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(s, at, junk)| splice(s.as_bytes(), at, &junk)),
        1 => (1..MAX_DEPTH, any::<bool>()).prop_map(|(d, closed)| nested(d, closed).into_bytes()),
    ]
    .boxed()
}

/// Hostile text inputs: [`bytes`] read as UTF-8 the lossy way (what a `&str` parser can be
/// handed once the transport decoded the body).
pub fn text(samples: &[&str]) -> BoxedStrategy<String> {
    bytes(samples)
        .prop_map(|b| String::from_utf8_lossy(&b).into_owned())
        .boxed()
}

/// Hostile model replies: [`text`], sometimes wrapped as models wrap JSON (a code fence,
/// prose before and after, a second object).
pub fn model_output(samples: &[&str]) -> BoxedStrategy<String> {
    (text(samples), 0u8..6, any::<String>())
        .prop_map(|(t, wrap, prose)| match wrap {
            0 => format!("```json\n{t}\n```"),
            1 => format!("```\n{t}"),
            2 => format!("{prose}\n{t}\n{prose}"),
            3 => format!("{t}{t}"),
            _ => t,
        })
        .boxed()
}

/// Any JSON value of another type than the one it replaces (short).
fn other_json() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        any::<String>().prop_map(Value::String),
        Just(Value::Array(vec![])),
        Just(Value::Object(serde_json::Map::new())),
        prop::collection::vec(any::<String>().prop_map(Value::String), 0..4).prop_map(Value::Array),
    ]
}

/// `depth` levels of arrays and objects, closed or left open.
fn nested(depth: usize, closed: bool) -> String {
    let mut s = String::with_capacity(depth * 6);
    for i in 0..depth {
        s.push_str(if i % 2 == 0 { "[" } else { "{\"a\":" });
    }
    s.push('1');
    if closed {
        for i in (0..depth).rev() {
            s.push(if i % 2 == 0 { ']' } else { '}' });
        }
    }
    s
}

fn truncate(s: &str, at: prop::sample::Index) -> Vec<u8> {
    let bytes = s.as_bytes();
    bytes[..at.index(bytes.len() + 1)].to_vec()
}

fn splice(base: &[u8], at: prop::sample::Index, insert: &[u8]) -> Vec<u8> {
    let at = at.index(base.len() + 1);
    let mut out = Vec::with_capacity(base.len() + insert.len());
    out.extend_from_slice(&base[..at]);
    out.extend_from_slice(insert);
    out.extend_from_slice(&base[at..]);
    out
}

/// Calls `f` on the `n`-th leaf (modulo the leaf count) of `v`, depth first.
fn with_leaf(v: &mut Value, n: usize, f: &mut dyn FnMut(&mut Value)) {
    fn count(v: &Value) -> usize {
        match v {
            Value::Array(a) if !a.is_empty() => a.iter().map(count).sum(),
            Value::Object(o) if !o.is_empty() => o.values().map(count).sum(),
            _ => 1,
        }
    }
    fn visit(v: &mut Value, n: &mut usize, f: &mut dyn FnMut(&mut Value)) -> bool {
        match v {
            Value::Array(a) if !a.is_empty() => a.iter_mut().any(|x| visit(x, n, f)),
            Value::Object(o) if !o.is_empty() => o.values_mut().any(|x| visit(x, n, f)),
            leaf => {
                if *n == 0 {
                    f(leaf);
                    true
                } else {
                    *n -= 1;
                    false
                }
            }
        }
    }
    let mut n = n % count(v).max(1);
    visit(v, &mut n, f);
}

/// The sample with one leaf replaced by `with`; non-JSON samples get it appended.
fn replace_leaf(sample: &str, at: prop::sample::Index, with: Value) -> Vec<u8> {
    match serde_json::from_str::<Value>(sample) {
        Ok(mut v) => {
            let mut with = Some(with);
            with_leaf(&mut v, at.index(usize::MAX), &mut |leaf| {
                if let Some(w) = with.take() {
                    *leaf = w;
                }
            });
            v.to_string().into_bytes()
        }
        Err(_) => format!("{sample}{with}").into_bytes(),
    }
}

/// The sample with one leaf replaced by the raw text `token` (not necessarily valid JSON).
fn replace_leaf_raw(sample: &str, at: prop::sample::Index, token: &str) -> Vec<u8> {
    const MARK: &str = "\u{1}ghost-fuzz\u{1}";
    let marked = replace_leaf(sample, at, Value::String(MARK.into()));
    let marked = String::from_utf8_lossy(&marked).into_owned();
    let quoted = Value::String(MARK.into()).to_string();
    if marked.contains(&quoted) {
        marked.replacen(&quoted, token, 1).into_bytes()
    } else {
        format!("{sample}{token}").into_bytes()
    }
}

/// The sample with one object key (any depth) removed.
fn drop_key(sample: &str, at: prop::sample::Index) -> Vec<u8> {
    fn count(v: &Value) -> usize {
        match v {
            Value::Object(o) => o.len() + o.values().map(count).sum::<usize>(),
            Value::Array(a) => a.iter().map(count).sum(),
            _ => 0,
        }
    }
    fn remove(v: &mut Value, n: &mut usize) -> bool {
        match v {
            Value::Object(o) => {
                if *n < o.len() {
                    if let Some(k) = o.keys().nth(*n).cloned() {
                        o.remove(&k);
                    }
                    return true;
                }
                *n -= o.len();
                o.values_mut().any(|x| remove(x, n))
            }
            Value::Array(a) => a.iter_mut().any(|x| remove(x, n)),
            _ => false,
        }
    }
    match serde_json::from_str::<Value>(sample) {
        Ok(mut v) => {
            let total = count(&v);
            if total > 0 {
                remove(&mut v, &mut at.index(total));
            }
            v.to_string().into_bytes()
        }
        Err(_) => sample.as_bytes().to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    #[test]
    fn mutations_change_what_they_say() {
        let sample = r#"{"route":"CODE","confidence":0.9,"evidence":["a"]}"#;
        let mut runner = TestRunner::deterministic();
        let at = any::<prop::sample::Index>()
            .new_tree(&mut runner)
            .unwrap()
            .current();
        let huge = String::from_utf8(replace_leaf_raw(sample, at, "1e999999")).unwrap();
        assert!(huge.contains("1e999999"), "{huge}");
        assert!(serde_json::from_str::<Value>(&huge).is_err(), "{huge}");
        let dropped: Value = serde_json::from_slice(&drop_key(sample, at)).unwrap();
        assert_eq!(dropped.as_object().unwrap().len(), 2);
        assert_eq!(nested(3, true), "[{\"a\":[1]}]");
        assert_eq!(nested(2, false), "[{\"a\":1");
        assert_eq!(splice(b"ab", at, &[0xFF]).len(), 3);
        assert!(truncate("abc", at).len() <= 3);
    }

    #[test]
    fn every_strategy_yields_inputs() {
        let mut runner = TestRunner::deterministic();
        let strategy = model_output(&[r#"{"a":[1,2,{"b":null}]}"#]);
        let mut invalid_json = 0;
        for _ in 0..200 {
            let input = strategy.new_tree(&mut runner).unwrap().current();
            invalid_json += usize::from(serde_json::from_str::<Value>(&input).is_err());
        }
        assert!(invalid_json > 50, "mostly hostile: {invalid_json}/200");
    }
}

//! `ghost decision validate`: the built binary reads an ActionDecision on stdin and prints
//! `{"valid", "errors"}`; `tests/fixtures/decision.json` (a copy of the shared fixture) is
//! reproduced case by case.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::Value;

fn probe(stdin: &[u8]) -> Value {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ghost"))
        .args(["decision", "validate"])
        .env_remove("GHOST_CONFIG_DIR")
        // No database, no NATS: an address nothing answers proves it never connects.
        .env("GHOST_DATABASE__URL", "postgres://nobody@127.0.0.1:1/none")
        .env("GHOST_BUS__URL", "nats://127.0.0.1:1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ghost");
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

#[test]
fn the_shared_fixture_passes_through_the_probe() {
    let fixture: Value = serde_json::from_str(include_str!("fixtures/decision.json")).unwrap();
    let cases = fixture["cases"].as_array().unwrap();
    assert!(!cases.is_empty());
    for case in cases {
        let got = probe(case["input"].to_string().as_bytes());
        assert_eq!(got["valid"], case["valid"], "{}: {got}", case["name"]);
        let errors = got["errors"].as_array().unwrap();
        assert_eq!(
            errors.is_empty(),
            case["valid"].as_bool().unwrap(),
            "{}: {got}",
            case["name"]
        );
    }
}

#[test]
fn each_broken_rule_is_named() {
    let got = probe(br#"{"decision":"do_action","action_type":"x","capability":"teleport","input":{},"reason":"r"}"#);
    assert_eq!(got["valid"], false);
    let errors: Vec<&str> = got["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    assert!(
        errors.iter().any(|e| e.starts_with("capability: unknown")),
        "{errors:?}"
    );
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("console_delivery: required")),
        "{errors:?}"
    );
}

#[test]
fn malformed_input_is_invalid_not_a_crash() {
    for bad in [
        &b"{\"decision\": "[..],
        b"",
        b"\xff\xfe",
        b"[]",
        b"null",
        b"```json\n{}\n```",
    ] {
        let got = probe(bad);
        assert_eq!(got["valid"], false, "{bad:?}");
        assert!(!got["errors"].as_array().unwrap().is_empty(), "{bad:?}");
    }
}

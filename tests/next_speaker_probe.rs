//! `ghost next-speaker`: the built binary reads a reply on stdin and prints one JSON decision.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::Value;

const SEED_REGISTRY: &str = "characters:\n  - {name: LUMINA, display_name: ルミナ, short_name: る}\n  - {name: CLARIS, display_name: クラリス, short_name: く}\n  - {name: NOX, display_name: ノクス, short_name: の}\n";

fn probe(stdin: &[u8], args: &[&str]) -> (bool, Value, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ghost"))
        .arg("next-speaker")
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR")))
        .env_remove("GHOST_CONFIG_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ghost");
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let json = serde_json::from_str(stdout.trim()).unwrap_or(Value::Null);
    (
        out.status.success(),
        json,
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

fn registry_file() -> tempfile_path::TempPath {
    tempfile_path::write(SEED_REGISTRY)
}

/// A tiny temp-file helper (no extra dependency).
mod tempfile_path {
    use std::path::PathBuf;

    pub struct TempPath(pub PathBuf);

    impl Drop for TempPath {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    pub fn write(text: &str) -> TempPath {
        let path =
            std::env::temp_dir().join(format!("ghost-registry-{}.yaml", uuid::Uuid::new_v4()));
        std::fs::write(&path, text).unwrap();
        TempPath(path)
    }
}

#[test]
fn prints_the_decision_for_a_tagged_reply() {
    let reg = registry_file();
    let path = reg.0.to_str().unwrap();
    let (ok, json, _) = probe(
        "<think>[Next: NOX]</think>そうだね。[Next: (クラリス)]".as_bytes(),
        &["--current", "LUMINA", "--registry", path],
    );
    assert!(ok);
    assert_eq!(
        json,
        serde_json::json!({"next_id": "CLARIS", "reason": "tag", "extracted": "(クラリス)", "normalized": "クラリス"})
    );
}

#[test]
fn self_nomination_follows_the_flag() {
    let reg = registry_file();
    let path = reg.0.to_str().unwrap();
    let (_, refused, _) = probe(b"[Next: NOX]", &["--current", "NOX", "--registry", path]);
    assert_eq!(refused["next_id"], "LUMINA");
    assert_eq!(refused["reason"], "round_robin");
    let (_, allowed, _) = probe(
        b"[Next: NOX]",
        &[
            "--current",
            "NOX",
            "--registry",
            path,
            "--allow-self-nomination",
        ],
    );
    assert_eq!(allowed["next_id"], "NOX");
    assert_eq!(allowed["reason"], "tag");
}

#[test]
fn fuzzy_threshold_and_random_fallback_are_honoured() {
    let reg = registry_file();
    let path = reg.0.to_str().unwrap();
    let (_, fuzzy, _) = probe(
        b"[Next: CLARISS]",
        &["--current", "NOX", "--registry", path],
    );
    assert_eq!(fuzzy["reason"], "fuzzy");
    assert_eq!(fuzzy["next_id"], "CLARIS");
    let (_, strict, _) = probe(
        b"[Next: CLARISS]",
        &[
            "--current",
            "NOX",
            "--registry",
            path,
            "--fuzzy-threshold",
            "0.99",
            "--fallback",
            "random",
        ],
    );
    assert_eq!(strict["reason"], "random");
    assert!(["LUMINA", "CLARIS"].contains(&strict["next_id"].as_str().unwrap()));
}

#[test]
fn reads_the_repository_characters_by_default_and_rejects_user() {
    let (ok, json, _) = probe(b"[Next: USER]", &["--current", "kuro"]);
    assert!(ok);
    assert_eq!(
        json["next_id"], "LUMINA",
        "USER is rejected; round-robin after kuro"
    );
    assert_eq!(json["reason"], "round_robin");
    assert_eq!(json["normalized"], "USER");
}

#[test]
fn arbitrary_bytes_never_crash_it() {
    let reg = registry_file();
    let path = reg.0.to_str().unwrap();
    let (ok, json, _) = probe(
        &[0xff, 0xfe, b'[', 0x00, b']'],
        &["--current", "LUMINA", "--registry", path],
    );
    assert!(ok);
    assert_eq!(json["reason"], "round_robin");
}

#[test]
fn bad_options_are_clear_errors() {
    let (ok, _, stderr) = probe(b"x", &["--current", "NOX", "--fallback", "coin"]);
    assert!(!ok);
    assert!(stderr.contains("coin"), "{stderr}");
    let (ok, _, stderr) = probe(
        b"x",
        &["--current", "NOX", "--registry", "/nonexistent.yaml"],
    );
    assert!(!ok);
    assert!(stderr.contains("/nonexistent.yaml"), "{stderr}");
    let (ok, _, stderr) = probe(b"x", &["--current", "NOX", "--fuzzy-threshold", "2"]);
    assert!(!ok);
    assert!(stderr.contains("fuzzy_threshold"), "{stderr}");
}

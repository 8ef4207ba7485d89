//! `ghost mask`: the built binary reads text on stdin and prints the masked text and the
//! categories found as one JSON object; a broken rules file is a clear error naming the rule.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

fn probe(stdin: &str, args: &[&str]) -> (bool, Value, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ghost"))
        .arg("mask")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("GHOST_CONFIG_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ghost");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write stdin");
    let out = child.wait_with_output().expect("wait for ghost");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    (
        out.status.success(),
        serde_json::from_str(stdout.trim()).unwrap_or(Value::Null),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[test]
fn probe_prints_masked_text_and_categories() {
    let (ok, out, err) = probe(
        "card 4111 1111 1111 1111, mail ren@example.com, AKIAIOSFODNN7EXAMPLE\n",
        &[],
    );
    assert!(ok, "{err}");
    assert_eq!(
        out,
        json!({
            "masked": "card [REDACTED:payment_card], mail [REDACTED:email], [REDACTED:api_key]",
            "categories": ["api_key", "email", "payment_card"],
            "high_risk": ["api_key", "payment_card"],
        })
    );
    let (ok, clean, _) = probe("ただの雑談だよ", &[]);
    assert!(ok);
    assert_eq!(clean["masked"], "ただの雑談だよ");
    assert_eq!(clean["categories"], json!([]));
}

#[test]
fn a_broken_rules_file_names_the_rule() {
    let path = std::env::temp_dir().join(format!("ghost-masking-{}.yaml", uuid::Uuid::new_v4()));
    std::fs::write(
        &path,
        "version: 1\nwithheld_notice: '{categories}'\nrules:\n  - {name: cards, category: payment_card, risk: high, pattern: '(\\d+'}\n",
    )
    .expect("write rules");
    let (ok, out, err) = probe("4111", &["--rules", &path.to_string_lossy()]);
    let _ = std::fs::remove_file(&path);
    assert!(!ok && out.is_null(), "{out}");
    assert!(
        err.contains("\"cards\" (#1)") && err.contains("does not compile"),
        "{err}"
    );
}

//! `ghost mask`: the built binary reads text on stdin and prints the masked text and the
//! categories found as one JSON object; a broken rules file is a clear error naming the rule.

mod support;

use serde_json::{json, Value};

/// `ghost mask <args>` with `stdin`.
fn probe(stdin: &str, args: &[&str]) -> (bool, Value, String) {
    let all: Vec<&str> = std::iter::once("mask")
        .chain(args.iter().copied())
        .collect();
    support::cli::run_ghost(&all, stdin.as_bytes())
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

//! `ghost write-plan apply`: the built binary applies `tests/fixtures/write_plan.json`'s
//! plans (copied from `../shared/fixtures/`) and refuses bad input clearly.

mod support;

use serde_json::{json, Value};

fn probe(stdin: &[u8], args: &[&str]) -> (bool, Value, String) {
    let all: Vec<&str> = ["write-plan", "apply"]
        .iter()
        .chain(args)
        .copied()
        .collect();
    support::cli::run_ghost(&all, stdin)
}

/// Subjects compare after NFKC, trim and case folding (the fixture's rule).
fn key(s: &str) -> String {
    ghost_shared::memory::subject_key(s)
}

#[test]
fn every_fixture_case_gives_the_expected_outcome() {
    let fixture: Value = serde_json::from_str(include_str!("fixtures/write_plan.json")).unwrap();
    for case in fixture["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let now = case["now"].as_i64().unwrap().to_string();
        let (ok, out, err) = probe(case["input"].to_string().as_bytes(), &["--now", &now]);
        assert!(ok, "{name}: exit status, stderr {err}");
        let expect = &case["expect"];
        assert_eq!(out["ok"], expect["ok"], "{name}: {out}");
        if expect["ok"] == false {
            let errors = out["errors"].as_array().unwrap();
            assert!(!errors.is_empty(), "{name}: a rejection names its reasons");
            assert!(out.get("memory").is_none(), "{name}: nothing applied");
            continue;
        }
        if let Some(prefs) = expect["preferences"].as_array() {
            let mut want: Vec<(String, String, String, String)> = prefs
                .iter()
                .map(|p| {
                    let f = |i: usize| p[i].as_str().unwrap().to_owned();
                    (f(0), key(&f(1)), f(2), f(3))
                })
                .collect();
            let mut got: Vec<(String, String, String, String)> = out["memory"]["preferences"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| {
                    let f = |k: &str| p[k].as_str().unwrap().to_owned();
                    (f("domain"), key(&f("subject")), f("polarity"), f("status"))
                })
                .collect();
            want.sort();
            got.sort();
            assert_eq!(got, want, "{name}");
        }
        if let Some(interest) = expect["interest"].as_object() {
            let state = &out["memory"]["interest"];
            assert_eq!(state["interaction_mode"], interest["mode"], "{name}");
            let targets = state["attention_targets"].as_array().unwrap();
            let want = interest["targets"].as_array().unwrap();
            assert_eq!(targets.len(), want.len(), "{name}: {state}");
            for (t, w) in targets.iter().zip(want) {
                assert_eq!(t["type"], w[0], "{name}");
                assert_eq!(t["value"], w[1], "{name}");
                let (got, want) = (t["weight"].as_f64().unwrap(), w[2].as_f64().unwrap());
                assert!((got - want).abs() < 1e-6, "{name}: {got} vs {want}");
            }
            assert_eq!(
                state["updated_from_event_ids"],
                json!([case["input"]["event_id"]]),
                "{name}"
            );
        }
    }
}

fn base_input(plan: Value) -> Value {
    json!({
        "memory": {"states": [], "preferences": [], "interest": null},
        "event_id": "5d2c1b0a-9e8f-5a7b-8c6d-1e2f3a4b5c6d",
        "plan": plan,
    })
}

#[test]
fn a_plan_given_as_model_text_is_parsed_strictly() {
    let (ok, out, _) = probe(
        base_input(json!("{\"state_updates\": []}"))
            .to_string()
            .as_bytes(),
        &["--now", "0"],
    );
    assert!(ok);
    assert_eq!(out["ok"], true, "{out}");
    let fenced = "```json\n{\"state_updates\": []}\n```";
    let (ok, out, _) = probe(
        base_input(json!(fenced)).to_string().as_bytes(),
        &["--now", "0"],
    );
    assert!(ok);
    assert_eq!(out["ok"], false, "a fenced plan is not repaired: {out}");
    assert!(out["errors"][0]
        .as_str()
        .unwrap()
        .contains("not valid JSON"));
}

#[test]
fn bad_input_is_a_clear_error_not_a_panic() {
    for (stdin, args, needle) in [
        (
            &b"not json"[..],
            vec!["--now", "0"],
            "stdin must be one JSON object",
        ),
        (&b"{\"plan\": {}}"[..], vec!["--now", "0"], "event_id"),
        (&b"\xff\xfe"[..], vec!["--now", "0"], "UTF-8"),
        (
            &br#"{"event_id":"x","plan":{}}"#[..],
            vec!["--now", "0"],
            "stdin must be",
        ),
    ] {
        let (ok, _, err) = probe(stdin, &args);
        assert!(!ok, "{needle}");
        assert!(err.contains(needle), "{needle}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    let (ok, _, err) = probe(b"{}", &["--now", "soon"]);
    assert!(!ok);
    assert!(err.contains("--now"), "{err}");
}

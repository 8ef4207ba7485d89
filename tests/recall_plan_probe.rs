//! `ghost recall plan`: the built binary prints the RetrievalPlan of
//! `tests/fixtures/recall_plan.json`'s messages (copied from `../shared/fixtures/`).

mod support;

use serde_json::Value;

fn probe(stdin: &[u8]) -> (bool, Value, String) {
    support::cli::run_ghost(&["recall", "plan"], stdin)
}

#[test]
fn every_fixture_message_gets_the_expected_plan() {
    let fixture: Value = serde_json::from_str(include_str!("fixtures/recall_plan.json")).unwrap();
    for case in fixture["cases"].as_array().unwrap() {
        let text = case["text"].as_str().unwrap();
        let (ok, plan, err) = probe(text.as_bytes());
        assert!(ok, "{text}: {err}");
        let expect = &case["expect"];
        assert_eq!(plan["mode"], expect["mode"], "{text}: {plan}");
        assert_eq!(plan["queries"], serde_json::json!([text]), "{text}");
        let hint = &plan["time_hint"];
        assert_eq!(
            hint["about_year_start"], expect["about_year_start"],
            "{text}"
        );
        assert_eq!(hint["about_year_end"], expect["about_year_end"], "{text}");
        assert_eq!(hint["life_stage_hint"], expect["life_stage"], "{text}");
        assert_eq!(
            plan["limits"]["max_candidates"], 12,
            "limits from config/ghost.yaml"
        );
        assert_eq!(plan["limits"]["max_selected"], 5);
    }
}

#[test]
fn bytes_that_are_not_text_are_a_clear_error() {
    let (ok, _, err) = probe(&[0xff, 0xfe, 0xfd]);
    assert!(!ok);
    assert!(err.contains("UTF-8"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

//! Every case of `mood.json` through `probe` and through `MoodWindow`, to 1e-9.

use ghost_mood::mood::{probe, Episode, MoodConstants, MoodState, MoodWindow};
use serde_json::Value;

const FIXTURE: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/mood.json"
));

fn fixture() -> (MoodConstants, Vec<Value>) {
    let root: Value = serde_json::from_str(FIXTURE).expect("mood.json parses");
    // The fixture's `params` use the field names of `MoodConstants`; the rest are defaults.
    let constants: MoodConstants =
        serde_json::from_value(root["params"].clone()).expect("params are MoodConstants");
    constants.validate().expect("fixture constants are valid");
    let cases = root["cases"].as_array().expect("cases array").clone();
    assert!(!cases.is_empty());
    (constants, cases)
}

fn assert_close(case: usize, what: &str, got: f64, want: f64) {
    assert!(
        (got - want).abs() <= 1e-9,
        "case {case}: {what} = {got}, expected {want}"
    );
}

fn assert_matches(case: usize, got: &MoodState, expect: &Value) {
    // The expected object must deserialize as a MoodState (same keys, nothing extra) ...
    let want: MoodState = serde_json::from_value(expect.clone())
        .unwrap_or_else(|e| panic!("case {case}: expect is not a MoodState: {e}"));
    // ... and our serialization must have exactly the expected shape.
    let got_json = serde_json::to_value(got).expect("serializes");
    assert_eq!(
        shape(&got_json),
        shape(expect),
        "case {case}: output shape differs"
    );

    assert_eq!(got.label, want.label, "case {case}: label");
    assert_close(case, "intensity", got.intensity, want.intensity);
    for (name, g, w) in [
        ("joy", got.components.joy, want.components.joy),
        ("sadness", got.components.sadness, want.components.sadness),
        ("anger", got.components.anger, want.components.anger),
        ("fear", got.components.fear, want.components.fear),
    ] {
        assert_close(case, name, g, w);
    }
    let (g, w) = (got.response_policy, want.response_policy);
    assert_close(case, "cooperation", g.cooperation, w.cooperation);
    assert_close(case, "refusal_bias", g.refusal_bias, w.refusal_bias);
    assert_eq!(
        g.refusal_allowed, w.refusal_allowed,
        "case {case}: refusal_allowed"
    );
}

/// Key structure of a JSON value (object keys in order, leaves reduced to their type).
fn shape(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Array(
            m.iter()
                .map(|(k, v)| Value::Array(vec![Value::String(k.clone()), shape(v)]))
                .collect(),
        ),
        Value::Number(_) => Value::String("number".into()),
        Value::Bool(_) => Value::String("bool".into()),
        Value::String(_) => Value::String("string".into()),
        other => other.clone(),
    }
}

#[test]
fn every_case_through_probe() {
    let (constants, cases) = fixture();
    for (i, case) in cases.iter().enumerate() {
        let now = case["now"].as_f64().expect("now");
        let input = serde_json::to_string(&case["episodes"]).expect("episodes");
        let got = probe(&input, now, &constants)
            .unwrap_or_else(|e| panic!("case {i}: probe failed: {e}"));
        assert_matches(i, &got, &case["expect"]);
    }
}

#[test]
fn every_case_through_the_window() {
    let (constants, cases) = fixture();
    for (i, case) in cases.iter().enumerate() {
        let now = case["now"].as_f64().expect("now");
        let episodes: Vec<Episode> =
            serde_json::from_value(case["episodes"].clone()).expect("episodes");
        // Inserted one by one, in the fixture's order.
        let window = MoodWindow::restore(constants, episodes).expect("valid episodes");
        assert_matches(i, &window.state_at(now), &case["expect"]);

        // The window restored from what it kept (as the service reads the stored rows)
        // gives the same answer.
        let restored = MoodWindow::restore(constants, window.episodes().cloned()).expect("restore");
        assert_matches(i, &restored.state_at(now), &case["expect"]);
    }
}

//! Runs every case of `tests/fixtures/routing.json` through the pure pipeline: first stage,
//! then (where the case scripts a classifier reply) validation and gates; checks route, source
//! and declaration, and replays the `/local` sequences.

use ghost_router::routing::{
    declaration, first_stage, Fallback, FirstOutcome, FirstStage, Notice, Route, RouteDecision,
    RoutingConfig, SessionRouting,
};
use serde_json::Value;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/routing.json"
);

fn fixture() -> Value {
    let text = std::fs::read_to_string(FIXTURE).expect("routing.json fixture is readable");
    serde_json::from_str(&text).expect("routing.json is JSON")
}

/// The repository's `config/routing.yaml`.
fn config() -> RoutingConfig {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../config/routing.yaml");
    let yaml = std::fs::read_to_string(path).expect("config/routing.yaml is present");
    RoutingConfig::from_yaml(&yaml).expect("routing.yaml loads")
}

/// The scripted classifier reply of a case as the raw text the model would have sent.
fn scripted_reply(case: &Value) -> Option<String> {
    if let Some(raw) = case.get("classifier_reply_raw").and_then(Value::as_str) {
        return Some(raw.to_owned());
    }
    case.get("classifier_reply").map(Value::to_string)
}

/// Runs one message through the pipeline; `classifier` answers only if it is asked.
fn route_message<'a>(
    text: &'a str,
    session: &SessionRouting,
    config: &RoutingConfig,
    classifier: Option<&str>,
) -> (FirstStage<'a>, Option<RouteDecision>, bool) {
    let stage = first_stage(text, session, &config.dictionary);
    let asked = stage.needs_classifier();
    let decision = match &stage.outcome {
        FirstOutcome::FlagOnly(_) => None,
        FirstOutcome::Decided(d) => Some(d.clone()),
        FirstOutcome::ClassifierNeeded => {
            let raw = classifier.expect("the classifier was asked but the case scripts no reply");
            Some(stage.with_classifier_reply(raw, &config.dictionary, &config.gates))
        }
    };
    (stage, decision, asked)
}

fn expected_declaration(declarations: &Value, route: Route) -> Option<String> {
    declarations
        .get(route.as_str())
        .and_then(Value::as_str)
        .map(str::to_owned)
}

#[test]
fn every_router_case_gets_the_expected_route_source_and_declaration() {
    let fixture = fixture();
    let config = config();
    let declarations = &fixture["declarations"];
    let cases = fixture["cases"].as_array().expect("cases");
    assert!(
        cases.len() >= 20,
        "every case of the fixture is expected here"
    );
    for case in cases {
        let text = case["text"].as_str().expect("text");
        let want_route: Route = case["expect"]["route"]
            .as_str()
            .and_then(|r| r.parse().ok())
            .expect("expect.route");
        let want_source = case["expect"]["source"].as_str().expect("expect.source");
        let reply = scripted_reply(case);

        // A fresh session: the previous primary route is unknown.
        let mut session = SessionRouting::default();
        let (stage, decision, asked) = route_message(text, &session, &config, reply.as_deref());
        let decision = decision.unwrap_or_else(|| panic!("{text:?}: no decision"));
        assert_eq!(decision.route, want_route, "{text:?}: {decision:?}");
        assert_eq!(
            decision.source.as_str(),
            want_source,
            "{text:?}: {decision:?}"
        );
        // The classifier is asked exactly when the case scripts a reply.
        assert_eq!(
            asked,
            reply.is_some(),
            "{text:?}: classifier asked = {asked}"
        );
        assert!(!decision.uses_cloud() || want_route == Route::Code);

        // Declaration: first message of a session declares unless CHAT …
        let line = session.record(&stage, Some(decision.route));
        assert_eq!(
            line.map(str::to_owned),
            expected_declaration(declarations, want_route),
            "{text:?}"
        );
        // … and the same route again declares nothing.
        let (stage2, decision2, _) = route_message(text, &session, &config, reply.as_deref());
        let again = session.record(&stage2, decision2.map(|d| d.route));
        assert_eq!(again, None, "{text:?}: repeated route must not re-declare");
    }
}

#[test]
fn declaration_texts_match_the_fixture() {
    let fixture = fixture();
    let declarations = &fixture["declarations"];
    for route in Route::ALL {
        assert_eq!(
            declaration(None, route).map(str::to_owned),
            expected_declaration(declarations, route),
            "{route}"
        );
        assert_eq!(declaration(Some(route), route), None, "{route}");
    }
    assert!(declarations["CHAT"].is_null());
}

#[test]
fn declarations_follow_route_changes_across_a_session() {
    let config = config();
    let declarations = &fixture()["declarations"];
    let mut session = SessionRouting::default();
    let mut lines = Vec::new();
    for text in [
        "新サービスの設計とタスク分解を手伝って",
        "/plan 続きをお願い",
        "sudo systemctl restart nginx が失敗する",
        "/chat ありがとう",
        "/ops もう一回",
    ] {
        let (stage, decision, _) = route_message(text, &session, &config, None);
        lines.push(
            session
                .record(&stage, decision.map(|d| d.route))
                .map(str::to_owned),
        );
    }
    assert_eq!(
        lines,
        vec![
            expected_declaration(declarations, Route::Plan),
            None,
            expected_declaration(declarations, Route::Ops),
            None,
            expected_declaration(declarations, Route::Ops),
        ]
    );
}

/// Replays a `/local` sequence; returns the decision of the last step and the final session.
fn replay(steps: &[&str], config: &RoutingConfig) -> (Option<RouteDecision>, SessionRouting) {
    let mut session = SessionRouting::default();
    let mut last = None;
    for step in steps {
        let (stage, decision, _) = route_message(step, &session, config, None);
        session.record(&stage, decision.as_ref().map(|d| d.route));
        last = decision;
    }
    (last, session)
}

#[test]
fn local_only_sequences_behave_as_the_fixture_says() {
    let fixture = fixture();
    let config = config();
    let sequences = fixture["local_only"].as_array().expect("local_only");
    assert_eq!(sequences.len(), 3);
    for seq in sequences {
        let steps: Vec<&str> = seq["steps"]
            .as_array()
            .expect("steps")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let expect = seq["expect"].as_str().expect("expect");
        let (last, session) = replay(&steps, &config);
        let last = last.expect("the last step is routed");
        if expect.contains("runs on the cloud coder") {
            assert_eq!(last.route, Route::Code, "{steps:?}");
            assert!(last.uses_cloud());
            assert!(!session.local_only);
            assert_eq!(last.notice, None);
        } else {
            // No cloud request; the persona explains that /cloud lifts it.
            assert!(!last.uses_cloud(), "{steps:?}: {last:?}");
            assert_eq!(last.route, Route::Chat, "{steps:?}");
            assert_eq!(last.proposed, Some(Route::Code), "{steps:?}");
            assert_eq!(last.notice, Some(Notice::CloudRequired), "{steps:?}");
            assert!(session.local_only);
        }
    }
}

#[test]
fn local_alone_is_only_a_flag_change() {
    let config = config();
    let session = SessionRouting::default();
    let (stage, decision, asked) = route_message("/local", &session, &config, None);
    assert!(decision.is_none());
    assert!(!asked);
    assert!(stage.local_only);
    let mut session = session;
    assert_eq!(session.record(&stage, None), None);
    assert!(session.local_only);
    assert_eq!(session.last_primary_route, None);
}

#[test]
fn blocked_code_is_not_declared_as_coding() {
    let config = config();
    let (last, session) = replay(&["/local", "/code 直して"], &config);
    assert_eq!(last.map(|d| d.route), Some(Route::Chat));
    assert_eq!(session.last_primary_route, Some(Route::Chat));
}

/// Seed 002: CODE needs 0.8 and above *and strong evidence re-checked*. A coding request
/// without an artefact ("fizzbuzzをRustで書いて": a language and a verb) is weak evidence the
/// dictionary does not route on, so a confident classifier's CODE on it is refused by the
/// guard, local_only or not (`code_request_support` used to let it through).
#[test]
fn classifier_code_on_a_coding_request_without_an_artefact_is_refused() {
    let config = config();
    for local_only in [false, true] {
        let session = SessionRouting {
            local_only,
            last_primary_route: None,
        };
        let (_, decision, asked) = route_message(
            "fizzbuzzをRustで書いて",
            &session,
            &config,
            Some(
                r#"{"route":"CODE","confidence":0.95,"reason":"コード","evidence":["Rustで書いて"]}"#,
            ),
        );
        assert!(asked);
        let decision = decision.expect("decision");
        assert_eq!(decision.route, Route::Chat);
        assert_eq!(decision.proposed, Some(Route::Code));
        assert!(
            matches!(
                decision.fallback,
                Some(Fallback::CodeGuard {
                    evidence_found: false,
                    ..
                })
            ),
            "{decision:?}"
        );
        assert_eq!(decision.notice, None::<Notice>);
    }
}

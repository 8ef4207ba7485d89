//! Fuzzed model output at the router: the classifier's verdict, the worker contract, the
//! persona's proposal and Kuro's delegation decision never panic the parsers, every failure
//! is a clear error, and nothing a model writes can take a `/local` session to the cloud.
//! `PROPTEST_CASES` inputs per property (`ghost_testkit::fuzz`).

use std::sync::LazyLock;

use ghost_router::routing::{
    first_stage_in, parse_classifier_output, parse_proposal, parse_worker_output, EntryMode,
    PersonaVerdict, RoutingConfig, SessionRouting,
};
use ghost_testkit::fuzz;
use proptest::prelude::*;

/// Loaded once: compiling the dictionary per case would dominate the run time.
static CONFIG: LazyLock<RoutingConfig> = LazyLock::new(|| {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../config/routing.yaml");
    let yaml = std::fs::read_to_string(path).expect("config/routing.yaml");
    RoutingConfig::from_yaml(&yaml).expect("routing.yaml loads")
});

const VERDICTS: &[&str] = &[
    r#"{"route":"CODE","confidence":0.92,"reason":"a stack trace","evidence":["panicked at","main.rs:3"]}"#,
    r#"{"route":"CHAT","confidence":0.4}"#,
    r#"{"route":"RESEARCH","confidence":1,"reason":"","evidence":[]}"#,
];

const CONTRACTS: &[&str] = &[
    r#"{"result":"done","needs_next_loop":false,"why":"","next_actions":[],"questions_for_user":[],"confidence":0.9,"risk":"low"}"#,
    r#"{"result":{"rows":[1,2,3]},"needs_next_loop":true,"why":"more","next_actions":["a","b","c","d"],"questions_for_user":["which?"],"confidence":0.5,"risk":"high","fit":false,"suggested_route":"PLAN"}"#,
];

const PROPOSALS: &[&str] = &[
    r#"{"goal_reached":true}"#,
    r#"{"goal_reached":false,"proposal":"continue","reason":"half done"}"#,
    r#"{"goal_reached":false,"proposal":"reroute","route":"RESEARCH","reason":"needs sources"}"#,
];

proptest! {
    #![proptest_config(fuzz::config())]

    #[test]
    fn persona_proposals(raw in fuzz::model_output(PROPOSALS)) {
        let parsed = parse_proposal(&raw);
        fuzz::clear_error(&parsed)?;
        if let Ok(PersonaVerdict::Propose { reason, .. }) = parsed {
            prop_assert!(!reason.trim().is_empty());
            prop_assert!(reason.chars().count() <= 201);
        }
    }

    #[test]
    fn classifier_verdicts(raw in fuzz::model_output(VERDICTS)) {
        let parsed = parse_classifier_output(&raw);
        fuzz::clear_error(&parsed)?;
        if let Ok(v) = parsed {
            prop_assert!((0.0..=1.0).contains(&v.confidence));
            prop_assert!(v.evidence.len() <= 2);
        }
    }

    #[test]
    fn worker_contracts(raw in fuzz::model_output(CONTRACTS)) {
        let parsed = parse_worker_output(&raw);
        fuzz::clear_error(&parsed)?;
        if let Ok(w) = parsed {
            prop_assert!((0.0..=1.0).contains(&w.confidence));
            prop_assert!(w.next_actions.len() <= 3);
        }
    }

    #[test]
    fn kuro_delegations(raw in fuzz::model_output(VERDICTS), local_only in any::<bool>()) {
        let config = &*CONFIG;
        let session = SessionRouting { local_only, last_primary_route: None };
        let stage = first_stage_in(EntryMode::Kuro, "main.rsのバグを直して", &session, &config.dictionary);
        let decision = stage.with_kuro_decision(&raw, &config.dictionary, &config.gates);
        prop_assert!(!(local_only && decision.uses_cloud()), "a /local session reached the cloud");
    }
}

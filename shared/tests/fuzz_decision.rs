//! Fuzzed ActionDecision parsing (the deliberation model's answer): hostile model output
//! never panics, every failure names at least one broken rule, and whatever passes keeps
//! every rule (a `do_action` always has a known capability and a `console_delivery`).
//! `PROPTEST_CASES` inputs per property (`ghost_testkit::fuzz`).

use ghost_shared::autonomy::decision::{parse_decision, DecisionKind, CAPABILITIES};
use ghost_testkit::fuzz;
use proptest::prelude::*;

const DECISIONS: &[&str] = &[
    r#"{"decision":"do_action","action_type":"web_research","capability":"web_access","input":{"query":"緑茶"},"reason":"気になった","persona_influence":{"curiosity":0.8},"mood_influence":{},"console_delivery":{"mode":"chat","message_kind":"report"}}"#,
    r#"{"decision":"do_action","action_type":"agent_delegate","capability":"agent_delegate","input":{"task":"今日のメモを整理"},"reason":"散らかっていると言っていた","persona_influence":{},"mood_influence":{},"console_delivery":{"mode":"notify","message_kind":"progress"}}"#,
    r#"{"decision":"skip","reason":"今は待つ"}"#,
];

proptest! {
    #![proptest_config(fuzz::config())]

    #[test]
    fn action_decisions(raw in fuzz::model_output(DECISIONS)) {
        let parsed = parse_decision(&raw).map_err(|errors| errors.join("; "));
        fuzz::clear_error(&parsed)?;
        if let Ok(d) = parsed {
            prop_assert!(!d.reason.is_empty());
            if d.decision == DecisionKind::DoAction {
                prop_assert!(CAPABILITIES.contains(&d.capability.as_str()));
                prop_assert!(d.console_delivery.is_some());
            }
        }
    }
}

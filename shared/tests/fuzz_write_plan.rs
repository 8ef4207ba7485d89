//! Fuzzed write plans (issue 12): whatever the worker model writes, parsing and validation
//! never panic, a rejection names its reasons clearly, and an accepted plan applies with
//! every number in range. `PROPTEST_CASES` inputs per property (`ghost_testkit::fuzz`).

use ghost_shared::memory::{apply_plan, validate, ApplyContext, Memory, WritePlan};
use ghost_testkit::fuzz;
use proptest::prelude::*;
use uuid::Uuid;

const EVENT: &str = "5d2c1b0a-9e8f-5a7b-8c6d-1e2f3a4b5c6d";

const PLANS: &[&str] = &[
    r#"{"event_annotations":{"life_stage":"university","about_time_confidence":0.5,"entities":[{"type":"PERSON","name":"母","confidence":0.7}]},"state_updates":[{"kind":"fact","op":"upsert","body_text":"マスターは京都に住んでいる","confidence":0.8,"evidence_event_ids":["5d2c1b0a-9e8f-5a7b-8c6d-1e2f3a4b5c6d"],"reason":"r"}],"preference_updates":[{"op":"confirm","domain":"food","polarity":"like","subject":"蕎麦","confidence":0.8,"evidence_event_ids":["5d2c1b0a-9e8f-5a7b-8c6d-1e2f3a4b5c6d"],"reason":"r"}],"event_affect":{"moment_affect_text":"うれしい","moment_affect_labels":["joy"],"moment_affect_score_vad":{"v":0.5,"a":0.2,"d":0.1},"moment_affect_confidence":0.7},"context_updates":{"threads":[{"thread_key":"food","confidence":0.5}],"links":[]},"interest_update":{"attention_targets":[{"type":"topic","value":"蕎麦","weight":0.7}],"interaction_mode":"support"}}"#,
    r#"{"state_updates":[],"preference_updates":[]}"#,
];

proptest! {
    #![proptest_config(fuzz::config())]

    #[test]
    fn write_plans(raw in fuzz::model_output(PLANS)) {
        let event = Uuid::parse_str(EVENT).unwrap();
        let memory = Memory::default();
        match WritePlan::parse(&raw).and_then(|p| validate(&p, &memory, event)) {
            Err(errors) => {
                prop_assert!(!errors.is_empty());
                for e in &errors {
                    fuzz::clear_error(&Err::<(), _>(e))?;
                }
            }
            Ok(checked) => {
                let (after, _) = apply_plan(&memory, &checked, ApplyContext::new("kuro", event, 1.0e9));
                for p in &after.preferences {
                    prop_assert!((0.0..=1.0).contains(&p.confidence));
                }
                if let Some(i) = &after.interest {
                    prop_assert!(i.attention_targets.len() <= 12);
                    for t in &i.attention_targets {
                        prop_assert!((0.05..=1.0).contains(&t.weight));
                    }
                }
            }
        }
    }
}

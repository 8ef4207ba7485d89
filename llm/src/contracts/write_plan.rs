//! The write plan (validated by [`ghost_domain::memory::validate`]): the schema is derived from
//! [`WritePlan`] itself, its enumerated texts narrowed to the memory vocabulary and its ids
//! to those of the plan's input.

use serde_json::{json, Value};

use crate::Contract;
use ghost_domain::memory::model::GOAL_PREFIX;
use ghost_domain::memory::plan::WritePlan;
use ghost_domain::memory::vocab::{
    InteractionMode, LifeStage, LinkLabel, Polarity, PreferenceDomain, PreferenceOp, StateAbout,
    StateKind, StateOp,
};

/// Tokens a plan may take: every list and text is bounded below, so the largest plan the
/// schema admits fits (a small model fills what it is given; two states' topics took 100
/// more).
pub const MAX_TOKENS: u32 = 1500;

/// What a plan may cite: the utterance planned for, the other events in its input, and
/// the states it may change.
#[derive(Debug, Clone, Default)]
pub struct PlanIds {
    /// The utterance (every update's evidence starts with it).
    pub current: String,
    /// Other events of the input (the user message, recent events).
    pub events: Vec<String>,
    /// States the memory holds now.
    pub states: Vec<String>,
}

/// The plan's contract for one utterance.
pub fn contract(ids: &PlanIds) -> Contract {
    // `close` and `mark_done` change a state the memory holds: with none, only `upsert`.
    let state_ops: &[&str] = if ids.states.is_empty() {
        &["upsert"]
    } else {
        StateOp::NAMES
    };
    let contract = Contract::of::<WritePlan>("write_plan", MAX_TOKENS)
        // Bookkeeping: left to richer inputs than a model's.
        .without(&["state_updates", "[]"], "last_confirmed_at")
        .max_length(&["state_updates", "[]", "payload", "topic"], 40)
        .min_length(&["state_updates", "[]", "payload", "topic"], 1)
        .allow(&["event_annotations", "life_stage"], LifeStage::NAMES)
        .max_items(&["event_annotations", "entities"], 2)
        .max_length(&["event_annotations", "entities", "[]", "type"], 16)
        .min_length(&["event_annotations", "entities", "[]", "type"], 1)
        .max_length(&["event_annotations", "entities", "[]", "name"], 40)
        .min_length(&["event_annotations", "entities", "[]", "name"], 1)
        .max_items(&["state_updates"], 2)
        .allow(&["state_updates", "[]", "kind"], StateKind::NAMES)
        .allow(&["state_updates", "[]", "op"], state_ops)
        .allow(&["state_updates", "[]", "state_id"], &ids.states)
        .allow(&["state_updates", "[]", "about"], StateAbout::NAMES)
        .max_length(&["state_updates", "[]", "body_text"], 120)
        .min_length(&["state_updates", "[]", "body_text"], 1)
        .max_length(&["state_updates", "[]", "reason"], 60)
        .replace(
            &["state_updates", "[]", "evidence_event_ids"],
            evidence(ids),
        )
        .max_items(&["preference_updates"], 2)
        .allow(&["preference_updates", "[]", "op"], PreferenceOp::NAMES)
        .allow(
            &["preference_updates", "[]", "domain"],
            PreferenceDomain::NAMES,
        )
        .allow(&["preference_updates", "[]", "polarity"], Polarity::NAMES)
        .max_length(&["preference_updates", "[]", "subject"], 40)
        .min_length(&["preference_updates", "[]", "subject"], 1)
        .max_length(&["preference_updates", "[]", "note"], 60)
        .max_length(&["preference_updates", "[]", "reason"], 60)
        .replace(
            &["preference_updates", "[]", "evidence_event_ids"],
            evidence(ids),
        )
        .max_length(&["event_affect", "moment_affect_text"], 60)
        .max_items(&["event_affect", "moment_affect_labels"], 2)
        .max_length(&["event_affect", "moment_affect_labels", "[]"], 20)
        .max_length(&["event_affect", "inner_thought_text"], 60)
        .max_items(&["context_updates", "threads"], 1)
        .max_length(&["context_updates", "threads", "[]", "thread_key"], 30)
        .min_length(&["context_updates", "threads", "[]", "thread_key"], 1)
        .max_items(&["context_updates", "links"], 1)
        .allow(
            &["context_updates", "links", "[]", "to_event_id"],
            &ids.events,
        )
        .allow(
            &["context_updates", "links", "[]", "label"],
            LinkLabel::NAMES,
        )
        .max_items(&["interest_update", "attention_targets"], 2)
        .max_length(&["interest_update", "attention_targets", "[]", "value"], 40)
        .min_length(&["interest_update", "attention_targets", "[]", "value"], 1)
        .allow(
            &["interest_update", "interaction_mode"],
            InteractionMode::NAMES,
        );
    let target = contract.at(TARGET).cloned().unwrap_or_else(|| json!({}));
    contract.replace(TARGET, targets(target, &ids.states))
}

const TARGET: &[&str] = &["interest_update", "attention_targets", "[]"];

/// An attention target: a topic or person in words, or a goal that refers to a task the
/// memory holds by `goal_id:<state>` (none without states).
fn targets(target: Value, states: &[String]) -> Value {
    let mut words = target.clone();
    words["properties"]["type"] = json!({"enum": ["topic", "person"]});
    if states.is_empty() {
        return words;
    }
    let mut goal = target;
    goal["properties"]["type"] = json!({"enum": ["goal"]});
    let refs: Vec<String> = states.iter().map(|s| format!("{GOAL_PREFIX}{s}")).collect();
    goal["properties"]["value"] = json!({ "enum": refs });
    json!({"anyOf": [words, goal]})
}

/// Evidence: the utterance first, then at most one other event of the input. (A grammar
/// cannot say "contains"; a tuple can say "starts with".)
fn evidence(ids: &PlanIds) -> Value {
    let alone = json!({"type": "array", "prefixItems": [{"const": ids.current}],
                       "minItems": 1, "maxItems": 1});
    if ids.events.is_empty() {
        return alone;
    }
    let with_other = json!({"type": "array",
        "prefixItems": [{"const": ids.current}, {"enum": ids.events}],
        "minItems": 2, "maxItems": 2});
    json!({"anyOf": [alone, with_other]})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids() -> PlanIds {
        PlanIds {
            current: "11111111-1111-1111-1111-111111111111".into(),
            events: vec!["22222222-2222-2222-2222-222222222222".into()],
            states: vec!["33333333-3333-3333-3333-333333333333".into()],
        }
    }

    fn plan(evidence: &str, state_id: &str, kind: &str) -> String {
        format!(
            r#"{{"event_annotations":null,"state_updates":[{{"kind":"{kind}","op":"upsert",
            "state_id":{state_id},"about":"speaker","body_text":"likes tea","payload":null,"confidence":0.8,"salience":0.5,
            "valid_from_ts":null,"valid_to_ts":null,"evidence_event_ids":{evidence},"reason":"said so"}}],
            "preference_updates":[],"event_affect":null,"context_updates":{{"threads":[],"links":[]}},
            "interest_update":null}}"#
        )
    }

    #[test]
    fn evidence_starts_with_the_utterance_and_ids_come_from_the_input() {
        let c = contract(&ids());
        let cur = r#"["11111111-1111-1111-1111-111111111111"]"#;
        assert!(c.admits(&plan(cur, "null", "fact")), "{}", c.schema);
        // Whom a state is about is one of two words, never a name.
        let named = plan(cur, "null", "fact").replace(r#""speaker""#, r#""Ann""#);
        assert!(!c.admits(&named));
        let both =
            r#"["11111111-1111-1111-1111-111111111111","22222222-2222-2222-2222-222222222222"]"#;
        assert!(c.admits(&plan(both, "null", "fact")));
        let other_only = r#"["22222222-2222-2222-2222-222222222222"]"#;
        assert!(!c.admits(&plan(other_only, "null", "fact")));
        let state = r#""33333333-3333-3333-3333-333333333333""#;
        assert!(c.admits(&plan(cur, state, "fact")));
        assert!(!c.admits(&plan(
            cur,
            r#""44444444-4444-4444-4444-444444444444""#,
            "fact"
        )));
        assert!(!c.admits(&plan(cur, "null", "opinion")));
    }

    #[test]
    fn without_states_a_plan_can_only_add_one() {
        let none = contract(&PlanIds {
            states: vec![],
            ..ids()
        });
        let cur = r#"["11111111-1111-1111-1111-111111111111"]"#;
        assert!(none.admits(&plan(cur, "null", "fact")));
        let close = plan(cur, "null", "fact").replace(r#""op":"upsert""#, r#""op":"close""#);
        assert!(!none.admits(&close));
        assert!(!none.admits(&plan(cur, "null", "fact").replace("likes tea", "")));
    }

    /// A plan with one task filed under `topic` and one attention target `target`.
    fn keyed(topic: &str, target: &str) -> String {
        plan(
            r#"["11111111-1111-1111-1111-111111111111"]"#,
            "null",
            "task",
        )
        .replace(
            r#""payload":null"#,
            &format!(r#""payload":{{"topic":"{topic}"}}"#),
        )
        .replace(
            r#""interest_update":null"#,
            &format!(
                r#""interest_update":{{"attention_targets":[{target}],"interaction_mode":null}}"#
            ),
        )
    }

    #[test]
    fn the_ordering_keys_are_asked_for_and_goals_refer_to_held_tasks() {
        let c = contract(&ids());
        let goal = r#"{"type":"goal","value":"goal_id:33333333-3333-3333-3333-333333333333","weight":0.8}"#;
        assert!(c.admits(&keyed("tea", goal)), "{}", c.schema);
        let topic = r#"{"type":"topic","value":"tea","weight":0.8}"#;
        assert!(c.admits(&keyed("tea", topic)));
        // A goal in words, or naming a state not offered, is outside the schema.
        assert!(!c.admits(&keyed("tea", &goal.replace("goal_id:3333", "goal_id:4444"))));
        assert!(!c.admits(&keyed("tea", &topic.replace("topic", "goal"))));
        assert!(!c.admits(&keyed("", topic)));
        let without = r#"{"type":"goal","value":"goal_id:s1","weight":0.8}"#;
        let none = contract(&PlanIds {
            states: vec![],
            ..ids()
        });
        assert!(!none.admits(&keyed("tea", without)));
        let plan = WritePlan::parse(&keyed("tea", goal)).unwrap();
        assert_eq!(plan.state_updates[0].payload.as_ref().unwrap().topic, "tea");
    }

    #[test]
    fn what_the_schema_admits_the_plan_type_decodes() {
        let text = plan(
            r#"["11111111-1111-1111-1111-111111111111"]"#,
            "null",
            "fact",
        );
        assert!(WritePlan::parse(&text).is_ok());
    }
}

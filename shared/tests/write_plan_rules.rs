//! The write plan's rules (issue 12): one test per rule, each plan rejected whole with the
//! reason, and the preference and state semantics of an accepted plan.

use ghost_shared::memory::vocab::{PreferenceStatus, StateKind, StateStatus};
use ghost_shared::memory::{apply_plan, validate, ApplyContext, Memory, WritePlan};
use serde_json::{json, Value};
use uuid::Uuid;

const EVENT: &str = "5d2c1b0a-9e8f-5a7b-8c6d-1e2f3a4b5c6d";

fn event() -> Uuid {
    Uuid::parse_str(EVENT).unwrap()
}

fn plan(v: Value) -> WritePlan {
    WritePlan::from_value(v).unwrap_or_else(|e| panic!("{e:?}"))
}

/// The reasons `v` is rejected for, against `memory`.
fn rejected(memory: &Memory, v: Value) -> Vec<String> {
    let parsed = WritePlan::from_value(v);
    match parsed.and_then(|p| validate(&p, memory, event())) {
        Ok(_) => panic!("plan was accepted"),
        Err(errors) => errors,
    }
}

fn apply(memory: &Memory, v: Value) -> Memory {
    apply_for(memory, event(), v)
}

/// `memory` after plan `v` for the utterance `utterance`.
fn apply_for(memory: &Memory, utterance: Uuid, v: Value) -> Memory {
    let checked = validate(&plan(v), memory, utterance).unwrap_or_else(|e| panic!("{e:?}"));
    apply_plan(
        memory,
        &checked,
        ApplyContext::new("kuro", utterance, 1_790_000_000.0),
    )
    .0
}

fn pref(op: &str, domain: &str, polarity: &str, subject: &str) -> Value {
    json!({"op": op, "domain": domain, "polarity": polarity, "subject": subject,
           "confidence": 0.8, "evidence_event_ids": [EVENT], "reason": "r"})
}

fn state(kind: &str, op: &str, state_id: Option<Uuid>) -> Value {
    json!({"kind": kind, "op": op, "state_id": state_id, "body_text": "マスターは京都に住んでいる",
           "confidence": 0.7, "evidence_event_ids": [EVENT], "reason": "r"})
}

fn has(errors: &[String], needle: &str) -> bool {
    errors.iter().any(|e| e.contains(needle))
}

#[test]
fn text_that_is_not_json_is_rejected_unrepaired() {
    let errors = WritePlan::parse("Sure! {\"state_updates\": []}").unwrap_err();
    assert!(has(&errors, "not valid JSON"), "{errors:?}");
    assert!(WritePlan::parse("{\"state_updates\": []} trailing").is_err());
}

#[test]
fn an_unknown_section_is_rejected() {
    let errors = WritePlan::from_value(json!({"stat_updates": []})).unwrap_err();
    assert!(has(&errors, "stat_updates"), "{errors:?}");
}

#[test]
fn enum_values_not_listed_are_rejected() {
    let m = Memory::default();
    assert!(has(
        &rejected(
            &m,
            json!({"preference_updates": [pref("confirm", "sport", "like", "野球")]})
        ),
        "preference_updates[0].domain"
    ));
    assert!(has(
        &rejected(
            &m,
            json!({"preference_updates": [pref("maybe", "food", "like", "蕎麦")]})
        ),
        "preference_updates[0].op"
    ));
    assert!(has(
        &rejected(
            &m,
            json!({"preference_updates": [pref("confirm", "food", "love", "蕎麦")]})
        ),
        "preference_updates[0].polarity"
    ));
    assert!(has(
        &rejected(
            &m,
            json!({"state_updates": [state("memo", "upsert", None)]})
        ),
        "state_updates[0].kind"
    ));
    assert!(has(
        &rejected(
            &m,
            json!({"state_updates": [state("fact", "delete", None)]})
        ),
        "state_updates[0].op"
    ));
    assert!(has(
        &rejected(
            &m,
            json!({"interest_update": {"attention_targets": [{"type": "place", "value": "x", "weight": 0.5}]}})
        ),
        "attention_targets[0].type"
    ));
    assert!(has(
        &rejected(
            &m,
            json!({"interest_update": {"interaction_mode": "sleep"}})
        ),
        "interaction_mode"
    ));
    assert!(has(
        &rejected(
            &m,
            json!({"event_annotations": {"life_stage": "kindergarten"}})
        ),
        "life_stage"
    ));
    assert!(has(
        &rejected(
            &m,
            json!({"context_updates": {"links": [{"to_event_id": EVENT, "label": "near", "confidence": 0.5}]}})
        ),
        "links[0].label"
    ));
}

#[test]
fn numbers_out_of_range_are_rejected() {
    let m = Memory::default();
    let affect = |v: f64, a: f64, d: f64, c: f64| {
        json!({"event_affect": {"moment_affect_text": "x",
        "moment_affect_score_vad": {"v": v, "a": a, "d": d}, "moment_affect_confidence": c}})
    };
    assert!(has(
        &rejected(&m, affect(0.0, -1.01, 0.0, 0.5)),
        "moment_affect_score_vad.a"
    ));
    assert!(has(
        &rejected(&m, affect(1.5, 0.0, 0.0, 0.5)),
        "moment_affect_score_vad.v"
    ));
    assert!(has(
        &rejected(&m, affect(0.0, 0.0, 0.0, 1.2)),
        "moment_affect_confidence"
    ));
    let mut p = pref("confirm", "food", "like", "蕎麦");
    p["confidence"] = json!(-0.1);
    assert!(has(
        &rejected(&m, json!({"preference_updates": [p]})),
        "preference_updates[0].confidence"
    ));
    assert!(has(
        &rejected(
            &m,
            json!({"interest_update": {"attention_targets": [{"type": "topic", "value": "x", "weight": 1.5}]}})
        ),
        "weight"
    ));
}

#[test]
fn an_update_without_the_current_event_as_evidence_is_rejected() {
    let m = Memory::default();
    let mut p = pref("confirm", "food", "like", "蕎麦");
    p["evidence_event_ids"] = json!([Uuid::nil()]);
    assert!(has(
        &rejected(&m, json!({"preference_updates": [p]})),
        "must include the current event"
    ));
    let mut s = state("fact", "upsert", None);
    s["evidence_event_ids"] = json!([]);
    assert!(has(
        &rejected(&m, json!({"state_updates": [s]})),
        "state_updates[0].evidence_event_ids"
    ));
    let mut s = state("fact", "upsert", None);
    s["evidence_event_ids"] = json!(["123"]);
    assert!(has(
        &rejected(&m, json!({"state_updates": [s]})),
        "not an event id"
    ));
}

#[test]
fn mark_done_on_a_non_task_is_rejected() {
    let m = apply(
        &Memory::default(),
        json!({"state_updates": [state("fact", "upsert", None)]}),
    );
    let id = m.states[0].state_id;
    let errors = rejected(
        &m,
        json!({"state_updates": [state("fact", "mark_done", Some(id))]}),
    );
    assert!(
        has(&errors, "mark_done applies only to a task"),
        "{errors:?}"
    );
}

#[test]
fn a_state_id_that_names_no_state_is_rejected() {
    let errors = rejected(
        &Memory::default(),
        json!({"state_updates": [state("task", "close", Some(Uuid::nil()))]}),
    );
    assert!(has(&errors, "names no state"), "{errors:?}");
}

#[test]
fn one_broken_update_rejects_the_whole_plan_with_every_reason() {
    let good = pref("confirm", "food", "like", "蕎麦");
    let bad = pref("confirm", "sport", "like", "野球");
    let errors = rejected(
        &Memory::default(),
        json!({"preference_updates": [good, bad],
        "event_affect": {"moment_affect_text": "x", "moment_affect_score_vad": {"v": 2, "a": 0, "d": 0},
                         "moment_affect_confidence": 0.5}}),
    );
    assert_eq!(errors.len(), 2, "{errors:?}");
}

#[test]
fn like_confirm_then_opposite_revokes_the_first() {
    let m = apply(
        &Memory::default(),
        json!({"preference_updates": [pref("upsert_candidate", "food", "like", "ピーマン")]}),
    );
    assert_eq!(m.preferences[0].status, PreferenceStatus::Candidate);
    let m = apply(
        &m,
        json!({"preference_updates": [pref("confirm", "food", "like", " ﾋﾟｰﾏﾝ ")]}),
    );
    assert_eq!(m.preferences.len(), 1, "the same key after NFKC and trim");
    assert_eq!(m.preferences[0].status, PreferenceStatus::Confirmed);
    let m = apply(
        &m,
        json!({"preference_updates": [pref("confirm", "food", "dislike", "ピーマン")]}),
    );
    let status = |polarity: &str| {
        m.preferences
            .iter()
            .find(|p| p.polarity.as_str() == polarity)
            .map(|p| p.status)
    };
    assert_eq!(status("dislike"), Some(PreferenceStatus::Confirmed));
    assert_eq!(status("like"), Some(PreferenceStatus::Revoked));
    let m = apply(
        &m,
        json!({"preference_updates": [pref("revoke", "food", "dislike", "ピーマン")]}),
    );
    assert!(m
        .preferences
        .iter()
        .all(|p| p.status == PreferenceStatus::Revoked));
}

#[test]
fn states_keep_revisions_and_new_facts_coexist() {
    let m = apply(
        &Memory::default(),
        json!({"state_updates": [state("fact", "upsert", None), state("task", "upsert", None)]}),
    );
    assert_eq!(m.states.len(), 2);
    assert_ne!(
        m.states[0].state_id, m.states[1].state_id,
        "ids derive from the event and the index"
    );
    let fact = m.states[0].state_id;
    let task = m.states[1].state_id;
    let mut revised = state("fact", "upsert", Some(fact));
    revised["body_text"] = json!("マスターは大阪に引っ越した");
    let m = apply(
        &m,
        json!({"state_updates": [revised, state("task", "mark_done", Some(task))]}),
    );
    let f = m.states.iter().find(|s| s.state_id == fact).unwrap();
    assert_eq!(
        (f.revision, f.body_text.as_str()),
        (2, "マスターは大阪に引っ越した")
    );
    let t = m.states.iter().find(|s| s.state_id == task).unwrap();
    assert_eq!(
        (t.kind, t.status, t.revision),
        (StateKind::Task, StateStatus::Done, 2)
    );
    // A conflicting fact without a state id is a new state beside the old one.
    let later = Uuid::new_v4();
    let mut conflicting = state("fact", "upsert", None);
    conflicting["evidence_event_ids"] = json!([later]);
    conflicting["valid_from_ts"] = json!(1_790_000_000);
    let m = apply_for(&m, later, json!({"state_updates": [conflicting]}));
    assert_eq!(
        m.states
            .iter()
            .filter(|s| s.kind == StateKind::Fact)
            .count(),
        2
    );
}

/// Memory is per person (issue 35): a plan's preferences are the speaker's, its new states
/// about the speaker unless it says `nobody`; a revision stays about whom it was about; one
/// person's confirm never revokes another's opposite preference.
#[test]
fn a_plan_writes_the_speakers_memory_and_never_touches_anothers() {
    let for_person = |memory: &Memory, person: &str, utterance: Uuid, v: Value| {
        let checked = validate(&plan(v), memory, utterance).unwrap_or_else(|e| panic!("{e:?}"));
        let mut ctx = ApplyContext::new("kuro", utterance, 1_790_000_000.0);
        ctx.person = person;
        apply_plan(memory, &checked, ctx).0
    };
    let mut own = state("fact", "upsert", None);
    let mut nobody = state("task", "upsert", None);
    nobody["about"] = json!("nobody");
    own["about"] = json!("speaker");
    let ann = for_person(
        &Memory::default(),
        "ann",
        event(),
        json!({"state_updates": [own, nobody],
               "preference_updates": [pref("confirm", "food", "like", "celery")]}),
    );
    assert_eq!(ann.states[0].person.as_deref(), Some("ann"));
    assert_eq!(ann.states[1].person, None);
    assert_eq!(ann.preferences[0].person, "ann");

    let ben = for_person(
        &ann,
        "ben",
        event(),
        json!({"preference_updates": [pref("confirm", "food", "dislike", "celery")]}),
    );
    let standing: Vec<(&str, PreferenceStatus)> = ben
        .preferences
        .iter()
        .map(|p| (p.person.as_str(), p.status))
        .collect();
    assert_eq!(
        standing,
        [
            ("ann", PreferenceStatus::Confirmed),
            ("ben", PreferenceStatus::Confirmed)
        ]
    );

    // Ben revises the state about no one: it stays about no one.
    let id = ann.states[1].state_id;
    let revised = for_person(
        &ann,
        "ben",
        event(),
        json!({"state_updates": [state("task", "upsert", Some(id))]}),
    );
    assert_eq!(revised.states[1].person, None);

    let mut named = state("fact", "upsert", None);
    named["about"] = json!("ann");
    let errors = rejected(&Memory::default(), json!({"state_updates": [named]}));
    assert!(has(&errors, "state_updates[0].about"), "{errors:?}");
}

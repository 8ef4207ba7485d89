//! The selection step (seed 001 B-1): the model chooses, as this persona, which candidates
//! it recalls. Its input carries `persona_selection_context`; output that is not the
//! expected JSON, or names an id that was not offered, means no memories this turn.

use std::collections::HashSet;

use serde::Deserialize;
use serde_json::{json, Value};

use ghost_shared::affect::MoodState;
use ghost_shared::autonomy::persona::{mood_context, Vad};
use ghost_shared::config::CharacterConfig;
use ghost_shared::memory::vocab::PreferenceStatus;
use ghost_shared::memory::Memory;

use super::collect::Candidate;

/// The persona's side of the selection (seed 001 `PersonaSelectionContext`).
///
/// `mood` is the mood service's state (None when it did not answer), `recent_vad` the
/// persona's `recent_vad_average` (None when unreadable): `long_mood_state` and
/// `recent_vad_average` are what every prompt asking for the mood gets
/// ([`ghost_shared::autonomy::persona::mood_context`]).
pub fn persona_selection_context(
    character: &CharacterConfig,
    memory: &Memory,
    mood: Option<&MoodState>,
    recent_vad: Option<Vad>,
    now: f64,
    tau_secs: f64,
) -> Value {
    let mood = mood_context(mood, recent_vad);
    let confirmed: Vec<Value> = memory
        .preferences
        .iter()
        .filter(|p| p.status == PreferenceStatus::Confirmed)
        .map(|p| json!({"domain": p.domain, "subject": p.subject, "polarity": p.polarity}))
        .collect();
    let interest = memory.interest_at(now, tau_secs);
    json!({
        "second_person_label": character.second_person_label,
        "persona_text": character.persona_text,
        "addon_text": character.addon_text,
        "long_mood_state": mood["long_mood_state"],
        "recent_vad_average": mood["recent_vad_average"],
        "confirmed_preferences": confirmed,
        "interest_state": interest,
    })
}

/// The selection's user message.
pub fn selection_input(
    user_input: &str,
    candidates: &[Candidate],
    max_selected: usize,
    context: Value,
) -> Value {
    let offered: Vec<Value> = candidates
        .iter()
        .map(|c| json!({"id": c.id, "source": c.source, "text": c.text}))
        .collect();
    // What changes least comes first: a model server that keeps the previous prompt's
    // prefix decodes only from the first difference (the message itself comes last).
    json!({
        "persona_selection_context": context,
        "max_selected": max_selected,
        "candidates": offered,
        "user_input": user_input,
    })
}

/// The candidates as offered to the model: the same, each named `m1`, `m2`, ... in order.
pub fn with_handles(candidates: &[Candidate]) -> Vec<Candidate> {
    candidates
        .iter()
        .enumerate()
        .map(|(i, c)| Candidate {
            id: format!("m{}", i + 1),
            ..c.clone()
        })
        .collect()
}

/// The stored ids of the handles chosen from `offered` (made by [`with_handles`] from
/// `candidates`, so the positions match).
pub fn stored_ids(
    handles: &[String],
    offered: &[Candidate],
    candidates: &[Candidate],
) -> Vec<String> {
    handles
        .iter()
        .filter_map(|h| offered.iter().position(|c| &c.id == h))
        .filter_map(|i| candidates.get(i).map(|c| c.id.clone()))
        .collect()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SelectionOutput {
    selected_ids: Vec<String>,
}

/// The ids the model selected, or why its answer is unusable (nothing is repaired).
pub fn parse_selection(
    answer: &str,
    candidates: &[Candidate],
    max_selected: usize,
) -> Result<Vec<String>, String> {
    let out: SelectionOutput = serde_json::from_str(answer)
        .map_err(|e| format!("selection is not {{\"selected_ids\": [...]}} JSON: {e}"))?;
    if out.selected_ids.len() > max_selected {
        return Err(format!(
            "selected {} memories, at most {max_selected} allowed",
            out.selected_ids.len()
        ));
    }
    let offered: HashSet<&str> = candidates.iter().map(|c| c.id.as_str()).collect();
    let mut seen = HashSet::new();
    for id in &out.selected_ids {
        if !offered.contains(id.as_str()) {
            return Err(format!("selected {id:?}, which was not offered"));
        }
        if !seen.insert(id.as_str()) {
            return Err(format!("selected {id:?} twice"));
        }
    }
    Ok(out.selected_ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(id: &str) -> Candidate {
        Candidate {
            id: id.into(),
            source: "recent_events",
            text: "t".into(),
            score: 0.1,
        }
    }

    #[test]
    fn handles_map_back_to_the_stored_ids() {
        let stored = [c("state:aaaa"), c("event:bbbb"), c("pref:cccc")];
        let offered = with_handles(&stored);
        assert_eq!(
            offered.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
            ["m1", "m2", "m3"]
        );
        let chosen = parse_selection(r#"{"selected_ids": ["m3", "m1"]}"#, &offered, 2).unwrap();
        assert_eq!(
            stored_ids(&chosen, &offered, &stored),
            ["pref:cccc", "state:aaaa"]
        );
        assert!(parse_selection(r#"{"selected_ids": ["state:aaaa"]}"#, &offered, 2).is_err());
    }

    #[test]
    fn only_offered_ids_within_the_limit_pass() {
        let offered = [c("a"), c("b")];
        assert_eq!(
            parse_selection(r#"{"selected_ids": ["b"]}"#, &offered, 2),
            Ok(vec!["b".into()])
        );
        assert!(parse_selection(r#"{"selected_ids": ["z"]}"#, &offered, 2).is_err());
        assert!(parse_selection(r#"{"selected_ids": ["a", "a"]}"#, &offered, 2).is_err());
        assert!(parse_selection(r#"{"selected_ids": ["a", "b"]}"#, &offered, 1).is_err());
        assert!(parse_selection("```json\n{\"selected_ids\": []}\n```", &offered, 2).is_err());
        assert!(parse_selection(r#"{"selected": []}"#, &offered, 2).is_err());
    }
}

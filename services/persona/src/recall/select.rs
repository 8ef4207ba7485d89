//! The selection step (seed 001 B-1): the model chooses, as this persona, which candidates
//! it recalls. Its input carries `persona_selection_context`; output that is not the
//! expected JSON, or names an id that was not offered, means no memories this turn.

use std::collections::HashSet;

use serde::Deserialize;
use serde_json::{json, Value};

use ghost_shared::affect::MoodState;
use ghost_shared::autonomy::persona::{mood_context, round_numbers, Vad};
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
    let mut context = json!({
        "second_person_label": character.second_person_label,
        "persona_text": character.persona_text,
        "addon_text": character.addon_text,
        "long_mood_state": mood["long_mood_state"],
        "recent_vad_average": mood["recent_vad_average"],
        "confirmed_preferences": confirmed,
        "interest_state": interest,
    });
    round_numbers(&mut context);
    context
}

/// How much of a candidate's text the selection reads (the reply gets it whole), in
/// characters of English. A fact someone told fits; a long reply of the persona's is cut:
/// three of them made the selection's prompt some 2,000 tokens, which the embedded model on
/// one thread read for longer than the selection's timeout, so nothing was ever recalled
/// (issue 45).
pub const GIST_CHARS: usize = 140;

/// What a character costs of [`GIST_CHARS`]: one for ASCII, [`WIDE_CHAR_COST`] for the rest.
/// A small model's tokenizer, trained mostly on English, spends two to three tokens on a
/// kana or kanji: by characters alone a Japanese gist was three times an English one.
pub const WIDE_CHAR_COST: usize = 3;

/// `text` cut where its cost passes [`GIST_CHARS`], marked when cut.
fn gist(text: &str) -> std::borrow::Cow<'_, str> {
    let mut spent = 0;
    for (at, c) in text.char_indices() {
        spent += if c.is_ascii() { 1 } else { WIDE_CHAR_COST };
        if spent > GIST_CHARS {
            return format!("{}…", &text[..at]).into();
        }
    }
    text.into()
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
        .map(|c| json!({"id": c.id, "source": c.source, "text": gist(&c.text)}))
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
    fn the_selection_reads_a_long_text_cut_and_a_short_one_whole() {
        let mut long = c("m1");
        long.text = "長い返事です。".repeat(60);
        let mut short = c("m2");
        short.text = "My sister Emma moved to Lisbon last year.".into();
        let input = selection_input("where?", &[long.clone(), short.clone()], 5, json!({}));
        let texts: Vec<&str> = input["candidates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["text"].as_str().unwrap())
            .collect();
        // Japanese: a third as many characters as English.
        assert_eq!(texts[0].chars().count(), GIST_CHARS / WIDE_CHAR_COST + 1);
        assert!(texts[0].ends_with('…') && long.text.starts_with(texts[0].trim_end_matches('…')));
        assert_eq!(texts[1], short.text);
        let english = "My sister Emma moved to Lisbon. ".repeat(10);
        let cut = gist(&english);
        assert_eq!(cut.chars().count(), GIST_CHARS + 1);
        assert!(english.starts_with(cut.trim_end_matches('…')));
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

//! What the persona cares about (seed 001 A-1: the message "knows what the persona cares
//! about"): its confirmed preferences and its interest state's attention targets, decayed
//! as everywhere else ([`crate::memory::InterestState::decayed_targets`]). It decides what
//! an autonomy message reports first: a capability's hits are offered most cared-about
//! first.

use serde_json::{json, Value};

use crate::memory::vocab::{Polarity, PreferenceStatus};
use crate::memory::Memory;

/// Weight a confirmed like adds to a text that names its subject, and a dislike takes away.
const LIKE_WEIGHT: f64 = 0.5;
const DISLIKE_WEIGHT: f64 = 1.0;

/// The persona's confirmed preferences and current attention.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cares {
    /// `(subject, +LIKE_WEIGHT | -DISLIKE_WEIGHT)` of each confirmed preference.
    preferences: Vec<(String, f64)>,
    /// `(value, decayed weight)` of each attention target.
    targets: Vec<(String, f64)>,
    /// What the message input shows of it.
    shown: Value,
}

impl Cares {
    /// The cares in `memory` at `now` (interest decayed with `tau_secs`).
    pub fn of(memory: &Memory, now: f64, tau_secs: f64) -> Self {
        let confirmed: Vec<_> = memory
            .preferences
            .iter()
            .filter(|p| p.status == PreferenceStatus::Confirmed)
            .collect();
        let targets = memory
            .interest_at(now, tau_secs)
            .map(|i| i.attention_targets)
            .unwrap_or_default();
        let shown = json!({
            "confirmed_preferences": confirmed
                .iter()
                .map(|p| json!({"domain": p.domain, "subject": p.subject, "polarity": p.polarity}))
                .collect::<Vec<_>>(),
            "attention_targets": targets,
            "interaction_mode": memory.interest.as_ref().map(|i| i.interaction_mode),
        });
        Self {
            preferences: confirmed
                .iter()
                .map(|p| {
                    let w = match p.polarity {
                        Polarity::Like => LIKE_WEIGHT,
                        Polarity::Dislike => -DISLIKE_WEIGHT,
                    };
                    (p.subject.clone(), w)
                })
                .collect(),
            targets: targets
                .iter()
                .map(|t| (t.value.clone(), t.weight))
                .collect(),
            shown,
        }
    }

    /// What the message input carries: confirmed preferences, attention, interaction mode.
    pub fn shown(&self) -> &Value {
        &self.shown
    }

    /// How much `text` touches what the persona cares about: the weight of each target and
    /// preference it names (case-insensitive; `_` read as a space).
    pub fn score(&self, text: &str) -> f64 {
        let text = text.to_lowercase();
        let names = |key: &str| {
            let key = key.to_lowercase();
            !key.trim().is_empty() && (text.contains(&key) || text.contains(&key.replace('_', " ")))
        };
        self.targets
            .iter()
            .chain(&self.preferences)
            .filter(|(key, _)| names(key))
            .map(|(_, w)| w)
            .sum()
    }

    /// Orders the `hits` of a capability's payload (if any) most cared-about first, the
    /// capability's order kept among equals.
    pub fn order_payload(&self, payload: &mut Value) {
        let Some(hits) = payload.get_mut("hits").and_then(Value::as_array_mut) else {
            return;
        };
        let text = |h: &Value| {
            ["title", "snippet", "url"]
                .iter()
                .filter_map(|k| h[*k].as_str())
                .collect::<Vec<_>>()
                .join(" ")
        };
        hits.sort_by(|a, b| self.score(&text(b)).total_cmp(&self.score(&text(a))));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::model::{AttentionTarget, InterestState};
    use crate::memory::vocab::{InteractionMode, TargetType};

    fn memory() -> Memory {
        Memory::default()
    }

    #[test]
    fn hits_about_what_the_persona_attends_to_come_first() {
        let mut m = memory();
        m.interest = Some(InterestState {
            attention_targets: vec![AttentionTarget {
                target_type: TargetType::Topic,
                value: "green_tea".into(),
                weight: 0.8,
            }],
            interaction_mode: InteractionMode::Support,
            updated_from_event_ids: Vec::new(),
            updated_at: 100.0,
        });
        let cares = Cares::of(&m, 100.0, 3.0 * 86_400.0);
        let mut payload = json!({"hits": [
            {"title": "Coffee prices", "snippet": "beans"},
            {"title": "Green tea harvest", "snippet": "sencha"},
            {"title": "Weather", "snippet": "rain"},
        ]});
        cares.order_payload(&mut payload);
        let titles: Vec<&str> = payload["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["title"].as_str().unwrap())
            .collect();
        assert_eq!(titles, ["Green tea harvest", "Coffee prices", "Weather"]);
        assert!(cares.score("nothing here").abs() < 1e-9);
    }

    #[test]
    fn a_payload_without_hits_is_left_alone() {
        let cares = Cares::of(&memory(), 0.0, 1.0);
        let mut payload = json!({"task": "x"});
        cares.order_payload(&mut payload);
        assert_eq!(payload, json!({"task": "x"}));
    }
}

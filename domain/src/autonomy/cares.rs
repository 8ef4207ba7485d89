//! What the persona cares about (seed 001 A-1: the message "knows what the persona cares
//! about"): its confirmed preferences and its interest state's attention targets, decayed
//! as everywhere else ([`crate::memory::InterestState::decayed_targets`]). It decides what
//! an autonomy message reports first: a capability's hits are offered most cared-about
//! first, by how close each hit is in meaning (embeddings, compared by the caller) to each
//! care's subject. Never by spelling: seed 001 forbids inferring meaning by string matching,
//! and "cat" is in "category" but not in "kitten".

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

    /// The texts a hit's meaning is compared with: each attention target's value and each
    /// confirmed preference's subject (`_` read as a space), in the order
    /// [`Cares::order_payload`] expects their vectors.
    pub fn keys(&self) -> Vec<String> {
        self.targets
            .iter()
            .chain(&self.preferences)
            .map(|(key, _)| key.replace('_', " "))
            .collect()
    }

    /// The texts of the `hits` of a capability's payload (title and snippet: what a hit is
    /// about; its address says nothing of it), in the hits' order; empty without hits.
    pub fn hit_texts(payload: &Value) -> Vec<String> {
        payload
            .get("hits")
            .and_then(Value::as_array)
            .map(|hits| {
                hits.iter()
                    .map(|h| {
                        ["title", "snippet"]
                            .iter()
                            .filter_map(|k| h[*k].as_str())
                            .collect::<Vec<_>>()
                            .join(" ")
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// How much a hit touches what the persona cares about, from its similarity to each key
    /// (`similarity[k]` to `keys()[k]`): the weight of every care it is about (at least
    /// [`MIN_SIMILARITY`]), scaled by how close it is.
    pub fn score(&self, similarity: &[f64]) -> f64 {
        self.targets
            .iter()
            .chain(&self.preferences)
            .zip(similarity)
            .filter(|(_, s)| **s >= MIN_SIMILARITY)
            .map(|((_, w), s)| w * s)
            .sum()
    }

    /// Orders the `hits` of a capability's payload (if any) most cared-about first, the
    /// capability's order kept among equals. `similarity[i][k]` is how close hit `i`
    /// ([`Cares::hit_texts`]) is to key `k` ([`Cares::keys`]) in meaning (the cosine of
    /// their embeddings): meaning, never the spelling, decides (seed 001 forbids inferring
    /// by string matching). Without one row per hit the order is left as it is.
    pub fn order_payload(&self, payload: &mut Value, similarity: &[Vec<f64>]) {
        let Some(hits) = payload.get_mut("hits").and_then(Value::as_array_mut) else {
            return;
        };
        if hits.len() != similarity.len() {
            return;
        }
        let mut scored: Vec<(f64, Value)> = similarity
            .iter()
            .map(|s| self.score(s))
            .zip(hits.drain(..))
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        hits.extend(scored.into_iter().map(|(_, h)| h));
    }
}

/// Lowest cosine at which a hit counts as about a care (below it, embeddings of unrelated
/// texts still share some direction; recall's vector source draws its line at 0.25 too).
pub const MIN_SIMILARITY: f64 = 0.25;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::model::{AttentionTarget, InterestState};
    use crate::memory::vocab::{InteractionMode, TargetType};

    fn memory() -> Memory {
        Memory::default()
    }

    #[test]
    fn hits_about_what_the_persona_attends_to_come_first_by_meaning_not_spelling() {
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
        assert_eq!(cares.keys(), ["green tea"]);
        let mut payload = json!({"hits": [
            {"title": "Green tea prices", "snippet": "spelt like the care, about money"},
            {"title": "Sencha harvest", "snippet": "first flush"},
            {"title": "Weather", "snippet": "rain"},
        ]});
        assert_eq!(Cares::hit_texts(&payload)[1], "Sencha harvest first flush");
        // What the embeddings say, whatever the words: the harvest is about tea, the prices
        // only barely, the weather not at all.
        let similarity = [vec![0.26], vec![0.9], vec![0.1]];
        cares.order_payload(&mut payload, &similarity);
        let titles: Vec<&str> = payload["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["title"].as_str().unwrap())
            .collect();
        assert_eq!(titles, ["Sencha harvest", "Green tea prices", "Weather"]);
        assert!(cares.score(&[0.2]).abs() < 1e-9, "below the line: no care");
        // No vectors for the hits (no embedding model): the capability's order stays.
        let before = payload.clone();
        cares.order_payload(&mut payload, &[]);
        assert_eq!(payload, before);
    }

    #[test]
    fn a_payload_without_hits_is_left_alone() {
        let cares = Cares::of(&memory(), 0.0, 1.0);
        let mut payload = json!({"task": "x"});
        cares.order_payload(&mut payload, &[]);
        assert_eq!(payload, json!({"task": "x"}));
    }
}

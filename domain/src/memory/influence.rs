//! The interest updates a deliberation and an action's result carry (seed 001 Phase C: the
//! interest state changes after a deliberation, by its `persona_influence` and
//! `mood_influence`, and after an `agent_delegate` result). Each is a small object of short
//! texts; three keys are read as structure, any other key is the model's own note:
//!
//! - `topic`, `person`: what the persona's attention turned to: a target of that type
//!   weighing [`INFLUENCE_WEIGHT`] (a write plan weighs its own targets; a deliberation
//!   writes texts only);
//! - `interaction_mode`: `observe|support|wait|explore`.
//!
//! One of these keys with a value outside that shape makes the decision invalid (dropped,
//! never repaired). A decision's two objects make one update ([`decision_update`]: the
//! persona's own mode wins over the mood's); an agent's result may carry a third
//! (`details.interest`, from the agent's JSON output). Each merges like a write plan's
//! `interest_update` ([`super::interest`]).

use serde_json::{Map, Value};

use super::validate::CheckedInterestUpdate;
use super::vocab::{InteractionMode, TargetType};

/// The weight of a target a deliberation names.
pub const INFLUENCE_WEIGHT: f64 = 0.6;
/// Longest target value, in characters (as a write plan's).
pub const MAX_VALUE_CHARS: usize = 40;

/// The interest update in `influence` (`None` when it names no target and no mode), or
/// every reason it is malformed (each error names `field.<key>`).
pub fn interest_update(
    field: &str,
    influence: &Map<String, Value>,
) -> Result<Option<CheckedInterestUpdate>, Vec<String>> {
    let mut errors = Vec::new();
    let mut targets = Vec::new();
    for kind in [TargetType::Topic, TargetType::Person] {
        let key = kind.as_str();
        match influence.get(key) {
            None => {}
            Some(Value::String(v))
                if !v.trim().is_empty() && v.trim().chars().count() <= MAX_VALUE_CHARS =>
            {
                targets.push((kind, v.trim().to_owned(), INFLUENCE_WEIGHT));
            }
            Some(other) => errors.push(format!(
                "{field}.{key}: must be a non-empty text of at most \
                 {MAX_VALUE_CHARS} characters, got {other}"
            )),
        }
    }
    let interaction_mode = match influence.get("interaction_mode") {
        None => None,
        Some(v) => {
            let mode = v.as_str().and_then(InteractionMode::parse);
            if mode.is_none() {
                errors.push(format!(
                    "{field}.interaction_mode: must be one of {}, got {v}",
                    InteractionMode::NAMES.join("|")
                ));
            }
            mode
        }
    };
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(
        (!targets.is_empty() || interaction_mode.is_some()).then_some(CheckedInterestUpdate {
            targets,
            interaction_mode,
        }),
    )
}

/// One update from two (`None` when neither names anything): the targets of both, `first`'s
/// mode, else `second`'s.
pub fn combined(
    first: Option<CheckedInterestUpdate>,
    second: Option<CheckedInterestUpdate>,
) -> Option<CheckedInterestUpdate> {
    match (first, second) {
        (Some(mut a), Some(b)) => {
            a.targets.extend(b.targets);
            a.interaction_mode = a.interaction_mode.or(b.interaction_mode);
            Some(a)
        }
        (a, b) => a.or(b),
    }
}

/// The update a decision makes: its `persona_influence` and its `mood_influence` (seed 001
/// 更新タイミング: deliberate_once reflects both), the persona's mode winning over the mood's.
pub fn decision_update(
    persona_influence: &Map<String, Value>,
    mood_influence: &Map<String, Value>,
) -> Result<Option<CheckedInterestUpdate>, Vec<String>> {
    let persona = interest_update("persona_influence", persona_influence);
    let mood = interest_update("mood_influence", mood_influence);
    match (persona, mood) {
        (Ok(p), Ok(m)) => Ok(combined(p, m)),
        (p, m) => Err(p
            .err()
            .unwrap_or_default()
            .into_iter()
            .chain(m.err().unwrap_or_default())
            .collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(v: Value) -> Result<Option<CheckedInterestUpdate>, Vec<String>> {
        interest_update("persona_influence", v.as_object().unwrap())
    }

    #[test]
    fn structured_keys_are_read_and_notes_left_alone() {
        let u = read(json!({"topic": " green tea ", "interaction_mode": "explore", "why": "x"}))
            .unwrap()
            .unwrap();
        assert_eq!(
            u.targets,
            vec![(TargetType::Topic, "green tea".to_owned(), INFLUENCE_WEIGHT)]
        );
        assert_eq!(u.interaction_mode, Some(InteractionMode::Explore));
        assert_eq!(read(json!({"curiosity": 0.8})), Ok(None));
    }

    #[test]
    fn a_decision_s_mood_influence_adds_its_targets_and_yields_the_mode() {
        let persona = json!({"topic": "notes", "interaction_mode": "support"});
        let mood = json!({"topic": "quiet", "interaction_mode": "wait"});
        let u = decision_update(persona.as_object().unwrap(), mood.as_object().unwrap())
            .unwrap()
            .unwrap();
        let names: Vec<&str> = u.targets.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(names, ["notes", "quiet"]);
        assert_eq!(u.interaction_mode, Some(InteractionMode::Support));
        let only_mood = decision_update(&Map::new(), mood.as_object().unwrap())
            .unwrap()
            .unwrap();
        assert_eq!(only_mood.interaction_mode, Some(InteractionMode::Wait));
        let bad = json!({"interaction_mode": "sulk"});
        let errors = decision_update(&Map::new(), bad.as_object().unwrap()).unwrap_err();
        assert!(
            errors[0].starts_with("mood_influence.interaction_mode"),
            "{errors:?}"
        );
    }

    #[test]
    fn a_malformed_key_is_refused_with_its_reason() {
        let errors = read(json!({"person": "", "interaction_mode": "shout"})).unwrap_err();
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors[0].starts_with("persona_influence.person"));
        assert!(errors[1].starts_with("persona_influence.interaction_mode"));
        assert!(read(json!({"topic": "x".repeat(41)})).is_err());
    }
}

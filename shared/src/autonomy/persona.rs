//! The persona as the autonomy prompts receive it (seed 001: `persona_text`, `addon_text`,
//! `second_person_label`), from the character's configuration.

use serde::{Deserialize, Serialize};

use crate::config::CharacterConfig;

/// The persona fields of a character.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PersonaFields {
    /// Who the character is.
    pub persona_text: String,
    /// What it adds on top (interests, habits).
    pub addon_text: String,
    /// How it addresses the user.
    pub second_person_label: String,
}

impl PersonaFields {
    /// The fields of `character`.
    pub fn of(character: &CharacterConfig) -> Self {
        Self {
            persona_text: character.persona_text.trim().to_owned(),
            addon_text: character.addon_text.trim().to_owned(),
            second_person_label: character.second_person_label.trim().to_owned(),
        }
    }
}

/// A valence/arousal/dominance triple (each -1..1).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Vad {
    /// Valence.
    pub v: f64,
    /// Arousal.
    pub a: f64,
    /// Dominance.
    pub d: f64,
}

/// The persona's mood as every prompt that asks for it receives it (recall selection,
/// deliberation, the autonomy message): `long_mood_state` the mood service's state (null
/// when it did not answer), `recent_vad_average` what the persona felt lately
/// ([`super::recent_vad::recent_vad_average`]; null when the store could not be read).
///
/// Its numbers are rounded to [`PROMPT_DECIMALS`] places: a float at full precision
/// (`0.263255114946883`) is some ten tokens a small model reads every turn for nothing.
pub fn mood_context(
    mood: Option<&crate::affect::MoodState>,
    recent_vad_average: Option<Vad>,
) -> serde_json::Value {
    let mut context = serde_json::json!({
        "long_mood_state": mood,
        "recent_vad_average": recent_vad_average,
    });
    round_numbers(&mut context);
    context
}

/// Decimal places a number keeps in a prompt.
pub const PROMPT_DECIMALS: i32 = 3;

/// Rounds every non-integer number in `value` to [`PROMPT_DECIMALS`] places (integers and
/// everything else unchanged).
pub fn round_numbers(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::Number(n) if n.is_f64() => {
            let scale = 10f64.powi(PROMPT_DECIMALS);
            let rounded = n.as_f64().map(|x| (x * scale).round() / scale);
            if let Some(r) = rounded.and_then(serde_json::Number::from_f64) {
                *n = r;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(round_numbers),
        Value::Object(fields) => fields.values_mut().for_each(round_numbers),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_in_a_prompt_keep_three_places() {
        let mut v = json!({"w": 0.263255114946883, "n": 7, "s": "0.123456",
                           "list": [{"v": -0.0254999}, 0.7, 1e-9]});
        round_numbers(&mut v);
        assert_eq!(
            v,
            json!({"w": 0.263, "n": 7, "s": "0.123456",
                             "list": [{"v": -0.025}, 0.7, 0.0]})
        );
        let mood = mood_context(
            None,
            Some(Vad {
                v: 0.35000000001,
                a: 0.25,
                d: 0.0249999,
            }),
        );
        assert_eq!(
            mood["recent_vad_average"],
            json!({"v": 0.35, "a": 0.25, "d": 0.025})
        );
    }
}

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

/// Where each label sits in VAD space (Russell & Mehrabian's estimates for joy, sadness,
/// anger, fear): the mood (seed 004) has labels, the message input (seed 001) asks for VAD.
const LABEL_VAD: [(f64, f64, f64); 4] = [
    (0.76, 0.48, 0.35),
    (-0.63, -0.27, -0.33),
    (-0.51, 0.59, 0.25),
    (-0.64, 0.60, -0.43),
];

/// The persona's mood as every prompt that asks for it receives it (recall selection,
/// deliberation, the autonomy message): `long_mood_state` the mood service's state,
/// `recent_vad_average` its [`vad_of`]; both null when the mood service did not answer.
pub fn mood_context(mood: Option<&crate::affect::MoodState>) -> serde_json::Value {
    serde_json::json!({
        "long_mood_state": mood,
        "recent_vad_average": mood.map(vad_of),
    })
}

/// The mood's VAD (`recent_vad_average`, the one definition): its components' label
/// positions averaged by weight over the mood's window of recent episodes, zero when calm.
pub fn vad_of(mood: &crate::affect::MoodState) -> Vad {
    let weights = mood.components.as_array();
    let total: f64 = weights.iter().sum();
    if total <= 0.0 || !total.is_finite() {
        return Vad {
            v: 0.0,
            a: 0.0,
            d: 0.0,
        };
    }
    let mut vad = Vad {
        v: 0.0,
        a: 0.0,
        d: 0.0,
    };
    for (w, (v, a, d)) in weights.iter().zip(LABEL_VAD) {
        vad.v += w * v / total;
        vad.a += w * a / total;
        vad.d += w * d / total;
    }
    vad
}

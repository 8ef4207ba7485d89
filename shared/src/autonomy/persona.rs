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
pub fn mood_context(
    mood: Option<&crate::affect::MoodState>,
    recent_vad_average: Option<Vad>,
) -> serde_json::Value {
    serde_json::json!({
        "long_mood_state": mood,
        "recent_vad_average": recent_vad_average,
    })
}

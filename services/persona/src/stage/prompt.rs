//! The stage's shared rules (`prompts/stage.md`): one template for every character, filled
//! with who it is and who else is on stage (`{other_characters}`, seed 000).

use ghost_shared::config::CharacterConfig;
use ghost_shared::template::unknown_placeholder;

use crate::next_speaker::SpeakerRegistry;

/// The placeholder listing the other characters on stage (besides the persona ones).
const OTHERS: &str = "{other_characters}";

/// A template that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum StagePromptError {
    /// A `{{…}}` placeholder the stage does not know.
    #[error("stage prompt: unknown placeholder {0}")]
    UnknownPlaceholder(String),
    /// The rules never tell the characters who they may nominate.
    #[error("stage prompt: must use {{other_characters}} so characters nominate among the others")]
    MissingOthers,
}

/// The stage's prompt template.
#[derive(Debug, Clone)]
pub struct StagePrompt {
    template: String,
}

impl StagePrompt {
    /// Checks the template's placeholders.
    pub fn new(template: String) -> Result<Self, StagePromptError> {
        let mut known = CharacterConfig::PERSONA_PLACEHOLDERS.to_vec();
        known.push(OTHERS);
        if let Some(placeholder) = unknown_placeholder(&template, &known) {
            return Err(StagePromptError::UnknownPlaceholder(placeholder.to_owned()));
        }
        if !template.contains(OTHERS) {
            return Err(StagePromptError::MissingOthers);
        }
        Ok(Self { template })
    }

    /// The system prompt of `character` on a stage with `registry`.
    pub fn render(&self, character: &CharacterConfig, registry: &SpeakerRegistry) -> String {
        let others: Vec<String> = registry
            .others(&character.name)
            .map(|e| {
                if e.display_name.is_empty() {
                    e.name.clone()
                } else {
                    format!("{} ({})", e.name, e.display_name)
                }
            })
            .collect();
        character
            .fill_persona(&self.template)
            .replace(OTHERS, &others.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_the_others_by_internal_id() {
        let p = StagePrompt::new("{{display_name}}: pick from {other_characters}".into()).unwrap();
        let lumina = CharacterConfig {
            name: "LUMINA".into(),
            display_name: "ルミナ".into(),
            short_name: Some("る".into()),
            persona_text: "bright".into(),
            addon_text: String::new(),
            second_person_label: "you".into(),
            llm: None,
        };
        assert_eq!(
            p.render(&lumina, &SpeakerRegistry::seed_example()),
            "ルミナ: pick from CLARIS (クラリス), NOX (ノクス)"
        );
    }

    #[test]
    fn rejects_bad_templates() {
        assert!(StagePrompt::new("{{nmae}} {other_characters}".into()).is_err());
        assert!(StagePrompt::new("no list".into()).is_err());
    }
}

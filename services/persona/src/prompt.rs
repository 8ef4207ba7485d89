//! The persona's system prompt: a template from `prompts/` filled with the character.

use ghost_shared::config::CharacterConfig;
use ghost_shared::template::unknown_placeholder;

/// A template whose persona placeholders ([`CharacterConfig::PERSONA_PLACEHOLDERS`]) are
/// filled per character.
#[derive(Debug, Clone)]
pub struct PersonaPrompt {
    template: String,
}

/// A template that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("prompt template: unknown placeholder {0}")]
pub struct PromptError(String);

impl PersonaPrompt {
    /// Checks that the template only uses known placeholders.
    pub fn new(template: String) -> Result<Self, PromptError> {
        if let Some(placeholder) =
            unknown_placeholder(&template, &CharacterConfig::PERSONA_PLACEHOLDERS)
        {
            return Err(PromptError(placeholder.to_owned()));
        }
        Ok(Self { template })
    }

    /// The system prompt for `character`.
    pub fn render(&self, character: &CharacterConfig) -> String {
        character.fill_persona(&self.template)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kuro() -> CharacterConfig {
        CharacterConfig {
            name: "kuro".into(),
            display_name: "クロ".into(),
            short_name: None,
            persona_text: "calm\n".into(),
            addon_text: "tea".into(),
            second_person_label: "マスター".into(),
            llm: None,
        }
    }

    #[test]
    fn fills_every_placeholder() {
        let p = PersonaPrompt::new(
            "{{display_name}}/{{name}}: {{persona_text}} +{{addon_text}} to {{second_person_label}}"
                .into(),
        )
        .unwrap();
        assert_eq!(p.render(&kuro()), "クロ/kuro: calm +tea to マスター");
    }

    #[test]
    fn rejects_unknown_placeholders() {
        let err = PersonaPrompt::new("hi {{nmae}}".into()).unwrap_err();
        assert!(err.to_string().contains("{{nmae}}"));
    }
}

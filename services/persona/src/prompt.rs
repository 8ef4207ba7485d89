//! The persona's system prompt: a template from `prompts/` filled with the character.

use ghost_shared::config::CharacterConfig;
use ghost_shared::template::unknown_placeholder;

/// A template whose `{{name}}`, `{{display_name}}` and `{{persona}}` are filled per character.
#[derive(Debug, Clone)]
pub struct PersonaPrompt {
    template: String,
}

/// Placeholders a persona template may use.
const PLACEHOLDERS: [&str; 3] = ["{{name}}", "{{display_name}}", "{{persona}}"];

/// A template that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("prompt template: unknown placeholder {0}")]
pub struct PromptError(String);

impl PersonaPrompt {
    /// Checks that the template only uses known placeholders.
    pub fn new(template: String) -> Result<Self, PromptError> {
        if let Some(placeholder) = unknown_placeholder(&template, &PLACEHOLDERS) {
            return Err(PromptError(placeholder.to_owned()));
        }
        Ok(Self { template })
    }

    /// The system prompt for `character`.
    pub fn render(&self, character: &CharacterConfig) -> String {
        self.template
            .replace("{{name}}", &character.name)
            .replace("{{display_name}}", &character.display_name)
            .replace("{{persona}}", character.persona.trim())
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
            persona: "calm\n".into(),
            llm: None,
        }
    }

    #[test]
    fn fills_every_placeholder() {
        let p = PersonaPrompt::new("{{display_name}}/{{name}}: {{persona}}".into()).unwrap();
        assert_eq!(p.render(&kuro()), "クロ/kuro: calm");
    }

    #[test]
    fn rejects_unknown_placeholders() {
        let err = PersonaPrompt::new("hi {{nmae}}".into()).unwrap_err();
        assert!(err.to_string().contains("{{nmae}}"));
    }
}

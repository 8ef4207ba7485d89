//! The persona's affect: the JSON after the trailer marker, and the reflection's answer
//! (validated field by field by [`ghost_domain::affect::parse_affect`]).

use schemars::JsonSchema;
use serde::Deserialize;

use crate::Contract;
use ghost_domain::affect::AffectLabel;

/// The response-policy knobs of a trailer.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct PolicyShape {
    /// Lean towards cooperating, 0..1.
    #[schemars(range(min = 0.0, max = 1.0))]
    pub cooperation: f64,
    /// Lean towards refusing, 0..1.
    #[schemars(range(min = 0.0, max = 1.0))]
    pub refusal_bias: f64,
    /// Whether refusing is allowed.
    pub refusal_allowed: bool,
}

/// The affect object as the model writes it.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct AffectShape {
    /// One short sentence on what happened.
    #[schemars(length(max = 160))]
    pub reflection_text: String,
    /// The persona's own reaction.
    pub partner_affect_label: AffectLabel,
    /// How strong, 0..1.
    #[schemars(range(min = 0.0, max = 1.0))]
    pub partner_affect_intensity: f64,
    /// How much the moment matters, 0..1.
    #[schemars(range(min = 0.0, max = 1.0))]
    pub salience: f64,
    /// How sure, 0..1.
    #[schemars(range(min = 0.0, max = 1.0))]
    pub confidence: f64,
    /// Topics of the moment.
    #[schemars(length(max = 3))]
    pub topic_tags: Vec<String>,
    /// How the persona leans in its next replies.
    pub partner_response_policy: PolicyShape,
}

/// Tokens an affect object may take.
pub const MAX_TOKENS: u32 = 160;

/// The trailer after the reply's marker.
pub fn trailer() -> Contract {
    Contract::of::<AffectShape>("affect_trailer", MAX_TOKENS).max_length(&["topic_tags", "[]"], 32)
}

/// Tokens a reflection may take: the longest answer its schema allows (a 160-character
/// sentence and three 32-character tags, a token a character at worst, and the keys), so
/// a model that rambles is stopped by the schema's lengths, never cut mid-answer (SmolLM2
/// once spent 160 tokens on one sentence of "1.1.1…").
pub const REFLECTION_MAX_TOKENS: u32 = 320;

/// The reflection's answer (the same object; the policy is the trailer's alone).
pub fn reflection() -> Contract {
    Contract::of::<AffectShape>("reflection", REFLECTION_MAX_TOKENS)
        .max_length(&["topic_tags", "[]"], 32)
        .without(&[], "partner_response_policy")
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_reflection_s_budget_covers_the_longest_answer_its_schema_allows() {
        let c = reflection();
        let p = &c.schema["properties"];
        let text = p["reflection_text"]["maxLength"].as_u64().unwrap();
        let tags = p["topic_tags"]["maxItems"].as_u64().unwrap()
            * p["topic_tags"]["items"]["maxLength"].as_u64().unwrap();
        // A token a character at worst, and some sixty for the keys, numbers and quotes.
        assert!(
            u64::from(c.max_tokens) >= text + tags + 60,
            "{}",
            c.max_tokens
        );
    }
    use super::*;

    #[test]
    fn the_labels_are_the_five_and_the_numbers_are_bounded() {
        let c = trailer();
        let labels = c.at(&["partner_affect_label"]).unwrap()["enum"].clone();
        assert_eq!(
            labels,
            serde_json::json!(["joy", "sadness", "anger", "fear", "neutral"])
        );
        let ok = r#"{"reflection_text":"nice","partner_affect_label":"joy","partner_affect_intensity":0.5,
            "salience":0.3,"confidence":0.8,"topic_tags":["tea"],
            "partner_response_policy":{"cooperation":0.9,"refusal_bias":0.1,"refusal_allowed":false}}"#;
        assert!(c.admits(ok));
        assert!(!c.admits(&ok.replace("0.3", "3")));
        assert!(reflection().at(&["partner_response_policy"]).is_none());
    }
}

//! Whether the user's message answers the questions a paused task asked them (seed 002:
//! the loop controller asked the user; their next message resumes the work or starts a
//! new topic). Validated by [`ConfirmationAnswer::parse`]: anything else is no answer, and
//! the message is routed as a new topic.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::Contract;

/// The judgement as the model writes it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfirmationAnswer {
    /// Whether the message answers (or decides on) the pending questions.
    pub answers_pending: bool,
    /// Why, briefly.
    #[schemars(length(max = 160))]
    pub reason: String,
}

impl ConfirmationAnswer {
    /// The answer in `raw` (JSON, nothing around it), or why it is none.
    pub fn parse(raw: &str) -> Result<Self, String> {
        serde_json::from_str(raw.trim()).map_err(|e| format!("not the confirmation shape: {e}"))
    }
}

/// Tokens a judgement may take.
pub const MAX_TOKENS: u32 = 64;

/// The judgement's contract.
pub fn contract() -> Contract {
    Contract::of::<ConfirmationAnswer>("confirmation_answer", MAX_TOKENS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_says_whether_and_why() {
        let c = contract();
        assert!(c.admits(r#"{"answers_pending":true,"reason":"gives the port"}"#));
        assert!(!c.admits(r#"{"answers_pending":"yes","reason":""}"#));
        assert_eq!(
            ConfirmationAnswer::parse(r#"{"answers_pending":false,"reason":"new topic"}"#),
            Ok(ConfirmationAnswer {
                answers_pending: false,
                reason: "new topic".into()
            })
        );
        assert!(ConfirmationAnswer::parse("yes, it answers").is_err());
        assert!(
            ConfirmationAnswer::parse(r#"{"answers_pending":true,"reason":"","x":1}"#).is_err()
        );
    }
}

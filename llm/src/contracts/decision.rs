//! The autonomy action decision (validated by [`ghost_domain::autonomy::validate_decision`]):
//! the schema is derived from [`ActionDecision`] itself, narrowed to the capabilities this
//! deployment has.

use serde_json::json;

use crate::Contract;
use ghost_domain::autonomy::decision::{ActionDecision, CAPABILITIES};

/// Tokens a decision may take.
pub const MAX_TOKENS: u32 = 384;

/// The decision's contract; `capability` limited to `available` (or empty, for a skip).
pub fn contract<S: AsRef<str>>(available: &[S]) -> Contract {
    let mut names: Vec<&str> = available
        .iter()
        .map(AsRef::as_ref)
        .filter(|c| CAPABILITIES.contains(c))
        .collect();
    names.push("");
    Contract::of::<ActionDecision>("action_decision", MAX_TOKENS)
        .allow(&["capability"], &names)
        .max_length(&["reason"], 300)
        .max_length(&["action_type"], 40)
        // The influences are the model's own notes: small objects of short texts.
        .replace(&["persona_influence"], influence())
        .replace(&["mood_influence"], influence())
}

fn influence() -> serde_json::Value {
    json!({"type": "object", "additionalProperties": {"type": "string", "maxLength": 120},
           "maxProperties": 3})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_are_narrowed_and_delivery_is_shaped() {
        let c = contract(&["web_access"]);
        assert_eq!(
            c.at(&["capability"]).unwrap()["enum"],
            json!(["web_access", ""])
        );
        let ok = r#"{"decision":"do_action","action_type":"web_research","capability":"web_access",
            "input":{"query":"tea"},"reason":"curious","persona_influence":{},"mood_influence":{},
            "console_delivery":{"mode":"chat","message_kind":"report"}}"#;
        assert!(c.admits(ok), "{}", c.schema);
        assert!(!c.admits(&ok.replace("\"chat\"", "\"shout\"")));
        assert!(!c.admits(&ok.replace("web_access\",\n", "agent_delegate\",\n")));
    }
}

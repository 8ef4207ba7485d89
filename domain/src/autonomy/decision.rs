//! `ActionDecision`: what the deliberation model answers, JSON only, checked field by field.
//! A decision that breaks a rule is dropped with every reason listed: nothing is repaired
//! (no code-fence stripping, no guessing of a misspelt mode).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The capabilities a decision may name (each has its own `input` shape).
pub const CAPABILITIES: &[&str] = &[WEB_ACCESS, AGENT_DELEGATE];
/// Web search or page fetch.
pub const WEB_ACCESS: &str = "web_access";
/// A configured command-line agent.
pub const AGENT_DELEGATE: &str = "agent_delegate";

/// Act or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    /// Run a capability.
    DoAction,
    /// Do nothing this time.
    Skip,
}

/// How the console shows what came of an action (seed 001: structure, not text analysis).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryMode {
    /// Nothing shown.
    Silent,
    /// Only in the activity (monitoring) view.
    ActivityOnly,
    /// A persona message shown in a notification style.
    Notify,
    /// A persona message in the conversation.
    Chat,
}

impl DeliveryMode {
    /// Whether the persona speaks about the result (`chat`, `notify`).
    pub fn speaks(self) -> bool {
        matches!(self, DeliveryMode::Chat | DeliveryMode::Notify)
    }

    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryMode::Silent => "silent",
            DeliveryMode::ActivityOnly => "activity_only",
            DeliveryMode::Notify => "notify",
            DeliveryMode::Chat => "chat",
        }
    }
}

/// The tone of the persona's message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MessageKind {
    /// A calm report.
    Report,
    /// A light progress note.
    Progress,
    /// A question back.
    Question,
    /// A failure report.
    Error,
}

/// `console_delivery`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ConsoleDelivery {
    /// Display policy.
    pub mode: DeliveryMode,
    /// Tone.
    pub message_kind: MessageKind,
}

/// A valid decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ActionDecision {
    /// `do_action` or `skip`.
    pub decision: DecisionKind,
    /// What kind of action (free label, e.g. `web_research`); empty for a skip without one.
    #[serde(default)]
    pub action_type: String,
    /// One of [`CAPABILITIES`] for `do_action`; empty for a skip.
    #[serde(default)]
    pub capability: String,
    /// The capability's input (an object).
    #[serde(default)]
    pub input: Map<String, Value>,
    /// Why (the persona's reason).
    pub reason: String,
    /// How the persona shaped the choice.
    #[serde(default)]
    pub persona_influence: Map<String, Value>,
    /// How the mood shaped the choice.
    #[serde(default)]
    pub mood_influence: Map<String, Value>,
    /// Required for `do_action`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub console_delivery: Option<ConsoleDelivery>,
}

const FIELDS: &[&str] = &[
    "decision",
    "action_type",
    "capability",
    "input",
    "reason",
    "persona_influence",
    "mood_influence",
    "console_delivery",
];

/// Longest `reason` or `action_type` accepted, in characters.
const MAX_TEXT_CHARS: usize = 2000;

/// Parses the model's whole answer: one JSON object and nothing else.
pub fn parse_decision(text: &str) -> Result<ActionDecision, Vec<String>> {
    let value: Value =
        serde_json::from_str(text.trim()).map_err(|e| vec![format!("not a JSON object: {e}")])?;
    validate_decision(&value)
}

/// Checks a decision value; every broken rule is listed.
pub fn validate_decision(value: &Value) -> Result<ActionDecision, Vec<String>> {
    let Some(obj) = value.as_object() else {
        return Err(vec!["the decision must be a JSON object".into()]);
    };
    let mut errors = Vec::new();
    for key in obj.keys() {
        if !FIELDS.contains(&key.as_str()) {
            errors.push(format!("{key}: unknown field"));
        }
    }
    let decision = match obj.get("decision") {
        Some(Value::String(s)) if s == "do_action" => Some(DecisionKind::DoAction),
        Some(Value::String(s)) if s == "skip" => Some(DecisionKind::Skip),
        Some(other) => {
            errors.push(format!("decision: must be do_action or skip, got {other}"));
            None
        }
        None => {
            errors.push("decision: required".into());
            None
        }
    };
    let acting = decision == Some(DecisionKind::DoAction);
    let reason = text_field(obj, "reason", true, &mut errors);
    let action_type = text_field(obj, "action_type", acting, &mut errors);
    let capability = text_field(obj, "capability", acting, &mut errors);
    if acting && !capability.is_empty() && !CAPABILITIES.contains(&capability.as_str()) {
        errors.push(format!(
            "capability: unknown {capability:?} (known: {})",
            CAPABILITIES.join(", ")
        ));
    }
    let input = object_field(obj, "input", acting, &mut errors);
    if acting {
        check_input(&capability, &input, &mut errors);
    }
    let persona_influence = object_field(obj, "persona_influence", false, &mut errors);
    let mood_influence = object_field(obj, "mood_influence", false, &mut errors);
    // Their structured keys change the interest state: a malformed one breaks the decision.
    if let Err(e) = crate::memory::influence::decision_update(&persona_influence, &mood_influence) {
        errors.extend(e);
    }
    let console_delivery = match obj.get("console_delivery") {
        None | Some(Value::Null) => {
            if acting {
                errors.push("console_delivery: required when decision is do_action".into());
            }
            None
        }
        Some(v) => delivery(v, &mut errors),
    };
    match decision {
        Some(decision) if errors.is_empty() => Ok(ActionDecision {
            decision,
            action_type,
            capability,
            input,
            reason,
            persona_influence,
            mood_influence,
            console_delivery,
        }),
        _ => Err(errors),
    }
}

fn text_field(
    obj: &Map<String, Value>,
    key: &str,
    required: bool,
    errors: &mut Vec<String>,
) -> String {
    match obj.get(key) {
        Some(Value::String(s)) if s.trim().is_empty() && required => {
            errors.push(format!("{key}: must not be empty"));
            String::new()
        }
        Some(Value::String(s)) if s.chars().count() > MAX_TEXT_CHARS => {
            errors.push(format!("{key}: longer than {MAX_TEXT_CHARS} characters"));
            String::new()
        }
        Some(Value::String(s)) => s.trim().to_owned(),
        None | Some(Value::Null) if !required => String::new(),
        None => {
            errors.push(format!("{key}: required"));
            String::new()
        }
        Some(other) => {
            errors.push(format!("{key}: must be a string, got {}", kind(other)));
            String::new()
        }
    }
}

fn object_field(
    obj: &Map<String, Value>,
    key: &str,
    required: bool,
    errors: &mut Vec<String>,
) -> Map<String, Value> {
    match obj.get(key) {
        Some(Value::Object(m)) => m.clone(),
        None | Some(Value::Null) if !required => Map::new(),
        None => {
            errors.push(format!("{key}: required"));
            Map::new()
        }
        Some(other) => {
            errors.push(format!("{key}: must be an object, got {}", kind(other)));
            Map::new()
        }
    }
}

/// The input each capability needs: `web_access` exactly one of `query` / `url` (strings),
/// `agent_delegate` a non-empty `task`.
fn check_input(capability: &str, input: &Map<String, Value>, errors: &mut Vec<String>) {
    let text = |key: &str| input.get(key).and_then(Value::as_str).map(str::trim);
    match capability {
        WEB_ACCESS => {
            let query = text("query").filter(|s| !s.is_empty());
            let url = text("url").filter(|s| !s.is_empty());
            if query.is_some() == url.is_some() {
                errors.push(
                    "input: web_access needs exactly one of query or url (a non-empty string)"
                        .into(),
                );
            }
            if url.is_some_and(|u| !crate::http_url::is_http_url(u)) {
                errors.push("input.url: must be an http(s) URL".into());
            }
        }
        AGENT_DELEGATE if text("task").is_none_or(str::is_empty) => {
            errors.push("input.task: agent_delegate needs a non-empty string".into());
        }
        _ => {}
    }
}

fn delivery(v: &Value, errors: &mut Vec<String>) -> Option<ConsoleDelivery> {
    let Some(obj) = v.as_object() else {
        errors.push(format!(
            "console_delivery: must be an object, got {}",
            kind(v)
        ));
        return None;
    };
    for key in obj.keys() {
        if key != "mode" && key != "message_kind" {
            errors.push(format!("console_delivery.{key}: unknown field"));
        }
    }
    let mode = match obj.get("mode") {
        Some(m) => serde_json::from_value::<DeliveryMode>(m.clone())
            .map_err(|_| {
                errors.push(format!(
                    "console_delivery.mode: must be silent, activity_only, notify or chat, got {m}"
                ))
            })
            .ok(),
        None => {
            errors.push("console_delivery.mode: required".into());
            None
        }
    };
    let message_kind = match obj.get("message_kind") {
        Some(k) => serde_json::from_value::<MessageKind>(k.clone())
            .map_err(|_| {
                errors.push(format!(
                    "console_delivery.message_kind: must be report, progress, question or error, got {k}"
                ))
            })
            .ok(),
        None => {
            errors.push("console_delivery.message_kind: required".into());
            None
        }
    };
    Some(ConsoleDelivery {
        mode: mode?,
        message_kind: message_kind?,
    })
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn acting() -> Value {
        json!({
            "decision": "do_action", "action_type": "web_research", "capability": "web_access",
            "input": {"query": "green tea"}, "reason": "asked about tea",
            "console_delivery": {"mode": "chat", "message_kind": "report"}
        })
    }

    #[test]
    fn a_complete_decision_passes() {
        let d = validate_decision(&acting()).unwrap();
        assert_eq!(d.capability, WEB_ACCESS);
        assert_eq!(d.console_delivery.unwrap().mode, DeliveryMode::Chat);
    }

    #[test]
    fn unknown_capability_and_bad_inputs_are_listed() {
        let mut v = acting();
        v["capability"] = json!("shell");
        let errs = validate_decision(&v).unwrap_err();
        assert!(
            errs.iter().any(|e| e.starts_with("capability: unknown")),
            "{errs:?}"
        );
        let mut v = acting();
        v["input"] = json!({"query": "a", "url": "https://x.org"});
        assert!(validate_decision(&v).is_err());
        let mut v = acting();
        v["input"] = json!({"url": "file:///etc/passwd"});
        assert!(validate_decision(&v).is_err());
        let mut v = acting();
        v["capability"] = json!("agent_delegate");
        let errs = validate_decision(&v).unwrap_err();
        assert_eq!(
            errs,
            vec!["input.task: agent_delegate needs a non-empty string"]
        );
    }

    #[test]
    fn nothing_is_repaired() {
        let fenced = format!("```json\n{}\n```", acting());
        assert!(parse_decision(&fenced).is_err());
        let mut v = acting();
        v["console_delivery"]["mode"] = json!("Chat");
        assert!(validate_decision(&v).is_err());
        let mut v = acting();
        v["extra"] = json!(1);
        assert_eq!(
            validate_decision(&v).unwrap_err(),
            vec!["extra: unknown field"]
        );
    }
}

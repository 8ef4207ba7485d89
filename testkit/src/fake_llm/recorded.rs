//! What the fake server saw.

use serde_json::Value;

/// One request received by the fake server.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// Request path, e.g. `/api/chat`.
    pub path: String,
    /// `model` of the JSON body, if any.
    pub model: Option<String>,
    /// Whether a streamed answer was asked for (Ollama: `stream` absent means true).
    pub stream: bool,
    /// Raw `Authorization` header.
    pub authorization: Option<String>,
    /// `X-Ghost-Priority`: whether a user waits for the call (`interactive`, `background`).
    pub priority: Option<String>,
    /// The JSON body (`null` for GET requests or unparsable bodies).
    pub body: Value,
}

impl RecordedRequest {
    /// Text of the last `user` message (text parts joined with newlines).
    pub fn last_user_text(&self) -> Option<String> {
        self.messages()
            .iter()
            .rev()
            .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
            .and_then(message_text)
    }

    /// The last `user` message parsed as JSON (what Ghost's structured calls send), or
    /// `null` when it is absent or not JSON.
    pub fn last_user_json(&self) -> Value {
        self.last_user_text()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(Value::Null)
    }

    /// Text of all `system` messages, joined with newlines.
    pub fn system_text(&self) -> Option<String> {
        let texts: Vec<String> = self
            .messages()
            .iter()
            .filter(|m| m.get("role").and_then(Value::as_str) == Some("system"))
            .filter_map(message_text)
            .collect();
        if texts.is_empty() {
            None
        } else {
            Some(texts.join("\n"))
        }
    }

    /// The `messages` array of the body (empty when absent).
    pub fn messages(&self) -> &[Value] {
        self.body
            .get("messages")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }
}

/// Text of a message whose `content` is a string (both formats) or an OpenAI part array.
fn message_text(m: &Value) -> Option<String> {
    match m.get("content")? {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect();
            Some(texts.join("\n"))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn texts_from_both_content_shapes() {
        let r = RecordedRequest {
            path: "/v1/chat/completions".into(),
            model: Some("m".into()),
            stream: true,
            authorization: None,
            priority: None,
            body: json!({"messages": [
                {"role": "system", "content": "s1"},
                {"role": "user", "content": "first"},
                {"role": "system", "content": "s2"},
                {"role": "user", "content": [
                    {"type": "text", "text": "look"},
                    {"type": "image_url", "image_url": {"url": "data:"}},
                    {"type": "text", "text": "here"}
                ]},
                {"role": "assistant", "content": "a"}
            ]}),
        };
        assert_eq!(r.last_user_text().as_deref(), Some("look\nhere"));
        assert_eq!(r.system_text().as_deref(), Some("s1\ns2"));
        let empty = RecordedRequest {
            body: Value::Null,
            ..r
        };
        assert_eq!(empty.last_user_text(), None);
        assert_eq!(empty.system_text(), None);
    }
}

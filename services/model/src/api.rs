//! The OpenAI chat-completions wire format: parsing requests (with a clear error for every
//! bad field) and building replies and stream chunks.

use serde::Deserialize;
use serde_json::{json, Value};

use crate::engine::{Finish, Generate, Priority, Turn, Usage};
use crate::grammar;

/// A request that cannot be served, with its HTTP status and OpenAI error body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// HTTP status.
    pub status: u16,
    /// OpenAI error `type`.
    pub kind: &'static str,
    /// OpenAI error `code`.
    pub code: &'static str,
    /// What is wrong.
    pub message: String,
}

impl ApiError {
    /// A 400 `invalid_request_error`.
    pub fn invalid(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status: 400,
            kind: "invalid_request_error",
            code,
            message: message.into(),
        }
    }

    /// The JSON body: `{"error": {"message", "type", "code"}}`.
    pub fn body(&self) -> Value {
        json!({"error": {"message": self.message, "type": self.kind, "code": self.code}})
    }
}

/// `POST /v1/chat/completions` as far as this server reads it (other fields are ignored,
/// as OpenAI-compatible servers do).
#[derive(Debug, Deserialize)]
struct RawRequest {
    model: Option<String>,
    messages: Option<Vec<RawMessage>>,
    #[serde(default)]
    stream: bool,
    max_tokens: Option<u32>,
    max_completion_tokens: Option<u32>,
    temperature: Option<f32>,
    top_p: Option<f32>,
    seed: Option<i64>,
    stop: Option<Stop>,
    stream_options: Option<StreamOptions>,
    n: Option<u32>,
    /// OpenAI's structured output: `text`, `json_object` or `json_schema`.
    response_format: Option<Value>,
    /// Ghost's extension: free text, then a trigger, then JSON (see [`crate::grammar`]).
    trailer_format: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct StreamOptions {
    #[serde(default)]
    include_usage: bool,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Stop {
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Deserialize)]
struct RawMessage {
    role: String,
    #[serde(default)]
    content: Option<Content>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Content {
    Text(String),
    Parts(Vec<Value>),
}

/// A parsed request.
#[derive(Debug, Clone)]
pub struct ChatRequest {
    /// What to generate.
    pub generate: Generate,
    /// Stream the reply as SSE.
    pub stream: bool,
    /// Add a usage chunk to the stream.
    pub include_usage: bool,
    /// Image parts dropped (the model reads text only).
    pub dropped_images: usize,
}

/// Parses and checks a request body for the model called `model_name`.
pub fn parse_request(body: &[u8], model_name: &str) -> Result<ChatRequest, ApiError> {
    let raw: RawRequest = serde_json::from_slice(body)
        .map_err(|e| ApiError::invalid("invalid_json", format!("request body: {e}")))?;
    match raw.model.as_deref() {
        None => return Err(ApiError::invalid("missing_model", "model is required")),
        Some(m) if m != model_name => {
            return Err(ApiError {
                status: 404,
                kind: "invalid_request_error",
                code: "model_not_found",
                message: format!("this server serves the model {model_name:?}, not {m:?}"),
            })
        }
        Some(_) => {}
    }
    let messages = raw
        .messages
        .filter(|m| !m.is_empty())
        .ok_or_else(|| ApiError::invalid("missing_messages", "messages must not be empty"))?;
    let mut turns = Vec::with_capacity(messages.len());
    let mut dropped_images = 0;
    for (i, m) in messages.into_iter().enumerate() {
        if !matches!(
            m.role.as_str(),
            "system" | "developer" | "user" | "assistant"
        ) {
            return Err(ApiError::invalid(
                "invalid_role",
                format!(
                    "messages[{i}].role {:?} is not system, user or assistant",
                    m.role
                ),
            ));
        }
        let content = match m.content {
            None => String::new(),
            Some(Content::Text(t)) => t,
            Some(Content::Parts(parts)) => {
                let mut texts = Vec::new();
                for (j, part) in parts.iter().enumerate() {
                    match part.get("type").and_then(Value::as_str) {
                        Some("text") => match part.get("text").and_then(Value::as_str) {
                            Some(t) => texts.push(t.to_owned()),
                            None => {
                                return Err(ApiError::invalid(
                                    "invalid_content",
                                    format!("messages[{i}].content[{j}].text must be a string"),
                                ))
                            }
                        },
                        Some("image_url") => dropped_images += 1,
                        _ => {
                            return Err(ApiError::invalid(
                                "invalid_content",
                                format!(
                                    "messages[{i}].content[{j}] is not a text or image_url part"
                                ),
                            ))
                        }
                    }
                }
                texts.join("\n")
            }
        };
        if content.contains('\0') {
            return Err(ApiError::invalid(
                "invalid_content",
                format!("messages[{i}].content contains a NUL character"),
            ));
        }
        let role = if m.role == "developer" {
            "system".into()
        } else {
            m.role
        };
        turns.push(Turn { role, content });
    }
    if raw.n.is_some_and(|n| n != 1) {
        return Err(ApiError::invalid("invalid_n", "only n = 1 is supported"));
    }
    let max_tokens = raw.max_completion_tokens.or(raw.max_tokens);
    if max_tokens == Some(0) {
        return Err(ApiError::invalid(
            "invalid_max_tokens",
            "max_tokens must be at least 1",
        ));
    }
    let temperature = raw.temperature.unwrap_or(1.0);
    if !(0.0..=2.0).contains(&temperature) {
        return Err(ApiError::invalid(
            "invalid_temperature",
            "temperature must be within 0..=2",
        ));
    }
    let top_p = raw.top_p.unwrap_or(1.0);
    if !(top_p > 0.0 && top_p <= 1.0) {
        return Err(ApiError::invalid(
            "invalid_top_p",
            "top_p must be within (0, 1]",
        ));
    }
    let stop = match raw.stop {
        None => Vec::new(),
        Some(Stop::One(s)) => vec![s],
        Some(Stop::Many(v)) if v.len() <= 4 => v,
        Some(Stop::Many(_)) => {
            return Err(ApiError::invalid(
                "invalid_stop",
                "at most 4 stop sequences",
            ))
        }
    };
    let constraint =
        grammar::from_request(raw.response_format.as_ref(), raw.trailer_format.as_ref())?;
    let seed = match raw.seed {
        // Fold any i64 into the sampler's u32 seed deterministically.
        Some(s) => (s as u64 ^ ((s as u64) >> 32)) as u32,
        None => uuid::Uuid::new_v4().as_u128() as u32,
    };
    Ok(ChatRequest {
        generate: Generate {
            turns,
            max_tokens,
            temperature,
            top_p,
            seed,
            stop,
            constraint,
            // The server sets these from the request's header and the completion's id.
            priority: Priority::Interactive,
            label: String::new(),
        },
        stream: raw.stream,
        include_usage: raw.stream_options.is_some_and(|o| o.include_usage),
        dropped_images,
    })
}

/// The identity of one completion, shared by its chunks.
#[derive(Debug, Clone)]
pub struct Completion {
    /// `chatcmpl-…`.
    pub id: String,
    /// Unix seconds.
    pub created: u64,
    /// The model id.
    pub model: String,
}

impl Completion {
    /// A fresh id for `model`.
    pub fn new(model: &str) -> Self {
        Self {
            id: format!("chatcmpl-{}", uuid::Uuid::new_v4().simple()),
            created: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or_default(),
            model: model.to_owned(),
        }
    }

    /// A non-streaming reply.
    pub fn reply(&self, text: &str, finish: Finish, usage: &Usage) -> Value {
        json!({
            "id": self.id, "object": "chat.completion", "created": self.created, "model": self.model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": finish.as_str()}],
            "usage": usage_json(usage),
        })
    }

    /// A stream chunk with `delta` and `finish_reason`.
    pub fn chunk(&self, delta: Value, finish: Option<Finish>) -> Value {
        json!({
            "id": self.id, "object": "chat.completion.chunk", "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish.map(Finish::as_str)}],
        })
    }

    /// The trailing usage chunk (`stream_options.include_usage`).
    pub fn usage_chunk(&self, usage: &Usage) -> Value {
        json!({
            "id": self.id, "object": "chat.completion.chunk", "created": self.created,
            "model": self.model, "choices": [], "usage": usage_json(usage),
        })
    }
}

/// OpenAI's usage object, with its `prompt_tokens_details.cached_tokens` (the prompt's
/// tokens a sequence already held) and llama.cpp server's `timings`: what a benchmark needs
/// to tell a prompt read again from one the cache served.
fn usage_json(usage: &Usage) -> Value {
    json!({
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.prompt_tokens + usage.completion_tokens,
        "prompt_tokens_details": {
            "cached_tokens": usage.prompt_tokens.saturating_sub(usage.prompt_decoded),
        },
        "timings": {
            "prompt_ms": usage.prompt_secs * 1e3,
            "predicted_ms": usage.generation_secs * 1e3,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(body: Value) -> Result<ChatRequest, ApiError> {
        parse_request(body.to_string().as_bytes(), "m")
    }

    #[test]
    fn a_full_request_is_read() {
        let r = parse(json!({
            "model": "m", "stream": true, "max_tokens": 7, "temperature": 0, "top_p": 0.5,
            "seed": 3, "stop": "\n", "stream_options": {"include_usage": true},
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": [{"type": "text", "text": "look"},
                                             {"type": "image_url", "image_url": {"url": "x"}}]},
                {"role": "assistant", "content": null}
            ]
        }))
        .unwrap();
        assert!(r.stream && r.include_usage);
        assert_eq!(r.dropped_images, 1);
        assert_eq!(r.generate.max_tokens, Some(7));
        assert_eq!(r.generate.temperature, 0.0);
        assert_eq!(r.generate.seed, 3);
        assert_eq!(r.generate.stop, vec!["\n".to_owned()]);
        assert_eq!(r.generate.turns[1].content, "look");
        assert_eq!(r.generate.turns[2].content, "");
    }

    #[test]
    fn bad_requests_get_a_clear_error() {
        let cases = [
            (json!({"model": "m"}), 400, "missing_messages"),
            (
                json!({"messages": [{"role": "user", "content": "x"}]}),
                400,
                "missing_model",
            ),
            (
                json!({"model": "other", "messages": [{"role": "user", "content": "x"}]}),
                404,
                "model_not_found",
            ),
            (
                json!({"model": "m", "messages": [{"role": "robot", "content": "x"}]}),
                400,
                "invalid_role",
            ),
            (
                json!({"model": "m", "messages": [{"role": "user", "content": [{"type": "audio"}]}]}),
                400,
                "invalid_content",
            ),
            (
                json!({"model": "m", "messages": [{"role": "user", "content": "a\u{0}b"}]}),
                400,
                "invalid_content",
            ),
            (
                json!({"model": "m", "max_tokens": 0, "messages": [{"role": "user", "content": "x"}]}),
                400,
                "invalid_max_tokens",
            ),
            (
                json!({"model": "m", "temperature": 3, "messages": [{"role": "user", "content": "x"}]}),
                400,
                "invalid_temperature",
            ),
            (
                json!({"model": "m", "top_p": 0, "messages": [{"role": "user", "content": "x"}]}),
                400,
                "invalid_top_p",
            ),
            (
                json!({"model": "m", "n": 2, "messages": [{"role": "user", "content": "x"}]}),
                400,
                "invalid_n",
            ),
            (
                json!({"model": "m", "stop": ["a","b","c","d","e"], "messages": [{"role": "user", "content": "x"}]}),
                400,
                "invalid_stop",
            ),
        ];
        for (body, status, code) in cases {
            let e = parse(body.clone()).unwrap_err();
            assert_eq!((e.status, e.code), (status, code), "{body}");
            assert_eq!(e.body()["error"]["code"], code);
        }
        let e = parse_request(b"{not json", "m").unwrap_err();
        assert_eq!(e.code, "invalid_json");
    }

    #[test]
    fn usage_says_how_much_of_the_prompt_the_cache_served() {
        let usage = Usage {
            prompt_tokens: 900,
            prompt_decoded: 40,
            completion_tokens: 12,
            prompt_secs: 0.5,
            generation_secs: 1.25,
        };
        let u = usage_json(&usage);
        assert_eq!(u["prompt_tokens_details"]["cached_tokens"], 860);
        assert_eq!(u["total_tokens"], 912);
        assert_eq!(u["timings"]["prompt_ms"], 500.0);
        assert_eq!(u["timings"]["predicted_ms"], 1250.0);
    }
}

//! Request bodies and non-streaming replies of both wire formats.

use serde_json::{json, Map, Value};

use super::config::{GenerationOptions, Provider};
use super::contract::Contract;
use super::error::LlmError;
use super::image::ResolvedImage;
use super::message::Role;

/// A message whose images have been resolved (dropped ones removed).
#[derive(Debug, Clone)]
pub(crate) struct ResolvedMessage {
    pub role: Role,
    pub parts: Vec<ResolvedPart>,
}

/// A content part ready for the wire.
#[derive(Debug, Clone)]
pub(crate) enum ResolvedPart {
    Text(String),
    Image(ResolvedImage),
}

fn joined_text(parts: &[ResolvedPart]) -> String {
    let texts: Vec<&str> = parts
        .iter()
        .filter_map(|p| match p {
            ResolvedPart::Text(t) => Some(t.as_str()),
            ResolvedPart::Image(_) => None,
        })
        .collect();
    texts.join("\n")
}

/// Ollama `/api/chat` body. Text parts are joined with newlines; images go to `images` as raw
/// base64 (http URLs never reach here for Ollama: `image` resolves or drops them).
pub(crate) fn ollama_body(
    model: &str,
    messages: &[ResolvedMessage],
    opts: &GenerationOptions,
    stream: bool,
) -> Value {
    let msgs: Vec<Value> = messages
        .iter()
        .map(|m| {
            let mut obj = Map::new();
            obj.insert("role".into(), m.role.as_str().into());
            obj.insert("content".into(), joined_text(&m.parts).into());
            let images: Vec<Value> = m
                .parts
                .iter()
                .filter_map(|p| match p {
                    ResolvedPart::Image(img) => img.base64_payload().map(Value::from),
                    ResolvedPart::Text(_) => None,
                })
                .collect();
            if !images.is_empty() {
                obj.insert("images".into(), Value::Array(images));
            }
            Value::Object(obj)
        })
        .collect();
    let mut body = json!({ "model": model, "messages": msgs, "stream": stream });
    let mut options = Map::new();
    if let Some(t) = opts.temperature {
        options.insert("temperature".into(), t.into());
    }
    if let Some(p) = opts.top_p {
        options.insert("top_p".into(), p.into());
    }
    if let Some(n) = opts.max_tokens {
        options.insert("num_predict".into(), n.into());
    }
    if let Some(s) = opts.seed {
        options.insert("seed".into(), s.into());
    }
    if let Some(stop) = &opts.stop {
        options.insert("stop".into(), stop.clone().into());
    }
    if !options.is_empty() {
        if let Some(obj) = body.as_object_mut() {
            obj.insert("options".into(), Value::Object(options));
        }
    }
    body
}

/// OpenAI `/v1/chat/completions` body. A message without images gets a plain string content
/// (widest compatibility); with images, the content-part array in the original order.
pub(crate) fn openai_body(
    model: &str,
    messages: &[ResolvedMessage],
    opts: &GenerationOptions,
    stream: bool,
) -> Value {
    let msgs: Vec<Value> = messages
        .iter()
        .map(|m| {
            let has_image = m.parts.iter().any(|p| matches!(p, ResolvedPart::Image(_)));
            let content = if has_image {
                Value::Array(
                    m.parts
                        .iter()
                        .map(|p| match p {
                            ResolvedPart::Text(t) => json!({"type": "text", "text": t}),
                            ResolvedPart::Image(img) => {
                                json!({"type": "image_url", "image_url": {"url": img.url}})
                            }
                        })
                        .collect(),
                )
            } else {
                Value::from(joined_text(&m.parts))
            };
            json!({"role": m.role.as_str(), "content": content})
        })
        .collect();
    let mut body = Map::new();
    body.insert("model".into(), model.into());
    body.insert("messages".into(), Value::Array(msgs));
    body.insert("stream".into(), stream.into());
    if stream {
        // The token counts of a streamed reply come in a last chunk only when asked for
        // (what a benchmark reads to see how much of a prompt a server's cache held).
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    if let Some(t) = opts.temperature {
        body.insert("temperature".into(), t.into());
    }
    if let Some(p) = opts.top_p {
        body.insert("top_p".into(), p.into());
    }
    if let Some(n) = opts.max_tokens {
        body.insert("max_tokens".into(), n.into());
    }
    if let Some(s) = opts.seed {
        body.insert("seed".into(), s.into());
    }
    if let Some(stop) = &opts.stop {
        body.insert("stop".into(), stop.clone().into());
    }
    Value::Object(body)
}

/// Adds what a call asks for beyond text to a built body: the answer's shape in the
/// provider's own wire (Ollama `format`, OpenAI `response_format` with `json_schema`), the
/// contract's token budget, and Ghost's lazy trailer (`trailer_format`, OpenAI wire only:
/// the embedded server constrains the JSON after the trigger; Ollama has no such thing).
pub(crate) fn apply_shape(
    body: &mut Value,
    provider: Provider,
    contract: Option<&Contract>,
    trailer: Option<(&str, &Contract)>,
    reply_budget: Option<u32>,
) {
    let Some(obj) = body.as_object_mut() else {
        return;
    };
    if let (Some(max), None) = (reply_budget, contract) {
        match provider {
            Provider::Ollama => {
                let options = obj.entry("options").or_insert_with(|| json!({}));
                if let Some(o) = options.as_object_mut() {
                    budget(o, "num_predict", max);
                }
            }
            Provider::Openai => budget(obj, "max_tokens", max),
        }
    }
    if let Some(c) = contract {
        match provider {
            Provider::Ollama => {
                obj.insert("format".into(), c.schema.clone());
                let options = obj.entry("options").or_insert_with(|| json!({}));
                if let Some(o) = options.as_object_mut() {
                    budget(o, "num_predict", c.max_tokens);
                }
            }
            Provider::Openai => {
                obj.insert(
                    "response_format".into(),
                    json!({"type": "json_schema", "json_schema": {
                        "name": c.name, "schema": c.schema, "strict": true}}),
                );
                budget(obj, "max_tokens", c.max_tokens);
            }
        }
    }
    if let (Some((trigger, c)), Provider::Openai) = (trailer, provider) {
        obj.insert(
            "trailer_format".into(),
            json!({"trigger": trigger, "schema": c.schema}),
        );
    }
}

/// Sets a token cap unless the role's options set a smaller one.
fn budget(obj: &mut Map<String, Value>, key: &str, max: u32) {
    let set = obj.get(key).and_then(Value::as_u64);
    if set.is_none_or(|n| n > u64::from(max)) {
        obj.insert(key.into(), max.into());
    }
}

/// Text of an in-band `error` field (string or object), if present.
pub(crate) fn provider_error(v: &Value) -> Option<LlmError> {
    let err = v.get("error")?;
    if err.is_null() {
        return None;
    }
    let msg = match err {
        Value::String(s) => s.clone(),
        Value::Object(o) => o
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| err.to_string()),
        other => other.to_string(),
    };
    Some(LlmError::MalformedStream(format!("provider error: {msg}")))
}

/// Reply text of a non-streaming Ollama response.
/// Token counts a reply (or a stream's final chunk) reports: Ollama's `prompt_eval_count` /
/// `eval_count`, OpenAI's `usage.prompt_tokens` / `usage.completion_tokens`.
pub(crate) fn usage_of(v: &Value) -> Option<(u64, u64)> {
    let pair = |o: &Value, p: &str, c: &str| {
        let prompt = o.get(p).and_then(Value::as_u64);
        let completion = o.get(c).and_then(Value::as_u64);
        (prompt.is_some() || completion.is_some())
            .then(|| (prompt.unwrap_or(0), completion.unwrap_or(0)))
    };
    pair(v, "prompt_eval_count", "eval_count").or_else(|| {
        v.get("usage")
            .and_then(|u| pair(u, "prompt_tokens", "completion_tokens"))
    })
}

pub(crate) fn ollama_reply(v: &Value) -> Result<String, LlmError> {
    if let Some(e) = provider_error(v) {
        return Err(e);
    }
    v.get("message")
        .and_then(|m| m.get("content"))
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| LlmError::MalformedStream("ollama reply without message.content".into()))
}

/// Reply text of a non-streaming OpenAI response (`null` content counts as empty).
pub(crate) fn openai_reply(v: &Value) -> Result<String, LlmError> {
    if let Some(e) = provider_error(v) {
        return Err(e);
    }
    let message = v
        .get("choices")
        .and_then(|c| c.get(0))
        .and_then(|c| c.get("message"))
        .ok_or_else(|| {
            LlmError::MalformedStream("openai reply without choices[0].message".into())
        })?;
    match message.get("content") {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Null) | None => Ok(String::new()),
        Some(_) => Err(LlmError::MalformedStream(
            "openai reply content is not a string".into(),
        )),
    }
}

/// Model names of a model list: Ollama `models[].name` (or `.model`), OpenAI `data[].id`.
pub(crate) fn model_names(provider: Provider, v: &Value) -> Vec<String> {
    let (list, keys): (&str, &[&str]) = match provider {
        Provider::Ollama => ("models", &["name", "model"]),
        Provider::Openai => ("data", &["id"]),
    };
    v.get(list)
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|m| keys.iter().find_map(|k| m.get(*k).and_then(Value::as_str)))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// Vectors of an embedding reply: Ollama `embeddings[]`, OpenAI `data[].embedding` (put in
/// `index` order). Anything else, or a non-number component, is malformed.
pub(crate) fn embeddings(provider: Provider, v: &Value) -> Result<Vec<Vec<f32>>, LlmError> {
    let malformed = |what: &str| LlmError::MalformedStream(format!("embedding reply: {what}"));
    let vector = |e: &Value| -> Result<Vec<f32>, LlmError> {
        e.as_array()
            .ok_or_else(|| malformed("a vector is not an array"))?
            .iter()
            .map(|x| {
                x.as_f64()
                    .map(|x| x as f32)
                    .ok_or_else(|| malformed("a component is not a number"))
            })
            .collect()
    };
    match provider {
        Provider::Ollama => v
            .get("embeddings")
            .and_then(Value::as_array)
            .ok_or_else(|| malformed("no embeddings array"))?
            .iter()
            .map(vector)
            .collect(),
        Provider::Openai => {
            let mut items: Vec<(u64, Vec<f32>)> = v
                .get("data")
                .and_then(Value::as_array)
                .ok_or_else(|| malformed("no data array"))?
                .iter()
                .enumerate()
                .map(|(i, d)| {
                    let index = d.get("index").and_then(Value::as_u64).unwrap_or(i as u64);
                    Ok((index, vector(d.get("embedding").unwrap_or(&Value::Null))?))
                })
                .collect::<Result<_, LlmError>>()?;
            items.sort_by_key(|(i, _)| *i);
            Ok(items.into_iter().map(|(_, v)| v).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msgs() -> Vec<ResolvedMessage> {
        vec![
            ResolvedMessage {
                role: Role::System,
                parts: vec![ResolvedPart::Text("sys".into())],
            },
            ResolvedMessage {
                role: Role::User,
                parts: vec![
                    ResolvedPart::Text("look".into()),
                    ResolvedPart::Image(ResolvedImage {
                        url: "data:image/png;base64,QUJD".into(),
                    }),
                ],
            },
        ]
    }

    fn opts() -> GenerationOptions {
        GenerationOptions {
            temperature: Some(0.5),
            top_p: Some(0.9),
            max_tokens: Some(42),
            seed: Some(7),
            stop: Some(vec!["\n\n".into()]),
        }
    }

    #[test]
    fn ollama_body_maps_options_and_images() {
        let b = ollama_body("m", &msgs(), &opts(), true);
        assert_eq!(b["model"], "m");
        assert_eq!(b["stream"], true);
        assert_eq!(b["options"]["num_predict"], 42);
        assert_eq!(b["options"]["temperature"], 0.5);
        assert_eq!(b["options"]["top_p"], 0.9);
        assert_eq!(b["options"]["seed"], 7);
        assert_eq!(b["options"]["stop"][0], "\n\n");
        assert_eq!(b["messages"][1]["content"], "look");
        assert_eq!(b["messages"][1]["images"][0], "QUJD");
        assert!(b["messages"][0].get("images").is_none());
        let bare = ollama_body("m", &msgs(), &GenerationOptions::default(), false);
        assert!(bare.get("options").is_none());
        assert_eq!(bare["stream"], false);
    }

    #[test]
    fn openai_body_uses_string_or_parts() {
        let b = openai_body("m", &msgs(), &opts(), true);
        assert_eq!(b["messages"][0]["content"], "sys");
        assert_eq!(b["messages"][1]["content"][0]["type"], "text");
        assert_eq!(b["messages"][1]["content"][1]["type"], "image_url");
        assert_eq!(
            b["messages"][1]["content"][1]["image_url"]["url"],
            "data:image/png;base64,QUJD"
        );
        assert_eq!(b["max_tokens"], 42);
        assert_eq!(b["seed"], 7);
        assert_eq!(b["stream_options"]["include_usage"], true);
        let bare = openai_body("m", &msgs(), &GenerationOptions::default(), false);
        assert!(bare.get("temperature").is_none());
        assert!(bare.get("stream_options").is_none());
    }

    #[test]
    fn a_contract_goes_in_each_providers_own_wire() {
        let c = Contract {
            name: "route",
            schema: json!({"type": "object"}),
            max_tokens: 16,
        };
        let mut o = ollama_body("m", &msgs(), &opts(), false);
        apply_shape(&mut o, Provider::Ollama, Some(&c), Some(("<<<", &c)), None);
        assert_eq!(o["format"], json!({"type": "object"}));
        assert_eq!(o["options"]["num_predict"], 16);
        assert!(
            o.get("trailer_format").is_none(),
            "Ollama has no lazy trailer"
        );
        let mut a = openai_body("m", &msgs(), &GenerationOptions::default(), false);
        apply_shape(&mut a, Provider::Openai, Some(&c), None, Some(99));
        assert_eq!(
            a["response_format"],
            json!({"type": "json_schema", "json_schema": {"name": "route",
                   "schema": {"type": "object"}, "strict": true}})
        );
        assert_eq!(a["max_tokens"], 16, "a contract brings its own budget");
        let mut t = openai_body("m", &msgs(), &opts(), true);
        apply_shape(&mut t, Provider::Openai, None, Some(("<<<", &c)), None);
        assert_eq!(
            t["trailer_format"],
            json!({"trigger": "<<<", "schema": {"type": "object"}})
        );
        assert!(t.get("response_format").is_none());
        assert_eq!(t["max_tokens"], 42, "a reply keeps the role's budget");
        // A reply's own budget: the smaller of it and the role's.
        let mut r = openai_body("m", &msgs(), &GenerationOptions::default(), true);
        apply_shape(&mut r, Provider::Openai, None, Some(("<<<", &c)), Some(160));
        assert_eq!(r["max_tokens"], 160);
        let mut r = openai_body("m", &msgs(), &opts(), true);
        apply_shape(&mut r, Provider::Openai, None, None, Some(160));
        assert_eq!(r["max_tokens"], 42);
        let mut r = ollama_body("m", &msgs(), &GenerationOptions::default(), true);
        apply_shape(&mut r, Provider::Ollama, None, None, Some(160));
        assert_eq!(r["options"]["num_predict"], 160);
    }

    #[test]
    fn model_lists_of_both_formats() {
        let ollama =
            json!({"models": [{"name": "qwen2.5:7b-instruct"}, {"model": "llama3:latest"}, {}]});
        assert_eq!(
            model_names(Provider::Ollama, &ollama),
            vec!["qwen2.5:7b-instruct", "llama3:latest"]
        );
        let openai = json!({"object": "list", "data": [{"id": "gpt-4.1-mini"}]});
        assert_eq!(model_names(Provider::Openai, &openai), vec!["gpt-4.1-mini"]);
        assert!(model_names(Provider::Openai, &json!({"oops": 1})).is_empty());
    }

    #[test]
    fn replies_and_in_band_errors() {
        assert_eq!(
            ollama_reply(&json!({"message": {"content": "hi"}, "done": true})),
            Ok("hi".into())
        );
        assert!(matches!(
            ollama_reply(&json!({"error": "model not found"})),
            Err(LlmError::MalformedStream(m)) if m.contains("model not found")
        ));
        assert_eq!(
            openai_reply(&json!({"choices": [{"message": {"content": null}}]})),
            Ok(String::new())
        );
        assert!(openai_reply(&json!({"choices": []})).is_err());
        assert!(matches!(
            openai_reply(&json!({"error": {"message": "quota"}})),
            Err(LlmError::MalformedStream(m)) if m.contains("quota")
        ));
    }
}

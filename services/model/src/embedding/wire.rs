//! The OpenAI embeddings wire format: `POST /v1/embeddings` with `model`, `input` (a string
//! or an array of strings), optional `encoding_format` (`float`, the default, or `base64`:
//! little-endian f32s) and `dimensions` (only the model's own); every bad field gets a 400
//! saying which, a model of another name 404.

use base64::Engine as _;
use serde_json::{json, Value};

use crate::api::ApiError;

/// A checked request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddingRequest {
    /// The texts, in order.
    pub inputs: Vec<String>,
    /// Vectors as base64 strings rather than arrays of numbers.
    pub base64: bool,
}

/// Parses and checks a request body for the model called `model_name` with vectors of
/// `dimensions`, carrying at most `max_inputs` texts.
pub fn parse_request(
    body: &[u8],
    model_name: &str,
    dimensions: usize,
    max_inputs: usize,
) -> Result<EmbeddingRequest, ApiError> {
    let raw: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::invalid("invalid_json", format!("request body: {e}")))?;
    let Some(raw) = raw.as_object() else {
        return Err(ApiError::invalid(
            "invalid_json",
            "the request body must be a JSON object",
        ));
    };
    match raw.get("model") {
        None | Some(Value::Null) => {
            return Err(ApiError::invalid("missing_model", "model is required"))
        }
        Some(Value::String(m)) if m == model_name => {}
        Some(Value::String(m)) => {
            return Err(ApiError {
                status: 404,
                kind: "invalid_request_error",
                code: "model_not_found",
                message: format!("this server embeds with the model {model_name:?}, not {m:?}"),
            })
        }
        Some(_) => return Err(ApiError::invalid("invalid_model", "model must be a string")),
    }
    let inputs = match raw.get("input") {
        None | Some(Value::Null) => {
            return Err(ApiError::invalid("missing_input", "input is required"))
        }
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => {
            if items.is_empty() {
                return Err(ApiError::invalid("empty_input", "input must not be empty"));
            }
            if items.len() > max_inputs {
                return Err(ApiError::invalid(
                    "too_many_inputs",
                    format!(
                        "input has {} texts; at most {max_inputs} per request",
                        items.len()
                    ),
                ));
            }
            items
                .iter()
                .enumerate()
                .map(|(i, item)| match item {
                    Value::String(s) => Ok(s.clone()),
                    Value::Number(_) | Value::Array(_) => Err(ApiError::invalid(
                        "unsupported_input",
                        format!("input[{i}]: token arrays are not supported; send text"),
                    )),
                    _ => Err(ApiError::invalid(
                        "invalid_input",
                        format!("input[{i}] must be a string"),
                    )),
                })
                .collect::<Result<Vec<_>, _>>()?
        }
        Some(_) => {
            return Err(ApiError::invalid(
                "invalid_input",
                "input must be a string or an array of strings",
            ))
        }
    };
    if let Some(i) = inputs.iter().position(|s| s.trim().is_empty()) {
        return Err(ApiError::invalid(
            "empty_input",
            format!("input[{i}] is empty"),
        ));
    }
    let base64 = match raw.get("encoding_format") {
        None | Some(Value::Null) => false,
        Some(Value::String(f)) if f == "float" => false,
        Some(Value::String(f)) if f == "base64" => true,
        Some(other) => {
            return Err(ApiError::invalid(
                "invalid_encoding_format",
                format!("encoding_format must be \"float\" or \"base64\", not {other}"),
            ))
        }
    };
    match raw.get("dimensions") {
        None | Some(Value::Null) => {}
        Some(d) if d.as_u64() == Some(dimensions as u64) => {}
        Some(d) => {
            return Err(ApiError::invalid(
                "invalid_dimensions",
                format!("this model's vectors have {dimensions} dimensions, not {d}"),
            ))
        }
    }
    Ok(EmbeddingRequest { inputs, base64 })
}

/// The reply: `{"object": "list", "data": [{"object": "embedding", "index", "embedding"}],
/// "model", "usage"}`.
pub fn reply(model_name: &str, vectors: &[Vec<f32>], tokens: usize, base64: bool) -> Value {
    let data: Vec<Value> = vectors
        .iter()
        .enumerate()
        .map(|(index, v)| {
            let embedding = if base64 {
                let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                json!(base64::engine::general_purpose::STANDARD.encode(bytes))
            } else {
                json!(v)
            };
            json!({"object": "embedding", "index": index, "embedding": embedding})
        })
        .collect();
    json!({
        "object": "list",
        "data": data,
        "model": model_name,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(body: &str) -> Result<EmbeddingRequest, ApiError> {
        parse_request(body.as_bytes(), "mini", 384, 3)
    }

    fn code(body: &str) -> (u16, &'static str) {
        let e = parse(body).expect_err(body);
        (e.status, e.code)
    }

    #[test]
    fn a_string_or_an_array_of_strings_is_read_in_order() {
        let one = parse(r#"{"model":"mini","input":"hello"}"#).unwrap();
        assert_eq!(one.inputs, vec!["hello"]);
        assert!(!one.base64);
        let many = parse(
            r#"{"model":"mini","input":["a","b"],"encoding_format":"base64","dimensions":384}"#,
        )
        .unwrap();
        assert_eq!(many.inputs, vec!["a", "b"]);
        assert!(many.base64);
    }

    #[test]
    fn every_bad_body_gets_a_4xx_naming_what_is_wrong() {
        for (body, expected) in [
            ("not json", (400, "invalid_json")),
            ("[1]", (400, "invalid_json")),
            (r#"{"input":"a"}"#, (400, "missing_model")),
            (r#"{"model":3,"input":"a"}"#, (400, "invalid_model")),
            (r#"{"model":"other","input":"a"}"#, (404, "model_not_found")),
            (r#"{"model":"mini"}"#, (400, "missing_input")),
            (r#"{"model":"mini","input":[]}"#, (400, "empty_input")),
            (r#"{"model":"mini","input":""}"#, (400, "empty_input")),
            (
                r#"{"model":"mini","input":["a"," "]}"#,
                (400, "empty_input"),
            ),
            (
                r#"{"model":"mini","input":[1,2]}"#,
                (400, "unsupported_input"),
            ),
            (
                r#"{"model":"mini","input":[[1]]}"#,
                (400, "unsupported_input"),
            ),
            (
                r#"{"model":"mini","input":[{"a":1}]}"#,
                (400, "invalid_input"),
            ),
            (r#"{"model":"mini","input":7}"#, (400, "invalid_input")),
            (
                r#"{"model":"mini","input":["a","b","c","d"]}"#,
                (400, "too_many_inputs"),
            ),
            (
                r#"{"model":"mini","input":"a","encoding_format":"int8"}"#,
                (400, "invalid_encoding_format"),
            ),
            (
                r#"{"model":"mini","input":"a","dimensions":128}"#,
                (400, "invalid_dimensions"),
            ),
        ] {
            assert_eq!(code(body), expected, "{body}");
        }
    }

    #[test]
    fn the_reply_carries_each_vector_at_its_index_as_floats_or_base64() {
        let v = reply("mini", &[vec![1.0, 0.5], vec![0.0, -1.0]], 7, false);
        assert_eq!(v["data"][1]["index"], 1);
        assert_eq!(v["data"][1]["embedding"], json!([0.0, -1.0]));
        assert_eq!(v["usage"]["prompt_tokens"], 7);
        let b = reply("mini", &[vec![1.0]], 3, true);
        let text = b["data"][0]["embedding"].as_str().unwrap();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text)
            .unwrap();
        assert_eq!(bytes, 1.0f32.to_le_bytes());
    }
}

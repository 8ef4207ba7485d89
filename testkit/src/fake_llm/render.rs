//! Wire bytes of scripted answers, in both formats.

use bytes::Bytes;
use serde_json::json;

use super::script::{Failure, Script};

/// Which API a request came in on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// Ollama `/api/chat` (NDJSON stream / single object).
    Ollama,
    /// OpenAI `/v1/chat/completions` (SSE stream / single object).
    Openai,
}

impl Format {
    /// Content type of a streamed answer.
    pub(crate) fn stream_content_type(self) -> &'static str {
        match self {
            Format::Ollama => "application/x-ndjson",
            Format::Openai => "text/event-stream",
        }
    }
}

const CREATED_AT: &str = "2024-01-01T00:00:00Z";

fn chunk_frame(format: Format, model: &str, text: &str) -> Bytes {
    let mut s = match format {
        Format::Ollama => json!({
            "model": model, "created_at": CREATED_AT,
            "message": {"role": "assistant", "content": text}, "done": false
        })
        .to_string(),
        Format::Openai => format!(
            "data: {}",
            json!({
                "id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0,
                "model": model,
                "choices": [{"index": 0, "delta": {"role": "assistant", "content": text},
                             "finish_reason": null}]
            })
        ),
    };
    s.push_str(match format {
        Format::Ollama => "\n",
        Format::Openai => "\n\n",
    });
    Bytes::from(s)
}

fn end_frame(format: Format, model: &str) -> Bytes {
    match format {
        Format::Ollama => Bytes::from(format!(
            "{}\n",
            json!({
                "model": model, "created_at": CREATED_AT,
                "message": {"role": "assistant", "content": ""},
                "done": true, "done_reason": "stop",
                "total_duration": 0, "eval_count": 0
            })
        )),
        Format::Openai => Bytes::from(format!(
            "data: {}\n\ndata: [DONE]\n\n",
            json!({
                "id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0,
                "model": model,
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]
            })
        )),
    }
}

fn garbage_frame(format: Format) -> Bytes {
    match format {
        Format::Ollama => Bytes::from_static(b"{\"message\": this is not json\n"),
        Format::Openai => Bytes::from_static(b"data: {this is not json\n\n"),
    }
}

/// The frames of a streamed answer: one per chunk, then the end marker or the failure tail.
pub(crate) fn stream_frames(format: Format, model: &str, script: &Script) -> Vec<Bytes> {
    let mut frames: Vec<Bytes> = script
        .chunks
        .iter()
        .map(|c| chunk_frame(format, model, c))
        .collect();
    match script.failure {
        Some(Failure::MalformedMidStream) => frames.push(garbage_frame(format)),
        Some(Failure::CloseMidStream) => {}
        // Status and Hang never reach the body.
        None | Some(Failure::Status(..)) | Some(Failure::Hang) => {
            frames.push(end_frame(format, model))
        }
    }
    frames
}

/// The body of a non-streaming answer (garbage or truncated JSON for mid-stream failures).
pub(crate) fn full_body(format: Format, model: &str, script: &Script) -> Bytes {
    let text = script.text();
    let (prompt, completion) = script.usage.unwrap_or((0, 0));
    let body = match format {
        Format::Ollama => {
            let mut body = json!({
                "model": model, "created_at": CREATED_AT,
                "message": {"role": "assistant", "content": text},
                "done": true, "done_reason": "stop", "total_duration": 0,
                "eval_count": completion
            });
            if script.usage.is_some() {
                body["prompt_eval_count"] = json!(prompt);
            }
            body
        }
        Format::Openai => json!({
            "id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                      "total_tokens": prompt + completion}
        }),
    }
    .to_string();
    match script.failure {
        Some(Failure::MalformedMidStream) => Bytes::from(format!("{body} this is not json")),
        Some(Failure::CloseMidStream) => {
            let half = body.len() / 2;
            let cut = (0..=half)
                .rev()
                .find(|&i| body.is_char_boundary(i))
                .unwrap_or(0);
            Bytes::from(body.get(..cut).unwrap_or("").to_string())
        }
        None | Some(Failure::Status(..)) | Some(Failure::Hang) => Bytes::from(body),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_tails_follow_the_failure() {
        let ok = stream_frames(Format::Openai, "m", &Script::chunks(vec!["a", "b"]));
        assert_eq!(ok.len(), 3);
        assert!(ok[2].ends_with(b"data: [DONE]\n\n"));
        let close = stream_frames(
            Format::Ollama,
            "m",
            &Script::chunks(vec!["a"]).with_failure(Failure::CloseMidStream),
        );
        assert_eq!(close.len(), 1);
        let bad = stream_frames(
            Format::Ollama,
            "m",
            &Script::failing(Failure::MalformedMidStream),
        );
        assert_eq!(bad.len(), 3);
        assert!(serde_json::from_slice::<serde_json::Value>(&bad[2]).is_err());
    }

    #[test]
    fn full_bodies_parse_unless_failing() {
        let ok = full_body(Format::Ollama, "m", &Script::reply("hi there"));
        let v: serde_json::Value = serde_json::from_slice(&ok).unwrap();
        assert_eq!(v["message"]["content"], "hi there");
        let cut = full_body(
            Format::Openai,
            "m",
            &Script::failing(Failure::CloseMidStream),
        );
        assert!(serde_json::from_slice::<serde_json::Value>(&cut).is_err());
    }
}

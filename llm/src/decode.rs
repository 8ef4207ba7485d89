//! Incremental decoders for the two streaming formats. Bytes arrive in arbitrary HTTP chunks,
//! so lines (and UTF-8 sequences) may be split anywhere: everything is buffered as bytes and
//! only complete lines are decoded.

use std::collections::VecDeque;

use serde_json::Value;

use super::config::Provider;
use super::error::LlmError;
use super::wire::provider_error;

/// Splits a byte stream into lines ending in `\n`, `\r\n` or `\r` (SSE allows all three).
#[derive(Debug, Default)]
struct LineBuffer {
    buf: Vec<u8>,
    /// Start of the not yet consumed bytes (compacted lazily to avoid quadratic shifting).
    start: usize,
}

impl LineBuffer {
    fn push(&mut self, bytes: &[u8]) {
        if self.start > 0 && self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        } else if self.start > 4096 && self.start * 2 > self.buf.len() {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// Next complete line without its terminator. A trailing lone `\r` waits for more input
    /// (it may be the first half of `\r\n`) unless `eof`; at `eof` the unterminated rest is
    /// returned as a last line.
    fn next_line(&mut self, eof: bool) -> Option<Vec<u8>> {
        let rest = self.buf.get(self.start..)?;
        if rest.is_empty() {
            return None;
        }
        match rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            Some(i) => {
                let is_cr = rest.get(i) == Some(&b'\r');
                let consumed = if is_cr {
                    match rest.get(i + 1) {
                        Some(b'\n') => i + 2,
                        Some(_) => i + 1,
                        None if eof => i + 1,
                        None => return None,
                    }
                } else {
                    i + 1
                };
                let line = rest.get(..i).map(<[u8]>::to_vec).unwrap_or_default();
                self.start += consumed;
                Some(line)
            }
            None if eof => {
                let line = rest.to_vec();
                self.start = self.buf.len();
                Some(line)
            }
            None => None,
        }
    }
}

fn utf8(line: Vec<u8>) -> Result<String, LlmError> {
    String::from_utf8(line).map_err(|_| LlmError::MalformedStream("invalid UTF-8 in stream".into()))
}

fn parse_json(text: &str) -> Result<Value, LlmError> {
    serde_json::from_str(text).map_err(|e| {
        let preview: String = text.chars().take(120).collect();
        LlmError::MalformedStream(format!("invalid JSON ({e}): {preview}"))
    })
}

/// Ollama NDJSON: one JSON object per line, `done: true` ends the reply.
#[derive(Debug, Default)]
pub(crate) struct NdjsonDecoder {
    lines: LineBuffer,
    done: bool,
    usage: Option<(u64, u64)>,
}

impl NdjsonDecoder {
    fn handle_line(&mut self, line: Vec<u8>, out: &mut VecDeque<String>) -> Result<(), LlmError> {
        let text = utf8(line)?;
        let text = text.trim();
        if text.is_empty() {
            return Ok(());
        }
        let v = parse_json(text)?;
        if !v.is_object() {
            return Err(LlmError::MalformedStream(
                "NDJSON line is not an object".into(),
            ));
        }
        if let Some(e) = provider_error(&v) {
            return Err(e);
        }
        if let Some(content) = v
            .get("message")
            .and_then(|m| m.get("content"))
            .and_then(Value::as_str)
        {
            if !content.is_empty() {
                out.push_back(content.to_string());
            }
        }
        if v.get("done").and_then(Value::as_bool) == Some(true) {
            self.done = true;
            self.usage = super::wire::usage_of(&v);
        }
        Ok(())
    }

    fn drain(&mut self, eof: bool, out: &mut VecDeque<String>) -> Result<(), LlmError> {
        while !self.done {
            match self.lines.next_line(eof) {
                Some(line) => self.handle_line(line, out)?,
                None => break,
            }
        }
        Ok(())
    }
}

/// OpenAI SSE: `data:` lines accumulate into an event dispatched on a blank line; `: ...` lines
/// are comments (keep-alives); `data: [DONE]` ends the reply.
#[derive(Debug, Default)]
pub(crate) struct SseDecoder {
    lines: LineBuffer,
    /// Data lines of the event being assembled (joined with `\n` on dispatch, per the SSE spec).
    data: Vec<String>,
    done: bool,
    usage: Option<(u64, u64)>,
}

impl SseDecoder {
    fn handle_line(&mut self, line: Vec<u8>, out: &mut VecDeque<String>) -> Result<(), LlmError> {
        let text = utf8(line)?;
        if text.is_empty() {
            return self.dispatch(out);
        }
        if text.starts_with(':') {
            return Ok(());
        }
        let (field, value) = match text.find(':') {
            Some(i) => {
                let (f, v) = text.split_at(i);
                let v = v.get(1..).unwrap_or("");
                (f, v.strip_prefix(' ').unwrap_or(v))
            }
            None => (text.as_str(), ""),
        };
        if field == "data" {
            self.data.push(value.to_string());
        }
        // `event`, `id`, `retry` carry nothing we need.
        Ok(())
    }

    fn dispatch(&mut self, out: &mut VecDeque<String>) -> Result<(), LlmError> {
        if self.data.is_empty() {
            return Ok(());
        }
        let data = self.data.join("\n");
        self.data.clear();
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let v = parse_json(&data)?;
        if !v.is_object() {
            return Err(LlmError::MalformedStream(
                "SSE data is not an object".into(),
            ));
        }
        if let Some(e) = provider_error(&v) {
            return Err(e);
        }
        if let Some(usage) = super::wire::usage_of(&v) {
            self.usage = Some(usage);
        }
        // Chunks without choices (e.g. a trailing usage chunk) carry no text.
        if let Some(content) = v
            .get("choices")
            .and_then(|c| c.get(0))
            .and_then(|c| c.get("delta"))
            .and_then(|d| d.get("content"))
            .and_then(Value::as_str)
        {
            if !content.is_empty() {
                out.push_back(content.to_string());
            }
        }
        Ok(())
    }

    fn drain(&mut self, eof: bool, out: &mut VecDeque<String>) -> Result<(), LlmError> {
        while !self.done {
            match self.lines.next_line(eof) {
                Some(line) => self.handle_line(line, out)?,
                None => break,
            }
        }
        // Lenient end: a final event not followed by a blank line still counts.
        if eof && !self.done {
            self.dispatch(out)?;
        }
        Ok(())
    }
}

/// The decoder for one response body.
#[derive(Debug)]
pub(crate) enum Decoder {
    /// Ollama NDJSON.
    Ndjson(NdjsonDecoder),
    /// OpenAI SSE.
    Sse(SseDecoder),
}

impl Decoder {
    /// A fresh decoder for `provider`'s streaming format.
    pub(crate) fn for_provider(provider: Provider) -> Self {
        match provider {
            Provider::Ollama => Decoder::Ndjson(NdjsonDecoder::default()),
            Provider::Openai => Decoder::Sse(SseDecoder::default()),
        }
    }

    /// Feeds one HTTP chunk; decoded token deltas are appended to `out`.
    /// Returns `true` once the end-of-reply marker has been seen.
    pub(crate) fn feed(
        &mut self,
        bytes: &[u8],
        out: &mut VecDeque<String>,
    ) -> Result<bool, LlmError> {
        match self {
            Decoder::Ndjson(d) => {
                d.lines.push(bytes);
                d.drain(false, out)?;
                Ok(d.done)
            }
            Decoder::Sse(d) => {
                d.lines.push(bytes);
                d.drain(false, out)?;
                Ok(d.done)
            }
        }
    }

    /// The (prompt, completion) token counts the stream reported, if it did.
    pub(crate) fn usage(&self) -> Option<(u64, u64)> {
        match self {
            Decoder::Ndjson(d) => d.usage,
            Decoder::Sse(d) => d.usage,
        }
    }

    /// Signals end of body; fails with `MalformedStream` if the end marker never came.
    pub(crate) fn finish(&mut self, out: &mut VecDeque<String>) -> Result<(), LlmError> {
        let (done, marker) = match self {
            Decoder::Ndjson(d) => {
                d.drain(true, out)?;
                (d.done, "\"done\": true")
            }
            Decoder::Sse(d) => {
                d.drain(true, out)?;
                (d.done, "data: [DONE]")
            }
        };
        if done {
            Ok(())
        } else {
            Err(LlmError::MalformedStream(format!(
                "stream ended without {marker}"
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `body` split at every possible pair of cut points and checks the tokens.
    fn all_splits(provider: Provider, body: &[u8], expected: &[&str]) {
        for i in 0..=body.len() {
            for j in i..=body.len() {
                let mut d = Decoder::for_provider(provider);
                let mut out = VecDeque::new();
                let mut done = false;
                for piece in [&body[..i], &body[i..j], &body[j..]] {
                    done = d.feed(piece, &mut out).unwrap();
                }
                if !done {
                    d.finish(&mut out).unwrap();
                }
                let got: Vec<String> = out.into_iter().collect();
                assert_eq!(got, expected, "split at {i},{j}");
            }
        }
    }

    #[test]
    fn ndjson_any_split() {
        let body = "{\"message\":{\"role\":\"assistant\",\"content\":\"こん\"},\"done\":false}\n\
                    {\"message\":{\"content\":\"にちは \"},\"done\":false}\r\n\n\
                    {\"message\":{\"content\":\"\"},\"done\":true}\n";
        all_splits(Provider::Ollama, body.as_bytes(), &["こん", "にちは "]);
    }

    #[test]
    fn sse_any_split_with_crlf_comments_and_multiline() {
        let body = ": ping\r\n\r\n\
                    data: {\"choices\":[{\"delta\":{\"content\":\"He\"}}]}\r\n\r\n\
                    event: message\n\
                    data: {\"choices\":[{\"delta\":\n\
                    data: {\"content\":\"llo\"}}]}\n\n\
                    data:{\"choices\":[{\"delta\":{\"content\":\" 世界\"}}]}\r\r\
                    data: {\"choices\":[],\"usage\":{}}\n\n\
                    data: [DONE]\n\n";
        all_splits(Provider::Openai, body.as_bytes(), &["He", "llo", " 世界"]);
    }

    #[test]
    fn missing_end_marker_is_malformed() {
        for (p, body) in [
            (
                Provider::Ollama,
                "{\"message\":{\"content\":\"a\"},\"done\":false}\n",
            ),
            (
                Provider::Openai,
                "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n",
            ),
        ] {
            let mut d = Decoder::for_provider(p);
            let mut out = VecDeque::new();
            assert!(!d.feed(body.as_bytes(), &mut out).unwrap());
            assert!(matches!(
                d.finish(&mut out),
                Err(LlmError::MalformedStream(_))
            ));
            assert_eq!(out.len(), 1);
        }
    }

    #[test]
    fn done_without_trailing_newline_is_accepted() {
        let mut d = Decoder::for_provider(Provider::Ollama);
        let mut out = VecDeque::new();
        d.feed(b"{\"message\":{\"content\":\"a\"},\"done\":true}", &mut out)
            .unwrap();
        assert!(d.finish(&mut out).is_ok());
        let mut d = Decoder::for_provider(Provider::Openai);
        d.feed(b"data: [DONE]", &mut out).unwrap();
        assert!(d.finish(&mut out).is_ok());
    }

    #[test]
    fn garbage_and_in_band_errors() {
        let mut out = VecDeque::new();
        let mut d = Decoder::for_provider(Provider::Ollama);
        assert!(matches!(
            d.feed(b"{oops\n", &mut out),
            Err(LlmError::MalformedStream(_))
        ));
        let mut d = Decoder::for_provider(Provider::Ollama);
        assert!(matches!(
            d.feed(b"{\"error\":\"out of memory\"}\n", &mut out),
            Err(LlmError::MalformedStream(m)) if m.contains("out of memory")
        ));
        let mut d = Decoder::for_provider(Provider::Openai);
        assert!(matches!(
            d.feed(b"data: nope\n\n", &mut out),
            Err(LlmError::MalformedStream(_))
        ));
        let mut d = Decoder::for_provider(Provider::Openai);
        assert!(matches!(
            d.feed(b"data: {\"error\":{\"message\":\"overloaded\"}}\n\n", &mut out),
            Err(LlmError::MalformedStream(m)) if m.contains("overloaded")
        ));
        let mut d = Decoder::for_provider(Provider::Ollama);
        assert!(d.feed(&[0xff, 0xfe, b'\n'], &mut out).is_err());
    }

    #[test]
    fn bytes_after_end_marker_are_ignored() {
        let mut out = VecDeque::new();
        let mut d = Decoder::for_provider(Provider::Openai);
        assert!(d.feed(b"data: [DONE]\n\ngarbage\n\n", &mut out).unwrap());
        assert!(d.finish(&mut out).is_ok());
    }
}

/// Fuzzed model output on the wire: both streaming formats cut into arbitrary chunks, and
/// the non-streaming bodies (`PROPTEST_CASES` inputs each, see `ghost_testkit::fuzz`).
#[cfg(test)]
mod fuzz {
    use proptest::prelude::*;

    use super::*;
    use crate::wire::{ollama_reply, openai_reply};
    use ghost_testkit::fuzz::{bytes, clear_error, config};

    const NDJSON: &[&str] = &[
        "{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"こん\"},\"done\":false}\n{\"message\":{\"content\":\"にちは\"},\"done\":false}\n{\"message\":{\"content\":\"\"},\"done\":true,\"eval_count\":12}\n",
        "{\"error\":\"model not found\"}\n",
    ];
    const SSE: &[&str] = &[
        ": ping\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"He\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"llo\"},\"finish_reason\":null}]}\n\ndata: [DONE]\n\n",
        "data: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\"}}\n\n",
    ];
    const REPLIES: &[&str] = &[
        "{\"model\":\"m\",\"message\":{\"role\":\"assistant\",\"content\":\"hi\"},\"done\":true}",
        "{\"id\":\"c1\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}",
    ];

    /// Feeds `body` in pieces cut at `cuts`; the decoder's result.
    fn decode(
        provider: Provider,
        body: &[u8],
        cuts: &[prop::sample::Index],
    ) -> Result<(), LlmError> {
        let mut points: Vec<usize> = cuts.iter().map(|c| c.index(body.len() + 1)).collect();
        points.sort_unstable();
        let mut d = Decoder::for_provider(provider);
        let mut out = VecDeque::new();
        let mut from = 0;
        for to in points.into_iter().chain([body.len()]) {
            if d.feed(&body[from..to], &mut out)? {
                return Ok(());
            }
            from = to;
        }
        d.finish(&mut out)
    }

    proptest! {
        #![proptest_config(config())]

        #[test]
        fn ollama_stream(body in bytes(NDJSON), cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..6)) {
            clear_error(&decode(Provider::Ollama, &body, &cuts))?;
        }

        #[test]
        fn openai_stream(body in bytes(SSE), cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..6)) {
            clear_error(&decode(Provider::Openai, &body, &cuts))?;
        }

        #[test]
        fn whole_replies(body in bytes(REPLIES)) {
            if let Ok(v) = serde_json::from_slice::<Value>(&body) {
                clear_error(&ollama_reply(&v))?;
                clear_error(&openai_reply(&v))?;
            }
        }
    }
}

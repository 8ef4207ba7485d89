//! What the fake server answers to one request.

use std::time::Duration;

/// How a scripted reply goes wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Answer with this HTTP status and body instead of a reply.
    Status(u16, String),
    /// Send the chunks, then a line/event that is not valid JSON.
    MalformedMidStream,
    /// Never answer (until the server shuts down).
    Hang,
    /// Send the chunks, then end the body without `done: true` / `data: [DONE]`.
    CloseMidStream,
}

/// One scripted answer: the reply split into streamed chunks, pacing and an optional failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Script {
    /// Token deltas, in order; their concatenation is the reply text.
    pub chunks: Vec<String>,
    /// Delay before the response starts (headers included).
    pub first_delay: Duration,
    /// Delay between consecutive streamed frames (non-streaming: added once per chunk).
    pub chunk_delay: Duration,
    /// How the answer fails, if it does.
    pub failure: Option<Failure>,
    /// The token counts a non-streamed answer reports (`prompt`, `completion`); 0 and 0
    /// when unset.
    pub usage: Option<(u64, u64)>,
}

impl Default for Script {
    fn default() -> Self {
        Script::reply("ok")
    }
}

impl Script {
    /// A reply split into token-like chunks: each word with its trailing whitespace; CJK
    /// characters one per chunk.
    pub fn reply(text: &str) -> Script {
        Script::from_chunks(split_tokens(text))
    }

    /// A reply with exactly these chunks.
    pub fn chunks(v: Vec<&str>) -> Script {
        Script::from_chunks(v.into_iter().map(str::to_string).collect())
    }

    /// Sets the delay before the response starts.
    pub fn with_delay(mut self, first: Duration) -> Script {
        self.first_delay = first;
        self
    }

    /// Sets the delay between streamed frames.
    pub fn with_chunk_delay(mut self, d: Duration) -> Script {
        self.chunk_delay = d;
        self
    }

    /// Sets the token counts a non-streamed answer reports.
    pub fn with_usage(mut self, prompt: u64, completion: u64) -> Script {
        self.usage = Some((prompt, completion));
        self
    }

    /// Keeps the chunks but makes the answer fail with `f` (e.g. chunks then garbage).
    pub fn with_failure(mut self, f: Failure) -> Script {
        self.failure = Some(f);
        self
    }

    /// A failing answer. Mid-stream failures come with two chunks (`"partial "`, `"reply"`)
    /// so that some tokens arrive before the failure.
    pub fn failing(f: Failure) -> Script {
        let chunks = match f {
            Failure::MalformedMidStream | Failure::CloseMidStream => {
                vec!["partial ".to_string(), "reply".to_string()]
            }
            Failure::Status(..) | Failure::Hang => Vec::new(),
        };
        Script::from_chunks(chunks).with_failure(f)
    }

    /// The whole reply text.
    pub fn text(&self) -> String {
        self.chunks.concat()
    }

    fn from_chunks(chunks: Vec<String>) -> Script {
        Script {
            chunks,
            first_delay: Duration::ZERO,
            chunk_delay: Duration::ZERO,
            failure: None,
            usage: None,
        }
    }
}

/// Scripts without a single space between characters (Japanese, Chinese, Korean) have no
/// words, so each of their characters is a token of its own.
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3000..=0x30FF      // CJK punctuation, hiragana, katakana
        | 0x3400..=0x4DBF    // CJK extension A
        | 0x4E00..=0x9FFF    // CJK unified ideographs
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0xF900..=0xFAFF    // CJK compatibility ideographs
        | 0xFF00..=0xFFEF    // half/full-width forms
        | 0x20000..=0x2FFFF) // CJK extensions B+
}

/// Splits text into chunks whose concatenation is the text again.
fn split_tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut has_content = false;
    // The current token is complete: the next non-whitespace character starts a new one.
    let mut closed = false;
    for c in text.chars() {
        if c.is_whitespace() {
            cur.push(c);
            closed |= has_content;
        } else {
            if closed || (has_content && is_cjk(c)) {
                out.push(std::mem::take(&mut cur));
            }
            cur.push(c);
            has_content = true;
            closed = is_cjk(c);
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_keep_trailing_whitespace() {
        assert_eq!(
            Script::reply("Hello  big\nworld ").chunks,
            vec!["Hello  ", "big\n", "world "]
        );
        assert_eq!(Script::reply(" lead").chunks, vec![" lead"]);
        assert!(Script::reply("").chunks.is_empty());
    }

    #[test]
    fn cjk_is_split_per_character() {
        assert_eq!(
            Script::reply("こんにちは、GPT です").chunks,
            vec!["こ", "ん", "に", "ち", "は", "、", "GPT ", "で", "す"]
        );
        let text = "混在 text と日本語。 ok";
        assert_eq!(Script::reply(text).text(), text);
    }

    #[test]
    fn builders_set_fields() {
        let s = Script::chunks(vec!["a", "b"])
            .with_delay(Duration::from_millis(5))
            .with_chunk_delay(Duration::from_millis(7))
            .with_failure(Failure::CloseMidStream);
        assert_eq!(s.chunks, vec!["a", "b"]);
        assert_eq!(s.first_delay, Duration::from_millis(5));
        assert_eq!(s.chunk_delay, Duration::from_millis(7));
        assert_eq!(s.failure, Some(Failure::CloseMidStream));
        assert_eq!(Script::reply("x").with_usage(3, 4).usage, Some((3, 4)));
        assert_eq!(Script::failing(Failure::MalformedMidStream).chunks.len(), 2);
        assert!(Script::failing(Failure::Hang).chunks.is_empty());
        assert_eq!(Script::default().text(), "ok");
    }
}

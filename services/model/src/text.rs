//! Turning generated token bytes into text deltas: a token may end inside a UTF-8 sequence,
//! and a stop sequence may span tokens, so text is held back until it can no longer be
//! the start of either.

/// Incremental assembler of one reply.
#[derive(Debug, Default)]
pub struct ReplyText {
    /// Bytes of an unfinished UTF-8 sequence.
    partial: Vec<u8>,
    /// Decoded text not yet emitted (it could still be the start of a stop sequence).
    held: String,
    stops: Vec<String>,
    stopped: bool,
}

/// What one pushed piece produced.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Pushed {
    /// Text safe to emit now (may be empty).
    pub text: String,
    /// A stop sequence was completed: nothing after it is part of the reply.
    pub stopped: bool,
}

impl ReplyText {
    /// An assembler stopping at any of `stops` (empty strings are ignored).
    pub fn new(stops: Vec<String>) -> Self {
        Self {
            stops: stops.into_iter().filter(|s| !s.is_empty()).collect(),
            ..Self::default()
        }
    }

    /// Adds the bytes of one token.
    pub fn push(&mut self, bytes: &[u8]) -> Pushed {
        if self.stopped {
            return Pushed {
                text: String::new(),
                stopped: true,
            };
        }
        self.partial.extend_from_slice(bytes);
        let valid = match std::str::from_utf8(&self.partial) {
            Ok(_) => self.partial.len(),
            // An invalid sequence (not merely unfinished) would stall the stream: replace it.
            Err(e) if e.error_len().is_some() => {
                let lossy = String::from_utf8_lossy(&self.partial).into_owned();
                self.partial.clear();
                self.held.push_str(&lossy);
                return self.release();
            }
            Err(e) => e.valid_up_to(),
        };
        let rest = self.partial.split_off(valid);
        let done = std::mem::replace(&mut self.partial, rest);
        self.held
            .push_str(std::str::from_utf8(&done).unwrap_or_default());
        self.release()
    }

    /// The rest at the end of generation (an unfinished UTF-8 sequence becomes U+FFFD).
    pub fn finish(&mut self) -> String {
        if self.stopped {
            return String::new();
        }
        let mut out = std::mem::take(&mut self.held);
        if !self.partial.is_empty() {
            out.push_str(&String::from_utf8_lossy(&self.partial));
            self.partial.clear();
        }
        out
    }

    /// Emits what can no longer turn into a stop sequence.
    fn release(&mut self) -> Pushed {
        if let Some(at) = self
            .stops
            .iter()
            .filter_map(|s| self.held.find(s.as_str()))
            .min()
        {
            self.held.truncate(at);
            self.stopped = true;
            return Pushed {
                text: std::mem::take(&mut self.held),
                stopped: true,
            };
        }
        // Keep the longest suffix that is a proper prefix of some stop sequence.
        let keep = self
            .stops
            .iter()
            .map(|s| longest_suffix_prefix(&self.held, s))
            .max()
            .unwrap_or(0);
        let cut = self.held.len() - keep;
        let rest = self.held.split_off(cut);
        Pushed {
            text: std::mem::replace(&mut self.held, rest),
            stopped: false,
        }
    }
}

/// Length in bytes of the longest suffix of `text` that is a proper prefix of `stop`.
fn longest_suffix_prefix(text: &str, stop: &str) -> usize {
    let max = stop.len().saturating_sub(1).min(text.len());
    (1..=max)
        .rev()
        .find(|&n| {
            text.is_char_boundary(text.len() - n)
                && stop.is_char_boundary(n)
                && stop.starts_with(&text[text.len() - n..])
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(stops: &[&str], pieces: &[&[u8]]) -> (String, bool) {
        let mut r = ReplyText::new(stops.iter().map(|s| s.to_string()).collect());
        let mut out = String::new();
        let mut stopped = false;
        for p in pieces {
            let pushed = r.push(p);
            out.push_str(&pushed.text);
            if pushed.stopped {
                stopped = true;
                break;
            }
        }
        out.push_str(&r.finish());
        (out, stopped)
    }

    #[test]
    fn multibyte_characters_split_across_tokens_come_out_whole() {
        let bytes = "こんにちは".as_bytes();
        let pieces: Vec<&[u8]> = bytes.chunks(2).collect();
        let mut r = ReplyText::new(Vec::new());
        for p in &pieces {
            let text = r.push(p).text;
            assert!(text.chars().all(|c| c != '\u{fffd}'), "{text:?}");
        }
        assert_eq!(run(&[], &pieces), ("こんにちは".into(), false));
    }

    #[test]
    fn a_stop_sequence_across_tokens_ends_the_reply_and_is_not_emitted() {
        assert_eq!(
            run(&["\nUser:"], &[b"Hi", b" there\n", b"Us", b"er: more"]),
            ("Hi there".into(), true)
        );
        // A near miss is released once it can no longer match.
        assert_eq!(
            run(&["\nUser:"], &[b"a\nUs", b"ually fine"]),
            ("a\nUsually fine".into(), false)
        );
    }

    #[test]
    fn held_text_is_released_at_the_end_and_invalid_bytes_do_not_stall() {
        assert_eq!(run(&["END"], &[b"the E", b"N"]), ("the EN".into(), false));
        assert_eq!(run(&[], &[b"a\xff", b"b"]), ("a\u{fffd}b".into(), false));
        assert_eq!(run(&[], &[b"a\xe3\x81"]), ("a\u{fffd}".into(), false));
    }
}

//! Streaming filter: emits reply tokens as they arrive and swallows the trailer.

use super::trailer::DEFAULT_TRAILER_MARKER;

/// Filters a token stream so that nothing from the marker on ever reaches the user.
///
/// Text is held back only while it could still turn out to be the start of the marker (the
/// longest suffix of the pending text that is a prefix of the marker) or trailing whitespace
/// (which is dropped if the marker or the end of the stream follows). Invariant, for any
/// chunking: the concatenation of all [`push`](Self::push) results followed by
/// [`TrailerOutcome::tail`] equals [`TrailerOutcome::reply_text`], which equals
/// [`split_trailer`](super::split_trailer)`(whole_text, marker).0`.
#[derive(Debug, Clone)]
pub struct TrailerStreamFilter {
    /// The marker; empty means "never matches" (as in `split_trailer`).
    marker: String,
    /// Received reply text not emitted yet: trailing whitespace and/or a possible marker start.
    pending: String,
    /// Everything already emitted, so `finish` can return the whole reply.
    emitted: String,
    /// The raw text after the marker, once the marker has been seen.
    trailer: Option<String>,
}

/// What a finished stream consisted of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrailerOutcome {
    /// The reply the user sees (text before the first marker, trailing whitespace removed).
    pub reply_text: String,
    /// Raw text after the marker, `None` if the marker never appeared.
    pub trailer_raw: Option<String>,
    /// Part of `reply_text` that was held back and not yet emitted by `push` (a trailing
    /// marker-like fragment such as `"<<<COCORO"` that the stream ended on); emit it last.
    /// Empty whenever the marker appeared.
    pub tail: String,
}

impl Default for TrailerStreamFilter {
    /// A filter for [`DEFAULT_TRAILER_MARKER`].
    fn default() -> Self {
        Self::new(DEFAULT_TRAILER_MARKER)
    }
}

impl TrailerStreamFilter {
    /// Creates a filter for `marker` (an empty marker never matches).
    pub fn new(marker: &str) -> Self {
        TrailerStreamFilter {
            marker: marker.to_owned(),
            pending: String::new(),
            emitted: String::new(),
            trailer: None,
        }
    }

    /// Whether the marker has been seen (everything pushed from now on is trailer).
    pub fn in_trailer(&self) -> bool {
        self.trailer.is_some()
    }

    /// Feeds one chunk and returns the text that is safe to show now (possibly empty).
    pub fn push(&mut self, chunk: &str) -> String {
        if let Some(trailer) = self.trailer.as_mut() {
            trailer.push_str(chunk);
            return String::new();
        }
        self.pending.push_str(chunk);

        if !self.marker.is_empty() {
            if let Some((before, after)) = self.pending.split_once(self.marker.as_str()) {
                // Whitespace right before the marker line never reaches the user.
                let out = before.trim_end().to_owned();
                self.trailer = Some(after.to_owned());
                self.pending.clear();
                self.emitted.push_str(&out);
                return out;
            }
        }

        let keep_from = partial_marker_start(&self.pending, &self.marker);
        let safe = self
            .pending
            .get(..keep_from)
            .map_or(0, |head| head.trim_end().len());
        let out: String = self.pending.drain(..safe).collect();
        self.emitted.push_str(&out);
        out
    }

    /// Ends the stream: the whole reply, the raw trailer and any held-back reply text.
    pub fn finish(self) -> TrailerOutcome {
        let tail = match self.trailer {
            Some(_) => String::new(),
            // Held back = whitespace and/or an unfinished marker prefix; only the latter (with
            // the whitespace before it) is reply text, trailing whitespace is dropped.
            None => self.pending.trim_end().to_owned(),
        };
        let mut reply_text = self.emitted;
        reply_text.push_str(&tail);
        TrailerOutcome {
            reply_text,
            trailer_raw: self.trailer,
            tail,
        }
    }
}

/// Byte offset of the longest suffix of `text` that is a proper prefix of `marker`
/// (`text.len()` if none): from there on the text could still become the marker.
fn partial_marker_start(text: &str, marker: &str) -> usize {
    let first_candidate = text.len().saturating_sub(marker.len().saturating_sub(1));
    (first_candidate..text.len())
        .find(|&start| {
            // A suffix starting inside a UTF-8 sequence cannot equal a prefix of a valid marker;
            // `get` also refuses such offsets, so the check is both correct and panic-free.
            text.get(start..)
                .is_some_and(|suffix| marker.starts_with(suffix))
        })
        .unwrap_or(text.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::affect::split_trailer;

    const M: &str = DEFAULT_TRAILER_MARKER;

    fn feed(filter: &mut TrailerStreamFilter, chunks: &[&str]) -> String {
        chunks.iter().map(|c| filter.push(c)).collect()
    }

    #[test]
    fn partial_marker_start_finds_longest_marker_prefix_suffix() {
        assert_eq!(partial_marker_start("abc<<<CO", M), 3);
        assert_eq!(partial_marker_start("abc<", M), 3);
        assert_eq!(partial_marker_start("abc", M), 3);
        assert_eq!(partial_marker_start("a<<x", M), 4);
        assert_eq!(partial_marker_start("", M), 0);
        // Multibyte text before and inside a custom non-ASCII marker.
        assert_eq!(partial_marker_start("あい《感", "《感情》"), 6);
        assert_eq!(partial_marker_start("あい", ""), 6);
    }

    #[test]
    fn emits_reply_and_captures_trailer_in_one_chunk() {
        let mut f = TrailerStreamFilter::new(M);
        let full = format!("やあ。\n{M}\n{{\"x\":1}}");
        let out = f.push(&full);
        assert_eq!(out, "やあ。");
        assert!(f.in_trailer());
        assert_eq!(f.push("more"), "");
        let o = f.finish();
        assert_eq!(o.reply_text, "やあ。");
        assert_eq!(o.trailer_raw.as_deref(), Some("\n{\"x\":1}more"));
        assert_eq!(o.tail, "");
    }

    #[test]
    fn holds_back_marker_prefix_until_resolved() {
        let mut f = TrailerStreamFilter::new(M);
        assert_eq!(f.push("Hi <<<COCORO"), "Hi");
        // Not the marker after all: the held-back text is released.
        assert_eq!(f.push(" is a name"), " <<<COCORO is a name");
        assert_eq!(f.finish().reply_text, "Hi <<<COCORO is a name");
    }

    #[test]
    fn holds_back_trailing_whitespace_until_more_text() {
        let mut f = TrailerStreamFilter::new(M);
        assert_eq!(f.push("line one\n"), "line one");
        assert_eq!(f.push("\nline two  "), "\n\nline two");
        assert_eq!(f.push("\n"), "");
        let o = f.finish();
        assert_eq!(o.reply_text, "line one\n\nline two");
        assert_eq!(o.tail, "");
        assert_eq!(o.trailer_raw, None);
    }

    #[test]
    fn stream_ending_on_marker_prefix_returns_it_as_tail() {
        let mut f = TrailerStreamFilter::new(M);
        let emitted = feed(&mut f, &["end ", "<<<COC"]);
        assert_eq!(emitted, "end");
        let o = f.finish();
        assert_eq!(o.tail, " <<<COC");
        assert_eq!(o.reply_text, "end <<<COC");
        assert_eq!(o.reply_text, split_trailer("end <<<COC", M).0);
    }

    #[test]
    fn empty_marker_passes_everything_through() {
        let mut f = TrailerStreamFilter::new("");
        assert_eq!(feed(&mut f, &["a", "b "]), "ab");
        assert_eq!(f.finish().reply_text, "ab");
    }
}

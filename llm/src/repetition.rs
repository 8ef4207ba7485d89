//! A model caught in a loop: small models, SmolLM2 above all, end a reply by writing the same
//! sentence (or the same few words) again and again until their token budget runs out. The
//! guard watches a reply's visible text as it grows and says where it started repeating, so
//! the caller ends the call there and keeps one copy, instead of streaming the loop to the
//! user and storing it.
//!
//! A loop is the text's end being periodic: its last characters equal those one period
//! earlier, for at least [`MIN_COPIES`] copies of a unit with a letter in it (three for a
//! short unit, two for a sentence-long one) and [`MIN_LOOP_CHARS`] characters in all. Lists,
//! tables and a repeated word or two do not qualify.

/// Copies of a short unit (under [`SENTENCE_CHARS`]) that make a loop.
const MIN_COPIES: usize = 3;
/// From this long a unit counts as a sentence: written twice in a row, it is a loop.
const SENTENCE_CHARS: usize = 40;
/// The repeated stretch must be at least this long (so "ha ha ha" is laughter, not a loop).
const MIN_LOOP_CHARS: usize = 30;
/// Longest unit looked for, in characters.
const MAX_PERIOD: usize = 300;
/// Characters of new text between two looks (a look costs up to `MAX_PERIOD` passes over
/// the text's end).
const CHECK_EVERY: usize = 8;

/// Watches a growing text for a loop.
#[derive(Debug, Default, Clone)]
pub struct RepetitionGuard {
    text: String,
    /// Characters added since the last look.
    unchecked: usize,
}

impl RepetitionGuard {
    /// Adds `delta`; `true` once the text ends in a loop (then [`RepetitionGuard::kept`] is
    /// the text with one copy of the repeated unit).
    pub fn push(&mut self, delta: &str) -> bool {
        self.text.push_str(delta);
        self.unchecked += delta.chars().count();
        if self.unchecked < CHECK_EVERY {
            return false;
        }
        self.unchecked = 0;
        loop_start(&self.text).is_some()
    }

    /// Everything pushed so far.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The text without its loop's extra copies (all of it when there is no loop), trailing
    /// whitespace removed.
    pub fn kept(&self) -> &str {
        let end = loop_start(&self.text).unwrap_or(self.text.len());
        self.text[..end].trim_end()
    }
}

/// Where the extra copies of a loop at the end of `text` begin (a byte offset: the text up
/// to it holds one copy), or `None` when the text does not end in a loop.
pub fn loop_start(text: &str) -> Option<usize> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let n = chars.len();
    let max_period = MAX_PERIOD.min(n / 2);
    for period in 1..=max_period {
        // How far back the text stays periodic with this period.
        let mut run = 0;
        while run + period < n && chars[n - 1 - run].1 == chars[n - 1 - run - period].1 {
            run += 1;
        }
        let span = run + period;
        let copies = span / period;
        let needed = if period >= SENTENCE_CHARS {
            2
        } else {
            MIN_COPIES
        };
        if copies < needed || span < MIN_LOOP_CHARS {
            continue;
        }
        let start = n - span;
        let unit = &chars[start..start + period];
        if !unit.iter().any(|(_, c)| c.is_alphabetic()) {
            continue;
        }
        // Keep the first copy; a partial copy at the very end goes with the rest. Where the
        // copies begin is ambiguous by a rotation: the cut moves on to the next word break
        // (within one period), so the kept copy ends as the model ended it.
        let mut cut = start + period;
        let at_break = |i: usize| is_break(chars[i - 1].1);
        if !at_break(cut) {
            if let Some(next) = (cut + 1..(cut + period).min(n)).find(|&i| at_break(i)) {
                cut = next;
            }
        }
        return Some(chars[cut].0);
    }
    None
}

/// Whether a copy may end after `c`: a space or a sentence's end.
fn is_break(c: char) -> bool {
    c.is_whitespace() || matches!(c, '。' | '！' | '？' | '、')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(text: &str) -> &str {
        match loop_start(text) {
            Some(i) => &text[..i],
            None => text,
        }
    }

    #[test]
    fn a_sentence_written_twice_in_a_row_is_a_loop_kept_once() {
        let s = "Nice to meet you! I am here for you whenever you need me. ";
        let looped = format!("Hello. {s}{s}Nice to");
        assert_eq!(kept(&looped).trim_end(), format!("Hello. {s}").trim_end());
    }

    #[test]
    fn short_units_need_three_copies_and_thirty_characters() {
        assert_eq!(loop_start("ha ha ha ha"), None, "laughter");
        let words = "the cat, the cat, the cat, the cat, ";
        assert!(loop_start(words).is_some());
        assert_eq!(kept(words), "the cat, ");
        assert_eq!(loop_start("the cat, the cat, "), None, "two short copies");
        let japanese = "そうですね。".repeat(6);
        assert_eq!(kept(&japanese), "そうですね。");
    }

    #[test]
    fn text_that_does_not_repeat_is_left_alone() {
        for text in [
            "",
            "I live in Osaka and I work as a nurse.",
            "1. tea\n2. coffee\n3. water\n4. juice\n",
            "|---|---|---|---|---|---|---|---|---|---|",
            "..............................................",
        ] {
            assert_eq!(loop_start(text), None, "{text:?}");
        }
    }

    #[test]
    fn the_guard_finds_a_loop_as_it_streams_and_keeps_one_copy() {
        let mut guard = RepetitionGuard::default();
        let mut looped = false;
        for token in "I love tea. I love tea. I love tea. I love tea. I love".split_inclusive(' ') {
            if guard.push(token) {
                looped = true;
                break;
            }
        }
        assert!(looped);
        assert_eq!(guard.kept(), "I love tea.");
    }
}

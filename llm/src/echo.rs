//! A reply that starts copying its prompt's data: a small model, having read a fenced block
//! (`<<<MEMORY dpjc…`, see [`crate::fence`]), sometimes writes one itself, going on with the
//! memories, the summary or the task result as if they were its words. The guard watches the
//! visible text as it streams and ends the reply where a block's opening begins, so that what
//! the persona was only told never reaches the user as something it says.
//!
//! A block's opening is `<<<`, an upper-case label and a space (so the affect marker,
//! `<<<COCORO_GHOST_…_v1>>>`, is none: a stage line's trailer is split off later). Text that
//! could still become one (a trailing `<`, `<<`, `<<<` or `<<<LABEL`, and the whitespace
//! before it) is held back until the next piece decides it.

/// What opens a fenced block, before its label.
const OPENING: &str = "<<<";

/// Watches a reply's visible text for the opening of a fenced block.
#[derive(Debug, Default, Clone)]
pub struct FenceEchoGuard {
    /// Text received but not yet released: a possible opening at its end.
    pending: String,
    /// Whether an opening was seen: the reply ends before it.
    stopped: bool,
}

impl FenceEchoGuard {
    /// Adds `shown` (text that would be shown); returns what may be shown now. Once it
    /// returns with [`FenceEchoGuard::stopped`] true, the reply ends: nothing more is taken.
    pub fn push(&mut self, shown: &str) -> String {
        if self.stopped {
            return String::new();
        }
        self.pending.push_str(shown);
        if let Some(at) = opening_at(&self.pending) {
            self.stopped = true;
            let out = self.pending[..at].trim_end().to_owned();
            self.pending.clear();
            return out;
        }
        let keep_from = undecided_from(&self.pending);
        self.pending.drain(..keep_from).collect()
    }

    /// Whether the reply began a fenced block and was ended before it.
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// The text held back when the stream ended (it never became an opening).
    pub fn finish(self) -> String {
        self.pending
    }
}

/// Whether `rest` (what follows a `<<<`) is, or may still become, a block's label and the
/// space after it: `Some(true)` an opening, `Some(false)` not one, `None` undecided yet.
/// The affect marker (`<<<COCORO_GHOST_PARTNER_AFFECT_JSON_v1>>>`) is no opening: no space
/// follows its upper-case start.
fn label_then_space(rest: &str) -> Option<bool> {
    let mut chars = rest.chars();
    match chars.next() {
        None => return None,
        Some(c) if c.is_ascii_uppercase() => {}
        Some(_) => return Some(false),
    }
    for c in chars {
        match c {
            ' ' => return Some(true),
            c if c.is_ascii_uppercase() || c == '_' => {}
            _ => return Some(false),
        }
    }
    None
}

/// Where in `text` a block's opening (`<<<`, an upper-case label, a space) starts.
fn opening_at(text: &str) -> Option<usize> {
    text.match_indices(OPENING)
        .map(|(at, _)| at)
        .find(|&at| label_then_space(&text[at + OPENING.len()..]) == Some(true))
}

/// Byte offset from which `text` could still become an opening, or the whitespace before
/// one (which is not shown when the reply ends there): a trailing run of up to three `<`,
/// or a `<<<` and a label not yet followed by anything else, and the whitespace before it.
fn undecided_from(text: &str) -> usize {
    let undecided = text
        .rfind(OPENING)
        .filter(|&at| label_then_space(&text[at + OPENING.len()..]).is_none())
        .unwrap_or_else(|| {
            let angles = text.len() - text.trim_end_matches('<').len();
            text.len() - angles.min(OPENING.len())
        });
    text[..undecided].trim_end().len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(chunks: &[&str]) -> (String, bool) {
        let mut guard = FenceEchoGuard::default();
        let mut out: String = chunks.iter().map(|c| guard.push(c)).collect();
        let stopped = guard.stopped();
        out.push_str(&guard.finish());
        (out, stopped)
    }

    #[test]
    fn a_reply_that_opens_a_block_ends_before_it_wherever_the_chunks_split() {
        let text = "Sure, I remember.\n\n<<<MEMORY abcdefghijklmnop\n- the user lives in Kyoto";
        for split in 0..=text.len() {
            if !text.is_char_boundary(split) {
                continue;
            }
            let (out, stopped) = run(&[&text[..split], &text[split..]]);
            assert_eq!(out, "Sure, I remember.", "split at {split}");
            assert!(stopped, "split at {split}");
        }
        // Byte by byte.
        let chunks: Vec<String> = text.chars().map(String::from).collect();
        let chunks: Vec<&str> = chunks.iter().map(String::as_str).collect();
        assert_eq!(run(&chunks), ("Sure, I remember.".to_owned(), true));
    }

    #[test]
    fn angle_brackets_that_open_no_block_are_shown() {
        assert_eq!(
            run(&["a <<< b", " <<<x"]),
            ("a <<< b <<<x".to_owned(), false)
        );
        assert_eq!(
            run(&["1 << 2 and 3 <", "<"]),
            ("1 << 2 and 3 <<".to_owned(), false)
        );
        assert_eq!(run(&["<<<"]), ("<<<".to_owned(), false));
        assert_eq!(run(&["<<<ABC"]), ("<<<ABC".to_owned(), false));
    }

    #[test]
    fn the_affect_marker_is_no_block_and_passes_whole() {
        let marker = "<<<COCORO_GHOST_PARTNER_AFFECT_JSON_v1>>>";
        let text = format!("星がきれいだね。\n{marker}\n{{\"salience\":0.3}}");
        for split in (0..=text.len()).filter(|&i| text.is_char_boundary(i)) {
            let (out, stopped) = run(&[&text[..split], &text[split..]]);
            assert_eq!(
                (out.as_str(), stopped),
                (text.as_str(), false),
                "split at {split}"
            );
        }
    }

    #[test]
    fn nothing_is_taken_after_the_end() {
        let mut guard = FenceEchoGuard::default();
        assert_eq!(guard.push("Hi <<<SUMMARY x"), "Hi");
        assert_eq!(guard.push("more"), "");
        assert_eq!(guard.finish(), "");
    }
}

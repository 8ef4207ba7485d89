//! Splitting a reply into LINE text messages and per-call batches.

/// LINE's maximum text message length, counted in UTF-16 code units.
pub const MAX_TEXT_UNITS: usize = 5000;

/// LINE's maximum number of messages in one reply or push call.
pub const MAX_MESSAGES_PER_CALL: usize = 5;

/// Splits `text` into messages of at most `max_chars_per_message` UTF-16 code units (LINE's
/// unit of counting: 🍎 counts as 2) and groups them into batches of at most `max_messages`,
/// one batch per API call.
///
/// A split prefers the last newline that fits, then the last whitespace, and only then cuts
/// at a character boundary, so a character is never cut in half. The separator at a newline or
/// whitespace split is dropped; chunks that would be only whitespace are skipped. Zero limits
/// are treated as 1 so the function always makes progress. Empty or all-whitespace input
/// gives no batches.
pub fn split_text(
    text: &str,
    max_chars_per_message: usize,
    max_messages: usize,
) -> Vec<Vec<String>> {
    let max_units = max_chars_per_message.max(1);
    let per_batch = max_messages.max(1);
    let messages = split_messages(text, max_units);
    messages.chunks(per_batch).map(<[String]>::to_vec).collect()
}

/// Splits into messages without batching.
fn split_messages(text: &str, max_units: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let (chunk, next) = take_chunk(rest, max_units);
        let chunk = chunk.trim_end_matches('\r');
        if !chunk.trim().is_empty() {
            out.push(chunk.to_owned());
        }
        rest = next;
    }
    out
}

/// Returns the next chunk and the remainder (separator excluded from both).
fn take_chunk(text: &str, max_units: usize) -> (&str, &str) {
    let mut units = 0usize;
    let mut last_newline: Option<usize> = None;
    let mut last_space: Option<(usize, usize)> = None;
    for (byte, ch) in text.char_indices() {
        let w = ch.len_utf16();
        if units + w > max_units {
            // `byte` is the first character that no longer fits.
            if let Some(nl) = last_newline {
                return split_around(text, nl, 1);
            }
            if let Some((sp, len)) = last_space {
                return split_around(text, sp, len);
            }
            if byte == 0 {
                // A single character wider than the limit (limit 1, 🍎): emit it alone.
                return split_around(text, ch.len_utf8(), 0);
            }
            return split_around(text, byte, 0);
        }
        // A separator at position 0 would produce an empty chunk; it is not a useful split.
        if byte > 0 {
            if ch == '\n' {
                last_newline = Some(byte);
            } else if ch.is_whitespace() {
                last_space = Some((byte, ch.len_utf8()));
            }
        }
        units += w;
    }
    (text, "")
}

/// Splits `text` at byte `at`, dropping `sep_len` separator bytes after it.
fn split_around(text: &str, at: usize, sep_len: usize) -> (&str, &str) {
    let head = text.get(..at).unwrap_or(text);
    let tail = text.get(at + sep_len..).unwrap_or("");
    (head, tail)
}

/// Length of `text` in UTF-16 code units, the unit LINE limits text by.
pub fn utf16_len(text: &str) -> usize {
    text.chars().map(char::len_utf16).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flat(batches: &[Vec<String>]) -> Vec<String> {
        batches.iter().flatten().cloned().collect()
    }

    #[test]
    fn short_text_is_one_message_in_one_batch() {
        assert_eq!(
            split_text("hello", MAX_TEXT_UNITS, MAX_MESSAGES_PER_CALL),
            vec![vec!["hello".to_string()]]
        );
    }

    #[test]
    fn empty_and_blank_text_give_nothing() {
        assert!(split_text("", 10, 5).is_empty());
        assert!(split_text(" \n \n", 10, 5).is_empty());
    }

    #[test]
    fn every_message_fits_the_limit() {
        let text = "あいうえお".repeat(3000); // 15000 units
        let batches = split_text(&text, MAX_TEXT_UNITS, MAX_MESSAGES_PER_CALL);
        let msgs = flat(&batches);
        assert_eq!(msgs.len(), 3);
        assert!(msgs.iter().all(|m| utf16_len(m) <= MAX_TEXT_UNITS));
        assert_eq!(msgs.concat(), text);
    }

    #[test]
    fn batches_hold_at_most_max_messages() {
        let text = "x".repeat(12 * 10);
        let batches = split_text(&text, 10, 5);
        let sizes: Vec<usize> = batches.iter().map(Vec::len).collect();
        assert_eq!(sizes, vec![5, 5, 2]);
    }

    #[test]
    fn prefers_newline_boundary() {
        let batches = split_text("aaa bbb\ncc dd ee", 12, 5);
        assert_eq!(flat(&batches), vec!["aaa bbb", "cc dd ee"]);
    }

    #[test]
    fn prefers_last_newline_over_later_space() {
        let batches = split_text("a\nb c d e f g", 8, 5);
        assert_eq!(flat(&batches), vec!["a", "b c d e", "f g"]);
    }

    #[test]
    fn falls_back_to_whitespace_then_hard_cut() {
        assert_eq!(flat(&split_text("aaaa bbbb", 6, 5)), vec!["aaaa", "bbbb"]);
        assert_eq!(
            flat(&split_text("abcdefgh", 3, 5)),
            vec!["abc", "def", "gh"]
        );
    }

    #[test]
    fn counts_utf16_units_and_never_splits_a_character() {
        // Each 🍎 is 2 units: with a limit of 5, two fit (4 units), a third would be 6.
        let batches = split_text("🍎🍎🍎🍎🍎", 5, 5);
        assert_eq!(flat(&batches), vec!["🍎🍎", "🍎🍎", "🍎"]);
    }

    #[test]
    fn wide_char_over_tiny_limit_still_progresses() {
        assert_eq!(flat(&split_text("🍎a", 1, 5)), vec!["🍎", "a"]);
    }

    #[test]
    fn zero_limits_are_treated_as_one() {
        assert_eq!(
            split_text("ab", 0, 0),
            vec![vec!["a".to_string()], vec!["b".to_string()]]
        );
    }

    #[test]
    fn crlf_boundary_leaves_no_carriage_return() {
        assert_eq!(flat(&split_text("abc\r\ndef", 6, 5)), vec!["abc", "def"]);
    }

    #[test]
    fn exact_fit_is_not_split() {
        let text = "y".repeat(MAX_TEXT_UNITS);
        assert_eq!(split_text(&text, MAX_TEXT_UNITS, 5).len(), 1);
        assert_eq!(flat(&split_text(&text, MAX_TEXT_UNITS, 5)).len(), 1);
    }

    #[test]
    fn newline_heavy_text_keeps_content() {
        let line = "行".repeat(30);
        let text = vec![line.clone(); 400].join("\n"); // ~12 400 units
        let msgs = flat(&split_text(&text, MAX_TEXT_UNITS, 5));
        assert!(msgs.iter().all(|m| utf16_len(m) <= MAX_TEXT_UNITS));
        // Splits happened at newlines, so each message is whole lines.
        assert!(msgs.iter().all(|m| m.split('\n').all(|l| l == line)));
        assert_eq!(msgs.join("\n"), text);
    }
}

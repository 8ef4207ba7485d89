//! Finding the nomination in a reply: `<think>` removal and the last `[Next: …]` tag or
//! `{"next":"ID"}` fragment (seed 000 extraction regex, seed 003 JSON form).
//!
//! The scan is hand-written (a regex costs several microseconds per reply) but accepts exactly
//! what this pattern accepts with the `regex` crate's leftmost-first, non-overlapping
//! `find_iter` — the tests check the two against each other:
//!
//! ```text
//! (?i)\[next\s*:\s*([^\]]+)\]|\{[^{}]*?"next"\s*:\s*"((?:[^"\\]|\\.)*)"[^{}]*\}
//! ```
//!
//! The first branch is seed 000's `\[(?:Next|next|NEXT)\s*:\s*([^\]]+)\]` with the keyword
//! fully case-insensitive; the second is the string value of a `"next"` key inside a flat JSON
//! object (seed 003, also covering seed 000's planned `{"type":"control","next":"ID"}`).
//! Scanning both in one left-to-right pass gives "whichever form comes last wins".

use std::borrow::Cow;
use std::ops::Range;

use super::normalize::{width_normalize, width_normalize_aligned};

const THINK_OPEN: &[u8] = b"<think>";
const THINK_CLOSE: &[u8] = b"</think>";
const JSON_KEY: &[u8] = b"\"next\"";

/// Which of the two accepted forms carried the nomination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TagForm {
    /// `[Next: NAME]` (seed 000).
    Bracket,
    /// `{"next":"NAME"}` (seed 003).
    Json,
}

/// The last nomination found in a reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractedTag {
    /// The captured name as it stands in the width-normalized text (JSON escapes decoded).
    pub raw: String,
    /// The form it was written in.
    pub form: TagForm,
}

/// The part of a reply a tag may be read from: NFKC-normalized, with every `<think>…</think>`
/// block removed and everything after an unclosed `<think>` hidden.
pub fn visible_text(text: &str) -> Cow<'_, str> {
    match width_normalize(text) {
        Cow::Borrowed(b) => strip_think(b),
        Cow::Owned(o) => match strip_think(&o) {
            // No think block: hand back the normalized copy instead of copying it again.
            Cow::Borrowed(_) => Cow::Owned(o),
            Cow::Owned(stripped) => Cow::Owned(stripped),
        },
    }
}

/// The last tag of either form in the visible text of `text`, if any ("last wins").
pub fn extract_last_tag(text: &str) -> Option<ExtractedTag> {
    let visible = visible_text(text);
    last_tag_in(&visible)
}

/// One match of the tag pattern: the capture and where scanning resumes.
struct Found {
    capture: Range<usize>,
    form: TagForm,
    end: usize,
}

/// The last tag in text that is already visible (normalized, think-free).
pub(crate) fn last_tag_in(visible: &str) -> Option<ExtractedTag> {
    let mut last = None;
    scan_tags(visible, |_, found| last = Some(found));
    let found = last?;
    let captured = visible.get(found.capture).unwrap_or("");
    let raw = match found.form {
        TagForm::Bracket => captured.to_owned(),
        TagForm::Json => decode_json_string(captured),
    };
    Some(ExtractedTag {
        raw,
        form: found.form,
    })
}

/// Calls `each` with every tag's start and match in visible text, left to right,
/// non-overlapping (the pattern's `find_iter`); nothing is allocated.
fn scan_tags(visible: &str, mut each: impl FnMut(usize, Found)) {
    let bytes = visible.as_bytes();
    let mut closers = NextByte::new(bytes, ByteClass::One(b']'));
    let mut braces = NextByte::new(bytes, ByteClass::Two(b'{', b'}'));
    let mut openers = NextByte::new(bytes, ByteClass::Two(b'[', b'{'));
    let mut pos = 0;
    while let Some(p) = openers.find(pos) {
        let found = match bytes.get(p) {
            Some(b'[') => match_bracket(visible, p, &mut closers),
            _ => match_json(visible, p, &mut braces),
        };
        match found {
            Some(f) => {
                pos = f.end;
                each(p, f);
            }
            None => pos = p + 1,
        }
    }
}

/// The reply as written, without what the resolver does not read as speech: every
/// `<think>` block and every nomination tag, found exactly where [`visible_text`] and
/// [`extract_last_tag`] find them (any case, any width; an unclosed `<think>` hides the
/// rest) and cut out of the original text, so the rest keeps its width.
pub fn without_think_and_tags(text: &str) -> String {
    let thought_free = remove_found(text, think_ranges);
    remove_found(&thought_free, |visible| {
        let mut ranges = Vec::new();
        scan_tags(visible, |start, found| ranges.push(start..found.end));
        ranges
    })
    .into_owned()
}

/// `text` without the parts `find` locates in its width-normalized form; a part that
/// starts or ends inside a character sequence normalized as a whole takes all of it.
fn remove_found(text: &str, find: impl Fn(&str) -> Vec<Range<usize>>) -> Cow<'_, str> {
    let ranges = find(&width_normalize(text));
    if ranges.is_empty() {
        return Cow::Borrowed(text);
    }
    let (_, align) = width_normalize_aligned(text);
    let mut out = String::with_capacity(text.len());
    let mut kept_from = 0;
    for r in ranges {
        let before = align.partition_point(|&(n, _)| n <= r.start);
        let start = before
            .checked_sub(1)
            .and_then(|i| align.get(i))
            .map_or(0, |p| p.1);
        let after = align.partition_point(|&(n, _)| n < r.end);
        let end = align.get(after).map_or(text.len(), |p| p.1);
        if start > kept_from {
            out.push_str(text.get(kept_from..start).unwrap_or(""));
        }
        kept_from = kept_from.max(end);
    }
    out.push_str(text.get(kept_from..).unwrap_or(""));
    Cow::Owned(out)
}

/// `\[next\s*:\s*([^\]]+)\]` at byte `p` (which holds `[`).
fn match_bracket(text: &str, p: usize, closers: &mut NextByte<'_>) -> Option<Found> {
    let bytes = text.as_bytes();
    let kw = p + 1;
    if !bytes.get(kw..kw + 4)?.eq_ignore_ascii_case(b"next") {
        return None;
    }
    let colon = skip_ws(text, kw + 4);
    if bytes.get(colon) != Some(&b':') {
        return None;
    }
    let after_colon = colon + 1;
    let name = skip_ws(text, after_colon);
    // `[^\]]+` runs to the first `]`; when that leaves it empty, the greedy `\s*` gives
    // back its last whitespace character, which then is the whole capture.
    let close = closers.find(name)?;
    let start = if close > name {
        name
    } else if name > after_colon {
        let ws = text.get(after_colon..name)?.chars().next_back()?;
        name - ws.len_utf8()
    } else {
        return None;
    };
    Some(Found {
        capture: start..close,
        form: TagForm::Bracket,
        end: close + 1,
    })
}

/// `\{[^{}]*?"next"\s*:\s*"((?:[^"\\]|\\.)*)"[^{}]*\}` at byte `p` (which holds `{`):
/// the lazy prefix means the first `"next"` key before the next brace that completes a match.
fn match_json(text: &str, p: usize, braces: &mut NextByte<'_>) -> Option<Found> {
    let limit = braces.find(p + 1).unwrap_or(text.len());
    let mut from = p + 1;
    while let Some(key) = find_ci(text, JSON_KEY, from, limit) {
        if let Some(found) = match_json_value(text, key + JSON_KEY.len(), braces) {
            return Some(found);
        }
        from = key + 1;
    }
    None
}

/// `\s*:\s*"((?:[^"\\]|\\.)*)"[^{}]*\}` right after a `"next"` key.
fn match_json_value(text: &str, after_key: usize, braces: &mut NextByte<'_>) -> Option<Found> {
    let bytes = text.as_bytes();
    let colon = skip_ws(text, after_key);
    if bytes.get(colon) != Some(&b':') {
        return None;
    }
    let quote = skip_ws(text, colon + 1);
    if bytes.get(quote) != Some(&b'"') {
        return None;
    }
    let body = quote + 1;
    let mut i = body;
    loop {
        match bytes.get(i)? {
            b'"' => break,
            // `\\.`: any character but a newline after a backslash; stepping one byte past
            // it is enough because UTF-8 continuation bytes are never `"` or `\`.
            b'\\' => match bytes.get(i + 1)? {
                b'\n' => return None,
                _ => i += 2,
            },
            _ => i += 1,
        }
    }
    let close = braces.find(i + 1)?;
    if bytes.get(close) != Some(&b'}') {
        return None;
    }
    Some(Found {
        capture: body..i,
        form: TagForm::Json,
        end: close + 1,
    })
}

/// Byte position after the Unicode whitespace (`\s*`) starting at `i`.
fn skip_ws(text: &str, i: usize) -> usize {
    let rest = text.get(i..).unwrap_or("");
    let skipped: usize = rest
        .chars()
        .take_while(|c| c.is_whitespace())
        .map(char::len_utf8)
        .sum();
    i + skipped
}

/// The bytes a [`NextByte`] looks for (one or two, searched with SIMD `memchr`).
#[derive(Clone, Copy)]
enum ByteClass {
    One(u8),
    Two(u8, u8),
}

/// Finds the next byte of a class at or after a position, remembering the last answer so
/// that forward-moving queries stay linear overall (no rescans of a long tail per `[`/`{`).
struct NextByte<'a> {
    bytes: &'a [u8],
    class: ByteClass,
    cached: Option<(usize, Option<usize>)>,
}

impl<'a> NextByte<'a> {
    fn new(bytes: &'a [u8], class: ByteClass) -> Self {
        Self {
            bytes,
            class,
            cached: None,
        }
    }

    fn find(&mut self, from: usize) -> Option<usize> {
        if let Some((asked, answer)) = self.cached {
            // Nothing of the class lies in [asked, answer), so the answer still holds.
            if from >= asked && answer.is_none_or(|a| from <= a) {
                return answer;
            }
        }
        let answer = self.bytes.get(from..).and_then(|tail| match self.class {
            ByteClass::One(a) => memchr::memchr(a, tail),
            ByteClass::Two(a, b) => memchr::memchr2(a, b, tail),
        });
        let answer = answer.map(|o| o + from);
        self.cached = Some((from, answer));
        answer
    }
}

/// Decodes the body of a JSON string literal; a body that is not valid JSON (e.g. a bad
/// escape) is kept verbatim rather than dropped, and then simply fails to match a name.
fn decode_json_string(body: &str) -> String {
    if !body.contains('\\') {
        return body.to_owned();
    }
    serde_json::from_str::<String>(&format!("\"{body}\"")).unwrap_or_else(|_| body.to_owned())
}

/// Removes `<think>…</think>` blocks (ASCII case-insensitive, non-greedy like the seed's
/// DOTALL regex); an unclosed `<think>` hides the rest of the text.
fn strip_think(text: &str) -> Cow<'_, str> {
    let ranges = think_ranges(text);
    if ranges.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut kept_from = 0;
    for r in ranges {
        out.push_str(text.get(kept_from..r.start).unwrap_or(""));
        kept_from = r.end;
    }
    out.push_str(text.get(kept_from..).unwrap_or(""));
    Cow::Owned(out)
}

/// Where the `<think>` blocks of `text` are, in order; an unclosed one runs to the end.
fn think_ranges(text: &str) -> Vec<Range<usize>> {
    let end = text.len();
    let mut ranges = Vec::new();
    let mut from = 0;
    while let Some(open) = find_ci(text, THINK_OPEN, from, end) {
        match find_ci(text, THINK_CLOSE, open + THINK_OPEN.len(), end) {
            Some(close) => {
                from = close + THINK_CLOSE.len();
                ranges.push(open..from);
            }
            None => {
                ranges.push(open..end);
                break;
            }
        }
    }
    ranges
}

/// Byte offset of the first ASCII-case-insensitive occurrence of `needle` starting in
/// `from..limit`. Needles start with an ASCII non-letter (`<`, `"`), so their first byte is
/// searched exactly and any hit is on a char boundary.
fn find_ci(text: &str, needle: &[u8], from: usize, limit: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let first = *needle.first()?;
    let window = bytes.get(from..limit.min(bytes.len()))?;
    for pos in memchr::memchr_iter(first, window) {
        let start = from + pos;
        if bytes
            .get(start..start + needle.len())
            .is_some_and(|w| w.eq_ignore_ascii_case(needle))
        {
            return Some(start);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Option<String> {
        extract_last_tag(text).map(|t| t.raw)
    }

    #[test]
    fn reads_the_bracket_tag() {
        assert_eq!(raw("了解。[Next: LUMINA]").as_deref(), Some("LUMINA"));
        assert_eq!(raw("[Next:NOX]").as_deref(), Some("NOX"));
        assert_eq!(raw("[Next :  NOX ]").as_deref(), Some("NOX "));
    }

    #[test]
    fn keyword_is_case_insensitive() {
        assert_eq!(raw("[nExT: NOX]").as_deref(), Some("NOX"));
        assert_eq!(raw("[NEXT: NOX]").as_deref(), Some("NOX"));
    }

    #[test]
    fn full_width_tag_is_read_after_width_normalization() {
        assert_eq!(raw("［Ｎｅｘｔ：ＮＯＸ］").as_deref(), Some("NOX"));
        assert_eq!(raw("［ｎｅｘｔ　：　ルミナ］").as_deref(), Some("ルミナ"));
    }

    #[test]
    fn text_without_tag_yields_none() {
        assert_eq!(raw("タグなしです。"), None);
        assert_eq!(raw("[Next: ]"), Some(" ".to_owned()));
        assert_eq!(raw("[Next:]"), None);
        assert_eq!(raw("[Next NOX]"), None);
    }

    #[test]
    fn last_tag_wins() {
        assert_eq!(
            raw("[Next: NOX] then [Next: CLARIS]").as_deref(),
            Some("CLARIS")
        );
    }

    #[test]
    fn json_fragment_is_a_tag() {
        let tag = extract_last_tag(r#"了解。{"next":"NOX"}"#);
        assert_eq!(
            tag,
            Some(ExtractedTag {
                raw: "NOX".into(),
                form: TagForm::Json
            })
        );
        assert_eq!(
            raw(r#"{"type":"control", "next" : "NOX"}"#).as_deref(),
            Some("NOX")
        );
        assert_eq!(
            raw(r#"{"next":"\u30eb\u30df\u30ca"}"#).as_deref(),
            Some("ルミナ")
        );
        assert_eq!(raw(r#"{"next_speaker":"NOX"}"#), None);
    }

    #[test]
    fn whichever_form_comes_last_wins() {
        assert_eq!(
            raw(r#"[Next: CLARIS] {"next": "NOX"}"#).as_deref(),
            Some("NOX")
        );
        assert_eq!(
            raw(r#"{"next": "NOX"} [Next: CLARIS]"#).as_deref(),
            Some("CLARIS")
        );
    }

    #[test]
    fn think_blocks_are_hidden() {
        assert_eq!(
            raw("<think>[Next: NOX]</think>[Next: CLARIS]").as_deref(),
            Some("CLARIS")
        );
        assert_eq!(raw("<THINK>\n[Next: NOX]\n</Think>ok").as_deref(), None);
        assert_eq!(
            raw("<think>a</think>[Next: NOX]<think>[Next: LUMINA]</think>").as_deref(),
            Some("NOX")
        );
    }

    #[test]
    fn unclosed_think_hides_the_rest() {
        assert_eq!(
            raw("[Next: NOX]<think>[Next: CLARIS]").as_deref(),
            Some("NOX")
        );
        assert_eq!(visible_text("ab<think>cd"), "ab");
    }

    #[test]
    fn json_value_may_contain_braces_and_escapes() {
        assert_eq!(raw(r#"{"next":"a}b"}"#).as_deref(), Some("a}b"));
        assert_eq!(raw(r#"{"next":"N\"OX"}"#).as_deref(), Some("N\"OX"));
        // A `{` between the value and the closing brace breaks the fragment.
        assert_eq!(raw(r#"{"next":"NOX" {}"#), None);
        // The lazy prefix takes the first "next" key that completes a match.
        assert_eq!(raw(r#"{"next":1,"next":"NOX"}"#).as_deref(), Some("NOX"));
    }

    #[test]
    fn whitespace_only_name_is_captured_like_the_regex() {
        let tag = last_tag_in("[Next:\u{3000}]");
        assert_eq!(tag.map(|t| t.raw).as_deref(), Some("\u{3000}"));
    }

    #[test]
    fn full_width_think_is_recognised() {
        assert_eq!(raw("＜think＞[Next: NOX]＜/think＞").as_deref(), None);
    }

    /// The seed's regex (keyword made case-insensitive) plus seed 003's JSON form, run with the
    /// `regex` crate: the reference the hand-written scanner must agree with.
    const ORACLE_PATTERN: &str =
        r#"(?i)\[next\s*:\s*([^\]]+)\]|\{[^{}]*?"next"\s*:\s*"((?:[^"\\]|\\.)*)"[^{}]*\}"#;

    fn oracle(visible: &str) -> Option<ExtractedTag> {
        let re = match regex::Regex::new(ORACLE_PATTERN) {
            Ok(re) => re,
            Err(e) => panic!("oracle pattern: {e}"),
        };
        let caps = re.captures_iter(visible).last()?;
        if let Some(m) = caps.get(1) {
            return Some(ExtractedTag {
                raw: m.as_str().to_owned(),
                form: TagForm::Bracket,
            });
        }
        caps.get(2).map(|m| ExtractedTag {
            raw: decode_json_string(m.as_str()),
            form: TagForm::Json,
        })
    }

    #[test]
    fn scanner_agrees_with_the_regex_on_tricky_inputs() {
        for s in [
            "[Next: A] [Next: B",
            "[Next: [Next: A]",
            "[next:\n\nA\n]",
            "[Next: ]",
            "[Next:  ]]",
            "[Next :A][NEXT:\tB ]",
            r#"{"next":"A"}{"next":"B"}"#,
            r#"{"x":{"next":"A"}}"#,
            r#"{"next":"A\
"}"#,
            r#"{"next" : "A" , "k": 1 }"#,
            r#"[Next: {"next":"A"}]"#,
            r#"{"next":"[Next: B]"}"#,
            r#"{ "NEXT":"\\" }"#,
            "{\"next\":\"\\",
        ] {
            assert_eq!(last_tag_in(s), oracle(s), "{s:?}");
        }
    }

    fn token_soup() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let tokens = prop::sample::select(vec![
            "[", "]", "{", "}", "\"", "\\", ":", " ", "\u{3000}", "\n", "\t", "next", "NeXt",
            "\"next\"", "a", "ル", "é", ",", "N", "x",
        ]);
        prop_oneof![
            prop::collection::vec(tokens, 0..40).prop_map(|v| v.concat()),
            any::<String>(),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]

        #[test]
        fn scanner_agrees_with_the_regex(s in token_soup()) {
            proptest::prop_assert_eq!(last_tag_in(&s), oracle(&s));
        }
    }
}

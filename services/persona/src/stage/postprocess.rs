//! Seed 003 `postprocess_response`: from a model reply to the text watchers see — cut at the
//! affect trailer's marker (as a chat reply is: the trailer is stored, never shown), `<think>`
//! blocks and nomination tags removed where the resolver finds them (so nothing it hides is
//! shown), a leading greeting removed, shortened.

use crate::next_speaker::without_think_and_tags;

/// Post-processing settings (from `stage:`).
#[derive(Debug, Clone, Default)]
pub struct PostProcess {
    /// Greetings removed from the start, compared case-insensitively.
    pub greetings: Vec<String>,
    /// Longest text kept, in characters (0 = no limit).
    pub max_chars: usize,
    /// The affect trailer's marker (`persona.affect_marker`): nothing from it on is shown.
    pub affect_marker: String,
}

/// Characters that may follow a greeting and go with it.
fn is_greeting_tail(c: char) -> bool {
    c.is_whitespace() || "!！,，、。.~〜ー♪:：".contains(c)
}

impl PostProcess {
    /// The text to show for `raw`.
    pub fn apply(&self, raw: &str) -> String {
        let (reply, _trailer) = ghost_shared::affect::split_trailer(raw, &self.affect_marker);
        let visible = without_think_and_tags(reply);
        let text = self.strip_greeting(visible.trim());
        shorten(text.trim(), self.max_chars)
    }

    /// Drops one greeting at the very start (with the punctuation after it), if the text
    /// goes on after it: a reply that is only a greeting is kept.
    fn strip_greeting<'a>(&self, text: &'a str) -> &'a str {
        for greeting in &self.greetings {
            let g = greeting.trim();
            if g.is_empty() || text.len() < g.len() || !text.is_char_boundary(g.len()) {
                continue;
            }
            let (head, tail) = text.split_at(g.len());
            if !head.eq_ignore_ascii_case(g) {
                continue;
            }
            // `hi` must not eat the start of `history`.
            let boundary =
                tail.chars().next().is_none_or(|c| !c.is_alphanumeric()) || !g.is_ascii();
            if !boundary {
                continue;
            }
            let rest = tail.trim_start_matches(is_greeting_tail);
            if !rest.is_empty() {
                return rest;
            }
        }
        text
    }
}

/// At most `max` characters: cut after the last sentence end within the limit if there is
/// one in its second half, else at the limit with an ellipsis.
pub fn shorten(text: &str, max: usize) -> String {
    if max == 0 || text.chars().count() <= max {
        return text.to_owned();
    }
    let cut: String = text.chars().take(max).collect();
    let sentence_end = cut
        .char_indices()
        .filter(|(_, c)| "。！？!?.".contains(*c))
        .map(|(i, c)| i + c.len_utf8())
        .next_back();
    match sentence_end {
        Some(end) if cut[..end].chars().count() * 2 >= max => cut[..end].to_owned(),
        _ => {
            let mut s: String = cut.chars().take(max.saturating_sub(1)).collect();
            s.push('…');
            s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MARKER: &str = "<<<COCORO_GHOST_PARTNER_AFFECT_JSON_v1>>>";

    fn pp(max: usize) -> PostProcess {
        PostProcess {
            greetings: vec!["こんにちは".into(), "hello".into(), "hi".into()],
            max_chars: max,
            affect_marker: MARKER.into(),
        }
    }

    #[test]
    fn the_affect_trailer_is_cut_off() {
        let raw = format!("今日は晴れ。[Next: NOX]\n{MARKER}\n{{\"reflection_text\":\"secret\"}}");
        assert_eq!(pp(0).apply(&raw), "今日は晴れ。");
        assert_eq!(pp(0).apply(&format!("{MARKER}{{}}")), "");
    }

    #[test]
    fn removes_think_tags_and_greetings() {
        let raw = "<think>plan [Next: NOX]</think>こんにちは！ 今日はいい天気だね。[Next: CLARIS]";
        assert_eq!(pp(0).apply(raw), "今日はいい天気だね。");
        assert_eq!(pp(0).apply("Hello, world {\"next\":\"NOX\"}"), "world");
        assert_eq!(pp(0).apply("history lesson"), "history lesson");
        assert_eq!(pp(0).apply("hi!"), "hi!");
        assert_eq!(pp(0).apply("a ［next：ノクス］ b"), "a  b");
        assert_eq!(
            pp(0).apply("visible <think>never closed [Next: X]"),
            "visible"
        );
    }

    #[test]
    fn think_blocks_of_any_case_or_width_are_removed_like_the_resolver_reads_them() {
        assert_eq!(pp(0).apply("<THINK>plan</Think>見える"), "見える");
        assert_eq!(pp(0).apply("<tHiNk>plan</THINK>ａｂ [Next: NOX]"), "ａｂ");
        assert_eq!(
            pp(0).apply("＜ｔｈｉｎｋ＞秘密＜／ｔｈｉｎｋ＞表の話"),
            "表の話"
        );
        assert_eq!(pp(0).apply("前半＜ＴＨＩＮＫ＞閉じない秘密"), "前半");
        assert_eq!(pp(0).apply("x <Think>a</think> y <think>b"), "x  y");
        assert_eq!(
            pp(0).apply("全角のまま ［Ｎｅｘｔ：ＮＯＸ］ です"),
            "全角のまま  です"
        );
        assert_eq!(pp(0).apply("＜think> half＜／ＴＨＩＮＫ>ok"), "ok");
    }

    #[test]
    fn shortens_at_a_sentence_end_or_with_an_ellipsis() {
        assert_eq!(shorten("abc", 5), "abc");
        assert_eq!(shorten("一文目です。二文目です。", 8), "一文目です。");
        assert_eq!(shorten("abcdefghij", 5), "abcd…");
        assert_eq!(shorten("abcdefghij", 5).chars().count(), 5);
    }

    #[test]
    fn never_panics_on_odd_text() {
        for s in [
            "",
            "<think>",
            "</think>",
            "[Next:",
            "hi",
            "こ",
            "{\"next\":\"",
            "\u{0}",
        ] {
            let _ = pp(1).apply(s);
            let _ = pp(0).apply(s);
        }
    }
}

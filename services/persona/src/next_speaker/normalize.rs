//! Width normalization of the reply and normalization of a nominated name (seed 000,
//! "正規化ルール" steps 2–4).

use std::borrow::Cow;
use std::sync::LazyLock;

use unicode_normalization::char::{canonical_combining_class, decompose_compatible};
use unicode_normalization::{is_nfkc_quick, IsNormalized, UnicodeNormalization};

/// Honorifics dropped from the end of a name (seed 000: さん / 様 / ちゃん).
const HONORIFICS: [&str; 3] = ["さん", "様", "ちゃん"];

/// NFKC of `text`, computed segment by segment so that only the few segments holding a
/// non-normalized character (e.g. `？`, full-width letters) are run through the normalizer;
/// a plain Japanese or ASCII reply is returned borrowed without any allocation.
///
/// Segments start at characters that are NFKC quick-check "Yes" with combining class 0: such
/// a character neither combines with nor reorders around what precedes it, so the NFKC of the
/// whole text is the concatenation of the NFKC of its segments.
pub(crate) fn width_normalize(text: &str) -> Cow<'_, str> {
    let mut out: Option<String> = None;
    let mut copied = 0; // bytes of `text` already reflected in `out`
    let mut seg_start = 0;
    let mut seg_dirty = false;
    let table: &[u64] = &STABLE_BMP;
    for (i, c) in text.char_indices() {
        if is_stable_fast(table, c) {
            if seg_dirty {
                flush_segment(text, &mut out, &mut copied, seg_start, i);
            }
            seg_start = i;
            seg_dirty = false;
        } else {
            seg_dirty = true;
        }
    }
    if seg_dirty {
        flush_segment(text, &mut out, &mut copied, seg_start, text.len());
    }
    match out {
        None => Cow::Borrowed(text),
        Some(mut o) => {
            o.push_str(text.get(copied..).unwrap_or(""));
            Cow::Owned(o)
        }
    }
}

/// [`width_normalize`] with an alignment: pairs `(normalized byte, original byte)` at every
/// position where both texts are cut at the same place (each character of a segment whose
/// characters normalize one by one, else only the segment's ends). The normalized text is
/// exactly [`width_normalize`]'s, so positions found in it map back to the text as written.
pub(crate) fn width_normalize_aligned(text: &str) -> (String, Vec<(usize, usize)>) {
    let table: &[u64] = &STABLE_BMP;
    let mut out = String::with_capacity(text.len() + 8);
    let mut align = vec![(0, 0)];
    let mut push_segment = |from: usize, to: usize| {
        let segment = text.get(from..to).unwrap_or("");
        if segment.chars().all(|c| starter_only(table, c)) {
            for (i, c) in segment.char_indices() {
                let one = segment.get(i..i + c.len_utf8()).unwrap_or("");
                push_starter_only_nfkc(&mut out, one);
                align.push((out.len(), from + i + c.len_utf8()));
            }
        } else {
            out.extend(segment.nfkc());
            align.push((out.len(), to));
        }
    };
    let mut seg_start = 0;
    for (i, c) in text.char_indices() {
        if i > seg_start && is_stable_fast(table, c) {
            push_segment(seg_start, i);
            seg_start = i;
        }
    }
    if seg_start < text.len() {
        push_segment(seg_start, text.len());
    }
    (out, align)
}

/// Whether `c` alone normalizes to stable starters (the per-character path of
/// [`push_starter_only_nfkc`]).
fn starter_only(table: &[u64], c: char) -> bool {
    if is_stable_fast(table, c) {
        return true;
    }
    let mut ok = canonical_combining_class(c) == 0;
    if ok {
        decompose_compatible(c, |d| ok &= is_stable_fast(table, d));
    }
    ok
}

/// Appends the untouched text before the segment, then the segment's NFKC.
fn flush_segment(
    text: &str,
    out: &mut Option<String>,
    copied: &mut usize,
    seg_start: usize,
    seg_end: usize,
) {
    let o = out.get_or_insert_with(|| String::with_capacity(text.len() + 8));
    o.push_str(text.get(*copied..seg_start).unwrap_or(""));
    let segment = text.get(seg_start..seg_end).unwrap_or("");
    if !push_starter_only_nfkc(o, segment) {
        o.extend(segment.nfkc());
    }
    *copied = seg_end;
}

/// The common dirty segment (`い？`, `Ａ`, `ｶ`): every character is a stable starter or
/// compatibility-decomposes into stable starters only. Then nothing reorders or composes,
/// so NFKC is the per-character decomposition, without the general normalizer's set-up.
/// Returns false, having written nothing, when the segment needs the general path.
fn push_starter_only_nfkc(out: &mut String, segment: &str) -> bool {
    let table: &[u64] = &STABLE_BMP;
    let mark = out.len();
    for c in segment.chars() {
        if is_stable_fast(table, c) {
            out.push(c);
            continue;
        }
        let mut ok = canonical_combining_class(c) == 0;
        if ok {
            decompose_compatible(c, |d| {
                if is_stable_fast(table, d) {
                    out.push(d);
                } else {
                    ok = false;
                }
            });
        }
        if !ok {
            out.truncate(mark);
            return false;
        }
    }
    true
}

/// [`is_stable_starter`] answered from a bitmap for the BMP (ASCII without even that), which
/// keeps the per-character cost of the width pass to a shift and a mask.
#[inline]
fn is_stable_fast(table: &[u64], c: char) -> bool {
    let cp = u32::from(c);
    if cp < 0x80 {
        return true;
    }
    match table.get((cp >> 6) as usize) {
        Some(mask) => (mask >> (cp & 63)) & 1 == 1,
        None => is_stable_starter(c),
    }
}

/// For every BMP code point, whether it is a stable starter: one `u64` per 64 code points,
/// built once from the normalization tables (about a millisecond) so the per-character test
/// on the hot path is a shift and a mask.
static STABLE_BMP: LazyLock<Vec<u64>> = LazyLock::new(|| {
    (0u32..0x1_0000 / 64)
        .map(|block| {
            (0u32..64).fold(0u64, |mask, bit| {
                let stable = char::from_u32(block * 64 + bit).is_some_and(is_stable_starter);
                mask | (u64::from(stable) << bit)
            })
        })
        .collect()
});

/// Whether `c` is unchanged by NFKC and starts a segment (quick check Yes, combining class 0).
fn is_stable_starter(c: char) -> bool {
    canonical_combining_class(c) == 0 && is_nfkc_quick(std::iter::once(c)) == IsNormalized::Yes
}

/// Normalizes a nominated name: NFKC, drop whitespace, quotes, brackets and punctuation,
/// drop trailing honorifics, upper-case letters. Registry names go through the same function,
/// which is what makes the derived synonyms comparable with a nominated name.
pub fn normalize_name(raw: &str) -> String {
    let wide = width_normalize(raw);
    let mut kept: String = wide
        .chars()
        .filter(|&c| !c.is_whitespace() && !is_punctuation(c))
        .collect();
    strip_honorifics(&mut kept);
    if kept.is_ascii() {
        kept.make_ascii_uppercase();
        kept
    } else {
        kept.chars().flat_map(char::to_uppercase).collect()
    }
}

/// Removes trailing honorifics (repeatedly, e.g. `さん様`), but never the whole name, so a
/// character actually called `様` stays nameable.
fn strip_honorifics(name: &mut String) {
    loop {
        let suffix = HONORIFICS
            .iter()
            .find(|h| name.len() > h.len() && name.ends_with(*h));
        match suffix {
            Some(h) => {
                let keep = name.len() - h.len();
                name.truncate(keep);
            }
            None => return,
        }
    }
}

/// Quotes, brackets and punctuation that carry no identity in a name. After NFKC full-width
/// ASCII forms are plain ASCII, so besides ASCII only the CJK and general punctuation blocks
/// matter. The prolonged sound mark `ー` and the iteration mark `々` are letters, not
/// punctuation, and are kept.
fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation()
        || matches!(
            c,
            '\u{00A1}'
                | '\u{00A7}'
                | '\u{00AB}'
                | '\u{00B6}'
                | '\u{00B7}'
                | '\u{00BB}'
                | '\u{00BF}'
                | '\u{2010}'..='\u{2027}'
                | '\u{2030}'..='\u{205E}'
                | '\u{3001}'..='\u{3003}'
                | '\u{3008}'..='\u{3011}'
                | '\u{3014}'..='\u{301F}'
                | '\u{3030}'
                | '\u{303D}'
                | '\u{30A0}'
                | '\u{30FB}'
                | '\u{FE10}'..='\u{FE19}'
                | '\u{FE30}'..='\u{FE4F}'
                | '\u{FF5F}'..='\u{FF65}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn width_normalize_folds_full_width_forms() {
        assert_eq!(width_normalize("［Ｎｅｘｔ：ＮＯＸ］"), "[Next:NOX]");
        assert_eq!(width_normalize("ﾙﾐﾅ"), "ルミナ");
        assert!(matches!(
            width_normalize("了解。[Next: NOX]"),
            Cow::Borrowed(_)
        ));
        assert!(matches!(width_normalize("がンク"), Cow::Borrowed(_)));
    }

    #[test]
    fn bitmap_classification_matches_the_tables() {
        for c in (0u32..0x11000).filter_map(char::from_u32).step_by(7) {
            assert_eq!(
                is_stable_fast(&STABLE_BMP, c),
                is_stable_starter(c),
                "{c:?}"
            );
        }
        let fast = |c| is_stable_fast(&STABLE_BMP, c);
        assert!(fast('ル') && fast('漢') && fast('\u{1F600}'));
        assert!(!fast('？') && !fast('\u{301}') && !fast('ｱ'));
    }

    #[test]
    fn segmentwise_nfkc_equals_whole_nfkc() {
        for s in [
            "今度行ってみない？ [Next: ＣＬＡＲＩＳ]",
            "e\u{301}\u{323}x", // composition and reordering inside one segment
            "か\u{3099}ｶﾞ",      // kana + combining voiced mark, half-width kana
            "\u{1100}\u{1161}\u{11A8}", // Hangul jamo compose to 각
            "①②\u{FB01}ﬁ㍿",
            "a\u{335}\u{301}b", // non-composing mark with ccc > 0
            "ｶﾞｷﾞ！ﾟ",             // half-width voiced marks must compose, not just map
            "Ａ\u{301}",        // full-width A then a combining acute: Á
            "",
        ] {
            let whole: String = s.nfkc().collect();
            assert_eq!(width_normalize(s), whole, "{s:?}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]

        /// The aligned form is the same text, and every alignment pair cuts both texts at
        /// character boundaries whose prefixes normalize to each other.
        #[test]
        fn aligned_normalization_is_width_normalize(
            s in proptest::prop_oneof![
                proptest::prelude::any::<String>(),
                "[a-e<>/か-こ\u{300}-\u{36F}\u{3099}\u{FF01}-\u{FF9F} ]{0,24}",
            ]
        ) {
            let (aligned, pairs) = width_normalize_aligned(&s);
            proptest::prop_assert_eq!(&aligned, &width_normalize(&s));
            for (n, o) in pairs {
                let prefix: String = s[..o].nfkc().collect();
                proptest::prop_assert_eq!(&aligned[..n], prefix.as_str());
            }
        }

        /// Any text, and text dense in combining marks, jamo and compatibility forms.
        #[test]
        fn segmentwise_nfkc_equals_whole_nfkc_for_any_text(
            s in proptest::prop_oneof![
                proptest::prelude::any::<String>(),
                "[a-eか-こ\u{300}-\u{36F}\u{3099}\u{309A}\u{1100}-\u{1175}\u{11A8}-\u{11C2}\u{FF01}-\u{FF9F}\u{2460}-\u{2473}\u{3300}-\u{33FF} ]{0,24}",
            ]
        ) {
            let whole: String = s.nfkc().collect();
            proptest::prop_assert_eq!(width_normalize(&s), whole);
        }
    }

    #[test]
    fn trims_and_drops_inner_whitespace() {
        assert_eq!(normalize_name("  NOX \n"), "NOX");
        assert_eq!(normalize_name("ルミナ　さん"), "ルミナ");
    }

    #[test]
    fn drops_quotes_brackets_and_punctuation() {
        assert_eq!(normalize_name("(クラリス)"), "クラリス");
        assert_eq!(normalize_name("（クラリス）"), "クラリス");
        assert_eq!(normalize_name("「ルミナ」"), "ルミナ");
        assert_eq!(normalize_name("\"NOX\""), "NOX");
        assert_eq!(normalize_name("“NOX”。"), "NOX");
        assert_eq!(normalize_name("'nox'!"), "NOX");
    }

    #[test]
    fn keeps_letters_that_look_like_punctuation() {
        assert_eq!(normalize_name("ルーシー"), "ルーシー");
        assert_eq!(normalize_name("奈々"), "奈々");
    }

    #[test]
    fn drops_trailing_honorifics_only() {
        assert_eq!(normalize_name("ルミナさん"), "ルミナ");
        assert_eq!(normalize_name("ルミナ様"), "ルミナ");
        assert_eq!(normalize_name("ルミナちゃん"), "ルミナ");
        assert_eq!(normalize_name("ルミナちゃん様"), "ルミナ");
        // A name that merely contains an honorific keeps it; a bare honorific stays a name.
        assert_eq!(normalize_name("さんご"), "さんご");
        assert_eq!(normalize_name("様"), "様");
    }

    #[test]
    fn upper_cases_letters() {
        assert_eq!(normalize_name("nox"), "NOX");
        assert_eq!(normalize_name("ｎｏｘ"), "NOX");
        assert_eq!(normalize_name("zoë"), "ZOË");
        assert_eq!(normalize_name("ルミナ"), "ルミナ");
    }
}

//! The streaming trailer filter against `split_trailer` under every chunking we can think of.

use ghost_shared::affect::{split_trailer, TrailerStreamFilter, DEFAULT_TRAILER_MARKER as M};
use proptest::prelude::*;

/// Feeds `chunks`, checking after every push that what was emitted so far is a prefix of the
/// final reply (so no marker or trailer byte can ever have been shown), then checks the outcome.
fn check_chunks(full: &str, marker: &str, chunks: &[&str]) {
    let (reply, trailer) = split_trailer(full, marker);
    let mut filter = TrailerStreamFilter::new(marker);
    let mut emitted = String::new();
    for chunk in chunks {
        emitted.push_str(&filter.push(chunk));
        assert!(
            reply.starts_with(&emitted),
            "emitted {emitted:?} is not a prefix of reply {reply:?} (chunks {chunks:?})"
        );
    }
    if !marker.is_empty() {
        assert!(!emitted.contains(marker), "marker leaked: {chunks:?}");
    }
    let outcome = filter.finish();
    emitted.push_str(&outcome.tail);
    assert_eq!(emitted, reply, "chunks {chunks:?}");
    assert_eq!(outcome.reply_text, reply, "chunks {chunks:?}");
    assert_eq!(outcome.trailer_raw.as_deref(), trailer, "chunks {chunks:?}");
    if trailer.is_some() {
        assert_eq!(outcome.tail, "", "nothing is left to emit after a marker");
    }
}

/// Byte offsets of every char boundary strictly inside `s`.
fn inner_boundaries(s: &str) -> Vec<usize> {
    s.char_indices()
        .map(|(i, _)| i)
        .filter(|&i| i > 0)
        .collect()
}

fn split_at_points<'a>(s: &'a str, points: &[usize]) -> Vec<&'a str> {
    let mut out = Vec::with_capacity(points.len() + 1);
    let mut last = 0;
    for &p in points {
        out.push(s.get(last..p).expect("char boundary"));
        last = p;
    }
    out.push(s.get(last..).expect("char boundary"));
    out
}

/// One split, every pair of splits, and one char at a time.
fn check_all_chunkings(full: &str, marker: &str) {
    check_chunks(full, marker, &[full]);
    let bounds = inner_boundaries(full);
    for &a in &bounds {
        check_chunks(full, marker, &split_at_points(full, &[a]));
        for &b in bounds.iter().filter(|&&b| b > a) {
            check_chunks(full, marker, &split_at_points(full, &[a, b]));
        }
    }
    let chars: Vec<String> = full.chars().map(String::from).collect();
    let chars: Vec<&str> = chars.iter().map(String::as_str).collect();
    check_chunks(full, marker, &chars);
}

const JSON: &str = r#"{"reflection_text":"ムッとした","partner_affect_label":"anger","partner_affect_intensity":0.6,"salience":0.7,"confidence":0.9,"topic_tags":["約束"]}"#;

#[test]
fn japanese_reply_then_marker_line_then_json() {
    let full = format!("えっ、また遅刻？\nちょっと怒ってるよ。\n{M}\n{JSON}");
    check_all_chunkings(&full, M);
    let (reply, _) = split_trailer(&full, M);
    assert_eq!(reply, "えっ、また遅刻？\nちょっと怒ってるよ。");
    // The reply itself contains no `<`, so no marker byte can have been emitted at all.
    assert!(!reply.contains('<') && !reply.contains("reflection_text"));
}

#[test]
fn marker_glued_to_multibyte_text_without_newline() {
    check_all_chunkings(&format!("だよね。{M}{JSON}"), M);
}

#[test]
fn false_marker_prefix_is_released_then_real_marker_cuts() {
    let full = format!("<<<COCORO って何？ <<<COCORO_GHOST_X もね。\n{M}\n{JSON}");
    check_all_chunkings(&full, M);
    assert_eq!(
        split_trailer(&full, M).0,
        "<<<COCORO って何？ <<<COCORO_GHOST_X もね。"
    );
}

#[test]
fn stream_without_marker_ending_on_a_marker_prefix() {
    check_all_chunkings("最後に <<<COCORO_GHOST_PARTNER", M);
    check_all_chunkings("ends with spaces  \n\n", M);
}

#[test]
fn first_marker_wins_and_second_is_trailer() {
    check_all_chunkings(&format!("a{M}b{M}c"), M);
}

#[test]
fn marker_at_the_very_start_gives_an_empty_reply() {
    let full = format!("{M}\n{JSON}");
    check_all_chunkings(&full, M);
    assert_eq!(split_trailer(&full, M).0, "");
}

#[test]
fn whitespace_inside_the_reply_is_kept_only_before_more_text() {
    check_all_chunkings(&format!(" x  \n\n y \t\n{M}{{}}"), M);
}

#[test]
fn custom_multibyte_marker() {
    let marker = "《感情JSON》";
    check_all_chunkings(&format!("《感情》ではない。\n{marker}\n{{}}"), marker);
}

/// Pieces that exercise the marker logic: fragments, the marker itself, whitespace, multibyte.
fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("a".to_owned()),
        Just("こんにちは".to_owned()),
        Just("😀".to_owned()),
        Just(" ".to_owned()),
        Just("\n".to_owned()),
        Just("\u{3000}".to_owned()),
        Just("<".to_owned()),
        Just("<<<".to_owned()),
        Just("<<<COCORO".to_owned()),
        Just("_GHOST_PARTNER_AFFECT_JSON_v1>>>".to_owned()),
        Just(M.to_owned()),
        Just(JSON.to_owned()),
        "[a-z<>_ ]{0,6}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_texts_and_random_chunkings(
        pieces in prop::collection::vec(piece(), 0..12),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..10),
    ) {
        let full: String = pieces.concat();
        let bounds = inner_boundaries(&full);
        let mut points: Vec<usize> = if bounds.is_empty() {
            Vec::new()
        } else {
            cuts.iter().map(|c| bounds[c.index(bounds.len())]).collect()
        };
        points.sort_unstable();
        points.dedup();
        check_chunks(&full, M, &split_at_points(&full, &points));
    }
}

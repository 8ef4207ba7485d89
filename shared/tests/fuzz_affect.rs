//! Fuzzed affect trailers (seed 004): whatever the model writes after (or instead of) the
//! marker, parsing never panics and keeps only valid fields, and no chunking of the reply lets
//! the marker or the trailer reach the user. `PROPTEST_CASES` inputs per property
//! (`ghost_testkit::fuzz`).

use ghost_shared::affect::{
    parse_affect, split_trailer, Affect, TrailerStreamFilter, DEFAULT_TRAILER_MARKER,
};
use ghost_testkit::fuzz;
use proptest::prelude::*;

const AFFECTS: &[&str] = &[
    r#"{"reflection_text":"a nice chat","partner_affect_label":"joy","partner_affect_intensity":0.6,"salience":0.4,"confidence":0.8,"topic_tags":["weather","walk"],"partner_response_policy":{"cooperation":0.9,"refusal_bias":0.1,"refusal_allowed":false}}"#,
    r#"{"partner_affect_label":"anger","partner_affect_intensity":1,"salience":0}"#,
];

const REPLY: &str = "今日はいい天気だね。散歩に行こうか？";

/// `text` cut at the char boundaries nearest to `cuts`.
fn pieces<'a>(text: &'a str, cuts: &[prop::sample::Index]) -> Vec<&'a str> {
    let mut points: Vec<usize> = cuts
        .iter()
        .map(|c| {
            let mut i = c.index(text.len() + 1);
            while !text.is_char_boundary(i) {
                i -= 1;
            }
            i
        })
        .collect();
    points.sort_unstable();
    let mut out = Vec::new();
    let mut from = 0;
    for to in points.into_iter().chain([text.len()]) {
        out.push(&text[from..to]);
        from = to;
    }
    out
}

proptest! {
    #![proptest_config(fuzz::config())]

    #[test]
    fn affect_json(raw in fuzz::model_output(AFFECTS)) {
        let parsed = parse_affect(&raw);
        if let Some(e) = &parsed.error {
            fuzz::clear_error(&Err::<(), _>(e))?;
        }
        for v in [parsed.partner_affect_intensity, parsed.salience, parsed.confidence].into_iter().flatten() {
            prop_assert!((0.0..=1.0).contains(&v), "{v} kept");
        }
        if let Some(affect) = Affect::from_parsed(&parsed) {
            prop_assert!(affect.intensity.is_finite() && affect.salience.is_finite());
        }
    }

    #[test]
    fn replies_with_trailers(
        reply in fuzz::text(&[REPLY]),
        trailer in fuzz::model_output(AFFECTS),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
    ) {
        let marker = DEFAULT_TRAILER_MARKER;
        let full = format!("{reply}\n{marker}\n{trailer}");
        let (visible, raw) = split_trailer(&full, marker);
        prop_assert!(raw.is_some());
        prop_assert!(!visible.contains(marker));
        let mut filter = TrailerStreamFilter::new(marker);
        let mut shown = String::new();
        for piece in pieces(&full, &cuts) {
            shown.push_str(&filter.push(piece));
        }
        shown.push_str(&filter.finish().tail);
        prop_assert_eq!(shown.as_str(), visible);
    }
}

//! Fuzzed stage replies (seeds 000 and 003): whatever a character's model writes, removing
//! `<think>` blocks, shortening and reading the `[Next: …]` nomination never panic, and the
//! next speaker is always a registered character. `PROPTEST_CASES` inputs per property
//! (`ghost_testkit::fuzz`).

use ghost_persona::next_speaker::{
    extract_last_tag, resolve_next_speaker_with_rng, without_think_and_tags, NominationPolicy,
    SpeakerEntry, SpeakerRegistry, XorShift64,
};
use ghost_persona::stage::postprocess::{shorten, PostProcess};
use ghost_testkit::fuzz;
use proptest::prelude::*;

const REPLIES: &[&str] = &[
    "<think>who next?</think>そうだね、散歩に行こう。[Next: LUMINA]",
    "I agree. {\"next\": \"NOX\"}",
    "［ｎｅｘｔ：クラリス］ではまた。",
];

proptest! {
    #![proptest_config(fuzz::config())]

    #[test]
    fn stage_replies(reply in fuzz::model_output(REPLIES), max in 0usize..300, seed in any::<u64>()) {
        let registry = SpeakerRegistry::new(vec![
            SpeakerEntry::new("LUMINA", "ルミナ", "る"),
            SpeakerEntry::new("CLARIS", "クラリス", "く"),
            SpeakerEntry::new("NOX", "ノクス", "の"),
        ]);
        let Ok(registry) = registry else { panic!("registry rejected") };
        let visible = without_think_and_tags(&reply);
        let short = shorten(&visible, max);
        prop_assert!(max == 0 || short.chars().count() <= max);
        let _ = extract_last_tag(&reply);
        let decision = resolve_next_speaker_with_rng(
            &reply,
            "LUMINA",
            &registry,
            &NominationPolicy::default(),
            &mut XorShift64::new(seed),
        );
        if let Some(id) = &decision.next_id {
            prop_assert!(registry.ids().any(|r| r == id), "unregistered {id:?}");
        }
    }
}

proptest! {
    #![proptest_config(fuzz::config())]

    /// What a `<think>` block holds never reaches watchers, whatever the case or width of its
    /// markers and whatever surrounds it (seed 003 `postprocess_response`).
    #[test]
    fn thoughts_never_reach_watchers(
        before in fuzz::model_output(REPLIES),
        after in fuzz::model_output(REPLIES),
        open in prop::sample::select(vec!["<think>", "<THINK>", "<Think>", "＜ｔｈｉｎｋ＞", "＜ＴＨＩＮＫ＞"]),
        close in prop::sample::select(vec!["</think>", "</THINK>", "＜／Ｔｈｉｎｋ＞", ""]),
    ) {
        let reply = format!("{before}{open}SECRET-PLAN{close}{after}");
        let shown = PostProcess::default().apply(&reply);
        prop_assert!(!shown.contains("SECRET-PLAN"), "{shown:?}");
    }
}

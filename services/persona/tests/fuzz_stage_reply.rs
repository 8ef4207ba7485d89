//! Fuzzed stage replies (seeds 000 and 003): whatever a character's model writes, removing
//! `<think>` blocks, shortening and reading the `[Next: …]` nomination never panic, and the
//! next speaker is always a registered character. `PROPTEST_CASES` inputs per property
//! (`ghost_testkit::fuzz`).

use ghost_persona::next_speaker::{
    extract_last_tag, resolve_next_speaker_with_rng, NominationPolicy, SpeakerEntry,
    SpeakerRegistry, XorShift64,
};
use ghost_persona::stage::postprocess::{shorten, strip_think};
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
        let visible = strip_think(&reply);
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

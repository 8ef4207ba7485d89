//! Property tests: the resolver never panics, only ever names a registered character (or
//! nobody, with reason `none`), and never hands the turn back to the current speaker unless
//! self-nomination is allowed.

use ghost_persona::next_speaker::{
    resolve_next_speaker_with_rng, sequence_ratio, Fallback, NominationPolicy, Reason,
    SpeakerEntry, SpeakerRegistry, XorShift64,
};
use proptest::prelude::*;

fn registry() -> SpeakerRegistry {
    let entries = vec![
        SpeakerEntry::new("LUMINA", "ルミナ", "る"),
        SpeakerEntry::new("CLARIS", "クラリス", "く"),
        SpeakerEntry::new("NOX", "ノクス", "の"),
        SpeakerEntry::new("Zoë", "ゾーイ", ""),
    ];
    match SpeakerRegistry::new(entries) {
        Ok(r) => r,
        Err(e) => panic!("test registry rejected: {e}"),
    }
}

/// Names that hit every matching step, plus noise.
fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("LUMINA".to_owned()),
        Just("ルミナさん".to_owned()),
        Just("(クラリス)".to_owned()),
        Just("ｎｏｘ".to_owned()),
        Just("の".to_owned()),
        Just("CLARISS".to_owned()),
        Just("zoe".to_owned()),
        Just("USER".to_owned()),
        any::<String>(),
    ]
}

/// Replies: arbitrary Unicode, or arbitrary text around tags of both forms and think blocks.
fn reply() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "\\PC*",
        (any::<String>(), name(), any::<String>(), 0u8..6).prop_map(|(pre, n, post, shape)| {
            match shape {
                0 => format!("{pre}[Next: {n}]{post}"),
                1 => format!("{pre}{{\"next\":\"{n}\"}}{post}"),
                2 => format!("{pre}<think>[Next: {n}]{post}"),
                3 => format!("<think>{pre}</think>［ｎｅｘｔ：{n}］{post}"),
                4 => format!("[Next: {pre}]{post}{{\"next\": \"{n}\"}}"),
                _ => format!("{pre}[NEXT:{n}]<think>{post}</think>"),
            }
        }),
    ]
}

fn current() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("LUMINA".to_owned()),
        Just("CLARIS".to_owned()),
        Just("NOX".to_owned()),
        Just("Zoë".to_owned()),
        Just("nox".to_owned()),
        any::<String>(),
    ]
}

fn policy() -> impl Strategy<Value = NominationPolicy> {
    (any::<bool>(), any::<bool>(), 0.0f64..=1.0).prop_map(|(allow, random, threshold)| {
        NominationPolicy {
            allow_self_nomination: allow,
            fallback: if random {
                Fallback::Random
            } else {
                Fallback::RoundRobin
            },
            fuzzy_threshold: threshold,
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn resolves_to_a_registered_id_or_none(
        text in reply(),
        current in current(),
        policy in policy(),
        seed in any::<u64>(),
    ) {
        let reg = registry();
        let d = resolve_next_speaker_with_rng(&text, &current, &reg, &policy, &mut XorShift64::new(seed));
        match &d.next_id {
            Some(id) => {
                prop_assert!(reg.ids().any(|r| r == id), "unregistered {id:?}");
                prop_assert_ne!(d.reason, Reason::None);
            }
            None => prop_assert_eq!(d.reason, Reason::None),
        }
        // Four characters: somebody else always exists, so `none` is impossible here.
        prop_assert!(d.next_id.is_some());
    }

    #[test]
    fn never_returns_the_current_speaker_unless_allowed(
        text in reply(),
        current in current(),
        threshold in 0.0f64..=1.0,
        random in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let reg = registry();
        let policy = NominationPolicy {
            allow_self_nomination: false,
            fallback: if random { Fallback::Random } else { Fallback::RoundRobin },
            fuzzy_threshold: threshold,
        };
        let d = resolve_next_speaker_with_rng(&text, &current, &reg, &policy, &mut XorShift64::new(seed));
        let chosen = d.next_id.as_deref().and_then(|id| reg.position(id));
        let me = reg.position(&current);
        prop_assert!(me.is_none() || chosen != me, "{:?} handed back to {current:?}", d.next_id);
        prop_assert_ne!(d.next_id.as_deref(), Some(current.as_str()));
    }

    #[test]
    fn a_single_character_cast_yields_none_unless_self_allowed(
        text in reply(),
        allow in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let solo = SpeakerRegistry::new(vec![SpeakerEntry::new("NOX", "ノクス", "の")]);
        let Ok(solo) = solo else { panic!("solo registry rejected") };
        let policy = NominationPolicy { allow_self_nomination: allow, ..NominationPolicy::default() };
        let d = resolve_next_speaker_with_rng(&text, "NOX", &solo, &policy, &mut XorShift64::new(seed));
        match d.reason {
            Reason::None => prop_assert_eq!(d.next_id, None),
            Reason::Tag | Reason::Fuzzy => {
                prop_assert!(allow);
                prop_assert_eq!(d.next_id.as_deref(), Some("NOX"));
            }
            other => prop_assert!(false, "unexpected {other:?}"),
        }
    }

    #[test]
    fn ratio_is_a_bounded_number(a in any::<String>(), b in any::<String>()) {
        let r = sequence_ratio(&a, &b);
        prop_assert!((0.0..=1.0).contains(&r));
        prop_assert_eq!(sequence_ratio(&a, &a), 1.0);
    }
}

//! The resolver: from a reply to the next speaker, with the seed's self-nomination policy,
//! fallbacks and `operation` logging.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::extract::{last_tag_in, visible_text};
use super::normalize::normalize_name;
use super::policy::{Fallback, NominationPolicy};
use super::registry::{MatchKind, SpeakerRegistry, RESERVED_USER_ID};
use super::rng::{EntropySource, RandomSource};

/// Tracing target of the seed's `operation` log.
const OPERATION: &str = "operation";

/// Why a speaker was (or was not) chosen: the `reason` of `NextSpeakerChosen`, defined once
/// in the event catalogue.
pub use ghost_shared::events::NextSpeakerReason as Reason;

/// The outcome of one resolution (seed 000's `Resolved`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NextSpeakerDecision {
    /// The internal id of the next speaker; `None` only with [`Reason::None`].
    pub next_id: Option<String>,
    /// How it was decided.
    pub reason: Reason,
    /// The raw name inside the last tag (width-normalized text), empty without a tag.
    pub extracted: String,
    /// `extracted` after name normalization, empty without a tag.
    pub normalized: String,
}

impl NextSpeakerDecision {
    /// The probe's JSON: `{"next_id": string|null, "reason": …, "extracted": …, "normalized": …}`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "next_id": self.next_id,
            "reason": self.reason.as_str(),
            "extracted": self.extracted,
            "normalized": self.normalized,
        })
    }
}

/// Resolves the next speaker from `text`, drawing process entropy only if a random fallback
/// is needed. Never panics; every outcome is logged on the `operation` target.
pub fn resolve_next_speaker(
    text: &str,
    current_id: &str,
    registry: &SpeakerRegistry,
    policy: &NominationPolicy,
) -> NextSpeakerDecision {
    resolve_next_speaker_with_rng(text, current_id, registry, policy, &mut EntropySource)
}

/// [`resolve_next_speaker`] with an injected random source, for deterministic tests and replays.
pub fn resolve_next_speaker_with_rng<R: RandomSource + ?Sized>(
    text: &str,
    current_id: &str,
    registry: &SpeakerRegistry,
    policy: &NominationPolicy,
    rng: &mut R,
) -> NextSpeakerDecision {
    resolve_in_run_with_rng(text, current_id, &BTreeSet::new(), registry, policy, rng)
}

/// [`resolve_next_speaker`] for a turn of a stage run, whose fallback reads the run's
/// `spoken_set` (seed 003 §3, internal ids): a random fallback draws among the others who
/// have not spoken in the run while any are left, so chance cannot keep the floor between
/// two characters. Round-robin is unchanged: it already goes round in registry order
/// (seed 000).
pub fn resolve_in_run(
    text: &str,
    current_id: &str,
    spoken_set: &BTreeSet<String>,
    registry: &SpeakerRegistry,
    policy: &NominationPolicy,
) -> NextSpeakerDecision {
    resolve_in_run_with_rng(
        text,
        current_id,
        spoken_set,
        registry,
        policy,
        &mut EntropySource,
    )
}

/// [`resolve_in_run`] with an injected random source.
pub fn resolve_in_run_with_rng<R: RandomSource + ?Sized>(
    text: &str,
    current_id: &str,
    spoken_set: &BTreeSet<String>,
    registry: &SpeakerRegistry,
    policy: &NominationPolicy,
    rng: &mut R,
) -> NextSpeakerDecision {
    let current = registry.position(current_id);
    let visible = visible_text(text);
    let (extracted, normalized, nominated) = match last_tag_in(&visible) {
        Some(tag) => {
            let normalized = normalize_name(&tag.raw);
            let nominated = judge(&tag.raw, &normalized, current, current_id, registry, policy);
            (tag.raw, normalized, nominated)
        }
        None => {
            tracing::warn!(
                target: OPERATION,
                current_id,
                "no next-speaker tag in the reply; falling back"
            );
            (String::new(), String::new(), None)
        }
    };
    let (index, reason, matched_by) = match nominated {
        Some((i, MatchKind::Fuzzy)) => (Some(i), Reason::Fuzzy, MatchKind::Fuzzy.as_str()),
        Some((i, kind)) => (Some(i), Reason::Tag, kind.as_str()),
        None => {
            let (i, reason) = fallback(current, spoken_set, registry, policy.fallback, rng);
            (i, reason, reason.as_str())
        }
    };
    let next_id = index
        .and_then(|i| registry.entry(i))
        .map(|e| e.name.clone());
    let decision = NextSpeakerDecision {
        next_id,
        reason,
        extracted,
        normalized,
    };
    tracing::info!(
        target: OPERATION,
        extracted_raw = %decision.extracted,
        normalized = %decision.normalized,
        matched_id = decision.next_id.as_deref().unwrap_or(""),
        reason = decision.reason.as_str(),
        matched_by,
        current_id,
        "next speaker resolved"
    );
    decision
}

/// Validates a nomination: the user and unregistered names are refused, and so is the current
/// speaker unless the policy allows self-nomination. Each refusal is a WARN.
fn judge(
    raw: &str,
    normalized: &str,
    current: Option<usize>,
    current_id: &str,
    registry: &SpeakerRegistry,
    policy: &NominationPolicy,
) -> Option<(usize, MatchKind)> {
    if normalized == RESERVED_USER_ID {
        tracing::warn!(
            target: OPERATION,
            extracted_raw = raw,
            normalized,
            current_id,
            "nomination of the user rejected; falling back"
        );
        return None;
    }
    let Some((index, kind)) = registry.lookup(normalized, policy.fuzzy_threshold) else {
        tracing::warn!(
            target: OPERATION,
            extracted_raw = raw,
            normalized,
            current_id,
            "nominated name is not a registered character; falling back"
        );
        return None;
    };
    if Some(index) == current && !policy.allow_self_nomination {
        tracing::warn!(
            target: OPERATION,
            extracted_raw = raw,
            normalized,
            current_id,
            matched_by = kind.as_str(),
            "self-nomination rejected by policy; falling back"
        );
        return None;
    }
    Some((index, kind))
}

/// Picks someone other than the current speaker, or nobody (ERROR: the loop has to end).
fn fallback<R: RandomSource + ?Sized>(
    current: Option<usize>,
    spoken_set: &BTreeSet<String>,
    registry: &SpeakerRegistry,
    strategy: Fallback,
    rng: &mut R,
) -> (Option<usize>, Reason) {
    let n = registry.len();
    let others = n - usize::from(current.is_some_and(|c| c < n));
    if others == 0 {
        tracing::error!(
            target: OPERATION,
            registered = n,
            "no other character can speak next; ending the loop"
        );
        return (None, Reason::None);
    }
    match strategy {
        Fallback::RoundRobin => {
            // Next after the current speaker in registry order; an unregistered current
            // speaker starts the round at the top.
            let start = current.map_or(0, |c| c + 1);
            let next = (0..n)
                .map(|k| (start + k) % n)
                .find(|&i| Some(i) != current);
            (next, Reason::RoundRobin)
        }
        Fallback::Random => {
            // The others yet to speak in the run, else all the others; in registry order,
            // so a run with nobody spoken yet draws exactly as before the spoken set.
            let others: Vec<usize> = (0..n).filter(|&i| Some(i) != current).collect();
            let fresh: Vec<usize> = others
                .iter()
                .copied()
                .filter(|&i| {
                    registry
                        .entry(i)
                        .is_some_and(|e| !spoken_set.contains(&e.name))
                })
                .collect();
            let pool = if fresh.is_empty() { others } else { fresh };
            (Some(pool[rng.below(pool.len())]), Reason::Random)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::registry::SpeakerEntry;
    use super::super::rng::XorShift64;
    use super::*;

    fn seed() -> SpeakerRegistry {
        SpeakerRegistry::seed_example()
    }

    fn policy() -> NominationPolicy {
        NominationPolicy::default()
    }

    fn resolve(text: &str, current: &str) -> NextSpeakerDecision {
        resolve_next_speaker_with_rng(text, current, &seed(), &policy(), &mut XorShift64::new(1))
    }

    fn decided(text: &str, current: &str) -> (Option<String>, Reason) {
        let d = resolve(text, current);
        (d.next_id, d.reason)
    }

    fn some(id: &str) -> Option<String> {
        Some(id.to_owned())
    }

    #[test]
    fn seed_test_list() {
        assert_eq!(
            decided("[Next: LUMINA]", "NOX"),
            (some("LUMINA"), Reason::Tag)
        );
        assert_eq!(
            decided("[Next: ルミナ]", "NOX"),
            (some("LUMINA"), Reason::Tag)
        );
        assert_eq!(decided("[Next: る]", "NOX"), (some("LUMINA"), Reason::Tag));
        assert_eq!(
            decided("[Next: ルミナさん]", "NOX"),
            (some("LUMINA"), Reason::Tag)
        );
        assert_eq!(
            decided("[Next: (クラリス)]", "NOX"),
            (some("CLARIS"), Reason::Tag)
        );
        assert_eq!(
            decided("[next:   nox ]", "LUMINA"),
            (some("NOX"), Reason::Tag)
        );
        assert_eq!(
            decided("[Next: LUMINA]", "LUMINA"),
            (some("CLARIS"), Reason::RoundRobin)
        );
        assert_eq!(
            decided("no tag", "LUMINA"),
            (some("CLARIS"), Reason::RoundRobin)
        );
        assert_eq!(
            decided("[Next: MIKU]", "LUMINA"),
            (some("CLARIS"), Reason::RoundRobin)
        );
        assert_eq!(
            decided("[Next: NOX] [Next: CLARIS]", "LUMINA"),
            (some("CLARIS"), Reason::Tag)
        );
    }

    #[test]
    fn decision_carries_extracted_and_normalized() {
        let d = resolve("[next:   nox ]", "LUMINA");
        assert_eq!(d.extracted, "nox ");
        assert_eq!(d.normalized, "NOX");
        let d = resolve("nothing", "LUMINA");
        assert_eq!((d.extracted.as_str(), d.normalized.as_str()), ("", ""));
    }

    #[test]
    fn last_tag_wins_even_when_it_is_invalid() {
        // The latest intent counts: an unusable last tag falls back instead of reviving NOX.
        assert_eq!(
            decided("[Next: NOX] [Next: MIKU]", "LUMINA"),
            (some("CLARIS"), Reason::RoundRobin)
        );
    }

    #[test]
    fn user_is_rejected() {
        assert_eq!(
            decided("[Next: USER]", "LUMINA"),
            (some("CLARIS"), Reason::RoundRobin)
        );
        assert_eq!(
            decided("[Next: user]", "NOX"),
            (some("LUMINA"), Reason::RoundRobin)
        );
    }

    #[test]
    fn fuzzy_match_is_reported_as_fuzzy() {
        assert_eq!(
            decided("[Next: CLARISS]", "NOX"),
            (some("CLARIS"), Reason::Fuzzy)
        );
        let strict = NominationPolicy::new(false, Fallback::RoundRobin, 0.95);
        let strict = strict.unwrap_or_default();
        let d = resolve_next_speaker_with_rng(
            "[Next: CLARISS]",
            "NOX",
            &seed(),
            &strict,
            &mut XorShift64::new(1),
        );
        assert_eq!((d.next_id, d.reason), (some("LUMINA"), Reason::RoundRobin));
    }

    #[test]
    fn fuzzy_self_nomination_is_rejected_too() {
        assert_eq!(
            decided("[Next: CLARISS]", "CLARIS"),
            (some("NOX"), Reason::RoundRobin)
        );
    }

    #[test]
    fn self_nomination_allowed_by_policy() {
        let p = NominationPolicy {
            allow_self_nomination: true,
            ..policy()
        };
        let d = resolve_next_speaker("[Next: CLARIS]", "CLARIS", &seed(), &p);
        assert_eq!((d.next_id, d.reason), (some("CLARIS"), Reason::Tag));
    }

    #[test]
    fn round_robin_follows_registry_order_and_wraps() {
        assert_eq!(decided("", "LUMINA"), (some("CLARIS"), Reason::RoundRobin));
        assert_eq!(decided("", "CLARIS"), (some("NOX"), Reason::RoundRobin));
        assert_eq!(decided("", "NOX"), (some("LUMINA"), Reason::RoundRobin));
        // An unregistered current speaker starts at the top.
        assert_eq!(decided("", "MIKU"), (some("LUMINA"), Reason::RoundRobin));
    }

    #[test]
    fn random_fallback_excludes_the_current_speaker_and_is_seeded() {
        let p = NominationPolicy {
            fallback: Fallback::Random,
            ..policy()
        };
        let reg = seed();
        let mut rng = XorShift64::new(99);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..100 {
            let d = resolve_next_speaker_with_rng("", "CLARIS", &reg, &p, &mut rng);
            assert_eq!(d.reason, Reason::Random);
            seen.insert(d.next_id);
        }
        assert_eq!(
            seen.into_iter().collect::<Vec<_>>(),
            [some("LUMINA"), some("NOX")]
        );
        let run = |seed| {
            let mut rng = XorShift64::new(seed);
            (0..10)
                .map(|_| resolve_next_speaker_with_rng("", "NOX", &reg, &p, &mut rng).next_id)
                .collect::<Vec<_>>()
        };
        assert_eq!(run(5), run(5));
    }

    #[test]
    fn a_random_fallback_draws_those_yet_to_speak_in_the_run_first() {
        let p = NominationPolicy {
            fallback: Fallback::Random,
            ..policy()
        };
        let reg = seed();
        let spoken: BTreeSet<String> = ["LUMINA".to_owned()].into();
        for seed in 0..50 {
            let mut rng = XorShift64::new(seed);
            let d = resolve_in_run_with_rng("", "CLARIS", &spoken, &reg, &p, &mut rng);
            assert_eq!((d.next_id, d.reason), (some("NOX"), Reason::Random));
        }
        // Everyone spoke: any other again. Round-robin ignores the set (seed 000 order).
        let all: BTreeSet<String> = reg.ids().map(str::to_owned).collect();
        let mut rng = XorShift64::new(7);
        let drawn: BTreeSet<_> = (0..100)
            .map(|_| resolve_in_run_with_rng("", "CLARIS", &all, &reg, &p, &mut rng).next_id)
            .collect();
        assert_eq!(drawn.len(), 2);
        let rr = resolve_in_run_with_rng("", "CLARIS", &spoken, &reg, &policy(), &mut rng);
        assert_eq!(rr.next_id, some("NOX"));
        let rr = resolve_in_run_with_rng("", "NOX", &spoken, &reg, &policy(), &mut rng);
        assert_eq!(
            rr.next_id,
            some("LUMINA"),
            "round-robin keeps registry order"
        );
    }

    #[test]
    fn none_when_nobody_else_exists() {
        let solo = SpeakerRegistry::new(vec![SpeakerEntry::new("LUMINA", "ルミナ", "る")]);
        let Ok(solo) = solo else {
            panic!("solo registry rejected");
        };
        for fallback in [Fallback::RoundRobin, Fallback::Random] {
            let p = NominationPolicy {
                fallback,
                ..policy()
            };
            let d = resolve_next_speaker("[Next: LUMINA]", "LUMINA", &solo, &p);
            assert_eq!((d.next_id, d.reason), (None, Reason::None));
        }
        // With self-nomination allowed the only character may continue.
        let p = NominationPolicy {
            allow_self_nomination: true,
            ..policy()
        };
        let d = resolve_next_speaker("[Next: LUMINA]", "LUMINA", &solo, &p);
        assert_eq!(d.reason, Reason::Tag);
    }

    #[test]
    fn current_speaker_is_recognised_case_insensitively() {
        assert_eq!(
            decided("[Next: NOX]", "nox"),
            (some("LUMINA"), Reason::RoundRobin)
        );
    }

    #[test]
    fn json_fragment_and_last_form_wins() {
        assert_eq!(
            decided(r#"了解。{"next":"NOX"}"#, "LUMINA"),
            (some("NOX"), Reason::Tag)
        );
        assert_eq!(
            decided(r#"[Next: CLARIS] {"next": "NOX"}"#, "LUMINA"),
            (some("NOX"), Reason::Tag)
        );
        assert_eq!(
            decided(r#"{"next": "NOX"} [Next: CLARIS]"#, "LUMINA"),
            (some("CLARIS"), Reason::Tag)
        );
    }

    #[test]
    fn think_and_width_rules_apply_before_matching() {
        assert_eq!(
            decided("<think>[Next: NOX]</think>[Next: CLARIS]", "LUMINA"),
            (some("CLARIS"), Reason::Tag)
        );
        assert_eq!(
            decided("[Next: NOX]<think>maybe [Next: CLARIS]", "LUMINA"),
            (some("NOX"), Reason::Tag)
        );
        assert_eq!(
            decided("［ＮＥＸＴ：ｎｏｘ］", "LUMINA"),
            (some("NOX"), Reason::Tag)
        );
        assert_eq!(decided("[NeXt: ﾉｸｽ]", "LUMINA"), (some("NOX"), Reason::Tag));
    }

    #[test]
    fn serializes_with_the_probe_field_names() {
        let d = resolve("[Next: CLARISS]", "NOX");
        let v = serde_json::to_value(&d).ok();
        let expected = serde_json::json!({
            "next_id": "CLARIS", "reason": "fuzzy", "extracted": "CLARISS", "normalized": "CLARISS"
        });
        assert_eq!(v.as_ref(), Some(&expected));
        assert_eq!(d.to_json(), expected);
        let none = NextSpeakerDecision {
            next_id: None,
            reason: Reason::None,
            extracted: String::new(),
            normalized: String::new(),
        };
        assert_eq!(none.to_json()["next_id"], serde_json::Value::Null);
        assert_eq!(none.to_json()["reason"], "none");
        for (r, s) in [
            (Reason::Tag, "tag"),
            (Reason::Fuzzy, "fuzzy"),
            (Reason::RoundRobin, "round_robin"),
            (Reason::Random, "random"),
            (Reason::None, "none"),
        ] {
            assert_eq!(serde_json::to_value(r).ok(), Some(serde_json::json!(s)));
            assert_eq!(r.to_string(), s);
        }
    }
}

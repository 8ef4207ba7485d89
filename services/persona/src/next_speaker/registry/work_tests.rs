//! Seed 000 §非機能要件: a resolution is O(characters). Counted in members visited (every
//! visit goes through `Cast`), not timed, so the check is exact on any machine.

use super::cast::count_visits;
use crate::next_speaker::{resolve_next_speaker_with_rng, Fallback, NominationPolicy};
use crate::next_speaker::{SpeakerEntry, SpeakerRegistry, XorShift64};

fn cast(n: usize) -> SpeakerRegistry {
    let entries = (0..n)
        .map(|i| SpeakerEntry::new(format!("C{i:05}"), format!("キャラ{i:05}"), format!("s{i}")))
        .collect();
    SpeakerRegistry::new(entries).expect("a valid cast")
}

/// Members visited by each resolution of one cast of `n`, the worst cases included: the
/// last character named (every exact scan runs to the end), a synonym, a near miss (fuzzy
/// over every name), an unknown name and no tag (both falling back).
fn visits(n: usize) -> Vec<(String, u64)> {
    let registry = cast(n);
    let last = n - 1;
    let round_robin = NominationPolicy::default();
    let random = NominationPolicy {
        fallback: Fallback::Random,
        ..NominationPolicy::default()
    };
    let cases = [
        (format!("[Next: C{last:05}]"), &round_robin),
        (format!("[Next: キャラ{last:05}さん]"), &round_robin),
        (format!("[Next: c{last:05}x]"), &round_robin),
        ("[Next: NOBODY]".to_owned(), &round_robin),
        ("no tag at all".to_owned(), &round_robin),
        ("no tag at all".to_owned(), &random),
    ];
    let current = format!("C{last:05}");
    cases
        .into_iter()
        .map(|(text, policy)| {
            let mut rng = XorShift64::new(7);
            let (decision, work) = count_visits(|| {
                resolve_next_speaker_with_rng(&text, &current, &registry, policy, &mut rng)
            });
            assert!(decision.next_id.is_some(), "{text}: {decision:?}");
            (text, work)
        })
        .collect()
}

#[test]
fn a_resolution_visits_each_character_a_bounded_number_of_times() {
    let (small, large) = (40, 400);
    let (at_small, at_large) = (visits(small), visits(large));
    // The bound: a constant number of passes over the cast (position of the current
    // speaker, three exact steps, three synonym steps, three fuzzy passes), plus a few.
    for (n, cases) in [(small, &at_small), (large, &at_large)] {
        for (text, work) in cases.iter() {
            assert!(
                *work <= 12 * n as u64 + 12,
                "{text} with {n}: {work} visits"
            );
        }
    }
    // And it grows linearly: ten times the cast, about ten times the work (a quadratic
    // pass would make it a hundred).
    let total = |cases: &[(String, u64)]| cases.iter().map(|c| c.1).sum::<u64>() as f64;
    let growth = total(&at_large) / total(&at_small);
    assert!(
        (8.0..=10.5).contains(&growth),
        "{growth:.2}× the work for 10× the cast: {at_small:?} → {at_large:?}"
    );
}

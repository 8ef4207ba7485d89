//! Runs every case of the shared `next_speaker.json` fixture through the resolver.

use ghost_persona::next_speaker::{
    resolve_next_speaker, resolve_next_speaker_with_rng, NominationPolicy, Reason, SpeakerEntry,
    SpeakerRegistry, XorShift64,
};
use serde::Deserialize;

const FIXTURE: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/next_speaker.json"
));

#[derive(Deserialize)]
struct Fixture {
    registry: Vec<SpeakerEntry>,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    text: String,
    current: String,
    policy: NominationPolicy,
    expect: Expect,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Expect {
    reason: Reason,
    normalized: String,
    #[serde(default)]
    next_id: Option<String>,
    #[serde(default)]
    next_id_one_of: Option<Vec<String>>,
}

fn load() -> Fixture {
    match serde_json::from_str(FIXTURE) {
        Ok(f) => f,
        Err(e) => panic!("next_speaker.json does not parse: {e}"),
    }
}

#[test]
fn every_fixture_case_resolves_as_expected() {
    let fixture = load();
    let registry = match SpeakerRegistry::new(fixture.registry) {
        Ok(r) => r,
        Err(e) => panic!("fixture registry rejected: {e}"),
    };
    assert!(!fixture.cases.is_empty());
    let mut checked = 0;
    for (n, case) in fixture.cases.iter().enumerate() {
        let ctx = format!("case #{n} {:?} (current {})", case.text, case.current);
        // Several seeds, plus process entropy, so a random case is checked across outcomes.
        let mut decisions: Vec<_> = (1..=16u64)
            .map(|seed| {
                resolve_next_speaker_with_rng(
                    &case.text,
                    &case.current,
                    &registry,
                    &case.policy,
                    &mut XorShift64::new(seed),
                )
            })
            .collect();
        decisions.push(resolve_next_speaker(
            &case.text,
            &case.current,
            &registry,
            &case.policy,
        ));
        for d in &decisions {
            assert_eq!(d.reason, case.expect.reason, "{ctx}: reason");
            assert_eq!(d.normalized, case.expect.normalized, "{ctx}: normalized");
            match (&case.expect.next_id, &case.expect.next_id_one_of) {
                (Some(id), _) => assert_eq!(d.next_id.as_ref(), Some(id), "{ctx}: next_id"),
                (None, Some(one_of)) => {
                    let got = d.next_id.clone().unwrap_or_default();
                    assert!(one_of.contains(&got), "{ctx}: {got:?} not in {one_of:?}");
                }
                (None, None) => assert_eq!(d.next_id, None, "{ctx}: next_id"),
            }
        }
        if let Some(one_of) = &case.expect.next_id_one_of {
            // Every allowed outcome is reachable, not just one of them.
            for id in one_of {
                assert!(
                    decisions.iter().any(|d| d.next_id.as_ref() == Some(id)),
                    "{ctx}: {id} never chosen"
                );
            }
        }
        checked += 1;
    }
    assert_eq!(checked, fixture.cases.len());
}

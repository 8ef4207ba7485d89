//! The pure mood computation, shared by [`mood_at`], [`probe`] and the projection.

use ghost_shared::affect::{AffectLabel, ResponsePolicy};

use super::episode::{Episode, EpisodeError, RawEpisode};
use ghost_shared::affect::{ConstantsError, MoodConstants};
use ghost_shared::affect::{MoodComponents, MoodState};

/// Accumulator slot of `neutral`: summed into and then discarded, so the hot loop has no branch.
const NEUTRAL_SLOT: usize = 4;

/// An episode reduced to what a read needs; everything independent of `now` is precomputed once.
///
/// The pure function and the projection build these with the same [`prepare`] and fold them with
/// the same [`evaluate`], which makes their results bit-identical.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Prepared {
    /// Unix seconds of the episode.
    pub(crate) at: f64,
    /// τ(salience) in seconds.
    tau: f64,
    /// intensity × salience × confidence (the impact before decay).
    impact_weight: f64,
    /// gain × salience × confidence (the policy score before decay).
    policy_base: f64,
    /// Index into the per-label sums; [`NEUTRAL_SLOT`] for neutral.
    slot: usize,
    /// The LLM policy carried by the episode.
    policy: Option<ResponsePolicy>,
}

/// Clamps to 0..1, mapping NaN to 0 (as the reference implementation does).
pub(crate) fn clamp01(x: f64) -> f64 {
    if x >= 1.0 {
        1.0
    } else if x > 0.0 {
        x
    } else {
        0.0
    }
}

/// Precomputes the `now`-independent factors of one episode.
///
/// Inputs are clamped so that an unvalidated, hand-built [`Episode`] still yields a sane result;
/// for validated episodes the clamps change nothing.
pub(crate) fn prepare(e: &Episode, c: &MoodConstants) -> Prepared {
    let intensity = clamp01(e.intensity);
    let salience = clamp01(e.salience);
    let confidence = clamp01(e.confidence.unwrap_or(c.default_confidence));
    Prepared {
        at: e.at,
        tau: c.tau(salience),
        impact_weight: intensity * salience * confidence,
        policy_base: c.policy_score_gain * salience * confidence,
        slot: e.label.emotion_index().unwrap_or(NEUTRAL_SLOT),
        policy: e.policy,
    }
}

/// Folds prepared episodes, NEWEST FIRST, into the mood at `now`.
///
/// Newest first mirrors the reference summation order, and makes the newest episode win a tie
/// in policy score (a later equal score does not replace the earlier one).
pub(crate) fn evaluate<'a>(
    newest_first: impl Iterator<Item = &'a Prepared>,
    now: f64,
    c: &MoodConstants,
) -> MoodState {
    let mut sums = [0.0_f64; 5];
    let mut best: Option<(f64, ResponsePolicy)> = None;
    for e in newest_first {
        if e.slot == NEUTRAL_SLOT && e.policy.is_none() {
            // Neutral adds nothing and has no policy: skip the exp.
            continue;
        }
        // Episodes stamped after `now` count as happening now (no growth beyond full weight).
        let dt = (now - e.at).max(0.0);
        let decay = (-dt / e.tau).exp();
        if let Some(sum) = sums.get_mut(e.slot) {
            *sum += e.impact_weight * decay;
        }
        if let Some(policy) = e.policy {
            let score = clamp01(e.policy_base * decay);
            if score > 0.0 && best.is_none_or(|(b, _)| score > b) {
                best = Some((score, policy));
            }
        }
    }

    let [joy, sadness, anger, fear, _neutral] = sums.map(|x| 1.0 - (-x.max(0.0)).exp());
    let components = MoodComponents {
        joy,
        sadness,
        anger,
        fear,
    };

    // Strictly greater replaces: ties keep the earlier label (joy > sadness > anger > fear).
    let mut label = AffectLabel::Joy;
    let mut intensity = joy;
    for (l, v) in AffectLabel::EMOTIONS.iter().zip(components.as_array()) {
        if v > intensity {
            label = *l;
            intensity = v;
        }
    }
    if intensity < c.neutral_below {
        label = AffectLabel::Neutral;
    }

    let refusal_bias = clamp01((anger - c.refusal_bias_anger_floor) / c.refusal_bias_anger_span);
    let mut response_policy = ResponsePolicy {
        cooperation: clamp01(1.0 - c.cooperation_refusal_slope * refusal_bias),
        refusal_bias,
        refusal_allowed: anger >= c.refusal_gate_anger,
    };

    if let Some((weight, llm)) = best {
        let weight = clamp01(weight);
        let blend = |own: f64, theirs: f64| clamp01((1.0 - weight) * own + weight * theirs);
        response_policy.cooperation = blend(response_policy.cooperation, llm.cooperation);
        response_policy.refusal_bias = blend(response_policy.refusal_bias, llm.refusal_bias);
        // A bool flips hard, so only a strong recent policy may override the computed gate.
        if weight >= c.policy_override_min_score {
            response_policy.refusal_allowed = llm.refusal_allowed;
        }
    }

    MoodState {
        label,
        intensity,
        components,
        response_policy,
    }
}

/// The mood at `now` (Unix seconds) from `episodes` in any order.
///
/// Only the newest `max_episodes` (by `at`; on equal `at` the later in the slice is newer) count.
/// `constants` are assumed valid ([`MoodConstants::validate`]); episodes should be validated
/// ([`Episode::validate`]) but out-of-range values are clamped rather than trusted.
pub fn mood_at(episodes: &[Episode], now: f64, constants: &MoodConstants) -> MoodState {
    let mut by_time: Vec<&Episode> = episodes.iter().collect();
    // Stable sort: input order breaks ties in `at`, the same rule the projection applies.
    by_time.sort_by(|a, b| a.at.total_cmp(&b.at));
    let skip = by_time.len().saturating_sub(constants.max_episodes);
    let prepared: Vec<Prepared> = by_time
        .into_iter()
        .skip(skip)
        .map(|e| prepare(e, constants))
        .collect();
    evaluate(prepared.iter().rev(), now, constants)
}

/// Why `ghost mood` input was refused.
#[derive(Debug, thiserror::Error)]
pub enum MoodInputError {
    /// stdin is not a JSON array of episode objects (or has unknown fields).
    #[error("episodes input is not a valid JSON array of episodes: {0}")]
    Json(#[from] serde_json::Error),
    /// One episode has an invalid value.
    #[error("episode #{index}: {source}")]
    Episode {
        /// Zero-based position in the input array.
        index: usize,
        /// What is wrong with it.
        #[source]
        source: EpisodeError,
    },
    /// `--now` is not a finite number.
    #[error("`now` = {0} is not a finite Unix timestamp")]
    InvalidNow(f64),
    /// The constants are invalid.
    #[error(transparent)]
    Constants(#[from] ConstantsError),
}

/// `ghost mood --now <unix-seconds>`: parses a JSON array of episodes and returns the mood.
pub fn probe(
    input_json: &str,
    now: f64,
    constants: &MoodConstants,
) -> Result<MoodState, MoodInputError> {
    constants.validate()?;
    if !now.is_finite() {
        return Err(MoodInputError::InvalidNow(now));
    }
    let raw: Vec<RawEpisode> = serde_json::from_str(input_json)?;
    let episodes = raw
        .into_iter()
        .enumerate()
        .map(|(index, r)| {
            Episode::try_from(r).map_err(|source| MoodInputError::Episode { index, source })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(mood_at(&episodes, now, constants))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: f64 = 1_760_000_000.0;

    fn ep(dt: f64, label: AffectLabel, intensity: f64, salience: f64) -> Episode {
        Episode {
            at: NOW - dt,
            label,
            intensity,
            salience,
            confidence: Some(1.0),
            policy: None,
        }
    }

    fn c() -> MoodConstants {
        MoodConstants::default()
    }

    /// Component value for one episode, computed by hand from the seed formula.
    fn by_hand(intensity: f64, salience: f64, confidence: f64, dt: f64) -> f64 {
        let tau = 120.0 + (21600.0 - 120.0) * salience * salience;
        1.0 - (-(intensity * salience * confidence * (-dt / tau).exp())).exp()
    }

    #[test]
    fn impact_formula_matches_hand_computation() {
        let m = mood_at(&[ep(600.0, AffectLabel::Fear, 0.8, 0.6)], NOW, &c());
        assert!((m.components.fear - by_hand(0.8, 0.6, 1.0, 600.0)).abs() < 1e-12);
        assert_eq!(m.components.joy, 0.0);
    }

    #[test]
    fn sums_per_label_before_squashing() {
        let e = ep(0.0, AffectLabel::Joy, 0.5, 1.0);
        let m = mood_at(&[e.clone(), e], NOW, &c());
        assert!((m.components.joy - (1.0 - (-1.0_f64).exp())).abs() < 1e-12);
    }

    #[test]
    fn neutral_threshold_applies_below_but_not_at_the_boundary() {
        // 1 − e^−x = 0.15 ⇔ x = −ln(0.85); with dt = 0, salience 1, confidence 1: x = intensity.
        let x = -(0.85_f64.ln());
        let below = mood_at(&[ep(0.0, AffectLabel::Sadness, x * 0.999, 1.0)], NOW, &c());
        assert_eq!(below.label, AffectLabel::Neutral);
        assert!(below.intensity > 0.14);
        let above = mood_at(&[ep(0.0, AffectLabel::Sadness, x * 1.001, 1.0)], NOW, &c());
        assert_eq!(above.label, AffectLabel::Sadness);
        let at = mood_at(
            &[ep(0.0, AffectLabel::Sadness, 1.0, 1.0)],
            NOW,
            &MoodConstants {
                neutral_below: 1.0 - (-1.0_f64).exp(),
                ..c()
            },
        );
        assert_eq!(at.label, AffectLabel::Sadness);
    }

    #[test]
    fn ties_go_joy_sadness_anger_fear() {
        let labels = AffectLabel::EMOTIONS;
        for (i, winner) in labels.iter().enumerate() {
            // Equal contributions for the winner and every label after it.
            let eps: Vec<Episode> = labels[i..]
                .iter()
                .rev()
                .map(|l| ep(0.0, *l, 0.9, 1.0))
                .collect();
            let m = mood_at(&eps, NOW, &c());
            assert_eq!(m.label, *winner, "tie among {:?}", &labels[i..]);
        }
    }

    #[test]
    fn neutral_label_adds_nothing() {
        let base = vec![ep(10.0, AffectLabel::Anger, 0.5, 0.8)];
        let mut with_neutral = base.clone();
        with_neutral.push(ep(0.0, AffectLabel::Neutral, 1.0, 1.0));
        assert_eq!(mood_at(&base, NOW, &c()), mood_at(&with_neutral, NOW, &c()));
    }

    #[test]
    fn only_the_newest_500_count() {
        // 500 fresh joy episodes and one older, huge anger episode: anger must be ignored.
        let mut eps: Vec<Episode> = (0..500)
            .map(|i| ep(f64::from(i), AffectLabel::Joy, 0.001, 0.5))
            .collect();
        eps.insert(0, ep(1000.0, AffectLabel::Anger, 1.0, 1.0));
        let m = mood_at(&eps, NOW, &c());
        assert_eq!(m.components.anger, 0.0);
        assert!(m.components.joy > 0.0);
        // With 499 joy episodes the anger one is back in the window.
        let m = mood_at(&eps[..500], NOW, &c());
        assert!(m.components.anger > 0.6);
    }

    #[test]
    fn cap_is_by_time_not_input_order_and_neutral_counts_towards_it() {
        let c1 = MoodConstants {
            max_episodes: 1,
            ..c()
        };
        let old_anger = ep(100.0, AffectLabel::Anger, 1.0, 1.0);
        let new_joy = ep(0.0, AffectLabel::Joy, 1.0, 1.0);
        let m = mood_at(&[new_joy.clone(), old_anger.clone()], NOW, &c1);
        assert_eq!(m.label, AffectLabel::Joy);
        assert_eq!(m.components.anger, 0.0);
        // A newer neutral episode is labelled, so it takes the only slot.
        let neutral = ep(0.0, AffectLabel::Neutral, 1.0, 1.0);
        let m = mood_at(&[old_anger, neutral], NOW, &c1);
        assert_eq!(m.components.anger, 0.0);
    }

    #[test]
    fn missing_confidence_counts_as_half() {
        let mut e = ep(60.0, AffectLabel::Joy, 0.9, 0.9);
        e.confidence = None;
        let mut half = e.clone();
        half.confidence = Some(0.5);
        let m = mood_at(&[e], NOW, &c());
        assert_eq!(m, mood_at(&[half], NOW, &c()));
        assert!((m.components.joy - by_hand(0.9, 0.9, 0.5, 60.0)).abs() < 1e-12);
    }

    #[test]
    fn knobs_follow_anger() {
        // anger = 1 − e^−x; choose x for anger = 0.775: refusal_bias = 0.5, cooperation = 0.55.
        // Two episodes because x ≈ 1.49 exceeds the 0..1 intensity range.
        let half = ep(0.0, AffectLabel::Anger, -(0.225_f64.ln()) / 2.0, 1.0);
        let m = mood_at(&[half.clone(), half], NOW, &c());
        assert!((m.components.anger - 0.775).abs() < 1e-12);
        assert!((m.response_policy.refusal_bias - 0.5).abs() < 1e-9);
        assert!((m.response_policy.cooperation - 0.55).abs() < 1e-9);
        assert!(m.response_policy.refusal_allowed);
        // Below the floor: bias clamps to 0 and the gate stays shut.
        let calm = mood_at(&[ep(0.0, AffectLabel::Anger, 0.5, 1.0)], NOW, &c());
        assert_eq!(calm.response_policy.refusal_bias, 0.0);
        assert_eq!(calm.response_policy.cooperation, 1.0);
        assert!(!calm.response_policy.refusal_allowed);
    }

    #[test]
    fn refusal_gate_is_inclusive() {
        let gate = 1.0 - (-1.0_f64).exp();
        let m = mood_at(
            &[ep(0.0, AffectLabel::Anger, 1.0, 1.0)],
            NOW,
            &MoodConstants {
                refusal_gate_anger: gate,
                ..c()
            },
        );
        assert!(m.response_policy.refusal_allowed);
    }

    fn with_policy(mut e: Episode, cooperation: f64, refusal_bias: f64, allowed: bool) -> Episode {
        e.policy = Some(ResponsePolicy {
            cooperation,
            refusal_bias,
            refusal_allowed: allowed,
        });
        e
    }

    #[test]
    fn policy_blends_linearly_with_its_score() {
        // score = 1.5 × 0.4 × 0.5 × 1 = 0.3 (dt = 0); neutral so components stay calm.
        let mut e = with_policy(ep(0.0, AffectLabel::Neutral, 0.0, 0.4), 0.0, 1.0, true);
        e.confidence = Some(0.5);
        let m = mood_at(&[e], NOW, &c());
        assert!((m.response_policy.cooperation - 0.7).abs() < 1e-12);
        assert!((m.response_policy.refusal_bias - 0.3).abs() < 1e-12);
        // score < 0.5: the bool is not replaced.
        assert!(!m.response_policy.refusal_allowed);
    }

    #[test]
    fn policy_bool_replaced_only_from_score_half() {
        // Gain 1 so that score = salience exactly (dt = 0, confidence 1).
        let unit_gain = MoodConstants {
            policy_score_gain: 1.0,
            ..c()
        };
        let at_half = with_policy(ep(0.0, AffectLabel::Neutral, 0.0, 0.5), 1.0, 0.0, true);
        let m = mood_at(&[at_half], NOW, &unit_gain);
        assert!(m.response_policy.refusal_allowed, "score 0.5 replaces");
        let below = with_policy(ep(0.0, AffectLabel::Neutral, 0.0, 0.49), 1.0, 0.0, true);
        assert!(
            !mood_at(&[below], NOW, &unit_gain)
                .response_policy
                .refusal_allowed
        );
        // A strong policy can also switch a computed `true` off.
        let angry = ep(0.0, AffectLabel::Anger, 1.0, 1.0);
        let mut eps = vec![angry.clone(), angry];
        eps.push(with_policy(
            ep(0.0, AffectLabel::Neutral, 0.0, 1.0),
            1.0,
            0.0,
            false,
        ));
        let m = mood_at(&eps, NOW, &c());
        assert!(m.components.anger >= 0.75);
        assert!(!m.response_policy.refusal_allowed);
    }

    #[test]
    fn highest_score_policy_wins_and_newest_wins_ties() {
        let strong = with_policy(ep(0.0, AffectLabel::Neutral, 0.0, 0.9), 0.1, 0.9, true);
        let weak = with_policy(ep(0.0, AffectLabel::Neutral, 0.0, 0.2), 0.9, 0.1, false);
        let m = mood_at(&[strong.clone(), weak], NOW, &c());
        assert!(m.response_policy.refusal_allowed);
        assert!((m.response_policy.cooperation - 0.1).abs() < 1e-12);
        // Both clamp to score 1.0: the newer one (later `at`) wins.
        let mut newer = with_policy(ep(0.0, AffectLabel::Neutral, 0.0, 1.0), 0.6, 0.4, false);
        newer.at = strong.at + 1.0;
        let m = mood_at(&[newer, strong], NOW + 1.0, &c());
        assert!(!m.response_policy.refusal_allowed);
        assert!((m.response_policy.cooperation - 0.6).abs() < 1e-12);
    }

    #[test]
    fn future_episodes_do_not_exceed_full_weight_and_bad_values_are_clamped() {
        let future = mood_at(&[ep(-3600.0, AffectLabel::Joy, 0.5, 0.5)], NOW, &c());
        let present = mood_at(&[ep(0.0, AffectLabel::Joy, 0.5, 0.5)], NOW, &c());
        assert_eq!(future, present);
        let wild = Episode {
            intensity: 7.0,
            salience: f64::NAN,
            ..ep(0.0, AffectLabel::Joy, 0.0, 0.0)
        };
        let m = mood_at(&[wild], NOW, &c());
        assert_eq!(m.components.joy, 0.0, "NaN salience clamps to 0");
    }

    #[test]
    fn probe_rejects_bad_input_with_typed_errors() {
        let c = c();
        assert!(matches!(
            probe("not json", NOW, &c),
            Err(MoodInputError::Json(_))
        ));
        assert!(matches!(
            probe(r#"{"at":1}"#, NOW, &c),
            Err(MoodInputError::Json(_))
        ));
        let out_of_range = r#"[{"at":1,"label":"joy","intensity":0.5,"salience":0.5},
                               {"at":2,"label":"joy","intensity":1.5,"salience":0.5}]"#;
        match probe(out_of_range, NOW, &c) {
            Err(MoodInputError::Episode {
                index: 1,
                source: EpisodeError::OutOfRange { field, .. },
            }) => assert_eq!(field, "intensity"),
            other => panic!("unexpected {other:?}"),
        }
        let unknown = r#"[{"at":1,"label":"glee","intensity":0.5,"salience":0.5}]"#;
        assert!(matches!(
            probe(unknown, NOW, &c),
            Err(MoodInputError::Episode {
                index: 0,
                source: EpisodeError::UnknownLabel(_)
            })
        ));
        assert!(matches!(
            probe("[]", f64::NAN, &c),
            Err(MoodInputError::InvalidNow(_))
        ));
        let bad_constants = MoodConstants {
            tau_min_seconds: -1.0,
            ..c
        };
        assert!(matches!(
            probe("[]", NOW, &bad_constants),
            Err(MoodInputError::Constants(_))
        ));
        assert_eq!(probe("[]", NOW, &c).unwrap(), MoodState::default());
    }
}

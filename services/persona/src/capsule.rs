//! The mood capsule: the persona's current mood as compact JSON plus a short tone guide,
//! injected into the context of every reply (seed 004).

use ghost_shared::affect::{AffectLabel, MoodState};

/// Refusal bias above which the persona hedges even when it may not refuse.
const HEDGE_FROM_BIAS: f64 = 0.3;
/// Cooperation below which help is kept minimal.
const MINIMAL_HELP_BELOW: f64 = 0.5;

/// The capsule text for `state`.
pub fn mood_capsule(state: &MoodState) -> String {
    let json = serde_json::to_string(state).unwrap_or_else(|_| "{}".into());
    let mut guide = vec![tone_of(state)];
    let policy = &state.response_policy;
    if policy.refusal_allowed {
        guide.push(
            "You may decline the request if you do not want to do it; say so briefly and in character, without lecturing.",
        );
    } else if policy.refusal_bias >= HEDGE_FROM_BIAS {
        guide.push("Hedge: help, but with visible reluctance and fewer extras.");
    }
    if policy.cooperation < MINIMAL_HELP_BELOW {
        guide.push("Keep your help minimal: answer only what was asked.");
    }
    format!("[your mood now]\n{json}\nTone: {}", guide.join(" "))
}

fn tone_of(state: &MoodState) -> &'static str {
    match state.label {
        AffectLabel::Joy => "You are in a good mood: warm and a little playful.",
        AffectLabel::Sadness => "You feel low: quieter, gentle, fewer words.",
        AffectLabel::Anger => "You are irritated: curt and direct; stay civil.",
        AffectLabel::Fear => "You feel uneasy: careful, cautious wording.",
        AffectLabel::Neutral => "You are calm: your usual self.",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calm_state_allows_no_refusal() {
        let c = mood_capsule(&MoodState::default());
        assert!(c.contains(r#""label":"neutral""#) && c.contains("calm"));
        assert!(!c.contains("decline") && !c.contains("Hedge") && !c.contains("minimal"));
    }

    #[test]
    fn anger_with_refusal_allowed_reaches_the_guide() {
        let mut s = MoodState {
            label: AffectLabel::Anger,
            ..Default::default()
        };
        s.components.anger = 0.9;
        s.response_policy.refusal_allowed = true;
        s.response_policy.refusal_bias = 0.8;
        s.response_policy.cooperation = 0.28;
        let c = mood_capsule(&s);
        assert!(c.contains(r#""refusal_allowed":true"#), "{c}");
        assert!(
            c.contains("decline") && c.contains("minimal") && c.contains("irritated"),
            "{c}"
        );
    }

    #[test]
    fn a_high_bias_without_permission_hedges() {
        let mut s = MoodState::default();
        s.response_policy.refusal_bias = 0.4;
        assert!(mood_capsule(&s).contains("Hedge"));
    }
}

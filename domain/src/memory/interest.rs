//! Merging an interest update into the interest state, deterministically: weights decay as
//! `w * exp(-dt / tau)`, a target named again takes `max(decayed, new)`, targets under
//! [`MIN_WEIGHT`] are dropped, at most [`MAX_TARGETS`] are kept (highest weight first, ties
//! by value), the mode is replaced when given and the last [`MAX_SOURCE_EVENTS`] source
//! events are kept.

use uuid::Uuid;

use super::model::{AttentionTarget, InterestState, Memory};
use super::validate::CheckedInterestUpdate;

/// Most attention targets kept.
pub const MAX_TARGETS: usize = 12;
/// Targets weighing less are dropped.
pub const MIN_WEIGHT: f64 = 0.05;
/// Most source event ids kept.
pub const MAX_SOURCE_EVENTS: usize = 20;
/// Default decay time constant: 3 days, in seconds.
pub const DEFAULT_TAU_SECS: f64 = 3.0 * 86_400.0;

impl InterestState {
    /// The targets' weights as of `now` (decayed from `updated_at`; time never runs back).
    pub fn decayed_targets(&self, now: f64, tau_secs: f64) -> Vec<AttentionTarget> {
        let factor = (-(now - self.updated_at).max(0.0) / tau_secs).exp();
        self.attention_targets
            .iter()
            .map(|t| AttentionTarget {
                weight: t.weight * factor,
                ..t.clone()
            })
            .collect()
    }

    /// The whole state as of `now`, its weights decayed: how recall, the write plan and the
    /// deliberation all read it.
    pub fn at(&self, now: f64, tau_secs: f64) -> Self {
        Self {
            attention_targets: self.decayed_targets(now, tau_secs),
            ..self.clone()
        }
    }

    /// This state after `update`, caused by `event_id` at `now`.
    pub fn merged(
        &self,
        update: &CheckedInterestUpdate,
        event_id: Uuid,
        now: f64,
        tau_secs: f64,
    ) -> Self {
        let mut targets = self.decayed_targets(now, tau_secs);
        for (target_type, value, weight) in &update.targets {
            match targets
                .iter_mut()
                .find(|t| t.target_type == *target_type && t.value == *value)
            {
                Some(t) => t.weight = t.weight.max(*weight),
                None => targets.push(AttentionTarget {
                    target_type: *target_type,
                    value: value.clone(),
                    weight: *weight,
                }),
            }
        }
        targets.retain(|t| t.weight >= MIN_WEIGHT);
        targets.sort_by(|a, b| {
            b.weight
                .total_cmp(&a.weight)
                .then_with(|| a.value.cmp(&b.value))
                .then_with(|| a.target_type.cmp(&b.target_type))
        });
        targets.truncate(MAX_TARGETS);
        let mut sources = self.updated_from_event_ids.clone();
        if !sources.contains(&event_id) {
            sources.push(event_id);
        }
        let skip = sources.len().saturating_sub(MAX_SOURCE_EVENTS);
        Self {
            attention_targets: targets,
            interaction_mode: update.interaction_mode.unwrap_or(self.interaction_mode),
            updated_from_event_ids: sources.split_off(skip),
            updated_at: now.max(self.updated_at),
        }
    }
}

impl Memory {
    /// The interest state as of `now` ([`InterestState::at`]), if one is recorded.
    pub fn interest_at(&self, now: f64, tau_secs: f64) -> Option<InterestState> {
        self.interest.as_ref().map(|i| i.at(now, tau_secs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::vocab::{InteractionMode, TargetType};

    fn update(targets: &[(&str, f64)]) -> CheckedInterestUpdate {
        CheckedInterestUpdate {
            targets: targets
                .iter()
                .map(|(v, w)| (TargetType::Topic, (*v).to_owned(), *w))
                .collect(),
            interaction_mode: None,
        }
    }

    #[test]
    fn a_target_named_again_takes_the_larger_weight() {
        let s = InterestState::empty(0.0).merged(
            &update(&[("a", 0.9)]),
            Uuid::nil(),
            0.0,
            DEFAULT_TAU_SECS,
        );
        let later = s.merged(
            &update(&[("a", 0.2)]),
            Uuid::nil(),
            DEFAULT_TAU_SECS,
            DEFAULT_TAU_SECS,
        );
        assert!((later.attention_targets[0].weight - 0.9 / std::f64::consts::E).abs() < 1e-12);
        let higher = s.merged(
            &update(&[("a", 0.95)]),
            Uuid::nil(),
            DEFAULT_TAU_SECS,
            DEFAULT_TAU_SECS,
        );
        assert_eq!(higher.attention_targets[0].weight, 0.95);
        assert_eq!(later.interaction_mode, InteractionMode::Observe);
    }

    #[test]
    fn keeps_twelve_heaviest_drops_light_ones_and_twenty_sources() {
        let many: Vec<(String, f64)> = (0..20)
            .map(|i| (format!("t{i:02}"), 0.04 + i as f64 * 0.01))
            .collect();
        let refs: Vec<(&str, f64)> = many.iter().map(|(v, w)| (v.as_str(), *w)).collect();
        let mut s =
            InterestState::empty(0.0).merged(&update(&refs), Uuid::nil(), 0.0, DEFAULT_TAU_SECS);
        assert_eq!(s.attention_targets.len(), MAX_TARGETS);
        assert_eq!(s.attention_targets[0].value, "t19");
        assert!(s.attention_targets.iter().all(|t| t.weight >= MIN_WEIGHT));
        // Ties: by value.
        let tie = InterestState::empty(0.0).merged(
            &update(&[("b", 0.5), ("a", 0.5)]),
            Uuid::nil(),
            0.0,
            DEFAULT_TAU_SECS,
        );
        assert_eq!(tie.attention_targets[0].value, "a");
        for i in 0..25u128 {
            s = s.merged(&update(&[]), Uuid::from_u128(i), 0.0, DEFAULT_TAU_SECS);
        }
        assert_eq!(s.updated_from_event_ids.len(), MAX_SOURCE_EVENTS);
        assert_eq!(s.updated_from_event_ids.last(), Some(&Uuid::from_u128(24)));
    }
}

//! A persona's episode window in memory: restored from the `mood_episodes` rows the
//! `partner_mood_state` projection keeps, then read at any `now`.

use std::collections::VecDeque;

use super::compute::{evaluate, prepare, Prepared};
use super::episode::{Episode, EpisodeError};
use ghost_shared::affect::MoodState;
use ghost_shared::affect::{ConstantsError, MoodConstants};

/// The newest `max_episodes` labelled episodes, kept sorted by time with their `now`-independent
/// factors precomputed, so that inserting is O(1) for in-order arrivals and
/// [`state_at`](Self::state_at) costs one `exp` per episode.
///
/// Not a [`Projection`](ghost_shared::projector::Projection): the projection is
/// [`MoodEpisodes`](crate::episodes::MoodEpisodes), which stores the window as rows; this is
/// the read-side form built from them. For episodes restored in slice order it gives exactly
/// [`mood_at`](super::mood_at)`(slice, …)` (same window, same summation order).
#[derive(Debug, Clone, PartialEq)]
pub struct MoodWindow {
    /// Constants the prepared factors were computed with.
    constants: MoodConstants,
    /// Episodes oldest first (by `at`; equal `at` in arrival order).
    episodes: VecDeque<Episode>,
    /// Parallel to `episodes`: the read-side form.
    prepared: VecDeque<Prepared>,
}

/// Why a window could not be built or restored.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MoodWindowError {
    /// The constants are invalid.
    #[error(transparent)]
    Constants(#[from] ConstantsError),
    /// A checkpointed episode is invalid.
    #[error("episode #{index}: {source}")]
    Episode {
        /// Position in the restored list.
        index: usize,
        /// What is wrong with it.
        #[source]
        source: EpisodeError,
    },
}

impl MoodWindow {
    /// An empty window.
    pub fn new(constants: MoodConstants) -> Result<Self, ConstantsError> {
        constants.validate()?;
        Ok(MoodWindow {
            constants,
            episodes: VecDeque::with_capacity(constants.max_episodes.min(4096)),
            prepared: VecDeque::with_capacity(constants.max_episodes.min(4096)),
        })
    }

    /// Builds a window from episodes (any order; inserted in the given order).
    pub fn restore(
        constants: MoodConstants,
        episodes: impl IntoIterator<Item = Episode>,
    ) -> Result<Self, MoodWindowError> {
        let mut window = Self::new(constants)?;
        for (index, episode) in episodes.into_iter().enumerate() {
            window
                .insert(episode)
                .map_err(|source| MoodWindowError::Episode { index, source })?;
        }
        Ok(window)
    }

    /// Adds one labelled episode; returns whether it is inside the window. The mood service
    /// adds the episodes projected since its last read this way, in the projection's order.
    ///
    /// An episode older than every episode of a full window is dropped (`Ok(false)`); otherwise
    /// the oldest episode leaves when the window overflows. Equal `at` counts later arrivals as
    /// newer, like the stable sort of [`mood_at`](super::mood_at).
    pub fn insert(&mut self, episode: Episode) -> Result<bool, EpisodeError> {
        episode.validate()?;
        let prepared = prepare(&episode, &self.constants);
        // Usually the newest: `partition_point` then returns `len` and the insert is a push.
        let pos = self.prepared.partition_point(|p| p.at <= episode.at);
        if pos == 0 && self.episodes.len() >= self.constants.max_episodes {
            return Ok(false);
        }
        self.episodes.insert(pos, episode);
        self.prepared.insert(pos, prepared);
        while self.episodes.len() > self.constants.max_episodes {
            self.episodes.pop_front();
            self.prepared.pop_front();
        }
        Ok(true)
    }

    /// The mood at `now` (Unix seconds; callers pass a finite clock value).
    pub fn state_at(&self, now: f64) -> MoodState {
        evaluate(self.prepared.iter().rev(), now, &self.constants)
    }

    /// Replaces the constants, recomputing the precomputed factors; a smaller `max_episodes`
    /// drops the oldest episodes (a larger one cannot bring dropped ones back). Test-only: the
    /// service's constants never change while it runs.
    #[cfg(test)]
    fn set_constants(&mut self, constants: MoodConstants) -> Result<(), ConstantsError> {
        constants.validate()?;
        self.constants = constants;
        while self.episodes.len() > constants.max_episodes {
            self.episodes.pop_front();
        }
        self.prepared = self
            .episodes
            .iter()
            .map(|e| prepare(e, &constants))
            .collect();
        Ok(())
    }

    /// The constants in use.
    pub fn constants(&self) -> &MoodConstants {
        &self.constants
    }

    /// The episodes in the window, oldest first.
    pub fn episodes(&self) -> impl ExactSizeIterator<Item = &Episode> + '_ {
        self.episodes.iter()
    }

    /// Number of episodes in the window.
    pub fn len(&self) -> usize {
        self.episodes.len()
    }

    /// Whether the window is empty.
    pub fn is_empty(&self) -> bool {
        self.episodes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mood::mood_at;
    use ghost_shared::affect::{AffectLabel, ResponsePolicy};

    const NOW: f64 = 1_760_000_000.0;

    fn ep(at: f64, label: AffectLabel, policy: bool) -> Episode {
        Episode {
            at,
            label,
            intensity: 0.4 + (at % 7.0) / 20.0,
            salience: (at % 11.0) / 10.0,
            confidence: if at % 3.0 == 0.0 { None } else { Some(0.8) },
            policy: policy.then_some(ResponsePolicy {
                cooperation: 0.3,
                refusal_bias: 0.6,
                refusal_allowed: true,
            }),
        }
    }

    fn mixed(n: usize) -> Vec<Episode> {
        (0..n)
            .map(|i| {
                // Out-of-order times and duplicate timestamps on purpose.
                let at = NOW - ((i * 7919) % 1000) as f64 * 13.0;
                let label = [
                    AffectLabel::Joy,
                    AffectLabel::Sadness,
                    AffectLabel::Anger,
                    AffectLabel::Fear,
                    AffectLabel::Neutral,
                ][i % 5];
                ep(at, label, i % 9 == 0)
            })
            .collect()
    }

    #[test]
    fn matches_the_pure_function_bit_for_bit_with_out_of_order_input() {
        let c = MoodConstants::default();
        for n in [0, 1, 7, 499, 500, 501, 1200] {
            let eps = mixed(n);
            let p = MoodWindow::restore(c, eps.clone()).unwrap();
            assert_eq!(p.len(), n.min(500));
            for now in [NOW, NOW + 60.0, NOW + 86_400.0] {
                assert_eq!(p.state_at(now), mood_at(&eps, now, &c), "n={n} now={now}");
            }
        }
    }

    #[test]
    fn keeps_only_the_newest_and_drops_too_old_arrivals() {
        let c = MoodConstants {
            max_episodes: 2,
            ..MoodConstants::default()
        };
        let mut p = MoodWindow::new(c).unwrap();
        assert!(p.insert(ep(10.0, AffectLabel::Joy, false)).unwrap());
        assert!(p.insert(ep(30.0, AffectLabel::Joy, false)).unwrap());
        assert!(p.insert(ep(20.0, AffectLabel::Joy, false)).unwrap());
        assert!(!p.insert(ep(5.0, AffectLabel::Joy, false)).unwrap());
        let ats: Vec<f64> = p.episodes().map(|e| e.at).collect();
        assert_eq!(ats, vec![20.0, 30.0]);
    }

    #[test]
    fn rejects_invalid_episodes_without_changing_state() {
        let mut p = MoodWindow::new(MoodConstants::default()).unwrap();
        let mut bad = ep(1.0, AffectLabel::Joy, false);
        bad.salience = 2.0;
        assert!(matches!(
            p.insert(bad),
            Err(EpisodeError::OutOfRange {
                field: "salience",
                ..
            })
        ));
        assert!(p.is_empty());
    }

    #[test]
    fn restoring_from_stored_episodes_round_trips_and_is_validated() {
        let c = MoodConstants::default();
        let p = MoodWindow::restore(c, mixed(40)).unwrap();
        let back = MoodWindow::restore(c, p.episodes().cloned()).unwrap();
        assert_eq!(back, p);
        assert_eq!(back.state_at(NOW), p.state_at(NOW));

        let mut bad: Vec<Episode> = p.episodes().cloned().collect();
        bad[3].salience = 7.0;
        assert!(matches!(
            MoodWindow::restore(c, bad),
            Err(MoodWindowError::Episode { index: 3, .. })
        ));
        let bad_constants = MoodConstants {
            max_episodes: 0,
            ..c
        };
        assert!(matches!(
            MoodWindow::restore(bad_constants, p.episodes().cloned()),
            Err(MoodWindowError::Constants(_))
        ));
    }

    #[test]
    fn set_constants_recomputes_and_shrinks() {
        let eps = mixed(50);
        let mut p = MoodWindow::restore(MoodConstants::default(), eps.clone()).unwrap();
        let c2 = MoodConstants {
            tau_max_seconds: 3600.0,
            max_episodes: 10,
            ..MoodConstants::default()
        };
        p.set_constants(c2).unwrap();
        assert_eq!(p.len(), 10);
        assert_eq!(p.state_at(NOW), mood_at(&eps, NOW, &c2));
        assert!(p
            .set_constants(MoodConstants {
                neutral_below: -1.0,
                ..c2
            })
            .is_err());
    }
}

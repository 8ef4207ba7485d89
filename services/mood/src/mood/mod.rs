//! Partner mood (seed 004): past episodes' affect integrated with importance × time decay.
//!
//! `impact_i = intensity_i × salience_i × confidence_i × exp(−Δt_i / τ(salience_i))` with
//! `τ(s) = τ_min + (τ_max − τ_min)·s^k`; per-label sums are squashed with `1 − e^−x`, the largest
//! component gives `label`/`intensity` (`neutral` below a threshold), anger drives the
//! response-policy knobs, and the strongest recent `partner_response_policy` is blended in.
//!
//! [`mood_at`] is the pure computation, [`probe`] the JSON front end of `ghost mood --now`, and
//! [`MoodWindow`] the incremental form the mood service reads a persona's stored episodes
//! into (identical results).

mod compute;
mod episode;
mod window;

pub use compute::{mood_at, probe, MoodInputError};
pub use episode::{Episode, EpisodeError};
pub use ghost_shared::affect::{ConstantsError, MoodComponents, MoodConstants, MoodState};
pub use window::{MoodWindow, MoodWindowError};

//! The catalogue of event payloads services exchange, by family. Payloads live here, once,
//! because producers and consumers sit in different crates; each family is a private
//! module whose items are re-exported, so every payload is `ghost_shared::events::Name`.
//!
//! - `turn`: a conversation's turn, from the user's message to how it ends;
//! - `work`: routes' runs, the classifier, loop control, confirmations, summaries;
//! - `stage`: the multi-character stage;
//! - `delivery`: reply targets, images, delivery outcomes;
//! - `memory`: write-plan changes, recall, reflections (on the persona's stream).
//!
//! Autonomy's events are in [`crate::autonomy::events`]; memory edits and forgetting in
//! [`crate::memory::edits`] and [`crate::memory::forget_person`].

mod delivery;
mod memory;
mod stage;
mod turn;
mod work;

pub use delivery::*;
pub use memory::*;
pub use stage::*;
pub use turn::*;
pub use work::*;

//! The mood: what lingers of the persona's reactions (seed 004).
//!
//! - [`mood`]: the mood computation (impact integral, τ(salience), labels, response-policy
//!   knobs) and its incremental projection.

pub mod mood;

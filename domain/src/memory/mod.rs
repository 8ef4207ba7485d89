//! Long-term memory's pure rules (seed 001, issue 12): what a persona's memory is, the
//! write plan the model writes and the rules it must pass, how interest decays and merges,
//! and the rule-based retrieval plan. Recording changes as events is `ghost_shared::memory`.
//!
//! - [`vocab`]: the closed vocabularies (state kinds, preference domains, modes, ...);
//! - [`model`]: the memory itself (`Memory`, `MemoryState`, `Preference`, `InterestState`)
//!   and the preference subject key;
//! - [`plan`]: the `WritePlan` JSON shape the model writes;
//! - [`validate`]: the rules (a plan that breaks one is rejected whole) → `CheckedPlan`;
//! - [`interest`]: decay and merge of the interest state (and the one reading of it);
//! - [`influence`]: the interest update a deliberation's `persona_influence` carries;
//! - [`retrieval`]: the rule-based RetrievalPlan and the persona's focus hint (recall);
//! - [`when`]: the period a message names relative to now ("last spring", 先週).

pub mod influence;
pub mod interest;
pub mod model;
pub mod plan;
pub mod retrieval;
pub mod validate;
pub mod vocab;
pub mod when;

pub use model::{
    subject_key, AttentionTarget, InterestState, Memory, MemoryState, Preference, DEFAULT_PERSON,
};
pub use plan::{ContextUpdates, EventAffect, EventAnnotations, StatePayload, WritePlan};
pub use validate::{validate, CheckedPlan};

//! Long-term memory (seed 001, issue 12): the write plan, its rules and how it changes a
//! persona's states, preferences and interest state. Pure code shared by the write-plan
//! service, the `ghost write-plan apply` probe and autonomy.
//!
//! - [`vocab`]: the closed vocabularies (state kinds, preference domains, modes, ...);
//! - [`model`]: the memory itself (`Memory`, `MemoryState`, `Preference`, `InterestState`)
//!   and the preference subject key;
//! - [`plan`]: the `WritePlan` JSON shape the model writes;
//! - [`validate`]: the rules (a plan that breaks one is rejected whole) → `CheckedPlan`;
//! - [`apply`]: a checked plan → the memory after it and the events recording each change;
//! - [`edits`]: people's corrections and forgetting, and what each changes;
//! - [`forget_person`]: forgetting a whole person (why redaction, what it touches);
//! - [`document`]: the export/import document and the events an import appends;
//! - [`interest`]: decay and merge of the interest state (and the one reading of it);
//! - [`influence`]: the interest update a deliberation's `persona_influence` carries;
//! - [`probe`]: the `ghost write-plan apply` probe's input and output;
//! - [`retrieval`]: the rule-based RetrievalPlan and the persona's focus hint (recall).

pub mod apply;
pub mod document;
pub mod edits;
pub mod forget_person;
pub mod influence;
pub mod interest;
pub mod model;
pub mod plan;
pub mod probe;
pub mod retrieval;
pub mod validate;
pub mod vocab;

pub use apply::{apply_plan, ApplyContext, MemoryChange, PlannedChange};
pub use model::{
    subject_key, AttentionTarget, InterestState, Memory, MemoryState, Preference, DEFAULT_PERSON,
};
pub use plan::{ContextUpdates, EventAffect, EventAnnotations, StatePayload, WritePlan};
pub use validate::{validate, CheckedPlan};

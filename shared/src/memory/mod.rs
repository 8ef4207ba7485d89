//! Long-term memory (seed 001, issue 12): the write plan, its rules and how it changes a
//! persona's states, preferences and interest state. The pure rules (the vocabularies, the
//! memory itself, the plan and its validation, interest, influence, retrieval plans) are
//! [`ghost_domain::memory`], re-exported here at their old paths; what records a change as
//! an event stays here beside the event spine.
//!
//! - [`vocab`], [`model`], [`plan`], [`validate`], [`interest`], [`influence`],
//!   [`retrieval`]: from `ghost-domain`;
//! - [`apply`]: a checked plan → the memory after it and the events recording each change;
//! - [`edits`]: people's corrections and forgetting, and what each changes;
//! - [`forget_person`]: forgetting a whole person (why redaction, what it touches);
//! - [`document`]: the export/import document and the events an import appends;
//! - [`probe`]: the `ghost write-plan apply` probe's input and output.

pub use ghost_domain::memory::{
    influence, interest, model, plan, retrieval, validate, vocab, when,
};

pub mod apply;
pub mod document;
pub mod edits;
pub mod forget_person;
pub mod probe;

pub use apply::{apply_plan, ApplyContext, MemoryChange, PlannedChange};
pub use ghost_domain::memory::{
    subject_key, AttentionTarget, CheckedPlan, ContextUpdates, EventAffect, EventAnnotations,
    InterestState, Memory, MemoryState, Preference, StatePayload, WritePlan, DEFAULT_PERSON,
};

//! Applying a checked plan: the memory after it and the events that record each change.
//! Pure (no clock, no database): the write-plan service, the `ghost write-plan apply` probe
//! and autonomy all run this same code.

use uuid::Uuid;

use super::interest::DEFAULT_TAU_SECS;
use super::model::{InterestState, Memory, MemoryState, Preference, DEFAULT_PERSON};
use super::validate::{CheckedPlan, CheckedPreferenceUpdate, CheckedStateUpdate};
use super::vocab::{PreferenceOp, PreferenceStatus, StateAbout, StateOp, StateStatus};
use crate::envelope::EventPayload;
use crate::events::{
    EventAnnotated, InterestStateUpdated, PreferenceUpdated, StateClosed, StateUpserted,
};
use crate::ids::derive_event_id;

/// Who and when a plan is applied for.
#[derive(Debug, Clone, Copy)]
pub struct ApplyContext<'a> {
    /// The persona whose memory it is.
    pub persona: &'a str,
    /// The person who spoke: the plan's preferences are theirs, its new states about them
    /// unless it says `nobody`.
    pub person: &'a str,
    /// The utterance the plan is about.
    pub event_id: Uuid,
    /// Now (Unix seconds): the interest decay runs up to here.
    pub now: f64,
    /// The interest decay time constant (seconds).
    pub interest_tau_secs: f64,
}

impl<'a> ApplyContext<'a> {
    /// A context for the default person with the default decay (3 days).
    pub fn new(persona: &'a str, event_id: Uuid, now: f64) -> Self {
        Self {
            persona,
            person: DEFAULT_PERSON,
            event_id,
            now,
            interest_tau_secs: DEFAULT_TAU_SECS,
        }
    }
}

/// One change a plan makes, as the event that records it.
#[derive(Debug, Clone, PartialEq)]
pub enum MemoryChange {
    /// A state created or revised.
    StateUpserted(StateUpserted),
    /// A state closed or done.
    StateClosed(StateClosed),
    /// A preference's new standing.
    PreferenceUpdated(PreferenceUpdated),
    /// The utterance's annotations.
    EventAnnotated(EventAnnotated),
    /// The interest state after the merge.
    InterestStateUpdated(InterestStateUpdated),
}

/// A change with the step its event id derives from (from the utterance and the step, so a
/// redelivered utterance appends nothing new).
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedChange {
    /// `write-plan/...`: unique within the utterance.
    pub step: String,
    /// The change.
    pub change: MemoryChange,
}

impl PlannedChange {
    /// The id of the change's event.
    pub fn event_id(&self, utterance: Uuid) -> Uuid {
        derive_event_id(utterance, &self.step)
    }

    /// The event type name.
    pub fn event_type(&self) -> &'static str {
        match &self.change {
            MemoryChange::StateUpserted(_) => StateUpserted::EVENT_TYPE,
            MemoryChange::StateClosed(_) => StateClosed::EVENT_TYPE,
            MemoryChange::PreferenceUpdated(_) => PreferenceUpdated::EVENT_TYPE,
            MemoryChange::EventAnnotated(_) => EventAnnotated::EVENT_TYPE,
            MemoryChange::InterestStateUpdated(_) => InterestStateUpdated::EVENT_TYPE,
        }
    }
}

/// The step of the event that marks an utterance's plan as applied.
pub const ANNOTATED_STEP: &str = "write-plan/annotated";
/// The step of the event that records an utterance's plan as rejected.
pub const REJECTED_STEP: &str = "write-plan/rejected";

/// `memory` after `plan`, and the changes in order (the annotation last).
pub fn apply_plan(
    memory: &Memory,
    plan: &CheckedPlan,
    ctx: ApplyContext<'_>,
) -> (Memory, Vec<PlannedChange>) {
    let mut memory = memory.clone();
    let mut changes = Vec::new();
    let mut record = |memory: &mut Memory, step: String, change: MemoryChange| {
        apply_change(memory, &change);
        changes.push(PlannedChange { step, change });
    };
    for u in &plan.states {
        let change = state_change(&memory, u, ctx);
        record(&mut memory, format!("write-plan/state/{}", u.index), change);
    }
    for (i, u) in plan.preferences.iter().enumerate() {
        for (suffix, preference) in preference_changes(&memory, u, ctx.person) {
            let change = MemoryChange::PreferenceUpdated(PreferenceUpdated {
                persona: ctx.persona.to_owned(),
                source_event_id: ctx.event_id,
                subject_key: u.subject_key.clone(),
                preference,
                evidence_event_ids: u.evidence_event_ids.clone(),
                reason: u.reason.clone(),
            });
            record(
                &mut memory,
                format!("write-plan/preference/{i}{suffix}"),
                change,
            );
        }
    }
    if let Some(update) = &plan.interest {
        let current = memory
            .interest
            .clone()
            .unwrap_or_else(|| InterestState::empty(ctx.now));
        let interest = current.merged(update, ctx.event_id, ctx.now, ctx.interest_tau_secs);
        let change = MemoryChange::InterestStateUpdated(InterestStateUpdated {
            persona: ctx.persona.to_owned(),
            source_event_id: ctx.event_id,
            interest,
        });
        record(&mut memory, "write-plan/interest".into(), change);
    }
    let annotated = MemoryChange::EventAnnotated(EventAnnotated {
        persona: ctx.persona.to_owned(),
        source_event_id: ctx.event_id,
        event_annotations: plan.event_annotations.clone(),
        event_affect: plan.event_affect.clone(),
        context_updates: plan.context_updates.clone(),
    });
    record(&mut memory, ANNOTATED_STEP.into(), annotated);
    (memory, changes)
}

fn state_change(memory: &Memory, u: &CheckedStateUpdate, ctx: ApplyContext<'_>) -> MemoryChange {
    let existing = u
        .state_id
        .and_then(|id| memory.states.iter().find(|s| s.state_id == id));
    let state_id = u
        .state_id
        .unwrap_or_else(|| derive_event_id(ctx.event_id, &format!("state/{}", u.index)));
    let revision = existing.map_or(1, |s| s.revision + 1);
    let person = match (existing, u.about) {
        (Some(s), _) => s.person.clone(),
        (None, StateAbout::Speaker) => Some(ctx.person.to_owned()),
        (None, StateAbout::Nobody) => None,
    };
    match u.op {
        StateOp::Upsert => MemoryChange::StateUpserted(StateUpserted {
            persona: ctx.persona.to_owned(),
            source_event_id: ctx.event_id,
            state: MemoryState {
                state_id,
                kind: u.kind,
                status: StateStatus::Active,
                body_text: u.body_text.clone(),
                // A revision that names no ordering keys keeps the ones held.
                payload: u
                    .payload
                    .as_ref()
                    .and_then(|p| serde_json::to_value(p).ok())
                    .or_else(|| existing.and_then(|s| s.payload.clone())),
                confidence: u.confidence,
                salience: u.salience.or_else(|| existing.and_then(|s| s.salience)),
                valid_from_ts: u.valid_from_ts,
                valid_to_ts: u.valid_to_ts,
                revision,
                evidence_event_ids: u.evidence_event_ids.clone(),
                reason: u.reason.clone(),
                person,
            },
        }),
        StateOp::Close | StateOp::MarkDone => {
            // Validation guarantees the state exists; the fallback keeps this total.
            let mut state = existing.cloned().unwrap_or(MemoryState {
                state_id,
                kind: u.kind,
                status: StateStatus::Active,
                body_text: u.body_text.clone(),
                payload: None,
                confidence: u.confidence,
                salience: None,
                valid_from_ts: None,
                valid_to_ts: None,
                revision: 0,
                evidence_event_ids: Vec::new(),
                reason: String::new(),
                person,
            });
            state.status = if u.op == StateOp::Close {
                StateStatus::Closed
            } else {
                StateStatus::Done
            };
            state.revision = revision;
            state.valid_to_ts = u
                .valid_to_ts
                .or(state.valid_to_ts)
                .or(Some(ctx.now.floor() as i64));
            if !u.body_text.is_empty() {
                state.body_text = u.body_text.clone();
            }
            state.confidence = u.confidence;
            state.evidence_event_ids = u.evidence_event_ids.clone();
            state.reason = u.reason.clone();
            MemoryChange::StateClosed(StateClosed {
                persona: ctx.persona.to_owned(),
                source_event_id: ctx.event_id,
                state,
            })
        }
    }
}

/// The preferences `u` sets for `person`, each with the suffix of its step.
fn preference_changes(
    memory: &Memory,
    u: &CheckedPreferenceUpdate,
    person: &str,
) -> Vec<(&'static str, Preference)> {
    let find = |polarity| {
        memory.preferences.iter().find(|p| {
            p.person == person && p.polarity == polarity && p.has_key(u.domain, &u.subject_key)
        })
    };
    let existing = find(u.polarity);
    let with = |status| Preference {
        domain: u.domain,
        subject: existing.map_or_else(|| u.subject.clone(), |p| p.subject.clone()),
        polarity: u.polarity,
        status,
        confidence: u.confidence,
        person: person.to_owned(),
    };
    match u.op {
        PreferenceOp::UpsertCandidate => match existing {
            Some(p) if p.status == PreferenceStatus::Confirmed => Vec::new(),
            _ => vec![("", with(PreferenceStatus::Candidate))],
        },
        PreferenceOp::Confirm => {
            let mut out = vec![("", with(PreferenceStatus::Confirmed))];
            if let Some(opposite) = find(u.polarity.opposite()) {
                if opposite.status == PreferenceStatus::Confirmed {
                    out.push((
                        "/opposite",
                        Preference {
                            status: PreferenceStatus::Revoked,
                            ..opposite.clone()
                        },
                    ));
                }
            }
            out
        }
        PreferenceOp::Revoke => match existing {
            Some(p) if p.status != PreferenceStatus::Revoked => vec![(
                "",
                Preference {
                    status: PreferenceStatus::Revoked,
                    confidence: u.confidence,
                    ..p.clone()
                },
            )],
            _ => Vec::new(),
        },
    }
}

/// `memory` with `change` applied (what the projections do with its event).
pub fn apply_change(memory: &mut Memory, change: &MemoryChange) {
    match change {
        MemoryChange::StateUpserted(StateUpserted { state, .. })
        | MemoryChange::StateClosed(StateClosed { state, .. }) => {
            match memory
                .states
                .iter_mut()
                .find(|s| s.state_id == state.state_id)
            {
                Some(s) => *s = state.clone(),
                None => memory.states.push(state.clone()),
            }
        }
        MemoryChange::PreferenceUpdated(p) => {
            let new = &p.preference;
            match memory.preferences.iter_mut().find(|q| {
                q.person == new.person
                    && q.polarity == new.polarity
                    && q.has_key(new.domain, &p.subject_key)
            }) {
                Some(q) => *q = new.clone(),
                None => memory.preferences.push(new.clone()),
            }
        }
        MemoryChange::InterestStateUpdated(i) => memory.interest = Some(i.interest.clone()),
        MemoryChange::EventAnnotated(_) => {}
    }
}

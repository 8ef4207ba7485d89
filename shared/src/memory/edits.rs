//! People's edits to memory (issue 35 item 2): correcting a state (a new body, closing it),
//! flipping a preference's polarity, forgetting one memory. The API records what was asked
//! (`MemoryEditRequested`); the write-plan service, memory's one writer, applies it against a
//! caught-up memory ([`edit_outcome`]) and records what changed (`MemoryCorrected`,
//! `MemoryForgotten`), so a rebuild keeps every edit. A forgotten memory's evidence is kept
//! (ids only): a later plan resting on it cannot bring the memory back.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::model::{subject_key, Memory, MemoryState, Preference};
use super::validate::CheckedPlan;
use super::vocab::{Polarity, PreferenceDomain, PreferenceStatus, StateStatus};
use crate::envelope::EventPayload;
use crate::events::PreferenceUpdated;

/// Which memory an edit is about.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum MemoryTarget {
    /// A state, by id.
    State {
        /// Its id.
        state_id: Uuid,
    },
    /// One person's preference.
    Preference {
        /// Whose.
        person: String,
        /// Food, topic or style.
        domain: PreferenceDomain,
        /// What about (matched by subject key).
        subject: String,
        /// Like or dislike.
        polarity: Polarity,
    },
}

/// What a person asks to change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum MemoryEdit {
    /// A state's text was wrong: this is what holds.
    EditBody {
        /// The new text.
        body_text: String,
    },
    /// A state no longer holds.
    Close,
    /// A preference is the other way round.
    FlipPolarity,
    /// Forget this memory.
    Forget,
}

/// The longest body an edit may write (a plan's is 120; a person may write more).
pub const MAX_EDIT_BODY_CHARS: usize = 500;

/// Someone asked to edit `persona`'s memory (appended by the API on the persona's stream).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryEditRequested {
    /// The persona whose memory it is.
    pub persona: String,
    /// The memory.
    pub target: MemoryTarget,
    /// The change.
    pub edit: MemoryEdit,
    /// Why, in the person's words (may be empty).
    #[serde(default)]
    pub reason: String,
}

impl EventPayload for MemoryEditRequested {
    const EVENT_TYPE: &'static str = "MemoryEditRequested";
}

/// A correction applied: the state's new revision and the preferences' new standing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryCorrected {
    /// The persona.
    pub persona: String,
    /// The request it applies.
    pub source_event_id: Uuid,
    /// The state's new revision, when a state was corrected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<MemoryState>,
    /// The preferences it sets (a flip: the old one revoked, the opposite confirmed).
    #[serde(default)]
    pub preferences: Vec<PreferenceUpdated>,
}

impl EventPayload for MemoryCorrected {
    const EVENT_TYPE: &'static str = "MemoryCorrected";
}

/// A memory forgotten: its rows go, the ids of the events it rested on stay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryForgotten {
    /// The persona.
    pub persona: String,
    /// The request it applies.
    pub source_event_id: Uuid,
    /// The memory forgotten.
    pub target: MemoryTarget,
    /// The events it rested on: no later plan may rest a memory on them.
    pub evidence_event_ids: Vec<Uuid>,
}

impl EventPayload for MemoryForgotten {
    const EVENT_TYPE: &'static str = "MemoryForgotten";
}

/// What an edit does to `memory`, or why it does nothing (the memory is gone, or the edit
/// does not apply to it).
#[derive(Debug, Clone, PartialEq)]
pub enum EditOutcome {
    /// A correction to record.
    Corrected(MemoryCorrected),
    /// A memory to forget.
    Forgotten(MemoryForgotten),
}

/// The state or preference `target` names in `memory`.
pub fn find<'m>(memory: &'m Memory, target: &MemoryTarget) -> Option<Found<'m>> {
    match target {
        MemoryTarget::State { state_id } => memory
            .states
            .iter()
            .find(|s| s.state_id == *state_id)
            .map(Found::State),
        MemoryTarget::Preference {
            person,
            domain,
            subject,
            polarity,
        } => {
            let key = subject_key(subject);
            memory
                .preferences
                .iter()
                .find(|p| {
                    &p.person == person && p.polarity == *polarity && p.has_key(*domain, &key)
                })
                .map(Found::Preference)
        }
    }
}

/// A memory an edit names.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Found<'m> {
    /// A state.
    State(&'m MemoryState),
    /// A preference.
    Preference(&'m Preference),
}

/// Why an edit cannot apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The target names no memory.
    NoSuchMemory,
    /// The memory is there, the edit does not apply to it (why).
    NotApplicable(String),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NoSuchMemory => f.write_str("no such memory"),
            Self::NotApplicable(why) => f.write_str(why),
        }
    }
}

/// Why `edit` cannot apply to what `target` names in `memory` (the API's refusal), if not.
pub fn refusal(memory: &Memory, target: &MemoryTarget, edit: &MemoryEdit) -> Option<Refusal> {
    let Some(found) = find(memory, target) else {
        return Some(Refusal::NoSuchMemory);
    };
    not_applicable(found, edit).map(Refusal::NotApplicable)
}

fn not_applicable(found: Found<'_>, edit: &MemoryEdit) -> Option<String> {
    match (found, edit) {
        (_, MemoryEdit::Forget) => None,
        (Found::State(_), MemoryEdit::EditBody { body_text }) => {
            let chars = body_text.trim().chars().count();
            (chars == 0 || chars > MAX_EDIT_BODY_CHARS)
                .then(|| format!("body_text must be 1-{MAX_EDIT_BODY_CHARS} characters"))
        }
        (Found::State(s), MemoryEdit::Close) => (s.status != StateStatus::Active)
            .then(|| format!("the state is already {}", s.status.as_str())),
        (Found::Preference(_), MemoryEdit::FlipPolarity) => None,
        (Found::State(_), MemoryEdit::FlipPolarity) => {
            Some("flip_polarity applies to a preference".into())
        }
        (Found::Preference(_), _) => {
            Some("a preference can be flipped or forgotten, not edited or closed".into())
        }
    }
}

/// What `request` (event `request_id`, at `now` Unix seconds) does to `memory`; `None` when
/// it no longer applies (the memory went, or changed so the edit makes no sense). A
/// preference's evidence is not part of [`Memory`]: `preference_evidence` is the named
/// preference's, read beside it.
pub fn edit_outcome(
    memory: &Memory,
    request: &MemoryEditRequested,
    request_id: Uuid,
    now: f64,
    preference_evidence: Vec<Uuid>,
) -> Option<EditOutcome> {
    if refusal(memory, &request.target, &request.edit).is_some() {
        return None;
    }
    let found = find(memory, &request.target)?;
    let reason = if request.reason.trim().is_empty() {
        "corrected by the person".to_owned()
    } else {
        request.reason.trim().to_owned()
    };
    let corrected = |state, preferences| {
        Some(EditOutcome::Corrected(MemoryCorrected {
            persona: request.persona.clone(),
            source_event_id: request_id,
            state,
            preferences,
        }))
    };
    match (found, &request.edit) {
        (found, MemoryEdit::Forget) => Some(EditOutcome::Forgotten(MemoryForgotten {
            persona: request.persona.clone(),
            source_event_id: request_id,
            target: request.target.clone(),
            evidence_event_ids: match found {
                Found::State(s) => s.evidence_event_ids.clone(),
                Found::Preference(_) => preference_evidence,
            },
        })),
        (Found::State(s), MemoryEdit::EditBody { body_text }) => {
            let mut state = s.clone();
            state.body_text = body_text.trim().to_owned();
            state.revision += 1;
            state.reason = reason;
            corrected(Some(state), Vec::new())
        }
        (Found::State(s), MemoryEdit::Close) => {
            let mut state = s.clone();
            state.status = StateStatus::Closed;
            state.valid_to_ts = state.valid_to_ts.or(Some(now.floor() as i64));
            state.revision += 1;
            state.reason = reason;
            corrected(Some(state), Vec::new())
        }
        (Found::Preference(p), MemoryEdit::FlipPolarity) => {
            let update = |preference: Preference| PreferenceUpdated {
                persona: request.persona.clone(),
                source_event_id: request_id,
                subject_key: subject_key(&preference.subject),
                preference,
                evidence_event_ids: vec![request_id],
                reason: reason.clone(),
            };
            let revoked = Preference {
                status: PreferenceStatus::Revoked,
                ..p.clone()
            };
            let flipped = Preference {
                polarity: p.polarity.opposite(),
                status: PreferenceStatus::Confirmed,
                confidence: 1.0,
                ..p.clone()
            };
            corrected(None, vec![update(revoked), update(flipped)])
        }
        _ => None,
    }
}

/// Drops from `plan` every update resting on an event a forgotten memory rested on (the
/// `forgotten` evidence): a plan cannot bring a forgotten memory back from the same
/// evidence. Returns how many were dropped.
pub fn drop_forgotten(plan: &mut CheckedPlan, forgotten: &[Uuid]) -> usize {
    let rests_on_forgotten = |evidence: &[Uuid]| evidence.iter().any(|e| forgotten.contains(e));
    let before = plan.states.len() + plan.preferences.len();
    plan.states
        .retain(|u| !rests_on_forgotten(&u.evidence_event_ids));
    plan.preferences
        .retain(|u| !rests_on_forgotten(&u.evidence_event_ids));
    before - plan.states.len() - plan.preferences.len()
}

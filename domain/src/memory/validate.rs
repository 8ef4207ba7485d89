//! The rules a write plan must keep. A plan that breaks any is rejected whole with every
//! reason found; nothing is repaired. What passes comes out typed, ready to apply.

use uuid::Uuid;

use super::model::{goal_ref, goal_ref_text, subject_display, subject_key, Memory};
use super::plan::{ContextUpdates, EventAffect, EventAnnotations, StatePayload, WritePlan};
use super::vocab::{
    InteractionMode, LifeStage, LinkLabel, Polarity, PreferenceDomain, PreferenceOp, StateAbout,
    StateKind, StateOp, StateStatus, TargetType,
};

/// A state update that passed the rules.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckedStateUpdate {
    /// Its index in the plan (new states' ids derive from it).
    pub index: usize,
    /// What it holds.
    pub kind: StateKind,
    /// What it does.
    pub op: StateOp,
    /// The existing state it changes, if any.
    pub state_id: Option<Uuid>,
    /// Whom a new state is about.
    pub about: StateAbout,
    /// The text.
    pub body_text: String,
    /// The ordering keys (topic as shown: NFKC, trimmed).
    pub payload: Option<StatePayload>,
    /// How sure.
    pub confidence: f64,
    /// How much it matters.
    pub salience: Option<f64>,
    /// Valid from.
    pub valid_from_ts: Option<i64>,
    /// Valid until.
    pub valid_to_ts: Option<i64>,
    /// The events it rests on.
    pub evidence_event_ids: Vec<Uuid>,
    /// Why.
    pub reason: String,
}

/// A preference update that passed the rules.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckedPreferenceUpdate {
    /// What it does.
    pub op: PreferenceOp,
    /// The domain.
    pub domain: PreferenceDomain,
    /// Like or dislike.
    pub polarity: Polarity,
    /// The subject as shown (NFKC, trimmed).
    pub subject: String,
    /// The subject's key (NFKC, trimmed, case-folded).
    pub subject_key: String,
    /// How sure.
    pub confidence: f64,
    /// The events it rests on.
    pub evidence_event_ids: Vec<Uuid>,
    /// Why.
    pub reason: String,
}

/// An interest update that passed the rules.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckedInterestUpdate {
    /// Targets named now.
    pub targets: Vec<(TargetType, String, f64)>,
    /// The new mode, if given.
    pub interaction_mode: Option<InteractionMode>,
}

/// A plan that keeps every rule.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckedPlan {
    /// The annotations, as written.
    pub event_annotations: Option<EventAnnotations>,
    /// The affect, as written.
    pub event_affect: Option<EventAffect>,
    /// The context updates, as written.
    pub context_updates: ContextUpdates,
    /// State updates, in plan order.
    pub states: Vec<CheckedStateUpdate>,
    /// Preference updates, in plan order.
    pub preferences: Vec<CheckedPreferenceUpdate>,
    /// The interest update, if any.
    pub interest: Option<CheckedInterestUpdate>,
}

/// Collects the reasons a plan is rejected.
struct Errors(Vec<String>);

impl Errors {
    fn push(&mut self, at: &str, what: impl std::fmt::Display) {
        self.0.push(format!("{at}: {what}"));
    }

    fn unit(&mut self, at: &str, value: f64) {
        if !(0.0..=1.0).contains(&value) {
            self.push(at, format!("{value} is outside 0..=1"));
        }
    }

    fn signed_unit(&mut self, at: &str, value: f64) {
        if !(-1.0..=1.0).contains(&value) {
            self.push(at, format!("{value} is outside -1..=1"));
        }
    }

    fn listed<T>(
        &mut self,
        at: &str,
        text: &str,
        parse: fn(&str) -> Option<T>,
        names: &[&str],
    ) -> Option<T> {
        let parsed = parse(text);
        if parsed.is_none() {
            self.push(at, format!("{text:?} is not one of {}", names.join("|")));
        }
        parsed
    }

    fn event_id(&mut self, at: &str, text: &str) -> Option<Uuid> {
        let id = Uuid::parse_str(text).ok();
        if id.is_none() {
            self.push(at, format!("{text:?} is not an event id"));
        }
        id
    }

    /// The evidence ids; they must include the current event.
    fn evidence(&mut self, at: &str, ids: &[String], current: Uuid) -> Vec<Uuid> {
        let parsed: Vec<Uuid> = ids
            .iter()
            .enumerate()
            .filter_map(|(i, id)| self.event_id(&format!("{at}[{i}]"), id))
            .collect();
        if !parsed.contains(&current) {
            self.push(at, format!("must include the current event {current}"));
        }
        parsed
    }
}

/// Checks `plan` for the utterance `event_id` against `memory`: every reason it breaks a
/// rule, or the typed plan.
pub fn validate(
    plan: &WritePlan,
    memory: &Memory,
    event_id: Uuid,
) -> Result<CheckedPlan, Vec<String>> {
    let mut e = Errors(Vec::new());
    if let Some(a) = &plan.event_annotations {
        annotations(&mut e, a);
    }
    if let Some(a) = &plan.event_affect {
        let at = "event_affect";
        e.signed_unit(
            &format!("{at}.moment_affect_score_vad.v"),
            a.moment_affect_score_vad.v,
        );
        e.signed_unit(
            &format!("{at}.moment_affect_score_vad.a"),
            a.moment_affect_score_vad.a,
        );
        e.signed_unit(
            &format!("{at}.moment_affect_score_vad.d"),
            a.moment_affect_score_vad.d,
        );
        e.unit(
            &format!("{at}.moment_affect_confidence"),
            a.moment_affect_confidence,
        );
    }
    context(&mut e, &plan.context_updates);
    let states = plan
        .state_updates
        .iter()
        .enumerate()
        .filter_map(|(i, u)| state_update(&mut e, i, u, memory, event_id))
        .collect();
    let preferences = plan
        .preference_updates
        .iter()
        .enumerate()
        .filter_map(|(i, u)| {
            let at = format!("preference_updates[{i}]");
            let op = e.listed(
                &format!("{at}.op"),
                &u.op,
                PreferenceOp::parse,
                PreferenceOp::NAMES,
            );
            let domain = e.listed(
                &format!("{at}.domain"),
                &u.domain,
                PreferenceDomain::parse,
                PreferenceDomain::NAMES,
            );
            let polarity = e.listed(
                &format!("{at}.polarity"),
                &u.polarity,
                Polarity::parse,
                Polarity::NAMES,
            );
            let key = subject_key(&u.subject);
            if key.is_empty() {
                e.push(&format!("{at}.subject"), "must not be empty");
            }
            e.unit(&format!("{at}.confidence"), u.confidence);
            let evidence = e.evidence(
                &format!("{at}.evidence_event_ids"),
                &u.evidence_event_ids,
                event_id,
            );
            Some(CheckedPreferenceUpdate {
                op: op?,
                domain: domain?,
                polarity: polarity?,
                subject: subject_display(&u.subject),
                subject_key: key,
                confidence: u.confidence,
                evidence_event_ids: evidence,
                reason: u.reason.clone(),
            })
        })
        .collect();
    let interest = plan.interest_update.as_ref().map(|u| {
        let targets = u
            .attention_targets
            .iter()
            .enumerate()
            .filter_map(|(i, t)| {
                let at = format!("interest_update.attention_targets[{i}]");
                let kind = e.listed(
                    &format!("{at}.type"),
                    &t.target_type,
                    TargetType::parse,
                    TargetType::NAMES,
                );
                if t.value.trim().is_empty() {
                    e.push(&format!("{at}.value"), "must not be empty");
                }
                e.unit(&format!("{at}.weight"), t.weight);
                let value = match kind {
                    Some(TargetType::Goal) => goal_value(&mut e, &at, &t.value, memory)?,
                    _ => t.value.trim().to_owned(),
                };
                Some((kind?, value, t.weight))
            })
            .collect();
        let interaction_mode = u.interaction_mode.as_deref().and_then(|m| {
            e.listed(
                "interest_update.interaction_mode",
                m,
                InteractionMode::parse,
                InteractionMode::NAMES,
            )
        });
        CheckedInterestUpdate {
            targets,
            interaction_mode,
        }
    });
    if !e.0.is_empty() {
        return Err(e.0);
    }
    Ok(CheckedPlan {
        event_annotations: plan.event_annotations.clone(),
        event_affect: plan.event_affect.clone(),
        context_updates: plan.context_updates.clone(),
        states,
        preferences,
        interest,
    })
}

/// A goal target's value: words, or `goal_id:<state_id>` of an active task the memory holds
/// (kept as [`goal_ref`] writes it). A reference to anything else breaks the plan.
fn goal_value(e: &mut Errors, at: &str, value: &str, memory: &Memory) -> Option<String> {
    let Some(id) = goal_ref_text(value) else {
        return Some(value.trim().to_owned());
    };
    let task = Uuid::parse_str(id.trim()).ok().and_then(|id| {
        memory
            .states
            .iter()
            .find(|s| s.state_id == id && s.kind == StateKind::Task)
            .filter(|s| s.status == StateStatus::Active)
    });
    match task {
        Some(s) => Some(goal_ref(s.state_id)),
        None => {
            e.push(
                &format!("{at}.value"),
                format!("{value:?} names no active task you hold"),
            );
            None
        }
    }
}

fn annotations(e: &mut Errors, a: &EventAnnotations) {
    let at = "event_annotations";
    e.listed(
        &format!("{at}.life_stage"),
        &a.life_stage,
        LifeStage::parse,
        LifeStage::NAMES,
    );
    e.unit(
        &format!("{at}.about_time_confidence"),
        a.about_time_confidence,
    );
    if let (Some(s), Some(t)) = (a.about_start_ts, a.about_end_ts) {
        if s > t {
            e.push(&format!("{at}.about_start_ts"), "is after about_end_ts");
        }
    }
    if let (Some(s), Some(t)) = (a.about_year_start, a.about_year_end) {
        if s > t {
            e.push(&format!("{at}.about_year_start"), "is after about_year_end");
        }
    }
    for (i, entity) in a.entities.iter().enumerate() {
        if entity.entity_type.trim().is_empty() || entity.name.trim().is_empty() {
            e.push(
                &format!("{at}.entities[{i}]"),
                "type and name must not be empty",
            );
        }
        e.unit(&format!("{at}.entities[{i}].confidence"), entity.confidence);
    }
}

fn context(e: &mut Errors, c: &ContextUpdates) {
    for (i, t) in c.threads.iter().enumerate() {
        if t.thread_key.trim().is_empty() {
            e.push(
                &format!("context_updates.threads[{i}].thread_key"),
                "must not be empty",
            );
        }
        e.unit(
            &format!("context_updates.threads[{i}].confidence"),
            t.confidence,
        );
    }
    for (i, l) in c.links.iter().enumerate() {
        let at = format!("context_updates.links[{i}]");
        e.event_id(&format!("{at}.to_event_id"), &l.to_event_id);
        e.listed(
            &format!("{at}.label"),
            &l.label,
            LinkLabel::parse,
            LinkLabel::NAMES,
        );
        e.unit(&format!("{at}.confidence"), l.confidence);
    }
}

fn state_update(
    e: &mut Errors,
    i: usize,
    u: &super::plan::StateUpdate,
    memory: &Memory,
    event_id: Uuid,
) -> Option<CheckedStateUpdate> {
    let at = format!("state_updates[{i}]");
    let kind = e.listed(
        &format!("{at}.kind"),
        &u.kind,
        StateKind::parse,
        StateKind::NAMES,
    );
    let op = e.listed(&format!("{at}.op"), &u.op, StateOp::parse, StateOp::NAMES);
    let about = match u.about.as_deref() {
        None => Some(StateAbout::Speaker),
        Some(text) => e.listed(
            &format!("{at}.about"),
            text,
            StateAbout::parse,
            StateAbout::NAMES,
        ),
    };
    e.unit(&format!("{at}.confidence"), u.confidence);
    if let Some(s) = u.salience {
        e.unit(&format!("{at}.salience"), s);
    }
    let payload = u.payload.as_ref().map(|p| StatePayload {
        topic: subject_display(&p.topic),
    });
    if payload.as_ref().is_some_and(|p| p.topic.is_empty()) {
        e.push(&format!("{at}.payload.topic"), "must not be empty");
    }
    if let (Some(s), Some(t)) = (u.valid_from_ts, u.valid_to_ts) {
        if s > t {
            e.push(&format!("{at}.valid_from_ts"), "is after valid_to_ts");
        }
    }
    let evidence = e.evidence(
        &format!("{at}.evidence_event_ids"),
        &u.evidence_event_ids,
        event_id,
    );
    let state_id = u
        .state_id
        .as_deref()
        .and_then(|id| e.event_id(&format!("{at}.state_id"), id));
    let existing = state_id.and_then(|id| memory.states.iter().find(|s| s.state_id == id));
    if let (Some(id), None) = (state_id, existing) {
        e.push(&format!("{at}.state_id"), format!("names no state ({id})"));
    }
    if let (Some(kind), Some(s)) = (kind, existing) {
        if s.kind != kind {
            e.push(
                &format!("{at}.kind"),
                format!(
                    "is {} but state {} is a {}",
                    kind.as_str(),
                    s.state_id,
                    s.kind.as_str()
                ),
            );
        }
    }
    match op {
        Some(StateOp::Upsert) if u.body_text.trim().is_empty() => {
            e.push(&format!("{at}.body_text"), "must not be empty for upsert");
        }
        Some(op @ (StateOp::Close | StateOp::MarkDone)) => {
            if u.state_id.is_none() {
                e.push(
                    &format!("{at}.state_id"),
                    format!("is required for {}", op.as_str()),
                );
            }
            if let Some(s) = existing {
                if s.status != StateStatus::Active {
                    e.push(
                        &format!("{at}.state_id"),
                        format!("state {} is already {}", s.state_id, s.status.as_str()),
                    );
                }
            }
            if op == StateOp::MarkDone
                && (kind != Some(StateKind::Task)
                    || existing.is_some_and(|s| s.kind != StateKind::Task))
            {
                e.push(&format!("{at}.op"), "mark_done applies only to a task");
            }
        }
        Some(StateOp::Upsert) | None => {}
    }
    Some(CheckedStateUpdate {
        index: i,
        kind: kind?,
        op: op?,
        state_id,
        about: about?,
        body_text: u.body_text.trim().to_owned(),
        payload,
        confidence: u.confidence,
        salience: u.salience,
        valid_from_ts: u.valid_from_ts,
        valid_to_ts: u.valid_to_ts,
        evidence_event_ids: evidence,
        reason: u.reason.clone(),
    })
}

//! Writes the conversation the way production does: each turn's `UserMessageReceived` and
//! `AssistantReplied` appended to its session's stream; each turn's write plan checked and
//! applied by the write plan's own rules (`validate`, `apply_plan`) against the person's
//! memory as the `memory` projection holds it, and its events appended to the persona's
//! stream with the ids the write-plan service gives them. The projection runners project
//! both; no projection row is written here. Records whose each memory is, to check recall
//! against.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use serde_json::{json, Value};
use uuid::Uuid;

use ghost_shared::envelope::{EventMetadata, NewEvent, RecordedEvent};
use ghost_shared::events::{
    persona_stream, AssistantReplied, StateClosed, StateUpserted, UserMessageReceived,
};
use ghost_shared::ids::derive_event_id;
use ghost_shared::memory::{
    apply_plan, validate, ApplyContext, MemoryChange, PlannedChange, WritePlan,
};
use ghost_shared::projections::{AssistantTextProjection, MemoryProjection};
use ghost_shared::projector::{Projection, ProjectionRunner};
use ghost_shared::store::{EventStore, ExpectedVersion};

use super::corpus::{Corpus, Plan, Session, Turn};
use super::facts::FACTS;

/// The persona whose memory is seeded.
pub const PERSONA: &str = "kuro";

/// Who may recall a memory.
#[derive(Debug, Clone, PartialEq)]
pub enum Owner {
    /// These people (none: the persona's words where several people spoke, nobody's to
    /// recall).
    People(Vec<&'static str>),
    /// Everyone: a state about no one.
    Anyone,
}

/// The stored ids of one fact.
#[derive(Debug, Clone, Default)]
pub struct FactIds {
    /// The user message that said it.
    pub said: Option<Uuid>,
    /// The state filed from it.
    pub state: Option<Uuid>,
    /// The user message that corrected it.
    pub corrected: Option<Uuid>,
    /// The state holding the correction (the same one, revised, unless it replaced it).
    pub new_state: Option<Uuid>,
}

/// What was stored.
#[derive(Debug, Default)]
pub struct Seeded {
    /// Candidate id (`event:`, `state:`, `preference:`) → who may recall it.
    pub owners: HashMap<String, Owner>,
    /// Per fact of [`FACTS`].
    pub facts: Vec<FactIds>,
    /// Utterances and memory events appended.
    pub utterances: usize,
    /// Memory events appended.
    pub memory_events: usize,
}

fn runner(store: &EventStore, projection: Arc<dyn Projection>) -> ProjectionRunner {
    ProjectionRunner::new(store.clone(), projection, 1_000, Duration::from_millis(50))
}

/// Applies every committed event to `runner`'s projection (as the write-plan service's
/// writer does before it reads memory).
async fn caught_up(runner: &ProjectionRunner) -> Result<()> {
    loop {
        let pass = runner.catch_up().await.map_err(|e| anyhow!("{e}"))?;
        if !pass.pending && !pass.contended && pass.processed == 0 {
            return Ok(());
        }
        if pass.processed == 0 {
            // Held back by another transaction of the cluster (tests run side by side).
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// Seeds `corpus` into `store`.
pub async fn seed(store: &EventStore, corpus: &Corpus, seed: u64) -> Result<Seeded> {
    let memory = runner(store, Arc::new(MemoryProjection));
    let mut out = Seeded {
        facts: vec![FactIds::default(); FACTS.len()],
        ..Default::default()
    };
    let namespace = Uuid::from_u128(u128::from(seed) << 64 | 0x5eed);
    for session in &corpus.sessions {
        for (k, turn) in session.turns.iter().enumerate() {
            let user_id = derive_event_id(namespace, &format!("{}/{k}", session.id));
            let reply = said(store, session, turn, user_id).await?;
            let person = turn.speaker;
            out.utterances += 2;
            out.owners
                .insert(format!("event:{user_id}"), Owner::People(vec![person]));
            // The persona's words are the person's only where nobody else spoke.
            let alone = session.turns.iter().all(|t| t.speaker == person);
            let listener = if alone { vec![person] } else { vec![] };
            out.owners
                .insert(format!("event:{}", reply.event_id), Owner::People(listener));
            match turn.plan {
                Plan::Fact(i) => out.facts[i].said = Some(user_id),
                Plan::Correction(i) => out.facts[i].corrected = Some(user_id),
                _ => {}
            }
            caught_up(&memory).await?;
            let held = MemoryProjection::load_for(store.pool(), PERSONA, person).await?;
            let plan = plan_of(turn, &out.facts, reply.event_id, user_id);
            let plan = WritePlan::from_value(plan).map_err(|e| anyhow!("{e:?}"))?;
            let checked = validate(&plan, &held, reply.event_id)
                .map_err(|e| anyhow!("plan for {:?} rejected: {e:?}", turn.said))?;
            let ctx = ApplyContext {
                persona: PERSONA,
                person,
                event_id: reply.event_id,
                now: session.at,
                interest_tau_secs: ghost_shared::memory::interest::DEFAULT_TAU_SECS,
            };
            let (_, changes) = apply_plan(&held, &checked, ctx);
            let mut events = Vec::with_capacity(changes.len());
            for c in &changes {
                record(&mut out, &turn.plan, &c.change, person);
                events.push(new_event(&reply, c)?);
            }
            out.memory_events += events.len();
            store
                .append(&persona_stream(PERSONA), ExpectedVersion::Any, &events)
                .await
                .context("append a plan's events")?;
        }
    }
    caught_up(&memory).await?;
    caught_up(&runner(store, Arc::new(AssistantTextProjection))).await?;
    // As autovacuum leaves the tables after a load: statistics current, the trigram
    // indexes' pending lists merged.
    sqlx::query("VACUUM ANALYZE").execute(store.pool()).await?;
    Ok(out)
}

/// Appends the turn's user message and the persona's reply; the reply as stored.
async fn said(
    store: &EventStore,
    session: &Session,
    turn: &Turn,
    user_id: Uuid,
) -> Result<RecordedEvent> {
    let stream = ghost_shared::envelope::session_stream(&session.id);
    let message = UserMessageReceived {
        session_id: session.id.clone(),
        channel: session.channel,
        speaker: turn.speaker.to_owned(),
        text: turn.said.clone(),
        external_id: None,
        reply_to: None,
        image: None,
    };
    let user = store
        .append(
            &stream,
            ExpectedVersion::Any,
            &[NewEvent::origin(user_id, &message, "gateway")?],
        )
        .await?
        .events
        .remove(0);
    let reply = AssistantReplied {
        session_id: session.id.clone(),
        channel: session.channel,
        user_event_id: user_id,
        speaker: PERSONA.to_owned(),
        text: turn.reply.clone(),
        affect: None,
        affect_rejected: Vec::new(),
        cut: None,
    };
    let reply = NewEvent::closing_turn(&user, user_id, &reply, "persona")?;
    Ok(store
        .append(&stream, ExpectedVersion::Any, &[reply])
        .await?
        .events
        .remove(0))
}

/// The write plan the model would give for `turn` (the reply `current`, the message `user`).
fn plan_of(turn: &Turn, facts: &[FactIds], current: Uuid, user: Uuid) -> Value {
    let evidence = json!([current, user]);
    let annotated = |entity: Option<&str>, year: Option<i32>| {
        let entities: Vec<Value> = entity
            .map(|n| json!({"type": "TOPIC", "name": n, "confidence": 0.9}))
            .into_iter()
            .collect();
        json!({"life_stage": "unknown", "about_time_confidence": if year.is_some() { 0.9 } else { 0.0 },
               "about_year_start": year, "about_year_end": year, "entities": entities})
    };
    let state = |body: &str, topic: Option<&str>, id: Option<Uuid>| {
        json!({"kind": "fact", "op": "upsert", "state_id": id, "body_text": body,
               "payload": topic.map(|t| json!({"topic": t})), "confidence": 0.9,
               "evidence_event_ids": evidence, "reason": "said so"})
    };
    match &turn.plan {
        Plan::Nothing => json!({"event_annotations": annotated(None, None)}),
        Plan::SmallTalk(body) => json!({
            "event_annotations": annotated(None, None),
            "state_updates": [state(body, None, None)],
        }),
        Plan::Fact(i) => {
            let f = &FACTS[*i];
            let preferences: Vec<Value> = f
                .preference
                .map(|(domain, polarity, subject)| {
                    json!({"op": "confirm", "domain": domain,
                    "polarity": polarity, "subject": subject, "confidence": 0.9,
                    "evidence_event_ids": evidence, "reason": "said so"})
                })
                .into_iter()
                .collect();
            json!({
                "event_annotations": annotated(Some(f.topic), f.year),
                "state_updates": [state(f.body, Some(f.topic), None)],
                "preference_updates": preferences,
                "interest_update": {"attention_targets": [{"type": "topic", "value": f.topic, "weight": 0.6}]},
            })
        }
        Plan::Correction(i) => {
            let (f, held) = (&FACTS[*i], facts[*i].state);
            let Some(c) = f.correction else {
                return json!({});
            };
            let updates = if c.replaces {
                json!([{"kind": "fact", "op": "close", "state_id": held, "confidence": 0.9,
                         "evidence_event_ids": evidence, "reason": "corrected"},
                       state(c.body, Some(f.topic), None)])
            } else {
                json!([state(c.body, Some(f.topic), held)])
            };
            json!({"event_annotations": annotated(Some(f.topic), None), "state_updates": updates})
        }
    }
}

/// Notes whose the memory a change makes is, and a fact's ids.
fn record(out: &mut Seeded, plan: &Plan, change: &MemoryChange, person: &'static str) {
    match change {
        MemoryChange::StateUpserted(StateUpserted { state, .. }) => {
            let owner = match &state.person {
                Some(_) => Owner::People(vec![person]),
                None => Owner::Anyone,
            };
            out.owners
                .insert(format!("state:{}", state.state_id), owner);
            match plan {
                Plan::Fact(i) => out.facts[*i].state = Some(state.state_id),
                Plan::Correction(i) => out.facts[*i].new_state = Some(state.state_id),
                _ => {}
            }
        }
        MemoryChange::StateClosed(StateClosed { .. }) => {}
        MemoryChange::PreferenceUpdated(p) => {
            let pref = &p.preference;
            let id = preference_id(pref.domain.as_str(), &p.subject_key, pref.polarity.as_str());
            match out
                .owners
                .entry(id)
                .or_insert_with(|| Owner::People(vec![]))
            {
                Owner::People(v) if !v.contains(&person) => v.push(person),
                _ => {}
            }
        }
        _ => {}
    }
}

/// A preference's candidate id in recall.
pub fn preference_id(domain: &str, key: &str, polarity: &str) -> String {
    format!("preference:{domain}/{key}/{polarity}")
}

/// The change as the event the write-plan service appends for it (the id derived from the
/// reply and the plan's step, the reply its cause).
fn new_event(cause: &RecordedEvent, planned: &PlannedChange) -> Result<NewEvent> {
    let payload = match &planned.change {
        MemoryChange::StateUpserted(p) => serde_json::to_value(p),
        MemoryChange::StateClosed(p) => serde_json::to_value(p),
        MemoryChange::PreferenceUpdated(p) => serde_json::to_value(p),
        MemoryChange::EventAnnotated(p) => serde_json::to_value(p),
        MemoryChange::InterestStateUpdated(p) => serde_json::to_value(p),
    }?;
    let metadata = EventMetadata {
        correlation_id: cause.metadata.correlation_id,
        causation_id: Some(cause.event_id),
        traceparent: None,
        tracestate: None,
        service: "write-plan".into(),
    };
    Ok(NewEvent {
        event_id: planned.event_id(cause.event_id),
        event_type: planned.event_type().to_owned(),
        // Every memory event is at its first schema version.
        schema_version: 1,
        payload,
        metadata,
    })
}

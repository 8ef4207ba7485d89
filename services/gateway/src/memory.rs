//! `GET /api/memory?persona=ID[&person=P]`: what a persona remembers (issue 12) — its
//! current states (each naming whom it is about, `null` for no one), each person's
//! preferences as it holds them and its interest state, read from the `memory` projection.
//! With `person`, only what a turn with that person reads: their states and preferences and
//! the states about no one (issue 35).
//!
//! Beside the rows, what people need to read them (issue 48, [`crate::memory_view`]): the
//! states in the order first remembered, `duplicates` (states people read as one memory),
//! `history` (each revised state's earlier revisions), `evidence` (each evidence id in
//! words: the message, who said it, where and when), `preference_evidence` (each
//! preference's evidence ids, by `person/domain/subject key/polarity`) and `people` (each
//! person named, by name: [`crate::people`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use ghost_shared::memory::Memory;
use ghost_shared::projections::MemoryProjection;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::ApiError;
use crate::extract::Query;
use crate::memory_view::{self, Evidence, Revision};
use crate::people::{channel_of_session, Person, SpokeIn};
use crate::AppState;

/// `?persona=<id>`; the chat persona when absent. `&person=<id>`: one person's view.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryParams {
    persona: Option<String>,
    person: Option<String>,
}

/// The answer.
#[derive(Debug, Serialize)]
pub struct MemoryAnswer {
    /// The persona asked about.
    pub persona: String,
    /// Its memory (states in the order first remembered).
    #[serde(flatten)]
    pub memory: Memory,
    /// Groups of states that say the same of the same person: one memory to people.
    pub duplicates: Vec<Vec<Uuid>>,
    /// Each revised state's earlier revisions, oldest first.
    pub history: BTreeMap<Uuid, Vec<Revision>>,
    /// What each evidence id of the states and preferences is.
    pub evidence: BTreeMap<Uuid, Evidence>,
    /// Each preference's evidence ids, by `person/domain/subject key/polarity`.
    pub preference_evidence: BTreeMap<String, Vec<Uuid>>,
    /// Each person a memory names or whose words are evidence, as people know them.
    pub people: BTreeMap<String, Person>,
}

/// The persona `asked` for (the chat persona when absent), refused when it is no character.
pub(crate) fn character(state: &AppState, asked: Option<String>) -> Result<String, ApiError> {
    let persona = crate::partner_mood::persona(state, asked)?;
    if state.ctx.config.characters.get(&persona).is_none() {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "unknown_persona",
            format!("no character {persona} in characters.yaml"),
        ));
    }
    Ok(persona)
}

/// `GET /api/memory`.
pub async fn get(
    State(state): State<AppState>,
    Query(params): Query<MemoryParams>,
) -> Result<Json<MemoryAnswer>, ApiError> {
    let persona = character(&state, params.persona)?;
    let pool = state.ctx.store().pool();
    let memory = match &params.person {
        Some(person) if person.is_empty() || person.len() > 256 => {
            return Err(ApiError::bad_request(
                "invalid_person",
                "person must be 1-256 characters",
            ))
        }
        Some(person) => MemoryProjection::load_for(pool, &persona, person).await,
        None => MemoryProjection::load(pool, &persona).await,
    }
    .map_err(|e| ApiError::store("cannot read the memory", &e))?;
    read_for_people(&state, persona, memory, params.person.as_deref())
        .await
        .map(Json)
        .map_err(|e| ApiError::store("cannot read the memory", &e))
}

/// The answer: `memory` with what people need to read it.
async fn read_for_people(
    state: &AppState,
    persona: String,
    mut memory: Memory,
    person: Option<&str>,
) -> sqlx::Result<MemoryAnswer> {
    let pool = state.ctx.store().pool();
    memory_view::first_remembered(pool, &mut memory.states).await?;
    let preference_evidence = preference_evidence(pool, &persona, person).await?;
    let ids: Vec<Uuid> = memory
        .states
        .iter()
        .flat_map(|s| s.evidence_event_ids.iter())
        .chain(preference_evidence.values().flatten())
        .copied()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let evidence = memory_view::evidence(pool, &ids).await?;
    // Where each person last spoke (of what is evidence here): where their name is asked.
    let mut spoke_in: HashMap<String, (i64, SpokeIn)> = HashMap::new();
    for said in evidence.values().filter_map(|e| e.said.as_ref()) {
        if said.role != "user" {
            continue;
        }
        let at = SpokeIn {
            channel: channel_of_session(&said.session_id),
            session_id: said.session_id.clone(),
        };
        let newer = spoke_in
            .get(&said.speaker)
            .is_none_or(|(position, _)| *position < said.position);
        if newer {
            spoke_in.insert(said.speaker.clone(), (said.position, at));
        }
    }
    let spoke_in: HashMap<String, SpokeIn> =
        spoke_in.into_iter().map(|(p, (_, at))| (p, at)).collect();
    let persons = memory
        .states
        .iter()
        .filter_map(|s| s.person.clone())
        .chain(memory.preferences.iter().map(|p| p.person.clone()))
        .chain(spoke_in.keys().cloned())
        .collect::<BTreeSet<_>>();
    let people = state
        .people
        .shown(&state.platforms, persons, &spoke_in)
        .await;
    Ok(MemoryAnswer {
        duplicates: memory_view::duplicates(&memory.states),
        history: memory_view::history(pool, &memory.states).await?,
        persona,
        memory,
        evidence,
        preference_evidence,
        people,
    })
}

/// Each of `persona`'s preferences' evidence ids (of `person`'s, when named), by
/// `person/domain/subject key/polarity`.
async fn preference_evidence(
    pool: &sqlx::PgPool,
    persona: &str,
    person: Option<&str>,
) -> sqlx::Result<BTreeMap<String, Vec<Uuid>>> {
    let rows = sqlx::query_as::<_, (String, String, String, String, Vec<Uuid>)>(
        "SELECT person, domain, subject_key, polarity, evidence_event_ids FROM preferences \
         WHERE persona = $1 AND ($2::text IS NULL OR person = $2)",
    )
    .bind(persona)
    .bind(person)
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(person, domain, key, polarity, ids)| {
            (format!("{person}/{domain}/{key}/{polarity}"), ids)
        })
        .collect())
}

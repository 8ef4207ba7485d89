//! `memory`: a persona's states (with every revision), preferences, interest state and the
//! write plan's annotations, from the memory events (`StateUpserted`, `StateClosed`,
//! `PreferenceUpdated`, `InterestStateUpdated`, `EventAnnotated`). Each event carries the
//! values it sets, so applying one is a plain upsert and a rebuild gives identical rows.
//! Memory is per person (issue 35): a state is about one person or no one, a preference is
//! one person's; a turn reads [`MemoryProjection::load_for`] its speaker. People's edits
//! (`MemoryCorrected`, `MemoryForgotten`: [`crate::memory::edits`]) apply the same way; a
//! forgotten memory's rows are deleted and only the ids of its evidence stay.

use serde_json::Value;
use sqlx::{PgExecutor, Postgres, Row, Transaction};
use uuid::Uuid;

use crate::envelope::RecordedEvent;
use crate::events::{
    EventAnnotated, InterestStateUpdated, PreferenceUpdated, StateClosed, StateUpserted,
};
use crate::memory::edits::{MemoryCorrected, MemoryForgotten, MemoryTarget};
use crate::memory::{subject_key, InterestState, Memory, MemoryState, Preference};
use crate::projector::{Projection, ProjectionError};

/// The projection feeding the memory tables.
#[derive(Debug, Default, Clone, Copy)]
pub struct MemoryProjection;

/// The tables this projection owns, in the order a dump lists them.
pub const MEMORY_TABLES: [&str; 6] = [
    "memory_states",
    "memory_state_revisions",
    "preferences",
    "persona_interest_state",
    "memory_event_annotations",
    "memory_forgotten",
];

impl MemoryProjection {
    /// Projection name (checkpoint key, CLI argument).
    pub const NAME: &'static str = "memory";

    /// `persona`'s whole memory: every person's states and preferences, and the interest
    /// state (the API's and export's view, and the interest update's).
    pub async fn load<'e>(
        executor: impl PgExecutor<'e> + Copy,
        persona: &str,
    ) -> Result<Memory, sqlx::Error> {
        Self::load_scoped(executor, persona, None).await
    }

    /// `persona`'s memory of `person`, as a turn with them reads it: the states about them
    /// or about no one, their preferences, and the interest state. Never another person's.
    pub async fn load_for<'e>(
        executor: impl PgExecutor<'e> + Copy,
        persona: &str,
        person: &str,
    ) -> Result<Memory, sqlx::Error> {
        Self::load_scoped(executor, persona, Some(person)).await
    }

    async fn load_scoped<'e>(
        executor: impl PgExecutor<'e> + Copy,
        persona: &str,
        person: Option<&str>,
    ) -> Result<Memory, sqlx::Error> {
        let states = sqlx::query(
            "SELECT state_id, kind, status, body_text, payload, confidence, salience, valid_from_ts, \
             valid_to_ts, revision, evidence_event_ids, reason, person FROM memory_states \
             WHERE persona = $1 AND ($2::text IS NULL OR person = $2 OR person IS NULL) \
             ORDER BY position, state_id",
        )
        .bind(persona)
        .bind(person)
        .fetch_all(executor)
        .await?
        .iter()
        .map(state_from_row)
        .collect::<Result<Vec<_>, _>>()?;
        Ok(Memory {
            states,
            ..Self::load_focus_scoped(executor, persona, person).await?
        })
    }

    /// `persona`'s preferences of `person` and its interest state, without the states: all
    /// recall's focus hint needs (the states can number thousands; recall searches them in
    /// SQL instead).
    pub async fn load_focus<'e>(
        executor: impl PgExecutor<'e> + Copy,
        persona: &str,
        person: &str,
    ) -> Result<Memory, sqlx::Error> {
        Self::load_focus_scoped(executor, persona, Some(person)).await
    }

    async fn load_focus_scoped<'e>(
        executor: impl PgExecutor<'e> + Copy,
        persona: &str,
        person: Option<&str>,
    ) -> Result<Memory, sqlx::Error> {
        let preferences = sqlx::query(
            "SELECT domain, subject, polarity, status, confidence, person FROM preferences \
             WHERE persona = $1 AND ($2::text IS NULL OR person = $2) \
             ORDER BY position, person, domain, subject_key, polarity",
        )
        .bind(persona)
        .bind(person)
        .fetch_all(executor)
        .await?
        .iter()
        .map(preference_from_row)
        .collect::<Result<Vec<_>, _>>()?;
        let interest = sqlx::query(
            "SELECT attention_targets, interaction_mode, updated_from_event_ids, updated_at \
             FROM persona_interest_state WHERE persona = $1",
        )
        .bind(persona)
        .fetch_optional(executor)
        .await?
        .map(|r| {
            let json = serde_json::json!({
                "attention_targets": r.try_get::<Value, _>("attention_targets")?,
                "interaction_mode": r.try_get::<String, _>("interaction_mode")?,
                "updated_from_event_ids": r.try_get::<Vec<Uuid>, _>("updated_from_event_ids")?,
                "updated_at": r.try_get::<f64, _>("updated_at")?,
            });
            serde_json::from_value::<InterestState>(json).map_err(decode_error)
        })
        .transpose()?;
        Ok(Memory {
            states: Vec::new(),
            preferences,
            interest,
        })
    }

    /// The ids of the events `persona`'s forgotten memories rested on: no plan may rest a
    /// memory on them again.
    pub async fn forgotten_evidence<'e>(
        executor: impl PgExecutor<'e>,
        persona: &str,
    ) -> Result<Vec<Uuid>, sqlx::Error> {
        sqlx::query_scalar(
            "SELECT DISTINCT unnest(evidence_event_ids) FROM memory_forgotten WHERE persona = $1",
        )
        .bind(persona)
        .fetch_all(executor)
        .await
    }

    /// The events `person`'s preference rests on (empty when there is none).
    pub async fn preference_evidence<'e>(
        executor: impl PgExecutor<'e>,
        persona: &str,
        preference: &Preference,
    ) -> Result<Vec<Uuid>, sqlx::Error> {
        Ok(sqlx::query_scalar(
            "SELECT evidence_event_ids FROM preferences WHERE persona = $1 AND person = $2 \
             AND domain = $3 AND subject_key = $4 AND polarity = $5",
        )
        .bind(persona)
        .bind(&preference.person)
        .bind(preference.domain.as_str())
        .bind(subject_key(&preference.subject))
        .bind(preference.polarity.as_str())
        .fetch_optional(executor)
        .await?
        .unwrap_or_default())
    }

    /// Every row of every memory table as JSON, in a stable order (rebuild comparisons).
    pub async fn dump<'e>(executor: impl PgExecutor<'e> + Copy) -> Result<Vec<Value>, sqlx::Error> {
        let mut out = Vec::new();
        for table in MEMORY_TABLES {
            let rows = sqlx::query(&format!(
                "SELECT to_jsonb(t) AS row FROM {table} t ORDER BY to_jsonb(t)::text"
            ))
            .fetch_all(executor)
            .await?;
            for r in rows {
                out.push(
                    serde_json::json!({ "table": table, "row": r.try_get::<Value, _>("row")? }),
                );
            }
        }
        Ok(out)
    }
}

/// A `preferences` row (its `domain`, `subject`, `polarity`, `status`, `confidence` and
/// `person` columns) as the preference it records.
pub fn preference_from_row(r: &sqlx::postgres::PgRow) -> Result<Preference, sqlx::Error> {
    let json = serde_json::json!({
        "domain": r.try_get::<String, _>("domain")?,
        "subject": r.try_get::<String, _>("subject")?,
        "polarity": r.try_get::<String, _>("polarity")?,
        "status": r.try_get::<String, _>("status")?,
        "confidence": r.try_get::<f64, _>("confidence")?,
        "person": r.try_get::<String, _>("person")?,
    });
    serde_json::from_value::<Preference>(json).map_err(decode_error)
}

fn decode_error(e: serde_json::Error) -> sqlx::Error {
    sqlx::Error::Decode(Box::new(e))
}

fn state_from_row(r: &sqlx::postgres::PgRow) -> Result<MemoryState, sqlx::Error> {
    let json = serde_json::json!({
        "state_id": r.try_get::<Uuid, _>("state_id")?,
        "kind": r.try_get::<String, _>("kind")?,
        "status": r.try_get::<String, _>("status")?,
        "body_text": r.try_get::<String, _>("body_text")?,
        "payload": r.try_get::<Option<Value>, _>("payload")?,
        "confidence": r.try_get::<f64, _>("confidence")?,
        "salience": r.try_get::<Option<f64>, _>("salience")?,
        "valid_from_ts": r.try_get::<Option<i64>, _>("valid_from_ts")?,
        "valid_to_ts": r.try_get::<Option<i64>, _>("valid_to_ts")?,
        "revision": r.try_get::<i32, _>("revision")?,
        "evidence_event_ids": r.try_get::<Vec<Uuid>, _>("evidence_event_ids")?,
        "reason": r.try_get::<String, _>("reason")?,
        "person": r.try_get::<Option<String>, _>("person")?,
    });
    serde_json::from_value(json).map_err(decode_error)
}

async fn upsert_state(
    tx: &mut Transaction<'_, Postgres>,
    event: &RecordedEvent,
    persona: &str,
    source_event_id: Uuid,
    s: &MemoryState,
) -> Result<(), ProjectionError> {
    sqlx::query(
        "INSERT INTO memory_state_revisions (state_id, revision, persona, state, source_event_id, position) \
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (state_id, revision) DO NOTHING",
    )
    .bind(s.state_id)
    .bind(s.revision)
    .bind(persona)
    .bind(serde_json::to_value(s).map_err(|e| ProjectionError::decode(event, e))?)
    .bind(source_event_id)
    .bind(event.position)
    .execute(&mut **tx)
    .await?;
    // The newest revision wins; an older one arriving late changes nothing.
    sqlx::query(
        "INSERT INTO memory_states (persona, state_id, kind, status, body_text, payload, confidence, \
         salience, valid_from_ts, valid_to_ts, revision, evidence_event_ids, reason, source_event_id, position, \
         person) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) \
         ON CONFLICT (state_id) DO UPDATE SET kind = EXCLUDED.kind, status = EXCLUDED.status, \
         body_text = EXCLUDED.body_text, payload = EXCLUDED.payload, confidence = EXCLUDED.confidence, \
         salience = EXCLUDED.salience, valid_from_ts = EXCLUDED.valid_from_ts, \
         valid_to_ts = EXCLUDED.valid_to_ts, revision = EXCLUDED.revision, \
         evidence_event_ids = EXCLUDED.evidence_event_ids, reason = EXCLUDED.reason, \
         source_event_id = EXCLUDED.source_event_id, position = EXCLUDED.position, \
         person = EXCLUDED.person WHERE memory_states.revision < EXCLUDED.revision",
    )
    .bind(persona)
    .bind(s.state_id)
    .bind(s.kind.as_str())
    .bind(s.status.as_str())
    .bind(&s.body_text)
    .bind(&s.payload)
    .bind(s.confidence)
    .bind(s.salience)
    .bind(s.valid_from_ts)
    .bind(s.valid_to_ts)
    .bind(s.revision)
    .bind(&s.evidence_event_ids)
    .bind(&s.reason)
    .bind(source_event_id)
    .bind(event.position)
    .bind(&s.person)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

async fn upsert_preference(
    tx: &mut Transaction<'_, Postgres>,
    event: &RecordedEvent,
    e: &PreferenceUpdated,
) -> Result<(), ProjectionError> {
    let p = &e.preference;
    sqlx::query(
        "INSERT INTO preferences (persona, domain, subject_key, polarity, subject, status, \
         confidence, evidence_event_ids, reason, source_event_id, position, person) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) \
         ON CONFLICT (persona, person, domain, subject_key, polarity) DO UPDATE SET \
         subject = EXCLUDED.subject, status = EXCLUDED.status, confidence = EXCLUDED.confidence, \
         evidence_event_ids = EXCLUDED.evidence_event_ids, reason = EXCLUDED.reason, \
         source_event_id = EXCLUDED.source_event_id, position = EXCLUDED.position",
    )
    .bind(&e.persona)
    .bind(p.domain.as_str())
    .bind(&e.subject_key)
    .bind(p.polarity.as_str())
    .bind(&p.subject)
    .bind(p.status.as_str())
    .bind(p.confidence)
    .bind(&e.evidence_event_ids)
    .bind(&e.reason)
    .bind(e.source_event_id)
    .bind(event.position)
    .bind(&p.person)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Deletes the forgotten memory's rows (a state with every revision) and keeps the record.
async fn forget(
    tx: &mut Transaction<'_, Postgres>,
    event: &RecordedEvent,
    e: &MemoryForgotten,
) -> Result<(), ProjectionError> {
    match &e.target {
        MemoryTarget::State { state_id } => {
            for table in ["memory_states", "memory_state_revisions"] {
                sqlx::query(&format!("DELETE FROM {table} WHERE state_id = $1"))
                    .bind(state_id)
                    .execute(&mut **tx)
                    .await?;
            }
        }
        MemoryTarget::Preference {
            person,
            domain,
            subject,
            polarity,
        } => {
            sqlx::query(
                "DELETE FROM preferences WHERE persona = $1 AND person = $2 AND domain = $3 \
                 AND subject_key = $4 AND polarity = $5",
            )
            .bind(&e.persona)
            .bind(person)
            .bind(domain.as_str())
            .bind(subject_key(subject))
            .bind(polarity.as_str())
            .execute(&mut **tx)
            .await?;
        }
    }
    sqlx::query(
        "INSERT INTO memory_forgotten (source_event_id, persona, target, evidence_event_ids, position) \
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
    )
    .bind(e.source_event_id)
    .bind(&e.persona)
    .bind(serde_json::to_value(&e.target).map_err(|err| ProjectionError::decode(event, err))?)
    .bind(&e.evidence_event_ids)
    .bind(event.position)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

crate::event_enum! {
    /// What the memory projection applies.
    enum MemoryInput {
        StateUpserted,
        StateClosed,
        PreferenceUpdated,
        MemoryCorrected,
        MemoryForgotten,
        InterestStateUpdated,
        EventAnnotated,
    }
}

#[async_trait::async_trait]
impl Projection for MemoryProjection {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn wakes_on(&self, event_type: &str) -> bool {
        MemoryInput::takes(event_type)
    }

    async fn apply(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        event: &RecordedEvent,
    ) -> Result<(), ProjectionError> {
        let decode = |e| ProjectionError::decode(event, e);
        match MemoryInput::decode(event).map_err(decode)? {
            Some(MemoryInput::StateUpserted(e)) => {
                upsert_state(tx, event, &e.persona, e.source_event_id, &e.state).await
            }
            Some(MemoryInput::StateClosed(e)) => {
                upsert_state(tx, event, &e.persona, e.source_event_id, &e.state).await
            }
            Some(MemoryInput::PreferenceUpdated(e)) => upsert_preference(tx, event, &e).await,
            Some(MemoryInput::MemoryCorrected(e)) => {
                if let Some(state) = &e.state {
                    upsert_state(tx, event, &e.persona, e.source_event_id, state).await?;
                }
                for p in &e.preferences {
                    upsert_preference(tx, event, p).await?;
                }
                Ok(())
            }
            Some(MemoryInput::MemoryForgotten(e)) => forget(tx, event, &e).await,
            Some(MemoryInput::InterestStateUpdated(e)) => {
                let i = &e.interest;
                sqlx::query(
                    "INSERT INTO persona_interest_state (persona, attention_targets, interaction_mode, \
                     updated_from_event_ids, updated_at, source_event_id, position) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (persona) DO UPDATE SET \
                     attention_targets = EXCLUDED.attention_targets, interaction_mode = EXCLUDED.interaction_mode, \
                     updated_from_event_ids = EXCLUDED.updated_from_event_ids, updated_at = EXCLUDED.updated_at, \
                     source_event_id = EXCLUDED.source_event_id, position = EXCLUDED.position",
                )
                .bind(&e.persona)
                .bind(serde_json::to_value(&i.attention_targets).map_err(|e| ProjectionError::decode(event, e))?)
                .bind(i.interaction_mode.as_str())
                .bind(&i.updated_from_event_ids)
                .bind(i.updated_at)
                .bind(e.source_event_id)
                .bind(event.position)
                .execute(&mut **tx)
                .await?;
                Ok(())
            }
            Some(MemoryInput::EventAnnotated(e)) => {
                let a = e.event_annotations.as_ref();
                sqlx::query(
                    "INSERT INTO memory_event_annotations (source_event_id, persona, life_stage, \
                     about_year_start, about_year_end, annotation, position) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (source_event_id) DO NOTHING",
                )
                .bind(e.source_event_id)
                .bind(&e.persona)
                .bind(a.map(|a| a.life_stage.clone()))
                .bind(a.and_then(|a| a.about_year_start))
                .bind(a.and_then(|a| a.about_year_end))
                .bind(event.payload.clone())
                .bind(event.position)
                .execute(&mut **tx)
                .await?;
                Ok(())
            }
            None => Ok(()),
        }
    }

    async fn reset(&self, tx: &mut Transaction<'_, Postgres>) -> Result<(), ProjectionError> {
        for table in MEMORY_TABLES {
            sqlx::query(&format!("DELETE FROM {table}"))
                .execute(&mut **tx)
                .await?;
        }
        Ok(())
    }
}

//! `partner_mood_state`: the projection of affect events into each persona's episode window.

use chrono::{DateTime, Utc};
use ghost_shared::affect::{Affect, MoodConstants};
use ghost_shared::event::{EventPayload, RecordedEvent};
use ghost_shared::events::{AffectReflected, AssistantReplied};
use ghost_shared::projection::{Projection, ProjectionError};
use sqlx::{PgExecutor, Postgres, Row, Transaction};
use tracing::warn;

use crate::mood::{Episode, MoodProjection};

/// Projects `AssistantReplied` (with an affect) and `AffectReflected` into
/// `partner_mood_state`.
#[derive(Debug, Clone)]
pub struct MoodEpisodes {
    constants: MoodConstants,
}

/// The projection's name (checkpoint key, `ghost projections rebuild partner_mood_state`).
pub const NAME: &str = "partner_mood_state";

/// Unix seconds of a time stamp, with microseconds.
pub fn unix_seconds(t: DateTime<Utc>) -> f64 {
    t.timestamp_micros() as f64 / 1e6
}

fn episode(at: f64, affect: &Affect) -> Episode {
    Episode {
        at,
        label: affect.label,
        intensity: affect.intensity,
        salience: affect.salience,
        confidence: affect.confidence,
        policy: affect.policy,
    }
}

impl MoodEpisodes {
    /// The projection with the configured constants (the window size among them).
    pub fn new(constants: MoodConstants) -> Self {
        Self { constants }
    }

    /// A persona's window as stored (empty when it has none yet).
    pub async fn load<'e>(
        &self,
        executor: impl PgExecutor<'e>,
        persona: &str,
    ) -> Result<MoodProjection, ProjectionError> {
        let row = sqlx::query("SELECT episodes FROM partner_mood_state WHERE persona = $1")
            .bind(persona)
            .fetch_optional(executor)
            .await?;
        let episodes: Vec<Episode> = match row {
            Some(r) => {
                serde_json::from_value(r.try_get("episodes")?).map_err(|e| corrupt(persona, e))?
            }
            None => Vec::new(),
        };
        MoodProjection::restore(self.constants, episodes).map_err(|e| corrupt(persona, e))
    }
}

fn corrupt(persona: &str, e: impl std::fmt::Display) -> ProjectionError {
    ProjectionError::Decode {
        event_id: uuid::Uuid::nil(),
        event_type: format!("partner_mood_state row of {persona}"),
        reason: e.to_string(),
    }
}

#[async_trait::async_trait]
impl Projection for MoodEpisodes {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn apply(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        event: &RecordedEvent,
    ) -> Result<(), ProjectionError> {
        let (persona, episode) = match event.event_type.as_str() {
            AssistantReplied::EVENT_TYPE => {
                let Ok(reply) = event.decode::<AssistantReplied>() else {
                    return Ok(());
                };
                let Some(affect) = &reply.affect else {
                    return Ok(());
                };
                (
                    reply.speaker,
                    episode(unix_seconds(event.recorded_at), affect),
                )
            }
            AffectReflected::EVENT_TYPE => {
                let Ok(r) = event.decode::<AffectReflected>() else {
                    return Ok(());
                };
                let e = episode(r.at, &r.affect);
                (r.persona, e)
            }
            _ => return Ok(()),
        };
        sqlx::query("SELECT pg_advisory_xact_lock(hashtext('partner_mood_state:' || $1))")
            .bind(&persona)
            .execute(&mut **tx)
            .await?;
        let mut window = self.load(&mut **tx, &persona).await?;
        if let Err(e) = window.apply(episode) {
            // A malformed episode never stops the projection; it simply does not count.
            warn!(event_id = %event.event_id, error = %e, "affect episode skipped");
            return Ok(());
        }
        let episodes: Vec<&Episode> = window.episodes().collect();
        sqlx::query(
            "INSERT INTO partner_mood_state (persona, episodes, episode_count, last_event_id, updated_at) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (persona) DO UPDATE SET \
             episodes = $2, episode_count = $3, last_event_id = $4, updated_at = $5",
        )
        .bind(&persona)
        .bind(serde_json::to_value(&episodes).map_err(|e| corrupt(&persona, e))?)
        .bind(episodes.len() as i32)
        .bind(event.event_id)
        .bind(event.recorded_at)
        .execute(&mut **tx)
        .await?;
        Ok(())
    }

    async fn reset(&self, tx: &mut Transaction<'_, Postgres>) -> Result<(), ProjectionError> {
        sqlx::query("DELETE FROM partner_mood_state")
            .execute(&mut **tx)
            .await?;
        Ok(())
    }
}

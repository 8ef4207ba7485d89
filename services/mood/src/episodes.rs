//! `partner_mood_state`: the projection of affect events into each persona's episode window.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use ghost_shared::affect::{Affect, MoodConstants};
use ghost_shared::envelope::{EventPayload, RecordedEvent};
use ghost_shared::events::{AffectReflected, AssistantReplied};
use ghost_shared::projector::{Projection, ProjectionError};
use sqlx::{PgExecutor, Postgres, Row, Transaction};
use tracing::warn;

use crate::cache::{MoodNotice, ReadWindow, WindowCache, CHANNEL};
use crate::mood::Episode;

/// Projects `AssistantReplied` (with an affect) and `AffectReflected` into `mood_episodes`
/// (the window) and `partner_mood_state` (a row per persona), announcing each episode it
/// adds on [`CHANNEL`] (see [`crate::cache`]).
#[derive(Clone)]
pub struct MoodEpisodes {
    constants: MoodConstants,
    /// This process's windows: told of each episode a pass adds before the pass commits.
    cache: Arc<WindowCache>,
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
        Self::with_cache(constants, Arc::new(WindowCache::new(constants)))
    }

    /// The projection, telling `cache` of each episode its passes add.
    pub fn with_cache(constants: MoodConstants, cache: Arc<WindowCache>) -> Self {
        Self { constants, cache }
    }

    /// The episodes of `persona` projected after `mark` (in the projection's order), how
    /// many rows the persona's window has now and the number of its newest episode (its
    /// summary row's, kept in the same transactions as the rows): what a cached window
    /// needs to catch up.
    pub async fn load_after<'e>(
        &self,
        executor: impl PgExecutor<'e>,
        persona: &str,
        mark: EpisodeMark,
    ) -> Result<ReadWindow, ProjectionError> {
        let rows = sqlx::query(
            "SELECT t.total, t.seq, e.tx_id, e.position, e.at, e.label, e.intensity, \
             e.salience, e.confidence, e.policy \
             FROM (SELECT COALESCE(s.episode_count, 0)::bigint AS total, \
                          COALESCE(s.episode_seq, 0) AS seq \
                   FROM (SELECT 1) one \
                   LEFT JOIN partner_mood_state s ON s.persona = $1) t \
             LEFT JOIN mood_episodes e ON e.persona = $1 \
              AND (COALESCE(e.tx_id, 0), e.position) > ($2, $3) \
             ORDER BY COALESCE(e.tx_id, 0), e.position",
        )
        .bind(persona)
        .bind(mark.tx_id)
        .bind(mark.position)
        .fetch_all(executor)
        .await?;
        let mut read = ReadWindow {
            episodes: Vec::with_capacity(rows.len()),
            ..ReadWindow::default()
        };
        for r in &rows {
            read.total = r.try_get("total")?;
            read.seq = r.try_get("seq")?;
            let Some(position) = r.try_get::<Option<i64>, _>("position")? else {
                continue; // no new rows: only the count
            };
            let tx_id: Option<i64> = r.try_get("tx_id")?;
            let mark = EpisodeMark {
                tx_id: tx_id.unwrap_or(0),
                position,
            };
            read.episodes.push((mark, row_episode(persona, r)?));
        }
        Ok(read)
    }
}

/// Where a reader of a persona's episodes got to, in the projection's (tx_id, position)
/// order (rows from before the `tx_id` column count as transaction 0).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct EpisodeMark {
    /// The event's transaction.
    pub tx_id: i64,
    /// The event's position.
    pub position: i64,
}

/// One `mood_episodes` row as an episode.
fn row_episode(persona: &str, r: &sqlx::postgres::PgRow) -> Result<Episode, ProjectionError> {
    let label: String = r.try_get("label")?;
    let policy: Option<serde_json::Value> = r.try_get("policy")?;
    Ok(Episode {
        at: r.try_get("at")?,
        label: label.parse().map_err(|e| corrupt(persona, e))?,
        intensity: r.try_get("intensity")?,
        salience: r.try_get("salience")?,
        confidence: r.try_get("confidence")?,
        policy: policy
            .map(serde_json::from_value)
            .transpose()
            .map_err(|e| corrupt(persona, e))?,
    })
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

    fn wakes_on(&self, event_type: &str) -> bool {
        [AssistantReplied::EVENT_TYPE, AffectReflected::EVENT_TYPE].contains(&event_type)
    }

    async fn apply(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        event: &RecordedEvent,
    ) -> Result<(), ProjectionError> {
        let (persona, episode) = match event.event_type.as_str() {
            AssistantReplied::EVENT_TYPE => {
                let reply: AssistantReplied = event
                    .decode()
                    .map_err(|e| ProjectionError::decode(event, e))?;
                let Some(affect) = &reply.affect else {
                    return Ok(());
                };
                (
                    reply.speaker,
                    episode(unix_seconds(event.recorded_at), affect),
                )
            }
            AffectReflected::EVENT_TYPE => {
                let r: AffectReflected = event
                    .decode()
                    .map_err(|e| ProjectionError::decode(event, e))?;
                let e = episode(r.at, &r.affect);
                (r.persona, e)
            }
            _ => return Ok(()),
        };
        if let Err(e) = episode.validate() {
            // A malformed episode never stops the projection; it simply does not count.
            warn!(event_id = %event.event_id, error = %e, "affect episode skipped");
            return Ok(());
        }
        // One statement inserts the episode and counts it in the summary row, which
        // counts the window's rows, kept by this projection alone, so the count moves
        // with each insert and trim instead of being counted again (a count of a full
        // window read every one of its rows on every reply). It also numbers the episode
        // and announces it to every mood process (delivered at commit; a rolled-back pass
        // announces nothing). An episode applied before (a replay) inserts nothing, so
        // the summary row and the announcement are left alone too.
        let counted: Option<(i32, i64, Option<String>)> = sqlx::query_as(
            "WITH ins AS ( \
               INSERT INTO mood_episodes (persona, position, at, label, intensity, salience, confidence, policy, tx_id) \
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING \
               RETURNING persona), \
             s AS ( \
               INSERT INTO partner_mood_state (persona, episode_count, episode_seq, last_event_id, updated_at) \
               SELECT ins.persona, 1, 1, $10, $11 FROM ins \
               ON CONFLICT (persona) DO UPDATE SET episode_count = partner_mood_state.episode_count + 1, \
               episode_seq = partner_mood_state.episode_seq + 1, \
               last_event_id = EXCLUDED.last_event_id, updated_at = EXCLUDED.updated_at \
               RETURNING episode_count, episode_seq) \
             SELECT s.episode_count, s.episode_seq, \
                    pg_notify($12, jsonb_build_object('kind', 'episode', 'persona', $1::text, \
                        'seq', s.episode_seq, 'tx_id', $9::bigint, 'position', $2::bigint, \
                        'episode', $13::jsonb)::text)::text \
             FROM s",
        )
        .bind(&persona)
        .bind(event.position)
        .bind(episode.at)
        .bind(episode.label.as_str())
        .bind(episode.intensity)
        .bind(episode.salience)
        .bind(episode.confidence)
        .bind(episode.policy.map(|p| serde_json::to_value(p).unwrap_or_default()))
        .bind(event.tx_id)
        .bind(event.event_id)
        .bind(event.recorded_at)
        .bind(CHANNEL)
        .bind(serde_json::to_value(&episode).map_err(|e| ProjectionError::decode(event, e))?)
        .fetch_optional(&mut **tx)
        .await?;
        let Some((count, seq, _announced)) = counted else {
            return Ok(()); // applied before (a replay): nothing changed
        };
        // Keep the newest `max_episodes` (by time, later arrival newer on ties), as the
        // in-memory window does: drop the oldest beyond it, walking the window's index.
        let excess = i64::from(count) - self.constants.max_episodes as i64;
        if excess > 0 {
            sqlx::query(
                "WITH dropped AS ( \
                   DELETE FROM mood_episodes WHERE (persona, at, position) IN ( \
                     SELECT persona, at, position FROM mood_episodes WHERE persona = $1 \
                     ORDER BY at, position LIMIT $2) \
                   RETURNING 1) \
                 UPDATE partner_mood_state SET episode_count = episode_count - (SELECT count(*) FROM dropped) \
                 WHERE persona = $1",
            )
            .bind(&persona)
            .bind(excess)
            .execute(&mut **tx)
            .await?;
        }
        // Until the announcement arrives, this process reads the window again.
        self.cache.expect(&persona, seq);
        Ok(())
    }

    /// Empties both of its tables (the episode window and the summary rows).
    async fn reset(&self, tx: &mut Transaction<'_, Postgres>) -> Result<(), ProjectionError> {
        sqlx::query("DELETE FROM mood_episodes")
            .execute(&mut **tx)
            .await?;
        sqlx::query("DELETE FROM partner_mood_state")
            .execute(&mut **tx)
            .await?;
        let reset = serde_json::to_string(&MoodNotice::Reset).unwrap_or_default();
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(CHANNEL)
            .bind(reset)
            .execute(&mut **tx)
            .await?;
        Ok(())
    }
}

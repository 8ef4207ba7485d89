//! `partner_mood_state`: the projection of affect events into each persona's episode window.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use ghost_shared::affect::{Affect, MoodConstants};
use ghost_shared::envelope::RecordedEvent;
use ghost_shared::events::{AffectReflected, AssistantReplied};
use ghost_shared::projector::{Projection, ProjectionError};
use serde::Serialize;
use sqlx::types::Json;
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

ghost_shared::event_enum! {
    /// The events that add an affect episode.
    enum EpisodeInput {
        AssistantReplied,
        AffectReflected,
    }
}

#[async_trait::async_trait]
impl Projection for MoodEpisodes {
    fn name(&self) -> &'static str {
        NAME
    }

    fn wakes_on(&self, event_type: &str) -> bool {
        EpisodeInput::takes(event_type)
    }

    async fn apply(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        event: &RecordedEvent,
    ) -> Result<(), ProjectionError> {
        self.apply_all(tx, std::slice::from_ref(event)).await
    }

    /// A pass's episodes in one statement and the trims they make in another, instead of
    /// two statements an episode (each reply adds one once a window is full).
    async fn apply_all(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        events: &[RecordedEvent],
    ) -> Result<(), ProjectionError> {
        let mut added = Vec::new();
        for event in events {
            if let Some((persona, episode)) = episode_of(event)? {
                added.push(NewEpisode::of(added.len(), persona, &episode, event)?);
            }
        }
        if added.is_empty() {
            return Ok(());
        }
        // One row per episode inserted (a replay inserts nothing: the summary rows and
        // the announcements are left alone too), each with its persona's summary after
        // the pass.
        let counted: Vec<(String, i32, i64)> = sqlx::query_as(INSERT_EPISODES)
            .bind(Json(&added))
            .bind(CHANNEL)
            .fetch_all(&mut **tx)
            .await?;
        let mut personas: Vec<(String, i32, i64)> = Vec::new();
        for (persona, count, seq) in counted {
            if !personas.iter().any(|(p, _, _)| *p == persona) {
                personas.push((persona, count, seq));
            }
        }
        // Keep the newest `max_episodes` (by time, later arrival newer on ties), as the
        // in-memory window does: drop the oldest beyond it, walking the window's index.
        let max = self.constants.max_episodes as i64;
        let (full, excess): (Vec<&str>, Vec<i64>) = personas
            .iter()
            .filter(|(_, count, _)| i64::from(*count) > max)
            .map(|(p, count, _)| (p.as_str(), i64::from(*count) - max))
            .unzip();
        if !full.is_empty() {
            sqlx::query(TRIM_WINDOWS)
                .bind(&full)
                .bind(&excess)
                .execute(&mut **tx)
                .await?;
        }
        // Until the announcements arrive, this process reads the windows again.
        for (persona, _, seq) in &personas {
            self.cache.expect(persona, *seq);
        }
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

/// The episode `event` adds to a persona's window, if it adds one. A malformed episode
/// never stops the projection; it simply does not count.
fn episode_of(event: &RecordedEvent) -> Result<Option<(String, Episode)>, ProjectionError> {
    let (persona, episode) =
        match EpisodeInput::decode(event).map_err(|e| ProjectionError::decode(event, e))? {
            Some(EpisodeInput::AssistantReplied(reply)) => {
                let Some(affect) = &reply.affect else {
                    return Ok(None);
                };
                (
                    reply.speaker,
                    episode(unix_seconds(event.recorded_at), affect),
                )
            }
            Some(EpisodeInput::AffectReflected(r)) => {
                let e = episode(r.at, &r.affect);
                (r.persona, e)
            }
            None => return Ok(None),
        };
    if let Err(e) = episode.validate() {
        warn!(event_id = %event.event_id, error = %e, "affect episode skipped");
        return Ok(None);
    }
    Ok(Some((persona, episode)))
}

/// One episode a pass adds, as [`INSERT_EPISODES`] reads it.
#[derive(Serialize)]
struct NewEpisode {
    /// Its place in the pass (announcements go out in this order).
    ord: usize,
    persona: String,
    position: i64,
    tx_id: i64,
    event_id: uuid::Uuid,
    recorded_at: DateTime<Utc>,
    at: f64,
    label: &'static str,
    intensity: f64,
    salience: f64,
    confidence: Option<f64>,
    policy: Option<serde_json::Value>,
    /// The whole episode, for the announcement.
    episode: serde_json::Value,
}

impl NewEpisode {
    fn of(
        ord: usize,
        persona: String,
        episode: &Episode,
        event: &RecordedEvent,
    ) -> Result<Self, ProjectionError> {
        Ok(Self {
            ord,
            persona,
            position: event.position,
            tx_id: event.tx_id,
            event_id: event.event_id,
            recorded_at: event.recorded_at,
            at: episode.at,
            label: episode.label.as_str(),
            intensity: episode.intensity,
            salience: episode.salience,
            confidence: episode.confidence,
            policy: episode
                .policy
                .map(|p| serde_json::to_value(p).unwrap_or_default()),
            episode: serde_json::to_value(episode)
                .map_err(|e| ProjectionError::decode(event, e))?,
        })
    }
}

/// Inserts a pass's episodes and counts each persona's in its summary row, which counts
/// the window's rows, kept by this projection alone, so the count moves with each insert
/// and trim instead of being counted again (a count of a full window read every one of its
/// rows on every reply). It numbers each episode and announces it to every mood process,
/// in the pass's order (delivered at commit; a rolled-back pass announces nothing).
const INSERT_EPISODES: &str = "\
WITH e AS ( \
  SELECT * FROM jsonb_to_recordset($1) AS e(ord integer, persona text, position bigint, \
    tx_id bigint, event_id uuid, recorded_at timestamptz, at float8, label text, \
    intensity float8, salience float8, confidence float8, policy jsonb, episode jsonb)), \
ins AS ( \
  INSERT INTO mood_episodes (persona, position, at, label, intensity, salience, confidence, policy, tx_id) \
  SELECT persona, position, at, label, intensity, salience, confidence, policy, tx_id FROM e \
  ON CONFLICT DO NOTHING RETURNING persona, position), \
added AS ( \
  SELECT e.*, row_number() OVER (PARTITION BY e.persona ORDER BY e.ord) AS k, \
         count(*) OVER (PARTITION BY e.persona) AS n \
  FROM e JOIN ins ON ins.persona = e.persona AND ins.position = e.position), \
s AS ( \
  INSERT INTO partner_mood_state (persona, episode_count, episode_seq, last_event_id, updated_at) \
  SELECT DISTINCT ON (persona) persona, n, n, event_id, recorded_at FROM added \
  ORDER BY persona, ord DESC \
  ON CONFLICT (persona) DO UPDATE SET \
    episode_count = partner_mood_state.episode_count + EXCLUDED.episode_count, \
    episode_seq = partner_mood_state.episode_seq + EXCLUDED.episode_seq, \
    last_event_id = EXCLUDED.last_event_id, updated_at = EXCLUDED.updated_at \
  RETURNING persona, episode_count, episode_seq) \
SELECT q.persona, q.episode_count, q.episode_seq, \
       pg_notify($2, jsonb_build_object('kind', 'episode', 'persona', q.persona, \
         'seq', q.episode_seq - q.n + q.k, 'tx_id', q.tx_id, 'position', q.position, \
         'episode', q.episode)::text)::text \
FROM (SELECT a.persona, a.tx_id, a.position, a.episode, a.n, a.k, a.ord, \
             s.episode_count, s.episode_seq \
      FROM added a JOIN s ON s.persona = a.persona ORDER BY a.ord) q";

/// Drops the oldest episodes of each full window (`$1` the personas, `$2` how many each)
/// and counts them out of its summary row.
const TRIM_WINDOWS: &str = "\
WITH doomed AS ( \
  SELECT x.persona, x.position \
  FROM unnest($1::text[], $2::bigint[]) AS o(persona, excess) \
  CROSS JOIN LATERAL (SELECT m.persona, m.position FROM mood_episodes m \
                      WHERE m.persona = o.persona ORDER BY m.at, m.position \
                      LIMIT o.excess) x), \
dropped AS ( \
  DELETE FROM mood_episodes m USING doomed d \
  WHERE m.persona = d.persona AND m.position = d.position RETURNING m.persona), \
gone AS (SELECT persona, count(*) AS n FROM dropped GROUP BY persona) \
UPDATE partner_mood_state s SET episode_count = s.episode_count - gone.n \
FROM gone WHERE s.persona = gone.persona";

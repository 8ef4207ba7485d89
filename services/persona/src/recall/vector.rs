//! The vector source (issue 12 item 5): when `llm.embedding` is configured, the message is
//! embedded and compared (cosine, in process: [`super::vector_cache`]) with the stored
//! vectors of other sessions' utterances and the persona's active states. The persona's
//! autonomy messages are embedded when said ([`store_said`]); anything else without a
//! vector yet is embedded lazily, newest
//! first, a bounded batch per recall, into `memory_embeddings`.

use std::collections::HashMap;

use sqlx::{PgPool, Row};

use super::vector_cache::VectorCache;

use ghost_shared::llm::LlmClient;
use ghost_shared::projections::own_utterance;

/// How many missing vectors one recall embeds at most.
const BACKFILL_BATCH: i64 = 32;

/// How far back (newest utterances, newest states) a recall looks for missing vectors: a
/// conversation's new lines get theirs within a few recalls, and a recall never checks the
/// whole history (1.6 s at 100,000 once everything had a vector). Older lines without one
/// (a large imported history) are left to trigram recall.
const BACKFILL_WINDOW: i64 = 2_000;

/// Lowest cosine similarity a vector candidate needs. 0.25, not 0.3: with
/// all-MiniLM-L6-v2, 3 of 28 English questions of `ghost-harness recall-quality` had their best
/// evidence at 0.247–0.284 (paraphrases sit that low), and at 0.25 recall@12 rose from 0.96
/// to 1.00 with nothing else worse; about 17 rather than 4 stored vectors in 1,300 pass per
/// question, within the source's 40.
pub const MIN_COSINE: f64 = 0.25;

/// Cosine similarity of two vectors (0 when either is zero or their lengths differ).
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    if a.len() != b.len() {
        return 0.0;
    }
    let (mut dot, mut na, mut nb) = (0f64, 0f64, 0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}

/// Embeds up to [`BACKFILL_BATCH`] utterances (other sessions) and active states of
/// `persona` about `person` or no one that have no vector for this model yet.
pub async fn backfill(
    pool: &PgPool,
    model: &LlmClient,
    persona: &str,
    person: &str,
    session_id: &str,
) -> Result<(), String> {
    let name = &model.config().model;
    let rows = sqlx::query(
        "(SELECT 'state:' || s.state_id AS item_id, s.persona, NULL::text AS session_id, \
                 '(' || s.kind || ') ' || s.body_text AS text \
          FROM (SELECT * FROM memory_states WHERE persona = $1 ORDER BY position DESC LIMIT $6) s \
          WHERE s.status = 'active' AND (s.person IS NULL OR s.person = $5) AND NOT EXISTS \
          (SELECT 1 FROM memory_embeddings e WHERE e.item_id = 'state:' || s.state_id AND e.model = $3) \
          ORDER BY s.position DESC LIMIT $4) \
         UNION ALL \
         (SELECT 'event:' || t.event_id, NULL, t.session_id, \
                 CASE WHEN t.role = 'user' THEN '(the user said) ' ELSE '(I said) ' END || t.text \
          FROM (SELECT * FROM assistant_text ORDER BY position DESC LIMIT $6) t \
          WHERE t.session_id <> $2 AND NOT EXISTS \
          (SELECT 1 FROM memory_embeddings e WHERE e.item_id = 'event:' || t.event_id AND e.model = $3) \
          ORDER BY t.position DESC LIMIT $4)",
    )
    .bind(persona)
    .bind(session_id)
    .bind(name)
    .bind(BACKFILL_BATCH)
    .bind(person)
    .bind(BACKFILL_WINDOW)
    .fetch_all(pool)
    .await
    .map_err(|e| format!("reading what to embed: {e}"))?;
    let rows: Vec<(String, Option<String>, Option<String>, String)> = rows
        .iter()
        .take(BACKFILL_BATCH as usize)
        .map(|r| {
            Ok((
                r.try_get("item_id")?,
                r.try_get("persona")?,
                r.try_get("session_id")?,
                r.try_get("text")?,
            ))
        })
        .collect::<Result<_, sqlx::Error>>()
        .map_err(|e| format!("reading what to embed: {e}"))?;
    if rows.is_empty() {
        return Ok(());
    }
    let texts: Vec<String> = rows.iter().map(|r| r.3.clone()).collect();
    let vectors = model
        .embed(&texts)
        .await
        .map_err(|e| format!("embedding stored memories: {e}"))?;
    for ((item_id, persona, session_id, text), vector) in rows.into_iter().zip(vectors) {
        store(
            pool,
            model,
            &item_id,
            persona.as_deref(),
            session_id.as_deref(),
            &text,
            &vector,
        )
        .await?;
    }
    Ok(())
}

/// Embeds one utterance as it is said and stores its vector (the same item id and text as
/// [`backfill`] would give it), so a later recall compares against it without embedding it
/// first. `said_by_user` picks the text's speaker tag.
pub async fn store_said(
    pool: &PgPool,
    model: &LlmClient,
    session_id: &str,
    event_id: uuid::Uuid,
    said_by_user: bool,
    text: &str,
) -> Result<(), String> {
    let tag = if said_by_user {
        "(the user said) "
    } else {
        "(I said) "
    };
    let text = format!("{tag}{text}");
    let vector = model
        .embed(std::slice::from_ref(&text))
        .await
        .map_err(|e| format!("embedding an utterance: {e}"))?
        .pop()
        .ok_or("the embedding model returned no vector")?;
    store(
        pool,
        model,
        &format!("event:{event_id}"),
        None,
        Some(session_id),
        &text,
        &vector,
    )
    .await
}

/// Inserts one vector (a vector already stored for the item and model stays).
async fn store(
    pool: &PgPool,
    model: &LlmClient,
    item_id: &str,
    persona: Option<&str>,
    session_id: Option<&str>,
    text: &str,
    vector: &[f32],
) -> Result<(), String> {
    sqlx::query(
        "INSERT INTO memory_embeddings (item_id, model, persona, session_id, text, vector) \
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
    )
    .bind(item_id)
    .bind(&model.config().model)
    .bind(persona)
    .bind(session_id)
    .bind(text)
    .bind(vector)
    .execute(pool)
    .await
    .map(|_| ())
    .map_err(|e| format!("storing a vector: {e}"))
}

/// How many of the nearest vectors one scope check asks Postgres about.
const CHECKED_PER_ROUND: usize = 200;

/// How many rounds of scope checks a recall makes at most (the nearest vectors may be
/// other people's or other personas').
const ROUNDS: usize = 5;

/// Stored items of this scope whose vector is at least [`MIN_COSINE`] from `query_vector`,
/// most similar first, at most `limit`: (id, text, cosine). The vectors are compared in
/// process ([`VectorCache`]); Postgres checks the nearest ones' scope and gives their text.
pub async fn nearest(
    pool: &PgPool,
    model: &LlmClient,
    persona: &str,
    person: &str,
    session_id: &str,
    query_vector: &[f32],
    limit: usize,
) -> Result<Vec<(String, String, f64)>, sqlx::Error> {
    let name = &model.config().model;
    let near = VectorCache::of(pool, name)
        .nearest(pool, name, query_vector, MIN_COSINE)
        .await?;
    // Only active states about `person` or no one: a closed one may still have a vector,
    // another person's has one too. Utterances of other conversations that are the
    // person's to recall.
    let sql = format!(
        "SELECT e.item_id, e.text FROM memory_embeddings e WHERE e.model = $1 \
         AND e.item_id = ANY($5) AND \
         ((e.session_id IS NOT NULL AND e.session_id <> $3 AND EXISTS (SELECT 1 FROM assistant_text t \
           WHERE t.event_id = CAST(substr(e.item_id, 7) AS uuid) AND {})) OR (e.persona = $2 AND EXISTS \
          (SELECT 1 FROM memory_states s WHERE 'state:' || s.state_id = e.item_id AND s.status = 'active' \
           AND (s.person IS NULL OR s.person = $4))))",
        own_utterance(4)
    );
    let mut scored = Vec::new();
    for round in near.chunks(CHECKED_PER_ROUND).take(ROUNDS) {
        let ids: Vec<&str> = round.iter().map(|(id, _)| id.as_str()).collect();
        let rows = sqlx::query(&sql)
            .bind(name)
            .bind(persona)
            .bind(session_id)
            .bind(person)
            .bind(&ids)
            .fetch_all(pool)
            .await?;
        let texts: HashMap<String, String> = rows
            .iter()
            .map(|r| Ok((r.try_get("item_id")?, r.try_get("text")?)))
            .collect::<Result<_, sqlx::Error>>()?;
        for (id, s) in round {
            if let Some(text) = texts.get(id) {
                scored.push((id.clone(), text.clone(), *s));
            }
        }
        if scored.len() >= limit {
            break;
        }
    }
    scored.truncate(limit);
    Ok(scored)
}

#[cfg(test)]
mod tests {
    use super::cosine;

    #[test]
    fn cosine_of_same_opposite_orthogonal_and_degenerate_vectors() {
        assert!((cosine(&[1.0, 2.0], &[2.0, 4.0]) - 1.0).abs() < 1e-9);
        assert!((cosine(&[1.0, 0.0], &[-1.0, 0.0]) + 1.0).abs() < 1e-9);
        assert_eq!(cosine(&[1.0, 0.0], &[0.0, 1.0]), 0.0);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 1.0]), 0.0);
        assert_eq!(cosine(&[1.0], &[1.0, 1.0]), 0.0);
    }
}

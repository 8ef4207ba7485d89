//! The vector source (issue 12 item 5): when `llm.embedding` is configured, the message is
//! embedded and compared (cosine, in process: [`super::vector_cache`]) with the stored
//! vectors of utterances and the persona's active states. What is compared was embedded
//! when it was said, by the embedding projection ([`crate::embeddings`]): a recall embeds
//! only its query.

use std::collections::HashMap;

use sqlx::{PgPool, Row};

use super::sources::At;
use super::vector_cache::VectorCache;

use ghost_shared::llm::LlmClient;

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
    at: &At<'_>,
    query_vector: &[f32],
    limit: usize,
) -> Result<Vec<(String, String, f64)>, sqlx::Error> {
    let name = &model.config().model;
    let (persona, person, session_id) = (at.scope.persona, at.scope.person, at.scope.session_id);
    let near = VectorCache::of(pool, name)
        .nearest(pool, name, query_vector, MIN_COSINE)
        .await?;
    // Only active states about `person` or no one: a closed one may still have a vector,
    // another person's has one too. Utterances that are the person's to recall and not in
    // the reply's history.
    let sql = format!(
        "SELECT e.item_id, e.text FROM memory_embeddings e WHERE e.model = $1 \
         AND e.item_id = ANY($5) AND \
         ((e.session_id IS NOT NULL AND EXISTS (SELECT 1 FROM assistant_text t \
           WHERE t.event_id = CAST(substr(e.item_id, 7) AS uuid) AND {})) OR (e.persona = $2 AND EXISTS \
          (SELECT 1 FROM memory_states s WHERE 'state:' || s.state_id = e.item_id AND s.status = 'active' \
           AND (s.person IS NULL OR s.person = $4))))",
        super::sources::offered(3, 6, 4)
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
            .bind(at.history_from)
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

//! The stage source (seed 003 `persist_memory`: a run's memory is the characters' too): the
//! summaries of the stage runs the recalling persona spoke in (`StageMemorySaved`, which
//! names its speakers), trigram-similar to the message, among the newest runs.

use sqlx::{PgPool, Row};

/// How many of the persona's newest stage runs are compared with the message.
const RECENT_RUNS: i64 = 200;

/// `(event:<id>, text, score)` of the stage memories of `persona` at least `threshold`
/// similar to `query`, most similar first, at most `limit`.
pub async fn similar(
    pool: &PgPool,
    persona: &str,
    query: &str,
    threshold: f64,
    limit: i64,
) -> Result<Vec<(String, String, f64)>, sqlx::Error> {
    if query.trim().is_empty() {
        return Ok(Vec::new());
    }
    let rows = sqlx::query(
        "WITH runs AS ( \
           SELECT event_id, payload->>'summary' AS summary FROM events \
           WHERE event_type = 'StageMemorySaved' AND payload->'speakers' ? $2 \
           ORDER BY position DESC LIMIT $3) \
         SELECT event_id, summary, similarity(lower(summary), lower($1))::float8 AS s \
         FROM runs WHERE similarity(lower(summary), lower($1)) >= $4 \
         ORDER BY s DESC, event_id LIMIT $5",
    )
    .bind(query)
    .bind(persona)
    .bind(RECENT_RUNS)
    .bind(threshold)
    .bind(limit)
    .fetch_all(pool)
    .await?;
    rows.iter()
        .map(|r| {
            let id: uuid::Uuid = r.try_get("event_id")?;
            let summary: String = r.try_get("summary")?;
            let s: f64 = r.try_get("s")?;
            Ok((
                format!("event:{id}"),
                format!("(a stage conversation I took part in) {summary}"),
                s,
            ))
        })
        .collect()
}

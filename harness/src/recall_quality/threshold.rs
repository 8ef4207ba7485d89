//! The check of the vector source's threshold (`MIN_COSINE`): for each English question,
//! the cosine of its best evidence vector, and how many stored vectors of any kind reach
//! each candidate threshold (what a lower one would let in). The threshold is right when
//! evidence rarely falls below it and lowering it would mostly add noise.

use anyhow::{anyhow, Result};
use sqlx::PgPool;

use ghost_persona::recall::vector::{cosine, MIN_COSINE};
use ghost_shared::llm::LlmClient;

use super::corpus::Corpus;
use super::facts::Lang;
use super::measure::evidence;
use super::seed::Seeded;

/// The thresholds compared.
pub const THRESHOLDS: [f64; 4] = [0.2, 0.25, 0.3, 0.35];

/// What the check found.
#[derive(Debug, Clone, Default)]
pub struct CosineCheck {
    /// Per English question, the best cosine of its evidence, with the question (lowest
    /// first).
    pub best_evidence: Vec<(f64, &'static str)>,
    /// Per threshold of [`THRESHOLDS`]: English questions whose evidence all falls below it.
    pub evidence_below: Vec<usize>,
    /// Per threshold: the median count of stored vectors at or above it, per question.
    pub median_passing: Vec<usize>,
}

/// Runs the check against the vectors stored for `model`.
pub async fn check(
    pool: &PgPool,
    corpus: &Corpus,
    seeded: &Seeded,
    model: &LlmClient,
) -> Result<CosineCheck> {
    let stored: Vec<(String, Vec<f32>)> =
        sqlx::query_as("SELECT item_id, vector FROM memory_embeddings WHERE model = $1")
            .bind(&model.config().model)
            .fetch_all(pool)
            .await?;
    let english: Vec<_> = corpus
        .questions
        .iter()
        .filter(|q| q.lang == Lang::En)
        .collect();
    let texts: Vec<String> = english.iter().map(|q| q.text.to_owned()).collect();
    let vectors = model
        .embed(&texts)
        .await
        .map_err(|e| anyhow!("embedding the questions: {e}"))?;
    let mut out = CosineCheck::default();
    let mut passing: Vec<Vec<usize>> = vec![Vec::new(); THRESHOLDS.len()];
    for (q, v) in english.iter().zip(&vectors) {
        let (new, _) = evidence(q, seeded);
        let scored: Vec<(&str, f64)> = stored
            .iter()
            .map(|(id, s)| (id.as_str(), cosine(v, s)))
            .collect();
        let best = scored
            .iter()
            .filter(|(id, _)| new.iter().any(|e| e == id))
            .map(|(_, c)| *c)
            .fold(f64::MIN, f64::max);
        out.best_evidence.push((best, q.text));
        for (t, counts) in THRESHOLDS.iter().zip(&mut passing) {
            counts.push(scored.iter().filter(|(_, c)| c >= t).count());
        }
    }
    out.best_evidence.sort_by(|a, b| a.0.total_cmp(&b.0));
    out.evidence_below = THRESHOLDS
        .iter()
        .map(|t| out.best_evidence.iter().filter(|b| b.0 < *t).count())
        .collect();
    out.median_passing = passing
        .into_iter()
        .map(|mut c| {
            c.sort_unstable();
            c.get(c.len() / 2).copied().unwrap_or(0)
        })
        .collect();
    Ok(out)
}

impl std::fmt::Display for CosineCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let b = &self.best_evidence;
        let at = |q: f64| {
            b.get(((b.len().max(1) - 1) as f64 * q) as usize)
                .map_or(0.0, |x| x.0)
        };
        writeln!(
            f,
            "best evidence cosine per English question: min {:.3}, p10 {:.3}, median {:.3} (n={})",
            at(0.0),
            at(0.1),
            at(0.5),
            b.len()
        )?;
        for (cosine, question) in b.iter().take_while(|x| x.0 < MIN_COSINE) {
            writeln!(
                f,
                "  below MIN_COSINE ({MIN_COSINE}): {cosine:.3} {question}"
            )?;
        }
        for (i, t) in THRESHOLDS.iter().enumerate() {
            writeln!(
                f,
                "  threshold {t:.2}: {} questions' evidence below it; median {} stored vectors at or above it per question",
                self.evidence_below[i], self.median_passing[i]
            )?;
        }
        Ok(())
    }
}

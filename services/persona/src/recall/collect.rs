//! Candidate collection (seed 001 B-1): every source queried in parallel, each under its own
//! timeout (a slow source is skipped and named), fused by rank ([`super::fuse`]), then the
//! persona's focus applied ([`super::rank`]) and the best `max_candidates` kept.
//!
//! Every utterance source leaves out the lines the reply's history already holds (the
//! newest lines of this conversation), but not the older lines of the same conversation: a
//! person who talks in one conversation for days is reminded of what they said days ago.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::{Duration, Instant};

use serde::Serialize;
use sqlx::PgPool;

use ghost_shared::llm::LlmClient;
use ghost_shared::memory::retrieval::RetrievalPlan;

use super::fuse::{fuse, Rows};
use super::sources;

/// One memory that may be recalled.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidate {
    /// `event:<uuid>`, `state:<uuid>` or `preference:<domain>/<subject>/<polarity>`.
    pub id: String,
    /// Which source found it (the one that ranked it best).
    pub source: &'static str,
    /// The text the selection and the reply see.
    pub text: String,
    /// Rank score (the fused ranks, then the focus's bias).
    pub score: f64,
}

/// What collection found.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Collected {
    /// Ranked, at most `max_candidates`.
    pub candidates: Vec<Candidate>,
    /// Candidates each source returned (before fusing).
    pub counts: BTreeMap<String, usize>,
    /// Sources skipped (timed out or failed), with why.
    pub skipped: BTreeMap<String, String>,
    /// Milliseconds each source took.
    pub timings_ms: BTreeMap<String, f64>,
}

/// Where and for whom to look.
#[derive(Debug, Clone, Copy)]
pub struct Scope<'a> {
    /// The persona recalling.
    pub persona: &'a str,
    /// The person who spoke: only their memories and those about no one are recalled.
    pub person: &'a str,
    /// The conversation being answered.
    pub session_id: &'a str,
    /// Which of its newest lines the reply's history holds (they are not offered again).
    pub history: HistoryWindow,
    /// The per-source bound.
    pub source_timeout: Duration,
    /// Lowest trigram similarity.
    pub similarity_threshold: f64,
    /// The embedding model (`llm.embedding`); `None` turns the vector source off.
    pub embedding: Option<&'a LlmClient>,
}

/// The reply's history window, as the renderer cuts it
/// ([`ghost_shared::short_memory::window_start`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct HistoryWindow {
    /// The user messages since the session's summary (the request's
    /// `history_user_messages`); none: `min_lines`.
    pub user_messages: Option<u32>,
    /// Lines it holds at least (`persona.history_turns`).
    pub min_lines: usize,
    /// Lines it holds at most.
    pub max_lines: usize,
    /// `persona.history_pause_secs`: it holds no line from before such a silence.
    pub pause_secs: u64,
}

/// Runs `query` under `timeout`, recording its count, time or why it was skipped.
async fn timed(
    name: &'static str,
    timeout: Duration,
    query: impl Future<Output = Result<Rows, sqlx::Error>>,
) -> (&'static str, Result<Rows, String>, f64) {
    let started = Instant::now();
    let result = match tokio::time::timeout(timeout, query).await {
        Ok(Ok(rows)) => Ok(rows),
        Ok(Err(e)) => Err(format!("failed: {e}")),
        Err(_) => Err(format!("timed out after {} ms", timeout.as_millis())),
    };
    (name, result, started.elapsed().as_secs_f64() * 1e3)
}

/// Collects and ranks the candidates for `plan`.
pub async fn collect(pool: &PgPool, scope: Scope<'_>, plan: &RetrievalPlan) -> Collected {
    let mut out = Collected::default();
    let query = plan.queries.first().map(String::as_str).unwrap_or_default();
    let t = scope.source_timeout;
    // Where the reply's history starts in this conversation: one indexed read first.
    let history_from = match tokio::time::timeout(t, sources::history_from(pool, scope)).await {
        Ok(Ok(position)) => position,
        Ok(Err(e)) => {
            out.skipped.insert("history".into(), format!("failed: {e}"));
            return out;
        }
        Err(_) => {
            let why = format!("timed out after {} ms", t.as_millis());
            out.skipped.insert("history".into(), why);
            return out;
        }
    };
    let at = sources::At {
        scope,
        history_from,
        query,
    };
    let (recent, trigram, keyword, then, about, vector) = tokio::join!(
        timed("recent_events", t, sources::recent_events(pool, &at)),
        timed("trigram_events", t, sources::trigram_events(pool, &at)),
        timed("keyword_events", t, sources::keyword_events(pool, &at)),
        timed("said_then", t, sources::said_then(pool, &at, plan.period)),
        timed("about_time", t, sources::about_time(pool, &at, plan)),
        timed("vector", t, sources::vector_similar(pool, &at)),
    );
    let (trigram_states, keyword_states, recent_states, preferences, stage) = tokio::join!(
        timed("trigram_states", t, sources::trigram_states(pool, &at)),
        timed("keyword_states", t, sources::keyword_states(pool, &at)),
        timed("recent_states", t, sources::recent_states(pool, &at)),
        timed("preferences", t, sources::preferences(pool, &at)),
        timed(
            "stage_memories",
            t,
            super::stage_memories::similar(
                pool,
                scope.persona,
                query,
                scope.similarity_threshold,
                sources::PER_SOURCE
            )
        ),
    );
    let mut lists: Vec<(&'static str, Rows)> = Vec::new();
    for (name, result, ms) in [
        recent,
        trigram,
        keyword,
        then,
        about,
        vector,
        trigram_states,
        keyword_states,
        recent_states,
        preferences,
        stage,
    ] {
        if name == "vector" && scope.embedding.is_none() {
            continue;
        }
        out.timings_ms.insert(name.into(), ms);
        match result {
            Ok(rows) => {
                out.counts.insert(name.into(), rows.len());
                lists.push((name, rows));
            }
            Err(why) => {
                out.counts.insert(name.into(), 0);
                out.skipped.insert(name.into(), why);
            }
        }
    }
    let mut candidates = fuse(&lists);
    // The keys the focus ranks by, the superseded utterances and the persona's own words;
    // without them (slow or failed) the fused order stands.
    let read = async {
        tokio::try_join!(
            super::rank::keys(pool, &candidates),
            super::rank::superseded(pool, scope.persona, &candidates),
            super::rank::persona_words(pool, &candidates)
        )
    };
    let read = tokio::time::timeout(t, read).await;
    let keys = match read {
        Ok(Ok((keys, superseded, persona_words))) => {
            super::rank::discount_persona_words(&mut candidates, &persona_words);
            super::rank::demote(&mut candidates, &superseded);
            keys
        }
        Ok(Err(e)) => {
            out.skipped
                .insert("ranking_keys".into(), format!("failed: {e}"));
            Default::default()
        }
        Err(_) => {
            out.skipped.insert(
                "ranking_keys".into(),
                format!("timed out after {} ms", t.as_millis()),
            );
            Default::default()
        }
    };
    out.candidates = super::rank::rank(candidates, &keys, &plan.focus, plan.limits.max_candidates);
    out
}

//! Candidate collection (seed 001 B-1): every source queried in parallel, each under its own
//! timeout (a slow source is skipped and named), then one ranking by the persona's focus
//! ([`super::rank`]).

use std::collections::BTreeMap;
use std::future::Future;
use std::time::{Duration, Instant};

use serde::Serialize;
use sqlx::{PgPool, Row};
use uuid::Uuid;

use ghost_shared::llm::LlmClient;
use ghost_shared::memory::retrieval::{RetrievalMode, RetrievalPlan};
use ghost_shared::projections::own_utterance;

/// One memory that may be recalled.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidate {
    /// `event:<uuid>`, `state:<uuid>` or `preference:<domain>/<subject>/<polarity>`.
    pub id: String,
    /// Which source found it (the first, when several did).
    pub source: &'static str,
    /// The text the selection and the reply see.
    pub text: String,
    /// Rank score (source score, then the focus's bias).
    pub score: f64,
}

/// What collection found.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Collected {
    /// Ranked, at most `max_candidates`.
    pub candidates: Vec<Candidate>,
    /// Candidates each source returned (before merging).
    pub counts: BTreeMap<String, usize>,
    /// Sources skipped (timed out or failed), with why.
    pub skipped: BTreeMap<String, String>,
    /// Milliseconds each source took.
    pub timings_ms: BTreeMap<String, f64>,
}

/// How many rows each source returns at most.
const PER_SOURCE: i64 = 40;

/// Where and for whom to look.
#[derive(Debug, Clone, Copy)]
pub struct Scope<'a> {
    /// The persona recalling.
    pub persona: &'a str,
    /// The person who spoke: only their memories and those about no one are recalled.
    pub person: &'a str,
    /// The conversation being answered (its own turns are already in the prompt).
    pub session_id: &'a str,
    /// The per-source bound.
    pub source_timeout: Duration,
    /// Lowest trigram similarity.
    pub similarity_threshold: f64,
    /// The embedding model (`llm.embedding`); `None` turns the vector source off.
    pub embedding: Option<&'a LlmClient>,
}

type Rows = Result<Vec<(String, String, f64)>, sqlx::Error>;

/// Runs `query` under `timeout`, recording its count, time or why it was skipped.
async fn timed(
    name: &'static str,
    timeout: Duration,
    query: impl Future<Output = Rows>,
) -> (
    &'static str,
    Result<Vec<(String, String, f64)>, String>,
    f64,
) {
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
    let query = plan.queries.first().map(String::as_str).unwrap_or_default();
    let t = scope.source_timeout;
    let (
        recent_events,
        trigram_events,
        trigram_states,
        recent_states,
        preferences,
        about_time,
        vector,
        stage,
    ) = tokio::join!(
        timed("recent_events", t, recent_events(pool, scope)),
        timed("trigram_events", t, trigram_events(pool, scope, query)),
        timed("trigram_states", t, trigram_states(pool, scope, query)),
        timed("recent_states", t, recent_states(pool, scope)),
        timed("preferences", t, preferences(pool, scope)),
        timed("about_time", t, about_time(pool, scope, plan)),
        timed("vector", t, vector_similar(pool, scope, query)),
        timed(
            "stage_memories",
            t,
            super::stage_memories::similar(
                pool,
                scope.persona,
                query,
                scope.similarity_threshold,
                PER_SOURCE
            )
        ),
    );
    let mut out = Collected::default();
    let mut merged: BTreeMap<String, Candidate> = BTreeMap::new();
    for (name, result, ms) in [
        recent_events,
        trigram_events,
        trigram_states,
        recent_states,
        preferences,
        about_time,
        vector,
        stage,
    ] {
        if name == "vector" && scope.embedding.is_none() {
            continue;
        }
        out.timings_ms.insert(name.into(), ms);
        match result {
            Ok(rows) => {
                out.counts.insert(name.into(), rows.len());
                for (id, text, score) in rows {
                    let entry = merged.entry(id.clone()).or_insert(Candidate {
                        id,
                        source: name,
                        text,
                        score,
                    });
                    entry.score = entry.score.max(score);
                }
            }
            Err(why) => {
                out.counts.insert(name.into(), 0);
                out.skipped.insert(name.into(), why);
            }
        }
    }
    let mut candidates: Vec<Candidate> = merged.into_values().collect();
    // The keys the focus ranks by and the superseded utterances; without them (slow or
    // failed) the sources' order stands.
    let read = async {
        tokio::try_join!(
            super::rank::keys(pool, &candidates),
            super::rank::superseded(pool, scope.persona, &candidates)
        )
    };
    let read = tokio::time::timeout(t, read).await;
    let keys = match read {
        Ok(Ok((keys, superseded))) => {
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

fn event_row(r: &sqlx::postgres::PgRow, score: f64) -> Result<(String, String, f64), sqlx::Error> {
    let id: Uuid = r.try_get("event_id")?;
    let role: String = r.try_get("role")?;
    let text: String = r.try_get("text")?;
    let who = if role == "user" {
        "the user said"
    } else {
        "I said"
    };
    Ok((format!("event:{id}"), format!("({who}) {text}"), score))
}

async fn recent_events(pool: &PgPool, scope: Scope<'_>) -> Rows {
    let sql = format!(
        "SELECT t.event_id, t.role, t.text FROM assistant_text t WHERE t.session_id <> $1 \
         AND {} ORDER BY t.position DESC LIMIT $2",
        own_utterance(3)
    );
    let rows = sqlx::query(&sql)
        .bind(scope.session_id)
        .bind(PER_SOURCE / 2)
        .bind(scope.person)
        .fetch_all(pool)
        .await?;
    // Newer first: 0.3 for the newest, less for older ones.
    rows.iter()
        .enumerate()
        .map(|(i, r)| event_row(r, 0.3 / (1.0 + i as f64 * 0.1)))
        .collect()
}

/// One trigram source: the table, its text column and the column that scopes it.
struct TrigramSource {
    columns: &'static str,
    table: &'static str,
    text: &'static str,
    /// A condition on `$scope` (the scope value's parameter) and `$person` (the speaker),
    /// plus any fixed ones.
    scope: &'static str,
}

const UTTERANCES: TrigramSource = TrigramSource {
    columns: "event_id, role, text",
    table: "assistant_text t",
    text: "text",
    scope: "t.session_id <> $scope AND $own",
};

const STATES: TrigramSource = TrigramSource {
    columns: "state_id, kind, body_text",
    table: "memory_states",
    text: "body_text",
    scope: "persona = $scope AND status = 'active' AND (person IS NULL OR person = $person)",
};

/// The rows of `source` most similar to `query`, with their score as `s`.
///
/// With indexed search terms (see [`super::terms`]) only rows containing one of them are
/// candidates, scored by the share of the terms they contain. Without any (a message of short or function words), the sentence's
/// trigram similarity at the configured threshold selects, as before.
async fn trigram_rows(
    pool: &PgPool,
    source: &TrigramSource,
    threshold: f64,
    query: &str,
    scope_value: &str,
    person: &str,
) -> Result<Vec<sqlx::postgres::PgRow>, sqlx::Error> {
    let TrigramSource {
        columns,
        table,
        text,
        scope,
    } = source;
    let terms = super::terms::search_terms(query);
    let indexed = super::terms::indexed(&terms);
    if indexed.is_empty() {
        let scope = scope
            .replace("$own", &own_utterance(4))
            .replace("$scope", "$2")
            .replace("$person", "$4");
        let mut tx = pool.begin().await?;
        sqlx::query("SELECT set_config('pg_trgm.similarity_threshold', $1, true)")
            .bind(threshold.to_string())
            .execute(&mut *tx)
            .await?;
        // On `lower(text)`, served by the same trigram index as the terms (migration 0091
        // dropped the one on `text`): trigrams are case-folded anyway, so the similarity
        // is the same.
        let sql = format!(
            "SELECT {columns}, similarity(lower({text}), $1)::float8 AS s FROM {table} \
             WHERE lower({text}) % $1 AND {scope} ORDER BY s DESC, position DESC LIMIT $3"
        );
        let rows = sqlx::query(&sql)
            .bind(query)
            .bind(scope_value)
            .bind(PER_SOURCE)
            .bind(person)
            .fetch_all(&mut *tx)
            .await?;
        tx.commit().await?;
        return Ok(rows);
    }
    // `$5..`: one `lower(text) LIKE '%term%'` each, OR-ed: a bitmap OR of scans of the
    // trigram index on `lower(text)` (migration 0080; ILIKE rechecks three times slower).
    // The score is the share of all terms the row holds; recency breaks ties.
    let any_term = (0..indexed.len())
        .map(|i| format!("lower({text}) LIKE ${}", i + 5))
        .collect::<Vec<_>>()
        .join(" OR ");
    let scope = scope
        .replace("$own", &own_utterance(4))
        .replace("$scope", "$1")
        .replace("$person", "$4");
    let sql = format!(
        "SELECT {columns}, \
         ((SELECT count(*) FROM unnest($3::text[]) AS t(term) WHERE strpos(lower({text}), t.term) > 0)::float8 \
           / cardinality($3::text[]))::float8 AS s \
         FROM {table} WHERE ({any_term}) AND {scope} ORDER BY s DESC, position DESC LIMIT $2"
    );
    let mut q = sqlx::query(&sql)
        .bind(scope_value)
        .bind(PER_SOURCE)
        .bind(&terms)
        .bind(person);
    for term in &indexed {
        // Terms are letters and digits only (see `search_terms`): nothing to escape.
        q = q.bind(format!("%{term}%"));
    }
    q.fetch_all(pool).await
}

/// Utterances of other sessions similar to the message.
async fn trigram_events(pool: &PgPool, scope: Scope<'_>, query: &str) -> Rows {
    if query.trim().is_empty() {
        return Ok(Vec::new());
    }
    let rows = trigram_rows(
        pool,
        &UTTERANCES,
        scope.similarity_threshold,
        query,
        scope.session_id,
        scope.person,
    )
    .await?;
    rows.iter()
        .map(|r| event_row(r, r.try_get::<f64, _>("s")?))
        .collect()
}

fn state_row(r: &sqlx::postgres::PgRow, score: f64) -> Result<(String, String, f64), sqlx::Error> {
    let id: Uuid = r.try_get("state_id")?;
    let kind: String = r.try_get("kind")?;
    let text: String = r.try_get("body_text")?;
    Ok((format!("state:{id}"), format!("({kind}) {text}"), score))
}

/// The persona's active states similar to the message.
async fn trigram_states(pool: &PgPool, scope: Scope<'_>, query: &str) -> Rows {
    if query.trim().is_empty() {
        return Ok(Vec::new());
    }
    let rows = trigram_rows(
        pool,
        &STATES,
        scope.similarity_threshold,
        query,
        scope.persona,
        scope.person,
    )
    .await?;
    // A matching state outranks a matching utterance of the same similarity.
    rows.iter()
        .map(|r| state_row(r, 0.2 + r.try_get::<f64, _>("s")?))
        .collect()
}

async fn recent_states(pool: &PgPool, scope: Scope<'_>) -> Rows {
    let rows = sqlx::query(
        "SELECT state_id, kind, body_text FROM memory_states WHERE persona = $1 AND status = 'active' \
         AND (person IS NULL OR person = $3) ORDER BY position DESC LIMIT $2",
    )
    .bind(scope.persona)
    .bind(PER_SOURCE / 2)
    .bind(scope.person)
    .fetch_all(pool)
    .await?;
    rows.iter()
        .enumerate()
        .map(|(i, r)| state_row(r, 0.35 / (1.0 + i as f64 * 0.1)))
        .collect()
}

async fn preferences(pool: &PgPool, scope: Scope<'_>) -> Rows {
    let rows = sqlx::query(
        "SELECT domain, subject, subject_key, polarity, status FROM preferences \
         WHERE persona = $1 AND person = $3 AND status <> 'revoked' ORDER BY position DESC LIMIT $2",
    )
    .bind(scope.persona)
    .bind(PER_SOURCE)
    .bind(scope.person)
    .fetch_all(pool)
    .await?;
    rows.iter()
        .map(|r| {
            let (domain, subject, key, polarity, status): (String, String, String, String, String) = (
                r.try_get("domain")?,
                r.try_get("subject")?,
                r.try_get("subject_key")?,
                r.try_get("polarity")?,
                r.try_get("status")?,
            );
            let score = if status == "confirmed" { 0.4 } else { 0.25 };
            Ok((
                format!("preference:{domain}/{key}/{polarity}"),
                format!("(the user's {domain} preference, {status}) {polarity}: {subject}"),
                score,
            ))
        })
        .collect()
}

/// Utterances the write plan annotated with the time the message names.
async fn about_time(pool: &PgPool, scope: Scope<'_>, plan: &RetrievalPlan) -> Rows {
    if plan.mode != RetrievalMode::ExplicitAboutTime {
        return Ok(Vec::new());
    }
    let hint = &plan.time_hint;
    let rows = sqlx::query(&format!(
        "SELECT t.event_id, t.role, t.text FROM memory_event_annotations a \
             JOIN assistant_text t ON t.event_id = a.source_event_id \
             WHERE a.persona = $1 AND ((a.about_year_start <= $3 AND a.about_year_end >= $2) \
             OR (a.life_stage IS NOT NULL AND a.life_stage = $4)) AND {} \
             ORDER BY a.position DESC LIMIT $5",
        own_utterance(6)
    ))
    .bind(scope.persona)
    .bind(hint.about_year_start)
    .bind(hint.about_year_end)
    .bind(hint.life_stage_hint.map(|s| s.as_str()))
    .bind(PER_SOURCE)
    .bind(scope.person)
    .fetch_all(pool)
    .await?;
    rows.iter().map(|r| event_row(r, 0.9)).collect()
}

/// Stored utterances and states nearest the message by meaning (off without `llm.embedding`).
async fn vector_similar(pool: &PgPool, scope: Scope<'_>, query: &str) -> Rows {
    let Some(model) = scope.embedding else {
        return Ok(Vec::new());
    };
    if query.trim().is_empty() {
        return Ok(Vec::new());
    }
    // A failed query embedding fails the source (recorded as skipped).
    let to_protocol = |e: String| sqlx::Error::Protocol(e);
    let query_vector = model
        .embed(&[query.to_owned()])
        .await
        .map_err(|e| to_protocol(format!("embedding the message: {e}")))?
        .pop()
        .unwrap_or_default();
    super::vector::nearest(
        pool,
        model,
        scope.persona,
        scope.person,
        scope.session_id,
        &query_vector,
        PER_SOURCE as usize,
    )
    .await
}

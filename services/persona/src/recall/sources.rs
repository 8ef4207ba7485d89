//! Recall's sources, each a ranked list of at most [`PER_SOURCE`] rows, best first:
//!
//! - utterances: the newest (`recent_events`), those holding the message's search terms
//!   (`trigram_events`, [`super::terms`]), those matching its words after English stemming
//!   (`keyword_events`, Postgres full-text search), those said in the period it names
//!   (`said_then`), those the write plan annotated with the year or stage of life it names
//!   (`about_time`), those nearest it by meaning (`vector`);
//! - the persona's active states: by terms, by keywords, newest;
//! - the person's preferences.
//!
//! An utterance is offered only when it is the speaker's to recall ([`own_utterance`]) and
//! not among the lines the reply's history already holds.

use sqlx::{PgPool, Row};
use uuid::Uuid;

use ghost_shared::memory::retrieval::{RetrievalMode, RetrievalPlan};
use ghost_shared::memory::when::Period;
use ghost_shared::projections::own_utterance;
use ghost_shared::short_memory::{sitting_start, window_start};

use super::collect::Scope;
use super::fuse::Rows;

/// How many rows each source returns at most.
pub const PER_SOURCE: i64 = 40;

/// What every source knows of the recall.
pub struct At<'a> {
    /// Whose memory, for whom, where.
    pub scope: Scope<'a>,
    /// The first position of the reply's history in this conversation: lines of it from
    /// there on are not offered.
    pub history_from: i64,
    /// The message.
    pub query: &'a str,
}

/// The first position of the lines the reply's history holds in `scope`'s conversation,
/// cut as the renderer cuts it (the message itself, the newest line, is in it too); past
/// every position when the conversation has none.
pub async fn history_from(pool: &PgPool, scope: Scope<'_>) -> Result<i64, sqlx::Error> {
    let window = scope.history;
    let mut lines: Vec<(i64, String, f64)> = sqlx::query_as(
        "SELECT position, role, extract(epoch FROM recorded_at)::float8 \
         FROM assistant_text WHERE session_id = $1 ORDER BY position DESC LIMIT $2",
    )
    .bind(scope.session_id)
    .bind(window.max_lines.max(window.min_lines) as i64 + 1)
    .fetch_all(pool)
    .await?;
    lines.reverse();
    let Some((message, _, message_at)) = lines.pop() else {
        return Ok(i64::MAX);
    };
    let is_user: Vec<bool> = lines.iter().map(|(_, role, _)| role == "user").collect();
    let at: Vec<f64> = lines.iter().map(|(_, _, at)| *at).collect();
    let skip = window_start(
        &is_user,
        window.user_messages,
        window.min_lines,
        window.max_lines,
    )
    .max(sitting_start(&at, message_at, window.pause_secs));
    Ok(lines
        .get(skip)
        .map_or(message, |(position, _, _)| *position))
}

/// The condition an utterance row `t` meets to be offered, with the conversation as
/// parameter `session`, the history's start as `from` and the person as `person`.
pub fn offered(session: usize, from: usize, person: usize) -> String {
    format!(
        "(t.session_id <> ${session} OR t.position < ${from}) AND {}",
        own_utterance(person)
    )
}

fn event_row(r: &sqlx::postgres::PgRow, score: f64) -> Result<(String, String, f64), sqlx::Error> {
    let id: Uuid = r.try_get("event_id")?;
    let role: String = r.try_get("role")?;
    let text: String = r.try_get("text")?;
    Ok((
        format!("event:{id}"),
        crate::embeddings::line_text(role == "user", &text),
        score,
    ))
}

fn state_row(r: &sqlx::postgres::PgRow, score: f64) -> Result<(String, String, f64), sqlx::Error> {
    let id: Uuid = r.try_get("state_id")?;
    let kind: String = r.try_get("kind")?;
    let text: String = r.try_get("body_text")?;
    Ok((format!("state:{id}"), format!("({kind}) {text}"), score))
}

/// The newest utterances offered.
pub async fn recent_events(pool: &PgPool, at: &At<'_>) -> Result<Rows, sqlx::Error> {
    let sql = format!(
        "SELECT t.event_id, t.role, t.text FROM assistant_text t WHERE {} \
         ORDER BY t.position DESC LIMIT $4",
        offered(1, 2, 3)
    );
    let rows = sqlx::query(&sql)
        .bind(at.scope.session_id)
        .bind(at.history_from)
        .bind(at.scope.person)
        .bind(PER_SOURCE / 2)
        .fetch_all(pool)
        .await?;
    rows.iter()
        .enumerate()
        .map(|(i, r)| event_row(r, 1.0 / (1.0 + i as f64)))
        .collect()
}

/// A row of a source as a candidate `(id, text, score)`, given its score.
type RowOf = fn(&sqlx::postgres::PgRow, f64) -> Result<(String, String, f64), sqlx::Error>;

/// One table searched by terms or keywords: its columns, its text column and the
/// condition that scopes it (with `$scope`, `$from` and `$person` to be numbered).
struct Searched {
    columns: &'static str,
    table: &'static str,
    text: &'static str,
    scope: &'static str,
    /// A row as a candidate.
    row: RowOf,
}

const UTTERANCES: Searched = Searched {
    columns: "t.event_id, t.role, t.text",
    table: "assistant_text t",
    text: "t.text",
    scope: "$offered",
    row: event_row,
};

const STATES: Searched = Searched {
    columns: "state_id, kind, body_text",
    table: "memory_states",
    text: "body_text",
    scope: "persona = $scope AND status = 'active' AND (person IS NULL OR person = $person)",
    row: state_row,
};

impl Searched {
    /// The scope condition with the scope value as `$s`, the history's start as `$f` and
    /// the person as `$p`.
    fn scoped(&self, s: usize, f: usize, p: usize) -> String {
        self.scope
            .replace("$offered", &offered(s, f, p))
            .replace("$scope", &format!("${s}"))
            .replace("$person", &format!("${p}"))
    }

    fn scope_value<'a>(&self, at: &At<'a>) -> &'a str {
        if self.table == STATES.table {
            at.scope.persona
        } else {
            at.scope.session_id
        }
    }
}

/// The rows of `table` holding the message's search terms, scored by the share of terms
/// they hold (recency breaks ties). Without any indexed term (a message of short or
/// function words), the sentence's trigram similarity at the configured threshold selects.
async fn by_terms(
    pool: &PgPool,
    table: &Searched,
    at: &At<'_>,
) -> Result<Vec<sqlx::postgres::PgRow>, sqlx::Error> {
    let Searched {
        columns,
        table: from,
        text,
        ..
    } = table;
    let terms = super::terms::search_terms(at.query);
    let indexed = super::terms::indexed(&terms);
    let scope_value = table.scope_value(at);
    if indexed.is_empty() {
        let scope = table.scoped(2, 5, 4);
        let mut tx = pool.begin().await?;
        sqlx::query("SELECT set_config('pg_trgm.similarity_threshold', $1, true)")
            .bind(at.scope.similarity_threshold.to_string())
            .execute(&mut *tx)
            .await?;
        // On `lower(text)`, served by the trigram index on it (migration 0080).
        let sql = format!(
            "SELECT {columns}, similarity(lower({text}), $1)::float8 AS s FROM {from} \
             WHERE lower({text}) % $1 AND {scope} ORDER BY s DESC, position DESC LIMIT $3"
        );
        let rows = sqlx::query(&sql)
            .bind(at.query)
            .bind(scope_value)
            .bind(PER_SOURCE)
            .bind(at.scope.person)
            .bind(at.history_from)
            .fetch_all(&mut *tx)
            .await?;
        tx.commit().await?;
        return Ok(rows);
    }
    // `$6..`: one `lower(text) LIKE '%term%'` each, OR-ed: a bitmap OR of scans of the
    // trigram index on `lower(text)` (ILIKE rechecks three times slower).
    let any_term = (0..indexed.len())
        .map(|i| format!("lower({text}) LIKE ${}", i + 6))
        .collect::<Vec<_>>()
        .join(" OR ");
    let scope = table.scoped(1, 5, 4);
    let sql = format!(
        "SELECT {columns}, \
         ((SELECT count(*) FROM unnest($3::text[]) AS t(term) WHERE strpos(lower({text}), t.term) > 0)::float8 \
           / cardinality($3::text[]))::float8 AS s \
         FROM {from} WHERE ({any_term}) AND {scope} ORDER BY s DESC, position DESC LIMIT $2"
    );
    let mut q = sqlx::query(&sql)
        .bind(scope_value)
        .bind(PER_SOURCE)
        .bind(&terms)
        .bind(at.scope.person)
        .bind(at.history_from);
    for term in &indexed {
        // Terms are letters and digits only (see `search_terms`): nothing to escape.
        q = q.bind(format!("%{term}%"));
    }
    q.fetch_all(pool).await
}

/// The rows of `table` matching the message's words after English stemming (any of them),
/// by `ts_rank_cd`, recency breaking ties (index: migration 0123).
async fn by_keywords(
    pool: &PgPool,
    table: &Searched,
    at: &At<'_>,
) -> Result<Vec<sqlx::postgres::PgRow>, sqlx::Error> {
    let Searched {
        columns,
        table: from,
        text,
        ..
    } = table;
    let scope = table.scoped(2, 5, 4);
    // The message's lexemes OR-ed (plainto_tsquery would AND them: a question shares only
    // some words with the fact it asks about), quoted so no lexeme reads as an operator.
    let sql = format!(
        "WITH q AS (SELECT to_tsquery('simple', coalesce((SELECT string_agg(quote_literal(l), ' | ') \
           FROM unnest(tsvector_to_array(to_tsvector('english', $1))) AS l), '')) AS q) \
         SELECT {columns}, ts_rank_cd(to_tsvector('english', {text}), q.q)::float8 AS s \
         FROM {from}, q WHERE to_tsvector('english', {text}) @@ q.q AND {scope} \
         ORDER BY s DESC, position DESC LIMIT $3"
    );
    sqlx::query(&sql)
        .bind(at.query)
        .bind(table.scope_value(at))
        .bind(PER_SOURCE)
        .bind(at.scope.person)
        .bind(at.history_from)
        .fetch_all(pool)
        .await
}

/// How a searched table is matched with the message.
enum Match {
    /// By its search terms ([`super::terms`]).
    Terms,
    /// By its words after English stemming.
    Keywords,
}

/// `table`'s rows matching the message `how`, as candidates.
async fn matching(
    pool: &PgPool,
    table: &Searched,
    at: &At<'_>,
    how: Match,
) -> Result<Rows, sqlx::Error> {
    if at.query.trim().is_empty() {
        return Ok(Vec::new());
    }
    let rows = match how {
        Match::Terms => by_terms(pool, table, at).await?,
        Match::Keywords => by_keywords(pool, table, at).await?,
    };
    rows.iter()
        .map(|r| (table.row)(r, r.try_get::<f64, _>("s")?))
        .collect()
}

/// Utterances holding the message's search terms.
pub async fn trigram_events(pool: &PgPool, at: &At<'_>) -> Result<Rows, sqlx::Error> {
    matching(pool, &UTTERANCES, at, Match::Terms).await
}

/// Utterances matching the message's words.
pub async fn keyword_events(pool: &PgPool, at: &At<'_>) -> Result<Rows, sqlx::Error> {
    matching(pool, &UTTERANCES, at, Match::Keywords).await
}

/// The persona's active states holding the message's search terms.
pub async fn trigram_states(pool: &PgPool, at: &At<'_>) -> Result<Rows, sqlx::Error> {
    matching(pool, &STATES, at, Match::Terms).await
}

/// The persona's active states matching the message's words.
pub async fn keyword_states(pool: &PgPool, at: &At<'_>) -> Result<Rows, sqlx::Error> {
    matching(pool, &STATES, at, Match::Keywords).await
}

/// The persona's newest active states about the person or no one.
pub async fn recent_states(pool: &PgPool, at: &At<'_>) -> Result<Rows, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT state_id, kind, body_text FROM memory_states WHERE persona = $1 AND status = 'active' \
         AND (person IS NULL OR person = $3) ORDER BY position DESC LIMIT $2",
    )
    .bind(at.scope.persona)
    .bind(PER_SOURCE / 2)
    .bind(at.scope.person)
    .fetch_all(pool)
    .await?;
    rows.iter()
        .enumerate()
        .map(|(i, r)| state_row(r, 1.0 / (1.0 + i as f64)))
        .collect()
}

/// The person's preferences (confirmed first, then newest).
pub async fn preferences(pool: &PgPool, at: &At<'_>) -> Result<Rows, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT domain, subject, subject_key, polarity, status FROM preferences \
         WHERE persona = $1 AND person = $3 AND status <> 'revoked' \
         ORDER BY status = 'confirmed' DESC, position DESC LIMIT $2",
    )
    .bind(at.scope.persona)
    .bind(PER_SOURCE)
    .bind(at.scope.person)
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
            let score = if status == "confirmed" { 1.0 } else { 0.5 };
            Ok((
                format!("preference:{domain}/{key}/{polarity}"),
                format!("(the user's {domain} preference, {status}) {polarity}: {subject}"),
                score,
            ))
        })
        .collect()
}

/// Utterances the write plan annotated with the year or stage of life the message names.
pub async fn about_time(
    pool: &PgPool,
    at: &At<'_>,
    plan: &RetrievalPlan,
) -> Result<Rows, sqlx::Error> {
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
        offered(7, 8, 6)
    ))
    .bind(at.scope.persona)
    .bind(hint.about_year_start)
    .bind(hint.about_year_end)
    .bind(hint.life_stage_hint.map(|s| s.as_str()))
    .bind(PER_SOURCE)
    .bind(at.scope.person)
    .bind(at.scope.session_id)
    .bind(at.history_from)
    .fetch_all(pool)
    .await?;
    rows.iter().map(|r| event_row(r, 1.0)).collect()
}

/// Utterances said within the period the message names ("last week", 先月), those holding
/// more of its search terms first, then the newest.
pub async fn said_then(
    pool: &PgPool,
    at: &At<'_>,
    period: Option<Period>,
) -> Result<Rows, sqlx::Error> {
    let Some(period) = period else {
        return Ok(Vec::new());
    };
    let terms = super::terms::search_terms(at.query);
    let sql = format!(
        "SELECT t.event_id, t.role, t.text, \
           (SELECT count(*) FROM unnest($5::text[]) AS q(term) \
             WHERE strpos(lower(t.text), q.term) > 0)::float8 AS s \
         FROM assistant_text t WHERE t.recorded_at >= to_timestamp($1) \
           AND t.recorded_at < to_timestamp($2) AND {} \
         ORDER BY s DESC, t.position DESC LIMIT $6",
        offered(3, 4, 7)
    );
    let rows = sqlx::query(&sql)
        .bind(period.start_ts as f64)
        .bind(period.end_ts as f64)
        .bind(at.scope.session_id)
        .bind(at.history_from)
        .bind(&terms)
        .bind(PER_SOURCE)
        .bind(at.scope.person)
        .fetch_all(pool)
        .await?;
    rows.iter()
        .map(|r| event_row(r, r.try_get::<f64, _>("s")?))
        .collect()
}

/// Stored utterances and states nearest the message by meaning (off without
/// `llm.embedding`): the message is the one text this recall embeds.
pub async fn vector_similar(pool: &PgPool, at: &At<'_>) -> Result<Rows, sqlx::Error> {
    let Some(model) = at.scope.embedding else {
        return Ok(Vec::new());
    };
    if at.query.trim().is_empty() {
        return Ok(Vec::new());
    }
    let query_vector = model
        .embed(&[at.query.to_owned()])
        .await
        .map_err(|e| sqlx::Error::Protocol(format!("embedding the message: {e}")))?
        .pop()
        .unwrap_or_default();
    super::vector::nearest(pool, model, at, &query_vector, PER_SOURCE as usize).await
}

//! What a run found, from the store (`RecallPerformed`, the turns' outcomes, who said what),
//! the recorder (each contract's answers against their own schemas) and this process'
//! metrics (answers accepted): printed as Markdown, written as JSON with `--json`.
//!
//! Recall is scored on the fact's own message: its `UserMessageReceived` among the first 5
//! and the first 12 candidates of the question's `RecallPerformed`, as the line itself
//! (`event:<id>`) or as a state a write plan made from it (`state:<id>` whose evidence
//! names the message); for a corrected fact, the correcting message must rank above the
//! original. A candidate is
//! another person's when it is someone else's words, the persona's words in a conversation
//! someone else spoke in, or a state about someone else.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Result;
use ghost_testkit::model_recorder::Exchange;
use serde::Serialize;
use serde_json::Value;
use sqlx::PgPool;
use uuid::Uuid;

use super::drive::{Outcome, Sent};
use super::env::Override;
use super::script::{Fact, Lang, Purpose, Script, Turn, Via, Who};
use crate::reply_bench::{accepted_per_contract, contract_answers, quantile};

/// The first candidates counted by the narrow and the wide recall figure.
pub const AT: [usize; 2] = [5, 12];

/// Everything one run measured.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The reduced script (`--short`)?
    pub short: bool,
    /// Messages sent.
    pub messages: usize,
    /// Simulated days from the first message to the last.
    pub days: u32,
    /// The overrides of `config/ghost.yaml` the run applied.
    pub overrides: Vec<Override>,
    /// How the replies ended.
    pub replies: Replies,
    /// Time to the first token (`/api/chat`) or to the delivery (LINE).
    pub first_token: BTreeMap<String, Quantiles>,
    /// Per contract.
    pub contracts: Vec<ContractRow>,
    /// Recall over every question.
    pub recall: RecallSummary,
    /// Each planted fact.
    pub facts: Vec<FactRow>,
    /// Each turn.
    pub turns: Vec<TurnRow>,
    /// Model calls that were answered, per contract (`trailer`: the replies): how long they
    /// took and how many tokens they read and wrote (medians).
    pub calls: BTreeMap<String, CallTimes>,
    /// Structured answers that broke their contract, as the store recorded them
    /// (`WritePlanRejected`, `ModelAnswerRejected`): the contract and its first reason.
    pub rejections: Vec<(String, String)>,
    /// Write plans applied (utterances with an `EventAnnotated`) and rejected.
    pub write_plans: (usize, usize),
    /// Seconds each day's end waited for the day's background work (write plans,
    /// reflections, summaries) before the clock moved on.
    pub day_rests_secs: Vec<f64>,
}

/// How the replies ended.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Replies {
    /// Replies stored as the model ended them.
    pub completed: usize,
    /// Replies stored, cut (`AssistantReplied.cut`), per reason.
    pub cut: BTreeMap<String, usize>,
    /// `RenderFailed`, per code.
    pub failed: BTreeMap<String, usize>,
    /// Failures after the person already saw reply text.
    pub failed_after_shown: usize,
    /// `TurnTimedOut`.
    pub timed_out: usize,
}

/// Quantiles of a sample of times.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Quantiles {
    /// Samples.
    pub n: usize,
    /// Median, ms.
    pub p50_ms: Option<f64>,
    /// 95th percentile, ms.
    pub p95_ms: Option<f64>,
    /// 99th percentile, ms.
    pub p99_ms: Option<f64>,
}

impl Quantiles {
    fn of(ms: &[f64]) -> Quantiles {
        let d: Vec<Duration> = ms
            .iter()
            .map(|m| Duration::from_secs_f64(m / 1e3))
            .collect();
        let q = |p| (!d.is_empty()).then(|| quantile(&d, p));
        Quantiles {
            n: d.len(),
            p50_ms: q(0.5),
            p95_ms: q(0.95),
            p99_ms: q(0.99),
        }
    }
}

/// One contract's answered calls.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CallTimes {
    /// From request to the answer's end.
    pub elapsed: Quantiles,
    /// Median prompt tokens.
    pub prompt_tokens_p50: Option<f64>,
    /// Median completion tokens.
    pub completion_tokens_p50: Option<f64>,
    /// Median prompt tokens the model server's cache already held (the embedded model
    /// reports them; None from a server that does not).
    pub cached_tokens_p50: Option<f64>,
}

fn call_times(exchanges: &[Exchange]) -> BTreeMap<String, CallTimes> {
    // Per contract: milliseconds, prompt tokens, completion tokens, cached prompt tokens.
    type Samples = (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>);
    let mut per: BTreeMap<String, Samples> = BTreeMap::new();
    for x in exchanges {
        let Some(name) = x.contract() else { continue };
        let e = per.entry(name).or_default();
        e.0.push(x.elapsed_ms);
        let tokens = |k: &str| x.usage.as_ref().and_then(|u| u[k].as_f64());
        e.1.extend(tokens("prompt_tokens"));
        e.2.extend(tokens("completion_tokens"));
        e.3.extend(
            x.usage
                .as_ref()
                .and_then(|u| u["prompt_tokens_details"]["cached_tokens"].as_f64()),
        );
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied()
    };
    per.into_iter()
        .map(|(name, (ms, prompt, completion, cached))| {
            let times = CallTimes {
                elapsed: Quantiles::of(&ms),
                prompt_tokens_p50: median(prompt),
                completion_tokens_p50: median(completion),
                cached_tokens_p50: median(cached),
            };
            (name, times)
        })
        .collect()
}

/// One contract's answers.
#[derive(Debug, Clone, Serialize)]
pub struct ContractRow {
    /// Its name.
    pub name: String,
    /// Answers the model gave.
    pub calls: usize,
    /// Valid against the schema their request carried.
    pub schema_valid: usize,
    /// Accepted by their validator (the services' metric).
    pub accepted: usize,
}

/// Recall over every question.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RecallSummary {
    /// Questions asked, per language.
    pub questions: BTreeMap<String, usize>,
    /// Questions whose evidence was among the first 5, per language.
    pub at5: BTreeMap<String, usize>,
    /// Among the first 12, per language.
    pub at12: BTreeMap<String, usize>,
    /// Questions whose evidence (newest form) was in the reply's own history, per language.
    pub in_history: BTreeMap<String, usize>,
    /// Questions of corrected facts whose newest form ranked above the old.
    pub newest_first: usize,
    /// Questions of corrected facts.
    pub corrected_questions: usize,
    /// Replies to questions that name the fact.
    pub named: usize,
    /// Candidates, over every recall of the run, that were another person's.
    pub cross_person: usize,
    /// Their texts (for reading).
    pub cross_person_texts: Vec<String>,
    /// Recalls performed.
    pub recalls: usize,
    /// The vector source's time over every recall.
    pub vector: Quantiles,
    /// Recalls that skipped the vector source (timed out or failed).
    pub vector_skipped: usize,
    /// Other sources skipped, per source.
    pub skipped: BTreeMap<String, usize>,
}

/// One planted fact.
#[derive(Debug, Clone, Serialize)]
pub struct FactRow {
    /// Its id.
    pub id: &'static str,
    /// Who told it.
    pub who: Who,
    /// Its language.
    pub lang: Lang,
    /// The message event that carries it.
    pub evidence: Option<Uuid>,
    /// The message event that corrects it.
    pub correction: Option<Uuid>,
    /// Each question.
    pub questions: Vec<Asked>,
}

/// One question about a fact.
#[derive(Debug, Clone, Serialize)]
pub struct Asked {
    /// The simulated day.
    pub day: u32,
    /// Where.
    pub via: Via,
    /// What.
    pub text: &'static str,
    /// Its `RecallPerformed` was found.
    pub recalled: bool,
    /// The evidence's rank among the candidates (0 = first); for a corrected fact, the
    /// correction's.
    pub rank: Option<usize>,
    /// The original message's rank, for a corrected fact.
    pub old_rank: Option<usize>,
    /// The evidence was in the reply's own history (the prompt's earlier messages): recall
    /// does not offer those lines again, by design.
    pub in_history: bool,
    /// Candidates offered, and per source before fusion.
    pub candidates: usize,
    /// `RecallPerformed.candidate_counts`.
    pub sources: BTreeMap<String, usize>,
    /// Evidence among the first 5.
    pub at5: bool,
    /// Evidence among the first 12.
    pub at12: bool,
    /// For a corrected fact: the newest form ranks above the old one.
    pub newest_first: Option<bool>,
    /// The reply names the fact.
    pub named: bool,
    /// The reply.
    pub reply: String,
}

/// One turn as sent.
#[derive(Debug, Clone, Serialize)]
pub struct TurnRow {
    /// The simulated day.
    pub day: u32,
    /// Who.
    pub who: Who,
    /// Where.
    pub via: Via,
    /// Why.
    pub purpose: Purpose,
    /// What was said.
    pub text: &'static str,
    /// How it went.
    pub sent: Sent,
}

/// A `RecallPerformed`'s parts the report reads.
struct Recall {
    candidates: Vec<String>,
    /// Per candidate, the messages it carries: the line itself, or a state's evidence.
    carries: Vec<Vec<Uuid>>,
    counts: BTreeMap<String, usize>,
    timings: BTreeMap<String, f64>,
    skipped: BTreeMap<String, String>,
}

/// Builds the report of a run.
pub async fn build(
    pool: &PgPool,
    script: &Script,
    sent: &[Sent],
    exchanges: &[Exchange],
    overrides: Vec<Override>,
    short: bool,
    day_rests_secs: Vec<f64>,
) -> Result<Report> {
    let mut recalls = BTreeMap::new();
    for s in sent {
        if let Some(r) = recall_of(pool, s.user_event).await? {
            recalls.insert(s.user_event, r);
        }
    }
    let mut summary = RecallSummary {
        recalls: recalls.len(),
        ..Default::default()
    };
    let mut vector = Vec::new();
    for (s, r) in sent
        .iter()
        .filter_map(|s| Some((s, recalls.get(&s.user_event)?)))
    {
        vector.extend(r.timings.get("vector").copied());
        for source in r.skipped.keys() {
            *summary.skipped.entry(source.clone()).or_default() += 1;
        }
        summary.vector_skipped += usize::from(r.skipped.contains_key("vector"));
        for c in &r.candidates {
            if let Some(text) = foreign(pool, c, &s.speaker).await? {
                summary.cross_person += 1;
                summary.cross_person_texts.push(text);
            }
        }
    }
    summary.vector = Quantiles::of(&vector);
    let facts = facts(script, sent, &recalls, exchanges, &mut summary);
    let (answers, accepted) = (contract_answers(exchanges), accepted_per_contract());
    let contracts = answers
        .into_iter()
        .map(|(name, (calls, schema_valid))| ContractRow {
            accepted: accepted.get(&name).copied().unwrap_or(0.0) as usize,
            name,
            calls,
            schema_valid,
        })
        .collect();
    let (first, last) = script.days();
    Ok(Report {
        short,
        messages: sent.len(),
        days: last - first,
        overrides,
        replies: replies(sent),
        first_token: first_token(&script.turns, sent),
        contracts,
        recall: summary,
        facts,
        turns: script
            .turns
            .iter()
            .zip(sent)
            .map(|(t, s)| TurnRow {
                day: t.said.day,
                who: t.who,
                via: t.said.via,
                purpose: t.purpose,
                text: t.said.text,
                sent: s.clone(),
            })
            .collect(),
        calls: call_times(exchanges),
        rejections: rejections(pool).await?,
        write_plans: write_plans(pool).await?,
        day_rests_secs,
    })
}

async fn rejections(pool: &PgPool) -> Result<Vec<(String, String)>> {
    let rows: Vec<(String, Value)> = sqlx::query_as(
        "SELECT event_type, payload FROM events \
         WHERE event_type IN ('WritePlanRejected', 'ModelAnswerRejected') ORDER BY position",
    )
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(kind, p)| {
            let contract = p["contract"].as_str().unwrap_or("write_plan").to_owned();
            let reasons = p.get("errors").or(p.get("reasons"));
            let first = reasons
                .and_then(|r| r.get(0))
                .and_then(Value::as_str)
                .unwrap_or(&kind);
            (contract, first.chars().take(160).collect())
        })
        .collect())
}

async fn write_plans(pool: &PgPool) -> Result<(usize, usize)> {
    let (applied, rejected): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE event_type = 'EventAnnotated'), \
                count(*) FILTER (WHERE event_type = 'WritePlanRejected') FROM events",
    )
    .fetch_one(pool)
    .await?;
    Ok((applied as usize, rejected as usize))
}

fn replies(sent: &[Sent]) -> Replies {
    let mut r = Replies::default();
    for s in sent {
        match &s.outcome {
            Outcome::Completed => r.completed += 1,
            Outcome::Cut { reason } => *r.cut.entry(reason.clone()).or_default() += 1,
            Outcome::Failed { code } => {
                *r.failed.entry(code.clone()).or_default() += 1;
                r.failed_after_shown += usize::from(s.shown);
            }
            Outcome::TimedOut => r.timed_out += 1,
        }
    }
    r
}

fn first_token(turns: &[Turn], sent: &[Sent]) -> BTreeMap<String, Quantiles> {
    let replied = |s: &&Sent| matches!(s.outcome, Outcome::Completed | Outcome::Cut { .. });
    let of = |chat: bool| {
        let ms: Vec<f64> = turns
            .iter()
            .zip(sent)
            .filter(|(t, _)| (t.said.via == Via::Chat) == chat)
            .map(|(_, s)| s)
            .filter(replied)
            .filter_map(|s| s.first_ms)
            .collect();
        Quantiles::of(&ms)
    };
    BTreeMap::from([
        ("/api/chat (first token)".to_owned(), of(true)),
        ("LINE (delivery)".to_owned(), of(false)),
    ])
}

fn facts(
    script: &Script,
    sent: &[Sent],
    recalls: &BTreeMap<Uuid, Recall>,
    exchanges: &[Exchange],
    summary: &mut RecallSummary,
) -> Vec<FactRow> {
    let event_of = |fact: &Fact, wanted: fn(&Purpose) -> bool| {
        script
            .turns
            .iter()
            .zip(sent)
            .find(|(t, _)| wanted(&t.purpose) && purpose_fact(&t.purpose) == Some(fact.id))
            .map(|(_, s)| s.user_event)
    };
    let mut rows = Vec::new();
    for fact in &script.facts {
        let evidence = event_of(fact, |p| matches!(p, Purpose::Tell { .. }));
        let correction = event_of(fact, |p| matches!(p, Purpose::Correct { .. }));
        let lang = format!("{:?}", fact.lang).to_lowercase();
        let mut questions = Vec::new();
        for (t, s) in script.turns.iter().zip(sent) {
            if t.purpose != (Purpose::Ask { fact: fact.id }) {
                continue;
            }
            let recall = recalls.get(&s.user_event);
            let rank_of = |e: Option<Uuid>| {
                let e = e?;
                recall?.carries.iter().position(|c| c.contains(&e))
            };
            // The old form: a candidate with the first message and not its correction (a
            // state revised by the correction names both, and is the newest form).
            let old_rank = |c: Uuid| {
                let e = evidence?;
                recall?
                    .carries
                    .iter()
                    .position(|m| m.contains(&e) && !m.contains(&c))
            };
            let (newest, old) = match correction {
                Some(c) => (rank_of(Some(c)), old_rank(c)),
                None => (rank_of(evidence), None),
            };
            let newest_first = correction.map(|_| match (newest, old) {
                (Some(n), Some(o)) => n < o,
                (Some(_), None) => true,
                (None, _) => false,
            });
            let told = corrected_text(fact).unwrap_or(fact.told.text);
            let in_history = in_history(exchanges, t.said.text, told);
            let reply = s.reply.to_lowercase();
            let named = fact
                .answer
                .iter()
                .any(|a| reply.contains(&a.to_lowercase()));
            let asked = Asked {
                day: t.said.day,
                via: t.said.via,
                text: t.said.text,
                recalled: recall.is_some(),
                in_history,
                candidates: recall.map_or(0, |r| r.candidates.len()),
                sources: recall.map(|r| r.counts.clone()).unwrap_or_default(),
                rank: newest,
                old_rank: old,
                at5: newest.is_some_and(|r| r < AT[0]),
                at12: newest.is_some_and(|r| r < AT[1]),
                newest_first,
                named,
                reply: s.reply.clone(),
            };
            *summary.questions.entry(lang.clone()).or_default() += 1;
            *summary.at5.entry(lang.clone()).or_default() += usize::from(asked.at5);
            *summary.at12.entry(lang.clone()).or_default() += usize::from(asked.at12);
            summary.corrected_questions += usize::from(newest_first.is_some());
            summary.newest_first += usize::from(newest_first == Some(true));
            summary.named += usize::from(named);
            *summary.in_history.entry(lang.clone()).or_default() += usize::from(in_history);
            questions.push(asked);
        }
        rows.push(FactRow {
            id: fact.id,
            who: fact.who,
            lang: fact.lang,
            evidence,
            correction,
            questions,
        });
    }
    rows
}

fn corrected_text(fact: &Fact) -> Option<&'static str> {
    fact.corrected.map(|c| c.text)
}

/// Whether the reply request answering `question` (the last one recorded whose final
/// message holds it) carried `evidence` in an earlier message: the history window.
fn in_history(exchanges: &[Exchange], question: &str, evidence: &str) -> bool {
    let content = |m: &Value| match &m["content"] {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let reply = exchanges.iter().rev().find_map(|x| {
        let messages = x.request["messages"].as_array()?;
        let (last, earlier) = messages.split_last()?;
        (x.contract().as_deref() == Some("trailer") && content(last).contains(question))
            .then_some(earlier)
    });
    reply.is_some_and(|earlier| earlier.iter().any(|m| content(m).contains(evidence)))
}

fn purpose_fact(p: &Purpose) -> Option<&'static str> {
    match p {
        Purpose::Tell { fact } | Purpose::Correct { fact } | Purpose::Ask { fact } => Some(fact),
        Purpose::Talk => None,
    }
}

async fn recall_of(pool: &PgPool, user_event: Uuid) -> Result<Option<Recall>> {
    let payload: Option<Value> = sqlx::query_scalar(
        "SELECT payload FROM events WHERE event_type = 'RecallPerformed' \
         AND payload->>'user_event_id' = $1 ORDER BY position LIMIT 1",
    )
    .bind(user_event.to_string())
    .fetch_optional(pool)
    .await?;
    let Some(p) = payload else {
        return Ok(None);
    };
    let candidates: Vec<String> =
        serde_json::from_value(p["candidate_ids"].clone()).unwrap_or_default();
    let mut carries = Vec::with_capacity(candidates.len());
    for c in &candidates {
        carries.push(carried_by(pool, c).await?);
    }
    Ok(Some(Recall {
        candidates,
        carries,
        counts: serde_json::from_value(p["candidate_counts"].clone()).unwrap_or_default(),
        timings: serde_json::from_value(p["timings_ms"].clone()).unwrap_or_default(),
        skipped: serde_json::from_value(p["skipped_sources"].clone()).unwrap_or_default(),
    }))
}

/// The messages a candidate carries: an utterance itself, or a state's evidence (its
/// current revision: a state revised by a correction names both messages).
async fn carried_by(pool: &PgPool, candidate: &str) -> Result<Vec<Uuid>> {
    if let Some(id) = candidate.strip_prefix("event:") {
        return Ok(id.parse().into_iter().collect());
    }
    let Some(Ok(id)) = candidate.strip_prefix("state:").map(str::parse::<Uuid>) else {
        return Ok(Vec::new());
    };
    let evidence: Option<Vec<Uuid>> =
        sqlx::query_scalar("SELECT evidence_event_ids FROM memory_states WHERE state_id = $1")
            .bind(id)
            .fetch_optional(pool)
            .await?;
    Ok(evidence.unwrap_or_default())
}

/// The candidate's text when it is not `asker`'s to recall.
async fn foreign(pool: &PgPool, candidate: &str, asker: &str) -> Result<Option<String>> {
    if let Some(id) = candidate.strip_prefix("event:") {
        let Ok(id) = id.parse::<Uuid>() else {
            return Ok(None);
        };
        let row: Option<(String, String, String, String)> = sqlx::query_as(
            "SELECT role, speaker, session_id, text FROM assistant_text WHERE event_id = $1",
        )
        .bind(id)
        .fetch_optional(pool)
        .await?;
        let Some((role, speaker, session, text)) = row else {
            return Ok(None);
        };
        let foreign = if role == "user" {
            speaker != asker
        } else {
            sqlx::query_scalar(
                "SELECT EXISTS (SELECT 1 FROM assistant_text WHERE session_id = $1 \
                 AND role = 'user' AND speaker <> $2)",
            )
            .bind(&session)
            .bind(asker)
            .fetch_one(pool)
            .await?
        };
        return Ok(foreign.then_some(text));
    }
    if let Some(id) = candidate.strip_prefix("state:") {
        let Ok(id) = id.parse::<Uuid>() else {
            return Ok(None);
        };
        let row: Option<(Option<String>, String)> =
            sqlx::query_as("SELECT person, body_text FROM memory_states WHERE state_id = $1")
                .bind(id)
                .fetch_optional(pool)
                .await?;
        return Ok(
            row.and_then(|(person, text)| person.is_some_and(|p| p != asker).then_some(text))
        );
    }
    // Preferences are read per person by their source: the asker's own.
    Ok(None)
}

/// The report as Markdown tables.
pub fn markdown(r: &Report) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## ghost-harness converse{}: {} messages over {} simulated days\n",
        if r.short { " --short" } else { "" },
        r.messages,
        r.days
    );
    let rp = &r.replies;
    let _ = writeln!(out, "| figure | value |\n|---|---|");
    let cut: usize = rp.cut.values().sum();
    let failed: usize = rp.failed.values().sum();
    let _ = writeln!(
        out,
        "| replies completed / cut / failed / timed out | {} / {} {:?} / {} {:?} / {} |",
        rp.completed, cut, rp.cut, failed, rp.failed, rp.timed_out
    );
    let _ = writeln!(
        out,
        "| failures after text was shown | {} |",
        rp.failed_after_shown
    );
    for (name, q) in &r.first_token {
        let _ = writeln!(
            out,
            "| {name} p50 / p95 (n) | {} / {} ({}) |",
            ms(q.p50_ms),
            ms(q.p95_ms),
            q.n
        );
    }
    let _ = writeln!(
        out,
        "| write plans applied / rejected | {} / {} |",
        r.write_plans.0, r.write_plans.1
    );
    for (contract, why) in &r.rejections {
        let _ = writeln!(out, "| rejected {contract} | {} |", why.replace('|', "/"));
    }
    let rests: Vec<String> = r.day_rests_secs.iter().map(|s| format!("{s:.0}")).collect();
    let _ = writeln!(
        out,
        "| background work waited for at each day's end (s) | {} |",
        rests.join(", ")
    );
    let s = &r.recall;
    for lang in s.questions.keys() {
        let n = s.questions[lang];
        let _ = writeln!(
            out,
            "| recall {lang}: evidence in first 5 / first 12 candidates (in the reply's own history) | {} / {} of {n} ({}) |",
            s.at5.get(lang).copied().unwrap_or(0),
            s.at12.get(lang).copied().unwrap_or(0),
            s.in_history.get(lang).copied().unwrap_or(0)
        );
    }
    let _ = writeln!(
        out,
        "| corrected facts: newest form above the old | {} of {} |",
        s.newest_first, s.corrected_questions
    );
    let _ = writeln!(
        out,
        "| candidates from another person | {} |",
        s.cross_person
    );
    let questions: usize = s.questions.values().sum();
    let _ = writeln!(
        out,
        "| replies naming the fact (no target) | {} of {questions} |",
        s.named
    );
    let _ = writeln!(
        out,
        "| vector source p50 / p99 (n), skipped | {} / {} ({}), {} of {} recalls |",
        ms(s.vector.p50_ms),
        ms(s.vector.p99_ms),
        s.vector.n,
        s.vector_skipped,
        s.recalls
    );
    let _ = writeln!(
        out,
        "\n| contract | calls | schema-valid | accepted |\n|---|---|---|---|"
    );
    for c in &r.contracts {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            c.name, c.calls, c.schema_valid, c.accepted
        );
    }
    let _ = writeln!(
        out,
        "\n| model call (`trailer`: a reply) | answered | time p50 / p95 | prompt (cached) / completion tokens p50 |\n|---|---|---|---|"
    );
    for (name, c) in &r.calls {
        let tokens = |t: Option<f64>| t.map_or("-".to_owned(), |t| format!("{t:.0}"));
        let _ = writeln!(
            out,
            "| {name} | {} | {} / {} | {} ({}) / {} |",
            c.elapsed.n,
            ms(c.elapsed.p50_ms),
            ms(c.elapsed.p95_ms),
            tokens(c.prompt_tokens_p50),
            tokens(c.cached_tokens_p50),
            tokens(c.completion_tokens_p50)
        );
    }
    let _ = writeln!(
        out,
        "\n| fact | who | day, question | candidates | rank (old) | @5 | @12 | in history | newest first | named |\n|---|---|---|---|---|---|---|---|---|---|"
    );
    for f in &r.facts {
        for q in &f.questions {
            let rank = |r: Option<usize>| r.map_or("-".to_owned(), |r| (r + 1).to_string());
            let _ = writeln!(
                out,
                "| {} | {:?} | {}: {} | {} | {} ({}) | {} | {} | {} | {} | {} |",
                f.id,
                f.who,
                q.day,
                q.text,
                q.candidates,
                rank(q.rank),
                rank(q.old_rank),
                yes(q.at5),
                yes(q.at12),
                yes(q.in_history),
                q.newest_first.map_or("", yes),
                yes(q.named)
            );
        }
    }
    out
}

fn ms(v: Option<f64>) -> String {
    v.map_or("-".to_owned(), |v| format!("{v:.0} ms"))
}

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

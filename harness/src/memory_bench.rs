//! `ghost-harness memory-bench`: the figures of BENCHMARKS.md's memory section. It seeds its own
//! database with `--events` utterances (and a tenth as many states), then measures recall's
//! candidate collection (every source, in parallel) and the part of recall before the first
//! token other than the selection model call (memory load + plan + collection), and the
//! write plan's validation + apply per plan. With `--vectors`, the vector source is on
//! (stored vectors for every row, each question embedded by the real model). The database
//! (created through `GHOST_TEST_ADMIN_DATABASE_URL`, as the tests do) is removed afterwards.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Args;
use ghost_persona::recall::collect::{collect, Scope};
use ghost_shared::memory::retrieval::{focus_hint, retrieval_plan};
use ghost_shared::memory::{apply_plan, validate, ApplyContext, Memory, WritePlan};
use ghost_shared::projections::MemoryProjection;
use ghost_testkit::testing::TestEnv;
use serde_json::json;
use uuid::Uuid;

/// Options of `ghost-harness memory-bench`.
#[derive(Debug, Clone, Args)]
pub struct MemoryBenchArgs {
    /// Utterances to seed (`assistant_text` rows; states are a tenth of it).
    #[arg(long, default_value_t = 100_000)]
    pub events: i64,
    /// Recalls to measure.
    #[arg(long, default_value_t = 300)]
    pub queries: usize,
    /// Plans to validate and apply.
    #[arg(long, default_value_t = 10_000)]
    pub plans: usize,
    /// Turn the vector source on: every seeded utterance and state gets a stored vector
    /// (random: what it costs to compare them does not depend on what they say), and each
    /// question is embedded by all-MiniLM-L6-v2, served in this process.
    #[arg(long)]
    pub vectors: bool,
}

/// Consonants and vowels of the seeded vocabulary's syllables.
const CONSONANTS: &str = "bdfghjklmnprstv";
const VOWELS: &str = "aeiou";
/// Distinct words the seed draws from (Zipf-like: low numbers are drawn far more often).
const VOCABULARY: i64 = 20_000;

/// Word number `n` of the vocabulary: three consonant-vowel syllables ("kasumi", "toberu").
fn word(n: i64) -> String {
    let syllable = |k: i64| {
        let k = k as usize % 75;
        format!(
            "{}{}",
            &CONSONANTS[k / 5..k / 5 + 1],
            &VOWELS[k % 5..k % 5 + 1]
        )
    };
    format!("{}{}{}", syllable(n), syllable(n / 75), syllable(n / 5625))
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[(((sorted.len() - 1) as f64) * q).round() as usize]
}

fn report(what: &str, mut samples: Vec<Duration>) {
    samples.sort();
    println!(
        "{what}: n={} p50={:.2} ms p99={:.2} ms max={:.2} ms",
        samples.len(),
        quantile(&samples, 0.5).as_secs_f64() * 1e3,
        quantile(&samples, 0.99).as_secs_f64() * 1e3,
        samples.last().copied().unwrap_or_default().as_secs_f64() * 1e3,
    );
}

/// Seeds `events` utterances over 1,000 sessions and `events / 10` states for `kuro`: each
/// a sentence of 6 to 13 words from a 20,000-word vocabulary drawn Zipf-like (a few words
/// are everywhere, most are rare), as real conversation is. Every tenth session is another
/// person's (`ann`), the rest the default person's: recall (for the default person) checks
/// whose every utterance is.
async fn seed(pool: &sqlx::PgPool, events: i64) -> Result<()> {
    let words: Vec<String> = (0..VOCABULARY).map(word).collect();
    // floor(V ^ random()) - 1 is log-uniform over the vocabulary: Zipf-like.
    let sentence =
        "(SELECT string_agg(($2::text[])[1 + floor(power($3::float8, random()))::int - 1], ' ') \
                    FROM generate_series(1, 6 + (g % 8)))";
    sqlx::query(&format!(
        "INSERT INTO assistant_text (session_id, position, event_id, role, speaker, source, text, recorded_at) \
         SELECT 's' || (g % 1000), g, gen_random_uuid(), CASE WHEN g % 2 = 0 THEN 'user' ELSE 'assistant' END, \
         CASE WHEN g % 2 = 1 THEN 'kuro' WHEN g % 10 = 0 THEN 'ann' ELSE 'user' END, 'http', {sentence}, now() \
         FROM generate_series(1, $1) g"
    ))
    .bind(events)
    .bind(&words)
    .bind(VOCABULARY as f64)
    .execute(pool)
    .await
    .context("seed utterances")?;
    sqlx::query(&format!(
        "INSERT INTO memory_states (persona, state_id, kind, status, body_text, confidence, revision, \
         evidence_event_ids, reason, source_event_id, position) \
         SELECT 'kuro', gen_random_uuid(), 'fact', 'active', {sentence}, 0.8, 1, '{{}}', 'seed', \
         gen_random_uuid(), g FROM generate_series(1, $1) g"
    ))
    .bind(events / 10)
    .bind(&words)
    .bind(VOCABULARY as f64)
    .execute(pool)
    .await
    .context("seed states")?;
    // As autovacuum leaves a table after a bulk load: statistics current and the GIN
    // indexes' pending lists merged (a query otherwise scans every pending entry).
    sqlx::query("VACUUM ANALYZE").execute(pool).await?;
    Ok(())
}

/// A stored vector for every utterance and state (384 dimensions, as all-MiniLM-L6-v2's),
/// as the embedding projection would have left them.
async fn seed_vectors(pool: &sqlx::PgPool, model: &str) -> Result<()> {
    // Correlated with the row (`g`), so each row draws its own.
    let vector =
        "(SELECT array_agg((random() - 0.5)::real) FROM generate_series(1, 384) d WHERE d > g - g)";
    for sql in [
        format!(
            "INSERT INTO memory_embeddings (item_id, model, persona, session_id, text, vector) \
                 SELECT 'event:' || event_id, $1, NULL, session_id, text, {vector} \
                 FROM (SELECT row_number() OVER () AS g, * FROM assistant_text) t"
        ),
        format!(
            "INSERT INTO memory_embeddings (item_id, model, persona, session_id, text, vector) \
                 SELECT 'state:' || state_id, $1, persona, NULL, body_text, {vector} \
                 FROM (SELECT row_number() OVER () AS g, * FROM memory_states) s"
        ),
    ] {
        sqlx::query(&sql)
            .bind(model)
            .execute(pool)
            .await
            .context("seed vectors")?;
    }
    sqlx::query("VACUUM ANALYZE memory_embeddings")
        .execute(pool)
        .await?;
    Ok(())
}

/// Validation + apply of a representative plan (3 states, 3 preferences, interest) against
/// a memory of 200 states and 100 preferences, `n` times.
fn bench_plans(n: usize) -> Result<Duration> {
    let event = Uuid::new_v4();
    let mut memory = Memory::default();
    for i in 0..100 {
        let other = Uuid::new_v4();
        let plan = WritePlan::from_value(json!({
            "state_updates": [{"kind": "fact", "op": "upsert", "body_text": format!("fact {i}"), "confidence": 0.5, "evidence_event_ids": [other]},
                              {"kind": "task", "op": "upsert", "body_text": format!("task {i}"), "confidence": 0.5, "evidence_event_ids": [other]}],
            "preference_updates": [{"op": "confirm", "domain": "food", "polarity": "like", "subject": format!("料理{i}"), "confidence": 0.7, "evidence_event_ids": [other]}],
        }))
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        let checked = validate(&plan, &memory, other).map_err(|e| anyhow::anyhow!("{e:?}"))?;
        memory = apply_plan(&memory, &checked, ApplyContext::new("kuro", other, 0.0)).0;
    }
    let task = memory.states[1].state_id;
    let text = json!({
        "event_annotations": {"life_stage": "university", "about_time_confidence": 0.6, "entities": [{"type": "PERSON", "name": "母", "confidence": 0.8}]},
        "state_updates": [
            {"kind": "fact", "op": "upsert", "body_text": "マスターは京都に引っ越した", "confidence": 0.8, "evidence_event_ids": [event]},
            {"kind": "task", "op": "mark_done", "state_id": task, "confidence": 0.9, "evidence_event_ids": [event]},
            {"kind": "summary", "op": "upsert", "body_text": "最近の話", "confidence": 0.6, "evidence_event_ids": [event]}],
        "preference_updates": [
            {"op": "upsert_candidate", "domain": "topic", "polarity": "like", "subject": "登山", "confidence": 0.6, "evidence_event_ids": [event]},
            {"op": "confirm", "domain": "food", "polarity": "dislike", "subject": "料理3", "confidence": 0.8, "evidence_event_ids": [event]},
            {"op": "revoke", "domain": "food", "polarity": "like", "subject": "料理4", "confidence": 0.8, "evidence_event_ids": [event]}],
        "event_affect": {"moment_affect_text": "うれしい", "moment_affect_labels": ["joy"], "moment_affect_score_vad": {"v": 0.5, "a": 0.2, "d": 0.1}, "moment_affect_confidence": 0.7},
        "interest_update": {"attention_targets": [{"type": "topic", "value": "京都", "weight": 0.7}], "interaction_mode": "support"}
    })
    .to_string();
    let started = Instant::now();
    for _ in 0..n {
        let plan = WritePlan::parse(&text).map_err(|e| anyhow::anyhow!("{e:?}"))?;
        let checked = validate(&plan, &memory, event).map_err(|e| anyhow::anyhow!("{e:?}"))?;
        let (_, changes) = apply_plan(&memory, &checked, ApplyContext::new("kuro", event, 1.0));
        std::hint::black_box(changes);
    }
    Ok(started.elapsed() / n.max(1) as u32)
}

/// Runs the benchmark.
pub async fn run(args: MemoryBenchArgs) -> Result<()> {
    let per_plan = bench_plans(args.plans)?;
    println!(
        "write plan parse + validate + apply (3 states, 3 preferences, interest; memory of 200 states, 100 preferences): {:.1} µs per plan over {} plans",
        per_plan.as_secs_f64() * 1e6,
        args.plans
    );
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    let started = Instant::now();
    seed(store.pool(), args.events).await?;
    println!(
        "seeded {} utterances and {} states in {:.1} s",
        args.events,
        args.events / 10,
        started.elapsed().as_secs_f64()
    );
    let model = match args.vectors {
        true => {
            let dir = ghost_testkit::testing::embedding_model_dir();
            let url = crate::recall_quality::embedding::serve(dir).await?;
            let name = crate::recall_quality::embedding::NAME;
            let started = Instant::now();
            seed_vectors(store.pool(), name).await?;
            // Written a while ago, as a live deployment's are: the persona's cache loads
            // them once (timed here) and then only what is new.
            sqlx::query(
                "UPDATE memory_embeddings SET created_at = created_at - interval '1 minute'",
            )
            .execute(store.pool())
            .await?;
            println!(
                "seeded their vectors in {:.1} s",
                started.elapsed().as_secs_f64()
            );
            let client = crate::recall_quality::embedding::client(&url, name)?;
            let started = Instant::now();
            let query = client
                .embed(&["warm up".to_owned()])
                .await?
                .pop()
                .unwrap_or_default();
            ghost_persona::recall::vector_cache::VectorCache::of(store.pool(), name)
                .nearest(store.pool(), name, &query, 1.0)
                .await?;
            println!(
                "the persona's vector cache loaded in {:.1} s",
                started.elapsed().as_secs_f64()
            );
            Some(client)
        }
        false => None,
    };
    let settings = env.config.ghost.memory.clone();
    let scope = Scope {
        persona: "kuro",
        person: ghost_shared::memory::DEFAULT_PERSON,
        session_id: "bench",
        history: Default::default(),
        source_timeout: Duration::from_secs(10),
        similarity_threshold: settings.recall_similarity_threshold,
        embedding: model.as_ref(),
    };
    let mut collection = Vec::with_capacity(args.queries);
    let mut before_selection = Vec::with_capacity(args.queries);
    let mut skipped = 0;
    let mut per_source = std::collections::BTreeMap::new();
    for i in 0..args.queries {
        // A question about two mid-frequency words, as a user might ask.
        let i = i as i64;
        let query = format!(
            "do you remember the {} and the {}?",
            word(50 + i * 37 % 500),
            word(100 + i * 53 % 2000)
        );
        let started = Instant::now();
        let memory = MemoryProjection::load_focus(
            store.pool(),
            "kuro",
            ghost_shared::memory::DEFAULT_PERSON,
        )
        .await?;
        let plan = retrieval_plan(
            &query,
            settings.recall_limits(),
            focus_hint(&memory, 0.0, settings.interest_tau_secs),
        );
        let collect_started = Instant::now();
        let collected = collect(store.pool(), scope, &plan).await;
        collection.push(collect_started.elapsed());
        before_selection.push(started.elapsed());
        skipped += collected.skipped.len();
        for (source, ms) in &collected.timings_ms {
            per_source
                .entry(source.clone())
                .or_insert_with(Vec::new)
                .push(Duration::from_secs_f64(ms / 1e3));
        }
        std::hint::black_box(collected);
    }
    let sources = if args.vectors {
        "every source, vectors on"
    } else {
        "vectors off"
    };
    report(
        &format!("recall candidate collection ({sources})"),
        collection,
    );
    report(
        "recall before the selection call (memory load + plan + collection)",
        before_selection,
    );
    for (source, samples) in per_source {
        report(&format!("  source {source}"), samples);
    }
    println!("sources skipped: {skipped}");
    env.cleanup().await;
    Ok(())
}

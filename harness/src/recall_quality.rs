//! `ghost-harness recall-quality`: how well recall finds what it should (issue 35 item 6), on its
//! own database and NATS prefix (removed afterwards), from a fixed seed.
//!
//! It seeds a long conversation ([`corpus`]: 120 sessions over six simulated months by
//! default, English and Japanese, four people, one a LINE group of three; [`facts`] planted
//! early, some corrected late, small talk around them from [`filler`]) through the
//! production write path ([`seed`]: events appended, write plans checked and applied by
//! the write plan's own rules, the projection runners projecting them). Then it asks each
//! fact's owner questions whose evidence is known, under each recall configuration
//! ([`measure`]: trigram only; with vectors from all-MiniLM-L6-v2 as `ghost run model`
//! serves it; with the persona's focus hint too).
//!
//! **What is measured** is recall's candidate collection and ranking
//! (`ghost_persona::recall::collect::collect`, person-scoped), which decides what the
//! selection model call is offered; the selection itself is a model's judgement and is not
//! run. Vectors are measured in steady state: every stored memory embedded first (recall
//! embeds 32 missing ones per call, newest first, so a fresh history gets there over
//! calls). Simulated time moves the write plans' clock (interest decay); the store's own
//! timestamps are the run's.
//!
//! [`report`] prints the table BENCHMARKS.md keeps; [`threshold`] checks the vector
//! source's `MIN_COSINE` against the evidence's cosines.

pub mod corpus;
pub mod embedding;
pub mod facts;
pub mod filler;
pub mod measure;
pub mod report;
pub mod seed;
pub mod threshold;

use anyhow::{anyhow, Result};
use clap::Args;
use ghost_shared::llm::LlmClient;
use ghost_shared::store::EventStore;

use ghost_persona::embeddings::EmbeddingProjection;
use ghost_shared::projector::ProjectionRunner;
use measure::{Outcome, CONFIGS};

/// Options of `ghost-harness recall-quality`.
#[derive(Debug, Clone, Args)]
pub struct RecallQualityArgs {
    /// Sessions to seed (at least 2 per fact plus 10 are made).
    #[arg(long, default_value_t = 120)]
    pub sessions: usize,
    /// The seed of the conversation.
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
    /// An OpenAI-compatible `/v1` serving the embedding model (default: all-MiniLM-L6-v2
    /// from `deploy/model.sh`, served in this process).
    #[arg(long)]
    pub embedding_url: Option<String>,
    /// The model id at `--embedding-url`.
    #[arg(long, default_value = embedding::NAME)]
    pub embedding_model: String,
    /// Print every question missed under each configuration.
    #[arg(long)]
    pub misses: bool,
}

/// Everything one run found.
#[derive(Debug)]
pub struct Run {
    /// The conversation and its questions.
    pub corpus: corpus::Corpus,
    /// What was stored.
    pub seeded: seed::Seeded,
    /// Each question under each configuration.
    pub outcomes: Vec<Outcome>,
    /// The vector threshold check.
    pub cosines: threshold::CosineCheck,
}

/// Embeds every stored line and state, as the persona's embedding projection does when
/// they are said (here: its rebuild over the seeded store).
async fn embed_all(store: &EventStore, model: &LlmClient) -> Result<usize> {
    let projection = std::sync::Arc::new(EmbeddingProjection::new(model.clone()));
    ProjectionRunner::new(
        store.clone(),
        projection,
        500,
        std::time::Duration::from_millis(100),
    )
    .rebuild()
    .await
    .map_err(|e| anyhow!("embedding the seeded store: {e}"))?;
    let count: i64 = sqlx::query_scalar("SELECT count(*) FROM memory_embeddings")
        .fetch_one(store.pool())
        .await?;
    Ok(count as usize)
}

/// Seeds and measures in `store` (a fresh, migrated database) with `settings`' recall
/// limits, the vector configurations asking `model`.
pub async fn run_in(
    store: &EventStore,
    settings: &ghost_shared::config::MemorySettings,
    model: &LlmClient,
    sessions: usize,
    seed: u64,
) -> Result<Run> {
    let corpus = corpus::generate(seed, sessions);
    let seeded = seed::seed(store, &corpus, seed).await?;
    embed_all(store, model).await?;
    let mut outcomes = Vec::new();
    for config in CONFIGS {
        for i in 0..corpus.questions.len() {
            let m = Some(model);
            outcomes
                .push(measure::ask(store.pool(), &corpus, &seeded, settings, m, config, i).await?);
        }
    }
    let cosines = threshold::check(store.pool(), &corpus, &seeded, model).await?;
    Ok(Run {
        corpus,
        seeded,
        outcomes,
        cosines,
    })
}

/// Runs the command.
pub async fn run(args: RecallQualityArgs) -> Result<()> {
    let base_url = match &args.embedding_url {
        Some(url) => url.clone(),
        None => embedding::serve(ghost_testkit::testing::embedding_model_dir()).await?,
    };
    let model = embedding::client(&base_url, &args.embedding_model)?;
    let env = ghost_testkit::testing::TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    let started = std::time::Instant::now();
    let result = run_in(
        &store,
        &env.config.ghost.memory,
        &model,
        args.sessions,
        args.seed,
    )
    .await;
    env.cleanup().await;
    let run = result?;
    println!(
        "seed {}: {} sessions, {} utterances, {} memory events, {} questions ({:.1} s)",
        args.seed,
        run.corpus.sessions.len(),
        run.seeded.utterances,
        run.seeded.memory_events,
        run.corpus.questions.len(),
        started.elapsed().as_secs_f64()
    );
    let summaries = report::summarize(&run.corpus, &run.outcomes);
    print!("{}", report::table(&summaries));
    for s in &summaries {
        let vector = s
            .median_ms
            .1
            .map_or(String::new(), |v| format!(", vector source {v:.1} ms"));
        println!(
            "{}: collection p50 {:.1} ms{vector}",
            s.config.name, s.median_ms.0
        );
        if s.unknown + s.skipped > 0 {
            println!(
                "{}: {} unseeded candidates, {} sources skipped",
                s.config.name, s.unknown, s.skipped
            );
        }
    }
    print!("{}", run.cosines);
    if args.misses {
        for config in CONFIGS {
            println!("missed, {}:", config.name);
            for m in report::misses(&run.corpus, &run.outcomes, config) {
                println!("  {m}");
            }
            for o in run.outcomes.iter().filter(|o| o.config == config) {
                for text in &o.cross_person {
                    let q = &run.corpus.questions[o.question];
                    println!("  another's, asked by {} ({}): {text}", q.asker, q.text);
                }
            }
        }
    }
    Ok(())
}

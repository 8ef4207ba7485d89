//! `ghost-harness forget-bench`: how long forgetting a person holds the store (BENCHMARKS.md,
//! memory). It seeds its own database with `--events` events (user messages and the
//! persona's replies, ten turns a conversation, each conversation one of `--people`
//! people's), projects them into `assistant_text`, then times
//! [`EventStore::forget_person`] for a few people one after another: the selection's
//! passes over the payloads, the rewrite and the derived rows' deletes, in one transaction.
//! The bus's copies are not part of it (nothing is published here). The database is
//! removed afterwards.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Args;
use ghost_shared::projections::AssistantTextProjection;
use ghost_shared::projector::ProjectionRunner;
use ghost_testkit::testing::TestEnv;
use uuid::Uuid;

/// Options of `ghost-harness forget-bench`.
#[derive(Debug, Clone, Args)]
pub struct ForgetBenchArgs {
    /// Events to seed (half user messages, half replies).
    #[arg(long, default_value_t = 100_000)]
    pub events: i64,
    /// People the conversations belong to.
    #[arg(long, default_value_t = 100)]
    pub people: i64,
    /// People forgotten (each timed).
    #[arg(long, default_value_t = 5)]
    pub forget: i64,
}

/// Ten turns (twenty events) a conversation; conversation `c` is person `c % people`'s. A
/// reply's correlation is its user message, whose own is itself (the turn).
const SEED: &str = "\
INSERT INTO events (event_id, stream, version, event_type, payload, metadata) \
SELECT id, 'session-s' || c, v, t, p, jsonb_build_object('correlation_id', turn, 'service', 'bench') \
FROM (SELECT g, g / 20 AS c, g % 20 + 1 AS v, md5('event' || (g - g % 2))::uuid AS turn, \
             md5('event' || g)::uuid AS id FROM generate_series(0, $1 - 1) g) s, \
LATERAL (SELECT CASE WHEN g % 2 = 0 THEN 'UserMessageReceived' ELSE 'AssistantReplied' END AS t, \
         CASE WHEN g % 2 = 0 THEN jsonb_build_object('session_id', 's' || c, 'channel', 'http', \
                'speaker', 'p' || (c % $2), 'text', 'message number ' || g || ' about things') \
              ELSE jsonb_build_object('session_id', 's' || c, 'channel', 'http', \
                'user_event_id', md5('event' || (g - 1))::uuid, 'speaker', 'kuro', \
                'text', 'reply number ' || g) END AS p) x";

/// Runs the benchmark and prints its figures.
pub async fn run(args: ForgetBenchArgs) -> Result<()> {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let store = env.store().await;
    let seeding = Instant::now();
    sqlx::query(SEED)
        .bind(args.events)
        .bind(args.people.max(1))
        .execute(store.pool())
        .await
        .context("seed events")?;
    sqlx::query("DELETE FROM outbox")
        .execute(store.pool())
        .await?;
    let runner = ProjectionRunner::new(
        store.clone(),
        Arc::new(AssistantTextProjection),
        5_000,
        Duration::from_millis(50),
    );
    while runner.catch_up().await?.processed > 0 {}
    sqlx::query("VACUUM ANALYZE").execute(store.pool()).await?;
    println!(
        "seeded {} events, {} people, projected in {:.1} s",
        args.events,
        args.people,
        seeding.elapsed().as_secs_f64()
    );
    let mut samples = Vec::new();
    for p in 0..args.forget.min(args.people) {
        let person = format!("p{p}");
        let t = Instant::now();
        let done = store.forget_person(&person, Uuid::new_v4()).await?;
        let took = t.elapsed();
        println!(
            "forget {person}: {:.0} ms, {} events rewritten ({:?})",
            took.as_secs_f64() * 1e3,
            done.event_ids.len(),
            done.redacted
        );
        samples.push(took);
    }
    samples.sort();
    if let (Some(first), Some(last)) = (samples.first(), samples.last()) {
        println!(
            "forget a person at {} events: n={} min={:.0} ms max={:.0} ms",
            args.events,
            samples.len(),
            first.as_secs_f64() * 1e3,
            last.as_secs_f64() * 1e3
        );
    }
    env.cleanup().await;
    Ok(())
}

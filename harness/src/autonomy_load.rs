//! `ghost-harness autonomy-load`: deliberations per second and the time from a decision to its
//! message being published. Starts the worker, persona and mood on a private database and
//! NATS stream, appends many ticks at once, and follows `<prefix>.autonomy.message`: each
//! tick is a deliberation (model call), an `ActionDecided`, a `web_access` search on the
//! fake search server, an `ActionResultRecorded`, a render (model call) and a stored, then
//! published message — against a zero-delay fake model.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use chrono::{DateTime, Utc};
use clap::Args;
use futures::StreamExt;
use ghost_shared::autonomy::activity::{message_subject, AutonomyMessage};
use ghost_shared::autonomy::events::{ActionResultRecorded, TickTrigger};
use ghost_shared::autonomy::tick::request_tick;
use ghost_shared::envelope::EventPayload;
use ghost_testkit::fake_llm::{FakeLlm, Script};
use ghost_testkit::fake_search::{FakeHit, FakeSearch};
use ghost_testkit::testing::{TestEnv, PERSONA_MODEL, WORKER_MODEL};

use ghost::stack::{start_stack, ServiceName};

/// Options of `ghost-harness autonomy-load`.
#[derive(Debug, Clone, Args)]
pub struct AutonomyLoadArgs {
    /// Ticks measured.
    #[arg(long, default_value_t = 500)]
    pub ticks: usize,
    /// Unmeasured ticks first.
    #[arg(long, default_value_t = 50)]
    pub warmup_ticks: usize,
}

const DECISION: &str = r#"{"decision":"do_action","action_type":"web_research","capability":"web_access","input":{"query":"sencha"},"reason":"load","persona_influence":{},"mood_influence":{},"console_delivery":{"mode":"chat","message_kind":"report"}}"#;

/// Runs the load and prints the figures.
pub async fn run(args: AutonomyLoadArgs) -> Result<()> {
    let llm = FakeLlm::start().await.context("fake model")?;
    llm.set_default_for_model(WORKER_MODEL, Script::reply(DECISION));
    llm.set_default_for_model(PERSONA_MODEL, Script::reply("煎茶は70度がいいみたい。"));
    let search = FakeSearch::start().await.context("fake search")?;
    search.set_hits(vec![FakeHit {
        title: "Sencha".into(),
        url: "https://tea.example/sencha".into(),
        content: "70 degrees".into(),
    }]);
    let url = search.search_url();
    let env = TestEnv::new(
        &llm.base_url(),
        &[
            ("GHOST_BUS__STORAGE", "file"),
            ("GHOST_BUS__ACK_WAIT_SECS", "30"),
            ("GHOST_DATABASE__MAX_CONNECTIONS", "32"),
            ("GHOST_AUTONOMY__INTERVAL_SECS", "0"),
            ("GHOST_WEB__SEARCH_URL", &url),
        ],
    )
    .await;
    let result = drive(&env, &args).await;
    env.cleanup().await;
    let (elapsed, mut latencies) = result?;
    latencies.sort();
    let pick = |q: f64| latencies[((latencies.len() as f64 - 1.0) * q).round() as usize];
    println!(
        "ghost-harness autonomy-load: {} ticks (decision, web_access, result, render, message) in {:.2} s",
        args.ticks,
        elapsed.as_secs_f64()
    );
    println!(
        "  throughput: {:.1} ticks/s",
        args.ticks as f64 / elapsed.as_secs_f64().max(1e-9)
    );
    println!(
        "  decision recorded -> message published: p50 {} ms, p95 {} ms, max {} ms",
        pick(0.5).num_milliseconds(),
        pick(0.95).num_milliseconds(),
        pick(1.0).num_milliseconds()
    );
    Ok(())
}

async fn drive(
    env: &TestEnv,
    args: &AutonomyLoadArgs,
) -> Result<(Duration, Vec<chrono::Duration>)> {
    let stack = start_stack(
        env.config.clone(),
        &[ServiceName::Worker, ServiceName::Persona, ServiceName::Mood],
    )
    .await?;
    let bus = stack.ctx.bus().clone();
    let mut messages = bus.client().subscribe(message_subject(&bus)).await?;
    let persona = env.config.ghost.persona.character.clone();
    let pool = stack.ctx.store().pool().clone();
    let ctx = &stack.ctx;
    phase(ctx, &mut messages, &persona, args.warmup_ticks).await?;
    let (elapsed, said) = phase(ctx, &mut messages, &persona, args.ticks).await?;
    // Each message's result names its decision; the decision's commit time starts the clock.
    let rows: Vec<(uuid::Uuid, DateTime<Utc>)> = sqlx::query_as(
        "SELECT m.event_id, d.recorded_at FROM events m \
         JOIN events r ON r.event_id = (m.payload->>'result_event_id')::uuid \
         JOIN events d ON d.event_id = (r.payload->>'decision_event_id')::uuid \
         WHERE m.event_type = 'AutonomyMessageRendered' AND m.event_id = ANY($1) \
         AND r.event_type = $2",
    )
    .bind(said.keys().copied().collect::<Vec<_>>())
    .bind(ActionResultRecorded::EVENT_TYPE)
    .fetch_all(&pool)
    .await?;
    stack.abort();
    let latencies = rows
        .into_iter()
        .filter_map(|(id, decided)| said.get(&id).map(|at| *at - decided))
        .collect::<Vec<_>>();
    if latencies.len() != args.ticks {
        bail!(
            "{} of {} messages traced to their decision",
            latencies.len(),
            args.ticks
        );
    }
    Ok((elapsed, latencies))
}

/// Appends `ticks` ticks and waits for as many messages; when each was received.
async fn phase(
    ctx: &ghost_shared::service::ServiceContext,
    messages: &mut async_nats::Subscriber,
    persona: &str,
    ticks: usize,
) -> Result<(Duration, HashMap<uuid::Uuid, DateTime<Utc>>)> {
    let start = Instant::now();
    for _ in 0..ticks {
        request_tick(
            &ctx.log,
            uuid::Uuid::new_v4(),
            persona,
            TickTrigger::Cli,
            "load",
        )
        .await?;
    }
    let mut said = HashMap::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(600);
    while said.len() < ticks {
        let Ok(Some(m)) = tokio::time::timeout_at(deadline, messages.next()).await else {
            bail!("{} of {ticks} messages in 10 minutes", said.len());
        };
        let m: AutonomyMessage = serde_json::from_slice(&m.payload)?;
        said.insert(m.event_id, Utc::now());
    }
    Ok((start.elapsed(), said))
}

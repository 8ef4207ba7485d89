//! `ghost-harness load-stage`: durable stage turns per second. Starts the persona alone on a private
//! database and NATS stream, opens many stage runs at once by appending `StageUserInput`
//! events, and counts the turns the durable loop takes (each turn: model call, one
//! transaction with its three events, publish, next delivery) against a zero-delay fake model.
//! The persona runs in this process, or with `--processes` as a `ghost run persona` child
//! (as deployed).

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use ghost_shared::envelope::{EventMetadata, NewEvent};
use ghost_shared::events::{stage_stream, StageUserInput};
use ghost_shared::store::ExpectedVersion;
use ghost_testkit::fake_llm::{FakeLlm, Script};
use ghost_testkit::scenarios::cast_model_overrides;
use ghost_testkit::testing::TestEnv;

use crate::children::Children;
use ghost::stack::{start_stack, ServiceName};

/// Options of `ghost-harness load-stage`.
#[derive(Debug, Clone, Args)]
pub struct StageLoadArgs {
    /// Stage runs measured (each on its own stage).
    #[arg(long, default_value_t = 200)]
    pub runs: usize,
    /// Character turns per run (`stage.auto_loops`).
    #[arg(long, default_value_t = 10)]
    pub turns_per_run: u32,
    /// Unmeasured runs first.
    #[arg(long, default_value_t = 20)]
    pub warmup_runs: usize,
    /// The persona as its own `ghost run persona` process (as deployed), not in this one.
    #[arg(long)]
    pub processes: bool,
}

/// Runs the load and prints the figure.
pub async fn run(args: StageLoadArgs) -> Result<()> {
    let llm = FakeLlm::start().await.context("fake model")?;
    llm.set_default(Script::reply(
        "That is a fine thought; let us go on. [Next: CLARIS]",
    ));
    let loops = args.turns_per_run.to_string();
    let models = cast_model_overrides(&llm.base_url(), &["LUMINA", "CLARIS", "NOX", "kuro"]);
    let mut extra: Vec<(&str, &str)> = vec![
        ("GHOST_BUS__STORAGE", "file"),
        ("GHOST_BUS__ACK_WAIT_SECS", "30"),
        ("GHOST_DATABASE__MAX_CONNECTIONS", "32"),
        ("GHOST_STAGE__AUTO_LOOPS", &loops),
    ];
    extra.extend(models.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let env = TestEnv::new(&llm.base_url(), &extra).await;
    let result = drive(&env, &args).await;
    env.cleanup().await;
    let (turns, elapsed) = result?;
    println!(
        "ghost-harness load-stage: {} runs x {} turns = {turns} durable turns in {:.2} s, persona {}",
        args.runs,
        args.turns_per_run,
        elapsed.as_secs_f64(),
        if args.processes {
            "in its own process"
        } else {
            "in this process"
        }
    );
    println!(
        "  throughput: {:.0} stage turns/s",
        turns as f64 / elapsed.as_secs_f64().max(1e-9)
    );
    Ok(())
}

async fn count(pool: &sqlx::PgPool, event_type: &str, prefix: &str) -> Result<i64> {
    Ok(
        sqlx::query_scalar("SELECT count(*) FROM events WHERE event_type = $1 AND stream LIKE $2")
            .bind(event_type)
            .bind(format!("stage-{prefix}%"))
            .fetch_one(pool)
            .await?,
    )
}

async fn drive(env: &TestEnv, args: &StageLoadArgs) -> Result<(i64, Duration)> {
    // In processes mode this process only appends the inputs and counts.
    let (stack, children) = if args.processes {
        let children = Children::start(env, &[ServiceName::Persona.as_str()]);
        (None, Some(children))
    } else {
        let stack = start_stack(env.config.clone(), &[ServiceName::Persona]).await?;
        (Some(stack), None)
    };
    let ctx = match &stack {
        Some(stack) => stack.ctx.clone(),
        None => env.context("load").await?,
    };
    let pool = ctx.store().pool().clone();
    let phase = |runs: usize, tag: &'static str| {
        let log = ctx.log.clone();
        let pool = pool.clone();
        async move {
            let start = Instant::now();
            for i in 0..runs {
                let stage_id = format!("{tag}{i}");
                let id = uuid::Uuid::new_v4();
                let input = StageUserInput {
                    stage_id: stage_id.clone(),
                    text: "What shall we talk about today?".into(),
                };
                let meta = EventMetadata {
                    correlation_id: id,
                    causation_id: None,
                    traceparent: None,
                    tracestate: None,
                    service: "load".into(),
                };
                let event = NewEvent::new(id, &input, meta)?;
                log.append(
                    &stage_stream(&stage_id),
                    ExpectedVersion::NoStream,
                    &[event],
                )
                .await?;
            }
            let deadline = Instant::now() + Duration::from_secs(600);
            while count(&pool, "StageMemorySaved", tag).await? < runs as i64 {
                if Instant::now() > deadline {
                    bail!("stage runs did not finish in 10 minutes");
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            let elapsed = start.elapsed();
            let turns = count(&pool, "StageSpoke", tag).await?;
            Ok::<_, anyhow::Error>((turns, elapsed))
        }
    };
    let warm = phase(args.warmup_runs, "warm").await;
    let result = match warm {
        Ok(_) => phase(args.runs, "load").await,
        Err(e) => Err(e),
    };
    if let Some(stack) = stack {
        stack.abort();
    }
    if let Some(children) = children {
        children.kill_all().await;
    }
    result
}

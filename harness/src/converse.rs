//! `ghost-harness converse`: a multi-day conversation through the public API on the shipped
//! configuration with the embedded models (issue 45 item 1), measured end to end, so a
//! figure is what a newcomer gets rather than what a lab set-up gets.
//!
//! The stack runs as `ghost up` runs it ([`env`]: `config/ghost.yaml` plus only what
//! `deploy/run-local.sh` sets for the embedded model, private database/stream, ports, model
//! files, the fake LINE and `clock.simulated`; each override printed). A recorder between
//! the services and the model keeps every model exchange with its contract and schema.
//! [`script`] is the conversation (three people, `/api/chat` and LINE 1:1 and group,
//! English and Japanese, planted facts, corrections, small talk, questions days later);
//! [`drive`] sends it turn by turn, moving the simulated clock between days; [`report`]
//! scores it: replies completed/cut/failed, first token, contracts, recall of each fact's
//! message, cross-person candidates, the vector source's time.
//!
//! `--short` runs the reduced script the CI test (`harness/tests/converse.rs`) runs.

pub mod drive;
pub mod env;
pub mod report;
pub mod script;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use ghost::stack::{start_stack, ServiceName};
use ghost_testkit::fake_platforms::FakeLine;
use ghost_testkit::model_recorder::Recorder;
use ghost_testkit::testing::pipeline_idle;

use drive::Driver;
use env::{Shipped, Wiring};
use report::Report;
use script::Script;

/// Options of `ghost-harness converse`.
#[derive(Debug, Clone, Args)]
pub struct ConverseArgs {
    /// The reduced script (a few facts over six days; what CI runs).
    #[arg(long)]
    pub short: bool,
    /// Also write the report as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// The model's CPU threads (default: the shipped `model.threads`).
    #[arg(long)]
    pub threads: Option<u32>,
    /// After the last turn, wait for the background work (write plans, reflections, the
    /// summaries) to finish before counting the contracts' answers.
    #[arg(long)]
    pub drain: bool,
    /// A `GHOST_*` variable set on top of the shipped configuration, for an experiment
    /// (`KEY=VALUE`, repeatable): the report lists it, and its figures are not the shipped
    /// configuration's.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Days do not wait for their background work (the CI test: on a loaded machine one
    /// write plan takes minutes); write plans and states then land when the model is free.
    #[arg(long)]
    pub no_rest: bool,
    /// Keep the run's database afterwards (its name is printed), to read what happened.
    #[arg(long)]
    pub keep: bool,
    /// Seconds without any progress (no event stored, no model answer) before a turn fails.
    #[arg(long, default_value_t = 300)]
    pub stall_secs: u64,
}

/// Runs the conversation and prints its report (and writes it with `--json`).
pub async fn run(args: ConverseArgs) -> Result<()> {
    let report = converse(&args).await?;
    println!("{}", report::markdown(&report));
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&report)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// Runs the conversation on a Ghost of its own and returns what it measured.
pub async fn converse(args: &ConverseArgs) -> Result<Report> {
    let script = Script::build(args.short);
    let model_port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let (recorder, recorder_url) = Recorder::start(format!("http://127.0.0.1:{model_port}")).await;
    let line = FakeLine::start().await?;
    let shipped = Shipped::new(Wiring {
        model_port,
        recorder_url: &recorder_url,
        line_url: &line.base_url(),
        threads: args.threads,
        set: &args.set,
    })
    .await?;
    println!("config/ghost.yaml with these overrides:");
    for o in &shipped.overrides {
        println!("  {}={}  ({})", o.key, o.value, o.why);
    }
    let result = talk(&shipped, &script, recorder, line, args).await;
    match args.keep {
        true => println!("kept: database {}", shipped.database()),
        false => shipped.cleanup().await,
    }
    result
}

async fn talk(
    shipped: &Shipped,
    script: &Script,
    recorder: Recorder,
    line: FakeLine,
    args: &ConverseArgs,
) -> Result<Report> {
    let stack = start_stack(shipped.config.clone(), &ServiceName::up(&shipped.config)).await?;
    let pool = stack.ctx.store().pool().clone();
    let driver = Driver {
        base: format!("http://{}", stack.gateway_addr().context("no gateway")?),
        token: shipped.token.clone(),
        line,
        pool: pool.clone(),
        recorder: recorder.clone(),
        stall: Duration::from_secs(args.stall_secs),
        http: reqwest::Client::new(),
    };
    let mut sent = Vec::new();
    let mut rests = Vec::new();
    let mut day = script.days().0;
    let (bus, store) = (stack.ctx.bus(), stack.ctx.store());
    let stream = shipped.config.ghost.bus.stream_name.as_str();
    let result = async {
        for (i, turn) in script.turns.iter().enumerate() {
            if turn.said.day > day && !args.no_rest {
                // A day passing is hours of a person's time: the background work of the day
                // (write plans, reflections, summaries) finishes before the next day starts,
                // as it would between a person's days, however long it takes here.
                let started = std::time::Instant::now();
                drain(&driver, bus, store, stream).await?;
                rests.push(started.elapsed().as_secs_f64());
                eprintln!(
                    "day {day} rested: background work done after {:.1} s",
                    rests.last().unwrap_or(&0.0)
                );
            }
            if turn.said.day > day {
                driver.advance_days(turn.said.day - day).await?;
                day = turn.said.day;
            }
            let s = driver
                .send(i, turn)
                .await
                .with_context(|| format!("turn {} ({:?})", i + 1, turn.said.text))?;
            eprintln!(
                "day {} turn {:>2}/{} {:?} {:?}: {:?} after {:.1} s",
                day,
                i + 1,
                script.turns.len(),
                turn.who,
                turn.said.via,
                s.outcome,
                s.first_ms.unwrap_or(0.0) / 1e3
            );
            sent.push(s);
        }
        if args.drain {
            drain(&driver, bus, store, stream).await?;
        }
        let exchanges = recorder.exchanges();
        report::build(
            &pool,
            script,
            &sent,
            &exchanges,
            shipped.overrides.clone(),
            args.short,
            rests,
        )
        .await
    }
    .await;
    stack.abort();
    stack.relay.abort();
    result
}

/// Waits until nothing is in flight (the background work done).
async fn drain(
    driver: &Driver,
    bus: &ghost_shared::bus::Bus,
    store: &ghost_shared::store::EventStore,
    stream: &str,
) -> Result<()> {
    driver
        .until("the background work", || async {
            Ok(pipeline_idle(bus, store, stream).await.then_some(()))
        })
        .await
}

//! `ghost-harness`: parses the command line and dispatches to a harness of the library.

use anyhow::Result;
use clap::{Parser, Subcommand};
use ghost::doctor::{load_config, require_infrastructure};
use ghost::serve::{run_command, serve, serve_model};
use ghost::stack::ServiceName;
use ghost_harness::{
    autonomy_load, chaos, converse, forget_bench, load, memory_bench, model_bench, recall_quality,
    reminder_load, reply_bench, stage_load, webhook_load,
};

/// mimalloc, as `ghost` has: the figures are the deployed binary's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Ghost's load, benchmark and chaos harnesses (the figures of BENCHMARKS.md).
#[derive(Parser)]
#[command(name = "ghost-harness", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Drives chat turns through the whole pipeline against a fake model and reports
    /// throughput and latency.
    Load(load::LoadArgs),
    /// Drives stage runs through the persona's durable loop against a zero-delay fake model
    /// and reports stage turns per second.
    LoadStage(stage_load::StageLoadArgs),
    /// Sends signed LINE webhooks from this process to a gateway in another and reports
    /// acknowledgement latency.
    WebhookLoad(webhook_load::WebhookLoadArgs),
    /// Drives autonomy ticks (decision, web_access, result, persona message) against a
    /// zero-delay fake model and reports ticks per second and decision-to-message time.
    AutonomyLoad(autonomy_load::AutonomyLoadArgs),
    /// Asks for many reminders due in the same minute through the API, moves the
    /// simulated clock past it and times until the last is said; checks each was said once.
    ReminderLoad(reminder_load::ReminderLoadArgs),
    /// Seeds a private database with N utterances and measures recall's candidate
    /// collection and the write plan's validation + apply.
    MemoryBench(memory_bench::MemoryBenchArgs),
    /// Seeds a private database and times forgetting a person.
    ForgetBench(forget_bench::ForgetBenchArgs),
    /// Seeds a long conversation and measures recall's quality per configuration.
    RecallQuality(recall_quality::RecallQualityArgs),
    /// Measures time to first token and prompt and generation tokens/s of an
    /// OpenAI-compatible model server, e.g. `ghost run model`.
    ModelBench(model_bench::ModelBenchArgs),
    /// Chat turns through the whole pipeline on the embedded model, background work on:
    /// time to first token beside the model's own, and each contract's answers.
    ReplyBench(reply_bench::ReplyBenchArgs),
    /// A scripted multi-day conversation (three people, /api/chat and LINE, English and
    /// Japanese) on the shipped configuration with the embedded models: replies, first
    /// token, contracts, recall of planted facts, cross-person candidates.
    Converse(converse::ConverseArgs),
    /// Runs every service as its own process against fake platforms, SIGKILLs and restarts
    /// random services during mixed HTTP, LINE and Slack traffic, and reports accepted,
    /// answered once, lost and duplicated; exits non-zero when anything was lost or
    /// duplicated.
    Chaos(chaos::ChaosArgs),
    /// Runs one service, as `ghost run` does: the harnesses' child processes.
    #[command(hide = true)]
    Run {
        /// Which one.
        service: ServiceName,
    },
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    run_command("ghost-harness", async {
        run(cli.command).await?;
        Ok(std::process::ExitCode::SUCCESS)
    })
}

impl Command {
    /// The harnesses that run on this machine's PostgreSQL and NATS (the configured ones);
    /// they check both first and say what is missing, not fail deep inside. The benches
    /// make their own database from GHOST_TEST_ADMIN_DATABASE_URL, as the tests do.
    fn needs_infrastructure(&self) -> bool {
        matches!(
            self,
            Command::Load(_)
                | Command::LoadStage(_)
                | Command::WebhookLoad(_)
                | Command::AutonomyLoad(_)
                | Command::ReminderLoad(_)
                | Command::ReplyBench(_)
                | Command::Converse(_)
                | Command::Chaos(_)
        )
    }
}

async fn run(command: Command) -> Result<()> {
    if command.needs_infrastructure() {
        require_infrastructure(&load_config()?).await?;
    }
    match command {
        Command::Run {
            service: ServiceName::Model,
        } => serve_model(load_config()?).await,
        Command::Run { service } => serve(load_config()?, &[service], service.as_str()).await,
        Command::Load(args) => load::run(args).await,
        Command::LoadStage(args) => stage_load::run(args).await,
        Command::WebhookLoad(args) => webhook_load::run(args).await,
        Command::AutonomyLoad(args) => autonomy_load::run(args).await,
        Command::ReminderLoad(args) => reminder_load::run(args).await,
        Command::MemoryBench(args) => memory_bench::run(args).await,
        Command::ForgetBench(args) => forget_bench::run(args).await,
        Command::RecallQuality(args) => recall_quality::run(args).await,
        Command::ModelBench(args) => model_bench::run(args).await,
        Command::ReplyBench(args) => reply_bench::run(args).await,
        Command::Converse(args) => converse::run(args).await,
        Command::Chaos(args) => chaos::run(args).await,
    }
}

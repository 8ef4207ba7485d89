//! `ghost`: run Ghost's services and operate on its store. This file parses the command
//! line and dispatches; serving and draining are in `ghost::serve`, each verb in a module
//! of the `ghost` library.

use anyhow::Result;
use clap::{Parser, Subcommand};
use ghost::doctor::{self, load_config, require_infrastructure, Status};
use ghost::serve::{migrate, run_command, serve, serve_model};
use ghost::stack::ServiceName;
use ghost::{probes, projections_cli};
use ghost_shared::config::Config;

/// mimalloc instead of glibc's allocator (see Cargo.toml and BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Ghost: a self-hosted persona AI backend.
#[derive(Parser)]
#[command(name = "ghost", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Runs every service in this process (they still talk only through NATS and Postgres).
    Up,
    /// Runs one service.
    Run {
        /// Which one.
        service: ServiceName,
    },
    /// Applies database migrations.
    Migrate,
    /// Checks configuration, PostgreSQL, NATS, every model and the platform secrets, one
    /// line each with the fix for what fails; exits non-zero when something fails.
    Doctor {
        /// Check only the model of this `llm.<role>` (repeatable), e.g. `--role persona`.
        #[arg(long)]
        role: Vec<String>,
    },
    /// Read-model maintenance.
    Projections {
        #[command(subcommand)]
        command: ProjectionsCommand,
    },
    /// Prints, from the services' descriptors, who appends and who consumes each event
    /// type, as a Markdown table (docs/architecture/events.md).
    Events,
    /// Computes the mood from a JSON array of episodes on stdin (the format of
    /// tests/fixtures/mood.json) and prints it as JSON.
    Mood {
        /// Evaluate at this Unix time (seconds).
        #[arg(long)]
        now: f64,
    },
    /// Routing probe: reads one message on stdin and prints the route the command and
    /// dictionary stages give it (no model call) as one JSON object.
    Route {
        /// Route as if the session were `/local`.
        #[arg(long)]
        local_only: bool,
        /// Dictionary file (default: `routing.rules_file` of the configuration).
        #[arg(long)]
        rules: Option<std::path::PathBuf>,
    },
    /// Masking probe: reads text on stdin and prints {"masked", "categories", "high_risk"}
    /// as one JSON object, with the rules of `masking.yaml` in the config directory.
    Mask {
        /// Rules file (default: `masking.yaml` in `$GHOST_CONFIG_DIR`, else `config/`).
        #[arg(long)]
        rules: Option<std::path::PathBuf>,
    },
    /// Lists the routes users corrected (negation or a command right after an automatically
    /// routed answer), counted by wrong → right route, as JSON (from the routing log).
    RouteReport {
        /// At most this many corrections, newest first.
        #[arg(long, default_value_t = 200)]
        limit: i64,
    },
    /// Resolves who speaks next from a reply on stdin (seed 000) and prints the decision as
    /// JSON: {"next_id", "reason", "extracted", "normalized"}.
    NextSpeaker(ghost::probe::NextSpeakerArgs),
    /// Autonomy on demand.
    Autonomy {
        #[command(subcommand)]
        command: AutonomyCommand,
    },
    /// ActionDecision probe (seed 001).
    Decision {
        #[command(subcommand)]
        command: DecisionCommand,
    },
    /// Memory write plans (issue 12).
    WritePlan {
        #[command(subcommand)]
        command: WritePlanCommand,
    },
    /// A persona's memory as a versioned JSON document, and such a document applied here.
    Memory {
        #[command(subcommand)]
        command: MemoryCommand,
    },
    /// Recall (issue 12).
    Recall {
        #[command(subcommand)]
        command: RecallCommand,
    },
}

#[derive(Subcommand)]
enum AutonomyCommand {
    /// Asks the persona to deliberate now (records an AutonomyTickRequested; the worker
    /// decides) and prints the tick's event id.
    Tick,
}

#[derive(Subcommand)]
enum DecisionCommand {
    /// Reads an ActionDecision on stdin and prints {"valid": bool, "errors": [...]} (no
    /// database, no model).
    Validate,
}

#[derive(Subcommand)]
enum WritePlanCommand {
    /// Reads {"memory", "event_id", "plan"} on stdin, validates the plan and prints the
    /// memory after it ({"ok": true, "memory"}) or why it was rejected ({"ok": false,
    /// "errors"}). No database, no model.
    Apply {
        /// Now, in Unix seconds (the interest decay runs from memory.interest.updated_at).
        #[arg(long)]
        now: f64,
    },
}

#[derive(Subcommand)]
enum RecallCommand {
    /// Reads a message on stdin and prints its rule-based RetrievalPlan ({"mode", "queries",
    /// "time_hint", "limits", "focus"}). No database, no model.
    Plan,
}

#[derive(Subcommand)]
enum MemoryCommand {
    /// Writes every persona's memory (or one persona's, or one person's) as JSON.
    Export(ghost::memory_io::ExportArgs),
    /// Applies an exported document as events; a second import of it changes nothing.
    Import(ghost::memory_io::ImportArgs),
}

#[derive(Subcommand)]
enum ProjectionsCommand {
    /// Empties a projection and replays every event from position 0.
    Rebuild {
        /// Projection name (assistant_text, partner_mood_state, routing, memory).
        name: String,
    },
    /// Applies the events a projection parked (could not decode or apply) again; those that
    /// apply leave the parking table. Fails while any stays parked.
    Retry {
        /// Projection name (assistant_text, partner_mood_state, routing, memory).
        name: String,
    },
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    run_command("ghost", dispatch(cli.command))
}

async fn dispatch(command: Command) -> Result<std::process::ExitCode> {
    if let Command::Doctor { role } = command {
        return Ok(run_doctor(&role).await);
    }
    run(command).await?;
    Ok(std::process::ExitCode::SUCCESS)
}

/// `ghost doctor`: every check (or the named roles' models), one line each; failure when
/// any check failed.
async fn run_doctor(roles: &[String]) -> std::process::ExitCode {
    let checks = match Config::load_default() {
        Ok(config) if !roles.is_empty() => doctor::models_of_roles(&config, roles).await,
        loaded => doctor::run_all(loaded).await,
    };
    for check in &checks {
        println!("{check}");
    }
    let failed = checks.iter().filter(|c| c.status == Status::Fail).count();
    if failed == 0 {
        println!("ghost doctor: all checks passed");
        std::process::ExitCode::SUCCESS
    } else {
        println!("ghost doctor: {failed} check(s) failed");
        std::process::ExitCode::FAILURE
    }
}

async fn run(command: Command) -> Result<()> {
    {
        match command {
            Command::Doctor { .. } => Ok(()),
            Command::Up => {
                let config = load_config()?;
                let services = ServiceName::up(&config);
                serve(config, &services, "ghost").await
            }
            Command::Run {
                service: ServiceName::Model,
            } => serve_model(load_config()?).await,
            Command::Run { service } => serve(load_config()?, &[service], service.as_str()).await,
            Command::Migrate => {
                let config = load_config()?;
                require_infrastructure(&config).await?;
                migrate(&config).await?;
                println!("migrations applied");
                Ok(())
            }
            Command::Projections {
                command: ProjectionsCommand::Rebuild { name },
            } => projections_cli::rebuild(&load_config()?, &name).await,
            Command::Projections {
                command: ProjectionsCommand::Retry { name },
            } => projections_cli::retry_parked(&load_config()?, &name).await,
            Command::Events => {
                print!("{}", ghost::events_table::markdown());
                Ok(())
            }
            Command::Mood { now } => probes::mood(now),
            Command::Route { local_only, rules } => probes::route(local_only, rules),
            Command::Mask { rules } => probes::mask(rules),
            Command::RouteReport { limit } => probes::route_report(load_config()?, limit).await,
            Command::NextSpeaker(args) => ghost::probe::next_speaker(args),
            Command::Autonomy {
                command: AutonomyCommand::Tick,
            } => probes::autonomy_tick(load_config()?).await,
            Command::Decision {
                command: DecisionCommand::Validate,
            } => ghost::probe::decision_validate(),
            Command::WritePlan {
                command: WritePlanCommand::Apply { now },
            } => ghost::memory_probe::write_plan_apply(now),
            Command::Memory {
                command: MemoryCommand::Export(args),
            } => {
                let config = load_config()?;
                require_infrastructure(&config).await?;
                ghost::memory_io::export(&config, args).await
            }
            Command::Memory {
                command: MemoryCommand::Import(args),
            } => {
                let config = load_config()?;
                require_infrastructure(&config).await?;
                ghost::memory_io::import(config, args).await
            }
            Command::Recall {
                command: RecallCommand::Plan,
            } => ghost::memory_probe::recall_plan(&load_config()?.ghost.memory),
        }
    }
}

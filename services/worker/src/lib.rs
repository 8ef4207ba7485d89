//! The worker: runs work on the local model (Ollama by default) for the router.
//!
//! - [`work`]: `WorkRequested` for ANALYZE, PLAN, OPS and RESEARCH (CODE is the coder's):
//!   the model's output goes back as `WorkerCompleted` and the router checks it against the
//!   worker contract;
//! - [`classify`]: `ClassifyRequested` — the classifier (router mode) or Kuro's delegation
//!   decision (kuro mode), each called at most once per user message;
//! - [`research`]: RESEARCH's real sources (search and page fetch through `ghost_shared::web`);
//! - [`summarize`]: `SummarizeRequested` — the session's short-memory summary;
//! - [`confirm`]: `ConfirmationCheckRequested` — whether a message answers paused work;
//! - [`reflect`]: `reflect_episode`, the affect of replies that came without a trailer;
//! - [`autonomy`]: deliberation (schedule and on demand) and the actions decisions name.

pub mod autonomy;
pub mod classify;
pub mod confirm;
pub mod reflect;
pub mod research;
pub mod summarize;
pub mod work;

use std::path::Path;
use std::sync::Arc;

use ghost_shared::bus::run_consumer;
use ghost_shared::envelope::EventPayload;
use ghost_shared::events::{
    ClassifyRequested, ConfirmationCheckRequested, SummarizeRequested, WorkRequested,
};
use ghost_shared::llm::LlmClient;
use ghost_shared::service::{
    no_projections, ServiceContext, ServiceDescriptor, ServiceError, ServiceHandle,
};

/// This service's name.
pub const SERVICE: &str = "worker";

/// How this service is run, named and rebuilt ([`ServiceDescriptor`]).
pub const DESCRIPTOR: ServiceDescriptor = ServiceDescriptor {
    name: SERVICE,
    consumes: ghost_shared::event_types![
        ghost_shared::events::WorkRequested,
        ghost_shared::events::ClassifyRequested,
        ghost_shared::events::ConfirmationCheckRequested,
        ghost_shared::events::SummarizeRequested,
        ghost_shared::events::AssistantReplied,
        ghost_shared::autonomy::events::AutonomyMessageRendered,
        ghost_shared::autonomy::events::AutonomyTickRequested,
        ghost_shared::autonomy::events::ActionDecided,
    ],
    appends: ghost_shared::event_types![
        ghost_shared::events::WorkerCompleted,
        ghost_shared::events::WorkerFailed,
        ghost_shared::events::ClassifierCallStarted,
        ghost_shared::events::ClassifierReplied,
        ghost_shared::events::ConfirmationChecked,
        ghost_shared::events::SessionSummarized,
        ghost_shared::events::AffectReflected,
        ghost_shared::events::ModelAnswerRejected,
        ghost_shared::autonomy::events::AutonomyTickRequested,
        ghost_shared::autonomy::events::ActionDecided,
        ghost_shared::autonomy::events::ActionDropped,
        ghost_shared::autonomy::events::AutonomyTickSkipped,
        ghost_shared::autonomy::events::ActionStarted,
        ghost_shared::autonomy::events::ActionResultRecorded,
    ],
    metrics_port_offset: 2,
    projections: no_projections,
    start: |ctx| Box::pin(start(ctx)),
};

/// Reads a prompt file of the repository.
pub(crate) fn prompt(ctx: &ServiceContext, file: &str) -> Result<String, ServiceError> {
    let path = ctx.config.resolve(Path::new(file));
    std::fs::read_to_string(&path)
        .map_err(|e| ServiceError::Config(format!("{}: {e}", path.display())))
}

/// Starts the worker's consumers (needs `llm.worker`; Kuro's delegation uses the persona's
/// model).
pub async fn start(ctx: ServiceContext) -> Result<ServiceHandle, ServiceError> {
    let mut handle = ServiceHandle::new(SERVICE);
    let llm = ctx.llm("worker")?;
    let worker = Arc::new(work::Worker {
        ctx: ctx.clone(),
        llm: llm.clone(),
        system: prompt(&ctx, "prompts/worker.md")?,
        web: ghost_shared::web::WebClient::new(ctx.config.ghost.web.clone())
            .map_err(|e| ServiceError::Config(format!("web: {e}")))?,
    });
    let persona_llm = persona_llm(&ctx)?;
    let classifier = Arc::new(classify::Classifier::new(
        ctx.clone(),
        llm.clone(),
        persona_llm,
    )?);
    let reflector = Arc::new(reflect::Reflector::new(
        ctx.clone(),
        llm.clone(),
        prompt(&ctx, "prompts/reflect.md")?,
    ));
    let confirmer = Arc::new(confirm::ConfirmationChecker {
        ctx: ctx.clone(),
        llm: llm.clone(),
        system: prompt(&ctx, "prompts/confirmation.md")?,
    });
    let summarizer = Arc::new(summarize::Summarizer {
        ctx: ctx.clone(),
        llm,
        system: prompt(&ctx, "prompts/summary.md")?,
    });
    for event_type in reflect::CONSUMES {
        handle.spawn(run_consumer(
            ctx.bus().clone(),
            ctx.consumer(event_type)?,
            reflector.clone(),
        ));
    }
    start_autonomy(&ctx, &mut handle)?;
    handle.spawn(run_consumer(
        ctx.bus().clone(),
        ctx.consumer(WorkRequested::EVENT_TYPE)?,
        worker,
    ));
    handle.spawn(run_consumer(
        ctx.bus().clone(),
        ctx.consumer(ClassifyRequested::EVENT_TYPE)?,
        classifier,
    ));
    handle.spawn(run_consumer(
        ctx.bus().clone(),
        ctx.consumer(SummarizeRequested::EVENT_TYPE)?,
        summarizer,
    ));
    handle.spawn(run_consumer(
        ctx.bus().clone(),
        ctx.consumer(ConfirmationCheckRequested::EVENT_TYPE)?,
        confirmer,
    ));
    Ok(handle)
}

/// The deliberation and action consumers and the schedule.
fn start_autonomy(ctx: &ServiceContext, handle: &mut ServiceHandle) -> Result<(), ServiceError> {
    let settings = &ctx.config.ghost.autonomy;
    let persona = ctx.config.ghost.persona.character.clone();
    let deliberation = prompt(ctx, &settings.deliberation_prompt_file.to_string_lossy())?;
    let character = ctx
        .config
        .characters
        .get(&persona)
        .ok_or_else(|| ServiceError::Config(format!("no character {persona}")))?;
    ghost_shared::metrics::register_autonomy();
    let deliberator = Arc::new(autonomy::deliberate::Deliberator {
        ctx: ctx.clone(),
        llm: ctx.llm("worker")?,
        system: character.fill_persona(&deliberation),
    });
    let web = ghost_shared::web::WebClient::new(ctx.config.ghost.web.clone())
        .map_err(|e| ServiceError::Config(format!("web: {e}")))?;
    let actor = Arc::new(autonomy::act::Actor {
        ctx: ctx.clone(),
        capabilities: autonomy::capabilities::Capabilities::new(web, settings.cli_agent.clone()),
    });
    handle.spawn(run_consumer(
        ctx.bus().clone(),
        ctx.consumer(autonomy::deliberate::CONSUMES)?,
        deliberator,
    ));
    handle.spawn(run_consumer(
        ctx.bus().clone(),
        ctx.consumer(autonomy::act::CONSUMES)?,
        actor,
    ));
    handle
        .tasks
        .push(tokio::spawn(autonomy::schedule::run_schedule(
            ctx.clone(),
            persona,
        )));
    Ok(())
}

/// The model Kuro speaks with: the character's own, else the `persona` role.
fn persona_llm(ctx: &ServiceContext) -> Result<LlmClient, ServiceError> {
    let character = ctx
        .config
        .characters
        .get(&ctx.config.ghost.persona.character);
    match character.and_then(|c| c.llm.clone()) {
        Some(cfg) => Ok(LlmClient::new(cfg, None)?.with_role("persona")),
        None => ctx.llm("persona"),
    }
}

/// Runs the worker until it fails.
pub async fn run(ctx: ServiceContext) -> Result<(), ServiceError> {
    start(ctx).await?.wait().await;
    Ok(())
}

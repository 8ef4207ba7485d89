//! The write-plan service (seed 001, issue 12): after each persona utterance
//! (`AssistantReplied`, or an autonomy message `AutonomyMessageRendered`) it asks the worker
//! model for a WritePlan, validates it against the persona's memory and appends what it
//! changes as events on the persona's stream (`StateUpserted`, `StateClosed`,
//! `PreferenceUpdated`, `InterestStateUpdated`, `EventAnnotated`) or, for a plan that breaks
//! a rule, one `WritePlanRejected`. After a deliberation (`ActionDecided`) or an
//! `agent_delegate` result (`ActionResultRecorded`) it merges their interest update; it
//! applies people's edits (`MemoryEditRequested` → `MemoryCorrected`, `MemoryForgotten`) and
//! forgets whole people (`PersonForgetRequested` → `PersonForgotten`). It
//! also runs the `memory` projection: it is memory's one writer. Replies never wait for it.
//!
//! - [`input`]: what the model is given (the turn, recent events, memory, the persona);
//! - [`handles`]: the short names the model cites events and states by;
//! - [`planner`]: the utterance handler (once per utterance, whatever is redelivered);
//! - [`attention`]: the interest update of a deliberation or an agent's result;
//! - [`edits`]: people's corrections and forgetting;
//! - [`forget_person`]: forgetting a whole person (the store's redaction, the bus's copies);
//! - [`retention`]: redacting raw conversation text past its channel's retention;
//! - [`writer`]: changes to memory, one at a time against a caught-up projection.

pub mod attention;
pub mod edits;
pub mod forget_person;
pub mod handles;
pub mod input;
pub mod planner;
pub mod retention;
pub mod writer;

use std::sync::Arc;
use std::time::Duration;

use ghost_shared::bus::run_consumer;
use ghost_shared::projections::MemoryProjection;
use ghost_shared::projector::ProjectionRunner;
use ghost_shared::service::{ServiceContext, ServiceDescriptor, ServiceError, ServiceHandle};

/// This service's name.
pub const SERVICE: &str = "write-plan";

/// How this service is run, named and rebuilt ([`ServiceDescriptor`]).
pub const DESCRIPTOR: ServiceDescriptor = ServiceDescriptor {
    name: SERVICE,
    consumes: ghost_shared::event_types![
        ghost_shared::events::AssistantReplied,
        ghost_shared::autonomy::events::AutonomyMessageRendered,
        ghost_shared::autonomy::events::ActionDecided,
        ghost_shared::autonomy::events::ActionResultRecorded,
        ghost_shared::memory::edits::MemoryEditRequested,
        ghost_shared::memory::forget_person::PersonForgetRequested,
    ],
    appends: ghost_shared::event_types![
        ghost_shared::events::StateUpserted,
        ghost_shared::events::StateClosed,
        ghost_shared::events::PreferenceUpdated,
        ghost_shared::events::InterestStateUpdated,
        ghost_shared::events::EventAnnotated,
        ghost_shared::events::WritePlanRejected,
        ghost_shared::memory::edits::MemoryCorrected,
        ghost_shared::memory::edits::MemoryForgotten,
        ghost_shared::memory::forget_person::PersonForgotten,
    ],
    metrics_port_offset: 6,
    projections: |_| vec![Arc::new(MemoryProjection)],
    start: |ctx| Box::pin(start(ctx)),
};

/// Starts the `memory` projection, the utterance consumers (needs `llm.worker` and
/// `prompts/write_plan.md`) and the deliberation consumers.
pub async fn start(ctx: ServiceContext) -> Result<ServiceHandle, ServiceError> {
    let mut handle = ServiceHandle::new(SERVICE);
    let p = &ctx.config.ghost.projections;
    let runner = ProjectionRunner::new(
        ctx.store().clone(),
        Arc::new(MemoryProjection),
        p.batch_size,
        Duration::from_millis(p.poll_interval_ms),
    );
    handle.run_projection(runner.clone());
    let writer = Arc::new(writer::MemoryWriter::new(ctx.clone(), runner));
    let planner = Arc::new(planner::Planner::with_writer(ctx.clone(), writer.clone())?);
    for event_type in planner::CONSUMES {
        handle.spawn(run_consumer(
            ctx.bus().clone(),
            ctx.consumer(event_type)?,
            planner.clone(),
        ));
    }
    let edits = Arc::new(edits::Edits::new(ctx.clone(), writer.clone()));
    for event_type in edits::CONSUMES {
        handle.spawn(run_consumer(
            ctx.bus().clone(),
            ctx.consumer(event_type)?,
            edits.clone(),
        ));
    }
    let forget = Arc::new(forget_person::ForgetPerson::new(
        ctx.clone(),
        writer.clone(),
    ));
    for event_type in forget_person::CONSUMES {
        handle.spawn(run_consumer(
            ctx.bus().clone(),
            ctx.consumer(event_type)?,
            forget.clone(),
        ));
    }
    handle.spawn(retention::run(ctx.clone()));
    let attention = Arc::new(attention::Attention::new(ctx.clone(), writer));
    for event_type in attention::CONSUMES {
        handle.spawn(run_consumer(
            ctx.bus().clone(),
            ctx.consumer(event_type)?,
            attention.clone(),
        ));
    }
    Ok(handle)
}

/// Runs the write-plan service until it fails.
pub async fn run(ctx: ServiceContext) -> Result<(), ServiceError> {
    start(ctx).await?.wait().await;
    Ok(())
}

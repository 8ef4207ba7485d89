//! The worker: runs work on the local model (Ollama by default) for the router.
//!
//! Today it answers `WorkRequested` with the model's output as `WorkerCompleted` (or
//! `WorkerFailed`). The worker contract (structured result, loop signals), the classifier
//! and the other jobs arrive with the routing capability; the router does not yet send
//! work here (every message is CHAT).
//!
//! - [`reflect`]: `reflect_episode`, the affect of replies that came without a trailer.

pub mod reflect;

use std::sync::Arc;

use ghost_shared::bus::{run_consumer, ConsumerSpec, EventHandler, HandlerError};
use ghost_shared::event::{session_stream, EventPayload, NewEvent, RecordedEvent};
use ghost_shared::events::{WorkRequested, WorkerCompleted, WorkerFailed};
use ghost_shared::ids::derive_event_id;
use ghost_shared::llm::{ChatMessage, LlmClient};
use ghost_shared::service::{ServiceContext, ServiceError, ServiceHandle};
use ghost_shared::store::ExpectedVersion;

/// This service's name.
pub const SERVICE: &str = "worker";

/// Starts the worker's consumer (needs `llm.worker` in the configuration).
pub async fn start(ctx: ServiceContext) -> Result<ServiceHandle, ServiceError> {
    let mut handle = ServiceHandle::new(SERVICE);
    let path = ctx
        .config
        .resolve(std::path::Path::new("prompts/worker.md"));
    let system = std::fs::read_to_string(&path)
        .map_err(|e| ServiceError::Config(format!("{}: {e}", path.display())))?;
    let llm = ctx.llm("worker")?;
    let reflect_path = ctx
        .config
        .resolve(std::path::Path::new("prompts/reflect.md"));
    let reflect_template = std::fs::read_to_string(&reflect_path)
        .map_err(|e| ServiceError::Config(format!("{}: {e}", reflect_path.display())))?;
    handle.spawn(run_consumer(
        ctx.bus().clone(),
        ConsumerSpec::new(SERVICE, reflect::CONSUMES),
        Arc::new(reflect::Reflector::new(
            ctx.clone(),
            llm.clone(),
            reflect_template,
        )),
    ));
    let handler = Arc::new(Worker {
        ctx: ctx.clone(),
        llm,
        system,
    });
    handle.spawn(run_consumer(
        ctx.bus().clone(),
        ConsumerSpec::new(SERVICE, WorkRequested::EVENT_TYPE),
        handler,
    ));
    Ok(handle)
}

/// Runs the worker until it fails.
pub async fn run(ctx: ServiceContext) -> Result<(), ServiceError> {
    start(ctx).await?.wait().await;
    Ok(())
}

/// Handles `WorkRequested` on the local model, once per request.
pub struct Worker {
    ctx: ServiceContext,
    llm: LlmClient,
    system: String,
}

#[async_trait::async_trait]
impl EventHandler for Worker {
    async fn handle(&self, event: RecordedEvent) -> Result<(), HandlerError> {
        let work: WorkRequested = event.decode().map_err(HandlerError::permanent)?;
        for step in [WorkerCompleted::EVENT_TYPE, WorkerFailed::EVENT_TYPE] {
            if self
                .ctx
                .store()
                .get(derive_event_id(event.event_id, step))
                .await
                .map_err(HandlerError::transient)?
                .is_some()
            {
                return Ok(()); // already done: a redelivery changes nothing
            }
        }
        let messages = [
            ChatMessage::system(self.system.replace("{{route}}", &work.route)),
            ChatMessage::user(work.task.clone()),
        ];
        let service = self.ctx.service;
        let outcome = match self.llm.chat(&messages).await {
            Ok(result) => {
                let done = WorkerCompleted {
                    session_id: work.session_id.clone(),
                    user_event_id: work.user_event_id,
                    route: work.route.clone(),
                    result,
                };
                NewEvent::caused_by(&event, WorkerCompleted::EVENT_TYPE, &done, service)
            }
            Err(e) => {
                let failed = WorkerFailed {
                    session_id: work.session_id.clone(),
                    user_event_id: work.user_event_id,
                    route: work.route.clone(),
                    code: "llm_error".into(),
                    message: e.to_string(),
                };
                NewEvent::caused_by(&event, WorkerFailed::EVENT_TYPE, &failed, service)
            }
        }
        .map_err(HandlerError::permanent)?;
        self.ctx
            .log
            .append(
                &session_stream(&work.session_id),
                ExpectedVersion::Any,
                &[outcome],
            )
            .await
            .map_err(HandlerError::transient)?;
        Ok(())
    }
}

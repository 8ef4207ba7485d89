//! The coder: CODE work on the one cloud OpenAI-compatible API (`llm.coder`, key from
//! `GHOST_CLOUD_API_KEY`).
//!
//! Two guarantees hold here whatever the router did: nothing is sent while the session is
//! `/local` (the request says so), and everything sent is masked first (API keys, tokens,
//! passwords, private keys, connection strings, e-mail addresses, phone numbers). Log lines
//! carry no task text at all.
//!
//! Spend has a ceiling: each call's tokens are stored (`CloudTokensUsed`, with the call's
//! outcome) and, once the UTC day's sum reaches `coder.daily_token_cap`, a CODE turn ends
//! with a short notice and nothing is sent ([`budget`]).
//!
//! A request calls the cloud at most once: a `CoderCallStarted` marker is stored before the
//! call, and a redelivery that finds it without an outcome waits out the time the earlier
//! call could still answer in, then ends the work as interrupted instead of paying again.

pub mod budget;
pub mod usage;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use ghost_shared::bus::{run_consumer, EventHandler, HandlerError};
use ghost_shared::contracts;
use ghost_shared::envelope::{session_stream, EventPayload, NewEvent, RecordedEvent};
use ghost_shared::events::{
    CoderCallStarted, WorkRequested, WorkerCompleted, WorkerFailed, TIME_LIMIT,
};
use ghost_shared::ids::WORK_OUTCOME_STEP;
use ghost_shared::llm::{Call, ChatMessage, LlmClient};
use ghost_shared::masking::mask_secrets;
use ghost_shared::routing::Route;
use ghost_shared::service::{
    no_projections, ServiceContext, ServiceDescriptor, ServiceError, ServiceHandle,
};
use ghost_shared::store::ExpectedVersion;
use tracing::{info, warn};

use budget::Budget;
use usage::CLOUD_USAGE_STEP;

/// This service's name.
pub const SERVICE: &str = "coder";

/// The step a `CoderCallStarted` id derives from, with the `WorkRequested` it serves.
pub const CALL_STARTED_STEP: &str = "coder-call-started";

/// Beyond `llm.coder.timeout_secs`, how long an earlier attempt may still take to store
/// what its call answered.
pub const STORE_MARGIN: Duration = Duration::from_secs(5);

/// How this service is run, named and rebuilt ([`ServiceDescriptor`]).
pub const DESCRIPTOR: ServiceDescriptor = ServiceDescriptor {
    name: SERVICE,
    consumes: ghost_shared::event_types![ghost_shared::events::WorkRequested,],
    appends: ghost_shared::event_types![
        ghost_shared::events::CoderCallStarted,
        ghost_shared::events::WorkerCompleted,
        ghost_shared::events::CloudTokensUsed,
        ghost_shared::events::WorkerFailed,
        ghost_shared::events::RenderFailed,
    ],
    metrics_port_offset: 5,
    projections: no_projections,
    start: |ctx| Box::pin(start(ctx)),
};

/// Starts the coder's consumer (needs `llm.coder`).
pub async fn start(ctx: ServiceContext) -> Result<ServiceHandle, ServiceError> {
    let mut handle = ServiceHandle::new(SERVICE);
    let coder = Arc::new(Coder::new(ctx.clone())?);
    // The gauge shows the day's use from the start, not from the first call.
    if let Err(e) = budget::day_use(&ctx).await {
        warn!(error = %e, "cannot read the day's cloud token use");
    }
    handle.spawn(run_consumer(
        ctx.bus().clone(),
        ctx.consumer(WorkRequested::EVENT_TYPE)?,
        coder,
    ));
    Ok(handle)
}

/// Runs the coder until it fails.
pub async fn run(ctx: ServiceContext) -> Result<(), ServiceError> {
    start(ctx).await?.wait().await;
    Ok(())
}

/// Handles `WorkRequested` for CODE, once per request.
pub struct Coder {
    ctx: ServiceContext,
    llm: LlmClient,
    system: String,
    budget: Budget,
    /// How long after its marker an earlier attempt's call may still be answered and stored.
    earlier_call_bound: Duration,
}

/// What an earlier attempt's call marker leaves to do.
enum Earlier {
    /// Nothing: its outcome is stored.
    Answered,
    /// An earlier attempt started the call and can no longer store what it answered.
    Interrupted,
}

impl Coder {
    /// The coder of `ctx` (needs `llm.coder` and `prompts/coder.md`).
    pub fn new(ctx: ServiceContext) -> Result<Self, ServiceError> {
        let cfg = ctx
            .config
            .ghost
            .llm
            .get("coder")
            .cloned()
            .ok_or_else(|| ServiceError::Config("llm.coder is not configured".into()))?;
        let key = ctx
            .config
            .secrets
            .cloud_api_key
            .as_ref()
            .map(|k| k.expose().to_owned());
        if key.is_none() {
            warn!("GHOST_CLOUD_API_KEY is not set: the cloud coder is called without a key");
        }
        // The interactive call is bounded as a whole by the timeout.
        let earlier_call_bound = Duration::from_secs(cfg.timeout_secs) + STORE_MARGIN;
        let llm = LlmClient::new(cfg, key)?.with_role("coder");
        let path = ctx.config.resolve(Path::new("prompts/coder.md"));
        let system = std::fs::read_to_string(&path)
            .map_err(|e| ServiceError::Config(format!("{}: {e}", path.display())))?;
        let budget = Budget::new(ctx.config.ghost.coder.cap());
        Ok(Self {
            ctx,
            llm,
            system,
            budget,
            earlier_call_bound,
        })
    }

    /// Stores the marker of this request's cloud call (`None`: this attempt calls), unless an
    /// earlier attempt did. An earlier call still within its bound: later, once it has
    /// answered or cannot.
    async fn mark_call(
        &self,
        event: &RecordedEvent,
        work: &WorkRequested,
        steps: &[&str],
    ) -> Result<Option<Earlier>, HandlerError> {
        let started = CoderCallStarted {
            session_id: work.session_id.clone(),
            user_event_id: work.user_event_id,
            loop_index: work.loop_index,
        };
        let marker = NewEvent::caused_by(event, CALL_STARTED_STEP, &started, self.ctx.service)
            .map_err(HandlerError::permanent)?;
        let stored = self
            .ctx
            .log
            .append(
                &session_stream(&work.session_id),
                ExpectedVersion::Any,
                &[marker],
            )
            .await
            .map_err(HandlerError::transient)?;
        if !stored.duplicate {
            return Ok(None);
        }
        // The earlier attempt may have stored its outcome since the first look.
        if self.ctx.outcome_stored(event, steps).await? {
            return Ok(Some(Earlier::Answered));
        }
        let marked_at = stored.events.first().map(|e| e.recorded_at);
        // recorded_at is on the database's clock, which ctx.clock() follows.
        let age = marked_at
            .and_then(|at| (self.ctx.clock().now() - at).to_std().ok())
            .unwrap_or_default();
        match self.earlier_call_bound.checked_sub(age) {
            Some(wait) if !wait.is_zero() => Err(HandlerError::later(
                wait,
                "an earlier cloud call may still answer",
            )),
            _ => Ok(Some(Earlier::Interrupted)),
        }
    }
}

#[async_trait::async_trait]
impl EventHandler for Coder {
    async fn handle(&self, event: RecordedEvent) -> Result<(), HandlerError> {
        let work: WorkRequested = event.decode().map_err(HandlerError::permanent)?;
        if work.route != Route::Code {
            return Ok(()); // the local worker's
        }
        // The shared outcome id, and the two it replaced (outcomes stored before it).
        let steps = [
            WORK_OUTCOME_STEP,
            WorkerCompleted::EVENT_TYPE,
            WorkerFailed::EVENT_TYPE,
        ];
        if self.ctx.outcome_stored(&event, &steps).await? {
            return Ok(()); // a redelivery changes nothing
        }
        if self.ctx.turn_outcome(work.user_event_id).await?.is_some() {
            return Ok(()); // the turn was closed (timed out): nobody waits for this work
        }
        let service = self.ctx.service;
        let failed = |code: &str, message: String| {
            let failed = WorkerFailed {
                session_id: work.session_id.clone(),
                user_event_id: work.user_event_id,
                route: work.route,
                code: code.to_owned(),
                message,
            };
            NewEvent::caused_by(&event, WORK_OUTCOME_STEP, &failed, service)
        };
        let encoded = |e: Result<NewEvent, serde_json::Error>| e.map_err(HandlerError::permanent);
        let mut called = false;
        let outcome = if work.local_only {
            warn!("CODE requested while local_only is set: nothing is sent to the cloud");
            vec![encoded(failed(
                "local_only",
                "the session is local-only".into(),
            ))?]
        } else if let Some(used) = self.budget.used_up(&self.ctx).await? {
            warn!(
                used = used.total(),
                cap = self.budget.cap(),
                "CODE refused: the day's cloud token cap is used up; nothing is sent to the cloud"
            );
            ghost_shared::metrics::coder_cap_refused();
            vec![self.budget.refusal(&self.ctx, &event, &work).await?]
        } else if let Some(earlier) = self.mark_call(&event, &work, &steps).await? {
            match earlier {
                Earlier::Answered => return Ok(()),
                Earlier::Interrupted => {
                    // Its tokens are unknown, and calling again would pay twice for one request.
                    warn!("an earlier cloud call never stored its outcome; not calling again");
                    vec![encoded(failed(
                        "interrupted",
                        "cloud call interrupted (not repeated)".into(),
                    ))?]
                }
            }
        } else {
            let task = mask_secrets(&work.task).into_owned();
            let messages = [
                ChatMessage::system(self.system.clone()),
                ChatMessage::user(task.clone()),
            ];
            info!(loop_index = work.loop_index, "coder run on the cloud model");
            // The user waits; the answer keeps the worker contract (no sources off RESEARCH).
            let contract = contracts::worker_output::contract::<&str>(&[]);
            let call = Call::interactive().shaped(&contract);
            let outcome = match work
                .within_deadline(
                    self.ctx.clock().now(),
                    self.llm.complete_counted(&messages, call),
                )
                .await
            {
                None => {
                    warn!("the message's time ran out during the cloud call");
                    vec![encoded(failed(
                        TIME_LIMIT,
                        "the message's time limit (loop.max_seconds) ran out during the run".into(),
                    ))?]
                }
                Some(Ok((result, reported))) => {
                    called = true;
                    let model = &self.llm.config().model;
                    let prompt = [self.system.as_str(), task.as_str()];
                    let used = usage::of_call(&work, model, reported, &prompt, &result);
                    let done = WorkerCompleted {
                        sources: Vec::new(),
                        session_id: work.session_id.clone(),
                        user_event_id: work.user_event_id,
                        route: work.route,
                        result,
                    };
                    // One append: the outcome is never stored without its usage.
                    vec![
                        encoded(NewEvent::caused_by(
                            &event,
                            WORK_OUTCOME_STEP,
                            &done,
                            service,
                        ))?,
                        encoded(NewEvent::caused_by(
                            &event,
                            CLOUD_USAGE_STEP,
                            &used,
                            service,
                        ))?,
                    ]
                }
                Some(Err(e)) => {
                    let message = mask_secrets(&e.to_string()).into_owned();
                    warn!(error = %message, "cloud coder call failed");
                    vec![encoded(failed("llm_error", message))?]
                }
            };
            ghost_shared::fault::point("coder.after_call");
            outcome
        };
        self.ctx
            .log
            .append(
                &session_stream(&work.session_id),
                ExpectedVersion::Any,
                &outcome,
            )
            .await
            .map_err(HandlerError::transient)?;
        ghost_shared::fault::point("coder.after_append");
        if called {
            // The gauge follows the store (other instances' calls included); the work is
            // done whether or not it can be read now.
            if let Err(e) = budget::day_use(&self.ctx).await {
                warn!(error = %e, "cannot read the day's cloud token use");
            }
        }
        Ok(())
    }
}

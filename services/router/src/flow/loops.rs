//! The loop controller at work: after each worker run the router alone decides — another
//! run, one reroute, ask the user, a progress report at the limit, or the reply.

use std::time::Duration;

use ghost_shared::bus::HandlerError;
use ghost_shared::envelope::{NewEvent, RecordedEvent};
use ghost_shared::events::{
    LoopDecided, RenderRequested, RouteDecided, WorkRequested, WorkerCompleted, WorkerFailed,
};
use serde_json::Value;
use tracing::{info, warn};

use super::task::{failure_result, next_loop_task, reroute_task, work_result};
use super::{Router, STEP_LOOP, STEP_NEXT};
use crate::routing::{
    decide_next, parse_worker_output, LoopDecision, LoopState, Route, WorkerOutcome, WorkerResult,
};

/// What a worker run came back with.
struct RunOutcome {
    user_event_id: uuid::Uuid,
    route: Route,
    result: Result<WorkerResult, String>,
}

fn outcome_of(event: &RecordedEvent) -> Result<RunOutcome, HandlerError> {
    if let Ok(done) = event.decode::<WorkerCompleted>() {
        let result = parse_worker_output(&done.result).map_err(|e| format!("{}: {e}", e.kind()));
        return Ok(RunOutcome {
            user_event_id: done.user_event_id,
            route: done.route,
            result,
        });
    }
    let failed: WorkerFailed = event.decode().map_err(HandlerError::permanent)?;
    Ok(RunOutcome {
        user_event_id: failed.user_event_id,
        route: failed.route,
        result: Err(format!("worker_failed: {}", failed.code)),
    })
}

fn decision_name(d: &LoopDecision) -> &'static str {
    match d {
        LoopDecision::Render => "render",
        LoopDecision::RenderFailure => "render_failure",
        LoopDecision::AnotherLoop { .. } => "another_loop",
        LoopDecision::AskUser { .. } => "ask_user",
        LoopDecision::LimitReached => "limit_reached",
        LoopDecision::Reroute { .. } => "reroute",
    }
}

impl Router {
    /// `WorkerCompleted` / `WorkerFailed`: one loop-controller decision per run.
    pub(crate) async fn on_worker_outcome(
        &self,
        event: &RecordedEvent,
    ) -> Result<(), HandlerError> {
        let run = outcome_of(event)?;
        let turn = self.load_turn(run.user_event_id).await?;
        let events = self.turn_events(&turn).await?;
        let decided: RouteDecided = events
            .iter()
            .rev()
            .find_map(|e| e.decode::<RouteDecided>().ok())
            .ok_or_else(|| HandlerError::permanent("worker result without a route decision"))?;
        let works: Vec<(uuid::Uuid, WorkRequested)> = events
            .iter()
            .filter_map(|e| e.decode::<WorkRequested>().ok().map(|w| (e.event_id, w)))
            .collect();
        let this = works
            .iter()
            .find(|(id, _)| Some(*id) == event.metadata.causation_id)
            .map(|(_, w)| w.clone())
            .ok_or_else(|| HandlerError::permanent("worker result without its request"))?;
        let first_task = works
            .first()
            .map(|(_, w)| w.task.clone())
            .unwrap_or_default();
        let route = run.route;
        // Stored times, not the clock: a redelivery decides exactly as the first delivery.
        let elapsed = (event.recorded_at - turn.event.recorded_at)
            .to_std()
            .unwrap_or(Duration::ZERO);
        let state = LoopState {
            route,
            loops_done: this.loop_index,
            elapsed,
            rerouted: works
                .iter()
                .any(|(_, w)| w.reroute && w.loop_index <= this.loop_index),
            local_only: decided.local_only,
            code_evidence: !self
                .config
                .dictionary
                .evidence_for(Route::Code, &turn.message.text)
                .is_empty(),
        };
        let outcome = match &run.result {
            Ok(r) => WorkerOutcome::Completed(r),
            Err(reason) => {
                warn!(%route, loop_index = this.loop_index, %reason, "worker output is a failure");
                WorkerOutcome::Failed
            }
        };
        let decision = decide_next(&state, &self.config.loop_policy, outcome);
        info!(%route, loop_index = this.loop_index, decision = decision_name(&decision), "loop decided");
        let ok = run.result.as_ref().ok();
        let logged = LoopDecided {
            session_id: turn.message.session_id.clone(),
            user_event_id: turn.id(),
            route,
            loop_index: this.loop_index,
            decision: decision_name(&decision).to_owned(),
            reroute_to: match &decision {
                LoopDecision::Reroute { route } => Some(*route),
                _ => None,
            },
            needs_next_loop: ok.map(|r| r.needs_next_loop),
            risk: ok.and_then(|r| {
                serde_json::to_value(r.risk)
                    .ok()?
                    .as_str()
                    .map(str::to_owned)
            }),
            fit: ok.and_then(|r| r.fit),
            confidence: ok.map(|r| r.confidence),
            failure: run.result.as_ref().err().cloned(),
        };

        let work = |route: Route, task: String, reroute: bool| WorkRequested {
            session_id: turn.message.session_id.clone(),
            user_event_id: turn.id(),
            route,
            task,
            loop_index: this.loop_index + 1,
            local_only: decided.local_only,
            reroute,
        };
        let summary = self.memory_summary(&turn).await?;
        // Work that went to the cloud had the message's secrets masked: the persona says so.
        let went_to_cloud = works
            .iter()
            .any(|(_, w)| w.route.uses_cloud() && !w.local_only && w.loop_index <= this.loop_index);
        let withheld = if went_to_cloud {
            ghost_shared::masking::high_risk_categories(&turn.message.text)
        } else {
            Vec::new()
        };
        let render = |result: Value| RenderRequested {
            session_id: turn.message.session_id.clone(),
            channel: turn.message.channel,
            user_event_id: turn.id(),
            user_text: turn.message.text.clone(),
            work_result: Some(result),
            declaration: decided.declaration.clone(),
            notice: None,
            memory_summary: summary.clone(),
            withheld_from_cloud: withheld.clone(),
        };
        let loops = this.loop_index;
        let service = self.ctx.service;
        let next = match (&decision, ok) {
            (LoopDecision::AnotherLoop { .. }, Some(r)) => NewEvent::caused_by(
                event,
                STEP_NEXT,
                &work(route, next_loop_task(route, &this.task, r), false),
                service,
            ),
            (LoopDecision::Reroute { route: to }, Some(r)) if *to != Route::Chat => {
                NewEvent::caused_by(
                    event,
                    STEP_NEXT,
                    &work(*to, reroute_task(*to, &first_task, route, &r.why), true),
                    service,
                )
            }
            (LoopDecision::AskUser { .. }, r) => NewEvent::caused_by(
                event,
                STEP_NEXT,
                &render(work_result("ask_user", route, loops, r)),
                service,
            ),
            (LoopDecision::LimitReached, r) => NewEvent::caused_by(
                event,
                STEP_NEXT,
                &render(work_result("limit_reached", route, loops, r)),
                service,
            ),
            (_, Some(r)) => NewEvent::caused_by(
                event,
                STEP_NEXT,
                &render(work_result("done", route, loops, Some(r))),
                service,
            ),
            (_, None) => {
                let reason = run.result.as_ref().err().map_or("unknown", String::as_str);
                let kind = reason.split(':').next().unwrap_or("unknown");
                NewEvent::caused_by(
                    event,
                    STEP_NEXT,
                    &render(failure_result(route, loops, kind)),
                    service,
                )
            }
        }
        .map_err(HandlerError::permanent)?;
        let logged = NewEvent::caused_by(event, STEP_LOOP, &logged, service)
            .map_err(HandlerError::permanent)?;
        self.append(&turn.message.session_id, &[logged, next]).await
    }
}

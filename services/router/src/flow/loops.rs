//! The loop controller at work: after each worker run the router alone decides — another
//! run, one reroute, ask the user, a progress report at the limit, or the reply.

use ghost_shared::contracts;
use std::time::Duration;

use ghost_shared::bus::HandlerError;
use ghost_shared::envelope::{NewEvent, RecordedEvent};
use ghost_shared::events::{
    JudgeRequested, LoopDecided, PersonaProposed, RenderRequested, RouteDecided, WorkRequested,
    WorkerCompleted, WorkerFailed, TIME_LIMIT,
};
use serde_json::Value;
use tracing::{info, warn};

use super::task::{failure_result, next_loop_task, reroute_task, work_result};
use super::{Router, STEP_LOOP, STEP_NEXT, STEP_PENDING};
use crate::routing::{
    cited_sources, decide_next, declaration, parse_worker_output, LoopDecision, LoopState, Route,
    WorkerOutcome, WorkerResult,
};

/// What a worker run came back with.
pub(crate) struct RunOutcome {
    /// The user message served.
    pub user_event_id: uuid::Uuid,
    /// The route the run was on.
    pub route: Route,
    /// The contract-conforming result, or why the run is a failure.
    pub result: Result<WorkerResult, String>,
    /// RESEARCH: the sources the reply may cite (only URLs the search returned).
    pub sources: Vec<String>,
}

/// The outcome a `WorkerCompleted` or `WorkerFailed` event reports.
pub(crate) fn outcome_of(event: &RecordedEvent) -> Result<RunOutcome, HandlerError> {
    if let Ok(done) = event.decode::<WorkerCompleted>() {
        let result = parse_worker_output(&done.result).map_err(|e| format!("{}: {e}", e.kind()));
        return Ok(RunOutcome {
            user_event_id: done.user_event_id,
            route: done.route,
            result,
            sources: cited_sources(&done.result, &done.sources),
        });
    }
    let failed: WorkerFailed = event.decode().map_err(HandlerError::permanent)?;
    Ok(RunOutcome {
        user_event_id: failed.user_event_id,
        route: failed.route,
        result: Err(format!("worker_failed: {}", failed.code)),
        sources: Vec::new(),
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

/// What every loop step of one user message works from.
pub(crate) struct LoopContext {
    /// The user message.
    pub turn: super::turn::Turn,
    /// Its route decision.
    pub decided: RouteDecided,
    /// The work request whose run is being decided on.
    pub this: WorkRequested,
    /// The first run's task.
    pub first_task: String,
    /// Whether the message was rerouted up to this run.
    pub rerouted: bool,
    /// Whether the persona already judged a result of this message.
    pub proposed: bool,
    /// Whether work of this message went to the cloud up to this run (masked).
    pub went_to_cloud: bool,
    /// The last finished run's result that kept the contract (the work so far).
    pub last_result: Option<WorkerResult>,
}

impl Router {
    /// The loop context of the run requested by `work_id` for `user_event_id`.
    pub(crate) async fn loop_context(
        &self,
        user_event_id: uuid::Uuid,
        work_id: Option<uuid::Uuid>,
    ) -> Result<LoopContext, HandlerError> {
        let turn = self.load_turn(user_event_id).await?;
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
            .find(|(id, _)| Some(*id) == work_id)
            .map(|(_, w)| w.clone())
            .ok_or_else(|| HandlerError::permanent("worker result without its request"))?;
        let first_task = works
            .first()
            .map(|(_, w)| w.task.clone())
            .unwrap_or_default();
        let rerouted = works
            .iter()
            .any(|(_, w)| w.reroute && w.loop_index <= this.loop_index);
        let proposed = events.iter().any(|e| e.is::<PersonaProposed>());
        let went_to_cloud = works
            .iter()
            .any(|(_, w)| w.route.uses_cloud() && !w.local_only && w.loop_index <= this.loop_index);
        let last_result = events
            .iter()
            .rev()
            .filter_map(|e| e.decode::<WorkerCompleted>().ok())
            .find_map(|done| parse_worker_output(&done.result).ok());
        Ok(LoopContext {
            turn,
            decided,
            this,
            first_task,
            rerouted,
            proposed,
            went_to_cloud,
            last_result,
        })
    }

    /// The loop state of a context as of `event` (stored times, not the clock: a
    /// redelivery decides exactly as the first delivery).
    pub(crate) fn loop_state(
        &self,
        cx: &LoopContext,
        route: Route,
        event: &RecordedEvent,
    ) -> LoopState {
        LoopState {
            route,
            loops_done: cx.this.loop_index,
            elapsed: (event.recorded_at - cx.turn.event.recorded_at)
                .to_std()
                .unwrap_or(Duration::ZERO),
            rerouted: cx.rerouted,
            local_only: cx.decided.local_only,
            code_evidence: !self
                .config
                .dictionary
                .evidence_for(Route::Code, &cx.turn.message.text)
                .is_empty(),
        }
    }

    /// The event that carries out `decision` for a run on `route`: the next work request or
    /// the render request. `why` explains another run or a reroute (the worker's or the
    /// persona's words); `may_propose` asks the persona to judge a finished result first
    /// (`JudgeRequested`) instead of replying.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn next_step(
        &self,
        event: &RecordedEvent,
        cx: &LoopContext,
        route: Route,
        decision: &LoopDecision,
        result: Result<&WorkerResult, &str>,
        why: Option<&str>,
        may_propose: bool,
        sources: &[String],
    ) -> Result<Vec<NewEvent>, HandlerError> {
        let turn = &cx.turn;
        let work = |route: Route, task: String, reroute: bool| WorkRequested {
            session_id: turn.message.session_id.clone(),
            user_event_id: turn.id(),
            route,
            task,
            loop_index: cx.this.loop_index + 1,
            local_only: cx.decided.local_only,
            reroute,
            deadline: Some(self.deadline_of(turn)),
        };
        let summary = self.memory_summary(turn).await?;
        // Work that went to the cloud had the message's secrets masked: the persona says so.
        let withheld = if cx.went_to_cloud {
            ghost_shared::masking::high_risk_categories(&turn.message.text)
        } else {
            Vec::new()
        };
        let with_sources = |mut result: Value| {
            if !sources.is_empty() && result.get("result").is_some() {
                result["sources"] = serde_json::json!(sources);
            }
            result
        };
        let render = |result: Value| RenderRequested {
            session_id: turn.message.session_id.clone(),
            channel: turn.message.channel,
            user_event_id: turn.id(),
            person: Some(turn.message.speaker.clone()),
            user_text: turn.message.text.clone(),
            work_result: Some(with_sources(result)),
            // After a reroute the reply comes from the new route: declared against the
            // session's previous route, like a first decision.
            declaration: if cx.rerouted {
                declaration(turn.session.last_primary_route, route).map(str::to_owned)
            } else {
                cx.decided.declaration.clone()
            },
            notice: None,
            memory_summary: summary.clone(),
            withheld_from_cloud: withheld.clone(),
            history_user_messages: Some(turn.history_user_messages()),
        };
        let loops = cx.this.loop_index;
        let service = self.ctx.service;
        let ok = result.ok();
        match (decision, ok) {
            (LoopDecision::AnotherLoop { .. }, Some(r)) => {
                let mut r = r.clone();
                if let Some(why) = why {
                    r.why = why.to_owned();
                }
                NewEvent::caused_by(
                    event,
                    STEP_NEXT,
                    &work(route, next_loop_task(route, &cx.this.task, &r), false),
                    service,
                )
            }
            (LoopDecision::Reroute { route: to }, Some(r)) if *to != Route::Chat => {
                let why = why.unwrap_or(&r.why);
                NewEvent::caused_by(
                    event,
                    STEP_NEXT,
                    &work(*to, reroute_task(*to, &cx.first_task, route, why), true),
                    service,
                )
            }
            (LoopDecision::AskUser { questions }, r) => {
                // The work waits for the user's next message (seed 002: their answer
                // resumes it).
                let pending = super::confirm::pending_of(cx, route, r, questions);
                let pending = NewEvent::caused_by(event, STEP_PENDING, &pending, service)
                    .map_err(HandlerError::permanent)?;
                let render = NewEvent::caused_by(
                    event,
                    STEP_NEXT,
                    &render(work_result("ask_user", route, loops, r)),
                    service,
                )
                .map_err(HandlerError::permanent)?;
                return Ok(vec![pending, render]);
            }
            (LoopDecision::LimitReached, r) => NewEvent::caused_by(
                event,
                STEP_NEXT,
                &render(work_result("limit_reached", route, loops, r)),
                service,
            ),
            // A finished result the persona judges first: the router decides on its
            // proposal, and asks for the reply then.
            (_, Some(r)) if may_propose => NewEvent::caused_by(
                event,
                STEP_NEXT,
                &JudgeRequested {
                    session_id: turn.message.session_id.clone(),
                    channel: turn.message.channel,
                    user_event_id: turn.id(),
                    user_text: turn.message.text.clone(),
                    work_result: with_sources(work_result("done", route, loops, Some(r))),
                },
                service,
            ),
            (_, Some(r)) => NewEvent::caused_by(
                event,
                STEP_NEXT,
                &render(work_result("done", route, loops, Some(r))),
                service,
            ),
            (_, None) => {
                let reason = result.err().unwrap_or("unknown");
                let kind = if reason.contains("research_unavailable") {
                    "research_unavailable"
                } else {
                    reason.split(':').next().unwrap_or("unknown")
                };
                NewEvent::caused_by(
                    event,
                    STEP_NEXT,
                    &render(failure_result(route, loops, kind)),
                    service,
                )
            }
        }
        .map(|e| vec![e])
        .map_err(HandlerError::permanent)
    }

    /// `WorkerCompleted` / `WorkerFailed`: one loop-controller decision per run.
    pub(crate) async fn on_worker_outcome(
        &self,
        event: &RecordedEvent,
    ) -> Result<(), HandlerError> {
        let run = outcome_of(event)?;
        if let Ok(done) = event.decode::<WorkerCompleted>() {
            // What the model wrote, against the shape it was asked for (CODE: the cloud's).
            let role = if done.route == Route::Code {
                "coder"
            } else {
                "worker"
            };
            let verdict = run.result.as_ref().map(|_| ()).map_err(|_| "contract");
            contracts::worker_output::contract(&done.sources).record(role, &done.result, verdict);
        }
        let cx = self
            .loop_context(run.user_event_id, event.metadata.causation_id)
            .await?;
        let route = run.route;
        let state = self.loop_state(&cx, route, event);
        let outcome = match &run.result {
            Ok(r) => WorkerOutcome::Completed(r),
            Err(reason) => {
                warn!(%route, loop_index = cx.this.loop_index, %reason, "worker output is a failure");
                WorkerOutcome::Failed
            }
        };
        // A run cut at the message's time limit: the persona reports the work so far and
        // the input needed (seed 002), not a failure.
        let timed_out = event
            .decode::<WorkerFailed>()
            .is_ok_and(|f| f.code == TIME_LIMIT);
        let decision = if timed_out {
            LoopDecision::LimitReached
        } else {
            decide_next(&state, &self.config.loop_policy, outcome)
        };
        info!(%route, loop_index = cx.this.loop_index, decision = decision_name(&decision), "loop decided");
        let ok = run.result.as_ref().ok();
        let logged = loop_decided(
            &cx,
            route,
            &decision,
            ok,
            run.result.as_ref().err().cloned(),
        );
        // A finished result: the persona may judge it first, once per user message.
        let may_propose = self.config.loop_policy.persona_proposals
            && !cx.proposed
            && decision == LoopDecision::Render;
        let result = match (&cx.last_result, timed_out) {
            (Some(so_far), true) => Ok(so_far),
            _ => run.result.as_ref().map_err(String::as_str),
        };
        let next = self
            .next_step(
                event,
                &cx,
                route,
                &decision,
                result,
                None,
                may_propose,
                &run.sources,
            )
            .await?;
        let logged = NewEvent::caused_by(event, STEP_LOOP, &logged, self.ctx.service)
            .map_err(HandlerError::permanent)?;
        let events: Vec<NewEvent> = std::iter::once(logged).chain(next).collect();
        self.append(&cx.turn.message.session_id, &events).await
    }
}

/// The routing log's record of a loop decision.
pub(crate) fn loop_decided(
    cx: &LoopContext,
    route: Route,
    decision: &LoopDecision,
    ok: Option<&WorkerResult>,
    failure: Option<String>,
) -> LoopDecided {
    LoopDecided {
        session_id: cx.turn.message.session_id.clone(),
        user_event_id: cx.turn.id(),
        route,
        loop_index: cx.this.loop_index,
        decision: decision_name(decision).to_owned(),
        reroute_to: match decision {
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
        failure,
        persona_proposal: None,
    }
}

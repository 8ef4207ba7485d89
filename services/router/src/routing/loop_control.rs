//! The loop controller's decision after each worker run. Workers and the persona only
//! propose; this function decides.

use std::time::Duration;

use serde::Serialize;

use super::config::LoopPolicy;
use super::proposal::ProposedStep;
use super::worker::{Risk, WorkerResult};
use ghost_shared::routing::Route;

/// Where the loop for one user message stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoopState {
    /// The route the last worker ran on.
    pub route: Route,
    /// Worker runs completed for this user message, the one just finished included.
    pub loops_done: u32,
    /// Wall time since the user message arrived.
    pub elapsed: Duration,
    /// Whether this user message was already rerouted once.
    pub rerouted: bool,
    /// The session's `local_only` flag.
    pub local_only: bool,
    /// Whether the rule dictionary found CODE evidence in the message
    /// (`!dict.evidence_for(Route::Code, text).is_empty()`); a reroute to CODE needs it.
    pub code_evidence: bool,
}

/// How the last worker run ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum WorkerOutcome<'a> {
    /// The worker returned a contract-conforming result.
    Completed(&'a WorkerResult),
    /// The worker's output broke the contract, or the worker failed.
    Failed,
}

/// What happens next for this user message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum LoopDecision {
    /// Done: the persona renders the reply from the result.
    Render,
    /// The worker failed: no further loop; the persona reports a short failure summary.
    RenderFailure,
    /// Run the worker again (bounded by the limits).
    AnotherLoop {
        /// The worker's proposed next steps, passed to the next run.
        next_actions: Vec<String>,
    },
    /// Stop and ask the user (the persona renders the result so far plus these questions;
    /// empty means "confirm before going on").
    AskUser {
        /// The worker's questions (at most 3).
        questions: Vec<String>,
    },
    /// A limit was reached: the persona reports the progress so far and what input is needed.
    LimitReached,
    /// Run the worker once more on another route (at most once per user message).
    Reroute {
        /// The new route.
        route: Route,
    },
}

/// Whether an automatic reroute to `route` may happen now: once per user message, to a
/// different route, within the time limit (a reroute is exempt from `max_loops`: the seed
/// allows one extra worker run for it), never to CODE while `local_only` is set, and to CODE
/// only with CODE evidence in the message (CODE misfires are the expensive ones). The same
/// check serves a reroute proposed by the persona ("goal not reached").
pub fn reroute_allowed(state: &LoopState, policy: &LoopPolicy, route: Route) -> bool {
    !state.rerouted
        && route != state.route
        && state.elapsed < policy.max_elapsed()
        && !(route == Route::Code && (state.local_only || !state.code_evidence))
}

fn out_of_budget(state: &LoopState, policy: &LoopPolicy) -> bool {
    state.loops_done >= policy.max_loops || state.elapsed >= policy.max_elapsed()
}

/// Decides what follows a worker run. Order:
/// 1. failure → `RenderFailure` (never another loop);
/// 2. `risk == high` → `AskUser` (escalation);
/// 3. `fit == false` with a `suggested_route` that [`reroute_allowed`] accepts → `Reroute`;
///    such a reroute blocked only by time → `LimitReached`;
/// 4. questions for the user → `AskUser`;
/// 5. low confidence (< `ask_below_confidence`) on a consequential branch (another loop is
///    wanted, or risk is medium) → `AskUser`;
/// 6. `needs_next_loop` → `AnotherLoop`, or `LimitReached` when `max_loops`/`max_seconds`
///    is used up;
/// 7. otherwise `Render`.
pub fn decide_next(
    state: &LoopState,
    policy: &LoopPolicy,
    outcome: WorkerOutcome<'_>,
) -> LoopDecision {
    let result = match outcome {
        WorkerOutcome::Completed(result) => result,
        WorkerOutcome::Failed => return LoopDecision::RenderFailure,
    };
    let ask = || LoopDecision::AskUser {
        questions: result.questions_for_user.clone(),
    };
    if result.risk == Risk::High {
        return ask();
    }
    if let (Some(false), Some(route)) = (result.fit, result.suggested_route) {
        if reroute_allowed(state, policy, route) {
            return LoopDecision::Reroute { route };
        }
        let time_only =
            !state.rerouted && route != state.route && state.elapsed >= policy.max_elapsed();
        if time_only {
            return LoopDecision::LimitReached;
        }
        tracing::debug!(%route, rerouted = state.rerouted, "reroute suggestion not taken");
    }
    if !result.questions_for_user.is_empty() {
        return ask();
    }
    let consequential = result.needs_next_loop || result.risk == Risk::Medium;
    if result.confidence < policy.ask_below_confidence && consequential {
        return ask();
    }
    if result.needs_next_loop {
        if out_of_budget(state, policy) {
            return LoopDecision::LimitReached;
        }
        return LoopDecision::AnotherLoop {
            next_actions: result.next_actions.clone(),
        };
    }
    LoopDecision::Render
}

/// Decides on the persona's proposal about a result that was about to be rendered (the
/// goal not reached, in its judgement). The persona only proposes; the limits hold:
/// `stop` → `Render`; `confirm` → `AskUser`; `continue` → `AnotherLoop` within
/// `max_loops`/`max_seconds`, else `LimitReached`; `reroute` → `Reroute` when
/// [`reroute_allowed`] accepts it (once, not to CODE without evidence or under `/local`),
/// else `Render`.
pub fn decide_on_proposal(
    state: &LoopState,
    policy: &LoopPolicy,
    step: ProposedStep,
) -> LoopDecision {
    match step {
        ProposedStep::Stop => LoopDecision::Render,
        ProposedStep::Confirm => LoopDecision::AskUser { questions: vec![] },
        ProposedStep::Continue if out_of_budget(state, policy) => LoopDecision::LimitReached,
        ProposedStep::Continue => LoopDecision::AnotherLoop {
            next_actions: vec![],
        },
        ProposedStep::Reroute(route) if reroute_allowed(state, policy, route) => {
            LoopDecision::Reroute { route }
        }
        ProposedStep::Reroute(route) => {
            tracing::debug!(%route, rerouted = state.rerouted, "persona's reroute not taken");
            LoopDecision::Render
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_persona_proposes_and_the_limits_decide() {
        let p = LoopPolicy::default();
        let s = state();
        assert_eq!(
            decide_on_proposal(&s, &p, ProposedStep::Stop),
            LoopDecision::Render
        );
        assert_eq!(
            decide_on_proposal(&s, &p, ProposedStep::Confirm),
            LoopDecision::AskUser { questions: vec![] }
        );
        assert!(matches!(
            decide_on_proposal(&s, &p, ProposedStep::Continue),
            LoopDecision::AnotherLoop { .. }
        ));
        let spent = LoopState {
            loops_done: 3,
            ..state()
        };
        assert_eq!(
            decide_on_proposal(&spent, &p, ProposedStep::Continue),
            LoopDecision::LimitReached
        );
        assert_eq!(
            decide_on_proposal(&s, &p, ProposedStep::Reroute(Route::Research)),
            LoopDecision::Reroute {
                route: Route::Research
            }
        );
        let rerouted = LoopState {
            rerouted: true,
            ..state()
        };
        assert_eq!(
            decide_on_proposal(&rerouted, &p, ProposedStep::Reroute(Route::Research)),
            LoopDecision::Render,
            "reroute at most once"
        );
        assert_eq!(
            decide_on_proposal(&s, &p, ProposedStep::Reroute(Route::Code)),
            LoopDecision::Render,
            "no CODE without evidence"
        );
    }

    fn result() -> WorkerResult {
        WorkerResult {
            result: "r".into(),
            needs_next_loop: false,
            why: String::new(),
            next_actions: vec![],
            questions_for_user: vec![],
            confidence: 0.9,
            risk: Risk::Low,
            fit: None,
            suggested_route: None,
        }
    }

    fn state() -> LoopState {
        LoopState {
            route: Route::Plan,
            loops_done: 1,
            elapsed: Duration::from_secs(5),
            rerouted: false,
            local_only: false,
            code_evidence: false,
        }
    }

    fn decide(state: &LoopState, r: &WorkerResult) -> LoopDecision {
        decide_next(state, &LoopPolicy::default(), WorkerOutcome::Completed(r))
    }

    #[test]
    fn a_finished_confident_result_renders() {
        assert_eq!(decide(&state(), &result()), LoopDecision::Render);
    }

    #[test]
    fn failure_renders_a_failure_summary_without_another_loop() {
        assert_eq!(
            decide_next(&state(), &LoopPolicy::default(), WorkerOutcome::Failed),
            LoopDecision::RenderFailure
        );
    }

    #[test]
    fn another_loop_when_wanted_and_within_limits() {
        let r = WorkerResult {
            needs_next_loop: true,
            next_actions: vec!["診断".into()],
            ..result()
        };
        assert_eq!(
            decide(&state(), &r),
            LoopDecision::AnotherLoop {
                next_actions: vec!["診断".into()]
            }
        );
    }

    #[test]
    fn loop_count_limit_stops() {
        let r = WorkerResult {
            needs_next_loop: true,
            ..result()
        };
        let s = LoopState {
            loops_done: 3,
            ..state()
        };
        assert_eq!(decide(&s, &r), LoopDecision::LimitReached);
        let s = LoopState {
            loops_done: 2,
            ..state()
        };
        assert!(matches!(decide(&s, &r), LoopDecision::AnotherLoop { .. }));
    }

    #[test]
    fn time_limit_stops() {
        let r = WorkerResult {
            needs_next_loop: true,
            ..result()
        };
        let s = LoopState {
            elapsed: Duration::from_secs(120),
            ..state()
        };
        assert_eq!(decide(&s, &r), LoopDecision::LimitReached);
        let custom = LoopPolicy {
            max_seconds: 300,
            ..LoopPolicy::default()
        };
        assert!(matches!(
            decide_next(&s, &custom, WorkerOutcome::Completed(&r)),
            LoopDecision::AnotherLoop { .. }
        ));
    }

    #[test]
    fn high_risk_asks_the_user() {
        let r = WorkerResult {
            risk: Risk::High,
            questions_for_user: vec!["本番DBで実行してよい?".into()],
            ..result()
        };
        assert_eq!(
            decide(&state(), &r),
            LoopDecision::AskUser {
                questions: vec!["本番DBで実行してよい?".into()]
            }
        );
        let silent = WorkerResult {
            risk: Risk::High,
            ..result()
        };
        assert_eq!(
            decide(&state(), &silent),
            LoopDecision::AskUser { questions: vec![] }
        );
    }

    #[test]
    fn worker_questions_ask_the_user() {
        let r = WorkerResult {
            needs_next_loop: true,
            questions_for_user: vec!["OSは?".into()],
            ..result()
        };
        assert_eq!(
            decide(&state(), &r),
            LoopDecision::AskUser {
                questions: vec!["OSは?".into()]
            }
        );
    }

    #[test]
    fn low_confidence_asks_only_on_a_consequential_branch() {
        let consequential = WorkerResult {
            confidence: 0.3,
            needs_next_loop: true,
            ..result()
        };
        assert!(matches!(
            decide(&state(), &consequential),
            LoopDecision::AskUser { .. }
        ));
        let medium = WorkerResult {
            confidence: 0.3,
            risk: Risk::Medium,
            ..result()
        };
        assert!(matches!(
            decide(&state(), &medium),
            LoopDecision::AskUser { .. }
        ));
        let harmless = WorkerResult {
            confidence: 0.3,
            ..result()
        };
        assert_eq!(decide(&state(), &harmless), LoopDecision::Render);
    }

    #[test]
    fn reroute_on_fit_false_with_a_suggestion_once() {
        let r = WorkerResult {
            fit: Some(false),
            suggested_route: Some(Route::Ops),
            ..result()
        };
        assert_eq!(
            decide(&state(), &r),
            LoopDecision::Reroute { route: Route::Ops }
        );
        let again = LoopState {
            rerouted: true,
            route: Route::Ops,
            ..state()
        };
        let r2 = WorkerResult {
            fit: Some(false),
            suggested_route: Some(Route::Research),
            ..result()
        };
        assert_eq!(decide(&again, &r2), LoopDecision::Render, "at most once");
    }

    #[test]
    fn reroute_needs_both_fit_false_and_a_suggestion() {
        let no_suggestion = WorkerResult {
            fit: Some(false),
            ..result()
        };
        assert_eq!(decide(&state(), &no_suggestion), LoopDecision::Render);
        let fits = WorkerResult {
            fit: Some(true),
            suggested_route: Some(Route::Ops),
            ..result()
        };
        assert_eq!(decide(&state(), &fits), LoopDecision::Render);
        let unreported = WorkerResult {
            suggested_route: Some(Route::Ops),
            ..result()
        };
        assert_eq!(decide(&state(), &unreported), LoopDecision::Render);
        let same = WorkerResult {
            fit: Some(false),
            suggested_route: Some(Route::Plan),
            ..result()
        };
        assert_eq!(decide(&state(), &same), LoopDecision::Render);
    }

    #[test]
    fn reroute_is_exempt_from_the_loop_count_but_not_from_time() {
        let r = WorkerResult {
            fit: Some(false),
            suggested_route: Some(Route::Ops),
            ..result()
        };
        let counted_out = LoopState {
            loops_done: 3,
            ..state()
        };
        assert_eq!(
            decide(&counted_out, &r),
            LoopDecision::Reroute { route: Route::Ops }
        );
        let timed_out = LoopState {
            elapsed: Duration::from_secs(121),
            ..state()
        };
        assert_eq!(decide(&timed_out, &r), LoopDecision::LimitReached);
    }

    #[test]
    fn reroute_to_code_needs_evidence_and_no_local_only() {
        let r = WorkerResult {
            fit: Some(false),
            suggested_route: Some(Route::Code),
            ..result()
        };
        assert_eq!(decide(&state(), &r), LoopDecision::Render);
        let with_evidence = LoopState {
            code_evidence: true,
            ..state()
        };
        assert_eq!(
            decide(&with_evidence, &r),
            LoopDecision::Reroute { route: Route::Code }
        );
        let local = LoopState {
            local_only: true,
            ..with_evidence
        };
        assert_eq!(decide(&local, &r), LoopDecision::Render);
    }

    #[test]
    fn high_risk_wins_over_reroute() {
        let r = WorkerResult {
            risk: Risk::High,
            fit: Some(false),
            suggested_route: Some(Route::Ops),
            ..result()
        };
        assert!(matches!(decide(&state(), &r), LoopDecision::AskUser { .. }));
    }
}

//! The texts the router hands on: worker tasks and the work result the persona conveys.
//! A task for the cloud (CODE) is masked as a whole, whatever it carries.

use serde_json::{json, Value};

use crate::routing::{Route, WorkerResult};
use ghost_shared::events::ConfirmationPending;
use ghost_shared::llm::Fence;
use ghost_shared::masking::mask_secrets;

/// Masks the task when it goes to the cloud.
fn for_route(route: Route, task: String) -> String {
    if route.uses_cloud() {
        mask_secrets(&task).into_owned()
    } else {
        task
    }
}

/// The first run's task: the request, the conversation context and (ANALYZE) earlier
/// results, each a data block behind the task's own boundary ([`Fence`]).
pub fn initial_task(route: Route, text: &str, context: &str, earlier: &[Value]) -> String {
    let fence = Fence::new();
    let mut task = format!("[request]\n{}\n", fence.block("REQUEST", text.trim()));
    if !context.trim().is_empty() {
        task.push_str("\n[the conversation]\n");
        task.push_str(&fence.block("CONVERSATION", context.trim_end()));
        task.push('\n');
    }
    if !earlier.is_empty() {
        task.push_str("\n[earlier analysis results of this conversation, oldest first]\n");
        let lines: Vec<String> = earlier.iter().map(ToString::to_string).collect();
        task.push_str(&fence.block("EARLIER_RESULTS", &lines.join("\n")));
        task.push('\n');
    }
    for_route(route, task)
}

/// The next loop's task: the previous task, what the last run produced and what it proposed
/// (a worker's words: data blocks too).
pub fn next_loop_task(route: Route, previous: &str, result: &WorkerResult) -> String {
    let fence = Fence::new();
    let mut task = previous.trim_end().to_owned();
    task.push_str("\n\n[previous run's result]\n");
    task.push_str(&fence.block("PREVIOUS_RESULT", result.result.trim()));
    if !result.why.trim().is_empty() {
        task.push_str("\n[why another run is needed]\n");
        task.push_str(&fence.block("WHY", result.why.trim()));
    }
    if !result.next_actions.is_empty() {
        task.push_str("\n[do next]\n");
        let actions: Vec<String> = result
            .next_actions
            .iter()
            .map(|a| format!("- {a}"))
            .collect();
        task.push_str(&fence.block("NEXT_ACTIONS", &actions.join("\n")));
        task.push('\n');
    }
    for_route(route, task)
}

/// The reroute's task: the first task, with a note that another route did not fit.
pub fn reroute_task(route: Route, first: &str, from: Route, why: &str) -> String {
    let mut task = first.trim_end().to_owned();
    task.push_str(&format!(
        "\n\n[note] A first attempt on route {from} did not fit this request"
    ));
    if !why.trim().is_empty() {
        task.push_str(":\n");
        task.push_str(&Fence::new().block("WHY", why.trim()));
    }
    task.push('\n');
    for_route(route, task)
}

/// The task of paused work resumed by the user's answer: its last task, the work so far,
/// what was asked and the answer (data blocks, masked as a whole for the cloud).
pub fn resumed_task(paused: &ConfirmationPending, answer: &str) -> String {
    let fence = Fence::new();
    let mut task = paused.task.trim_end().to_owned();
    task.push_str("\n\n[the work so far, paused to ask the user]\n");
    task.push_str(&fence.block("WORK_SO_FAR", paused.result.trim()));
    if !paused.questions.is_empty() {
        task.push_str("\n[what the user was asked]\n");
        task.push_str(&fence.block("QUESTIONS", &paused.questions.join("\n")));
    }
    task.push_str("\n[the user's answer: go on from the work so far with it]\n");
    task.push_str(&fence.block("ANSWER", answer.trim()));
    task.push('\n');
    for_route(paused.route, task)
}

/// What the persona conveys: the status, the route, the result and what is needed next.
pub fn work_result(status: &str, route: Route, loops: u32, result: Option<&WorkerResult>) -> Value {
    let mut v = json!({ "status": status, "route": route.as_str(), "loops": loops });
    if let Some(r) = result {
        v["result"] = json!(r.result);
        if !r.questions_for_user.is_empty() {
            v["questions_for_user"] = json!(r.questions_for_user);
        }
        if !r.next_actions.is_empty() {
            v["next_actions"] = json!(r.next_actions);
        }
        if !r.why.trim().is_empty() {
            v["why"] = json!(r.why);
        }
        v["risk"] = json!(r.risk);
    }
    v
}

/// The short failure summary the persona tells the user (no internals, no raw output).
/// RESEARCH without a search endpoint has its own status: nothing can be looked up.
pub fn failure_result(route: Route, loops: u32, reason: &str) -> Value {
    if reason == "research_unavailable" {
        return json!({ "status": "research_unavailable", "route": route.as_str(), "loops": loops });
    }
    json!({
        "status": "failed",
        "route": route.as_str(),
        "loops": loops,
        "failure": format!("the work could not be completed ({reason}); nothing further was attempted"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cloud_tasks_are_masked_local_ones_are_not() {
        let text = "api_key=sk-abcdefghijklmnop1234567890 を使うコードを直して";
        let code = initial_task(Route::Code, text, "", &[]);
        assert!(!code.contains("sk-abcdefghijklmnop1234567890"), "{code}");
        let plan = initial_task(Route::Plan, text, "", &[]);
        assert!(plan.contains("sk-abcdefghijklmnop1234567890"));
    }
}

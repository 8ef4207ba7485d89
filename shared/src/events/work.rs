//! The work a turn's route asks for (seed 002): worker and coder runs and their outcomes,
//! the classifier, the loop controller's decisions, the persona's proposals, confirmations
//! a question to the user leaves pending, and the session summaries of short memory.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::envelope::EventPayload;
use crate::routing::{DecisionOrigin, Route};

/// The cloud coder's model answered one CODE request, using these tokens: what the day's
/// cap (`coder.daily_token_cap`) counts, summed per UTC day of `recorded_at`. Stored in the
/// same append as the request's `WorkerCompleted`, its id derived from the
/// `WorkRequested`, so a redelivered request is counted once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CloudTokensUsed {
    /// The conversation.
    pub session_id: String,
    /// The user message being served.
    pub user_event_id: Uuid,
    /// The cloud model called.
    pub model: String,
    /// Prompt (input) tokens.
    pub prompt_tokens: u64,
    /// Completion (output) tokens.
    pub completion_tokens: u64,
    /// Whether the server reported the counts; when it did not, they are estimated from
    /// the text's size, on the high side (a cap must not be passed for want of a count).
    pub reported: bool,
}

impl EventPayload for CloudTokensUsed {
    const EVENT_TYPE: &'static str = "CloudTokensUsed";
}

/// The router asks a worker (local model) or the coder (cloud) for one piece of work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkRequested {
    /// The conversation.
    pub session_id: String,
    /// The user message being served.
    pub user_event_id: Uuid,
    /// `ANALYZE`, `PLAN`, `OPS`, `RESEARCH`, `CODE`.
    pub route: Route,
    /// What to do (already masked where it goes to the cloud).
    pub task: String,
    /// Loop number within the user message (1-based).
    pub loop_index: u32,
    /// The session's `local_only` flag: the coder refuses work while it is set.
    #[serde(default)]
    pub local_only: bool,
    /// Whether this run is the message's one automatic reroute.
    #[serde(default)]
    pub reroute: bool,
    /// When the message's time (`loop.max_seconds`) runs out: the run's model call is cut
    /// there and the run fails with [`TIME_LIMIT`] (None in requests stored before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<chrono::DateTime<chrono::Utc>>,
}

impl EventPayload for WorkRequested {
    const EVENT_TYPE: &'static str = "WorkRequested";
}

/// `WorkerFailed.code` of a run cut at its message's time limit: the loop controller
/// reports the work so far instead of a failure.
pub const TIME_LIMIT: &str = "time_limit";

impl WorkRequested {
    /// Runs `work` until the request's deadline, on the system's clock (`now`): None when the
    /// time ran out first (or had already). Without a deadline it runs to its end.
    pub async fn within_deadline<F: std::future::Future>(
        &self,
        now: chrono::DateTime<chrono::Utc>,
        work: F,
    ) -> Option<F::Output> {
        let Some(deadline) = self.deadline else {
            return Some(work.await);
        };
        let left = (deadline - now).to_std().ok()?;
        tokio::time::timeout(left, work).await.ok()
    }
}

/// A worker finished a piece of work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerCompleted {
    /// The conversation.
    pub session_id: String,
    /// The user message being served.
    pub user_event_id: Uuid,
    /// The route worked on.
    pub route: Route,
    /// The worker's output as returned by the model.
    pub result: String,
    /// RESEARCH: the source URLs the search returned and the worker was given (the only
    /// sources a reply may cite).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
}

impl EventPayload for WorkerCompleted {
    const EVENT_TYPE: &'static str = "WorkerCompleted";
}

/// A worker could not do the work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerFailed {
    /// The conversation.
    pub session_id: String,
    /// The user message being served.
    pub user_event_id: Uuid,
    /// The route worked on.
    pub route: Route,
    /// Stable code.
    pub code: String,
    /// Short explanation.
    pub message: String,
}

impl EventPayload for WorkerFailed {
    const EVENT_TYPE: &'static str = "WorkerFailed";
}

// ---------------------------------------------------------------------------------------
// Routing (seed 002): classifier / Kuro delegation, loop control, short memory.
// ---------------------------------------------------------------------------------------

/// The router asks for a structured route decision for one user message: the classifier
/// (router entry mode) or Kuro's delegation decision (kuro entry mode). At most one per user
/// message: its id derives from the message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassifyRequested {
    /// The conversation.
    pub session_id: String,
    /// The user message to route.
    pub user_event_id: Uuid,
    /// `classifier` or `kuro`.
    pub mode: DecisionOrigin,
    /// The text to route (the message without its leading commands).
    pub text: String,
    /// Conversation context for the decision (summary and last turns), oldest first.
    #[serde(default)]
    pub context: String,
}

impl EventPayload for ClassifyRequested {
    const EVENT_TYPE: &'static str = "ClassifyRequested";
}

/// The worker is about to call the model for a `ClassifyRequested`: a redelivery that finds
/// this marker without a reply does not call again (the classifier is called at most once).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassifierCallStarted {
    /// The conversation.
    pub session_id: String,
    /// The user message being routed.
    pub user_event_id: Uuid,
}

impl EventPayload for ClassifierCallStarted {
    const EVENT_TYPE: &'static str = "ClassifierCallStarted";
}

/// The coder is about to call the cloud for a CODE `WorkRequested`: a redelivery that finds
/// this marker without an outcome does not call again (a paid call, at most once per request).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoderCallStarted {
    /// The conversation.
    pub session_id: String,
    /// The user message the work is for.
    pub user_event_id: Uuid,
    /// The request's round of the work loop.
    pub loop_index: u32,
}

impl EventPayload for CoderCallStarted {
    const EVENT_TYPE: &'static str = "CoderCallStarted";
}

/// The structured route decision's raw reply (validated by the router), or why the call
/// failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassifierReplied {
    /// The conversation.
    pub session_id: String,
    /// The user message being routed.
    pub user_event_id: Uuid,
    /// `classifier` or `kuro`.
    pub mode: DecisionOrigin,
    /// The model's reply as returned (validated by the router, never trusted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    /// Why there is no reply (timeout, transport, interrupted call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl EventPayload for ClassifierReplied {
    const EVENT_TYPE: &'static str = "ClassifierReplied";
}

/// The loop controller stopped to ask the user (seed 002): the work so far waits for their
/// next message in the conversation, which resumes it when it answers the questions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfirmationPending {
    /// The conversation.
    pub session_id: String,
    /// The user message whose work is paused.
    pub user_event_id: Uuid,
    /// The route the work ran on.
    pub route: Route,
    /// The last run's task.
    pub task: String,
    /// The work so far (the last run's result).
    pub result: String,
    /// What the user is asked (empty: "confirm before going on").
    #[serde(default)]
    pub questions: Vec<String>,
}

impl EventPayload for ConfirmationPending {
    const EVENT_TYPE: &'static str = "ConfirmationPending";
}

/// Asks the worker model whether a message answers a pending confirmation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfirmationCheckRequested {
    /// The conversation.
    pub session_id: String,
    /// The new user message.
    pub user_event_id: Uuid,
    /// The `ConfirmationPending` event.
    pub pending_event_id: Uuid,
    /// The questions asked.
    pub questions: Vec<String>,
    /// The paused work's result (what the questions are about).
    pub result: String,
    /// The message's text.
    pub text: String,
}

impl EventPayload for ConfirmationCheckRequested {
    const EVENT_TYPE: &'static str = "ConfirmationCheckRequested";
}

/// The model's raw judgement (validated by the router), or why the call failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfirmationChecked {
    /// The conversation.
    pub session_id: String,
    /// The new user message.
    pub user_event_id: Uuid,
    /// The `ConfirmationPending` event.
    pub pending_event_id: Uuid,
    /// The model's reply as returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    /// Why there is no reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl EventPayload for ConfirmationChecked {
    const EVENT_TYPE: &'static str = "ConfirmationChecked";
}

/// How a pending confirmation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConfirmationOutcome {
    /// The message answered: the work resumed with it.
    Resumed,
    /// The message was about something else (or a route command): the work was dropped.
    Dropped,
}

/// The user's next message decided a pending confirmation (logged; the pending work is
/// never resumed twice).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfirmationResolved {
    /// The conversation.
    pub session_id: String,
    /// The message that decided it.
    pub user_event_id: Uuid,
    /// The `ConfirmationPending` event.
    pub pending_event_id: Uuid,
    /// Resumed or dropped.
    pub outcome: ConfirmationOutcome,
    /// Why (the model's reason, a route command, or why its answer was unusable).
    pub reason: String,
}

impl EventPayload for ConfirmationResolved {
    const EVENT_TYPE: &'static str = "ConfirmationResolved";
}

/// The loop controller's decision after one worker run (the routing log reads it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoopDecided {
    /// The conversation.
    pub session_id: String,
    /// The user message being served.
    pub user_event_id: Uuid,
    /// The route the worker ran on.
    pub route: Route,
    /// The run's loop number (1-based).
    pub loop_index: u32,
    /// `render`, `render_failure`, `another_loop`, `ask_user`, `limit_reached`, `reroute`.
    pub decision: String,
    /// The new route of a reroute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reroute_to: Option<Route>,
    /// The worker's `needs_next_loop`, when its output kept the contract.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs_next_loop: Option<bool>,
    /// The worker's `risk`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risk: Option<String>,
    /// The worker's `fit`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fit: Option<bool>,
    /// The worker's `confidence`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// Why the worker's output was a failure (contract violation or worker error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// The persona's proposal this decision answers (`continue: reason`, …), or why it
    /// was ignored (`invalid: …`); absent for decisions after a worker run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persona_proposal: Option<String>,
}

/// The persona's judgement of a work result before replying (seed 002: the conversation
/// model may propose to continue, stop, ask the user or reroute; the router decides). The
/// raw model output is validated by the router, like the classifier's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PersonaProposed {
    /// The conversation.
    pub session_id: String,
    /// The user message being served.
    pub user_event_id: Uuid,
    /// The [`JudgeRequested`] the proposal answers (a `RenderRequested` in proposals
    /// stored before judging had its own type).
    pub render_event_id: Uuid,
    /// The model's output as returned (cut, secrets masked); empty when the call failed.
    pub raw: String,
    /// Why the call produced nothing (timeout, transport, model error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_failed: Option<String>,
}

impl EventPayload for PersonaProposed {
    const EVENT_TYPE: &'static str = "PersonaProposed";
}

impl EventPayload for LoopDecided {
    const EVENT_TYPE: &'static str = "LoopDecided";
}

/// The router (or the persona, after an autonomy message) asks the worker to refresh a
/// session's short-memory summary (stream `memory-<session>`, so it never keeps a
/// conversation's turn open).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummarizeRequested {
    /// The conversation.
    pub session_id: String,
    /// The line the summary runs through: the user message whose arrival made the history
    /// long enough, or the persona's autonomy message.
    pub user_event_id: Uuid,
    /// User messages in the session so far (that one included).
    pub user_turns: u32,
}

impl EventPayload for SummarizeRequested {
    const EVENT_TYPE: &'static str = "SummarizeRequested";
}

/// A session's short-memory summary, written by the worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionSummarized {
    /// The conversation.
    pub session_id: String,
    /// The summary (short; the prompts use it plus the last turns).
    pub summary: String,
    /// User messages the summary covers.
    pub user_turns: u32,
    /// The user message it was made at (it covers the session up to and including it);
    /// the next summary folds in what came after. None in summaries stored before it
    /// existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub through_event_id: Option<Uuid>,
}

impl EventPayload for SessionSummarized {
    const EVENT_TYPE: &'static str = "SessionSummarized";
}

/// Stream name of a session's short memory.
pub fn memory_stream(session_id: &str) -> String {
    format!("memory-{session_id}")
}

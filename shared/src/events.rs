//! The catalogue of event payloads services exchange.
//!
//! Payloads live here, once, because producers and consumers sit in different crates.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::autonomy::events::AutonomyMessageRendered;
use crate::envelope::EventPayload;
use crate::routing::{DecisionOrigin, Notice, Route, RouteSource};

/// The channel a conversation arrived on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Channel {
    /// `POST /api/chat`.
    Http,
    /// LINE Messaging API webhook.
    Line,
    /// Slack Events API.
    Slack,
    /// Telegram Bot API webhook.
    Telegram,
}

impl Channel {
    /// The lower-case name used in logs and the `source` column.
    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Http => "http",
            Channel::Line => "line",
            Channel::Slack => "slack",
            Channel::Telegram => "telegram",
        }
    }
}

/// A person said something to the persona. Starts a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserMessageReceived {
    /// The conversation.
    pub session_id: String,
    /// Where it came from.
    pub channel: Channel,
    /// Who said it (platform user id, or `user` for HTTP).
    pub speaker: String,
    /// What they said.
    pub text: String,
    /// The platform's id of the delivery, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    /// Where and how to answer on LINE or Slack (absent for HTTP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_to: Option<ReplyTarget>,
    /// An image the user sent, kept in the media store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<ImageAttachment>,
}

impl EventPayload for UserMessageReceived {
    const EVENT_TYPE: &'static str = "UserMessageReceived";
}

/// The router chose the work's route for this user message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RouteDecided {
    /// The conversation.
    pub session_id: String,
    /// The user message this decides for.
    pub user_event_id: Uuid,
    /// `CHAT`, `CODE`, `ANALYZE`, `PLAN`, `OPS` or `RESEARCH`.
    pub route: Route,
    /// How it was decided (`explicit`, `rule`, `classifier`, `default`, ...).
    pub source: RouteSource,
    /// The session's `local_only` flag after this message (set by `/local`, cleared by `/cloud`).
    #[serde(default)]
    pub local_only: bool,
    /// Whether `route` is the message's primary route (false for a bare `/local` or `/cloud`,
    /// which leave the session's last primary route as it was).
    #[serde(default = "primary_default")]
    pub primary: bool,
    /// The one-line declaration shown before the reply (only when the primary route changed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declaration: Option<String>,
    /// How the message entered routing (`router`, or `kuro` logged as `line_forced_chat`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
    /// The routing decision's details for the routing log: evidence, proposed route,
    /// confidence, fallback reason, notice (masked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<serde_json::Value>,
    /// The previous message's route, marked as misclassified by this message (the user's
    /// negation or an explicit command right after an automatically routed answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corrects: Option<Misclassification>,
    /// User messages in the session up to and including this one: the next message's
    /// router counts on from here rather than counting the whole session. Absent on
    /// decisions stored before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_turns: Option<u32>,
}

/// A previous routing decision the user corrected (seed 002 誤分類検知).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Misclassification {
    /// The corrected user message.
    pub user_event_id: Uuid,
    /// The route it was given.
    pub route: Route,
    /// How it was decided then (`rule`, `classifier`, …).
    pub source: RouteSource,
    /// `negation` (the classifier read a rejection) or `explicit` (a route command).
    pub signal: String,
}

fn primary_default() -> bool {
    true
}

impl EventPayload for RouteDecided {
    const EVENT_TYPE: &'static str = "RouteDecided";
}

/// The persona should write the reply for a user message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RenderRequested {
    /// The conversation.
    pub session_id: String,
    /// Where the reply goes.
    pub channel: Channel,
    /// Who spoke (the user message's speaker): the person whose memory recall reads.
    /// None in requests stored before memory was per person: the default person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub person: Option<String>,
    /// The user message being answered.
    pub user_event_id: Uuid,
    /// Its text.
    pub user_text: String,
    /// The route's outcome the persona should convey, if any work ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_result: Option<serde_json::Value>,
    /// The one-line declaration to put before the reply (route changed), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declaration: Option<String>,
    /// What the persona must mention briefly (`cloud_required`, `local_on`, `local_off`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice: Option<Notice>,
    /// The session's short-memory summary, when the history has grown past its limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_summary: Option<String>,
    /// High-risk secret categories the message held that were masked before work went to
    /// the cloud; the persona says so.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub withheld_from_cloud: Vec<String>,
    /// How many of the user messages before this one the reply's history reaches back to
    /// (those since the short-memory summary, which covers the rest:
    /// [`crate::short_memory`]). None in requests stored before it existed: the last
    /// `persona.history_turns` lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_user_messages: Option<u32>,
}

impl EventPayload for RenderRequested {
    const EVENT_TYPE: &'static str = "RenderRequested";
}

/// The persona should judge a finished work result before anyone replies (seed 002's
/// proposal): does it reach the user's goal, or should another run or route follow? It
/// answers with [`PersonaProposed`]; the router decides, and only then asks for the reply
/// ([`RenderRequested`]). Nothing reaches the user. (Requests stored before judging had a
/// type of its own were `RenderRequested` with `may_propose`; they are now replied to.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeRequested {
    /// The conversation.
    pub session_id: String,
    /// Where the reply will go (and a failure, when judging is given up on).
    pub channel: Channel,
    /// The user message the work is for.
    pub user_event_id: Uuid,
    /// Its text.
    pub user_text: String,
    /// The finished run's result, as a reply's `work_result` carries it.
    pub work_result: serde_json::Value,
}

impl EventPayload for JudgeRequested {
    const EVENT_TYPE: &'static str = "JudgeRequested";
}

/// The persona's reply, complete. Ends a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AssistantReplied {
    /// The conversation.
    pub session_id: String,
    /// Where the reply goes.
    pub channel: Channel,
    /// The user message answered.
    pub user_event_id: Uuid,
    /// The persona speaking (character id).
    pub speaker: String,
    /// The words the user sees.
    pub text: String,
    /// The persona's own reaction from the reply's affect trailer, when it gave a valid one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affect: Option<crate::affect::Affect>,
    /// Trailer fields that were rejected (`field: reason`), for the record.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub affect_rejected: Vec<String>,
}

impl EventPayload for AssistantReplied {
    const EVENT_TYPE: &'static str = "AssistantReplied";
}

crate::event_enum! {
    /// Something the persona said to people: a reply, or a message of its own. Reflection
    /// and the write plan take both.
    pub enum PersonaUtterance {
        AssistantReplied,
        AutonomyMessageRendered,
    }
}

/// The persona could not write the reply. Ends a turn; nothing half-written is kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RenderFailed {
    /// The conversation.
    pub session_id: String,
    /// Where the reply would have gone.
    pub channel: Channel,
    /// The user message that went unanswered.
    pub user_event_id: Uuid,
    /// A stable machine-readable code (`llm_timeout`, `llm_http`, `llm_stream`, ...).
    pub code: String,
    /// A short human-readable explanation (never secrets).
    pub message: String,
}

impl EventPayload for RenderFailed {
    const EVENT_TYPE: &'static str = "RenderFailed";
}

/// The turn watchdog closed a turn nobody answered within `routing.turn_timeout_secs`
/// (a worker, the coder or the persona down or hung). Ends a turn; its id is the turn's
/// outcome id, so a reply that comes later is refused by the store and never delivered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnTimedOut {
    /// The conversation.
    pub session_id: String,
    /// Where the notice goes.
    pub channel: Channel,
    /// The user message that went unanswered.
    pub user_event_id: Uuid,
    /// The limit that passed, in seconds.
    pub limit_secs: u64,
    /// The short notice the user gets, in the language of their message.
    pub notice: String,
}

impl EventPayload for TurnTimedOut {
    const EVENT_TYPE: &'static str = "TurnTimedOut";
}

/// The event types that end a turn in its session.
pub const TURN_ENDING_TYPES: [&str; 4] = [
    AssistantReplied::EVENT_TYPE,
    RenderFailed::EVENT_TYPE,
    TurnTimedOut::EVENT_TYPE,
    // A forgotten person's turn, redacted whole: nothing of it runs any more.
    crate::memory::forget_person::REDACTED,
];

/// Whether an event type ends a turn in its session.
pub fn ends_turn(event_type: &str) -> bool {
    TURN_ENDING_TYPES.contains(&event_type)
}

/// Whether a user's text is Japanese (contains kana or kanji): the notices Ghost writes
/// without the persona follow it (Japanese, else English).
fn is_japanese(user_text: &str) -> bool {
    user_text.chars().any(|c| {
        matches!(c as u32,
            0x3040..=0x30FF     // hiragana, katakana
            | 0x3400..=0x4DBF   // CJK extension A
            | 0x4E00..=0x9FFF   // CJK unified ideographs
            | 0xFF66..=0xFF9F) // half-width katakana
    })
}

/// The notice a user gets when their turn timed out, in the language of their message
/// (Japanese when it contains kana or kanji, English otherwise).
pub fn timed_out_notice(user_text: &str) -> &'static str {
    if is_japanese(user_text) {
        "ごめんなさい、時間内に返事を用意できませんでした。もう一度送ってください。"
    } else {
        "Sorry, I could not answer in time. Please send your message again."
    }
}

/// The `RenderFailed` code of a CODE turn refused over the day's cloud token cap: its
/// message is [`token_cap_notice`], which every channel delivers as it is.
pub const DAILY_TOKEN_CAP: &str = "daily_token_cap";

/// The notice a user gets when a CODE turn is refused because the day's cloud token cap
/// (`coder.daily_token_cap`) is used up, in the language of their message.
pub fn token_cap_notice(user_text: &str) -> &'static str {
    if is_japanese(user_text) {
        "ごめんなさい、今日のコード作業の上限に達したので、いまは引き受けられません。上限は毎日 0:00 (UTC、日本時間 9:00) に戻ります。"
    } else {
        "Sorry, today's limit for coding work is used up, so I cannot take this on now. It resets at 00:00 UTC."
    }
}

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
    /// Runs `work` until the request's deadline: None when the time ran out first (or had
    /// already). Without a deadline it runs to its end.
    pub async fn within_deadline<F: std::future::Future>(&self, work: F) -> Option<F::Output> {
        let Some(deadline) = self.deadline else {
            return Some(work.await);
        };
        let left = (deadline - chrono::Utc::now()).to_std().ok()?;
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

/// The worker reflected on a reply that came without a usable affect trailer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AffectReflected {
    /// The persona (character id) whose reaction this is.
    pub persona: String,
    /// The reply (episode) reflected on.
    pub episode_event_id: Uuid,
    /// When the episode happened (Unix seconds): the reply's time, not the reflection's.
    pub at: f64,
    /// The reaction.
    pub affect: crate::affect::Affect,
}

impl EventPayload for AffectReflected {
    const EVENT_TYPE: &'static str = "AffectReflected";
}

/// Stream name of one persona's own life (mood, interest, autonomy).
pub fn persona_stream(persona: &str) -> String {
    format!("persona-{persona}")
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

/// The router asks the worker to refresh a session's short-memory summary (stream
/// `memory-<session>`, so it never keeps a conversation's turn open).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummarizeRequested {
    /// The conversation.
    pub session_id: String,
    /// The user message whose arrival made the history long enough.
    pub user_event_id: Uuid,
    /// User messages in the session so far (this one included).
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

// ---------------------------------------------------------------------------------------------
// The multi-character stage (seeds 000 and 003). Every event lives in the stream
// `stage-<stage_id>`; each step's id derives from the event that caused it, so a redelivered
// or restarted step appends nothing new.
// ---------------------------------------------------------------------------------------------

/// Stream name of one stage.
pub fn stage_stream(stage_id: &str) -> String {
    format!("stage-{stage_id}")
}

/// A person said something on the stage: starts a run of character turns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageUserInput {
    /// The stage.
    pub stage_id: String,
    /// What they said.
    pub text: String,
}

impl EventPayload for StageUserInput {
    const EVENT_TYPE: &'static str = "StageUserInput";
}

/// A character is to speak (the state graph's `prepare_context` entry for one turn).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageTurnRequested {
    /// The stage.
    pub stage_id: String,
    /// The `StageUserInput` this run answers.
    pub input_id: Uuid,
    /// 0-based turn within the run (capped by `stage.auto_loops`).
    pub turn_index: u32,
    /// Internal id of the character to speak.
    pub speaker: String,
}

impl EventPayload for StageTurnRequested {
    const EVENT_TYPE: &'static str = "StageTurnRequested";
}

/// A character spoke (after post-processing: `<think>`, tags and greetings removed, shortened).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageSpoke {
    /// The stage.
    pub stage_id: String,
    /// The run's `StageUserInput`.
    pub input_id: Uuid,
    /// 0-based turn within the run.
    pub turn_index: u32,
    /// Internal id of the speaker.
    pub speaker: String,
    /// The speaker's display name.
    pub display_name: String,
    /// What the watchers see.
    pub text: String,
    /// The model's reply as returned (kept for the nomination audit).
    pub raw_text: String,
}

impl EventPayload for StageSpoke {
    const EVENT_TYPE: &'static str = "StageSpoke";
}

/// A character's model call failed or timed out: nothing was said, the fallback path chose next.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageTurnFailed {
    /// The stage.
    pub stage_id: String,
    /// The run's `StageUserInput`.
    pub input_id: Uuid,
    /// 0-based turn within the run.
    pub turn_index: u32,
    /// Who was to speak.
    pub speaker: String,
    /// Stable code (`llm_timeout`, `llm_http`, ...).
    pub code: String,
    /// Short explanation.
    pub message: String,
}

impl EventPayload for StageTurnFailed {
    const EVENT_TYPE: &'static str = "StageTurnFailed";
}

/// Why a next speaker was (or was not) chosen (seed 000).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NextSpeakerReason {
    /// The tag named a registered character by id, display name, short name or synonym.
    Tag,
    /// The tag named a registered character only approximately (ratio ≥ threshold).
    Fuzzy,
    /// No usable tag: next in registry order after the current speaker.
    RoundRobin,
    /// No usable tag: a random other character.
    Random,
    /// Nobody else can speak; the autonomous loop ends.
    None,
}

impl NextSpeakerReason {
    /// The wire name (`tag`, `fuzzy`, `round_robin`, `random`, `none`).
    pub fn as_str(self) -> &'static str {
        match self {
            NextSpeakerReason::Tag => "tag",
            NextSpeakerReason::Fuzzy => "fuzzy",
            NextSpeakerReason::RoundRobin => "round_robin",
            NextSpeakerReason::Random => "random",
            NextSpeakerReason::None => "none",
        }
    }
}

impl std::fmt::Display for NextSpeakerReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a stage run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StageEndReason {
    /// `stage.auto_loops` turns were taken.
    Cap,
    /// Nobody else can speak.
    None,
    /// A client asked the run to stop.
    Stopped,
    /// A turn was given up on.
    Error,
}

impl StageEndReason {
    /// The wire name (`cap`, `none`, `stopped`, `error`).
    pub fn as_str(self) -> &'static str {
        match self {
            StageEndReason::Cap => "cap",
            StageEndReason::None => "none",
            StageEndReason::Stopped => "stopped",
            StageEndReason::Error => "error",
        }
    }
}

impl std::fmt::Display for StageEndReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The next-speaker decision after a turn (seed 000's `Resolved`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NextSpeakerChosen {
    /// The stage.
    pub stage_id: String,
    /// The run's `StageUserInput`.
    pub input_id: Uuid,
    /// The turn just finished.
    pub turn_index: u32,
    /// Who just spoke (or failed to).
    pub current: String,
    /// Who is nominated; `None` when nobody else can speak.
    pub next_id: Option<String>,
    /// `tag`, `fuzzy`, `round_robin`, `random` or `none`.
    pub reason: NextSpeakerReason,
    /// The raw name inside the tag.
    pub extracted: String,
    /// The name after normalization.
    pub normalized: String,
}

impl EventPayload for NextSpeakerChosen {
    const EVENT_TYPE: &'static str = "NextSpeakerChosen";
}

/// The run is over.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageEnded {
    /// The stage.
    pub stage_id: String,
    /// The run's `StageUserInput`.
    pub input_id: Uuid,
    /// Turns taken.
    pub turns: u32,
    /// `cap` (auto_loops reached), `none` (nobody to speak), `stopped` (a client asked) or
    /// `error` (a turn was given up on).
    pub reason: StageEndReason,
}

impl EventPayload for StageEnded {
    const EVENT_TYPE: &'static str = "StageEnded";
}

/// A client asked the running stage to stop after the current turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageStopRequested {
    /// The stage.
    pub stage_id: String,
}

impl EventPayload for StageStopRequested {
    const EVENT_TYPE: &'static str = "StageStopRequested";
}

/// The run's summary went into memory (seed 003 `persist_memory`). Ends the run's steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageMemorySaved {
    /// The stage.
    pub stage_id: String,
    /// The run's `StageUserInput`.
    pub input_id: Uuid,
    /// Who spoke, in order.
    pub speakers: Vec<String>,
    /// The summary text.
    pub summary: String,
}

impl EventPayload for StageMemorySaved {
    const EVENT_TYPE: &'static str = "StageMemorySaved";
}

// ---------- channels (LINE, Slack): reply context and delivery outcomes ----------

/// Where a LINE or Slack reply goes: everything delivery needs, carried with the message so
/// it survives restarts and needs no side table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "platform", rename_all = "snake_case")]
pub enum ReplyTarget {
    /// LINE: reply token while fresh, else push.
    Line {
        /// Single-use reply token from the webhook event.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reply_token: Option<String>,
        /// When the gateway received the webhook (reply-token age is measured from here).
        received_at: chrono::DateTime<chrono::Utc>,
        /// User, group or room id to push to.
        push_to: String,
        /// LINE marked the event as a redelivery (its token is likely stale).
        #[serde(default)]
        is_redelivery: bool,
    },
    /// Slack: `chat.postMessage` in the thread.
    Slack {
        /// Channel id.
        channel: String,
        /// The thread's parent message.
        thread_ts: String,
    },
    /// Telegram: `sendMessage` to the chat (in its forum topic, quoting the message in groups).
    Telegram {
        /// The chat's id.
        chat_id: i64,
        /// The forum topic the message was in.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_thread_id: Option<i64>,
        /// The message the reply quotes (in groups, so it is clear whom it answers).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reply_to_message_id: Option<i64>,
    },
}

/// An image attached to a user message, downloaded by the gateway into the media store
/// (Postgres), where every service reaches it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageAttachment {
    /// The platform's message id of the image.
    pub message_id: String,
    /// The `media` row holding the bytes (kept for `media.retention_secs`). Absent on events
    /// recorded before images moved to the database (their temp files are gone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_id: Option<Uuid>,
    /// MIME type LINE reported, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
}

/// A LINE image message was accepted; the gateway downloads its content and then appends
/// the turn's `UserMessageReceived` (so the acknowledgement never waits for the download).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LineImageReceived {
    /// The conversation.
    pub session_id: String,
    /// Sender.
    pub speaker: String,
    /// LINE's `webhookEventId`.
    pub webhook_event_id: String,
    /// LINE's message id (key of the content API).
    pub message_id: String,
    /// `originalContentUrl` when the image is hosted outside LINE.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_url: Option<String>,
    /// Where to answer.
    pub reply_to: ReplyTarget,
}

impl EventPayload for LineImageReceived {
    const EVENT_TYPE: &'static str = "LineImageReceived";
}

/// A Slack message came with an image; the gateway downloads it with the bot token and then
/// appends the turn's `UserMessageReceived` (the acknowledgement never waits for it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlackImageReceived {
    /// The conversation.
    pub session_id: String,
    /// Sender.
    pub speaker: String,
    /// The message's dedup key (`slack:msg:{channel}:{ts}`).
    pub external_id: String,
    /// The message's text (may be empty).
    pub text: String,
    /// Slack's file id.
    pub file_id: String,
    /// Its `url_private_download`.
    pub url: String,
    /// Its `mimetype`.
    pub mimetype: String,
    /// Where to answer.
    pub reply_to: ReplyTarget,
}

impl EventPayload for SlackImageReceived {
    const EVENT_TYPE: &'static str = "SlackImageReceived";
}

/// The gateway is about to make a platform call that cannot be deduplicated by the platform
/// (LINE reply token, Slack `chat.postMessage`). If this exists without an outcome after a
/// crash, the call may have gone through, so it is not blindly repeated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplyAttempted {
    /// The conversation.
    pub session_id: String,
    /// Where.
    pub channel: Channel,
    /// The reply (`AssistantReplied` or `RenderFailed`) being delivered.
    pub reply_event_id: Uuid,
}

impl EventPayload for ReplyAttempted {
    const EVENT_TYPE: &'static str = "ReplyAttempted";
}

/// A reply reached the platform.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplyDelivered {
    /// The conversation.
    pub session_id: String,
    /// Where.
    pub channel: Channel,
    /// The reply delivered.
    pub reply_event_id: Uuid,
    /// The user message answered.
    pub user_event_id: Uuid,
    /// API calls that delivered it (`reply`, `push`, `chat.postMessage`), in order.
    pub calls: Vec<String>,
}

impl EventPayload for ReplyDelivered {
    const EVENT_TYPE: &'static str = "ReplyDelivered";
}

/// A reply could not be delivered (or its outcome is unknown and repeating it could
/// duplicate it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplyFailed {
    /// The conversation.
    pub session_id: String,
    /// Where.
    pub channel: Channel,
    /// The reply that failed.
    pub reply_event_id: Uuid,
    /// The user message answered.
    pub user_event_id: Uuid,
    /// Stable code (`gave_up`, `outcome_unknown`, `no_target`, `not_configured`, `invalid`).
    pub code: String,
    /// Short explanation (never secrets).
    pub message: String,
}

impl EventPayload for ReplyFailed {
    const EVENT_TYPE: &'static str = "ReplyFailed";
}

// ---------------------------------------------------------------------------------------
// Memory (seed 001): what a write plan changed, on the persona's stream. Each carries the
// values it sets, so the projections only store them (a rebuild gives the same rows).
// ---------------------------------------------------------------------------------------

/// A write plan created a state or added a revision to one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateUpserted {
    /// The persona (character id) whose memory this is.
    pub persona: String,
    /// The utterance whose plan made the change.
    pub source_event_id: Uuid,
    /// The state's new revision.
    pub state: crate::memory::MemoryState,
}

impl EventPayload for StateUpserted {
    const EVENT_TYPE: &'static str = "StateUpserted";
}

/// A write plan closed a state or marked a task done (a new revision with that status).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateClosed {
    /// The persona.
    pub persona: String,
    /// The utterance whose plan made the change.
    pub source_event_id: Uuid,
    /// The state's new revision (`closed` or `done`).
    pub state: crate::memory::MemoryState,
}

impl EventPayload for StateClosed {
    const EVENT_TYPE: &'static str = "StateClosed";
}

/// A write plan set a preference's status (candidate, confirmed, revoked).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PreferenceUpdated {
    /// The persona.
    pub persona: String,
    /// The utterance whose plan made the change.
    pub source_event_id: Uuid,
    /// The preference as it now stands.
    pub preference: crate::memory::Preference,
    /// Its subject's key (NFKC, trimmed, case-folded).
    pub subject_key: String,
    /// The events it rests on.
    pub evidence_event_ids: Vec<Uuid>,
    /// Why.
    pub reason: String,
}

impl EventPayload for PreferenceUpdated {
    const EVENT_TYPE: &'static str = "PreferenceUpdated";
}

/// A write plan annotated an utterance (about-time, entities, affect, context). One per
/// applied plan: it also marks the utterance's plan as applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventAnnotated {
    /// The persona.
    pub persona: String,
    /// The utterance annotated.
    pub source_event_id: Uuid,
    /// About-time, life stage, entities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_annotations: Option<crate::memory::EventAnnotations>,
    /// The persona's momentary affect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_affect: Option<crate::memory::EventAffect>,
    /// Threads and links.
    #[serde(default)]
    pub context_updates: crate::memory::ContextUpdates,
}

impl EventPayload for EventAnnotated {
    const EVENT_TYPE: &'static str = "EventAnnotated";
}

/// The persona's interest state after a write plan (the whole value; the last one wins).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InterestStateUpdated {
    /// The persona.
    pub persona: String,
    /// The event that changed it.
    pub source_event_id: Uuid,
    /// The interest state after the merge.
    pub interest: crate::memory::InterestState,
}

impl EventPayload for InterestStateUpdated {
    const EVENT_TYPE: &'static str = "InterestStateUpdated";
}

/// A write plan was rejected whole: nothing of it was applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WritePlanRejected {
    /// The persona.
    pub persona: String,
    /// The utterance the plan was for.
    pub source_event_id: Uuid,
    /// Every rule it broke (or why it does not parse).
    pub errors: Vec<String>,
    /// The model's answer, masked and cut ([`ModelAnswerRejected::excerpt`]); empty in
    /// events stored before it was kept.
    #[serde(default)]
    pub raw: String,
}

impl EventPayload for WritePlanRejected {
    const EVENT_TYPE: &'static str = "WritePlanRejected";
}

/// A model's answer broke its contract and nothing came of that step (seed 002's rule for
/// every structured call: a permanent failure, recorded once, never redelivered). Used by
/// steps without an outcome event of their own (reflection, deliberation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelAnswerRejected {
    /// The contract (`reflection`, `action_decision`, ...).
    pub contract: String,
    /// The event the step handled.
    pub source_event_id: Uuid,
    /// Why, for each attempt (at most two: the call is retried once).
    pub reasons: Vec<String>,
    /// The last answer, masked and cut (see [`ModelAnswerRejected::excerpt`]).
    pub raw: String,
}

impl ModelAnswerRejected {
    /// Longest excerpt of a rejected answer kept, in characters.
    pub const MAX_RAW_CHARS: usize = 400;

    /// `raw` masked (secrets, personal data) and cut to [`Self::MAX_RAW_CHARS`].
    pub fn excerpt(raw: &str) -> String {
        let masked = crate::masking::mask_secrets(raw);
        let mut cut: String = masked.chars().take(Self::MAX_RAW_CHARS).collect();
        if masked.chars().count() > Self::MAX_RAW_CHARS {
            cut.push('…');
        }
        cut
    }
}

impl EventPayload for ModelAnswerRejected {
    const EVENT_TYPE: &'static str = "ModelAnswerRejected";
}

/// The persona recalled before a reply (seed 001 B-1/B-2): what it looked for, what each
/// source found, what it selected and how long each step took. On the persona's stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecallPerformed {
    /// The persona.
    pub persona: String,
    /// The conversation.
    pub session_id: String,
    /// The user message answered.
    pub user_event_id: Uuid,
    /// The reply this recall is for (its id is derived before it is written).
    pub reply_event_id: Uuid,
    /// The RetrievalPlan, as JSON.
    pub plan: serde_json::Value,
    /// Candidates per source.
    pub candidate_counts: std::collections::BTreeMap<String, usize>,
    /// Sources skipped (timed out or failed), with why.
    #[serde(default)]
    pub skipped_sources: std::collections::BTreeMap<String, String>,
    /// The candidates offered to the selection, best first (ids).
    #[serde(default)]
    pub candidate_ids: Vec<String>,
    /// The memories selected (ids), in the selection's order.
    pub selected_ids: Vec<String>,
    /// The selected memories' texts, as the reply prompt got them.
    #[serde(default)]
    pub selected_texts: Vec<String>,
    /// Why the selection gave nothing usable, when it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selection_error: Option<String>,
    /// Milliseconds per source, `collection` and `selection`.
    pub timings_ms: std::collections::BTreeMap<String, f64>,
}

impl EventPayload for RecallPerformed {
    const EVENT_TYPE: &'static str = "RecallPerformed";
}

/// The step a `RecallPerformed` id derives from, with the `RenderRequested` it served.
pub const RECALL_STEP: &str = "recall";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_timed_out_notice_follows_the_language_of_the_message() {
        assert!(timed_out_notice("/code これ直して").starts_with("ごめんなさい"));
        assert!(timed_out_notice("ｶﾀｶﾅ").starts_with("ごめんなさい"));
        assert!(timed_out_notice("/code fix this").starts_with("Sorry"));
        assert!(timed_out_notice("").starts_with("Sorry"));
    }

    #[test]
    fn the_token_cap_notice_follows_the_language_of_the_message() {
        assert!(token_cap_notice("/code この関数を直して").starts_with("ごめんなさい"));
        assert!(token_cap_notice("/code fix this function").starts_with("Sorry"));
    }

    #[test]
    fn stage_reasons_serialise_as_the_old_strings() {
        let reasons = [
            NextSpeakerReason::Tag,
            NextSpeakerReason::Fuzzy,
            NextSpeakerReason::RoundRobin,
            NextSpeakerReason::Random,
            NextSpeakerReason::None,
        ];
        for r in reasons {
            let json = serde_json::to_string(&r).unwrap_or_default();
            assert_eq!(json, format!("\"{}\"", r.as_str()));
        }
        let ends = [
            StageEndReason::Cap,
            StageEndReason::None,
            StageEndReason::Stopped,
            StageEndReason::Error,
        ];
        for r in ends {
            let json = serde_json::to_string(&r).unwrap_or_default();
            assert_eq!(json, format!("\"{}\"", r.as_str()));
        }
    }

    #[test]
    fn typed_fields_keep_the_stored_json_shape() {
        let json = serde_json::json!({
            "session_id": "s", "user_event_id": Uuid::nil(), "route": "CODE",
            "source": "classifier_failed", "local_only": true, "entry": "router"
        });
        let d: RouteDecided =
            serde_json::from_value(json.clone()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (d.route, d.source),
            (Route::Code, RouteSource::ClassifierFailed)
        );
        let back = serde_json::to_value(&d).unwrap_or_default();
        assert_eq!(back["route"], "CODE");
        assert_eq!(back["source"], "classifier_failed");
        let bad = serde_json::json!({
            "session_id": "s", "user_event_id": Uuid::nil(), "route": "DANCE", "source": "rule"
        });
        assert!(serde_json::from_value::<RouteDecided>(bad).is_err());
    }

    #[test]
    fn image_turns_recorded_before_the_media_table_still_decode() {
        // Events are never rewritten: the temp-file shape of earlier versions must still
        // decode (the image itself is gone; the turn is answered without it).
        let old = serde_json::json!({
            "session_id": "line:user:U1", "channel": "line", "speaker": "U1", "text": "[image]",
            "image": {"message_id": "m1", "local_path": "/tmp/ghost-media/x.png", "content_type": "image/png"}
        });
        let m: UserMessageReceived = serde_json::from_value(old).unwrap();
        let image = m.image.unwrap();
        assert_eq!((image.message_id.as_str(), image.media_id), ("m1", None));
    }
}

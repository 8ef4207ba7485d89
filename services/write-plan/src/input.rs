//! The write plan's input: the turn, the conversation's recent events, the persona's
//! current memory and the persona itself (its text goes into the system prompt).

use ghost_shared::contracts::write_plan::PlanIds;
use serde::Serialize;
use serde_json::{json, Value};
use uuid::Uuid;

use ghost_shared::autonomy::events::AutonomyMessageRendered;
use ghost_shared::envelope::RecordedEvent;
use ghost_shared::events::{AssistantReplied, UserMessageReceived};
use ghost_shared::memory::vocab::{PreferenceStatus, StateAbout, StateStatus};
use ghost_shared::memory::Memory;

/// Which kind of utterance the turn is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UtteranceKind {
    /// A reply to a user message.
    Reply,
    /// A message the persona said on its own about an autonomous action: no user message.
    AutonomyMessage,
}

/// The turn: the persona's utterance and, for a reply, the user's message it answers.
#[derive(Debug, Clone, Serialize)]
pub struct TurnInput {
    /// Reply or autonomy message.
    pub kind: UtteranceKind,
    /// What the user said; `null` for an autonomy message (nobody spoke before it).
    pub user_text: Option<String>,
    /// The user's message event; `null` for an autonomy message.
    pub user_event_id: Option<Uuid>,
    /// Who spoke to the persona (the person whose memory the plan reads and writes; for
    /// an autonomy message, the console's user).
    pub person: String,
    /// What the persona said.
    pub reply_text: String,
    /// Images of the turn, described (none are described yet: the media ids are listed).
    pub images: Vec<String>,
}

/// One earlier event of the conversation.
#[derive(Debug, Clone, Serialize)]
pub struct RecentEvent {
    /// Its id (what evidence and links name).
    pub event_id: Uuid,
    /// `user` or `assistant`.
    pub role: &'static str,
    /// What was said.
    pub text: String,
}

/// The conversation's user and assistant messages (autonomy messages included) among `events`, oldest first, at most
/// `limit`, before version `before`.
pub fn recent_events(events: &[RecordedEvent], before: i32, limit: usize) -> Vec<RecentEvent> {
    let mut out: Vec<RecentEvent> = events
        .iter()
        .filter(|e| e.version < before)
        .filter_map(|e| {
            if let Ok(m) = e.decode::<UserMessageReceived>() {
                Some(RecentEvent {
                    event_id: e.event_id,
                    role: "user",
                    text: m.text,
                })
            } else if let Ok(r) = e.decode::<AssistantReplied>() {
                Some(RecentEvent {
                    event_id: e.event_id,
                    role: "assistant",
                    text: r.text,
                })
            } else if let Ok(m) = e.decode::<AutonomyMessageRendered>() {
                Some(RecentEvent {
                    event_id: e.event_id,
                    role: "assistant",
                    text: m.text,
                })
            } else {
                None
            }
        })
        .collect();
    let skip = out.len().saturating_sub(limit);
    out.split_off(skip)
}

/// The memory part: active states and standing preferences (newest first, at most
/// `limit` each) and the interest state with its weights decayed to `now`. `memory` is the
/// speaker's (and no one's): each state says whom it is about as the plan's `about` does,
/// and the person's id stays out (the turn names them once).
pub fn memory_input(memory: &Memory, now: f64, tau_secs: f64, limit: usize) -> Value {
    let states: Vec<Value> = memory
        .states
        .iter()
        .rev()
        .filter(|s| s.status == StateStatus::Active)
        .take(limit)
        .map(|s| {
            let mut v = json!(s);
            let about = match s.person {
                Some(_) => StateAbout::Speaker,
                None => StateAbout::Nobody,
            };
            v["about"] = json!(about.as_str());
            v.as_object_mut().map(|o| o.remove("person"));
            v
        })
        .collect();
    let preferences: Vec<Value> = memory
        .preferences
        .iter()
        .rev()
        .filter(|p| p.status != PreferenceStatus::Revoked)
        .take(limit)
        .map(|p| {
            let mut v = json!(p);
            v.as_object_mut().map(|o| o.remove("person"));
            v
        })
        .collect();
    let interest = memory.interest_at(now, tau_secs);
    json!({"states": states, "preferences": preferences, "interest": interest})
}

/// The whole user message of the model call.
pub fn plan_input(current: Uuid, turn: &TurnInput, recent: &[RecentEvent], memory: Value) -> Value {
    json!({
        "current_event_id": current,
        "turn": turn,
        "recent_events": recent,
        "memory": memory,
    })
}

/// What the plan for `current` may cite: its input's events and the states it shows.
pub fn plan_ids(
    current: Uuid,
    turn: &TurnInput,
    recent: &[RecentEvent],
    memory: &Memory,
    limit: usize,
) -> PlanIds {
    let mut events: Vec<String> = turn
        .user_event_id
        .iter()
        .chain(recent.iter().map(|r| &r.event_id))
        .filter(|id| **id != current)
        .map(Uuid::to_string)
        .collect();
    events.dedup();
    let states = memory
        .states
        .iter()
        .rev()
        .filter(|s| s.status == StateStatus::Active)
        .take(limit)
        .map(|s| s.state_id.to_string())
        .collect();
    PlanIds {
        current: current.to_string(),
        events,
        states,
    }
}

//! `<prefix>.autonomy.activity` (monitoring: every decision, drop, start, result and failed
//! message) and `<prefix>.autonomy.message` (the persona's utterances, already stored in
//! `assistant_text`). Both are core NATS: publishing is the moment a message is said, no
//! acknowledgement is awaited, and activity is never conversation history.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use super::decision::ConsoleDelivery;
use super::events::{
    ActionDecided, ActionDropped, ActionResultRecorded, ActionStarted, AutonomyMessageFailed,
};
use crate::bus::Bus;
use crate::envelope::RecordedEvent;

/// The activity subject.
pub fn activity_subject(bus: &Bus) -> String {
    bus.core_subject("autonomy.activity")
}

/// The message subject.
pub fn message_subject(bus: &Bus) -> String {
    bus.core_subject("autonomy.message")
}

/// One activity entry: an autonomy event, as monitoring sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Activity {
    /// `decided`, `dropped`, `started`, `result`, `message_failed`.
    pub kind: String,
    /// The persona.
    pub persona: String,
    /// The event this reports.
    pub event_id: Uuid,
    /// The event's payload.
    pub detail: Value,
    /// When the event was recorded (absent from publishers that predate it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_at: Option<DateTime<Utc>>,
}

/// One persona utterance as consoles receive it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AutonomyMessage {
    /// The `AutonomyMessageRendered` event (also the `assistant_text` row).
    pub event_id: Uuid,
    /// The sender: the persona, in every mode.
    pub speaker: String,
    /// The conversation.
    pub session_id: String,
    /// What was said.
    pub text: String,
    /// `chat` or `notify` (display style) and the message kind.
    pub delivery: ConsoleDelivery,
}

/// Publishes an activity entry (monitoring only: a lost one is logged, never retried).
pub async fn publish_activity(bus: &Bus, activity: &Activity) {
    publish(bus, activity_subject(bus), activity).await;
}

/// Publishes a stored message: the moment it is said.
pub async fn publish_message(bus: &Bus, message: &AutonomyMessage) {
    publish(bus, message_subject(bus), message).await;
}

async fn publish<T: Serialize>(bus: &Bus, subject: String, value: &T) {
    match serde_json::to_vec(value) {
        Ok(bytes) => {
            if let Err(e) = bus.publish_core(subject.clone(), bytes.into()).await {
                tracing::warn!(%subject, error = %e, "autonomy publish failed");
            }
        }
        Err(e) => tracing::warn!(%subject, error = %e, "autonomy payload not serializable"),
    }
}

crate::event_enum! {
    /// The autonomy events monitoring shows.
    pub enum ActivityEvent {
        ActionDecided,
        ActionDropped,
        ActionStarted,
        ActionResultRecorded,
        AutonomyMessageFailed,
    }
}

/// The activity entry a stored autonomy event is (`None` for an event monitoring does not
/// show, or one that does not decode): one mapping for what is published as it happens
/// and what a console that opens later is shown of the past.
pub fn activity_of(event: &RecordedEvent) -> Option<Activity> {
    let payload = || event.payload.clone();
    let (kind, persona, detail) = match ActivityEvent::decode(event).ok()?? {
        ActivityEvent::ActionDecided(e) => ("decided", e.persona, payload()),
        ActivityEvent::ActionDropped(e) => ("dropped", e.persona, payload()),
        ActivityEvent::ActionStarted(e) => ("started", e.persona, payload()),
        // Monitoring sees the facts, never the internal summary or the raw output.
        ActivityEvent::ActionResultRecorded(recorded) => (
            "result",
            recorded.persona,
            serde_json::json!({
                "decision_event_id": recorded.decision_event_id,
                "capability_name": recorded.result.capability_name,
                "result_status": recorded.result.result_status,
                "result_payload": recorded.result.result_payload,
                "agent_job": recorded.agent_job,
            }),
        ),
        ActivityEvent::AutonomyMessageFailed(e) => ("message_failed", e.persona, payload()),
    };
    Some(Activity {
        kind: kind.into(),
        persona,
        event_id: event.event_id,
        detail,
        recorded_at: Some(event.recorded_at),
    })
}

/// Publishes the activity entry `event` is, if it is one.
pub async fn publish_activity_of(bus: &Bus, event: &RecordedEvent) {
    if let Some(activity) = activity_of(event) {
        publish_activity(bus, &activity).await;
    }
}

//! Reminder delivery (issue 46): a consumer of `ReminderDue` (one per occurrence, appended
//! by the shared scheduler) that says the reminder where it was asked: on its platform
//! through the platform's own [`Platform::deliver`] (the same retry keys and attempt markers
//! as replies, so a LINE push is never doubled), or in an HTTP conversation as the
//! `ReminderDelivered` event itself (the conversation lists it).
//!
//! One outcome per occurrence: `ReminderDelivered` and `ReminderMissed` share one id derived
//! from the `ReminderDue` ([`STEP_OUTCOME`]); a stored outcome means done, so a redelivered
//! message or a second gateway sends nothing.
//!
//! Said in the persona's voice: its line (asked on core NATS, see
//! [`ghost_shared::reminders::voice`]), then the task as it was asked; plainly when no line
//! comes in time or the occurrence waited too long to be delivered.
//!
//! Late occurrences (Ghost was down when they came due) carry a note; past
//! `reminders.max_lateness_secs` only a notice that it was missed is sent.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tracing::{info, warn};

use ghost_shared::bus::{EventHandler, HandlerError};
use ghost_shared::envelope::{session_stream, EventPayload, NewEvent, RecordedEvent};
use ghost_shared::events::{Channel, ReplyTarget};
use ghost_shared::reminders::events::{
    ReminderDelivered, ReminderDue, ReminderMissed, STEP_OUTCOME,
};
use ghost_shared::reminders::voice::{self, Voice, WordingRequest};
use ghost_shared::reminders::Lateness;
use ghost_shared::store::ExpectedVersion;

use super::{Deliverer, DeliveryOutcome};

/// The event type this handler consumes.
pub const CONSUMES: &str = ReminderDue::EVENT_TYPE;

/// Delivers reminders with the reply deliverer's clients and settings.
pub struct ReminderDeliverer {
    deliverer: Arc<Deliverer>,
}

impl ReminderDeliverer {
    /// A deliverer sharing `deliverer`'s HTTP client, tokens and platforms.
    pub fn new(deliverer: Arc<Deliverer>) -> Self {
        Self { deliverer }
    }
}

/// `at` as the person reads it: local time in their zone.
fn local(at: DateTime<Utc>, zone: &str) -> String {
    match ghost_shared::reminders::parse_zone(zone) {
        Ok(tz) => at
            .with_timezone(&tz)
            .format("%Y-%m-%d %H:%M %Z")
            .to_string(),
        Err(_) => at.format("%Y-%m-%d %H:%M UTC").to_string(),
    }
}

/// What is said for an occurrence when the persona does not word it.
pub fn reminder_text(due: &ReminderDue) -> String {
    let when = local(due.occurrence_at, &due.time_zone);
    match due.lateness {
        Lateness::OnTime => format!("⏰ Reminder: {}", due.text),
        Lateness::Late => format!(
            "⏰ Reminder: {} (late — this was due at {when}; I could not send it then)",
            due.text
        ),
        Lateness::Missed => format!(
            "I missed a reminder that was due at {when}: {} — it is too late now, so I dropped it.",
            due.text
        ),
    }
}

/// What is said for an occurrence the persona worded: its line, then the task as it was
/// asked (a small model's line may leave the task out; the person must still read it).
pub fn worded_text(line: &str, due: &ReminderDue) -> String {
    let line = line.trim();
    match due.lateness {
        Lateness::Late => format!(
            "{line}\n⏰ {} (late — due at {})",
            due.text,
            local(due.occurrence_at, &due.time_zone)
        ),
        _ => format!("{line}\n⏰ {}", due.text),
    }
}

/// What is said, and who worded it (with why it was said plainly, if the persona was asked).
struct Said {
    text: String,
    voice: Voice,
    plain_because: Option<String>,
}

/// Where a platform message goes: a push (a reply token is long gone by now).
fn push_target(target: &ReplyTarget) -> ReplyTarget {
    match target {
        ReplyTarget::Line {
            received_at,
            push_to,
            ..
        } => ReplyTarget::Line {
            reply_token: None,
            received_at: *received_at,
            push_to: push_to.clone(),
            is_redelivery: false,
        },
        ReplyTarget::Telegram {
            chat_id,
            message_thread_id,
            ..
        } => ReplyTarget::Telegram {
            chat_id: *chat_id,
            message_thread_id: *message_thread_id,
            reply_to_message_id: None,
        },
        other => other.clone(),
    }
}

#[async_trait::async_trait]
impl EventHandler for ReminderDeliverer {
    async fn handle(&self, event: RecordedEvent) -> Result<(), HandlerError> {
        let due: ReminderDue = event.decode().map_err(HandlerError::permanent)?;
        let d = &self.deliverer;
        if d.ctx.outcome_stored(&event, &[STEP_OUTCOME]).await? {
            info!(reminder = %due.reminder_id, "reminder occurrence already handled");
            return Ok(());
        }
        let said = self.words(&event, &due).await;
        let text = &said.text;
        let outcome = if due.channel == Channel::Http {
            // The outcome event is the message in the conversation.
            DeliveryOutcome::Delivered(Vec::new())
        } else {
            match (&due.target, d.platforms.get(due.channel)) {
                (Some(target), Some(platform)) => {
                    let out = d.outbound(&event, &due.session_id);
                    ghost_shared::fault::point("gateway.before_reminder_send");
                    platform.deliver(&out, &push_target(target), text).await?
                }
                _ => DeliveryOutcome::no_target(),
            }
        };
        self.record(&event, &due, said, outcome).await
    }
}

impl ReminderDeliverer {
    /// The occurrence's words: the persona's line and the task, or plainly when the voice is
    /// off, the occurrence is a missed notice, it waited past `voice.within_secs` since it
    /// was claimed, or no line came in time.
    async fn words(&self, event: &RecordedEvent, due: &ReminderDue) -> Said {
        let plain = |because: Option<String>| Said {
            text: reminder_text(due),
            voice: Voice::Plain,
            plain_because: because,
        };
        let settings = &self.deliverer.ctx.config.ghost.reminders.voice;
        if !settings.enabled || due.lateness == Lateness::Missed {
            return plain(None);
        }
        // `recorded_at` is on the system's clock (`ghost_now()`), which may be simulated.
        let waited = (self.deliverer.ctx.clock().now() - event.recorded_at).num_seconds();
        if waited > settings.within_secs as i64 {
            return plain(Some(format!(
                "waited {waited}s since it was claimed (voice.within_secs {})",
                settings.within_secs
            )));
        }
        let request = WordingRequest {
            person: due.person.clone(),
            session_id: due.session_id.clone(),
            task: due.text.clone(),
            due_at: due.occurrence_at,
            time_zone: due.time_zone.clone(),
            late: due.lateness == Lateness::Late,
        };
        let timeout = Duration::from_millis(settings.timeout_ms);
        match voice::request(self.deliverer.ctx.bus(), &request, timeout).await {
            Ok(line) => Said {
                text: worded_text(&line, due),
                voice: Voice::Persona,
                plain_because: None,
            },
            Err(e) => {
                warn!(reminder = %due.reminder_id, error = %e, "reminder said plainly");
                plain(Some(e.to_string()))
            }
        }
    }

    async fn record(
        &self,
        cause: &RecordedEvent,
        due: &ReminderDue,
        said: Said,
        outcome: DeliveryOutcome,
    ) -> Result<(), HandlerError> {
        let Said {
            text,
            voice,
            plain_because,
        } = said;
        let ctx = &self.deliverer.ctx;
        let service = ctx.service;
        let e = match (outcome, due.lateness) {
            (DeliveryOutcome::Delivered(calls), Lateness::OnTime | Lateness::Late) => {
                info!(reminder = %due.reminder_id, ?calls, "reminder delivered");
                let delivered = ReminderDelivered {
                    reminder_id: due.reminder_id,
                    person: due.person.clone(),
                    session_id: due.session_id.clone(),
                    channel: due.channel,
                    occurrence_at: due.occurrence_at,
                    speaker: ctx.config.ghost.persona.character.clone(),
                    text,
                    late: due.lateness == Lateness::Late,
                    voice,
                    plain_because,
                    calls,
                };
                NewEvent::caused_by(cause, STEP_OUTCOME, &delivered, service)
            }
            (DeliveryOutcome::Delivered(_), Lateness::Missed) => {
                info!(reminder = %due.reminder_id, "reminder too late: dropped, notice sent");
                let missed = ReminderMissed {
                    reminder_id: due.reminder_id,
                    person: due.person.clone(),
                    session_id: due.session_id.clone(),
                    channel: due.channel,
                    occurrence_at: due.occurrence_at,
                    code: "too_late".into(),
                    message: format!(
                        "came due {}s ago, past reminders.max_lateness_secs",
                        due.late_by_secs
                    ),
                    notice: Some(text),
                };
                NewEvent::caused_by(cause, STEP_OUTCOME, &missed, service)
            }
            (DeliveryOutcome::Failed { code, message }, _) => {
                warn!(reminder = %due.reminder_id, code, %message, "reminder not delivered");
                let missed = ReminderMissed {
                    reminder_id: due.reminder_id,
                    person: due.person.clone(),
                    session_id: due.session_id.clone(),
                    channel: due.channel,
                    occurrence_at: due.occurrence_at,
                    code: code.into(),
                    message,
                    notice: None,
                };
                NewEvent::caused_by(cause, STEP_OUTCOME, &missed, service)
            }
        }
        .map_err(HandlerError::permanent)?;
        ghost_shared::fault::point("gateway.before_reminder_outcome");
        ctx.log
            .append(&session_stream(&due.session_id), ExpectedVersion::Any, &[e])
            .await
            .map_err(HandlerError::transient)?;
        Ok(())
    }
}

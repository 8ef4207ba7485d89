//! `/remind` (issue 46): a reminder asked, listed, moved or cancelled by command, in any
//! conversation. The router records it (`ReminderScheduled`, `ReminderChanged`,
//! `ReminderCancelled`, ids derived from the message: a redelivery appends nothing) and asks
//! the persona to confirm in its own words, with what was understood as the task result
//! (the absolute time in the person's zone, the list, or why it was refused).
//!
//! Times are read in the speaker's zone (`reminders.time_zones`, else `reminders.time_zone`)
//! against the message's own time on the system's clock, so a redelivered message means
//! the same time.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use ghost_shared::bus::HandlerError;
use ghost_shared::envelope::{NewEvent, RecordedEvent};
use ghost_shared::events::{RenderRequested, RouteDecided};
use ghost_shared::ids::derive_event_id;
use ghost_shared::reminders::command::{parse_remind, RemindCommand, When};
use ghost_shared::reminders::events::{ReminderCancelled, ReminderChanged, ReminderScheduled};
use ghost_shared::reminders::parse_zone;
use ghost_shared::reminders::projection::{self, ReminderRow};

use super::turn::Turn;
use super::{Router, STEP_NEXT, STEP_ROUTE};
use crate::routing::{Route, RouteSource};

/// The step the reminder event's id derives from (with the user message).
const STEP_REMINDER: &str = "reminder";

fn local(at: DateTime<Utc>, zone: &str) -> String {
    parse_zone(zone)
        .map(|tz| {
            at.with_timezone(&tz)
                .format("%Y-%m-%d %H:%M %Z")
                .to_string()
        })
        .unwrap_or_else(|_| at.to_rfc3339())
}

fn listed(rows: &[ReminderRow]) -> Value {
    let items: Vec<Value> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            json!({
                "n": i + 1,
                "text": r.text,
                "next": r.due_at.map(|at| local(at, &r.time_zone)),
                "repeats": r.rule,
            })
        })
        .collect();
    json!({ "reminders": items })
}

/// The row `reference` names among `rows`: its number in the list or the start of its id.
fn find<'r>(rows: &'r [ReminderRow], reference: &str) -> Option<&'r ReminderRow> {
    if let Ok(n) = reference.parse::<usize>() {
        return n.checked_sub(1).and_then(|i| rows.get(i));
    }
    let reference = reference.to_ascii_lowercase();
    let mut matching = rows
        .iter()
        .filter(|r| r.reminder_id.to_string().starts_with(&reference));
    match (matching.next(), matching.next()) {
        (Some(one), None) if reference.len() >= 4 => Some(one),
        _ => None,
    }
}

impl Router {
    /// Handles `turn`'s message when it is a `/remind` command; false when it is not one.
    pub(crate) async fn remind_if_asked(
        &self,
        event: &RecordedEvent,
        turn: &Turn,
    ) -> Result<bool, HandlerError> {
        let person = turn.message.speaker.clone();
        let reminders = &self.ctx.config.ghost.reminders;
        let zone = reminders.zone_of(&person).to_owned();
        let Ok(tz) = parse_zone(&zone) else {
            return Ok(false);
        };
        let Some(command) = parse_remind(&turn.message.text, event.recorded_at, tz) else {
            return Ok(false);
        };
        let session_id = turn.message.session_id.clone();
        let service = self.ctx.service;
        let id = derive_event_id(turn.id(), STEP_REMINDER);
        let rows = || async {
            projection::upcoming(self.ctx.store().pool(), &person)
                .await
                .map_err(HandlerError::transient)
        };
        let (change, result): (Option<NewEvent>, Value) = match command {
            Err(e) => (None, json!({ "reminder_refused": e.to_string() })),
            Ok(RemindCommand::Schedule { when, text }) => {
                let (when, held_from) = reminders.hold(&person, when, tz);
                let scheduled = ReminderScheduled {
                    reminder_id: id,
                    person: person.clone(),
                    session_id: session_id.clone(),
                    channel: turn.message.channel,
                    target: turn.message.reply_to.clone(),
                    text: text.clone(),
                    due_at: when.first(),
                    rule: when.rule().map(str::to_owned),
                    time_zone: zone.clone(),
                    held_from,
                };
                let e = NewEvent::caused_by(event, STEP_REMINDER, &scheduled, service)
                    .map_err(HandlerError::permanent)?;
                let mut result = json!({
                    "reminder_set": text,
                    "at": local(when.first(), &zone),
                    "repeats": when.rule(),
                });
                if let Some(asked) = held_from {
                    // The persona says why it comes later than asked.
                    result["held_for_quiet_hours_from"] = json!(local(asked, &zone));
                }
                (Some(e), result)
            }
            Ok(RemindCommand::List) => (None, listed(&rows().await?)),
            Ok(RemindCommand::Cancel { reference }) => match find(&rows().await?, &reference) {
                None => (None, json!({ "reminder_not_found": reference })),
                Some(r) => {
                    let cancelled = ReminderCancelled {
                        reminder_id: r.reminder_id,
                        person: person.clone(),
                        session_id: r.session_id.clone(),
                    };
                    let e = NewEvent::caused_by(event, STEP_REMINDER, &cancelled, service)
                        .map_err(HandlerError::permanent)?;
                    (Some(e), json!({ "reminder_cancelled": r.text }))
                }
            },
            Ok(RemindCommand::Move { reference, when }) => match find(&rows().await?, &reference) {
                None => (None, json!({ "reminder_not_found": reference })),
                Some(r) => {
                    let (when, held_from) = reminders.hold(&person, when, tz);
                    let rule = match &when {
                        When::Every { rule, .. } => Some(rule.clone()),
                        When::Once(_) | When::In(_) => r.rule.clone(),
                    };
                    let changed = ReminderChanged {
                        reminder_id: r.reminder_id,
                        person: person.clone(),
                        session_id: r.session_id.clone(),
                        due_at: when.first(),
                        rule,
                        held_from,
                    };
                    let e = NewEvent::caused_by(event, STEP_REMINDER, &changed, service)
                        .map_err(HandlerError::permanent)?;
                    let result = json!({
                        "reminder_moved": r.text,
                        "to": local(when.first(), &zone),
                    });
                    (Some(e), result)
                }
            },
        };
        self.confirm_reminder(event, turn, change, result).await?;
        Ok(true)
    }

    /// The turn's route (CHAT, by command), the change, and the persona's reply to it.
    async fn confirm_reminder(
        &self,
        event: &RecordedEvent,
        turn: &Turn,
        change: Option<NewEvent>,
        result: Value,
    ) -> Result<(), HandlerError> {
        let session_id = turn.message.session_id.clone();
        let service = self.ctx.service;
        let decided = RouteDecided {
            session_id: session_id.clone(),
            user_event_id: turn.id(),
            route: Route::Chat,
            source: RouteSource::Explicit,
            local_only: false,
            primary: false,
            declaration: None,
            entry: Some("remind".to_owned()),
            detail: None,
            corrects: None,
            user_turns: Some(turn.user_turns),
        };
        let render = RenderRequested {
            session_id: session_id.clone(),
            channel: turn.message.channel,
            user_event_id: turn.id(),
            person: Some(turn.message.speaker.clone()),
            user_text: turn.message.text.clone(),
            work_result: Some(result),
            declaration: None,
            notice: None,
            memory_summary: self.memory_summary(turn).await?,
            withheld_from_cloud: Vec::new(),
            history_user_messages: Some(turn.history_user_messages()),
        };
        let mut events = vec![NewEvent::caused_by(event, STEP_ROUTE, &decided, service)
            .map_err(HandlerError::permanent)?];
        events.extend(change);
        events.push(
            NewEvent::caused_by(event, STEP_NEXT, &render, service)
                .map_err(HandlerError::permanent)?,
        );
        self.append(&session_id, &events).await
    }
}

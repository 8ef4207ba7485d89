//! Reminders asked in a conversation (issue 46): by `/remind`, or in words ("remind me
//! tomorrow at 9 to call Mom", 毎週月曜の朝7時にゴミ出しを教えて), read by
//! `ghost_domain::reminders::words` and carried out as the `/remind` command that says the
//! same (shown to the person); an unclear time is asked back, and a message that asks for
//! no reminder goes on to routing as any other.
//!
//! The router records a reminder asked, listed, moved or cancelled (`ReminderScheduled`,
//! `ReminderChanged`, `ReminderCancelled`, ids derived from the message: a redelivery
//! appends nothing) and asks the persona to confirm in its own words, with what was
//! understood as the task result (the absolute time in the person's zone, the list, or why
//! it was refused).
//!
//! A person sets their own quiet hours the same way (`/remind quiet 22:00-07:00`, "don't
//! remind me between 23:00 and 6:30", "no more quiet hours": `ReminderQuietHoursSet`).
//!
//! Times are read in the speaker's zone (the one they set with `/remind zone` or "my time zone
//! is …", else `reminders.time_zones`, else `reminders.time_zone`)
//! against the message's own time on the system's clock, so a redelivered message means
//! the same time.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use chrono_tz::Tz;
use ghost_shared::bus::HandlerError;
use ghost_shared::envelope::{NewEvent, RecordedEvent};
use ghost_shared::events::{RenderRequested, RouteDecided};
use ghost_shared::ids::derive_event_id;
use ghost_shared::reminders::command::{parse_remind, CommandError, RemindCommand, When};
use ghost_shared::reminders::events::{
    ReminderCancelled, ReminderChanged, ReminderQuietHoursSet, ReminderScheduled, ReminderZoneSet,
};
use ghost_shared::reminders::projection::{self, ReminderRow};
use ghost_shared::reminders::words::{names_a_change, understand, Understood};
use ghost_shared::reminders::{own_settings, parse_zone};

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

/// The row `reference` names among `rows`: its number in the list, the start of its id, or
/// words of its text ("the rent one"; the one row sharing the most).
fn find<'r>(rows: &'r [ReminderRow], reference: &str) -> Option<&'r ReminderRow> {
    if let Ok(n) = reference.parse::<usize>() {
        return n.checked_sub(1).and_then(|i| rows.get(i));
    }
    let reference = reference.to_lowercase();
    let mut matching = rows
        .iter()
        .filter(|r| r.reminder_id.to_string().starts_with(&reference));
    if let (Some(one), None) = (matching.next(), matching.next()) {
        if reference.len() >= 4 {
            return Some(one);
        }
    }
    let scored: Vec<(usize, &ReminderRow)> = rows
        .iter()
        .map(|r| (shared_words(&reference, &r.text.to_lowercase()), r))
        .collect();
    let best = scored.iter().map(|(n, _)| *n).max().filter(|n| *n > 0)?;
    let mut top = scored.iter().filter(|(n, _)| *n == best);
    match (top.next(), top.next()) {
        (Some((_, one)), None) => Some(one),
        _ => None,
    }
}

/// Words naming nothing in particular, left out when a reference is matched by its words.
const FILLER: &[&str] = &[
    "the",
    "a",
    "an",
    "one",
    "my",
    "to",
    "for",
    "about",
    "of",
    "reminder",
    "reminders",
    "remind",
    "me",
    "that",
    "it",
];

/// How much of `reference` is in `text`: its words (other than filler), and for text
/// without spaces (Japanese) its two-character pieces.
fn shared_words(reference: &str, text: &str) -> usize {
    let words = reference
        .split(|c: char| !c.is_alphanumeric() || c == '-')
        .filter(|w| !w.is_empty() && !FILLER.contains(w));
    let mut n = 0;
    for word in words {
        if word.is_ascii() {
            n += usize::from(text.contains(word));
        } else {
            let chars: Vec<char> = word.chars().collect();
            n += chars
                .windows(2)
                .filter(|pair| text.contains(&pair.iter().collect::<String>()))
                .count();
        }
    }
    n
}

impl Router {
    /// The speaker's zone (the one they set, else the configuration's), by name and parsed.
    async fn zone_of(&self, turn: &Turn) -> Result<Option<(String, Tz)>, HandlerError> {
        let zone = projection::zone_of(
            self.ctx.store().pool(),
            &self.ctx.config.ghost.reminders,
            &turn.message.speaker,
        )
        .await
        .map_err(HandlerError::transient)?;
        Ok(parse_zone(&zone).ok().map(|tz| (zone, tz)))
    }

    /// Handles `turn`'s message when it asks for a reminder (`/remind`, or in words); false
    /// when it does not.
    pub(crate) async fn remind_if_asked(
        &self,
        event: &RecordedEvent,
        turn: &Turn,
    ) -> Result<bool, HandlerError> {
        let Some((zone, tz)) = self.zone_of(turn).await? else {
            return Ok(false);
        };
        let text = &turn.message.text;
        let now = event.recorded_at;
        if let Some(command) = parse_remind(text, now, tz) {
            self.carry_out(event, turn, &zone, tz, command, None)
                .await?;
            return Ok(true);
        }
        // "cancel"/"move" are about reminders only for someone who has some.
        let has_reminders = names_a_change(text)
            && !projection::upcoming(self.ctx.store().pool(), &turn.message.speaker)
                .await
                .map_err(HandlerError::transient)?
                .is_empty();
        match understand(text, now, tz, has_reminders) {
            Understood::NotAReminder => return Ok(false),
            Understood::Command {
                command,
                as_command,
            } => {
                self.carry_out(event, turn, &zone, tz, Ok(command), Some(as_command))
                    .await?
            }
            Understood::Ambiguous { readings } => {
                let result = json!({
                    "reminder_question": "which of these times is meant?",
                    "could_be": readings,
                });
                self.confirm_reminder(event, turn, None, result).await?
            }
            Understood::NotUnderstood(why) => {
                let result = json!({
                    "reminder_not_understood": why,
                    "can_be_said_as": "/remind tomorrow at 9:00 call Mom",
                });
                self.confirm_reminder(event, turn, None, result).await?
            }
        }
        Ok(true)
    }

    /// Carries out `command` (refused: its reason is the result) and has the persona
    /// confirm it; `as_command` is the `/remind` form of a reminder asked in words.
    async fn carry_out(
        &self,
        event: &RecordedEvent,
        turn: &Turn,
        zone: &str,
        tz: Tz,
        command: Result<RemindCommand, CommandError>,
        as_command: Option<String>,
    ) -> Result<(), HandlerError> {
        let person = turn.message.speaker.clone();
        let reminders = &self.ctx.config.ghost.reminders;
        let zone = zone.to_owned();
        let session_id = turn.message.session_id.clone();
        let service = self.ctx.service;
        let id = derive_event_id(turn.id(), STEP_REMINDER);
        let hold = |when: When| {
            let person = person.clone();
            async move {
                own_settings::hold(self.ctx.store().pool(), reminders, &person, when, tz)
                    .await
                    .map_err(HandlerError::transient)
            }
        };
        let rows = || async {
            projection::upcoming(self.ctx.store().pool(), &person)
                .await
                .map_err(HandlerError::transient)
        };
        let (change, result): (Option<NewEvent>, Value) = match command {
            Err(e) => (None, json!({ "reminder_refused": e.to_string() })),
            Ok(RemindCommand::Schedule { when, text }) => {
                let (when, held_from) = hold(when).await?;
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
            Ok(RemindCommand::Zone { zone }) => {
                let set = ReminderZoneSet {
                    person: person.clone(),
                    session_id: session_id.clone(),
                    time_zone: zone.clone(),
                };
                let e = NewEvent::caused_by(event, STEP_REMINDER, &set, service)
                    .map_err(HandlerError::permanent)?;
                let now_there = local(event.recorded_at, &zone);
                (
                    Some(e),
                    json!({ "time_zone_set": zone, "local_time_now": now_there }),
                )
            }
            Ok(RemindCommand::Quiet { hours }) => {
                let set = ReminderQuietHoursSet {
                    person: person.clone(),
                    session_id: session_id.clone(),
                    quiet_hours: hours,
                };
                let e = NewEvent::caused_by(event, STEP_REMINDER, &set, service)
                    .map_err(HandlerError::permanent)?;
                let result = match hours {
                    Some(q) => json!({ "quiet_hours_set": q.to_string(), "time_zone": zone }),
                    None => json!({ "quiet_hours_off": true }),
                };
                (Some(e), result)
            }
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
                    let (when, held_from) = hold(when).await?;
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
        let mut result = result;
        if let Some(as_command) = as_command {
            // The person sees the fixed form that says the same, for next time.
            result["as_command"] = json!(as_command);
        }
        self.confirm_reminder(event, turn, change, result).await
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

//! The `/remind` command: a reminder said in a fixed form, for people who want no guess.
//!
//! ```text
//! /remind in 20 minutes take the pasta out       (m, min, minutes, h, hours, d, days)
//! /remind at 9:00 call Mom                         (the next 9:00 in the person's zone)
//! /remind tomorrow at 9 call Mom
//! /remind 2026-12-01 09:00 pay the rent
//! /remind every monday at 7:00 take out the trash  (day, weekday, monday..sunday)
//! /remind every month on 1 at 9:00 rent?
//! /remind list | /remind cancel <n> | /remind move <n> <when>
//! /remind zone Asia/Tokyo                          (the person's own zone; or a city: tokyo)
//! /remind quiet 22:00-07:00 | /remind quiet off     (the person's own quiet hours)
//! ```
//!
//! `<n>` is a reminder's number in `/remind list` or the start of its id. Times are the
//! person's local times; a time the clocks skip is refused, not moved.

use chrono::{DateTime, Duration, NaiveDate, NaiveTime, SubsecRound, Utc};
use chrono_tz::Tz;

use super::quiet::QuietHours;
use super::recurrence::{local_to_utc, next_after, zone_named, ReminderRuleError};

/// When a reminder is due.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum When {
    /// Once, at a time the person named.
    Once(DateTime<Utc>),
    /// Once, counted from now (`in 20 minutes`): the one kind quiet hours may hold
    /// ([`super::QuietHours`]).
    In(DateTime<Utc>),
    /// By `rule` (an RRULE), first at `first`.
    Every {
        /// The RRULE (`FREQ=WEEKLY;BYDAY=MO;BYHOUR=7;BYMINUTE=0;BYSECOND=0`).
        rule: String,
        /// Its first occurrence.
        first: DateTime<Utc>,
    },
}

impl When {
    /// The first time it is due.
    pub fn first(&self) -> DateTime<Utc> {
        match self {
            When::Once(at) | When::In(at) => *at,
            When::Every { first, .. } => *first,
        }
    }

    /// The rule, for a recurring one.
    pub fn rule(&self) -> Option<&str> {
        match self {
            When::Once(_) | When::In(_) => None,
            When::Every { rule, .. } => Some(rule),
        }
    }
}

/// What a `/remind` command asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemindCommand {
    /// A new reminder.
    Schedule {
        /// When.
        when: When,
        /// What to remind of.
        text: String,
    },
    /// The person's reminders.
    List,
    /// Cancel the one `reference` names.
    Cancel {
        /// Its number in the list or the start of its id.
        reference: String,
    },
    /// Move the one `reference` names to `when`.
    Move {
        /// Its number in the list or the start of its id.
        reference: String,
        /// The new time.
        when: When,
    },
    /// The person's own time zone from now on.
    Zone {
        /// Its IANA name.
        zone: String,
    },
    /// The person's own quiet hours from now on (none: never quiet, whatever the
    /// configuration says).
    Quiet {
        /// The window, or none.
        hours: Option<QuietHours>,
    },
}

/// Why a `/remind` command is refused (said back to the person, so in plain words).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    /// Nothing understood after `/remind`.
    #[error("usage: /remind in 20 minutes <what> | at 9:00 <what> | tomorrow at 9 <what> | 2026-12-01 09:00 <what> | every monday at 7:00 <what> | list | cancel <n> | move <n> <when> | zone Asia/Tokyo | quiet 22:00-07:00 | quiet off")]
    Usage,
    /// A time that is not one.
    #[error("I could not read the time {0:?}")]
    BadTime(String),
    /// A time already past.
    #[error("that time has already passed")]
    InThePast,
    /// Nothing to remind of.
    #[error("what should I remind you of?")]
    NoText,
    /// Quiet hours that are not a window.
    #[error("quiet hours read HH:MM-HH:MM (22:00-07:00), or off; I could not read {0:?}")]
    BadQuietHours(String),
    /// A zone nobody has.
    #[error("I do not know the time zone {0:?} (an IANA name such as Asia/Tokyo, or its city)")]
    UnknownZone(String),
    /// The time or rule.
    #[error("{0}")]
    Rule(#[from] ReminderRuleError),
}

/// `text` as a `/remind` command, or `None` when it is not one; `now` and `tz` resolve
/// relative and local times.
pub fn parse_remind(
    text: &str,
    now: DateTime<Utc>,
    tz: Tz,
) -> Option<Result<RemindCommand, CommandError>> {
    let rest = text.trim_start();
    let rest = rest.strip_prefix("/remind")?;
    if !(rest.is_empty() || rest.starts_with(char::is_whitespace)) {
        return None; // `/reminders`, `/remindme`: another word.
    }
    let words: Vec<&str> = rest.split_whitespace().collect();
    Some(parse_words(&words, now, tz))
}

fn parse_words(words: &[&str], now: DateTime<Utc>, tz: Tz) -> Result<RemindCommand, CommandError> {
    match words.first().map(|w| w.to_ascii_lowercase()).as_deref() {
        None => Err(CommandError::Usage),
        Some("list") if words.len() == 1 => Ok(RemindCommand::List),
        Some("zone") if words.len() >= 2 => {
            let name = words[1..].join(" ");
            zone_named(&name)
                .map(|tz| RemindCommand::Zone {
                    zone: tz.name().to_owned(),
                })
                .ok_or(CommandError::UnknownZone(name))
        }
        Some("quiet") if words.len() >= 2 => {
            let window = words[1..].join("");
            match window.to_ascii_lowercase().as_str() {
                "off" | "none" | "never" => Ok(RemindCommand::Quiet { hours: None }),
                _ => window
                    .parse::<QuietHours>()
                    .map(|hours| RemindCommand::Quiet { hours: Some(hours) })
                    .map_err(|_| CommandError::BadQuietHours(words[1..].join(" "))),
            }
        }
        Some("cancel") if words.len() == 2 => Ok(RemindCommand::Cancel {
            reference: words[1].to_owned(),
        }),
        Some("move") if words.len() >= 3 => {
            let (when, rest) = parse_when(&words[2..], now, tz)?;
            if !rest.is_empty() {
                return Err(CommandError::Usage);
            }
            Ok(RemindCommand::Move {
                reference: words[1].to_owned(),
                when,
            })
        }
        Some(_) => {
            let (when, rest) = parse_when(words, now, tz)?;
            let text = rest.join(" ");
            if text.trim().is_empty() {
                return Err(CommandError::NoText);
            }
            Ok(RemindCommand::Schedule { when, text })
        }
    }
}

/// A time phrase at the start of `words`, and the words after it.
fn parse_when<'a>(
    words: &'a [&'a str],
    now: DateTime<Utc>,
    tz: Tz,
) -> Result<(When, &'a [&'a str]), CommandError> {
    let lower: Vec<String> = words.iter().map(|w| w.to_ascii_lowercase()).collect();
    let word = |i: usize| lower.get(i).map(String::as_str).unwrap_or("");
    let today = now.with_timezone(&tz).date_naive();
    let once = |at: DateTime<Utc>| {
        if at <= now {
            Err(CommandError::InThePast)
        } else {
            Ok(When::Once(at))
        }
    };
    match word(0) {
        "in" => {
            let (secs, used) = parse_duration(&lower[1..])
                .ok_or_else(|| CommandError::BadTime(words[1..].join(" ")))?;
            // Whole seconds: a reminder is not timed to the microsecond.
            let at = (now + Duration::seconds(secs)).trunc_subsecs(0);
            Ok((When::In(at), &words[1 + used..]))
        }
        "at" => {
            let (time, used) = time_at(&lower, 1)?;
            let mut at = local_to_utc(today.and_time(time), tz)?;
            if at <= now {
                at = local_to_utc(next_day(today).and_time(time), tz)?;
            }
            Ok((When::Once(at), &words[1 + used..]))
        }
        "tomorrow" => {
            let skip = usize::from(word(1) == "at");
            let (time, used) = time_at(&lower, 1 + skip)?;
            let at = local_to_utc(next_day(today).and_time(time), tz)?;
            Ok((once(at)?, &words[1 + skip + used..]))
        }
        "every" => parse_every(words, &lower, now, tz),
        w => {
            let date = NaiveDate::parse_from_str(w, "%Y-%m-%d")
                .map_err(|_| CommandError::BadTime(words[0].to_owned()))?;
            let (time, used) = time_at(&lower, 1)?;
            let at = local_to_utc(date.and_time(time), tz)?;
            Ok((once(at)?, &words[1 + used..]))
        }
    }
}

fn next_day(d: NaiveDate) -> NaiveDate {
    d.succ_opt().unwrap_or(d)
}

/// `every <day|weekday|monday..|month on N> [at] <time>`.
fn parse_every<'a>(
    words: &'a [&'a str],
    lower: &[String],
    now: DateTime<Utc>,
    tz: Tz,
) -> Result<(When, &'a [&'a str]), CommandError> {
    let word = |i: usize| lower.get(i).map(String::as_str).unwrap_or("");
    let (by, mut i) = match word(1) {
        "day" => ("FREQ=DAILY".to_owned(), 2),
        "weekday" => ("FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR".to_owned(), 2),
        "month" if word(2) == "on" => {
            let day: u32 = word(3)
                .trim_end_matches(|c: char| c.is_ascii_alphabetic())
                .parse()
                .ok()
                .filter(|d| (1..=31).contains(d))
                .ok_or_else(|| CommandError::BadTime(word(3).to_owned()))?;
            (format!("FREQ=MONTHLY;BYMONTHDAY={day}"), 4)
        }
        d => {
            let day = weekday_code(d).ok_or(CommandError::Usage)?;
            (format!("FREQ=WEEKLY;BYDAY={day}"), 2)
        }
    };
    if word(i) == "at" {
        i += 1;
    }
    let (time, used) = time_at(lower, i)?;
    let rule = format!(
        "{by};BYHOUR={};BYMINUTE={};BYSECOND=0",
        time.format("%-H"),
        time.format("%-M")
    );
    // Started at today's local midnight; the first occurrence is the first after now.
    let today = now.with_timezone(&tz).date_naive();
    let start = local_to_utc(today.and_time(NaiveTime::MIN), tz)
        .or_else(|_| local_to_utc(today.and_hms_opt(1, 0, 0).unwrap_or_default(), tz))?;
    let first = next_after(&rule, start, tz, now)?.ok_or(CommandError::Usage)?;
    Ok((When::Every { rule, first }, &words[i + used..]))
}

fn weekday_code(word: &str) -> Option<&'static str> {
    let days = [
        ("monday", "MO"),
        ("tuesday", "TU"),
        ("wednesday", "WE"),
        ("thursday", "TH"),
        ("friday", "FR"),
        ("saturday", "SA"),
        ("sunday", "SU"),
    ];
    days.iter()
        .find(|(name, _)| *name == word || name.trim_end_matches("day") == word)
        .map(|(_, code)| *code)
}

/// A time of day at `lower[i]`: `9`, `9:30`, `09:30`, `9am`, `7pm`; how many words it took.
fn time_at(lower: &[String], i: usize) -> Result<(NaiveTime, usize), CommandError> {
    let w = lower.get(i).ok_or(CommandError::Usage)?;
    let bad = || CommandError::BadTime(w.clone());
    let (digits, pm) = if let Some(d) = w.strip_suffix("pm") {
        (d, Some(true))
    } else if let Some(d) = w.strip_suffix("am") {
        (d, Some(false))
    } else {
        (w.as_str(), None)
    };
    let (h, m) = match digits.split_once(':') {
        Some((h, m)) => (h, m),
        None => (digits, "0"),
    };
    let mut hour: u32 = h.parse().map_err(|_| bad())?;
    let minute: u32 = m.parse().map_err(|_| bad())?;
    match pm {
        Some(true) if (1..12).contains(&hour) => hour += 12,
        Some(false) if hour == 12 => hour = 0,
        Some(_) if hour > 12 || hour == 0 => return Err(bad()),
        _ => {}
    }
    NaiveTime::from_hms_opt(hour, minute, 0)
        .map(|t| (t, 1))
        .ok_or_else(bad)
}

/// `20 minutes`, `20m`, `2h`, `1 day`: seconds, and how many words it took.
fn parse_duration(lower: &[String]) -> Option<(i64, usize)> {
    let first = lower.first()?;
    let split = first
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(first.len());
    let (n, unit, used) = if split == first.len() {
        (first.as_str(), lower.get(1)?.as_str(), 2)
    } else {
        (&first[..split], &first[split..], 1)
    };
    let n: i64 = n.parse().ok().filter(|n| *n > 0 && *n <= 366 * 24 * 60)?;
    let unit_secs = match unit {
        "m" | "min" | "mins" | "minute" | "minutes" => 60,
        "h" | "hr" | "hrs" | "hour" | "hours" => 3600,
        "d" | "day" | "days" => 86_400,
        _ => return None,
    };
    Some((n * unit_secs, used))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reminders::parse_zone;

    fn utc(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    fn schedule(text: &str, now: &str, zone: &str) -> (When, String) {
        match parse_remind(text, utc(now), parse_zone(zone).unwrap()) {
            Some(Ok(RemindCommand::Schedule { when, text })) => (when, text),
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn relative_and_absolute_times_resolve_in_the_persons_zone() {
        let now = "2026-11-29T12:00:00Z"; // 21:00 in Tokyo, 07:00 in New York
        let (when, text) = schedule("/remind in 20 minutes take the pasta out", now, "UTC");
        assert_eq!(when, When::In(utc("2026-11-29T12:20:00Z")));
        assert_eq!(text, "take the pasta out");
        let (when, _) = schedule("/remind in 2h x", now, "UTC");
        assert_eq!(when.first(), utc("2026-11-29T14:00:00Z"));
        // "tomorrow at 9" is 9 in the morning where the person is.
        let (tokyo, _) = schedule("/remind tomorrow at 9 call Mom", now, "Asia/Tokyo");
        assert_eq!(tokyo, When::Once(utc("2026-11-30T00:00:00Z")));
        let (ny, _) = schedule("/remind tomorrow at 9 call Mom", now, "America/New_York");
        assert_eq!(ny, When::Once(utc("2026-11-30T14:00:00Z")));
        // "at 9:00" already past today in Tokyo: tomorrow's.
        let (at, _) = schedule("/remind at 9:00 call Mom", now, "Asia/Tokyo");
        assert_eq!(at.first(), utc("2026-11-30T00:00:00Z"));
        let (date, _) = schedule("/remind 2026-12-01 09:00 pay the rent", now, "UTC");
        assert_eq!(date.first(), utc("2026-12-01T09:00:00Z"));
    }

    #[test]
    fn recurring_reminders_are_rrules_in_local_time() {
        let now = "2026-11-29T12:00:00Z"; // a Sunday
        let (when, text) = schedule(
            "/remind every monday at 7:00 take out the trash",
            now,
            "Asia/Tokyo",
        );
        assert_eq!(text, "take out the trash");
        assert_eq!(
            when.rule(),
            Some("FREQ=WEEKLY;BYDAY=MO;BYHOUR=7;BYMINUTE=0;BYSECOND=0")
        );
        assert_eq!(when.first(), utc("2026-11-29T22:00:00Z"), "Mon 07:00 JST");
        let (rent, _) = schedule("/remind every month on 1 at 9 rent?", now, "UTC");
        assert_eq!(rent.first(), utc("2026-12-01T09:00:00Z"));
    }

    #[test]
    fn list_cancel_move_and_refusals() {
        let now = utc("2026-11-29T12:00:00Z");
        let tz = parse_zone("UTC").unwrap();
        assert_eq!(
            parse_remind("/remind list", now, tz),
            Some(Ok(RemindCommand::List))
        );
        assert_eq!(
            parse_remind("/remind cancel 2", now, tz),
            Some(Ok(RemindCommand::Cancel {
                reference: "2".into()
            }))
        );
        assert!(matches!(
            parse_remind("/remind move 1 tomorrow at 10", now, tz),
            Some(Ok(RemindCommand::Move { .. }))
        ));
        assert_eq!(
            parse_remind("/remind zone new york", now, tz),
            Some(Ok(RemindCommand::Zone {
                zone: "America/New_York".into()
            }))
        );
        assert_eq!(
            parse_remind("/remind zone Atlantis", now, tz),
            Some(Err(CommandError::UnknownZone("Atlantis".into())))
        );
        assert_eq!(parse_remind("hello", now, tz), None);
        assert_eq!(parse_remind("/reminders", now, tz), None);
        assert_eq!(
            parse_remind("/remind", now, tz),
            Some(Err(CommandError::Usage))
        );
        assert_eq!(
            parse_remind("/remind in 20 minutes", now, tz),
            Some(Err(CommandError::NoText))
        );
        assert_eq!(
            parse_remind("/remind 2020-01-01 09:00 x", now, tz),
            Some(Err(CommandError::InThePast))
        );
        assert!(matches!(
            parse_remind("/remind at 25:00 x", now, tz),
            Some(Err(CommandError::BadTime(_)))
        ));
    }

    #[test]
    fn quiet_hours_are_a_window_or_off() {
        let now = utc("2026-11-29T12:00:00Z");
        let tz = parse_zone("UTC").unwrap();
        let quiet = |text: &str| parse_remind(text, now, tz).unwrap();
        assert_eq!(
            quiet("/remind quiet 22:00-07:00"),
            Ok(RemindCommand::Quiet {
                hours: Some("22:00-07:00".parse().unwrap())
            })
        );
        assert_eq!(
            quiet("/remind quiet 22:00 - 07:00"),
            quiet("/remind quiet 22:00-07:00")
        );
        assert_eq!(
            quiet("/remind quiet off"),
            Ok(RemindCommand::Quiet { hours: None })
        );
        assert_eq!(
            quiet("/remind quiet tonight"),
            Err(CommandError::BadQuietHours("tonight".into()))
        );
    }
}

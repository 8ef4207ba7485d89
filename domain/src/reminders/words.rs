//! A reminder asked in words, in English or Japanese ("remind me tomorrow at 9 to call Mom",
//! 毎週月曜の朝7時にゴミ出しを教えて, "what are my reminders?", "cancel the rent one"):
//! [`understand`] reads the time phrase and the task and gives the [`RemindCommand`] that
//! says the same as `/remind` would (one parser, one set of rules, and the person is shown
//! the fixed form), a question when the time could mean two things, or nothing when the
//! message does not ask for a reminder.
//!
//! Read by rules, not by the model: the embedded SmolLM2 (135M) was tried on this as a JSON
//! contract and read 0 of 12 such messages right (made-up hours, "list" for everything;
//! BENCHMARKS.md), and a reminder at a wrong time is worse than none. The rules need a cue
//! ("remind me", "tell me to", 教えて, リマインド) and a time phrase; a bare "at 7" that
//! could be tonight or tomorrow morning is asked back, never guessed.

mod phrase;

use std::ops::Range;
use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use regex::{Captures, Regex};
use unicode_normalization::UnicodeNormalization;

use super::command::{parse_remind, CommandError, RemindCommand};
pub use phrase::DEFAULT_HOUR;
use phrase::{kanji_value, read_time, when_of, Unclear, KANJI_NUMBER};

/// What a message comes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Understood {
    /// Not about reminders: the message goes on to routing as any other.
    NotAReminder,
    /// A command, and the `/remind` text that says the same (shown to the person).
    Command {
        /// The command.
        command: RemindCommand,
        /// The same in the `/remind` form.
        as_command: String,
    },
    /// A time that could mean two things: asked back, nothing scheduled.
    Ambiguous {
        /// The readings, in the person's local time (`2026-11-29 19:00`).
        readings: Vec<String>,
    },
    /// A reminder asked for, but its time or task is missing or not one: said back.
    NotUnderstood(String),
}

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("a reminder phrase pattern")
}

/// "remind me to …", リマインド, 思い出させて: asks for a reminder, with or without a time.
static ASK: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:please\s+|can\s+you\s+|could\s+you\s+)?remind\s+me(?:\s+(?:to|about|that|of))?\b|(?:ことを|のを|を|と|って)?(?:リマインドして|思い出させて)(?:ください|くれる|ね|よ)?",
    )
});
/// "remind me what …", "remind me who …": a question about the past, not a reminder.
static ASK_ABOUT_THE_PAST: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\bremind\s+me[\s,:]+(?:what|who|whose|how|where|when|why|which|whether|if|of\s+your)\b",
    )
});
/// "remind me to …", "remind me about …", リマインドして: a reminder even before its time is said
/// (then the time is asked for); "remind me, which town …" is a question.
static ASK_FOR_A_TASK: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)\bremind\s+me\s+(?:to|about)\b|リマインドして|思い出させて"));
/// "tell me to …", 教えて, 知らせて: a reminder only with a time phrase.
static ASK_WITH_A_TIME: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:please\s+|can\s+you\s+|could\s+you\s+)?(?:tell|ask|ping)\s+me(?:\s+(?:to|about|if))?\b|(?:ことを|のを|ように|を|と|って)?(?:教えて|知らせて|言って|声をかけて|聞いて)(?:ください|くれる|ね|よ)?",
    )
});
static LIST: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:what|which|show|list|see|check)\b.*\breminders\b|\bmy\s+reminders\b|リマインダー|リマインド(?:の)?(?:一覧|確認)",
    )
});
static CANCEL: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:cancel|delete|remove|drop)\b|キャンセル(?:して)?|取り消して|取り消し|消して|削除(?:して)?",
    )
});
static MOVE: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)\b(?:move|change|push|reschedule)\b|変更(?:して)?|ずらして|移して"));
/// "my time zone is Tokyo", "set my time zone to Asia/Tokyo", タイムゾーンをAsia/Tokyoにして.
static ZONE: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:my\s+time\s*zone\s+is|set\s+my\s+time\s*zone\s+to|i\s+am\s+on|i'm\s+on)\s+([A-Za-z_/ ]+?)(?:\s+time)?\s*[.!]?$|タイムゾーン(?:は|を)\s*([A-Za-z_/ ]+?)\s*(?:に(?:して|設定して|変えて)|です|で)?\s*[。.!！]?$",
    )
});
/// "my quiet hours are 22:00-07:00", "don't remind me between 23:00 and 6:30",
/// 22時から7時までは通知しないで; "no quiet hours", 静かな時間をなしにして.
static QUIET: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)(?:\bquiet\s+hours?\s*(?:are|is|:|to|from)?|\bdon'?t\s+(?:remind|message|ping|bother)\s+me\s+(?:between|from))\s*(\d{1,2})(?::(\d{2}))?\s*(?:-|to|and|until)\s*(\d{1,2})(?::(\d{2}))?\b|(\d{1,2})(?:[:時](\d{2})?分?)\s*(?:-|〜|～|から)\s*(\d{1,2})(?:[:時](\d{2})?分?)\s*(?:まで)?\s*(?:は)?\s*(?:通知しないで|連絡しないで|静かにして|リマインドしないで)",
    )
});
static NO_QUIET: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:no\s+(?:more\s+)?quiet\s+hours|turn\s+off\s+(?:my\s+)?quiet\s+hours|(?:remove|clear|cancel)\s+(?:my\s+)?quiet\s+hours)\b|静かな時間を?(?:なしに|解除|やめ)",
    )
});
static REMINDER_WORD: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)\b(?:the\s+)?reminders?\b|\bone\b|リマインダー|リマインド|の(?:やつ|件)")
});

/// Whether `message` names a change (cancel, move): the caller then says whether the
/// speaker has reminders to change ([`understand`]'s `has_reminders`).
pub fn names_a_change(message: &str) -> bool {
    let text: String = message.nfkc().collect();
    CANCEL.is_match(&text) || MOVE.is_match(&text)
}

/// What `message` (said at `now`, in the person's zone `tz`) comes to; `has_reminders`:
/// whether the speaker has reminders to come (only then is "cancel"/"move" about them).
pub fn understand(message: &str, now: DateTime<Utc>, tz: Tz, has_reminders: bool) -> Understood {
    let nfkc: String = message.nfkc().collect();
    let text = KANJI_NUMBER
        .replace_all(&nfkc, |c: &Captures| {
            format!("{}{}", kanji_value(&c[1]), &c[2])
        })
        .into_owned();
    if let Some(c) = ZONE.captures(&text) {
        let name = c.get(1).or(c.get(2)).map_or("", |m| m.as_str().trim());
        return command_of(&format!("/remind zone {name}"), String::new(), now, tz);
    }
    if NO_QUIET.is_match(&text) {
        return command_of("/remind quiet off", String::new(), now, tz);
    }
    if let Some(c) = QUIET.captures(&text) {
        // Groups 1-4 are the English form, 5-8 the Japanese one.
        let part = |i: usize| c.get(i).or(c.get(i + 4)).map_or("", |m| m.as_str());
        let hhmm = |h: usize, m: usize| {
            let minutes = if part(m).is_empty() { "0" } else { part(m) };
            format!("{:0>2}:{:0>2}", part(h), minutes)
        };
        let window = format!("{}-{}", hhmm(1, 2), hhmm(3, 4));
        return command_of(&format!("/remind quiet {window}"), String::new(), now, tz);
    }
    let time = read_time(&text);
    let asks = ASK
        .find(&text)
        .filter(|_| !ASK_ABOUT_THE_PAST.is_match(&text));
    let asks_with_a_time = ASK_WITH_A_TIME.find(&text);
    let has_when = time.after_secs.is_some() || time.clock.is_some() || time.repeat.is_some();

    if has_reminders && asks.is_none() {
        if let Some(cue) = CANCEL.find(&text).filter(|_| !has_when) {
            let reference = remainder(&text, &[cue.range()], &time.spans, true);
            return command_of(
                &format!("/remind cancel {}", hyphened(&reference)),
                reference,
                now,
                tz,
            );
        }
        if let Some(cue) = MOVE.find(&text).filter(|_| has_when) {
            let reference = remainder(&text, &[cue.range()], &time.spans, true);
            return match when_of(&time, now, tz) {
                Ok(when) => command_of(
                    &format!("/remind move {} {when}", hyphened(&reference)),
                    reference,
                    now,
                    tz,
                ),
                Err(unclear) => unclear.into(),
            };
        }
    }
    if LIST.is_match(&text) && !has_when {
        return command_of("/remind list", String::new(), now, tz);
    }
    let cue = match (asks, asks_with_a_time) {
        (Some(cue), _) => cue,
        (None, Some(cue)) if has_when => cue,
        _ => return Understood::NotAReminder,
    };
    if !has_when {
        if !ASK_FOR_A_TASK.is_match(&text) && time.day.is_none() {
            return Understood::NotAReminder;
        }
        return Understood::NotUnderstood(if time.day.is_some() {
            "at what time?".into()
        } else {
            "when should I remind you?".into()
        });
    }
    let mut cues = vec![cue.range()];
    // Every cue found leaves the task, not only the one that decided.
    cues.extend(asks_with_a_time.map(|m| m.range()));
    let what = remainder(&text, &cues, &time.spans, false);
    if what.is_empty() {
        return Understood::NotUnderstood(CommandError::NoText.to_string());
    }
    match when_of(&time, now, tz) {
        Ok(when) => command_of(&format!("/remind {when} {what}"), what, now, tz),
        Err(unclear) => unclear.into(),
    }
}

/// `command` parsed as `/remind` would; a reference keeps its words (the grammar takes one).
fn command_of(command: &str, words: String, now: DateTime<Utc>, tz: Tz) -> Understood {
    let parsed = match parse_remind(command, now, tz) {
        Some(Ok(c)) => c,
        Some(Err(e)) => return Understood::NotUnderstood(e.to_string()),
        None => return Understood::NotUnderstood(CommandError::Usage.to_string()),
    };
    let command_read = match parsed {
        RemindCommand::Cancel { .. } => RemindCommand::Cancel { reference: words },
        RemindCommand::Move { when, .. } => RemindCommand::Move {
            reference: words,
            when,
        },
        other => other,
    };
    Understood::Command {
        command: command_read,
        as_command: command.to_owned(),
    }
}

fn hyphened(words: &str) -> String {
    let joined = words.split_whitespace().collect::<Vec<_>>().join("-");
    if joined.is_empty() {
        "?".into()
    } else {
        joined
    }
}

impl From<Unclear> for Understood {
    fn from(u: Unclear) -> Self {
        match u {
            Unclear::Ambiguous(readings) => Understood::Ambiguous { readings },
            Unclear::Not(why) => Understood::NotUnderstood(why),
        }
    }
}

/// Leading words that join a cue to its task ("remind me *to* …", "*about* rent").
static LEADING_FILLER: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^(?:(?:and|please|to|me|about|that|of|the|on|at|for|so|i\s+need\s+to|i\s+have\s+to)\b\s*|[、,.:;!?の]\s*|に|は)+",
    )
});
/// Trailing words and particles (…を教えて has lost 教えて; "…, please").
static TRAILING_FILLER: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)(?:\s*(?:please|thanks|thank\s+you|ok|okay)\b|\s*[、,.:;!?。！？]|ことを|のを|ように|こと|を|って|と|に|の|は)+$",
    )
});

/// `text` without the cue and time phrases: the task (or, for `reference`, the words that
/// name a reminder, without "the … one").
fn remainder(text: &str, cues: &[Range<usize>], spans: &[Range<usize>], reference: bool) -> String {
    let mut cut: Vec<Range<usize>> = cues.iter().chain(spans).cloned().collect();
    cut.sort_by_key(|r| r.start);
    let mut kept = String::new();
    let mut at = 0;
    for r in cut {
        if r.start >= at {
            kept.push_str(&text[at..r.start]);
            kept.push(' ');
        }
        at = at.max(r.end);
    }
    kept.push_str(&text[at..]);
    if reference {
        kept = REMINDER_WORD.replace_all(&kept, " ").into_owned();
    }
    let mut words = kept.split_whitespace().collect::<Vec<_>>().join(" ");
    loop {
        let before = words.len();
        words = LEADING_FILLER.replace(&words, "").trim().to_owned();
        words = TRAILING_FILLER.replace(&words, "").trim().to_owned();
        if words.len() == before {
            return words;
        }
    }
}

#[cfg(test)]
mod tests;

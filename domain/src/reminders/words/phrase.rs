//! Time phrases in a message ("tomorrow at 9", "in 20 minutes", "every first of the month",
//! 毎週月曜の朝7時, 30分後): what they say ([`read_time`]) and the same in the `/remind`
//! grammar ([`when_of`]), where an hour that could be tonight's or tomorrow morning's is
//! [`Unclear::Ambiguous`].

use std::ops::Range;
use std::sync::LazyLock;

use chrono::{DateTime, Datelike, Duration, NaiveTime, Timelike, Utc, Weekday};
use chrono_tz::Tz;
use regex::Regex;

use super::re;
use crate::reminders::recurrence::local_to_utc;

/// The hour used when a monthly reminder names no time of day ("every first of the month").
pub const DEFAULT_HOUR: u32 = 9;

/// Weekdays by their full names ("sat" and "sun" are words too).
const WEEKDAY: &str = "monday|tuesday|wednesday|thursday|friday|saturday|sunday";
const ORDINAL: &str = r"\d{1,2}(?:st|nd|rd|th)?|first|second|third|fourth|fifth";

/// Kanji numerals before a counter (七時, 十五分, 三日): read as digits.
pub(super) static KANJI_NUMBER: LazyLock<Regex> =
    LazyLock::new(|| re(r"([〇一二三四五六七八九十]+)(時間|時|分|日|週)"));

static IN_EN: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)\bin\s+(\d{1,3}|an?|half\s+an?)\s*(minutes?|mins?|hours?|hrs?|days?)\b")
});
static IN_JA: LazyLock<Regex> =
    LazyLock::new(|| re(r"(\d{1,3})\s*(分|時間|日)\s*(?:後|ご)(?:に|で)?"));
static DAILY: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:every\s*day|everyday|daily|each\s+day|every\s+(?:morning|evening|night))\b|毎日(?:の)?",
    )
});
/// 毎朝, 毎晩: every day, the 朝/晩 left to the clock (毎朝7時).
static EVERY_DAY_PART_JA: LazyLock<Regex> = LazyLock::new(|| re(r"毎(?:朝|晩|夜)"));
static WEEKDAYS: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)\b(?:every\s+weekday|on\s+weekdays|weekdays)\b|平日(?:の)?(?:毎日)?(?:の)?")
});
static WEEKLY_EN: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r"(?i)\b(?:(?:every|each)\s+({WEEKDAY})|on\s+({WEEKDAY})s)\b"
    ))
});
static WEEKLY_JA: LazyLock<Regex> =
    LazyLock::new(|| re(r"毎週\s*([月火水木金土日])曜(?:日)?(?:の|に)?"));
static MONTHLY_EN: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r"(?i)\b(?:(?:every|each)\s+month\s+on\s+(?:the\s+)?({ORDINAL})|monthly\s+on\s+(?:the\s+)?({ORDINAL})|(?:every|each|on)\s+(?:the\s+)?({ORDINAL})\s+(?:day\s+)?of\s+(?:the|each|every)\s+month)\b"
    ))
});
static MONTHLY_JA: LazyLock<Regex> =
    LazyLock::new(|| re(r"毎月\s*(\d{1,2}|ついたち)\s*日?(?:の|に)?"));
static DAY_EN: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r"(?i)\b(the\s+day\s+after\s+tomorrow|tomorrow|today|(?:on\s+|next\s+|this\s+)?({WEEKDAY}))\b"
    ))
});
static DAY_JA: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(明後日|あさって|明日|あした|あす|今日|(?:今度の|次の|来週の)?([月火水木金土日])曜(?:日)?)(?:の|に)?",
    )
});
static CLOCK_EN: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)\b(?:(?:at|to|by)\s+)?(\d{1,2})(?::(\d{2}))?\s*(a\.?m\.?|p\.?m\.?)(?:\s|$|[,.!?])|\b(?:at|to|by)\s+(\d{1,2})(?::(\d{2}))?(?:\s*o'clock)?\b|\b(\d{1,2}):(\d{2})\b|\b(?:at\s+)?(noon|midnight)\b",
    )
});
static CLOCK_JA: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?:(朝|午前|午後|夜|晩|夕方|夕|昼)(?:の)?)?\s*(\d{1,2})\s*時\s*(?:(\d{1,2})\s*分|(半))?(?:に|から|頃|ごろ)?|正午(?:に)?",
    )
});
static DAY_PART_EN: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)\b(?:in\s+the\s+|this\s+)?(morning|afternoon|evening|tonight|night)\b")
});

/// When a message says it.
#[derive(Debug, Default)]
pub(super) struct TimeSaid {
    /// "in 20 minutes": seconds.
    pub(super) after_secs: Option<i64>,
    /// Days from today (tomorrow: 1), or a weekday.
    pub(super) day: Option<DaySaid>,
    /// The clock time and its minute.
    pub(super) clock: Option<(HourSaid, u32)>,
    pub(super) repeat: Option<Repeat>,
    /// Where the phrases are, to take them out of the task.
    pub(super) spans: Vec<Range<usize>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum DaySaid {
    In(i64),
    On(Weekday),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Repeat {
    Daily,
    Weekdays,
    Weekly(Weekday),
    Monthly(u32),
}

/// An hour as the message says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum HourSaid {
    /// Fixed: 24-hour form, or a day-part named (7pm, 夜7時, 朝7時).
    Exact(u32),
    /// 1-12 with nothing saying which half of the day.
    Bare(u32),
}

impl HourSaid {
    /// With a day named or a repetition: 6-11 in the morning, 1-5 in the afternoon (nobody
    /// asks for 3 a.m. without saying so), 12 at noon.
    fn usual(self) -> u32 {
        match self {
            HourSaid::Exact(h) => h,
            HourSaid::Bare(h) if (1..=5).contains(&h) => h + 12,
            HourSaid::Bare(h) => h,
        }
    }

    /// The hours it may mean when no day is named (night hours dropped).
    fn candidates(self) -> Vec<u32> {
        match self {
            HourSaid::Exact(h) => vec![h],
            HourSaid::Bare(12) => vec![12],
            HourSaid::Bare(h) if (1..=5).contains(&h) => vec![h + 12],
            HourSaid::Bare(h) => vec![h, h + 12],
        }
    }
}

pub(super) enum Unclear {
    /// The readings, in local time.
    Ambiguous(Vec<String>),
    /// Why it is no time.
    Not(String),
}

/// Every time phrase in `text`.
pub(super) fn read_time(text: &str) -> TimeSaid {
    let mut t = TimeSaid::default();
    let claimed = |t: &mut TimeSaid, r: Range<usize>| {
        let free = !t.spans.iter().any(|s| s.start < r.end && r.start < s.end);
        if free {
            t.spans.push(r);
        }
        free
    };
    if let Some(c) = IN_EN.captures(text) {
        let n = match c[1].to_lowercase().as_str() {
            "a" | "an" => Some(1.0),
            h if h.starts_with("half") => Some(0.5),
            n => n.parse::<f64>().ok(),
        };
        let unit = c[2].to_lowercase();
        let secs = if unit.starts_with('m') {
            60.0
        } else if unit.starts_with('h') {
            3600.0
        } else {
            86_400.0
        };
        if let Some(n) = n.filter(|n| *n > 0.0) {
            if claimed(&mut t, c.get(0).map_or(0..0, |m| m.range())) {
                t.after_secs = Some((n * secs) as i64);
            }
        }
    }
    if let Some(c) = IN_JA.captures(text) {
        let n: i64 = c[1].parse().unwrap_or(0);
        let secs = match &c[2] {
            "分" => 60,
            "時間" => 3600,
            _ => 86_400,
        };
        if n > 0 && claimed(&mut t, c.get(0).map_or(0..0, |m| m.range())) {
            t.after_secs = Some(n * secs);
        }
    }
    if let Some(c) = MONTHLY_EN.captures(text) {
        let n = (1..=3)
            .find_map(|i| c.get(i))
            .and_then(|m| ordinal(m.as_str()));
        if let Some(n) = n.filter(|n| (1..=31).contains(n)) {
            if claimed(&mut t, c.get(0).map_or(0..0, |m| m.range())) {
                t.repeat = Some(Repeat::Monthly(n));
            }
        }
    }
    if let Some(c) = MONTHLY_JA.captures(text) {
        let n = if &c[1] == "ついたち" {
            Some(1)
        } else {
            c[1].parse().ok()
        };
        if let Some(n) = n.filter(|n| (1..=31).contains(n)) {
            if claimed(&mut t, c.get(0).map_or(0..0, |m| m.range())) {
                t.repeat = Some(Repeat::Monthly(n));
            }
        }
    }
    for (pattern, repeat) in [(&*WEEKDAYS, Repeat::Weekdays), (&*DAILY, Repeat::Daily)] {
        if let Some(m) = pattern.find(text) {
            if t.repeat.is_none() && claimed(&mut t, m.range()) {
                t.repeat = Some(repeat);
            }
        }
    }
    if let Some(m) = EVERY_DAY_PART_JA.find(text) {
        if t.repeat.is_none() && claimed(&mut t, m.start()..m.start() + '毎'.len_utf8()) {
            t.repeat = Some(Repeat::Daily);
        }
    }
    if let Some(c) = WEEKLY_EN.captures(text) {
        let day = c.get(1).or(c.get(2)).and_then(|m| weekday_en(m.as_str()));
        if let Some(day) = day {
            if t.repeat.is_none() && claimed(&mut t, c.get(0).map_or(0..0, |m| m.range())) {
                t.repeat = Some(Repeat::Weekly(day));
            }
        }
    }
    if let Some(c) = WEEKLY_JA.captures(text) {
        if let Some(day) = weekday_ja(&c[1]) {
            if t.repeat.is_none() && claimed(&mut t, c.get(0).map_or(0..0, |m| m.range())) {
                t.repeat = Some(Repeat::Weekly(day));
            }
        }
    }
    for c in DAY_EN.captures_iter(text).chain(DAY_JA.captures_iter(text)) {
        let word = c[1].to_lowercase();
        let day = match word.as_str() {
            "the day after tomorrow" | "明後日" | "あさって" => Some(DaySaid::In(2)),
            "tomorrow" | "明日" | "あした" | "あす" => Some(DaySaid::In(1)),
            "today" | "今日" => Some(DaySaid::In(0)),
            _ => c
                .get(2)
                .and_then(|m| weekday_en(m.as_str()).or_else(|| weekday_ja(m.as_str())))
                .map(DaySaid::On),
        };
        if let Some(day) = day {
            if t.day.is_none() && claimed(&mut t, c.get(0).map_or(0..0, |m| m.range())) {
                t.day = Some(day);
            }
        }
    }
    let part = DAY_PART_EN.captures(text);
    let (pm_word, am_word) = match part.as_ref().map(|c| c[1].to_lowercase()) {
        Some(p) if p == "morning" => (false, true),
        Some(_) => (true, false),
        None => (false, false),
    };
    if let Some(c) = CLOCK_JA.captures(text) {
        let whole = c.get(0).map_or(0..0, |m| m.range());
        let clock = if c.get(2).is_none() {
            Some((HourSaid::Exact(12), 0)) // 正午
        } else {
            let hour: u32 = c[2].parse().unwrap_or(99);
            let minute = match (c.get(3), c.get(4)) {
                (Some(m), _) => m.as_str().parse().unwrap_or(99),
                (None, Some(_)) => 30,
                _ => 0,
            };
            let said = match c.get(1).map(|m| m.as_str()) {
                Some("朝" | "午前") => Some(false),
                Some(_) => Some(true),
                None => None,
            };
            hour_of(hour, minute, said)
        };
        if let Some(clock) = clock {
            if claimed(&mut t, whole) {
                t.clock = Some(clock);
            }
        }
    }
    if t.clock.is_none() {
        if let Some(c) = CLOCK_EN.captures(text) {
            let whole = c.get(0).map_or(0..0, |m| m.range());
            let clock = if let Some(word) = c.get(8) {
                Some((
                    HourSaid::Exact(if word.as_str().eq_ignore_ascii_case("noon") {
                        12
                    } else {
                        0
                    }),
                    0,
                ))
            } else {
                let (h, m, ampm) = if let Some(h) = c.get(1) {
                    (h, c.get(2), c.get(3))
                } else if let Some(h) = c.get(4) {
                    (h, c.get(5), None)
                } else {
                    (c.get(6).expect("a clock match has an hour"), c.get(7), None)
                };
                let hour: u32 = h.as_str().parse().unwrap_or(99);
                let minute: u32 = m.map_or(Some(0), |m| m.as_str().parse().ok()).unwrap_or(99);
                let said = match ampm.map(|a| a.as_str().to_lowercase()) {
                    Some(a) => Some(a.starts_with('p')),
                    None if pm_word => Some(true),
                    None if am_word => Some(false),
                    None if h.as_str().starts_with('0') => Some(false),
                    None => None,
                };
                hour_of(hour, minute, said)
            };
            if let Some(clock) = clock {
                if claimed(&mut t, whole) {
                    t.clock = Some(clock);
                    if let Some(p) = part.and_then(|c| c.get(0)) {
                        claimed(&mut t, p.range());
                    }
                }
            }
        }
    }
    t
}

/// The hour `hour:minute` says, given whether the afternoon (`Some(true)`) or the morning
/// was named; `None` when it is no time.
fn hour_of(hour: u32, minute: u32, pm: Option<bool>) -> Option<(HourSaid, u32)> {
    if hour > 24 || minute > 59 {
        return None;
    }
    let said = match (hour, pm) {
        (24, _) => HourSaid::Exact(0),
        (0, _) | (13..=23, _) => HourSaid::Exact(hour),
        (12, Some(false)) => HourSaid::Exact(0),
        (12, Some(true)) => HourSaid::Exact(12),
        (h, Some(true)) => HourSaid::Exact(h + 12),
        (h, Some(false)) => HourSaid::Exact(h),
        (h, None) => HourSaid::Bare(h),
    };
    Some((said, minute))
}

/// The time phrase, in the `/remind` grammar.
pub(super) fn when_of(t: &TimeSaid, now: DateTime<Utc>, tz: Tz) -> Result<String, Unclear> {
    let not = |why: &str| Err(Unclear::Not(why.to_owned()));
    if let Some(secs) = t.after_secs {
        if t.repeat.is_some() {
            return not("a repeating reminder needs a time of day");
        }
        return Ok(format!("in {} minutes", (secs / 60).max(1)));
    }
    let clock = match (t.clock, t.repeat) {
        (Some(c), _) => c,
        (None, Some(Repeat::Monthly(_))) => (HourSaid::Exact(DEFAULT_HOUR), 0),
        (None, _) => return not("at what time?"),
    };
    let (hour, minute) = clock;
    let at = |h: u32| format!("{h}:{minute:02}");
    match t.repeat {
        Some(Repeat::Daily) => return Ok(format!("every day at {}", at(hour.usual()))),
        Some(Repeat::Weekdays) => return Ok(format!("every weekday at {}", at(hour.usual()))),
        Some(Repeat::Weekly(day)) => {
            return Ok(format!(
                "every {} at {}",
                weekday_word(day),
                at(hour.usual())
            ))
        }
        Some(Repeat::Monthly(n)) => {
            return Ok(format!("every month on {n} at {}", at(hour.usual())))
        }
        None => {}
    }
    let today = now.with_timezone(&tz).date_naive();
    let date = match t.day {
        Some(DaySaid::In(0)) | None => None,
        Some(DaySaid::In(n)) => Some(today + Duration::days(n)),
        Some(DaySaid::On(day)) => {
            let ahead =
                (7 + day.num_days_from_monday() - today.weekday().num_days_from_monday()) % 7;
            Some(today + Duration::days(i64::from(if ahead == 0 { 7 } else { ahead })))
        }
    };
    if let Some(date) = date {
        return Ok(format!("{} {}", date.format("%Y-%m-%d"), at(hour.usual())));
    }
    // No day named: the next time the clock shows it. A bare "7" is this evening's or
    // tomorrow morning's: when the two fall on different days, ask.
    let mut readings: Vec<DateTime<Utc>> = hour
        .candidates()
        .into_iter()
        .filter_map(|h| next_clock(h, minute, now, tz))
        .collect();
    readings.sort();
    match readings.as_slice() {
        [] => not("that time does not exist here"),
        [one] => Ok(format!("at {}", at(one.with_timezone(&tz).hour()))),
        [first, second, ..] => {
            let (first, second) = (first.with_timezone(&tz), second.with_timezone(&tz));
            if first.date_naive() == second.date_naive() {
                Ok(format!("at {}", at(first.hour())))
            } else {
                Err(Unclear::Ambiguous(
                    [first, second]
                        .iter()
                        .map(|t| t.format("%Y-%m-%d %H:%M").to_string())
                        .collect(),
                ))
            }
        }
    }
}

/// The next instant the clock in `tz` shows `hour:minute`.
fn next_clock(hour: u32, minute: u32, now: DateTime<Utc>, tz: Tz) -> Option<DateTime<Utc>> {
    let time = NaiveTime::from_hms_opt(hour, minute, 0)?;
    let today = now.with_timezone(&tz).date_naive();
    [today, today + Duration::days(1)]
        .into_iter()
        .filter_map(|d| local_to_utc(d.and_time(time), tz).ok())
        .find(|t| *t > now)
}

pub(super) fn kanji_value(kanji: &str) -> u32 {
    let digit = |c: char| {
        "〇一二三四五六七八九"
            .chars()
            .position(|k| k == c)
            .map(|v| v as u32)
    };
    match kanji.split_once('十') {
        Some((tens, ones)) => {
            let tens = if tens.is_empty() {
                1
            } else {
                tens.chars().filter_map(digit).fold(0, |a, d| a * 10 + d)
            };
            let ones = ones.chars().filter_map(digit).fold(0, |a, d| a * 10 + d);
            tens * 10 + ones
        }
        None => kanji.chars().filter_map(digit).fold(0, |a, d| a * 10 + d),
    }
}

fn ordinal(word: &str) -> Option<u32> {
    let word = word.to_lowercase();
    match word.as_str() {
        "first" => Some(1),
        "second" => Some(2),
        "third" => Some(3),
        "fourth" => Some(4),
        "fifth" => Some(5),
        w => w
            .trim_end_matches(|c: char| c.is_ascii_alphabetic())
            .parse()
            .ok(),
    }
}

fn weekday_en(word: &str) -> Option<Weekday> {
    let w = word.to_lowercase();
    let w = w
        .trim_start_matches("on ")
        .trim_start_matches("next ")
        .trim_start_matches("this ")
        .trim();
    Some(match w.get(..3)? {
        "mon" => Weekday::Mon,
        "tue" => Weekday::Tue,
        "wed" => Weekday::Wed,
        "thu" => Weekday::Thu,
        "fri" => Weekday::Fri,
        "sat" => Weekday::Sat,
        "sun" => Weekday::Sun,
        _ => return None,
    })
}

fn weekday_ja(kanji: &str) -> Option<Weekday> {
    Some(match kanji {
        "月" => Weekday::Mon,
        "火" => Weekday::Tue,
        "水" => Weekday::Wed,
        "木" => Weekday::Thu,
        "金" => Weekday::Fri,
        "土" => Weekday::Sat,
        "日" => Weekday::Sun,
        _ => return None,
    })
}

fn weekday_word(day: Weekday) -> &'static str {
    match day {
        Weekday::Mon => "monday",
        Weekday::Tue => "tuesday",
        Weekday::Wed => "wednesday",
        Weekday::Thu => "thursday",
        Weekday::Fri => "friday",
        Weekday::Sat => "saturday",
        Weekday::Sun => "sunday",
    }
}

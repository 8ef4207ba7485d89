//! When a message says it is about (issue 45 item 4): "last spring", "in October",
//! "yesterday", "three weeks ago", 先週, 来月, 去年の夏. Recall raises the memories said in
//! that period, or annotated as about it, above those that only share words. Rule-based
//! (recall makes no model call before the first token), English and Japanese, in whole
//! days of UTC, against the system's clock: a boost, not a filter, so a day's edge does
//! not matter.
//!
//! Years and stages of life are the retrieval plan's own time hint
//! ([`super::retrieval::time_hint`]); this is what is relative to now.

use std::sync::OnceLock;

use chrono::{DateTime, Datelike, Duration, NaiveDate, TimeZone, Utc};
use regex::Regex;
use serde::Serialize;

/// A period of time a message names, as Unix seconds `[start, end)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Period {
    /// First second.
    pub start_ts: i64,
    /// First second after it.
    pub end_ts: i64,
}

impl Period {
    fn days(from: NaiveDate, to_exclusive: NaiveDate) -> Self {
        let ts = |d: NaiveDate| {
            Utc.from_utc_datetime(&d.and_hms_opt(0, 0, 0).unwrap_or_default())
                .timestamp()
        };
        Self {
            start_ts: ts(from),
            end_ts: ts(to_exclusive),
        }
    }

    /// Whether `ts` (Unix seconds) falls in it.
    pub fn contains(&self, ts: i64) -> bool {
        (self.start_ts..self.end_ts).contains(&ts)
    }
}

/// The period `text` names, relative to `now`, if it names one (the first that matches).
pub fn mentioned_period(text: &str, now: DateTime<Utc>) -> Option<Period> {
    let lower = text.to_lowercase();
    let today = now.date_naive();
    relative_day(&lower, today)
        .or_else(|| units_ago(&lower, today))
        .or_else(|| named_week_month_year(&lower, today))
        .or_else(|| season(&lower, today))
        .or_else(|| month_named(&lower, today))
}

fn re(cell: &'static OnceLock<Regex>, pattern: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pattern).unwrap_or_else(|e| panic!("{pattern}: {e}")))
}

/// Whether `text` holds `word` as a whole English word (or anywhere, for Japanese).
fn has(text: &str, word: &str) -> bool {
    if !word.is_ascii() {
        return text.contains(word);
    }
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + word.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

fn relative_day(text: &str, today: NaiveDate) -> Option<Period> {
    let one = |d: NaiveDate| Some(Period::days(d, d + Duration::days(1)));
    if ["day before yesterday", "一昨日", "おととい"]
        .iter()
        .any(|w| has(text, w))
    {
        return one(today - Duration::days(2));
    }
    if ["yesterday", "昨日", "きのう"].iter().any(|w| has(text, w)) {
        return one(today - Duration::days(1));
    }
    if ["tomorrow", "明日", "あした"].iter().any(|w| has(text, w)) {
        return one(today + Duration::days(1));
    }
    if [
        "the other day",
        "recently",
        "先日",
        "この前",
        "この間",
        "最近",
    ]
    .iter()
    .any(|w| has(text, w))
    {
        return Some(Period::days(today - Duration::days(14), today));
    }
    if ["today", "this morning", "tonight", "今日", "けさ", "今朝"]
        .iter()
        .any(|w| has(text, w))
    {
        return one(today);
    }
    None
}

/// "3 days ago", "two weeks ago", "a month ago", 3日前, 2週間前, 半年前.
fn units_ago(text: &str, today: NaiveDate) -> Option<Period> {
    static EN: OnceLock<Regex> = OnceLock::new();
    static JA: OnceLock<Regex> = OnceLock::new();
    let en = re(
        &EN,
        r"\b(a|an|one|two|three|four|five|six|seven|eight|nine|ten|couple of|few|[0-9]{1,3})\s+(day|week|month|year)s?\s+ago\b",
    );
    let ja = re(
        &JA,
        r"([0-9０-９一二三四五六七八九十]{1,3}|数)\s*(日|週間|週|ヶ月|か月|カ月|ヵ月|年)前",
    );
    let (count, unit) = if let Some(c) = en.captures(text) {
        let n = match &c[1] {
            "a" | "an" | "one" => 1,
            "couple of" | "two" => 2,
            "few" | "three" => 3,
            "four" => 4,
            "five" => 5,
            "six" => 6,
            "seven" => 7,
            "eight" => 8,
            "nine" => 9,
            "ten" => 10,
            digits => digits.parse().ok()?,
        };
        let unit = match &c[2] {
            "day" => 'd',
            "week" => 'w',
            "month" => 'm',
            _ => 'y',
        };
        (n, unit)
    } else if let Some(c) = ja.captures(text) {
        let n = japanese_number(&c[1])?;
        let unit = match &c[2] {
            "日" => 'd',
            "週間" | "週" => 'w',
            "年" => 'y',
            _ => 'm',
        };
        (n, unit)
    } else if has(text, "半年前") || has(text, "half a year ago") {
        (6, 'm')
    } else {
        return None;
    };
    // The named point, with a margin as wide as the unit's vagueness.
    let (center, margin) = match unit {
        'd' => (today - Duration::days(count), Duration::days(1)),
        'w' => (today - Duration::weeks(count), Duration::days(4)),
        'm' => (shift_months(today, -(count as i32)), Duration::days(16)),
        _ => (shift_months(today, -12 * count as i32), Duration::days(183)),
    };
    let end = (center + margin).min(today + Duration::days(1));
    Some(Period::days(center - margin, end))
}

fn japanese_number(s: &str) -> Option<i64> {
    let ascii: String = s
        .chars()
        .map(|c| match c {
            '０'..='９' => char::from_u32(c as u32 - '０' as u32 + '0' as u32).unwrap_or(c),
            c => c,
        })
        .collect();
    if let Ok(n) = ascii.parse() {
        return Some(n);
    }
    if s == "数" {
        return Some(3);
    }
    let digit = |c: char| "〇一二三四五六七八九".chars().position(|d| d == c);
    match s.chars().collect::<Vec<_>>().as_slice() {
        ['十'] => Some(10),
        ['十', u] => Some(10 + digit(*u)? as i64),
        [t, '十'] => Some(digit(*t)? as i64 * 10),
        [t, '十', u] => Some(digit(*t)? as i64 * 10 + digit(*u)? as i64),
        [u] => Some(digit(*u)? as i64),
        _ => None,
    }
}

fn monday_of(day: NaiveDate) -> NaiveDate {
    day - Duration::days(i64::from(day.weekday().num_days_from_monday()))
}

fn first_of_month(year: i32, month: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(year, month, 1).unwrap_or_default()
}

fn shift_months(day: NaiveDate, by: i32) -> NaiveDate {
    let months = day.year() * 12 + day.month0() as i32 + by;
    let (year, month0) = (months.div_euclid(12), months.rem_euclid(12) as u32);
    let first = first_of_month(year, month0 + 1);
    let last_day = shift_first(first, 1).pred_opt().unwrap_or(first).day();
    first.with_day(day.day().min(last_day)).unwrap_or(first)
}

/// The first of the month `by` months after the month starting at `first`.
fn shift_first(first: NaiveDate, by: i32) -> NaiveDate {
    let months = first.year() * 12 + first.month0() as i32 + by;
    first_of_month(months.div_euclid(12), months.rem_euclid(12) as u32 + 1)
}

fn named_week_month_year(text: &str, today: NaiveDate) -> Option<Period> {
    let week = monday_of(today);
    let month = first_of_month(today.year(), today.month());
    let year = first_of_month(today.year(), 1);
    let weeks = |from: NaiveDate| Some(Period::days(from, from + Duration::weeks(1)));
    let months = |from: NaiveDate| Some(Period::days(from, shift_first(from, 1)));
    let years = |from: NaiveDate| Some(Period::days(from, shift_first(from, 12)));
    let any = |words: &[&str]| words.iter().any(|w| has(text, w));
    if any(&["last week", "先週"]) {
        return weeks(week - Duration::weeks(1));
    }
    if any(&["this week", "今週"]) {
        return weeks(week);
    }
    if any(&["next week", "来週"]) {
        return weeks(week + Duration::weeks(1));
    }
    if any(&["last month", "先月"]) {
        return months(shift_first(month, -1));
    }
    if any(&["this month", "今月"]) {
        return months(month);
    }
    if any(&["next month", "来月"]) {
        return months(shift_first(month, 1));
    }
    // A season's "last" is handled with the season ("last spring").
    let season_follows = ["spring", "summer", "autumn", "fall", "winter"]
        .iter()
        .any(|s| text.contains(&format!("last {s}")) || text.contains(&format!("this {s}")));
    if !season_follows && !has_season_ja(text) {
        if any(&["last year", "去年", "昨年"]) {
            return years(shift_first(year, -12));
        }
        if any(&["this year", "今年"]) {
            return years(year);
        }
        if any(&["next year", "来年"]) {
            return years(shift_first(year, 12));
        }
    }
    None
}

/// Seasons as the months that start them (northern hemisphere): spring March, summer June,
/// autumn September, winter December.
const SEASONS: &[(&[&str], u32)] = &[
    (&["spring", "春"], 3),
    (&["summer", "夏"], 6),
    (&["autumn", "fall", "秋"], 9),
    (&["winter", "冬"], 12),
];

fn has_season_ja(text: &str) -> bool {
    ["春", "夏", "秋", "冬"].iter().any(|s| text.contains(s))
}

fn season(text: &str, today: NaiveDate) -> Option<Period> {
    let (start_month, word) = SEASONS.iter().find_map(|(words, month)| {
        words
            .iter()
            .find(|w| has(text, w) && (w.is_ascii() || !text.contains("春雨")))
            .map(|w| (*month, *w))
    })?;
    // The season's latest start not after today (a winter starting in December counts
    // from December of the year before, in January).
    let mut start = first_of_month(today.year(), start_month);
    if start > today {
        start = shift_first(start, -12);
    }
    let last_year = ["last year", "去年", "昨年"].iter().any(|w| has(text, w));
    let last = has(text, &format!("last {word}")) || last_year;
    let next = has(text, &format!("next {word}")) || ["来年"].iter().any(|w| has(text, w));
    let in_it = today < shift_first(start, 3);
    if has(text, &format!("this {word}")) || has(text, "今年") {
        // This year's, even when it is still to come.
        start = first_of_month(today.year(), start_month);
    }
    if last && (in_it || last_year) {
        // "last spring" said in spring is the one before; "去年の春" is last year's.
        start = shift_first(start, -12);
    }
    if next {
        start = shift_first(start, 12);
    }
    Some(Period::days(start, shift_first(start, 3)))
}

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// "in October", "last October", 10月 (not 10月10日's day alone): the month's latest start
/// not after today, or the year before's for "last".
fn month_named(text: &str, today: NaiveDate) -> Option<Period> {
    static JA: OnceLock<Regex> = OnceLock::new();
    let ja = re(&JA, r"([0-9０-９]{1,2}|十[一二]?|[一二三四五六七八九])月");
    let month = MONTHS
        .iter()
        .position(|m| {
            // "may" is a word too: only "in may", "last may", "may 3" and the like.
            if *m == "may" {
                [
                    "in may",
                    "last may",
                    "this may",
                    "of may",
                    "early may",
                    "late may",
                ]
                .iter()
                .any(|w| has(text, w))
            } else {
                has(text, m)
            }
        })
        .map(|i| i as u32 + 1)
        .or_else(|| {
            let c = ja.captures(text)?;
            let n = japanese_number(&c[1])?;
            (1..=12).contains(&n).then_some(n as u32)
        })?;
    let mut start = first_of_month(today.year(), month);
    if start > today {
        start = shift_first(start, -12);
    }
    let last = MONTHS
        .get(month as usize - 1)
        .is_some_and(|m| has(text, &format!("last {m}")))
        || ["last year", "去年", "昨年"].iter().any(|w| has(text, w));
    if last && start.year() == today.year() {
        start = shift_first(start, -12);
    }
    Some(Period::days(start, shift_first(start, 1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sunday 2026-11-29, noon UTC.
    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 29, 12, 0, 0).unwrap()
    }

    fn days(text: &str) -> Option<(String, String)> {
        let p = mentioned_period(text, now())?;
        let day = |ts: i64| {
            DateTime::from_timestamp(ts, 0)
                .unwrap()
                .date_naive()
                .to_string()
        };
        Some((day(p.start_ts), day(p.end_ts)))
    }

    fn span(a: &str, b: &str) -> Option<(String, String)> {
        Some((a.to_owned(), b.to_owned()))
    }

    #[test]
    fn days_weeks_and_months_relative_to_now_in_both_languages() {
        assert_eq!(
            days("what did I say yesterday?"),
            span("2026-11-28", "2026-11-29")
        );
        assert_eq!(days("昨日話したこと"), span("2026-11-28", "2026-11-29"));
        assert_eq!(
            days("last week I told you"),
            span("2026-11-16", "2026-11-23")
        );
        assert_eq!(days("先週の話"), span("2026-11-16", "2026-11-23"));
        assert_eq!(days("来月の予定"), span("2026-12-01", "2027-01-01"));
        assert_eq!(days("last month"), span("2026-10-01", "2026-11-01"));
        assert_eq!(days("去年のこと"), span("2025-01-01", "2026-01-01"));
    }

    #[test]
    fn units_ago_with_a_margin() {
        assert_eq!(days("3 days ago"), span("2026-11-25", "2026-11-27"));
        assert_eq!(days("two weeks ago"), span("2026-11-11", "2026-11-19"));
        assert_eq!(days("2週間前"), span("2026-11-11", "2026-11-19"));
        assert_eq!(days("三日前に"), span("2026-11-25", "2026-11-27"));
        assert_eq!(days("a month ago"), span("2026-10-13", "2026-11-14"));
    }

    #[test]
    fn seasons_and_months_named() {
        assert_eq!(days("last spring"), span("2026-03-01", "2026-06-01"));
        assert_eq!(days("去年の夏"), span("2025-06-01", "2025-09-01"));
        assert_eq!(days("in the summer"), span("2026-06-01", "2026-09-01"));
        assert_eq!(days("this winter"), span("2026-12-01", "2027-03-01"));
        assert_eq!(days("last winter"), span("2025-12-01", "2026-03-01"));
        assert_eq!(days("in October"), span("2026-10-01", "2026-11-01"));
        assert_eq!(days("last December"), span("2025-12-01", "2026-01-01"));
        assert_eq!(days("10月に行った"), span("2026-10-01", "2026-11-01"));
        assert_eq!(days("十二月"), span("2025-12-01", "2026-01-01"));
    }

    #[test]
    fn words_inside_other_words_and_plain_messages_name_no_period() {
        for text in [
            "Which city is my sibling living in these days?",
            "I may come later",
            "the springboard is broken",
            "hello",
            "",
        ] {
            assert_eq!(days(text), None, "{text}");
        }
    }
}

//! When a reminder is due: its first time, and for a recurring one the next occurrence of
//! its RRULE (RFC 5545, parsed by the `rrule` crate) in the person's time zone, so "every
//! Monday at 7" stays at 7 in the morning across a daylight-saving change.

use chrono::{DateTime, TimeZone, Utc};
use chrono_tz::Tz;

/// Why a reminder's time or rule is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReminderRuleError {
    /// Not an IANA zone name (`Asia/Tokyo`, `Europe/Berlin`).
    #[error("unknown time zone {0:?} (an IANA name such as Asia/Tokyo is expected)")]
    UnknownZone(String),
    /// Not an RRULE the `rrule` crate accepts.
    #[error("invalid recurrence rule {rule:?}: {why}")]
    InvalidRule {
        /// The rule as given.
        rule: String,
        /// The parser's reason.
        why: String,
    },
    /// More often than hourly: a reminder is not a metronome (and would nag).
    #[error("a reminder may repeat at most hourly (FREQ=SECONDLY and FREQ=MINUTELY are refused)")]
    TooFrequent,
    /// A wall-clock time the zone skips (a daylight-saving gap).
    #[error("{0} does not exist in {1} (the clocks skip it)")]
    NoSuchLocalTime(String, String),
}

/// The zone named `name` (IANA).
pub fn parse_zone(name: &str) -> Result<Tz, ReminderRuleError> {
    name.trim()
        .parse::<Tz>()
        .map_err(|_| ReminderRuleError::UnknownZone(name.to_owned()))
}

/// The zone a person names: an IANA name (`Asia/Tokyo`) or the city that ends one, in any
/// case, with spaces for underscores (`tokyo`, `New York`); `None` when it names none or
/// several.
pub fn zone_named(name: &str) -> Option<Tz> {
    let name = name.trim().trim_end_matches(['.', '!', '。']);
    if let Ok(tz) = parse_zone(name) {
        return Some(tz);
    }
    let wanted = name.to_lowercase().replace(' ', "_");
    if wanted.is_empty() {
        return None;
    }
    let mut matching = chrono_tz::TZ_VARIANTS.iter().filter(|tz| {
        let full = tz.name().to_lowercase();
        full == wanted || full.rsplit('/').next() == Some(wanted.as_str())
    });
    match (matching.next(), matching.next()) {
        (Some(one), None) => Some(*one),
        _ => None,
    }
}

/// The rule set of `rule` starting at `first`, seen in `tz`.
fn rule_set(
    rule: &str,
    first: DateTime<Utc>,
    tz: Tz,
) -> Result<rrule::RRuleSet, ReminderRuleError> {
    let invalid = |why: String| ReminderRuleError::InvalidRule {
        rule: rule.to_owned(),
        why,
    };
    let body = rule.trim().trim_start_matches("RRULE:");
    let upper = body.to_ascii_uppercase();
    if upper.contains("FREQ=SECONDLY") || upper.contains("FREQ=MINUTELY") {
        return Err(ReminderRuleError::TooFrequent);
    }
    let parsed: rrule::RRule<rrule::Unvalidated> = body
        .parse()
        .map_err(|e: rrule::RRuleError| invalid(e.to_string()))?;
    let start = first.with_timezone(&rrule::Tz::Tz(tz));
    parsed.build(start).map_err(|e| invalid(e.to_string()))
}

/// Refuses a rule that does not parse or repeats more often than hourly.
pub fn validate_rule(rule: &str, first: DateTime<Utc>, tz: Tz) -> Result<(), ReminderRuleError> {
    rule_set(rule, first, tz).map(|_| ())
}

/// The first occurrence of `rule` (started at `first`, local times in `tz`) strictly after
/// `after`; `None` when the rule has ended (`COUNT`, `UNTIL`).
pub fn next_after(
    rule: &str,
    first: DateTime<Utc>,
    tz: Tz,
    after: DateTime<Utc>,
) -> Result<Option<DateTime<Utc>>, ReminderRuleError> {
    let set = rule_set(rule, first, tz)?;
    // `after` is inclusive in the crate; two results, the first strictly later wins.
    let result = set.after(after.with_timezone(&rrule::Tz::Tz(tz))).all(2);
    Ok(result
        .dates
        .into_iter()
        .map(|d| d.with_timezone(&Utc))
        .find(|d| *d > after))
}

/// `local` (a wall-clock time in `tz`) as an instant: the earlier of two when the clocks go
/// back (said before the change), refused when they skip it.
pub fn local_to_utc(
    local: chrono::NaiveDateTime,
    tz: Tz,
) -> Result<DateTime<Utc>, ReminderRuleError> {
    tz.from_local_datetime(&local)
        .earliest()
        .map(|t| t.with_timezone(&Utc))
        .ok_or_else(|| ReminderRuleError::NoSuchLocalTime(local.to_string(), tz.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn a_zone_is_named_by_its_iana_name_or_its_city() {
        assert_eq!(zone_named("Asia/Tokyo"), Some(chrono_tz::Asia::Tokyo));
        assert_eq!(zone_named("tokyo"), Some(chrono_tz::Asia::Tokyo));
        assert_eq!(zone_named("New York."), Some(chrono_tz::America::New_York));
        assert_eq!(zone_named("Atlantis"), None);
        assert_eq!(zone_named(""), None);
    }

    #[test]
    fn a_weekly_rule_keeps_its_local_hour_across_a_daylight_saving_change() {
        let berlin = parse_zone("Europe/Berlin").unwrap();
        // Monday 2026-10-19 07:00 CEST (UTC+2) = 05:00 UTC.
        let first = utc("2026-10-19T05:00:00Z");
        let rule = "FREQ=WEEKLY;BYDAY=MO";
        let second = next_after(rule, first, berlin, first).unwrap().unwrap();
        assert_eq!(
            second,
            utc("2026-10-26T06:00:00Z"),
            "07:00 CET is 06:00 UTC"
        );
    }

    #[test]
    fn a_monthly_rule_in_tokyo_comes_on_the_first() {
        let tokyo = parse_zone("Asia/Tokyo").unwrap();
        let first = utc("2026-12-01T00:00:00Z"); // 09:00 JST
        let next = next_after("FREQ=MONTHLY;BYMONTHDAY=1", first, tokyo, first)
            .unwrap()
            .unwrap();
        assert_eq!(next, utc("2027-01-01T00:00:00Z"));
    }

    #[test]
    fn a_rule_with_a_count_ends() {
        let tz = parse_zone("UTC").unwrap();
        let first = utc("2026-12-01T09:00:00Z");
        assert_eq!(
            next_after("FREQ=DAILY;COUNT=1", first, tz, first).unwrap(),
            None
        );
    }

    #[test]
    fn bad_rules_and_zones_are_refused() {
        let tz = parse_zone("UTC").unwrap();
        let first = utc("2026-12-01T09:00:00Z");
        assert!(matches!(
            validate_rule("FREQ=SOMETIMES", first, tz),
            Err(ReminderRuleError::InvalidRule { .. })
        ));
        assert_eq!(
            validate_rule("FREQ=MINUTELY", first, tz),
            Err(ReminderRuleError::TooFrequent)
        );
        assert!(parse_zone("Mars/Olympus").is_err());
    }

    #[test]
    fn a_skipped_local_time_is_refused_and_a_repeated_one_is_the_earlier() {
        let berlin = parse_zone("Europe/Berlin").unwrap();
        let gap = "2026-03-29T02:30:00".parse().unwrap();
        assert!(local_to_utc(gap, berlin).is_err());
        let fold = "2026-10-25T02:30:00".parse().unwrap();
        assert_eq!(
            local_to_utc(fold, berlin).unwrap(),
            utc("2026-10-25T00:30:00Z")
        );
    }
}

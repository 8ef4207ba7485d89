//! Quiet hours (issue 46 item 4): a person's nightly window in which nothing comes that they
//! did not time themselves. A reminder counted from now ("in 20 minutes") that would come
//! due inside the window waits until it ends; one they timed ("at 23:30", "every day at 6")
//! comes when they said. The window is local time in the person's zone and may cross
//! midnight (`22:00-07:00`).

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Days, NaiveTime, Utc};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};

use super::recurrence::local_to_utc;
use super::When;

/// A daily local window, `start` inclusive, `end` exclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct QuietHours {
    start: NaiveTime,
    end: NaiveTime,
}

/// Why a quiet-hours window is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("quiet hours must read HH:MM-HH:MM with two different times (22:00-07:00), got {0:?}")]
pub struct QuietHoursError(String);

impl FromStr for QuietHours {
    type Err = QuietHoursError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || QuietHoursError(s.to_owned());
        let (start, end) = s.split_once('-').ok_or_else(bad)?;
        let time = |t: &str| NaiveTime::parse_from_str(t.trim(), "%H:%M").map_err(|_| bad());
        let (start, end) = (time(start)?, time(end)?);
        if start == end {
            return Err(bad());
        }
        Ok(Self { start, end })
    }
}

impl TryFrom<String> for QuietHours {
    type Error = QuietHoursError;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<QuietHours> for String {
    fn from(q: QuietHours) -> String {
        q.to_string()
    }
}

impl fmt::Display for QuietHours {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}-{}",
            self.start.format("%H:%M"),
            self.end.format("%H:%M")
        )
    }
}

impl QuietHours {
    /// Whether local time `t` is inside the window.
    fn contains(&self, t: NaiveTime) -> bool {
        if self.start < self.end {
            self.start <= t && t < self.end
        } else {
            t >= self.start || t < self.end
        }
    }

    /// When the window `at` falls in ends, or `None` when `at` is outside it. An end the
    /// clocks skip (a daylight-saving change at that hour) moves an hour on, as they do.
    pub fn ends_after(&self, at: DateTime<Utc>, tz: Tz) -> Option<DateTime<Utc>> {
        let local = at.with_timezone(&tz).naive_local();
        if !self.contains(local.time()) {
            return None;
        }
        // The end is today, or tomorrow when the window started before midnight tonight.
        let day = if local.time() >= self.end {
            local.date().checked_add_days(Days::new(1))?
        } else {
            local.date()
        };
        let end = day.and_time(self.end);
        local_to_utc(end, tz)
            .or_else(|_| local_to_utc(end + chrono::Duration::hours(1), tz))
            .ok()
    }

    /// `when`, held to the end of the window when it is counted from now and would come
    /// inside it; with the time it was asked for when held.
    pub fn hold(&self, when: When, tz: Tz) -> (When, Option<DateTime<Utc>>) {
        match when {
            When::In(at) => match self.ends_after(at, tz) {
                Some(end) => (When::In(end), Some(at)),
                None => (When::In(at), None),
            },
            timed => (timed, None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reminders::parse_zone;

    fn utc(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    fn night() -> QuietHours {
        "22:00-07:00".parse().unwrap()
    }

    #[test]
    fn a_window_across_midnight_ends_the_next_morning_or_this_one() {
        let tokyo = parse_zone("Asia/Tokyo").unwrap();
        // 23:30 JST on the 1st (14:30 UTC): until 07:00 JST on the 2nd (22:00 UTC on the 1st).
        assert_eq!(
            night().ends_after(utc("2026-12-01T14:30:00Z"), tokyo),
            Some(utc("2026-12-01T22:00:00Z"))
        );
        // 03:00 JST on the 2nd: until 07:00 the same morning.
        assert_eq!(
            night().ends_after(utc("2026-12-01T18:00:00Z"), tokyo),
            Some(utc("2026-12-01T22:00:00Z"))
        );
        // 07:00 is outside (the end is exclusive), as is 21:59.
        assert_eq!(night().ends_after(utc("2026-12-01T22:00:00Z"), tokyo), None);
        assert_eq!(night().ends_after(utc("2026-12-01T12:59:00Z"), tokyo), None);
        // 22:00 is inside.
        assert!(night()
            .ends_after(utc("2026-12-01T13:00:00Z"), tokyo)
            .is_some());
    }

    #[test]
    fn a_window_within_one_day_holds_only_inside_it() {
        let utc_zone = parse_zone("UTC").unwrap();
        let lunch: QuietHours = "12:00-13:30".parse().unwrap();
        assert_eq!(
            lunch.ends_after(utc("2026-12-01T12:10:00Z"), utc_zone),
            Some(utc("2026-12-01T13:30:00Z"))
        );
        assert_eq!(
            lunch.ends_after(utc("2026-12-01T13:30:00Z"), utc_zone),
            None
        );
        assert_eq!(
            lunch.ends_after(utc("2026-12-01T11:59:00Z"), utc_zone),
            None
        );
    }

    #[test]
    fn the_end_is_local_time_across_a_daylight_saving_change() {
        // Berlin leaves summer time in the night of 2026-10-24/25: 07:00 CET is 06:00 UTC,
        // while at 23:00 the evening before it was still CEST (21:00 UTC).
        let berlin = parse_zone("Europe/Berlin").unwrap();
        assert_eq!(
            night().ends_after(utc("2026-10-24T21:00:00Z"), berlin),
            Some(utc("2026-10-25T06:00:00Z"))
        );
        // A window ending at 02:30 on the night the clocks skip 02:00-03:00 (2026-03-29)
        // ends at 03:30 CEST, an hour on.
        let short: QuietHours = "23:00-02:30".parse().unwrap();
        assert_eq!(
            short.ends_after(utc("2026-03-28T23:00:00Z"), berlin),
            Some(utc("2026-03-29T01:30:00Z"))
        );
    }

    #[test]
    fn only_a_time_counted_from_now_is_held() {
        let tokyo = parse_zone("Asia/Tokyo").unwrap();
        let late = utc("2026-12-01T14:30:00Z"); // 23:30 JST
        let (held, asked) = night().hold(When::In(late), tokyo);
        assert_eq!(held, When::In(utc("2026-12-01T22:00:00Z")));
        assert_eq!(asked, Some(late));
        // Timed by the person: as asked.
        assert_eq!(
            night().hold(When::Once(late), tokyo),
            (When::Once(late), None)
        );
        let every = When::Every {
            rule: "FREQ=DAILY;BYHOUR=23;BYMINUTE=30;BYSECOND=0".into(),
            first: late,
        };
        assert_eq!(night().hold(every.clone(), tokyo), (every, None));
        // Outside the window: as asked.
        let noon = utc("2026-12-01T03:00:00Z");
        assert_eq!(night().hold(When::In(noon), tokyo), (When::In(noon), None));
    }

    #[test]
    fn a_window_is_read_from_hh_mm_pairs_and_bad_ones_are_refused() {
        assert_eq!(night().to_string(), "22:00-07:00");
        for bad in [
            "",
            "22:00",
            "22-07",
            "25:00-07:00",
            "07:00-07:00",
            "aa:bb-cc:dd",
        ] {
            assert!(bad.parse::<QuietHours>().is_err(), "{bad}");
        }
        let yaml: QuietHours = serde_json::from_str("\"21:30-06:45\"").unwrap();
        assert_eq!(yaml.to_string(), "21:30-06:45");
        assert!(serde_json::from_str::<QuietHours>("\"9-5\"").is_err());
    }
}

use chrono::{DateTime, Utc};

use super::*;
use crate::reminders::{next_after, parse_zone, When};

fn utc(s: &str) -> DateTime<Utc> {
    s.parse().unwrap()
}

fn read(message: &str, now: &str, zone: &str) -> Understood {
    understand(message, utc(now), parse_zone(zone).unwrap(), false)
}

fn schedule(message: &str, now: &str, zone: &str) -> (When, String) {
    match read(message, now, zone) {
        Understood::Command {
            command: RemindCommand::Schedule { when, text },
            ..
        } => (when, text),
        other => panic!("{message}: {other:?}"),
    }
}

const SUNDAY_NOON_UTC: &str = "2026-11-29T12:00:00Z"; // 21:00 in Tokyo, 07:00 in New York

#[test]
fn tomorrow_at_nine_is_nine_in_the_morning_where_the_person_is() {
    let message = "Remind me tomorrow at 9 to call Mom";
    let (tokyo, text) = schedule(message, SUNDAY_NOON_UTC, "Asia/Tokyo");
    assert_eq!(text, "call Mom");
    assert_eq!(tokyo, When::Once(utc("2026-11-30T00:00:00Z")));
    let (ny, _) = schedule(message, SUNDAY_NOON_UTC, "America/New_York");
    assert_eq!(ny, When::Once(utc("2026-11-30T14:00:00Z")));
    let (ja, text) = schedule(
        "明日の朝9時にお母さんに電話するって教えて",
        SUNDAY_NOON_UTC,
        "Asia/Tokyo",
    );
    assert_eq!(ja, tokyo);
    assert_eq!(text, "お母さんに電話する");
    let (kanji, text) = schedule(
        "明日九時に歯医者の予約を思い出させて",
        SUNDAY_NOON_UTC,
        "Asia/Tokyo",
    );
    assert_eq!(kanji, tokyo, "kanji numerals");
    assert_eq!(text, "歯医者の予約");
    match read(message, SUNDAY_NOON_UTC, "Asia/Tokyo") {
        Understood::Command { as_command, .. } => {
            assert_eq!(as_command, "/remind 2026-11-30 9:00 call Mom")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn in_twenty_minutes_counts_from_the_message() {
    let (when, text) = schedule(
        "in 20 minutes, tell me to take the pasta out",
        SUNDAY_NOON_UTC,
        "Asia/Tokyo",
    );
    assert_eq!(when, When::In(utc("2026-11-29T12:20:00Z")));
    assert_eq!(text, "take the pasta out");
    let (ja, text) = schedule("２０分後にパスタを出すって教えて", SUNDAY_NOON_UTC, "UTC");
    assert_eq!(ja, when, "full-width digits");
    assert_eq!(text, "パスタを出す");
    let (hours, text) = schedule("tell me to drink water in 2 hours", SUNDAY_NOON_UTC, "UTC");
    assert_eq!(hours.first(), utc("2026-11-29T14:00:00Z"));
    assert_eq!(text, "drink water");
    let (an_hour, _) = schedule("remind me in an hour to stretch", SUNDAY_NOON_UTC, "UTC");
    assert_eq!(an_hour.first(), utc("2026-11-29T13:00:00Z"));
}

#[test]
fn every_monday_morning_at_seven_is_a_weekly_rule_in_local_time() {
    let (when, text) = schedule(
        "毎週月曜の朝7時にゴミ出しを教えて",
        SUNDAY_NOON_UTC,
        "Asia/Tokyo",
    );
    assert_eq!(text, "ゴミ出し");
    assert_eq!(
        when.rule(),
        Some("FREQ=WEEKLY;BYDAY=MO;BYHOUR=7;BYMINUTE=0;BYSECOND=0")
    );
    assert_eq!(
        when.first(),
        utc("2026-11-29T22:00:00Z"),
        "Monday 07:00 JST"
    );
    let (kanji, _) = schedule(
        "毎週月曜日の朝七時にゴミ出しを教えて",
        SUNDAY_NOON_UTC,
        "Asia/Tokyo",
    );
    assert_eq!(kanji, when);
    let (ny, text) = schedule(
        "every Monday at 7am remind me to take out the trash",
        SUNDAY_NOON_UTC,
        "America/New_York",
    );
    assert_eq!(ny.first(), utc("2026-11-30T12:00:00Z"), "Monday 07:00 EST");
    assert_eq!(text, "take out the trash");
    let (daily, text) = schedule(
        "Can you tell me to stretch every day at 3pm?",
        SUNDAY_NOON_UTC,
        "UTC",
    );
    assert_eq!(
        daily.rule(),
        Some("FREQ=DAILY;BYHOUR=15;BYMINUTE=0;BYSECOND=0")
    );
    assert_eq!(text, "stretch");
    let (nightly, text) = schedule(
        "毎日夜10時に薬を飲むように言って",
        SUNDAY_NOON_UTC,
        "Asia/Tokyo",
    );
    assert_eq!(
        nightly.rule(),
        Some("FREQ=DAILY;BYHOUR=22;BYMINUTE=0;BYSECOND=0")
    );
    assert_eq!(text, "薬を飲む");
    let (mornings, _) = schedule("毎朝7時半に水やりを教えて", SUNDAY_NOON_UTC, "Asia/Tokyo");
    assert_eq!(
        mornings.rule(),
        Some("FREQ=DAILY;BYHOUR=7;BYMINUTE=30;BYSECOND=0")
    );
}

#[test]
fn a_weekly_reminder_stays_at_its_local_hour_across_a_daylight_saving_change() {
    // Asked on Sunday 2026-10-25 in New York (EDT); the clocks go back on 2026-11-01.
    let tz = parse_zone("America/New_York").unwrap();
    let (when, _) = schedule(
        "every Sunday at 7pm remind me to call Dad",
        "2026-10-25T12:00:00Z",
        "America/New_York",
    );
    assert_eq!(when.first(), utc("2026-10-25T23:00:00Z"), "19:00 EDT");
    let next = next_after(when.rule().unwrap(), when.first(), tz, when.first())
        .unwrap()
        .unwrap();
    assert_eq!(
        next,
        utc("2026-11-02T00:00:00Z"),
        "19:00 EST, an hour later in UTC"
    );
    // In Berlin, "tomorrow at 9" asked the evening before the change is 9 after it.
    let (berlin, _) = schedule(
        "remind me tomorrow at 9 to call Oma",
        "2026-10-24T19:00:00Z",
        "Europe/Berlin",
    );
    assert_eq!(berlin.first(), utc("2026-10-25T08:00:00Z"), "09:00 CET");
}

#[test]
fn every_first_of_the_month_without_a_time_is_at_nine() {
    let (when, text) = schedule(
        "every first of the month, ask me about rent",
        SUNDAY_NOON_UTC,
        "Asia/Tokyo",
    );
    assert_eq!(text, "rent");
    assert_eq!(
        when.rule(),
        Some("FREQ=MONTHLY;BYMONTHDAY=1;BYHOUR=9;BYMINUTE=0;BYSECOND=0")
    );
    assert_eq!(
        when.first(),
        utc("2026-12-01T00:00:00Z"),
        "1 December 09:00 JST"
    );
    let (ja, text) = schedule("毎月1日に家賃のことを聞いて", SUNDAY_NOON_UTC, "Asia/Tokyo");
    assert_eq!(ja, when);
    assert_eq!(text, "家賃");
    let (fifteenth, _) = schedule(
        "remind me every 15th of the month at 8pm to pay the card",
        SUNDAY_NOON_UTC,
        "UTC",
    );
    assert_eq!(
        fifteenth.rule(),
        Some("FREQ=MONTHLY;BYMONTHDAY=15;BYHOUR=20;BYMINUTE=0;BYSECOND=0")
    );
}

#[test]
fn a_bare_hour_that_could_be_tonight_or_tomorrow_morning_is_asked() {
    // Sunday 18:00 in Tokyo: "at 7" is 19:00 tonight or 07:00 tomorrow.
    let evening = "2026-11-29T09:00:00Z";
    assert_eq!(
        read("remind me at 7 to call Dad", evening, "Asia/Tokyo"),
        Understood::Ambiguous {
            readings: vec!["2026-11-29 19:00".into(), "2026-11-30 07:00".into()]
        }
    );
    // Said with its half of the day, it is not.
    let (pm, _) = schedule("remind me at 7pm to call Dad", evening, "Asia/Tokyo");
    assert_eq!(pm, When::Once(utc("2026-11-29T10:00:00Z")));
    let (tonight, _) = schedule("remind me tonight at 7 to call Dad", evening, "Asia/Tokyo");
    assert_eq!(tonight, pm);
    let (night, _) = schedule("夜7時にお父さんに電話って教えて", evening, "Asia/Tokyo");
    assert_eq!(night, pm, "夜 is the evening");
    let (clock, _) = schedule("remind me at 07:00 to call Dad", evening, "Asia/Tokyo");
    assert_eq!(
        clock.first(),
        utc("2026-11-29T22:00:00Z"),
        "a 24-hour clock"
    );
    // In the morning, "at 9" is this morning's 9 or tonight's 21: the same day, the nearer.
    let (soon, _) = schedule(
        "remind me at 9 to call Dad",
        "2026-11-28T23:00:00Z",
        "Asia/Tokyo",
    );
    assert_eq!(soon.first(), utc("2026-11-29T00:00:00Z"), "09:00 JST");
    // "at 3" is the afternoon's (nobody asks for 3 a.m. without saying so).
    let (three, _) = schedule(
        "remind me at 3 to call Dad",
        "2026-11-28T23:00:00Z",
        "Asia/Tokyo",
    );
    assert_eq!(three.first(), utc("2026-11-29T06:00:00Z"), "15:00 JST");
}

#[test]
fn a_weekday_named_once_is_its_next_date() {
    // Sunday 2026-11-29: Saturday is 2026-12-05; "on Sunday" is next week's.
    let (sat, text) = schedule(
        "remind me on Saturday at 11 to buy flowers",
        SUNDAY_NOON_UTC,
        "UTC",
    );
    assert_eq!(sat.first(), utc("2026-12-05T11:00:00Z"));
    assert_eq!(text, "buy flowers");
    let (sun, _) = schedule(
        "remind me on Sunday at 10am to water the plants",
        SUNDAY_NOON_UTC,
        "UTC",
    );
    assert_eq!(sun.first(), utc("2026-12-06T10:00:00Z"));
    let (ja, text) = schedule(
        "金曜の18時に会議の準備をリマインドして",
        SUNDAY_NOON_UTC,
        "Asia/Tokyo",
    );
    assert_eq!(ja.first(), utc("2026-12-04T09:00:00Z"), "Friday 18:00 JST");
    assert_eq!(text, "会議の準備");
}

#[test]
fn what_is_not_a_reminder_is_left_alone_and_what_is_half_said_is_asked() {
    let now = SUNDAY_NOON_UTC;
    for message in [
        "Hello, how was your day?",
        "東京の天気を教えて",
        "明日の天気を教えて",
        "hey, remind me what we talked about yesterday",
        "Remind me, which town is our home in now?",
        "I moved to Kyoto last month",
        "we will move to Kyoto at 5pm tomorrow",
        "the sun sets at 5pm on sat",
    ] {
        assert_eq!(
            read(message, now, "UTC"),
            Understood::NotAReminder,
            "{message}"
        );
    }
    assert!(matches!(
        read("remind me to call Mom", now, "UTC"),
        Understood::NotUnderstood(_)
    ));
    assert!(matches!(
        read("remind me tomorrow to call Mom", now, "UTC"),
        Understood::NotUnderstood(_)
    ));
    assert!(matches!(
        read("remind me in 20 minutes", now, "UTC"),
        Understood::NotUnderstood(_)
    ));
    assert!(matches!(
        read("remind me at 25:00 to call Mom", now, "UTC"),
        Understood::NotUnderstood(_) | Understood::NotAReminder
    ));
}

#[test]
fn list_cancel_and_move_name_the_speakers_reminders() {
    let tz = parse_zone("Asia/Tokyo").unwrap();
    let now = utc(SUNDAY_NOON_UTC);
    let with = |message: &str| understand(message, now, tz, true);
    for message in [
        "What are my reminders?",
        "show my reminders",
        "リマインダーの一覧を見せて",
    ] {
        assert!(
            matches!(
                with(message),
                Understood::Command {
                    command: RemindCommand::List,
                    ..
                }
            ),
            "{message}"
        );
    }
    assert!(matches!(
        with("cancel the rent one"),
        Understood::Command { command: RemindCommand::Cancel { reference }, .. } if reference == "rent"
    ));
    assert!(matches!(
        with("家賃のリマインドをキャンセルして"),
        Understood::Command { command: RemindCommand::Cancel { reference }, .. } if reference == "家賃"
    ));
    match with("move the Mom call to 10 tomorrow") {
        Understood::Command {
            command: RemindCommand::Move { reference, when },
            ..
        } => {
            assert_eq!(reference, "Mom call");
            assert_eq!(when, When::Once(utc("2026-11-30T01:00:00Z")), "10:00 JST");
        }
        other => panic!("{other:?}"),
    }
    // Without reminders to change, "cancel" and "move" are ordinary words.
    assert_eq!(
        understand("cancel the rent one", now, tz, false),
        Understood::NotAReminder
    );
    assert!(names_a_change("move the Mom call to 10 tomorrow"));
    assert!(!names_a_change("remind me at 9 to call Mom"));
}

#[test]
fn a_person_names_their_own_time_zone() {
    let zone = |message: &str| match read(message, SUNDAY_NOON_UTC, "UTC") {
        Understood::Command {
            command: RemindCommand::Zone { zone },
            ..
        } => zone,
        other => panic!("{message}: {other:?}"),
    };
    assert_eq!(zone("my time zone is Tokyo"), "Asia/Tokyo");
    assert_eq!(
        zone("Set my timezone to America/New_York."),
        "America/New_York"
    );
    assert_eq!(zone("タイムゾーンをAsia/Tokyoにして"), "Asia/Tokyo");
    assert!(matches!(
        read("my time zone is Atlantis", SUNDAY_NOON_UTC, "UTC"),
        Understood::NotUnderstood(_)
    ));
}

#[test]
fn a_person_sets_and_clears_their_own_quiet_hours() {
    let quiet = |message: &str| match read(message, SUNDAY_NOON_UTC, "UTC") {
        Understood::Command {
            command: RemindCommand::Quiet { hours },
            ..
        } => hours.map(|h| h.to_string()),
        other => panic!("{message}: {other:?}"),
    };
    let night = Some("22:00-07:00".to_owned());
    assert_eq!(quiet("my quiet hours are 22:00 to 7:00"), night);
    assert_eq!(quiet("Quiet hours: 22:00-07:00"), night);
    assert_eq!(
        quiet("don't remind me between 23:00 and 6:30"),
        Some("23:00-06:30".to_owned())
    );
    assert_eq!(quiet("22時から7時までは通知しないで"), night);
    assert_eq!(quiet("no more quiet hours"), None);
    assert_eq!(quiet("静かな時間をなしにして"), None);
    assert!(matches!(
        read("my quiet hours are 25:00 to 7:00", SUNDAY_NOON_UTC, "UTC"),
        Understood::NotUnderstood(_)
    ));
    // Not about quiet hours: still a reminder.
    let (_, text) = schedule(
        "remind me tomorrow at 9 to call Mom",
        SUNDAY_NOON_UTC,
        "UTC",
    );
    assert_eq!(text, "call Mom");
}

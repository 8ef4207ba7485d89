//! Reminders asked in words (issue 46 item 1), end to end through `/api/chat`: read by
//! `ghost_domain::reminders::words` in the router, carried out as the `/remind` command
//! that says the same (shown to the persona), in each speaker's zone; what asks for no
//! reminder is routed as any other message, and a half-said one is asked back.

use serde_json::{json, Value};

use ghost_shared::reminders::events::{ReminderCancelled, ReminderChanged};
use ghost_testkit::fake_llm::Script;
use ghost_testkit::testing::eventually;

use super::support::{SseEvent, TestApp, TOKEN};
use super::{
    next_local, of_type, scheduled, spawn_in_two_zones, wait_listed, wait_of_type, SIMULATED, WAIT,
};

async fn chat(app: &TestApp, user: &str, text: &str) -> Vec<SseEvent> {
    let r = app
        .http
        .post(format!("{}/api/chat", app.base_url))
        .bearer_auth(TOKEN)
        .json(&json!({"session_id": format!("words-{user}"), "user_id": user, "text": text}))
        .send()
        .await
        .unwrap();
    let events = super::support::read_sse(r).await;
    assert_eq!(
        events.last().map(|e| e.event.as_str()),
        Some("done"),
        "{text}: {events:?}"
    );
    events
}

/// The work result the persona was last asked to put in its words.
async fn last_result(app: &TestApp) -> Value {
    let renders = of_type(app, "RenderRequested").await;
    renders.last().unwrap().payload["work_result"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reminders_asked_in_words_are_scheduled_listed_moved_and_cancelled_in_each_zone() {
    let app = spawn_in_two_zones().await;

    chat(&app, "user", "Remind me tomorrow at 9 to call Mom").await;
    chat(&app, "bob", "Remind me tomorrow at 9 to call Mom").await;
    let s = scheduled(&app).await;
    assert_eq!(s.len(), 2);
    let (tokyo, ny) = (&s[0], &s[1]);
    assert_eq!(tokyo.1.person, "user");
    assert_eq!(tokyo.1.text, "call Mom");
    assert_eq!(
        tokyo.1.due_at,
        next_local(tokyo.0.recorded_at, "Asia/Tokyo", 9, true)
    );
    assert_eq!(
        ny.1.due_at,
        next_local(ny.0.recorded_at, "America/New_York", 9, true)
    );
    // The persona confirms with the absolute time understood, and the fixed form.
    let result = last_result(&app).await;
    assert_eq!(result["reminder_set"], "call Mom", "{result}");
    assert!(result["at"].as_str().unwrap().contains("09:00"), "{result}");
    assert!(
        result["as_command"]
            .as_str()
            .unwrap()
            .starts_with("/remind "),
        "{result}"
    );

    chat(&app, "user", "毎週月曜の朝7時にゴミ出しを教えて").await;
    chat(&app, "user", "in 20 minutes, tell me to take the pasta out").await;
    chat(&app, "user", "every first of the month, ask me about rent").await;
    let s = scheduled(&app).await;
    assert_eq!(s.len(), 5);
    assert_eq!(
        s[2].1.rule.as_deref(),
        Some("FREQ=WEEKLY;BYDAY=MO;BYHOUR=7;BYMINUTE=0;BYSECOND=0")
    );
    assert_eq!(s[2].1.text, "ゴミ出し");
    let pasta = &s[3];
    let in_20 = pasta.1.due_at - pasta.0.recorded_at;
    assert!(
        (chrono::Duration::seconds(20 * 60 - 1)..=chrono::Duration::seconds(20 * 60))
            .contains(&in_20),
        "20 minutes from the message: {in_20}"
    );
    assert_eq!(pasta.1.text, "take the pasta out");
    assert_eq!(
        s[4].1.rule.as_deref(),
        Some("FREQ=MONTHLY;BYMONTHDAY=1;BYHOUR=9;BYMINUTE=0;BYSECOND=0")
    );
    assert_eq!(s[4].1.text, "rent");

    // Listed, cancelled and moved in words: the speaker's own.
    wait_listed(&app, "user", 4).await;
    chat(&app, "user", "What are my reminders?").await;
    let result = last_result(&app).await;
    assert_eq!(result["reminders"].as_array().unwrap().len(), 4, "{result}");
    chat(&app, "user", "cancel the rent one").await;
    let cancelled: ReminderCancelled = wait_of_type(&app, "ReminderCancelled", 1).await[0]
        .decode()
        .unwrap();
    assert_eq!(cancelled.reminder_id, s[4].1.reminder_id, "the rent one");
    chat(&app, "user", "move the Mom call to 10 tomorrow").await;
    let moved = wait_of_type(&app, "ReminderChanged", 1).await;
    let changed: ReminderChanged = moved[0].decode().unwrap();
    assert_eq!(changed.reminder_id, s[0].1.reminder_id, "the Mom call");
    assert_eq!(
        changed.due_at,
        next_local(moved[0].recorded_at, "Asia/Tokyo", 10, true)
    );
    wait_listed(&app, "user", 3).await;
    assert_eq!(wait_listed(&app, "bob", 1).await.len(), 1, "bob's stays");
    app.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_asks_for_no_reminder_is_routed_and_a_half_said_one_is_asked_back() {
    let app = TestApp::spawn_services(&ghost::stack::ServiceName::ALL, &SIMULATED).await;
    app.llm.set_default(Script::reply("OK!"));
    for text in [
        "Hello, how was your day?",
        "東京の天気を教えて",
        "hey, remind me what we talked about yesterday",
        "we will move to Kyoto next spring",
    ] {
        chat(&app, "user", text).await;
        let result = last_result(&app).await;
        assert!(
            result.get("reminder_set").is_none() && result.get("reminder_not_understood").is_none(),
            "{text}: {result}"
        );
    }
    // Asked for, but without a time: said back, nothing scheduled.
    chat(&app, "user", "remind me to call Mom").await;
    let result = last_result(&app).await;
    assert!(result["reminder_not_understood"].is_string(), "{result}");
    let routes = eventually(WAIT, "five turns routed", || async {
        let r = of_type(&app, "RouteDecided").await;
        (r.len() == 5).then_some(r)
    })
    .await;
    let entries: Vec<Value> = routes.iter().map(|e| e.payload["entry"].clone()).collect();
    assert_eq!(
        entries.iter().filter(|e| *e == "remind").count(),
        1,
        "{entries:?}"
    );
    assert!(scheduled(&app).await.is_empty());
    app.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_sets_their_own_time_zone_and_local_times_are_read_in_it() {
    // No zone configured for "kim": UTC until they say otherwise.
    let app = TestApp::spawn_services(&ghost::stack::ServiceName::ALL, &SIMULATED).await;
    app.llm.set_default(Script::reply("OK!"));
    chat(&app, "kim", "my time zone is Tokyo").await;
    let result = last_result(&app).await;
    assert_eq!(result["time_zone_set"], "Asia/Tokyo", "{result}");
    let set = wait_of_type(&app, "ReminderZoneSet", 1).await;
    assert_eq!(set[0].payload["person"], "kim");
    eventually(WAIT, "the zone applied", || async {
        let zone: Option<String> =
            sqlx::query_scalar("SELECT time_zone FROM reminder_zones WHERE person = 'kim'")
                .fetch_optional(app.store.pool())
                .await
                .unwrap();
        (zone.as_deref() == Some("Asia/Tokyo")).then_some(())
    })
    .await;
    chat(&app, "kim", "Remind me tomorrow at 9 to call Mom").await;
    let s = scheduled(&app).await;
    assert_eq!(s[0].1.time_zone, "Asia/Tokyo");
    assert_eq!(
        s[0].1.due_at,
        next_local(s[0].0.recorded_at, "Asia/Tokyo", 9, true)
    );
    // The API reads "when" in it too.
    let (status, body) = super::remind(
        &app,
        json!({"person": "kim", "session_id": "words-kim", "text": "stretch", "when": "tomorrow at 7:00"}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["time_zone"], "Asia/Tokyo", "{body}");
    // A zone nobody has is said back and changes nothing.
    chat(&app, "kim", "/remind zone Atlantis").await;
    let result = last_result(&app).await;
    assert!(result["reminder_refused"].is_string(), "{result}");
    assert_eq!(of_type(&app, "ReminderZoneSet").await.len(), 1);
    app.cleanup().await;
}

/// A person's own quiet hours, said in a conversation, come before the configuration's:
/// turned off, a reminder counted from now comes when asked; set again, it waits until
/// they end. The API shows the ones that hold.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_sets_and_clears_their_own_quiet_hours_in_words() {
    // Configured quiet hours around now (UTC, the clock starts at the real time).
    let now = chrono::Utc::now();
    let hhmm = |d: chrono::Duration| (now + d).format("%H:%M").to_string();
    let (start, end) = (
        hhmm(chrono::Duration::hours(-1)),
        hhmm(chrono::Duration::hours(2)),
    );
    let window = format!("{start}-{end}");
    let mut vars = SIMULATED.to_vec();
    vars.push(("GHOST_REMINDERS__QUIET_HOURS", &window));
    let app = TestApp::spawn_services(&ghost::stack::ServiceName::ALL, &vars).await;
    app.llm.set_default(Script::reply("OK!"));
    let held = |s: &ghost_shared::reminders::events::ReminderScheduled| s.held_from.is_some();

    chat(&app, "kim", "/remind in 20 minutes stretch").await;
    assert!(
        held(&scheduled(&app).await[0].1),
        "the configured hours hold"
    );

    chat(&app, "kim", "no more quiet hours").await;
    assert_eq!(last_result(&app).await["quiet_hours_off"], true);
    let set = wait_of_type(&app, "ReminderQuietHoursSet", 1).await;
    assert_eq!(set[0].payload["person"], "kim");
    eventually(WAIT, "no quiet hours shown", || async {
        quiet_shown(&app, "kim").await.is_null().then_some(())
    })
    .await;
    chat(&app, "kim", "/remind in 20 minutes drink water").await;
    let s = scheduled(&app).await;
    assert!(!held(&s[1].1), "turned off: comes when asked");
    let in_20 = s[1].1.due_at - s[1].0.recorded_at;
    assert!(
        (chrono::Duration::seconds(20 * 60 - 1)..=chrono::Duration::seconds(20 * 60))
            .contains(&in_20),
        "20 minutes from the message: {in_20}"
    );

    chat(&app, "kim", &format!("my quiet hours are {start} to {end}")).await;
    assert_eq!(last_result(&app).await["quiet_hours_set"], window.as_str());
    eventually(WAIT, "her quiet hours shown", || async {
        (quiet_shown(&app, "kim").await == window.as_str()).then_some(())
    })
    .await;
    chat(&app, "kim", "/remind in 30 minutes call Bob").await;
    assert!(held(&scheduled(&app).await[2].1), "her own hours hold");
    // Someone else keeps the configuration's.
    assert_eq!(quiet_shown(&app, "lee").await, window.as_str());
    app.cleanup().await;
}

/// The quiet hours `GET /api/reminders` shows for `person` (null: none).
async fn quiet_shown(app: &TestApp, person: &str) -> Value {
    let path = format!("/api/reminders?person={person}");
    let (status, body) = app.api(reqwest::Method::GET, &path, None).await;
    assert_eq!(status, 200, "{body}");
    body["quiet_hours"].clone()
}

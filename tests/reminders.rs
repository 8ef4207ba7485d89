//! Reminders end to end (issue 46), over the real Postgres and NATS, on the simulated clock
//! (`clock.simulated`: `POST /api/clock/advance` lets hours pass in a second): asked through
//! the API, claimed by the shared scheduler (`SKIP LOCKED` on `ghost_now()`), said once in
//! the conversation they were asked in (an HTTP conversation, LINE with the fake LINE),
//! late ones with a note or dropped with a notice, never twice.

mod support;

/// Reminders asked in words (`tests/reminders/in_words.rs`).
#[path = "reminders/in_words.rs"]
mod in_words;

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, SubsecRound, Utc};
use serde_json::{json, Value};

use ghost_gateway::deliver::reminder::ReminderDeliverer;
use ghost_gateway::deliver::Deliverer;
use ghost_shared::bus::EventHandler;
use ghost_shared::envelope::{EventPayload, RecordedEvent};
use ghost_shared::reminders::events::{
    ReminderDelivered, ReminderDue, ReminderMissed, ReminderScheduled,
};
use ghost_shared::reminders::scheduler::Scheduler;
use ghost_shared::reminders::voice::Voice;
use ghost_testkit::fake_llm::{Failure, Script};
use ghost_testkit::testing::eventually;
use support::platforms::{line_text, ChannelApp};
use support::{TestApp, TOKEN};

const WAIT: Duration = Duration::from_secs(30);
/// The simulated clock, and a scheduler that looks often.
const SIMULATED: [(&str, &str); 2] = [
    ("GHOST_CLOCK__SIMULATED", "true"),
    ("GHOST_REMINDERS__POLL_INTERVAL_MS", "100"),
];

/// Long enough for several scheduler passes and consumers to act, before asserting that
/// something did *not* happen.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(1500)).await;
}

async fn api(
    app: &TestApp,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = app
        .http
        .request(method, format!("{}{path}", app.base_url))
        .bearer_auth(TOKEN);
    if let Some(body) = body {
        req = req.json(&body);
    }
    let r = req.send().await.unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

async fn remind(app: &TestApp, body: Value) -> (u16, Value) {
    api(app, reqwest::Method::POST, "/api/reminders", Some(body)).await
}

async fn list(app: &TestApp, person: &str) -> Vec<Value> {
    let (status, body) = api(
        app,
        reqwest::Method::GET,
        &format!("/api/reminders?person={person}"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body["reminders"].as_array().cloned().unwrap_or_default()
}

/// Waits until `person` has `n` reminders to come (the projection is applied shortly after
/// the append).
async fn wait_listed(app: &TestApp, person: &str, n: usize) -> Vec<Value> {
    eventually(WAIT, "reminders listed", || async {
        let l = list(app, person).await;
        (l.len() == n).then_some(l)
    })
    .await
}

async fn advance(app: &TestApp, secs: u64) {
    let (status, body) = api(
        app,
        reqwest::Method::POST,
        "/api/clock/advance",
        Some(json!({ "secs": secs })),
    )
    .await;
    assert_eq!(status, 200, "{body}");
}

async fn of_type(app: &TestApp, event_type: &str) -> Vec<RecordedEvent> {
    let ids: Vec<uuid::Uuid> =
        sqlx::query_scalar("SELECT event_id FROM events WHERE event_type = $1 ORDER BY position")
            .bind(event_type)
            .fetch_all(app.store.pool())
            .await
            .unwrap();
    let mut events = Vec::new();
    for id in ids {
        events.push(app.store.get(id).await.unwrap().unwrap());
    }
    events
}

async fn wait_of_type(app: &TestApp, event_type: &str, n: usize) -> Vec<RecordedEvent> {
    eventually(WAIT, event_type, || async {
        let e = of_type(app, event_type).await;
        (e.len() >= n).then_some(e)
    })
    .await
}

/// The conversation's lines as `GET /api/sessions/{id}/messages` lists them.
async fn said(app: &TestApp, session: &str) -> Vec<String> {
    app.message_field(session, "text").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_reminder_is_said_once_in_its_conversation_when_the_clock_reaches_it() {
    let app = TestApp::spawn(&SIMULATED).await;
    app.llm.set_responder(|r| match is_reminder_line(r) {
        true => Script::reply("Pasta time! Quick, before it goes soft."),
        false => Script::reply("hello"),
    });
    app.chat("kitchen", "hi").await;

    let (status, made) = remind(
        &app,
        json!({"person": "user", "session_id": "kitchen", "text": "take the pasta out", "when": "in 20 minutes"}),
    )
    .await;
    assert_eq!(status, 201, "{made}");
    assert_eq!(made["channel"], "http");
    let listed = wait_listed(&app, "user", 1).await;
    assert_eq!(listed[0]["text"], "take the pasta out");

    // Not yet due: the scheduler passes, nothing is said.
    settle().await;
    assert!(of_type(&app, ReminderDue::EVENT_TYPE).await.is_empty());

    advance(&app, 20 * 60 + 1).await;
    let delivered = wait_of_type(&app, ReminderDelivered::EVENT_TYPE, 1).await;
    let d: ReminderDelivered = delivered[0].decode().unwrap();
    assert_eq!(d.session_id, "kitchen");
    assert!(!d.late);
    // In the persona's words, the task after them as it was asked.
    assert_eq!(
        d.text,
        "Pasta time! Quick, before it goes soft.\n⏰ take the pasta out"
    );
    assert_eq!(d.voice, Voice::Persona);
    assert_eq!(d.plain_because, None);
    let asked: Vec<_> = app
        .llm
        .requests()
        .into_iter()
        .filter(is_reminder_line)
        .collect();
    assert_eq!(asked.len(), 1, "one line asked for");
    let input = asked[0].last_user_json();
    assert_eq!(input["task"], "take the pasta out");
    assert_eq!(input["late"], false);
    assert!(input["mood"].is_string(), "the persona's mood now: {input}");
    eventually(WAIT, "the reminder in the conversation", || async {
        said(&app, "kitchen").await.contains(&d.text).then_some(())
    })
    .await;
    // The person answers it at once: a reminder is no turn the conversation waits for.
    let thanks = app.chat("kitchen", "thanks, done").await;
    assert_eq!(thanks.last().unwrap().event, "done", "{thanks:?}");

    // Many more passes later: still one occurrence, one outcome, and nothing left to come.
    settle().await;
    advance(&app, 3600).await;
    settle().await;
    assert_eq!(of_type(&app, ReminderDue::EVENT_TYPE).await.len(), 1);
    assert_eq!(of_type(&app, ReminderDelivered::EVENT_TYPE).await.len(), 1);
    assert!(list(&app, "user").await.is_empty());
    app.cleanup().await;
}

/// Whether `r` asks the persona for a due reminder's line (`prompts/reminder_message.md`).
fn is_reminder_line(r: &ghost_testkit::fake_llm::RecordedRequest) -> bool {
    r.system_text().is_some_and(|s| s.contains("has come due"))
}

/// A reminder must arrive when the persona cannot word it: the model failing, or too slow
/// for `reminders.voice.timeout_ms`, and it is said plainly, saying why in its outcome.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reminder_is_said_plainly_when_the_persona_cannot_word_it() {
    let mut vars = SIMULATED.to_vec();
    vars.push(("GHOST_REMINDERS__VOICE__TIMEOUT_MS", "1500"));
    let app = TestApp::spawn(&vars).await;
    app.llm.set_responder(|r| {
        let task = r.last_user_json()["task"].clone();
        match (is_reminder_line(r), task.as_str()) {
            (true, Some("stretch")) => {
                Script::failing(Failure::Status(500, "model crashed".into()))
            }
            (true, _) => Script::reply("too late").with_delay(Duration::from_secs(10)),
            (false, _) => Script::reply("hello"),
        }
    });
    app.chat("desk", "hi").await;
    for (text, when) in [
        ("stretch", "in 10 minutes"),
        ("drink water", "in 11 minutes"),
    ] {
        let (status, made) = remind(
            &app,
            json!({"person": "user", "session_id": "desk", "text": text, "when": when}),
        )
        .await;
        assert_eq!(status, 201, "{made}");
    }
    wait_listed(&app, "user", 2).await;
    advance(&app, 11 * 60 + 1).await;
    let delivered = wait_of_type(&app, ReminderDelivered::EVENT_TYPE, 2).await;
    let mut said: Vec<ReminderDelivered> = delivered.iter().map(|e| e.decode().unwrap()).collect();
    said.sort_by_key(|d| d.occurrence_at);
    assert_eq!(said[0].text, "⏰ Reminder: stretch");
    assert_eq!(said[0].voice, Voice::Plain);
    let failed = said[0].plain_because.clone().unwrap_or_default();
    assert!(failed.contains("wrote no line"), "{failed}");
    assert_eq!(said[1].text, "⏰ Reminder: drink water");
    let slow = said[1].plain_because.clone().unwrap_or_default();
    assert!(slow.contains("did not word it within"), "{slow}");
    settle().await;
    assert_eq!(of_type(&app, ReminderDelivered::EVENT_TYPE).await.len(), 2);
    app.cleanup().await;
}

/// The LINE session a user's message went to.
async fn line_session(c: &ChannelApp, user: &str) -> String {
    let messages = c.wait_events("UserMessageReceived", 1).await;
    messages
        .iter()
        .find(|m| m["speaker"] == user)
        .and_then(|m| m["session_id"].as_str())
        .expect("the LINE user's session")
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_reminder_is_pushed_once_even_when_claimed_and_delivered_twice() {
    let c = ChannelApp::spawn(&SIMULATED).await;
    c.app.llm.set_default(Script::reply("はーい"));
    assert_eq!(
        c.post_line_signed(&line_text("ev-1", "U1", "hello", "rt-1", false))
            .await,
        200
    );
    c.line_deliveries(1).await;
    let session = line_session(&c, "U1").await;

    let (status, made) = remind(
        &c.app,
        json!({"person": "U1", "session_id": session, "text": "call Mom", "when": "in 2 hours"}),
    )
    .await;
    assert_eq!(status, 201, "{made}");
    assert_eq!(made["channel"], "line");
    wait_listed(&c.app, "U1", 1).await;

    advance(&c.app, 2 * 3600 + 1).await;
    let d = c.line_deliveries(2).await;
    assert_eq!(
        d[1].endpoint, "push",
        "a reminder is pushed: no reply token is fresh"
    );
    assert_eq!(d[1].to, "U1");
    assert_eq!(d[1].texts, vec!["はーい\n⏰ call Mom".to_owned()]);
    let delivered = wait_of_type(&c.app, ReminderDelivered::EVENT_TYPE, 1).await;
    let due = of_type(&c.app, ReminderDue::EVENT_TYPE).await;
    assert_eq!(due.len(), 1);

    // A second scheduler instance passes, and the occurrence is handed to a second
    // gateway's deliverer (a redelivery): nothing is appended, nothing is sent.
    let before = c.app.settled_event_count().await;
    let ctx = c.app.stack.ctx.for_service("gateway");
    let second = Scheduler::new(ctx.clone());
    assert_eq!(second.pass().await.unwrap(), 0);
    let deliverer = ReminderDeliverer::new(Arc::new(Deliverer::new(ctx).unwrap()));
    deliverer.handle(due[0].clone()).await.unwrap();
    settle().await;
    assert_eq!(
        c.app.event_count().await,
        before,
        "a redelivery appends nothing"
    );
    assert_eq!(c.line.deliveries().len(), 2, "exactly one push");
    assert_eq!(
        delivered[0].decode::<ReminderDelivered>().unwrap().calls,
        vec!["push".to_owned()]
    );
    c.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn due_while_down_is_said_late_with_a_note_and_dropped_with_a_notice_past_the_limit() {
    // No scheduler runs in the app: Ghost is "down" while the clock moves.
    let mut vars = SIMULATED.to_vec();
    vars.push(("GHOST_REMINDERS__ENABLED", "false"));
    vars.push(("GHOST_REMINDERS__MAX_LATENESS_SECS", "7200"));
    let app = TestApp::spawn(&vars).await;
    app.reply(Script::reply("hello"));
    app.chat("desk", "hi").await;
    let (s1, _) = remind(
        &app,
        json!({"person": "user", "session_id": "desk", "text": "stretch", "when": "in 10 minutes"}),
    )
    .await;
    let (s2, _) = remind(
        &app,
        json!({"person": "user", "session_id": "desk", "text": "water the plants", "when": "in 3 hours"}),
    )
    .await;
    assert_eq!((s1, s2), (201, 201));
    wait_listed(&app, "user", 2).await;

    // Down for four hours: "stretch" is 3h50m late (past the 2 h limit), "water the
    // plants" 1 h late.
    advance(&app, 4 * 3600).await;
    settle().await;
    assert!(of_type(&app, ReminderDue::EVENT_TYPE).await.is_empty());

    // Back up: one scheduler pass.
    let scheduler = Scheduler::new(app.stack.ctx.for_service("gateway"));
    assert_eq!(scheduler.pass().await.unwrap(), 2);
    let missed = wait_of_type(&app, ReminderMissed::EVENT_TYPE, 1).await;
    let missed: ReminderMissed = missed[0].decode().unwrap();
    assert_eq!(missed.code, "too_late");
    assert!(missed.notice.unwrap().contains("stretch"));
    let late = wait_of_type(&app, ReminderDelivered::EVENT_TYPE, 1).await;
    let late: ReminderDelivered = late[0].decode().unwrap();
    assert!(late.late);
    assert!(
        late.text.contains("water the plants") && late.text.contains("late"),
        "{}",
        late.text
    );

    // Started again: nothing twice.
    settle().await;
    assert_eq!(scheduler.pass().await.unwrap(), 0);
    settle().await;
    assert_eq!(of_type(&app, ReminderDelivered::EVENT_TYPE).await.len(), 1);
    assert_eq!(of_type(&app, ReminderMissed::EVENT_TYPE).await.len(), 1);
    app.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daily_reminder_comes_once_a_day() {
    let app = TestApp::spawn(&SIMULATED).await;
    app.reply(Script::reply("hello"));
    app.chat("morning", "hi").await;
    let (status, made) = remind(
        &app,
        json!({"person": "user", "session_id": "morning", "text": "vitamins", "when": "every day at 8:00"}),
    )
    .await;
    assert_eq!(status, 201, "{made}");
    assert_eq!(made["rule"], "FREQ=DAILY;BYHOUR=8;BYMINUTE=0;BYSECOND=0");
    wait_listed(&app, "user", 1).await;
    // A minute past each 8:00: a flat day from whatever hour the test runs at would land
    // more than `max_lateness_secs` after it from 14:00 UTC on, and it would be dropped as
    // missed, not said.
    let due: DateTime<Utc> = made["due_at"].as_str().unwrap().parse().unwrap();
    let first = (due - Utc::now()).num_seconds().max(0) as u64 + 60;
    for day in 1..=3 {
        advance(&app, if day == 1 { first } else { 86_400 }).await;
        wait_of_type(&app, ReminderDelivered::EVENT_TYPE, day).await;
    }
    settle().await;
    let delivered = of_type(&app, ReminderDelivered::EVENT_TYPE).await;
    assert_eq!(delivered.len(), 3, "one a day");
    let days: std::collections::BTreeSet<_> = delivered
        .iter()
        .map(|e| e.decode::<ReminderDelivered>().unwrap().occurrence_at)
        .collect();
    assert_eq!(days.len(), 3, "three different occurrences");
    assert_eq!(list(&app, "user").await.len(), 1, "still to come tomorrow");
    app.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn people_see_move_and_cancel_only_their_own_reminders_and_bad_input_changes_nothing() {
    let app = TestApp::spawn(&SIMULATED).await;
    app.llm.set_default(Script::reply("hello"));
    app.chat("shared", "hi").await;
    let post = |body: Value| {
        let app = &app;
        async move {
            let r = app
                .http
                .post(format!("{}/api/chat", app.base_url))
                .bearer_auth(TOKEN)
                .json(&body)
                .send()
                .await
                .unwrap();
            support::read_sse(r).await
        }
    };
    post(json!({"session_id": "shared", "user_id": "bob", "text": "hi too"})).await;

    let (_, mine) = remind(
        &app,
        json!({"person": "user", "session_id": "shared", "text": "rent", "when": "in 1 hours"}),
    )
    .await;
    let (status, bobs) = remind(
        &app,
        json!({"person": "bob", "session_id": "shared", "text": "bob's dentist", "when": "in 2 hours"}),
    )
    .await;
    assert_eq!(status, 201, "{bobs}");
    wait_listed(&app, "user", 1).await;
    let bob_list = wait_listed(&app, "bob", 1).await;
    assert_eq!(bob_list[0]["text"], "bob's dentist");

    // Bad input: 400, nothing appended.
    let before = app.settled_event_count().await;
    for bad in [
        json!({"person": "user", "session_id": "shared", "text": "x", "when": "at 25:00"}),
        json!({"person": "user", "session_id": "shared", "text": "", "when": "in 5 minutes"}),
        json!({"person": "user", "session_id": "shared", "text": "x"}),
        json!({"person": "user", "session_id": "shared", "text": "x", "at": "2020-01-01T00:00:00Z"}),
        json!({"person": "user", "session_id": "shared", "text": "x", "at": "2030-01-01T00:00:00Z", "rule": "FREQ=MINUTELY"}),
        json!({"person": "user", "session_id": "shared", "text": "x", "when": "in 5 minutes", "also": 1}),
    ] {
        let (status, body) = remind(&app, bad.clone()).await;
        assert_eq!(status, 400, "{bad}: {body}");
    }
    // Someone who never spoke there: nowhere to deliver.
    let (status, body) = remind(
        &app,
        json!({"person": "carol", "session_id": "shared", "text": "x", "when": "in 5 minutes"}),
    )
    .await;
    assert_eq!(status, 404, "{body}");
    // Bob's reminder is not the user's to move or cancel.
    let bob_id = bobs["reminder_id"].as_str().unwrap();
    let (status, _) = api(
        &app,
        reqwest::Method::DELETE,
        &format!("/api/reminders/{bob_id}?person=user"),
        None,
    )
    .await;
    assert_eq!(status, 404);
    let (status, _) = api(
        &app,
        reqwest::Method::PUT,
        &format!("/api/reminders/{bob_id}"),
        Some(json!({"person": "user", "when": "in 3 hours"})),
    )
    .await;
    assert_eq!(status, 404);
    assert_eq!(app.event_count().await, before, "refusals append nothing");

    // The user moves theirs to later; Bob cancels his.
    let my_id = mine["reminder_id"].as_str().unwrap();
    let (status, moved) = api(
        &app,
        reqwest::Method::PUT,
        &format!("/api/reminders/{my_id}"),
        Some(json!({"person": "user", "when": "in 5 hours"})),
    )
    .await;
    assert_eq!(status, 200, "{moved}");
    let (status, _) = api(
        &app,
        reqwest::Method::DELETE,
        &format!("/api/reminders/{bob_id}?person=bob"),
        None,
    )
    .await;
    assert_eq!(status, 200);
    wait_listed(&app, "bob", 0).await;
    eventually(WAIT, "the move applied", || async {
        let l = list(&app, "user").await;
        let at = |v: &Value| v.as_str().and_then(|s| s.parse::<DateTime<Utc>>().ok());
        (l.len() == 1 && at(&l[0]["due_at"]) == at(&moved["due_at"])).then_some(())
    })
    .await;

    // Three hours on: neither the moved one (due at 5 h) nor the cancelled one is said.
    advance(&app, 3 * 3600).await;
    settle().await;
    assert!(of_type(&app, ReminderDue::EVENT_TYPE).await.is_empty());
    advance(&app, 2 * 3600 + 1).await;
    let d = wait_of_type(&app, ReminderDelivered::EVENT_TYPE, 1).await;
    assert_eq!(d[0].decode::<ReminderDelivered>().unwrap().person, "user");
    settle().await;
    assert_eq!(of_type(&app, ReminderDelivered::EVENT_TYPE).await.len(), 1);
    assert_eq!(of_type(&app, ReminderScheduled::EVENT_TYPE).await.len(), 2);
    app.cleanup().await;
}

/// The `ReminderScheduled` events, oldest first.
async fn scheduled(app: &TestApp) -> Vec<(RecordedEvent, ReminderScheduled)> {
    of_type(app, ReminderScheduled::EVENT_TYPE)
        .await
        .into_iter()
        .map(|e| {
            let s = e.decode().unwrap();
            (e, s)
        })
        .collect()
}

/// The next `hh:00` in `zone` after `after` (tomorrow's when `tomorrow`).
fn next_local(after: DateTime<Utc>, zone: &str, hour: u32, tomorrow: bool) -> DateTime<Utc> {
    let tz = ghost_shared::reminders::parse_zone(zone).unwrap();
    let mut day = after.with_timezone(&tz).date_naive();
    if tomorrow {
        day = day.succ_opt().unwrap();
    }
    let local = day.and_hms_opt(hour, 0, 0).unwrap();
    ghost_shared::reminders::recurrence::local_to_utc(local, tz).unwrap()
}

/// The whole stack on the simulated clock, "user" in Tokyo and "bob" in New York, the
/// persona answering "OK!".
async fn spawn_in_two_zones() -> TestApp {
    let app = TestApp::spawn_adjusted(&ghost::stack::ServiceName::ALL, &SIMULATED, |c| {
        let zones = &mut c.ghost.reminders.time_zones;
        zones.insert("user".into(), "Asia/Tokyo".into());
        zones.insert("bob".into(), "America/New_York".into());
    })
    .await;
    app.llm.set_default(Script::reply("OK!"));
    app
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remind_commands_resolve_in_each_persons_zone_and_list_and_cancel_by_chat() {
    let app = spawn_in_two_zones().await;
    let chat = |user: &'static str, text: &'static str| {
        let app = &app;
        async move {
            let r = app
                .http
                .post(format!("{}/api/chat", app.base_url))
                .bearer_auth(TOKEN)
                .json(&json!({"session_id": "family", "user_id": user, "text": text}))
                .send()
                .await
                .unwrap();
            support::read_sse(r).await
        }
    };
    let done = |events: &[support::SseEvent]| events.last().map(|e| e.event.clone());
    assert_eq!(
        done(&chat("user", "/remind tomorrow at 9 call Mom").await).as_deref(),
        Some("done")
    );
    assert_eq!(
        done(&chat("bob", "/remind tomorrow at 9 call Mom").await).as_deref(),
        Some("done")
    );
    let s = scheduled(&app).await;
    assert_eq!(s.len(), 2);
    let message_time = |i: usize| s[i].0.recorded_at;
    assert_eq!(s[0].1.person, "user");
    assert_eq!(s[0].1.time_zone, "Asia/Tokyo");
    assert_eq!(
        s[0].1.due_at,
        next_local(message_time(0), "Asia/Tokyo", 9, true)
    );
    assert_eq!(s[1].1.person, "bob");
    assert_eq!(
        s[1].1.due_at,
        next_local(message_time(1), "America/New_York", 9, true)
    );
    assert_ne!(
        s[0].1.due_at, s[1].1.due_at,
        "9 in Tokyo is not 9 in New York"
    );
    assert_eq!(s[0].1.text, "call Mom");

    // The persona was asked to confirm with the absolute time understood.
    let renders = of_type(&app, "RenderRequested").await;
    let result = renders.last().unwrap().payload["work_result"].clone();
    assert_eq!(result["reminder_set"], "call Mom", "{result}");
    assert!(result["at"].as_str().unwrap().contains("09:00"), "{result}");

    // Listed and cancelled by chat: the user's own only.
    wait_listed(&app, "user", 1).await;
    chat("user", "/remind list").await;
    let renders = of_type(&app, "RenderRequested").await;
    let result = renders.last().unwrap().payload["work_result"].clone();
    assert_eq!(result["reminders"].as_array().unwrap().len(), 1, "{result}");
    chat("user", "/remind cancel 1").await;
    wait_listed(&app, "user", 0).await;
    assert_eq!(list(&app, "bob").await.len(), 1, "bob's stays");
    // A bad command is refused in words, and changes nothing.
    chat("user", "/remind at 25:00 x").await;
    let renders = of_type(&app, "RenderRequested").await;
    assert!(renders.last().unwrap().payload["work_result"]["reminder_refused"].is_string());
    assert_eq!(scheduled(&app).await.len(), 2);
    app.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remind_command_on_line_is_pushed_back_to_line_once() {
    let c = ChannelApp::spawn(&SIMULATED).await;
    c.app.llm.set_default(Script::reply("了解!"));
    let body = line_text(
        "ev-r",
        "U7",
        "/remind in 20 minutes take the pasta out",
        "rt-r",
        false,
    );
    assert_eq!(c.post_line_signed(&body).await, 200);
    c.line_deliveries(1).await;
    let s = scheduled(&c.app).await;
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].1.channel, ghost_shared::events::Channel::Line);
    wait_listed(&c.app, "U7", 1).await;
    advance(&c.app, 20 * 60 + 1).await;
    let d = c.line_deliveries(2).await;
    assert_eq!(d[1].endpoint, "push");
    assert_eq!(d[1].to, "U7");
    assert_eq!(d[1].texts, vec!["了解!\n⏰ take the pasta out".to_owned()]);
    // LINE redelivers the command: nothing new is scheduled or sent.
    let again = body.replace(r#""isRedelivery":false"#, r#""isRedelivery":true"#);
    assert_eq!(c.post_line_signed(&again).await, 200);
    settle().await;
    assert_eq!(scheduled(&c.app).await.len(), 1);
    assert_eq!(c.line.deliveries().len(), 2);
    c.cleanup().await;
}

/// The session and speaker of the first message that came on `channel`.
async fn first_on(c: &ChannelApp, channel: &str) -> (String, String) {
    eventually(WAIT, channel, || async {
        c.events_of("UserMessageReceived")
            .await
            .into_iter()
            .find(|m| m["channel"] == channel)
            .map(|m| {
                let s = |k: &str| m[k].as_str().unwrap_or_default().to_owned();
                (s("session_id"), s("speaker"))
            })
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slack_and_telegram_reminders_go_back_to_their_thread_and_chat_once() {
    let c = ChannelApp::spawn(&SIMULATED).await;
    c.app.llm.set_default(Script::reply("sure"));
    let mention = support::platforms::slack_event(
        "Ev-rem",
        json!({"type":"app_mention","user":"U7","text":format!("<@{}> hi", support::platforms::BOT),
               "ts":"1700000001.000100","channel":"C1"}),
    );
    assert_eq!(c.post_slack_signed(&mention, None).await, 200);
    let tg = support::platforms::telegram_text(1, 4242, 10, "hi");
    assert_eq!(c.post_telegram_signed(&tg).await, 200);
    c.slack_deliveries(1).await;
    c.telegram_deliveries(1).await;
    for channel in ["slack", "telegram"] {
        let (session, person) = first_on(&c, channel).await;
        let (status, made) = remind(
            &c.app,
            json!({"person": person, "session_id": session, "text": format!("{channel} stretch"), "when": "in 20 minutes"}),
        )
        .await;
        assert_eq!(status, 201, "{made}");
        assert_eq!(made["channel"], channel);
        wait_listed(&c.app, &person, 1).await;
    }
    advance(&c.app, 20 * 60 + 1).await;
    let slack = c.slack_deliveries(2).await;
    assert_eq!(slack[1].endpoint, "chat.postMessage");
    assert_eq!(slack[1].to, "C1");
    assert_eq!(slack[1].thread_ts.as_deref(), Some("1700000001.000100"));
    assert_eq!(slack[1].texts, vec!["sure\n⏰ slack stretch".to_owned()]);
    let telegram = c.telegram_deliveries(2).await;
    assert_eq!(telegram[1].endpoint, "sendMessage");
    assert_eq!(telegram[1].to, "4242");
    assert_eq!(
        telegram[1].texts,
        vec!["sure\n⏰ telegram stretch".to_owned()]
    );
    wait_of_type(&c.app, ReminderDelivered::EVENT_TYPE, 2).await;
    settle().await;
    assert_eq!(c.slack.deliveries().len(), 2, "one post");
    assert_eq!(c.telegram.deliveries().len(), 2, "one message");
    assert_eq!(
        of_type(&c.app, ReminderDelivered::EVENT_TYPE).await.len(),
        2
    );
    c.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_killed_after_line_took_the_push_and_before_it_was_recorded_pushes_once() {
    killed_delivering_a_line_reminder("gateway.before_reminder_outcome", 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_killed_after_the_line_was_worded_and_before_the_push_pushes_once() {
    killed_delivering_a_line_reminder("gateway.before_reminder_send", 1).await;
}

/// A gateway armed with `fault` dies delivering a LINE reminder, when LINE has been sent
/// `sent_at_crash` messages (the reply to "hello", and the push if it went out); a healthy
/// gateway takes the redelivery: exactly one push of the reminder, one outcome.
async fn killed_delivering_a_line_reminder(fault: &str, sent_at_crash: usize) {
    use ghost::stack::ServiceName;
    use ghost_testkit::testing::free_loopback_addr;
    let others: Vec<ServiceName> = ServiceName::ALL
        .into_iter()
        .filter(|s| *s != ServiceName::Gateway)
        .collect();
    let mut vars = SIMULATED.to_vec();
    vars.push(("GHOST_BUS__ACK_WAIT_SECS", "4"));
    let c = ChannelApp::spawn_services(&others, &vars).await;
    c.app.llm.set_default(Script::reply("hi"));
    let doomed_addr = free_loopback_addr().unwrap();
    let mut doomed = c.app.spawn_child(
        "gateway",
        &[
            ("GHOST_FAULTS", fault),
            ("GHOST_GATEWAY__LISTEN", &doomed_addr),
        ],
    );
    let http = reqwest::Client::new();
    let base = format!("http://{doomed_addr}");
    let body = line_text("ev-k", "U9", "hello", "rt-k", false);
    eventually(WAIT, "the doomed gateway up", || async {
        let r = http
            .post(format!("{base}/webhooks/line"))
            .header("content-type", "application/json")
            .header("x-line-signature", support::platforms::line_sign(&body))
            .body(body.clone())
            .send()
            .await
            .ok()?;
        (r.status() == 200).then_some(())
    })
    .await;
    c.line_deliveries(1).await;
    let session = line_session(&c, "U9").await;
    let post = |path: &str, body: Value| {
        http.post(format!("{base}{path}"))
            .bearer_auth(TOKEN)
            .json(&body)
            .send()
    };
    let made = post(
        "/api/reminders",
        json!({"person": "U9", "session_id": session, "text": "call Mom", "when": "in 1 hours"}),
    )
    .await
    .unwrap();
    assert_eq!(made.status(), 201);
    eventually(WAIT, "scheduled row", || async {
        let n: i64 = sqlx::query_scalar("SELECT count(*) FROM reminders")
            .fetch_one(c.app.store.pool())
            .await
            .ok()?;
        (n == 1).then_some(())
    })
    .await;
    let moved = post("/api/clock/advance", json!({"secs": 3601}))
        .await
        .unwrap();
    assert_eq!(moved.status(), 200);

    // The gateway died at the fault: after the push (LINE took it) or before it.
    let status = tokio::time::timeout(Duration::from_secs(30), doomed.wait())
        .await
        .expect("the armed gateway crashes")
        .unwrap();
    assert!(!status.success());
    assert_eq!(
        c.line.deliveries().len(),
        sent_at_crash,
        "sent before {fault}"
    );
    assert!(of_type(&c.app, ReminderDelivered::EVENT_TYPE)
        .await
        .is_empty());

    // A healthy gateway takes the redelivery: it pushes what was not sent, and a resend of
    // what was carries the same retry key, so LINE drops it.
    let healthy_addr = free_loopback_addr().unwrap();
    let healthy = c
        .app
        .spawn_child("gateway", &[("GHOST_GATEWAY__LISTEN", &healthy_addr)]);
    wait_of_type(&c.app, ReminderDelivered::EVENT_TYPE, 1).await;
    settle().await;
    drop(healthy);
    assert_eq!(
        c.line.deliveries().len(),
        2,
        "exactly one push of the reminder"
    );
    assert_eq!(of_type(&c.app, ReminderDue::EVENT_TYPE).await.len(), 1);
    assert_eq!(
        of_type(&c.app, ReminderDelivered::EVENT_TYPE).await.len(),
        1
    );
    c.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_schedulers_racing_over_many_due_reminders_deliver_each_once() {
    let app = TestApp::spawn(&SIMULATED).await;
    app.reply(Script::reply("hello"));
    app.chat("many", "hi").await;
    const N: usize = 30;
    for i in 0..N {
        let (status, body) = remind(
            &app,
            json!({"person": "user", "session_id": "many", "text": format!("task {i}"), "when": "in 10 minutes"}),
        )
        .await;
        assert_eq!(status, 201, "{body}");
    }
    wait_listed(&app, "user", N).await;
    // Two more instances beside the gateway's own, passing as fast as they can.
    let ctx = app.stack.ctx.for_service("gateway");
    let (a, b) = (Scheduler::new(ctx.clone()), Scheduler::new(ctx));
    advance(&app, 601).await;
    let race = |s: Scheduler| {
        tokio::spawn(async move {
            let mut appended = 0;
            for _ in 0..20 {
                appended += s.pass().await.unwrap();
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            appended
        })
    };
    let (ra, rb) = (race(a), race(b));
    let (ra, rb) = (ra.await.unwrap(), rb.await.unwrap());
    assert!(ra + rb <= N, "no occurrence appended twice: {ra} + {rb}");
    wait_of_type(&app, ReminderDelivered::EVENT_TYPE, N).await;
    settle().await;
    assert_eq!(of_type(&app, ReminderDue::EVENT_TYPE).await.len(), N);
    let delivered = of_type(&app, ReminderDelivered::EVENT_TYPE).await;
    assert_eq!(delivered.len(), N);
    let texts: std::collections::BTreeSet<String> = delivered
        .iter()
        .map(|e| e.decode::<ReminderDelivered>().unwrap().text)
        .collect();
    assert_eq!(texts.len(), N, "each reminder once");
    app.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quiet_hours_hold_a_reminder_counted_from_now_and_not_one_the_person_timed() {
    // The person's quiet hours are now, until three hours on.
    let now = Utc::now();
    let (quiet, end) = support::quiet_now("user", 180);
    let app = TestApp::spawn_adjusted(&ghost::stack::ServiceName::ALL, &SIMULATED, quiet).await;
    app.llm.set_default(Script::reply("OK!"));
    app.chat("night", "hi").await;

    // Counted from now, inside them: due when they end, saying the time asked.
    let (status, held) = remind(
        &app,
        json!({"person": "user", "session_id": "night", "text": "take the pasta out", "when": "in 20 minutes"}),
    )
    .await;
    assert_eq!(status, 201, "{held}");
    let asked: DateTime<Utc> = serde_json::from_value(held["held_from"].clone()).unwrap();
    let due: DateTime<Utc> = serde_json::from_value(held["due_at"].clone()).unwrap();
    assert!(
        asked >= now.trunc_subsecs(0) + chrono::Duration::minutes(20),
        "{held}"
    );
    assert_eq!(due.format("%H:%M").to_string(), end, "{held}");
    assert!(due > asked + chrono::Duration::hours(2), "{held}");
    // Timed by the person, inside them too: as asked.
    let timed_at = (now + chrono::Duration::minutes(30)).trunc_subsecs(0);
    let (status, timed) = remind(
        &app,
        json!({"person": "user", "session_id": "night", "text": "call Mom", "at": timed_at}),
    )
    .await;
    assert_eq!(status, 201, "{timed}");
    assert!(timed["held_from"].is_null(), "{timed}");
    assert_eq!(
        serde_json::from_value::<DateTime<Utc>>(timed["due_at"].clone()).unwrap(),
        timed_at
    );
    // By chat: held as well, and the persona is told why it comes later.
    let r = app
        .http
        .post(format!("{}/api/chat", app.base_url))
        .bearer_auth(TOKEN)
        .json(&json!({"session_id": "night", "text": "/remind in 10 minutes stretch"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{:?}", r.text().await);
    let events = support::read_sse(r).await;
    let all = scheduled(&app).await;
    let by_chat = all
        .iter()
        .find(|(_, s)| s.text == "stretch")
        .unwrap_or_else(|| panic!("{events:?} {all:?}"))
        .1
        .clone();
    assert!(by_chat.held_from.is_some(), "{by_chat:?}");
    assert_eq!(by_chat.due_at.format("%H:%M").to_string(), end);
    let renders = of_type(&app, "RenderRequested").await;
    let result = &renders.last().unwrap().payload["work_result"];
    assert!(result["held_for_quiet_hours_from"].is_string(), "{result}");
    wait_listed(&app, "user", 3).await;

    // Past the times asked: only the one the person timed is said.
    advance(&app, 31 * 60).await;
    let said_first = wait_of_type(&app, ReminderDelivered::EVENT_TYPE, 1).await;
    let first: ReminderDelivered = said_first[0].decode().unwrap();
    assert!(first.text.contains("call Mom"), "{first:?}");
    settle().await;
    assert_eq!(of_type(&app, ReminderDelivered::EVENT_TYPE).await.len(), 1);
    // When the quiet hours end: the held ones, on time.
    let to_end = due - (Utc::now() + chrono::Duration::minutes(31));
    advance(&app, to_end.num_seconds().max(1) as u64 + 5).await;
    let all = wait_of_type(&app, ReminderDelivered::EVENT_TYPE, 3).await;
    for d in &all {
        let d: ReminderDelivered = d.decode().unwrap();
        assert!(!d.late, "{d:?}");
    }
    settle().await;
    assert_eq!(of_type(&app, ReminderDelivered::EVENT_TYPE).await.len(), 3);
    app.cleanup().await;
}

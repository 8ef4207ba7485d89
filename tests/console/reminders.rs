//! Reminders in the console (issue 46 item 2), at a phone's width and a desktop's: a
//! person's reminders to come, each with its next due time in their own zone (and which
//! zone that is) and whether it repeats, someone else's not among them; moved with a time in
//! words (the list shows the new time, the API agrees), a time that is none refused beside
//! its field with nothing changed; cancelled (gone from the list and the API); added, said in
//! the conversation the person spoke in last; an empty list said in words. Reminders come in
//! as in production: a `/remind` chat message and `POST /api/reminders`.

use chrono::{DateTime, Datelike, Timelike, Utc};
use ghost::stack::ServiceName;
use ghost_testkit::fake_llm::Script;
use ghost_testkit::testing::eventually;
use serde_json::{json, Value};

use crate::support::console::{
    fits_the_screen, gap_below, js, lowest_contrast, screenshot, shown, sign_in, text_of, until,
    PATIENCE, WIDTHS,
};
use crate::support::webdriver::{Browser, Driver};
use crate::support::{read_sse, TestApp, TOKEN};

const TOKYO: &str = "Asia/Tokyo";
const NEW_YORK: &str = "America/New_York";

/// Every kind of text a person reads in the view.
const TEXT: &str = "#view-reminders p, #view-reminders li, #view-reminders label, \
    #view-reminders h3, #view-reminders button, #view-reminders small, #view-reminders span, \
    #view-reminders time, #view-reminders select, #view-reminders input, #tabs a";

/// `person`'s reminders to come, as the API lists them.
async fn listed(app: &TestApp, person: &str) -> Vec<Value> {
    let path = format!("/api/reminders?person={person}");
    let (status, answer) = app.api(reqwest::Method::GET, &path, None).await;
    assert_eq!(status, 200, "{answer}");
    answer["reminders"].as_array().cloned().unwrap_or_default()
}

/// A reminder of `person`'s set through the API in the kitchen, `when` a time in words.
async fn remind(app: &TestApp, person: &str, text: &str, when: &str) {
    let body = json!({"person": person, "session_id": "kitchen", "text": text, "when": when});
    let (status, answer) = app
        .api(reqwest::Method::POST, "/api/reminders", Some(&body))
        .await;
    assert_eq!(status, 201, "{answer}");
}

/// `person`'s reminder saying `text`, once the API lists it.
async fn reminder(app: &TestApp, person: &str, text: &str) -> Value {
    eventually(PATIENCE, text, || async {
        listed(app, person)
            .await
            .into_iter()
            .find(|r| r["text"] == text)
    })
    .await
}

/// The id of `person`'s reminder saying `text`, once the API lists it.
async fn reminder_id(app: &TestApp, person: &str, text: &str) -> String {
    let r = reminder(app, person, text).await;
    r["reminder_id"].as_str().expect("an id").to_owned()
}

fn instant(v: &Value) -> DateTime<Utc> {
    v.as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not a time: {v}"))
}

/// `at` on the clocks of `zone`.
fn local(at: DateTime<Utc>, zone: &str) -> chrono::NaiveDateTime {
    let tz = ghost_shared::reminders::parse_zone(zone).unwrap();
    at.with_timezone(&tz).naive_local()
}

/// `text` said by `person` in the conversation `session` (a reminder is said where its
/// person speaks).
async fn say(app: &TestApp, session: &str, person: &str, text: &str) {
    let response = app
        .http
        .post(format!("{}/api/chat", app.base_url))
        .bearer_auth(TOKEN)
        .json(&json!({"session_id": session, "user_id": person, "text": text}))
        .send()
        .await
        .expect("chat");
    read_sse(response).await;
}

/// The row of reminder `id` in the list.
fn row(id: &str) -> String {
    format!("#reminders-list li[data-reminder-id=\"{id}\"]")
}

/// The instant the row of reminder `id` shows (its `<time>`), once shown.
async fn shown_due(browser: &Browser, id: &str) -> DateTime<Utc> {
    let css = json!(format!("{} time", row(id)));
    let at = until(
        browser,
        "the row's time",
        &format!("document.querySelector({css})?.dateTime || ''"),
        |v| v.as_str().is_some_and(|s| !s.is_empty()),
    )
    .await;
    instant(&at)
}

/// The texts of the reminders listed.
async fn bodies(browser: &Browser) -> Vec<String> {
    let v = js(
        browser,
        "[...document.querySelectorAll('#reminders-list li[data-reminder-id] .body')].map(e => e.textContent)",
    )
    .await;
    serde_json::from_value(v).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persons_reminders_are_listed_moved_cancelled_and_added_in_the_console() {
    let app = TestApp::spawn_adjusted(&ServiceName::ALL, &[], |c| {
        let zones = &mut c.ghost.reminders.time_zones;
        zones.insert("user".into(), TOKYO.into());
        zones.insert("bob".into(), NEW_YORK.into());
    })
    .await;
    app.llm.set_default(Script::reply("OK!"));
    let driver = Driver::start().await;
    for (width, (w, h)) in WIDTHS {
        // The console's person sets one in the kitchen with `/remind`, one through the API,
        // then speaks at the desk; Bob has one of his own.
        let mom = format!("call Mom ({width})");
        let rent = format!("pay the rent ({width})");
        let dentist = format!("Bob's dentist ({width})");
        say(
            &app,
            "kitchen",
            "user",
            &format!("/remind tomorrow at 9 {mom}"),
        )
        .await;
        say(&app, "kitchen", "bob", "hello").await;
        remind(&app, "user", &rent, "in 3 hours").await;
        remind(&app, "bob", &dentist, "tomorrow at 8").await;
        say(&app, "desk", "user", "back at my desk").await;
        let mom_id = reminder_id(&app, "user", &mom).await;
        let rent_id = reminder_id(&app, "user", &rent).await;
        reminder(&app, "bob", &dentist).await;

        let browser = driver.browser(w, h).await;
        sign_in(&browser, &app.base_url, "#/reminders").await;

        // Listed: what each says, its next due time in Tokyo (the zone said), once.
        text_of(&browser, &row(&rent_id), |t| t.contains(&rent)).await;
        let zone = text_of(&browser, "#reminders-zone", |t| !t.is_empty()).await;
        assert_eq!(zone, "Times are your local time: Asia/Tokyo.");
        for r in listed(&app, "user").await {
            let id = r["reminder_id"].as_str().unwrap();
            let due = instant(&r["due_at"]);
            assert_eq!(shown_due(&browser, id).await, due, "{r}");
            let hhmm = local(due, TOKYO).format("%H:%M").to_string();
            let line = text_of(&browser, &format!("{} .due", row(id)), |t| !t.is_empty()).await;
            assert!(
                line.starts_with("Next: ") && line.contains(&hhmm),
                "{line} ({hhmm})"
            );
            if r["rule"].is_null() {
                assert!(line.ends_with("· once"), "{line}");
            }
        }
        let mom_line = text_of(&browser, &format!("{} .due", row(&mom_id)), |t| {
            !t.is_empty()
        })
        .await;
        assert!(
            mom_line.contains("09:00"),
            "tomorrow at 9 in Tokyo: {mom_line}"
        );
        let chosen = js(
            &browser,
            "document.getElementById('reminders-person').selectedOptions[0].textContent",
        )
        .await;
        assert_eq!(chosen, "you");
        // Bob's is not among them.
        let shown_texts = bodies(&browser).await;
        assert!(
            shown_texts.contains(&mom) && !shown_texts.contains(&dentist),
            "{shown_texts:?}"
        );
        fits_the_screen(&browser, "reminders").await;
        screenshot(&browser, &format!("{width}-reminders")).await;

        // A time that is none: refused beside its field, in words; nothing changed.
        let before = app.settled_event_count().await;
        let field = format!("#move-{mom_id}");
        browser.fill(&field, "at 25:00").await;
        browser.click(&format!("{} .move-go", row(&mom_id))).await;
        let error = format!("#move-error-{mom_id}");
        let refused = text_of(&browser, &error, |t| !t.is_empty()).await;
        assert!(
            refused.starts_with("“at 25:00” is not a time I can read, so nothing was changed."),
            "{refused}"
        );
        for internal in ["invalid_when", "400", "/remind"] {
            assert!(!refused.contains(internal), "{refused}");
        }
        let gap = gap_below(
            &browser,
            &format!("move-error-{mom_id}"),
            &format!("move-{mom_id}"),
        )
        .await;
        assert!((0.0..60.0).contains(&gap), "{width}: {gap}px below");
        assert_eq!(app.event_count().await, before, "a refusal appends nothing");
        // The 400 the page was answered, and nothing else.
        let log = browser.console_log().await;
        assert!(
            log.iter()
                .all(|l| l.contains("/api/reminders/") && l.contains("400")),
            "{log:?}"
        );
        let still = reminder(&app, "user", &mom).await;
        assert_eq!(
            shown_due(&browser, &mom_id).await,
            instant(&still["due_at"])
        );
        assert!(
            !shown(&browser, &format!("{} .done", row(&mom_id))).await,
            "no Done."
        );
        fits_the_screen(&browser, "reminders (refused)").await;
        screenshot(&browser, &format!("{width}-reminders-refused")).await;

        // Moved: the list shows the new time, then "Done."; the API agrees.
        browser.fill(&field, "tomorrow at 10").await;
        browser.click(&format!("{} .move-go", row(&mom_id))).await;
        let done = text_of(&browser, &format!("{} .done", row(&mom_id)), |t| {
            !t.is_empty()
        })
        .await;
        assert!(
            done.starts_with("Done. Moved to ") && done.contains("10:00"),
            "{done}"
        );
        assert!(!shown(&browser, &error).await, "the refusal is gone");
        let moved = instant(&reminder(&app, "user", &mom).await["due_at"]);
        assert_eq!(local(moved, TOKYO).hour(), 10, "{moved}");
        assert_eq!(shown_due(&browser, &mom_id).await, moved);
        let line = text_of(&browser, &format!("{} .due", row(&mom_id)), |t| {
            t.contains("10:00")
        })
        .await;
        assert!(
            line.contains(&local(moved, TOKYO).format("%-d").to_string()),
            "{line}"
        );

        // Cancelled: asked first, then gone from the list and from the API.
        browser
            .click(&format!("{} .cancel-reminder", row(&rent_id)))
            .await;
        browser
            .click(&format!("{} .cancel-confirm", row(&rent_id)))
            .await;
        let note = text_of(&browser, "#reminders-note", |t| t.starts_with("Done.")).await;
        assert_eq!(note, format!("Done. “{rent}” is cancelled."));
        assert!(
            browser.find(&row(&rent_id)).await.is_none(),
            "the row is gone"
        );
        assert!(
            !listed(&app, "user").await.iter().any(|r| r["text"] == rent),
            "the API has it no more"
        );

        // Added: said at the desk, where the person spoke last (chosen for them).
        let session = js(
            &browser,
            "document.getElementById('reminder-session').value",
        )
        .await;
        assert_eq!(session, "desk", "the latest conversation");
        let plants = format!("water the plants ({width})");
        browser.fill("#reminder-text", &plants).await;
        browser.fill("#reminder-when", "every monday at 7:00").await;
        browser.click("#reminder-add").await;
        let added = text_of(&browser, "#reminder-add-note", |t| t.starts_with("Done.")).await;
        assert!(
            added.contains(&plants) && added.contains("every Monday at 07:00"),
            "{added}"
        );
        let new = reminder(&app, "user", &plants).await;
        assert_eq!(new["session_id"], "desk");
        assert!(
            new["rule"]
                .as_str()
                .unwrap()
                .starts_with("FREQ=WEEKLY;BYDAY=MO"),
            "{new}"
        );
        let new_id = new["reminder_id"].as_str().unwrap();
        let line = text_of(&browser, &format!("{} .due", row(new_id)), |t| {
            !t.is_empty()
        })
        .await;
        assert!(
            line.contains("07:00") && line.ends_with("· every Monday at 07:00"),
            "{line}"
        );
        assert_eq!(
            local(instant(&new["due_at"]), TOKYO).weekday(),
            chrono::Weekday::Mon
        );
        fits_the_screen(&browser, "reminders (changed)").await;
        let (ratio, what) = lowest_contrast(&browser, TEXT).await;
        assert!(ratio >= 4.5, "{width}, light: {what:?} at {ratio:.2}:1");
        browser.prefer_color_scheme("dark").await;
        let (ratio, what) = lowest_contrast(&browser, TEXT).await;
        assert!(ratio >= 4.5, "{width}, dark: {what:?} at {ratio:.2}:1");
        screenshot(&browser, &format!("{width}-reminders-dark")).await;
        browser.prefer_color_scheme("light").await;

        // Bob's, by address: his alone, in his zone.
        browser
            .goto(&format!("{}/console/#/reminders?person=bob", app.base_url))
            .await;
        text_of(&browser, "#reminders-list", |t| t.contains(&dentist)).await;
        let zone = text_of(&browser, "#reminders-zone", |t| t.contains(NEW_YORK)).await;
        assert_eq!(zone, "Times are bob's local time: America/New_York.");
        let shown_texts = bodies(&browser).await;
        assert!(
            !shown_texts.iter().any(|t| t == &mom || t == &plants),
            "{shown_texts:?}"
        );

        // Someone without any: said in words; nowhere to add one yet.
        browser
            .goto(&format!(
                "{}/console/#/reminders?person=carol",
                app.base_url
            ))
            .await;
        let empty = text_of(&browser, "#reminders-list li.status", |t| !t.is_empty()).await;
        assert!(
            empty.starts_with("Carol has no reminders to come."),
            "{empty}"
        );
        let hint = text_of(&browser, "#reminder-session-hint", |t| !t.is_empty()).await;
        assert!(
            hint.starts_with("Carol has not spoken in any conversation yet."),
            "{hint}"
        );
        assert!(browser.find("#reminder-add[disabled]").await.is_some());
        fits_the_screen(&browser, "reminders (empty)").await;
        screenshot(&browser, &format!("{width}-reminders-empty")).await;
        browser.assert_quiet(width).await;
        browser.close().await;
    }
    drop(driver);
    app.cleanup().await;
}

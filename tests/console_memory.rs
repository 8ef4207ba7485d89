//! The console's memory (issue 35 items 2 and 3) in a real browser: headless Chromium over
//! WebDriver against a running Ghost with the write-plan service, recall on and a fake
//! worker writing the plans. A chat turn makes memories; under the next reply the console
//! shows the memories recall selected for it, each a link to the Memory view, which marks
//! it; there a state's body is corrected and a preference forgotten through the page, and
//! `GET /api/memory` changes accordingly. A refused edit is said plainly. Last, the person
//! is forgotten from the Memory view, and nothing of them is left. Screenshots in
//! `target/console-screenshots/` (`memory-*.png`).

mod support;

// Issue 48: memory as people read it.
#[path = "console_memory/as_people_read_it.rs"]
mod as_people_read_it;

use std::time::Duration;

use ghost::stack::ServiceName;
use ghost_testkit::fake_llm::{RecordedRequest, Script};
use ghost_testkit::testing::{eventually, WORKER_MODEL};
use serde_json::{json, Value};
use support::console::until;
use support::plans::{is_state_or_preference, select_candidates, write_plan};
use support::webdriver::{Driver, ENTER};
use support::{TestApp, NEUTRAL_AFFECT, TOKEN};

/// How long any one thing may take to show in the page (a hang guard, not a measurement).
const PATIENCE: Duration = Duration::from_secs(60);
const DESKTOP: (u32, u32) = (1280, 800);
const PHONE: (u32, u32) = (390, 844);

/// The memories the first turn makes (markup in one: it must stay text).
const SOUP: &str = "Makes <b>celery</b> soup every week";
const NOBODY: &str = "I want to learn more about celery";
const CORRECTED: &str = "Makes celery soup every Sunday";

/// The fake worker: "I love celery" → a state about the speaker, one about no one and a
/// confirmed like; any other turn → nothing to remember. Recall's selection takes every
/// state and preference offered.
fn answer(r: &RecordedRequest) -> Script {
    let system = r.system_text().unwrap_or_default();
    let input = r.last_user_json();
    if system.contains("long-term memory") {
        let current = input["current_event_id"].clone();
        let text = input["turn"]["user_text"].as_str().unwrap_or_default();
        if !text.contains("love celery") {
            return Script::reply(
                &write_plan(json!([]), json!([]), "celery", "observe").to_string(),
            );
        }
        let state = |body: &str, about: &str| {
            json!({"kind": "fact", "op": "upsert", "about": about, "body_text": body,
                   "confidence": 0.9, "evidence_event_ids": [current], "reason": "said so"})
        };
        let like = json!({"op": "confirm", "domain": "food", "polarity": "like",
            "subject": "celery", "confidence": 0.9, "evidence_event_ids": [current],
            "reason": "said so"});
        let states = json!([state(SOUP, "speaker"), state(NOBODY, "nobody")]);
        return Script::reply(&write_plan(states, json!([like]), "celery", "observe").to_string());
    }
    if let Some(selection) = select_candidates(r, is_state_or_preference) {
        return selection;
    }
    match r.model.as_deref() {
        Some(WORKER_MODEL) => Script::reply(NEUTRAL_AFFECT),
        _ => Script::reply("Noted."),
    }
}

/// The texts of what `css` matches under the `n`th reply (0 the first) in the chat.
fn under_reply(n: usize, css: &str) -> String {
    format!(
        "[...(document.querySelectorAll('#chat-log li.done')[{n}] || document.createElement('i')).querySelectorAll({})].map(e => e.textContent)",
        json!(css)
    )
}

/// The texts of every element `css` matches.
fn texts_js(css: &str) -> String {
    format!(
        "[...document.querySelectorAll({})].map(e => e.textContent)",
        json!(css)
    )
}

async fn memory(app: &TestApp) -> Value {
    app.http
        .get(format!("{}/api/memory", app.base_url))
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("memory")
        .json()
        .await
        .expect("memory JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recalled_memories_under_replies_and_correcting_and_forgetting_in_the_console() {
    let mut services = ServiceName::ALL.to_vec();
    services.push(ServiceName::WritePlan);
    let app = TestApp::spawn_services(&services, &[("GHOST_MEMORY__RECALL_ENABLED", "true")]).await;
    app.llm.set_responder(answer);
    let driver = Driver::start().await;
    let browser = driver.browser(DESKTOP.0, DESKTOP.1).await;
    let console = format!("{}/console/", app.base_url);

    browser.goto(&format!("{console}#/chat/memory-chat")).await;
    browser.fill("#signin-token", TOKEN).await;
    browser.click("#signin-submit").await;
    until(
        &browser,
        "signed in",
        "document.getElementById('events-status').textContent",
        |v| v == "Live",
    )
    .await;

    // A first turn: nothing to recall yet, nothing shown under its reply.
    browser.fill("#chat-text", "I love celery").await;
    browser.type_into("#chat-text", ENTER).await;
    until(
        &browser,
        "the first reply's recall looked up",
        "[...document.querySelectorAll('#chat-log li.done')].map(li => li.dataset.recall || '')",
        |v| v == &json!(["none"]),
    )
    .await;
    let under = browser.js(&under_reply(0, ".recalls")).await;
    assert_eq!(under, json!([]), "nothing recalled, nothing shown");

    // Its plan lands: two states and a like.
    let remembered = eventually(PATIENCE, "the plan applied", || async {
        let m = memory(&app).await;
        let states = m["states"].as_array().map_or(0, Vec::len);
        let preferences = m["preferences"].as_array().map_or(0, Vec::len);
        (states == 2 && preferences == 1).then_some(m)
    })
    .await;
    let soup_id = remembered["states"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["body_text"] == SOUP)
        .expect("the soup state")["state_id"]
        .as_str()
        .unwrap()
        .to_owned();

    // A second turn recalls them: each shown under the reply, as text, a link to Memory.
    browser.fill("#chat-text", "What do I like?").await;
    browser.type_into("#chat-text", ENTER).await;
    let recalled = until(
        &browser,
        "the recalled memories under the second reply",
        &under_reply(1, ".recalls a"),
        |v| v.as_array().is_some_and(|a| a.len() == 3),
    )
    .await;
    let recalled: Vec<&str> = recalled
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(recalled.iter().any(|t| t.contains(SOUP)), "{recalled:?}");
    assert!(recalled.iter().any(|t| t.contains(NOBODY)), "{recalled:?}");
    assert!(
        recalled.iter().any(|t| t.contains("like: celery")),
        "{recalled:?}"
    );
    let bold = browser
        .js("document.querySelectorAll('#chat-log b').length")
        .await;
    assert_eq!(
        bold,
        json!(0),
        "memory text is shown as text, never as markup"
    );
    let first = browser.js(&under_reply(0, ".recalls")).await;
    assert_eq!(first, json!([]), "still nothing under the first reply");
    browser.save_screenshot("memory-chat-recalled").await;
    browser.assert_quiet("chat").await;

    // The soup memory's link opens the Memory view with that state marked.
    let link = format!("#chat-log li.done .recalls a[href*='{soup_id}']");
    browser.click(&link).await;
    until(&browser, "the Memory view", "location.hash", |v| {
        v.as_str()
            .is_some_and(|h| h.starts_with("#/memory") && h.contains(&soup_id))
    })
    .await;
    let marked = until(
        &browser,
        "the state marked",
        &texts_js("#memory-states-list li.target .body"),
        |v| v.as_array().is_some_and(|a| a.len() == 1),
    )
    .await;
    assert_eq!(marked, json!([SOUP]));
    let view = browser.js(&texts_js("#view-memory")).await;
    let view = view[0].as_str().unwrap_or_default().to_owned();
    for shown in [
        "fact",
        "active",
        "revision 1",
        "about you",
        "about no one",
        "food",
        "celery",
        "like",
        "confirmed",
    ] {
        assert!(
            view.contains(shown),
            "{shown} not in the Memory view: {view}"
        );
    }
    // The persons found in the memory, and everyone.
    let persons = browser.js("[...document.querySelectorAll('#memory-person option')].map(o => o.value + '=' + o.textContent)").await;
    assert_eq!(persons, json!(["=everyone", "user=you"]));
    browser.save_screenshot("memory-view-marked").await;

    // A refused edit is said plainly, and nothing changes.
    let soup = format!("#memory-states-list li[data-state-id='{soup_id}']");
    browser.click(&format!("{soup} button.correct")).await;
    browser
        .fill(&format!("{soup} textarea.edit-body"), "   ")
        .await;
    browser.click(&format!("{soup} button.save")).await;
    let error = until(&browser, "the refusal", "document.getElementById('memory-edit-error').hidden ? '' : document.getElementById('memory-edit-error').textContent", |v| v.as_str().is_some_and(|t| !t.is_empty())).await;
    assert!(
        error.as_str().unwrap().contains("body_text must be"),
        "{error}"
    );
    browser.save_screenshot("memory-edit-refused").await;
    let _ = browser.console_log().await; // the 400 the page was answered

    // Correcting the body: the page shows revision 2 once it lands; the API agrees.
    browser
        .fill(&format!("{soup} textarea.edit-body"), CORRECTED)
        .await;
    browser.click(&format!("{soup} button.save")).await;
    until(
        &browser,
        "the corrected body",
        &texts_js(&format!("{soup} .body")),
        |v| v == &json!([CORRECTED]),
    )
    .await;
    let meta = browser.js(&texts_js(&format!("{soup} .meta"))).await;
    assert!(
        meta[0].as_str().unwrap_or_default().contains("revision 2"),
        "{meta}"
    );
    let hidden = browser
        .js("document.getElementById('memory-edit-error').hidden")
        .await;
    assert_eq!(hidden, json!(true), "no error left once it worked");
    let after = memory(&app).await;
    let corrected = after["states"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["state_id"] == soup_id.as_str())
        .expect("still there")
        .clone();
    assert_eq!(corrected["body_text"], CORRECTED);
    assert_eq!(corrected["revision"], 2);
    browser.save_screenshot("memory-view-corrected").await;

    // Forgetting the like: asked to confirm, then gone from the page and the API.
    let like = "#memory-preferences-list li[data-person='user']";
    browser.click(&format!("{like} button.forget")).await;
    browser
        .click(&format!("{like} button.forget-confirm"))
        .await;
    until(
        &browser,
        "the like forgotten",
        "document.querySelectorAll('#memory-preferences-list li[data-person]').length",
        |v| v == &json!(0),
    )
    .await;
    let after = memory(&app).await;
    assert_eq!(after["preferences"], json!([]), "{after}");
    assert_eq!(after["states"].as_array().map(Vec::len), Some(2));

    // One person's view: theirs and what is about no one.
    browser.js("(s => { s.value = 'user'; s.dispatchEvent(new Event('change')); return true; })(document.getElementById('memory-person'))").await;
    until(&browser, "the person's view", "location.hash", |v| {
        v.as_str().is_some_and(|h| h.contains("person=user"))
    })
    .await;
    until(
        &browser,
        "both states for user",
        &texts_js("#memory-states-list li .body"),
        |v| v.as_array().is_some_and(|a| a.len() == 2),
    )
    .await;
    browser.save_screenshot("memory-view-person").await;
    browser.assert_quiet("memory view").await;

    browser.close().await;

    // At a phone's width: the view fits, a deep link to a memory marks it.
    let phone = driver.browser(PHONE.0, PHONE.1).await;
    phone
        .goto(&format!("{console}#/memory?state={soup_id}"))
        .await;
    phone.fill("#signin-token", TOKEN).await;
    phone.click("#signin-submit").await;
    until(
        &phone,
        "the state marked at a phone's width",
        &texts_js("#memory-states-list li.target .body"),
        |v| v == &json!([CORRECTED]),
    )
    .await;
    let sizes = phone
        .js("[document.documentElement.scrollWidth, window.innerWidth]")
        .await;
    assert!(
        sizes[0].as_f64() <= sizes[1].as_f64(),
        "wider than the phone: {sizes}"
    );
    phone.save_screenshot("memory-phone").await;
    phone.assert_quiet("at a phone's width").await;
    phone.close().await;

    // Forgetting the person: asked to confirm, then nothing of them in the page, the API
    // or their conversation (the state about no one rested on their words: gone too).
    let browser = driver.browser(DESKTOP.0, DESKTOP.1).await;
    browser
        .goto(&format!("{console}#/memory?person=user"))
        .await;
    browser.fill("#signin-token", TOKEN).await;
    browser.click("#signin-submit").await;
    until(
        &browser,
        "the person's memories",
        &texts_js("#memory-states-list li .body"),
        |v| v.as_array().is_some_and(|a| a.len() == 2),
    )
    .await;
    browser
        .click("#memory-forget-person button.forget-person")
        .await;
    let asked = browser.js(&texts_js("#memory-forget-person .status")).await;
    assert!(
        asked[0]
            .as_str()
            .unwrap_or_default()
            .contains("cannot be undone"),
        "{asked}"
    );
    browser.save_screenshot("memory-forget-person-asked").await;
    browser
        .click("#memory-forget-person button.forget-person-confirm")
        .await;
    until(
        &browser,
        "the person forgotten",
        "document.getElementById('memory-note').textContent",
        |v| v == "Everything about you is forgotten.",
    )
    .await;
    // The note comes as the view is read again: the list follows it.
    until(
        &browser,
        "the memory view without the person",
        &texts_js("#memory-states-list li"),
        |v| v == &json!(["No states."]),
    )
    .await;
    let persons = browser
        .js("[...document.querySelectorAll('#memory-person option')].map(o => o.value)")
        .await;
    assert_eq!(persons, json!([""]));
    let after = memory(&app).await;
    assert_eq!(
        (after["states"].clone(), after["preferences"].clone()),
        (json!([]), json!([])),
        "{after}"
    );
    let said: Value = app.messages("memory-chat").await;
    assert_eq!(said["messages"], json!([]), "{said}");
    browser.save_screenshot("memory-forget-person-done").await;
    browser.assert_quiet("forgetting a person").await;
    browser.close().await;
    drop(driver);
    app.cleanup().await;
}

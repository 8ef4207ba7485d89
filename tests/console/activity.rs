//! Activity says what will happen and what happened (issue 48 items 1, 2, 5 and 6): a
//! decision delivered "activity only" says the result stays there, and its card does not
//! claim anything reached the chat; a message step keeps the time it was said across a
//! reload; the badge counts one for one new card; "Deliberate now"'s note goes once its card
//! came; "Hide all" says it hides until a reload, and a reload shows them again.

use std::time::Duration;

use ghost::stack::ServiceName;
use ghost_testkit::fake_llm::Script;
use ghost_testkit::fake_search::FakeSearch;
use ghost_testkit::testing::WORKER_MODEL;
use serde_json::{json, Value};

use crate::support::autonomy::{decision, spawn_searching, tea_hits};
use crate::support::console::{
    fits_the_screen, js, screenshot, shown, sign_in, text_of, until, DESKTOP, PHONE,
};
use crate::support::webdriver::Driver;
use crate::support::TestApp;

/// How many elements `css` matches, as JavaScript.
fn count(css: &str) -> String {
    format!("document.querySelectorAll({}).length", json!(css))
}

/// The persona's messages of its own in the console's conversation.
async fn own_messages(app: &TestApp) -> Vec<Value> {
    let all = app.messages("console").await;
    all["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["source"] == "autonomy_message")
        .cloned()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn activity_says_what_will_happen_and_what_happened() {
    let search = FakeSearch::start().await.expect("fake search");
    tea_hits(&search);
    let app = spawn_searching(&search, &ServiceName::ALL).await;
    let driver = Driver::start().await;
    let browser = driver.browser(DESKTOP.0, DESKTOP.1).await;
    sign_in(&browser, &app.base_url, "#/chat/console").await;
    let query = json!({"query": "sencha temperature"});

    // Told in the chat, while Chat is shown: its four steps make one card, one on the badge.
    let said = "煎茶は70度くらいで一分がいいみたいだよ。";
    app.llm.push_for_model(
        WORKER_MODEL,
        Script::reply(&decision("web_access", query.clone(), "chat", "report")),
    );
    app.reply(Script::reply(said));
    app.tick().await;
    text_of(&browser, "#chat-log li.autonomy .text", |t| t == said).await;
    until(
        &browser,
        "the message's step",
        &count("#activity-log li[data-kind=message]"),
        |v| v == 1,
    )
    .await;
    let badge = js(
        &browser,
        "document.getElementById('activity-badge').textContent",
    )
    .await;
    assert_eq!(badge, "1", "one new deliberation, one on the badge");

    // Kept to Activity: nothing is said, and nothing claims it was.
    app.llm.push_for_model(
        WORKER_MODEL,
        Script::reply(&decision("web_access", query, "activity_only", "report")),
    );
    app.tick().await;
    until(
        &browser,
        "the second result",
        &count("#activity-log li[data-kind=result]"),
        |v| v == 2,
    )
    .await;
    let badge = js(
        &browser,
        "document.getElementById('activity-badge').textContent",
    )
    .await;
    assert_eq!(badge, "2");
    browser.click("#tabs a[data-view=activity]").await;
    let newest = text_of(&browser, "#activity-log > li:first-child", |t| {
        t.contains("Done")
    })
    .await;
    assert!(
        !newest.contains("tell you in the chat"),
        "activity only, yet: {newest}"
    );
    assert!(
        newest.contains("shown only here, not said in the chat"),
        "{newest}"
    );
    let titles: Vec<String> = serde_json::from_value(
        js(
            &browser,
            "[...document.querySelectorAll('#activity-log > li > .tick-head strong')].map(e => e.textContent)",
        )
        .await,
    )
    .unwrap();
    assert_eq!(
        titles,
        [
            "Look something up on the web · done · shown here only, nothing said in the chat",
            "Look something up on the web · done · told you in the chat",
        ]
    );
    assert_eq!(
        js(
            &browser,
            &count("#activity-log > li:first-child li[data-kind=message]")
        )
        .await,
        0
    );
    assert_eq!(own_messages(&app).await.len(), 1, "nothing more was said");
    fits_the_screen(&browser, "activity").await;
    screenshot(&browser, "desktop-activity-delivery").await;

    // After a reload, the message step says when it was said, not when the page loaded.
    tokio::time::sleep(Duration::from_secs(2)).await;
    browser.refresh().await;
    until(
        &browser,
        "the message's step again",
        &count("#activity-log li[data-kind=message]"),
        |v| v == 1,
    )
    .await;
    let step = js(
        &browser,
        "document.querySelector('#activity-log li[data-kind=message] time').dateTime",
    )
    .await;
    let said_at = own_messages(&app).await[0]["recorded_at"].clone();
    let at = |v: &Value| {
        chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap_or_default())
            .unwrap_or_else(|e| panic!("{v}: {e}"))
    };
    let off = (at(&step) - at(&said_at)).num_milliseconds().abs();
    assert!(
        off < 1000,
        "the step is dated {step}, the message was said {said_at}"
    );

    // "Deliberate now": said while it deliberates, gone once its card came.
    app.llm
        .push_for_model(WORKER_MODEL, Script::reply(r#"{"decision": "maybe"}"#));
    browser.click("#activity-tick").await;
    text_of(&browser, "#activity-log > li:first-child", |t| {
        t.contains("could not be read")
    })
    .await;
    until(
        &browser,
        "the note gone with its card come",
        "document.getElementById('activity-note').textContent",
        |v| v == "",
    )
    .await;

    // "Hide all" says what it does: hidden until a reload, and a reload shows them again.
    browser.click("#activity-clear").await;
    let note = text_of(&browser, "#activity-note", |t| !t.is_empty()).await;
    assert!(
        note.contains("3 entries hidden until you reload the page"),
        "{note}"
    );
    assert!(!shown(&browser, "#activity-log > li").await);
    screenshot(&browser, "desktop-activity-hidden").await;
    browser.refresh().await;
    until(
        &browser,
        "every card back after a reload",
        "[...document.querySelectorAll('#activity-log > li')].filter(li => li.getClientRects().length).length",
        |v| v == 3,
    )
    .await;
    browser.assert_quiet("activity at a desktop").await;
    browser.close().await;

    // At a phone's width: the same words, and they fit.
    let phone = driver.browser(PHONE.0, PHONE.1).await;
    sign_in(&phone, &app.base_url, "#/activity").await;
    let kept = text_of(&phone, "#activity-log > li:nth-child(2)", |t| {
        t.contains("nothing said in the chat")
    })
    .await;
    assert!(!kept.contains("tell you in the chat"), "{kept}");
    fits_the_screen(&phone, "activity").await;
    screenshot(&phone, "phone-activity-delivery").await;
    phone.assert_quiet("activity at a phone").await;
    phone.close().await;
    drop(driver);
    app.cleanup().await;
}

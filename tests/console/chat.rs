//! Chat, second pass (issue 48 items 5, 12, 13 and 14), at a phone's width and a desktop's:
//! the keyboard starts in the token field, then in the message box; the hint fits the
//! keyboard at hand (a phone's Return is a new line); the back link is a thumb's size; an
//! unsent message survives a reload; "too long" says the length and the limit and goes once
//! the text fits; "Not connected" goes once connected again; the persona's own messages say
//! so in words; the page follows the browser's dark preference, its text at least 4.5:1.

use ghost::stack::ServiceName;
use ghost_testkit::fake_llm::Script;
use ghost_testkit::fake_search::FakeSearch;
use ghost_testkit::testing::WORKER_MODEL;
use serde_json::json;

use crate::support::autonomy::{decision, tea_hits};
use crate::support::console::{
    fits_the_screen, js, lowest_contrast, screenshot, shown, sign_in, text_of, until, PATIENCE,
    WIDTHS,
};
use crate::support::webdriver::{Browser, Driver, ENTER};
use crate::support::TestApp;

/// The longest message this test's gateway takes.
const MAX: usize = 40;

/// What the page's text is drawn in: every kind of text a person reads in Chat.
const TEXT: &str = "#chat-log li .text, #chat-log .meta span, #chat-title, #chat-sub, .hint, \
    #tabs a, button, .conn, #chat-notice, .brand, .sessions .name, .sessions .last";

async fn value(browser: &Browser) -> serde_json::Value {
    js(browser, "document.getElementById('chat-text').value").await
}

async fn focused(browser: &Browser) -> serde_json::Value {
    js(
        browser,
        "document.activeElement && document.activeElement.id",
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_says_what_is_so_at_a_phone_and_a_desktop() {
    let search = FakeSearch::start().await.expect("fake search");
    tea_hits(&search);
    let url = search.search_url();
    let max = MAX.to_string();
    let app = TestApp::spawn_adjusted(
        &ServiceName::ALL,
        &[
            ("GHOST_AUTONOMY__INTERVAL_SECS", "0"),
            ("GHOST_GATEWAY__MAX_MESSAGE_CHARS", &max),
        ],
        move |c| c.ghost.web.search_url = Some(url),
    )
    .await;
    // A message of the persona's own in the console's conversation.
    let own = "煎茶は70度くらいがいいみたい。";
    app.llm.push_for_model(
        WORKER_MODEL,
        Script::reply(&decision(
            "web_access",
            json!({"query": "sencha"}),
            "chat",
            "report",
        )),
    );
    app.reply(Script::reply(own));
    app.tick().await;
    ghost_testkit::testing::eventually(PATIENCE, "the persona's message", || async {
        let said = app.message_field("console", "text").await;
        said.iter().any(|t| t == own).then_some(())
    })
    .await;
    let driver = Driver::start().await;

    for (width, (w, h)) in WIDTHS {
        let browser = driver.browser(w, h).await;
        let phone = width == "phone";
        let session = format!("chat-{width}");

        // The keyboard goes to the token field, then (signed in) to the message box.
        browser.goto(&format!("{}/console/", app.base_url)).await;
        text_of(&browser, "#signin-form", |t| t.contains("Sign in")).await;
        assert_eq!(focused(&browser).await, "signin-token", "{width}");
        sign_in(&browser, &app.base_url, &format!("#/chat/{session}")).await;
        text_of(&browser, "#chat-log", |t| t.contains("No messages yet")).await;
        assert_eq!(focused(&browser).await, "chat-text", "{width}");

        // The hint is the keyboard's: on a phone Return is a new line and Send sends.
        let hint = text_of(&browser, "#chat-hint", |t| !t.is_empty()).await;
        if phone {
            assert_eq!(hint, "Tap Send to send · Return for a new line");
            browser.fill("#chat-text", "a").await;
            browser.type_into("#chat-text", ENTER).await;
            assert_eq!(value(&browser).await, "a\n", "Return is a new line");
            let back = js(
                &browser,
                "(r => [r.width, r.height])(document.querySelector('#view-chat .back').getBoundingClientRect())",
            )
            .await;
            let side = |i: usize| back[i].as_f64().unwrap_or(0.0);
            assert!(
                side(0) >= 44.0 && side(1) >= 44.0,
                "the back link is {back}"
            );
        } else {
            assert_eq!(hint, "Enter to send · Shift+Enter for a new line");
        }

        // An unsent message survives a reload.
        browser.fill("#chat-text", "まだ送っていない下書き").await;
        browser.refresh().await;
        text_of(&browser, "#events-status", |t| t == "Live").await;
        until(
            &browser,
            "the draft back",
            "document.getElementById('chat-text').value",
            |v| v == "まだ送っていない下書き",
        )
        .await;

        // Too long: the length and the limit, gone once it fits.
        browser.fill("#chat-text", &"x".repeat(MAX + 5)).await;
        browser.click("#chat-send").await;
        let notice = text_of(&browser, "#chat-notice", |t| !t.is_empty()).await;
        assert!(
            notice.contains("45 characters long; at most 40 fit"),
            "{notice}"
        );
        browser.fill("#chat-text", &"x".repeat(MAX)).await;
        assert!(!shown(&browser, "#chat-notice").await, "still: too long");

        // Not connected: said while so, gone once connected again; the text kept.
        js(&browser, "(state.live.close(), true)").await;
        text_of(&browser, "#events-status", |t| t == "Offline").await;
        browser.click("#chat-send").await;
        let notice = text_of(&browser, "#chat-notice", |t| !t.is_empty()).await;
        assert!(notice.contains("Not connected"), "{notice}");
        text_of(&browser, "#events-status", |t| t == "Live").await;
        until(
            &browser,
            "the notice gone once connected",
            "document.getElementById('chat-notice').hidden",
            |v| v == true,
        )
        .await;
        assert_eq!(value(&browser).await, "x".repeat(MAX));
        js(&browser, "(e => { e.value = ''; e.dispatchEvent(new Event('input')); return true; })(document.getElementById('chat-text'))").await;

        // The persona's own message says so in words, on a phone too.
        browser
            .goto(&format!("{}/console/#/chat/console", app.base_url))
            .await;
        text_of(&browser, "#chat-log li.autonomy .text", |t| t == own).await;
        let label = text_of(&browser, "#chat-log li.autonomy .meta .label", |t| {
            !t.is_empty()
        })
        .await;
        assert_eq!(label, "on its own");
        fits_the_screen(&browser, "chat").await;
        let (ratio, what) = lowest_contrast(&browser, TEXT).await;
        assert!(ratio >= 4.5, "{width}, light: {what:?} at {ratio:.2}:1");

        // The browser's dark preference: a dark page, its text as readable.
        browser.prefer_color_scheme("dark").await;
        let background = js(
            &browser,
            "getComputedStyle(document.documentElement).backgroundColor",
        )
        .await;
        let dark = background
            .as_str()
            .unwrap_or_default()
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|n| n.parse::<u32>().ok())
            .take(3)
            .all(|n| n < 64);
        assert!(dark, "{width}: the page is {background} in the dark");
        let (ratio, what) = lowest_contrast(&browser, TEXT).await;
        assert!(ratio >= 4.5, "{width}, dark: {what:?} at {ratio:.2}:1");
        screenshot(&browser, &format!("{width}-chat-dark")).await;
        browser.assert_quiet(width).await;
        browser.close().await;
    }
    drop(driver);
    app.cleanup().await;
}

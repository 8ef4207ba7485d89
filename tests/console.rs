//! The web console in a real browser: headless Chromium driven over WebDriver (Debian's
//! `chromium` and `chromium-driver`; deploy/test-tools.sh installs them) against a running
//! Ghost with the fake model, the fake search server and a fake LINE, used as a person
//! would at a phone's width (390 × 844) and then at a desktop's (1280 × 800). The browser's
//! console log must stay empty throughout. Screenshots of every view at both widths are kept
//! in `target/console-screenshots/` (`phone-*.png`, `desktop-*.png`).

mod support;

// The second pass (issue 48), one file per view, in this binary (one Chromium at a time).
#[path = "console/activity.rs"]
mod activity;
#[path = "console/chat.rs"]
mod chat_view;
#[path = "console/mood.rs"]
mod mood_view;
#[path = "console/reminders.rs"]
mod reminders_view;
#[path = "console/stage.rs"]
mod stage_view;

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use ghost::stack::ServiceName;
use ghost_testkit::fake_llm::{Failure, Script};
use ghost_testkit::fake_search::{FakeHit, FakeSearch};
use ghost_testkit::testing::{eventually, WORKER_MODEL};
use serde_json::{json, Value};
use support::console::{
    at, fits_the_screen, js, n_texts, screenshot, shown, text_of, texts, DESKTOP, PATIENCE, PHONE,
};
use support::platforms::{line_text, ChannelApp};
use support::stage::frames_until;
use support::webdriver::{Browser, Driver, CONTROL, ENTER, SHIFT};
use support::{TestApp, TOKEN};
use tokio_tungstenite::tungstenite::Message;

/// Every model of the stage's characters on the fake (each character its own model name).
fn cast_on_the_fake(config: &mut ghost_shared::config::Config) {
    let persona = config.ghost.llm["persona"].clone();
    for id in ["kuro", "LUMINA", "CLARIS", "NOX"] {
        let mut llm = persona.clone();
        llm.model = format!("{}-model", id.to_lowercase());
        config.ghost.llm.insert(id.to_lowercase(), llm);
    }
}

/// The mood as the API reports it (what the console should agree with).
async fn mood_from_api(app: &TestApp) -> Value {
    app.http
        .get(format!("{}/api/partner_mood", app.base_url))
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("mood")
        .json()
        .await
        .expect("mood JSON")
}

/// The browser's console log is empty: no error, no warning, no failed request.
async fn quiet_console(browser: &Browser, when: &str) {
    browser.assert_quiet(when).await;
}

/// What the page holds, markup and storage, in one string (to look for what must be gone).
async fn everything_in_the_page(browser: &Browser) -> String {
    js(
        browser,
        "document.documentElement.outerHTML + JSON.stringify(sessionStorage) + JSON.stringify(localStorage) + location.href",
    )
    .await
    .as_str()
    .unwrap_or_default()
    .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_in_chromium_as_people_use_it_at_a_phone_and_a_desktop() {
    let search = FakeSearch::start().await.expect("fake search");
    search.set_hits(vec![FakeHit {
        title: "Sencha guide".into(),
        url: "https://tea.example/sencha".into(),
        content: "Steep sencha at 70 degrees for one minute.".into(),
    }]);
    let search_url = search.search_url();
    let channels = ChannelApp::spawn_adjusted(
        &ServiceName::ALL,
        &[
            ("GHOST_STAGE__AUTO_LOOPS", "3"),
            // Ticks only when asked.
            ("GHOST_AUTONOMY__INTERVAL_SECS", "0"),
            // Room for a reply slow enough to reload the page while it is written.
            ("GHOST_LLM__PERSONA__TIMEOUT_SECS", "20"),
        ],
        move |config| {
            cast_on_the_fake(config);
            config.ghost.web.search_url = Some(search_url);
        },
    )
    .await;
    let driver = Driver::start().await;

    let phone = driver.browser(PHONE.0, PHONE.1).await;
    at_a_phone(&channels, &phone, &search).await;
    phone.close().await;

    let desktop = driver.browser(DESKTOP.0, DESKTOP.1).await;
    at_a_desktop(&channels.app, &desktop).await;
    desktop.close().await;

    drop(driver);
    channels.cleanup().await;
}

/// Everything, at a phone's width.
async fn at_a_phone(channels: &ChannelApp, browser: &Browser, search: &FakeSearch) {
    let app = &channels.app;
    let console = format!("{}/console/", app.base_url);

    // Signed out, a deep link opens nothing but the sign-in.
    browser
        .goto(&format!("{console}#/stage/console-stage"))
        .await;
    text_of(browser, "#signin-form", |t| t.contains("Sign in")).await;
    let debug = js(browser, "[document.getElementById('app').hidden, getComputedStyle(document.getElementById('app')).display, getComputedStyle(document.getElementById('tabs')).display, document.getElementById('tabs').getClientRects().length, document.styleSheets.length]").await;
    assert!(
        !shown(browser, "#tabs").await,
        "no tab while signed out {debug}"
    );
    assert!(
        !shown(browser, "#view-stage").await,
        "no view while signed out"
    );
    browser.fill("#signin-token", "not-the-token").await;
    browser.click("#signin-submit").await;
    text_of(browser, "#signin-error", |t| t.contains("not right")).await;
    assert!(!shown(browser, "#tabs").await);
    screenshot(browser, "phone-sign-in").await;
    browser.goto(&console).await;
    browser.fill("#signin-token", TOKEN).await;
    browser.click("#signin-submit").await;
    text_of(browser, "#events-status", |t| t == "Live").await;
    at(browser, "#/chat/console").await;
    let html_lang = js(browser, "document.documentElement.lang").await;
    assert_eq!(html_lang, "en", "the interface is in English");

    // The header and the tabs leave the conversation most of the phone's height.
    let heights = js(
        browser,
        "[document.querySelector('.brand').getBoundingClientRect().height, document.getElementById('tabs').getBoundingClientRect().height, document.getElementById('chat-log').getBoundingClientRect().height, window.innerHeight]",
    )
    .await;
    screenshot(browser, "phone-chat-empty").await;
    let inner = heights[3].as_f64().unwrap();
    let (header, tabs, log) = (
        heights[0].as_f64().unwrap(),
        heights[1].as_f64().unwrap(),
        heights[2].as_f64().unwrap(),
    );
    assert!(header <= 56.0, "header {header}px");
    assert!(tabs <= 64.0, "tabs {tabs}px");
    assert!(
        log >= inner * 0.6,
        "the conversation gets only {log}px of {inner}"
    );
    fits_the_screen(browser, "chat").await;

    // Autonomy: the persona's own message appears live in Chat under its display name; its
    // deliberation waits in Activity behind a badge.
    let decision = json!({
        "decision": "do_action", "action_type": "web_research", "capability": "web_access",
        "input": {"query": "sencha temperature"}, "reason": "マスターがお茶の話をしていた",
        "console_delivery": {"mode": "chat", "message_kind": "report"}
    });
    app.llm
        .push_for_model(WORKER_MODEL, Script::reply(&decision.to_string()));
    let said = "煎茶は70度くらいで一分がいいみたいだよ。";
    app.reply(Script::reply(said));
    app.tick().await;
    text_of(browser, "#chat-log li.persona.autonomy .text", |t| {
        t == said
    })
    .await;
    let who = texts(browser, "#chat-log li.persona.autonomy .who").await;
    assert_eq!(who, ["クロ"], "said by the persona, under its display name");
    assert_eq!(search.queries(), vec!["sencha temperature".to_owned()]);
    // One new deliberation, one on the badge (however many of its steps came).
    let badge = text_of(browser, "#activity-badge", |t| t == "1").await;
    assert!(shown(browser, "#activity-badge").await, "badge {badge}");
    fits_the_screen(browser, "chat (autonomous message)").await;
    screenshot(browser, "phone-chat-autonomy").await;

    // Activity: one card for the deliberation, its steps in order, in plain words, with a
    // link to the message it produced.
    browser.click("#tabs a[data-view=activity]").await;
    at(browser, "#/activity").await;
    let steps = "#activity-log > li:first-child .steps > li";
    let kinds = || async {
        let mut kinds = Vec::new();
        for li in browser.find_all(steps).await {
            kinds.push(browser.attr(&li, "data-kind").await.unwrap_or_default());
        }
        kinds
    };
    let shown_kinds = eventually(PATIENCE, "decided, started, result, message", || async {
        let k = kinds().await;
        (k.len() == 4).then_some(k)
    })
    .await;
    assert_eq!(shown_kinds, ["decided", "started", "result", "message"]);
    assert!(!shown(browser, "#activity-badge").await, "seen: no badge");
    let card = text_of(browser, "#activity-log > li:first-child", |t| !t.is_empty()).await;
    assert!(card.contains("マスターがお茶の話をしていた"), "{card}");
    assert!(card.contains("look something up on the web"), "{card}");
    assert!(card.contains("https://tea.example/sencha"), "{card}");
    assert!(card.contains(said), "{card}");
    let link = browser
        .find("#activity-log > li:first-child a.open-message")
        .await
        .expect("a link to the message");
    let href = browser.attr(&link, "href").await.unwrap_or_default();
    assert!(href.contains("#/chat/console/"), "{href}");
    // "Deliberate now": a decision that cannot be read is set aside, said plainly.
    app.llm
        .push_for_model(WORKER_MODEL, Script::reply(r#"{"decision": "maybe"}"#));
    browser.click("#activity-tick").await;
    let dropped = text_of(browser, "#activity-log > li:first-child", |t| {
        t.contains("could not be read")
    })
    .await;
    for internal in ["invalid_decision", "expected", "must be"] {
        assert!(!dropped.contains(internal), "shown: {dropped}");
    }
    fits_the_screen(browser, "activity").await;
    screenshot(browser, "phone-activity").await;
    // Each view has its address: a reload comes back to it, with the past.
    browser.refresh().await;
    n_texts(browser, "#activity-log > li.tick", 2).await;
    assert!(shown(browser, "#view-activity").await);

    // The message the activity links to, marked in its conversation.
    browser.goto(&format!("{console}{href}")).await;
    text_of(browser, "#chat-log li.target .text", |t| t == said).await;

    // Chat: Send sends (on a phone's touch keyboard Return is a new line); the reply streams
    // in, signed with the persona's display name, with times; Shift+Enter is a new line.
    browser.goto(&format!("{console}#/chat/console-chat")).await;
    text_of(browser, "#chat-title", |t| t == "console-chat").await;
    text_of(browser, "#chat-log", |t| t.contains("No messages yet")).await;
    browser.fill("#chat-text", "a").await;
    browser.press(&[SHIFT, ENTER]).await;
    let value = js(browser, "document.getElementById('chat-text').value").await;
    assert_eq!(value, "a\n", "Shift+Enter is a new line");
    app.reply(
        Script::chunks(vec!["こんにちは、", "クロです。", "元気ですよ。"])
            .with_chunk_delay(Duration::from_millis(150)),
    );
    browser.fill("#chat-text", "こんにちは！元気？").await;
    browser.click("#chat-send").await;
    let reply = text_of(browser, "#chat-log li.done .text", |t| !t.is_empty()).await;
    assert_eq!(reply, "こんにちは、クロです。元気ですよ。");
    let done = browser.find("#chat-log li.done").await.expect("reply");
    let tokens = browser.attr(&done, "data-tokens").await;
    let count: usize = tokens.as_deref().and_then(|t| t.parse().ok()).unwrap_or(0);
    assert!(
        (2..=3).contains(&count),
        "the reply came as {tokens:?} token frames, not streamed"
    );
    assert_eq!(
        js(browser, "document.getElementById('chat-text').value").await,
        ""
    );
    assert_eq!(texts(browser, "#chat-log li.persona .who").await, ["クロ"]);
    let times = js(
        browser,
        "[...document.querySelectorAll('#chat-log li time')].map(t => t.dateTime)",
    )
    .await;
    assert_eq!(times.as_array().map(Vec::len), Some(2), "{times}");
    let lang = js(
        browser,
        "document.querySelector('#chat-log li.done .text').lang",
    )
    .await;
    assert_eq!(lang, "ja", "Japanese text is marked Japanese");
    fits_the_screen(browser, "chat").await;
    screenshot(browser, "phone-chat").await;

    // A message sent while the reply is being written is refused and kept, said plainly;
    // a reload while the reply is written shows it is coming, and it appears by itself.
    app.reply(
        Script::chunks(vec!["ゆっくり", "考えて", "います。"])
            .with_chunk_delay(Duration::from_millis(2500)),
    );
    browser.fill("#chat-text", "ゆっくりでいいよ").await;
    browser.click("#chat-send").await;
    text_of(browser, "#chat-sub", |t| t.contains("writing a reply")).await;
    browser.fill("#chat-text", "まだ？").await;
    browser.click("#chat-send").await;
    let notice = text_of(browser, "#chat-notice", |t| !t.is_empty()).await;
    assert!(notice.contains("still answering"), "{notice}");
    assert!(!notice.contains("busy"), "{notice}");
    let kept = js(browser, "document.getElementById('chat-text').value").await;
    assert_eq!(kept, "まだ？", "the refused message stays in the box");
    screenshot(browser, "phone-chat-refused").await;
    browser.refresh().await;
    text_of(browser, "#chat-sub", |t| t.contains("writing a reply")).await;
    assert!(
        shown(browser, "#chat-log li.pending, #chat-log li.streaming").await,
        "a reply is coming"
    );
    screenshot(browser, "phone-chat-writing").await;
    let slow = n_texts(browser, "#chat-log li.done .text", 2).await;
    assert_eq!(slow[1], "ゆっくり考えています。");
    text_of(browser, "#chat-sub", |t| !t.contains("writing")).await;

    // A model error: a plain notice, no empty bubble.
    app.reply(Script::failing(Failure::Status(500, "boom".into())));
    browser.fill("#chat-text", "もう一回").await;
    browser.click("#chat-send").await;
    let failed = text_of(browser, "#chat-log li.notice", |t| !t.is_empty()).await;
    assert!(failed.contains("could not answer"), "{failed}");
    for internal in ["llm_http", "500", "status"] {
        assert!(!failed.contains(internal), "shown: {failed}");
    }
    let empty = js(
        browser,
        "[...document.querySelectorAll('#chat-log li.persona')].filter(li => !li.querySelector('.text').textContent.trim()).length",
    )
    .await;
    assert_eq!(empty, 0, "no empty reply bubble");
    assert!(!shown(browser, "#chat-log li.pending").await);

    // A LINE user's message in the open conversation appears live, then the reply.
    let session = "line:user:U77";
    browser
        .goto(&format!("{console}#/chat/{}", session.replace(':', "%3A")))
        .await;
    text_of(browser, "#chat-title", |t| t == "LINE · U77").await;
    app.reply(Script::reply("LINEでもよろしくね。"));
    let body = line_text("ev-console", "U77", "LINEから送ったよ", "rt-console", false);
    assert_eq!(channels.post_line_signed(&body).await, 200);
    let line_said = text_of(browser, "#chat-log li.user", |t| t.contains("LINEから")).await;
    assert!(line_said.contains("LINE · U77"), "{line_said}");
    text_of(browser, "#chat-log li.done .text", |t| {
        t == "LINEでもよろしくね。"
    })
    .await;
    screenshot(browser, "phone-chat-line").await;

    // The conversation list: every conversation with its last message; one opens.
    browser.click("#view-chat .back").await;
    at(browser, "#/chats").await;
    // A name field's pattern holds under the `v` flag browsers use (an invalid one would
    // validate nothing, and be logged).
    let validity = js(
        browser,
        "(f => ['a b', 'line:user:U1', 'x'.repeat(129), 'ok_1.2@x-y'].map(v => { f.value = v; return f.checkValidity(); }))(document.getElementById('new-session'))",
    )
    .await;
    assert_eq!(validity, json!([false, true, false, true]));
    browser
        .execute("document.getElementById('new-session').value = ''; return true;")
        .await;
    let list = text_of(browser, "#session-list", |t| t.contains("console-chat")).await;
    assert!(list.contains("LINE · U77"), "{list}");
    assert!(list.contains("LINEでもよろしくね。"), "{list}");
    fits_the_screen(browser, "conversations").await;
    screenshot(browser, "phone-conversations").await;
    browser
        .click("#session-list li[data-session=console-chat] a")
        .await;
    at(browser, "#/chat/console-chat").await;
    n_texts(browser, "#chat-log li.done", 2).await;

    // Stage: a bad name is said plainly; Stop only while a run goes; the run finishes; the
    // lines are there again after a reload.
    browser.click("#tabs a[data-view=stage]").await;
    at(browser, "#/stage").await;
    browser.fill("#stage-id", "bad id").await;
    browser.click("#stage-connect").await;
    text_of(browser, "#stage-id-error", |t| {
        t.contains("letters, digits")
    })
    .await;
    let say = |id: &str, text: &str| {
        app.llm
            .push_for_model(&format!("{}-model", id.to_lowercase()), Script::reply(text))
    };
    say("LUMINA", "星の話をしよう。[Next: NOX]");
    say("NOX", "静かな夜だね。[Next: CLARIS]");
    say("CLARIS", "では、星座を数えましょう。");
    browser.fill("#stage-id", "console-stage").await;
    browser.click("#stage-connect").await;
    at(browser, "#/stage/console-stage").await;
    text_of(browser, "#stage-status", |t| t.contains("Watching")).await;
    let stop = browser.find("#stage-stop").await.expect("stop");
    assert_eq!(
        browser.attr(&stop, "disabled").await.as_deref(),
        Some("true")
    );
    browser
        .fill("#stage-text", "[Next: ルミナ] みんな、何の話をする？")
        .await;
    browser.click("#stage-send").await;
    let lines = n_texts(browser, "#stage-log li.persona", 3).await;
    assert_eq!(
        lines,
        [
            "ルミナ\n星の話をしよう。",
            "ノクス\n静かな夜だね。",
            "クラリス\nでは、星座を数えましょう。"
        ]
    );
    let ended = text_of(browser, "#stage-log li.ended", |t| !t.is_empty()).await;
    assert_eq!(ended, "Finished after 3 turns.");
    let statuses = texts(browser, "#stage-log li.status").await;
    assert!(
        statuses.contains(&"Next: ノクス".to_owned()),
        "{statuses:?}"
    );
    let stop = browser.find("#stage-stop").await.expect("stop");
    assert_eq!(
        browser.attr(&stop, "disabled").await.as_deref(),
        Some("true")
    );
    fits_the_screen(browser, "stage").await;
    screenshot(browser, "phone-stage").await;
    browser.refresh().await;
    let again = n_texts(browser, "#stage-log li.persona", 3).await;
    assert_eq!(again, lines, "the run so far, on joining again");
    text_of(browser, "#stage-log li.ended", |t| t == ended).await;
    text_of(browser, "#stage-log li.user", |t| {
        t.contains("何の話をする")
    })
    .await;

    // Mood: the form starts from the current mood; any value from 0 to 1 is taken.
    support::memory::plant(app, true).await;
    browser.click("#tabs a[data-view=mood]").await;
    at(browser, "#/mood").await;
    text_of(browser, "#mood-summary", |t| t.contains("(computed)")).await;
    let prefilled = js(browser, "document.getElementById('mood-cooperation').value").await;
    assert_ne!(prefilled, "", "the form starts from the current mood");
    let note = text_of(browser, "#mood-form", |t| t.contains("memory only")).await;
    assert!(note.contains("restart"), "{note}");
    browser.click("#mood-label option[value=anger]").await;
    browser.fill("#mood-intensity", "0.6").await;
    browser.fill("#mood-anger", "0.33").await;
    browser.fill("#mood-cooperation", "0.4").await;
    browser.fill("#mood-refusal-bias", "0.3").await;
    browser.click("#mood-set").await;
    let summary = text_of(browser, "#mood-summary", |t| t.contains("(override)")).await;
    assert!(summary.contains("anger"), "{summary}");
    let mood = mood_from_api(app).await;
    assert_eq!(mood["overridden"], true);
    assert_eq!(mood["state"]["components"]["anger"], 0.33);
    fits_the_screen(browser, "mood").await;
    screenshot(browser, "phone-mood").await;
    browser.click("#mood-clear").await;
    text_of(browser, "#mood-summary", |t| t.contains("(computed)")).await;
    assert_eq!(mood_from_api(app).await["overridden"], false);
    // Memory, beside the mood.
    let preferences = text_of(browser, "#memory-preferences", |t| t.contains("tea")).await;
    assert!(preferences.contains("like tea"), "{preferences}");
    let interest = text_of(browser, "#memory-interest", |t| t.contains("mode")).await;
    assert!(interest.contains("topic: tea"), "{interest}");
    browser
        .execute("document.getElementById('memory').scrollIntoView(); return true;")
        .await;
    screenshot(browser, "phone-memory").await;

    // Signed out: no view, no tab, nothing of the conversations left in the page.
    browser.click("#sign-out").await;
    text_of(browser, "#signin-form", |t| t.contains("Sign in")).await;
    signed_out(browser).await;
    quiet_console(browser, "at a phone").await;
}

/// After Sign out: only the sign-in; nothing of what was shown, the token nowhere.
async fn signed_out(browser: &Browser) {
    for css in [
        "#tabs",
        "#view-chat",
        "#view-activity",
        "#view-stage",
        "#view-mood",
        "#view-memory",
    ] {
        assert!(!shown(browser, css).await, "{css} shown after sign-out");
    }
    let page = everything_in_the_page(browser).await;
    for gone in [
        "こんにちは、クロです",
        "煎茶",
        "console-chat",
        "ルミナ",
        "tea.example",
        "マスター",
        TOKEN,
    ] {
        assert!(
            !page.contains(gone),
            "{gone} still in the page after sign-out"
        );
    }
    // Back to where the person was: still only the sign-in.
    browser.execute("history.back(); return true;").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!shown(browser, "#tabs").await);
    assert!(!shown(browser, "#view-chat").await);
}

/// Deep links, the conversation list beside the conversation, Ctrl+Enter, every view's
/// picture at a desktop's width.
async fn at_a_desktop(app: &TestApp, browser: &Browser) {
    let console = format!("{}/console/", app.base_url);
    browser.goto(&format!("{console}#/activity")).await;
    text_of(browser, "#signin-form", |t| t.contains("Sign in")).await;
    fits_the_screen(browser, "sign-in").await;
    screenshot(browser, "desktop-sign-in").await;
    browser.fill("#signin-token", TOKEN).await;
    browser.click("#signin-submit").await;
    // The address asked for before signing in.
    n_texts(browser, "#activity-log > li.tick", 2).await;
    at(browser, "#/activity").await;
    // The past deliberation links to the message it produced.
    text_of(browser, "#activity-log a.open-message", |t| {
        t == "Open in chat"
    })
    .await;
    fits_the_screen(browser, "activity").await;
    screenshot(browser, "desktop-activity").await;

    browser.goto(&format!("{console}#/chat/console-chat")).await;
    n_texts(browser, "#chat-log li.done", 2).await;
    assert!(
        shown(browser, "#session-list").await,
        "the list beside the chat"
    );
    app.reply(Script::reply("はい、どうぞ。"));
    browser.fill("#chat-text", "Ctrl+Enterでも送れる？").await;
    browser.press(&[CONTROL, ENTER]).await;
    n_texts(browser, "#chat-log li.done", 3).await;
    fits_the_screen(browser, "chat").await;
    screenshot(browser, "desktop-chat").await;
    browser
        .click("#session-list li[data-session=console] a")
        .await;
    at(browser, "#/chat/console").await;
    text_of(browser, "#chat-log li.autonomy .text", |t| {
        t.contains("煎茶")
    })
    .await;

    browser
        .goto(&format!("{console}#/stage/console-stage"))
        .await;
    n_texts(browser, "#stage-log li.persona", 3).await;
    text_of(browser, "#stage-log li.ended", |t| {
        t.starts_with("Finished")
    })
    .await;
    fits_the_screen(browser, "stage").await;
    screenshot(browser, "desktop-stage").await;
    // Stop, while a run goes: it ends, stopped.
    let slow = |id: &str, text: &str| {
        let model = format!("{}-model", id.to_lowercase());
        let script = Script::reply(text).with_delay(Duration::from_secs(2));
        app.llm.push_for_model(&model, script);
    };
    slow("LUMINA", "少し考えさせて。[Next: NOX]");
    slow("NOX", "それなら私が。[Next: CLARIS]");
    browser.fill("#stage-id", "desk-stage").await;
    browser.click("#stage-connect").await;
    at(browser, "#/stage/desk-stage").await;
    text_of(browser, "#stage-status", |t| {
        t.contains("Watching desk-stage")
    })
    .await;
    browser
        .fill("#stage-text", "[Next: ルミナ] 止めてみる")
        .await;
    browser.type_into("#stage-text", ENTER).await;
    eventually(PATIENCE, "Stop enabled", || async {
        let stop = browser.find("#stage-stop").await?;
        browser
            .attr(&stop, "disabled")
            .await
            .is_none()
            .then_some(())
    })
    .await;
    browser.click("#stage-stop").await;
    let stopped = text_of(browser, "#stage-log li.ended", |t| !t.is_empty()).await;
    assert!(stopped.starts_with("Stopped after"), "{stopped}");
    let stop = browser.find("#stage-stop").await.expect("stop");
    assert_eq!(
        browser.attr(&stop, "disabled").await.as_deref(),
        Some("true")
    );

    browser.click("#tabs a[data-view=mood]").await;
    text_of(browser, "#mood-summary", |t| t.contains("(computed)")).await;
    text_of(browser, "#memory-preferences", |t| t.contains("tea")).await;
    fits_the_screen(browser, "mood").await;
    screenshot(browser, "desktop-mood").await;

    browser.click("#sign-out").await;
    text_of(browser, "#signin-form", |t| t.contains("Sign in")).await;
    signed_out(browser).await;
    quiet_console(browser, "at a desktop").await;
}

/// `GET /api/sessions`: conversations by their last message, newest first, in pages;
/// `GET /api/live`: the token in the first frame (a wrong one is answered and closed),
/// then a conversation's history and what is said in it, and sending with refusals as
/// frames.
#[tokio::test]
async fn conversation_list_pages_and_the_live_socket() {
    let app = TestApp::spawn(&[]).await;
    for session in ["list-a", "list-b", "list-c"] {
        app.reply(Script::reply("ok"));
        app.chat(session, "hello").await;
    }
    let page = |query: &str| {
        let url = format!("{}/api/sessions{query}", app.base_url);
        let http = app.http.clone();
        async move {
            let response = http.get(url).bearer_auth(TOKEN).send().await.expect("list");
            let status = response.status().as_u16();
            (status, response.json::<Value>().await.expect("JSON"))
        }
    };
    let (status, first) = page("?limit=2").await;
    assert_eq!(status, 200);
    let ids = |v: &Value| -> Vec<String> {
        v["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["session_id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(ids(&first), ["list-c", "list-b"]);
    assert_eq!(first["sessions"][0]["last"]["text"], "ok");
    assert_eq!(first["sessions"][0]["last"]["role"], "assistant");
    let before = first["next_before"].as_i64().expect("a next page");
    let (_, second) = page(&format!("?limit=2&before={before}")).await;
    assert_eq!(ids(&second), ["list-a"]);
    assert!(second["next_before"].is_null());
    let (status, refused) = page("?limit=1000").await;
    assert_eq!(status, 400);
    assert_eq!(refused["error"]["code"], "invalid_limit");
    let unauthorized = app
        .http
        .get(format!("{}/api/sessions", app.base_url))
        .send()
        .await
        .expect("list");
    assert_eq!(unauthorized.status(), 401);

    let url = format!("{}/api/live", app.base_url.replacen("http", "ws", 1));
    let (mut ws, _) = tokio_tungstenite::connect_async(&url).await.expect("live");
    let frame = |text: Value| Message::Text(text.to_string().into());
    ws.send(frame(json!({"type": "auth", "token": "wrong"})))
        .await
        .unwrap();
    let mut refusal = Vec::new();
    while let Some(Ok(m)) = ws.next().await {
        refusal.push(m);
    }
    assert!(
        matches!(&refusal[0], Message::Text(t) if t.contains("unauthorized")),
        "{refusal:?}"
    );
    assert!(matches!(refusal.last(), Some(Message::Close(Some(c))) if u16::from(c.code) == 1008));

    let (mut ws, _) = tokio_tungstenite::connect_async(&url).await.expect("live");
    ws.send(frame(json!({"type": "auth", "token": TOKEN})))
        .await
        .unwrap();
    let ready = frames_until(&mut ws, |f| f["type"] == "ready").await;
    assert_eq!(ready[0]["type"], "ready", "{ready:?}");
    assert_eq!(ready[0]["persona"], "kuro");
    assert_eq!(ready[0]["names"]["kuro"], "クロ");
    ws.send(frame(json!({"type": "watch", "session_id": "list-a"})))
        .await
        .unwrap();
    let frames = frames_until(&mut ws, |f| f["type"] == "turn").await;
    assert_eq!(frames[0]["type"], "history");
    assert_eq!(frames[0]["messages"].as_array().map(Vec::len), Some(2));
    assert_eq!(frames.last().unwrap()["state"], "idle");
    app.reply(Script::reply("また会えたね。"));
    ws.send(frame(
        json!({"type": "send", "session_id": "list-a", "text": "again", "ref": 7}),
    ))
    .await
    .unwrap();
    let frames = frames_until(&mut ws, |f| {
        f["type"] == "message" && f["role"] == "assistant"
    })
    .await;
    let kinds: Vec<&str> = frames.iter().filter_map(|f| f["type"].as_str()).collect();
    assert_eq!(frames[0]["type"], "sent", "{frames:#?}");
    assert_eq!(frames[0]["ref"], 7);
    assert!(
        kinds.contains(&"token"),
        "the reply as it is written: {kinds:?}"
    );
    let said: Vec<&Value> = frames.iter().filter(|f| f["type"] == "message").collect();
    assert_eq!(said.last().unwrap()["text"], "また会えたね。");
    ws.send(frame(
        json!({"type": "send", "session_id": "list-a", "text": " ", "ref": 8}),
    ))
    .await
    .unwrap();
    let frames = frames_until(&mut ws, |f| f["type"] == "refused").await;
    assert_eq!(frames.last().unwrap()["code"], "empty_text");
    assert_eq!(frames.last().unwrap()["ref"], 8);
    app.cleanup().await;
}

/// The console's WebSocket sign-in: `?token=` is taken on a WebSocket upgrade (browsers
/// cannot set its headers), a wrong one is refused, and on other requests it counts for
/// nothing (tokens stay out of ordinary URLs). The console itself offers the token as a
/// subprotocol, `ghost.token.<hex>`, answered with `ghost`.
#[tokio::test]
async fn query_token_only_opens_websockets() {
    let app = TestApp::spawn_services(&[ServiceName::Gateway], &[]).await;
    let ws = |token: &str| {
        format!(
            "{}/api/stage?stage_id=q&token={token}",
            app.base_url.replacen("http", "ws", 1)
        )
    };
    tokio_tungstenite::connect_async(ws(TOKEN))
        .await
        .expect("the right ?token= opens the stage");
    let refused = tokio_tungstenite::connect_async(ws("wrong")).await;
    match refused {
        Err(tokio_tungstenite::tungstenite::Error::Http(r)) => assert_eq!(r.status(), 401),
        other => panic!("a wrong ?token= must be refused with 401, got {other:?}"),
    }
    let plain = app
        .http
        .get(format!(
            "{}/api/sessions/x/messages?token={TOKEN}",
            app.base_url
        ))
        .send()
        .await
        .expect("request");
    assert_eq!(plain.status(), 401, "?token= is for WebSockets only");

    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let hex: String = TOKEN.bytes().map(|b| format!("{b:02x}")).collect();
    for path in ["/api/stage?stage_id=q", "/api/events"] {
        let url = format!("{}{path}", app.base_url.replacen("http", "ws", 1));
        let mut request = url.into_client_request().unwrap();
        let offered = format!("ghost, ghost.token.{hex}").parse().unwrap();
        request
            .headers_mut()
            .insert("sec-websocket-protocol", offered);
        let (_, response) = tokio_tungstenite::connect_async(request)
            .await
            .unwrap_or_else(|e| panic!("{path}: the token as a subprotocol: {e}"));
        assert_eq!(
            response.headers()["sec-websocket-protocol"],
            "ghost",
            "{path}"
        );
    }
    app.cleanup().await;
}

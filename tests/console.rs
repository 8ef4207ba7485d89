//! The web console in a real browser: headless Chromium driven over WebDriver
//! (Debian's `chromium` and `chromium-driver`; deploy/test-tools.sh installs them) against
//! a running Ghost with the fake model, at a phone's width. Screenshots of each view are
//! kept in `target/console-screenshots/`.

mod support;

use std::path::PathBuf;
use std::time::Duration;

use ghost::stack::ServiceName;
use ghost_testkit::fake_llm::Script;
use serde_json::Value;
use support::webdriver::{Browser, Driver};
use support::{TestApp, TOKEN};

/// How long any one thing may take to show in the page (a hang guard, not a measurement).
const PATIENCE: Duration = Duration::from_secs(60);

/// A phone's viewport.
const WIDTH: u32 = 390;
const HEIGHT: u32 = 844;

fn screenshot_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/console-screenshots");
    std::fs::create_dir_all(&dir).expect("screenshot directory");
    dir
}

/// Waits until `css` matches an element whose text satisfies `check`; returns that text.
async fn text_of(browser: &Browser, css: &str, check: impl Fn(&str) -> bool) -> String {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        if let Some(element) = browser.find(css).await {
            if let Some(text) = browser.text(&element).await {
                if check(&text) {
                    return text;
                }
            }
        }
        if tokio::time::Instant::now() > deadline {
            let page = browser.source().await;
            panic!("{css} never showed the expected text; page:\n{page}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The texts of every element `css` matches.
async fn texts(browser: &Browser, css: &str) -> Vec<String> {
    let mut out = Vec::new();
    for element in browser.find_all(css).await {
        out.push(browser.text(&element).await.unwrap_or_default());
    }
    out
}

async fn screenshot(browser: &Browser, name: &str) {
    let png = browser.screenshot().await;
    std::fs::write(screenshot_dir().join(format!("{name}.png")), png).expect("save screenshot");
}

/// Nothing is wider than the phone's screen (no sideways scrolling).
async fn fits_the_screen(browser: &Browser, view: &str) {
    let widths = browser
        .execute("return [document.documentElement.scrollWidth, window.innerWidth];")
        .await;
    let (scroll, inner) = (widths[0].as_f64().unwrap(), widths[1].as_f64().unwrap());
    assert!(
        scroll <= inner,
        "{view}: page is {scroll}px wide on a {inner}px screen"
    );
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

/// Every model of the stage's characters on the fake (each character its own model name).
fn cast_on_the_fake(config: &mut ghost_shared::config::Config) {
    let persona = config.ghost.llm["persona"].clone();
    for id in ["kuro", "LUMINA", "CLARIS", "NOX"] {
        let mut llm = persona.clone();
        llm.model = format!("{}-model", id.to_lowercase());
        config.ghost.llm.insert(id.to_lowercase(), llm);
    }
}

#[tokio::test]
async fn console_sign_in_chat_stage_and_mood_in_chromium() {
    let app = TestApp::spawn_adjusted(
        &ServiceName::ALL,
        &[("GHOST_STAGE__AUTO_LOOPS", "3")],
        cast_on_the_fake,
    )
    .await;
    let driver = Driver::start().await;
    let browser = driver.browser(WIDTH, HEIGHT).await;

    // Sign in: a wrong token is refused, the right one opens the console.
    browser.goto(&format!("{}/console", app.base_url)).await;
    browser.fill("#signin-token", "not-the-token").await;
    browser.click("#signin-submit").await;
    text_of(&browser, "#signin-error", |t| t.contains("Wrong token")).await;
    screenshot(&browser, "sign-in").await;
    browser.fill("#signin-token", TOKEN).await;
    browser.click("#signin-submit").await;
    text_of(&browser, "#tabs", |t| t.contains("Chat")).await;

    // Chat: the reply arrives as streamed tokens, in Japanese, and stays in the history.
    app.reply(Script::chunks(vec![
        "こんにちは、",
        "クロです。",
        "元気ですよ。",
    ]));
    browser.fill("#chat-session", "console-chat").await;
    browser.click("#chat-load").await;
    browser.fill("#chat-text", "こんにちは！元気？").await;
    browser.click("#chat-send").await;
    let reply = text_of(&browser, "#chat-log li.done .text", |t| !t.is_empty()).await;
    assert_eq!(reply, "こんにちは、クロです。元気ですよ。");
    let done = browser.find("#chat-log li.done").await.expect("reply");
    let tokens = browser.attr(&done, "data-tokens").await;
    assert_eq!(
        tokens.as_deref(),
        Some("3"),
        "the reply came as three token events"
    );
    fits_the_screen(&browser, "chat").await;
    screenshot(&browser, "chat").await;
    // The history comes back from the server after a reload.
    browser.refresh().await;
    let history = ghost_testkit::testing::eventually(PATIENCE, "history shown", || async {
        let t = texts(&browser, "#chat-log li .text").await;
        (t.len() == 2).then_some(t)
    })
    .await;
    assert_eq!(
        history,
        ["こんにちは！元気？", "こんにちは、クロです。元気ですよ。"]
    );

    // Stage: three characters, each named, the turns in order.
    let say = |id: &str, text: &str| {
        app.llm
            .push_for_model(&format!("{}-model", id.to_lowercase()), Script::reply(text))
    };
    say("LUMINA", "星の話をしよう。[Next: NOX]");
    say("NOX", "静かな夜だね。[Next: CLARIS]");
    say("CLARIS", "では、星座を数えましょう。");
    browser.click("#tabs button[data-view=stage]").await;
    browser.fill("#stage-id", "console-stage").await;
    browser.click("#stage-connect").await;
    text_of(&browser, "#stage-status", |t| t.contains("Watching")).await;
    browser
        .fill("#stage-text", "[Next: ルミナ] みんな、何の話をする？")
        .await;
    browser.click("#stage-send").await;
    let lines = ghost_testkit::testing::eventually(PATIENCE, "three stage lines", || async {
        let t = texts(&browser, "#stage-log li.persona").await;
        (t.len() == 3).then_some(t)
    })
    .await;
    assert_eq!(
        lines,
        [
            "ルミナ\n星の話をしよう。",
            "ノクス\n静かな夜だね。",
            "クラリス\nでは、星座を数えましょう。"
        ]
    );
    let controls = texts(&browser, "#stage-log li.status").await;
    assert!(
        controls.contains(&"next: NOX".to_owned()),
        "control frames shown: {controls:?}"
    );
    fits_the_screen(&browser, "stage").await;
    screenshot(&browser, "stage").await;

    // Mood: set an override, see it (and the API agrees), clear it again.
    browser.click("#tabs button[data-view=mood]").await;
    text_of(&browser, "#mood-summary", |t| t.contains("(computed)")).await;
    browser.click("#mood-label option[value=anger]").await;
    browser.fill("#mood-intensity", "0.6").await;
    browser.fill("#mood-anger", "0.6").await;
    browser.fill("#mood-cooperation", "0.4").await;
    browser.fill("#mood-refusal-bias", "0.3").await;
    browser.click("#mood-set").await;
    let summary = text_of(&browser, "#mood-summary", |t| t.contains("(override)")).await;
    assert!(summary.contains("anger"), "{summary}");
    let mood = mood_from_api(&app).await;
    assert_eq!(mood["overridden"], true);
    assert_eq!(mood["state"]["label"], "anger");
    assert_eq!(mood["state"]["components"]["anger"], 0.6);
    fits_the_screen(&browser, "mood").await;
    screenshot(&browser, "mood").await;
    browser.click("#mood-clear").await;
    text_of(&browser, "#mood-summary", |t| t.contains("(computed)")).await;
    let mood = mood_from_api(&app).await;
    assert_eq!(mood["overridden"], false);

    browser.close().await;
    drop(driver);
    app.cleanup().await;
}

/// The console's WebSocket sign-in: `?token=` is taken on a WebSocket upgrade (browsers
/// cannot set its headers), a wrong one is refused, and on other requests it counts for
/// nothing (tokens stay out of ordinary URLs).
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
    app.cleanup().await;
}

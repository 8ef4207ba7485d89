//! The web console in a real browser: headless Chromium driven over WebDriver
//! (Debian's `chromium` and `chromium-driver`; deploy/test-tools.sh installs them) against
//! a running Ghost with the fake model and the fake search server, at a phone's width.
//! Screenshots of each view are kept in `target/console-screenshots/`.

mod support;

use std::path::PathBuf;
use std::time::Duration;

use ghost::stack::ServiceName;
use ghost_testkit::fake_llm::Script;
use ghost_testkit::fake_search::{FakeHit, FakeSearch};
use ghost_testkit::testing::WORKER_MODEL;
use serde_json::{json, Value};
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

/// The gateway's `/metrics` sample of `metric` whose labels include every `labels` pair.
async fn sample(app: &TestApp, metric: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let text = app
        .http
        .get(format!("{}/metrics", app.base_url))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("metrics text");
    text.lines()
        .filter(|l| l.starts_with(&format!("{metric}{{")))
        .find(|l| {
            labels
                .iter()
                .all(|(k, v)| l.contains(&format!("{k}=\"{v}\"")))
        })
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

#[tokio::test]
async fn console_sign_in_chat_autonomy_stage_mood_and_memory_in_chromium() {
    let search = FakeSearch::start().await.expect("fake search");
    search.set_hits(vec![FakeHit {
        title: "Sencha guide".into(),
        url: "https://tea.example/sencha".into(),
        content: "Steep sencha at 70 degrees for one minute.".into(),
    }]);
    let search_url = search.search_url();
    let app = TestApp::spawn_adjusted(
        &ServiceName::ALL,
        &[
            ("GHOST_STAGE__AUTO_LOOPS", "3"),
            // Ticks only when the test asks.
            ("GHOST_AUTONOMY__INTERVAL_SECS", "0"),
        ],
        move |config| {
            cast_on_the_fake(config);
            config.ghost.web.search_url = Some(search_url);
        },
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

    // Autonomy: a tick the model answers with a web search shown in the chat. The persona's
    // message appears live in Chat as its utterance; decision, start and result in Activity.
    browser.fill("#chat-session", "console").await;
    browser.click("#chat-load").await;
    text_of(&browser, "#events-status", |t| t.ends_with(": connected.")).await;
    let decision = json!({
        "decision": "do_action", "action_type": "web_research", "capability": "web_access",
        "input": {"query": "sencha temperature"}, "reason": "マスターがお茶の話をしていた",
        "console_delivery": {"mode": "chat", "message_kind": "report"}
    });
    app.llm
        .push_for_model(WORKER_MODEL, Script::reply(&decision.to_string()));
    let said = "煎茶は70度くらいで一分がいいみたいだよ。";
    app.reply(Script::reply(said));
    let web_access = [("decision", "do_action"), ("capability", "web_access")];
    let decisions = "ghost_autonomy_decisions_total";
    assert_eq!(sample(&app, decisions, &web_access).await, Some(0.0));
    app.tick().await;
    let message = text_of(&browser, "#chat-log li.persona.autonomy", |t| !t.is_empty()).await;
    assert_eq!(
        message,
        format!("kuro\n{said}"),
        "said by the persona, under its name"
    );
    assert_eq!(search.queries(), vec!["sencha temperature".to_owned()]);
    fits_the_screen(&browser, "chat (autonomous message)").await;
    screenshot(&browser, "chat-autonomy").await;
    assert_eq!(sample(&app, decisions, &web_access).await, Some(1.0));

    // Activity: newest first, each entry with its kind, capability, reason or summary, time.
    browser.click("#tabs button[data-view=activity]").await;
    text_of(&browser, "#activity-log li[data-kind=decided]", |t| {
        !t.is_empty()
    })
    .await;
    let kinds = || async {
        let mut kinds = Vec::new();
        for li in browser.find_all("#activity-log li").await {
            kinds.push(browser.attr(&li, "data-kind").await.unwrap_or_default());
        }
        kinds
    };
    let shown =
        ghost_testkit::testing::eventually(PATIENCE, "decided, started, result", || async {
            let k = kinds().await;
            (k.len() == 3).then_some(k)
        })
        .await;
    assert_eq!(shown, ["result", "started", "decided"], "newest first");
    let decided = text_of(&browser, "#activity-log li[data-kind=decided]", |t| {
        !t.is_empty()
    })
    .await;
    assert!(decided.contains("web_access"), "{decided}");
    assert!(
        decided.contains("マスターがお茶の話をしていた"),
        "{decided}"
    );
    let result = text_of(&browser, "#activity-log li[data-kind=result]", |t| {
        !t.is_empty()
    })
    .await;
    assert!(result.contains("web_access"), "{result}");
    assert!(result.contains("https://tea.example/sencha"), "{result}");
    let time = browser
        .find("#activity-log li[data-kind=result] time")
        .await
        .expect("a time");
    assert!(browser
        .attr(&time, "datetime")
        .await
        .is_some_and(|t| !t.is_empty()));
    // A broken decision is dropped, and shows first, with its reason.
    app.llm
        .push_for_model(WORKER_MODEL, Script::reply(r#"{"decision": "maybe"}"#));
    app.tick().await;
    let dropped = text_of(&browser, "#activity-log li:first-child", |t| {
        t.contains("dropped")
    })
    .await;
    assert!(dropped.contains("invalid_decision"), "{dropped}");
    assert!(dropped.contains("must be do_action or skip"), "{dropped}");
    let invalid = [("reason", "invalid_decision")];
    assert_eq!(
        sample(&app, "ghost_autonomy_dropped_total", &invalid).await,
        Some(1.0)
    );
    assert_eq!(sample(&app, decisions, &web_access).await, Some(1.0));
    fits_the_screen(&browser, "activity").await;
    screenshot(&browser, "activity").await;

    // The history has the autonomous message too, still the persona's utterance.
    browser.click("#tabs button[data-view=chat]").await;
    browser.refresh().await;
    let again = text_of(&browser, "#chat-log li.persona.autonomy", |t| !t.is_empty()).await;
    assert_eq!(again, message);
    // Activity after the reload: what happened before it, from the store, newest first.
    browser.click("#tabs button[data-view=activity]").await;
    let replayed = ghost_testkit::testing::eventually(PATIENCE, "the past activity", || async {
        let k = kinds().await;
        (k.len() == 4).then_some(k)
    })
    .await;
    assert_eq!(replayed, ["dropped", "result", "started", "decided"]);
    assert_eq!(browser.find_all("#activity-log li.replayed").await.len(), 4);
    browser.click("#tabs button[data-view=chat]").await;

    // Chat: the reply arrives as streamed tokens, in Japanese, and stays in the history.
    // Paced, so the chunks come as separate token events (chunks read together go as one).
    app.reply(
        Script::chunks(vec!["こんにちは、", "クロです。", "元気ですよ。"])
            .with_chunk_delay(Duration::from_millis(150)),
    );
    browser.fill("#chat-session", "console-chat").await;
    browser.click("#chat-load").await;
    browser.fill("#chat-text", "こんにちは！元気？").await;
    browser.click("#chat-send").await;
    let reply = text_of(&browser, "#chat-log li.done .text", |t| !t.is_empty()).await;
    assert_eq!(reply, "こんにちは、クロです。元気ですよ。");
    let done = browser.find("#chat-log li.done").await.expect("reply");
    let tokens = browser.attr(&done, "data-tokens").await;
    let count: usize = tokens.as_deref().and_then(|t| t.parse().ok()).unwrap_or(0);
    assert!(
        (2..=3).contains(&count),
        "the reply came as {tokens:?} token events, not streamed"
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
    // Replies and autonomous messages carry one sender name: the persona's.
    assert_eq!(texts(&browser, "#chat-log li.persona .who").await, ["kuro"]);

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
    support::memory::plant(&app, true).await;
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

    // Memory, beside the mood: the planted preference, states and interest state.
    let preferences = text_of(&browser, "#memory-preferences", |t| t.contains("tea")).await;
    assert!(preferences.contains("like tea"), "{preferences}");
    assert!(preferences.contains("confirmed"), "{preferences}");
    let states = text_of(&browser, "#memory-states", |t| t.contains("tea")).await;
    assert!(states.contains("find a new tea"), "{states}");
    assert!(states.contains("ask how master slept"), "{states}");
    let interest = text_of(&browser, "#memory-interest", |t| t.contains("mode")).await;
    assert!(interest.contains("mode: support"), "{interest}");
    assert!(interest.contains("topic: tea"), "{interest}");
    browser
        .execute("document.getElementById('memory').scrollIntoView(); return true;")
        .await;
    fits_the_screen(&browser, "memory").await;
    screenshot(&browser, "memory").await;

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

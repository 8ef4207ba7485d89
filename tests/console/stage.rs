//! Stage, second pass (issue 48 item 11), at a phone's width and a desktop's: one line says
//! what a stage is; Start is usable once there is a stage name and a topic (and who starts
//! can be chosen), without pressing Watch first; a problem is said beside the field it is
//! about; a dropped connection is joined again by itself; after Stop no "Next: …" is left
//! naming a turn that will not come.

use std::time::Duration;

use ghost::stack::ServiceName;
use ghost_testkit::fake_llm::Script;

use crate::support::console::{
    fits_the_screen, gap_below, js, n_texts, screenshot, sign_in, text_of, texts, until, WIDTHS,
};
use crate::support::webdriver::{Browser, Driver};
use crate::support::TestApp;

async fn disabled(browser: &Browser, css: &str) -> bool {
    let element = browser.find(css).await.expect(css);
    browser.attr(&element, "disabled").await.as_deref() == Some("true")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stage_starts_from_its_name_and_topic_rejoins_and_leaves_nothing_stale() {
    let app = TestApp::spawn_adjusted(
        &ServiceName::ALL,
        &[
            ("GHOST_STAGE__AUTO_LOOPS", "2"),
            ("GHOST_GATEWAY__MAX_MESSAGE_CHARS", "40"),
        ],
        crate::cast_on_the_fake,
    )
    .await;
    let say = |id: &str, text: &str, delay: u64| {
        let script = Script::reply(text).with_delay(Duration::from_millis(delay));
        app.llm
            .push_for_model(&format!("{}-model", id.to_lowercase()), script)
    };
    let driver = Driver::start().await;
    for (width, (w, h)) in WIDTHS {
        let browser = driver.browser(w, h).await;
        sign_in(&browser, &app.base_url, "#/stage").await;
        let about = text_of(&browser, "#stage-about", |t| t.contains("ルミナ")).await;
        assert!(
            about.starts_with(
                "A stage is a conversation among the characters (クロ, ルミナ, クラリス, ノクス)"
            ),
            "{about}"
        );

        // A bad name, said beside the name field.
        browser.fill("#stage-id", "bad id").await;
        browser.click("#stage-connect").await;
        let error = text_of(&browser, "#stage-id-error", |t| !t.is_empty()).await;
        assert!(error.contains("letters, digits"), "{error}");
        let below = gap_below(&browser, "stage-id-error", "stage-id").await;
        assert!(
            (0.0..40.0).contains(&below),
            "{width}: {below}px below the field"
        );

        // A name and a topic are all Start needs; who starts can be chosen.
        let stage = format!("fresh-{width}");
        browser.fill("#stage-id", &stage).await;
        assert!(disabled(&browser, "#stage-send").await, "no topic yet");
        browser.fill("#stage-text", "星の話をしよう").await;
        assert!(
            !disabled(&browser, "#stage-send").await,
            "{width}: Start waits"
        );
        browser.click("#stage-first option[value=ノクス]").await;
        say("NOX", "夜の話から。[Next: LUMINA]", 0);
        say("LUMINA", "星もきれいだね。", 0);
        browser.click("#stage-send").await;
        let lines = n_texts(&browser, "#stage-log li.persona", 2).await;
        assert_eq!(lines, ["ノクス\n夜の話から。", "ルミナ\n星もきれいだね。"]);
        text_of(&browser, "#stage-log li.ended", |t| {
            t.starts_with("Finished")
        })
        .await;

        // A topic too long, said beside the topic field.
        browser.fill("#stage-text", &"x".repeat(45)).await;
        browser.click("#stage-send").await;
        let error = text_of(&browser, "#stage-error", |t| !t.is_empty()).await;
        assert!(error.contains("too long"), "{error}");
        let below = gap_below(&browser, "stage-error", "stage-form").await;
        assert!(
            (0.0..40.0).contains(&below),
            "{width}: {below}px below the topic"
        );
        js(
            &browser,
            "(document.getElementById('stage-text').value = '', true)",
        )
        .await;

        // A dropped connection: joined again by itself, the run so far with it.
        js(&browser, "(state.stage.close(), true)").await;
        text_of(&browser, "#stage-status", |t| t.contains("joining again")).await;
        text_of(&browser, "#stage-status", |t| t.starts_with("Watching")).await;
        let again = n_texts(&browser, "#stage-log li.persona", 2).await;
        assert_eq!(again, lines);

        // Stopped while a turn goes: nothing names a turn that will not come.
        say("LUMINA", "少し考えさせて。[Next: NOX]", 2000);
        browser.click("#stage-first option[value='']").await;
        browser
            .fill("#stage-text", "[Next: ルミナ] 止めてみる")
            .await;
        browser.click("#stage-send").await;
        until(
            &browser,
            "Stop enabled",
            "document.getElementById('stage-stop').disabled",
            |v| v == false,
        )
        .await;
        browser.click("#stage-stop").await;
        text_of(&browser, "#stage-log li:last-child", |t| {
            t.starts_with("Stopped")
        })
        .await;
        let log = texts(&browser, "#stage-log li").await;
        let last_line = log
            .iter()
            .rposition(|t| t.starts_with("ルミナ"))
            .expect("ルミナ spoke");
        let after: Vec<&String> = log[last_line + 1..].iter().collect();
        assert!(
            after.iter().all(|t| !t.starts_with("Next:")),
            "{width}: after the last line: {after:?}"
        );
        fits_the_screen(&browser, "stage").await;
        screenshot(&browser, &format!("{width}-stage-second-pass")).await;
        browser.assert_quiet(width).await;
        browser.close().await;
    }
    drop(driver);
    app.cleanup().await;
}

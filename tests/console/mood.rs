//! Mood, second pass (issue 48 items 4 and 14): the view says in one line what it is; a
//! persona that does not exist is refused beside the persona field, in plain words, nothing
//! of it shown and no override saved, and the API refuses it too (404 `unknown_persona` for
//! GET, PUT and DELETE, nothing saved in the mood service).

use ghost::stack::ServiceName;
use serde_json::{json, Value};

use crate::support::console::{
    fits_the_screen, gap_below, screenshot, shown, sign_in, text_of, WIDTHS,
};
use crate::support::webdriver::Driver;
use crate::support::{TestApp, TOKEN};

/// A whole mood state, as `PUT /api/partner_mood` takes it.
fn angry() -> Value {
    json!({"label": "anger", "intensity": 0.6,
           "components": {"joy": 0.0, "sadness": 0.1, "anger": 0.6, "fear": 0.0},
           "response_policy": {"cooperation": 0.4, "refusal_bias": 0.3, "refusal_allowed": true}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persona_that_does_not_exist_is_refused_at_its_field_and_by_the_api() {
    let app = TestApp::spawn_services(&[ServiceName::Gateway, ServiceName::Mood], &[]).await;

    // The API: nothing of "nobody" is shown, set or cleared, and the mood service holds
    // no override for it.
    let url = format!("{}/api/partner_mood?persona=nobody", app.base_url);
    for method in [
        reqwest::Method::GET,
        reqwest::Method::PUT,
        reqwest::Method::DELETE,
    ] {
        let response = app
            .http
            .request(method.clone(), &url)
            .bearer_auth(TOKEN)
            .body(angry().to_string())
            .send()
            .await
            .expect("mood API");
        assert_eq!(response.status(), 404, "{method}");
        let body: Value = response.json().await.expect("JSON");
        assert_eq!(body["error"]["code"], "unknown_persona", "{method}: {body}");
    }
    let held = app.ask_mood("nobody", None).await.expect("mood");
    assert!(!held.overridden, "nothing saved for nobody");

    let driver = Driver::start().await;
    for (width, (w, h)) in WIDTHS {
        let browser = driver.browser(w, h).await;
        sign_in(&browser, &app.base_url, "#/mood").await;
        let about = text_of(&browser, "#mood-about", |t| !t.is_empty()).await;
        assert!(
            about.starts_with("The persona's mood: how it feels now"),
            "{about}"
        );
        text_of(&browser, "#mood-summary", |t| t.starts_with("クロ:")).await;

        browser.fill("#mood-persona", "nobody").await;
        browser.click("#mood-refresh").await;
        let refused = text_of(&browser, "#mood-persona-error", |t| !t.is_empty()).await;
        assert!(
            refused.starts_with("There is no persona called “nobody”."),
            "{refused}"
        );
        assert!(
            refused.contains("クロ (kuro)"),
            "the personas there are: {refused}"
        );
        for internal in ["characters.yaml", "unknown_persona", "404"] {
            assert!(!refused.contains(internal), "{refused}");
        }
        // Beside the field it is about, not at the bottom of the page.
        let gap = gap_below(&browser, "mood-persona-error", "mood-persona").await;
        assert!(gap < 40.0, "{width}: {gap}px away");
        assert!(!shown(&browser, "#mood-summary").await, "no mood of nobody");
        let card = text_of(&browser, "#mood-current", |t| !t.is_empty()).await;
        assert!(!card.contains("nobody"), "{card}");

        // Setting an override for it saves nothing.
        browser.click("#mood-set").await;
        text_of(&browser, "#mood-persona-error", |t| t.contains("nobody")).await;
        assert!(!app.ask_mood("nobody", None).await.unwrap().overridden);
        assert!(!app.ask_mood("kuro", None).await.unwrap().overridden);
        fits_the_screen(&browser, "mood").await;
        screenshot(&browser, &format!("{width}-mood-unknown-persona")).await;

        // A persona by its display name is found.
        browser.fill("#mood-persona", "クロ").await;
        browser.click("#mood-refresh").await;
        text_of(&browser, "#mood-summary", |t| t.starts_with("クロ:")).await;
        assert!(!shown(&browser, "#mood-persona-error").await);
        browser.assert_quiet(width).await;
        browser.close().await;
    }
    drop(driver);
    app.cleanup().await;
}

//! The one clock (issue 45): `recorded_at` and every service read the same clock, which an
//! evaluation moves forward through the API (`clock.simulated`), for every service at once;
//! a deployment's clock cannot be moved. Over the real Postgres and NATS.

mod support;

use chrono::{DateTime, Utc};
use ghost_shared::events::UserMessageReceived;
use ghost_testkit::fake_llm::Script;
use serde_json::{json, Value};
use support::{TestApp, TOKEN};

async fn clock(app: &TestApp) -> Value {
    app.http
        .get(format!("{}/api/clock", app.base_url))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

async fn advance(app: &TestApp, body: &str) -> (u16, Value) {
    let r = app
        .http
        .post(format!("{}/api/clock/advance", app.base_url))
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

async fn said_at(app: &TestApp, session: &str) -> Vec<DateTime<Utc>> {
    app.session_events(session)
        .await
        .iter()
        .filter(|e| e.is::<UserMessageReceived>())
        .map(|e| e.recorded_at)
        .collect()
}

#[tokio::test]
async fn a_simulated_clock_moves_every_recorded_time_forward_and_only_forward() {
    let app = TestApp::spawn(&[("GHOST_CLOCK__SIMULATED", "true")]).await;
    let before = clock(&app).await;
    assert_eq!(before["simulated"], true);
    assert_eq!(before["offset_secs"], 0.0);
    app.reply(Script::reply("hello"));
    app.chat("days", "good morning").await;

    let (status, moved) = advance(&app, r#"{"secs": 259200}"#).await;
    assert_eq!(status, 200, "{moved}");
    assert_eq!(moved["offset_secs"], 259200.0);
    let now: DateTime<Utc> = moved["now"].as_str().unwrap().parse().unwrap();
    assert!(now - Utc::now() > chrono::Duration::days(3) - chrono::Duration::minutes(1));

    app.reply(Script::reply("welcome back"));
    let events = app.chat("days", "I am back").await;
    assert_eq!(events.last().unwrap().event, "done");
    let times = said_at(&app, "days").await;
    assert_eq!(times.len(), 2);
    // The store's clock moved with the service's: three days between the two messages.
    let gap = times[1] - times[0];
    assert!(gap >= chrono::Duration::days(3), "{gap}");
    assert!(
        gap < chrono::Duration::days(3) + chrono::Duration::minutes(5),
        "{gap}"
    );

    // Bad steps change nothing: backwards, zero, too far, not a number, not JSON.
    for bad in [
        r#"{"secs": -60}"#,
        r#"{"secs": 0}"#,
        r#"{"secs": 1e12}"#,
        r#"{"secs": "a day"}"#,
        r#"{"secs": 60, "also": 1}"#,
        "not json",
    ] {
        let (status, body) = advance(&app, bad).await;
        assert_eq!(status, 400, "{bad}: {body}");
    }
    assert_eq!(clock(&app).await["offset_secs"], 259200.0);
    app.cleanup().await;
}

#[tokio::test]
async fn a_deployments_clock_cannot_be_moved() {
    let app = TestApp::spawn(&[]).await;
    let (status, body) = advance(&app, &json!({"secs": 60}).to_string()).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "clock_not_simulated", "{body}");
    let now = clock(&app).await;
    assert_eq!(now["simulated"], false);
    assert_eq!(now["offset_secs"], 0.0);
    let unauthorised = app
        .http
        .get(format!("{}/api/clock", app.base_url))
        .send()
        .await
        .unwrap();
    assert_eq!(unauthorised.status(), 401);
    app.cleanup().await;
}

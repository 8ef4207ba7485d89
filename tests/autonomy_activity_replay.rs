//! A console that connects after the persona acted is shown that activity from the store,
//! right after `ready` and marked `replayed`, then what happens live, each entry once.

mod support;

use serde_json::{json, Value};

use ghost::stack::ServiceName;
use ghost_shared::autonomy::activity::{publish_activity, Activity};
use ghost_shared::bus::Bus;
use ghost_testkit::fake_llm::Script;
use ghost_testkit::fake_search::FakeSearch;
use ghost_testkit::testing::WORKER_MODEL;
use support::autonomy::{decision, spawn_searching, tea_hits};
use support::events_socket::Console;
use support::TestApp;

/// One silent web-access tick (nothing is said; decided, started, result are recorded).
async fn silent_tick(app: &TestApp, query: &str) {
    app.llm.push_for_model(
        WORKER_MODEL,
        Script::reply(&decision(
            "web_access",
            json!({ "query": query }),
            "silent",
            "report",
        )),
    );
    app.tick().await;
}

fn ids(frames: &[Value]) -> Vec<String> {
    frames
        .iter()
        .map(|f| f["event_id"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn a_console_connecting_later_is_shown_the_latest_activity_once_then_live() {
    let search = FakeSearch::start().await.unwrap();
    tea_hits(&search);
    let app = spawn_searching(&search, &ServiceName::ALL).await;
    let early = Console::connect(&app).await;
    silent_tick(&app, "sencha").await;
    early.wait_for_activity("result", 1).await;
    let live = early.of_type("activity");

    let later = Console::connect(&app).await;
    later.wait_for_activity("result", 1).await;
    let replayed = later.of_type("activity");
    assert_eq!(later.activity_kinds(), ["decided", "started", "result"]);
    assert!(
        replayed.iter().all(|f| f["replayed"] == true),
        "{replayed:#?}"
    );
    assert_eq!(ids(&replayed), ids(&live), "the same entries as seen live");
    for (past, seen) in replayed.iter().zip(&live) {
        assert_eq!(past["detail"], seen["detail"], "the same facts");
        assert_eq!(past["recorded_at"], seen["recorded_at"]);
    }
    assert!(
        replayed[2]["detail"].get("summary_text").is_none(),
        "a replayed result shows the facts only"
    );

    // An entry both replayed and published after the console subscribed is sent once.
    let bus = Bus::connect(app.env.config.ghost.bus.clone())
        .await
        .unwrap();
    let again: Activity = serde_json::from_value(replayed[2].clone()).unwrap();
    publish_activity(&bus, &again).await;

    // What happens next arrives live, once.
    silent_tick(&app, "gyokuro").await;
    later.wait_for_activity("result", 2).await;
    let all = later.of_type("activity");
    assert_eq!(
        later.activity_kinds(),
        ["decided", "started", "result", "decided", "started", "result"]
    );
    assert!(all[3..].iter().all(|f| f.get("replayed").is_none()));
    assert_eq!(search.queries(), ["sencha", "gyokuro"]);
    app.cleanup().await;
}

//! Autonomy test helpers: a scripted decision, the persona's stream (a tick is
//! [`TestApp::tick`]).

use serde_json::{json, Value};

use ghost::stack::ServiceName;
use ghost_shared::events::persona_stream;
use ghost_testkit::fake_search::{FakeHit, FakeSearch};

use super::TestApp;

/// Makes `search` answer every query with one page about sencha.
pub fn tea_hits(search: &FakeSearch) {
    search.set_hits(vec![FakeHit {
        title: "Sencha guide".into(),
        url: "https://tea.example/sencha".into(),
        content: "Steep sencha at 70 degrees for one minute.".into(),
    }]);
}

/// A Ghost running `services`, searching the web at `search`, whose persona deliberates
/// only when a test ticks.
pub async fn spawn_searching(search: &FakeSearch, services: &[ServiceName]) -> TestApp {
    let url = search.search_url();
    TestApp::spawn_adjusted(
        services,
        &[("GHOST_AUTONOMY__INTERVAL_SECS", "0")],
        move |c| c.ghost.web.search_url = Some(url),
    )
    .await
}

/// A `do_action` decision with `console_delivery` `{mode, message_kind: kind}`.
pub fn decision(capability: &str, input: Value, mode: &str, kind: &str) -> String {
    json!({
        "decision": "do_action", "action_type": "web_research", "capability": capability,
        "input": input, "reason": "マスターがお茶の話をしていた",
        "persona_influence": {"curiosity": 0.8}, "mood_influence": {"calm": 0.5},
        "console_delivery": {"mode": mode, "message_kind": kind}
    })
    .to_string()
}

/// How many events of `event_type` the persona `kuro`'s stream holds.
pub async fn persona_events(app: &TestApp, event_type: &str) -> usize {
    app.store
        .read_stream(&persona_stream("kuro"), 0)
        .await
        .unwrap()
        .iter()
        .filter(|e| e.event_type == event_type)
        .count()
}

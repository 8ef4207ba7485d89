//! No stranded turn (issue 10, item 3): with the coder not running, a `/code` message over
//! HTTP, LINE and Slack each gets one short notice in the language of the message once the
//! turn's limit passes, and nothing more when the coder starts later.

mod support;

use std::time::Duration;

use ghost::stack::{start_stack, ServiceName};
use ghost_testkit::fake_llm::{FakeLlm, Script};
use serde_json::json;
use support::platforms::{line_text, slack_event, ChannelApp, BOT};
use support::{read_sse_within, TOKEN};

const HTTP_TEXT: &str = "/code fix this function please";
const LINE_TEXT: &str = "/code この関数を直して";
const SLACK_TEXT: &str = "/code fix the parser";

/// The notices, in the language of the message.
const NOTICE_EN: &str = "Sorry, I could not answer in time. Please send your message again.";
const NOTICE_JA: &str =
    "ごめんなさい、時間内に返事を用意できませんでした。もう一度送ってください。";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_code_turn_without_a_coder_gets_one_notice_and_nothing_later() {
    let cloud = FakeLlm::start().await.expect("fake cloud");
    cloud.set_responder(|_| Script::reply("cloud answer"));
    let cloud_url = cloud.base_url();
    let services: Vec<ServiceName> = ServiceName::ALL
        .into_iter()
        .filter(|s| *s != ServiceName::Coder)
        .collect();
    let c = ChannelApp::spawn_services(
        &services,
        &[
            // The smallest watchdog the router accepts: 3 loops x 1 s + a 1 s reply.
            ("GHOST_ROUTING__TURN_TIMEOUT_SECS", "4"),
            ("GHOST_LLM__WORKER__TIMEOUT_SECS", "1"),
            ("GHOST_LLM__CODER__TIMEOUT_SECS", "1"),
            ("GHOST_LLM__PERSONA__TIMEOUT_SECS", "1"),
            ("GHOST_ROUTING__WATCHDOG_INTERVAL_MS", "200"),
            ("GHOST_GATEWAY__TURN_TIMEOUT_SECS", "60"),
            ("GHOST_LLM__CODER__BASE_URL", &cloud_url),
            ("GHOST_LLM__CODER__MODEL", "cloud-model"),
            ("GHOST_CLOUD_API_KEY", "cloud-test-key"),
        ],
    )
    .await;

    // HTTP: the client waiting on the turn hears the notice.
    let body = json!({ "session_id": "wd-http", "text": HTTP_TEXT }).to_string();
    let response = c.app.post_chat_raw(body, Some(TOKEN)).await;
    assert_eq!(response.status(), 200);
    let line_body = line_text("ev-wd", "Uwd", LINE_TEXT, "rt-wd", false);
    assert_eq!(c.post_line_signed(&line_body).await, 200);
    let slack_body = slack_event(
        "Ev-wd",
        json!({"type":"app_mention","user":"U7","text":format!("<@{BOT}> {SLACK_TEXT}"),
               "ts":"1700000100.000100","channel":"C1"}),
    );
    assert_eq!(c.post_slack_signed(&slack_body, None).await, 200);

    let sse = read_sse_within(response, Duration::from_secs(60)).await;
    let last = sse.last().expect("an SSE event");
    assert_eq!(last.event, "error", "{sse:?}");
    assert_eq!(last.data["code"], "turn_timed_out");
    assert_eq!(last.data["message"], NOTICE_EN);
    let line = c.line_deliveries(1).await;
    assert_eq!(line[0].texts, vec![NOTICE_JA.to_owned()]);
    let slack = c.slack_deliveries(1).await;
    assert_eq!(slack[0].texts, vec![NOTICE_EN.to_owned()]);
    assert_eq!(c.wait_events("TurnTimedOut", 3).await.len(), 3);

    // The coder comes back: the work waiting for it is for closed turns.
    let coder = start_stack(c.app.env.config.clone(), &[ServiceName::Coder])
        .await
        .expect("start coder");
    c.app.wait_idle().await;
    assert_eq!(
        c.events_of("TurnTimedOut").await.len(),
        3,
        "one notice each"
    );
    assert!(
        c.events_of("AssistantReplied").await.is_empty(),
        "no late reply"
    );
    assert!(c.events_of("RenderFailed").await.is_empty());
    assert_eq!(c.line.deliveries().len(), 1, "nothing more on LINE");
    assert_eq!(c.slack.deliveries().len(), 1, "nothing more on Slack");
    assert_eq!(cloud.request_count(), 0, "closed turns are not worked on");
    coder.abort();
    c.cleanup().await;
    cloud.shutdown().await;
}

//! Slack end to end: signed Events API requests in, one threaded reply out per message.

mod support;

use std::time::Duration;

use ghost_testkit::fake_llm::Script;
use ghost_testkit::fake_platforms::Scripted;
use serde_json::json;
use support::platforms::{slack_event, slack_sign, ChannelApp, BOT};

async fn settle() {
    tokio::time::sleep(Duration::from_millis(1500)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn url_verification_is_answered_only_when_signed() {
    let c = ChannelApp::spawn(&[]).await;
    let body = json!({"type":"url_verification","token":"t","challenge":"ch-123"}).to_string();
    let ts = chrono::Utc::now().timestamp().to_string();
    let r = c
        .post_slack(&body, Some(&ts), Some(&slack_sign(&ts, &body)), None)
        .await;
    assert_eq!(r.status(), 200);
    let v: serde_json::Value = r.json().await.expect("json");
    assert_eq!(v["challenge"], "ch-123");
    let r = c.post_slack(&body, Some(&ts), Some("v0=00"), None).await;
    assert_eq!(r.status(), 401);
    assert_eq!(c.app.event_count().await, 0);
    c.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_and_the_mention_pair_give_one_threaded_reply() {
    let c = ChannelApp::spawn(&[]).await;
    c.app.llm.set_default(Script::reply("on it"));
    let text = format!("<@{BOT}> what's up?");
    let mention = slack_event(
        "Ev-mention",
        json!({"type":"app_mention","user":"U7","text":text,"ts":"1700000001.000100","channel":"C1","event_ts":"1700000001.000100"}),
    );
    let message = slack_event(
        "Ev-message",
        json!({"type":"message","channel_type":"channel","user":"U7","text":text,"ts":"1700000001.000100","channel":"C1","event_ts":"1700000001.000100"}),
    );
    assert_eq!(c.post_slack_signed(&mention, None).await, 200);
    assert_eq!(c.post_slack_signed(&message, None).await, 200);
    for n in 1..=3 {
        assert_eq!(
            c.post_slack_signed(&mention, Some(n)).await,
            200,
            "retry {n}"
        );
    }
    let d = c.slack_deliveries(1).await;
    c.wait_events("ReplyDelivered", 1).await;
    settle().await;
    let d2 = c.slack.deliveries();
    assert_eq!(d2.len(), 1, "exactly one reply: {d2:?}");
    assert_eq!(d[0].to, "C1");
    assert_eq!(d[0].thread_ts.as_deref(), Some("1700000001.000100"));
    assert_eq!(d[0].texts, vec!["on it".to_string()]);
    let msgs = c.events_of("UserMessageReceived").await;
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0]["text"], "what's up?");
    assert_eq!(msgs[0]["session_id"], "slack:C1:1700000001.000100");
    assert_eq!(c.app.model_calls(), 1);
    c.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_in_a_thread_goes_under_the_parent() {
    let c = ChannelApp::spawn(&[]).await;
    let body = slack_event(
        "Ev-thread",
        json!({"type":"app_mention","user":"U7","text":format!("<@{BOT}> and then?"),
               "ts":"1700000009.000200","thread_ts":"1700000001.000100","channel":"C1"}),
    );
    assert_eq!(c.post_slack_signed(&body, None).await, 200);
    let d = c.slack_deliveries(1).await;
    assert_eq!(d[0].thread_ts.as_deref(), Some("1700000001.000100"));
    let msgs = c.events_of("UserMessageReceived").await;
    assert_eq!(msgs[0]["session_id"], "slack:C1:1700000001.000100");
    c.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bots_own_messages_and_edits_are_ignored() {
    let c = ChannelApp::spawn(&[]).await;
    let cases = [
        json!({"type":"message","channel_type":"im","bot_id":"B1","user":"U9","text":"beep","ts":"1.1","channel":"D1"}),
        json!({"type":"message","channel_type":"im","user":BOT,"text":"my own words","ts":"1.2","channel":"D1"}),
        json!({"type":"message","channel_type":"im","subtype":"message_changed","channel":"D1","ts":"1.3",
               "message":{"user":"U9","text":"edited"}}),
        json!({"type":"message","channel_type":"im","subtype":"message_deleted","channel":"D1","ts":"1.4"}),
        json!({"type":"message","channel_type":"channel","user":"U9","text":"not for the bot","ts":"1.5","channel":"C1"}),
        json!({"type":"reaction_added","user":"U9","reaction":"thumbsup"}),
    ];
    for (i, inner) in cases.into_iter().enumerate() {
        let body = slack_event(&format!("Ev-ign-{i}"), inner);
        assert_eq!(c.post_slack_signed(&body, None).await, 200, "case {i}");
    }
    settle().await;
    assert_eq!(c.app.event_count().await, 0);
    assert!(c.slack.deliveries().is_empty());
    c.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limit_is_waited_out_and_the_reply_delivered_once() {
    let c = ChannelApp::spawn(&[]).await;
    c.slack.script_post(Scripted::rate_limited(1));
    let body = slack_event(
        "Ev-dm",
        json!({"type":"message","channel_type":"im","user":"U8","text":"hello","ts":"1700000002.000100","channel":"D8"}),
    );
    assert_eq!(c.post_slack_signed(&body, None).await, 200);
    let delivered = c.wait_events("ReplyDelivered", 1).await;
    assert_eq!(delivered[0]["calls"], json!(["chat.postMessage"]));
    let calls = c.slack.calls();
    assert_eq!(calls.len(), 2, "one refused, one posted");
    assert_eq!(calls[0].status, 429);
    assert_eq!(calls[1].header("authorization"), Some("Bearer xoxb-test"));
    assert_eq!(c.slack.deliveries().len(), 1);
    c.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_error_is_not_reposted() {
    let c = ChannelApp::spawn(&[]).await;
    c.slack.script_post(Scripted::fail(500));
    let body = slack_event(
        "Ev-500",
        json!({"type":"message","channel_type":"im","user":"U8","text":"hello","ts":"1700000003.000100","channel":"D8"}),
    );
    assert_eq!(c.post_slack_signed(&body, None).await, 200);
    let failed = c.wait_events("ReplyFailed", 1).await;
    assert_eq!(failed[0]["code"], "outcome_unknown");
    settle().await;
    assert_eq!(
        c.slack.calls().len(),
        1,
        "a 5xx may have posted: never repost"
    );
    c.cleanup().await;
}

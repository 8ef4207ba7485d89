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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_configured_bot_id_the_bot_never_answers_itself() {
    // Default configuration: no `slack.bot_user_id`. The gateway learns it from auth.test.
    let c = ChannelApp::spawn(&[("GHOST_SLACK__BOT_USER_ID", "")]).await;
    c.app.llm.set_default(Script::reply("hello back"));
    let own = ghost_testkit::fake_platforms::FAKE_BOT_USER_ID;
    assert!(
        c.slack
            .calls()
            .iter()
            .any(|call| call.path == "/api/auth.test"),
        "auth.test was asked at start"
    );
    // The bot's own post, as Slack echoes it in a DM: no turn.
    let echo = slack_event(
        "Ev-own-1",
        json!({"type":"message","channel_type":"im","user":own,"text":"hello back","ts":"20.1","channel":"D7"}),
    );
    assert_eq!(c.post_slack_signed(&echo, None).await, 200);
    // An envelope naming the bot in `authorizations` (the id auth.test did not give).
    let named = serde_json::json!({
        "type": "event_callback", "team_id": "T1", "api_app_id": "A1",
        "event_id": "Ev-own-2", "event_time": 1_700_000_000,
        "authorizations": [{"team_id": "T1", "user_id": "UENVBOT", "is_bot": true}],
        "event": {"type":"message","channel_type":"im","user":"UENVBOT","text":"my words","ts":"20.2","channel":"D7"}
    })
    .to_string();
    assert_eq!(c.post_slack_signed(&named, None).await, 200);
    // A person's DM is answered, once.
    let person = slack_event(
        "Ev-person",
        json!({"type":"message","channel_type":"im","user":"U9","text":"hi","ts":"20.3","channel":"D7"}),
    );
    assert_eq!(c.post_slack_signed(&person, None).await, 200);
    c.wait_events("ReplyDelivered", 1).await;
    settle().await;
    let msgs = c.events_of("UserMessageReceived").await;
    assert_eq!(
        msgs.len(),
        1,
        "only the person's message is a turn: {msgs:?}"
    );
    assert_eq!(msgs[0]["speaker"], "U9");
    assert_eq!(c.slack.deliveries().len(), 1);
    c.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_dm_the_dm_is_the_conversation() {
    let c = ChannelApp::spawn(&[]).await;
    c.app.llm.set_default(Script::reply("noted"));
    let first = slack_event(
        "Ev-dm-1",
        json!({"type":"message","channel_type":"im","user":"U9","text":"my cat is called Mochi","ts":"30.1","channel":"D8"}),
    );
    assert_eq!(c.post_slack_signed(&first, None).await, 200);
    c.wait_events("ReplyDelivered", 1).await;
    // A second top-level DM message (no thread): the same session, with the first in its
    // history.
    let second = slack_event(
        "Ev-dm-2",
        json!({"type":"message","channel_type":"im","user":"U9","text":"what is my cat called?","ts":"30.2","channel":"D8"}),
    );
    assert_eq!(c.post_slack_signed(&second, None).await, 200);
    c.wait_events("ReplyDelivered", 2).await;
    let msgs = c.events_of("UserMessageReceived").await;
    let sessions: Vec<&str> = msgs
        .iter()
        .filter_map(|m| m["session_id"].as_str())
        .collect();
    assert_eq!(sessions, ["slack:D8", "slack:D8"]);
    let last_prompt = c
        .app
        .persona_requests()
        .last()
        .map(|r| r.body.to_string())
        .unwrap_or_default();
    assert!(
        last_prompt.contains("my cat is called Mochi"),
        "{last_prompt}"
    );
    // In a channel each thread stays its own conversation.
    let text = format!("<@{BOT}> hi");
    let channel = slack_event(
        "Ev-ch-1",
        json!({"type":"app_mention","user":"U9","text":text,"ts":"31.1","channel":"C8"}),
    );
    assert_eq!(c.post_slack_signed(&channel, None).await, 200);
    c.wait_events("ReplyDelivered", 3).await;
    let msgs = c.events_of("UserMessageReceived").await;
    assert_eq!(msgs[2]["session_id"], "slack:C8:31.1");
    c.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nul_character_in_a_slack_message_is_stored_once_and_answered() {
    let c = ChannelApp::spawn(&[]).await;
    c.app.llm.set_default(Script::reply("got it"));
    let body = slack_event(
        "Ev-nul",
        json!({"type":"message","channel_type":"im","user":"U9","text":"a\u{0}b","ts":"40.1","channel":"D9"}),
    );
    assert_eq!(c.post_slack_signed(&body, None).await, 200);
    c.wait_events("ReplyDelivered", 1).await;
    // Slack's retry of the same event is a duplicate.
    assert_eq!(c.post_slack_signed(&body, Some(1)).await, 200);
    settle().await;
    let msgs = c.events_of("UserMessageReceived").await;
    assert_eq!(msgs.len(), 1, "stored once: {msgs:?}");
    assert_eq!(msgs[0]["text"], "a\u{FFFD}b");
    assert_eq!(msgs[0]["_replaced_characters"]["count"], 1);
    assert_eq!(c.slack.deliveries().len(), 1);
    c.cleanup().await;
}

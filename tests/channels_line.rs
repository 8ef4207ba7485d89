//! LINE end to end: signed webhooks in, replies out at a fake LINE, each exactly once.

mod support;

use std::time::Duration;

use futures::future::join_all;
use ghost_testkit::fake_llm::Script;
use ghost_testkit::fake_platforms::Scripted;
use serde_json::{json, Value};
use support::platforms::{line_sign, line_text, line_text_event, ChannelApp};

fn fixtures() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/webhook_signatures.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("fixture json")
}

/// Lets in-flight work settle before asserting that something did *not* happen.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(1500)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixture_vector_is_accepted_and_a_redelivery_gets_no_second_reply() {
    let c = ChannelApp::spawn(&[]).await;
    c.app.llm.set_default(Script::reply("やあ、こんにちは"));
    let f = fixtures();
    let body = f["line"]["body"].as_str().expect("body");
    let sig = f["line"]["x_line_signature"].as_str().expect("sig");
    assert_eq!(c.post_line(body, Some(sig)).await.status(), 200);

    let d = c.line_deliveries(1).await;
    assert_eq!(d[0].endpoint, "reply", "fresh reply token → reply API");
    assert_eq!(d[0].to, "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr");
    assert_eq!(d[0].texts, vec!["やあ、こんにちは".to_string()]);
    c.wait_events("ReplyDelivered", 1).await;
    let before = c.app.settled_event_count().await;

    // LINE redelivers the same event (same webhookEventId).
    let redelivered = body.replace(r#""isRedelivery":false"#, r#""isRedelivery":true"#);
    assert_eq!(c.post_line_signed(&redelivered).await, 200);
    assert_eq!(c.post_line(body, Some(sig)).await.status(), 200);
    settle().await;
    assert_eq!(
        c.app.event_count().await,
        before,
        "a redelivery appends nothing"
    );
    assert_eq!(c.line.deliveries().len(), 1, "exactly one reply");
    assert_eq!(c.app.model_calls(), 1);
    c.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_store_nothing() {
    let c = ChannelApp::spawn(&[("GHOST_GATEWAY__MAX_BODY_BYTES", "4096")]).await;
    let body = line_text("ev-bad", "U1", "hello", "rt-bad", false);
    let forged = line_sign(&body.replace("hello", "hullo"));
    let status = |r: reqwest::Response| r.status().as_u16();

    assert_eq!(
        status(c.post_line(&body, Some(&forged)).await),
        401,
        "forged"
    );
    assert_eq!(status(c.post_line(&body, None).await), 401, "missing");
    assert_eq!(
        status(c.post_line(&body, Some("not base64!")).await),
        401,
        "malformed"
    );
    let json_broken = r#"{"destination":"U","events":[{"type":"#;
    assert_eq!(c.post_line_signed(json_broken).await, 400, "malformed JSON");
    let huge = format!(r#"{{"destination":"{}","events":[]}}"#, "x".repeat(5000));
    assert_eq!(c.post_line_signed(&huge).await, 413, "over the body limit");

    // Slack: the documented vector is years old → stale; forged and missing too.
    let f = fixtures();
    let sb = f["slack"]["body"].as_str().expect("body");
    let st = f["slack"]["timestamp"].as_str().expect("ts");
    let ss = f["slack"]["signature"].as_str().expect("sig");
    assert_eq!(
        status(c.post_slack(sb, Some(st), Some(ss), None).await),
        401,
        "stale"
    );
    let now = chrono::Utc::now().timestamp().to_string();
    assert_eq!(
        status(c.post_slack(sb, Some(&now), Some(ss), None).await),
        401,
        "forged"
    );
    assert_eq!(
        status(c.post_slack(sb, Some(&now), None, None).await),
        401,
        "missing"
    );
    assert_eq!(
        status(c.post_slack(sb, None, Some(ss), None).await),
        401,
        "no timestamp"
    );
    assert_eq!(c.post_slack_signed("{not json", None).await, 400);

    settle().await;
    assert_eq!(c.app.event_count().await, 0, "nothing appended");
    assert!(c.line.deliveries().is_empty() && c.slack.deliveries().is_empty());
    c.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_turn_events_are_acknowledged_without_a_turn() {
    let c = ChannelApp::spawn(&[]).await;
    let mut standby = line_text_event("ev-sb", "U1", "hi", "rt-sb", false);
    standby["mode"] = json!("standby");
    let follow = json!({"type":"follow","mode":"active","timestamp":1,"webhookEventId":"ev-f",
        "deliveryContext":{"isRedelivery":false},"source":{"type":"user","userId":"U1"},"replyToken":"rt-f"});
    let mut group = line_text_event("ev-g", "U1", "hi all", "rt-g", false);
    group["source"] = json!({"type":"group","groupId":"C1","userId":"U1"});
    let sticker = json!({"type":"message","mode":"active","timestamp":1,"webhookEventId":"ev-st",
        "deliveryContext":{"isRedelivery":false},"source":{"type":"user","userId":"U1"},"replyToken":"rt-st",
        "message":{"id":"1","type":"sticker","packageId":"1","stickerId":"1"}});
    for events in [json!([]), json!([standby, follow, group, sticker])] {
        let body = json!({"destination":"Ubot","events":events}).to_string();
        assert_eq!(c.post_line_signed(&body).await, 200);
    }
    settle().await;
    assert_eq!(c.app.event_count().await, 0);
    assert!(c.line.deliveries().is_empty());
    c.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_mention_starts_a_turn_in_the_group_session() {
    let c = ChannelApp::spawn(&[]).await;
    let mut ev = line_text_event("ev-gm", "U1", "@Kuro hello", "rt-gm", false);
    ev["source"] = json!({"type":"group","groupId":"C9","userId":"U1"});
    ev["message"]["mention"] =
        json!({"mentionees":[{"index":0,"length":5,"type":"user","isSelf":true}]});
    let body = json!({"destination":"Ubot","events":[ev]}).to_string();
    assert_eq!(c.post_line_signed(&body).await, 200);
    c.line_deliveries(1).await;
    let msgs = c.wait_events("UserMessageReceived", 1).await;
    assert_eq!(msgs[0]["session_id"], "line:group:C9");
    assert_eq!(msgs[0]["text"], "hello");
    assert_eq!(msgs[0]["reply_to"]["push_to"], "C9");
    c.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redelivery_after_restart_is_still_a_duplicate() {
    let c = ChannelApp::spawn(&[]).await;
    let body = line_text("ev-restart", "U1", "hello", "rt-restart", false);
    assert_eq!(c.post_line_signed(&body).await, 200);
    c.line_deliveries(1).await;
    c.wait_events("ReplyDelivered", 1).await;
    let before = c.app.settled_event_count().await;

    // A new process (same database and bus) receives the redelivery.
    c.app.stack.abort();
    let stack =
        ghost::stack::start_stack(c.app.env.config.clone(), &ghost::stack::ServiceName::ALL)
            .await
            .expect("restart");
    let base = format!("http://{}", stack.gateway_addr().expect("gateway"));
    let redelivered = line_text("ev-restart", "U1", "hello", "rt-restart", true);
    let r = c
        .app
        .http
        .post(format!("{base}/webhooks/line"))
        .header("x-line-signature", line_sign(&redelivered))
        .body(redelivered)
        .send()
        .await
        .expect("post");
    assert_eq!(r.status(), 200);
    settle().await;
    assert_eq!(c.app.event_count().await, before);
    assert_eq!(c.line.deliveries().len(), 1);
    stack.abort();
    c.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_token_pushes_with_a_retry_key_and_a_retried_push_is_delivered_once() {
    let c = ChannelApp::spawn(&[("GHOST_LINE__REPLY_TOKEN_MAX_AGE_SECS", "1")]).await;
    // The model takes longer than the token may live.
    c.app
        .llm
        .set_default(Script::reply("late answer").with_delay(Duration::from_millis(1500)));
    // The first push is processed by LINE, but the answer is a 500.
    c.line.script_push(Scripted::fail_after_delivery(500));
    let body = line_text("ev-stale", "U2", "hello", "rt-stale", false);
    assert_eq!(c.post_line_signed(&body).await, 200);

    c.wait_events("ReplyDelivered", 1).await;
    let pushes: Vec<_> = c
        .line
        .calls()
        .into_iter()
        .filter(|call| call.path == "/v2/bot/message/push")
        .collect();
    assert_eq!(pushes.len(), 2, "retried after the 500");
    let k0 = pushes[0].header("x-line-retry-key").expect("retry key");
    assert_eq!(Some(k0), pushes[1].header("x-line-retry-key"), "same key");
    assert_eq!(pushes[1].status, 409, "LINE refuses the duplicate");
    assert!(c
        .line
        .calls()
        .iter()
        .all(|call| call.path != "/v2/bot/message/reply"));
    let d = c.line.deliveries();
    assert_eq!(d.len(), 1, "delivered once");
    assert_eq!((d[0].endpoint, d[0].to.as_str()), ("push", "U2"));
    c.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_replies_are_split_within_line_limits() {
    let c = ChannelApp::spawn(&[("GHOST_LINE__MAX_CHARS_PER_MESSAGE", "10")]).await;
    let words: Vec<String> = (0..40).map(|i| format!("w{i:02}")).collect();
    let reply = words.join(" ");
    c.app.llm.set_default(Script::reply(&reply));
    let body = line_text("ev-long", "U3", "talk a lot", "rt-long", false);
    assert_eq!(c.post_line_signed(&body).await, 200);
    c.wait_events("ReplyDelivered", 1).await;
    let d = c.line.deliveries();
    assert!(d.len() >= 2, "more than one call");
    assert_eq!(d[0].endpoint, "reply");
    assert!(d[1..].iter().all(|x| x.endpoint == "push"));
    assert!(d.iter().all(|x| x.texts.len() <= 5 && !x.texts.is_empty()));
    let all: Vec<&String> = d.iter().flat_map(|x| &x.texts).collect();
    assert!(all.iter().all(|t| t.encode_utf16().count() <= 10));
    let rejoined: Vec<&str> = all.iter().flat_map(|t| t.split(' ')).collect();
    assert_eq!(
        rejoined,
        words.iter().map(String::as_str).collect::<Vec<_>>()
    );
    c.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_push_is_recorded_as_failed() {
    let c = ChannelApp::spawn(&[]).await;
    c.line.script_push(Scripted::fail(400));
    // A redelivered event's token is treated as stale: push.
    let body = line_text("ev-fail", "U4", "hello", "rt-fail", true);
    assert_eq!(c.post_line_signed(&body).await, 200);
    let failed = c.wait_events("ReplyFailed", 1).await;
    assert_eq!(failed[0]["code"], "gave_up");
    assert!(c.line.deliveries().is_empty());
    assert!(c.events_of("ReplyDelivered").await.is_empty());
    c.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_concurrent_webhooks_are_each_answered_once() {
    let c = ChannelApp::spawn(&[("GHOST_DATABASE__MAX_CONNECTIONS", "16")]).await;
    let n = 200;
    let bodies: Vec<String> = (0..n)
        .map(|i| {
            line_text(
                &format!("ev-c{i}"),
                &format!("U{i}"),
                "hi",
                &format!("rt-c{i}"),
                false,
            )
        })
        .collect();
    let statuses = join_all(bodies.iter().map(|b| c.post_line_signed(b))).await;
    assert!(
        statuses.iter().all(|s| *s == 200),
        "all acknowledged: {statuses:?}"
    );
    // And once more, concurrently: all redeliveries.
    let again = join_all(bodies.iter().map(|b| c.post_line_signed(b))).await;
    assert!(again.iter().all(|s| *s == 200));

    c.wait_events("ReplyDelivered", n).await;
    settle().await;
    let d = c.line.deliveries();
    if d.len() != n {
        // Which messages were answered more than once, and what the store holds for them.
        let mut seen = std::collections::HashMap::<String, usize>::new();
        for x in &d {
            *seen.entry(format!("{} {}", x.endpoint, x.to)).or_default() += 1;
        }
        let twice: Vec<_> = seen.iter().filter(|(_, k)| **k > 1).collect();
        let mut counts = Vec::new();
        for t in [
            "UserMessageReceived",
            "AssistantReplied",
            "TurnTimedOut",
            "RenderFailed",
            "ReplyAttempted",
            "ReplyDelivered",
            "ReplyFailed",
        ] {
            counts.push((t, c.events_of(t).await.len()));
        }
        let endpoints: Vec<_> = d.iter().map(|x| (x.endpoint, x.to.clone())).collect();
        panic!(
            "each answered exactly once: {} deliveries; repeated {twice:?}; events {counts:?}; \
             all {endpoints:?}",
            d.len()
        );
    }
    let mut tokens: Vec<&str> = d.iter().map(|x| x.to.as_str()).collect();
    tokens.sort_unstable();
    tokens.dedup();
    assert_eq!(tokens.len(), n);
    assert_eq!(c.events_of("UserMessageReceived").await.len(), n);
    c.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nul_character_in_a_line_message_is_stored_once_and_answered() {
    let c = ChannelApp::spawn(&[]).await;
    c.app.llm.set_default(Script::reply("うけとったよ"));
    let body = line_text("ev-nul", "Unul", "a\u{0}b", "rt-nul", false);
    assert_eq!(
        c.post_line_signed(&body).await,
        200,
        "no 500: LINE would redeliver forever"
    );
    c.line_deliveries(1).await;
    c.wait_events("ReplyDelivered", 1).await;
    // The redelivery LINE sends anyway is a duplicate.
    let again = line_text("ev-nul", "Unul", "a\u{0}b", "rt-nul", true);
    assert_eq!(c.post_line_signed(&again).await, 200);
    settle().await;
    let msgs = c.events_of("UserMessageReceived").await;
    assert_eq!(msgs.len(), 1, "stored once: {msgs:?}");
    assert_eq!(msgs[0]["text"], "a\u{FFFD}b");
    assert_eq!(msgs[0]["_replaced_characters"]["count"], 1);
    assert_eq!(c.line.deliveries().len(), 1);
    c.cleanup().await;
}

//! LINE images end to end: content downloaded into the media table after the ack (capped
//! while it streams), sent to the model as an OpenAI-compatible `image_url` by a persona that
//! shares no disk with the gateway, audited under `provider.http`, swept after retention.

mod support;

use std::time::Duration;

use base64::Engine as _;
use ghost_shared::media::MediaStore;
use ghost_testkit::fake_llm::{Failure, Script};
use ghost_testkit::testing::eventually;
use serde_json::{json, Value};
use support::logs::capture;
use support::platforms::ChannelApp;

/// `fields` of every `provider.http` line with `message` about `source_path`.
fn audit_lines(message: &str, source_path: &str) -> Vec<Value> {
    capture()
        .text()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["target"] == "provider.http" && v["fields"]["message"] == message)
        .map(|v| v["fields"].clone())
        .filter(|f| f["source_path"] == source_path)
        .collect()
}

fn png() -> Vec<u8> {
    let mut b = b"\x89PNG\r\n\x1a\n".to_vec();
    b.extend_from_slice(&[7u8; 40]);
    b
}

fn image_webhook(event_id: &str, message_id: &str) -> String {
    json!({"destination":"Ubot","events":[{
        "type":"message","mode":"active","timestamp":1_762_000_000_000_i64,
        "webhookEventId":event_id,"deliveryContext":{"isRedelivery":false},
        "source":{"type":"user","userId":"U5"},"replyToken":format!("rt-{event_id}"),
        "message":{"id":message_id,"type":"image","contentProvider":{"type":"line"}}
    }]})
    .to_string()
}

/// Serves a PNG as LINE message `message_id` and posts the webhook announcing it; the bytes.
async fn send_png(c: &ChannelApp, event_id: &str, message_id: &str) -> Vec<u8> {
    let bytes = png();
    c.line.set_content(message_id, bytes.clone(), "image/png");
    assert_eq!(
        c.post_line_signed(&image_webhook(event_id, message_id))
            .await,
        200
    );
    bytes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_reaches_the_model_as_image_url_and_is_kept_for_the_retention() {
    capture();
    let c = ChannelApp::spawn(&[("GHOST_LLM__PERSONA__PROVIDER", "openai")]).await;
    c.app.reply(Script::reply("a nice picture"));
    let bytes = send_png(&c, "ev-img", "img-1").await;

    let d = c.line_deliveries(1).await;
    assert_eq!(d[0].texts, vec!["a nice picture".to_string()]);
    let msgs = c.events_of("UserMessageReceived").await;
    assert_eq!(msgs.len(), 1);
    let media_id: uuid::Uuid =
        serde_json::from_value(msgs[0]["image"]["media_id"].clone()).expect("a media id");
    let path = format!("media:{media_id}");
    let media = MediaStore::new(c.app.store.pool().clone());

    // The model saw the image inline.
    let req = c
        .app
        .llm
        .requests()
        .into_iter()
        .find(|r| r.path.ends_with("/chat/completions"))
        .expect("model request");
    let data_uri = format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(&bytes)
    );
    let last = req.body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .expect("messages")
        .clone();
    let parts = last["content"].as_array().expect("content parts");
    assert!(parts
        .iter()
        .any(|p| p["type"] == "image_url" && p["image_url"]["url"] == data_uri.as_str()));

    // The audit line.
    let audits = audit_lines("LLM image audit before request", &path);
    assert_eq!(audits.len(), 1, "one audit line for the one request");
    let a = &audits[0];
    assert_eq!(a["url_type"], "data_uri");
    assert_eq!(a["image_url"], "data:image/png;base64,[omitted]");
    assert_eq!(a["image_url_length"], data_uri.len() as u64);
    assert_eq!(a["local_exists_before"], true);
    assert_eq!(a["local_size_before_bytes"], bytes.len() as u64);
    assert_eq!(a["included"], true);
    assert_eq!(a["drop_reason"], "");

    // Still there after use; the sweeper only removes what outlived the retention.
    let stored = media.get(media_id).await.unwrap().expect("kept after use");
    assert_eq!(stored.bytes, bytes);
    assert_eq!(stored.content_type.as_deref(), Some("image/png"));
    assert_eq!(media.sweep(Duration::from_secs(3600)).await.unwrap(), 0);
    assert!(media.get(media_id).await.unwrap().is_some());
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(media.sweep(Duration::from_millis(1)).await.unwrap(), 1);
    assert!(media.get(media_id).await.unwrap().is_none());
    c.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_timeout_is_audited_and_the_sweeper_removes_the_image_later() {
    capture();
    let c = ChannelApp::spawn(&[
        ("GHOST_LLM__PERSONA__PROVIDER", "openai"),
        ("GHOST_LLM__PERSONA__TIMEOUT_SECS", "1"),
        ("GHOST_MEDIA__RETENTION_SECS", "3"),
        ("GHOST_MEDIA__SWEEP_INTERVAL_SECS", "1"),
    ])
    .await;
    c.app.reply(Script::failing(Failure::Hang));
    c.line.set_content("img-2", png(), "image/png");
    assert_eq!(
        c.post_line_signed(&image_webhook("ev-img2", "img-2")).await,
        200
    );

    // The persona fails; the user gets the short apology.
    c.wait_events("RenderFailed", 1).await;
    let d = c.line_deliveries(1).await;
    assert_eq!(d[0].endpoint, "reply");
    let msgs = c.events_of("UserMessageReceived").await;
    let media_id: uuid::Uuid =
        serde_json::from_value(msgs[0]["image"]["media_id"].clone()).expect("a media id");
    let path = format!("media:{media_id}");
    let media = MediaStore::new(c.app.store.pool().clone());
    let after = eventually(Duration::from_secs(10), "timeout audit", || async {
        let l = audit_lines("LLM image audit after timeout", &path);
        (!l.is_empty()).then_some(l)
    })
    .await;
    assert_eq!(
        after[0]["local_exists_after_timeout"], true,
        "not deleted during the call"
    );
    assert_eq!(
        after[0]["local_size_after_timeout_bytes"],
        png().len() as u64
    );

    // Only after the retention does the running sweeper remove it.
    eventually(
        Duration::from_secs(30),
        "sweeper removes the image",
        || async { media.get(media_id).await.unwrap().is_none().then_some(()) },
    )
    .await;
    c.cleanup().await;
}

/// The model request carrying an image, and the image's data URI in it, if any.
fn image_url_sent(c: &ChannelApp) -> Option<String> {
    c.app
        .llm
        .requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .find_map(|r| {
            let parts = r.body["messages"].as_array()?.last()?["content"]
                .as_array()?
                .clone();
            parts
                .iter()
                .find(|p| p["type"] == "image_url")
                .and_then(|p| p["image_url"]["url"].as_str().map(str::to_owned))
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_image_reaches_a_persona_that_shares_no_disk_with_the_gateway() {
    capture();
    // The gateway (and the rest) here; the persona as its own process in its own directory.
    let services = [
        ghost::stack::ServiceName::Mood,
        ghost::stack::ServiceName::Router,
        ghost::stack::ServiceName::Worker,
        ghost::stack::ServiceName::Coder,
        ghost::stack::ServiceName::Gateway,
    ];
    let c =
        ChannelApp::spawn_services(&services, &[("GHOST_LLM__PERSONA__PROVIDER", "openai")]).await;
    c.app.reply(Script::reply("a nice picture"));
    let bytes = send_png(&c, "ev-img3", "img-3").await;
    c.wait_events("UserMessageReceived", 1).await;
    // The persona: its own process, working directory and temporary directory.
    let persona_dir =
        std::env::temp_dir().join(format!("ghost-persona-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&persona_dir).unwrap();
    let mut persona = c.app.spawn_child_in(
        "persona",
        &persona_dir,
        &[("GHOST_LLM__PERSONA__PROVIDER", "openai")],
    );

    let d = c.line_deliveries(1).await;
    assert_eq!(d[0].texts, vec!["a nice picture".to_string()]);
    let data_uri = format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(&bytes)
    );
    assert_eq!(image_url_sent(&c).as_deref(), Some(data_uri.as_str()));
    let _ = persona.kill().await;
    let _ = std::fs::remove_dir_all(&persona_dir);
    c.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_image_is_refused_while_it_streams_not_after() {
    capture();
    let max: u64 = 1024 * 1024;
    let c = ChannelApp::spawn(&[
        ("GHOST_LLM__PERSONA__PROVIDER", "openai"),
        ("GHOST_MEDIA__MAX_IMAGE_BYTES", "1048576"),
    ])
    .await;
    c.app.reply(Script::reply("I could not see it"));
    // 256 MiB without a Content-Length: only reading tells how big it is.
    let total = 256 * max;
    c.line.set_streamed_content("img-big", total, "image/png");
    assert_eq!(
        c.post_line_signed(&image_webhook("ev-big", "img-big"))
            .await,
        200
    );

    // The turn goes on without the image; the user still gets an answer.
    let msgs = c.wait_events("UserMessageReceived", 1).await;
    assert_eq!(msgs[0]["text"], ghost_gateway::media::IMAGE_FAILED_TEXT);
    assert!(msgs[0]["image"].is_null());
    let d = c.line_deliveries(1).await;
    assert_eq!(d[0].texts, vec!["I could not see it".to_string()]);
    assert!(image_url_sent(&c).is_none());
    // The reason is clear where operators look: the dead letter of the download.
    let bus = c.app.stack.ctx.bus();
    let dlq = bus
        .jetstream()
        .get_stream(format!("{}_DLQ", bus.config().stream_name))
        .await
        .unwrap();
    let letter = dlq
        .get_last_raw_message_by_subject(&bus.dead_letter_subject("gateway_LineImageReceived"))
        .await
        .expect("the download was dead-lettered");
    let reason = letter
        .headers
        .get("Ghost-Dead-Letter-Reason")
        .map(|v| v.as_str().to_owned())
        .unwrap_or_default();
    assert!(
        reason.contains("larger than 1048576 bytes (media.max_image_bytes)"),
        "{reason}"
    );
    // The download stopped at the limit: the fake was read no further than the limit plus
    // what socket buffers hold, far from the whole body.
    let served = c.line.content_bytes_served("img-big");
    assert!(
        served < 32 * max,
        "{served} of {total} bytes were read for a {max}-byte limit"
    );
    c.cleanup().await;
}

/// A Slack DM sharing file `file_id` at `url`, with `text`.
fn slack_image_event(event_id: &str, ts: &str, file_id: &str, url: &str, text: &str) -> String {
    support::platforms::slack_event(
        event_id,
        json!({"type":"message","subtype":"file_share","channel_type":"im","channel":"D9",
               "user":"U9","text":text,"ts":ts,"event_ts":ts,
               "files":[{"id":file_id,"mimetype":"image/png","filetype":"png",
                         "url_private":url,"url_private_download":url}]}),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slack_image_is_downloaded_with_the_bot_token_and_reaches_the_model() {
    capture();
    // The fake Slack serves the file (its files are `slack.files_base`) and takes the reply.
    let c = ChannelApp::spawn(&[("GHOST_LLM__PERSONA__PROVIDER", "openai")]).await;
    let bytes = png();
    c.slack.set_file("F1", bytes.clone(), "image/png");
    let url = c.slack.file_url("F1");
    c.app.reply(Script::reply("a nice picture"));
    let body = slack_image_event("Ev-img", "1700000100.000100", "F1", &url, "これ見て");
    assert_eq!(c.post_slack_signed(&body, None).await, 200);

    let d = c.slack_deliveries(1).await;
    assert_eq!(d[0].texts, vec!["a nice picture".to_string()]);
    assert_eq!(d[0].thread_ts.as_deref(), Some("1700000100.000100"));
    let msgs = c.events_of("UserMessageReceived").await;
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0]["text"], "これ見て");
    assert_eq!(msgs[0]["channel"], "slack");
    let media_id: uuid::Uuid =
        serde_json::from_value(msgs[0]["image"]["media_id"].clone()).expect("a media id");
    // Downloaded with the bot token.
    let download = c
        .slack
        .calls()
        .into_iter()
        .find(|call| call.path.starts_with("/files-pri/F1/"))
        .expect("the file was fetched");
    assert_eq!(download.status, 200);
    // The model saw it like a LINE image, and the hand-over was audited.
    let data_uri = format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(&bytes)
    );
    assert_eq!(image_url_sent(&c).as_deref(), Some(data_uri.as_str()));
    let audits = audit_lines(
        "LLM image audit before request",
        &format!("media:{media_id}"),
    );
    assert_eq!(audits.len(), 1);
    assert_eq!(audits[0]["included"], true);
    // Kept in the media table under the same retention.
    let media = MediaStore::new(c.app.store.pool().clone());
    assert!(media.get(media_id).await.unwrap().is_some());
    c.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slack_file_url_outside_the_files_base_never_gets_the_token() {
    capture();
    let elsewhere = ghost_testkit::fake_platforms::FakeSlack::start()
        .await
        .unwrap();
    elsewhere.set_file("F2", png(), "image/png");
    let c = ChannelApp::spawn(&[("GHOST_LLM__PERSONA__PROVIDER", "openai")]).await;
    c.app.reply(Script::reply("I could not see it"));
    let body = slack_image_event(
        "Ev-img2",
        "1700000200.000100",
        "F2",
        &elsewhere.file_url("F2"),
        "",
    );
    assert_eq!(c.post_slack_signed(&body, None).await, 200);
    let d = c.slack_deliveries(1).await;
    assert_eq!(d[0].texts, vec!["I could not see it".to_string()]);
    let msgs = c.events_of("UserMessageReceived").await;
    assert_eq!(msgs[0]["text"], ghost_gateway::media::IMAGE_FAILED_TEXT);
    assert!(msgs[0]["image"].is_null());
    assert!(
        elsewhere.calls().is_empty(),
        "the token never left for another host"
    );
    assert!(image_url_sent(&c).is_none());
    c.cleanup().await;
}

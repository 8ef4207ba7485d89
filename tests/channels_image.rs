//! LINE images end to end: content downloaded into temp media after the ack, sent to the model
//! as an OpenAI-compatible `image_url`, audited under `provider.http`, swept after retention.

mod support;

use std::sync::OnceLock;
use std::time::Duration;

use base64::Engine as _;
use ghost_testkit::fake_llm::{Failure, Script};
use ghost_testkit::testing::eventually;
use serde_json::{json, Value};
use support::logs::LogCapture;
use support::platforms::ChannelApp;

/// Every JSON log line of this test binary.
fn capture() -> &'static LogCapture {
    static CAP: OnceLock<LogCapture> = OnceLock::new();
    CAP.get_or_init(|| {
        let cap = LogCapture::default();
        let sub = tracing_subscriber::fmt()
            .json()
            .with_writer(cap.clone())
            .with_max_level(tracing::Level::INFO)
            .finish();
        let _ = tracing::subscriber::set_global_default(sub);
        cap
    })
}

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_reaches_the_model_as_image_url_and_is_kept_for_the_retention() {
    capture();
    let c = ChannelApp::spawn(&[("GHOST_LLM__PERSONA__PROVIDER", "openai")]).await;
    c.app.reply(Script::reply("a nice picture"));
    let bytes = png();
    c.line.set_content("img-1", bytes.clone(), "image/png");
    assert_eq!(
        c.post_line_signed(&image_webhook("ev-img", "img-1")).await,
        200
    );

    let d = c.line_deliveries(1).await;
    assert_eq!(d[0].texts, vec!["a nice picture".to_string()]);
    let msgs = c.events_of("UserMessageReceived").await;
    assert_eq!(msgs.len(), 1);
    let path = msgs[0]["image"]["local_path"]
        .as_str()
        .expect("local path")
        .to_owned();
    assert!(path.starts_with(&c.media_dir.display().to_string()));

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
    assert!(std::path::Path::new(&path).exists());
    let kept = ghost_gateway::media::sweep(&c.media_dir, Duration::from_secs(3600)).await;
    assert_eq!(kept.ok(), Some(0));
    assert!(std::path::Path::new(&path).exists());
    tokio::time::sleep(Duration::from_millis(20)).await;
    let removed = ghost_gateway::media::sweep(&c.media_dir, Duration::from_millis(1)).await;
    assert_eq!(removed.ok(), Some(1));
    assert!(!std::path::Path::new(&path).exists());
    c.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_timeout_is_audited_and_the_sweeper_removes_the_file_later() {
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
    let path = msgs[0]["image"]["local_path"]
        .as_str()
        .expect("local path")
        .to_owned();
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
        "sweeper removes the file",
        || async { (!std::path::Path::new(&path).exists()).then_some(()) },
    )
    .await;
    c.cleanup().await;
}

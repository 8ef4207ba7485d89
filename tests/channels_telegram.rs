//! Telegram end to end: updates in (checked by the webhook's secret token), replies out at a
//! fake Telegram Bot API, each exactly once and in the order of the messages; photos through
//! `getFile` to the model; `/local` honoured; bad input refused cleanly; the bot token (part
//! of every Bot API URL) never in a log line, an event or a dead letter; autonomy messages
//! pushed once to a bound chat.

mod routing_support;
mod support;

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use ghost::stack::ServiceName;
use ghost_gateway::deliver::autonomy_push::AutonomyPusher;
use ghost_gateway::deliver::Deliverer;
use ghost_shared::autonomy::events::AutonomyMessagePushed;
use ghost_shared::bus::EventHandler;
use ghost_shared::config::{PushBinding, TelegramPushTarget};
use ghost_shared::envelope::EventPayload;
use ghost_shared::events::RenderRequested;
use ghost_shared::media::MediaStore;
use ghost_testkit::fake_llm::Script;
use ghost_testkit::fake_platforms::{FakeTelegram, FAKE_TELEGRAM_TOKEN};
use ghost_testkit::fake_search::FakeSearch;
use ghost_testkit::testing::{eventually, WORKER_MODEL};
use routing_support::{payload, RoutingApp, Scripts, PERSONA_REPLY};
use serde_json::{json, Value};
use support::logs::capture;
use support::platforms::{
    post_telegram, telegram_text, telegram_update, telegram_vars, ChannelApp, TELEGRAM_SECRET,
};

fn fixtures() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/telegram_updates.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("fixture json")
}

/// Lets in-flight work settle before asserting that something did *not* happen.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(1500)).await;
}

/// A JPEG's first bytes (the model's side tells images by their magic), then filler.
fn jpeg() -> Vec<u8> {
    let mut b = vec![0xFF, 0xD8, 0xFF, 0xE0];
    b.extend_from_slice(&[9u8; 60]);
    b
}

/// Asserts the gateway's refusal shape: `status`, and `{"error": {"code", "message"}}`.
async fn assert_refused(response: reqwest::Response, status: u16, code: &str, case: &str) {
    assert_eq!(response.status().as_u16(), status, "{case}");
    let body: Value = response.json().await.expect("a JSON refusal");
    assert_eq!(body["error"]["code"], code, "{case}: {body}");
    assert!(
        !body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .is_empty(),
        "{case}: {body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_secret_token_is_checked_and_a_refused_update_stores_nothing() {
    let c = ChannelApp::spawn(&[]).await;
    let body = fixtures()["private_text"].to_string();
    let missing = c.post_telegram(body.clone(), None).await;
    assert_refused(missing, 401, "invalid_signature", "no secret token").await;
    for wrong in [
        "",
        "tg-webhook_Secret-012345678",
        "TG-WEBHOOK_SECRET-0123456789",
    ] {
        let r = c.post_telegram(body.clone(), Some(wrong)).await;
        assert_refused(r, 401, "invalid_signature", wrong).await;
    }
    settle().await;
    assert_eq!(c.app.event_count().await, 0, "nothing stored");
    assert!(c.telegram.calls().is_empty(), "nothing sent");

    // The same update with the secret token is a turn.
    c.app.llm.set_default(Script::reply("元気だよ"));
    assert_eq!(c.post_telegram_signed(&body).await, 200);
    let d = c.telegram_deliveries(1).await;
    assert_eq!(d[0].texts, vec!["元気だよ".to_string()]);
    c.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redelivered_update_is_answered_once() {
    let c = ChannelApp::spawn(&[]).await;
    c.app.llm.set_default(Script::reply("やあ、こんにちは"));
    let body = fixtures()["private_text"].to_string();
    assert_eq!(c.post_telegram_signed(&body).await, 200);

    let d = c.telegram_deliveries(1).await;
    assert_eq!(d[0].endpoint, "sendMessage");
    assert_eq!(d[0].to, "7100200300");
    assert_eq!(d[0].texts, vec!["やあ、こんにちは".to_string()]);
    let delivered = c.wait_events("ReplyDelivered", 1).await;
    assert_eq!(delivered[0]["calls"], json!(["sendMessage"]));
    let msgs = c.events_of("UserMessageReceived").await;
    assert_eq!(msgs[0]["session_id"], "telegram:user:7100200300");
    assert_eq!(msgs[0]["channel"], "telegram");
    assert_eq!(msgs[0]["speaker"], "7100200300");
    assert_eq!(msgs[0]["external_id"], "telegram:msg:7100200300:1365");
    assert_eq!(
        msgs[0]["reply_to"],
        json!({"platform": "telegram", "chat_id": 7_100_200_300_i64})
    );
    let before = c.app.settled_event_count().await;

    // Telegram redelivers the update (same update_id) when an answer is late or lost.
    for _ in 0..2 {
        assert_eq!(c.post_telegram_signed(&body).await, 200);
    }
    settle().await;
    assert_eq!(
        c.app.event_count().await,
        before,
        "a redelivery appends nothing"
    );
    assert_eq!(c.telegram.deliveries().len(), 1, "exactly one reply");
    assert_eq!(c.app.model_calls(), 1);
    c.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_photo_reaches_the_model_as_image_url_through_get_file() {
    capture();
    let c = ChannelApp::spawn(&[("GHOST_LLM__PERSONA__PROVIDER", "openai")]).await;
    let bytes = jpeg();
    c.telegram
        .set_file("AgACAgQAAxkBAAIBsmks-large", bytes.clone());
    c.app.reply(Script::reply("a nice picture"));
    let body = fixtures()["private_photo"].to_string();
    assert_eq!(c.post_telegram_signed(&body).await, 200);

    let d = c.telegram_deliveries(1).await;
    assert_eq!(d[0].texts, vec!["a nice picture".to_string()]);
    let msgs = c.events_of("UserMessageReceived").await;
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0]["text"], "これ見て");
    assert_eq!(msgs[0]["channel"], "telegram");
    assert_eq!(msgs[0]["image"]["message_id"], "AgACAgQAAxkBAAIBsmks-large");
    let media_id: uuid::Uuid =
        serde_json::from_value(msgs[0]["image"]["media_id"].clone()).expect("a media id");
    // The largest size was asked of getFile, then downloaded from the file host.
    let paths: Vec<String> = c
        .telegram
        .calls()
        .into_iter()
        .map(|call| call.path)
        .collect();
    let get_file = format!("/bot{FAKE_TELEGRAM_TOKEN}/getFile");
    let download = format!("/file/bot{FAKE_TELEGRAM_TOKEN}/photos/AgACAgQAAxkBAAIBsmks-large.jpg");
    assert_eq!(paths[..2], [get_file, download], "{paths:?}");
    // The model saw it inline.
    let data_uri = format!(
        "data:image/jpeg;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(&bytes)
    );
    assert_eq!(c.image_url_sent().as_deref(), Some(data_uri.as_str()));
    // Kept in the media table, typed by the platform (the file host says octet-stream).
    let media = MediaStore::new(c.app.store.pool().clone());
    let stored = media.get(media_id).await.unwrap().expect("kept after use");
    assert_eq!(stored.bytes, bytes);
    assert_eq!(stored.content_type.as_deref(), Some("image/jpeg"));
    c.cleanup().await;
}

const CODE: &str = "/code このPythonを直して\n```python\nprint(1/0)\n```";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_local_is_honoured_and_a_code_message_then_reaches_no_cloud() {
    let telegram = FakeTelegram::start().await.expect("fake telegram");
    let vars = telegram_vars(&telegram.base_url());
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let r = RoutingApp::spawn(Scripts::default(), &vars).await;
    let post = |body: String| async {
        post_telegram(&r.app, body, Some(TELEGRAM_SECRET))
            .await
            .status()
            .as_u16()
    };
    let sent = |n: usize| {
        let telegram = telegram.clone();
        async move {
            eventually(Duration::from_secs(30), "Telegram messages", || async {
                let d = telegram.deliveries();
                (d.len() >= n).then_some(d)
            })
            .await
        }
    };

    // Without /local, CODE from Telegram goes to the cloud coder.
    assert_eq!(post(telegram_text(1, 51, 1, CODE)).await, 200);
    let d = sent(1).await;
    assert_eq!(
        d[0].texts.concat(),
        format!("コーディングするね。\n{PERSONA_REPLY}")
    );
    assert_eq!(r.cloud.request_count(), 1, "the control went to the cloud");

    // In a group, `/local@<our bot>` is `/local`: acknowledged, then CODE stays local.
    let group = fixtures()["group_command"].clone();
    assert_eq!(post(group.to_string()).await, 200);
    let d = sent(2).await;
    assert_eq!(d[1].to, "-1002003004005");
    let session = "telegram:group:-1002003004005";
    let renders = r.of_type(session, RenderRequested::EVENT_TYPE).await;
    assert_eq!(payload(&renders)["notice"], "local_on");
    let mut code = group["message"].clone();
    code["message_id"] = json!(89);
    code["text"] = json!(CODE);
    assert_eq!(post(telegram_update(873_201_004, code)).await, 200);
    let d = sent(3).await;
    assert_eq!(d[2].to, "-1002003004005");
    let render = payload(&r.of_type(session, RenderRequested::EVENT_TYPE).await);
    assert_eq!(render["notice"], "cloud_required", "{render}");
    assert_eq!(
        d[2].texts.concat(),
        PERSONA_REPLY,
        "blocked CODE is not announced"
    );
    assert_eq!(r.cloud.request_count(), 1, "nothing more reached the cloud");
    // In a group the reply quotes the message it answers.
    let quoted: Vec<Value> = telegram
        .calls()
        .into_iter()
        .filter(|call| call.path.ends_with("/sendMessage"))
        .map(|call| call.body["reply_parameters"]["message_id"].clone())
        .collect();
    assert_eq!(quoted, [Value::Null, json!(88), json!(89)]);
    r.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nul_bytes_and_malformed_json_are_refused_cleanly() {
    let c = ChannelApp::spawn(&[("GHOST_GATEWAY__MAX_BODY_BYTES", "4096")]).await;
    let good = telegram_text(10, 61, 1, "hello");
    let cases: Vec<(&str, Vec<u8>, u16, &str)> = vec![
        (
            "a raw NUL byte in a string",
            good.replace("hello", "he\u{0}llo").into_bytes(),
            400,
            "invalid_json",
        ),
        (
            "truncated",
            br#"{"update_id":11,"message":{"message_id":1,"chat":{"#.to_vec(),
            400,
            "invalid_json",
        ),
        ("not an update", b"[]".to_vec(), 400, "invalid_json"),
        (
            "invalid UTF-8",
            b"{\"update_id\":12,\"message\":{\"text\":\"\xff\xfe\"}}".to_vec(),
            400,
            "invalid_json",
        ),
        (
            "a chat id that is not a number",
            good.replace("\"id\":61", "\"id\":\"61\"").into_bytes(),
            400,
            "invalid_json",
        ),
        (
            "over the body limit",
            telegram_text(13, 61, 2, &"x".repeat(5000)).into_bytes(),
            413,
            "body_too_large",
        ),
    ];
    for (case, body, status, code) in cases {
        let r = c.post_telegram(body, Some(TELEGRAM_SECRET)).await;
        assert_refused(r, status, code, case).await;
    }
    // The secret token is checked before the body is read as JSON.
    let r = c.post_telegram(&b"{not json"[..], Some("wrong")).await;
    assert_refused(r, 401, "invalid_signature", "unsigned and malformed").await;
    settle().await;
    assert_eq!(c.app.event_count().await, 0, "nothing stored");
    assert!(c.telegram.calls().is_empty(), "nothing sent");
    c.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_escaped_nul_in_a_telegram_message_is_stored_once_and_answered() {
    let c = ChannelApp::spawn(&[]).await;
    c.app.llm.set_default(Script::reply("うけとったよ"));
    let body = telegram_text(20, 71, 5, "a\u{0}b");
    assert_eq!(
        c.post_telegram_signed(&body).await,
        200,
        "no 500: Telegram would redeliver for hours"
    );
    c.wait_events("ReplyDelivered", 1).await;
    assert_eq!(c.post_telegram_signed(&body).await, 200, "the redelivery");
    settle().await;
    let msgs = c.events_of("UserMessageReceived").await;
    assert_eq!(msgs.len(), 1, "stored once: {msgs:?}");
    assert_eq!(msgs[0]["text"], "a\u{FFFD}b");
    assert_eq!(msgs[0]["_replaced_characters"]["count"], 1);
    assert_eq!(c.telegram.deliveries().len(), 1);
    c.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_to_two_updates_of_one_chat_arrive_in_the_order_of_the_messages() {
    let c = ChannelApp::spawn(&[]).await;
    c.answer_the_first_question_slowly();
    // Two messages of one chat, in two updates, as Telegram sends them.
    assert_eq!(
        c.post_telegram_signed(&telegram_text(30, 81, 1, "first question"))
            .await,
        200
    );
    assert_eq!(
        c.post_telegram_signed(&telegram_text(31, 81, 2, "second question"))
            .await,
        200
    );
    let delivered = c.telegram_deliveries(2).await;
    c.assert_written_second_shown_in_order(delivered).await;
    assert_eq!(c.wait_events("ReplyDelivered", 2).await.len(), 2);
    c.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_error_is_not_resent_and_a_rate_limit_is_waited_out() {
    let c = ChannelApp::spawn(&[]).await;
    c.app.llm.set_default(Script::reply("hello back"));
    c.telegram
        .script_send(ghost_testkit::fake_platforms::Scripted::rate_limited(1));
    assert_eq!(
        c.post_telegram_signed(&telegram_text(40, 91, 1, "hi"))
            .await,
        200
    );
    let delivered = c.wait_events("ReplyDelivered", 1).await;
    assert_eq!(delivered[0]["calls"], json!(["sendMessage"]));
    let statuses: Vec<u16> = c.telegram.calls().iter().map(|call| call.status).collect();
    assert_eq!(statuses, [429, 200], "waited out, then sent once");

    // A 5xx after Telegram sent it: never sent again.
    c.telegram
        .script_send(ghost_testkit::fake_platforms::Scripted::fail_after_delivery(500));
    assert_eq!(
        c.post_telegram_signed(&telegram_text(41, 92, 1, "hi"))
            .await,
        200
    );
    let failed = c.wait_events("ReplyFailed", 1).await;
    assert_eq!(failed[0]["code"], "outcome_unknown");
    settle().await;
    let to_92 = c
        .telegram
        .deliveries()
        .into_iter()
        .filter(|d| d.to == "92")
        .count();
    assert_eq!(to_92, 1, "shown once, not resent");
    c.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bot_token_never_reaches_a_log_line_an_event_or_a_dead_letter() {
    let logs = capture();
    // Telegram out of reach: every Bot API call fails with its URL (the token in it) in
    // the transport error.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let nowhere = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let c = ChannelApp::spawn(&[
        ("GHOST_TELEGRAM__API_BASE", &nowhere),
        ("GHOST_BUS__MAX_DELIVER", "2"),
        ("GHOST_BUS__ACK_WAIT_SECS", "1"),
    ])
    .await;
    c.app.llm.set_default(Script::reply("hello"));
    assert_eq!(
        c.post_telegram_signed(&telegram_text(50, 95, 1, "hi"))
            .await,
        200
    );
    let photo = fixtures()["private_photo"].to_string();
    assert_eq!(c.post_telegram_signed(&photo).await, 200);

    // The reply could not go out; the photo could not be fetched (the turn went on without).
    let failed = c.wait_events("ReplyFailed", 2).await;
    assert!(failed.iter().all(|f| f["code"] == "gave_up"), "{failed:?}");
    let msgs = c.events_of("UserMessageReceived").await;
    assert!(
        msgs.iter()
            .any(|m| m["text"] == format!("これ見て\n{}", ghost_gateway::media::IMAGE_FAILED_TEXT)),
        "{msgs:?}"
    );
    let reason = c.dead_letter_reason("gateway_ImageReceived").await;
    assert!(!reason.is_empty());

    let stored: Vec<String> = sqlx::query_scalar("SELECT payload::text FROM events")
        .fetch_all(c.app.store.pool())
        .await
        .unwrap();
    // The token's secret half, which no id or name of Ghost's contains.
    let secret = FAKE_TELEGRAM_TOKEN.split(':').nth(1).unwrap();
    for (place, text) in [
        ("the logs", logs.text()),
        ("the events", stored.join("\n")),
        ("the dead letter", reason),
    ] {
        assert!(
            !text.contains(secret),
            "the bot token is in {place}: {text}"
        );
    }
    assert!(
        logs.text().contains("reply not delivered"),
        "the failures were logged"
    );
    c.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_autonomy_message_is_pushed_once_to_the_bound_telegram_chat() {
    let search = FakeSearch::start().await.unwrap();
    support::autonomy::tea_hits(&search);
    let url = search.search_url();
    let c = ChannelApp::spawn_adjusted(
        &ServiceName::ALL,
        &[("GHOST_AUTONOMY__INTERVAL_SECS", "0")],
        move |c| {
            c.ghost.web.search_url = Some(url);
            c.ghost.autonomy.push = vec![PushBinding {
                session_id: "console".into(),
                line: None,
                slack: None,
                telegram: Some(TelegramPushTarget {
                    chat_id: -100_777,
                    message_thread_id: Some(5),
                }),
            }];
        },
    )
    .await;
    let said = "煎茶は70度くらいで一分がいいみたいだよ。";
    let decision =
        support::autonomy::decision("web_access", json!({"query": "tea"}), "chat", "report");
    c.app
        .llm
        .push_for_model(WORKER_MODEL, Script::reply(&decision));
    c.app.reply(Script::reply(said));
    c.app.tick().await;

    let pushed = c.wait_events(AutonomyMessagePushed::EVENT_TYPE, 1).await;
    assert_eq!(pushed[0]["platform"], "telegram");
    assert_eq!(pushed[0]["calls"], json!(["sendMessage"]));
    let d = c.telegram_deliveries(1).await;
    assert_eq!(
        (d[0].to.as_str(), d[0].thread_ts.as_deref()),
        ("-100777", Some("5"))
    );
    assert_eq!(d[0].texts, vec![said.to_owned()]);

    // Redelivered to this gateway's pusher and to a restarted one: nothing is sent again.
    let message = c
        .app
        .session_events("console")
        .await
        .into_iter()
        .rfind(|e| e.event_type == "AutonomyMessageRendered")
        .expect("the autonomy message");
    let ctx = c.app.stack.ctx.for_service("gateway");
    let pusher = AutonomyPusher::new(Arc::new(Deliverer::new(ctx).unwrap()));
    for _ in 0..2 {
        pusher.handle(message.clone()).await.unwrap();
    }
    settle().await;
    assert_eq!(c.telegram.deliveries().len(), 1, "pushed once");
    assert_eq!(
        c.events_of(AutonomyMessagePushed::EVENT_TYPE).await.len(),
        1
    );
    assert!(c.line.deliveries().is_empty() && c.slack.deliveries().is_empty());
    c.cleanup().await;
}

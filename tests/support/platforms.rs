//! LINE, Slack and Telegram test helpers: a Ghost wired to fake platform APIs, and signed
//! requests.

use std::time::Duration;

use ghost::stack::ServiceName;
use ghost_gateway::{line, slack};
use ghost_testkit::fake_llm::Script;
use ghost_testkit::fake_platforms::{FakeLine, FakeSlack, FakeTelegram, FAKE_TELEGRAM_TOKEN};

use super::TestApp;

/// LINE channel secret of the fixture vectors (tests/fixtures/webhook_signatures.json).
pub const LINE_SECRET: &str = "0123456789abcdef0123456789abcdef";
/// Slack signing secret of the fixture vectors.
pub const SLACK_SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
/// Our Slack bot's user id in tests.
pub const BOT: &str = "UBOT";
/// The secret token given to Telegram's `setWebhook` in tests.
pub const TELEGRAM_SECRET: &str = "tg-webhook_Secret-0123456789";
/// Our Telegram bot's username in tests.
pub const TELEGRAM_BOT: &str = "GhostTestBot";

/// A Ghost whose LINE, Slack and Telegram endpoints are fakes.
pub struct ChannelApp {
    /// The app.
    pub app: TestApp,
    /// Fake LINE (API + content).
    pub line: FakeLine,
    /// Fake Slack Web API.
    pub slack: FakeSlack,
    /// Fake Telegram Bot API (and file host).
    pub telegram: FakeTelegram,
}

impl ChannelApp {
    /// Every service in-process, fakes wired in, `extra` overrides last.
    pub async fn spawn(extra: &[(&str, &str)]) -> ChannelApp {
        Self::spawn_services(&ServiceName::ALL, extra).await
    }

    /// Only `services` in-process (others may run as child processes), fakes wired in.
    pub async fn spawn_services(services: &[ServiceName], extra: &[(&str, &str)]) -> ChannelApp {
        Self::spawn_adjusted(services, extra, |_| {}).await
    }

    /// As [`ChannelApp::spawn_services`], the configuration then changed by `adjust` (for
    /// lists an environment variable cannot express).
    pub async fn spawn_adjusted(
        services: &[ServiceName],
        extra: &[(&str, &str)],
        adjust: impl FnOnce(&mut ghost_shared::config::Config),
    ) -> ChannelApp {
        let line = FakeLine::start().await.expect("fake line");
        let slack = FakeSlack::start().await.expect("fake slack");
        let telegram = FakeTelegram::start().await.expect("fake telegram");
        let (lb, sb, tb) = (line.base_url(), slack.base_url(), telegram.base_url());
        let files = format!("{sb}/files-pri/");
        let telegram_vars = telegram_vars(&tb);
        let mut vars: Vec<(&str, &str)> = vec![
            ("GHOST_LINE_CHANNEL_SECRET", LINE_SECRET),
            ("GHOST_LINE_CHANNEL_ACCESS_TOKEN", "line-access-token"),
            ("GHOST_SLACK_SIGNING_SECRET", SLACK_SECRET),
            ("GHOST_SLACK_BOT_TOKEN", "xoxb-test"),
            ("GHOST_LINE__API_BASE", &lb),
            ("GHOST_LINE__DATA_API_BASE", &lb),
            ("GHOST_LINE__RETRY_BASE_DELAY_MS", "20"),
            ("GHOST_SLACK__API_BASE", &sb),
            ("GHOST_SLACK__BOT_USER_ID", BOT),
            ("GHOST_SLACK__RETRY_DEFAULT_DELAY_MS", "20"),
            ("GHOST_SLACK__FILES_BASE", &files),
        ];
        vars.extend(telegram_vars.iter().map(|(k, v)| (*k, v.as_str())));
        vars.extend_from_slice(extra);
        let app = TestApp::spawn_adjusted(services, &vars, adjust).await;
        ChannelApp {
            app,
            line,
            slack,
            telegram,
        }
    }

    /// POSTs a LINE webhook with `signature` (computed when `None` is not wanted: use
    /// [`line_sign`]).
    pub async fn post_line(&self, body: &str, signature: Option<&str>) -> reqwest::Response {
        let mut req = self
            .app
            .http
            .post(format!("{}/webhooks/line", self.app.base_url))
            .header("content-type", "application/json")
            .body(body.to_owned());
        if let Some(s) = signature {
            req = req.header("x-line-signature", s);
        }
        req.send().await.expect("line webhook request")
    }

    /// POSTs a correctly signed LINE webhook.
    pub async fn post_line_signed(&self, body: &str) -> u16 {
        self.post_line(body, Some(&line_sign(body)))
            .await
            .status()
            .as_u16()
    }

    /// POSTs a Slack request with the given timestamp/signature headers and retry number.
    pub async fn post_slack(
        &self,
        body: &str,
        timestamp: Option<&str>,
        signature: Option<&str>,
        retry_num: Option<u32>,
    ) -> reqwest::Response {
        let mut req = self
            .app
            .http
            .post(format!("{}/webhooks/slack", self.app.base_url))
            .header("content-type", "application/json")
            .body(body.to_owned());
        if let Some(t) = timestamp {
            req = req.header("x-slack-request-timestamp", t);
        }
        if let Some(s) = signature {
            req = req.header("x-slack-signature", s);
        }
        if let Some(n) = retry_num {
            req = req
                .header("x-slack-retry-num", n.to_string())
                .header("x-slack-retry-reason", "http_timeout");
        }
        req.send().await.expect("slack request")
    }

    /// POSTs a correctly signed Slack request (timestamp now).
    pub async fn post_slack_signed(&self, body: &str, retry_num: Option<u32>) -> u16 {
        let ts = chrono::Utc::now().timestamp().to_string();
        let sig = slack_sign(&ts, body);
        self.post_slack(body, Some(&ts), Some(&sig), retry_num)
            .await
            .status()
            .as_u16()
    }

    /// POSTs a Telegram update with `secret` in `X-Telegram-Bot-Api-Secret-Token` (none:
    /// no header).
    pub async fn post_telegram(
        &self,
        body: impl Into<reqwest::Body>,
        secret: Option<&str>,
    ) -> reqwest::Response {
        post_telegram(&self.app, body, secret).await
    }

    /// POSTs a Telegram update with the right secret token.
    pub async fn post_telegram_signed(&self, body: &str) -> u16 {
        self.post_telegram(body.to_owned(), Some(TELEGRAM_SECRET))
            .await
            .status()
            .as_u16()
    }

    /// Waits until fake Telegram has sent at least `n` messages.
    pub async fn telegram_deliveries(
        &self,
        n: usize,
    ) -> Vec<ghost_testkit::fake_platforms::Delivery> {
        ghost_testkit::testing::eventually(Duration::from_secs(30), "Telegram messages", || async {
            let d = self.telegram.deliveries();
            (d.len() >= n).then_some(d)
        })
        .await
    }

    /// Waits until fake LINE has at least `n` deliveries.
    pub async fn line_deliveries(&self, n: usize) -> Vec<ghost_testkit::fake_platforms::Delivery> {
        ghost_testkit::testing::eventually(Duration::from_secs(30), "LINE deliveries", || async {
            let d = self.line.deliveries();
            (d.len() >= n).then_some(d)
        })
        .await
    }

    /// Waits until fake Slack has at least `n` posts.
    pub async fn slack_deliveries(&self, n: usize) -> Vec<ghost_testkit::fake_platforms::Delivery> {
        ghost_testkit::testing::eventually(Duration::from_secs(30), "Slack posts", || async {
            let d = self.slack.deliveries();
            (d.len() >= n).then_some(d)
        })
        .await
    }

    /// Events of one type across the store.
    pub async fn events_of(&self, event_type: &str) -> Vec<serde_json::Value> {
        sqlx::query_scalar("SELECT payload FROM events WHERE event_type = $1 ORDER BY position")
            .bind(event_type)
            .fetch_all(self.app.store.pool())
            .await
            .expect("events of type")
    }

    /// Waits until `n` events of `event_type` exist.
    pub async fn wait_events(&self, event_type: &str, n: usize) -> Vec<serde_json::Value> {
        // While they keep coming, however slowly; a step that failed for the moment is
        // delivered again after a backoff of up to 12.8 s a try, several tries in a row.
        let stall = Duration::from_secs(120);
        ghost_testkit::testing::progressing(stall, event_type, n, || async {
            self.events_of(event_type).await.len()
        })
        .await;
        self.events_of(event_type).await
    }

    /// The reason the dead letter of consumer `consumer` (`gateway_LineImageReceived`) gave.
    pub async fn dead_letter_reason(&self, consumer: &str) -> String {
        let bus = self.app.stack.ctx.bus();
        let dlq = bus
            .jetstream()
            .get_stream(format!("{}_DLQ", bus.config().stream_name))
            .await
            .expect("the dead-letter stream");
        let letter = dlq
            .get_last_raw_message_by_subject(&bus.dead_letter_subject(consumer))
            .await
            .expect("a dead letter");
        letter
            .headers
            .get("Ghost-Dead-Letter-Reason")
            .map(|v| v.as_str().to_owned())
            .unwrap_or_default()
    }

    /// Makes the persona answer "first question" with "answer one" after two seconds and
    /// "second question" at once with "answer two" (so the second reply is written first).
    pub fn answer_the_first_question_slowly(&self) {
        self.app.llm.set_responder(|r| {
            let said = r.last_user_text().unwrap_or_default();
            if said.contains("first question") {
                Script::reply("answer one").with_delay(Duration::from_millis(2000))
            } else if said.contains("second question") {
                Script::reply("answer two")
            } else {
                Script::reply("ok")
            }
        });
    }

    /// The image the model was sent (its `image_url`, a data URI), if any.
    pub fn image_url_sent(&self) -> Option<String> {
        let requests = self.app.llm.requests().into_iter();
        let completions = requests.filter(|r| r.path.ends_with("/chat/completions"));
        completions.into_iter().find_map(|r| {
            let last = r.body["messages"].as_array()?.last()?.clone();
            let parts = last["content"].as_array()?.clone();
            let image = parts.into_iter().find(|p| p["type"] == "image_url")?;
            image["image_url"]["url"].as_str().map(str::to_owned)
        })
    }

    /// Asserts that the reply to "second question" was written before the one to "first
    /// question" ([`Self::answer_the_first_question_slowly`]; else a test shows nothing),
    /// and that `delivered` (what the platform showed) has them in message order.
    pub async fn assert_written_second_shown_in_order(
        &self,
        delivered: Vec<ghost_testkit::fake_platforms::Delivery>,
    ) {
        let replies = self.wait_events("AssistantReplied", 2).await;
        let written: Vec<&str> = replies.iter().filter_map(|r| r["text"].as_str()).collect();
        assert_eq!(
            written,
            ["answer two", "answer one"],
            "written second first"
        );
        let shown: Vec<Vec<String>> = delivered.into_iter().map(|d| d.texts).collect();
        assert_eq!(shown, [vec!["answer one"], vec!["answer two"]]);
    }

    /// Stops everything and removes the database (media included) and streams.
    pub async fn cleanup(self) {
        self.app.cleanup().await;
    }
}

/// `X-Line-Signature` for `body` under the test secret.
pub fn line_sign(body: &str) -> String {
    line::signature::sign(LINE_SECRET.as_bytes(), body.as_bytes()).expect("sign")
}

/// `X-Slack-Signature` for `body` at `ts` under the test secret.
pub fn slack_sign(ts: &str, body: &str) -> String {
    slack::signature::sign(SLACK_SECRET.as_bytes(), ts, body.as_bytes()).expect("sign")
}

/// A LINE webhook body with one text message from user `user` in a 1:1 chat.
pub fn line_text(
    event_id: &str,
    user: &str,
    text: &str,
    reply_token: &str,
    redelivery: bool,
) -> String {
    serde_json::json!({
        "destination": "Ubot",
        "events": [line_text_event(event_id, user, text, reply_token, redelivery)]
    })
    .to_string()
}

/// One LINE text message event.
pub fn line_text_event(
    event_id: &str,
    user: &str,
    text: &str,
    reply_token: &str,
    redelivery: bool,
) -> serde_json::Value {
    serde_json::json!({
        "type": "message", "mode": "active", "timestamp": 1_762_000_000_000_i64,
        "webhookEventId": event_id,
        "deliveryContext": {"isRedelivery": redelivery},
        "source": {"type": "user", "userId": user},
        "replyToken": reply_token,
        "message": {"id": format!("m-{event_id}"), "type": "text", "quoteToken": "q", "text": text}
    })
}

/// A Slack `event_callback` with a message-like inner event.
pub fn slack_event(event_id: &str, inner: serde_json::Value) -> String {
    serde_json::json!({
        "type": "event_callback", "team_id": "T1", "api_app_id": "A1",
        "event_id": event_id, "event_time": 1_700_000_000,
        "event": inner
    })
    .to_string()
}

/// The settings wiring Ghost's Telegram to a fake at `base` (`telegram.api_base`).
pub fn telegram_vars(base: &str) -> [(&'static str, String); 5] {
    [
        ("GHOST_TELEGRAM_BOT_TOKEN", FAKE_TELEGRAM_TOKEN.to_owned()),
        ("GHOST_TELEGRAM_SECRET_TOKEN", TELEGRAM_SECRET.to_owned()),
        ("GHOST_TELEGRAM__API_BASE", base.to_owned()),
        ("GHOST_TELEGRAM__BOT_USERNAME", TELEGRAM_BOT.to_owned()),
        ("GHOST_TELEGRAM__RETRY_DEFAULT_DELAY_MS", "20".to_owned()),
    ]
}

/// POSTs a Telegram update to `app`'s gateway with `secret` in the secret-token header.
pub async fn post_telegram(
    app: &TestApp,
    body: impl Into<reqwest::Body>,
    secret: Option<&str>,
) -> reqwest::Response {
    let mut req = app
        .http
        .post(format!("{}/webhooks/telegram", app.base_url))
        .header("content-type", "application/json")
        .body(body);
    if let Some(s) = secret {
        req = req.header("x-telegram-bot-api-secret-token", s);
    }
    req.send().await.expect("telegram webhook request")
}

/// A Telegram update carrying `message`.
pub fn telegram_update(update_id: i64, message: serde_json::Value) -> String {
    serde_json::json!({ "update_id": update_id, "message": message }).to_string()
}

/// A text message `message_id` from user `user` in their private chat with the bot.
pub fn telegram_text(update_id: i64, user: i64, message_id: i64, text: &str) -> String {
    telegram_update(
        update_id,
        serde_json::json!({
            "message_id": message_id, "date": 1_762_000_000,
            "from": {"id": user, "is_bot": false, "first_name": "Ren"},
            "chat": {"id": user, "type": "private", "first_name": "Ren"},
            "text": text
        }),
    )
}

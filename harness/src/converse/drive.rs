//! Sends the script's turns the way people do: `POST /api/chat` with `user_id` (the SSE
//! stream read to its end) and signed LINE webhooks (1:1 and a group, the group's messages
//! mentioning the bot), one turn after another, and moves the clock between days with
//! `POST /api/clock/advance`. Each turn waits for its outcome by progress (the store or the
//! model doing something), never for a fixed time: a loaded machine is slow, not failing.

use std::future::Future;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use futures::StreamExt;
use ghost_testkit::fake_platforms::FakeLine;
use ghost_testkit::model_recorder::Recorder;
use serde::Serialize;
use serde_json::{json, Value};
use sqlx::PgPool;
use uuid::Uuid;

use super::script::{Turn, Via, GROUP_ID};

/// The session of Mina's `/api/chat` conversation.
pub const CHAT_SESSION: &str = "converse-mina";

/// How a turn ended, from the store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    /// `AssistantReplied`, ended by the model.
    Completed,
    /// `AssistantReplied` with `cut` (budget, repetition, time left, interrupted).
    Cut {
        /// `AssistantReplied.cut`.
        reason: String,
    },
    /// `RenderFailed`.
    Failed {
        /// Its code.
        code: String,
    },
    /// `TurnTimedOut`.
    TimedOut,
}

/// One turn as it went.
#[derive(Debug, Clone, Serialize)]
pub struct Sent {
    /// The `UserMessageReceived` of the message.
    pub user_event: Uuid,
    /// The speaker id it was stored with.
    pub speaker: String,
    /// POST → first token event (`/api/chat`), or webhook → first delivery at the fake LINE.
    pub first_ms: Option<f64>,
    /// Whether reply text reached the person before the outcome (`/api/chat` tokens, or a
    /// LINE delivery).
    pub shown: bool,
    /// How it ended.
    pub outcome: Outcome,
    /// The reply's text (empty unless it replied).
    pub reply: String,
}

/// The connections a run drives Ghost through.
pub struct Driver {
    /// The gateway, `http://host:port`.
    pub base: String,
    /// Its API token.
    pub token: String,
    /// The fake LINE the replies are delivered to.
    pub line: FakeLine,
    /// The run's database.
    pub pool: PgPool,
    /// The recorder in front of the model (its exchanges are progress too).
    pub recorder: Recorder,
    /// How long nothing may happen (no event stored, no model answer) before a wait fails.
    pub stall: Duration,
    /// The HTTP client.
    pub http: reqwest::Client,
}

impl Driver {
    /// Moves the system's clock forward by `days`.
    pub async fn advance_days(&self, days: u32) -> Result<()> {
        let response = self
            .http
            .post(format!("{}/api/clock/advance", self.base))
            .bearer_auth(&self.token)
            .json(&json!({ "secs": f64::from(days) * 86_400.0 }))
            .send()
            .await?;
        if !response.status().is_success() {
            bail!("clock advance: HTTP {}", response.status());
        }
        Ok(())
    }

    /// Sends turn `index` and waits for its outcome.
    pub async fn send(&self, index: usize, turn: &Turn) -> Result<Sent> {
        let session = session_of(turn);
        let before = self.position().await?;
        let started = Instant::now();
        let (first, streamed) = match turn.said.via {
            Via::Chat => self.chat(turn).await?,
            Via::LineDirect | Via::LineGroup => self.line(index, turn, started).await?,
        };
        let pool = &self.pool;
        let (user_event, speaker): (Uuid, String) = self
            .until("the message stored", || async {
                Ok(sqlx::query_as(
                    "SELECT event_id, payload->>'speaker' FROM events \
                     WHERE event_type = 'UserMessageReceived' AND payload->>'session_id' = $1 \
                     AND position > $2 ORDER BY position LIMIT 1",
                )
                .bind(&session)
                .bind(before)
                .fetch_optional(pool)
                .await?)
            })
            .await?;
        let (kind, payload): (String, Value) = self
            .until("the turn's outcome", || async {
                Ok(sqlx::query_as(
                    "SELECT event_type, payload FROM events WHERE event_type IN \
                     ('AssistantReplied', 'RenderFailed', 'TurnTimedOut') \
                     AND payload->>'user_event_id' = $1 ORDER BY position LIMIT 1",
                )
                .bind(user_event.to_string())
                .fetch_optional(pool)
                .await?)
            })
            .await?;
        let text = |k: &str| payload[k].as_str().unwrap_or_default().to_owned();
        let outcome = match kind.as_str() {
            "AssistantReplied" => match payload["cut"].as_str() {
                Some(reason) => Outcome::Cut {
                    reason: reason.to_owned(),
                },
                None => Outcome::Completed,
            },
            "RenderFailed" => Outcome::Failed { code: text("code") },
            _ => Outcome::TimedOut,
        };
        let reply = if kind == "AssistantReplied" {
            text("text")
        } else {
            String::new()
        };
        Ok(Sent {
            user_event,
            speaker,
            first_ms: first.map(|d| d.as_secs_f64() * 1e3),
            shown: streamed,
            outcome,
            reply,
        })
    }

    /// `/api/chat`: the time to the first token event, and whether one came.
    async fn chat(&self, turn: &Turn) -> Result<(Option<Duration>, bool)> {
        let started = Instant::now();
        let response = self
            .http
            .post(format!("{}/api/chat", self.base))
            .bearer_auth(&self.token)
            .json(&json!({
                "session_id": CHAT_SESSION,
                "user_id": turn.who.speaker(),
                "text": turn.said.text,
            }))
            .send()
            .await?;
        if !response.status().is_success() {
            bail!("/api/chat: HTTP {}", response.status());
        }
        let mut body = response.bytes_stream();
        let (mut buffer, mut first) = (String::new(), None);
        while let Some(chunk) = body.next().await {
            buffer.push_str(&String::from_utf8_lossy(&chunk?));
            while let Some(end) = buffer.find("\n\n") {
                let block: String = buffer.drain(..end + 2).collect();
                if first.is_none() && block.lines().any(|l| l.trim() == "event: token") {
                    first = Some(started.elapsed());
                }
            }
        }
        Ok((first, first.is_some()))
    }

    /// A signed LINE webhook: the time to the first delivery at the fake LINE after it.
    async fn line(
        &self,
        index: usize,
        turn: &Turn,
        started: Instant,
    ) -> Result<(Option<Duration>, bool)> {
        let delivered = self.line.deliveries().len();
        let body = line_body(index, turn).to_string();
        let signature = ghost_gateway::line::signature::sign(
            super::env::LINE_SECRET.as_bytes(),
            body.as_bytes(),
        )?;
        let response = self
            .http
            .post(format!("{}/webhooks/line", self.base))
            .header("content-type", "application/json")
            .header("x-line-signature", signature)
            .body(body)
            .send()
            .await?;
        if !response.status().is_success() {
            bail!("LINE webhook: HTTP {}", response.status());
        }
        let line = &self.line;
        self.until("a LINE delivery", || async {
            Ok((line.deliveries().len() > delivered).then_some(()))
        })
        .await?;
        Ok((Some(started.elapsed()), true))
    }

    /// The store's newest position.
    async fn position(&self) -> Result<i64> {
        Ok(
            sqlx::query_scalar("SELECT COALESCE(max(position), 0) FROM events")
                .fetch_one(&self.pool)
                .await?,
        )
    }

    /// Polls `check` until it yields, failing only when neither the store nor the model has
    /// done anything for [`Driver::stall`].
    pub(crate) async fn until<T, F, Fut>(&self, what: &str, mut check: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<Option<T>>>,
    {
        let mut seen = (self.position().await?, self.recorder.exchanges().len());
        let mut since = Instant::now();
        loop {
            if let Some(v) = check().await? {
                return Ok(v);
            }
            let now = (self.position().await?, self.recorder.exchanges().len());
            if now != seen {
                (seen, since) = (now, Instant::now());
            } else if since.elapsed() > self.stall {
                return Err(anyhow::anyhow!("nothing happened for {:?}", self.stall))
                    .context(format!("waiting for {what}"));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// The conversation a turn belongs to.
pub fn session_of(turn: &Turn) -> String {
    match turn.said.via {
        Via::Chat => CHAT_SESSION.to_owned(),
        Via::LineDirect => format!("line:user:{}", turn.who.speaker()),
        Via::LineGroup => format!("line:group:{GROUP_ID}"),
    }
}

/// The webhook body of a LINE turn; in the group the text starts with the bot's mention.
fn line_body(index: usize, turn: &Turn) -> Value {
    let user = turn.who.speaker();
    let (source, text, mention) = match turn.said.via {
        Via::LineGroup => (
            json!({"type": "group", "groupId": GROUP_ID, "userId": user}),
            format!("@Kuro {}", turn.said.text),
            json!({"mentionees": [{"index": 0, "length": 5, "type": "user", "isSelf": true}]}),
        ),
        _ => (
            json!({"type": "user", "userId": user}),
            turn.said.text.to_owned(),
            Value::Null,
        ),
    };
    let mut message =
        json!({"id": format!("m{index}"), "type": "text", "quoteToken": "q", "text": text});
    if !mention.is_null() {
        message["mention"] = mention;
    }
    json!({
        "destination": "Ubot",
        "events": [{
            "type": "message", "mode": "active",
            "timestamp": chrono::Utc::now().timestamp_millis(),
            "webhookEventId": format!("converse-{index}"),
            "deliveryContext": {"isRedelivery": false},
            "source": source,
            "replyToken": format!("reply-{index}"),
            "message": message,
        }]
    })
}

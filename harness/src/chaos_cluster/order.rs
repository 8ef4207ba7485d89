//! `ghost-harness chaos --cluster --order-pairs N`: per-conversation order across hosts. Each pair
//! is `/local` then a code paste from one LINE user: half in one webhook, half as two
//! webhooks back to back, the second through the other host's gateway. The router runs on
//! both hosts. The dictionary (`config/routing.yaml`) and the fake classifier send the
//! paste to CODE, so a router that missed the `/local` before it would call the cloud; the
//! fake cloud counts what reaches it (zero is the aim). One host's version:
//! `tests/conversation_order.rs`.

use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use futures::future::join_all;
use ghost_testkit::fake_llm::FakeLlm;
use ghost_testkit::scenarios::local_then_code::CODE_PASTE;
use ghost_testkit::testing::TestEnv;
use serde::Serialize;
use serde_json::{json, Value};

use super::{ClusterReport, HOSTS};
use crate::chaos::LINE_SECRET;

/// Figures of the order check.
#[derive(Debug, Clone, Serialize)]
pub struct OrderFigures {
    /// Pairs sent.
    pub pairs: usize,
    /// Pairs in one webhook.
    pub batched: usize,
    /// Pairs as two webhooks, one per host.
    pub back_to_back: usize,
    /// Route decisions stored for the pairs' conversations (two per pair expected).
    pub decisions: usize,
    /// Turns closed (replied or failed; two per pair expected).
    pub answered: usize,
    /// Route decisions without `local_only`.
    pub local_only_lost: usize,
    /// Chat requests that reached the fake cloud.
    pub cloud_calls: usize,
}

impl OrderFigures {
    /// Every message decided and answered under the flag, nothing to the cloud.
    pub fn kept(&self) -> bool {
        self.decisions == 2 * self.pairs
            && self.answered == 2 * self.pairs
            && self.local_only_lost == 0
            && self.cloud_calls == 0
    }
}

fn line_event(id: &str, user: &str, text: &str) -> Value {
    json!({
        "type": "message", "mode": "active", "timestamp": 1_762_000_000_000_i64,
        "webhookEventId": id,
        "deliveryContext": {"isRedelivery": false},
        "source": {"type": "user", "userId": user},
        "replyToken": format!("rt-{id}"),
        "message": {"id": format!("m-{id}"), "type": "text", "quoteToken": "q", "text": text}
    })
}

/// Posts one signed LINE webhook until a gateway acknowledges it (a minute at most).
async fn post(client: &reqwest::Client, base: &str, events: Vec<Value>) -> Result<()> {
    let body = json!({ "destination": "Ubot", "events": events }).to_string();
    let sig = ghost_gateway::line::signature::sign(LINE_SECRET.as_bytes(), body.as_bytes())
        .map_err(|e| anyhow::anyhow!("sign: {e}"))?;
    let give_up = Instant::now() + Duration::from_secs(60);
    loop {
        let r = client
            .post(format!("{base}/webhooks/line"))
            .header("x-line-signature", &sig)
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .await;
        if r.is_ok_and(|r| r.status().is_success()) {
            return Ok(());
        }
        if Instant::now() > give_up {
            bail!("no gateway accepted a webhook at {base}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Sends the pairs, waits until every turn is closed, and counts.
pub async fn run(
    env: &TestEnv,
    client: &reqwest::Client,
    bases: &[String],
    pairs: usize,
    cloud: &FakeLlm,
) -> Result<ClusterReport> {
    let start = Instant::now();
    let run = uuid::Uuid::new_v4().simple().to_string()[..8].to_owned();
    let batched = pairs / 2;
    let users: Vec<String> = (0..pairs).map(|n| format!("Uorder{run}{n}")).collect();
    let sends = users.iter().enumerate().map(|(n, user)| async move {
        let (a, b) = (format!("{user}-a"), format!("{user}-b"));
        let (local, code) = (
            line_event(&a, user, "/local"),
            line_event(&b, user, CODE_PASTE),
        );
        let here = &bases[n % HOSTS];
        if n < batched {
            post(client, here, vec![local, code]).await
        } else {
            post(client, here, vec![local]).await?;
            post(client, &bases[(n + 1) % HOSTS], vec![code]).await
        }
    });
    for r in join_all(sends).await {
        r?;
    }
    let streams: Vec<String> = users
        .iter()
        .map(|u| ghost_shared::envelope::session_stream(&format!("line:user:{u}")))
        .collect();
    let store = env.store().await;
    let deadline = Instant::now() + Duration::from_secs(120);
    let answered = loop {
        let answered: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM events WHERE stream = ANY($1) \
             AND event_type IN ('AssistantReplied', 'RenderFailed')",
        )
        .bind(&streams)
        .fetch_one(store.pool())
        .await?;
        let answered = usize::try_from(answered).unwrap_or(0);
        if answered >= 2 * pairs || Instant::now() > deadline {
            break answered;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let decisions: Vec<Value> = sqlx::query_scalar(
        "SELECT payload FROM events WHERE stream = ANY($1) AND event_type = 'RouteDecided'",
    )
    .bind(&streams)
    .fetch_all(store.pool())
    .await?;
    let local_only_lost = decisions
        .iter()
        .filter(|d| d["local_only"] != json!(true))
        .count();
    // Chat calls only: each router probes the models once at start.
    let cloud_calls = cloud
        .requests()
        .into_iter()
        .filter(|r| r.path.contains("chat"))
        .count();
    Ok(ClusterReport {
        order: Some(OrderFigures {
            pairs,
            batched,
            back_to_back: pairs - batched,
            decisions: decisions.len(),
            answered,
            local_only_lost,
            cloud_calls,
        }),
        ..ClusterReport::check(start.elapsed())
    })
}

//! `GET /healthz`: every part Ghost needs, each `ok`, `degraded` or `down` — Postgres, NATS,
//! every configured model role (`llm.<role>`, the cloud coder included), the lag of every
//! durable consumer on the event stream and the cloud coder's token use this UTC day against
//! its cap (`cloud_spend`: `degraded` once the cap is used up).
//!
//! The whole is `down` (503) when Postgres, NATS or the persona's model is down (no reply can
//! be written), `degraded` (503) when any other part is not ok (e.g. the coder's cloud model:
//! CODE work fails, chat still works), `ok` (200) otherwise.

use std::collections::BTreeMap;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;
use futures::StreamExt;
use serde_json::{json, Value};

use ghost_shared::llm::LlmClient;

use crate::AppState;

/// A consumer this many events behind (pending delivery or unacknowledged) is `degraded`.
pub const LAG_DEGRADED: u64 = 100;

/// The state of one part.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum PartStatus {
    /// Works.
    Ok,
    /// Works, but behind or without an optional part.
    Degraded,
    /// Does not answer.
    Down,
}

impl PartStatus {
    fn as_str(self) -> &'static str {
        match self {
            PartStatus::Ok => "ok",
            PartStatus::Degraded => "degraded",
            PartStatus::Down => "down",
        }
    }
}

fn part<E: std::fmt::Display>(r: Result<(), E>) -> (PartStatus, Value) {
    match r {
        Ok(()) => (PartStatus::Ok, json!({ "status": "ok" })),
        Err(e) => (
            PartStatus::Down,
            json!({ "status": "down", "error": ghost_shared::masking::mask_secrets(&e.to_string()) }),
        ),
    }
}

/// The model clients `/healthz` probes: one per configured role (the coder with the cloud
/// key), built once at start.
pub fn model_clients(config: &ghost_shared::config::Config) -> Vec<(String, LlmClient)> {
    let mut roles: Vec<_> = config.ghost.llm.iter().collect();
    roles.sort_by_key(|(role, _)| role.as_str());
    roles
        .into_iter()
        .filter_map(|(role, cfg)| {
            let key = (role == "coder")
                .then(|| {
                    config
                        .secrets
                        .cloud_api_key
                        .as_ref()
                        .map(|k| k.expose().to_owned())
                })
                .flatten();
            match LlmClient::new(cfg.clone(), key) {
                Ok(client) => Some((role.clone(), client)),
                Err(e) => {
                    tracing::warn!(%role, error = %e, "no health probe for this model");
                    None
                }
            }
        })
        .collect()
}

/// Every durable consumer on the event stream with its lag.
async fn consumers(state: &AppState) -> (PartStatus, Value) {
    let bus = state.ctx.bus();
    let stream = match bus.jetstream().get_stream(&bus.config().stream_name).await {
        Ok(s) => s,
        Err(e) => {
            return (
                PartStatus::Down,
                json!({ "status": "down", "error": e.to_string() }),
            )
        }
    };
    let mut all = BTreeMap::new();
    let mut worst = PartStatus::Ok;
    let mut infos = stream.consumers();
    while let Some(info) = infos.next().await {
        let info = match info {
            Ok(i) => i,
            Err(e) => {
                return (
                    PartStatus::Down,
                    json!({ "status": "down", "error": e.to_string() }),
                )
            }
        };
        let lag = info.num_pending + info.num_ack_pending as u64;
        let status = if lag >= LAG_DEGRADED {
            PartStatus::Degraded
        } else {
            PartStatus::Ok
        };
        worst = worst.max(status);
        all.insert(
            info.name.clone(),
            json!({
                "status": status.as_str(),
                "pending": info.num_pending,
                "ack_pending": info.num_ack_pending,
            }),
        );
    }
    (
        worst,
        json!({ "status": worst.as_str(), "lag_degraded_at": LAG_DEGRADED, "consumers": all }),
    )
}

/// The cloud coder's tokens this UTC day (from the store) against `coder.daily_token_cap`:
/// `degraded` once the cap is used up (CODE turns get a notice until 00:00 UTC, chat works).
fn spend_part(
    used: Result<ghost_shared::spend::DayUse, ghost_shared::store::StoreError>,
    cap: Option<u64>,
) -> (PartStatus, Value) {
    let used = match used {
        Ok(u) => u,
        Err(e) => return part(Err(e)),
    };
    ghost_shared::metrics::coder_tokens_today(used.prompt, used.completion);
    let status = if used.reached(cap) {
        PartStatus::Degraded
    } else {
        PartStatus::Ok
    };
    (
        status,
        json!({
            "status": status.as_str(),
            "used_today": used.total(),
            "prompt_tokens": used.prompt,
            "completion_tokens": used.completion,
            "daily_token_cap": cap,
            "resets_at": "00:00 UTC",
        }),
    )
}

/// 200 when every part is ok, 503 with each part's state otherwise.
pub async fn healthz(State(state): State<AppState>) -> impl IntoResponse {
    let probes = state.health_models.iter().map(|(role, client)| async move {
        let (status, mut v) = part(client.probe().await);
        if let Value::Object(m) = &mut v {
            m.insert("base_url".into(), json!(client.config().base_url));
            m.insert("model".into(), json!(client.config().model));
        }
        (role.clone(), status, v)
    });
    let (pg, nats, models, lag, spend) = tokio::join!(
        state.ctx.store().ping(),
        state.ctx.bus().ping(),
        futures::future::join_all(probes),
        consumers(&state),
        ghost_shared::spend::today(state.ctx.store().pool()),
    );
    let (pg_status, pg) = part(pg);
    let (nats_status, nats) = part(nats);
    let (lag_status, lag) = lag;
    let (spend_status, spend) = spend_part(spend, state.ctx.config.ghost.coder.cap());
    let mut essential = pg_status.max(nats_status);
    let mut optional = lag_status.max(spend_status);
    let mut model_parts = BTreeMap::new();
    for (role, status, v) in models {
        if role == "persona" {
            essential = essential.max(status);
        } else {
            optional = optional.max(status);
        }
        model_parts.insert(role, v);
    }
    let overall = if essential == PartStatus::Down {
        PartStatus::Down
    } else if essential.max(optional) != PartStatus::Ok {
        PartStatus::Degraded
    } else {
        PartStatus::Ok
    };
    let code = if overall == PartStatus::Ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let body = json!({
        "status": overall.as_str(),
        "checks": {
            "postgres": pg,
            "nats": nats,
            "models": model_parts,
            "consumers": lag,
            "cloud_spend": spend,
        },
    });
    (code, Json(body))
}

//! `GET /healthz`: can we reach Postgres, NATS and the persona's model?

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Json;
use serde_json::{json, Value};

use crate::AppState;

fn check<E: std::fmt::Display>(r: Result<(), E>) -> (bool, Value) {
    match r {
        Ok(()) => (true, json!({ "ok": true })),
        Err(e) => (false, json!({ "ok": false, "error": e.to_string() })),
    }
}

/// 200 when everything answers, 503 (with what failed) otherwise.
pub async fn healthz(State(state): State<AppState>) -> impl IntoResponse {
    let (pg, nats, llm) = tokio::join!(
        state.ctx.store().ping(),
        state.ctx.bus().ping(),
        state.llm.probe()
    );
    let (pg_ok, pg) = check(pg);
    let (nats_ok, nats) = check(nats);
    let (llm_ok, mut llm) = check(llm);
    if let Value::Object(m) = &mut llm {
        m.insert("base_url".into(), json!(state.llm.config().base_url));
        m.insert("model".into(), json!(state.llm.config().model));
    }
    let ok = pg_ok && nats_ok && llm_ok;
    let status = if ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let body = json!({
        "status": if ok { "ok" } else { "degraded" },
        "checks": { "postgres": pg, "nats": nats, "llm": llm },
    });
    (status, Json(body))
}

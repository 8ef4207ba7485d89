//! A fake web: a search endpoint answering the SearXNG JSON API (`GET /search?q=…&format=json`)
//! and pages served under `/pages/<name>`, each with its content type, optional delay and a
//! hit count. Every search query is recorded.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};
use tokio::task::JoinHandle;

/// One result the fake search answers with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeHit {
    /// Title.
    pub title: String,
    /// URL.
    pub url: String,
    /// SearXNG's `content` (the snippet).
    pub content: String,
}

/// A page the fake serves.
#[derive(Debug, Clone)]
struct Page {
    content_type: String,
    body: Vec<u8>,
    delay: Duration,
    hits: u64,
}

#[derive(Debug, Default)]
struct FakeState {
    hits: Vec<FakeHit>,
    queries: Vec<String>,
    search_status: Option<u16>,
    search_body: Option<String>,
    pages: HashMap<String, Page>,
}

type Shared = Arc<Mutex<FakeState>>;

fn lock(s: &Shared) -> MutexGuard<'_, FakeState> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

/// Handle to a running fake web server (stopped when dropped).
#[derive(Debug)]
pub struct FakeSearch {
    addr: SocketAddr,
    state: Shared,
    task: JoinHandle<()>,
}

impl FakeSearch {
    /// Starts the server on a free loopback port.
    pub async fn start() -> std::io::Result<Self> {
        let state: Shared = Arc::default();
        let app = Router::new()
            .route("/search", get(search))
            .route("/pages/{name}", get(page))
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::warn!(error = %e, "fake search server stopped");
            }
        });
        Ok(Self { addr, state, task })
    }

    /// `http://127.0.0.1:<port>`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The search endpoint (what `web.search_url` names).
    pub fn search_url(&self) -> String {
        format!("{}/search", self.base_url())
    }

    /// The URL of page `name`.
    pub fn page_url(&self, name: &str) -> String {
        format!("{}/pages/{name}", self.base_url())
    }

    /// Every search answers with these hits (in order) from now on.
    pub fn set_hits(&self, hits: Vec<FakeHit>) {
        lock(&self.state).hits = hits;
    }

    /// Every search answers `status` (with an error body) from now on; `None` heals it.
    pub fn fail_search(&self, status: Option<u16>) {
        lock(&self.state).search_status = status;
    }

    /// Every search answers this raw body (with 200) instead of the hits; `None` restores them.
    pub fn set_search_body(&self, body: Option<String>) {
        lock(&self.state).search_body = body;
    }

    /// Serves `body` as `content_type` at [`FakeSearch::page_url`]`(name)`.
    pub fn add_page(&self, name: &str, content_type: &str, body: impl Into<Vec<u8>>) {
        lock(&self.state).pages.insert(
            name.to_owned(),
            Page {
                content_type: content_type.to_owned(),
                body: body.into(),
                delay: Duration::ZERO,
                hits: 0,
            },
        );
    }

    /// Page `name` answers only after `delay`.
    pub fn delay_page(&self, name: &str, delay: Duration) {
        if let Some(p) = lock(&self.state).pages.get_mut(name) {
            p.delay = delay;
        }
    }

    /// Search queries received, in order.
    pub fn queries(&self) -> Vec<String> {
        lock(&self.state).queries.clone()
    }

    /// How often page `name` was asked for.
    pub fn page_hits(&self, name: &str) -> u64 {
        lock(&self.state).pages.get(name).map_or(0, |p| p.hits)
    }
}

impl Drop for FakeSearch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn search(
    State(state): State<Shared>,
    Query(params): Query<HashMap<String, String>>,
) -> Response {
    let query = params.get("q").cloned().unwrap_or_default();
    let mut st = lock(&state);
    st.queries.push(query.clone());
    if params.get("format").map(String::as_str) != Some("json") {
        // SearXNG refuses formats it is not configured for.
        return (StatusCode::FORBIDDEN, "format not allowed").into_response();
    }
    if let Some(status) = st.search_status {
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        return (status, "search failed").into_response();
    }
    if let Some(body) = &st.search_body {
        return ([(header::CONTENT_TYPE, "application/json")], body.clone()).into_response();
    }
    let results: Vec<Value> = st
        .hits
        .iter()
        .map(|h| json!({"url": h.url, "title": h.title, "content": h.content, "engine": "fake"}))
        .collect();
    axum::Json(json!({
        "query": query,
        "number_of_results": results.len(),
        "results": results,
        "answers": [],
        "suggestions": [],
    }))
    .into_response()
}

async fn page(State(state): State<Shared>, Path(name): Path<String>) -> Response {
    let found = {
        let mut st = lock(&state);
        st.pages.get_mut(&name).map(|p| {
            p.hits += 1;
            p.clone()
        })
    };
    let Some(page) = found else {
        return (StatusCode::NOT_FOUND, "no such page").into_response();
    };
    if !page.delay.is_zero() {
        tokio::time::sleep(page.delay).await;
    }
    ([(header::CONTENT_TYPE, page.content_type)], page.body).into_response()
}

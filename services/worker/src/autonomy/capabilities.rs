//! The capabilities behind one trait. Each returns facts ([`ActionResult`]): never persona
//! speech, and never an error the caller must turn into words (a failure is a result too).

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{json, Map, Value};
use uuid::Uuid;

use ghost_shared::autonomy::decision::{AGENT_DELEGATE, WEB_ACCESS};
use ghost_shared::autonomy::result::{ActionResult, ResultStatus};
use ghost_shared::config::CliAgentSettings;
use ghost_shared::web::{WebClient, WebError};

use super::agent::run_cli_agent;

/// One thing the persona can do on its own.
#[async_trait::async_trait]
pub trait Capability: Send + Sync {
    /// Its name (what a decision's `capability` names).
    fn name(&self) -> &'static str;
    /// Runs `input` (already validated by the decision's rules) as job `job_id`.
    async fn run(&self, input: &Map<String, Value>, job_id: Uuid) -> ActionResult;
}

/// Capabilities by name.
#[derive(Clone, Default)]
pub struct Capabilities(HashMap<&'static str, Arc<dyn Capability>>);

impl Capabilities {
    /// Both built-in capabilities.
    pub fn new(web: WebClient, cli_agent: Option<CliAgentSettings>) -> Self {
        let mut map: HashMap<&'static str, Arc<dyn Capability>> = HashMap::new();
        map.insert(WEB_ACCESS, Arc::new(WebAccess { web }));
        map.insert(AGENT_DELEGATE, Arc::new(AgentDelegate { cli_agent }));
        Self(map)
    }

    /// The capability named `name`.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Capability>> {
        self.0.get(name).cloned()
    }
}

/// `web_access`: `{query}` searches the configured endpoint, `{url}` fetches a page.
pub struct WebAccess {
    web: WebClient,
}

#[async_trait::async_trait]
impl Capability for WebAccess {
    fn name(&self) -> &'static str {
        WEB_ACCESS
    }

    async fn run(&self, input: &Map<String, Value>, _job_id: Uuid) -> ActionResult {
        let text = |key: &str| input.get(key).and_then(Value::as_str).map(str::trim);
        if let Some(query) = text("query").filter(|q| !q.is_empty()) {
            return match self.web.search(query).await {
                Ok(found) => {
                    let summary = format!(
                        "web search for {:?}: {} result(s)",
                        found.query,
                        found.hits.len()
                    );
                    let urls = found.source_urls();
                    success(
                        summary,
                        json!({"query": found.query, "hits": found.hits, "source_urls": urls}),
                    )
                }
                Err(e) => web_failure(&e, json!({"query": query})),
            };
        }
        let url = text("url").unwrap_or_default();
        match self.web.fetch(url).await {
            Ok(page) => {
                let summary = format!(
                    "fetched {} ({} characters of text{})",
                    page.final_url,
                    page.text.chars().count(),
                    if page.truncated { ", truncated" } else { "" }
                );
                let sources = vec![page.final_url.clone()];
                success(summary, json!({"page": page, "source_urls": sources}))
            }
            Err(e) => web_failure(&e, json!({"url": url})),
        }
    }
}

fn success(summary: String, payload: Value) -> ActionResult {
    ActionResult {
        result_status: ResultStatus::Success,
        capability_name: WEB_ACCESS.into(),
        summary_text: summary,
        result_payload: object(payload),
        details: Map::new(),
    }
}

fn web_failure(e: &WebError, asked: Value) -> ActionResult {
    let status = if matches!(e, WebError::Timeout(_)) {
        ResultStatus::Timeout
    } else {
        ResultStatus::Failed
    };
    let mut payload = object(asked);
    payload.insert("error".into(), Value::String(e.to_string()));
    ActionResult {
        result_status: status,
        capability_name: WEB_ACCESS.into(),
        summary_text: format!("web access failed: {e}"),
        result_payload: payload,
        details: Map::new(),
    }
}

/// `agent_delegate`: the configured command-line agent runs `{task}`.
pub struct AgentDelegate {
    cli_agent: Option<CliAgentSettings>,
}

#[async_trait::async_trait]
impl Capability for AgentDelegate {
    fn name(&self) -> &'static str {
        AGENT_DELEGATE
    }

    async fn run(&self, input: &Map<String, Value>, job_id: Uuid) -> ActionResult {
        let task = input
            .get("task")
            .and_then(Value::as_str)
            .unwrap_or_default();
        match &self.cli_agent {
            Some(settings) => run_cli_agent(settings, task, job_id).await,
            None => ActionResult::failed(
                AGENT_DELEGATE,
                "no command-line agent is configured (autonomy.cli_agent)",
            ),
        }
    }
}

pub(super) fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

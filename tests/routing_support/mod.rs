//! Shared set-up of the routing end-to-end tests: the real dictionary, distinct model names
//! per role, scripted local model (classifier, Kuro, worker, persona) and a second fake
//! server standing in for the cloud.

#![allow(dead_code)] // each test file uses its own part

use std::collections::HashMap;
use std::sync::Arc;

use ghost::stack::ServiceName;
use ghost_shared::envelope::RecordedEvent;
use ghost_shared::llm::Fence;
use ghost_testkit::fake_llm::{FakeLlm, RecordedRequest, Script};
use serde_json::Value;

use crate::support::TestApp;

/// The persona's, the worker's and the cloud coder's model names in these tests.
pub const PERSONA_MODEL: &str = "persona-model";
/// The worker's model.
pub const WORKER_MODEL: &str = "worker-model";
/// The cloud coder's model.
pub const CLOUD_MODEL: &str = "cloud-model";
/// What the persona's model always answers.
pub const PERSONA_REPLY: &str = "reply";

/// A contract-conforming worker output.
pub const CONTRACT_OK: &str = r#"{"result":"work done","needs_next_loop":false,"why":"","next_actions":[],"questions_for_user":[],"confidence":0.9,"risk":"low"}"#;

/// Which prompt a request to the local model carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The router-mode classifier.
    Classifier,
    /// Kuro's delegation decision.
    Kuro,
    /// A worker run.
    Work,
    /// The short-memory summary.
    Summary,
    /// The worker's reflection on a reply without an affect trailer.
    Reflect,
    /// The persona's judgement of a work result before replying.
    Proposal,
    /// Whether a message answers paused work.
    Confirmation,
    /// The persona's reply.
    Persona,
}

/// The kind of a recorded request.
pub fn kind(r: &RecordedRequest) -> Kind {
    let system = r.system_text().unwrap_or_default();
    if system.contains("You route one user message") {
        Kind::Classifier
    } else if system.contains("decide whether you answer this") {
        Kind::Kuro
    } else if system.contains("You are a careful worker") {
        Kind::Work
    } else if system.contains("You keep a short memory") {
        Kind::Summary
    } else if system.contains("You read one exchange between a user and") {
        Kind::Reflect
    } else if system.contains("whether a task result reaches what the") {
        Kind::Proposal
    } else if system.contains("A task for the user was paused") {
        Kind::Confirmation
    } else {
        Kind::Persona
    }
}

/// The routed message inside a classifier/Kuro request.
pub fn routed_text(r: &RecordedRequest) -> String {
    let user = r.last_user_text().unwrap_or_default();
    Fence::data_of(&user, "MESSAGE").unwrap_or(&user).to_owned()
}

/// Computes the worker's output from its task.
pub type WorkerScript = Arc<dyn Fn(&str) -> String + Send + Sync>;

/// Scripted answers of the local model.
#[derive(Clone, Default)]
pub struct Scripts {
    /// Classifier replies by routed text (default: CHAT 0.9).
    pub classifier: HashMap<String, String>,
    /// Kuro's delegation replies by routed text (default: CHAT 0.9).
    pub kuro: HashMap<String, String>,
    /// Worker output for a task (default: [`CONTRACT_OK`]).
    pub worker: Option<WorkerScript>,
    /// The short-memory summary the worker writes (default: a fixed sentence).
    pub summary: Option<String>,
    /// The persona's proposal by the user's message (default: [`GOAL_REACHED`]).
    pub proposal: HashMap<String, String>,
    /// Whether a message answers paused work, by the message (default: it does).
    pub confirmation: HashMap<String, String>,
}

/// The check's judgement that a message answers paused work.
pub const ANSWERS: &str = r#"{"answers_pending":true,"reason":"it answers"}"#;
/// The check's judgement that a message is a new topic.
pub const NEW_TOPIC: &str = r#"{"answers_pending":false,"reason":"a new topic"}"#;

/// The persona's judgement that a result reaches the goal.
pub const GOAL_REACHED: &str = r#"{"goal_reached":true}"#;

/// The user's message inside a proposal request.
pub fn proposal_text(r: &RecordedRequest) -> String {
    let user = r.last_user_text().unwrap_or_default();
    Fence::data_of(&user, "USER_MESSAGE")
        .unwrap_or(&user)
        .to_owned()
}

const CHAT_DECISION: &str = r#"{"route":"CHAT","confidence":0.9,"reason":"chat","evidence":[]}"#;

/// Routing test app: every service in process, the real `config/routing.yaml`.
pub struct RoutingApp {
    /// The app (its `llm` is the local model).
    pub app: TestApp,
    /// The fake cloud server.
    pub cloud: FakeLlm,
}

impl RoutingApp {
    /// Starts everything with `scripts` and extra overrides.
    pub async fn spawn(scripts: Scripts, extra: &[(&str, &str)]) -> RoutingApp {
        Self::spawn_services(&ServiceName::ALL, scripts, extra).await
    }

    /// Starts `services` in this process (others may run as child processes).
    pub async fn spawn_services(
        services: &[ServiceName],
        scripts: Scripts,
        extra: &[(&str, &str)],
    ) -> RoutingApp {
        let cloud = FakeLlm::start().await.expect("fake cloud");
        let cloud_url = cloud.base_url();
        let mut vars: Vec<(&str, &str)> = vec![
            ("GHOST_ROUTING__RULES_FILE", "config/routing.yaml"),
            ("GHOST_LLM__PERSONA__MODEL", PERSONA_MODEL),
            ("GHOST_LLM__WORKER__MODEL", WORKER_MODEL),
            ("GHOST_LLM__CODER__BASE_URL", &cloud_url),
            ("GHOST_LLM__CODER__MODEL", CLOUD_MODEL),
            ("GHOST_CLOUD_API_KEY", "cloud-test-key"),
        ];
        vars.extend_from_slice(extra);
        let app = TestApp::spawn_services(services, &vars).await;
        app.llm.set_responder(move |r| {
            let text = match kind(r) {
                Kind::Classifier => scripts
                    .classifier
                    .get(&routed_text(r))
                    .cloned()
                    .unwrap_or_else(|| CHAT_DECISION.to_owned()),
                Kind::Kuro => scripts
                    .kuro
                    .get(&routed_text(r))
                    .cloned()
                    .unwrap_or_else(|| CHAT_DECISION.to_owned()),
                Kind::Work => match &scripts.worker {
                    Some(f) => f(&r.last_user_text().unwrap_or_default()),
                    None => CONTRACT_OK.to_owned(),
                },
                Kind::Summary => scripts
                    .summary
                    .clone()
                    .unwrap_or_else(|| "short summary of the talk".to_owned()),
                Kind::Reflect => super::support::NEUTRAL_AFFECT.to_owned(),
                Kind::Proposal => scripts
                    .proposal
                    .get(&proposal_text(r))
                    .cloned()
                    .unwrap_or_else(|| GOAL_REACHED.to_owned()),
                Kind::Confirmation => scripts
                    .confirmation
                    .get(&routed_text(r))
                    .cloned()
                    .unwrap_or_else(|| ANSWERS.to_owned()),
                Kind::Persona => PERSONA_REPLY.to_owned(),
            };
            Script::chunks(vec![text.as_str()])
        });
        cloud.set_responder(|_| Script::chunks(vec![CONTRACT_OK]));
        RoutingApp { app, cloud }
    }

    /// Local-model requests of one kind.
    pub fn requests(&self, k: Kind) -> Vec<RecordedRequest> {
        self.app
            .llm
            .requests()
            .into_iter()
            .filter(|r| r.path == "/api/chat" && kind(r) == k)
            .collect()
    }

    /// The user message of the last local-model request of one kind.
    pub fn last_prompt(&self, k: Kind) -> String {
        self.requests(k)
            .last()
            .and_then(|q| q.last_user_text())
            .unwrap_or_default()
    }

    /// One chat turn; the `done` event's reply text.
    pub async fn say(&self, session: &str, text: &str) -> String {
        let body = serde_json::json!({ "session_id": session, "text": text }).to_string();
        let response = self
            .app
            .post_chat_raw(body, Some(crate::support::TOKEN))
            .await;
        let status = response.status();
        if status != 200 {
            let body = response.text().await.unwrap_or_default();
            panic!("{session}: {text:?}: chat answered {status}: {body}");
        }
        let events = crate::support::read_sse(response).await;
        let last = events.last().expect("an SSE event");
        assert_eq!(last.event, "done", "{session}: {text:?}: {last:?}");
        last.data["reply_text"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Starts one chat turn without waiting for it: the SSE events once it ends.
    pub fn start_turn(
        &self,
        session: &str,
        text: &str,
    ) -> tokio::task::JoinHandle<Vec<crate::support::SseEvent>> {
        let body = serde_json::json!({ "session_id": session, "text": text }).to_string();
        let request = self
            .app
            .http
            .post(format!("{}/api/chat", self.app.base_url))
            .bearer_auth(crate::support::TOKEN)
            .header("content-type", "application/json")
            .body(body);
        tokio::spawn(
            async move { crate::support::read_sse(request.send().await.expect("send")).await },
        )
    }

    /// Events of one type in a session.
    pub async fn of_type(&self, session: &str, event_type: &str) -> Vec<RecordedEvent> {
        self.app
            .session_events(session)
            .await
            .into_iter()
            .filter(|e| e.event_type == event_type)
            .collect()
    }

    /// Stops everything.
    pub async fn cleanup(self) {
        self.app.cleanup().await;
        self.cloud.shutdown().await;
    }
}

/// The payload of the only (or last) event of a type.
pub fn payload(events: &[RecordedEvent]) -> Value {
    events
        .last()
        .map(|e| e.payload.clone())
        .unwrap_or(Value::Null)
}

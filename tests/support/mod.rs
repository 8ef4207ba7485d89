//! `spawn_app` for end-to-end tests: a private database and NATS prefix, a fake model, and
//! Ghost's services in this process (or as `ghost` child processes).

#![allow(dead_code)] // each test file uses its own part of the support

pub mod autonomy;
pub mod cli;
pub mod console;
pub mod embedded;
pub mod events_socket;
pub mod logs;
pub mod memory;
pub mod plans;
pub mod platforms;
pub mod stage;
pub mod tcp_proxy;
pub mod webdriver;

use std::process::Stdio;
use std::time::Duration;

use futures::StreamExt;
use ghost::stack::{start_stack, ServiceName, Stack};
use ghost_shared::envelope::session_stream;
use ghost_shared::envelope::{NewEvent, RecordedEvent};
use ghost_shared::store::EventStore;
use ghost_testkit::fake_llm::{FakeLlm, RecordedRequest, Script};
use ghost_testkit::testing::{repo_config_dir, TestEnv, PERSONA_MODEL, WORKER_MODEL};
use serde_json::Value;

/// A valid, calm affect JSON (what the fake worker reflects by default).
pub const NEUTRAL_AFFECT: &str = r#"{"reflection_text":"fine","partner_affect_label":"neutral","partner_affect_intensity":0.1,"salience":0.1,"confidence":0.9,"topic_tags":[]}"#;

/// The bearer token test environments configure.
pub const TOKEN: &str = "test-token";

/// Quiet hours for `person` from an hour ago to `minutes` on (UTC, the default zone), as a
/// change of the config, with the time they end (`HH:MM`): the test runs inside them,
/// whatever the time of day.
pub fn quiet_now(
    person: &str,
    minutes: i64,
) -> (
    impl FnOnce(&mut ghost_shared::config::Config) + Send + 'static,
    String,
) {
    let now = chrono::Utc::now();
    let end = (now + chrono::Duration::minutes(minutes))
        .format("%H:%M")
        .to_string();
    let start = (now - chrono::Duration::minutes(60)).format("%H:%M");
    let quiet = format!("{start}-{end}").parse().expect("a window");
    let person = person.to_owned();
    let set = move |c: &mut ghost_shared::config::Config| {
        c.ghost.reminders.person_quiet_hours.insert(person, quiet);
    };
    (set, end)
}

/// A running Ghost under test.
pub struct TestApp {
    /// Database, prefix, configuration.
    pub env: TestEnv,
    /// The fake model every role talks to.
    pub llm: FakeLlm,
    /// Services running in this process.
    pub stack: Stack,
    /// Base URL of the gateway.
    pub base_url: String,
    /// HTTP client.
    pub http: reqwest::Client,
    /// Store handle for assertions.
    pub store: EventStore,
}

/// One server-sent event.
#[derive(Debug, Clone, PartialEq)]
pub struct SseEvent {
    /// `event:` field.
    pub event: String,
    /// `data:` parsed as JSON.
    pub data: Value,
}

impl TestApp {
    /// Every service in-process, with `extra` configuration overrides.
    pub async fn spawn(extra: &[(&str, &str)]) -> TestApp {
        Self::spawn_services(&ServiceName::ALL, extra).await
    }

    /// Only `services` in-process (others may run as child processes).
    pub async fn spawn_services(services: &[ServiceName], extra: &[(&str, &str)]) -> TestApp {
        Self::spawn_adjusted(services, extra, |_| {}).await
    }

    /// Only `services` in-process, with the configuration changed by `adjust` after the
    /// overrides (for values an environment variable cannot express, such as lists).
    pub async fn spawn_adjusted(
        services: &[ServiceName],
        extra: &[(&str, &str)],
        adjust: impl FnOnce(&mut ghost_shared::config::Config),
    ) -> TestApp {
        let llm = FakeLlm::start().await.expect("fake llm");
        // Unscripted worker calls (reflections on replies without a trailer) get a calm affect.
        llm.set_default_for_model(WORKER_MODEL, Script::reply(NEUTRAL_AFFECT));
        Self::spawn_on(llm, services, extra, adjust).await
    }

    /// As [`TestApp::spawn_adjusted`], on a fake model started (and scripted) by the caller:
    /// for overrides that name its address, as a stage cast's models do.
    pub async fn spawn_on(
        llm: FakeLlm,
        services: &[ServiceName],
        extra: &[(&str, &str)],
        adjust: impl FnOnce(&mut ghost_shared::config::Config),
    ) -> TestApp {
        let mut env = TestEnv::new(&llm.base_url(), extra).await;
        adjust(&mut env.config);
        let store = env.store().await;
        let stack = start_stack(env.config.clone(), services)
            .await
            .expect("start services");
        let base_url = stack
            .gateway_addr()
            .map(|a| format!("http://{a}"))
            .unwrap_or_default();
        TestApp {
            env,
            llm,
            stack,
            base_url,
            http: reqwest::Client::new(),
            store,
        }
    }

    /// `POST /api/chat` with a raw body and token; the response as is.
    pub async fn post_chat_raw(
        &self,
        body: impl Into<reqwest::Body>,
        token: Option<&str>,
    ) -> reqwest::Response {
        let mut req = self
            .http
            .post(format!("{}/api/chat", self.base_url))
            .header("content-type", "application/json")
            .body(body);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        req.send().await.expect("request")
    }

    /// A call of the API with the token (`body` sent as JSON): its status and its JSON
    /// answer (`null` when it has none).
    pub async fn api(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> (u16, Value) {
        let request = self
            .http
            .request(method, format!("{}{path}", self.base_url))
            .bearer_auth(TOKEN);
        let request = match body {
            Some(body) => request.json(body),
            None => request,
        };
        let response = request.send().await.expect("API request");
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// `POST /api/autonomy/tick`, accepted; the tick's event id.
    pub async fn tick(&self) -> String {
        let response = self
            .http
            .post(format!("{}/api/autonomy/tick", self.base_url))
            .bearer_auth(TOKEN)
            .send()
            .await
            .expect("tick");
        assert_eq!(response.status(), 202);
        let body: Value = response.json().await.expect("tick JSON");
        body["tick_event_id"]
            .as_str()
            .expect("tick_event_id")
            .to_owned()
    }

    /// `GET /api/sessions/{session}/messages`: the conversation's JSON.
    pub async fn messages(&self, session: &str) -> Value {
        self.messages_response(session)
            .await
            .json()
            .await
            .expect("messages JSON")
    }

    /// One field (`role`, `text`, ...) of each message of the conversation, in order.
    pub async fn message_field(&self, session: &str, field: &str) -> Vec<String> {
        let messages = self.messages(session).await;
        messages["messages"]
            .as_array()
            .expect("messages list")
            .iter()
            .filter_map(|m| m[field].as_str().map(str::to_owned))
            .collect()
    }

    /// `GET /api/sessions/{session}/messages`: the response as is.
    pub async fn messages_response(&self, session: &str) -> reqwest::Response {
        self.http
            .get(format!("{}/api/sessions/{session}/messages", self.base_url))
            .bearer_auth(TOKEN)
            .send()
            .await
            .expect("messages")
    }

    /// A chat turn; all SSE events until the stream closes.
    pub async fn chat(&self, session: &str, text: &str) -> Vec<SseEvent> {
        self.chat_within(session, text, Duration::from_secs(60))
            .await
    }

    /// A chat turn with a hang guard of `limit` (a real model on a busy machine is slow).
    pub async fn chat_within(&self, session: &str, text: &str, limit: Duration) -> Vec<SseEvent> {
        let body = serde_json::json!({ "session_id": session, "text": text }).to_string();
        let response = self.post_chat_raw(body, Some(TOKEN)).await;
        assert_eq!(
            response.status(),
            200,
            "chat answered {}",
            response.status()
        );
        read_sse_within(response, limit).await
    }

    /// Queues the persona's next reply.
    pub fn reply(&self, script: Script) {
        self.llm.push_for_model(PERSONA_MODEL, script);
    }

    /// The chat requests the persona made (health probes and other roles excluded).
    pub fn persona_requests(&self) -> Vec<RecordedRequest> {
        self.llm
            .requests()
            .into_iter()
            .filter(|r| r.path == "/api/chat" || r.path.ends_with("/chat/completions"))
            .filter(|r| r.model.as_deref() == Some(PERSONA_MODEL))
            .collect()
    }

    /// Chat requests of every role but the worker (e.g. each stage character's model).
    pub fn character_calls(&self) -> usize {
        self.llm
            .requests()
            .iter()
            .filter(|r| r.path == "/api/chat" || r.path.ends_with("/chat/completions"))
            .filter(|r| r.model.as_deref() != Some(WORKER_MODEL))
            .count()
    }

    /// How many replies the persona's model was asked for.
    pub fn model_calls(&self) -> usize {
        self.persona_requests().len()
    }

    /// Events of a session's stream.
    pub async fn session_events(&self, session: &str) -> Vec<RecordedEvent> {
        self.store
            .read_stream(&session_stream(session), 0)
            .await
            .expect("read stream")
    }

    /// How many events the store holds.
    pub async fn event_count(&self) -> i64 {
        sqlx::query_scalar("SELECT count(*) FROM events")
            .fetch_one(self.store.pool())
            .await
            .expect("count")
    }

    /// The event count once nothing has been appended for a second: the baseline for
    /// "a redelivery appends nothing", which must not catch the turn's own late events
    /// (mood, memory, summaries) that follow the delivered reply.
    pub async fn settled_event_count(&self) -> i64 {
        let mut last = self.event_count().await;
        let mut still = 0;
        for _ in 0..150 {
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            let now = self.event_count().await;
            still = if now == last { still + 1 } else { 0 };
            last = now;
            if still >= 5 {
                return last;
            }
        }
        panic!("the event store never went quiet (last count {last})");
    }

    /// Starts `ghost run <service>` as a child process on this environment, with extra env.
    pub fn spawn_child(&self, service: &str, extra_env: &[(&str, &str)]) -> tokio::process::Child {
        self.child_command(service, extra_env)
            .spawn()
            .expect("spawn ghost")
    }

    /// Like [`Self::spawn_child`], but the child runs in `dir` (its working directory and
    /// temporary directory), as a service on another machine would see only its own disk.
    pub fn spawn_child_in(
        &self,
        service: &str,
        dir: &std::path::Path,
        extra_env: &[(&str, &str)],
    ) -> tokio::process::Child {
        let mut cmd = self.child_command(service, extra_env);
        cmd.current_dir(dir).env("TMPDIR", dir);
        cmd.spawn().expect("spawn ghost")
    }

    /// The `ghost run <service>` command of this environment (not yet spawned).
    pub fn child_command(
        &self,
        service: &str,
        extra_env: &[(&str, &str)],
    ) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_ghost"));
        cmd.arg("run").arg(service);
        cmd.env_clear();
        for key in ["PATH", "HOME"] {
            if let Ok(v) = std::env::var(key) {
                cmd.env(key, v);
            }
        }
        cmd.env("RUST_LOG", "warn");
        cmd.env("GHOST_CONFIG_DIR", repo_config_dir());
        for (k, v) in &self.env.vars {
            cmd.env(k, v);
        }
        for (k, v) in extra_env {
            cmd.env(k, v);
        }
        cmd.stdin(Stdio::null()).kill_on_drop(true);
        cmd
    }

    /// Waits until nothing is in flight: every durable consumer of the event stream has
    /// handled and acknowledged everything it was given, and the outbox is empty (every
    /// committed event is published). After this, nothing more happens on its own (but
    /// timers such as the turn watchdog).
    pub async fn wait_idle(&self) {
        let bus = self.stack.ctx.bus();
        let stream_name = &self.env.config.ghost.bus.stream_name;
        ghost_testkit::testing::eventually(Duration::from_secs(120), "idle", || async {
            ghost_testkit::testing::pipeline_idle(bus, &self.store, stream_name)
                .await
                .then_some(())
        })
        .await;
    }

    /// Runs `ghost <args>` as a separate process against this app's database and streams
    /// (`vars` on top of its settings); panics with its stderr unless it succeeds.
    pub async fn run_ghost_command(&self, args: &[&str], vars: &[(&str, &str)]) {
        let (ok, _, stderr) = self.ghost_with(args, vars).await;
        assert!(ok, "ghost {args:?}: {stderr}");
    }

    /// Runs `ghost <args>` as [`Self::run_ghost_command`] does: (success, stdout, stderr).
    pub async fn ghost(&self, args: &[&str]) -> (bool, String, String) {
        self.ghost_with(args, &[]).await
    }

    async fn ghost_with(&self, args: &[&str], vars: &[(&str, &str)]) -> (bool, String, String) {
        let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_ghost"))
            .args(args)
            .env("GHOST_CONFIG_DIR", repo_config_dir())
            .envs(self.env.vars.iter().cloned())
            .envs(vars.iter().copied())
            .output()
            .await
            .expect("run ghost");
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stdout).into(),
            String::from_utf8_lossy(&output.stderr).into(),
        )
    }

    /// The mood service's answer for `persona` at `now` (its clock when `None`).
    pub async fn ask_mood(
        &self,
        persona: &str,
        now: Option<f64>,
    ) -> Result<ghost_shared::mood_api::MoodAnswer, ghost_shared::mood_api::MoodApiError> {
        let query = ghost_shared::mood_api::MoodQuery {
            persona: persona.into(),
            now,
        };
        ghost_shared::mood_api::request(
            self.stack.ctx.bus(),
            ghost_shared::mood_api::GET_SUBJECT,
            &query,
            Duration::from_secs(5),
        )
        .await
    }

    /// Appends `events` to `persona`'s stream.
    pub async fn append_to_persona(&self, persona: &str, events: &[NewEvent]) {
        self.stack
            .ctx
            .log
            .append(
                &ghost_shared::events::persona_stream(persona),
                ghost_shared::store::ExpectedVersion::Any,
                events,
            )
            .await
            .unwrap();
    }

    /// Stops the services and removes the database and streams.
    pub async fn cleanup(self) {
        self.stack.abort();
        self.env.cleanup().await;
    }
}

/// Runs each SQL statement on `store` (e.g. to plant deliberately wrong rows), naming the
/// one that fails.
pub async fn execute_all(store: &EventStore, statements: &[&str]) {
    for statement in statements {
        sqlx::query(statement)
            .execute(store.pool())
            .await
            .unwrap_or_else(|e| panic!("{statement}: {e}"));
    }
}

/// Reads a whole SSE response.
pub async fn read_sse(response: reqwest::Response) -> Vec<SseEvent> {
    read_sse_within(response, Duration::from_secs(60)).await
}

/// Reads a whole SSE response, with a hang guard of `limit`.
pub async fn read_sse_within(response: reqwest::Response, limit: Duration) -> Vec<SseEvent> {
    let mut events = Vec::new();
    let mut buffer = String::new();
    let mut body = response.bytes_stream();
    let read = async {
        while let Some(chunk) = body.next().await {
            buffer.push_str(&String::from_utf8_lossy(&chunk.expect("body chunk")));
            while let Some(end) = buffer.find("\n\n") {
                let block: String = buffer.drain(..end + 2).collect();
                if let Some(e) = parse_block(&block) {
                    let last = e.event == "done" || e.event == "error";
                    events.push(e);
                    if last {
                        return;
                    }
                }
            }
        }
    };
    tokio::time::timeout(limit, read)
        .await
        .expect("SSE stream ended in time");
    events
}

fn parse_block(block: &str) -> Option<SseEvent> {
    let mut event = None;
    let mut data = String::new();
    for line in block.lines() {
        if let Some(v) = line.strip_prefix("event:") {
            event = Some(v.trim().to_owned());
        } else if let Some(v) = line.strip_prefix("data:") {
            data.push_str(v.strip_prefix(' ').unwrap_or(v));
        }
    }
    Some(SseEvent {
        event: event?,
        data: serde_json::from_str(&data).ok()?,
    })
}

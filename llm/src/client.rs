//! The HTTP client: request building, timeouts, streaming.

use std::collections::VecDeque;
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use reqwest::header::{HeaderValue, AUTHORIZATION};
use tokio::time::{timeout_at, Instant};

use super::config::{LlmRoleConfig, Provider};
use super::contract::{Call, Urgency, PRIORITY_HEADER};
use super::decode::Decoder;
use super::error::LlmError;
use super::image::{audit_after_timeout, resolve_image};
use super::message::{ChatMessage, ContentPart, ImageSource};
use super::refusal::{self, background_limit};
use super::wire::{self, ResolvedMessage, ResolvedPart};
use super::LOG_TARGET;

/// Stream of token deltas; ends after the provider's end marker, or with one error item.
pub type TokenStream = Pin<Box<dyn Stream<Item = Result<String, LlmError>> + Send>>;

/// Upper bound of the `/healthz` probe, whatever the role's call timeout.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
/// How much of an error body is kept in `LlmError::HttpStatus`.
const ERROR_BODY_MAX_CHARS: usize = 512;
/// How much of an error body is read at most (the rest is not worth waiting for).
const ERROR_BODY_MAX_BYTES: usize = 16 * 1024;

/// Client for one LLM role. Cheap to clone (the connection pool is shared).
#[derive(Clone)]
pub struct LlmClient {
    cfg: LlmRoleConfig,
    /// The role it serves (the `role` label of its metrics).
    role: Arc<str>,
    /// Pre-built `Bearer` header; marked sensitive so it never shows up in debug output.
    auth: Option<HeaderValue>,
    http: reqwest::Client,
    chat_url: String,
    probe_url: String,
}

impl fmt::Debug for LlmClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LlmClient")
            .field("provider", &self.cfg.provider)
            .field("model", &self.cfg.model)
            .field("chat_url", &self.chat_url)
            .field("api_key", &self.auth.as_ref().map(|_| "[redacted]"))
            .finish()
    }
}

/// A built request plus what the timeout audit needs.
struct Prepared {
    body: serde_json::Value,
    image_sources: Vec<Arc<dyn ImageSource>>,
    urgency: Urgency,
}

impl LlmClient {
    /// Validates the config and builds the client. `api_key` is sent as `Authorization: Bearer`
    /// (for Ollama too, which helps behind an authenticating reverse proxy).
    ///
    /// URLs: Ollama uses `{base}/api/chat` and `{base}/api/tags`. OpenAI uses
    /// `{base}/v1/chat/completions` and `{base}/v1/models`, where a `base_url` that already ends
    /// in `/v1` is not given a second one (`http://h/v1` and `http://h` are equivalent).
    pub fn new(cfg: LlmRoleConfig, api_key: Option<String>) -> Result<Self, LlmError> {
        let base = cfg.base_url.trim().trim_end_matches('/').to_string();
        let parsed = reqwest::Url::parse(&base)
            .map_err(|e| LlmError::InvalidRequest(format!("base_url {base:?}: {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(LlmError::InvalidRequest(format!(
                "base_url {base:?}: scheme must be http or https"
            )));
        }
        if cfg.model.trim().is_empty() {
            return Err(LlmError::InvalidRequest("model is empty".into()));
        }
        if cfg.timeout_secs == 0 {
            return Err(LlmError::InvalidRequest("timeout_secs must be > 0".into()));
        }
        if cfg.background_concurrency == 0 {
            return Err(LlmError::InvalidRequest(
                "background_concurrency must be > 0".into(),
            ));
        }
        if cfg.max_response_bytes == 0 {
            return Err(LlmError::InvalidRequest(
                "max_response_bytes must be > 0".into(),
            ));
        }
        let auth = match api_key.as_deref().map(str::trim) {
            Some(key) if !key.is_empty() => {
                let mut v = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                    // Never echo the key itself.
                    LlmError::InvalidRequest("api key contains invalid header characters".into())
                })?;
                v.set_sensitive(true);
                Some(v)
            }
            _ => None,
        };
        let (chat_url, probe_url) = match cfg.provider {
            Provider::Ollama => (format!("{base}/api/chat"), format!("{base}/api/tags")),
            Provider::Openai => {
                let v1 = if base.ends_with("/v1") {
                    base.clone()
                } else {
                    format!("{base}/v1")
                };
                (format!("{v1}/chat/completions"), format!("{v1}/models"))
            }
        };
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(cfg.timeout_secs))
            .build()
            .map_err(|e| LlmError::InvalidRequest(format!("http client: {e}")))?;
        Ok(LlmClient {
            cfg,
            role: Arc::from("unnamed"),
            auth,
            http,
            chat_url,
            probe_url,
        })
    }

    /// The same client, its metrics labelled with `role` (`persona`, `worker`, `stage`, ...).
    pub fn with_role(mut self, role: &str) -> Self {
        ghost_metrics::register_llm_role(role);
        self.role = Arc::from(role);
        self
    }

    /// The role it serves (the `role` label of its metrics).
    pub fn role(&self) -> &str {
        &self.role
    }

    /// The role configuration this client was built from.
    pub fn config(&self) -> &LlmRoleConfig {
        &self.cfg
    }

    fn timeout(&self) -> Duration {
        Duration::from_secs(self.cfg.timeout_secs)
    }

    /// The bound of a call of this urgency: a person waits for an interactive one, a
    /// background one waits behind every reply by design.
    fn call_timeout(&self, urgency: Urgency) -> Duration {
        match urgency {
            Urgency::Interactive => self.timeout(),
            Urgency::Background => Duration::from_secs(self.cfg.background_timeout_secs),
        }
    }

    /// Streams token deltas of a call someone waits for, with no shape asked for.
    pub async fn chat_stream(&self, messages: &[ChatMessage]) -> Result<TokenStream, LlmError> {
        self.stream(messages, Call::interactive()).await
    }

    /// Streams token deltas. Until the first token (image loading, connect, the model's
    /// prompt) the call is bounded by `timeout_secs` (`background_timeout_secs` for a
    /// background call); from then on by `stream_idle_secs` between two chunks, so a reply
    /// the user is already reading is never cut for its length (its token budget ends it).
    /// A bound hit yields `LlmError::Timeout` (as the returned error or as the stream's last
    /// item) and writes the "after timeout" image audit. A background call holds one of the
    /// endpoint's background permits until it ends.
    pub async fn stream(
        &self,
        messages: &[ChatMessage],
        call: Call<'_>,
    ) -> Result<TokenStream, LlmError> {
        let first_token = self.call_timeout(call.urgency);
        let deadline = Instant::now() + first_token;
        let permit = self.permit(call.urgency).await;
        let record = CallRecord::start(&self.role);
        let (prepared, resp) = match self.send_shaped(messages, true, call, deadline).await {
            Ok(sent) => sent,
            Err(e) => return Err(record.failed(e)),
        };
        let state = StreamState {
            record,
            _permit: permit,
            chunks: 0,
            body: Box::pin(resp.bytes_stream()),
            decoder: Decoder::for_provider(self.cfg.provider),
            pending: VecDeque::new(),
            error: None,
            finished: false,
            deadline,
            first_token,
            idle: Duration::from_secs(self.cfg.stream_idle_secs),
            image_sources: prepared.image_sources,
            received: 0,
            limit: self.cfg.max_response_bytes,
        };
        Ok(Box::pin(futures::stream::unfold(state, next_token)))
    }

    /// Non-streaming convenience for a call someone waits for, with no shape asked for.
    pub async fn chat(&self, messages: &[ChatMessage]) -> Result<String, LlmError> {
        self.complete(messages, Call::interactive()).await
    }

    /// Sends a `stream: false` request and returns the whole reply, bounded as a whole by
    /// `timeout_secs` (interactive) or `background_timeout_secs` (background).
    pub async fn complete(
        &self,
        messages: &[ChatMessage],
        call: Call<'_>,
    ) -> Result<String, LlmError> {
        self.complete_counted(messages, call)
            .await
            .map(|(text, _)| text)
    }

    /// Like [`LlmClient::chat`], with the token counts the server reported
    /// (`(prompt, completion)`; `None` when it reported none): what a spend cap counts.
    pub async fn chat_counted(
        &self,
        messages: &[ChatMessage],
    ) -> Result<(String, Option<(u64, u64)>), LlmError> {
        self.complete_counted(messages, Call::interactive()).await
    }

    /// [`LlmClient::complete`] with the token counts the server reported.
    pub async fn complete_counted(
        &self,
        messages: &[ChatMessage],
        call: Call<'_>,
    ) -> Result<(String, Option<(u64, u64)>), LlmError> {
        let _permit = self.permit(call.urgency).await;
        let record = CallRecord::start(&self.role);
        match self.chat_once(messages, call).await {
            Ok((text, usage)) => {
                record.succeeded(usage, 0);
                Ok((text, usage))
            }
            Err(e) => Err(record.failed(e)),
        }
    }

    /// One non-streamed call: the reply and the token counts it reported.
    async fn chat_once(
        &self,
        messages: &[ChatMessage],
        call: Call<'_>,
    ) -> Result<(String, Option<(u64, u64)>), LlmError> {
        let bound = self.call_timeout(call.urgency);
        let deadline = Instant::now() + bound;
        let (prepared, resp) = self.send_shaped(messages, false, call, deadline).await?;
        let read = read_capped(resp, self.cfg.max_response_bytes, bound);
        let bytes = match timeout_at(deadline, read).await {
            Ok(Ok(b)) => b,
            Ok(Err(e)) => return Err(e),
            Err(_) => return Err(self.timed_out(&prepared.image_sources, bound).await),
        };
        let v: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
            LlmError::MalformedStream(format!("invalid JSON reply ({e}): {}", preview(&bytes)))
        })?;
        let text = match self.cfg.provider {
            Provider::Ollama => wire::ollama_reply(&v),
            Provider::Openai => wire::openai_reply(&v),
        }?;
        Ok((text, wire::usage_of(&v)))
    }

    /// Sends `call` in the endpoint's own wire. An endpoint known to refuse structured
    /// output gets the prompt-only request; one that refuses it now (a 4xx to the shaped
    /// request, then a success without the shape) is noted for this role and logged once.
    async fn send_shaped(
        &self,
        messages: &[ChatMessage],
        stream: bool,
        call: Call<'_>,
        deadline: Instant,
    ) -> Result<(Prepared, reqwest::Response), LlmError> {
        let refused = call.structured() && refusal::of(&self.role).is_some();
        if let Some(name) = call.contract_name() {
            ghost_metrics::structured_call(&self.role, name, refused);
        }
        let first = if refused { call.plain() } else { call };
        let prepared = self.prepare(messages, stream, first).await?;
        match self.send(&prepared, deadline).await {
            Err(e) if first.structured() && refusal::may_be_refusal(&e) => {
                let plain = self.prepare(messages, stream, call.plain()).await?;
                let resp = self.send(&plain, deadline).await?;
                refusal::note(&self.role, &self.cfg.model, &e);
                Ok((plain, resp))
            }
            sent => sent.map(|resp| (prepared, resp)),
        }
    }

    /// A background call waits for one of its endpoint's background permits; a call
    /// someone waits for never does.
    async fn permit(&self, urgency: Urgency) -> Option<tokio::sync::OwnedSemaphorePermit> {
        match urgency {
            Urgency::Interactive => None,
            Urgency::Background => {
                background_limit(&self.chat_url, self.cfg.background_concurrency)
                    .acquire_owned()
                    .await
                    .ok()
            }
        }
    }

    /// Embeds `texts` (one vector each, in order): Ollama `POST /api/embed`, OpenAI
    /// `POST /v1/embeddings`. Bounded by `timeout_secs` and `max_response_bytes` like `chat`.
    pub async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, LlmError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let url = match self.cfg.provider {
            Provider::Ollama => self.chat_url.replace("/api/chat", "/api/embed"),
            Provider::Openai => self.chat_url.replace("/chat/completions", "/embeddings"),
        };
        let deadline = Instant::now() + self.timeout();
        let body = serde_json::json!({"model": self.cfg.model, "input": texts});
        let mut req = self.http.post(&url).json(&body);
        if let Some(auth) = &self.auth {
            req = req.header(AUTHORIZATION, auth.clone());
        }
        let resp = match timeout_at(deadline, req.send()).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => return Err(send_error(e, self.timeout())),
            Err(_) => {
                return Err(LlmError::Timeout {
                    after: self.timeout(),
                })
            }
        };
        if !resp.status().is_success() {
            return Err(status_error(resp, deadline).await);
        }
        let read = read_capped(resp, self.cfg.max_response_bytes, self.timeout());
        let bytes = match timeout_at(deadline, read).await {
            Ok(r) => r?,
            Err(_) => {
                return Err(LlmError::Timeout {
                    after: self.timeout(),
                })
            }
        };
        let v: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
            LlmError::MalformedStream(format!(
                "invalid embedding reply ({e}): {}",
                preview(&bytes)
            ))
        })?;
        let vectors = wire::embeddings(self.cfg.provider, &v)?;
        if vectors.len() != texts.len() {
            return Err(LlmError::MalformedStream(format!(
                "{} embeddings for {} inputs",
                vectors.len(),
                texts.len()
            )));
        }
        Ok(vectors)
    }

    /// Reachability probe for `/healthz`: Ollama `GET /api/tags`, OpenAI `GET /v1/models`,
    /// bounded by the smaller of 5 s and `timeout_secs`.
    pub async fn probe(&self) -> Result<(), LlmError> {
        let limit = PROBE_TIMEOUT.min(self.timeout());
        let mut req = self.http.get(&self.probe_url);
        if let Some(auth) = &self.auth {
            req = req.header(AUTHORIZATION, auth.clone());
        }
        let deadline = Instant::now() + limit;
        let resp = match timeout_at(deadline, req.send()).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => return Err(send_error(e, limit)),
            Err(_) => return Err(LlmError::Timeout { after: limit }),
        };
        if resp.status().is_success() {
            Ok(())
        } else {
            Err(status_error(resp, deadline).await)
        }
    }

    /// The models the server offers: Ollama `GET /api/tags` (`models[].name`), OpenAI
    /// `GET /v1/models` (`data[].id`); bounded like [`LlmClient::probe`].
    pub async fn models(&self) -> Result<Vec<String>, LlmError> {
        let limit = PROBE_TIMEOUT.min(self.timeout());
        let mut req = self.http.get(&self.probe_url);
        if let Some(auth) = &self.auth {
            req = req.header(AUTHORIZATION, auth.clone());
        }
        let deadline = Instant::now() + limit;
        let resp = match timeout_at(deadline, req.send()).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => return Err(send_error(e, limit)),
            Err(_) => return Err(LlmError::Timeout { after: limit }),
        };
        if !resp.status().is_success() {
            return Err(status_error(resp, deadline).await);
        }
        let bytes = match timeout_at(deadline, resp.bytes()).await {
            Ok(Ok(b)) => b,
            Ok(Err(e)) => return Err(body_error(e, limit)),
            Err(_) => return Err(LlmError::Timeout { after: limit }),
        };
        let v: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
            LlmError::MalformedStream(format!("invalid model list ({e}): {}", preview(&bytes)))
        })?;
        Ok(wire::model_names(self.cfg.provider, &v))
    }

    /// Whether `names` (from [`LlmClient::models`]) include this role's model; Ollama's
    /// implicit `:latest` tag counts.
    pub fn model_listed(&self, names: &[String]) -> bool {
        let want = self.cfg.model.as_str();
        names.iter().any(|n| {
            n == want
                || (self.cfg.provider == Provider::Ollama
                    && (n.strip_suffix(":latest") == Some(want)
                        || want.strip_suffix(":latest") == Some(n.as_str())))
        })
    }

    /// Resolves images (writing the "before request" audit) and builds the body.
    async fn prepare(
        &self,
        messages: &[ChatMessage],
        stream: bool,
        call: Call<'_>,
    ) -> Result<Prepared, LlmError> {
        if messages.is_empty() {
            return Err(LlmError::InvalidRequest("no messages".into()));
        }
        let mut resolved = Vec::with_capacity(messages.len());
        let mut image_sources = Vec::new();
        for m in messages {
            let mut parts = Vec::with_capacity(m.parts.len());
            for p in &m.parts {
                match p {
                    ContentPart::Text(t) => parts.push(ResolvedPart::Text(t.clone())),
                    ContentPart::Image(img) => {
                        if let Some(source) = &img.source {
                            image_sources.push(Arc::clone(source));
                        }
                        if let Some(r) = resolve_image(img, self.cfg.provider).await {
                            parts.push(ResolvedPart::Image(r));
                        }
                    }
                }
            }
            resolved.push(ResolvedMessage {
                role: m.role,
                parts,
            });
        }
        let mut body = match self.cfg.provider {
            Provider::Ollama => {
                wire::ollama_body(&self.cfg.model, &resolved, &self.cfg.options, stream)
            }
            Provider::Openai => {
                wire::openai_body(&self.cfg.model, &resolved, &self.cfg.options, stream)
            }
        };
        wire::apply_shape(
            &mut body,
            self.cfg.provider,
            call.contract,
            call.trailer,
            call.budget,
        );
        Ok(Prepared {
            body,
            image_sources,
            urgency: call.urgency,
        })
    }

    /// Sends the request and checks the status, all before `deadline`.
    async fn send(
        &self,
        prepared: &Prepared,
        deadline: Instant,
    ) -> Result<reqwest::Response, LlmError> {
        tracing::debug!(
            target: LOG_TARGET,
            provider = self.cfg.provider.as_str(),
            model = %self.cfg.model,
            url = %self.chat_url,
            stream = prepared.body.get("stream").and_then(serde_json::Value::as_bool).unwrap_or(false),
            "LLM request"
        );
        let mut req = self
            .http
            .post(&self.chat_url)
            .header(PRIORITY_HEADER, prepared.urgency.as_str())
            .json(&prepared.body);
        if let Some(auth) = &self.auth {
            req = req.header(AUTHORIZATION, auth.clone());
        }
        let bound = self.call_timeout(prepared.urgency);
        let resp = match timeout_at(deadline, req.send()).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => return Err(send_error(e, bound)),
            Err(_) => return Err(self.timed_out(&prepared.image_sources, bound).await),
        };
        if resp.status().is_success() {
            Ok(resp)
        } else {
            let err = status_error(resp, deadline).await;
            tracing::warn!(target: LOG_TARGET, model = %self.cfg.model, error = %err, "LLM request failed");
            Err(err)
        }
    }

    async fn timed_out(&self, image_sources: &[Arc<dyn ImageSource>], after: Duration) -> LlmError {
        tracing::warn!(target: LOG_TARGET, model = %self.cfg.model, timeout_secs = after.as_secs(), "LLM call timed out");
        audit_after_timeout(image_sources).await;
        LlmError::Timeout { after }
    }
}

/// The metrics of one model call: recorded once, as cancelled if dropped unfinished (the
/// caller stopped reading the stream).
struct CallRecord {
    role: Arc<str>,
    started: Instant,
    done: bool,
}

impl CallRecord {
    fn start(role: &Arc<str>) -> Self {
        Self {
            role: Arc::clone(role),
            started: Instant::now(),
            done: false,
        }
    }

    /// Success, with the token counts the server reported (`chunks` streamed deltas count
    /// as completion tokens when it reported none).
    fn succeeded(mut self, usage: Option<(u64, u64)>, chunks: u64) {
        self.finish(None, usage, chunks);
    }

    /// Failure: records it and hands the error back.
    fn failed(mut self, e: LlmError) -> LlmError {
        self.finish(Some(e.code()), None, 0);
        e
    }

    fn finish(&mut self, error: Option<&str>, usage: Option<(u64, u64)>, chunks: u64) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        ghost_metrics::llm_call(&self.role, error, self.started.elapsed());
        let (prompt, reported) = usage.unwrap_or((0, 0));
        // A server that reports no completion count: each streamed chunk is one token.
        let completion = if reported > 0 { reported } else { chunks };
        ghost_metrics::llm_tokens(&self.role, "prompt", prompt);
        ghost_metrics::llm_tokens(&self.role, "completion", completion);
    }
}

impl Drop for CallRecord {
    fn drop(&mut self) {
        if !self.done {
            self.finish(Some("cancelled"), None, 0);
        }
    }
}

/// State of a token stream between polls.
struct StreamState {
    /// This call's metrics, recorded when the stream ends.
    record: CallRecord,
    /// A background call's permit, given back when the stream is done or dropped.
    _permit: Option<tokio::sync::OwnedSemaphorePermit>,
    /// Token deltas yielded so far.
    chunks: u64,
    body: Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>,
    decoder: Decoder,
    /// Tokens decoded but not yet yielded (one HTTP chunk may hold many).
    pending: VecDeque<String>,
    /// An error to yield once `pending` is drained, so tokens before a failure are not lost.
    error: Option<LlmError>,
    finished: bool,
    /// Until the first token: when the call gives up.
    deadline: Instant,
    first_token: Duration,
    /// After it: the longest wait for the next chunk.
    idle: Duration,
    image_sources: Vec<Arc<dyn ImageSource>>,
    /// Body bytes read so far, and the most that may be.
    received: usize,
    limit: usize,
}

async fn next_token(mut st: StreamState) -> Option<(Result<String, LlmError>, StreamState)> {
    loop {
        if let Some(tok) = st.pending.pop_front() {
            st.chunks += 1;
            return Some((Ok(tok), st));
        }
        if let Some(err) = st.error.take() {
            st.record.finish(Some(err.code()), None, 0);
            return Some((Err(err), st));
        }
        if st.finished {
            let usage = st.decoder.usage();
            st.record.finish(None, usage, st.chunks);
            return None;
        }
        // Waiting for the first token, the call's deadline; after it, the idle bound.
        let (wait_until, bound) = if st.chunks == 0 {
            (st.deadline, st.first_token)
        } else {
            (Instant::now() + st.idle, st.idle)
        };
        match timeout_at(wait_until, st.body.next()).await {
            Err(_) => {
                tracing::warn!(target: LOG_TARGET, timeout_secs = bound.as_secs(), started = st.chunks > 0, "LLM stream timed out");
                audit_after_timeout(&st.image_sources).await;
                st.finished = true;
                st.error = Some(LlmError::Timeout { after: bound });
            }
            Ok(Some(Ok(bytes))) if st.received + bytes.len() > st.limit => {
                tracing::warn!(target: LOG_TARGET, limit = st.limit, "LLM stream exceeded max_response_bytes");
                st.finished = true;
                st.error = Some(LlmError::ResponseTooLarge { limit: st.limit });
            }
            Ok(Some(Ok(bytes))) => {
                st.received += bytes.len();
                match st.decoder.feed(&bytes, &mut st.pending) {
                    Ok(done) => st.finished = done,
                    Err(e) => {
                        st.finished = true;
                        st.error = Some(e);
                    }
                }
            }
            Ok(Some(Err(e))) => {
                st.finished = true;
                st.error = Some(body_error(e, bound));
            }
            Ok(None) => {
                st.finished = true;
                if let Err(e) = st.decoder.finish(&mut st.pending) {
                    st.error = Some(e);
                }
            }
        }
    }
}

/// A whole (non-streamed) body, refused as soon as it grows past `limit` bytes.
async fn read_capped(
    resp: reqwest::Response,
    limit: usize,
    timeout: Duration,
) -> Result<Vec<u8>, LlmError> {
    if resp.content_length().is_some_and(|n| n > limit as u64) {
        return Err(LlmError::ResponseTooLarge { limit });
    }
    let mut body = Vec::new();
    let mut stream = resp.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| body_error(e, timeout))?;
        if body.len() + chunk.len() > limit {
            tracing::warn!(target: LOG_TARGET, limit, "LLM reply exceeded max_response_bytes");
            return Err(LlmError::ResponseTooLarge { limit });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Error chain as one line (reqwest's top-level message hides the cause, e.g. "refused").
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

fn send_error(e: reqwest::Error, after: Duration) -> LlmError {
    if e.is_timeout() {
        LlmError::Timeout { after }
    } else {
        LlmError::Connect(chain(&e))
    }
}

/// A failure while reading an already started body: the reply is cut short.
fn body_error(e: reqwest::Error, after: Duration) -> LlmError {
    if e.is_timeout() {
        LlmError::Timeout { after }
    } else {
        LlmError::MalformedStream(format!("body read failed: {}", chain(&e)))
    }
}

fn preview(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).chars().take(120).collect()
}

/// `HttpStatus` with a truncated body (read only until the deadline and a size cap).
async fn status_error(resp: reqwest::Response, deadline: Instant) -> LlmError {
    let status = resp.status().as_u16();
    let mut body = Vec::new();
    let mut stream = resp.bytes_stream();
    while body.len() < ERROR_BODY_MAX_BYTES {
        match timeout_at(deadline, stream.next()).await {
            Ok(Some(Ok(chunk))) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    let text = String::from_utf8_lossy(&body);
    let mut truncated: String = text.chars().take(ERROR_BODY_MAX_CHARS).collect();
    if text.chars().nth(ERROR_BODY_MAX_CHARS).is_some() {
        truncated.push('…');
    }
    LlmError::HttpStatus {
        status,
        body: truncated,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::GenerationOptions;

    fn cfg(provider: Provider, base: &str) -> LlmRoleConfig {
        LlmRoleConfig {
            provider,
            base_url: base.into(),
            model: "m".into(),
            options: GenerationOptions::default(),
            timeout_secs: 60,
            stream_idle_secs: crate::config::DEFAULT_STREAM_IDLE_SECS,
            background_timeout_secs: crate::config::DEFAULT_BACKGROUND_TIMEOUT_SECS,
            max_response_bytes: crate::DEFAULT_MAX_RESPONSE_BYTES,
            background_concurrency: 1,
        }
    }

    #[test]
    fn openai_base_with_or_without_v1() {
        for base in [
            "http://h:1",
            "http://h:1/",
            "http://h:1/v1",
            "http://h:1/v1/",
        ] {
            let c = LlmClient::new(cfg(Provider::Openai, base), None).unwrap();
            assert_eq!(c.chat_url, "http://h:1/v1/chat/completions");
            assert_eq!(c.probe_url, "http://h:1/v1/models");
        }
        let c = LlmClient::new(cfg(Provider::Ollama, "http://h:1/"), None).unwrap();
        assert_eq!(c.chat_url, "http://h:1/api/chat");
        assert_eq!(c.probe_url, "http://h:1/api/tags");
    }

    #[test]
    fn invalid_configs_are_rejected() {
        assert!(matches!(
            LlmClient::new(cfg(Provider::Ollama, "ftp://h"), None),
            Err(LlmError::InvalidRequest(_))
        ));
        assert!(LlmClient::new(cfg(Provider::Ollama, "not a url"), None).is_err());
        let mut c = cfg(Provider::Ollama, "http://h");
        c.model = " ".into();
        assert!(LlmClient::new(c, None).is_err());
        let mut c = cfg(Provider::Ollama, "http://h");
        c.timeout_secs = 0;
        assert!(LlmClient::new(c, None).is_err());
        let err = LlmClient::new(
            cfg(Provider::Openai, "http://h"),
            Some("sk-se\ncret".into()),
        )
        .unwrap_err();
        assert!(!err.to_string().contains("sk-se"));
    }

    #[test]
    fn debug_output_redacts_the_key() {
        let c =
            LlmClient::new(cfg(Provider::Openai, "http://h"), Some("sk-secret".into())).unwrap();
        let dbg = format!("{c:?}");
        assert!(!dbg.contains("sk-secret"));
        assert!(dbg.contains("[redacted]"));
    }

    #[tokio::test]
    async fn connection_refused_is_connect_error() {
        // Bind then drop to get a port nobody listens on.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let c = LlmClient::new(
            cfg(Provider::Ollama, &format!("http://127.0.0.1:{port}")),
            None,
        )
        .unwrap();
        assert!(matches!(
            c.chat(&[ChatMessage::user("hi")]).await,
            Err(LlmError::Connect(_))
        ));
        assert!(matches!(c.probe().await, Err(LlmError::Connect(_))));
        assert!(matches!(
            c.chat(&[]).await,
            Err(LlmError::InvalidRequest(_))
        ));
    }
}

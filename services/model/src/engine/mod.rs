//! The inference engine: one thread owns the model and one warm llama.cpp context, and
//! serves requests by priority, streaming each reply back as it is generated.
//!
//! - `scheduler`: the two bounded queues (interactive, background), the order of service
//!   and its journal;
//! - `sequence`: one reply in progress, advanced one decode at a time so that it can be
//!   paused between any two steps (its sampler, text, token count and KV stay);
//! - `worker`: the thread: loads the model, creates the context, runs the schedule.
//!
//! Why several sequences in one context: the calls of one user turn (route decision,
//! recall selection, reply: interactive, one sequence each, chosen by what it costs: see
//! `worker`) and the background calls (write plans, reflection: their own sequence) have
//! different prompts; each sequence keeps its own prefix in the KV cache, so neither a
//! background call nor the turn's other calls evict the persona's system prompt, and a
//! background reply paused for an interactive one resumes where it stopped without
//! decoding anything again. The KV cache is not unified, so llama.cpp splits the context's
//! cells evenly between the sequences: the context is made with `model.context_size` cells
//! per sequence (that much KV memory each) and each sequence gets the configured window.

mod scheduler;
mod sequence;
mod worker;

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::{broadcast, mpsc, oneshot};

use crate::grammar::Constraint;

pub use scheduler::{Phase, Served, JOURNAL_LEN};

/// How the engine is set up.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// The GGUF file.
    pub path: PathBuf,
    /// CPU threads.
    pub threads: u32,
    /// Context window in tokens, of each sequence (the llama.cpp context holds that many
    /// per sequence; see the `worker` module).
    pub context_size: u32,
    /// Cap on generated tokens per request.
    pub max_tokens: u32,
    /// Prompt tokens per decode call.
    pub batch_size: u32,
    /// Requests that may wait, per priority.
    pub queue_depth: usize,
}

/// Who waits for a reply: the user (served first) or a background job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Priority {
    /// A user waits: served before any background request, and a background reply in
    /// progress pauses for it.
    #[default]
    Interactive,
    /// Nobody waits (write plans, reflection): served when no interactive request waits.
    Background,
}

impl Priority {
    /// The wire name (`X-Ghost-Priority`).
    pub fn as_str(self) -> &'static str {
        match self {
            Priority::Interactive => "interactive",
            Priority::Background => "background",
        }
    }

    /// Reads a wire name (case and surrounding blanks ignored).
    pub fn parse(value: &str) -> Option<Priority> {
        let value = value.trim();
        [Priority::Interactive, Priority::Background]
            .into_iter()
            .find(|p| value.eq_ignore_ascii_case(p.as_str()))
    }
}

/// One chat message, as the template sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    /// `system`, `user` or `assistant`.
    pub role: String,
    /// Its text.
    pub content: String,
}

/// What to generate.
#[derive(Debug, Clone)]
pub struct Generate {
    /// The conversation.
    pub turns: Vec<Turn>,
    /// Requested cap on generated tokens (further capped by the engine's).
    pub max_tokens: Option<u32>,
    /// Sampling temperature; 0 = greedy.
    pub temperature: f32,
    /// Nucleus mass.
    pub top_p: f32,
    /// Sampling seed.
    pub seed: u32,
    /// Stop sequences.
    pub stop: Vec<String>,
    /// A grammar the reply (or its trailer) must follow.
    pub constraint: Option<Constraint>,
    /// Its place in the order of service.
    pub priority: Priority,
    /// A name for the journal (the HTTP server uses the completion id).
    pub label: String,
}

/// Why a reply ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    /// The model ended its turn, or a stop sequence came.
    Stop,
    /// The token cap or the context was reached.
    Length,
}

impl Finish {
    /// OpenAI's `finish_reason`.
    pub fn as_str(self) -> &'static str {
        match self {
            Finish::Stop => "stop",
            Finish::Length => "length",
        }
    }
}

/// Token counts and timings of one reply.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Usage {
    /// Tokens of the templated prompt.
    pub prompt_tokens: u32,
    /// Of those, how many were decoded (the rest came from the cache).
    pub prompt_decoded: u32,
    /// Tokens generated.
    pub completion_tokens: u32,
    /// Seconds spent decoding the prompt (time paused not counted).
    pub prompt_secs: f64,
    /// Seconds spent generating (time paused not counted).
    pub generation_secs: f64,
}

/// One item of a reply stream.
#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    /// Text to append.
    Text(String),
    /// The end.
    Done {
        /// Why it ended.
        finish: Finish,
        /// Counts and timings.
        usage: Usage,
    },
    /// Generation failed midway.
    Failed(String),
}

/// Why a request was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejected {
    /// The prompt does not fit the context.
    #[error("the prompt is {prompt_tokens} tokens but the context holds {context_size} (including at least one reply token); shorten the conversation or raise model.context_size")]
    TooLong {
        /// Prompt size.
        prompt_tokens: u32,
        /// Context size.
        context_size: u32,
    },
    /// The chat template could not be applied.
    #[error("cannot apply the model's chat template: {0}")]
    Template(String),
    /// llama.cpp would not build a sampler from the grammar.
    #[error("llama.cpp refused the grammar made from the schema: {0}")]
    Grammar(String),
    /// Too many requests of this priority are already waiting.
    #[error("{0} requests are already waiting for the model; try again shortly")]
    QueueFull(usize),
    /// The engine thread is gone.
    #[error("the model engine stopped")]
    Stopped,
}

/// A started reply: its prompt size, then its pieces.
#[derive(Debug)]
pub struct Reply {
    /// The engine's id of the request (as in the journal).
    pub id: u64,
    /// Tokens of the templated prompt.
    pub prompt_tokens: u32,
    /// Text pieces, then `Done` or `Failed`.
    pub pieces: mpsc::UnboundedReceiver<Piece>,
}

/// Why the engine could not start.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// No such file.
    #[error("model file {0} not found (fetch the default one with `bash deploy/model.sh`)")]
    Missing(PathBuf),
    /// llama.cpp refused it.
    #[error("cannot load {path}: {reason}")]
    Load {
        /// The file.
        path: PathBuf,
        /// llama.cpp's error.
        reason: String,
    },
}

/// What the model says about itself.
#[derive(Debug, Clone)]
pub struct ModelInfo {
    /// Context window of each sequence.
    pub context_size: u32,
    /// Trained context of the model.
    pub trained_context: u32,
    /// Parameter count.
    pub parameters: u64,
    /// Whether the GGUF carries its own chat template (else ChatML is used).
    pub own_template: bool,
}

/// A queued request.
struct Job {
    id: u64,
    request: Generate,
    started: oneshot::Sender<Result<Reply, Rejected>>,
}

/// Closes the queues when the last [`Engine`] handle goes, which ends the thread.
#[derive(Debug)]
struct Closer(Arc<scheduler::Scheduler>);

impl Drop for Closer {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// Inference threads still running in this process.
static RUNNING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Counts one inference thread while it lives.
struct Alive;

impl Alive {
    fn new() -> Self {
        RUNNING.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Alive
    }
}

impl Drop for Alive {
    fn drop(&mut self) {
        RUNNING.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Waits, at most `limit`, until every inference thread of this process has ended (each
/// ends at its next step once its handles are gone); whether they all did. A process calls
/// it before it exits: exiting while a thread decodes can crash in llama.cpp's teardown.
pub fn wait_stopped(limit: std::time::Duration) -> bool {
    let until = std::time::Instant::now() + limit;
    while RUNNING.load(std::sync::atomic::Ordering::SeqCst) > 0 {
        if std::time::Instant::now() >= until {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    true
}

/// Handle to the inference thread; cheap to clone. The thread ends when every handle is gone.
#[derive(Clone, Debug)]
pub struct Engine {
    scheduler: Arc<scheduler::Scheduler>,
    _closer: Arc<Closer>,
    info: Arc<ModelInfo>,
}

impl Engine {
    /// Loads the model, creates and warms its context, and starts the thread.
    pub async fn start(config: EngineConfig) -> Result<Engine, EngineError> {
        if !config.path.is_file() {
            return Err(EngineError::Missing(config.path));
        }
        crate::metrics::describe();
        let scheduler = Arc::new(scheduler::Scheduler::new(config.queue_depth));
        let (ready_tx, ready_rx) = oneshot::channel();
        let path = config.path.clone();
        let thread_scheduler = scheduler.clone();
        let alive = Alive::new();
        std::thread::Builder::new()
            .name("ghost-model".into())
            .spawn(move || {
                let _alive = alive;
                worker::run(config, thread_scheduler, ready_tx)
            })
            .map_err(|e| EngineError::Load {
                path: path.clone(),
                reason: e.to_string(),
            })?;
        let info = ready_rx
            .await
            .map_err(|_| EngineError::Load {
                path: path.clone(),
                reason: "the engine thread ended".into(),
            })?
            .map_err(|reason| EngineError::Load { path, reason })?;
        Ok(Engine {
            _closer: Arc::new(Closer(scheduler.clone())),
            scheduler,
            info: Arc::new(info),
        })
    }

    /// What the model says about itself.
    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// Queues a request now (its place in the queue is taken by this call, not by the first
    /// poll); the future resolves when its turn comes, and the reply then streams.
    pub fn generate(
        &self,
        request: Generate,
    ) -> impl std::future::Future<Output = Result<Reply, Rejected>> + Send + 'static {
        let (started, wait) = oneshot::channel();
        let queued = self.scheduler.submit(request, started);
        async move {
            queued?;
            wait.await.map_err(|_| Rejected::Stopped)?
        }
    }

    /// The order of service so far (the latest [`JOURNAL_LEN`] entries).
    pub fn journal(&self) -> Vec<Served> {
        self.scheduler.journal()
    }

    /// Every journal entry from now on, as it happens.
    pub fn watch(&self) -> broadcast::Receiver<Served> {
        self.scheduler.watch()
    }
}

//! The inference thread: owns the model and one warm context, takes requests from a
//! bounded queue one at a time, and streams each reply back as it is generated.
//!
//! The context stays alive between requests (its first decode is the slow one), and the
//! KV cache keeps the previous prompt: a request sharing a prefix with it (the same system
//! prompt, the same conversation one turn later) decodes only what is new.

use std::num::NonZeroU32;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Instant;

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use tokio::sync::{mpsc, oneshot};

use crate::text::ReplyText;

/// How the engine is set up.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// The GGUF file.
    pub path: PathBuf,
    /// CPU threads.
    pub threads: u32,
    /// Context window in tokens.
    pub context_size: u32,
    /// Cap on generated tokens per request.
    pub max_tokens: u32,
    /// Prompt tokens per decode call.
    pub batch_size: u32,
    /// Requests that may wait.
    pub queue_depth: usize,
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
    /// Seconds spent decoding the prompt.
    pub prompt_secs: f64,
    /// Seconds spent generating.
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
    /// Too many requests are already waiting.
    #[error("{0} requests are already waiting for the model; try again shortly")]
    QueueFull(usize),
    /// The engine thread is gone.
    #[error("the model engine stopped")]
    Stopped,
}

/// A started reply: its prompt size, then its pieces.
#[derive(Debug)]
pub struct Reply {
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
    /// Context window.
    pub context_size: u32,
    /// Trained context of the model.
    pub trained_context: u32,
    /// Parameter count.
    pub parameters: u64,
    /// Whether the GGUF carries its own chat template (else ChatML is used).
    pub own_template: bool,
}

struct Job {
    request: Generate,
    started: oneshot::Sender<Result<Reply, Rejected>>,
}

/// Handle to the inference thread; cheap to clone. The thread ends when every handle is gone.
#[derive(Clone, Debug)]
pub struct Engine {
    jobs: mpsc::Sender<Job>,
    queue_depth: usize,
    info: std::sync::Arc<ModelInfo>,
}

/// llama.cpp's backend may be initialised once per process.
fn backend() -> Result<&'static LlamaBackend, String> {
    static BACKEND: OnceLock<Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            llama_cpp_2::send_logs_to_tracing(llama_cpp_2::LogOptions::default());
            LlamaBackend::init().map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(Clone::clone)
}

impl Engine {
    /// Loads the model, creates and warms its context, and starts the thread.
    pub async fn start(config: EngineConfig) -> Result<Engine, EngineError> {
        if !config.path.is_file() {
            return Err(EngineError::Missing(config.path));
        }
        let (jobs, queue) = mpsc::channel(config.queue_depth);
        let (ready_tx, ready_rx) = oneshot::channel();
        let path = config.path.clone();
        std::thread::Builder::new()
            .name("ghost-model".into())
            .spawn(move || run(config, queue, ready_tx))
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
        let queue_depth = jobs.max_capacity();
        Ok(Engine {
            jobs,
            queue_depth,
            info: std::sync::Arc::new(info),
        })
    }

    /// What the model says about itself.
    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// Queues a request and waits for its turn; the reply then streams.
    pub async fn generate(&self, request: Generate) -> Result<Reply, Rejected> {
        let (started, wait) = oneshot::channel();
        self.jobs
            .try_send(Job { request, started })
            .map_err(|e| match e {
                mpsc::error::TrySendError::Full(_) => Rejected::QueueFull(self.queue_depth),
                mpsc::error::TrySendError::Closed(_) => Rejected::Stopped,
            })?;
        wait.await.map_err(|_| Rejected::Stopped)?
    }
}

/// The thread body: load, warm up, then serve jobs until every sender is gone.
fn run(
    config: EngineConfig,
    mut queue: mpsc::Receiver<Job>,
    ready: oneshot::Sender<Result<ModelInfo, String>>,
) {
    let loaded = (|| {
        let backend = backend()?;
        let model = LlamaModel::load_from_file(backend, &config.path, &LlamaModelParams::default())
            .map_err(|e| e.to_string())?;
        Ok::<_, String>((backend, model))
    })();
    let (backend, model) = match loaded {
        Ok(v) => v,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let threads = i32::try_from(config.threads).unwrap_or(1);
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(config.context_size))
        .with_n_batch(config.batch_size)
        .with_n_ubatch(config.batch_size)
        .with_n_threads(threads)
        .with_n_threads_batch(threads);
    let mut ctx = match model.new_context(backend, params) {
        Ok(ctx) => ctx,
        Err(e) => {
            let _ = ready.send(Err(format!("cannot create a context: {e}")));
            return;
        }
    };
    let (template, own_template) = match model.chat_template(None) {
        Ok(t) => (t, true),
        Err(_) => match LlamaChatTemplate::new("chatml") {
            Ok(t) => (t, false),
            Err(e) => {
                let _ = ready.send(Err(e.to_string()));
                return;
            }
        },
    };
    let mut engine = Worker {
        model: &model,
        template,
        cached: Vec::new(),
        config: &config,
    };
    // Warm up: the first decode of a fresh context allocates its compute buffers.
    if let Err(e) = engine.warm_up(&mut ctx) {
        let _ = ready.send(Err(format!("warm-up decode failed: {e}")));
        return;
    }
    let info = ModelInfo {
        context_size: ctx.n_ctx(),
        trained_context: model.n_ctx_train(),
        parameters: model.n_params(),
        own_template,
    };
    if ready.send(Ok(info)).is_err() {
        return;
    }
    while let Some(job) = queue.blocking_recv() {
        engine.serve(&mut ctx, job);
    }
}

/// State of the thread between jobs.
struct Worker<'m> {
    model: &'m LlamaModel,
    template: LlamaChatTemplate,
    /// The tokens whose keys and values the context holds, in order from position 0.
    cached: Vec<LlamaToken>,
    config: &'m EngineConfig,
}

impl Worker<'_> {
    fn warm_up(&mut self, ctx: &mut LlamaContext<'_>) -> Result<(), String> {
        let tokens = self.model.vocab().tokenize(b"Hello", true, false);
        self.decode_prompt(ctx, &tokens)?;
        Ok(())
    }

    /// Templates and tokenizes a request.
    fn prompt(&self, turns: &[Turn]) -> Result<Vec<LlamaToken>, Rejected> {
        let messages = turns
            .iter()
            .map(|t| LlamaChatMessage::new(t.role.clone(), t.content.clone()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| Rejected::Template(e.to_string()))?;
        let text = self
            .model
            .apply_chat_template(&self.template, &messages, true)
            .map_err(|e| Rejected::Template(e.to_string()))?;
        // As llama.cpp's server does: BOS if the model asks for one, and the template's
        // special tokens (`<|im_start|>` …) as tokens, not text.
        Ok(self.model.vocab().tokenize(text.as_bytes(), true, true))
    }

    fn serve(&mut self, ctx: &mut LlamaContext<'_>, job: Job) {
        let prompt = match self.prompt(&job.request.turns) {
            Ok(p) => p,
            Err(e) => {
                let _ = job.started.send(Err(e));
                return;
            }
        };
        let context_size = ctx.n_ctx();
        let prompt_tokens = u32::try_from(prompt.len()).unwrap_or(u32::MAX);
        if prompt.is_empty() || prompt_tokens >= context_size {
            let _ = job.started.send(Err(Rejected::TooLong {
                prompt_tokens,
                context_size,
            }));
            return;
        }
        let (tx, pieces) = mpsc::unbounded_channel();
        if job
            .started
            .send(Ok(Reply {
                prompt_tokens,
                pieces,
            }))
            .is_err()
        {
            return; // the client gave up while queued
        }
        let outcome = self.generate(ctx, &prompt, &job.request, &tx);
        let piece = match outcome {
            Ok(done) => done,
            Err(e) => {
                tracing::warn!(error = %e, "generation failed");
                self.reset(ctx);
                Piece::Failed(e)
            }
        };
        let _ = tx.send(piece);
    }

    fn reset(&mut self, ctx: &mut LlamaContext<'_>) {
        ctx.clear_kv_cache();
        self.cached.clear();
    }

    /// Decodes `prompt`, reusing the cached prefix; returns how many tokens were decoded.
    fn decode_prompt(
        &mut self,
        ctx: &mut LlamaContext<'_>,
        prompt: &[LlamaToken],
    ) -> Result<usize, String> {
        let mut common = self
            .cached
            .iter()
            .zip(prompt)
            .take_while(|(a, b)| a == b)
            .count();
        // The last prompt token is always decoded again: its logits start the reply.
        common = common.min(prompt.len().saturating_sub(1));
        let kept = u32::try_from(common).map_err(|e| e.to_string())?;
        if !matches!(ctx.clear_kv_cache_seq(Some(0), Some(kept), None), Ok(true)) {
            self.reset(ctx);
            common = 0;
        }
        self.cached.truncate(common);
        let batch_size = self.config.batch_size as usize;
        let mut batch = LlamaBatch::new(batch_size, 1);
        let rest = prompt.get(common..).unwrap_or_default();
        for (chunk_index, chunk) in rest.chunks(batch_size).enumerate() {
            batch.clear();
            let start = common + chunk_index * batch_size;
            for (i, token) in chunk.iter().enumerate() {
                let pos = i32::try_from(start + i).map_err(|e| e.to_string())?;
                let last = start + i + 1 == prompt.len();
                batch
                    .add(*token, pos, &[0], last)
                    .map_err(|e| e.to_string())?;
            }
            ctx.decode(&mut batch).map_err(|e| {
                self.cached.clear();
                e.to_string()
            })?;
            self.cached.extend_from_slice(chunk);
        }
        Ok(rest.len())
    }

    fn sampler(request: &Generate) -> LlamaSampler {
        if request.temperature <= 0.0 {
            return LlamaSampler::greedy();
        }
        LlamaSampler::chain_simple([
            LlamaSampler::top_k(40),
            LlamaSampler::top_p(request.top_p, 1),
            LlamaSampler::min_p(0.05, 1),
            LlamaSampler::temp(request.temperature),
            LlamaSampler::dist(request.seed),
        ])
    }

    fn generate(
        &mut self,
        ctx: &mut LlamaContext<'_>,
        prompt: &[LlamaToken],
        request: &Generate,
        tx: &mpsc::UnboundedSender<Piece>,
    ) -> Result<Piece, String> {
        let started = Instant::now();
        let decoded = self.decode_prompt(ctx, prompt)?;
        let prompt_secs = started.elapsed().as_secs_f64();
        let generation_started = Instant::now();
        let room = ctx.n_ctx() as usize - prompt.len();
        let cap = request
            .max_tokens
            .unwrap_or(self.config.max_tokens)
            .min(self.config.max_tokens) as usize;
        let budget = cap.min(room);
        let mut sampler = Self::sampler(request);
        let mut text = ReplyText::new(request.stop.clone());
        let mut batch = LlamaBatch::new(1, 1);
        let mut generated = 0usize;
        let mut finish = Finish::Length;
        let mut piece = Vec::new();
        let vocab = self.model.vocab();
        while generated < budget {
            let token = sampler.sample(ctx, -1);
            if vocab.is_eog(token) {
                finish = Finish::Stop;
                break;
            }
            generated += 1;
            piece.clear();
            vocab.token_to_piece_into(token, &mut piece, false, None);
            let pushed = text.push(&piece);
            if !pushed.text.is_empty() && tx.send(Piece::Text(pushed.text)).is_err() {
                // The client left: stop spending the CPU on it.
                tracing::debug!("client gone; generation stopped");
                break;
            }
            if pushed.stopped {
                finish = Finish::Stop;
                break;
            }
            if generated == budget {
                break;
            }
            batch.clear();
            let pos = i32::try_from(self.cached.len()).map_err(|e| e.to_string())?;
            batch
                .add(token, pos, &[0], true)
                .map_err(|e| e.to_string())?;
            ctx.decode(&mut batch).map_err(|e| e.to_string())?;
            self.cached.push(token);
        }
        let rest = text.finish();
        if !rest.is_empty() {
            let _ = tx.send(Piece::Text(rest));
        }
        let usage = Usage {
            prompt_tokens: u32::try_from(prompt.len()).unwrap_or(u32::MAX),
            prompt_decoded: u32::try_from(decoded).unwrap_or(u32::MAX),
            completion_tokens: u32::try_from(generated).unwrap_or(u32::MAX),
            prompt_secs,
            generation_secs: generation_started.elapsed().as_secs_f64(),
        };
        tracing::debug!(?usage, finish = finish.as_str(), "reply generated");
        Ok(Piece::Done { finish, usage })
    }
}

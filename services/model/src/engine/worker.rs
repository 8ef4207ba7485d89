//! The inference thread: loads the model, creates one context with several sequences, warms
//! it up, then serves the schedule until every [`super::Engine`] handle is gone.
//!
//! The context has [`INTERACTIVE_SLOTS`] sequences for interactive requests and one for
//! background ones, and a KV cache that is not unified: llama.cpp then gives each sequence its
//! own `n_ctx / n_seq_max` cells (rounded up to 256), so the context is created with
//! `model.context_size` cells per sequence, and none can evict another's prefix. Each sequence
//! keeps the tokens of its last prompt and reply: a request sharing a prefix with them (the
//! same system prompt, the same conversation one turn later) decodes only what is new.
//!
//! Why several interactive sequences: one user turn asks for a route decision (the
//! classifier, or Kuro's delegation on LINE), a recall selection and the reply, each with its
//! own system prompt, and the stage and autonomy messages have theirs. In one sequence each
//! would evict the one before, and the reply would decode its whole prompt every turn; with
//! one sequence each (chosen by what it costs: `slot_cost`), each decodes only what is new.

use std::num::NonZeroU32;
use std::sync::{Arc, OnceLock};

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use tokio::sync::{mpsc, oneshot};

use super::scheduler::{Next, Phase, Scheduler, Served};
use super::sequence::{Active, Slot};
use super::{EngineConfig, Job, ModelInfo, Priority, Rejected, Reply, Turn};
use crate::grammar::Constraint;
use crate::metrics;

/// Sequences interactive requests choose from (by the longest shared prefix).
pub const INTERACTIVE_SLOTS: usize = 5;
/// Sequences of the context: the interactive ones, then the background one.
const SEQUENCES: u32 = INTERACTIVE_SLOTS as u32 + 1;
/// The background sequence.
const BACKGROUND_SEQ: usize = INTERACTIVE_SLOTS;

/// A shared prefix this long says a slot holds the same kind of call (a system prompt is
/// hundreds of tokens; the chat template's header and "You are クロ (internal id: kuro)",
/// which the reply's and the recall selection's prompts both begin with, are some twenty).
const SAME_KIND_PREFIX: usize = 64;

/// What taking a slot holding `cached` costs a request for `prompt`, in tokens: those of
/// the prompt it must decode, plus, when the slot holds another kind of call, all of that
/// call's cache (it would have found it there next turn). Counting only the first, a recall
/// selection took the reply's slot for their twenty shared tokens, and the two evicted each
/// other every turn: the selection decoded 1,062 of its 1,078 prompt tokens each time in
/// the live conversation.
fn slot_cost(cached: &[LlamaToken], prompt: &[LlamaToken]) -> usize {
    let shared = cached
        .iter()
        .zip(prompt)
        .take_while(|(a, b)| a == b)
        .count();
    let decode = prompt.len() - shared;
    if shared >= SAME_KIND_PREFIX {
        decode
    } else {
        decode + cached.len()
    }
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

/// The thread body: load, warm up, then serve until the queues close.
pub(super) fn run(
    config: EngineConfig,
    scheduler: Arc<Scheduler>,
    ready: oneshot::Sender<Result<ModelInfo, String>>,
) {
    // llama.cpp logs from this thread: its ~140 INFO lines per start become DEBUG.
    let _logs = tracing::dispatcher::set_default(&crate::logs::demoting_dispatch());
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
        .with_n_ctx(NonZeroU32::new(
            config.context_size.saturating_mul(SEQUENCES),
        ))
        .with_n_seq_max(SEQUENCES)
        .with_kv_unified(false)
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
    let mut worker = Worker {
        model: &model,
        template,
        cached: std::array::from_fn(|_| Vec::new()),
        last_used: [0; SEQUENCES as usize],
        clock: 0,
        seq_context: ctx.n_ctx() / SEQUENCES,
        config: &config,
        scheduler: &scheduler,
    };
    // Warm up: the first decode of a fresh context allocates its compute buffers.
    let hello = model.vocab().tokenize(b"Hello", true, false);
    if let Err(e) = worker.slot(&mut ctx, 0).decode(&hello) {
        let _ = ready.send(Err(format!("warm-up decode failed: {e}")));
        return;
    }
    let info = ModelInfo {
        context_size: worker.seq_context,
        trained_context: model.n_ctx_train(),
        parameters: model.n_params(),
        own_template,
    };
    if ready.send(Ok(info)).is_err() {
        return;
    }
    worker.serve(&mut ctx);
}

/// State of the thread between steps.
struct Worker<'m> {
    model: &'m LlamaModel,
    template: LlamaChatTemplate,
    /// Per sequence, the tokens whose KV it holds, in order from position 0.
    cached: [Vec<LlamaToken>; SEQUENCES as usize],
    /// Per sequence, when a request last started on it (the worker's own clock).
    last_used: [u64; SEQUENCES as usize],
    clock: u64,
    /// Cells of each sequence.
    seq_context: u32,
    config: &'m EngineConfig,
    scheduler: &'m Scheduler,
}

impl<'m> Worker<'m> {
    fn slot<'a, 'c>(&'a mut self, ctx: &'a mut LlamaContext<'c>, seq: usize) -> Slot<'a, 'c>
    where
        'm: 'a,
    {
        Slot {
            ctx,
            model: self.model,
            cached: &mut self.cached[seq],
            seq: i32::try_from(seq).unwrap_or(0),
            batch_size: self.config.batch_size.max(1) as usize,
        }
    }

    /// The schedule: interactive requests first; the paused background reply next; then
    /// background requests.
    fn serve(&mut self, ctx: &mut LlamaContext<'_>) {
        let mut paused: Option<Active> = None;
        loop {
            let active = match self.scheduler.next(paused.is_some()) {
                Next::Closed => return,
                Next::Resume => match paused.take() {
                    Some(a) => {
                        self.record(&a, Phase::Resumed);
                        a
                    }
                    None => continue,
                },
                Next::Job(job) => match self.start(ctx, job) {
                    Some(a) => {
                        self.record(&a, Phase::Started);
                        a
                    }
                    None => continue,
                },
            };
            // Only a background reply pauses, and only one is ever in progress: the one
            // resumed, or a new one when none was paused.
            if let Some(stopped) = self.run(ctx, active) {
                paused = Some(stopped);
            }
        }
    }

    fn record(&self, a: &Active, phase: Phase) {
        self.scheduler.record(Served {
            id: a.id,
            label: a.label.clone(),
            priority: a.priority,
            phase,
            tokens: a.generated(),
        });
    }

    /// Steps a reply to its end, or until an interactive request arrives while it is a
    /// background one: then it is returned, paused.
    fn run(&mut self, ctx: &mut LlamaContext<'_>, mut active: Active) -> Option<Active> {
        let seq = active.seq;
        loop {
            // Every handle is gone (the process is stopping): nobody reads this reply, and
            // a decode still running while the process exits crashes it in llama.cpp's
            // teardown.
            if self.scheduler.is_closed() {
                self.record(&active, Phase::Finished);
                return None;
            }
            if active.priority == Priority::Background && self.scheduler.interactive_waiting() {
                self.record(&active, Phase::Paused);
                metrics::preempted();
                return Some(active);
            }
            match active.step(&mut self.slot(ctx, seq)) {
                Ok(None) => {}
                Ok(Some(finish)) => {
                    self.record(&active, Phase::Finished);
                    let usage = active.finish(finish);
                    tracing::debug!(?usage, finish = finish.as_str(), "reply generated");
                    return None;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "generation failed");
                    // Only this sequence's KV is in doubt; the other one stays warm.
                    let _ = ctx.clear_kv_cache_seq(u32::try_from(seq).ok(), None, None);
                    self.cached[seq].clear();
                    self.record(&active, Phase::Finished);
                    active.fail(e);
                    return None;
                }
            }
        }
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

    fn grammar(&self, constraint: &Constraint) -> Result<LlamaSampler, Rejected> {
        let made = match &constraint.trigger {
            None => LlamaSampler::grammar(self.model, &constraint.grammar, &constraint.root),
            Some(trigger) => LlamaSampler::grammar_lazy(
                self.model,
                &constraint.grammar,
                &constraint.root,
                [trigger.as_bytes()],
                &[],
            ),
        };
        made.map_err(|e| Rejected::Grammar(e.to_string()))
    }

    /// Checks a request, answers its caller, and readies its sequence (the cached prefix
    /// kept, the rest of the sequence dropped); `None` when it is not to be served.
    fn start(&mut self, ctx: &mut LlamaContext<'_>, job: Job) -> Option<Active> {
        let checked = self.prompt(&job.request.turns).and_then(|prompt| {
            let prompt_tokens = u32::try_from(prompt.len()).unwrap_or(u32::MAX);
            if prompt.is_empty() || prompt_tokens >= self.seq_context {
                return Err(Rejected::TooLong {
                    prompt_tokens,
                    context_size: self.seq_context,
                });
            }
            let grammar = match &job.request.constraint {
                Some(c) => Some(self.grammar(c)?),
                None => None,
            };
            Ok((prompt, grammar))
        });
        let (prompt, grammar) = match checked {
            Ok(v) => v,
            Err(e) => {
                let _ = job.started.send(Err(e));
                return None;
            }
        };
        let (tx, pieces) = mpsc::unbounded_channel();
        let reply = Reply {
            id: job.id,
            prompt_tokens: u32::try_from(prompt.len()).unwrap_or(u32::MAX),
            pieces,
        };
        if job.started.send(Ok(reply)).is_err() {
            return None; // the client gave up while queued
        }
        let seq = self.choose_seq(job.request.priority, &prompt);
        self.clock += 1;
        self.last_used[seq] = self.clock;
        let reused = self.reuse_prefix(ctx, seq, &prompt);
        let cap = job
            .request
            .max_tokens
            .unwrap_or(self.config.max_tokens)
            .min(self.config.max_tokens) as usize;
        let room = self.seq_context as usize - prompt.len();
        let mut active = Active::new(
            job.id,
            &job.request,
            prompt,
            reused,
            grammar,
            cap.min(room),
            tx,
        );
        active.seq = seq;
        Some(active)
    }

    /// The sequence a request starts on: the background one, or the interactive slot that
    /// costs least (see [`slot_cost`]), the least recently used among equals.
    fn choose_seq(&self, priority: Priority, prompt: &[LlamaToken]) -> usize {
        if priority == Priority::Background {
            return BACKGROUND_SEQ;
        }
        (0..INTERACTIVE_SLOTS)
            .min_by_key(|&seq| (slot_cost(&self.cached[seq], prompt), self.last_used[seq]))
            .unwrap_or(0)
    }

    /// Keeps the longest cached prefix of `prompt` in sequence `seq` and drops the rest;
    /// returns its length.
    fn reuse_prefix(
        &mut self,
        ctx: &mut LlamaContext<'_>,
        seq: usize,
        prompt: &[LlamaToken],
    ) -> usize {
        let cached = &mut self.cached[seq];
        let common = cached
            .iter()
            .zip(prompt)
            .take_while(|(a, b)| a == b)
            .count()
            // The last prompt token is always decoded again: its logits start the reply.
            .min(prompt.len().saturating_sub(1));
        let seq_id = u32::try_from(seq).ok();
        let kept = u32::try_from(common).ok();
        if matches!(ctx.clear_kv_cache_seq(seq_id, kept, None), Ok(true)) {
            cached.truncate(common);
            return common;
        }
        let _ = ctx.clear_kv_cache_seq(seq_id, None, None);
        cached.clear();
        0
    }
}

//! The sentence-embedding model behind `/v1/embeddings`: all-MiniLM-L6-v2 (a 6-layer BERT,
//! 384 dimensions, English), run in process on the CPU by candle, its text split by its own
//! `tokenizer.json` (`tokenizers`). A sentence's vector is what sentence-transformers gives
//! for this model: the mean of the last layer's token vectors over the attention mask,
//! divided by its L2 norm. Texts are cut at [`MAX_TOKENS`] tokens (the model's
//! `max_seq_length`).
//!
//! Inference runs off the async runtime, one batch at a time (a mutex), on a thread pool of
//! its own (`model.embedding_threads`, 1 by default: the chat model keeps the other core),
//! so the runtime (and a chat reply streaming beside it) is never held up; at most
//! `queue_depth` requests wait, one more gets [`EmbedError::QueueFull`].
//!
//! - [`wire`]: the OpenAI wire format (request checks, reply).

pub mod wire;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config as BertConfig};
use tokenizers::{Tokenizer, TruncationParams};

/// Tokens a text is cut to (all-MiniLM-L6-v2's `max_seq_length`), `[CLS]` and `[SEP]`
/// included.
pub const MAX_TOKENS: usize = 256;

/// Texts run through the model together at most (similar lengths together: less padding).
const SUB_BATCH: usize = 16;

/// What can go wrong loading or running the model.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// A file is missing or unreadable, or the model does not load.
    #[error("embedding model {path}: {reason} (run `bash deploy/model.sh` to fetch it)")]
    Load {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// More requests wait than the queue holds.
    #[error("{0} embedding requests are waiting already")]
    QueueFull(usize),
    /// Tokenizing or inference failed.
    #[error("embedding failed: {0}")]
    Failed(String),
}

/// Vectors for a batch of texts, in order, and the tokens the model read.
#[derive(Debug, Clone)]
pub struct Embedded {
    /// One unit-length vector per text.
    pub vectors: Vec<Vec<f32>>,
    /// Tokens read (after truncation), `[CLS]` and `[SEP]` included.
    pub tokens: usize,
}

struct Model {
    bert: BertModel,
    tokenizer: Tokenizer,
}

/// The loaded model, shared by the handlers (cheap to clone).
#[derive(Clone)]
pub struct Embedder {
    model: Arc<Mutex<Model>>,
    pool: Arc<rayon::ThreadPool>,
    dimensions: usize,
    waiting: Arc<AtomicUsize>,
    queue_depth: usize,
}

fn load_error(path: &Path, reason: impl ToString) -> EmbedError {
    EmbedError::Load {
        path: path.to_owned(),
        reason: reason.to_string(),
    }
}

impl Embedder {
    /// Loads `model.safetensors`, `tokenizer.json` and `config.json` from `dir`, to run on
    /// `threads` threads; at most `queue_depth` requests may wait for it.
    pub fn load(dir: &Path, threads: usize, queue_depth: usize) -> Result<Self, EmbedError> {
        let config_path = dir.join("config.json");
        let config: BertConfig = std::fs::read(&config_path)
            .map_err(|e| load_error(&config_path, e))
            .and_then(|b| serde_json::from_slice(&b).map_err(|e| load_error(&config_path, e)))?;
        let tokenizer_path = dir.join("tokenizer.json");
        let mut tokenizer =
            Tokenizer::from_file(&tokenizer_path).map_err(|e| load_error(&tokenizer_path, e))?;
        // The file pads every text to 128 tokens and cuts there; sentence-transformers cuts
        // at 256 and pads each batch to its longest text (done below, with the mask).
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..TruncationParams::default()
            }))
            .map_err(|e| load_error(&tokenizer_path, e))?;
        let weights_path = dir.join("model.safetensors");
        let weights = std::fs::read(&weights_path).map_err(|e| load_error(&weights_path, e))?;
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &Device::Cpu)
            .map_err(|e| load_error(&weights_path, e))?;
        let bert = BertModel::load(vb, &config).map_err(|e| load_error(&weights_path, e))?;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads.max(1))
            .thread_name(|i| format!("ghost-embed-{i}"))
            .build()
            .map_err(|e| load_error(dir, e))?;
        Ok(Self {
            model: Arc::new(Mutex::new(Model { bert, tokenizer })),
            pool: Arc::new(pool),
            dimensions: config.hidden_size,
            waiting: Arc::new(AtomicUsize::new(0)),
            queue_depth,
        })
    }

    /// The vectors' length (384).
    pub fn dimensions(&self) -> usize {
        self.dimensions
    }

    /// Embeds `texts` off the async runtime.
    pub async fn embed(&self, texts: Vec<String>) -> Result<Embedded, EmbedError> {
        if self.waiting.fetch_add(1, Ordering::SeqCst) >= self.queue_depth {
            self.waiting.fetch_sub(1, Ordering::SeqCst);
            return Err(EmbedError::QueueFull(self.queue_depth));
        }
        let this = self.clone();
        let result = tokio::task::spawn_blocking(move || this.embed_blocking(&texts)).await;
        self.waiting.fetch_sub(1, Ordering::SeqCst);
        result.map_err(|e| EmbedError::Failed(format!("the embedding task ended: {e}")))?
    }

    /// Embeds `texts`, blocking this thread (tests and benchmarks; the server uses
    /// [`Self::embed`]).
    pub fn embed_blocking(&self, texts: &[String]) -> Result<Embedded, EmbedError> {
        self.pool.install(|| self.embed_here(texts))
    }

    fn embed_here(&self, texts: &[String]) -> Result<Embedded, EmbedError> {
        let model = self
            .model
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let failed = |e: &dyn std::fmt::Display| EmbedError::Failed(e.to_string());
        let encodings = model
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| failed(&e))?;
        let tokens = encodings.iter().map(|e| e.get_ids().len()).sum();
        // Similar lengths together, then back in the callers' order.
        let mut order: Vec<usize> = (0..encodings.len()).collect();
        order.sort_by_key(|&i| encodings[i].get_ids().len());
        let mut vectors = vec![Vec::new(); encodings.len()];
        for chunk in order.chunks(SUB_BATCH) {
            let ids: Vec<&[u32]> = chunk.iter().map(|&i| encodings[i].get_ids()).collect();
            let pooled = run(&model.bert, &ids).map_err(|e| failed(&e))?;
            for (&i, v) in chunk.iter().zip(pooled) {
                vectors[i] = v;
            }
        }
        Ok(Embedded { vectors, tokens })
    }
}

/// The model over one padded batch: mean over the mask, then L2-normalised.
fn run(bert: &BertModel, ids: &[&[u32]]) -> candle_core::Result<Vec<Vec<f32>>> {
    let len = ids.iter().map(|t| t.len()).max().unwrap_or(0).max(1);
    let mut flat = Vec::with_capacity(ids.len() * len);
    let mut mask = Vec::with_capacity(ids.len() * len);
    for t in ids {
        flat.extend_from_slice(t);
        flat.extend(std::iter::repeat_n(0, len - t.len()));
        mask.extend(std::iter::repeat_n(1u32, t.len()));
        mask.extend(std::iter::repeat_n(0u32, len - t.len()));
    }
    let shape = (ids.len(), len);
    let input = Tensor::from_vec(flat, shape, &Device::Cpu)?;
    let mask = Tensor::from_vec(mask, shape, &Device::Cpu)?;
    let types = input.zeros_like()?;
    let hidden = bert.forward(&input, &types, Some(&mask))?; // (n, len, dims)
    let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?; // (n, len, 1)
    let summed = hidden.broadcast_mul(&mask)?.sum(1)?; // (n, dims)
    let counts = mask.sum(1)?.clamp(1e-9f32, f32::MAX)?; // (n, 1)
    let mean = summed.broadcast_div(&counts)?;
    let norms = mean
        .sqr()?
        .sum_keepdim(1)?
        .sqrt()?
        .clamp(1e-12f32, f32::MAX)?;
    mean.broadcast_div(&norms)?.to_vec2::<f32>()
}

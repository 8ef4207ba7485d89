//! One reply in progress, advanced by [`Active::step`]: each step is one decode (a batch of
//! the prompt, or the previous sampled token) and, once the prompt is in, one sample. The
//! logits a sample reads come from the decode of the same step, so the worker may run
//! another sequence between two steps: a paused reply keeps its sampler (and grammar
//! state), its text, its token count and its KV, and needs nothing decoded again.

use std::time::Instant;

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::LlamaToken;
use tokio::sync::mpsc;

use super::{Finish, Generate, Piece, Priority, Usage};
use crate::text::ReplyText;

/// A started reply.
pub(super) struct Active {
    pub(super) id: u64,
    pub(super) label: String,
    pub(super) priority: Priority,
    /// The context's sequence it decodes in (set by the worker when it starts).
    pub(super) seq: usize,
    prompt: Vec<LlamaToken>,
    /// Prompt tokens whose KV the sequence held already.
    reused: usize,
    /// Prompt tokens in the KV so far.
    decoded: usize,
    sampler: LlamaSampler,
    /// Kept apart from `sampler`: see [`Active::sample`].
    grammar: Option<LlamaSampler>,
    text: ReplyText,
    /// The last sampled token, not yet decoded.
    pending: Option<LlamaToken>,
    generated: usize,
    budget: usize,
    prompt_secs: f64,
    generation_secs: f64,
    tx: mpsc::UnboundedSender<Piece>,
}

/// Where a reply's tokens go: its sequence of the context, and what that sequence holds.
pub(super) struct Slot<'a, 'c> {
    pub(super) ctx: &'a mut LlamaContext<'c>,
    pub(super) model: &'a LlamaModel,
    /// The tokens whose KV the sequence holds, from position 0.
    pub(super) cached: &'a mut Vec<LlamaToken>,
    pub(super) seq: i32,
    pub(super) batch_size: usize,
}

impl Slot<'_, '_> {
    /// Decodes `tokens` at the end of the sequence; logits for the last one only.
    pub(super) fn decode(&mut self, tokens: &[LlamaToken]) -> Result<(), String> {
        let mut batch = LlamaBatch::new(tokens.len().max(1), 1);
        let start = self.cached.len();
        for (i, token) in tokens.iter().enumerate() {
            let pos = i32::try_from(start + i).map_err(|e| e.to_string())?;
            batch
                .add(*token, pos, &[self.seq], i + 1 == tokens.len())
                .map_err(|e| e.to_string())?;
        }
        self.ctx.decode(&mut batch).map_err(|e| e.to_string())?;
        self.cached.extend_from_slice(tokens);
        Ok(())
    }
}

impl Active {
    /// A reply to `request` whose prompt's first `reused` tokens the sequence holds.
    pub(super) fn new(
        id: u64,
        request: &Generate,
        prompt: Vec<LlamaToken>,
        reused: usize,
        grammar: Option<LlamaSampler>,
        budget: usize,
        tx: mpsc::UnboundedSender<Piece>,
    ) -> Self {
        Self {
            id,
            label: request.label.clone(),
            priority: request.priority,
            seq: 0,
            prompt,
            reused,
            decoded: reused,
            sampler: sampler(request),
            grammar,
            text: ReplyText::new(request.stop.clone()),
            pending: None,
            generated: 0,
            budget,
            prompt_secs: 0.0,
            generation_secs: 0.0,
            tx,
        }
    }

    /// Tokens generated so far.
    pub(super) fn generated(&self) -> u32 {
        count(self.generated)
    }

    /// One decode, and a sample once the prompt is in; `Some` when the reply is over.
    pub(super) fn step(&mut self, slot: &mut Slot<'_, '_>) -> Result<Option<Finish>, String> {
        if self.tx.is_closed() {
            // The client left (perhaps while this reply was paused or in its prompt).
            tracing::debug!(id = self.id, "client gone; generation stopped");
            return Ok(Some(Finish::Stop));
        }
        let started = Instant::now();
        let in_prompt = self.decoded < self.prompt.len();
        if in_prompt {
            let end = (self.decoded + slot.batch_size).min(self.prompt.len());
            slot.decode(&self.prompt[self.decoded..end])?;
            self.decoded = end;
            if end < self.prompt.len() {
                // Between two prompt batches: a background prompt may yield here.
                self.prompt_secs += started.elapsed().as_secs_f64();
                return Ok(None);
            }
        } else if let Some(token) = self.pending.take() {
            slot.decode(&[token])?;
        }
        let outcome = self.sample_next(slot);
        let secs = started.elapsed().as_secs_f64();
        if in_prompt {
            self.prompt_secs += secs;
        } else {
            self.generation_secs += secs;
        }
        outcome
    }

    fn sample_next(&mut self, slot: &mut Slot<'_, '_>) -> Result<Option<Finish>, String> {
        if self.generated >= self.budget {
            return Ok(Some(Finish::Length));
        }
        let vocab = slot.model.vocab();
        let token = self.sample(slot)?;
        if vocab.is_eog(token) {
            return Ok(Some(Finish::Stop));
        }
        self.generated += 1;
        let mut piece = Vec::new();
        vocab.token_to_piece_into(token, &mut piece, false, None);
        let pushed = self.text.push(&piece);
        if !pushed.text.is_empty() && self.tx.send(Piece::Text(pushed.text)).is_err() {
            // The client left: stop spending the CPU on it.
            tracing::debug!(id = self.id, "client gone; generation stopped");
            return Ok(Some(Finish::Stop));
        }
        if pushed.stopped {
            return Ok(Some(Finish::Stop));
        }
        if self.generated >= self.budget {
            return Ok(Some(Finish::Length));
        }
        self.pending = Some(token);
        Ok(None)
    }

    /// Picks the next token from the logits of the last decode.
    ///
    /// The grammar is checked on the chosen token first and applied to the whole
    /// vocabulary only when it refuses it (as llama.cpp's common sampler does): matching
    /// 49 k token pieces against the grammar at every step would cost more than the model.
    /// Tokens are accepted through `try_accept`, which reports a grammar that cannot take
    /// the token as an error instead of a C++ exception crossing into Rust.
    fn sample(&mut self, slot: &Slot<'_, '_>) -> Result<LlamaToken, String> {
        let logits = slot.ctx.get_logits_ith(-1);
        let candidates = || {
            LlamaTokenDataArray::from_iter(
                (0_i32..)
                    .zip(logits)
                    .map(|(id, l)| LlamaTokenData::new(LlamaToken(id), *l, 0.0)),
                false,
            )
        };
        let mut all = candidates();
        all.apply_sampler(&mut self.sampler);
        let mut token = all.selected_token().ok_or("the sampler chose no token")?;
        if let Some(grammar) = self.grammar.as_mut() {
            let logit = usize::try_from(token.0)
                .ok()
                .and_then(|i| logits.get(i))
                .copied()
                .unwrap_or(f32::NEG_INFINITY);
            let mut one =
                LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, logit, 0.0)], false);
            one.apply_sampler(grammar);
            if one.data.first().is_none_or(|d| !d.logit().is_finite()) {
                let mut allowed = candidates();
                allowed.apply_sampler(grammar);
                allowed.apply_sampler(&mut self.sampler);
                token = allowed
                    .selected_token()
                    .ok_or("the grammar allows no token")?;
            }
            // The end of the turn is not fed to the grammar (llama.cpp aborts on an end of
            // turn the grammar did not allow; it only got here if it did).
            if !slot.model.vocab().is_eog(token) {
                grammar
                    .try_accept(token)
                    .map_err(|e| format!("the grammar refused the sampled token: {e}"))?;
            }
        }
        self.sampler.accept(token);
        Ok(token)
    }

    /// Sends the rest of the text and the end; returns what to log.
    pub(super) fn finish(mut self, finish: Finish) -> Usage {
        let rest = self.text.finish();
        if !rest.is_empty() {
            let _ = self.tx.send(Piece::Text(rest));
        }
        let usage = Usage {
            prompt_tokens: count(self.prompt.len()),
            prompt_decoded: count(self.prompt.len() - self.reused),
            completion_tokens: count(self.generated),
            prompt_secs: self.prompt_secs,
            generation_secs: self.generation_secs,
        };
        let _ = self.tx.send(Piece::Done { finish, usage });
        usage
    }

    /// Reports a failure to the client.
    pub(super) fn fail(self, reason: String) {
        let _ = self.tx.send(Piece::Failed(reason));
    }
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Greedy at temperature 0, else llama.cpp's usual chain.
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

//! Recall before the reply (seed 001 B-1/B-2): a rule-based RetrievalPlan (no model call),
//! candidates collected in parallel from every source under per-source timeouts, ranked with
//! the persona's focus, then chosen by the model as this persona (`persona_selection_context`).
//! The selected memories go into the reply prompt; every recall is a `RecallPerformed` event.
//!
//! - [`collect`]: the sources in parallel under their timeouts, fused, ranked, cut;
//! - [`sources`]: each source's query (recency, terms, keywords, the period named, the
//!   year or stage named, vectors, states, preferences);
//! - [`fuse`]: reciprocal-rank fusion of the sources, weighted by what they say about
//!   relevance;
//! - [`rank`]: the ranking by the persona's focus hint, on structured keys;
//! - [`select`]: the selection's input and the strict reading of its answer;
//! - [`stage_memories`]: the summaries of the stage runs the persona spoke in;
//! - [`terms`]: the search terms of a message (what a trigram candidate must contain);
//! - [`vector`]: the embedding source (the query's vector against those stored when said,
//!   scope checked in Postgres);
//! - [`vector_cache`]: the stored vectors in process, compared with the message;

pub mod collect;
pub mod fuse;
pub mod rank;
pub mod select;
pub mod sources;
pub mod stage_memories;
pub mod terms;
pub mod vector;
pub mod vector_cache;

use std::time::{Duration, Instant};

use tracing::{info, warn};
use uuid::Uuid;

use ghost_shared::affect::MoodState;
use ghost_shared::autonomy::recent_vad::recent_vad_average;
use ghost_shared::config::CharacterConfig;
use ghost_shared::contracts;
use ghost_shared::events::{RecallPerformed, RenderRequested};
use ghost_shared::llm::{Call, ChatMessage, LlmClient};
use ghost_shared::memory::retrieval::{focus_hint, retrieval_plan};
use ghost_shared::memory::DEFAULT_PERSON;
use ghost_shared::projections::MemoryProjection;
use ghost_shared::service::{ServiceContext, ServiceError};
use ghost_shared::template::unknown_placeholder;

use collect::{collect, HistoryWindow, Scope};

/// What one recall gives the reply.
#[derive(Debug, Clone)]
pub struct Recalled {
    /// The selected memories, one line each (none when nothing was selected).
    pub pack: Option<String>,
    /// The record of it.
    pub event: RecallPerformed,
}

/// Recalls for one persona.
pub struct Recaller {
    ctx: ServiceContext,
    llm: LlmClient,
    /// `llm.embedding`, when configured (the vector source is off without it).
    embedding: Option<LlmClient>,
    system_prompt: String,
}

impl Recaller {
    /// A recaller for `character`, selecting with the worker's model.
    pub fn new(ctx: ServiceContext, character: &CharacterConfig) -> Result<Self, ServiceError> {
        let settings = &ctx.config.ghost.memory;
        let path = ctx.config.resolve(&settings.recall_prompt_file);
        let template = std::fs::read_to_string(&path).map_err(|e| {
            ServiceError::Config(format!("memory.recall_prompt_file {}: {e}", path.display()))
        })?;
        if let Some(p) = unknown_placeholder(&template, &CharacterConfig::PERSONA_PLACEHOLDERS) {
            return Err(ServiceError::Config(format!(
                "memory.recall_prompt_file: unknown placeholder {p}"
            )));
        }
        Ok(Self {
            llm: ctx.llm("worker")?,
            embedding: match ctx.config.ghost.llm.contains_key("embedding") {
                true => Some(ctx.llm("embedding")?),
                false => None,
            },
            system_prompt: character.fill_persona(&template),
            ctx,
        })
    }

    /// Recalls for `request` as `character` at `now` (Unix seconds); the reply will be
    /// `reply_event_id`. Never fails: what cannot be recalled is left out and recorded.
    pub async fn recall(
        &self,
        character: &CharacterConfig,
        request: &RenderRequested,
        reply_event_id: Uuid,
        now: f64,
        mood: impl std::future::Future<Output = Option<MoodState>>,
    ) -> Recalled {
        let settings = &self.ctx.config.ghost.memory;
        let pool = self.ctx.store().pool();
        let started = Instant::now();
        let person = request.person.as_deref().unwrap_or(DEFAULT_PERSON);
        let memory = match MemoryProjection::load_focus(pool, &character.name, person).await {
            Ok(m) => m,
            Err(e) => {
                warn!(error = %e, "memory unreadable; recalling without the persona's focus");
                Default::default()
            }
        };
        let at = chrono::DateTime::from_timestamp_micros((now * 1e6) as i64).unwrap_or_default();
        let plan = retrieval_plan(
            &request.user_text,
            settings.recall_limits(),
            focus_hint(&memory, now, settings.interest_tau_secs),
        )
        .at(at);
        let config = &self.ctx.config.ghost;
        let history_turns = config.persona.history_turns;
        let history = HistoryWindow {
            user_messages: request.history_user_messages,
            min_lines: history_turns,
            max_lines: match request.history_user_messages {
                Some(_) => ghost_shared::short_memory::max_lines(
                    config.routing.summarize_after_turns,
                    history_turns,
                ),
                None => history_turns,
            },
            pause_secs: config.persona.history_pause_secs,
        };
        let scope = Scope {
            persona: &character.name,
            person,
            session_id: &request.session_id,
            history,
            source_timeout: Duration::from_millis(settings.recall_source_timeout_ms),
            similarity_threshold: settings.recall_similarity_threshold,
            embedding: self.embedding.as_ref(),
        };
        let collected = collect(pool, scope, &plan).await;
        let mut timings = collected.timings_ms.clone();
        timings.insert("collection".into(), started.elapsed().as_secs_f64() * 1e3);

        let selection_started = Instant::now();
        let selected = if collected.candidates.is_empty() {
            Ok(Vec::new())
        } else {
            // The mood was asked for beside the collection; it is there by now.
            let mood = mood.await;
            self.select(
                character,
                &memory,
                mood.as_ref(),
                &request.user_text,
                &collected.candidates,
                now,
            )
            .await
        };
        timings.insert(
            "selection".into(),
            selection_started.elapsed().as_secs_f64() * 1e3,
        );
        let (selected_ids, selection_error) = match selected {
            Ok(ids) => (ids, None),
            Err(why) => {
                warn!(error = %why, "recall selection unusable; no memories this turn");
                (Vec::new(), Some(why))
            }
        };
        let selected_texts: Vec<String> = selected_ids
            .iter()
            .filter_map(|id| collected.candidates.iter().find(|c| &c.id == id))
            .map(|c| c.text.clone())
            .collect();
        info!(
            candidates = collected.candidates.len(),
            selected = selected_ids.len(),
            "recalled"
        );
        // The reply fences it as the MEMORY block: data, never an instruction.
        let pack = (!selected_texts.is_empty()).then(|| {
            let lines: Vec<String> = selected_texts.iter().map(|t| format!("- {t}")).collect();
            lines.join("\n")
        });
        Recalled {
            pack,
            event: RecallPerformed {
                persona: character.name.clone(),
                session_id: request.session_id.clone(),
                user_event_id: request.user_event_id,
                reply_event_id,
                plan: serde_json::to_value(&plan).unwrap_or_default(),
                candidate_counts: collected.counts,
                skipped_sources: collected.skipped,
                candidate_ids: collected.candidates.iter().map(|c| c.id.clone()).collect(),
                selected_ids,
                selected_texts,
                selection_error,
                timings_ms: timings,
            },
        }
    }

    async fn select(
        &self,
        character: &CharacterConfig,
        memory: &ghost_shared::memory::Memory,
        mood: Option<&MoodState>,
        user_text: &str,
        candidates: &[collect::Candidate],
        now: f64,
    ) -> Result<Vec<String>, String> {
        let settings = &self.ctx.config.ghost.memory;
        let pool = self.ctx.store().pool();
        let recent_vad = recent_vad_average(pool, &character.name, now)
            .await
            .map_err(|e| warn!(error = %e, "no recent affect for the selection"))
            .ok();
        let context = select::persona_selection_context(
            character,
            memory,
            mood,
            recent_vad,
            now,
            settings.interest_tau_secs,
        );
        // The model names candidates by short handles (`m1`, `m2`, ...): a stored id costs
        // a small model some thirty tokens to copy, a handle two.
        let offered = select::with_handles(candidates);
        let input =
            select::selection_input(user_text, &offered, settings.recall_max_selected, context);
        let messages = [
            ChatMessage::system(self.system_prompt.clone()),
            ChatMessage::user(input.to_string()),
        ];
        let timeout = Duration::from_millis(settings.recall_selection_timeout_ms);
        // The user waits for this: it goes before background work on the model, and its
        // answer can only name the candidates offered.
        let ids: Vec<&str> = offered.iter().map(|c| c.id.as_str()).collect();
        let contract = contracts::selection::contract(&ids, settings.recall_max_selected);
        let call = Call::interactive().shaped(&contract);
        let answer = match tokio::time::timeout(timeout, self.llm.complete(&messages, call)).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(e)) => return Err(format!("selection model call failed: {e}")),
            Err(_) => {
                return Err(format!(
                    "selection model call timed out after {} ms",
                    timeout.as_millis()
                ))
            }
        };
        let selected = select::parse_selection(&answer, &offered, settings.recall_max_selected)
            .map(|handles| select::stored_ids(&handles, &offered, candidates));
        contract.record(
            self.llm.role(),
            &answer,
            selected
                .as_ref()
                .map(|_| ())
                .map_err(|_| "invalid_selection"),
        );
        selected
    }
}

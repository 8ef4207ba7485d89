//! `ClassifyRequested`: one structured route decision per user message — the classifier on
//! the worker model, or Kuro's delegation decision on the persona's model. The model is
//! called at most once per request, even across redeliveries and crashes: a start marker is
//! stored before the call, and a redelivery that finds the marker without a reply reports
//! the call as failed instead of calling again.

use ghost_shared::bus::{EventHandler, HandlerError};
use ghost_shared::contracts;
use ghost_shared::envelope::{session_stream, EventPayload, NewEvent, RecordedEvent};
use ghost_shared::events::{ClassifierCallStarted, ClassifierReplied, ClassifyRequested};
use ghost_shared::llm::{Call, ChatMessage, Fence, LlmClient};
use ghost_shared::service::{ServiceContext, ServiceError};
use ghost_shared::store::ExpectedVersion;
use tracing::{info, warn};

use ghost_shared::routing::DecisionOrigin;

use crate::prompt;

/// Handles `ClassifyRequested`.
pub struct Classifier {
    ctx: ServiceContext,
    worker_llm: LlmClient,
    persona_llm: LlmClient,
    classifier_prompt: String,
    kuro_prompt: String,
}

impl Classifier {
    /// Loads both prompts (Kuro's filled with the persona's character).
    pub fn new(
        ctx: ServiceContext,
        worker_llm: LlmClient,
        persona_llm: LlmClient,
    ) -> Result<Self, ServiceError> {
        let character = ctx
            .config
            .characters
            .get(&ctx.config.ghost.persona.character)
            .cloned()
            .ok_or_else(|| ServiceError::Config("persona.character not found".into()))?;
        let kuro_prompt = character.fill_persona(&prompt(&ctx, "prompts/kuro_delegation.md")?);
        Ok(Self {
            classifier_prompt: prompt(&ctx, "prompts/classifier.md")?,
            kuro_prompt,
            ctx,
            worker_llm,
            persona_llm,
        })
    }

    async fn append(&self, session_id: &str, e: NewEvent) -> Result<bool, HandlerError> {
        let outcome = self
            .ctx
            .log
            .append(&session_stream(session_id), ExpectedVersion::Any, &[e])
            .await
            .map_err(HandlerError::transient)?;
        Ok(!outcome.duplicate)
    }
}

#[async_trait::async_trait]
impl EventHandler for Classifier {
    async fn handle(&self, event: RecordedEvent) -> Result<(), HandlerError> {
        let request: ClassifyRequested = event.decode().map_err(HandlerError::permanent)?;
        if self
            .ctx
            .outcome_stored(&event, &[ClassifierReplied::EVENT_TYPE])
            .await?
        {
            return Ok(());
        }
        let service = self.ctx.service;
        let reply = |raw: Option<String>, error: Option<String>| {
            let replied = ClassifierReplied {
                session_id: request.session_id.clone(),
                user_event_id: request.user_event_id,
                mode: request.mode,
                raw,
                error,
            };
            NewEvent::caused_by(&event, ClassifierReplied::EVENT_TYPE, &replied, service)
                .map_err(HandlerError::permanent)
        };
        let started = ClassifierCallStarted {
            session_id: request.session_id.clone(),
            user_event_id: request.user_event_id,
        };
        let marker =
            NewEvent::caused_by(&event, ClassifierCallStarted::EVENT_TYPE, &started, service)
                .map_err(HandlerError::permanent)?;
        if !self.append(&request.session_id, marker).await? {
            warn!(mode = %request.mode, "classifier call was started before and never answered; not calling again");
            let e = reply(None, Some("interrupted call (not repeated)".into()))?;
            self.append(&request.session_id, e).await?;
            return Ok(());
        }
        let kuro = request.mode == DecisionOrigin::Kuro;
        let (llm, system, contract) = if kuro {
            (
                &self.persona_llm,
                &self.kuro_prompt,
                contracts::route_decision::delegation(),
            )
        } else {
            (
                &self.worker_llm,
                &self.classifier_prompt,
                contracts::route_decision::classifier(),
            )
        };
        // The conversation and the message are data behind this prompt's own boundary.
        let fence = Fence::new();
        let mut user = String::new();
        if !request.context.trim().is_empty() {
            user.push_str(&fence.block("CONTEXT", request.context.trim_end()));
            user.push_str("\n\n");
        }
        user.push_str(&fence.block("MESSAGE", &request.text));
        info!(mode = %request.mode, "structured route decision requested from the model");
        // The user waits for this decision: it goes before background work on the model.
        let messages = [ChatMessage::system(system.clone()), ChatMessage::user(user)];
        let e = match llm
            .complete(&messages, Call::interactive().shaped(&contract))
            .await
        {
            Ok(raw) => reply(Some(raw), None)?,
            Err(err) => {
                warn!(mode = %request.mode, error = %err, "classifier call failed");
                reply(None, Some(err.to_string()))?
            }
        };
        ghost_shared::fault::point("worker.classify.after_call");
        self.append(&request.session_id, e).await?;
        Ok(())
    }
}

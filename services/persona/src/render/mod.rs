//! Writing one reply: prompt, stream, store — exactly once per `RenderRequested`; and
//! judging a work result, once per `JudgeRequested`.
//!
//! - [`history`]: what the reply is written from (the conversation, the user's message and
//!   its image), or the outcome already stored;
//! - [`context`]: what recall brings and the current mood;
//! - [`stream`]: the model's deltas to the turn's subject, the trailer split off, the
//!   watchdog's bound;
//! - [`outcome`]: storing the reply (or the failure) with the turn listed, announcing it;
//! - [`judge`]: judging a finished work result before any reply (`JudgeRequested`).
//!
//! This file holds the handler that runs them in order.

mod context;
mod history;
mod judge;
mod outcome;
mod stream;

use outcome::outcome_message;

use std::sync::Arc;

use bytes::Bytes;
use futures::{FutureExt, StreamExt};
use tracing::{info, info_span, warn, Instrument};
use uuid::Uuid;

use ghost_shared::affect::{parse_affect, Affect, MoodState, TrailerStreamFilter};
use ghost_shared::autonomy::events::AutonomyMessageRendered;
use ghost_shared::bus::{EventHandler, HandlerError};
use ghost_shared::config::CharacterConfig;
use ghost_shared::contracts;
use ghost_shared::envelope::{session_stream, EventPayload, NewEvent, RecordedEvent};
use ghost_shared::events::{
    persona_stream, AssistantReplied, JudgeRequested, PersonaProposed, RenderFailed,
    RenderRequested, UserMessageReceived, RECALL_STEP,
};
use ghost_shared::llm::{
    Call, ChatMessage, Fence, FenceEchoGuard, ImagePart, LlmClient, LlmError, RepetitionGuard,
};
use ghost_shared::masking::mask_secrets;
use ghost_shared::media::MediaStore;
use ghost_shared::mood_api::{self, MoodQuery};
use ghost_shared::projections::AssistantTextProjection;
use ghost_shared::service::{ServiceContext, ServiceError};
use ghost_shared::short_memory::window_start;
use ghost_shared::store::{AppendOutcome, ExpectedVersion};
use ghost_shared::turn_stream::TurnStreamMessage;

use crate::capsule::mood_capsule;
use crate::prompt::PersonaPrompt;
use crate::recall::Recaller;
use crate::routing_notes;

/// Most model deltas that go out as one token message (those already received).
const READY_DELTAS: usize = 256;

/// Step names the outcome ids derived from before a turn had one outcome id
/// ([`ghost_shared::ids::turn_outcome_id`]): still checked, so a request whose outcome was
/// stored under them is not rendered again.
const STEP_REPLIED: &str = "AssistantReplied";
const STEP_FAILED: &str = "RenderFailed";
const STEP_PROPOSED: &str = "PersonaProposed";

/// Time kept, before the turn watchdog, to store and deliver a reply.
const RENDER_MARGIN: std::time::Duration = std::time::Duration::from_secs(2);

/// Longest proposal output kept on the event, in characters (the router validates it).
const MAX_PROPOSAL_CHARS: usize = 2000;

/// The event types a reply's history is made of (what `Renderer::messages` turns into
/// chat messages).
const CONVERSATION_TYPES: &[&str] = &[
    UserMessageReceived::EVENT_TYPE,
    AssistantReplied::EVENT_TYPE,
    AutonomyMessageRendered::EVENT_TYPE,
];

/// History rows read beyond `persona.history_turns`: the user's message itself, and
/// utterances stored after it (another turn of the session) that the history skips.
const HISTORY_SLACK: i64 = 8;

/// What a request's preparation found: the request already answered, or what to send the
/// model for the reply (and the user's message, when the history read had it).
enum Prepared {
    Done(RecordedEvent),
    Reply {
        messages: Vec<ChatMessage>,
        /// `messages` without the SUMMARY and MEMORY blocks (None when there were none):
        /// asked once more when the model began its reply by copying them, so the person
        /// gets a reply and never the data as the persona's words.
        without_data: Option<Vec<ChatMessage>>,
        user_event: Option<RecordedEvent>,
    },
}

/// Handles `RenderRequested`: one `AssistantReplied` or one `RenderFailed` per request.
pub struct Renderer {
    ctx: ServiceContext,
    character: CharacterConfig,
    system_prompt: String,
    /// The instruction asking for the affect trailer, marker filled in.
    trailer_prompt: String,
    /// The instruction for judging a work result before replying.
    proposal_prompt: String,
    llm: LlmClient,
    /// Recall before the reply (`None` when `memory.recall_enabled` is off).
    recaller: Option<Recaller>,
}

/// What the model wrote, split at the affect marker.
struct Generated {
    /// The words the user sees.
    reply: String,
    /// The validated affect, if the trailer had one.
    affect: Option<Affect>,
    /// Trailer fields rejected (`field: reason`).
    rejected: Vec<String>,
    /// Why it ended before the model ended it (`AssistantReplied::cut`).
    cut: Option<String>,
}

/// The character this persona process speaks as (`persona.character`): a configuration
/// error when it is not in `characters.yaml`, never a persona-less fallback.
pub(crate) fn configured_character(ctx: &ServiceContext) -> Result<CharacterConfig, ServiceError> {
    let name = &ctx.config.ghost.persona.character;
    ctx.config
        .characters
        .get(name)
        .cloned()
        .ok_or_else(|| ServiceError::Config(format!("no character {name}")))
}

impl Renderer {
    /// Loads the character, the prompt template and the model client.
    pub fn new(ctx: ServiceContext) -> Result<Self, ServiceError> {
        let settings = &ctx.config.ghost.persona;
        let character = configured_character(&ctx)?;
        let path = ctx.config.resolve(&settings.prompt_file);
        let template = std::fs::read_to_string(&path).map_err(|e| {
            ServiceError::Config(format!("persona.prompt_file {}: {e}", path.display()))
        })?;
        let prompt =
            PersonaPrompt::new(template).map_err(|e| ServiceError::Config(e.to_string()))?;
        let trailer_path = ctx.config.resolve(&settings.affect_prompt_file);
        let trailer_prompt = std::fs::read_to_string(&trailer_path)
            .map_err(|e| {
                ServiceError::Config(format!(
                    "persona.affect_prompt_file {}: {e}",
                    trailer_path.display()
                ))
            })?
            .replace("{{marker}}", &settings.affect_marker);
        let proposal_path = ctx.config.resolve(&settings.proposal_prompt_file);
        let proposal_prompt = std::fs::read_to_string(&proposal_path).map_err(|e| {
            ServiceError::Config(format!(
                "persona.proposal_prompt_file {}: {e}",
                proposal_path.display()
            ))
        })?;
        let llm = match &character.llm {
            Some(cfg) => LlmClient::new(cfg.clone(), None)?.with_role("persona"),
            None => ctx.llm("persona")?,
        };
        let recaller = if ctx.config.ghost.memory.recall_enabled {
            Some(Recaller::new(ctx.clone(), &character)?)
        } else {
            None
        };
        Ok(Self {
            system_prompt: prompt.render(&character),
            trailer_prompt,
            proposal_prompt,
            recaller,
            character,
            llm,
            ctx,
        })
    }
}

ghost_shared::event_enum! {
    /// What the renderer takes: a reply to write, or a finished work result to judge first.
    pub enum PersonaRequest {
        RenderRequested,
        JudgeRequested,
    }
}

#[async_trait::async_trait]
impl EventHandler for Renderer {
    async fn handle(&self, event: RecordedEvent) -> Result<(), HandlerError> {
        match PersonaRequest::decode(&event).map_err(HandlerError::permanent)? {
            Some(PersonaRequest::RenderRequested(request)) => self.render(event, request).await,
            Some(PersonaRequest::JudgeRequested(request)) => self.judge(&event, request).await,
            None => Err(HandlerError::permanent(format!(
                "the renderer does not handle {}",
                event.event_type
            ))),
        }
    }

    async fn on_dead_letter(&self, event: Option<&RecordedEvent>, reason: &str) {
        self.close_given_up(event, reason).await;
    }
}

impl Renderer {
    /// `RenderRequested`: one `AssistantReplied` or one `RenderFailed`.
    async fn render(
        &self,
        event: RecordedEvent,
        request: RenderRequested,
    ) -> Result<(), HandlerError> {
        let turn = request.user_event_id;
        let stream = session_stream(&request.session_id);

        // A redelivery after the outcome was stored (or a turn closed by the watchdog): say
        // it again, write nothing.
        // One query: the turn's outcome first, then this request's own outcomes under the
        // older per-step ids.
        let mut ids = vec![ghost_shared::ids::turn_outcome_id(turn)];
        ids.extend(
            [STEP_REPLIED, STEP_FAILED, STEP_PROPOSED]
                .iter()
                .map(|step| ghost_shared::ids::derive_event_id(event.event_id, step)),
        );
        // The reply needs the conversation, the mood and the recall: read with the outcome
        // check (a redelivery just drops them), instead of one round trip after another.
        let prepared = self.messages_unless_done(&request, &event, &ids).await?;
        let (messages, without_data, user_event) = match prepared {
            Prepared::Done(done) => {
                // A request stored when judging was a flag on it, judged already.
                if done.is::<PersonaProposed>() {
                    info!(event_id = %done.event_id, "proposal already made; the router decides");
                    return Ok(());
                }
                info!(event_id = %done.event_id, "render already done; not rendering again");
                // The earlier attempt may have stopped before listing the turn.
                self.list_turn(turn, None, &done).await?;
                self.publish(&turn, &outcome_message(&done)).await;
                return Ok(());
            }
            Prepared::Reply {
                messages,
                without_data,
                user_event,
            } => (messages, without_data, user_event),
        };
        let service = self.ctx.service;
        let prefix = routing_notes::declaration_prefix(&request);
        // The reply ends before the turn watchdog would close the turn with its notice:
        // the time left is the call's bound when it is shorter than the model's own.
        let asked_at = user_event
            .as_ref()
            .map_or(event.recorded_at, |e| e.recorded_at);
        let left = self.time_left(asked_at);
        let settings = &self.ctx.config.ghost.persona;
        let budget = match request.work_result {
            Some(_) => settings.result_reply_max_tokens,
            None => settings.reply_max_tokens,
        };
        let generated = match self
            .generate(&turn, &messages, prefix.clone(), budget, left)
            .instrument(info_span!("model_call"))
            .await
        {
            Ok(g) if g.reply.trim().is_empty() && g.cut.as_deref() == Some("echoed_data") => {
                match &without_data {
                    Some(bare) => {
                        info!("the reply began by copying its memories; asked again without them");
                        let left = self.time_left(asked_at);
                        self.generate(&turn, bare, prefix.clone(), budget, left)
                            .instrument(info_span!("model_call"))
                            .await
                    }
                    None => Ok(g),
                }
            }
            other => other,
        };
        let generated = generated.and_then(|g| {
            // Only an affect trailer and no words is no reply at all.
            if g.reply.trim().is_empty() {
                Err(LlmError::MalformedStream(
                    "the model wrote no reply text".into(),
                ))
            } else {
                Ok(g)
            }
        });
        let failure_code = generated.as_ref().err().map(|e| e.code());
        let (new_event, message) = match generated {
            Ok(generated) => {
                let text = format!("{}{}", prefix.unwrap_or_default(), generated.reply);
                let replied = AssistantReplied {
                    session_id: request.session_id.clone(),
                    channel: request.channel,
                    user_event_id: turn,
                    speaker: self.character.name.clone(),
                    text: text.clone(),
                    affect: generated.affect,
                    affect_rejected: generated.rejected,
                    cut: generated.cut,
                };
                let e = NewEvent::closing_turn(&event, turn, &replied, service)
                    .map_err(HandlerError::permanent)?;
                let id = e.event_id;
                (
                    e,
                    TurnStreamMessage::Done {
                        event_id: id,
                        reply_text: text,
                    },
                )
            }
            Err(err) => {
                warn!(error = %err, "rendering failed");
                let failed = RenderFailed {
                    session_id: request.session_id.clone(),
                    channel: request.channel,
                    user_event_id: turn,
                    code: err.code().into(),
                    message: err.to_string(),
                };
                let message = TurnStreamMessage::Error {
                    code: failed.code.clone(),
                    message: failed.message.clone(),
                };
                let e = NewEvent::closing_turn(&event, turn, &failed, service)
                    .map_err(HandlerError::permanent)?;
                (e, message)
            }
        };
        let user_at = user_event.as_ref().map(|e| e.recorded_at);
        let announce = |stored: AppendOutcome| async move {
            ghost_shared::fault::point("persona.after_append");
            // Another handler (or the watchdog) closed the turn first: its outcome stands.
            let message = match (stored.duplicate, stored.events.first()) {
                (true, Some(first)) => {
                    info!(event_id = %first.event_id, "turn already closed; this outcome is not stored");
                    outcome_message(first)
                }
                _ => message,
            };
            if !stored.duplicate {
                // Counted before the client hears of it, so a scrape after the reply sees it.
                self.record_turn_end(&request, failure_code, user_at).await;
            }
            self.publish(&turn, &message).await;
        };
        ghost_shared::fault::point("persona.before_append");
        self.append_listed(turn, &stream, user_event.as_ref(), new_event, announce)
            .await?;
        Ok(())
    }

    /// A request given up on (a handler crashed or hung on every delivery): the turn is
    /// closed now rather than at the watchdog's limit.
    async fn close_given_up(&self, event: Option<&RecordedEvent>, reason: &str) {
        let Some(event) = event else { return };
        let request = match PersonaRequest::decode(event) {
            Ok(Some(PersonaRequest::RenderRequested(r))) => {
                (r.session_id, r.channel, r.user_event_id)
            }
            Ok(Some(PersonaRequest::JudgeRequested(j))) => {
                (j.session_id, j.channel, j.user_event_id)
            }
            _ => return,
        };
        let (session_id, channel, user_event_id) = request;
        let failed = RenderFailed {
            session_id: session_id.clone(),
            channel,
            user_event_id,
            code: "render_failed".into(),
            message: ghost_shared::masking::mask_secrets(
                &reason.chars().take(200).collect::<String>(),
            )
            .into_owned(),
        };
        let Ok(e) = NewEvent::closing_turn(event, user_event_id, &failed, self.ctx.service) else {
            return;
        };
        let stream = session_stream(&session_id);
        match self
            .ctx
            .log
            .append(&stream, ExpectedVersion::Any, &[e])
            .await
        {
            Ok(stored) => {
                if let Some(m) = stored
                    .events
                    .first()
                    .and_then(TurnStreamMessage::of_outcome)
                {
                    self.publish(&user_event_id, &m).await;
                }
            }
            Err(err) => {
                warn!(error = %err, "cannot close the dead-lettered turn; the watchdog will")
            }
        }
    }
}

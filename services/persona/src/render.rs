//! Writing one reply: prompt, stream, store — exactly once per `RenderRequested`.

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
    persona_stream, AssistantReplied, PersonaProposed, RenderFailed, RenderRequested,
    UserMessageReceived, RECALL_STEP,
};
use ghost_shared::llm::{Call, ChatMessage, Fence, ImagePart, LlmClient, LlmError};
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

/// Time kept, before the turn watchdog, to store and deliver a reply.
const RENDER_MARGIN: std::time::Duration = std::time::Duration::from_secs(2);
const STEP_PROPOSED: &str = "PersonaProposed";

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

/// What a request's preparation found: the request already answered, a work result to
/// judge, or what to send the model for the reply (and the user's message, when the
/// history read had it).
enum Prepared {
    Done(RecordedEvent),
    Judge,
    Reply {
        messages: Vec<ChatMessage>,
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

    /// Read-your-writes: the user's message and the outcome are in the conversation before
    /// anyone hears of the outcome, even if this process stops before its projection runner
    /// gets to them.
    async fn list_turn(
        &self,
        turn: Uuid,
        user: Option<&RecordedEvent>,
        outcome: &RecordedEvent,
    ) -> Result<(), HandlerError> {
        let store = self.ctx.store();
        // The history read usually had the user's message; read it only when it did not.
        let read;
        let user = match user {
            Some(user) => Some(user),
            None => {
                read = store
                    .get_any(&[turn])
                    .await
                    .map_err(HandlerError::transient)?;
                read.as_ref()
            }
        };
        let rows: Vec<&RecordedEvent> = user.into_iter().chain(std::iter::once(outcome)).collect();
        AssistantTextProjection::store_now(store.pool(), &rows)
            .await
            .map_err(|e| HandlerError::transient(e.to_string()))
    }

    /// Appends the turn's outcome with the turn listed in the conversation, then runs
    /// `announce` on what is stored, before the events are published: the client hears of
    /// its reply without waiting for the bus. With the user's message at hand (the history
    /// read had it), the listing is written by the append's own statement; else, or when
    /// another outcome was stored first, the stored one is listed before it is announced.
    async fn append_listed<F, Fut>(
        &self,
        turn: Uuid,
        stream: &str,
        user: Option<&RecordedEvent>,
        outcome: NewEvent,
        announce: F,
    ) -> Result<AppendOutcome, HandlerError>
    where
        F: FnOnce(AppendOutcome) -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        let log = &self.ctx.log;
        let Some(user) = user else {
            let (stored, listed) = log
                .append_beside_publish(
                    stream,
                    ExpectedVersion::Any,
                    &[outcome],
                    |stored| async move {
                        if let Some(outcome) = stored.events.first() {
                            self.list_turn(turn, None, outcome).await?;
                        }
                        announce(stored).await;
                        Ok::<_, HandlerError>(())
                    },
                )
                .await
                .map_err(HandlerError::transient)?;
            listed?;
            return Ok(stored);
        };
        let listing = AssistantTextProjection::listing(&[user], std::slice::from_ref(&outcome))
            .map_err(HandlerError::permanent)?;
        let (stored, listed) = log
            .append_with_first(
                stream,
                ExpectedVersion::Any,
                &[outcome],
                listing.also(),
                |stored| async move {
                    if stored.duplicate {
                        if let Some(first) = stored.events.first() {
                            self.list_turn(turn, Some(user), first).await?;
                        }
                    }
                    announce(stored).await;
                    Ok::<_, HandlerError>(())
                },
            )
            .await
            .map_err(HandlerError::transient)?;
        listed?;
        Ok(stored)
    }

    async fn publish(&self, turn: &Uuid, message: &TurnStreamMessage) {
        let subject = self.ctx.bus().token_subject(turn);
        match serde_json::to_vec(message) {
            Ok(body) => {
                if let Err(e) = self
                    .ctx
                    .bus()
                    .publish_core(subject, Bytes::from(body))
                    .await
                {
                    warn!(error = %e, "token stream publish failed");
                }
            }
            Err(e) => warn!(error = %e, "token stream message does not encode"),
        }
    }

    /// The turn's metrics: ended with a reply or `failure_code`, timed from the user's
    /// message as stored (`user_at` when the history read already had it).
    async fn record_turn_end(
        &self,
        request: &RenderRequested,
        failure_code: Option<&str>,
        user_at: Option<chrono::DateTime<chrono::Utc>>,
    ) {
        let user_at = match user_at {
            Some(at) => Some(at),
            None => match self.ctx.store().get_any(&[request.user_event_id]).await {
                Ok(Some(user)) => Some(user.recorded_at),
                _ => None,
            },
        };
        let took = user_at.and_then(|at| (chrono::Utc::now() - at).to_std().ok());
        ghost_shared::metrics::turn_ended(request.channel.as_str(), failure_code, took);
    }

    /// The request's outcome if one is stored (one of `outcome_ids`), and else the
    /// conversation before this turn, oldest first, ending with the user's message.
    /// The history read also tells whether an outcome is stored (one statement); only when
    /// one is, or the read cannot tell, is it fetched. The recall (which may call the model
    /// and records what it did) starts only once no outcome is found; the history and the
    /// mood are plain reads and start at once.
    async fn messages_unless_done(
        &self,
        request: &RenderRequested,
        cause: &RecordedEvent,
        outcome_ids: &[Uuid],
    ) -> Result<Prepared, HandlerError> {
        let history_turns = self.ctx.config.ghost.persona.history_turns;
        // Every line since the short-memory summary, at least `history_turns`, at most two
        // summary periods' worth (a summary far behind must not grow the prompt unbounded).
        let every = self.ctx.config.ghost.routing.summarize_after_turns.max(1) as usize;
        let max_lines = (every * 4 + 4).max(history_turns);
        let read_lines = match request.history_user_messages {
            Some(_) => max_lines,
            None => history_turns,
        };
        // The history, the mood and the recall do not depend on each other: asked at once.
        let store = self.ctx.store();
        let (not_done, proceed) = tokio::sync::oneshot::channel();
        // Only what the history is made of: a turn's routing events in between would be
        // payloads read and decoded for nothing (three of every four rows of the tail).
        let checked_tail = async {
            let read = store
                .read_stream_tail_of_types_checking(
                    &cause.stream,
                    CONVERSATION_TYPES,
                    request.user_event_id,
                    read_lines as i64 + HISTORY_SLACK,
                    outcome_ids,
                )
                .await;
            let done = match &read {
                Ok((_, Some(false))) => Ok(None),
                Ok(_) => store.get_first_of(outcome_ids).await,
                Err(_) => Ok(None),
            };
            let _ = not_done.send(matches!((&read, &done), (Ok(_), Ok(None))));
            (read, done)
        };
        // One mood request: the reply's capsule and recall's selection read the same answer.
        let mood = self
            .current_mood()
            .instrument(info_span!("mood_request"))
            .boxed()
            .shared();
        let recall = async {
            match proceed.await {
                Ok(true) => self.recall(request, cause, mood.clone()).await,
                _ => None,
            }
        };
        let ((tail, done), mood, recalled) = tokio::join!(checked_tail, mood.clone(), recall);
        let mood = mood.unwrap_or_default();
        if let Some(done) = done.map_err(HandlerError::transient)? {
            return Ok(Prepared::Done(done));
        }
        let (tail, _) = tail.map_err(HandlerError::transient)?;
        let mut history: Vec<ChatMessage> = Vec::new();
        let mut is_user: Vec<bool> = Vec::new();
        for e in tail
            .iter()
            .filter(|e| e.version < cause.version && e.event_id != request.user_event_id)
        {
            if let Ok(m) = e.decode::<UserMessageReceived>() {
                history.push(ChatMessage::user(m.text));
                is_user.push(true);
            } else if let Ok(r) = e.decode::<AssistantReplied>() {
                history.push(ChatMessage::assistant(r.text));
                is_user.push(false);
            } else if let Ok(m) = e.decode::<AutonomyMessageRendered>() {
                // What the persona said on its own is part of the conversation.
                history.push(ChatMessage::assistant(m.text));
                is_user.push(false);
            }
        }
        let skip = window_start(
            &is_user,
            request.history_user_messages,
            history_turns,
            max_lines,
        );
        let system = format!(
            "{}\n\n{}\n\n{}",
            self.system_prompt,
            mood_capsule(&mood),
            self.trailer_prompt
        );
        let mut messages = Vec::with_capacity(history.len() - skip + 3);
        messages.push(ChatMessage::system(system));
        messages.extend(recalled.map(ChatMessage::system));
        messages.extend(routing_notes::summary_message(request));
        messages.extend(history.into_iter().skip(skip));
        let mut user = request.user_text.clone();
        if let Some(result) = &request.work_result {
            user.push_str("\n\n[task result to convey]\n");
            user.push_str(&Fence::new().block("TASK_RESULT", &result.to_string()));
            user.push_str(routing_notes::status_note(request).unwrap_or_default());
        }
        user.push_str(routing_notes::notice_note(request).unwrap_or_default());
        let mut user = ChatMessage::user(user);
        if let Some(image) = self.image_of(request, &tail).await? {
            user = user.with_image(image);
        }
        messages.push(user);
        let user_event = tail
            .iter()
            .find(|e| e.event_id == request.user_event_id)
            .cloned();
        Ok(Prepared::Reply {
            messages,
            user_event,
        })
    }

    /// What the persona recalls for this request (the memory pack for the prompt), recorded
    /// as `RecallPerformed` on the persona's stream. Recall never fails a reply.
    async fn recall(
        &self,
        request: &RenderRequested,
        cause: &RecordedEvent,
        mood: impl std::future::Future<Output = Option<MoodState>>,
    ) -> Option<String> {
        let recaller = self.recaller.as_ref()?;
        let now = cause.recorded_at.timestamp_micros() as f64 / 1e6;
        // The reply, when there is one, is the turn's one outcome.
        let reply_id = ghost_shared::ids::turn_outcome_id(request.user_event_id);
        let recalled = recaller
            .recall(&self.character, request, reply_id, now, mood)
            .await;
        match NewEvent::caused_by(cause, RECALL_STEP, &recalled.event, self.ctx.service) {
            Ok(event) => {
                let log = self.ctx.log.clone();
                let stream = persona_stream(&self.character.name);
                // Off the reply's path: the record must not hold up the first token.
                tokio::spawn(async move {
                    if let Err(e) = log.append(&stream, ExpectedVersion::Any, &[event]).await {
                        warn!(error = %e, "RecallPerformed not recorded");
                    }
                });
            }
            Err(e) => warn!(error = %e, "RecallPerformed does not encode"),
        }
        recalled.pack
    }

    /// The image the user sent with this message, if any (LINE images), read from the
    /// media store at request time (whichever machine the gateway that stored it runs on).
    /// The user's message is usually in `tail` (read for the history); only an older one is
    /// read again.
    async fn image_of(
        &self,
        request: &RenderRequested,
        tail: &[RecordedEvent],
    ) -> Result<Option<ImagePart>, HandlerError> {
        let user = match tail.iter().find(|e| e.event_id == request.user_event_id) {
            Some(e) => Some(e.clone()),
            None => self
                .ctx
                .store()
                .get(request.user_event_id)
                .await
                .map_err(HandlerError::transient)?,
        };
        let Some(image) = user
            .and_then(|e| e.decode::<UserMessageReceived>().ok())
            .and_then(|m| m.image)
        else {
            return Ok(None);
        };
        let Some(media_id) = image.media_id else {
            warn!(message_id = %image.message_id, "image recorded without a media id (before media moved to the database); answering without it");
            return Ok(None);
        };
        let media = MediaStore::new(self.ctx.store().pool().clone());
        Ok(Some(ImagePart::from_source(Arc::new(
            media.image(media_id),
        ))))
    }

    /// Judges the work result before replying: the model's raw proposal (the router
    /// validates it), or why the call failed. Nothing reaches the user.
    async fn propose(&self, request: &RenderRequested) -> PersonaProposed {
        let result = request
            .work_result
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default();
        let fence = Fence::new();
        let messages = [
            ChatMessage::system(self.proposal_prompt.clone()),
            ChatMessage::user(format!(
                "{}\n{}",
                fence.block("USER_MESSAGE", &request.user_text),
                fence.block("TASK_RESULT", &result)
            )),
        ];
        let contract = contracts::proposal::contract();
        let call = Call::interactive().shaped(&contract);
        let (raw, call_failed) = match self.llm.complete(&messages, call).await {
            Ok(raw) => {
                let cut: String = raw.chars().take(MAX_PROPOSAL_CHARS).collect();
                (mask_secrets(&cut).into_owned(), None)
            }
            Err(e) => (String::new(), Some(format!("{}: {e}", e.code()))),
        };
        PersonaProposed {
            session_id: request.session_id.clone(),
            user_event_id: request.user_event_id,
            render_event_id: Uuid::nil(),
            raw,
            call_failed,
        }
    }

    /// What is left, for a turn whose message arrived at `asked_at`, before the turn
    /// watchdog would close it (less a margin to store and deliver the reply).
    fn time_left(&self, asked_at: chrono::DateTime<chrono::Utc>) -> std::time::Duration {
        let turn = chrono::Duration::seconds(
            i64::try_from(self.ctx.config.ghost.routing.turn_timeout_secs).unwrap_or(i64::MAX),
        );
        let left = (asked_at + turn - chrono::Utc::now())
            .to_std()
            .unwrap_or_default();
        left.saturating_sub(RENDER_MARGIN)
    }

    /// The mood service's answer, or None when it does not answer in time (a reply is never
    /// held hostage by the mood: it answers in the calm default).
    async fn current_mood(&self) -> Option<MoodState> {
        let timeout =
            std::time::Duration::from_millis(self.ctx.config.ghost.mood.request_timeout_ms);
        let query = MoodQuery {
            persona: self.character.name.clone(),
            now: None,
        };
        match mood_api::request(self.ctx.bus(), mood_api::GET_SUBJECT, &query, timeout).await {
            Ok(answer) => Some(answer.state),
            Err(e) => {
                warn!(error = %e, "no mood; answering in the calm default");
                None
            }
        }
    }

    /// Streams the model's reply to the turn's subject, holding back everything from the
    /// affect marker on; the reply and its affect, or why not.
    async fn generate(
        &self,
        turn: &Uuid,
        messages: &[ChatMessage],
        prefix: Option<String>,
    ) -> Result<Generated, LlmError> {
        let attempt = Uuid::new_v4();
        let marker = &self.ctx.config.ghost.persona.affect_marker;
        // The reply is free text; from the marker on, a backend that can (the embedded
        // server) holds the affect JSON to its schema.
        let contract = contracts::affect::trailer();
        let call = Call::interactive().with_trailer(marker, &contract);
        let stream = self.llm.stream(messages, call).await?;
        let mut filter = TrailerStreamFilter::new(marker);
        let mut seq = 0;
        // The route declaration, when there is one, is the reply's first line.
        self.emit(turn, attempt, &mut seq, prefix.unwrap_or_default())
            .await;
        // Deltas that are already here go out as one message: a model (or a proxy) that
        // sends faster than it is read costs one publish per read, not one per token.
        let mut ready = stream.ready_chunks(READY_DELTAS);
        while let Some(deltas) = ready.next().await {
            let mut visible = String::new();
            for delta in deltas {
                visible.push_str(&filter.push(&delta?));
            }
            self.emit(turn, attempt, &mut seq, visible).await;
        }
        let outcome = filter.finish();
        self.emit(turn, attempt, &mut seq, outcome.tail).await;
        let (affect, rejected) = match &outcome.trailer_raw {
            Some(raw) => {
                let parsed = parse_affect(raw);
                let rejected = parsed
                    .rejected
                    .iter()
                    .map(|r| format!("{}: {}", r.field, r.reason))
                    .chain(parsed.error.iter().map(|e| format!("trailer: {e}")))
                    .collect();
                (Affect::from_parsed(&parsed), rejected)
            }
            None => {
                info!("reply without an affect trailer; the worker will reflect on it");
                (None, Vec::new())
            }
        };
        Ok(Generated {
            reply: outcome.reply_text,
            affect,
            rejected,
        })
    }

    /// Publishes one visible piece of the reply (nothing when empty).
    async fn emit(&self, turn: &Uuid, attempt: Uuid, seq: &mut u64, delta: String) {
        if delta.is_empty() {
            return;
        }
        self.publish(
            turn,
            &TurnStreamMessage::Token {
                attempt,
                seq: *seq,
                delta,
            },
        )
        .await;
        *seq += 1;
    }
}

#[async_trait::async_trait]
impl EventHandler for Renderer {
    async fn handle(&self, event: RecordedEvent) -> Result<(), HandlerError> {
        let request: RenderRequested = event.decode().map_err(HandlerError::permanent)?;
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
        // A reply (no work result to judge) needs the conversation, the mood and the
        // recall: read with the outcome check (a redelivery just drops them), instead of
        // one round trip after another.
        let prepared = if request.may_propose {
            let done = self
                .ctx
                .store()
                .get_first_of(&ids)
                .await
                .map_err(HandlerError::transient)?;
            done.map_or(Prepared::Judge, Prepared::Done)
        } else {
            self.messages_unless_done(&request, &event, &ids).await?
        };
        let (messages, user_event) = match prepared {
            Prepared::Done(done) => {
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
            // A finished work result: judge it first; the router decides what follows.
            Prepared::Judge => {
                let proposed = PersonaProposed {
                    render_event_id: event.event_id,
                    ..self.propose(&request).await
                };
                info!(
                    call_failed = proposed.call_failed.is_some(),
                    "persona judged the work result"
                );
                let e = NewEvent::caused_by(&event, STEP_PROPOSED, &proposed, self.ctx.service)
                    .map_err(HandlerError::permanent)?;
                self.ctx
                    .log
                    .append(&stream, ExpectedVersion::Any, &[e])
                    .await
                    .map_err(HandlerError::transient)?;
                return Ok(());
            }
            Prepared::Reply {
                messages,
                user_event,
            } => (messages, user_event),
        };
        let service = self.ctx.service;
        let prefix = routing_notes::declaration_prefix(&request);
        // The reply ends before the turn watchdog would close the turn with its notice:
        // the time left is the call's bound when it is shorter than the model's own.
        let asked_at = user_event
            .as_ref()
            .map_or(event.recorded_at, |e| e.recorded_at);
        let left = self.time_left(asked_at);
        let generated = tokio::time::timeout(
            left,
            self.generate(&turn, &messages, prefix.clone())
                .instrument(info_span!("model_call")),
        )
        .await
        .unwrap_or(Err(LlmError::Timeout { after: left }))
        .and_then(|g| {
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

    async fn on_dead_letter(&self, event: Option<&RecordedEvent>, reason: &str) {
        // Given up on (a handler crashed or hung on every delivery): close the turn now
        // rather than at the watchdog's limit.
        let Some(request) = event.and_then(|e| e.decode::<RenderRequested>().ok()) else {
            return;
        };
        let Some(event) = event else { return };
        let failed = RenderFailed {
            session_id: request.session_id.clone(),
            channel: request.channel,
            user_event_id: request.user_event_id,
            code: "render_failed".into(),
            message: ghost_shared::masking::mask_secrets(
                &reason.chars().take(200).collect::<String>(),
            )
            .into_owned(),
        };
        let Ok(e) = NewEvent::closing_turn(event, request.user_event_id, &failed, self.ctx.service)
        else {
            return;
        };
        let stream = session_stream(&request.session_id);
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
                    self.publish(&request.user_event_id, &m).await;
                }
            }
            Err(err) => {
                warn!(error = %err, "cannot close the dead-lettered turn; the watchdog will")
            }
        }
    }
}

/// The stream message announcing a stored outcome.
fn outcome_message(event: &RecordedEvent) -> TurnStreamMessage {
    TurnStreamMessage::of_outcome(event).unwrap_or_else(|| TurnStreamMessage::Error {
        code: "internal".into(),
        message: format!("{} does not end a turn", event.event_type),
    })
}

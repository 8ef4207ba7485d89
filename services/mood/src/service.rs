//! The mood service: keeps `partner_mood_state` current and answers `mood.get` and the
//! debug API over core NATS.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use ghost_shared::affect::MoodState;
use ghost_shared::mood_api::{
    check_persona_id, MoodAnswer, MoodDebugRequest, MoodQuery, Refusal, RefusedAnswer,
    DEBUG_SUBJECT, GET_SUBJECT,
};
use ghost_shared::projector::ProjectionRunner;
use ghost_shared::service::{ServiceContext, ServiceError, ServiceHandle};
use serde_json::json;
use sqlx::postgres::PgListener;
use tracing::warn;

use crate::cache::{MoodNotice, WindowCache, CHANNEL};
use crate::episodes::MoodEpisodes;

/// What this process remembers for the debug API (in memory only, lost on restart). Both
/// maps hold at most `max` personas (`mood.max_overrides`), so no caller can grow them
/// without bound.
#[derive(Debug, Default)]
struct DebugState {
    /// The computed value last handed out for a reply, per persona.
    last_used: HashMap<String, MoodState>,
    /// Overrides set through `PUT /api/partner_mood`, per persona.
    overrides: HashMap<String, MoodState>,
    /// Most personas either map holds.
    max: usize,
}

impl DebugState {
    /// Remembers the value used for `persona`'s reply; at the limit another persona's
    /// entry makes room (it is only what `GET` shows, never what a reply uses).
    fn remember(&mut self, persona: &str, state: MoodState) {
        if !self.last_used.contains_key(persona) && self.last_used.len() >= self.max {
            if let Some(other) = self.last_used.keys().next().cloned() {
                self.last_used.remove(&other);
            }
        }
        self.last_used.insert(persona.to_owned(), state);
    }
}

/// A refused request: its code and message.
fn refuse(code: Refusal, message: impl Into<String>) -> RefusedAnswer {
    RefusedAnswer {
        error: message.into(),
        code,
    }
}

/// The running mood service's shared state.
struct Mood {
    ctx: ServiceContext,
    episodes: MoodEpisodes,
    debug: Mutex<DebugState>,
    /// Each persona's window, kept current by the projection's announcements: a `mood.get`
    /// reads the store only when its window is not known to be current, and then only the
    /// episodes applied since.
    cache: Arc<WindowCache>,
}

impl Mood {
    /// The state a reply should use: the override, or the computed value at `now`.
    async fn answer(&self, query: MoodQuery) -> Result<MoodAnswer, String> {
        check_persona_id(&query.persona)?;
        let overridden = self
            .debug
            .lock()
            .map_err(|e| e.to_string())?
            .overrides
            .get(&query.persona)
            .copied();
        let (state, overridden) = match overridden {
            Some(state) => (state, true),
            None => (
                self.computed(
                    &query.persona,
                    query.now.unwrap_or_else(|| self.ctx.clock().now_unix()),
                )
                .await?,
                false,
            ),
        };
        if !overridden {
            // What GET shows once an override is cleared: the last computed value used.
            self.debug
                .lock()
                .map_err(|e| e.to_string())?
                .remember(&query.persona, state);
        }
        Ok(MoodAnswer {
            persona: query.persona,
            state,
            overridden,
        })
    }

    /// The computed mood of `persona` at `now`: from memory when its window is current,
    /// else from the window brought up to date with the episodes projected since it was
    /// last read (or read whole when catching up cannot follow).
    async fn computed(&self, persona: &str, now: f64) -> Result<MoodState, String> {
        if let Some(state) = self.cache.current(persona, now) {
            return Ok(state);
        }
        let pool = self.ctx.store().pool();
        let start = self.cache.begin_read(persona);
        let read = self
            .episodes
            .load_after(pool, persona, start.mark)
            .await
            .map_err(|e| e.to_string())?;
        if let Some(state) = self.cache.catch_up(persona, start, read, now)? {
            return Ok(state);
        }
        let start = self.cache.begin_whole_read();
        let read = self
            .episodes
            .load_after(pool, persona, start.mark)
            .await
            .map_err(|e| e.to_string())?;
        self.cache
            .catch_up(persona, start, read, now)?
            .ok_or_else(|| format!("the mood window of {persona} could not be read whole"))
    }

    fn debug(&self, request: MoodDebugRequest) -> Result<MoodAnswer, RefusedAnswer> {
        let mut debug = self.debug.lock().unwrap_or_else(|e| e.into_inner());
        let persona = match &request {
            MoodDebugRequest::Get { persona }
            | MoodDebugRequest::Put { persona, .. }
            | MoodDebugRequest::Delete { persona } => persona,
        };
        check_persona_id(persona).map_err(|e| refuse(Refusal::InvalidPersona, e))?;
        let persona = match request {
            MoodDebugRequest::Get { persona } => persona,
            MoodDebugRequest::Put { persona, state } => {
                state
                    .validate()
                    .map_err(|e| refuse(Refusal::InvalidMood, e.to_string()))?;
                if !debug.overrides.contains_key(&persona) && debug.overrides.len() >= debug.max {
                    return Err(refuse(
                        Refusal::TooManyOverrides,
                        format!(
                            "at most {} personas can have an override at once (mood.max_overrides); clear one with DELETE first",
                            debug.max
                        ),
                    ));
                }
                debug.overrides.insert(persona.clone(), state);
                persona
            }
            MoodDebugRequest::Delete { persona } => {
                debug.overrides.remove(&persona);
                persona
            }
        };
        let (state, overridden) = match debug.overrides.get(&persona) {
            Some(s) => (*s, true),
            None => (
                debug.last_used.get(&persona).copied().unwrap_or_default(),
                false,
            ),
        };
        Ok(MoodAnswer {
            persona,
            state,
            overridden,
        })
    }
}

async fn respond(
    ctx: &ServiceContext,
    reply: Option<async_nats::Subject>,
    body: serde_json::Value,
) {
    let Some(reply) = reply else { return };
    if let Err(e) = ctx
        .bus()
        .client()
        .publish(reply, Bytes::from(body.to_string()))
        .await
    {
        warn!(error = %e, "mood reply failed");
    }
}

/// Subscribes (in the queue group `mood`) before the service counts as started, so no
/// request made after `start` returns finds nobody listening.
async fn subscribe(
    ctx: &ServiceContext,
    name: &str,
) -> Result<async_nats::Subscriber, ServiceError> {
    let bus = ctx.bus();
    let sub = bus
        .client()
        .queue_subscribe(bus.core_subject(name), "mood".into())
        .await
        .map_err(|e| ServiceError::Config(format!("cannot subscribe to {name}: {e}")))?;
    bus.ping().await?;
    Ok(sub)
}

async fn serve_gets(mood: Arc<Mood>, mut sub: async_nats::Subscriber) -> Result<(), ServiceError> {
    while let Some(message) = sub.next().await {
        let mood = mood.clone();
        tokio::spawn(async move {
            let body = match serde_json::from_slice::<MoodQuery>(&message.payload) {
                Ok(query) => match mood.answer(query).await {
                    Ok(answer) => serde_json::to_value(answer).unwrap_or_default(),
                    Err(e) => json!({ "error": e }),
                },
                Err(e) => json!({ "error": format!("invalid mood query: {e}") }),
            };
            respond(&mood.ctx, message.reply, body).await;
        });
    }
    Ok(())
}

async fn serve_debug(mood: Arc<Mood>, mut sub: async_nats::Subscriber) -> Result<(), ServiceError> {
    while let Some(message) = sub.next().await {
        let body = match serde_json::from_slice::<MoodDebugRequest>(&message.payload) {
            Ok(request) => match mood.debug(request) {
                Ok(answer) => serde_json::to_value(answer).unwrap_or_default(),
                Err(refused) => serde_json::to_value(refused).unwrap_or_default(),
            },
            Err(e) => json!({ "error": format!("invalid debug request: {e}") }),
        };
        respond(&mood.ctx, message.reply, body).await;
    }
    Ok(())
}

/// Applies the projection's announcements to `cache` until aborted (`listener` is already
/// listening, and `cache` knows). Every reconnection drops what was cached: announcements
/// may have been missed meanwhile.
async fn follow_announcements(
    mut listener: PgListener,
    pool: sqlx::PgPool,
    cache: Arc<WindowCache>,
) {
    loop {
        match listener.try_recv().await {
            Ok(Some(n)) => match serde_json::from_str::<MoodNotice>(n.payload()) {
                Ok(notice) => cache.announced(notice),
                Err(e) => {
                    // Not ours to read: whatever it was, the windows are read again.
                    warn!(error = %e, "unreadable mood announcement; windows are read again");
                    cache.listening();
                }
            },
            // Lost and already reconnected (listening again).
            Ok(None) => cache.listening(),
            Err(e) => {
                cache.deaf();
                warn!(error = %e, "mood announcements lost; reading the store until they return");
                listener = loop {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    if let Ok(l) = listen(&pool).await {
                        break l;
                    }
                };
                cache.listening();
            }
        }
    }
}

/// A listener on the announcement channel.
async fn listen(pool: &sqlx::PgPool) -> Result<PgListener, sqlx::Error> {
    let mut listener = PgListener::connect_with(pool).await?;
    listener.listen(CHANNEL).await?;
    Ok(listener)
}

/// Starts the projection and the responders.
pub async fn start(ctx: ServiceContext) -> Result<ServiceHandle, ServiceError> {
    let mut handle = ServiceHandle::new(crate::SERVICE);
    let constants = ctx.config.ghost.mood.constants;
    let cache = Arc::new(WindowCache::new(constants));
    let episodes = MoodEpisodes::with_cache(constants, cache.clone());
    // Listening before the first answer: a window cached later misses no announcement.
    let pool = ctx.store().pool().clone();
    let listener = listen(&pool)
        .await
        .map_err(|e| ServiceError::Store(e.into()))?;
    cache.listening();
    handle.tasks.push(tokio::spawn(follow_announcements(
        listener,
        pool,
        cache.clone(),
    )));
    let p = &ctx.config.ghost.projections;
    let runner = ProjectionRunner::new(
        ctx.store().clone(),
        Arc::new(episodes.clone()),
        p.batch_size,
        Duration::from_millis(p.poll_interval_ms),
    );
    handle.run_projection(runner);
    let max_overrides = ctx.config.ghost.mood.max_overrides;
    let mood = Arc::new(Mood {
        ctx,
        episodes,
        debug: Mutex::new(DebugState {
            max: max_overrides,
            ..DebugState::default()
        }),
        cache,
    });
    let gets = subscribe(&mood.ctx, GET_SUBJECT).await?;
    let debug = subscribe(&mood.ctx, DEBUG_SUBJECT).await?;
    handle.spawn(serve_gets(mood.clone(), gets));
    handle.spawn(serve_debug(mood, debug));
    Ok(handle)
}

//! The daily cloud token cap (`coder.daily_token_cap`): the day's use is summed from the
//! store before each cloud call, and a CODE turn over the cap ends with a short notice,
//! nothing sent to the cloud.

use ghost_shared::bus::HandlerError;
use ghost_shared::envelope::{NewEvent, RecordedEvent};
use ghost_shared::events::{token_cap_notice, RenderFailed, UserMessageReceived, WorkRequested};
use ghost_shared::metrics;
use ghost_shared::service::ServiceContext;
use ghost_shared::spend::{self, DayUse};

/// The code of a turn refused over the cap (its `RenderFailed`, the client's SSE `error`).
pub const CAP_REACHED: &str = ghost_shared::events::DAILY_TOKEN_CAP;

/// The cap in force for this coder.
pub struct Budget {
    cap: Option<u64>,
}

impl Budget {
    /// A budget of `cap` tokens a UTC day (`None`: no cap).
    pub fn new(cap: Option<u64>) -> Self {
        metrics::register_coder_spend(cap);
        Self { cap }
    }

    /// The day's use when the cap is used up (nothing may go to the cloud), else `None`.
    pub async fn used_up(&self, ctx: &ServiceContext) -> Result<Option<DayUse>, HandlerError> {
        let Some(cap) = self.cap else {
            return Ok(None);
        };
        let used = day_use(ctx).await?;
        Ok(used.reached(Some(cap)).then_some(used))
    }

    /// The event refusing `work` (the `WorkRequested` `event`) over the cap: the turn's
    /// outcome, a `RenderFailed` carrying the notice in the language of the user's message.
    /// The turn ends here with a fixed notice, like the watchdog's, rather than through the
    /// persona, whose model may not say what happened, nor in the user's language (the
    /// embedded model answers in English). No work outcome goes to the router: the turn is
    /// over, and a step of the router after its end would leave the session looking busy.
    pub async fn refusal(
        &self,
        ctx: &ServiceContext,
        event: &RecordedEvent,
        work: &WorkRequested,
    ) -> Result<NewEvent, HandlerError> {
        let user = ctx
            .store()
            .get(work.user_event_id)
            .await
            .map_err(HandlerError::transient)?
            .ok_or_else(|| HandlerError::permanent("work requested for a message not stored"))?;
        let message: UserMessageReceived = user.decode().map_err(HandlerError::permanent)?;
        let closed = RenderFailed {
            session_id: work.session_id.clone(),
            channel: message.channel,
            user_event_id: work.user_event_id,
            code: CAP_REACHED.to_owned(),
            message: token_cap_notice(&message.text).to_owned(),
        };
        NewEvent::closing_turn(event, work.user_event_id, &closed, ctx.service)
            .map_err(HandlerError::permanent)
    }

    /// The cap in force (`None`: no cap).
    pub fn cap(&self) -> Option<u64> {
        self.cap
    }
}

/// The day's use as the store has it now, also shown on the `ghost_coder_tokens_today`
/// gauge.
pub async fn day_use(ctx: &ServiceContext) -> Result<DayUse, HandlerError> {
    let used = spend::today(ctx.store().pool())
        .await
        .map_err(HandlerError::transient)?;
    metrics::coder_tokens_today(used.prompt, used.completion);
    Ok(used)
}

//! The router: decides which route serves each user message and asks for the work.
//!
//! For now every message takes the CHAT route (the persona answers directly); routing by
//! command, rule dictionary and classifier lands with the routing capability.
//!
//! - [`ChatRouter`]: the `UserMessageReceived` handler;
//! - [`routing`]: commands, the rule dictionary, classifier validation, gates, the loop
//!   controller, declarations and masking (pure decisions, not yet wired in).

pub mod routing;

use std::sync::Arc;

use ghost_shared::bus::{run_consumer, ConsumerSpec, EventHandler, HandlerError};
use ghost_shared::event::{session_stream, EventPayload, NewEvent, RecordedEvent};
use ghost_shared::events::{RenderFailed, RenderRequested, RouteDecided, UserMessageReceived};
use ghost_shared::service::{ServiceContext, ServiceError, ServiceHandle};
use ghost_shared::store::ExpectedVersion;

/// This service's name.
pub const SERVICE: &str = "router";

/// Starts the router's consumers.
pub async fn start(ctx: ServiceContext) -> Result<ServiceHandle, ServiceError> {
    let mut handle = ServiceHandle::new(SERVICE);
    let bus = ctx.bus().clone();
    let handler = Arc::new(ChatRouter { ctx });
    handle.spawn(run_consumer(
        bus,
        ConsumerSpec::new(SERVICE, UserMessageReceived::EVENT_TYPE),
        handler,
    ));
    Ok(handle)
}

/// Runs the router until it fails.
pub async fn run(ctx: ServiceContext) -> Result<(), ServiceError> {
    start(ctx).await?.wait().await;
    Ok(())
}

/// Routes every user message to CHAT and requests the persona's reply.
pub struct ChatRouter {
    ctx: ServiceContext,
}

#[async_trait::async_trait]
impl EventHandler for ChatRouter {
    async fn handle(&self, event: RecordedEvent) -> Result<(), HandlerError> {
        let message: UserMessageReceived = event.decode().map_err(HandlerError::permanent)?;
        let decided = RouteDecided {
            session_id: message.session_id.clone(),
            user_event_id: event.event_id,
            route: "CHAT".into(),
            source: "default".into(),
        };
        let render = RenderRequested {
            session_id: message.session_id.clone(),
            channel: message.channel,
            user_event_id: event.event_id,
            user_text: message.text.clone(),
            work_result: None,
        };
        let service = self.ctx.service;
        let events = [
            NewEvent::caused_by(&event, "route", &decided, service)
                .map_err(HandlerError::permanent)?,
            NewEvent::caused_by(&event, "render", &render, service)
                .map_err(HandlerError::permanent)?,
        ];
        self.ctx
            .log
            .append(
                &session_stream(&message.session_id),
                ExpectedVersion::Any,
                &events,
            )
            .await
            .map_err(HandlerError::transient)?;
        Ok(())
    }

    async fn on_dead_letter(&self, event: Option<&RecordedEvent>, reason: &str) {
        // Close the turn so the session is not left busy.
        let Some(event) = event else { return };
        let Ok(message) = event.decode::<UserMessageReceived>() else {
            return;
        };
        let failed = RenderFailed {
            session_id: message.session_id.clone(),
            channel: message.channel,
            user_event_id: event.event_id,
            code: "routing_failed".into(),
            message: reason.chars().take(200).collect(),
        };
        if let Ok(e) = NewEvent::caused_by(event, "render-failed", &failed, self.ctx.service) {
            let _ = self
                .ctx
                .log
                .append(
                    &session_stream(&message.session_id),
                    ExpectedVersion::Any,
                    &[e],
                )
                .await;
        }
    }
}

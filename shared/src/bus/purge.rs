//! Deleting events' copies from the bus's streams (forgetting a person): the streams keep
//! what was published until their limits drop it, so a redacted event's original payload
//! would otherwise stay readable there for up to `bus.max_age_secs`.

use std::collections::HashSet;
use std::time::Duration;

use async_nats::jetstream::consumer::{pull::OrderedConfig, DeliverPolicy};
use futures::StreamExt;
use uuid::Uuid;

use super::{Bus, BusError};

/// How long a scan waits for the next message before taking the stream as read.
const SCAN_IDLE: Duration = Duration::from_secs(5);

impl Bus {
    /// Deletes every message of the event and dead-letter streams that carries one of
    /// `events` (by the event id in its payload), returning how many went. One pass over
    /// each stream's messages: forgetting is rare, and nothing indexes messages by id.
    pub async fn delete_event_copies(&self, events: &HashSet<Uuid>) -> Result<usize, BusError> {
        if events.is_empty() {
            return Ok(0);
        }
        let mut deleted = 0;
        for name in [self.config.stream_name.clone(), self.dlq_stream_name()] {
            deleted += self.delete_in(&name, events).await?;
        }
        Ok(deleted)
    }

    async fn delete_in(&self, name: &str, events: &HashSet<Uuid>) -> Result<usize, BusError> {
        let js_err = |e: &dyn std::fmt::Display| BusError::JetStream(format!("stream {name}: {e}"));
        let mut stream = self.js.get_stream(name).await.map_err(|e| js_err(&e))?;
        let last = stream
            .info()
            .await
            .map_err(|e| js_err(&e))?
            .state
            .last_sequence;
        if last == 0 {
            return Ok(0);
        }
        let consumer = stream
            .create_consumer(OrderedConfig {
                deliver_policy: DeliverPolicy::All,
                ..Default::default()
            })
            .await
            .map_err(|e| js_err(&e))?;
        let mut messages = consumer.messages().await.map_err(|e| js_err(&e))?;
        let mut doomed = Vec::new();
        while let Ok(Some(message)) = tokio::time::timeout(SCAN_IDLE, messages.next()).await {
            let message = message.map_err(|e| js_err(&e))?;
            let seq = message.info().map_err(|e| js_err(&e))?.stream_sequence;
            if carries(&message.payload, events) {
                doomed.push(seq);
            }
            if seq >= last {
                break;
            }
        }
        let mut deleted = 0;
        for seq in doomed {
            if stream.delete_message(seq).await.map_err(|e| js_err(&e))? {
                deleted += 1;
            }
        }
        Ok(deleted)
    }
}

/// Whether a message's payload (a recorded event) is one of `events`.
fn carries(payload: &[u8], events: &HashSet<Uuid>) -> bool {
    #[derive(serde::Deserialize)]
    struct Id {
        event_id: Uuid,
    }
    serde_json::from_slice::<Id>(payload).is_ok_and(|m| events.contains(&m.event_id))
}

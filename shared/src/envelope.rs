//! Events as stored and as carried on the bus.

use chrono::{DateTime, Utc};
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use uuid::Uuid;

use crate::ids::derive_event_id;

/// Who caused an event and under which trace: travels with the event everywhere.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventMetadata {
    /// The user message (or other origin) this event ultimately serves.
    pub correlation_id: Uuid,
    /// The event this one reacts to; `None` for an origin event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub causation_id: Option<Uuid>,
    /// W3C `traceparent` of the span that produced the event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// W3C `tracestate`, when the trace carries one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracestate: Option<String>,
    /// The service that produced the event.
    pub service: String,
}

/// A typed event body: knows its type name and schema version.
pub trait EventPayload: Serialize + DeserializeOwned {
    /// The `event_type` column and the last token of the bus subject.
    const EVENT_TYPE: &'static str;
    /// Bumped when the payload's shape changes incompatibly.
    const SCHEMA_VERSION: i32 = 1;
}

/// An event about to be appended.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    /// Deterministic id (see [`crate::ids`]).
    pub event_id: Uuid,
    /// Type name, e.g. `UserMessageReceived`.
    pub event_type: String,
    /// Payload schema version.
    pub schema_version: i32,
    /// The body.
    pub payload: serde_json::Value,
    /// Correlation, causation, trace and producer.
    pub metadata: EventMetadata,
}

impl NewEvent {
    /// An event with an explicit id and metadata.
    pub fn new<P: EventPayload>(
        event_id: Uuid,
        payload: &P,
        metadata: EventMetadata,
    ) -> Result<Self, serde_json::Error> {
        let mut payload = serde_json::to_value(payload)?;
        make_storable(&mut payload);
        Ok(Self {
            event_id,
            event_type: P::EVENT_TYPE.to_owned(),
            schema_version: P::SCHEMA_VERSION,
            payload,
            metadata,
        })
    }

    /// An origin event (`id` correlates everything it causes) that `service` records under
    /// the current span's trace: what a request or an outside party starts.
    pub fn origin<P: EventPayload>(
        id: Uuid,
        payload: &P,
        service: &str,
    ) -> Result<Self, serde_json::Error> {
        let (traceparent, tracestate) = crate::telemetry::current_trace_headers();
        Self::new(
            id,
            payload,
            EventMetadata {
                correlation_id: id,
                causation_id: None,
                traceparent,
                tracestate,
                service: service.to_owned(),
            },
        )
    }

    /// The event `service` produces at `step` in reaction to `cause`: its id is derived
    /// from the cause, correlation carries over, and the trace is the current span's.
    pub fn caused_by<P: EventPayload>(
        cause: &RecordedEvent,
        step: &str,
        payload: &P,
        service: &str,
    ) -> Result<Self, serde_json::Error> {
        let (traceparent, tracestate) = crate::telemetry::current_trace_headers();
        Self::new(
            derive_event_id(cause.event_id, step),
            payload,
            EventMetadata {
                correlation_id: cause.metadata.correlation_id,
                causation_id: Some(cause.event_id),
                traceparent,
                tracestate,
                service: service.to_owned(),
            },
        )
    }

    /// The event closing the turn of user message `user_event_id`, produced in reaction to
    /// `cause`: like [`Self::caused_by`], but its id is the turn's one outcome id
    /// ([`crate::ids::turn_outcome_id`]), shared by every alternative outcome of the turn.
    pub fn closing_turn<P: EventPayload>(
        cause: &RecordedEvent,
        user_event_id: Uuid,
        payload: &P,
        service: &str,
    ) -> Result<Self, serde_json::Error> {
        let mut event = Self::caused_by(cause, "turn-outcome", payload, service)?;
        event.event_id = crate::ids::turn_outcome_id(user_event_id);
        Ok(event)
    }
}

/// The payload key that records characters replaced before storage (readers ignore it).
pub const REPLACED_KEY: &str = "_replaced_characters";

/// What stands in for a character Postgres refuses.
pub const REPLACEMENT: char = '\u{FFFD}';

/// `text` as Postgres stores it: U+0000 (the only character a UTF-8 `text` or `jsonb`
/// refuses) replaced by U+FFFD.
pub fn storable_text(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains('\0') {
        std::borrow::Cow::Owned(text.replace('\0', "\u{FFFD}"))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// Makes a payload storable whatever its content: every U+0000 in a string or key becomes
/// U+FFFD, and an object payload records how many were replaced under [`REPLACED_KEY`], so
/// that no event (a chat message, a platform webhook) fails its append for its content.
pub fn make_storable(payload: &mut serde_json::Value) -> usize {
    let replaced = replace_nul(payload);
    if replaced > 0 {
        if let serde_json::Value::Object(map) = payload {
            map.insert(
                REPLACED_KEY.to_owned(),
                serde_json::json!({ "count": replaced, "with": "U+FFFD", "was": "U+0000" }),
            );
        }
    }
    replaced
}

fn replace_nul(value: &mut serde_json::Value) -> usize {
    use serde_json::Value;
    let fix = |s: &mut String| {
        let n = s.matches('\0').count();
        if n > 0 {
            *s = s.replace('\0', "\u{FFFD}");
        }
        n
    };
    match value {
        Value::String(s) => fix(s),
        Value::Array(items) => items.iter_mut().map(replace_nul).sum(),
        Value::Object(map) => {
            let mut n = 0;
            if map.keys().any(|k| k.contains('\0')) {
                let old = std::mem::take(map);
                for (mut k, v) in old {
                    n += fix(&mut k);
                    map.insert(k, v);
                }
            }
            n + map.values_mut().map(replace_nul).sum::<usize>()
        }
        _ => 0,
    }
}

/// An event as committed: what readers and consumers see.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedEvent {
    /// Global insertion order and identity.
    pub position: i64,
    /// The writing transaction (gap-safe ordering key, with `position`).
    pub tx_id: i64,
    /// Deterministic id.
    pub event_id: Uuid,
    /// Stream name, e.g. `session-abc`.
    pub stream: String,
    /// 1-based version within the stream.
    pub version: i32,
    /// Type name.
    pub event_type: String,
    /// Payload schema version.
    pub schema_version: i32,
    /// The body.
    pub payload: serde_json::Value,
    /// Correlation, causation, trace and producer.
    pub metadata: EventMetadata,
    /// Commit-side time stamp.
    pub recorded_at: DateTime<Utc>,
}

/// An event's payload did not match the type asked for.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// The event is of another type.
    #[error("expected event type {expected}, found {found}")]
    WrongType {
        /// The type asked for.
        expected: &'static str,
        /// The type stored.
        found: String,
    },
    /// The payload does not fit the type's schema.
    #[error("payload of {event_type} does not decode: {source}")]
    Payload {
        /// The type asked for.
        event_type: &'static str,
        /// What serde said.
        source: serde_json::Error,
    },
}

/// A payload of type `event_type` as `P` (stored or about to be), checking the type first.
pub fn decode_payload<P: EventPayload>(
    event_type: &str,
    payload: &serde_json::Value,
) -> Result<P, DecodeError> {
    if event_type != P::EVENT_TYPE {
        return Err(DecodeError::WrongType {
            expected: P::EVENT_TYPE,
            found: event_type.to_owned(),
        });
    }
    P::deserialize(payload).map_err(|source| DecodeError::Payload {
        event_type: P::EVENT_TYPE,
        source,
    })
}

impl RecordedEvent {
    /// The payload as `P`, checking the type name first.
    pub fn decode<P: EventPayload>(&self) -> Result<P, DecodeError> {
        decode_payload(&self.event_type, &self.payload)
    }

    /// Whether this event is of type `P`.
    pub fn is<P: EventPayload>(&self) -> bool {
        self.event_type == P::EVENT_TYPE
    }

    /// The stream's kind: the part of its name before the first `-` (`session`, `stage`, `persona`).
    pub fn stream_kind(&self) -> &str {
        stream_kind(&self.stream)
    }
}

/// The kind of a stream name: the part before the first `-`.
pub fn stream_kind(stream: &str) -> &str {
    stream.split_once('-').map_or(stream, |(kind, _)| kind)
}

/// Stream name of one conversation.
pub fn session_stream(session_id: &str) -> String {
    format!("session-{session_id}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nul_characters_are_replaced_and_recorded() {
        let mut v = json!({"text": "a\u{0}b\u{0}", "list": ["\u{0}"], "k\u{0}": 1, "n": 2});
        assert_eq!(make_storable(&mut v), 4);
        assert_eq!(v["text"], "a\u{FFFD}b\u{FFFD}");
        assert_eq!(v["list"][0], "\u{FFFD}");
        assert_eq!(v["k\u{FFFD}"], 1);
        assert_eq!(v[REPLACED_KEY]["count"], 4);
        let mut clean = json!({"text": "fine"});
        assert_eq!(make_storable(&mut clean), 0);
        assert_eq!(clean, json!({"text": "fine"}));
        assert_eq!(storable_text("x\u{0}"), "x\u{FFFD}");
    }
}

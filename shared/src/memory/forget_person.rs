//! Forgetting a person (issue 35 item 2): after it, nothing Ghost serves, projects, recalls,
//! exports or rebuilds holds that person's memories or words.
//!
//! The event store is append-only and every read model is rebuilt from it, so deleting
//! projection rows alone would bring the words back at the next rebuild. Two mechanisms fit
//! an append-only store: per-person encryption keys destroyed on request (crypto-shredding),
//! or an audited redaction of the stored payloads. Ghost redacts: the person's words are not
//! only in their own events but copied into other events' prompts and contexts (a group
//! conversation's classifier context, a work task, a summary), which no per-person key would
//! cover without encrypting every payload for every person it mentions; and every reader
//! would have to decrypt. Redaction is one audited transaction instead: the store's trigger
//! lets an event's payload and type change only inside it, only to a payload naming the
//! request (`redacted_by`), and never deletes a row, so positions, versions, ids, metadata
//! and the order stay, and a redelivered step still finds its outcome.
//!
//! What is redacted ([`crate::store::forget_person`] selects it):
//! - **whole** ([`REDACTED`]: the type becomes `EventRedacted`, the payload only says by
//!   which request and what it was): what the person said (messages, images, imported lines),
//!   every step of the turns those started, their memories (states about them, their
//!   preferences, edits of those), states about no one that rest on their words, and the
//!   annotations of their utterances, and their reminders (every step of each: the words
//!   they asked to be reminded of; the reminder is deleted, so it does not come due). Kept, because they hold nothing of the person: the
//!   persona's own affect (`AffectReflected`), cloud spend (`CloudTokensUsed`, the daily
//!   cap must not reset) and the persona's interest state (`InterestStateUpdated`).
//! - **the reply's words** ([`scrub`]): the persona's replies in those turns keep their type
//!   and affect, so the persona's mood stays as it was lived, with the text emptied; their
//!   route decisions keep the route and the conversation's `/local` mode.
//! - **scrubbed fields** ([`scrub`]): in the conversations they took part in, after their
//!   first message there, the fields of other people's steps that carry the conversation's
//!   context (the classifier's context, work tasks and results, the summary and work result
//!   handed to the persona, confirmations, proposals, summaries), and the texts of recalls that
//!   selected one of their memories. Other people's messages, the persona's replies to them
//!   and their memories stay.
//!
//! The projections' rows derived from them go in the same transaction; the bus's copies are
//! deleted after it; `PersonForgotten` records the counts.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use uuid::Uuid;

use crate::envelope::EventPayload;

/// The type a wholly redacted event takes: every reader ignores it as an unknown type.
pub const REDACTED: &str = "EventRedacted";

/// The payload key naming the request that redacted an event (the trigger requires it).
pub const REDACTED_BY: &str = "redacted_by";

/// Stream of the requests to forget people.
pub const FORGET_STREAM: &str = "people-forget";

/// Someone asked to forget a person (the API records it; the write-plan service does it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PersonForgetRequested {
    /// The person (platform user id, or `user`).
    pub person: String,
    /// Why, as the requester said (kept for the audit).
    #[serde(default)]
    pub reason: String,
}

impl EventPayload for PersonForgetRequested {
    const EVENT_TYPE: &'static str = "PersonForgetRequested";
}

/// A person was forgotten: the audit of what the redaction changed (ids and counts, no
/// text).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PersonForgotten {
    /// The person.
    pub person: String,
    /// The `PersonForgetRequested` carried out.
    pub request_id: Uuid,
    /// Events redacted whole, per original type.
    pub redacted: BTreeMap<String, usize>,
    /// Events whose text fields were emptied, per type.
    pub scrubbed: BTreeMap<String, usize>,
    /// Copies deleted from the bus's streams.
    pub bus_copies_deleted: usize,
}

impl EventPayload for PersonForgotten {
    const EVENT_TYPE: &'static str = "PersonForgotten";
}

/// Types of a person's own turns kept as they are: they hold nothing of the person.
pub const KEPT_IN_THEIR_TURNS: [&str; 3] =
    ["AffectReflected", "CloudTokensUsed", "InterestStateUpdated"];

/// Types of a person's own turns scrubbed rather than redacted whole: the reply keeps the
/// persona's affect (its mood), the route decision what the conversation's mode rests on
/// (a `/local` the person set stays set for the others), a summary the session's count of
/// summarized turns (a rebuild then shows no summary, as the live rows do).
pub const SCRUBBED_IN_THEIR_TURNS: [&str; 3] =
    ["AssistantReplied", "RouteDecided", "SessionSummarized"];

/// Types of other people's steps scrubbed in a conversation the person took part in: those
/// that carry the conversation's context.
pub const SCRUBBED_IN_SHARED_CONVERSATIONS: [&str; 11] = [
    "ClassifyRequested",
    "WorkRequested",
    "WorkerCompleted",
    "WorkerFailed",
    "RenderRequested",
    "JudgeRequested",
    "ConfirmationPending",
    "ConfirmationCheckRequested",
    "ConfirmationChecked",
    "PersonaProposed",
    "SessionSummarized",
];

/// The payload of a wholly redacted event of type `was`.
pub fn redacted(was: &str, by: Uuid) -> Value {
    json!({ REDACTED_BY: by, "redacted_type": was })
}

/// Whether a payload was redacted (whole or scrubbed): readers treat its text as gone.
pub fn is_redacted(payload: &Value) -> bool {
    payload.get(REDACTED_BY).is_some()
}

/// The fields of an event of `event_type` that carry words (the person's, or a context
/// holding them), each with the empty value it gets. Types not listed have none to scrub.
fn text_fields(event_type: &str) -> &'static [(&'static str, Empty)] {
    use Empty::*;
    match event_type {
        "AssistantReplied" => &[("text", Str), ("affect_rejected", Absent)],
        "ClassifyRequested" => &[("context", Str)],
        "WorkRequested" => &[("task", Str)],
        "WorkerCompleted" => &[("result", Str), ("sources", List)],
        "WorkerFailed" => &[("message", Str)],
        "RouteDecided" => &[("detail", Absent), ("corrects", Absent)],
        "RenderRequested" => &[("memory_summary", Absent), ("work_result", RouteOnly)],
        "JudgeRequested" => &[("work_result", RouteOnly)],
        "ConfirmationPending" => &[("task", Str), ("result", Str), ("questions", List)],
        "ConfirmationCheckRequested" => &[("result", Str), ("questions", List)],
        "ConfirmationChecked" => &[("raw", Absent)],
        "PersonaProposed" => &[("raw", Str)],
        "SessionSummarized" => &[("summary", Str)],
        "RecallPerformed" => &[("selected_texts", List)],
        _ => &[],
    }
}

/// What a scrubbed field becomes.
#[derive(Debug, Clone, Copy)]
enum Empty {
    Str,
    List,
    Absent,
    /// An object reduced to its `route` (what the routing log reads of a work result).
    RouteOnly,
}

/// `payload` of an event of `event_type` with its text fields emptied and the request
/// named, or None when the type has no text fields (it is then redacted whole or kept).
pub fn scrub(event_type: &str, payload: &Value, by: Uuid) -> Option<Value> {
    let fields = text_fields(event_type);
    let Value::Object(map) = payload else {
        return None;
    };
    if fields.is_empty() {
        return None;
    }
    let mut map = map.clone();
    for (field, empty) in fields {
        match empty {
            Empty::Str => {
                map.insert((*field).into(), Value::String(String::new()));
            }
            Empty::List => {
                map.insert((*field).into(), Value::Array(Vec::new()));
            }
            Empty::Absent => {
                map.remove(*field);
            }
            Empty::RouteOnly => {
                if let Some(Value::Object(o)) = map.get(*field) {
                    let route = o.get("route").cloned();
                    let kept = route.map(|r| json!({ "route": r })).unwrap_or(json!({}));
                    map.insert((*field).into(), kept);
                }
            }
        }
    }
    map.insert(REDACTED_BY.into(), json!(by));
    Some(Value::Object(map))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{AssistantReplied, Channel, SessionSummarized};

    #[test]
    fn a_scrubbed_reply_still_decodes_without_its_words() {
        let reply = AssistantReplied {
            session_id: "s".into(),
            channel: Channel::Http,
            user_event_id: Uuid::nil(),
            speaker: "ghost".into(),
            text: "you told me about zanzibar".into(),
            affect: None,
            affect_rejected: vec!["label: zanzibar".into()],
            cut: None,
        };
        let by = Uuid::from_u128(7);
        let scrubbed = scrub(
            "AssistantReplied",
            &serde_json::to_value(&reply).unwrap(),
            by,
        )
        .expect("a reply has words");
        assert!(!scrubbed.to_string().contains("zanzibar"), "{scrubbed}");
        assert!(is_redacted(&scrubbed));
        let back: AssistantReplied = serde_json::from_value(scrubbed).unwrap();
        assert_eq!(back.text, "");
        assert_eq!(back.speaker, "ghost");
    }

    #[test]
    fn a_scrubbed_summary_decodes_as_an_empty_one() {
        let s = SessionSummarized {
            session_id: "s".into(),
            summary: "they like zanzibar".into(),
            user_turns: 20,
            through_event_id: None,
        };
        let v = scrub(
            "SessionSummarized",
            &serde_json::to_value(&s).unwrap(),
            Uuid::nil(),
        )
        .unwrap();
        let back: SessionSummarized = serde_json::from_value(v).unwrap();
        assert_eq!((back.summary.as_str(), back.user_turns), ("", 20));
    }

    #[test]
    fn a_scrubbed_render_request_keeps_only_the_route_of_its_work() {
        let request = json!({"session_id": "s", "user_text": "hi",
            "memory_summary": "they said zanzibar",
            "work_result": {"route": "ANALYZE", "result": "zanzibar rows"}});
        let v = scrub("RenderRequested", &request, Uuid::nil()).unwrap();
        assert_eq!(v["work_result"], json!({"route": "ANALYZE"}));
        assert!(v.get("memory_summary").is_none());
        assert!(!v.to_string().contains("zanzibar"), "{v}");
    }

    #[test]
    fn a_scrubbed_judge_request_keeps_only_the_route_of_its_work() {
        let request = json!({"session_id": "s", "user_text": "hi",
            "work_result": {"route": "PLAN", "result": "zanzibar steps"}});
        let v = scrub("JudgeRequested", &request, Uuid::nil()).unwrap();
        assert_eq!(v["work_result"], json!({"route": "PLAN"}));
        assert!(!v.to_string().contains("zanzibar"), "{v}");
    }

    #[test]
    fn types_without_words_are_not_scrubbed() {
        assert_eq!(
            scrub("ReplyDelivered", &json!({"a": "b"}), Uuid::nil()),
            None
        );
        let whole = redacted("UserMessageReceived", Uuid::nil());
        assert!(is_redacted(&whole));
        assert_eq!(whole["redacted_type"], "UserMessageReceived");
    }
}

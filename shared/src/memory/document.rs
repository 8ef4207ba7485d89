//! The memory document (issue 35 item 4): what `ghost memory export` writes and `ghost
//! memory import` applies, one versioned JSON object. Reading it is strict: a document of
//! another format or an unknown version, or one that does not parse, is refused whole with
//! the reason. Importing it is appending the events that would have made its rows, each id
//! derived from what it records, so a second import of the same document appends nothing.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use super::model::{InterestState, MemoryState, Preference};
use super::vocab::StateStatus;
use crate::envelope::NewEvent;
use crate::events::{InterestStateUpdated, PreferenceUpdated, StateClosed, StateUpserted};
use crate::ids::external_event_id;

/// The document's `format`.
pub const FORMAT: &str = "ghost-memory";
/// The version this Ghost writes and reads.
pub const VERSION: u64 = 1;

/// One export.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryDocument {
    /// Always [`FORMAT`].
    pub format: String,
    /// Always [`VERSION`] when written by this Ghost.
    pub version: u64,
    /// When it was written (RFC 3339).
    pub exported_at: String,
    /// Only this person's memories, when the export was for one.
    #[serde(default)]
    pub person: Option<String>,
    /// Each persona's memory.
    pub personas: Vec<PersonaMemory>,
    /// The conversations, when exported `--history`, oldest line first in each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conversations: Vec<Conversation>,
}

/// One conversation's lines.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Conversation {
    /// The session.
    pub session_id: String,
    /// Its lines, oldest first.
    pub lines: Vec<ConversationLine>,
}

/// One line of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConversationLine {
    /// The event that said it where it was exported (the import's id derives from it).
    pub event_id: Uuid,
    /// Who spoke.
    pub role: LineRole,
    /// The person or the persona.
    pub speaker: String,
    /// The channel (`http`, `line`, `slack`, `autonomy`, ...).
    pub source: String,
    /// What was said.
    pub text: String,
}

/// Who said a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LineRole {
    /// A person.
    User,
    /// The persona.
    Assistant,
}

impl LineRole {
    /// As `assistant_text.role` holds it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Assistant => "assistant",
        }
    }
}

/// A line of an imported conversation: it joins the conversation's text (recall and the
/// reply's history read it) and starts nothing (no turn, no plan). Appended on the
/// session's import stream ([`import_stream`]), never the session's own, whose tail says
/// whether a turn is running.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConversationLineImported {
    /// The conversation.
    pub session_id: String,
    /// The line.
    pub line: ConversationLine,
}

impl crate::envelope::EventPayload for ConversationLineImported {
    const EVENT_TYPE: &'static str = "ConversationLineImported";
}

/// The stream imported lines of `session_id` are appended on.
pub fn import_stream(session_id: &str) -> String {
    format!("import-{session_id}")
}

/// One persona's memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PersonaMemory {
    /// The character id.
    pub persona: String,
    /// The character's settings where it was exported (for the reader; import keeps the
    /// target's own `characters.yaml`).
    pub character: Value,
    /// Every state with its revisions, oldest first (the last is the current one).
    pub states: Vec<StateHistory>,
    /// Every preference as it stands.
    pub preferences: Vec<PreferenceRecord>,
    /// The interest state (absent in a one-person export).
    #[serde(default)]
    pub interest: Option<InterestState>,
}

/// A state's revisions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateHistory {
    /// Oldest first.
    pub revisions: Vec<MemoryState>,
}

/// A preference with what it rests on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreferenceRecord {
    /// The preference.
    pub preference: Preference,
    /// Its subject key.
    pub subject_key: String,
    /// The events it rests on (ids in the exporting deployment).
    pub evidence_event_ids: Vec<Uuid>,
    /// Why it stands.
    pub reason: String,
}

impl MemoryDocument {
    /// `text` as a document, or why it is refused (format, version, then shape, in that
    /// order, so a document from a newer Ghost is named as such, not as broken).
    pub fn parse(text: &str) -> Result<Self, String> {
        let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        match value.get("format").and_then(Value::as_str) {
            Some(FORMAT) => {}
            Some(other) => return Err(format!("format {other:?} is not {FORMAT:?}")),
            None => return Err(format!("no \"format\": not a {FORMAT} document")),
        }
        match value.get("version").and_then(Value::as_u64) {
            Some(VERSION) => {}
            Some(v) => {
                return Err(format!(
                    "version {v} is unknown: this Ghost reads version {VERSION}"
                ))
            }
            None => return Err("no numeric \"version\"".into()),
        }
        let document: Self =
            serde_json::from_value(value).map_err(|e| format!("not a valid document: {e}"))?;
        document.check()?;
        Ok(document)
    }

    /// The rules serde cannot say: revisions in order, one state id each.
    fn check(&self) -> Result<(), String> {
        for p in &self.personas {
            for (i, s) in p.states.iter().enumerate() {
                let at = format!("{}.states[{i}]", p.persona);
                let first = s.revisions.first().ok_or(format!("{at}: no revisions"))?;
                for pair in s.revisions.windows(2) {
                    if pair[1].revision <= pair[0].revision || pair[1].state_id != first.state_id {
                        return Err(format!(
                            "{at}: revisions must be of one state, in increasing order"
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// The events that make `p`'s rows, in order, each id derived from what it records.
    pub fn events_of(p: &PersonaMemory, service: &str) -> Result<Vec<NewEvent>, serde_json::Error> {
        let id =
            |what: String| external_event_id("memory-import", &format!("{}/{what}", p.persona));
        let mut out = Vec::new();
        for s in &p.states {
            for r in &s.revisions {
                let event_id = id(format!("state/{}/{}", r.state_id, r.revision));
                let source_event_id = event_id;
                out.push(if r.status == StateStatus::Active {
                    NewEvent::origin(
                        event_id,
                        &StateUpserted {
                            persona: p.persona.clone(),
                            source_event_id,
                            state: r.clone(),
                        },
                        service,
                    )?
                } else {
                    NewEvent::origin(
                        event_id,
                        &StateClosed {
                            persona: p.persona.clone(),
                            source_event_id,
                            state: r.clone(),
                        },
                        service,
                    )?
                });
            }
        }
        for r in &p.preferences {
            let q = &r.preference;
            let event_id = id(format!(
                "preference/{}/{}/{}/{}/{}/{}",
                q.person,
                q.domain.as_str(),
                r.subject_key,
                q.polarity.as_str(),
                q.status.as_str(),
                q.confidence
            ));
            out.push(NewEvent::origin(
                event_id,
                &PreferenceUpdated {
                    persona: p.persona.clone(),
                    source_event_id: event_id,
                    preference: q.clone(),
                    subject_key: r.subject_key.clone(),
                    evidence_event_ids: r.evidence_event_ids.clone(),
                    reason: r.reason.clone(),
                },
                service,
            )?);
        }
        if let Some(interest) = &p.interest {
            let event_id = id(format!("interest/{}", interest.updated_at));
            out.push(NewEvent::origin(
                event_id,
                &InterestStateUpdated {
                    persona: p.persona.clone(),
                    source_event_id: event_id,
                    interest: interest.clone(),
                },
                service,
            )?);
        }
        Ok(out)
    }

    /// The events that import `c`'s lines, oldest first.
    pub fn line_events(
        c: &Conversation,
        service: &str,
    ) -> Result<Vec<NewEvent>, serde_json::Error> {
        c.lines
            .iter()
            .map(|line| {
                let id = external_event_id(
                    "memory-import",
                    &format!("line/{}/{}", c.session_id, line.event_id),
                );
                let imported = ConversationLineImported {
                    session_id: c.session_id.clone(),
                    line: line.clone(),
                };
                NewEvent::origin(id, &imported, service)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_of_another_format_or_version_or_shape_is_refused_with_the_reason() {
        let refused = |t: &str| MemoryDocument::parse(t).unwrap_err();
        assert!(refused("{").contains("not JSON"));
        assert!(refused(r#"{"format": "other", "version": 1}"#).contains("is not"));
        assert!(
            refused(r#"{"format": "ghost-memory", "version": 2, "personas": "x"}"#)
                .contains("version 2 is unknown")
        );
        assert!(refused(r#"{"format": "ghost-memory", "version": 1}"#).contains("not a valid"));
        let empty = r#"{"format": "ghost-memory", "version": 1, "exported_at": "now",
                        "personas": [{"persona": "kuro", "character": {}, "states": [{"revisions": []}],
                                      "preferences": []}]}"#;
        assert!(refused(empty).contains("kuro.states[0]: no revisions"));
    }
}

//! Everything said, embedded when it is said (issue 45 item 3): a projection that gives every
//! line of the conversation (users' messages, the persona's replies and autonomy messages,
//! imported lines: what `assistant_text` holds) and every state the write plan keeps a
//! vector of the embedding model (`llm.embedding`), in `memory_embeddings`, a batch per
//! pass, off the reply's path. After a restart or an import it catches up from its
//! checkpoint like any projection, so a recall only ever embeds its own query.
//!
//! A revised or corrected state's vector is replaced (a new `seq`, so the persona's vector
//! cache loads it again); a forgotten state's and a forgotten line's rows go (forgetting a
//! person deletes them too, and its redacted lines are never embedded again, rebuilds
//! included). The model not answering fails the pass, which is tried again: nothing is
//! parked for it.

use std::collections::HashSet;

use sqlx::{Postgres, Transaction};

use ghost_shared::envelope::{EventPayload, RecordedEvent};
use ghost_shared::events::StateUpserted;
use ghost_shared::llm::LlmClient;
use ghost_shared::memory::edits::{MemoryCorrected, MemoryForgotten, MemoryTarget};
use ghost_shared::memory::MemoryState;
use ghost_shared::projector::{Projection, ProjectionError};

/// The projection's name (`ghost projections rebuild memory_embeddings`).
pub const NAME: &str = "memory_embeddings";

/// Texts per embedding request (the embedded server takes up to 128).
const PER_REQUEST: usize = 64;

/// What a vector is kept for.
#[derive(Debug, Clone, PartialEq)]
struct Item {
    /// `event:<uuid>` or `state:<uuid>`.
    id: String,
    /// The persona whose state it is (none for a line of a conversation).
    persona: Option<String>,
    /// The conversation of a line.
    session_id: Option<String>,
    /// What is embedded, and what recall shows.
    text: String,
}

/// A change one event makes.
enum Change {
    Embed(Item),
    Forget(String),
}

/// The line an utterance's vector is kept for: who said it, then the words, as recall
/// shows them.
pub fn line_text(said_by_user: bool, text: &str) -> String {
    let tag = if said_by_user {
        "(the user said) "
    } else {
        "(I said) "
    };
    format!("{tag}{text}")
}

/// A state's text, as recall shows it.
pub fn state_text(state: &MemoryState) -> String {
    format!("({}) {}", state.kind.as_str(), state.body_text)
}

/// The projection of `model`'s vectors.
pub struct EmbeddingProjection {
    model: LlmClient,
}

impl EmbeddingProjection {
    /// Vectors of `model` (the `llm.embedding` client).
    pub fn new(model: LlmClient) -> Self {
        Self { model }
    }

    fn model_name(&self) -> &str {
        &self.model.config().model
    }

    /// What `event` changes, if anything (an event that does not decode changes nothing:
    /// the projections that own it park it).
    fn change(event: &RecordedEvent) -> Option<Change> {
        if let Ok(Some(said)) = ghost_shared::projections::said(&event.event_type, &event.payload) {
            return Some(Change::Embed(Item {
                id: format!("event:{}", event.event_id),
                persona: None,
                session_id: Some(said.session_id),
                text: line_text(said.role == "user", &said.text),
            }));
        }
        let state = |persona: String, state: MemoryState| {
            Change::Embed(Item {
                id: format!("state:{}", state.state_id),
                persona: Some(persona),
                session_id: None,
                text: state_text(&state),
            })
        };
        match event.event_type.as_str() {
            StateUpserted::EVENT_TYPE => {
                let s: StateUpserted = event.decode().ok()?;
                Some(state(s.persona, s.state))
            }
            MemoryCorrected::EVENT_TYPE => {
                let c: MemoryCorrected = event.decode().ok()?;
                Some(state(c.persona, c.state?))
            }
            MemoryForgotten::EVENT_TYPE => match event.decode::<MemoryForgotten>().ok()?.target {
                MemoryTarget::State { state_id } => {
                    Some(Change::Forget(format!("state:{state_id}")))
                }
                MemoryTarget::Preference { .. } => None,
            },
            _ => None,
        }
    }

    /// The vectors of `texts`, in order, a request per [`PER_REQUEST`].
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ProjectionError> {
        let mut vectors = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(PER_REQUEST) {
            let got = self
                .model
                .embed(chunk)
                .await
                .map_err(|e| ProjectionError::Unavailable(format!("embedding model: {e}")))?;
            vectors.extend(got);
        }
        Ok(vectors)
    }
}

/// Whether events of this type can change a vector.
fn concerns(event_type: &str) -> bool {
    matches!(
        event_type,
        "UserMessageReceived"
            | "AssistantReplied"
            | "AutonomyMessageRendered"
            | "ConversationLineImported"
            | "StateUpserted"
            | "MemoryCorrected"
            | "MemoryForgotten"
    )
}

#[async_trait::async_trait]
impl Projection for EmbeddingProjection {
    fn name(&self) -> &'static str {
        NAME
    }

    fn wakes_on(&self, event_type: &str) -> bool {
        concerns(event_type)
    }

    async fn apply(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        event: &RecordedEvent,
    ) -> Result<(), ProjectionError> {
        self.apply_all(tx, std::slice::from_ref(event)).await
    }

    async fn apply_all(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        events: &[RecordedEvent],
    ) -> Result<(), ProjectionError> {
        let changes: Vec<Change> = events
            .iter()
            .filter(|e| concerns(&e.event_type))
            .filter_map(Self::change)
            .collect();
        // Only the last change of an item in the pass counts (a state revised twice, a
        // state upserted then forgotten).
        let mut seen = HashSet::new();
        let mut last: Vec<&Change> = Vec::new();
        for change in changes.iter().rev() {
            let id = match change {
                Change::Embed(item) => &item.id,
                Change::Forget(id) => id,
            };
            if seen.insert(id.clone()) {
                last.push(change);
            }
        }
        last.reverse();
        let forget: Vec<&str> = last
            .iter()
            .filter_map(|c| match c {
                Change::Forget(id) => Some(id.as_str()),
                Change::Embed(_) => None,
            })
            .collect();
        if !forget.is_empty() {
            sqlx::query("DELETE FROM memory_embeddings WHERE item_id = ANY($1)")
                .bind(&forget)
                .execute(&mut **tx)
                .await?;
        }
        let items: Vec<&Item> = last
            .iter()
            .filter_map(|c| match c {
                Change::Embed(item) => Some(item),
                Change::Forget(_) => None,
            })
            .collect();
        if items.is_empty() {
            return Ok(());
        }
        let texts: Vec<String> = items.iter().map(|i| i.text.clone()).collect();
        let vectors = self.embed(&texts).await?;
        // One statement for the pass. An item whose text is unchanged keeps its row (and
        // its place in the persona's cache); a changed one gets a new `seq`, so the cache
        // loads it again.
        let ids: Vec<&str> = items.iter().map(|i| i.id.as_str()).collect();
        let personas: Vec<Option<&str>> = items.iter().map(|i| i.persona.as_deref()).collect();
        let sessions: Vec<Option<&str>> = items.iter().map(|i| i.session_id.as_deref()).collect();
        let vectors: Vec<String> = vectors
            .iter()
            .map(|v| serde_json::to_string(v).unwrap_or_default())
            .collect();
        sqlx::query(
            "INSERT INTO memory_embeddings (item_id, model, persona, session_id, text, vector) \
             SELECT i.id, $1, i.persona, i.session_id, i.text, \
                    ARRAY(SELECT jsonb_array_elements_text(i.vector::jsonb)::real) \
             FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[]) \
                  AS i(id, persona, session_id, text, vector) \
             ON CONFLICT (item_id, model) DO UPDATE \
                SET text = excluded.text, vector = excluded.vector, persona = excluded.persona, \
                    seq = nextval(pg_get_serial_sequence('memory_embeddings', 'seq')), \
                    created_at = clock_timestamp() \
              WHERE memory_embeddings.text IS DISTINCT FROM excluded.text",
        )
        .bind(self.model_name())
        .bind(&ids)
        .bind(&personas)
        .bind(&sessions)
        .bind(&texts)
        .bind(&vectors)
        .execute(&mut **tx)
        .await?;
        Ok(())
    }

    async fn reset(&self, tx: &mut Transaction<'_, Postgres>) -> Result<(), ProjectionError> {
        sqlx::query("DELETE FROM memory_embeddings WHERE model = $1")
            .bind(self.model_name())
            .execute(&mut **tx)
            .await?;
        Ok(())
    }
}

/// The projection when `config` names an embedding model (none turns vectors off).
pub fn projection(
    config: &ghost_shared::config::Config,
) -> Option<std::sync::Arc<EmbeddingProjection>> {
    let role = config.ghost.llm.get("embedding")?;
    let client = LlmClient::new(role.clone(), None)
        .ok()?
        .with_role("embedding");
    Some(std::sync::Arc::new(EmbeddingProjection::new(client)))
}

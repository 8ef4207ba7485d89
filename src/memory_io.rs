//! `ghost memory export` and `ghost memory import` (issue 35 item 4): a persona's memory (or
//! one person's) as one versioned JSON document ([`MemoryDocument`]), and that document
//! applied to another deployment as events. The document is read whole before anything is
//! appended; each event's id derives from what it records, so an import interrupted and run
//! again, or run twice, appends each event once.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;
use sqlx::{PgPool, Row};
use uuid::Uuid;

use ghost_shared::config::Config;
use ghost_shared::events::persona_stream;
use ghost_shared::memory::document::{
    import_stream, Conversation, ConversationLine, LineRole, MemoryDocument, PersonaMemory,
    PreferenceRecord, StateHistory, FORMAT, VERSION,
};
use ghost_shared::memory::MemoryState;
use ghost_shared::projections::{preference_from_row, MemoryProjection};
use ghost_shared::service::ServiceContext;
use ghost_shared::store::ExpectedVersion;

/// `ghost memory export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Only this persona (default: every persona with memory).
    #[arg(long)]
    pub persona: Option<String>,
    /// Only this person's memories (their states and preferences).
    #[arg(long)]
    pub person: Option<String>,
    /// Also the conversations: every line of the sessions the personas spoke in (with
    /// `--person`, that person's own lines and the persona's where nobody else spoke).
    #[arg(long)]
    pub history: bool,
    /// Write here instead of stdout.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// `ghost memory import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The document (`-`: stdin).
    pub file: PathBuf,
}

/// Writes the export document.
pub async fn export(config: &Config, args: ExportArgs) -> Result<()> {
    let store = ghost_shared::store::EventStore::connect(&config.ghost.database.url, 2).await?;
    let pool = store.pool();
    let personas = match &args.persona {
        Some(p) => vec![p.clone()],
        None => {
            sqlx::query_scalar(
                "SELECT persona FROM memory_states UNION SELECT persona FROM preferences \
             UNION SELECT persona FROM persona_interest_state ORDER BY 1",
            )
            .fetch_all(pool)
            .await?
        }
    };
    let mut out = Vec::new();
    for persona in &personas {
        out.push(persona_memory(config, pool, persona, args.person.as_deref()).await?);
    }
    let conversations = match args.history {
        true => conversations(pool, &personas, args.person.as_deref()).await?,
        false => Vec::new(),
    };
    let document = MemoryDocument {
        format: FORMAT.into(),
        version: VERSION,
        exported_at: chrono::Utc::now().to_rfc3339(),
        person: args.person,
        personas: out,
        conversations,
    };
    let text = serde_json::to_string_pretty(&document)?;
    match args.out {
        Some(path) => std::fs::write(&path, text + "\n")
            .with_context(|| format!("writing {}", path.display()))?,
        None => println!("{text}"),
    }
    Ok(())
}

async fn persona_memory(
    config: &Config,
    pool: &PgPool,
    persona: &str,
    person: Option<&str>,
) -> Result<PersonaMemory> {
    let mut states: BTreeMap<Uuid, Vec<MemoryState>> = BTreeMap::new();
    let rows = sqlx::query(
        "SELECT state FROM memory_state_revisions WHERE persona = $1 ORDER BY state_id, revision",
    )
    .bind(persona)
    .fetch_all(pool)
    .await?;
    for r in rows {
        let state: MemoryState = serde_json::from_value(r.try_get("state")?)?;
        if person.is_none_or(|p| state.person.as_deref() == Some(p)) {
            states.entry(state.state_id).or_default().push(state);
        }
    }
    let rows = sqlx::query(
        "SELECT domain, subject, polarity, status, confidence, person, subject_key, \
         evidence_event_ids, reason FROM preferences WHERE persona = $1 \
         AND ($2::text IS NULL OR person = $2) ORDER BY person, domain, subject_key, polarity",
    )
    .bind(persona)
    .bind(person)
    .fetch_all(pool)
    .await?;
    let mut preferences = Vec::new();
    for r in rows {
        preferences.push(PreferenceRecord {
            preference: preference_from_row(&r)?,
            subject_key: r.try_get("subject_key")?,
            evidence_event_ids: r.try_get("evidence_event_ids")?,
            reason: r.try_get("reason")?,
        });
    }
    let interest = match person {
        Some(_) => None,
        None => MemoryProjection::load(pool, persona).await?.interest,
    };
    let character = config
        .characters
        .get(persona)
        .map_or(serde_json::Value::Null, |c| {
            serde_json::json!({"name": c.name, "display_name": c.display_name,
                           "short_name": c.short_name, "persona_text": c.persona_text})
        });
    Ok(PersonaMemory {
        persona: persona.to_owned(),
        character,
        states: states
            .into_values()
            .map(|revisions| StateHistory { revisions })
            .collect(),
        preferences,
        interest,
    })
}

/// The conversations `personas` spoke in, each oldest line first; for `person`, only
/// their own lines and the persona's in conversations nobody else spoke in (what recall
/// would give them: [`ghost_shared::projections::own_utterance`]).
async fn conversations(
    pool: &PgPool,
    personas: &[String],
    person: Option<&str>,
) -> Result<Vec<Conversation>> {
    let own = match person {
        Some(_) => ghost_shared::projections::own_utterance(2),
        None => "TRUE".to_owned(),
    };
    let rows = sqlx::query(&format!(
        "SELECT t.session_id, t.event_id, t.role, t.speaker, t.source, t.text FROM assistant_text t \
         WHERE t.session_id IN (SELECT session_id FROM assistant_text WHERE role = 'assistant' \
         AND speaker = ANY($1)) AND ($2::text IS NULL OR {own}) ORDER BY t.session_id, t.position"
    ))
    .bind(personas)
    .bind(person)
    .fetch_all(pool)
    .await?;
    let mut out: Vec<Conversation> = Vec::new();
    for r in rows {
        let session_id: String = r.try_get("session_id")?;
        let role = match r.try_get::<String, _>("role")?.as_str() {
            "user" => LineRole::User,
            _ => LineRole::Assistant,
        };
        let line = ConversationLine {
            event_id: r.try_get("event_id")?,
            role,
            speaker: r.try_get("speaker")?,
            source: r.try_get("source")?,
            text: r.try_get("text")?,
        };
        match out.last_mut() {
            Some(c) if c.session_id == session_id => c.lines.push(line),
            _ => out.push(Conversation {
                session_id,
                lines: vec![line],
            }),
        }
    }
    Ok(out)
}

/// Applies a document: refused whole (nothing appended) when it does not parse or names a
/// persona this deployment has no character for.
pub async fn import(config: Config, args: ImportArgs) -> Result<()> {
    let text = if args.file.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin()).context("reading stdin")?
    } else {
        std::fs::read_to_string(&args.file)
            .with_context(|| format!("reading {}", args.file.display()))?
    };
    let document = MemoryDocument::parse(&text).map_err(|why| anyhow::anyhow!("refused: {why}"))?;
    for p in &document.personas {
        if config.characters.get(&p.persona).is_none() {
            bail!(
                "refused: persona {} has no character in this deployment's characters.yaml",
                p.persona
            );
        }
    }
    let ctx = ServiceContext::connect(config, "cli").await?;
    let mut batches = Vec::new();
    for p in &document.personas {
        batches.push((
            persona_stream(&p.persona),
            MemoryDocument::events_of(p, ctx.service)?,
        ));
    }
    for c in &document.conversations {
        batches.push((
            import_stream(&c.session_id),
            MemoryDocument::line_events(c, ctx.service)?,
        ));
    }
    let (mut appended, mut present) = (0, 0);
    for (stream, events) in batches {
        // One event per append: each is idempotent by its id, whichever were stored before.
        for event in events {
            let outcome = ctx
                .log
                .append(&stream, ExpectedVersion::Any, std::slice::from_ref(&event))
                .await?;
            if outcome.duplicate {
                present += 1;
            } else {
                appended += 1;
            }
        }
    }
    println!(
        "{}",
        serde_json::json!({"appended": appended, "already_present": present})
    );
    Ok(())
}

//! Who is on stage: the registry the resolver matches against, and per character its
//! prompt and its own model client.

use std::collections::HashMap;

use ghost_shared::config::{CharacterConfig, Config};
use ghost_shared::llm::LlmClient;
use ghost_shared::service::ServiceError;

use super::postprocess::PostProcess;
use super::prompt::StagePrompt;
use crate::next_speaker::{Fallback, NominationPolicy, SpeakerEntry, SpeakerRegistry};

/// One character on stage.
#[derive(Debug)]
pub struct Member {
    /// Its configuration.
    pub character: CharacterConfig,
    /// Its system prompt (shared rules filled in).
    pub system_prompt: String,
    /// Its model.
    pub llm: LlmClient,
}

/// The stage's cast and rules, built once at start-up.
#[derive(Debug)]
pub struct Cast {
    /// For `[Next: …]` resolution, in round-robin order.
    pub registry: SpeakerRegistry,
    /// Self-nomination, fallback, fuzzy threshold.
    pub policy: NominationPolicy,
    /// Members by internal id.
    pub members: HashMap<String, Member>,
    /// Reply post-processing.
    pub postprocess: PostProcess,
}

impl Cast {
    /// Builds the cast from `stage:` and `characters.yaml`. A character's model is
    /// `llm.<name in lower case>` of ghost.yaml if configured (so `GHOST_LLM__<NAME>__MODEL`
    /// and friends can redirect it), else its own `llm:`, else `llm.persona`.
    pub fn from_config(config: &Config) -> Result<Self, ServiceError> {
        let stage = &config.ghost.stage;
        let bad = |e: &dyn std::fmt::Display| ServiceError::Config(format!("stage: {e}"));
        let path = config.resolve(&stage.prompt_file);
        let template = std::fs::read_to_string(&path).map_err(|e| {
            ServiceError::Config(format!("stage.prompt_file {}: {e}", path.display()))
        })?;
        let prompt = StagePrompt::new(template).map_err(|e| bad(&e))?;
        let characters: Vec<&CharacterConfig> = stage
            .cast_ids(&config.characters)
            .into_iter()
            .filter_map(|id| config.characters.get(id))
            .collect();
        let registry = SpeakerRegistry::new(
            characters
                .iter()
                .map(|c| {
                    SpeakerEntry::new(
                        c.name.clone(),
                        c.display_name.clone(),
                        c.short_name.clone().unwrap_or_default(),
                    )
                })
                .collect(),
        )
        .map_err(|e| bad(&e))?;
        let fallback: Fallback = stage.fallback.parse().map_err(|e| bad(&e))?;
        let policy =
            NominationPolicy::new(stage.allow_self_nomination, fallback, stage.fuzzy_threshold)
                .map_err(|e| bad(&e))?;
        let mut members = HashMap::new();
        for c in characters {
            let llm_config = config
                .ghost
                .llm
                .get(&c.name.to_lowercase())
                .or(c.llm.as_ref())
                .or_else(|| config.ghost.llm.get("persona"))
                .cloned()
                .ok_or_else(|| ServiceError::Config(format!("no model for {}", c.name)))?;
            members.insert(
                c.name.clone(),
                Member {
                    system_prompt: prompt.render(c, &registry),
                    character: c.clone(),
                    llm: LlmClient::new(llm_config, None)?.with_role("stage"),
                },
            );
        }
        Ok(Self {
            registry,
            policy,
            members,
            postprocess: PostProcess {
                greetings: stage.greetings.clone(),
                max_chars: stage.max_chars,
                affect_marker: config.ghost.persona.affect_marker.clone(),
            },
        })
    }
}

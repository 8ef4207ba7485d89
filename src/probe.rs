//! `ghost next-speaker`: the next-speaker resolver (seed 000) as a command, for operators
//! and scripts — the reply on stdin, one JSON decision on stdout.

use std::io::Read;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use ghost_persona::next_speaker::{
    resolve_next_speaker, Fallback, NominationPolicy, SpeakerRegistry,
};

/// Options of `ghost next-speaker`.
#[derive(Debug, Clone, Args)]
pub struct NextSpeakerArgs {
    /// Internal id of the character who wrote the reply.
    #[arg(long)]
    pub current: String,
    /// YAML file `characters: [{name, display_name, short_name}]` (default
    /// `$GHOST_CONFIG_DIR/characters.yaml`, else `config/characters.yaml`).
    #[arg(long)]
    pub registry: Option<PathBuf>,
    /// Let a character nominate itself.
    #[arg(long)]
    pub allow_self_nomination: bool,
    /// `round_robin` or `random`.
    #[arg(long, default_value = "round_robin", value_parser = ["round_robin", "random"])]
    pub fallback: String,
    /// Cutoff of the fuzzy match (0..=1).
    #[arg(long, default_value_t = ghost_persona::next_speaker::DEFAULT_FUZZY_THRESHOLD)]
    pub fuzzy_threshold: f64,
}

/// The registry file the probe reads when none is given.
fn default_registry() -> PathBuf {
    std::env::var_os(ghost_shared::config::CONFIG_DIR_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("config"))
        .join("characters.yaml")
}

/// Runs the probe on stdin.
pub fn next_speaker(args: NextSpeakerArgs) -> Result<()> {
    let path = args.registry.unwrap_or_else(default_registry);
    let yaml = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read the registry {}", path.display()))?;
    let registry = SpeakerRegistry::from_yaml(&yaml)
        .with_context(|| format!("registry {}", path.display()))?;
    let fallback: Fallback = args.fallback.parse()?;
    let policy = NominationPolicy::new(args.allow_self_nomination, fallback, args.fuzzy_threshold)?;
    let mut bytes = Vec::new();
    std::io::stdin()
        .read_to_end(&mut bytes)
        .context("cannot read the reply from stdin")?;
    // Replies are text; bytes that are not UTF-8 cannot name anyone and are replaced.
    let text = String::from_utf8_lossy(&bytes);
    let decision = resolve_next_speaker(&text, &args.current, &registry, &policy);
    println!("{}", decision.to_json());
    Ok(())
}

/// `ghost decision validate`: an ActionDecision on stdin, `{"valid": bool, "errors": [...]}`
/// on stdout (no database, no model). Exit status 0 either way: the answer is the JSON.
pub fn decision_validate() -> Result<()> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .read_to_end(&mut bytes)
        .context("cannot read the decision from stdin")?;
    println!("{}", decision_report(&bytes));
    Ok(())
}

/// The probe's answer for `bytes`.
pub fn decision_report(bytes: &[u8]) -> serde_json::Value {
    let errors = match std::str::from_utf8(bytes) {
        Ok(text) => ghost_shared::autonomy::decision::parse_decision(text).err(),
        Err(e) => Some(vec![format!("not UTF-8: {e}")]),
    }
    .unwrap_or_default();
    serde_json::json!({"valid": errors.is_empty(), "errors": errors})
}

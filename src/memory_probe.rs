//! The memory probes (issue 12), no database and no model:
//! - `ghost write-plan apply`: a write plan applied to a given memory, JSON on stdin and
//!   stdout. A rejected plan is an answer (`{"ok": false, "errors": [...]}`, exit 0); input
//!   that is not the probe's JSON is an error (exit 1).
//! - `ghost recall plan`: the RetrievalPlan of the message on stdin (limits from the
//!   configuration; no persona focus, which needs the memory).

use std::io::Read;

use anyhow::{Context, Result};
use ghost_shared::config::MemorySettings;
use ghost_shared::memory::probe::{run, ProbeInput};
use ghost_shared::memory::retrieval::{retrieval_plan, PersonaFocusHint};

/// Runs `ghost write-plan apply --now NOW` on stdin.
pub fn write_plan_apply(now: f64) -> Result<()> {
    anyhow::ensure!(
        now.is_finite(),
        "--now must be a finite number of Unix seconds"
    );
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .context("cannot read the input from stdin (it must be UTF-8 JSON)")?;
    let input: ProbeInput = serde_json::from_str(&text).context(
        "stdin must be one JSON object {\"memory\": {...}, \"event_id\": \"UUID\", \"plan\": {...}}",
    )?;
    let output = run(input, now);
    println!("{}", serde_json::to_string(&output)?);
    Ok(())
}

/// Runs `ghost recall plan` on stdin with `settings`' limits.
pub fn recall_plan(settings: &MemorySettings) -> Result<()> {
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .context("cannot read the message from stdin (it must be UTF-8 text)")?;
    // One trailing newline is how shells end a line, not part of the message.
    let message = text.strip_suffix('\n').unwrap_or(&text);
    let plan = retrieval_plan(
        message,
        settings.recall_limits(),
        PersonaFocusHint::default(),
    );
    println!("{}", serde_json::to_string(&plan)?);
    Ok(())
}

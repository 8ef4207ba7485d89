//! Crash points for crash-safety tests.
//!
//! `GHOST_FAULTS=store.after_commit,persona.after_append` makes the process abort at those
//! points, exactly as a `kill -9` would at the worst moment. Unset in normal operation.
//!
//! This is the production-side hook, so it stays in this crate while the test doubles live in
//! `ghost-testkit`: the crash tests run the real `ghost` binary as a child process and arm its
//! points through the environment, so [`point`] must be compiled into the production code it
//! interrupts. Unarmed it costs one lookup in an empty set.

use std::collections::HashSet;
use std::sync::OnceLock;

/// Environment variable naming the crash points to arm (comma-separated).
pub const FAULTS_ENV: &str = "GHOST_FAULTS";

fn armed() -> &'static HashSet<String> {
    static ARMED: OnceLock<HashSet<String>> = OnceLock::new();
    ARMED.get_or_init(|| {
        std::env::var(FAULTS_ENV)
            .unwrap_or_default()
            .split(',')
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect()
    })
}

/// Aborts the process here if `name` is armed.
pub fn point(name: &str) {
    if armed().contains(name) {
        eprintln!("ghost: fault point {name} armed: aborting");
        std::process::abort();
    }
}

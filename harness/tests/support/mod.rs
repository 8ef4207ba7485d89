//! What the harness tests share: running the built `ghost-harness`.

#![allow(dead_code)] // each test binary uses its part

use std::path::PathBuf;

use serde_json::Value;

/// The repository root: the harness reads its `config/`.
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `ghost-harness <args>` with `stdin`, from the repository root, in a clean environment:
/// (success, stdout as JSON, stderr).
pub fn run_harness(args: &[&str], stdin: &[u8]) -> (bool, Value, String) {
    ghost_testkit::commands::run_binary(env!("CARGO_BIN_EXE_ghost-harness"), &root(), args, stdin)
}

/// [`run_harness`] with the variables `vars` (a test environment's `GHOST_*`), no stdin.
pub fn run_harness_with(args: &[&str], vars: &[(String, String)]) -> (bool, Value, String) {
    let exe = env!("CARGO_BIN_EXE_ghost-harness");
    ghost_testkit::commands::run_binary_with(exe, &root(), args, b"", vars)
}

//! Running the built `ghost` binary as a probe: arguments, bytes on stdin; success, stdout
//! as JSON (`null` when it is not) and stderr.

use serde_json::Value;

/// `ghost <args>` with `stdin`, from the repository root with the repository's config and
/// no `GHOST_*` variables of the test run (they would read as configuration overrides).
pub fn run_ghost(args: &[&str], stdin: &[u8]) -> (bool, Value, String) {
    ghost_testkit::commands::run_binary(
        env!("CARGO_BIN_EXE_ghost"),
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")),
        args,
        stdin,
    )
}

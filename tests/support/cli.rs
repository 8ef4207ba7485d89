//! Running the built `ghost` binary as a probe: arguments, bytes on stdin; success, stdout
//! as JSON (`null` when it is not) and stderr.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::Value;

/// `ghost <args>` with `stdin`, from the repository root with the repository's config and
/// no `GHOST_*` variables of the test run (they would read as configuration overrides).
pub fn run_ghost(args: &[&str], stdin: &[u8]) -> (bool, Value, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ghost"));
    cmd.env_clear();
    for key in ["PATH", "HOME"] {
        if let Some(v) = std::env::var_os(key) {
            cmd.env(key, v);
        }
    }
    let mut child = cmd
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ghost");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin)
        .expect("write stdin");
    let out = child.wait_with_output().expect("ghost output");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    (
        out.status.success(),
        serde_json::from_str(stdout.trim()).unwrap_or(Value::Null),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

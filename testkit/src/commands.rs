//! Running a built binary of the workspace (`ghost`, `ghost-harness`) as a test does: a
//! clean environment (no `GHOST_*` variables of the test run, which would read as
//! configuration overrides), bytes on stdin; success, stdout as JSON and stderr.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

/// `exe <args>` with `stdin`, from `dir` (the repository root, whose `config/` it reads):
/// (success, stdout as JSON or `null` when it is not, stderr).
pub fn run_binary(exe: &str, dir: &Path, args: &[&str], stdin: &[u8]) -> (bool, Value, String) {
    run_binary_with(exe, dir, args, stdin, &[])
}

/// [`run_binary`] with the variables `vars` set (a test environment's `GHOST_*`).
pub fn run_binary_with(
    exe: &str,
    dir: &Path,
    args: &[&str],
    stdin: &[u8],
    vars: &[(String, String)],
) -> (bool, Value, String) {
    let mut cmd = Command::new(exe);
    cmd.env_clear();
    for key in ["PATH", "HOME"] {
        if let Some(v) = std::env::var_os(key) {
            cmd.env(key, v);
        }
    }
    cmd.envs(vars.iter().map(|(k, v)| (k, v)));
    let mut child = cmd
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {exe}: {e}"));
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin)
        .expect("write stdin");
    let out = child.wait_with_output().expect("output");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    (
        out.status.success(),
        serde_json::from_str(stdout.trim()).unwrap_or(Value::Null),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

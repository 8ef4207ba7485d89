//! The command-line agent of `agent_delegate`: a real child process with the task as an
//! argument (`{task}`) and on stdin, its stdout kept (capped) in `details.raw_output_text`,
//! killed at the timeout, its exit status recorded. A stdout that is one JSON object with
//! an `interest` object has it kept as `details.interest` (what the result is about).

use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Map, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use uuid::Uuid;

use ghost_shared::autonomy::decision::AGENT_DELEGATE;
use ghost_shared::autonomy::result::{ActionResult, ResultStatus};
use ghost_shared::config::CliAgentSettings;

/// How much of the output the internal summary quotes.
const SUMMARY_CHARS: usize = 160;
/// How long the pipes are read after the agent ended.
const PIPE_GRACE: Duration = Duration::from_secs(5);

/// Runs the agent on `task` as job `job_id`.
pub async fn run_cli_agent(settings: &CliAgentSettings, task: &str, job_id: Uuid) -> ActionResult {
    let mut command = Command::new(&settings.program);
    command
        .args(settings.args.iter().map(|a| a.replace("{task}", task)))
        .env("GHOST_AGENT_JOB_ID", job_id.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Whatever happens to this task, the child does not outlive it; its own process
        // group lets the timeout kill what it started too.
        .kill_on_drop(true)
        .process_group(0);
    if let Some(dir) = &settings.working_dir {
        command.current_dir(dir);
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            return ActionResult::failed(
                AGENT_DELEGATE,
                format!("cli_agent {} could not start: {e}", settings.program),
            )
        }
    };
    let pid = child.id();
    if let Some(mut stdin) = child.stdin.take() {
        let task = task.to_owned();
        tokio::spawn(async move {
            // An agent that does not read stdin closes it: not an error.
            let _ = stdin.write_all(task.as_bytes()).await;
        });
    }
    let limit = settings.max_output_bytes;
    let stdout = tokio::spawn(read_capped(child.stdout.take(), limit));
    let stderr = tokio::spawn(read_capped(child.stderr.take(), 16 * 1024));
    let timeout = Duration::from_secs(settings.timeout_secs);
    let waited = tokio::time::timeout(timeout, child.wait()).await;
    let (status, timed_out) = match waited {
        Ok(status) => (status.ok(), false),
        Err(_) => {
            kill_group(pid).await;
            if let Err(e) = child.kill().await {
                tracing::warn!(?pid, error = %e, "could not kill the timed-out cli_agent");
            }
            (child.wait().await.ok(), true)
        }
    };
    let (out, out_cut) = drained(stdout).await;
    let (err, _) = drained(stderr).await;
    let raw_output_text = String::from_utf8_lossy(&out).into_owned();
    let exit_code = status.and_then(|s| s.code());
    let result_status = if timed_out {
        ResultStatus::Timeout
    } else if status.is_some_and(|s| s.success()) {
        ResultStatus::Success
    } else {
        ResultStatus::Failed
    };
    let summary_text = match result_status {
        ResultStatus::Timeout => format!(
            "cli_agent killed after {}s without finishing",
            settings.timeout_secs
        ),
        _ => format!(
            "cli_agent exited with {}: {}",
            exit_code.map_or("a signal".to_owned(), |c| format!("status {c}")),
            first_chars(raw_output_text.trim(), SUMMARY_CHARS)
        ),
    };
    let mut details = Map::new();
    // An agent that answers in JSON may say what its result is about: its `interest` object
    // (`topic`, `person`, `interaction_mode`) changes the persona's interest state once
    // the result is in (seed 001 Phase C). Read as structure, never from the prose.
    if let Ok(Value::Object(output)) = serde_json::from_str::<Value>(raw_output_text.trim()) {
        if let Some(interest @ Value::Object(_)) = output.get("interest") {
            details.insert("interest".into(), interest.clone());
        }
    }
    details.insert("raw_output_text".into(), Value::String(raw_output_text));
    details.insert("output_truncated".into(), Value::Bool(out_cut));
    details.insert(
        "stderr_text".into(),
        Value::String(String::from_utf8_lossy(&err).into_owned()),
    );
    let payload = json!({
        "task": task,
        "backend": "cli_agent",
        "job_id": job_id,
        "exit_code": exit_code,
        "timed_out": timed_out,
        "killed": timed_out,
    });
    ActionResult {
        result_status,
        capability_name: AGENT_DELEGATE.into(),
        summary_text,
        result_payload: super::capabilities::object(payload),
        details,
    }
}

/// What a pipe reader kept; a pipe some leftover process still holds open is given up on
/// after a short while (the agent itself has ended).
async fn drained(reader: tokio::task::JoinHandle<(Vec<u8>, bool)>) -> (Vec<u8>, bool) {
    let abort = reader.abort_handle();
    match tokio::time::timeout(PIPE_GRACE, reader).await {
        Ok(done) => done.unwrap_or_default(),
        Err(_) => {
            abort.abort();
            (Vec::new(), true)
        }
    }
}

/// Kills the agent's whole process group (the agent leads it): `kill -KILL -- -<pid>`.
async fn kill_group(pid: Option<u32>) {
    let Some(pid) = pid else { return };
    let killed = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pid}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await;
    if let Err(e) = killed {
        tracing::warn!(pid, error = %e, "could not kill the cli_agent's process group");
    }
}

/// Reads a pipe to its end, keeping the first `limit` bytes (the rest is drained so the
/// child never blocks on a full pipe); whether anything was dropped.
async fn read_capped<R: AsyncRead + Unpin>(pipe: Option<R>, limit: usize) -> (Vec<u8>, bool) {
    let Some(mut pipe) = pipe else {
        return (Vec::new(), false);
    };
    let mut kept = Vec::new();
    let mut cut = false;
    let mut buf = [0u8; 8192];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = limit.saturating_sub(kept.len());
                if n > room {
                    cut = true;
                }
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    (kept, cut)
}

fn first_chars(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_owned(),
    }
}

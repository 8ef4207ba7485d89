//! `ghost doctor` and the infrastructure checks every command runs first: the real binary,
//! pointed at what is missing (a closed NATS port, a role that does not exist).

mod support;

use std::process::Output;

use ghost_testkit::testing::{repo_config_dir, TestEnv};

/// A port nobody listens on.
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("port")
}

/// Runs `ghost <args>` with the test environment's variables plus `extra`.
async fn ghost(env: &TestEnv, args: &[&str], extra: &[(&str, &str)]) -> Output {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_ghost"));
    cmd.args(args).env_clear();
    for key in ["PATH", "HOME"] {
        if let Ok(v) = std::env::var(key) {
            cmd.env(key, v);
        }
    }
    cmd.env("GHOST_CONFIG_DIR", repo_config_dir());
    for (k, v) in &env.vars {
        cmd.env(k, v);
    }
    for (k, v) in extra {
        cmd.env(k, v);
    }
    cmd.output().await.expect("run ghost")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn line<'a>(out: &'a str, prefix: &str) -> &'a str {
    out.lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starting with {prefix:?} in:\n{out}"))
}

#[tokio::test]
async fn doctor_with_nats_stopped_names_nats_and_the_fix_and_fails() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let nats = format!("nats://127.0.0.1:{}", closed_port());
    let out = ghost(&env, &["doctor"], &[("GHOST_BUS__URL", &nats)]).await;
    let stdout = text(&out.stdout);
    assert!(!out.status.success(), "non-zero exit:\n{stdout}");
    let nats_line = line(&stdout, "[FAIL] nats:");
    assert!(nats_line.contains(&nats), "{nats_line}");
    assert!(
        nats_line.contains("fix: run `bash deploy/services.sh`"),
        "{nats_line}"
    );
    // The rest is still checked, one line each.
    assert!(line(&stdout, "[ ok ] config:").contains("loaded"));
    assert!(line(&stdout, "[ ok ] postgres:").contains("reachable"));
    assert!(line(&stdout, "[ ok ] migrations:").contains("up to date"));
    // The persona's model (nothing listens on port 9) fails with the Ollama fix.
    let model = line(&stdout, "[FAIL] model persona");
    assert!(
        model.contains("not reachable") && model.contains("ollama pull"),
        "{model}"
    );
    assert!(line(&stdout, "[note] line:").contains("GHOST_LINE_CHANNEL_SECRET"));
    assert!(stdout.contains("check(s) failed"));
    assert!(!text(&out.stderr).contains("panicked"));
    env.cleanup().await;
}

#[tokio::test]
async fn doctor_checks_that_the_model_is_present_and_answers() {
    let app = support::TestApp::spawn_services(&[], &[]).await;
    let out = ghost(&app.env, &["doctor", "--role", "persona"], &[]).await;
    let stdout = text(&out.stdout);
    // The fake serves only `fake:latest`, so the persona's model is missing there.
    let model = line(&stdout, "[FAIL] model persona");
    assert!(model.contains("does not offer the model"), "{model}");
    assert!(
        model.contains("fix: `ollama pull persona-model`"),
        "{model}"
    );
    assert!(!out.status.success());
    let out = ghost(
        &app.env,
        &["doctor"],
        &[("GHOST_LLM__PERSONA__MODEL", "fake")],
    )
    .await;
    let stdout = text(&out.stdout);
    assert!(
        line(&stdout, "[ ok ] model persona").contains("one-token completion"),
        "{stdout}"
    );
    assert!(
        line(&stdout, "[ ok ] nats:").contains("JetStream on"),
        "{stdout}"
    );
    // The fake model ignores the JSON Schema it is sent: said, as a note.
    assert!(
        line(&stdout, "[note] structured output persona").contains("ignores the JSON Schema"),
        "{stdout}"
    );
    let out = ghost(
        &app.env,
        &["doctor", "--role", "persona"],
        &[("GHOST_LLM__PERSONA__MODEL", "fake")],
    )
    .await;
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let asked = app.llm.requests();
    let completion = asked
        .iter()
        .find(|r| r.path == "/api/chat")
        .expect("a completion was asked for");
    assert_eq!(completion.body["options"]["num_predict"], 1);
    app.cleanup().await;
}

#[tokio::test]
async fn doctor_tells_a_nats_without_jetstream_apart() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let port = closed_port();
    let binary = ["/usr/sbin/nats-server", "nats-server"]
        .into_iter()
        .find(|b| {
            std::process::Command::new(b)
                .arg("--version")
                .output()
                .is_ok()
        })
        .expect("nats-server (deploy/services.sh installs it)");
    // A real NATS server without -js.
    let mut server = tokio::process::Command::new(binary)
        .args(["-a", "127.0.0.1", "-p", &port.to_string()])
        .kill_on_drop(true)
        .spawn()
        .expect("start nats-server");
    let url = format!("nats://127.0.0.1:{port}");
    ghost_testkit::testing::eventually(
        std::time::Duration::from_secs(10),
        "nats-server up",
        || async { std::net::TcpStream::connect(("127.0.0.1", port)).ok() },
    )
    .await;
    let out = ghost(&env, &["doctor"], &[("GHOST_BUS__URL", &url)]).await;
    let stdout = text(&out.stdout);
    let nats = line(&stdout, "[FAIL] nats:");
    assert!(
        nats.contains("JetStream is off") && nats.contains("-js"),
        "{nats}"
    );
    assert!(!out.status.success());
    server.kill().await.expect("stop nats-server");
    env.cleanup().await;
}

#[tokio::test]
async fn commands_without_their_infrastructure_say_what_is_missing_instead_of_panicking() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    let nats = format!("nats://127.0.0.1:{}", closed_port());
    let no_role = env.database_url_with_unknown_role();
    for (args, var, value, expect) in [
        (
            vec!["migrate"],
            "GHOST_BUS__URL",
            nats.as_str(),
            "[FAIL] nats:",
        ),
        (
            vec!["migrate"],
            "GHOST_DATABASE__URL",
            no_role.as_str(),
            "role \"nosuchrole\"",
        ),
        (
            vec!["run", "router"],
            "GHOST_BUS__URL",
            nats.as_str(),
            "fix: run `bash deploy/services.sh`",
        ),
        (
            vec!["projections", "rebuild", "assistant_text"],
            "GHOST_DATABASE__URL",
            no_role.as_str(),
            "fix:",
        ),
    ] {
        let out = ghost(&env, &args, &[(var, value)]).await;
        let stderr = text(&out.stderr);
        assert!(!out.status.success(), "{args:?} fails");
        assert!(stderr.contains(expect), "{args:?} with {var}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
    let out = ghost(&env, &["migrate"], &[("GHOST_BUS__MAX_DELIVER", "0")]).await;
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("[FAIL] config: bus.max_deliver"),
        "{stderr}"
    );
    assert!(stderr.contains("fix: set bus.max_deliver"), "{stderr}");
    env.cleanup().await;
}

#[tokio::test]
async fn doctor_names_a_unix_socket_database_by_its_socket() {
    let env = TestEnv::new("http://127.0.0.1:9", &[]).await;
    // A socket directory where no Postgres listens: the URL's host, percent-encoded.
    let dir = std::env::temp_dir().join(format!("ghost-no-pg-{}", env.id));
    std::fs::create_dir_all(&dir).unwrap();
    let host = dir.display().to_string().replace('/', "%2F");
    let url = format!("postgres://ghost:ghost@{host}:5433/ghost");
    let out = ghost(&env, &["doctor"], &[("GHOST_DATABASE__URL", &url)]).await;
    let stdout = text(&out.stdout);
    assert!(!out.status.success(), "non-zero exit:\n{stdout}");
    let pg_line = line(&stdout, "[FAIL] postgres:");
    let socket = format!("socket {}/.s.PGSQL.5433", dir.display());
    assert!(pg_line.contains(&socket), "{pg_line}");
    std::fs::remove_dir_all(&dir).unwrap();
    env.cleanup().await;
}

//! Configuration loading: overrides, unknown keys, ranges, secrets.

use std::path::PathBuf;

use super::*;

const CHARACTERS: &str = "characters:\n  - name: kuro\n    display_name: クロ\n    persona_text: calm\n    second_person_label: マスター\n";
const GHOST: &str =
    "llm:\n  persona:\n    provider: ollama\n    base_url: http://127.0.0.1:11434\n    model: m\n";

fn load(ghost: &str, vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| ((*k).into(), (*v).into()))
        .collect();
    Config::from_strings(ghost, CHARACTERS, &vars, PathBuf::from("."))
}

#[test]
fn the_repository_config_loads() {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../config"));
    let config = Config::load(&dir, Vec::new()).expect("config/ loads");
    assert_eq!(config.ghost.persona.character, "kuro");
    assert!(config.ghost.llm.contains_key("persona"));
}

#[test]
fn environment_overrides_any_value_with_its_type() {
    let c = load(
        GHOST,
        &[
            ("GHOST_DATABASE__URL", "postgres://x@h/db"),
            ("GHOST_BUS__MAX_DELIVER", "9"),
            ("GHOST_LLM__PERSONA__MODEL", "qwen2.5:7b"),
            ("GHOST_TELEMETRY__JSON_LOGS", "true"),
            ("OTHER", "ignored"),
        ],
    )
    .unwrap();
    assert_eq!(c.ghost.database.url, "postgres://x@h/db");
    assert_eq!(c.ghost.bus.max_deliver, 9);
    assert_eq!(c.ghost.llm["persona"].model, "qwen2.5:7b");
    assert!(c.ghost.telemetry.json_logs);
}

#[test]
fn unknown_keys_are_errors_naming_the_key() {
    let err = load(&format!("{GHOST}gateway:\n  listen_port: 1\n"), &[])
        .unwrap_err()
        .to_string();
    assert!(err.contains("listen_port"), "{err}");
    let err = load(GHOST, &[("GHOST_DATABSE__URL", "postgres://x")])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("databse") && err.contains("GHOST_DATABSE__URL"),
        "{err}"
    );
}

#[test]
fn out_of_range_values_name_the_key() {
    let cases = [
        ("GHOST_BUS__MAX_DELIVER", "0", "bus.max_deliver"),
        ("GHOST_BUS__CONCURRENCY", "0", "bus.concurrency"),
        ("GHOST_GATEWAY__LISTEN", "nowhere", "gateway.listen"),
        ("GHOST_DATABASE__URL", "mysql://x", "database.url"),
        (
            "GHOST_LLM__PERSONA__TIMEOUT_SECS",
            "0",
            "llm.persona.timeout_secs",
        ),
        (
            "GHOST_LLM__PERSONA__BASE_URL",
            "localhost:11434",
            "llm.persona.base_url",
        ),
        ("GHOST_BUS__SUBJECT_PREFIX", "a..b", "bus.subject_prefix"),
        ("GHOST_BUS__MAX_BYTES", "1000", "bus.max_bytes"),
        ("GHOST_BUS__MAX_AGE_SECS", "10", "bus.max_age_secs"),
        (
            "GHOST_LLM__PERSONA__MAX_RESPONSE_BYTES",
            "10",
            "llm.persona.max_response_bytes",
        ),
        (
            "GHOST_GATEWAY__MAX_WS_MESSAGE_BYTES",
            "100",
            "gateway.max_ws_message_bytes",
        ),
        (
            "GHOST_GATEWAY__MAX_WS_FRAME_BYTES",
            "1048576",
            "gateway.max_ws_frame_bytes",
        ),
        ("GHOST_MOOD__MAX_OVERRIDES", "0", "mood.max_overrides"),
        ("GHOST_MEDIA__MAX_IMAGE_BYTES", "0", "media.max_image_bytes"),
        ("GHOST_WEB__SEARCH_URL", "searx:8888", "web.search_url"),
        ("GHOST_WEB__TIMEOUT_MS", "0", "web.timeout_ms"),
        ("GHOST_WEB__MAX_PAGE_BYTES", "0", "web.max_page_bytes"),
        ("GHOST_WEB__MAX_RESULTS", "0", "web.max_results"),
        ("GHOST_AUTONOMY__SESSION_ID", " ", "autonomy.session_id"),
        (
            "GHOST_AUTONOMY__RECENT_EVENTS",
            "0",
            "autonomy.recent_events",
        ),
    ];
    for (var, value, key) in cases {
        let err = load(GHOST, &[(var, value)]).unwrap_err().to_string();
        assert!(err.starts_with(key), "{var}={value}: {err}");
    }
    let err = load(GHOST, &[("GHOST_BUS__MAX_DELIVER", "many")])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("max_deliver") || err.contains("invalid type"),
        "{err}"
    );
}

#[test]
fn the_persona_character_must_exist() {
    let err = load(GHOST, &[("GHOST_PERSONA__CHARACTER", "nobody")])
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("persona.character"), "{err}");
}

#[test]
fn secrets_come_only_from_the_environment_and_never_print() {
    let c = load(
        GHOST,
        &[
            ("GHOST_API_TOKEN", "s3cret-token"),
            ("GHOST_CLOUD_API_KEY", "sk-abc"),
        ],
    )
    .unwrap();
    assert_eq!(
        c.secrets.api_token.as_ref().unwrap().expose(),
        "s3cret-token"
    );
    let printed = format!("{c:?}");
    assert!(
        !printed.contains("s3cret-token") && !printed.contains("sk-abc"),
        "{printed}"
    );
    // A secret in YAML is an unknown key, not a way in.
    let err = load(&format!("{GHOST}api_token: x\n"), &[])
        .unwrap_err()
        .to_string();
    assert!(err.contains("api_token"), "{err}");
}

#[test]
fn routing_entry_modes_are_validated_and_default_per_channel() {
    let s = crate::config::RoutingSettings::default();
    assert_eq!(s.entry_mode("line"), "kuro");
    assert_eq!(s.entry_mode("http"), "router");
    let mut bad = s.clone();
    bad.entry_modes.insert("http".into(), "front".into());
    let err = bad.validate().unwrap_err().to_string();
    assert!(err.contains("routing.entry_modes.http"), "{err}");
    let mut bad = s;
    bad.entry_modes.insert("irc".into(), "router".into());
    assert!(bad.validate().is_err());
}

#[test]
fn every_resource_is_bounded_by_default() {
    let c = load(GHOST, &[]).unwrap();
    let g = &c.ghost;
    assert_eq!(g.bus.max_age_secs, 7 * 24 * 3600);
    assert_eq!(g.bus.max_bytes, 1 << 30);
    assert_eq!(g.llm["persona"].max_response_bytes, 8 << 20);
    assert_eq!(
        (g.gateway.max_ws_frame_bytes, g.gateway.max_ws_message_bytes),
        (64 << 10, 64 << 10)
    );
    assert_eq!(g.mood.max_overrides, 64);
    assert_eq!(g.media.max_image_bytes, 10 << 20);
}

#[test]
fn the_embedded_model_section_is_checked_and_overridable() {
    let c = load(GHOST, &[]).unwrap();
    assert!(!c.ghost.model.enabled);
    assert_eq!(c.ghost.model.listen, "127.0.0.1:8090");
    let c = load(
        GHOST,
        &[
            ("GHOST_MODEL__ENABLED", "true"),
            ("GHOST_MODEL__THREADS", "1"),
        ],
    )
    .unwrap();
    assert!(c.ghost.model.enabled);
    assert_eq!(c.ghost.model.threads, 1);
    for (var, value, key) in [
        ("GHOST_MODEL__LISTEN", "localhost", "model.listen"),
        ("GHOST_MODEL__THREADS", "0", "model.threads"),
        ("GHOST_MODEL__CONTEXT_SIZE", "10", "model.context_size"),
        ("GHOST_MODEL__MAX_TOKENS", "4096", "model.max_tokens"),
        ("GHOST_MODEL__QUEUE_DEPTH", "0", "model.queue_depth"),
        ("GHOST_MODEL__NAME", " ", "model.name"),
    ] {
        let err = load(GHOST, &[(var, value)]).unwrap_err();
        assert!(err.to_string().starts_with(key), "{var}={value}: {err}");
    }
    let err = load(&format!("{GHOST}model:\n  thread: 2\n"), &[]).unwrap_err();
    assert!(err.to_string().contains("thread"), "{err}");
}

/// Loads `ghost` with `vars` from a directory that holds the embedding model's weights (when
/// `present`), as deploy/model.sh leaves them.
/// A configuration loaded from a temporary directory, removed when it is dropped (the
/// configuration looks for the embedding model's files when asked whether it serves them).
struct BesideModels {
    config: Config,
    base: std::path::PathBuf,
}

impl std::ops::Deref for BesideModels {
    type Target = Config;
    fn deref(&self) -> &Config {
        &self.config
    }
}

impl Drop for BesideModels {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

fn load_beside_models(ghost: &str, vars: &[(&str, &str)], present: bool) -> BesideModels {
    let base = std::env::temp_dir().join(format!("ghost-config-{}", uuid::Uuid::new_v4()));
    let dir = base
        .join(".ghost-data/models")
        .join(super::DEFAULT_EMBEDDING_DIR);
    std::fs::create_dir_all(&dir).unwrap();
    if present {
        std::fs::write(dir.join("model.safetensors"), b"weights").unwrap();
    }
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| ((*k).into(), (*v).into()))
        .collect();
    let config = Config::from_strings(ghost, CHARACTERS, &vars, base.clone()).unwrap();
    BesideModels { config, base }
}

#[test]
fn vector_recall_is_on_whichever_chat_model_answers_unless_another_endpoint_is_named() {
    let listen = [("GHOST_MODEL__LISTEN", "127.0.0.1:8099")];
    // Without the embedding model's files: no embedding role, so no vector recall.
    let c = load_beside_models(GHOST, &listen, false);
    assert!(!c.ghost.llm.contains_key("embedding"));
    assert!(!c.serves_embeddings());
    // With them, and the chat model elsewhere (Ollama): the embedded /v1/embeddings.
    let c = load_beside_models(GHOST, &listen, true);
    assert!(!c.ghost.model.enabled);
    let role = &c.ghost.llm["embedding"];
    assert_eq!(role.provider, crate::llm::Provider::Openai);
    assert_eq!(role.base_url, "http://127.0.0.1:8099/v1");
    assert_eq!(role.model, "all-minilm-l6-v2");
    assert!(c.serves_embeddings());
    // Turned off: none.
    let off = [listen[0], ("GHOST_MODEL__EMBEDDINGS", "false")];
    let c = load_beside_models(GHOST, &off, true);
    assert!(!c.ghost.llm.contains_key("embedding"));
    assert!(!c.serves_embeddings());
    // A configured endpoint (Ollama, OpenAI) stays, and the embedded one is not served.
    let ollama = format!(
        "{GHOST}  embedding:\n    provider: ollama\n    base_url: http://127.0.0.1:11434\n    model: nomic-embed-text\n"
    );
    let c = load_beside_models(&ollama, &listen, true);
    assert_eq!(c.ghost.llm["embedding"].model, "nomic-embed-text");
    assert!(!c.serves_embeddings());
    // No embedding model: no role.
    let none = [listen[0], ("GHOST_MODEL__EMBEDDING_PATH", "null")];
    let c = load_beside_models(GHOST, &none, true);
    assert!(c.ghost.model.embedding_path.is_none());
    assert!(!c.ghost.llm.contains_key("embedding"));
    let err = load(GHOST, &[("GHOST_MODEL__EMBEDDING_THREADS", "0")]).unwrap_err();
    assert!(
        err.to_string().starts_with("model.embedding_threads"),
        "{err}"
    );
    let err = load(GHOST, &[("GHOST_MODEL__EMBEDDING_MAX_INPUTS", "0")]).unwrap_err();
    assert!(
        err.to_string().starts_with("model.embedding_max_inputs"),
        "{err}"
    );
}

fn load_characters(characters: &str) -> Result<Config, ConfigError> {
    Config::from_strings(
        &format!("{GHOST}persona:\n  character: kuro\n"),
        characters,
        &[],
        PathBuf::from("."),
    )
}

#[test]
fn the_persona_is_three_variables_per_character() {
    let c = load_characters(
        "characters:\n  - name: kuro\n    display_name: クロ\n    persona_text: calm\n    addon_text: books\n    second_person_label: マスター\n",
    )
    .unwrap();
    let kuro = c.characters.get("kuro").unwrap();
    assert_eq!(
        kuro.fill_persona("{{persona_text}}|{{addon_text}}|{{second_person_label}}"),
        "calm|books|マスター"
    );
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../config"));
    let repo = Config::load(&dir, Vec::new()).unwrap();
    for c in &repo.characters.characters {
        assert!(!c.persona_text.trim().is_empty(), "{}", c.name);
        assert!(!c.second_person_label.trim().is_empty(), "{}", c.name);
    }
}

#[test]
fn a_missing_persona_is_a_config_error_naming_the_key() {
    let err = |yaml: &str| load_characters(yaml).unwrap_err().to_string();
    let missing =
        err("characters:\n  - name: kuro\n    display_name: クロ\n    second_person_label: x\n");
    assert!(missing.contains("persona_text"), "{missing}");
    let blank = err("characters:\n  - name: kuro\n    display_name: クロ\n    persona_text: \"  \"\n    second_person_label: x\n");
    assert!(blank.contains("characters[0].persona_text"), "{blank}");
    let no_label =
        err("characters:\n  - name: kuro\n    display_name: クロ\n    persona_text: calm\n");
    assert!(no_label.contains("second_person_label"), "{no_label}");
    let old_key = err("characters:\n  - name: kuro\n    display_name: クロ\n    persona: calm\n    second_person_label: x\n");
    assert!(old_key.contains("persona"), "{old_key}");
}

#[test]
fn autonomy_push_bindings_load_and_bad_ones_are_clear_errors() {
    const TOKENS: [(&str, &str); 2] = [
        ("GHOST_LINE_CHANNEL_ACCESS_TOKEN", "t"),
        ("GHOST_SLACK_BOT_TOKEN", "xoxb"),
    ];
    let bound = |push: &str| format!("{GHOST}autonomy:\n  push:\n{push}");
    let good = bound(
        "    - {session_id: console, line: {to: U1}, slack: {channel: C1, thread_ts: '1.2'}}\n",
    );
    let c = load(&good, &TOKENS).unwrap();
    let b = c.ghost.autonomy.push_binding("console").unwrap();
    assert_eq!(b.line.as_ref().unwrap().to, "U1");
    assert_eq!(b.slack.as_ref().unwrap().thread_ts.as_deref(), Some("1.2"));
    assert!(c.ghost.autonomy.push_binding("other").is_none());

    let cases = [
        (
            "    - {session_id: console, discord: {to: x}}\n",
            "unknown field `discord`",
        ),
        (
            "    - {session_id: console}\n",
            "autonomy.push[0]: binds no platform",
        ),
        (
            "    - {session_id: ' ', line: {to: U1}}\n",
            "autonomy.push[0].session_id",
        ),
        (
            "    - {session_id: c, line: {to: ''}}\n",
            "autonomy.push[0].line.to",
        ),
        (
            "    - {session_id: c, slack: {channel: ' '}}\n",
            "autonomy.push[0].slack.channel",
        ),
        (
            "    - {session_id: c, slack: {channel: C1, thread_ts: ''}}\n",
            "autonomy.push[0].slack.thread_ts",
        ),
        (
            "    - {session_id: c, line: {to: U1}}\n    - {session_id: c, slack: {channel: C1}}\n",
            "autonomy.push[1].session_id: c is bound twice",
        ),
    ];
    for (push, expected) in cases {
        let err = load(&bound(push), &TOKENS).unwrap_err().to_string();
        assert!(err.contains(expected), "{push}: {err}");
    }
    // A bound platform without its token could never push: refused at load.
    let err = load(&good, &TOKENS[1..]).unwrap_err().to_string();
    assert!(
        err.starts_with("autonomy.push[0].line") && err.contains("GHOST_LINE_CHANNEL_ACCESS_TOKEN"),
        "{err}"
    );
    let err = load(&good, &TOKENS[..1]).unwrap_err().to_string();
    assert!(
        err.starts_with("autonomy.push[0].slack") && err.contains("GHOST_SLACK_BOT_TOKEN"),
        "{err}"
    );
}

#[test]
fn the_coder_cap_has_a_default_an_override_and_a_range() {
    let cap = |vars: &[(&str, &str)]| load(GHOST, vars).map(|c| c.ghost.coder.cap());
    assert_eq!(cap(&[]).unwrap(), Some(1_000_000));
    for off in ["0", "null"] {
        assert_eq!(cap(&[("GHOST_CODER__DAILY_TOKEN_CAP", off)]).unwrap(), None);
    }
    assert_eq!(
        cap(&[("GHOST_CODER__DAILY_TOKEN_CAP", "5000")]).unwrap(),
        Some(5000)
    );
    let err = cap(&[("GHOST_CODER__DAILY_TOKEN_CAP", "5")])
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("coder.daily_token_cap: "), "{err}");
    let err = load(&format!("{GHOST}coder:\n  daily_tokens: 1\n"), &[])
        .unwrap_err()
        .to_string();
    assert!(err.contains("daily_tokens"), "{err}");
}

#[test]
fn telegram_has_defaults_secrets_from_the_environment_and_checked_ranges() {
    const TOKENS: [(&str, &str); 2] = [
        ("GHOST_TELEGRAM_BOT_TOKEN", "123:abc-secret"),
        ("GHOST_TELEGRAM_SECRET_TOKEN", "hook-secret"),
    ];
    let c = load(GHOST, &TOKENS).unwrap();
    assert_eq!(c.ghost.telegram.api_base, "https://api.telegram.org");
    assert_eq!(c.ghost.telegram.max_chars_per_message, 4096);
    let s = &c.secrets;
    assert_eq!(
        s.telegram_bot_token.as_ref().unwrap().expose(),
        "123:abc-secret"
    );
    assert_eq!(
        s.telegram_secret_token.as_ref().unwrap().expose(),
        "hook-secret"
    );
    let printed = format!("{c:?}");
    assert!(
        !printed.contains("abc-secret") && !printed.contains("hook-secret"),
        "{printed}"
    );
    for (var, value, key) in [
        ("GHOST_TELEGRAM__API_BASE", "ftp://x", "telegram.api_base"),
        (
            "GHOST_TELEGRAM__MAX_CHARS_PER_MESSAGE",
            "4097",
            "telegram.max_chars_per_message",
        ),
        ("GHOST_TELEGRAM__MAX_ATTEMPTS", "0", "telegram.max_attempts"),
    ] {
        let err = load(GHOST, &[(var, value)]).unwrap_err().to_string();
        assert!(err.contains(key), "{var}: {err}");
    }
    let mut entry = crate::config::RoutingSettings::default();
    entry.entry_modes.insert("telegram".into(), "kuro".into());
    assert!(entry.validate().is_ok());
    // A conversation bound to a Telegram chat pushes there; without the bot token it never
    // could, and is refused at load.
    let bound = format!(
        "{GHOST}autonomy:\n  push:\n    - {{session_id: console, telegram: {{chat_id: -100123, message_thread_id: 7}}}}\n"
    );
    let c = load(&bound, &TOKENS).unwrap();
    let target = c
        .ghost
        .autonomy
        .push_binding("console")
        .unwrap()
        .telegram
        .as_ref()
        .unwrap();
    assert_eq!(
        (target.chat_id, target.message_thread_id),
        (-100123, Some(7))
    );
    let err = load(&bound, &TOKENS[1..]).unwrap_err().to_string();
    assert!(
        err.starts_with("autonomy.push[0].telegram") && err.contains("GHOST_TELEGRAM_BOT_TOKEN"),
        "{err}"
    );
}

#[test]
fn bus_servers_come_as_a_list_or_comma_separated_and_replicas_are_bounded() {
    let yaml = format!("{GHOST}bus:\n  servers: [nats://b:4222, nats://c:4222]\n  replicas: 3\n");
    let c = load(&yaml, &[]).expect("a cluster's bus");
    assert_eq!(c.ghost.bus.servers, ["nats://b:4222", "nats://c:4222"]);
    assert_eq!(c.ghost.bus.replicas, 3);
    let c = load(
        GHOST,
        &[("GHOST_BUS__SERVERS", "nats://b:4222, nats://c:4222")],
    )
    .expect("servers from the environment");
    assert_eq!(c.ghost.bus.servers, ["nats://b:4222", "nats://c:4222"]);
    assert_eq!(c.ghost.bus.replicas, 1, "one replica by default");
    for (key, value, named) in [
        ("GHOST_BUS__REPLICAS", "0", "bus.replicas"),
        ("GHOST_BUS__REPLICAS", "6", "bus.replicas"),
        ("GHOST_BUS__SERVERS", "http://b:4222", "bus.servers[0]"),
    ] {
        let e = load(GHOST, &[(key, value)])
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(e.contains(named), "{key}={value}: {e}");
    }
}

#[test]
fn quiet_hours_are_read_per_person_and_a_bad_window_is_refused_saying_why() {
    let c = load(
        &format!(
            "{GHOST}reminders:\n  quiet_hours: \"22:00-07:00\"\n  person_quiet_hours: {{Uowl: \"02:00-10:00\"}}\n"
        ),
        &[],
    )
    .unwrap();
    let r = &c.ghost.reminders;
    assert_eq!(
        r.quiet_hours_of("anyone").unwrap().to_string(),
        "22:00-07:00"
    );
    assert_eq!(r.quiet_hours_of("Uowl").unwrap().to_string(), "02:00-10:00");
    let off = load(GHOST, &[]).unwrap();
    assert_eq!(off.ghost.reminders.quiet_hours_of("anyone"), None);
    let err = load(&format!("{GHOST}reminders:\n  quiet_hours: \"9-5\"\n"), &[])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("quiet hours") && err.contains("HH:MM") && err.contains("\"9-5\""),
        "{err}"
    );
}

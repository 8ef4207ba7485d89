//! The embedded model (the real SmolLM2 file, fetched by deploy/model.sh and cached) in a
//! test stack: the overrides that enable it and point roles at it (directly, or through
//! the testkit's recorder, which keeps every request and answer).

use ghost_testkit::testing::embedded_model_file;

/// The model id the tests give the embedded server.
pub const NAME: &str = "smollm2-test";

/// A port nobody listens on right now (the model server binds it a moment later).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// Overrides that enable the embedded model on `port` and point `roles` at `roles_url`
/// (the model itself, or a recorder in front of it).
pub fn overrides(port: u16, roles_url: &str, roles: &[&str]) -> Vec<(String, String)> {
    let path = embedded_model_file();
    let mut vars = vec![
        ("GHOST_MODEL__ENABLED".to_owned(), "true".to_owned()),
        (
            "GHOST_MODEL__LISTEN".to_owned(),
            format!("127.0.0.1:{port}"),
        ),
        ("GHOST_MODEL__PATH".to_owned(), path.display().to_string()),
        ("GHOST_MODEL__NAME".to_owned(), NAME.to_owned()),
        ("GHOST_MODEL__MAX_TOKENS".to_owned(), "64".to_owned()),
        // One thread: two tests run a model each at once on two cores, and llama.cpp's
        // threads wait for each other by spinning (two threads each crawl when contended).
        ("GHOST_MODEL__THREADS".to_owned(), "1".to_owned()),
        (
            "GHOST_GATEWAY__TURN_TIMEOUT_SECS".to_owned(),
            "600".to_owned(),
        ),
        (
            "GHOST_STAGE__MODEL_TIMEOUT_SECS".to_owned(),
            "300".to_owned(),
        ),
    ];
    for role in roles {
        let key = role.to_uppercase();
        for (field, value) in [
            ("PROVIDER", "openai".to_owned()),
            ("BASE_URL", roles_url.to_owned()),
            ("MODEL", NAME.to_owned()),
            ("TIMEOUT_SECS", "300".to_owned()),
        ] {
            vars.push((format!("GHOST_LLM__{key}__{field}"), value));
        }
    }
    vars
}

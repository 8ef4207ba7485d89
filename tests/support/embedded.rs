//! The embedded model (the real SmolLM2 file, fetched by deploy/model.sh and cached) in a
//! test stack: the overrides that enable it and point roles at it (directly, or through
//! the testkit's recorder, which keeps every request and answer).

use ghost_testkit::testing::embedded_model_overrides;

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
/// (the model itself, or a recorder in front of it), with the tests' limits.
pub fn overrides(port: u16, roles_url: &str, roles: &[&str]) -> Vec<(String, String)> {
    let mut vars = embedded_model_overrides(port, NAME, roles_url, roles, 300);
    for (k, v) in [
        ("GHOST_MODEL__MAX_TOKENS", "64"),
        // One thread: two tests run a model each at once on two cores, and llama.cpp's
        // threads wait for each other by spinning (two threads each crawl when contended).
        ("GHOST_MODEL__THREADS", "1"),
        ("GHOST_STAGE__MODEL_TIMEOUT_SECS", "300"),
    ] {
        vars.push((k.to_owned(), v.to_owned()));
    }
    vars
}

//! Endpoints that refuse structured output, noted per role, and the background-call limit
//! per endpoint. Both are process-wide: every client of a role (or of an endpoint) in one
//! process shares what was learnt and the permits.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use tokio::sync::Semaphore;

use super::error::LlmError;
use super::LOG_TARGET;

fn refused() -> &'static Mutex<HashMap<String, String>> {
    static REFUSED: OnceLock<Mutex<HashMap<String, String>>> = OnceLock::new();
    REFUSED.get_or_init(Default::default)
}

/// Why `role`'s endpoint gets prompt-only requests, if it refused structured output.
pub fn of(role: &str) -> Option<String> {
    refused().lock().ok()?.get(role).cloned()
}

/// Whether `e`, the answer to a shaped request, may mean "I do not take that shape": a
/// request-level refusal. The plain retry decides; a transport failure or a 5xx is not one.
pub(crate) fn may_be_refusal(e: &LlmError) -> bool {
    matches!(e, LlmError::HttpStatus { status, .. } if matches!(status, 400 | 404 | 415 | 422 | 501))
}

/// Notes that `role`'s endpoint refused the shape with `e` (its plain retry succeeded), and
/// logs it once per role: nothing degrades silently.
pub(crate) fn note(role: &str, model: &str, e: &LlmError) {
    let Ok(mut map) = refused().lock() else {
        return;
    };
    if map.contains_key(role) {
        return;
    }
    let reason = e.to_string();
    tracing::warn!(
        target: LOG_TARGET,
        role, model, reason = %reason,
        "the endpoint refuses structured output; this role's calls go prompt-only from now on"
    );
    map.insert(role.to_owned(), reason);
}

/// The background-call semaphore of the endpoint at `url` (created with `permits` the
/// first time a background call goes there).
pub(crate) fn background_limit(url: &str, permits: usize) -> Arc<Semaphore> {
    static LIMITS: OnceLock<Mutex<HashMap<String, Arc<Semaphore>>>> = OnceLock::new();
    let limits = LIMITS.get_or_init(Default::default);
    let mut map = limits.lock().unwrap_or_else(|p| p.into_inner());
    Arc::clone(
        map.entry(url.to_owned())
            .or_insert_with(|| Arc::new(Semaphore::new(permits.max(1)))),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_request_level_statuses_may_be_refusals() {
        let status = |status| LlmError::HttpStatus {
            status,
            body: String::new(),
        };
        assert!(may_be_refusal(&status(400)));
        assert!(may_be_refusal(&status(422)));
        assert!(!may_be_refusal(&status(500)));
        assert!(!may_be_refusal(&status(429)));
        assert!(!may_be_refusal(&LlmError::Connect("refused".into())));
    }

    #[test]
    fn a_refusal_is_noted_once_per_role() {
        let e = LlmError::HttpStatus {
            status: 400,
            body: "unknown field response_format".into(),
        };
        assert_eq!(of("refusal_unit_test_role"), None);
        note("refusal_unit_test_role", "m", &e);
        note(
            "refusal_unit_test_role",
            "m",
            &LlmError::Connect("other".into()),
        );
        assert!(of("refusal_unit_test_role")
            .unwrap()
            .contains("response_format"));
    }
}

//! The one-line declaration shown before a reply when the primary route changes.

use ghost_shared::routing::Route;

/// The declaration text of a route (seed 002); CHAT declares nothing. Only "what I will do
/// now" is said — never cloud/local or other internals.
pub fn declaration_text(route: Route) -> Option<&'static str> {
    match route {
        Route::Code => Some("コーディングするね。"),
        Route::Analyze => Some("整理して分析するね。"),
        Route::Plan => Some("段取りを組むね。"),
        Route::Ops => Some("手順で案内するね。"),
        Route::Research => Some("調べてまとめるね。"),
        Route::Chat => None,
    }
}

/// The line to show before this message's reply: only when its primary route differs from
/// the previous user message's primary route in the session (the first message of a session
/// has no previous route, so a non-CHAT route is declared).
pub fn declaration(previous: Option<Route>, current: Route) -> Option<&'static str> {
    if previous == Some(current) {
        None
    } else {
        declaration_text(current)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_match_the_seed() {
        assert_eq!(declaration_text(Route::Code), Some("コーディングするね。"));
        assert_eq!(
            declaration_text(Route::Analyze),
            Some("整理して分析するね。")
        );
        assert_eq!(declaration_text(Route::Plan), Some("段取りを組むね。"));
        assert_eq!(declaration_text(Route::Ops), Some("手順で案内するね。"));
        assert_eq!(
            declaration_text(Route::Research),
            Some("調べてまとめるね。")
        );
        assert_eq!(declaration_text(Route::Chat), None);
    }

    #[test]
    fn declared_only_on_change() {
        assert_eq!(declaration(None, Route::Plan), Some("段取りを組むね。"));
        assert_eq!(declaration(Some(Route::Plan), Route::Plan), None);
        assert_eq!(
            declaration(Some(Route::Plan), Route::Ops),
            Some("手順で案内するね。")
        );
    }

    #[test]
    fn chat_never_declares() {
        assert_eq!(declaration(None, Route::Chat), None);
        assert_eq!(declaration(Some(Route::Code), Route::Chat), None);
    }

    #[test]
    fn declarations_never_mention_internals() {
        for route in Route::ALL {
            let text = declaration_text(route).unwrap_or_default().to_lowercase();
            for word in [
                "cloud",
                "local",
                "クラウド",
                "ローカル",
                "ollama",
                "route",
                "ルート",
            ] {
                assert!(!text.contains(word), "{route}: {text}");
            }
        }
    }
}

//! Every HTTP route in one table, [`ROUTES`]: the router is built from it, and
//! `tests/http_refusals.rs` walks it (each route with each method it does not take), so a
//! route cannot be added without being walked.
//!
//! The router's edges answer in [`ApiError`]'s shape like every handler: a path no route
//! matches is `404 not_found`, a method a route does not take is `405 method_not_allowed`
//! (with axum's `Allow` header).

use axum::http::{Method, Uri};
use axum::middleware::from_fn_with_state;
use axum::routing::MethodRouter;
use axum::Router;

use crate::error::ApiError;
use crate::{autonomy, chat, clock, console, conversations, forget_person, health, memory};
use crate::{memory_edits, metrics};
use crate::{partner_mood, recalls, reminders, sessions, stage, webhooks, AppState};

/// What runs before a route's handler (and before its 405).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Anyone: health, metrics, the console's files; `/api/events` checks its own token.
    Open,
    /// `Authorization: Bearer <GHOST_API_TOKEN>` ([`crate::auth::require_bearer`]).
    Bearer,
    /// A platform webhook, its answers counted ([`crate::metrics::count_webhooks`]).
    Webhook,
}

/// One route.
#[derive(Debug, Clone, Copy)]
pub struct Route {
    /// The path, in axum's syntax (`{id}` for a parameter).
    pub path: &'static str,
    /// The methods it takes (`GET` takes `HEAD` too).
    pub methods: &'static [Method],
    /// What runs before its handler.
    pub access: Access,
    handlers: fn() -> MethodRouter<AppState>,
}

/// A [`Route`] from its path, access and handlers (`get(handler), put(handler)`, ...): the
/// methods it lists and the ones it routes come from the same words.
macro_rules! route {
    ($path:literal, $access:ident, $($method:ident($handler:path)),+ $(,)?) => {
        Route {
            path: $path,
            methods: &[$(route!(@method $method)),+],
            access: Access::$access,
            handlers: || MethodRouter::new()$(.$method($handler))+,
        }
    };
    (@method get) => { Method::GET };
    (@method post) => { Method::POST };
    (@method put) => { Method::PUT };
    (@method delete) => { Method::DELETE };
}

/// Every route of the gateway.
pub const ROUTES: &[Route] = &[
    route!("/healthz", Open, get(health::healthz)),
    route!("/metrics", Open, get(metrics::metrics)),
    route!("/console", Open, get(console::redirect)),
    route!("/console/", Open, get(console::index)),
    route!("/console/console.js", Open, get(console::script)),
    route!("/console/activity.js", Open, get(console::activity_script)),
    route!("/console/stage.js", Open, get(console::stage_script)),
    route!("/console/mood.js", Open, get(console::mood_script)),
    route!("/console/memory.js", Open, get(console::memory_script)),
    route!(
        "/console/memory-cards.js",
        Open,
        get(console::memory_cards_script)
    ),
    route!(
        "/console/reminders.js",
        Open,
        get(console::reminders_script)
    ),
    route!("/console/console.css", Open, get(console::style)),
    // One handler for every platform: the path names it ([`crate::channel::Platforms`]).
    route!("/webhooks/line", Webhook, post(webhooks::receive)),
    route!("/webhooks/slack", Webhook, post(webhooks::receive)),
    route!("/webhooks/telegram", Webhook, post(webhooks::receive)),
    // Checks its own token: the header, or `?token=` (browser WebSockets).
    route!("/api/events", Open, get(autonomy::events)),
    route!("/api/chat", Bearer, post(chat::chat)),
    route!("/api/sessions", Bearer, get(conversations::list)),
    // Checks its own token, in its first frame (the console's live socket).
    route!("/api/live", Open, get(conversations::live)),
    route!(
        "/api/sessions/{id}/messages",
        Bearer,
        get(sessions::messages)
    ),
    route!(
        "/api/partner_mood",
        Bearer,
        get(partner_mood::get),
        put(partner_mood::put),
        delete(partner_mood::delete),
    ),
    route!("/api/stage", Bearer, get(stage::stage)),
    route!("/api/autonomy/tick", Bearer, post(autonomy::tick)),
    route!("/api/memory", Bearer, get(memory::get)),
    route!("/api/memory/edits", Bearer, post(memory_edits::post)),
    route!(
        "/api/memory/forget-person",
        Bearer,
        post(forget_person::post)
    ),
    route!("/api/recalls/{event_id}", Bearer, get(recalls::get)),
    route!("/api/clock", Bearer, get(clock::get)),
    route!("/api/clock/advance", Bearer, post(clock::advance)),
    route!(
        "/api/reminders",
        Bearer,
        get(reminders::list),
        post(reminders::create)
    ),
    route!(
        "/api/reminders/{id}",
        Bearer,
        put(reminders::change),
        delete(reminders::cancel)
    ),
];

/// The HTTP routes: [`ROUTES`], and the JSON 404 for any other path.
pub fn router(state: AppState) -> Router {
    let mut router = Router::new();
    for route in ROUTES {
        // The 405 goes behind the route's access like its handlers: without the token, an
        // `/api/*` route says 401 whatever the method.
        let endpoint = (route.handlers)().fallback(method_not_allowed);
        let endpoint: MethodRouter<AppState> = match route.access {
            Access::Open => endpoint,
            Access::Bearer => endpoint.layer(from_fn_with_state(
                state.clone(),
                crate::auth::require_bearer,
            )),
            Access::Webhook => {
                endpoint.layer(from_fn_with_state(state.clone(), metrics::count_webhooks))
            }
        };
        router = router.route(route.path, endpoint);
    }
    router.fallback(not_found).with_state(state)
}

/// Any path no route matches (dot segments, doubled or trailing slashes, another case and
/// encoded slashes are not rewritten into one that does).
async fn not_found(uri: Uri) -> ApiError {
    ApiError::new(
        axum::http::StatusCode::NOT_FOUND,
        "not_found",
        format!("no route matches {}", uri.path()),
    )
}

/// A method the route does not take (axum adds `Allow` with the ones it does).
async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::new(
        axum::http::StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!("{} does not take {method}", uri.path()),
    )
}

//! `GET /console`: the web console (plain HTML, CSS and JavaScript in `console/`, compiled
//! into the binary: nothing to build or install besides Ghost; `console.js` holds what every
//! view shares and Chat, each other view has its own script). The pages carry no data; the
//! console signs in with the API token and uses the same `/api/*` endpoints as any client.

use axum::http::header;
use axum::response::{IntoResponse, Redirect, Response};

const INDEX: &str = include_str!("../console/index.html");
const SCRIPT: &str = include_str!("../console/console.js");
const ACTIVITY: &str = include_str!("../console/activity.js");
const STAGE: &str = include_str!("../console/stage.js");
const MOOD: &str = include_str!("../console/mood.js");
const MEMORY: &str = include_str!("../console/memory.js");
const MEMORY_CARDS: &str = include_str!("../console/memory-cards.js");
const REMINDERS: &str = include_str!("../console/reminders.js");
const STYLE: &str = include_str!("../console/console.css");

// Its routes are in [`crate::routes::ROUTES`] (no token: the page itself asks for it).

/// `GET /console`: to the page, `/console/`.
pub async fn redirect() -> Redirect {
    Redirect::permanent("/console/")
}

/// `GET /console/`.
pub async fn index() -> Response {
    asset("text/html; charset=utf-8", INDEX)
}

/// `GET /console/console.js`.
pub async fn script() -> Response {
    asset("text/javascript; charset=utf-8", SCRIPT)
}

/// `GET /console/activity.js`: the Activity view.
pub async fn activity_script() -> Response {
    asset("text/javascript; charset=utf-8", ACTIVITY)
}

/// `GET /console/stage.js`: the Stage view.
pub async fn stage_script() -> Response {
    asset("text/javascript; charset=utf-8", STAGE)
}

/// `GET /console/mood.js`: the Mood view.
pub async fn mood_script() -> Response {
    asset("text/javascript; charset=utf-8", MOOD)
}

/// `GET /console/memory.js`: the Memory view.
pub async fn memory_script() -> Response {
    asset("text/javascript; charset=utf-8", MEMORY)
}

/// `GET /console/memory-cards.js`: the Memory view's cards.
pub async fn memory_cards_script() -> Response {
    asset("text/javascript; charset=utf-8", MEMORY_CARDS)
}

/// `GET /console/reminders.js`: the Reminders view.
pub async fn reminders_script() -> Response {
    asset("text/javascript; charset=utf-8", REMINDERS)
}

/// `GET /console/console.css`.
pub async fn style() -> Response {
    asset("text/css; charset=utf-8", STYLE)
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-cache"),
            // The console runs only its own script and talks only to this origin.
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data:",
            ),
        ],
        body,
    )
        .into_response()
}

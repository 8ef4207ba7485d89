//! llama.cpp's log lines, one level down: `llama-cpp-2` sends them to `tracing` at their
//! own level, and llama.cpp logs about 140 INFO lines (every tensor, every parameter) each
//! time a model loads. The engine thread runs under [`demoting_dispatch`]: a subscriber that
//! passes everything to the process's own, except those INFO lines, which it re-emits at
//! DEBUG (target `llama.cpp`). Warnings and errors keep their level.

use tracing::field::{Field, Visit};
use tracing::span;
use tracing::subscriber::Interest;
use tracing::{Dispatch, Event, Level, Metadata, Subscriber};

/// The target `llama-cpp-2` logs llama.cpp's and ggml's lines under.
const LLAMA_TARGET: &str = "llama-cpp-2";

/// The current dispatcher, with llama.cpp's INFO lines demoted to DEBUG.
pub fn demoting_dispatch() -> Dispatch {
    let inner = tracing::dispatcher::get_default(Dispatch::clone);
    Dispatch::new(Demote { inner })
}

struct Demote {
    inner: Dispatch,
}

#[derive(Default)]
struct Line {
    message: String,
    module: Option<String>,
}

impl Visit for Line {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "message" => self.message = value.to_owned(),
            "module" => self.module = Some(value.to_owned()),
            _ => {}
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.record_str(field, &format!("{value:?}"));
    }
}

impl Subscriber for Demote {
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        self.inner.register_callsite(metadata)
    }

    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        self.inner.enabled(metadata)
    }

    fn new_span(&self, span: &span::Attributes<'_>) -> span::Id {
        self.inner.new_span(span)
    }

    fn record(&self, span: &span::Id, values: &span::Record<'_>) {
        self.inner.record(span, values)
    }

    fn record_follows_from(&self, span: &span::Id, follows: &span::Id) {
        self.inner.record_follows_from(span, follows)
    }

    fn event(&self, event: &Event<'_>) {
        let metadata = event.metadata();
        if metadata.target() != LLAMA_TARGET || *metadata.level() != Level::INFO {
            return self.inner.event(event);
        }
        let mut line = Line::default();
        event.record(&mut line);
        tracing::dispatcher::with_default(&self.inner, || {
            tracing::debug!(
                target: "llama.cpp",
                module = line.module.as_deref().unwrap_or_default(),
                "{}",
                line.message.trim_end()
            );
        });
    }

    fn enter(&self, span: &span::Id) {
        self.inner.enter(span)
    }

    fn exit(&self, span: &span::Id) {
        self.inner.exit(span)
    }

    fn clone_span(&self, id: &span::Id) -> span::Id {
        self.inner.clone_span(id)
    }

    fn try_close(&self, id: span::Id) -> bool {
        self.inner.try_close(id)
    }
}

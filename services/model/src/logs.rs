//! llama.cpp's log lines, one level down: `llama-cpp-2` sends them to `tracing` at their
//! own level, and llama.cpp logs about 140 INFO lines (every tensor, every parameter) each
//! time a model loads. The engine thread runs under [`demoting_dispatch`]: a subscriber that
//! passes everything to the process's own, except those INFO lines, which it hands on as
//! DEBUG events (target `llama.cpp`), and so are `llama-cpp-2`'s warnings about the framing
//! of llama.cpp's lines. llama.cpp's warnings and errors keep their level.
//!
//! `llama-cpp-2` emits its events from inside `tracing::dispatcher::get_default`, where no
//! other dispatcher may be entered and a nested `tracing::debug!` would go nowhere: the
//! demoted event is therefore built here, with its own callsite, and given to the inner
//! dispatcher directly.

use std::sync::Once;

use tracing::callsite::{Callsite, Identifier};
use tracing::field::{Field, FieldSet, Visit};
use tracing::metadata::Kind;
use tracing::span;
use tracing::subscriber::Interest;
use tracing::{Dispatch, Event, Level, Metadata, Subscriber};

/// The target `llama-cpp-2` logs llama.cpp's and ggml's lines under.
const LLAMA_TARGET: &str = "llama-cpp-2";

/// The target of `llama-cpp-2`'s own remarks on llama.cpp's line framing (a WARN for each
/// progress dot llama.cpp prints while loading): noise, demoted too.
const FRAMING_TARGET: &str = "llama_cpp_2::log";

/// Whether an event is one of the lines handed on at DEBUG.
fn demoted(metadata: &Metadata<'_>) -> bool {
    match metadata.target() {
        LLAMA_TARGET => *metadata.level() == Level::INFO,
        FRAMING_TARGET => *metadata.level() > Level::ERROR,
        _ => false,
    }
}

/// The callsite of the demoted lines.
struct Demoted;

static DEMOTED: Demoted = Demoted;

static DEMOTED_META: Metadata<'static> = Metadata::new(
    "llama.cpp log line",
    "llama.cpp",
    Level::DEBUG,
    Some(file!()),
    Some(line!()),
    Some(module_path!()),
    FieldSet::new(&["message", "module"], Identifier(&DEMOTED)),
    Kind::EVENT,
);

impl Callsite for Demoted {
    fn set_interest(&self, _: Interest) {}

    fn metadata(&self) -> &Metadata<'_> {
        &DEMOTED_META
    }
}

/// The current dispatcher, with llama.cpp's INFO lines demoted to DEBUG.
pub fn demoting_dispatch() -> Dispatch {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| tracing::callsite::register(&DEMOTED));
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
        if !demoted(metadata) {
            return self.inner.event(event);
        }
        if !self.inner.enabled(&DEMOTED_META) {
            return;
        }
        let mut line = Line::default();
        event.record(&mut line);
        let fields = DEMOTED_META.fields();
        let (Some(message), Some(module)) = (fields.field("message"), fields.field("module"))
        else {
            return;
        };
        let text = line.message.trim_end();
        let values: [(&Field, Option<&dyn tracing::Value>); 2] = [
            (&message, Some(&text)),
            (
                &module,
                line.module.as_ref().map(|m| m as &dyn tracing::Value),
            ),
        ];
        self.inner
            .event(&Event::new(&DEMOTED_META, &fields.value_set(&values)));
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

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// Keeps (level, target) of every event.
    #[derive(Clone, Default)]
    struct Collect(Arc<Mutex<Vec<(Level, String)>>>);

    impl Subscriber for Collect {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &span::Attributes<'_>) -> span::Id {
            span::Id::from_u64(1)
        }
        fn record(&self, _: &span::Id, _: &span::Record<'_>) {}
        fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}
        fn event(&self, event: &Event<'_>) {
            let m = event.metadata();
            self.0
                .lock()
                .unwrap()
                .push((*m.level(), m.target().to_owned()));
        }
        fn enter(&self, _: &span::Id) {}
        fn exit(&self, _: &span::Id) {}
    }

    #[test]
    fn llama_info_lines_come_out_at_debug_and_warnings_stay() {
        let collect = Collect::default();
        let seen = collect.0.clone();
        tracing::subscriber::with_default(collect, || {
            // As llama-cpp-2 does: from inside the current dispatcher.
            tracing::dispatcher::with_default(&demoting_dispatch(), || {
                tracing::info!(target: "llama-cpp-2", module = "llama.cpp::load", "tensor 1\n");
                tracing::warn!(target: "llama-cpp-2", "out of memory");
                tracing::warn!(target: "llama_cpp_2::log", "a CONT log without a buffered one");
                tracing::info!("ours");
            });
        });
        assert_eq!(
            *seen.lock().unwrap(),
            vec![
                (Level::DEBUG, "llama.cpp".to_owned()),
                (Level::WARN, "llama-cpp-2".to_owned()),
                (Level::DEBUG, "llama.cpp".to_owned()),
                (Level::INFO, module_path!().to_owned()),
            ]
        );
    }
}

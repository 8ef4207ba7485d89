//! `ghost events`: who appends and who consumes each event type, read from the services'
//! descriptors (`ServiceDescriptor::appends` and `consumes`), which the running services
//! are held to: an undeclared append or consumer is refused. `docs/architecture/events.md`
//! is this table, and ARCHITECTURE.md's service table lists the same names per service;
//! `tests/events_table.rs` fails when either drifts from the code.

use std::collections::BTreeMap;

use crate::stack::ServiceName;

/// One event type's producers and consumers, by service name.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct EventRow {
    /// Services that append it.
    pub appended_by: Vec<&'static str>,
    /// Services whose bus consumers take it.
    pub consumed_by: Vec<&'static str>,
}

/// Every event type some service appends or consumes, alphabetically.
pub fn rows() -> BTreeMap<&'static str, EventRow> {
    let mut rows: BTreeMap<&'static str, EventRow> = BTreeMap::new();
    for service in ServiceName::EVERY {
        let d = service.descriptor();
        for t in d.appends {
            rows.entry(t).or_default().appended_by.push(d.name);
        }
        for t in d.consumes {
            rows.entry(t).or_default().consumed_by.push(d.name);
        }
    }
    for row in rows.values_mut() {
        row.appended_by.sort_unstable();
        row.consumed_by.sort_unstable();
    }
    rows
}

/// The table as Markdown (what `ghost events` prints and `docs/architecture/events.md`
/// holds between its markers).
pub fn markdown() -> String {
    let names = |v: &[&str]| {
        if v.is_empty() {
            "—".to_owned()
        } else {
            v.join(", ")
        }
    };
    let mut out = String::from("| event type | appended by | consumed by |\n|---|---|---|\n");
    for (t, row) in rows() {
        out.push_str(&format!(
            "| `{t}` | {} | {} |\n",
            names(&row.appended_by),
            names(&row.consumed_by)
        ));
    }
    out
}

/// Event types consumed by some service that no service appends: a consumer waiting for
/// nothing (types appended outside the services, by `ghost memory import`, are not
/// consumed by any).
pub fn consumed_but_never_appended() -> Vec<&'static str> {
    rows()
        .into_iter()
        .filter(|(_, r)| r.appended_by.is_empty() && !r.consumed_by.is_empty())
        .map(|(t, _)| t)
        .collect()
}

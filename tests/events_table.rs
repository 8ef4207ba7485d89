//! The documents' producer/consumer tables against the code: `docs/architecture/events.md`
//! is `ghost events`' output, and ARCHITECTURE.md's service table names, per service, the
//! event types its descriptor declares (which the running service is held to, see
//! `shared/tests/declared.rs`). An event type that gains a producer or consumer without the
//! documents saying so fails here.

use std::collections::BTreeSet;

use ghost::events_table;
use ghost::stack::ServiceName;

const BEGIN: &str = "<!-- ghost events: begin -->\n";
const END: &str = "<!-- ghost events: end -->";

fn read(path: &str) -> String {
    std::fs::read_to_string(format!("{}/{path}", env!("CARGO_MANIFEST_DIR"))).expect(path)
}

/// The backticked type names (`CamelCase`) of a table cell.
fn types_in(cell: &str) -> BTreeSet<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .filter(|t| t.starts_with(|c: char| c.is_ascii_uppercase()) && !t.contains(' '))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_events_document_is_what_ghost_events_prints() {
    let doc = read("docs/architecture/events.md");
    let start = doc.find(BEGIN).expect("begin marker") + BEGIN.len();
    let end = doc.find(END).expect("end marker");
    assert_eq!(
        &doc[start..end],
        events_table::markdown(),
        "docs/architecture/events.md is stale: put `ghost events`' output between its markers"
    );
}

#[test]
fn architecture_md_names_what_each_service_declares() {
    let doc = read("ARCHITECTURE.md");
    let section = doc
        .split("## Services: what each consumes and appends")
        .nth(1)
        .expect("the services section");
    let rows: Vec<Vec<&str>> = section
        .lines()
        .skip_while(|l| !l.starts_with("| service |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| l.trim_matches('|').split('|').map(str::trim).collect())
        .collect();
    let mut seen = BTreeSet::new();
    for row in &rows {
        let name = row[0].split_whitespace().next().expect("a service name");
        let service = ServiceName::EVERY
            .iter()
            .map(|s| s.descriptor())
            .find(|d| d.name == name)
            .unwrap_or_else(|| panic!("ARCHITECTURE.md lists {name}, which is no service"));
        let declared = |types: &[&str]| types.iter().map(|t| t.to_string()).collect();
        assert_eq!(
            types_in(row[1]),
            declared(service.consumes),
            "ARCHITECTURE.md: what {name} consumes (its ServiceDescriptor::consumes)"
        );
        assert_eq!(
            types_in(row[2]),
            declared(service.appends),
            "ARCHITECTURE.md: what {name} appends (its ServiceDescriptor::appends)"
        );
        seen.insert(name);
    }
    let every: BTreeSet<&str> = ServiceName::EVERY.iter().map(|s| s.as_str()).collect();
    assert_eq!(seen, every, "ARCHITECTURE.md has a row per service");
}

#[test]
fn every_consumed_type_is_appended_by_some_service() {
    assert_eq!(
        events_table::consumed_but_never_appended(),
        Vec::<&str>::new(),
        "a consumer waits for a type no service appends"
    );
}

#[test]
fn ghost_events_prints_the_table() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ghost"))
        .arg("events")
        .output()
        .expect("ghost events");
    assert!(out.status.success(), "{out:?}");
    let printed = String::from_utf8(out.stdout).expect("utf-8");
    assert_eq!(printed, events_table::markdown());
    // A row reads: the type, who appends it, who consumes it.
    assert!(
        printed.contains("| `UserMessageReceived` | gateway | router |"),
        "{printed}"
    );
}

//! The house's floors, from `cargo metadata`: the pure rules (`ghost-domain`) depend on no
//! Ghost crate, the metrics (`ghost-metrics`) on the rules, model access (`ghost-llm`) on
//! both and on no store or bus, `ghost-shared` on those three, no service crate on another
//! service, and only tests and the harnesses (`ghost-harness`) reach the test doubles
//! (`ghost-testkit`): not the services, not the `ghost` command.

use std::collections::{BTreeMap, BTreeSet};

/// Each workspace crate and the Ghost crates it depends on, by kind (`normal`, `dev`).
fn ghost_dependencies() -> BTreeMap<String, Vec<(String, String)>> {
    dependencies(|name| name.starts_with("ghost"))
}

/// Each workspace crate and those of its dependencies `keep` selects, by kind.
fn dependencies(keep: impl Fn(&str) -> bool) -> BTreeMap<String, Vec<(String, String)>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata");
    assert!(out.status.success(), "{out:?}");
    let metadata: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    metadata["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .expect("dependencies")
                .iter()
                .filter_map(|d| {
                    let name = d["name"].as_str()?;
                    let kind = d["kind"].as_str().unwrap_or("normal");
                    keep(name).then(|| (name.to_owned(), kind.to_owned()))
                })
                .collect();
            (p["name"].as_str().expect("name").to_owned(), deps)
        })
        .collect()
}

#[test]
fn no_arrow_runs_back_up_and_no_service_depends_on_another() {
    let crates = ghost_dependencies();
    let normal = |name: &str| -> BTreeSet<String> {
        crates[name]
            .iter()
            .filter(|(_, kind)| kind == "normal")
            .map(|(d, _)| d.clone())
            .collect()
    };
    assert!(crates.contains_key("ghost-domain"), "{:?}", crates.keys());
    assert_eq!(
        normal("ghost-domain"),
        BTreeSet::new(),
        "the rules stand alone"
    );
    let set =
        |names: &[&str]| -> BTreeSet<String> { names.iter().map(|n| (*n).to_owned()).collect() };
    assert_eq!(normal("ghost-metrics"), set(&["ghost-domain"]));
    assert_eq!(normal("ghost-llm"), set(&["ghost-domain", "ghost-metrics"]));
    assert_eq!(
        normal("ghost-shared"),
        set(&["ghost-domain", "ghost-llm", "ghost-metrics"])
    );
    let services: Vec<&String> = crates
        .keys()
        .filter(|n| {
            ![
                "ghost",
                "ghost-domain",
                "ghost-harness",
                "ghost-llm",
                "ghost-metrics",
                "ghost-shared",
                "ghost-testkit",
            ]
            .contains(&n.as_str())
        })
        .collect();
    assert!(services.len() >= 8, "{services:?}");
    for service in &services {
        let deps = normal(service);
        let others: Vec<&String> = deps.iter().filter(|d| services.contains(d)).collect();
        assert!(others.is_empty(), "{service} depends on {others:?}");
        assert!(
            !deps.contains("ghost-testkit"),
            "{service} depends on the test doubles"
        );
    }
    assert!(!normal("ghost-testkit")
        .iter()
        .any(|d| services.contains(&d)));
    // The test doubles' one non-test dependent is the harness crate.
    let reach_doubles: Vec<&String> = crates
        .keys()
        .filter(|n| normal(n).contains("ghost-testkit"))
        .collect();
    assert_eq!(reach_doubles, ["ghost-harness"], "non-test dependents");
}

#[test]
fn the_pure_rules_reach_no_database_bus_network_or_runtime() {
    let io = ["sqlx", "async-nats", "reqwest", "tokio", "axum", "hyper"];
    let crates = dependencies(|name| io.contains(&name));
    let reached: Vec<&(String, String)> = crates["ghost-domain"]
        .iter()
        .filter(|(_, kind)| kind == "normal")
        .collect();
    assert!(reached.is_empty(), "ghost-domain depends on {reached:?}");
    // The check sees I/O crates where they are: the shared crate has all of them.
    assert!(
        crates["ghost-shared"].len() >= 4,
        "{:?}",
        crates["ghost-shared"]
    );
}

//! `GHOST_<SECTION>__<KEY>=value` overrides applied to the YAML tree before it is typed.

use serde_norway::{Mapping, Value};

use super::{secrets::SECRET_ENV, ConfigError, CONFIG_DIR_ENV};

/// `GHOST_*` variables that are not overrides.
pub const RESERVED_ENV: [&str; 5] = [
    CONFIG_DIR_ENV,
    crate::fault::FAULTS_ENV,
    "GHOST_LOG",
    // Where the tests' per-test databases and streams are made (ghost-testkit): set in a
    // test run's environment, inherited by the `ghost` processes the tests start.
    "GHOST_TEST_ADMIN_DATABASE_URL",
    "GHOST_TEST_NATS_URL",
];

/// Applies every override in `vars`; returns the variable names applied.
pub(super) fn apply_overrides(
    root: &mut Value,
    vars: &[(String, String)],
) -> Result<Vec<String>, ConfigError> {
    let mut applied = Vec::new();
    for (name, raw) in vars {
        let Some(rest) = name.strip_prefix("GHOST_") else {
            continue;
        };
        if SECRET_ENV.contains(&name.as_str()) || RESERVED_ENV.contains(&name.as_str()) {
            continue;
        }
        let path: Vec<String> = rest.split("__").map(|s| s.to_ascii_lowercase()).collect();
        if path.iter().any(|s| s.is_empty()) {
            return Err(ConfigError::invalid(
                name.clone(),
                "malformed override name (use GHOST_SECTION__KEY)",
            ));
        }
        set(root, &path, scalar(raw))
            .map_err(|at| ConfigError::invalid(name.clone(), format!("{at} is not a section")))?;
        applied.push(name.clone());
    }
    Ok(applied)
}

/// Numbers, booleans and null keep their YAML meaning; anything else stays a string
/// (so `qwen2.5:7b` or `a: b` never turn into mappings).
fn scalar(raw: &str) -> Value {
    match serde_norway::from_str::<Value>(raw) {
        Ok(v @ (Value::Bool(_) | Value::Number(_) | Value::Null)) if !raw.trim().is_empty() => v,
        _ => Value::String(raw.to_owned()),
    }
}

fn set(node: &mut Value, path: &[String], value: Value) -> Result<(), String> {
    let Some((head, tail)) = path.split_first() else {
        return Ok(());
    };
    if node.is_null() {
        *node = Value::Mapping(Mapping::new());
    }
    let Value::Mapping(map) = node else {
        return Err(head.clone());
    };
    let key = Value::String(head.clone());
    if tail.is_empty() {
        map.insert(key, value);
        return Ok(());
    }
    let child = map.entry(key).or_insert(Value::Null);
    set(child, tail, value)
}

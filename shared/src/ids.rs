//! Deterministic identifiers.
//!
//! Every event id is derived from its cause, so a step that runs twice (a redelivered
//! message, a restarted process) produces the same id and the store refuses the copy.

use uuid::Uuid;

/// Namespace for all ids Ghost derives (a fixed random UUID; never change it).
const GHOST_NAMESPACE: Uuid = Uuid::from_u128(0x5f0c_9c1e_6b8a_4d1f_9a3e_0c7d_2e4b_8a61);

/// The id of the event a `step` produces in reaction to `cause` (UUIDv5 of both).
pub fn derive_event_id(cause: Uuid, step: &str) -> Uuid {
    let mut name = Vec::with_capacity(16 + 1 + step.len());
    name.extend_from_slice(cause.as_bytes());
    name.push(b'/');
    name.extend_from_slice(step.as_bytes());
    Uuid::new_v5(&GHOST_NAMESPACE, &name)
}

/// The id of an event that originates outside Ghost (a platform's delivery id, a client's
/// request id): the same external key always maps to the same event.
pub fn external_event_id(source: &str, external_key: &str) -> Uuid {
    Uuid::new_v5(
        &GHOST_NAMESPACE,
        format!("external/{source}/{external_key}").as_bytes(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_cause_and_step_give_same_id() {
        let cause = Uuid::new_v4();
        assert_eq!(
            derive_event_id(cause, "route"),
            derive_event_id(cause, "route")
        );
    }

    #[test]
    fn different_steps_or_causes_differ() {
        let cause = Uuid::new_v4();
        assert_ne!(
            derive_event_id(cause, "route"),
            derive_event_id(cause, "render")
        );
        assert_ne!(
            derive_event_id(cause, "route"),
            derive_event_id(Uuid::new_v4(), "route")
        );
    }

    #[test]
    fn external_ids_are_stable_per_source() {
        assert_eq!(
            external_event_id("line", "e1"),
            external_event_id("line", "e1")
        );
        assert_ne!(
            external_event_id("line", "e1"),
            external_event_id("slack", "e1")
        );
    }
}

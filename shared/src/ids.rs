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

/// The step the outcome of a work request derives its id from: `WorkerCompleted` and
/// `WorkerFailed` of one `WorkRequested` share it, so two handlers never store both.
pub const WORK_OUTCOME_STEP: &str = "work-outcome";

/// The step name every event closing a turn derives its id from (see [`turn_outcome_id`]).
const TURN_OUTCOME_STEP: &str = "turn-outcome";

/// The id of the one event that closes the turn of user message `user_event_id`: the reply
/// (`AssistantReplied`) or one of its alternatives (`RenderFailed` from the persona or the
/// router's dead-letter path, `TurnTimedOut` from the watchdog). Alternatives share the id,
/// so the store keeps whichever came first and refuses the others: two handlers of one
/// message (a redelivery, a second process) can never store both a reply and a failure, and
/// a reply arriving after the watchdog closed the turn is never stored or delivered.
pub fn turn_outcome_id(user_event_id: Uuid) -> Uuid {
    derive_event_id(user_event_id, TURN_OUTCOME_STEP)
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
    fn a_turn_has_one_outcome_id() {
        let turn = Uuid::new_v4();
        assert_eq!(turn_outcome_id(turn), turn_outcome_id(turn));
        assert_ne!(turn_outcome_id(turn), turn_outcome_id(Uuid::new_v4()));
        assert_ne!(turn_outcome_id(turn), derive_event_id(turn, "route"));
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

//! The embedded model server's Prometheus series (named as in `ghost_shared::metrics`;
//! recorded through the `metrics` facade, exported by the process's recorder).

use metrics::{counter, describe_counter, describe_gauge, gauge};

use crate::engine::Priority;

/// Requests waiting for the engine, by priority.
pub const QUEUE_DEPTH: &str = "ghost_model_queue_depth";
/// Requests refused because their priority's queue was full, by priority.
pub const QUEUE_FULL: &str = "ghost_model_queue_full_total";
/// Background replies paused for an interactive request.
pub const PREEMPTIONS: &str = "ghost_model_preemptions_total";

/// Describes the series (once per process is enough; again is harmless).
pub fn describe() {
    describe_gauge!(
        QUEUE_DEPTH,
        "Requests waiting for the embedded model, by priority."
    );
    describe_counter!(
        QUEUE_FULL,
        "Requests the embedded model refused with a full queue, by priority."
    );
    describe_counter!(
        PREEMPTIONS,
        "Background replies paused for an interactive request."
    );
    counter!(PREEMPTIONS).increment(0);
}

/// `depth` requests of `priority` wait.
pub fn queue_depth(priority: Priority, depth: usize) {
    gauge!(QUEUE_DEPTH, "priority" => priority.as_str()).set(depth as f64);
}

/// A request of `priority` was refused: its queue was full.
pub fn queue_full(priority: Priority) {
    counter!(QUEUE_FULL, "priority" => priority.as_str()).increment(1);
}

/// A background reply paused.
pub fn preempted() {
    counter!(PREEMPTIONS).increment(1);
}

//! Next-speaker nomination: reads the `[Next: …]` tag (or a `{"next":"ID"}` fragment) out of a
//! character's reply and decides who speaks next on the multi-character stage.
//!
//! Pipeline (seed 000): width-normalize (NFKC) the reply → drop `<think>` blocks → take the last
//! tag of either form → normalize the name → match it against the registry (internal_id,
//! display_name, short_name, derived synonyms, then fuzzy) → apply the self-nomination policy →
//! fall back to round-robin or random when the tag is missing, unknown or rejected.

mod extract;
mod normalize;
mod policy;
mod registry;
mod resolve;
mod rng;
mod similarity;

pub use extract::{extract_last_tag, visible_text, without_think_and_tags, ExtractedTag, TagForm};
pub use normalize::normalize_name;
pub use policy::{Fallback, NominationPolicy, PolicyError, DEFAULT_FUZZY_THRESHOLD};
pub use registry::{MatchKind, RegistryError, SpeakerEntry, SpeakerRegistry, RESERVED_USER_ID};
pub use resolve::{
    resolve_in_run, resolve_in_run_with_rng, resolve_next_speaker, resolve_next_speaker_with_rng,
    NextSpeakerDecision, Reason,
};
pub use rng::{EntropySource, RandomSource, XorShift64};
pub use similarity::sequence_ratio;

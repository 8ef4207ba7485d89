//! The affect trailer (seed 004): the persona LLM ends its reply with a marker line followed by
//! one JSON object describing its own momentary reaction (`partner_affect_*`, `salience`,
//! `confidence`, `topic_tags`, optional `partner_response_policy`).
//!
//! [`MoodState`] (what the mood service computes and the persona's capsule carries) and
//! [`MoodConstants`] (its tunables) live here too: the persona, the mood service, the gateway and
//! the configuration all use them.
//!
//! Everything from the marker on is internal: it is never streamed to the user. This module
//! splits a finished reply ([`split_trailer`]), filters a token stream on the fly
//! ([`TrailerStreamFilter`]) and validates the JSON field by field ([`parse_affect`]).
//!
//! Reply-text rule (shared by [`split_trailer`] and [`TrailerStreamFilter`]): the reply is the
//! text before the FIRST marker occurrence with trailing whitespace removed (the newline that
//! precedes the marker line must not reach the user). Without a marker the whole text is the
//! reply, trailing whitespace removed as well, so that a stream can hold whitespace back without
//! knowing yet whether a marker follows.

mod label;
mod mood_constants;
mod mood_state;
mod parse;
mod policy;
mod record;
mod stream;
mod trailer;

pub use label::{AffectLabel, UnknownLabel};
pub use mood_constants::{ConstantsError, MoodConstants};
pub use mood_state::{MoodComponents, MoodState};
pub use parse::{parse_affect, AffectParseError, ParsedAffect, RejectReason, RejectedField};
pub use policy::{PolicyError, ResponsePolicy};
pub use record::{Affect, MoodStateError};
pub use stream::{TrailerOutcome, TrailerStreamFilter};
pub use trailer::{split_trailer, TrailerConfig, TrailerConfigError, DEFAULT_TRAILER_MARKER};

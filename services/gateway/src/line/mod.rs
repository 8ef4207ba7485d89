//! LINE Messaging API: webhook signature, event types, turn classification, reply shaping,
//! and LINE as a [`crate::channel::Platform`] ([`Line`]; sending in `deliver.rs`).
//!
//! Exactly-once shape: inbound, `webhookEventId` is the durable dedup key (stable across LINE's
//! redeliveries); outbound, the first batch uses the single-use reply token while it is fresh
//! and every push carries a deterministic `X-Line-Retry-Key`, and `retry` refuses any step that
//! could deliver a batch twice.

pub mod classify;
mod deliver;
mod platform;
pub mod profile;
pub mod reply;
pub mod retry;
pub mod signature;
pub mod split;
pub mod wire;

pub use platform::Line;

pub use classify::{
    classify, strip_self_mentions, IgnoreReason, LineAction, LineConfig, LineTurn, TurnInput,
};
pub use reply::{
    plan_delivery, push_body, push_step, reply_body, reply_token_fresh, retry_key, BuildError,
    DeliveryStep, OutgoingText, PushRequest, ReplyRequest, REPLY_TOKEN_VALIDITY,
};
pub use retry::{Attempt, Decision, Endpoint, Outcome, RetryPolicy};
pub use signature::{verify_signature, SignatureError, SIGNATURE_HEADER};
pub use split::{split_text, utf16_len, MAX_MESSAGES_PER_CALL, MAX_TEXT_UNITS};
pub use wire::{
    ContentProvider, Event, EventKind, ImageMessage, Mention, Mentionee, MentioneeType, Message,
    Mode, ProviderType, Source, TextMessage, WebhookBody,
};

//! Slack Events API and Web API: request signature, event types, turn classification,
//! our bot's identity (`auth.test`) and `chat.postMessage` replies, and Slack as a
//! [`crate::channel::Platform`] ([`Slack`]; sending in `deliver.rs`).
//!
//! Exactly-once shape: inbound, a turn's durable dedup key is the message identity
//! (`channel` + `ts`), which absorbs both Slack's retries and the `app_mention`/`message`
//! double delivery of one mention; outbound, `post` retries only when Slack certainly did not
//! post, because `chat.postMessage` has no idempotency key, and a later attempt first looks
//! for the earlier one's post by its metadata (`history`).

pub mod classify;
mod deliver;
pub mod history;
pub mod identity;
mod lookup;
mod platform;
pub mod post;
pub mod profile;
pub mod signature;
pub mod wire;

pub use classify::{
    classify, event_dedup_key, message_dedup_key, strip_bot_mention, SlackAction,
    SlackIgnoreReason, SlackTurn, Trigger,
};
pub use identity::BotIdentity;
pub use platform::Slack;
pub use post::{
    post_message_body, retry_after_delay, PostBuildError, PostDecision, PostMessage, PostOutcome,
    PostRetryPolicy, MAX_TEXT_CHARS, POST_MESSAGE_PATH,
};
pub use signature::{
    verify_signature, SignatureError, DEFAULT_WINDOW_SECS, SIGNATURE_HEADER, TIMESTAMP_HEADER,
};
pub use wire::{
    parse_retry_num, Envelope, EventCallback, InnerEvent, MessageEvent, SlackImage,
    RETRY_NUM_HEADER, RETRY_REASON_HEADER,
};

//! Fuzzed webhook boundaries: whatever LINE's, Slack's or Telegram's side (or anyone else) POSTs, the body
//! parsers, the event classification and the signature and retry headers never panic, and
//! every failure is a clear error. `PROPTEST_CASES` inputs per property (`ghost_testkit::fuzz`).

use ghost_gateway::{line, slack, telegram};
use ghost_testkit::fuzz;
use proptest::prelude::*;

const LINE_SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";
const SLACK_SECRET: &[u8] = b"8f742231b10e8888abcd99yyyzzz85a5";

/// Valid LINE bodies: 1:1 text, group text with mentions, image, follow, standby, endpoint check.
const LINE_BODIES: &[&str] = &[
    r#"{"destination":"Ubot","events":[{"type":"message","mode":"active","timestamp":1762000000000,"webhookEventId":"01JC","deliveryContext":{"isRedelivery":false},"source":{"type":"user","userId":"U1"},"replyToken":"rt","message":{"id":"44","type":"text","quoteToken":"q","text":"こんにちは"}}]}"#,
    r#"{"destination":"Ubot","events":[{"type":"message","mode":"active","timestamp":1762000000000,"webhookEventId":"01JD","deliveryContext":{"isRedelivery":true},"source":{"type":"group","groupId":"G1","userId":"U2"},"replyToken":"rt2","message":{"id":"45","type":"text","text":"@Kuro hi @all","mention":{"mentionees":[{"index":0,"length":5,"type":"user","userId":"Ubot","isSelf":true},{"index":9,"length":4,"type":"all"}]}}}]}"#,
    r#"{"destination":"Ubot","events":[{"type":"message","mode":"active","timestamp":1762000000000,"webhookEventId":"01JE","deliveryContext":{"isRedelivery":false},"source":{"type":"room","roomId":"R1","userId":"U3"},"replyToken":"rt3","message":{"id":"46","type":"image","contentProvider":{"type":"external","originalContentUrl":"https://example.com/a.png"}}}]}"#,
    r#"{"destination":"Ubot","events":[{"type":"follow","mode":"active","timestamp":1,"webhookEventId":"01JF","deliveryContext":{"isRedelivery":false},"source":{"type":"user","userId":"U4"},"replyToken":"rt4","follow":{"isUnblocked":false}},{"type":"message","mode":"standby","timestamp":2,"webhookEventId":"01JG","deliveryContext":{"isRedelivery":false},"source":{"type":"user","userId":"U4"},"message":{"id":"47","type":"sticker","packageId":"1","stickerId":"2"}}]}"#,
    r#"{"destination":"Ubot","events":[]}"#,
];

/// Valid Slack bodies: URL check, DM, channel mention, app_mention in a thread, bot post, other.
const SLACK_BODIES: &[&str] = &[
    r#"{"type":"url_verification","token":"t","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}"#,
    r#"{"type":"event_callback","team_id":"T1","api_app_id":"A1","event_id":"Ev1","event_time":1700000000,"event":{"type":"message","channel":"D1","channel_type":"im","user":"U1","text":"hello","ts":"1700000000.000100"}}"#,
    r#"{"type":"event_callback","team_id":"T1","event_id":"Ev2","event_time":1700000001,"event":{"type":"message","channel":"C1","channel_type":"channel","user":"U2","text":"<@UBOT> review this","ts":"1700000001.000200","thread_ts":"1700000000.000100"}}"#,
    r#"{"type":"event_callback","event_id":"Ev3","event_time":1700000002,"event":{"type":"app_mention","channel":"C1","user":"U3","text":"<@UBOT>","ts":"1700000002.000300"}}"#,
    r#"{"type":"event_callback","event_id":"Ev4","event_time":1700000003,"event":{"type":"message","subtype":"bot_message","bot_id":"B1","channel":"C1","text":"beep","ts":"1700000003.1"}}"#,
    r#"{"type":"event_callback","event_id":"Ev5","event_time":1700000004,"event":{"type":"reaction_added","user":{"id":"U5"},"item":{"type":"message"}}}"#,
    r#"{"type":"app_rate_limited","minute_rate_limited":1518467820}"#,
];

/// Valid Telegram updates: private text, group command to the bot, forum topic, photo with a
/// caption, an edit, a bot's message, a sticker.
const TELEGRAM_BODIES: &[&str] = &[
    r#"{"update_id":100,"message":{"message_id":1,"date":1762000000,"from":{"id":42,"is_bot":false,"first_name":"A"},"chat":{"id":42,"type":"private","first_name":"A"},"text":"こんにちは"}}"#,
    r#"{"update_id":101,"message":{"message_id":2,"date":1762000000,"from":{"id":43,"is_bot":false},"chat":{"id":-1001,"type":"supergroup","title":"g"},"text":"/local@GhostBot","entities":[{"offset":0,"length":15,"type":"bot_command"}]}}"#,
    r#"{"update_id":102,"message":{"message_id":3,"message_thread_id":7,"is_topic_message":true,"from":{"id":43},"chat":{"id":-1001,"type":"supergroup","is_forum":true},"text":"hi @GhostBot"}}"#,
    r#"{"update_id":103,"message":{"message_id":4,"from":{"id":42},"chat":{"id":42,"type":"private"},"caption":"これ見て","photo":[{"file_id":"s","file_unique_id":"a","width":90,"height":90,"file_size":1200},{"file_id":"l","file_unique_id":"b","width":1280,"height":960,"file_size":99000}]}}"#,
    r#"{"update_id":104,"edited_message":{"message_id":1,"date":1,"edit_date":2,"chat":{"id":42,"type":"private"},"text":"edited"}}"#,
    r#"{"update_id":105,"message":{"message_id":5,"from":{"id":9,"is_bot":true},"chat":{"id":9,"type":"private"},"text":"beep"}}"#,
    r#"{"update_id":106,"message":{"message_id":6,"from":{"id":42},"chat":{"id":42,"type":"private"},"sticker":{"file_id":"st","width":512,"height":512}}}"#,
];

proptest! {
    #![proptest_config(fuzz::config())]

    #[test]
    fn line_webhook_bodies(body in fuzz::bytes(LINE_BODIES)) {
        let parsed = line::WebhookBody::from_slice(&body);
        fuzz::clear_error(&parsed)?;
        if let Ok(webhook) = parsed {
            for event in &webhook.events {
                if let Some(source) = &event.source {
                    let _ = (source.user_id(), source.push_target(), source.session_key(), source.is_multi_person());
                }
                for group_requires_mention in [true, false] {
                    let _ = line::classify(event, &line::LineConfig { group_requires_mention });
                }
            }
        }
    }

    #[test]
    fn line_signature_header(body in fuzz::bytes(LINE_BODIES), header in fuzz::text(&["w5kq9pOHKIsNVKXRZmCAmeEnjCOVe8WHEOoII0u92C0="])) {
        let checked = line::verify_signature(LINE_SECRET, &body, Some(&header));
        fuzz::clear_error(&checked)?;
    }

    #[test]
    fn slack_event_bodies(body in fuzz::bytes(SLACK_BODIES), retry in fuzz::text(&["1", "2"])) {
        let parsed = slack::Envelope::from_slice(&body);
        fuzz::clear_error(&parsed)?;
        if let Ok(envelope) = parsed {
            let retry_num = slack::parse_retry_num(Some(&retry));
            for bot in [Some("UBOT"), None, Some("")] {
                let _ = slack::classify(&envelope, retry_num, bot);
            }
        }
    }

    #[test]
    fn slack_signature_headers(
        body in fuzz::bytes(SLACK_BODIES),
        timestamp in fuzz::text(&["1531420618"]),
        signature in fuzz::text(&["v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"]),
        now in any::<i64>(),
    ) {
        let checked = slack::verify_signature(SLACK_SECRET, &body, Some(&timestamp), Some(&signature), now, slack::DEFAULT_WINDOW_SECS);
        fuzz::clear_error(&checked)?;
    }

    #[test]
    fn telegram_updates(body in fuzz::bytes(TELEGRAM_BODIES), max in any::<u64>()) {
        let parsed = telegram::Update::from_slice(&body);
        fuzz::clear_error(&parsed)?;
        if let Ok(update) = parsed {
            for bot_username in [Some("GhostBot"), None, Some("")] {
                let cfg = telegram::TelegramConfig { bot_username, max_image_bytes: max };
                let _ = telegram::classify(&update, &cfg);
            }
        }
    }

    #[test]
    fn telegram_text_and_secret_token(
        text in fuzz::text(&["/local@GhostBot please", "hey @GhostBot 🍎", "@ghostbot"]),
        header in fuzz::text(&["s3cret_Token-1"]),
    ) {
        let _ = telegram::strip_bot_address(&text, Some("GhostBot"));
        let checked = telegram::verify_secret_token(b"s3cret_Token-1", Some(&header));
        fuzz::clear_error(&checked)?;
    }
}

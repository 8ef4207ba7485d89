//! What routing adds to a reply: the declaration line before it, the short-memory summary
//! and the notices the persona must convey (kept apart from rendering so that `render/`
//! only calls in).

use ghost_shared::events::RenderRequested;
use ghost_shared::routing::Notice;

/// The lines (each with its line break) to put before the reply, streamed and stored: the
/// declaration when this message's primary route differs from the previous one, and the
/// notice that the message's secrets were withheld from the cloud. Never internals.
pub fn declaration_prefix(request: &RenderRequested) -> Option<String> {
    let declaration = request
        .declaration
        .as_deref()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(|line| format!("{line}\n"));
    let withheld = ghost_shared::masking::withheld_notice(&request.withheld_from_cloud)
        .map(|line| format!("{line}\n"));
    match (declaration, withheld) {
        (None, None) => None,
        (d, w) => Some(format!(
            "{}{}",
            d.unwrap_or_default(),
            w.unwrap_or_default()
        )),
    }
}

/// The session's short-memory summary (prompts use it plus the last turns, never the whole
/// history): data the reply's prompt fences, since people's words went into it.
pub fn summary(request: &RenderRequested) -> Option<&str> {
    request
        .memory_summary
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// Instructions for a notice, appended to the user's turn in the prompt.
pub fn notice_note(request: &RenderRequested) -> Option<&'static str> {
    let note = match request.notice? {
        Notice::CloudRequired => {
            "\n\n[note for your reply] This request needs coding work, which is off while the \
             conversation is in local-only mode: nothing was done. Say so briefly and that \
             sending /cloud lifts it. Do not mention models or servers."
        }
        Notice::LocalOn => {
            "\n\n[note for your reply] The user switched local-only mode on. Acknowledge it in \
             one short sentence."
        }
        Notice::LocalOff => {
            "\n\n[note for your reply] The user switched local-only mode off. Acknowledge it in \
             one short sentence."
        }
    };
    Some(note)
}

/// Whether the work result lists sources (RESEARCH).
fn has_sources(request: &RenderRequested) -> bool {
    request
        .work_result
        .as_ref()
        .and_then(|w| w.get("sources"))
        .and_then(serde_json::Value::as_array)
        .is_some_and(|s| !s.is_empty())
}

/// How to convey a work result by its status (failure, limit, questions).
pub fn status_note(request: &RenderRequested) -> Option<&'static str> {
    let status = request.work_result.as_ref()?.get("status")?.as_str()?;
    let note = match status {
        "failed" => {
            "\n[how to reply] The work failed. Tell the user briefly, in your own words, that it \
             could not be done this time; do not invent a result."
        }
        "limit_reached" => {
            "\n[how to reply] The work stopped at its limit. Report briefly what was done so \
             far and what input is needed to go on."
        }
        "research_unavailable" => {
            "\n[how to reply] Nothing could be looked up: there is no search available right now. \
             Say so briefly in your own words. Do not name, invent or guess any source, URL or \
             fact you would have looked up."
        }
        "done" if has_sources(request) => {
            "\n[how to reply] Base the answer on the result and cite its sources by their URLs \
             exactly as listed in \"sources\"; never name any other source."
        }
        "ask_user" => {
            "\n[how to reply] Before going on, the user's answer is needed: convey the result \
             so far and ask the questions (or ask them to confirm)."
        }
        _ => return None,
    };
    Some(note)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ghost_shared::events::Channel;

    fn request() -> RenderRequested {
        RenderRequested {
            session_id: "s".into(),
            channel: Channel::Http,
            user_event_id: uuid::Uuid::nil(),
            person: None,
            user_text: "x".into(),
            work_result: None,
            declaration: None,
            notice: None,
            memory_summary: None,
            withheld_from_cloud: Vec::new(),
            history_user_messages: None,
        }
    }

    #[test]
    fn declaration_is_a_line_before_the_reply_only_when_given() {
        assert_eq!(declaration_prefix(&request()), None);
        let r = RenderRequested {
            declaration: Some("段取りを組むね。".into()),
            ..request()
        };
        assert_eq!(
            declaration_prefix(&r).as_deref(),
            Some("段取りを組むね。\n")
        );
    }

    #[test]
    fn withheld_secrets_are_announced_before_the_reply() {
        let r = RenderRequested {
            declaration: Some("コーディングするね。".into()),
            withheld_from_cloud: vec!["api_key".into(), "payment_card".into()],
            ..request()
        };
        let prefix = declaration_prefix(&r).unwrap_or_default();
        assert!(prefix.starts_with("コーディングするね。\n"), "{prefix}");
        assert!(prefix.contains("api_key, payment_card"), "{prefix}");
        assert!(prefix.ends_with('\n'), "{prefix}");
    }

    #[test]
    fn notices_and_statuses_become_instructions() {
        let r = RenderRequested {
            notice: Some(Notice::CloudRequired),
            work_result: Some(serde_json::json!({"status": "failed"})),
            ..request()
        };
        assert!(notice_note(&r).is_some_and(|n| n.contains("/cloud")));
        assert!(status_note(&r).is_some_and(|n| n.contains("failed")));
        assert_eq!(notice_note(&request()), None);
        assert!(summary(&request()).is_none());
    }
}

//! A Telegram user's name (for the console): `getChatMember` in the chat they spoke in.

use serde_json::{json, Value};

/// `getChatMember`'s body for `person` in `session_id` (`telegram:user:<id>`,
/// `telegram:group:<chat>[:<topic>]`); `None` for ids Telegram does not give.
pub fn chat_member_body(person: &str, session_id: &str) -> Option<Value> {
    let user: i64 = person.parse().ok()?;
    let chat: i64 = match session_id.split(':').collect::<Vec<_>>().as_slice() {
        ["telegram", "user", chat] | ["telegram", "group", chat, ..] => chat.parse().ok()?,
        _ => return None,
    };
    Some(json!({ "chat_id": chat, "user_id": user }))
}

/// The user's first and last name, from `getChatMember`'s answer.
pub fn member_name(answer: &Value) -> Option<String> {
    if answer["ok"] != true {
        return None;
    }
    let user = &answer["result"]["user"];
    let name = [&user["first_name"], &user["last_name"]]
        .into_iter()
        .filter_map(|v| v.as_str())
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    (!name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_member_of_the_chat_they_spoke_in() {
        assert_eq!(
            chat_member_body("42", "telegram:user:42"),
            Some(json!({"chat_id": 42, "user_id": 42}))
        );
        assert_eq!(
            chat_member_body("42", "telegram:group:-100:7"),
            Some(json!({"chat_id": -100, "user_id": 42}))
        );
        assert_eq!(chat_member_body("ann", "telegram:user:42"), None);
        let answer = json!({"ok": true, "result": {"user": {"id": 42, "first_name": "Ren", "last_name": "Kato"}}});
        assert_eq!(member_name(&answer).as_deref(), Some("Ren Kato"));
        assert_eq!(member_name(&json!({"ok": false})), None);
    }
}

//! A LINE user's profile (their display name, for the console): `GET /v2/bot/profile/{user}`
//! in a one-to-one chat, the group's or room's member profile in a group or room (a user who
//! has not added the bot is only found there).

/// The profile path for `person` as seen in `session_id` (`line:user:…`, `line:group:<id>`,
/// `line:room:<id>`); `None` for ids LINE does not give (they go into a URL path).
pub fn profile_path(person: &str, session_id: &str) -> Option<String> {
    let id =
        |s: &str| !s.is_empty() && s.len() <= 64 && s.chars().all(|c| c.is_ascii_alphanumeric());
    if !id(person) {
        return None;
    }
    match session_id.split(':').collect::<Vec<_>>().as_slice() {
        ["line", "user", _] => Some(format!("/v2/bot/profile/{person}")),
        ["line", kind @ ("group" | "room"), chat] if id(chat) => {
            Some(format!("/v2/bot/{kind}/{chat}/member/{person}"))
        }
        _ => None,
    }
}

/// The display name in a profile answer (`{"displayName", …}`).
pub fn display_name(answer: &serde_json::Value) -> Option<String> {
    let name = answer["displayName"].as_str()?.trim();
    (!name.is_empty()).then(|| name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_path_follows_the_conversation() {
        assert_eq!(
            profile_path("U1", "line:user:U1").as_deref(),
            Some("/v2/bot/profile/U1")
        );
        assert_eq!(
            profile_path("U1", "line:group:Cabc").as_deref(),
            Some("/v2/bot/group/Cabc/member/U1")
        );
        assert_eq!(
            profile_path("U1", "line:room:Rx").as_deref(),
            Some("/v2/bot/room/Rx/member/U1")
        );
        assert_eq!(profile_path("../x", "line:user:U1"), None);
        assert_eq!(profile_path("U1", "line:group:a/b"), None);
        assert_eq!(profile_path("U1", "slack:D1"), None);
    }

    #[test]
    fn the_display_name_is_read_or_none() {
        assert_eq!(
            display_name(&json!({"displayName": " Alice "})).as_deref(),
            Some("Alice")
        );
        assert_eq!(display_name(&json!({"displayName": ""})), None);
        assert_eq!(display_name(&json!({"message": "Not found"})), None);
    }
}

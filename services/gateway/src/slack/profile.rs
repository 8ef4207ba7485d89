//! A Slack user's name (for the console): `users.info` (needs the `users:read` scope; without
//! it Slack answers `ok: false` and the person keeps their id).

/// `users.info`'s path and query for `person`; `None` for ids Slack does not give.
pub fn users_info_path(person: &str) -> Option<String> {
    let id = !person.is_empty()
        && person.len() <= 32
        && person.chars().all(|c| c.is_ascii_alphanumeric());
    id.then(|| format!("/api/users.info?user={person}"))
}

/// The name people see: the display name, else the real name.
pub fn user_name(answer: &serde_json::Value) -> Option<String> {
    if answer["ok"] != true {
        return None;
    }
    let user = &answer["user"];
    [
        &user["profile"]["display_name"],
        &user["profile"]["real_name"],
        &user["real_name"],
    ]
    .into_iter()
    .filter_map(|v| v.as_str())
    .map(str::trim)
    .find(|n| !n.is_empty())
    .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_display_name_then_the_real_name() {
        let both =
            json!({"ok": true, "user": {"profile": {"display_name": "ren", "real_name": "Ren K"}}});
        assert_eq!(user_name(&both).as_deref(), Some("ren"));
        let real =
            json!({"ok": true, "user": {"profile": {"display_name": "", "real_name": "Ren K"}}});
        assert_eq!(user_name(&real).as_deref(), Some("Ren K"));
        assert_eq!(
            user_name(&json!({"ok": false, "error": "missing_scope"})),
            None
        );
        assert_eq!(
            users_info_path("U1").as_deref(),
            Some("/api/users.info?user=U1")
        );
        assert_eq!(users_info_path("U1&x=y"), None);
    }
}

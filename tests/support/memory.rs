//! Memory rows planted straight into the `memory` projection's tables (the write-plan
//! service is not part of these tests' stack).

use super::TestApp;

/// Plants kuro's memory rows (what the memory projection would hold): two active task
/// states ("find a new tea", "ask how master slept"), a confirmed preference about tea
/// (liked when `likes_tea`, else disliked) and an interest state attending to tea or to
/// master's health.
pub async fn plant(app: &TestApp, likes_tea: bool) {
    let state = |id: &str, body: &str, topic: &str| {
        format!(
            "INSERT INTO memory_states VALUES ('kuro', '{id}', 'task', 'active', '{body}', \
             '{{\"topic\": \"{topic}\"}}', 0.5, 0.5, NULL, NULL, 1, '{{}}', 'seen', gen_random_uuid(), 1)"
        )
    };
    let tea = state(
        "00000000-0000-0000-0000-00000000000a",
        "find a new tea",
        "tea",
    );
    let health = state(
        "00000000-0000-0000-0000-00000000000b",
        "ask how master slept",
        "master_health",
    );
    let polarity = if likes_tea { "like" } else { "dislike" };
    let preference = format!(
        "INSERT INTO preferences VALUES ('kuro', 'topic', 'tea', '{polarity}', 'tea', 'confirmed', \
         0.9, '{{}}', 'said so', gen_random_uuid(), 2)"
    );
    let targets = if likes_tea {
        r#"[{"type": "topic", "value": "tea", "weight": 0.7}]"#
    } else {
        r#"[{"type": "person", "value": "master_health", "weight": 0.8}]"#
    };
    let interest = format!(
        "INSERT INTO persona_interest_state VALUES ('kuro', '{targets}', 'support', '{{}}', 0, gen_random_uuid(), 3)"
    );
    super::execute_all(&app.store, &[&tea, &health, &preference, &interest]).await;
}

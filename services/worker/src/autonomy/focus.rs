//! The deliberation input (seed 001 B-3), collection apart from formatting: [`FocusSources`]
//! holds what was collected (structured), [`PersonaDeliberationFocus`] is derived from the
//! confirmed preferences, the long mood state and the interest state's attention targets,
//! and [`build_input`] orders and counts the material by it. Only structured fields are
//! compared (ids, topic keys, weights, the mood label), never the texts: the keys are the
//! ones the write plan writes (a task's `payload.topic` and `salience`, a goal target's
//! `goal_id:<state_id>`), topics compared by subject key. Intents (the persona's own recent
//! decisions to act, and how each went) are material too (seed 001 B-3 collects
//! events/states/goals/intents), ordered and counted by the same focus.

use serde::{Deserialize, Serialize};

use ghost_shared::affect::{AffectLabel, MoodState};
use ghost_shared::autonomy::persona::Vad;
use ghost_shared::memory::model::{goal_ref_text, subject_key};
use ghost_shared::memory::vocab::{PreferenceStatus, StateKind, StateStatus};
use ghost_shared::memory::Memory;

/// An earlier utterance of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecentEvent {
    /// `user` or `assistant`.
    pub role: String,
    /// Who said it.
    pub speaker: String,
    /// What was said.
    pub text: String,
}

/// An open task or goal from the states.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpenItem {
    /// Its id.
    pub id: String,
    /// `task` or `goal`.
    pub kind: String,
    /// What it is about (shown to the model, never compared).
    pub title: String,
    /// The topic it belongs to, if any (`payload.topic`).
    #[serde(default)]
    pub topic: Option<String>,
    /// Its own priority (0..1).
    #[serde(default)]
    pub priority: f64,
}

/// An intent: an action the persona decided on lately, and where it stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Intent {
    /// The decision's event id.
    pub id: String,
    /// The decision's `action_type`.
    pub action_type: String,
    /// The capability it runs.
    pub capability: String,
    /// Why it was decided (shown to the model, never compared).
    pub reason: String,
    /// The topic it was about (`persona_influence.topic`), if given.
    #[serde(default)]
    pub topic: Option<String>,
    /// `pending` (no result yet), or the result's status (`success`, `failed`, `timeout`).
    pub status: String,
}

/// A preference (`like` / `dislike` of a subject in a domain).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PreferenceItem {
    /// E.g. `food`, `topic`.
    pub domain: String,
    /// The subject key.
    pub subject: String,
    /// `like` or `dislike`.
    pub polarity: String,
    /// Only confirmed preferences steer the focus.
    pub confirmed: bool,
}

/// An attention target of the interest state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttentionTarget {
    /// `topic`, `goal` (value `goal_id:<id>`) or `person`.
    #[serde(rename = "type")]
    pub target_type: String,
    /// The key.
    pub value: String,
    /// 0..1.
    pub weight: f64,
}

/// Everything collected for one deliberation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FocusSources {
    /// Newest last.
    pub recent_events: Vec<RecentEvent>,
    /// Open tasks and goals.
    pub open_items: Vec<OpenItem>,
    /// Preferences.
    pub preferences: Vec<PreferenceItem>,
    /// The long mood state, if the mood service answered.
    pub long_mood: Option<MoodState>,
    /// What the persona felt lately
    /// (`ghost_shared::autonomy::recent_vad::recent_vad_average`), if the store answered.
    pub recent_vad: Option<Vad>,
    /// The interest state's attention targets.
    pub attention_targets: Vec<AttentionTarget>,
    /// The interest state's interaction mode.
    pub interaction_mode: Option<String>,
    /// The persona's recent intents, newest last.
    #[serde(default)]
    pub intents: Vec<Intent>,
}

impl FocusSources {
    /// What the memory holds: active tasks (their topic from the state's structured
    /// `payload.topic`, priority from salience, else confidence), preferences, and the
    /// interest state's attention targets (decayed to `now`, as everywhere) and mode.
    pub fn from_memory(memory: &Memory, now: f64, tau_secs: f64) -> Self {
        let open_items = memory
            .states
            .iter()
            .filter(|s| s.kind == StateKind::Task && s.status == StateStatus::Active)
            .map(|s| OpenItem {
                id: s.state_id.to_string(),
                kind: "task".into(),
                title: s.body_text.clone(),
                topic: s.topic().map(str::to_owned),
                priority: s.salience.unwrap_or(s.confidence),
            })
            .collect();
        let preferences = memory
            .preferences
            .iter()
            .filter(|p| p.status != PreferenceStatus::Revoked)
            .map(|p| PreferenceItem {
                domain: p.domain.as_str().into(),
                subject: p.subject.clone(),
                polarity: p.polarity.as_str().into(),
                confirmed: p.status == PreferenceStatus::Confirmed,
            })
            .collect();
        let (attention_targets, interaction_mode) = match memory.interest_at(now, tau_secs) {
            Some(i) => (
                i.attention_targets
                    .iter()
                    .map(|t| AttentionTarget {
                        target_type: t.target_type.as_str().into(),
                        value: t.value.clone(),
                        weight: t.weight,
                    })
                    .collect(),
                Some(i.interaction_mode.as_str().to_owned()),
            ),
            None => (Vec::new(), None),
        };
        Self {
            open_items,
            preferences,
            attention_targets,
            interaction_mode,
            ..Self::default()
        }
    }
}

/// How the persona's state steers what it looks at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PersonaDeliberationFocus {
    /// `quiet` (a heavy mood: fewer items, people first) or `open` (joy: topics first).
    pub stance: String,
    /// Topic keys drawn toward, strongest first (confirmed likes and attention targets).
    pub topic_bias: Vec<String>,
    /// Topic keys pushed back (confirmed dislikes).
    pub avoid_bias: Vec<String>,
    /// How many open items the input holds.
    pub item_limit: usize,
    /// How many recent events the input holds.
    pub event_limit: usize,
}

/// The ordered, counted material the deliberation prompt receives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeliberationInput {
    /// The focus that ordered it.
    pub persona_deliberation_focus: PersonaDeliberationFocus,
    /// Open tasks and goals, most relevant first.
    pub open_items: Vec<OpenItem>,
    /// Recent intents: pending ones first, then by how much their topic is cared about.
    pub intents: Vec<Intent>,
    /// Recent events, oldest first.
    pub recent_events: Vec<RecentEvent>,
    /// Confirmed preferences.
    pub confirmed_preferences: Vec<PreferenceItem>,
    /// The long mood state.
    pub long_mood_state: Option<MoodState>,
    /// What the persona felt lately (`ghost_shared::autonomy::recent_vad`, the definition
    /// recall selection and the autonomy message use too).
    pub recent_vad_average: Option<Vad>,
    /// Attention targets, strongest first.
    pub attention_targets: Vec<AttentionTarget>,
    /// The interaction mode.
    pub interaction_mode: Option<String>,
}

/// A mood counts as heavy from this intensity on (sadness, fear, anger).
const HEAVY_MOOD: f64 = 0.5;
/// Weight a confirmed like adds to an item of its topic, and a dislike takes away.
const LIKE_WEIGHT: f64 = 0.5;
const DISLIKE_WEIGHT: f64 = 1.0;

/// The focus for `sources`, with at most `max_items` items and `max_events` events.
pub fn focus_of(
    sources: &FocusSources,
    max_items: usize,
    max_events: usize,
) -> PersonaDeliberationFocus {
    let heavy = sources.long_mood.as_ref().is_some_and(|m| {
        matches!(
            m.label,
            AffectLabel::Sadness | AffectLabel::Fear | AffectLabel::Anger
        ) && m.intensity >= HEAVY_MOOD
    });
    let stance = if heavy { "quiet" } else { "open" };
    let mut topics: Vec<(String, f64)> = Vec::new();
    for t in sources
        .attention_targets
        .iter()
        .filter(|t| t.target_type == "topic")
    {
        topics.push((
            t.value.clone(),
            t.weight * stance_factor(stance, &t.target_type),
        ));
    }
    for p in confirmed(sources).filter(|p| p.polarity == "like") {
        match topics.iter_mut().find(|(k, _)| same_topic(k, &p.subject)) {
            Some((_, w)) => *w += LIKE_WEIGHT,
            None => topics.push((p.subject.clone(), LIKE_WEIGHT)),
        }
    }
    topics.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    PersonaDeliberationFocus {
        stance: stance.into(),
        topic_bias: topics.into_iter().map(|(k, _)| k).collect(),
        avoid_bias: confirmed(sources)
            .filter(|p| p.polarity == "dislike")
            .map(|p| p.subject.clone())
            .collect(),
        item_limit: if heavy {
            max_items.div_ceil(2)
        } else {
            max_items
        },
        event_limit: if heavy {
            max_events.div_ceil(2)
        } else {
            max_events
        },
    }
}

/// A heavy mood looks after people first; an open one after topics.
fn stance_factor(stance: &str, target_type: &str) -> f64 {
    match (stance, target_type) {
        ("quiet", "person") | ("open", "topic") => 2.0,
        _ => 1.0,
    }
}

/// Topics are the same when their subject keys are (NFKC, trimmed, case-folded).
fn same_topic(a: &str, b: &str) -> bool {
    subject_key(a) == subject_key(b)
}

fn confirmed(sources: &FocusSources) -> impl Iterator<Item = &PreferenceItem> {
    sources.preferences.iter().filter(|p| p.confirmed)
}

/// The material ordered and counted by the focus.
pub fn build_input(
    sources: &FocusSources,
    max_items: usize,
    max_events: usize,
) -> DeliberationInput {
    let focus = focus_of(sources, max_items, max_events);
    let mut scored: Vec<(f64, &OpenItem)> = sources
        .open_items
        .iter()
        .map(|item| (item_score(sources, &focus, item), item))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.id.cmp(&b.1.id)));
    let open_items = scored
        .into_iter()
        .take(focus.item_limit)
        .map(|(_, i)| i.clone())
        .collect();
    let skip = sources
        .recent_events
        .len()
        .saturating_sub(focus.event_limit);
    let mut attention_targets = sources.attention_targets.clone();
    attention_targets.sort_by(|a, b| {
        (b.weight * stance_factor(&focus.stance, &b.target_type))
            .total_cmp(&(a.weight * stance_factor(&focus.stance, &a.target_type)))
            .then_with(|| a.value.cmp(&b.value))
    });
    let mut intents: Vec<(f64, usize, &Intent)> = sources
        .intents
        .iter()
        .enumerate()
        .map(|(i, intent)| (intent_score(sources, &focus, intent), i, intent))
        .collect();
    // Pending first, then cared about, then newest.
    intents.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| b.1.cmp(&a.1)));
    let intents = intents
        .into_iter()
        .take(focus.item_limit)
        .map(|(_, _, i)| i.clone())
        .collect();
    DeliberationInput {
        open_items,
        intents,
        recent_events: sources.recent_events[skip..].to_vec(),
        confirmed_preferences: confirmed(sources).cloned().collect(),
        long_mood_state: sources.long_mood,
        recent_vad_average: sources.recent_vad,
        attention_targets,
        interaction_mode: sources.interaction_mode.clone(),
        persona_deliberation_focus: focus,
    }
}

/// An intent's weight: a pending one comes first (it is still under way), then the attention
/// and the confirmed likes and dislikes of its topic, as an item's.
fn intent_score(sources: &FocusSources, focus: &PersonaDeliberationFocus, intent: &Intent) -> f64 {
    let pending = if intent.status == "pending" {
        10.0
    } else {
        0.0
    };
    let Some(topic) = intent.topic.as_deref() else {
        return pending;
    };
    let attention: f64 = sources
        .attention_targets
        .iter()
        .filter(|t| t.target_type == "topic" && same_topic(&t.value, topic))
        .map(|t| t.weight * stance_factor(&focus.stance, &t.target_type))
        .sum();
    let preference: f64 = confirmed(sources)
        .filter(|p| same_topic(&p.subject, topic))
        .map(|p| match p.polarity.as_str() {
            "like" => LIKE_WEIGHT,
            _ => -DISLIKE_WEIGHT,
        })
        .sum();
    pending + attention + preference
}

/// An item's own priority, plus the attention a goal target referring to it
/// (`goal_id:<its id>`) or its topic gets (weighted by the stance), plus a confirmed like of
/// its topic, minus a confirmed dislike.
fn item_score(sources: &FocusSources, focus: &PersonaDeliberationFocus, item: &OpenItem) -> f64 {
    let of_topic = |key: &str| item.topic.as_deref().is_some_and(|t| same_topic(t, key));
    let attention: f64 = sources
        .attention_targets
        .iter()
        .filter(|t| match t.target_type.as_str() {
            "goal" => goal_ref_text(&t.value) == Some(item.id.as_str()),
            _ => of_topic(&t.value),
        })
        .map(|t| t.weight * stance_factor(&focus.stance, &t.target_type))
        .sum();
    let liked = confirmed(sources)
        .filter(|p| p.polarity == "like" && of_topic(&p.subject))
        .count() as f64;
    let disliked = confirmed(sources)
        .filter(|p| p.polarity == "dislike" && of_topic(&p.subject))
        .count() as f64;
    item.priority + attention + LIKE_WEIGHT * liked - DISLIKE_WEIGHT * disliked
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: &str, topic: &str, priority: f64) -> OpenItem {
        OpenItem {
            id: id.into(),
            kind: "task".into(),
            title: format!("title {id}"),
            topic: Some(topic.into()),
            priority,
        }
    }

    fn target(t: &str, value: &str, weight: f64) -> AttentionTarget {
        AttentionTarget {
            target_type: t.into(),
            value: value.into(),
            weight,
        }
    }

    fn ids(input: &DeliberationInput) -> Vec<&str> {
        input.open_items.iter().map(|i| i.id.as_str()).collect()
    }

    fn intent(id: &str, topic: Option<&str>, status: &str) -> Intent {
        Intent {
            id: id.into(),
            action_type: "web_research".into(),
            capability: "web_access".into(),
            reason: "r".into(),
            topic: topic.map(str::to_owned),
            status: status.into(),
        }
    }

    #[test]
    fn intents_are_material_pending_first_then_cared_about_and_counted() {
        let mut s = FocusSources {
            intents: vec![
                intent("old-news", Some("news"), "success"),
                intent("tea", Some("tea"), "success"),
                intent("running", None, "pending"),
                intent("new-news", Some("news"), "failed"),
            ],
            ..Default::default()
        };
        s.preferences.push(PreferenceItem {
            domain: "topic".into(),
            subject: "tea".into(),
            polarity: "like".into(),
            confirmed: true,
        });
        let input = build_input(&s, 3, 6);
        let ids: Vec<&str> = input.intents.iter().map(|i| i.id.as_str()).collect();
        assert_eq!(ids, ["running", "tea", "new-news"]);
    }

    #[test]
    fn dislikes_push_back_and_likes_pull_forward() {
        let mut s = FocusSources {
            open_items: vec![item("a", "tea", 0.5), item("b", "news", 0.5)],
            ..Default::default()
        };
        s.preferences.push(PreferenceItem {
            domain: "topic".into(),
            subject: "tea".into(),
            polarity: "dislike".into(),
            confirmed: true,
        });
        assert_eq!(ids(&build_input(&s, 8, 8)), vec!["b", "a"]);
        s.preferences[0].polarity = "like".into();
        assert_eq!(ids(&build_input(&s, 8, 8)), vec!["a", "b"]);
        // An unconfirmed preference steers nothing.
        s.preferences[0].confirmed = false;
        assert_eq!(ids(&build_input(&s, 8, 8)), vec!["a", "b"]);
    }

    #[test]
    fn a_goal_reference_and_a_topic_key_pull_their_item_forward() {
        let id = "00000000-0000-0000-0000-00000000000b";
        let mut s = FocusSources {
            open_items: vec![item("a", "tea", 0.6), item(id, "Master Health", 0.4)],
            ..Default::default()
        };
        assert_eq!(ids(&build_input(&s, 8, 8)), vec!["a", id]);
        s.attention_targets = vec![target("goal", &format!("goal_id:{id}"), 0.5)];
        assert_eq!(ids(&build_input(&s, 8, 8)), vec![id, "a"]);
        // A goal in words refers to no item; a topic compares by key.
        s.attention_targets = vec![target("goal", "Master Health", 0.5)];
        assert_eq!(ids(&build_input(&s, 8, 8)), vec!["a", id]);
        s.attention_targets = vec![target("topic", "ｍａｓｔｅｒ health", 0.5)];
        assert_eq!(ids(&build_input(&s, 8, 8)), vec![id, "a"]);
    }

    #[test]
    fn a_heavy_mood_puts_people_first_and_holds_fewer_items() {
        let s = FocusSources {
            open_items: vec![item("t", "tea", 0.1), item("p", "master_health", 0.1)],
            attention_targets: vec![
                target("topic", "tea", 0.6),
                target("person", "master_health", 0.5),
            ],
            recent_events: (0..6)
                .map(|i| RecentEvent {
                    role: "user".into(),
                    speaker: "u".into(),
                    text: format!("m{i}"),
                })
                .collect(),
            ..Default::default()
        };
        let open = build_input(&s, 4, 6);
        assert_eq!(ids(&open), vec!["t", "p"]);
        assert_eq!(open.recent_events.len(), 6);
        let mut heavy = s.clone();
        heavy.long_mood = Some(MoodState {
            label: AffectLabel::Sadness,
            intensity: 0.8,
            ..MoodState::default()
        });
        let quiet = build_input(&heavy, 4, 6);
        assert_eq!(ids(&quiet), vec!["p", "t"]);
        assert_eq!(quiet.persona_deliberation_focus.item_limit, 2);
        assert_eq!(quiet.recent_events.len(), 3);
        assert_eq!(quiet.recent_events[0].text, "m3");
    }
}

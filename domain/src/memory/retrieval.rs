//! The rule-based RetrievalPlan (seed 001 B-2): no model call before the first token. A
//! message naming a year (1900–2099, as a whole number; two years give a range) or a stage
//! of life is `explicit_about_time`, anything else `associative_recent`. The persona's
//! focus comes from confirmed preferences and the interest state only, never from parsing
//! persona text.

use std::sync::OnceLock;

use regex::Regex;
use serde::Serialize;

use super::model::Memory;
use super::vocab::{LifeStage, Polarity, PreferenceDomain, PreferenceStatus, TargetType};

/// How recall looks for memories.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RetrievalMode {
    /// The message names a time: prefer memories about it.
    ExplicitAboutTime,
    /// Otherwise: what is recent and similar.
    AssociativeRecent,
}

/// The time the message is about.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TimeHint {
    /// First year named.
    pub about_year_start: Option<i32>,
    /// Last year named.
    pub about_year_end: Option<i32>,
    /// The stage of life named.
    pub life_stage_hint: Option<LifeStage>,
}

/// How many candidates recall collects and the selection keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RetrievalLimits {
    /// Candidates collected (all sources together).
    pub max_candidates: usize,
    /// Memories the selection may keep.
    pub max_selected: usize,
}

/// What this persona leans towards (seed 001 `PersonaFocusHint`). Recall compares each
/// term with a candidate's structured keys (annotated entities and threads, a state's
/// topic, a preference's subject) by subject key, never with its text.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PersonaFocusHint {
    /// Topics that raise a candidate's rank: confirmed likes (food, topic) and attention
    /// targets, heaviest first.
    pub topic_bias: Vec<String>,
    /// Confirmed style likes: raise a candidate, less than a topic.
    pub style_bias: Vec<String>,
    /// Confirmed dislikes: lower a candidate below anything neutral.
    pub avoid_bias: Vec<String>,
}

/// The plan for one message.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RetrievalPlan {
    /// How to look.
    pub mode: RetrievalMode,
    /// What to look for: the message itself.
    pub queries: Vec<String>,
    /// The time named.
    pub time_hint: TimeHint,
    /// How many.
    pub limits: RetrievalLimits,
    /// The persona's lean.
    pub focus: PersonaFocusHint,
    /// The period the message names relative to now ("last spring", 先週), once
    /// [`RetrievalPlan::at`] has read it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period: Option<super::when::Period>,
}

impl RetrievalPlan {
    /// The plan with the period its message names relative to `now` (the system's clock).
    pub fn at(mut self, now: chrono::DateTime<chrono::Utc>) -> Self {
        self.period = self
            .queries
            .first()
            .and_then(|q| super::when::mentioned_period(q, now));
        self
    }
}

/// Words naming a stage of life, Japanese and English (lower case).
const STAGE_WORDS: &[(LifeStage, &[&str])] = &[
    (
        LifeStage::Elementary,
        &[
            "小学",
            "elementary school",
            "primary school",
            "grade school",
        ],
    ),
    (LifeStage::Middle, &["中学", "middle school", "junior high"]),
    (LifeStage::High, &["高校", "high school"]),
    (LifeStage::University, &["大学", "university", "college"]),
    (
        LifeStage::Work,
        &[
            "社会人",
            "就職",
            "入社",
            "会社員",
            "新卒",
            "first job",
            "started working",
            "working life",
        ],
    ),
];

fn year_pattern() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    // A whole number of four digits 1900–2099: no digit on either side.
    RE.get_or_init(|| {
        Regex::new(r"(?:^|[^0-9０-９])((?:19|20)[0-9]{2})(?:[^0-9０-９]|$)")
            .unwrap_or_else(|e| panic!("year pattern: {e}"))
    })
}

/// The years 1900–2099 `text` names, in order.
fn years(text: &str) -> Vec<i32> {
    // Matches may share a separator ("2011-2013"), so search from each match's digits on.
    let re = year_pattern();
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(c) = re.captures_at(text, at) {
        let Some(m) = c.get(1) else { break };
        if let Ok(y) = m.as_str().parse() {
            out.push(y);
        }
        at = m.end();
    }
    out
}

/// The stage of life `text` names first, if any.
fn life_stage(text: &str) -> Option<LifeStage> {
    let lower = text.to_lowercase();
    // "junior high (school)" names middle school: blanked (same length, so positions hold)
    // before the high-school words are looked for.
    let without_junior = lower.replace("junior high", &" ".repeat("junior high".len()));
    STAGE_WORDS
        .iter()
        .filter_map(|(stage, words)| {
            let hay = if *stage == LifeStage::High {
                &without_junior
            } else {
                &lower
            };
            words
                .iter()
                .filter_map(|w| hay.find(w))
                .min()
                .map(|pos| (pos, *stage))
        })
        .min()
        .map(|(_, stage)| stage)
}

/// The time hint of `text`.
pub fn time_hint(text: &str) -> TimeHint {
    let ys = years(text);
    TimeHint {
        about_year_start: ys.iter().min().copied(),
        about_year_end: ys.iter().max().copied(),
        life_stage_hint: life_stage(text),
    }
}

/// The persona's focus from its confirmed preferences and interest state (weights decayed
/// to `now`).
pub fn focus_hint(memory: &Memory, now: f64, tau_secs: f64) -> PersonaFocusHint {
    let mut hint = PersonaFocusHint::default();
    if let Some(interest) = memory.interest_at(now, tau_secs) {
        let mut targets = interest.attention_targets;
        targets.sort_by(|a, b| {
            b.weight
                .total_cmp(&a.weight)
                .then_with(|| a.value.cmp(&b.value))
        });
        hint.topic_bias.extend(
            targets
                .into_iter()
                .filter(|t| t.target_type != TargetType::Goal)
                .map(|t| t.value),
        );
    }
    for p in memory
        .preferences
        .iter()
        .filter(|p| p.status == PreferenceStatus::Confirmed)
    {
        let list = match (p.polarity, p.domain) {
            (Polarity::Dislike, _) => &mut hint.avoid_bias,
            (Polarity::Like, PreferenceDomain::Style) => &mut hint.style_bias,
            (Polarity::Like, _) => &mut hint.topic_bias,
        };
        if !list.contains(&p.subject) {
            list.push(p.subject.clone());
        }
    }
    hint
}

/// The plan for `text` with `limits` and `focus`.
pub fn retrieval_plan(
    text: &str,
    limits: RetrievalLimits,
    focus: PersonaFocusHint,
) -> RetrievalPlan {
    let time_hint = time_hint(text);
    let explicit = time_hint.about_year_start.is_some() || time_hint.life_stage_hint.is_some();
    RetrievalPlan {
        mode: if explicit {
            RetrievalMode::ExplicitAboutTime
        } else {
            RetrievalMode::AssociativeRecent
        },
        queries: vec![text.to_owned()],
        time_hint,
        limits,
        focus,
        period: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn years_are_whole_numbers_in_range() {
        assert_eq!(years("2020年に"), vec![2020]);
        assert_eq!(years("from 2011 to 2013"), vec![2011, 2013]);
        assert_eq!(years("2011-2013"), vec![2011, 2013]);
        assert!(years("3021号室").is_empty());
        assert!(years("12020 and 20201 and 1899").is_empty());
    }

    #[test]
    fn life_stages_in_both_languages() {
        assert_eq!(life_stage("大学生の頃"), Some(LifeStage::University));
        assert_eq!(life_stage("in junior high school"), Some(LifeStage::Middle));
        assert_eq!(life_stage("High School days"), Some(LifeStage::High));
        assert_eq!(life_stage("中学の時"), Some(LifeStage::Middle));
        assert_eq!(life_stage("明日の予定"), None);
    }
}

//! Masking of secrets and personal data before text reaches the cloud model or a log line.
//!
//! The rules are data (`config/masking.yaml`, see [`rules`] for the schema): each names a
//! category (`api_key`, `payment_card`, `phone`, …), a risk, a pattern and the checks a
//! match must pass (Luhn, My Number check digit, neighbours, a secret's name). A match is
//! replaced by `[REDACTED:<category>]`.
//!
//! - [`checks`]: the checks rules may require (check digits, neighbours, names);
//! - [`rules`]: the rules file's schema and validation.
//!
//! Every process loads the rules with its configuration (`ghost_shared::config`, which
//! reads the file and [`install`]s them); until then, and in processes without a rules
//! file, the copy of `config/masking.yaml` built into the binary applies. [`mask_secrets`]
//! and [`mask`] use whichever is installed: process state, but no I/O. Reading a rules file
//! and the log writer that masks every line are `ghost_shared::masking`'s.

pub mod checks;
pub mod rules;

use std::borrow::Cow;
use std::sync::{Arc, LazyLock, RwLock};

use regex::Captures;
use serde::Serialize;

pub use rules::{MaskingRulesError, Risk};

/// The rules shipped with Ghost, built in (the same file as `config/masking.yaml`).
pub const BUILTIN_RULES: &str = include_str!("../../../config/masking.yaml");

/// A compiled rule set.
#[derive(Debug)]
pub struct Masker {
    compiled: rules::Compiled,
}

/// A masked text and what was found in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Masked<'a> {
    /// The text with every finding replaced (borrowed when nothing was found).
    pub masked: Cow<'a, str>,
    /// The categories found, sorted, each once.
    pub categories: Vec<String>,
    /// Those of them that are high-risk secrets, sorted, each once.
    pub high_risk: Vec<String>,
}

impl Masker {
    /// Compiles a rules file's text; the error names the rule at fault.
    pub fn from_yaml(yaml: &str) -> Result<Self, MaskingRulesError> {
        Ok(Self {
            compiled: rules::compile(yaml)?,
        })
    }

    /// Masks `text` with every rule, in order.
    pub fn mask<'a>(&self, text: &'a str) -> Masked<'a> {
        let mut out = Cow::Borrowed(text);
        let mut categories: Vec<&rules::Rule> = Vec::new();
        // One pass over the text says which rules can match at all; most texts hit none.
        for index in self.compiled.set.matches(text).iter() {
            let Some(rule) = self.compiled.rules.get(index) else {
                continue;
            };
            if apply(rule, &mut out) {
                categories.push(rule);
            }
        }
        let mut found: Vec<String> = categories.iter().map(|r| r.category.clone()).collect();
        found.sort();
        found.dedup();
        let mut high: Vec<String> = categories
            .iter()
            .filter(|r| r.risk == Risk::High)
            .map(|r| r.category.clone())
            .collect();
        high.sort();
        high.dedup();
        Masked {
            masked: out,
            categories: found,
            high_risk: high,
        }
    }

    /// The rules' names in order (for diagnostics).
    pub fn rule_names(&self) -> impl Iterator<Item = &str> {
        self.compiled.rules.iter().map(|r| r.name.as_str())
    }

    /// The sentence the persona adds when high-risk `categories` were withheld from the
    /// cloud (None when there are none).
    pub fn withheld_notice(&self, categories: &[String]) -> Option<String> {
        (!categories.is_empty()).then(|| {
            self.compiled
                .withheld_notice
                .replace("{categories}", &categories.join(", "))
        })
    }
}

/// Applies one rule; true when something was replaced.
fn apply(rule: &rules::Rule, text: &mut Cow<'_, str>) -> bool {
    let hay: &str = text;
    let mut hit = false;
    let replaced =
        rule.regex
            .replace_all(hay, |c: &Captures<'_>| match replacement(rule, hay, c) {
                Some(r) => {
                    hit = true;
                    r
                }
                None => c.get(0).map_or("", |m| m.as_str()).to_owned(),
            });
    if !hit {
        return false;
    }
    let replaced = replaced.into_owned();
    *text = Cow::Owned(replaced);
    true
}

/// The replacement for one match, or None to keep it (a check failed, or the value is
/// empty or already masked by an earlier rule).
fn replacement(rule: &rules::Rule, hay: &str, c: &Captures<'_>) -> Option<String> {
    let whole = c.get(0)?;
    let value = rule.mask.iter().find_map(|&g| c.get(g))?;
    let v = value.as_str();
    if v.trim().is_empty() || v.contains("[REDACTED:") {
        return None;
    }
    let name = c.name("name").map(|m| m.as_str());
    let span = (whole.start(), whole.end());
    if !rule
        .checks
        .iter()
        .all(|check| check.passes(hay, span, v, name))
    {
        return None;
    }
    let mut out = String::with_capacity(whole.len());
    out.push_str(&hay[whole.start()..value.start()]);
    out.push_str(&rule.label);
    out.push_str(&hay[value.end()..whole.end()]);
    Some(out)
}

static BUILTIN: LazyLock<Option<Arc<Masker>>> = LazyLock::new(|| {
    Masker::from_yaml(BUILTIN_RULES)
        .map(Arc::new)
        .map_err(|e| tracing::error!(error = %e, "the built-in masking rules do not compile"))
        .ok()
});

static INSTALLED: LazyLock<RwLock<Option<Arc<Masker>>>> = LazyLock::new(|| RwLock::new(None));

/// Makes `masker` the rules [`mask`] and [`mask_secrets`] use in this process.
pub fn install(masker: Arc<Masker>) {
    let mut slot = INSTALLED.write().unwrap_or_else(|e| e.into_inner());
    *slot = Some(masker);
}

/// The rules in force: the installed ones, else the built-in ones (None only if the
/// built-in rules failed to compile, which a test rules out).
pub fn current() -> Option<Arc<Masker>> {
    let slot = INSTALLED.read().unwrap_or_else(|e| e.into_inner());
    slot.clone().or_else(|| BUILTIN.clone())
}

/// The category reported when no rules are available: the whole text is withheld.
pub const UNAVAILABLE: &str = "masking_unavailable";

/// Masks `text` with the rules in force. Without any rules nothing may pass: the whole
/// text is replaced.
pub fn mask(text: &str) -> Masked<'_> {
    match current() {
        Some(masker) => masker.mask(text),
        None => Masked {
            masked: Cow::Owned(format!("[REDACTED:{UNAVAILABLE}]")),
            categories: vec![UNAVAILABLE.to_owned()],
            high_risk: vec![UNAVAILABLE.to_owned()],
        },
    }
}

/// Masks `text` with the rules in force and returns only the text (borrowed when nothing
/// was found).
pub fn mask_secrets(text: &str) -> Cow<'_, str> {
    mask(text).masked
}

/// The high-risk categories in `text` (what the persona says was withheld from the cloud).
pub fn high_risk_categories(text: &str) -> Vec<String> {
    mask(text).high_risk
}

/// The persona's sentence for high-risk `categories` withheld from the cloud.
pub fn withheld_notice(categories: &[String]) -> Option<String> {
    current()?.withheld_notice(categories)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_rules_compile() {
        assert!(Masker::from_yaml(BUILTIN_RULES).is_ok());
    }

    #[test]
    fn clean_text_is_borrowed_unchanged() {
        let text = "今日はいい天気だね。Rust 1.95 の新機能を教えて。2026-02-20 10:00";
        let m = mask(text);
        assert!(matches!(m.masked, Cow::Borrowed(t) if t == text));
        assert!(m.categories.is_empty());
    }

    #[test]
    fn withheld_notice_names_the_categories() {
        assert_eq!(withheld_notice(&[]), None);
        let notice = withheld_notice(&["api_key".into(), "payment_card".into()]);
        assert!(notice.is_some_and(|n| n.contains("api_key, payment_card")));
    }
}

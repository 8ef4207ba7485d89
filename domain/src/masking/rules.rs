//! The rules file (`config/masking.yaml`): its schema, and the checks that turn it into
//! compiled rules or an error naming the rule and what is wrong with it.

use std::collections::HashSet;

use regex::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};
use serde::Deserialize;

use super::checks::Check;

/// How bad it is when a category's value leaves the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    /// A secret (key, password, card, national ID): its presence is told to the user when
    /// work went to the cloud.
    High,
    /// Personal data (phone, e-mail, address): masked, not announced.
    Personal,
}

/// The file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RulesFile {
    version: u32,
    withheld_notice: String,
    rules: Vec<RuleSpec>,
}

/// One rule as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleSpec {
    name: String,
    category: String,
    risk: Risk,
    pattern: String,
    #[serde(default)]
    mask: Option<Vec<usize>>,
    #[serde(default)]
    checks: Vec<Check>,
}

/// A rule ready to run.
#[derive(Debug)]
pub(super) struct Rule {
    pub(super) name: String,
    pub(super) category: String,
    pub(super) risk: Risk,
    pub(super) regex: Regex,
    pub(super) mask: Vec<usize>,
    pub(super) checks: Vec<Check>,
    pub(super) label: String,
}

/// Compiled rules: each rule, a set of all patterns (one pass says which rules can match at
/// all) and the notice text.
#[derive(Debug)]
pub(super) struct Compiled {
    pub(super) rules: Vec<Rule>,
    pub(super) set: RegexSet,
    pub(super) withheld_notice: String,
}

/// A rules file that cannot be used; the message names the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("masking rules: {0}")]
pub struct MaskingRulesError(pub String);

/// Generous but bounded: a pathological pattern is a start-up error, not a memory blow-up.
const REGEX_SIZE_LIMIT: usize = 8 << 20;

pub(super) fn compile(yaml: &str) -> Result<Compiled, MaskingRulesError> {
    let file: RulesFile =
        serde_norway::from_str(yaml).map_err(|e| MaskingRulesError(e.to_string()))?;
    if file.version != 1 {
        return Err(MaskingRulesError(format!(
            "version {} is not supported (expected 1)",
            file.version
        )));
    }
    if file.rules.is_empty() {
        return Err(MaskingRulesError("`rules` is empty".into()));
    }
    if !file.withheld_notice.contains("{categories}") {
        return Err(MaskingRulesError(
            "`withheld_notice` must contain {categories}".into(),
        ));
    }
    let mut names = HashSet::new();
    let mut rules = Vec::with_capacity(file.rules.len());
    for (i, spec) in file.rules.into_iter().enumerate() {
        let at = |message: String| {
            MaskingRulesError(format!("rule {:?} (#{}): {message}", spec.name, i + 1))
        };
        let ident = |s: &str, extra: &str| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_lowercase() || c == '_' || extra.contains(c))
        };
        if !ident(&spec.name, "0123456789") {
            return Err(at("`name` must be non-empty [a-z0-9_]".into()));
        }
        if !names.insert(spec.name.clone()) {
            return Err(at("`name` is used by an earlier rule".into()));
        }
        if !ident(&spec.category, "") {
            return Err(at("`category` must be non-empty [a-z_]".into()));
        }
        let regex = RegexBuilder::new(&spec.pattern)
            .size_limit(REGEX_SIZE_LIMIT)
            .build()
            .map_err(|e| at(format!("`pattern` does not compile: {e}")))?;
        if regex.is_match("") {
            return Err(at("`pattern` matches the empty text".into()));
        }
        let mask = spec.mask.clone().unwrap_or_else(|| vec![0]);
        if mask.is_empty() {
            return Err(at("`mask` is empty".into()));
        }
        if let Some(g) = mask.iter().find(|&&g| g >= regex.captures_len()) {
            return Err(at(format!(
                "`mask` names group {g} but the pattern has {} group(s)",
                regex.captures_len() - 1
            )));
        }
        if spec.checks.contains(&Check::SecretName)
            && !regex.capture_names().any(|n| n == Some("name"))
        {
            return Err(at(
                "check `secret_name` needs a group named `name` in the pattern".into(),
            ));
        }
        rules.push(Rule {
            label: format!("[REDACTED:{}]", spec.category),
            name: spec.name,
            category: spec.category,
            risk: spec.risk,
            regex,
            mask,
            checks: spec.checks,
        });
    }
    let set = RegexSetBuilder::new(rules.iter().map(|r| r.regex.as_str()))
        .size_limit(REGEX_SIZE_LIMIT * 4)
        .build()
        .map_err(|e| MaskingRulesError(format!("the rules together do not compile: {e}")))?;
    Ok(Compiled {
        rules,
        set,
        withheld_notice: file.withheld_notice,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(yaml: &str) -> String {
        compile(yaml)
            .map(|_| ())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    const HEAD: &str = "version: 1\nwithheld_notice: \"withheld {categories}\"\n";

    #[test]
    fn bad_rules_are_named_in_the_error() {
        let bad_regex = format!(
            "{HEAD}rules:\n  - {{name: a, category: x, risk: high, pattern: 'ok'}}\n  - {{name: broken, category: x, risk: high, pattern: '(unclosed'}}\n"
        );
        let e = error(&bad_regex);
        assert!(
            e.contains("\"broken\" (#2)") && e.contains("does not compile"),
            "{e}"
        );

        let dup = format!("{HEAD}rules:\n  - {{name: a, category: x, risk: high, pattern: 'a'}}\n  - {{name: a, category: x, risk: high, pattern: 'b'}}\n");
        assert!(error(&dup).contains("earlier rule"), "{}", error(&dup));

        let group = format!(
            "{HEAD}rules:\n  - {{name: a, category: x, risk: high, pattern: '(a)', mask: [2]}}\n"
        );
        assert!(error(&group).contains("group 2"), "{}", error(&group));

        let empty =
            format!("{HEAD}rules:\n  - {{name: a, category: x, risk: high, pattern: 'a*'}}\n");
        assert!(error(&empty).contains("empty text"), "{}", error(&empty));

        let name = format!("{HEAD}rules:\n  - {{name: a, category: x, risk: high, pattern: 'a', checks: [secret_name]}}\n");
        assert!(error(&name).contains("`name`"), "{}", error(&name));
    }

    #[test]
    fn unknown_keys_checks_and_risks_are_rejected() {
        let key = format!(
            "{HEAD}rules:\n  - {{name: a, category: x, risk: high, pattern: 'a', colour: red}}\n"
        );
        assert!(error(&key).contains("colour"), "{}", error(&key));
        let check = format!("{HEAD}rules:\n  - {{name: a, category: x, risk: high, pattern: 'a', checks: [psychic]}}\n");
        assert!(error(&check).contains("psychic"), "{}", error(&check));
        let risk = format!("{HEAD}rules:\n  - {{name: a, category: x, risk: meh, pattern: 'a'}}\n");
        assert!(error(&risk).contains("meh"), "{}", error(&risk));
        assert!(
            error("version: 2\nwithheld_notice: '{categories}'\nrules: []").contains("version 2")
        );
        assert!(error(&format!("{HEAD}rules: []")).contains("empty"));
        assert!(error("version: 1\nwithheld_notice: x\nrules: [{name: a, category: x, risk: high, pattern: a}]").contains("{categories}"));
        assert!(!error("not: [valid").is_empty());
    }
}

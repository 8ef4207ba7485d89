//! The rule dictionary: data-driven "strong evidence" rules, compiled once at load.
//!
//! Priority when several rules match: **file order**. The first deciding rule (top to bottom)
//! whose conditions hold chooses the route; later deciding rules of the same route only add
//! evidence. The shipped `routing.yaml` orders its rules CODE > ANALYZE > OPS > RESEARCH > PLAN:
//! syntactic artefacts (diffs, traces, fenced code) are the most specific evidence, pasted data
//! together with an aggregation word beats a single command word, and keyword-only routes come
//! last, vaguest (PLAN) at the end.

use std::collections::HashSet;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::config::{DictionaryError, RoutingConfig};
use ghost_shared::masking::mask_secrets;
use ghost_shared::routing::Route;

/// Longest evidence fragment kept (in characters); longer matches are cut with `…`.
const MAX_FRAGMENT_CHARS: usize = 80;
/// Most evidence fragments reported for one decision.
const MAX_EVIDENCE: usize = 3;
/// Most fragments taken from one rule's `any` matches.
const MAX_FRAGMENTS_PER_RULE: usize = 2;

/// One rule as written in `routing.yaml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRule {
    name: String,
    route: String,
    #[serde(default)]
    description: Option<String>,
    any: Vec<String>,
    #[serde(default)]
    all: Vec<String>,
    #[serde(default)]
    none: Vec<String>,
    #[serde(default = "default_min_matches")]
    min_matches: usize,
    #[serde(default = "default_decides")]
    decides: bool,
}

fn default_min_matches() -> usize {
    1
}

fn default_decides() -> bool {
    true
}

/// A compiled rule.
#[derive(Debug, Clone)]
struct Rule {
    name: String,
    route: Route,
    description: Option<String>,
    any: Vec<Regex>,
    all: Vec<Regex>,
    none: Vec<Regex>,
    min_matches: usize,
    decides: bool,
}

impl Rule {
    /// Returns the evidence fragments if the rule holds for `text`.
    ///
    /// Holds when no `none` pattern matches, every `all` pattern matches, and the `any`
    /// patterns match at least `min_matches` times in total (so "4 CSV rows" is one pattern
    /// with `min_matches: 4`).
    fn evaluate(&self, text: &str) -> Option<Vec<String>> {
        if self.none.iter().any(|re| re.is_match(text)) {
            return None;
        }
        let mut all_fragments = Vec::with_capacity(self.all.len());
        for re in &self.all {
            all_fragments.push(re.find(text)?.as_str());
        }
        let mut count = 0usize;
        let mut fragments: Vec<&str> = Vec::new();
        'outer: for re in &self.any {
            for m in re.find_iter(text) {
                count += 1;
                if fragments.len() < MAX_FRAGMENTS_PER_RULE {
                    fragments.push(m.as_str());
                }
                if count >= self.min_matches && fragments.len() >= MAX_FRAGMENTS_PER_RULE {
                    break 'outer;
                }
            }
        }
        if count < self.min_matches {
            return None;
        }
        fragments.extend(all_fragments);
        Some(fragments.into_iter().filter_map(fragment).collect())
    }
}

/// Turns a matched span into a log-safe evidence fragment: trimmed, cut, secrets masked.
fn fragment(matched: &str) -> Option<String> {
    let trimmed = matched.trim();
    if trimmed.is_empty() {
        return None;
    }
    // Mask before cutting: a cut could leave a secret too short for its pattern.
    let masked = mask_secrets(trimmed);
    if masked.chars().count() > MAX_FRAGMENT_CHARS {
        let mut s: String = masked.chars().take(MAX_FRAGMENT_CHARS).collect();
        s.push('…');
        Some(s)
    } else {
        Some(masked.into_owned())
    }
}

/// A dictionary hit: the route and the fragments of the input that prove it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleMatch {
    /// The route the winning rule decides.
    pub route: Route,
    /// The winning rule's name (for the routing log and dictionary tuning).
    pub rule: String,
    /// Input fragments that matched (masked, at most 3).
    pub evidence: Vec<String>,
}

/// A read-only view of one rule (for listings such as an operator's `ghost` verb).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RuleInfo<'a> {
    /// The rule's unique name.
    pub name: &'a str,
    /// The route it decides or supports.
    pub route: Route,
    /// Its description, if the file gives one.
    pub description: Option<&'a str>,
    /// Whether it decides (`false`: listed only, a rule being tried out; never evidence).
    pub decides: bool,
}

/// The compiled rule dictionary (`rules:` of `routing.yaml`).
#[derive(Debug, Clone)]
pub struct RuleDictionary {
    rules: Vec<Rule>,
}

impl RuleDictionary {
    /// Loads the dictionary from a `routing.yaml` document (the `gates` and `loop` sections are
    /// validated too, so a file this accepts is a file [`RoutingConfig::from_yaml`] accepts).
    pub fn from_yaml(yaml: &str) -> Result<Self, DictionaryError> {
        RoutingConfig::from_yaml(yaml).map(|config| config.dictionary)
    }

    /// Compiles raw rules, rejecting bad regexes, unknown routes and malformed rules by name.
    pub(crate) fn compile(raw: Vec<RawRule>) -> Result<Self, DictionaryError> {
        let mut seen = HashSet::new();
        let mut rules = Vec::with_capacity(raw.len());
        for r in raw {
            if r.name.trim().is_empty() {
                return Err(DictionaryError::InvalidRule {
                    rule: r.name,
                    problem: "name must not be empty",
                });
            }
            if !seen.insert(r.name.clone()) {
                return Err(DictionaryError::DuplicateRule { rule: r.name });
            }
            let route = r
                .route
                .parse::<Route>()
                .map_err(|_| DictionaryError::UnknownRoute {
                    rule: r.name.clone(),
                    route: r.route.clone(),
                })?;
            if r.any.is_empty() {
                return Err(DictionaryError::NoPatterns { rule: r.name });
            }
            if r.min_matches == 0 {
                return Err(DictionaryError::InvalidRule {
                    rule: r.name,
                    problem: "min_matches must be at least 1",
                });
            }
            rules.push(Rule {
                route,
                any: compile_all(&r.name, &r.any)?,
                all: compile_all(&r.name, &r.all)?,
                none: compile_all(&r.name, &r.none)?,
                min_matches: r.min_matches,
                decides: r.decides,
                description: r.description,
                name: r.name,
            });
        }
        Ok(Self { rules })
    }

    /// The rules in priority (file) order, for operator listings.
    pub fn rules(&self) -> impl Iterator<Item = RuleInfo<'_>> {
        self.rules.iter().map(|r| RuleInfo {
            name: &r.name,
            route: r.route,
            description: r.description.as_deref(),
            decides: r.decides,
        })
    }

    /// Number of rules (deciding and supporting).
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether the dictionary has no rules (then every message goes to the classifier).
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Finds the route with strong evidence in `text`, if any (first deciding rule in file
    /// order wins; see the module documentation).
    pub fn classify(&self, text: &str) -> Option<RuleMatch> {
        let mut deciding = self.rules.iter().filter(|r| r.decides);
        let (winner, mut evidence) = deciding
            .by_ref()
            .find_map(|rule| rule.evaluate(text).map(|ev| (rule, ev)))?;
        // Later deciding rules of the same route corroborate; others are ignored (the
        // winner's route is final).
        for rule in deciding.filter(|r| r.route == winner.route) {
            if evidence.len() >= MAX_EVIDENCE {
                break;
            }
            if let Some(more) = rule.evaluate(text) {
                push_unique(&mut evidence, more);
            }
        }
        evidence.truncate(MAX_EVIDENCE);
        tracing::debug!(rule = %winner.name, route = %winner.route, "rule dictionary hit");
        Some(RuleMatch {
            route: winner.route,
            rule: winner.name.clone(),
            evidence,
        })
    }

    /// The strong evidence for `route` in `text`: what its deciding rules find. Used to
    /// re-check a classifier's, Kuro's or a reroute's CODE (seed 002: 0.8 and above *plus
    /// strong evidence re-checked*). Supporting rules (`decides: false`) never count: they
    /// are the weak evidence the dictionary itself will not route on, so they cannot make
    /// a model's CODE safe either.
    pub fn evidence_for(&self, route: Route, text: &str) -> Vec<String> {
        let mut evidence = Vec::new();
        for rule in self.rules.iter().filter(|r| r.route == route && r.decides) {
            if evidence.len() >= MAX_EVIDENCE {
                break;
            }
            if let Some(more) = rule.evaluate(text) {
                push_unique(&mut evidence, more);
            }
        }
        evidence.truncate(MAX_EVIDENCE);
        evidence
    }
}

fn push_unique(into: &mut Vec<String>, more: Vec<String>) {
    for item in more {
        if !into.contains(&item) {
            into.push(item);
        }
    }
}

fn compile_all(rule: &str, patterns: &[String]) -> Result<Vec<Regex>, DictionaryError> {
    patterns
        .iter()
        .map(|pattern| {
            let re = Regex::new(pattern).map_err(|source| DictionaryError::BadRegex {
                rule: rule.to_owned(),
                pattern: pattern.clone(),
                source: Box::new(source),
            })?;
            if re.is_match("") {
                return Err(DictionaryError::EmptyMatch {
                    rule: rule.to_owned(),
                    pattern: pattern.clone(),
                });
            }
            Ok(re)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routing::test_support::shipped_dictionary;

    fn dict(yaml: &str) -> RuleDictionary {
        RuleDictionary::from_yaml(yaml).unwrap()
    }

    #[test]
    fn bad_regex_is_a_typed_error_naming_the_rule() {
        let err = RuleDictionary::from_yaml(
            "rules:\n  - name: broken\n    route: CODE\n    any: ['(']\n",
        )
        .unwrap_err();
        assert!(
            matches!(err, DictionaryError::BadRegex { ref rule, ref pattern, .. } if rule == "broken" && pattern == "("),
            "{err}"
        );
        assert!(err.to_string().contains("broken"));
    }

    #[test]
    fn unknown_route_is_a_typed_error_naming_the_rule() {
        let err = RuleDictionary::from_yaml(
            "rules:\n  - name: dance\n    route: DANCE\n    any: ['x']\n",
        )
        .unwrap_err();
        assert!(
            matches!(err, DictionaryError::UnknownRoute { ref rule, ref route } if rule == "dance" && route == "DANCE")
        );
    }

    #[test]
    fn unknown_rule_keys_are_rejected() {
        let err = RuleDictionary::from_yaml(
            "rules:\n  - name: r\n    route: CODE\n    any: ['x']\n    priority: 3\n",
        )
        .unwrap_err();
        assert!(
            matches!(err, DictionaryError::Yaml(ref m) if m.contains("priority")),
            "{err}"
        );
    }

    #[test]
    fn malformed_rules_are_rejected() {
        let empty_any =
            RuleDictionary::from_yaml("rules:\n  - name: r\n    route: CODE\n    any: []\n");
        assert!(matches!(empty_any, Err(DictionaryError::NoPatterns { ref rule }) if rule == "r"));
        let dup = RuleDictionary::from_yaml(
            "rules:\n  - {name: r, route: CODE, any: ['x']}\n  - {name: r, route: OPS, any: ['y']}\n",
        );
        assert!(matches!(dup, Err(DictionaryError::DuplicateRule { ref rule }) if rule == "r"));
        let empty_match =
            RuleDictionary::from_yaml("rules:\n  - {name: e, route: CODE, any: ['x*']}\n");
        assert!(
            matches!(empty_match, Err(DictionaryError::EmptyMatch { ref rule, .. }) if rule == "e")
        );
        let zero = RuleDictionary::from_yaml(
            "rules:\n  - {name: z, route: CODE, any: ['x'], min_matches: 0}\n",
        );
        assert!(matches!(zero, Err(DictionaryError::InvalidRule { ref rule, .. }) if rule == "z"));
    }

    #[test]
    fn first_deciding_rule_in_file_order_wins() {
        let d = dict(
            "rules:\n  - {name: a, route: OPS, any: ['nginx']}\n  - {name: b, route: CODE, any: ['nginx']}\n",
        );
        let hit = d.classify("nginx が落ちた").unwrap();
        assert_eq!(hit.route, Route::Ops);
        assert_eq!(hit.rule, "a");
        assert_eq!(hit.evidence, vec!["nginx".to_owned()]);
    }

    #[test]
    fn all_none_and_min_matches_conditions_hold() {
        let d = dict(
            "rules:\n  - name: csv\n    route: ANALYZE\n    all: ['集計']\n    none: ['```']\n    any: ['(?m)^[^,\\n]+(?:,[^,\\n]*)+$']\n    min_matches: 3\n",
        );
        assert!(d.classify("集計して\na,1\nb,2\nc,3").is_some());
        assert!(d.classify("集計して\na,1\nb,2").is_none(), "too few rows");
        assert!(d.classify("a,1\nb,2\nc,3").is_none(), "no aggregation word");
        assert!(
            d.classify("集計して\n```\na,1\nb,2\nc,3").is_none(),
            "excluded"
        );
        let hit = d.classify("集計して\na,1\nb,2\nc,3").unwrap();
        assert_eq!(hit.evidence, vec!["a,1", "b,2", "集計"]);
    }

    #[test]
    fn rules_are_listed_in_priority_order() {
        let d = dict(
            "rules:\n  - {name: a, route: OPS, any: ['x'], description: first}\n  - {name: b, route: CODE, any: ['y'], decides: false}\n",
        );
        let listed: Vec<RuleInfo<'_>> = d.rules().collect();
        assert_eq!(listed.len(), 2);
        assert_eq!(
            (
                listed[0].name,
                listed[0].route,
                listed[0].description,
                listed[0].decides
            ),
            ("a", Route::Ops, Some("first"), true)
        );
        assert_eq!((listed[1].name, listed[1].decides), ("b", false));
    }

    #[test]
    fn supporting_rules_neither_decide_nor_count_as_evidence() {
        let d = dict("rules:\n  - {name: hint, route: CODE, any: ['関数'], decides: false}\n  - {name: trace, route: CODE, any: ['panicked at']}\n");
        assert_eq!(d.classify("関数を書いて"), None);
        assert!(d.evidence_for(Route::Code, "関数を書いて").is_empty());
        assert_eq!(
            d.evidence_for(Route::Code, "関数が panicked at main"),
            vec!["panicked at"]
        );
        assert!(d.evidence_for(Route::Ops, "関数を書いて").is_empty());
    }

    #[test]
    fn evidence_is_cut_and_masked() {
        let d = dict("rules:\n  - {name: url, route: RESEARCH, any: ['https?://\\S+']}\n");
        let long = format!("https://example.com/{}", "a".repeat(200));
        let hit = d.classify(&long).unwrap();
        assert_eq!(hit.evidence[0].chars().count(), MAX_FRAGMENT_CHARS + 1);
        let hit = d.classify("https://user:hunter2@example.com/x").unwrap();
        assert!(!hit.evidence[0].contains("hunter2"), "{:?}", hit.evidence);
    }

    #[test]
    fn shipped_dictionary_routes_strong_evidence() {
        let d = shipped_dictionary();
        let cases: &[(&str, Route)] = &[
            ("```rust\nfn main() {}\n```\nこれ直して", Route::Code),
            ("```\ndef f(x):\n    return x\n```\nどう?", Route::Code),
            ("diff --git a/src/main.rs b/src/main.rs\n@@ -1,3 +1,4 @@\n-a\n+b", Route::Code),
            ("Traceback (most recent call last):\n  File \"a.py\", line 1", Route::Code),
            ("thread 'main' panicked at src/main.rs:3:5:\nindex out of bounds", Route::Code),
            ("Exception in thread \"main\" java.lang.NullPointerException\n\tat com.example.App.main(App.java:5)", Route::Code),
            ("error[E0382]: borrow of moved value: `v`", Route::Code),
            ("main.rsのこの関数を直して", Route::Code),
            ("please fix the bug in src/lib.rs", Route::Code),
            ("sudo systemctl restart nginx が失敗する", Route::Ops),
            ("docker compose up でコンテナが起動しない", Route::Ops),
            ("kubectl get pods が Pending のまま", Route::Ops),
            ("ssh ren@example.com で接続できない", Route::Ops),
            ("```bash\nsudo journalctl -u nginx\n```\nこれ見て", Route::Ops),
            ("/etc/nginx/nginx.conf の設定を確認したい", Route::Ops),
            ("このCSVを集計して\nname,score\nA,1\nB,2\nC,3\nD,4", Route::Analyze),
            ("このログのエラーの件数を集計して\n2026-02-20 10:00:01 ERROR a\n2026-02-20 10:00:02 ERROR b\n2026-02-20 10:00:03 INFO c", Route::Analyze),
            ("summarize the trend: count per name\nname,score\nA,1\nB,2\nC,3", Route::Analyze),
            ("https://example.com/news の記事を調べて出典と比較して", Route::Research),
            ("RustとGoを比較して", Route::Research),
            ("Rustの最新バージョンは?", Route::Research),
            ("what is the latest version of tokio", Route::Research),
            ("新サービスの設計とタスク分解を手伝って", Route::Plan),
            ("引っ越しの段取りを考えたい", Route::Plan),
            ("help me write a design doc and roadmap", Route::Plan),
        ];
        for (text, route) in cases {
            let hit = d.classify(text);
            assert_eq!(
                hit.as_ref().map(|h| h.route),
                Some(*route),
                "{text:?} -> {hit:?}"
            );
            assert!(hit.is_some_and(|h| !h.evidence.is_empty()), "{text:?}");
        }
    }

    #[test]
    fn shipped_dictionary_leaves_weak_input_to_the_classifier() {
        let d = shipped_dictionary();
        for text in [
            "「/code」って書いてみて",
            "最近ちょっと疲れてるんだよね",
            "ちょっと手伝ってほしい",
            "どうしよう",
            "うーん",
            "ねえ",
            "あのさ",
            "えっと",
            "nginxが落ちた",
            "Node.jsの勉強を始めたい",
            "Dockerって何?",
            "fizzbuzzをRustで書いて",
            "これって仕様?",
            "",
        ] {
            assert_eq!(d.classify(text), None, "{text:?}");
        }
    }

    #[test]
    fn shipped_dictionary_gives_the_code_gate_strong_evidence_only() {
        let d = shipped_dictionary();
        // Seed 002: a coding request without an artefact is not strong evidence.
        for weak in [
            "fizzbuzzをRustで書いて",
            "write a function that parses dates",
            "ちょっと手伝ってほしい",
            "「/code」って書いてみて",
        ] {
            assert!(d.evidence_for(Route::Code, weak).is_empty(), "{weak:?}");
        }
        assert!(!d
            .evidence_for(Route::Code, "これ直して\n```python\nprint(1/0)\n```")
            .is_empty());
        assert!(!d
            .evidence_for(Route::Code, "main.rs のバグを直して")
            .is_empty());
    }

    #[test]
    fn shipped_priority_prefers_code_then_analyze_then_ops() {
        let d = shipped_dictionary();
        let both = "Traceback (most recent call last):\n  File \"x.py\", line 1\nsudo systemctl restart app";
        assert_eq!(d.classify(both).map(|h| h.route), Some(Route::Code));
        let logs = "このログを集計して\n2026-02-20 10:00:01 ERROR systemd[1]: a\n2026-02-20 10:00:02 ERROR systemd[1]: b\n2026-02-20 10:00:03 ERROR systemd[1]: c";
        assert_eq!(d.classify(logs).map(|h| h.route), Some(Route::Analyze));
        let plan_and_research = "最新のフレームワークを比較して設計したい";
        assert_eq!(
            d.classify(plan_and_research).map(|h| h.route),
            Some(Route::Research)
        );
    }
}

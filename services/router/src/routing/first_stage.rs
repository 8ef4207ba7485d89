//! The first stage of routing: explicit command > rule dictionary > "ask the classifier".

use serde::{Deserialize, Serialize};

use super::command::{parse_commands, Command};
use super::config::GateConfig;
use super::decision::{adopt_raw, call_failed, RouteDecision};
use super::declaration::declaration;
use super::rules::RuleDictionary;
use ghost_shared::routing::{DecisionOrigin, Notice};
use ghost_shared::routing::{Route, RouteSource};

/// The routing part of a session's state (kept by the router's session projection).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRouting {
    /// Set by `/local`, cleared by `/cloud`: no cloud call while set.
    pub local_only: bool,
    /// The primary route of the previous routed user message (for declarations).
    pub last_primary_route: Option<Route>,
}

impl SessionRouting {
    /// Records a finished message: adopts the message's `local_only` flag and, when the
    /// message was routed, its primary route; returns the one-line declaration to show before
    /// the reply, if the route changed. Flag-only messages (`/local`, `/cloud` alone) pass
    /// `None` and leave the last primary route untouched, so toggling the flag between two
    /// PLAN messages does not re-announce PLAN.
    pub fn record(
        &mut self,
        stage: &FirstStage<'_>,
        primary: Option<Route>,
    ) -> Option<&'static str> {
        self.local_only = stage.local_only;
        let route = primary?;
        let line = declaration(self.last_primary_route, route);
        self.last_primary_route = Some(route);
        line
    }
}

/// How a channel's messages enter routing (decided per channel; see seeds/README.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryMode {
    /// Front router: command > rule dictionary > classifier > safe default.
    Router,
    /// Kuro: command, else CHAT (`line_forced_chat`); the persona decides on delegation.
    Kuro,
}

impl EntryMode {
    /// The default mode of a channel: `kuro` for LINE, `router` for Slack, HTTP and others.
    pub fn default_for_channel(channel: &str) -> Self {
        if channel.eq_ignore_ascii_case("line") {
            EntryMode::Kuro
        } else {
            EntryMode::Router
        }
    }
}

/// What the first stage concluded.
#[derive(Debug, Clone, PartialEq)]
pub enum FirstOutcome {
    /// The message was only `/local` or `/cloud`: the flag changed, nothing else to route.
    /// The persona acknowledges briefly (as CHAT, without a declaration).
    FlagOnly(Command),
    /// Routed without the classifier (command, rule, empty text, or kuro entry), gates applied.
    Decided(RouteDecision),
    /// No strong evidence: ask the classifier once, then call [`FirstStage::with_classifier_reply`].
    ClassifierNeeded,
}

/// The first stage's result for one message.
#[derive(Debug, Clone, PartialEq)]
pub struct FirstStage<'a> {
    /// `/local` or `/cloud` if the message started with one.
    pub flag: Option<Command>,
    /// The session's `local_only` flag after this message's flag command.
    pub local_only: bool,
    /// The text to work on: the message without its leading commands (trimmed).
    pub text: &'a str,
    /// The conclusion.
    pub outcome: FirstOutcome,
}

impl FirstStage<'_> {
    /// Completes a `ClassifierNeeded` stage with the classifier's raw reply (validation and
    /// every gate). On any other outcome returns the decision already made (or CHAT/default
    /// for a flag-only message) and ignores the reply.
    pub fn with_classifier_reply(
        &self,
        raw: &str,
        dict: &RuleDictionary,
        gates: &GateConfig,
    ) -> RouteDecision {
        match &self.outcome {
            FirstOutcome::ClassifierNeeded => adopt_raw(
                raw,
                DecisionOrigin::Classifier,
                self.text,
                self.local_only,
                dict,
                gates,
            ),
            _ => self.settled(),
        }
    }

    /// Completes a `ClassifierNeeded` stage when the classifier call itself failed: CHAT.
    pub fn with_classifier_failure(&self, detail: &str) -> RouteDecision {
        match &self.outcome {
            FirstOutcome::ClassifierNeeded => call_failed(DecisionOrigin::Classifier, detail),
            _ => self.settled(),
        }
    }

    /// Validates Kuro's delegation decision for this message (kuro entry mode) with the same
    /// parser and gates as the classifier. Only a message that entered as
    /// `line_forced_chat` can be delegated: an explicit command (including `/chat`), an empty
    /// or flag-only message keeps its settled decision.
    pub fn with_kuro_decision(
        &self,
        raw: &str,
        dict: &RuleDictionary,
        gates: &GateConfig,
    ) -> RouteDecision {
        let entered_as_chat = matches!(
            &self.outcome,
            FirstOutcome::Decided(d) if d.source == RouteSource::LineForcedChat
        );
        if !entered_as_chat {
            return self.settled();
        }
        adopt_raw(
            raw,
            DecisionOrigin::Kuro,
            self.text,
            self.local_only,
            dict,
            gates,
        )
    }

    /// The decision for outcomes that need no model.
    fn settled(&self) -> RouteDecision {
        match &self.outcome {
            FirstOutcome::Decided(decision) => decision.clone(),
            FirstOutcome::FlagOnly(_) | FirstOutcome::ClassifierNeeded => {
                RouteDecision::new(Route::Chat, RouteSource::Default, Vec::new())
            }
        }
    }

    /// Whether the classifier must be called for this message.
    pub fn needs_classifier(&self) -> bool {
        matches!(self.outcome, FirstOutcome::ClassifierNeeded)
    }
}

/// Router-mode first stage: command > rule > `ClassifierNeeded`.
pub fn first_stage<'a>(
    text: &'a str,
    session: &SessionRouting,
    dict: &RuleDictionary,
) -> FirstStage<'a> {
    first_stage_in(EntryMode::Router, text, session, dict)
}

/// First stage in the given entry mode. In both modes commands come first and the
/// `local_only` gate applies; `/local`/`/cloud` followed by text change the flag and route the
/// text under the new flag. Empty text (after the commands) is CHAT/default without asking
/// anyone; a route command with empty text still takes its route (the worker asks).
pub fn first_stage_in<'a>(
    mode: EntryMode,
    text: &'a str,
    session: &SessionRouting,
    dict: &RuleDictionary,
) -> FirstStage<'a> {
    let parsed = parse_commands(text);
    let local_only = match parsed.flag {
        Some(Command::Local) => true,
        Some(Command::Cloud) => false,
        _ => session.local_only,
    };
    let stage = |outcome| FirstStage {
        flag: parsed.flag,
        local_only,
        text: parsed.text,
        outcome,
    };
    if let Some(route) = parsed.route {
        let mut evidence: Vec<String> = parsed
            .flag
            .map(|f| f.as_str().to_owned())
            .into_iter()
            .collect();
        evidence.push(Command::Route(route).as_str().to_owned());
        let decision =
            RouteDecision::new(route, RouteSource::Explicit, evidence).gate_local_only(local_only);
        return stage(FirstOutcome::Decided(decision));
    }
    if parsed.text.is_empty() {
        return match parsed.flag {
            Some(flag) => stage(FirstOutcome::FlagOnly(flag)),
            None => stage(FirstOutcome::Decided(RouteDecision::new(
                Route::Chat,
                RouteSource::Default,
                Vec::new(),
            ))),
        };
    }
    if mode == EntryMode::Kuro {
        tracing::debug!("line_forced_chat: entering as CHAT, Kuro decides on delegation");
        return stage(FirstOutcome::Decided(RouteDecision::new(
            Route::Chat,
            RouteSource::LineForcedChat,
            Vec::new(),
        )));
    }
    match dict.classify(parsed.text) {
        Some(hit) => {
            let decision = RouteDecision::new(hit.route, RouteSource::Rule, hit.evidence)
                .gate_local_only(local_only);
            stage(FirstOutcome::Decided(decision))
        }
        None => stage(FirstOutcome::ClassifierNeeded),
    }
}

/// `source` as printed by the `ghost route` probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeSource {
    /// An explicit command decided (flag-only messages included).
    Explicit,
    /// The rule dictionary decided.
    Rule,
    /// The classifier would be asked; `route` shows the safe default until it answers.
    ClassifierNeeded,
    /// Empty text: CHAT without asking anyone.
    Default,
}

/// Output of `ghost route [--local-only] <text>`: the first stage only, no model call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProbeOutput {
    /// The route (CHAT — the safe default — when the classifier would be needed).
    pub route: Route,
    /// What decided it.
    pub source: ProbeSource,
    /// The command word or the rule's evidence fragments.
    pub evidence: Vec<String>,
    /// Set when a gate changed the route (CODE while `local_only`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notice: Option<Notice>,
}

/// Runs the router-mode first stage for the probe.
pub fn probe(text: &str, local_only: bool, dict: &RuleDictionary) -> ProbeOutput {
    let session = SessionRouting {
        local_only,
        last_primary_route: None,
    };
    let stage = first_stage(text, &session, dict);
    match stage.outcome {
        FirstOutcome::FlagOnly(flag) => ProbeOutput {
            route: Route::Chat,
            source: ProbeSource::Explicit,
            evidence: vec![flag.as_str().to_owned()],
            notice: None,
        },
        FirstOutcome::Decided(d) => ProbeOutput {
            route: d.route,
            source: match d.source {
                RouteSource::Explicit => ProbeSource::Explicit,
                RouteSource::Rule => ProbeSource::Rule,
                _ => ProbeSource::Default,
            },
            evidence: d.evidence,
            notice: d.notice,
        },
        FirstOutcome::ClassifierNeeded => ProbeOutput {
            route: Route::Chat,
            source: ProbeSource::ClassifierNeeded,
            evidence: Vec::new(),
            notice: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routing::test_support::shipped_dictionary;

    fn run<'a>(text: &'a str, session: &SessionRouting) -> FirstStage<'a> {
        first_stage(text, session, &shipped_dictionary())
    }

    fn decided(stage: &FirstStage<'_>) -> RouteDecision {
        match &stage.outcome {
            FirstOutcome::Decided(d) => d.clone(),
            other => panic!("expected a decision, got {other:?}"),
        }
    }

    #[test]
    fn command_beats_rule() {
        let stage = run(
            "/chat ```rust\nfn main(){}\n```",
            &SessionRouting::default(),
        );
        let d = decided(&stage);
        assert_eq!((d.route, d.source), (Route::Chat, RouteSource::Explicit));
        assert_eq!(d.evidence, vec!["/chat"]);
    }

    #[test]
    fn rule_beats_classifier() {
        let stage = run(
            "sudo systemctl restart nginx が失敗する",
            &SessionRouting::default(),
        );
        let d = decided(&stage);
        assert_eq!((d.route, d.source), (Route::Ops, RouteSource::Rule));
    }

    #[test]
    fn no_evidence_needs_the_classifier() {
        let stage = run("ねえ", &SessionRouting::default());
        assert!(stage.needs_classifier());
        assert_eq!(stage.text, "ねえ");
    }

    #[test]
    fn local_alone_only_changes_the_flag() {
        let stage = run("/local", &SessionRouting::default());
        assert_eq!(stage.outcome, FirstOutcome::FlagOnly(Command::Local));
        assert!(stage.local_only);
        let stage = run(
            " /cloud ",
            &SessionRouting {
                local_only: true,
                last_primary_route: None,
            },
        );
        assert_eq!(stage.outcome, FirstOutcome::FlagOnly(Command::Cloud));
        assert!(!stage.local_only);
    }

    #[test]
    fn local_with_text_sets_the_flag_and_routes_the_text() {
        let stage = run(
            "/local 新サービスの設計をしたい",
            &SessionRouting::default(),
        );
        assert!(stage.local_only);
        assert_eq!(stage.text, "新サービスの設計をしたい");
        assert_eq!(decided(&stage).route, Route::Plan);
        let stage = run(
            "/local ```rust\nfn main(){}\n```",
            &SessionRouting::default(),
        );
        let d = decided(&stage);
        assert_eq!(d.route, Route::Chat);
        assert_eq!(d.notice, Some(Notice::CloudRequired));
    }

    #[test]
    fn cloud_with_code_command_runs_code() {
        let locked = SessionRouting {
            local_only: true,
            last_primary_route: None,
        };
        let stage = run("/cloud /code 直して", &locked);
        assert!(!stage.local_only);
        assert_eq!(decided(&stage).route, Route::Code);
    }

    #[test]
    fn code_command_while_local_only_is_blocked() {
        let locked = SessionRouting {
            local_only: true,
            last_primary_route: None,
        };
        let d = decided(&run("/code 直して", &locked));
        assert_eq!((d.route, d.source), (Route::Chat, RouteSource::Explicit));
        assert_eq!(d.proposed, Some(Route::Code));
        assert_eq!(d.notice, Some(Notice::CloudRequired));
    }

    #[test]
    fn empty_text_is_chat_default() {
        let d = decided(&run("   ", &SessionRouting::default()));
        assert_eq!((d.route, d.source), (Route::Chat, RouteSource::Default));
    }

    #[test]
    fn kuro_mode_enters_as_chat_but_honours_commands() {
        let dict = shipped_dictionary();
        let s = SessionRouting::default();
        let stage = first_stage_in(EntryMode::Kuro, "sudo systemctl restart nginx", &s, &dict);
        let d = decided(&stage);
        assert_eq!(
            (d.route, d.source),
            (Route::Chat, RouteSource::LineForcedChat)
        );
        let stage = first_stage_in(EntryMode::Kuro, "/ops nginx", &s, &dict);
        assert_eq!(decided(&stage).route, Route::Ops);
        let stage = first_stage_in(EntryMode::Kuro, "/local", &s, &dict);
        assert_eq!(stage.outcome, FirstOutcome::FlagOnly(Command::Local));
    }

    #[test]
    fn kuro_delegation_passes_the_same_gates() {
        let dict = shipped_dictionary();
        let gates = GateConfig::default();
        let locked = SessionRouting {
            local_only: true,
            last_primary_route: None,
        };
        let stage = first_stage_in(EntryMode::Kuro, "main.rsのバグを直して", &locked, &dict);
        let d = stage.with_kuro_decision(r#"{"route":"CODE","confidence":0.9}"#, &dict, &gates);
        assert_eq!((d.route, d.source), (Route::Chat, RouteSource::Kuro));
        assert_eq!(d.notice, Some(Notice::CloudRequired));
        let d = stage.with_kuro_decision(r#"{"route":"PLAN","confidence":0.3}"#, &dict, &gates);
        assert_eq!(d.route, Route::Chat);
        let d = stage.with_kuro_decision("nope", &dict, &gates);
        assert_eq!(d.source, RouteSource::KuroFailed);
        let open = SessionRouting::default();
        let stage = first_stage_in(EntryMode::Kuro, "/chat 話そう", &open, &dict);
        let d = stage.with_kuro_decision(r#"{"route":"PLAN","confidence":0.9}"#, &dict, &gates);
        assert_eq!(
            (d.route, d.source),
            (Route::Chat, RouteSource::Explicit),
            "explicit wins"
        );
        let stage = first_stage_in(EntryMode::Kuro, "引っ越しどうしよう", &open, &dict);
        let d = stage.with_kuro_decision(r#"{"route":"PLAN","confidence":0.9}"#, &dict, &gates);
        assert_eq!((d.route, d.source), (Route::Plan, RouteSource::Kuro));
    }

    #[test]
    fn entry_mode_defaults_per_channel() {
        assert_eq!(EntryMode::default_for_channel("line"), EntryMode::Kuro);
        assert_eq!(EntryMode::default_for_channel("LINE"), EntryMode::Kuro);
        assert_eq!(EntryMode::default_for_channel("slack"), EntryMode::Router);
        assert_eq!(EntryMode::default_for_channel("http"), EntryMode::Router);
    }

    #[test]
    fn classifier_reply_is_ignored_once_decided() {
        let dict = shipped_dictionary();
        let stage = run("/plan x", &SessionRouting::default());
        let d = stage.with_classifier_reply(
            r#"{"route":"OPS","confidence":1}"#,
            &dict,
            &GateConfig::default(),
        );
        assert_eq!(d.route, Route::Plan);
        let stage = run("ねえ", &SessionRouting::default());
        let d = stage.with_classifier_failure("timeout");
        assert_eq!(
            (d.route, d.source),
            (Route::Chat, RouteSource::ClassifierFailed)
        );
    }

    #[test]
    fn session_records_route_and_declares_changes() {
        let dict = shipped_dictionary();
        let mut session = SessionRouting::default();
        let stage = first_stage("/plan 引っ越し", &session, &dict);
        assert_eq!(
            session.record(&stage, Some(Route::Plan)),
            Some("段取りを組むね。")
        );
        let stage = first_stage("/plan 続き", &session, &dict);
        assert_eq!(session.record(&stage, Some(Route::Plan)), None);
        let stage = first_stage("/local", &session, &dict);
        assert_eq!(session.record(&stage, None), None);
        assert!(session.local_only);
        assert_eq!(session.last_primary_route, Some(Route::Plan));
        let stage = first_stage("/plan まだ続き", &session, &dict);
        assert_eq!(
            session.record(&stage, Some(Route::Plan)),
            None,
            "flag toggle does not re-declare"
        );
        assert!(session.local_only, "the flag persists");
    }

    #[test]
    fn probe_prints_the_documented_shape() {
        let dict = shipped_dictionary();
        let json = |p: ProbeOutput| serde_json::to_value(p).unwrap();
        let out = json(probe("/code fizzbuzz", false, &dict));
        assert_eq!(
            out,
            serde_json::json!({"route":"CODE","source":"explicit","evidence":["/code"]})
        );
        let out = json(probe("ねえ", false, &dict));
        assert_eq!(
            out,
            serde_json::json!({"route":"CHAT","source":"classifier_needed","evidence":[]})
        );
        let out = json(probe("sudo systemctl restart nginx", false, &dict));
        assert_eq!(out["source"], "rule");
        assert_eq!(out["route"], "OPS");
        let out = json(probe("/code x", true, &dict));
        assert_eq!(out["route"], "CHAT");
        assert_eq!(out["notice"], "cloud_required");
        let out = json(probe("/local", false, &dict));
        assert_eq!(
            out,
            serde_json::json!({"route":"CHAT","source":"explicit","evidence":["/local"]})
        );
    }
}

//! Routing for the router service (seed 002), as pure functions.
//!
//! Flow for one user message in router mode:
//! 1. [`first_stage`]: explicit command > rule dictionary > `ClassifierNeeded`
//!    (gates such as `local_only` already applied).
//! 2. If needed, the classifier is called once (by the caller) and its raw reply goes to
//!    [`FirstStage::with_classifier_reply`]: validation, thresholds, CODE guard, `local_only`.
//! 3. [`SessionRouting::record`] stores the primary route and returns the declaration line.
//! 4. After each worker run, [`parse_worker_output`] and [`decide_next`] pick the next step;
//!    before the reply the persona may propose one ([`parse_proposal`], [`decide_on_proposal`]).
//!
//! Kuro entry mode ([`EntryMode::Kuro`]) replaces steps 1–2 with: command, else CHAT
//! (`line_forced_chat`); Kuro's delegation decision goes through
//! [`FirstStage::with_kuro_decision`] with the same validation and gates.
//! [`ghost_shared::masking::mask_secrets`] cleans text before it is logged or sent to the
//! cloud.

pub mod classifier;
pub mod command;
pub mod config;
pub mod decision;
pub mod declaration;
pub mod first_stage;
pub mod loop_control;
pub mod proposal;
pub mod reply;
pub mod rules;
pub mod worker;

pub use classifier::{parse_classifier_output, ClassifierError, ClassifierVerdict};
pub use command::{parse_command, parse_commands, Command, ParsedCommands};
pub use config::{DictionaryError, GateConfig, LoopPolicy, RoutingConfig};
pub use decision::{adopt, adopt_raw, call_failed, Fallback, RouteDecision};
pub use declaration::{declaration, declaration_text};
pub use first_stage::{
    first_stage, first_stage_in, probe, EntryMode, FirstOutcome, FirstStage, ProbeOutput,
    ProbeSource, SessionRouting,
};
pub use ghost_shared::routing::{DecisionOrigin, Notice, Route, RouteSource, UnknownRoute};
pub use loop_control::{
    decide_next, decide_on_proposal, reroute_allowed, LoopDecision, LoopState, WorkerOutcome,
};
pub use proposal::{parse_proposal, PersonaVerdict, ProposalError, ProposedStep};
pub use reply::json_payload;
pub use rules::{RuleDictionary, RuleInfo, RuleMatch};
pub use worker::{cited_sources, parse_worker_output, ContractError, Risk, WorkerResult};

/// Helpers shared by the unit tests.
#[cfg(test)]
pub(crate) mod test_support {
    use super::RuleDictionary;

    /// The shipped `config/routing.yaml` of the repository.
    pub(crate) fn shipped_yaml() -> String {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../config/routing.yaml");
        std::fs::read_to_string(path).unwrap_or_default()
    }

    /// The shipped dictionary, compiled.
    pub(crate) fn shipped_dictionary() -> RuleDictionary {
        match RuleDictionary::from_yaml(&shipped_yaml()) {
            Ok(dict) => dict,
            Err(err) => panic!("shipped routing.yaml does not load: {err}"),
        }
    }
}

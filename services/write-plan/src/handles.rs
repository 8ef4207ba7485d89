//! Short names for the ids a plan may cite. The model sees `e0` for the utterance, `e1`,
//! `e2`, ... for the other events of its input and `s1`, `s2`, ... for the states it holds,
//! and writes them back: a stored id costs a small model some thirty tokens to copy, a
//! handle two, and a plan that cites six ids would otherwise spend its budget on them.
//! The handles are translated back before the plan is validated, so the rules see the
//! stored ids; a handle the input did not offer stays as written and is refused there. A
//! goal target refers to a task as `goal_id:<state>`: `goal_id:s1` to the model.

use std::collections::HashMap;

use ghost_shared::contracts::write_plan::PlanIds;
use ghost_shared::memory::model::{goal_ref_text, GOAL_PREFIX};
use ghost_shared::memory::vocab::TargetType;
use ghost_shared::memory::WritePlan;
use serde_json::Value;

/// The handles of one plan's input, both ways.
#[derive(Debug, Clone, Default)]
pub struct Handles {
    to_handle: HashMap<String, String>,
    to_id: HashMap<String, String>,
}

impl Handles {
    /// Handles for `ids`: `e0` the utterance, `e1`.. its other events, `s1`.. its states.
    pub fn of(ids: &PlanIds) -> Self {
        let mut h = Handles::default();
        h.add(&ids.current, "e0".to_owned());
        for (i, id) in ids.events.iter().enumerate() {
            h.add(id, format!("e{}", i + 1));
        }
        for (i, id) in ids.states.iter().enumerate() {
            h.add(id, format!("s{}", i + 1));
        }
        h
    }

    fn add(&mut self, id: &str, handle: String) {
        if self.to_handle.contains_key(id) {
            return;
        }
        self.to_id.insert(handle.clone(), id.to_owned());
        self.to_handle.insert(id.to_owned(), handle);
    }

    /// The same ids, named by their handles (what the plan's schema allows).
    pub fn named(&self, ids: &PlanIds) -> PlanIds {
        let name = |id: &String| {
            self.to_handle
                .get(id)
                .cloned()
                .unwrap_or_else(|| id.clone())
        };
        PlanIds {
            current: name(&ids.current),
            events: ids.events.iter().map(name).collect(),
            states: ids.states.iter().map(name).collect(),
        }
    }

    /// `input` with every string that is one of the ids replaced by its handle (a goal
    /// reference `goal_id:<state>` too).
    pub fn hide(&self, input: &mut Value) {
        match input {
            Value::String(s) => {
                if let Some(h) = self.to_handle.get(s.as_str()) {
                    *s = h.clone();
                } else if let Some(h) = goal_ref_text(s).and_then(|id| self.to_handle.get(id)) {
                    *s = format!("{GOAL_PREFIX}{h}");
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.hide(v)),
            Value::Object(map) => map.values_mut().for_each(|v| self.hide(v)),
            _ => {}
        }
    }

    fn reveal(&self, id: &mut String) {
        if let Some(stored) = self.to_id.get(id.as_str()) {
            *id = stored.clone();
        }
    }

    /// `plan` with the handles it cites turned back into the stored ids.
    pub fn reveal_in(&self, mut plan: WritePlan) -> WritePlan {
        for u in &mut plan.state_updates {
            u.evidence_event_ids
                .iter_mut()
                .for_each(|id| self.reveal(id));
            if let Some(id) = u.state_id.as_mut() {
                self.reveal(id);
            }
        }
        for u in &mut plan.preference_updates {
            u.evidence_event_ids
                .iter_mut()
                .for_each(|id| self.reveal(id));
        }
        for l in &mut plan.context_updates.links {
            self.reveal(&mut l.to_event_id);
        }
        let targets = plan
            .interest_update
            .iter_mut()
            .flat_map(|u| u.attention_targets.iter_mut());
        for t in targets.filter(|t| t.target_type == TargetType::Goal.as_str()) {
            if let Some(stored) = goal_ref_text(&t.value).and_then(|h| self.to_id.get(h)) {
                t.value = format!("{GOAL_PREFIX}{stored}");
            }
        }
        plan
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ids() -> PlanIds {
        PlanIds {
            current: "cur-uuid".into(),
            events: vec!["user-uuid".into(), "old-uuid".into()],
            states: vec!["state-uuid".into()],
        }
    }

    #[test]
    fn the_input_names_handles_and_the_plan_gets_the_stored_ids_back() {
        let h = Handles::of(&ids());
        let named = h.named(&ids());
        assert_eq!(named.current, "e0");
        assert_eq!(named.events, ["e1", "e2"]);
        assert_eq!(named.states, ["s1"]);
        let mut input = json!({"current_event_id": "cur-uuid",
            "memory": {"states": [{"state_id": "state-uuid", "body_text": "cur-uuid is text too"}],
                       "interest": {"attention_targets": [{"type": "goal", "value": "goal_id:state-uuid"}]}}});
        h.hide(&mut input);
        assert_eq!(
            input["memory"]["interest"]["attention_targets"][0]["value"],
            "goal_id:s1"
        );
        assert_eq!(input["current_event_id"], "e0");
        assert_eq!(input["memory"]["states"][0]["state_id"], "s1");
        assert_eq!(
            input["memory"]["states"][0]["body_text"],
            "cur-uuid is text too"
        );
        let plan = WritePlan::parse(
            r#"{"state_updates": [{"kind": "fact", "op": "close", "state_id": "s1",
                "confidence": 0.5, "evidence_event_ids": ["e0", "e2", "e9"]}],
                "context_updates": {"links": [{"to_event_id": "e1", "label": "reply_to"}]},
                "interest_update": {"attention_targets": [
                    {"type": "goal", "value": "goal_id:s1", "weight": 0.5},
                    {"type": "topic", "value": "goal_id:s1", "weight": 0.5}]}}"#,
        )
        .unwrap();
        let plan = h.reveal_in(plan);
        let targets = &plan.interest_update.as_ref().unwrap().attention_targets;
        assert_eq!(targets[0].value, "goal_id:state-uuid");
        assert_eq!(
            targets[1].value, "goal_id:s1",
            "only a goal refers to a state"
        );
        let u = &plan.state_updates[0];
        assert_eq!(u.state_id.as_deref(), Some("state-uuid"));
        assert_eq!(u.evidence_event_ids, ["cur-uuid", "old-uuid", "e9"]);
        assert_eq!(plan.context_updates.links[0].to_event_id, "user-uuid");
    }
}

//! What one model call asks for beyond text: whether a person waits for it, and the shape
//! its answer must have.
//!
//! A [`Contract`] carries the JSON Schema of one call, generated from the Rust type its
//! validator decodes into ([`Contract::of`]) and then narrowed by the call's input (the ids
//! it may cite, the vocabulary's values). The schema is what a backend constrains decoding
//! with; the validator beside each call still decides what is accepted.
//!
//! Schemas are made for constrained decoders, not only for validation:
//! - every property is required and no other is allowed (OpenAI's strict mode demands it,
//!   and a small model writes a fixed skeleton far more reliably than optional keys);
//! - sub-schemas are inlined, so narrowing addresses fields by path;
//! - a number with both bounds becomes a grid of 21 values between them, because
//!   llama.cpp's grammars (the embedded server, Ollama) cannot express a float range and a
//!   confidence of `95` would otherwise break the contract.

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::{json, Map, Value};

/// Whether a person is waiting for a call's answer. The embedded server serves waiting
/// calls first and pauses background ones for them; on other endpoints background calls
/// share a small concurrency limit, so they cannot crowd out replies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Urgency {
    /// Someone waits: a classifier, a delegation, a recall selection, a reply, a stage line,
    /// an autonomy message.
    Interactive,
    /// Nobody waits: write plans, reflection, summaries, deliberation.
    Background,
}

impl Urgency {
    /// The `X-Ghost-Priority` header value.
    pub fn as_str(self) -> &'static str {
        match self {
            Urgency::Interactive => "interactive",
            Urgency::Background => "background",
        }
    }
}

/// The request header that tells the embedded server a call's [`Urgency`].
pub const PRIORITY_HEADER: &str = "x-ghost-priority";

/// What one call asks for beyond its messages.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// Whether someone waits for it.
    pub urgency: Urgency,
    /// The whole answer's shape, if it must have one.
    pub contract: Option<&'a Contract>,
    /// A free-text answer that ends with `trigger` and a JSON object of this shape (the
    /// persona's affect trailer).
    pub trailer: Option<(&'a str, &'a Contract)>,
    /// Most tokens a free-text answer may take (a reply's budget); the role's own
    /// `max_tokens`, when smaller, still holds. A contract brings its own.
    pub budget: Option<u32>,
}

impl<'a> Call<'a> {
    /// A call someone waits for.
    pub fn interactive() -> Self {
        Self {
            urgency: Urgency::Interactive,
            contract: None,
            trailer: None,
            budget: None,
        }
    }

    /// A call nobody waits for.
    pub fn background() -> Self {
        Self {
            urgency: Urgency::Background,
            ..Self::interactive()
        }
    }

    /// The same call, its answer shaped by `contract`.
    pub fn shaped(mut self, contract: &'a Contract) -> Self {
        self.contract = Some(contract);
        self
    }

    /// The same call, its answer ending with `trigger` and JSON of `contract`'s shape.
    pub fn with_trailer(mut self, trigger: &'a str, contract: &'a Contract) -> Self {
        self.trailer = Some((trigger, contract));
        self
    }

    /// The same call, its answer at most `tokens` long (trailer included): the model stops
    /// there and the answer ends as a normal one.
    pub fn with_budget(mut self, tokens: u32) -> Self {
        self.budget = Some(tokens);
        self
    }

    /// Whether it asks the backend for any structure.
    pub fn structured(&self) -> bool {
        self.contract.is_some() || self.trailer.is_some()
    }

    /// The same call asking for no structure (for an endpoint that refuses it).
    pub fn plain(self) -> Self {
        Self {
            urgency: self.urgency,
            contract: None,
            trailer: None,
            budget: self.budget,
        }
    }

    /// The contract named in metrics: the shape's, else the trailer's.
    pub fn contract_name(&self) -> Option<&'static str> {
        self.contract
            .or(self.trailer.map(|(_, c)| c))
            .map(|c| c.name)
    }
}

/// The shape one call's answer must have.
#[derive(Debug, Clone, PartialEq)]
pub struct Contract {
    /// The contract's name (`write_plan`, `classifier`, ...): the schema's name on the wire
    /// and the `contract` label of its metrics.
    pub name: &'static str,
    /// The JSON Schema, narrowed for this call.
    pub schema: Value,
    /// Most tokens the answer may take.
    pub max_tokens: u32,
}

impl Contract {
    /// The schema of `T`, prepared for constrained decoding (see the module docs).
    pub fn of<T: JsonSchema>(name: &'static str, max_tokens: u32) -> Self {
        let generator = SchemaSettings::draft2020_12()
            .with(|s| {
                s.inline_subschemas = true;
            })
            .into_generator();
        let mut schema = generator.into_root_schema_for::<T>().to_value();
        if let Some(obj) = schema.as_object_mut() {
            obj.remove("$schema");
            obj.remove("title");
        }
        prepare(&mut schema);
        Self {
            name,
            schema,
            max_tokens,
        }
    }

    /// Whether `answer` is JSON valid against this schema: what the backend's constraint
    /// should guarantee, checked independently of the call's own validator.
    pub fn admits(&self, answer: &str) -> bool {
        let Ok(value) = serde_json::from_str::<Value>(answer) else {
            return false;
        };
        jsonschema::validator_for(&self.schema).is_ok_and(|v| v.is_valid(&value))
    }

    /// Records what came of an answer to this contract for `role`: whether it was
    /// schema-valid, and whether its validator accepted it (else the reason's kind).
    pub fn record(&self, role: &str, answer: &str, verdict: Result<(), &str>) {
        ghost_metrics::contract_answer(role, self.name, self.admits(answer), verdict);
    }

    /// The sub-schema at `path` (property names; `[]` steps into an array's items).
    pub fn at(&self, path: &[&str]) -> Option<&Value> {
        let mut node = &self.schema;
        for step in path {
            node = if *step == "[]" {
                node.get("items")?
            } else {
                node.get("properties")?.get(*step)?
            };
        }
        Some(node)
    }

    fn at_mut(&mut self, path: &[&str]) -> &mut Value {
        let mut node = &mut self.schema;
        for step in path {
            node = if *step == "[]" {
                &mut node["items"]
            } else {
                &mut node["properties"][*step]
            };
        }
        node
    }

    /// Restricts the strings at `path` (or the items of the array there) to `values`.
    /// A nullable field stays nullable. With no values at all, an array may only be empty
    /// and a nullable string only null.
    pub fn allow<S: AsRef<str>>(mut self, path: &[&str], values: &[S]) -> Self {
        let node = self.at_mut(path);
        let target = if node.get("items").is_some() {
            node.get_mut("items").expect("items")
        } else {
            node
        };
        let nullable = accepts_null(target);
        let mut allowed: Vec<Value> = values.iter().map(|v| json!(v.as_ref())).collect();
        if nullable {
            allowed.push(Value::Null);
        }
        *target = json!({ "enum": allowed });
        if values.is_empty() && !nullable {
            // Nothing may be written: an array of such items must stay empty.
            if let Some(arr) = self.array_at(path) {
                arr.insert("maxItems".into(), 0.into());
                arr.remove("minItems");
            }
        }
        self
    }

    fn array_at(&mut self, path: &[&str]) -> Option<&mut Map<String, Value>> {
        let node = self.at_mut(path);
        if node.get("items").is_some() {
            node.as_object_mut()
        } else {
            None
        }
    }

    /// Sets `maxItems` of the array at `path`.
    pub fn max_items(mut self, path: &[&str], max: usize) -> Self {
        if let Some(arr) = self.array_at(path) {
            arr.insert("maxItems".into(), max.into());
        }
        self
    }

    /// Sets `minItems` of the array at `path`.
    pub fn min_items(mut self, path: &[&str], min: usize) -> Self {
        if let Some(arr) = self.array_at(path) {
            arr.insert("minItems".into(), min.into());
        }
        self
    }

    /// Sets `maxLength` of the string at `path`.
    pub fn max_length(mut self, path: &[&str], max: usize) -> Self {
        if let Some(obj) = self.at_mut(path).as_object_mut() {
            obj.insert("maxLength".into(), max.into());
        }
        self
    }

    /// Sets `minLength` of the string at `path` (a text its validator refuses empty).
    pub fn min_length(mut self, path: &[&str], min: usize) -> Self {
        if let Some(obj) = self.at_mut(path).as_object_mut() {
            obj.insert("minLength".into(), min.into());
        }
        self
    }

    /// Replaces the schema at `path` (for a field whose shape depends on the input).
    pub fn replace(mut self, path: &[&str], schema: Value) -> Self {
        *self.at_mut(path) = schema;
        self
    }

    /// Drops the property `name` of the object at `path` (a field this call never needs:
    /// fewer tokens for the model, nothing it can get wrong there).
    pub fn without(mut self, path: &[&str], name: &str) -> Self {
        let node = self.at_mut(path);
        if let Some(props) = node.get_mut("properties").and_then(Value::as_object_mut) {
            props.remove(name);
        }
        if let Some(req) = node.get_mut("required").and_then(Value::as_array_mut) {
            req.retain(|r| r != name);
        }
        self
    }
}

/// Whether `schema` admits `null`.
fn accepts_null(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "null"),
        _ => schema
            .get("anyOf")
            .and_then(Value::as_array)
            .is_some_and(|alts| alts.iter().any(accepts_null)),
    }
}

/// A unit-variant enum with documented variants comes out as `oneOf` of one `const` each:
/// one `enum` says the same in fewer grammar rules.
fn collapse_consts(obj: &mut Map<String, Value>) {
    for key in ["oneOf", "anyOf"] {
        let Some(Value::Array(alts)) = obj.get(key) else {
            continue;
        };
        let consts: Option<Vec<Value>> = alts.iter().map(|a| a.get("const").cloned()).collect();
        if let Some(values) = consts {
            obj.remove(key);
            obj.remove("type");
            obj.insert("enum".into(), Value::Array(values));
        }
    }
}

/// Grid points of a bounded number (21 values from `min` to `max`).
const GRID_STEPS: u32 = 20;

/// Makes every object strict (all properties required, none other allowed), turns bounded
/// numbers into grids and drops the annotations a grammar does not use.
fn prepare(schema: &mut Value) {
    let Some(obj) = schema.as_object_mut() else {
        return;
    };
    obj.remove("format");
    obj.remove("default");
    collapse_consts(obj);
    if let Some(props) = obj.get("properties").and_then(Value::as_object) {
        let names: Vec<Value> = props.keys().map(|k| Value::from(k.as_str())).collect();
        obj.insert("required".into(), Value::Array(names));
        obj.insert("additionalProperties".into(), Value::Bool(false));
    }
    let is_number = match obj.get("type") {
        Some(Value::String(t)) => t == "number",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "number"),
        _ => false,
    };
    if is_number {
        let min = obj.get("minimum").and_then(Value::as_f64);
        let max = obj.get("maximum").and_then(Value::as_f64);
        if let (Some(min), Some(max)) = (min, max) {
            let mut grid: Vec<Value> = (0..=GRID_STEPS)
                .map(|i| {
                    let x = min + (max - min) * f64::from(i) / f64::from(GRID_STEPS);
                    // Two decimals: what a model writes, and no 0.30000000000000004.
                    json!((x * 100.0).round() / 100.0)
                })
                .collect();
            if accepts_null(&Value::Object(obj.clone())) {
                grid.push(Value::Null);
            }
            obj.insert("enum".into(), Value::Array(grid));
        }
    }
    for key in ["properties", "$defs"] {
        if let Some(Value::Object(children)) = obj.get_mut(key) {
            children.values_mut().for_each(prepare);
        }
    }
    for key in ["items", "additionalProperties", "not"] {
        if let Some(child) = obj.get_mut(key) {
            prepare(child);
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(alts)) = obj.get_mut(key) {
            alts.iter_mut().for_each(prepare);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Sample {
        #[schemars(range(min = 0.0, max = 1.0))]
        confidence: f64,
        #[serde(default)]
        note: Option<String>,
        ids: Vec<String>,
        inner: Inner,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Inner {
        kind: String,
    }

    #[test]
    fn every_object_is_strict_and_inlined() {
        let c = Contract::of::<Sample>("sample", 10);
        assert_eq!(c.schema["additionalProperties"], false);
        assert_eq!(
            c.schema["required"],
            json!(["confidence", "note", "ids", "inner"])
        );
        assert_eq!(c.at(&["inner"]).unwrap()["required"], json!(["kind"]));
        assert!(c.schema.get("$defs").is_none(), "{}", c.schema);
    }

    #[test]
    fn a_bounded_number_becomes_a_grid() {
        let c = Contract::of::<Sample>("sample", 10);
        let grid = c.at(&["confidence"]).unwrap()["enum"].as_array().unwrap();
        assert_eq!(grid.len(), 21);
        assert_eq!(grid[0], json!(0.0));
        assert_eq!(grid[6], json!(0.3));
        assert_eq!(grid[20], json!(1.0));
    }

    #[test]
    fn narrowing_restricts_values_and_keeps_null() {
        let c = Contract::of::<Sample>("sample", 10)
            .allow(&["ids"], &["a", "b"])
            .allow(&["note"], &["x"])
            .max_items(&["ids"], 1)
            .allow(&["inner", "kind"], &["k"]);
        assert_eq!(c.at(&["ids", "[]"]).unwrap(), &json!({"enum": ["a", "b"]}));
        assert_eq!(c.at(&["ids"]).unwrap()["maxItems"], 1);
        assert_eq!(c.at(&["note"]).unwrap(), &json!({"enum": ["x", null]}));
        assert_eq!(c.at(&["inner", "kind"]).unwrap(), &json!({"enum": ["k"]}));
        let none: [&str; 0] = [];
        let empty = Contract::of::<Sample>("sample", 10).allow(&["ids"], &none);
        assert_eq!(empty.at(&["ids"]).unwrap()["maxItems"], 0);
    }

    #[test]
    fn a_field_can_be_left_out() {
        let c = Contract::of::<Sample>("sample", 10).without(&[], "note");
        assert!(c.at(&["note"]).is_none());
        assert_eq!(c.schema["required"], json!(["confidence", "ids", "inner"]));
    }
}

//! Structured output: `response_format` (the whole reply is JSON) and Ghost's
//! `trailer_format` (free text, then a marker, then JSON) turned into GBNF grammars that
//! constrain sampling.
//!
//! The schema-to-grammar conversion is llama.cpp's own (`json_schema_to_grammar`, through the
//! wrapper's status codes, so a schema it refuses is an error here, not a C++ exception).
//! A trailer grammar is *lazy*: llama.cpp's sampler leaves the text alone until the trigger
//! appears in the generated text, then replays the trigger into the grammar, whose start rule
//! is the trigger literal, a little whitespace and the schema's root; from there on every
//! token must keep the output valid, and once the JSON is complete only the end of the turn is.

use serde_json::{json, Value};

use crate::api::ApiError;

/// The error code of every structured-output problem in a request.
pub const INVALID_FORMAT: &str = "invalid_response_format";

/// The start rule of a trailer grammar (the converter's own rules are `root`, `space`,
/// `root-<property>`, ...: no clash).
const TRAILER_ROOT: &str = "ghost-trailer";

/// A grammar to constrain a reply with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Constraint {
    /// GBNF text.
    pub grammar: String,
    /// Its start rule.
    pub root: String,
    /// Lazy grammars only: the text from which on the grammar applies.
    pub trigger: Option<String>,
}

/// Reads the request's `response_format` and `trailer_format` (either may be absent or
/// null); at most one may constrain the reply.
pub fn from_request(
    response_format: Option<&Value>,
    trailer_format: Option<&Value>,
) -> Result<Option<Constraint>, ApiError> {
    let whole = match response_format.filter(|v| !v.is_null()) {
        None => None,
        Some(v) => response_format_constraint(v)?,
    };
    let trailer = match trailer_format.filter(|v| !v.is_null()) {
        None => None,
        Some(v) => Some(trailer_constraint(v)?),
    };
    match (whole, trailer) {
        (Some(_), Some(_)) => Err(invalid(
            "response_format and trailer_format cannot be combined: the first constrains the \
             whole reply, the second only what follows its trigger",
        )),
        (whole, trailer) => Ok(whole.or(trailer)),
    }
}

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::invalid(INVALID_FORMAT, message)
}

/// `{"type": "text" | "json_object" | "json_schema", ...}`; `text` constrains nothing.
fn response_format_constraint(v: &Value) -> Result<Option<Constraint>, ApiError> {
    let kind = v.get("type").and_then(Value::as_str).ok_or_else(|| {
        invalid("response_format must be an object with a string type (text, json_object or json_schema)")
    })?;
    let schema = match kind {
        "text" => return Ok(None),
        // Any JSON object: the converter's grammar for an object schema without properties.
        "json_object" => json!({"type": "object"}),
        "json_schema" => {
            let spec = v
                .get("json_schema")
                .filter(|s| s.is_object())
                .ok_or_else(|| {
                    invalid("response_format.json_schema must be an object with a schema")
                })?;
            if spec.get("name").is_some_and(|n| !n.is_string()) {
                return Err(invalid("response_format.json_schema.name must be a string"));
            }
            match spec.get("schema") {
                Some(s) if s.is_object() => s.clone(),
                _ => {
                    return Err(invalid(
                        "response_format.json_schema.schema must be a JSON Schema object",
                    ))
                }
            }
        }
        other => {
            return Err(invalid(format!(
                "response_format.type {other:?} is not text, json_object or json_schema"
            )))
        }
    };
    Ok(Some(Constraint {
        grammar: schema_grammar(&schema, "response_format")?,
        root: "root".into(),
        trigger: None,
    }))
}

/// `{"trigger": "<marker>", "schema": {...}}`.
fn trailer_constraint(v: &Value) -> Result<Constraint, ApiError> {
    let trigger = v
        .get("trigger")
        .and_then(Value::as_str)
        .filter(|t| !t.trim().is_empty())
        .ok_or_else(|| invalid("trailer_format.trigger must be a non-empty string"))?;
    if trigger.contains('\0') {
        return Err(invalid("trailer_format.trigger contains a NUL character"));
    }
    let schema = v
        .get("schema")
        .filter(|s| s.is_object())
        .ok_or_else(|| invalid("trailer_format.schema must be a JSON Schema object"))?;
    let mut grammar = schema_grammar(schema, "trailer_format")?;
    // The trigger, up to a few blanks (a newline after the marker is natural), the JSON.
    grammar.push_str(&format!(
        "\n{TRAILER_ROOT} ::= {} [ \\t\\r\\n]{{0,8}} root\n",
        gbnf_literal(trigger)
    ));
    Ok(Constraint {
        grammar,
        root: TRAILER_ROOT.into(),
        trigger: Some(trigger.to_owned()),
    })
}

/// llama.cpp's JSON-Schema-to-GBNF conversion; `field` names the request field in errors.
/// Its whitespace rule is narrowed to one optional space: JSON read by a program needs no
/// indentation, and a small model that pretty-prints spends a third of its tokens (and of
/// its budget) on newlines and spaces.
fn schema_grammar(schema: &Value, field: &str) -> Result<String, ApiError> {
    let grammar = llama_cpp_2::json_schema_to_grammar(&schema.to_string()).map_err(|e| {
        invalid(format!(
            "{field}: llama.cpp cannot turn this JSON Schema into a grammar ({e}); unresolved \
             $ref, invalid pattern and malformed keywords are refused"
        ))
    })?;
    Ok(compact(&grammar))
}

/// `grammar` with its `space` rule (`| " " | "\n"{1,2} [ \t]{0,20}`) as one optional space.
fn compact(grammar: &str) -> String {
    grammar
        .lines()
        .map(|line| {
            if line.starts_with("space ::=") {
                "space ::= | \" \""
            } else {
                line
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// `text` as a GBNF string literal.
fn gbnf_literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\x{:02X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Value {
        json!({"type": "object", "properties": {"mood": {"enum": ["calm", "upset"]}},
               "required": ["mood"]})
    }

    #[test]
    fn each_response_format_becomes_a_grammar_or_nothing() {
        assert_eq!(from_request(None, None).unwrap(), None);
        assert_eq!(from_request(Some(&Value::Null), None).unwrap(), None);
        assert_eq!(
            from_request(Some(&json!({"type": "text"})), None).unwrap(),
            None
        );
        let object = from_request(Some(&json!({"type": "json_object"})), None)
            .unwrap()
            .unwrap();
        assert_eq!((object.root.as_str(), object.trigger), ("root", None));
        let typed = from_request(
            Some(&json!({"type": "json_schema",
                         "json_schema": {"name": "m", "schema": schema(), "strict": true}})),
            None,
        )
        .unwrap()
        .unwrap();
        assert!(
            typed.grammar.contains("\"\\\"calm\\\"\""),
            "{}",
            typed.grammar
        );
    }

    #[test]
    fn a_trailer_grammar_starts_with_its_trigger_and_is_lazy() {
        let c = from_request(
            Some(&json!({"type": "text"})),
            Some(&json!({"trigger": "<<<A\"B>>>", "schema": schema()})),
        )
        .unwrap()
        .unwrap();
        assert_eq!(c.trigger.as_deref(), Some("<<<A\"B>>>"));
        assert_eq!(c.root, TRAILER_ROOT);
        assert!(
            c.grammar
                .contains("ghost-trailer ::= \"<<<A\\\"B>>>\" [ \\t\\r\\n]{0,8} root"),
            "{}",
            c.grammar
        );
    }

    #[test]
    fn bad_formats_are_refused_with_one_code() {
        let trailer = json!({"trigger": "<<<T>>>", "schema": schema()});
        let cases: Vec<(Option<Value>, Option<Value>)> = vec![
            (Some(json!("json")), None),
            (Some(json!({"type": "xml"})), None),
            (Some(json!({"type": "json_schema"})), None),
            (
                Some(json!({"type": "json_schema", "json_schema": {"schema": "x"}})),
                None,
            ),
            (
                Some(json!({"type": "json_schema", "json_schema": {"name": 3, "schema": {}}})),
                None,
            ),
            (
                Some(json!({"type": "json_schema",
                            "json_schema": {"schema": {"$ref": "#/definitions/missing"}}})),
                None,
            ),
            (Some(json!({"type": "json_object"})), Some(trailer.clone())),
            (None, Some(json!({"trigger": "", "schema": schema()}))),
            (None, Some(json!({"trigger": "<<<T>>>"}))),
        ];
        for (format, trailer) in cases {
            let e = from_request(format.as_ref(), trailer.as_ref()).unwrap_err();
            assert_eq!(
                (e.status, e.code),
                (400, INVALID_FORMAT),
                "{format:?} {trailer:?}"
            );
        }
    }

    #[test]
    fn json_is_held_compact() {
        let c = from_request(
            Some(&json!({"type": "json_schema", "json_schema": {"name": "n",
                "schema": {"type": "object", "properties": {"a": {"type": "string"}}}}})),
            None,
        )
        .unwrap()
        .unwrap();
        let space: Vec<&str> = c
            .grammar
            .lines()
            .filter(|l| l.starts_with("space ::="))
            .collect();
        assert_eq!(space, ["space ::= | \" \""], "{}", c.grammar);
    }

    #[test]
    fn literals_escape_what_gbnf_would_read() {
        assert_eq!(gbnf_literal("a\"b\\c\nd"), "\"a\\\"b\\\\c\\nd\"");
        assert_eq!(gbnf_literal("é\u{1}"), "\"é\\x01\"");
    }
}

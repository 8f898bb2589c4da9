//! A tool's arguments checked against the tool's own input schema by a maintained JSON-Schema
//! validator (`boon`, draft 2020-12), so that what the schema declares and what the tool
//! accepts cannot differ. The error names the argument at fault (`trace/0`) and says what it
//! must be in the words of the command line's errors, with "did you mean" for an unknown name.

use boon::{Compiler, ErrorKind, Schemas, ValidationError};
use serde_json::Value;

/// Checks `value` against `schema`; the error names the argument at fault (`trace/0`).
pub fn check(value: &Value, schema: &Value) -> Result<(), String> {
    const URL: &str = "urn:verdict:tool-input";
    let mut schemas = Schemas::new();
    let mut compiler = Compiler::new();
    // The input schemas are the tools' own: one that does not compile is a defect, said so.
    let defect = |e: &dyn std::fmt::Display| format!("the tool's input schema is invalid ({e})");
    compiler.add_resource(URL, schema.clone()).map_err(|e| defect(&e))?;
    let index = compiler.compile(URL, &mut schemas).map_err(|e| defect(&e))?;
    schemas.validate(value, index).map_err(|e| describe(&e, value, schema))
}

/// The first failure of the deepest kind: the argument at fault and what it must be. An
/// `allOf` or a group holds its causes; a `oneOf` that fits no form lists each form's reason.
fn describe(e: &ValidationError, value: &Value, schema: &Value) -> String {
    match &e.kind {
        ErrorKind::OneOf(None) if !e.causes.is_empty() => {
            let why: Vec<String> = e.causes.iter().map(|c| describe(c, value, schema)).collect();
            format!("{} fit none of the allowed forms: {}", name(e), why.join("; "))
        }
        ErrorKind::OneOf(Some(_)) => format!("{} fit more than one of the allowed forms", name(e)),
        _ if !e.causes.is_empty() => describe(&e.causes[0], value, schema),
        kind => leaf(e, kind, value, schema),
    }
}

/// The argument an error is about: `trace/0`, or the arguments as a whole.
fn name(e: &ValidationError) -> String {
    let path = path(e);
    if path.is_empty() { "the arguments".into() } else { format!("`{path}`") }
}

/// The instance location without its leading slash (`trace/0`).
fn path(e: &ValidationError) -> String {
    e.instance_location.to_string().trim_start_matches('/').to_string()
}

/// One failure, said as the command line says it.
fn leaf(e: &ValidationError, kind: &ErrorKind, value: &Value, schema: &Value) -> String {
    let name = name(e);
    let at =
        |key: &str| if path(e).is_empty() { key.to_string() } else { format!("{}/{key}", path(e)) };
    let got = value.pointer(&e.instance_location.to_string());
    match kind {
        ErrorKind::FalseSchema => {
            format!("{name} is not an argument here (with the other arguments given)")
        }
        ErrorKind::Type { want, .. } => {
            let want: Vec<String> = want.iter().map(|t| t.to_string()).collect();
            format!("{name} must be {}, not {}", want.join(" or "), got.map_or("absent", type_of))
        }
        ErrorKind::Enum { want } => {
            let list: Vec<String> = want.iter().map(Value::to_string).collect();
            let got = got.map(Value::to_string).unwrap_or_default();
            format!("{name} must be one of {}, not {got}", list.join(", "))
        }
        ErrorKind::Const { want } => format!("{name} must be {want}"),
        ErrorKind::Minimum { want, .. } => format!("{name} must be at least {want}"),
        ErrorKind::Maximum { want, .. } => format!("{name} must be at most {want}"),
        ErrorKind::Required { want } => {
            let want: Vec<String> = want.iter().map(|w| format!("`{}`", at(w))).collect();
            format!("{} {} required", want.join(", "), if want.len() == 1 { "is" } else { "are" })
        }
        ErrorKind::AdditionalProperties { got: extra } => {
            let known = known_names(schema, &e.instance_location.to_string());
            let k = extra.first().map(|k| k.to_string()).unwrap_or_default();
            let hint = crate::claims::validate::did_you_mean(&k, known.iter().map(String::as_str))
                .map(|d| format!(" (did you mean `{d}`?)"))
                .unwrap_or_default();
            format!("`{}` is not an argument of this tool{hint}", at(&k))
        }
        other => format!("{name}: {other}"),
    }
}

/// The argument names the schema declares for the object at `pointer` (the tools' inputs are
/// objects of named arguments, arrays of them at most one level down).
fn known_names(schema: &Value, pointer: &str) -> Vec<String> {
    let mut s = schema;
    for token in pointer.split('/').filter(|t| !t.is_empty()) {
        s = match s.get("properties").and_then(|p| p.get(token)) {
            Some(sub) => sub,
            None => match s.get("items") {
                Some(items) => items,
                None => return Vec::new(),
            },
        };
    }
    s.get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_keyword_refuses_what_it_should() {
        let s = json!({
            "type": "object",
            "properties": {
                "a": {"type": "string", "enum": ["x", "y"]},
                "n": {"type": "integer", "minimum": 1, "maximum": 3},
                "l": {"type": "array", "items": {"type": "string"}},
                "k": {"const": "kernels"},
                "m": {"type": "string"},
            },
            "required": ["a"],
            "additionalProperties": false,
            "allOf": [{"if": {"properties": {"a": {"const": "y"}}}, "then": {"properties": {"m": false}}}],
        });
        assert!(check(&json!({"a": "x", "n": 2, "l": ["p"], "m": "q"}), &s).is_ok());
        for bad in [
            json!({}),
            json!({"a": "z"}),
            json!({"a": 1}),
            json!({"a": "x", "n": 0}),
            json!({"a": "x", "n": 4}),
            json!({"a": "x", "n": 1.5}),
            json!({"a": "x", "l": [1]}),
            json!({"a": "x", "k": "overlap"}),
            json!({"a": "x", "extra": true}),
            json!({"a": "y", "m": "q"}),
        ] {
            assert!(check(&bad, &s).is_err(), "{bad}");
        }
        let said = |v: Value| check(&v, &s).unwrap_err();
        assert_eq!(said(json!({})), "`a` is required");
        assert_eq!(said(json!({"a": "z"})), r#"`a` must be one of "x", "y", not "z""#);
        assert_eq!(said(json!({"a": 1})), "`a` must be string, not an integer");
        assert_eq!(said(json!({"a": "x", "n": 0})), "`n` must be at least 1");
        assert_eq!(said(json!({"a": "x", "l": [1]})), "`l/0` must be string, not an integer");
        assert_eq!(
            said(json!({"a": "x", "nn": 1})),
            "`nn` is not an argument of this tool (did you mean `n`?)"
        );
        assert_eq!(
            said(json!({"a": "y", "m": "q"})),
            "`m` is not an argument here (with the other arguments given)"
        );
        let one = json!({"oneOf": [{"required": ["p"]}, {"required": ["q"]}]});
        assert!(check(&json!({"p": 1}), &one).is_ok());
        assert!(check(&json!({"p": 1, "q": 2}), &one).is_err());
        assert!(check(&json!({}), &one).is_err());
    }
}

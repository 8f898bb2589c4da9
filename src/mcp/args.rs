//! A tool's arguments checked against the tool's own input schema, so that what the schema
//! declares and what the tool accepts cannot differ.
//!
//! It reads the part of JSON Schema the input schemas use (`type`, `enum`, `const`,
//! `minimum`, `maximum`, `properties`, `required`, `additionalProperties: false`, `items`,
//! `oneOf`, `allOf` of `if`/`then`, the `false` schema) and fails on the first argument that
//! does not fit, naming it (`trace/0`). It must not be used for other schemas.

use serde_json::Value;

/// Checks `value` against `schema`; the error names the argument at fault (`trace/0`).
pub fn check(value: &Value, schema: &Value) -> Result<(), String> {
    at(value, schema, "")
}

/// The path of `key` under `path`, without a leading slash (`trace/0`).
fn join(path: &str, key: &str) -> String {
    if path.is_empty() { key.to_string() } else { format!("{path}/{key}") }
}

fn at(v: &Value, s: &Value, path: &str) -> Result<(), String> {
    let name = if path.is_empty() { "the arguments".to_string() } else { format!("`{path}`") };
    let s = match s {
        Value::Bool(true) => return Ok(()),
        Value::Bool(false) => {
            return Err(format!("{name} is not an argument here (with the other arguments given)"));
        }
        Value::Object(s) => s,
        _ => return Ok(()),
    };
    if let Some(t) = s.get("type") {
        let types: Vec<&str> = match t {
            Value::String(one) => vec![one.as_str()],
            Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !types.iter().any(|t| is_type(v, t)) {
            return Err(format!("{name} must be {}, not {}", types.join(" or "), type_of(v)));
        }
    }
    if let Some(Value::Array(options)) = s.get("enum")
        && !options.contains(v)
    {
        let list: Vec<String> = options.iter().map(Value::to_string).collect();
        return Err(format!("{name} must be one of {}, not {v}", list.join(", ")));
    }
    if let Some(c) = s.get("const")
        && c != v
    {
        return Err(format!("{name} must be {c}"));
    }
    if let Some(n) = v.as_f64() {
        if let Some(min) = s.get("minimum").and_then(Value::as_f64)
            && n < min
        {
            return Err(format!("{name} must be at least {min}"));
        }
        if let Some(max) = s.get("maximum").and_then(Value::as_f64)
            && n > max
        {
            return Err(format!("{name} must be at most {max}"));
        }
    }
    if let (Value::Array(items), Some(item)) = (v, s.get("items")) {
        for (i, x) in items.iter().enumerate() {
            at(x, item, &join(path, &i.to_string()))?;
        }
    }
    if let Value::Object(m) = v {
        let props = s.get("properties").and_then(Value::as_object);
        for r in s.get("required").and_then(Value::as_array).into_iter().flatten() {
            if let Some(r) = r.as_str()
                && !m.contains_key(r)
            {
                return Err(format!("`{}` is required", join(path, r)));
            }
        }
        for (k, x) in m {
            match props.and_then(|p| p.get(k)) {
                Some(sub) => at(x, sub, &join(path, k))?,
                None if s.get("additionalProperties") == Some(&Value::Bool(false)) => {
                    let known: Vec<&String> = props.map(|p| p.keys().collect()).unwrap_or_default();
                    let names: Vec<&str> = known.iter().map(|s| s.as_str()).collect();
                    let hint = crate::claims::validate::did_you_mean(k, names.iter().copied())
                        .map(|d| format!(" (did you mean `{d}`?)"))
                        .unwrap_or_default();
                    return Err(format!(
                        "`{}` is not an argument of this tool{hint}",
                        join(path, k)
                    ));
                }
                None => {}
            }
        }
    }
    if let Some(Value::Array(one_of)) = s.get("oneOf") {
        let fits: Vec<Result<(), String>> = one_of.iter().map(|o| at(v, o, path)).collect();
        match fits.iter().filter(|r| r.is_ok()).count() {
            1 => {}
            0 => {
                let why: Vec<String> = fits.into_iter().filter_map(Result::err).collect();
                return Err(format!("{name} fit none of the allowed forms: {}", why.join("; ")));
            }
            _ => return Err(format!("{name} fit more than one of the allowed forms")),
        }
    }
    for sub in s.get("allOf").and_then(Value::as_array).into_iter().flatten() {
        match (sub.get("if"), sub.get("then")) {
            (Some(cond), Some(then)) => {
                if at(v, cond, path).is_ok() {
                    at(v, then, path)?;
                }
            }
            _ => at(v, sub, path)?,
        }
    }
    Ok(())
}

fn is_type(v: &Value, t: &str) -> bool {
    match t {
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        "null" => v.is_null(),
        _ => false,
    }
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
        let one = json!({"oneOf": [{"required": ["p"]}, {"required": ["q"]}]});
        assert!(check(&json!({"p": 1}), &one).is_ok());
        assert!(check(&json!({"p": 1, "q": 2}), &one).is_err());
        assert!(check(&json!({}), &one).is_err());
    }
}

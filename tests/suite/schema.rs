//! The JSON Schema of the claims file (`verdict schema claims`), checked by a JSON Schema
//! validator: every claims file of the project is valid against it, and each invalid fixture
//! whose fault a schema can express (an unknown key, a missing language, an unknown analysis,
//! an interpretation without its mapping) is rejected.

use crate::util;

use std::path::Path;

use serde_json::Value;
use util::run_json;

/// The file as JSON (YAML is a superset), and its report's languages.
fn as_json(path: &Path) -> (Value, Vec<String>) {
    let text = std::fs::read_to_string(path).unwrap();
    let v: Value = serde_saphyr::from_str(&text).unwrap();
    let langs = v["report"]["languages"]
        .as_array()
        .map(|l| l.iter().map(|x| x.as_str().unwrap().to_string()).collect())
        .unwrap_or_default();
    (v, langs)
}

/// Whether `instance` is valid against the schema `verdict schema claims` prints for its
/// languages.
fn valid(instance: &Value, langs: &[String]) -> Result<(), String> {
    let schema = if langs.is_empty() {
        run_json(&["schema", "claims"])
    } else {
        run_json(&["schema", "claims", "--languages", &langs.join(",")])
    };
    let mut schemas = boon::Schemas::new();
    let mut compiler = boon::Compiler::new();
    compiler.add_resource("claims.schema.json", schema).unwrap();
    let index = compiler.compile("claims.schema.json", &mut schemas).unwrap();
    schemas.validate(instance, index).map_err(|e| format!("{e:#}"))
}

#[test]
fn every_claims_file_of_the_project_is_valid() {
    let mut n = 0;
    for dir in ["claims", "claims/eval-day26"] {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_str().unwrap().to_string();
            if !name.ends_with(".yaml") || name == "eval.yaml" {
                continue;
            }
            let (v, langs) = as_json(&p);
            if let Err(e) = valid(&v, &langs) {
                panic!("{}: {e}", p.display());
            }
            n += 1;
        }
    }
    assert!(n >= 12, "{n} files");
}

#[test]
fn invalid_fixtures_whose_fault_a_schema_expresses_are_rejected() {
    for (name, because) in [
        ("unknown-field.yaml", "valeu"),
        ("missing-language.yaml", "zh-TW"),
        ("unknown-analysis.yaml", "measure/analysis"),
        ("interpretation-without-mapping.yaml", "mapping"),
    ] {
        let (v, langs) = as_json(&Path::new("fixtures/claims/invalid").join(name));
        let err = valid(&v, &langs).expect_err(name);
        assert!(err.contains(because), "{name}: {err}");
    }
    // Faults only validation can see (a scope naming no declared trace) pass the schema and
    // are `verdict check`'s.
    let (v, langs) = as_json(Path::new("fixtures/claims/invalid/dangling-trace.yaml"));
    assert!(valid(&v, &langs).is_ok());
}

/// A YAML 1.1 reader's view of a file (PyYAML): the plain keys `on`, `off`, `yes`, `no`, `y`
/// and `n` (any case) are booleans, which JSON writes as `true` and `false`.
fn as_yaml_1_1(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| {
                    let k = match k.to_ascii_lowercase().as_str() {
                        "on" | "yes" | "y" | "true" => "true".to_string(),
                        "off" | "no" | "n" | "false" => "false".to_string(),
                        _ => k.clone(),
                    };
                    (k, as_yaml_1_1(v))
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(as_yaml_1_1).collect()),
        v => v.clone(),
    }
}

#[test]
fn every_claims_file_of_the_project_is_valid_to_a_yaml_1_1_reader_too() {
    for dir in ["claims", "claims/eval-day26"] {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_str().unwrap().to_string();
            if !name.ends_with(".yaml") || name == "eval.yaml" {
                continue;
            }
            let (v, langs) = as_json(&p);
            if let Err(e) = valid(&as_yaml_1_1(&v), &langs) {
                panic!("{} as YAML 1.1 reads it: {e}", p.display());
            }
        }
    }
    // `on` is what such a reader breaks; `project` is the same key under a safe name, and
    // giving both is refused.
    let window = |w: Value| {
        serde_json::json!({
            "report": {"id": "w", "languages": ["en"], "title": {"en": "t"}},
            "traces": {"A": {"path": "a.sqlite"}},
            "scopes": {"s": {"trace": "A", "window": w}},
            "claims": [],
        })
    };
    let on = window(serde_json::json!({"nvtx": "step 4", "on": "gpu"}));
    assert!(valid(&on, &[]).is_ok());
    assert!(valid(&as_yaml_1_1(&on), &[]).is_err());
    let project = window(serde_json::json!({"nvtx": "step 4", "project": "gpu"}));
    assert!(valid(&as_yaml_1_1(&project), &[]).is_ok());
    let both = window(serde_json::json!({"nvtx": "step 4", "on": "gpu", "project": "gpu"}));
    assert!(valid(&both, &[]).is_err());
}

#[test]
fn the_eval_example_is_valid_against_the_eval_schema() {
    let text = std::fs::read_to_string("claims/eval-day26/eval.yaml").unwrap();
    let v: Value = serde_saphyr::from_str(&text).unwrap();
    let langs: Vec<String> = v["eval"]["languages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_string())
        .collect();
    let schema = run_json(&["schema", "eval", "--languages", &langs.join(",")]);
    let mut schemas = boon::Schemas::new();
    let mut compiler = boon::Compiler::new();
    compiler.add_resource("eval.schema.json", schema).unwrap();
    let index = compiler.compile("eval.schema.json", &mut schemas).unwrap();
    schemas.validate(&v, index).map_err(|e| format!("{e:#}")).unwrap();
    // An unknown key and an unknown key verdict are refused.
    let mut bad = v.clone();
    bad["eval"]["seeed"] = 7.into();
    assert!(schemas.validate(&bad, index).is_err());
    let mut bad = v.clone();
    bad["key"]["verdicts"]["exposed-nccl"] = "true".into();
    assert!(schemas.validate(&bad, index).is_err());
}

#[test]
fn the_schema_holds_the_narrative_of_a_post() {
    let (v, langs) = as_json(Path::new("claims/day26-profile-blind.yaml"));
    assert!(v["narrative"]["denominators"]["parts"].is_array());
    let fault = |f: &dyn Fn(&mut serde_json::Value), because: &str| {
        let mut bad = v.clone();
        f(&mut bad);
        let err = valid(&bad, &langs).expect_err(because);
        assert!(err.contains(because), "{because}: {err}");
    };
    // A misspelt slot, a slot missing a language, a run count below 1, a formula that is not
    // `claim/part`.
    fault(&|b| b["narrative"]["openin"] = b["narrative"]["opening"].clone(), "openin");
    fault(
        &|b| b["narrative"]["closing"].as_object_mut().unwrap().retain(|k, _| k == "en"),
        "zh-TW",
    );
    fault(&|b| b["narrative"]["conditions"]["runs"] = 0.into(), "runs");
    fault(&|b| b["narrative"]["denominators"]["parts"][0]["part"] = "share".into(), "part");
}

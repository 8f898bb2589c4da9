//! The JSON Schema of the claims file (`verdict schema claims`), checked by a JSON Schema
//! validator: every claims file of the project is valid against it, and each invalid fixture
//! whose fault a schema can express (an unknown key, a missing language, an unknown analysis,
//! an interpretation without its mapping) is rejected.

mod util;

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

//! The JSON Schema of the evidence ledger (`verdict schema evidence`), derived from the types
//! that write it, checked by a JSON Schema validator: every example's `ID.evidence.json` and
//! the ledger `check --json` prints (a failed query's too) are valid against it, and a ledger
//! changed in one place (a key missing, a number as text, a key the types lack, a value no
//! enumeration has) is rejected at that place.

use crate::util;

use std::path::Path;

use serde_json::{Value, json};
use util::{manifest_dir, run_in, run_json, run_json_in};

/// The schema `verdict schema evidence` prints, compiled.
fn compiled() -> (boon::Schemas, boon::SchemaIndex) {
    let schema = run_json(&["schema", "evidence"]);
    let mut schemas = boon::Schemas::new();
    let mut compiler = boon::Compiler::new();
    compiler.add_resource("evidence.schema.json", schema).unwrap();
    let index = compiler.compile("evidence.schema.json", &mut schemas).unwrap();
    (schemas, index)
}

/// Why `instance` is invalid, as the validator's innermost errors: (instance location as a
/// JSON pointer, what is wrong there). Empty when it is valid.
fn errors(
    compiled: &(boon::Schemas, boon::SchemaIndex),
    instance: &Value,
) -> Vec<(String, String)> {
    fn leaves(e: &boon::ValidationError, out: &mut Vec<(String, String)>) {
        if e.causes.is_empty() {
            out.push((e.instance_location.to_string(), e.kind.to_string()));
        }
        for c in &e.causes {
            leaves(c, out);
        }
    }
    let (schemas, index) = compiled;
    let mut out = Vec::new();
    if let Err(e) = schemas.validate(instance, *index) {
        leaves(&e, &mut out);
    }
    out
}

/// The committed example ledgers.
fn examples() -> Vec<std::path::PathBuf> {
    let mut out: Vec<_> = std::fs::read_dir(manifest_dir().join("out"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_str().unwrap().ends_with(".evidence.json"))
        .collect();
    out.sort();
    out
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn the_schema_is_draft_2020_12_and_names_the_version() {
    let schema = run_json(&["schema", "evidence"]);
    assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
    let title = schema["title"].as_str().unwrap();
    assert!(title.contains(env!("CARGO_PKG_VERSION")), "{title}");
    let required: Vec<&str> =
        schema["required"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    for key in ["tool", "claims", "traces", "ledger", "context", "results", "summary"] {
        assert!(required.contains(&key), "{key} in {required:?}");
    }
    assert_eq!(schema["additionalProperties"], false);
    // The descriptions are the types' doc comments.
    assert_eq!(schema["properties"]["ledger"]["description"], "Every query the parts read.");
}

#[test]
fn every_example_evidence_is_valid() {
    let c = compiled();
    let files = examples();
    assert!(files.len() >= 9, "{files:?}");
    for p in &files {
        let errs = errors(&c, &read(p));
        assert!(errs.is_empty(), "{}: {errs:#?}", p.display());
    }
}

#[test]
fn check_json_ledgers_are_valid() {
    let c = compiled();
    for file in ["claims/mfu-2gpu-same-stream.yaml", "claims/day26-profile-blind.yaml"] {
        let a = run_json_in(Some(&manifest_dir()), &["check", file, "--json"]);
        let errs = errors(&c, &a);
        assert!(errs.is_empty(), "{file}: {errs:#?}");
    }
}

/// A trace that is not SQLite: `check` exits 2 and still prints the ledger, every query failed
/// with its reason; that ledger is valid too.
#[test]
fn a_ledger_of_failed_queries_is_valid() {
    let text = std::fs::read_to_string(manifest_dir().join("claims/h100-2gpu-no-nccl.yaml"))
        .unwrap()
        .replace("../fixtures/nsys-ai/h100_2gpu_1s.sqlite", "broken.sqlite");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("broken.sqlite"), "not a trace").unwrap();
    std::fs::write(dir.path().join("c.yaml"), text).unwrap();
    let out = run_in(Some(dir.path()), &["check", "c.yaml", "--json"]);
    assert_eq!(out.status.code(), Some(2));
    let a: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(a["traces"][0]["error"].is_string(), "{}", a["traces"][0]);
    assert!(a["traces"][0]["coverage"].is_null());
    assert!(a["ledger"][0]["evidence"].is_null());
    assert!(a["ledger"][0]["error"].is_string());
    let errs = errors(&compiled(), &a);
    assert!(errs.is_empty(), "{errs:#?}");
}

/// The ledger of the day-26 example changed by `f`.
fn changed(f: impl FnOnce(&mut Value)) -> Value {
    let mut v = read(&manifest_dir().join("out/day26-profile-blind.evidence.json"));
    f(&mut v);
    v
}

/// Asserts that `instance` is invalid, with an error at `location` whose text contains `says`.
fn rejected_at(
    c: &(boon::Schemas, boon::SchemaIndex),
    instance: &Value,
    location: &str,
    says: &str,
) {
    let errs = errors(c, instance);
    assert!(
        errs.iter().any(|(at, what)| at == location && what.contains(says)),
        "expected `{says}` at `{location}`, got {errs:#?}"
    );
}

#[test]
fn a_changed_ledger_is_rejected_where_it_changed() {
    let c = compiled();
    // The unchanged file is valid: each rejection below is the change's.
    assert!(errors(&c, &changed(|_| {})).is_empty());

    // A key that is always written, missing.
    let v = changed(|v| {
        v["summary"].as_object_mut().unwrap().remove("gate_failures");
    });
    rejected_at(&c, &v, "/summary", "gate_failures");
    let v = changed(|v| {
        v["ledger"][0]["evidence"].as_object_mut().unwrap().remove("window");
    });
    rejected_at(&c, &v, "/ledger/0/evidence", "window");
    // An `Option` written as null is required all the same.
    let v = changed(|v| {
        v["ledger"][0].as_object_mut().unwrap().remove("error");
    });
    rejected_at(&c, &v, "/ledger/0", "error");

    // A number written as text.
    let v = changed(|v| v["summary"]["claims"] = json!("5"));
    rejected_at(&c, &v, "/summary/claims", "want integer");
    let v = changed(|v| v["ledger"][0]["evidence"]["window"]["requested_ns"][0] = json!("39.964"));
    rejected_at(&c, &v, "/ledger/0/evidence/window/requested_ns/0", "want integer");
    // Inside the values of an analysis (an untagged union of the analyses' values).
    let v = changed(|v| v["ledger"][0]["evidence"]["values"]["total_ns"] = json!("6155748929"));
    rejected_at(&c, &v, "/ledger/0/evidence/values/total_ns", "want integer");

    // A key the types do not have.
    let v = changed(|v| v["ledger"][0]["evidence"]["window"]["unit"] = json!("ns"));
    rejected_at(&c, &v, "/ledger/0/evidence/window", "unit");
    let v = changed(|v| v["results"][0]["parts"][0]["confidence"] = json!(0.9));
    rejected_at(&c, &v, "/results/0/parts/0", "confidence");
    let v = changed(|v| v["tool"]["commit"] = json!("abc"));
    rejected_at(&c, &v, "/tool", "commit");

    // A value no enumeration has.
    let v = changed(|v| v["results"][0]["verdict"] = json!("probably"));
    rejected_at(&c, &v, "/results/0/verdict", "value must be 'supported'");
    let v = changed(|v| v["ledger"][0]["evidence"]["window"]["semantics"] = json!("overlap"));
    rejected_at(&c, &v, "/ledger/0/evidence/window/semantics", "value must be 'contain'");
    let v = changed(|v| v["results"][0]["parts"][0]["gates"][0]["status"] = json!("maybe"));
    rejected_at(&c, &v, "/results/0/parts/0/gates/0/status", "value must be 'pass'");
}

/// A set of windows (`over:`) writes every declared field of `values` null, and its samples
/// hold the values: the schema takes exactly the analysis's fields there, each null.
#[test]
fn values_of_a_set_of_windows_are_every_field_null() {
    let c = compiled();
    let set_of_windows = |e: &Value| {
        e["evidence"]["samples"].as_array().is_some_and(|s| !s.is_empty())
            && e["evidence"]["values"].as_object().is_some_and(|v| v.values().all(Value::is_null))
    };
    let found = examples().into_iter().map(|p| read(&p)).find_map(|a| {
        let i = a["ledger"].as_array()?.iter().position(set_of_windows)?;
        Some((a, i))
    });
    let Some((a, i)) = found else {
        panic!("no example ledger has a set of windows");
    };
    let values = a["ledger"][i]["evidence"]["values"].as_object().unwrap();
    let key = values.keys().next().unwrap().clone();
    let at = format!("/ledger/{i}/evidence/values");
    // One field of the set's null values given a number, one left out, one added: each fails.
    let mut v = a.clone();
    v["ledger"][i]["evidence"]["values"][&key] = json!(1);
    assert!(!errors(&c, &v).is_empty(), "{key} = 1");
    let mut v = a.clone();
    v["ledger"][i]["evidence"]["values"].as_object_mut().unwrap().remove(&key);
    assert!(errors(&c, &v).iter().any(|(l, _)| *l == at), "{key} left out");
    let mut v = a;
    v["ledger"][i]["evidence"]["values"]["not_a_field"] = Value::Null;
    assert!(errors(&c, &v).iter().any(|(l, _)| *l == at), "not_a_field");
}

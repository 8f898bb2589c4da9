//! `verdict eval` on the example of six answers in two groups: every score against the hand
//! count in `claims/eval-day26/SCORES.md`, the groups, and the conditions that make the
//! comparison not controlled.

mod util;

use serde_json::Value;
use util::{run_in, run_json};

/// The hand count: claims, supported, partially supported, unverifiable, not supported,
/// measurable parts, met evidence, R1-R4 failures, stated numbers and arithmetic that do not
/// hold, causal parts without A/B, key agreements and disagreements.
const HAND: [(&str, [i64; 17]); 6] = [
    ("blind-1.yaml", [5, 0, 2, 2, 1, 4, 4, 0, 0, 0, 0, 2, 1, 4, 0, 2, 1]),
    ("blind-2.yaml", [4, 1, 1, 2, 0, 4, 3, 0, 1, 0, 1, 0, 0, 2, 1, 1, 2]),
    ("blind-3.yaml", [4, 0, 0, 3, 1, 3, 1, 0, 0, 1, 1, 0, 0, 2, 0, 0, 3]),
    ("aware-1.yaml", [4, 1, 3, 0, 0, 5, 5, 0, 0, 0, 0, 0, 0, 3, 0, 3, 0]),
    ("aware-2.yaml", [5, 2, 3, 0, 0, 5, 5, 0, 0, 0, 0, 1, 0, 3, 0, 3, 0]),
    ("aware-3.yaml", [4, 0, 3, 1, 0, 4, 3, 1, 0, 0, 0, 0, 0, 3, 0, 2, 1]),
];

const SCORES: [&str; 17] = [
    "claims",
    "supported",
    "partially_supported",
    "unverifiable",
    "not_supported",
    "measurable_parts",
    "met_evidence",
    "r1_failures",
    "r2_failures",
    "r3_failures",
    "r4_failures",
    "says_failed",
    "arithmetic_failed",
    "causal_without_ab",
    "causal_on_one_trace",
    "key_agree",
    "key_disagree",
];

fn evaluation() -> Value {
    run_json(&["eval", "claims/eval-day26/eval.yaml", "--json"])
}

#[test]
fn every_answer_scores_as_counted_by_hand() {
    let ev = evaluation();
    let answers = ev["answers"].as_array().unwrap();
    assert_eq!(answers.len(), 6);
    for (file, expected) in HAND {
        let a = answers.iter().find(|a| a["claims"] == file).unwrap();
        for (score, want) in SCORES.iter().zip(expected) {
            assert_eq!(a["scores"][score], want, "{file} {score}");
            // Every count stands for that many claims, parts or gates.
            let traced =
                a["traces"].as_array().unwrap().iter().filter(|t| t["score"] == *score).count();
            assert_eq!(traced as i64, want, "{file} {score} traces");
        }
    }
    // The scope errors point at their gate: blind-2's flash count over devices 1-7 read as
    // device 4's fails R2 and R4 on one part.
    let b2 = answers.iter().find(|a| a["claims"] == "blind-2.yaml").unwrap();
    let gates: Vec<&str> = b2["traces"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["score"].as_str().unwrap().ends_with("_failures"))
        .map(|t| t["at"].as_str().unwrap())
        .collect();
    assert_eq!(gates.len(), 2, "{gates:?}");
    assert!(gates.iter().any(|g| g.ends_with(" R2")) && gates.iter().any(|g| g.ends_with(" R4")));
}

#[test]
fn groups_are_summarised_and_compared_with_their_n() {
    let ev = evaluation();
    // Lower medians of three answers (the second smallest), by hand from the table above.
    let median = |group: &str, i: usize| {
        let mut v: Vec<i64> =
            HAND.iter().filter(|(f, _)| f.starts_with(group)).map(|(_, s)| s[i]).collect();
        v.sort_unstable();
        v[1]
    };
    for (i, score) in SCORES.iter().enumerate() {
        assert_eq!(ev["groups"]["profile-blind"][score]["median"], median("blind", i), "{score}");
        assert_eq!(ev["groups"]["profile-aware"][score]["median"], median("aware", i), "{score}");
        assert_eq!(ev["groups"]["profile-blind"][score]["n"], 3);
    }
    // Groups in name order: aware first, so each difference is blind minus aware.
    let met = ev["differences"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["score"] == "met_evidence")
        .unwrap();
    assert_eq!(met["groups"], serde_json::json!(["profile-aware", "profile-blind"]));
    assert_eq!(met["delta"], median("blind", 6) - median("aware", 6));
    assert_eq!(met["few"], true);
    assert!(met["p_value"].as_f64().is_some() && met["interval"].is_array());
}

#[test]
fn a_held_condition_that_varies_makes_the_comparison_not_controlled() {
    let ev = evaluation();
    assert_eq!(ev["controlled"], false);
    assert_eq!(ev["uncontrolled"], serde_json::json!(["model"]));
    // The manipulated condition varies as it should, and is listed.
    assert_eq!(ev["varied"]["tools"], serde_json::json!(["none", "nsys-sqlite"]));
    // Terminal output says so.
    let out = run_in(None, &["eval", "claims/eval-day26/eval.yaml"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("not controlled") && text.contains("model"), "{text}");
}

#[test]
fn eval_file_errors_name_their_place() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("e.yaml");
    std::fs::write(
        &p,
        r#"eval:
  id: x
  languages: [en]
  title: { en: x }
  held: [group]
answers:
  - claims: missing.yaml
    conditions: { model: m }
key:
  verdicts: { a: maybe }
"#,
    )
    .unwrap();
    let out = run_in(None, &["eval", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("e.yaml:5:") && err.contains("names `group`"), "{err}");
    assert!(err.contains("e.yaml:7:") && err.contains("does not exist"), "{err}");
    assert!(err.contains("states no `group` condition"), "{err}");
    assert!(err.contains("e.yaml:10:") && err.contains("`maybe` is not a verdict"), "{err}");
}

#[test]
fn one_scan_for_every_answer_judges_as_each_check_does() {
    // The eval reads the trace once for all six answers; each answer's verdicts are those of
    // its own `verdict check`.
    let ev = evaluation();
    for a in ev["answers"].as_array().unwrap() {
        let file = format!("claims/eval-day26/{}", a["claims"].as_str().unwrap());
        let check = run_json(&["check", &file, "--json"]);
        for r in check["results"].as_array().unwrap() {
            let id = r["id"].as_str().unwrap();
            assert_eq!(a["verdicts"][id], r["verdict"], "{file} {id}");
        }
        assert_eq!(
            a["scores"]["r1_failures"].as_i64().unwrap()
                + a["scores"]["r2_failures"].as_i64().unwrap()
                + a["scores"]["r3_failures"].as_i64().unwrap()
                + a["scores"]["r4_failures"].as_i64().unwrap(),
            check["summary"]["gate_failures"],
            "{file}"
        );
    }
}

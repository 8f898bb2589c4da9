//! `verdict eval` on the example of six answers in two groups: every score against the hand
//! count in `claims/eval-day26/SCORES.md`, the groups, and the conditions that make the
//! comparison not controlled.

use crate::util;

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

/// The claims file an answer sheet shows, found by its claims' statements (independently of
/// the shuffle that made the sheets).
fn answer_of_sheet(sheet: &str) -> String {
    let dir = std::path::Path::new("claims/eval-day26");
    let mut found = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_str().unwrap().to_string();
        if !name.ends_with(".yaml") || name == "eval.yaml" {
            continue;
        }
        let audit = run_json(&["check", p.to_str().unwrap(), "--json"]);
        let all = audit["claims"]["claims"].as_array().unwrap().iter().all(|c| {
            sheet.contains(&format!(
                "`{}`: {}",
                c["id"].as_str().unwrap(),
                c["statement"]["en"].as_str().unwrap()
            ))
        });
        if all {
            found.push(name);
        }
    }
    assert_eq!(found.len(), 1, "{found:?}");
    found.remove(0)
}

#[test]
fn review_sheets_are_blind_current_and_round_trip_through_the_grades() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_in(
        None,
        &["eval", "claims/eval-day26/eval.yaml", "--review-sheets", dir.path().to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The committed sheets are what the command writes.
    for name in ["S01.md", "S02.md", "S03.md", "S04.md", "S05.md", "S06.md", "grades.csv"] {
        let fresh = std::fs::read_to_string(dir.path().join(name)).unwrap();
        let committed = std::fs::read_to_string(format!("out/eval-day26-sheets/{name}")).unwrap();
        assert_eq!(fresh, committed, "out/eval-day26-sheets/{name} drifted");
    }
    // Blind: no group, condition, file or source name on any sheet.
    let eval = std::fs::read_to_string("claims/eval-day26/eval.yaml").unwrap();
    let mut sheet_answer = Vec::new();
    for i in 1..=6 {
        let sheet = std::fs::read_to_string(dir.path().join(format!("S0{i}.md"))).unwrap();
        for secret in [
            "profile-blind",
            "profile-aware",
            "blind",
            "aware",
            "nsys-sqlite",
            "m-2026-05-01",
            "m-2026-06-15",
            ".yaml",
        ] {
            assert!(eval.contains(secret) || secret == ".yaml");
            assert!(!sheet.to_lowercase().contains(secret), "S0{i} shows `{secret}`");
        }
        sheet_answer.push(answer_of_sheet(&sheet));
    }
    // Unblinded, each reviewer's grade of a sheet lands on the answer the sheet shows.
    let ev = run_json(&[
        "eval",
        "claims/eval-day26/eval.yaml",
        "--grades",
        "claims/eval-day26/grades-lin.csv",
        "claims/eval-day26/grades-chen.csv",
        "--json",
    ]);
    let lin = std::fs::read_to_string("claims/eval-day26/grades-lin.csv").unwrap();
    for (i, line) in lin.lines().skip(1).enumerate() {
        let cells: Vec<&str> = line.split(',').collect();
        let answer = &sheet_answer[i];
        let k = ev["answers"]
            .as_array()
            .unwrap()
            .iter()
            .position(|a| a["claims"] == answer.as_str())
            .unwrap();
        let (sheet, grades) = (&ev["review"]["answers"][k][0], &ev["review"]["answers"][k][1]);
        assert_eq!(sheet, cells[0]);
        let g = grades.as_array().unwrap().iter().find(|g| g["reviewer"] == "lin").unwrap();
        assert_eq!(g["usefulness"].to_string(), cells[2], "{answer}");
        assert_eq!(g["next_step"], cells[3], "{answer}");
    }
    // Agreement, by hand from the two files (sheets S01-S06):
    // next step: lin g p p g g p, chen g pa p g g p: p_o = 5/6, p_e = 9/36 + 6/36 = 15/36,
    // kappa = (30/36 - 15/36) / (21/36) = 5/7;
    // usefulness: lin 5 2 1 4 4 1, chen 5 2 2 4 3 1: p_o = 4/6, p_e = 7/36,
    // kappa = (24/36 - 7/36) / (29/36) = 17/29.
    let ag = &ev["review"]["agreement"][0];
    assert!((ag["next_step_kappa"].as_f64().unwrap() - 5.0 / 7.0).abs() < 1e-12);
    assert!((ag["usefulness_kappa"].as_f64().unwrap() - 17.0 / 29.0).abs() < 1e-12);
    // The human scores join the rubric's: aware-2 (S01) got 5 from both.
    let a2 =
        ev["answers"].as_array().unwrap().iter().find(|a| a["claims"] == "aware-2.yaml").unwrap();
    assert_eq!(a2["scores"]["next_step_good"], 2);
    // Grades that do not hold are refused, each named.
    let bad = dir.path().join("bad.csv");
    std::fs::write(
        &bad,
        "sheet,reviewer,usefulness,next_step,notes\nS01,x,9,good,\nS02,x,3,great,\n",
    )
    .unwrap();
    let out =
        run_in(None, &["eval", "claims/eval-day26/eval.yaml", "--grades", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("usefulness `9` is not 1 to 5"), "{err}");
    assert!(err.contains("next step `great`"), "{err}");
    assert!(err.contains("sheet S03 is not graded"), "{err}");
}

#[test]
fn the_committed_eval_report_is_current() {
    // The README's command for the example's report, into a temporary folder: every file
    // equals the committed one (the PDFs where typst made them here).
    let dir = tempfile::tempdir().unwrap();
    let out = util::verdict()
        .args([
            "eval",
            "claims/eval-day26/eval.yaml",
            "--grades",
            "claims/eval-day26/grades-lin.csv",
            "claims/eval-day26/grades-chen.csv",
            "--out",
        ])
        .arg(dir.path())
        .env("SOURCE_DATE_EPOCH", "1789344000")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut n = 0;
    for e in std::fs::read_dir(dir.path()).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_str().unwrap().to_string();
        let committed = std::fs::read(format!("out/{name}"))
            .unwrap_or_else(|_| panic!("out/{name} is not committed"));
        // The build commit is the renderer's: blanked on both sides.
        let fresh = std::fs::read(&p).unwrap();
        if let (Some(a), Some(b)) =
            (util::without_build(&name, &committed), util::without_build(&name, &fresh))
        {
            assert!(a == b, "out/{name} drifted: rerun the eval with --out out");
        }
        n += 1;
    }
    // Markdown, Typst and the chart in two languages, and the JSON, at least.
    assert!(n >= 7, "{n}");
    let md = std::fs::read_to_string("out/eval-day26.en.md").unwrap();
    assert!(md.contains("Not controlled") && md.contains("model"));
    assert!(!md.contains("n = 1 is an anecdote"));
    assert!(md.contains("Few answers per group"), "{md}");
}

#[test]
fn answers_may_share_the_evals_traces_and_scopes_and_come_from_a_glob() {
    let dir = tempfile::tempdir().unwrap();
    let answers = dir.path().join("answers");
    std::fs::create_dir(&answers).unwrap();
    // Two answers that name no trace or scope of their own: the eval's are theirs.
    for (name, says) in [("run-a", "17.8%"), ("run-b", "30%")] {
        std::fs::write(
            answers.join(format!("{name}.yaml")),
            format!(
                r#"report: {{ id: {name}, languages: [en], title: {{ en: {name} }} }}
claims:
  - id: exposed-nccl
    statement: {{ en: "exposed NCCL is about {says} of the step" }}
    principal: share
    parts:
      - id: share
        kind: observation
        measure: {{ analysis: overlap, scope: step-dev4, value: "nccl_only_ns / total_ns", unit: "%" }}
        says: "{says}"
"#
            ),
        )
        .unwrap();
    }
    let trace = std::fs::canonicalize("fixtures/day26/megatron.sqlite").unwrap();
    let eval = dir.path().join("eval.yaml");
    std::fs::write(
        &eval,
        format!(
            r#"eval: {{ id: shared, languages: [en], title: {{ en: shared }} }}
traces:
  A: {{ path: "{}" }}
scopes:
  step-dev4: {{ trace: A, window: "39.964:46.123", devices: "4", semantics: contain }}
answers:
  - claims: "answers/*.yaml"
    conditions: {{ group: g }}
"#,
            trace.display()
        ),
    )
    .unwrap();
    let ev = run_json(&["eval", eval.to_str().unwrap(), "--json"]);
    let a = ev["answers"].as_array().unwrap();
    assert_eq!(a.len(), 2);
    // Sorted, each with its file stem as the run.
    assert_eq!(a[0]["claims"], "answers/run-a.yaml");
    assert_eq!(a[0]["conditions"]["run"], "run-a");
    assert_eq!(a[1]["conditions"]["run"], "run-b");
    // 17.8% holds at its precision on device 4's step (the article's number); 30% does not.
    assert_eq!(
        (a[0]["scores"]["says_failed"].as_i64(), a[1]["scores"]["says_failed"].as_i64()),
        (Some(0), Some(1))
    );
    assert_eq!(a[0]["scores"]["met_evidence"], 1);
}

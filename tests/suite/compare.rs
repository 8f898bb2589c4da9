//! `compare` and the causal rules, on the synthetic TP4/TP8 pair (`fixtures/ab`, a known 8%
//! step-time effect) and the mfu before/after captures. Medians and deltas are checked against
//! SQL over the fixtures; the Moses interval against the pairwise differences and an exact
//! rank counted here; the bootstrap interval against a second implementation of its
//! disclosed draws written here; the rank test against a hand-computed exact p-value; and each
//! rule of a causal part by a claims file that only that rule decides.

use crate::util;

use std::path::{Path, PathBuf};

use serde_json::Value;
use util::{fixture, moses_rank, open_ro, run_in, run_json};

/// The ProfilerStep lengths of device 0's process, by SQL over `NVTX_EVENTS`.
fn step_lengths(trace: &Path) -> Vec<i64> {
    let c = open_ro(trace);
    let pid: i64 = c
        .query_row(
            "SELECT DISTINCT (globalPid >> 24) & 16777215 FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId = 0",
            [],
            |r| r.get(0),
        )
        .unwrap();
    c.prepare(
        "SELECT \"end\" - start FROM NVTX_EVENTS WHERE eventType = 59 AND text LIKE 'ProfilerStep#%'
         AND ((globalTid >> 24) & 16777215) = ?1 ORDER BY start",
    )
    .unwrap()
    .query_map([pid], |r| r.get(0))
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

use util::reference::lower_median;

/// The 95% percentile bootstrap interval of median(B) - median(A): 10,000 resamples, A's
/// indices then B's from one stream, each side sorted first; ranks 250 and 9,750.
fn bootstrap(a: &[i64], b: &[i64], seed: u64) -> (i64, i64) {
    let mut sa = a.to_vec();
    sa.sort_unstable();
    let mut sb = b.to_vec();
    sb.sort_unstable();
    let mut rng = util::SplitMix64(seed);
    let mut diffs: Vec<i64> = (0..10_000)
        .map(|_| {
            let ra: Vec<i64> =
                (0..sa.len()).map(|_| sa[rng.below(sa.len() as u64) as usize]).collect();
            let rb: Vec<i64> =
                (0..sb.len()).map(|_| sb[rng.below(sb.len() as u64) as usize]).collect();
            lower_median(&rb) - lower_median(&ra)
        })
        .collect();
    diffs.sort_unstable();
    (diffs[249], diffs[9_749])
}

fn ab(name: &str) -> PathBuf {
    fixture(&format!("ab/{name}.sqlite"))
}

fn compare_steps(extra: &[&str]) -> Value {
    let (a, b) = (ab("tp4"), ab("tp8"));
    let mut args = vec![
        "query".to_string(),
        "compare".into(),
        "--of".into(),
        "overlap".into(),
        "--metric".into(),
        "total_ns".into(),
    ];
    for (flag, t) in [("--a", &a), ("--b", &b)] {
        for kv in [
            format!("trace={}", t.display()),
            "devices=0".into(),
            "nvtx=ProfilerStep#*".into(),
            "index=all".into(),
        ] {
            args.push(flag.into());
            args.push(kv);
        }
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    args.push("--json".into());
    run_json(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

#[test]
fn medians_delta_and_interval_agree_with_sql_and_a_second_bootstrap() {
    let (a, b) = (step_lengths(&ab("tp4")), step_lengths(&ab("tp8")));
    assert_eq!((a.len(), b.len()), (12, 12));
    let v = &compare_steps(&[])["values"];
    assert_eq!(v["n_a"], 12);
    assert_eq!(v["n_b"], 12);
    assert_eq!(v["a_median"], lower_median(&a));
    assert_eq!(v["b_median"], lower_median(&b));
    assert_eq!(v["delta"], lower_median(&b) - lower_median(&a));
    // The generator's construction: B's steps are 8% shorter in expectation, jittered by
    // at most 1.5%; the lower medians land within that.
    let change = (lower_median(&b) - lower_median(&a)) as f64 / lower_median(&a) as f64;
    assert!((-0.095..-0.065).contains(&change), "{change}");
    // Every sample is one step: the samples are the step lengths, in order.
    let samples: Vec<i64> = v["a"]["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["scaled"].as_i64().unwrap())
        .collect();
    assert_eq!(samples, a);
    // The judged interval: the Moses interval of the Hodges-Lehmann shift, the C-th smallest
    // and C-th largest of the 144 differences b - a, C from the exact null distribution of U
    // counted here by subsets of ranks.
    let c = moses_rank(12, 12);
    assert_eq!(c, 38, "the tabled two-sided 5% critical U of 12 vs 12 is 37");
    let mut d: Vec<i64> = b.iter().flat_map(|y| a.iter().map(move |x| y - x)).collect();
    d.sort_unstable();
    assert_eq!((v["ci_low"].as_i64(), v["ci_high"].as_i64()), (Some(d[c - 1]), Some(d[144 - c])));
    // The bootstrap of the medians stays beside it, redone from its disclosed seed.
    let seed: u64 = 0x7665_7264_6963_7421;
    let boot = |v: &Value| {
        let n = |k: &str| v["bootstrap"][k].as_str().and_then(|x| x.parse::<i64>().ok());
        (n("low"), n("high"))
    };
    let (lo, hi) = bootstrap(&a, &b, seed);
    assert_eq!(boot(v), (Some(lo), Some(hi)));
    // Another seed, another draw: the same for both implementations.
    let other = compare_steps(&["--seed", "42"]);
    let (lo, hi) = bootstrap(&a, &b, 42);
    assert_eq!(boot(&other["values"]), (Some(lo), Some(hi)));
    assert_eq!(other["parameters"]["seed"], 42);
    // Every TP4 step is longer than every TP8 step: U_A = 12 * 12 (doubled 288), and the exact
    // two-sided p is 2 / C(24, 12) = 2 / 2,704,156 = 1 / 1,352,078.
    assert!(a.iter().all(|x| b.iter().all(|y| x > y)));
    let rt = &v["rank_test"];
    assert_eq!(rt["u_a_doubled"], 288);
    assert_eq!(rt["method"], "exact");
    assert_eq!(rt["p_exact"], serde_json::json!(["1", "1352078"]));
}

#[test]
fn per_name_deltas_are_the_totals_of_each_side() {
    // Kernel totals per name on device 0 over each side's steps, by SQL.
    let totals = |t: &Path| -> std::collections::BTreeMap<String, i64> {
        open_ro(t)
            .prepare(
                "SELECT s.value, sum(k.\"end\" - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName
                 WHERE k.deviceId = 0 GROUP BY 1",
            )
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let (ta, tb) = (totals(&ab("tp4")), totals(&ab("tp8")));
    let (a, b) = (ab("tp4"), ab("tp8"));
    // The top-3 limit of the kernels query is not a limit of the per-name table.
    let v = run_json(&[
        "query",
        "compare",
        "--of",
        "kernels",
        "--metric",
        "total_ns",
        "--param",
        "limit=3",
        "--a",
        &format!("trace={}", a.display()),
        "--a",
        "devices=0",
        "--a",
        "nvtx=ProfilerStep#*",
        "--a",
        "index=all",
        "--b",
        &format!("trace={}", b.display()),
        "--b",
        "devices=0",
        "--b",
        "nvtx=ProfilerStep#*",
        "--b",
        "index=all",
        "--json",
    ]);
    let rows = v["values"]["names"]["rows"].as_array().unwrap();
    assert_eq!(
        rows.len(),
        ta.keys().chain(tb.keys()).collect::<std::collections::BTreeSet<_>>().len()
    );
    for r in rows {
        let name = r["name"].as_str().unwrap();
        let (x, y) = (ta.get(name).copied().unwrap_or(0), tb.get(name).copied().unwrap_or(0));
        assert_eq!(
            (r["a_total_ns"].as_i64(), r["b_total_ns"].as_i64()),
            (Some(x), Some(y)),
            "{name}"
        );
        assert_eq!(r["delta_ns"], y - x, "{name}");
        let only = match (ta.contains_key(name), tb.contains_key(name)) {
            (true, false) => Value::from("a"),
            (false, true) => Value::from("b"),
            _ => Value::Null,
        };
        assert_eq!(r["only_in"], only, "{name}");
    }
    // Sorted by the size of the change.
    let sizes: Vec<i64> = rows.iter().map(|r| r["delta_ns"].as_i64().unwrap().abs()).collect();
    assert!(sizes.windows(2).all(|w| w[0] >= w[1]), "{sizes:?}");
}

/// A claims file over the TP pair with one causal part `p` whose measure, condition and
/// experiment are given, written into a temporary folder; returns the part's result.
fn causal(measure: &str, condition: &str, experiment: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (ab("tp4"), ab("tp8"));
    let yaml = format!(
        r#"report: {{ id: t, languages: [en], title: {{ en: t }} }}
traces:
  a: {{ path: "{}" }}
  b: {{ path: "{}" }}
scopes:
  a-steps: {{ trace: a, devices: "0", window: {{ nvtx: "ProfilerStep#*", index: all }} }}
  b-steps: {{ trace: b, devices: "0", window: {{ nvtx: "ProfilerStep#*", index: all }} }}
  a-four: {{ trace: a, devices: "0", window: {{ nvtx: "ProfilerStep#*", index: 0-3 }} }}
  b-four: {{ trace: b, devices: "0", window: {{ nvtx: "ProfilerStep#*", index: 0-3 }} }}
  a-one: {{ trace: a, devices: "0", window: {{ nvtx: "ProfilerStep#*", index: 0 }} }}
  b-one: {{ trace: b, devices: "0", window: {{ nvtx: "ProfilerStep#*", index: 0 }} }}
  a-whole: {{ trace: a, devices: "0" }}
  b-whole: {{ trace: b, devices: "0" }}
  a-all: {{ trace: a }}
claims:
  - id: c
    statement: {{ en: "TP8 is faster" }}
    principal: p
    parts:
      - id: p
        kind: causal
        measure: {{ analysis: compare, {measure} }}
        {condition}
        {experiment}
"#,
        a.display(),
        b.display()
    );
    let path = dir.path().join("c.yaml");
    std::fs::write(&path, yaml).unwrap();
    let audit = run_json(&["check", path.to_str().unwrap(), "--json"]);
    audit["results"][0]["parts"][0].clone()
}

const STEPS: &str =
    "scope: a-steps, versus: b-steps, of: overlap, metric: total_ns, value: change, unit: \"%\"";
const CONTROLLED: &str =
    "experiment: { controlled: true, held: [checkpoint, global-batch, data], expect: decrease }";
const UNCONTROLLED: &str = "experiment: { controlled: false, expect: decrease }";
/// Controlled, and its author says why the steps of one capture per side may stand for runs.
const JUSTIFIED: &str = "experiment: { controlled: true, held: [checkpoint, global-batch, data], expect: decrease, within_run: { en: \"warm, fixed data order\" } }";

fn outcome(p: &Value) -> (&str, &str) {
    (p["outcome"].as_str().unwrap(), p["reason"]["key"].as_str().unwrap())
}

#[test]
fn steps_inside_one_capture_cap_a_controlled_effect_unless_the_author_says_why() {
    // 12 steps of one capture per side: within-run variation only.
    let p = causal(STEPS, "condition: { at_most: \"-5%\" }", CONTROLLED);
    assert_eq!(outcome(&p), ("partially_supported", "part.compare_within_run"), "{p}");
    assert_eq!(p["reason"]["args"]["unit"], "step", "{p}");
    // Declared and justified: supported, the reason quoting the author.
    let p = causal(STEPS, "condition: { at_most: \"-5%\" }", JUSTIFIED);
    assert_eq!(outcome(&p), ("supported", "part.compare_supported_within_run"), "{p}");
    assert_eq!(p["reason"]["args"]["why_en"], "warm, fixed data order", "{p}");
    // Declaring `sample: run` over one capture per side is an error at its place.
    let dir = tempfile::tempdir().unwrap();
    let yaml = format!(
        "report: {{ id: t, languages: [en], title: {{ en: t }} }}\ntraces:\n  a: {{ path: \"{}\" }}\nscopes:\n  s: {{ trace: a, devices: \"0\", window: {{ nvtx: \"ProfilerStep#*\", index: all }} }}\nclaims:\n  - id: c\n    statement: {{ en: x }}\n    principal: p\n    parts:\n      - id: p\n        kind: causal\n        measure: {{ analysis: compare, scope: s, versus: s, of: overlap, metric: total_ns, value: delta, sample: run }}\n",
        ab("tp4").display()
    );
    let path = dir.path().join("c.yaml");
    std::fs::write(&path, yaml).unwrap();
    let out = run_in(None, &["check", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("c.yaml:13:")
            && err.contains("`sample: run`, but the sides' scopes give one sample per step"),
        "{err}"
    );
}

#[test]
fn the_same_effect_uncontrolled_is_partially_supported() {
    let p = causal(STEPS, "condition: { at_most: \"-5%\" }", UNCONTROLLED);
    assert_eq!(outcome(&p), ("partially_supported", "part.compare_uncontrolled"), "{p}");
    // Without any experiment declared, the same.
    let p = causal(STEPS, "condition: { at_most: \"-5%\" }", "");
    assert_eq!(outcome(&p), ("partially_supported", "part.compare_uncontrolled"), "{p}");
}

#[test]
fn few_samples_make_a_controlled_effect_partial() {
    let four =
        "scope: a-four, versus: b-four, of: overlap, metric: total_ns, value: change, unit: \"%\"";
    let p = causal(four, "condition: { at_most: \"-5%\" }", CONTROLLED);
    assert_eq!(outcome(&p), ("partially_supported", "part.compare_few"), "{p}");
}

#[test]
fn an_interval_that_excludes_the_claimed_effect_is_not_supported() {
    // The interval is about -9% to -7%: a 20% cut is outside all of it, in steps the author
    // declares stand for runs.
    let p = causal(STEPS, "condition: { at_most: \"-20%\" }", JUSTIFIED);
    assert_eq!(outcome(&p), ("not_supported", "part.compare_excludes"), "{p}");
    // The claimed direction is up; the interval lies below zero.
    let up = "experiment: { controlled: true, expect: increase, within_run: { en: \"warm\" } }";
    let p = causal(STEPS, "condition: { at_least: \"0%\" }", up);
    assert_eq!(outcome(&p), ("not_supported", "part.compare_against"), "{p}");
}

/// What keeps a comparison from supporting a cause keeps it from refuting one: the same
/// intervals against the claim, in steps of one capture per side without the author's reason,
/// uncontrolled, or over four steps a side, leave the part open with the direction stated.
#[test]
fn a_comparison_that_could_not_support_a_cause_cannot_refute_it() {
    let cases = [
        (CONTROLLED, "part.compare_against_within_run"),
        (UNCONTROLLED, "part.compare_against_uncontrolled"),
        ("", "part.compare_against_uncontrolled"),
    ];
    // The same interval and value the decisive comparison refutes with.
    let decisive = causal(STEPS, "condition: { at_most: \"-20%\" }", JUSTIFIED);
    assert_eq!(outcome(&decisive), ("not_supported", "part.compare_excludes"), "{decisive}");
    for (experiment, key) in cases {
        let p = causal(STEPS, "condition: { at_most: \"-20%\" }", experiment);
        assert_eq!(outcome(&p), ("unverifiable", key), "{p}");
        // The observed direction and interval are stated, as the decisive reason states them.
        for arg in ["interval", "value", "p"] {
            assert_eq!(p["reason"]["args"][arg], decisive["reason"]["args"][arg], "{arg}: {p}");
        }
    }
    let up = "experiment: { controlled: true, expect: increase }";
    let p = causal(STEPS, "condition: { at_least: \"0%\" }", up);
    assert_eq!(outcome(&p), ("unverifiable", "part.compare_against_within_run"), "{p}");
    let four =
        "scope: a-four, versus: b-four, of: overlap, metric: total_ns, value: change, unit: \"%\"";
    let p = causal(four, "condition: { at_most: \"-20%\" }", JUSTIFIED);
    assert_eq!(outcome(&p), ("unverifiable", "part.compare_against_few"), "{p}");
}

#[test]
fn an_interval_that_includes_no_change_leaves_the_cause_open() {
    // TP4 against itself: every difference is 0.
    let same = "scope: a-steps, versus: a-steps, of: overlap, metric: total_ns, value: change, unit: \"%\"";
    let p = causal(same, "condition: { at_most: \"-5%\" }", JUSTIFIED);
    // The condition fails at 0, but the interval [0, 0] is not wholly outside -5%... it is:
    // every value of it fails, so the claimed cut is excluded.
    assert_eq!(outcome(&p), ("not_supported", "part.compare_excludes"), "{p}");
    let p = causal(same, "", CONTROLLED);
    assert_eq!(outcome(&p), ("unverifiable", "part.compare_open"), "{p}");
}

#[test]
fn one_sample_per_side_gives_no_verdict_on_a_cause() {
    let one = "scope: a-one, versus: b-one, of: overlap, metric: total_ns, value: delta, unit: ms";
    let p = causal(one, "condition: { below: \"0 ms\" }", CONTROLLED);
    assert_eq!(outcome(&p), ("unverifiable", "part.compare_one_sample"), "{p}");
}

#[test]
fn the_direction_of_a_ratio_is_read_around_one_and_a_range_claim_by_overlap() {
    // B / A is about 0.92: "at most 0.95x" claims a decrease (below 1), and holds.
    let ratio =
        "scope: a-steps, versus: b-steps, of: overlap, metric: total_ns, value: ratio, unit: x";
    let justified = "experiment: { controlled: true, within_run: { en: \"warm\" } }";
    let p = causal(ratio, "condition: { at_most: \"0.95x\" }", justified);
    assert_eq!(outcome(&p), ("supported", "part.compare_supported_within_run"), "{p}");
    // A range inside the interval (-8.9% to -7.1%) is not excluded, although the point value
    // (-8.4%) lies outside it: the comparison leaves it open.
    let p = causal(STEPS, "condition: { between: [\"-7.5%\", \"-7.2%\"] }", CONTROLLED);
    assert_eq!(outcome(&p), ("unverifiable", "part.compare_open"), "{p}");
    // A range wholly outside the interval is.
    let p = causal(STEPS, "condition: { between: [\"-30%\", \"-20%\"] }", JUSTIFIED);
    assert_eq!(outcome(&p), ("not_supported", "part.compare_excludes"), "{p}");
    // Any other formula states its direction itself.
    let other = "scope: a-steps, versus: b-steps, of: overlap, metric: total_ns, value: \"a_median - b_median\", unit: ms";
    let p = causal(other, "condition: { at_least: \"1 ms\" }", "experiment: { controlled: true }");
    assert_eq!(outcome(&p), ("unverifiable", "part.compare_no_direction"), "{p}");
    let p = causal(other, "condition: { at_least: \"1 ms\" }", JUSTIFIED);
    assert_eq!(outcome(&p), ("supported", "part.compare_supported_within_run"), "{p}");
}

#[test]
fn a_causal_part_without_a_direction_is_open() {
    let p = causal(STEPS, "", "experiment: { controlled: true }");
    assert_eq!(outcome(&p), ("unverifiable", "part.compare_no_direction"), "{p}");
}

#[test]
fn gates_compare_the_two_sides() {
    // R1: NVTX steps against the whole trace: two phases.
    let mixed = "scope: a-whole, versus: b-steps, of: overlap, metric: total_ns, value: change, unit: \"%\"";
    let p = causal(mixed, "condition: { at_most: \"-5%\" }", CONTROLLED);
    let r1 = p["gates"].as_array().unwrap().iter().find(|g| g["gate"] == "R1").unwrap();
    assert_eq!(
        (r1["status"].as_str(), r1["finding"]["key"].as_str()),
        (Some("fail"), Some("gate.r1.compare_phases_differ")),
        "{p}"
    );
    assert_eq!(outcome(&p), ("unverifiable", "part.gate_failed"), "{p}");
    // R2: one device against eight.
    let pop = "scope: a-all, versus: b-whole, of: kernels, metric: total_ns, value: change, unit: \"%\", split: 4";
    let p = causal(pop, "condition: { below: \"0%\" }", CONTROLLED);
    let r2 = p["gates"].as_array().unwrap().iter().find(|g| g["gate"] == "R2").unwrap();
    assert_eq!(
        (r2["status"].as_str(), r2["finding"]["key"].as_str()),
        (Some("fail"), Some("gate.r2.compare_populations_differ")),
        "{p}"
    );
    // R1 on totals over windows of different lengths: ten splits of ~12 s against 4 of ~11 s.
    let lengths = "scope: a-whole, versus: b-whole, of: kernels, metric: total_ns, value: change, unit: \"%\", split: 10";
    let p = causal(lengths, "condition: { below: \"0%\" }", CONTROLLED);
    let r1 = p["gates"].as_array().unwrap().iter().find(|g| g["gate"] == "R1").unwrap();
    assert_eq!(r1["status"], "fail", "{p}");
    assert_eq!(r1["finding"]["key"], "gate.r1.compare_lengths_differ", "{p}");
}

#[test]
fn every_comparison_of_an_audit_is_reproduced_by_its_command() {
    // The mfu audit (split windows, kernels with a match, a comparison over two devices), the
    // TP audit (NVTX steps, traces with expected devices) and the TP runs (runs as
    // replicates): the commands give the same evidence.
    for (claims, expected) in
        [("claims/mfu-2gpu-ab.yaml", 4), ("claims/tp-ab.yaml", 2), ("claims/tp-runs-ab.yaml", 2)]
    {
        let audit = run_json(&["check", claims, "--json"]);
        let mut n = 0;
        for e in audit["ledger"].as_array().unwrap() {
            if e["evidence"]["analysis"] != "compare" {
                continue;
            }
            n += 1;
            let argv: Vec<&str> =
                e["argv"].as_array().unwrap().iter().map(|w| w.as_str().unwrap()).collect();
            let again = run_json(&argv[1..]);
            assert_eq!(again["values"], e["evidence"]["values"], "{}", e["command"]);
        }
        assert_eq!(n, expected, "{claims}");
    }
}

#[test]
fn claims_errors_name_their_place() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.yaml");
    std::fs::write(
        &p,
        format!(
            r#"report: {{ id: x, languages: [en], title: {{ en: x }} }}
traces:
  a: {{ path: "{}" }}
scopes:
  s: {{ trace: a, devices: "0" }}
  steps: {{ trace: a, devices: "0", window: {{ nvtx: "ProfilerStep#*", index: all }} }}
claims:
  - id: c
    statement: {{ en: x }}
    principal: p
    parts:
      - id: p
        kind: causal
        measure: {{ analysis: compare, scope: s, of: overlap, metric: total_ns, value: delta }}
        experiment: {{ held: [checkpiont], expect: sideways }}
      - id: q
        kind: observation
        measure: {{ analysis: overlap, scope: s, value: total_ns }}
        experiment: {{ controlled: true }}
      - id: r
        kind: observation
        measure: {{ analysis: compare, scope: steps, versus: s, of: overlap, metric: total_ns, value: delta, split: 4 }}
"#,
            ab("tp4").display()
        ),
    )
    .unwrap();
    let out = run_in(None, &["check", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.yaml:14:") && err.contains("has no `versus`"), "{err}");
    assert!(
        err.contains("bad.yaml:15:")
            && err.contains("`checkpiont`")
            && err.contains("did you mean `checkpoint`"),
        "{err}"
    );
    assert!(err.contains("`expect` is `sideways`"), "{err}");
    assert!(err.contains("bad.yaml:19:") && err.contains("binds none"), "{err}");
    assert!(
        err.contains("bad.yaml:22:") && err.contains("whose window comes from NVTX ranges"),
        "{err}"
    );
}

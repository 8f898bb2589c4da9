//! The statistical rules of a causal A/B part, each on a case whose numbers this file computes
//! itself from the fixtures (SQL, pairwise differences and ratios, an exact rank counted by
//! subsets): the run-level rule (runs as replicates are supported; see `tests/suite/compare.rs` for
//! the within-run cap), the resolution and power rules of a metric, the reversal on another
//! device, and the ratio interval that keeps a relative change above -100%.

use crate::util;

use std::path::{Path, PathBuf};

use serde_json::Value;
use util::{fixture, moses_rank, open_ro, run_json};

/// The ProfilerStep lengths of device 0's process, by SQL.
fn step_lengths(trace: &Path) -> Vec<i64> {
    let c = open_ro(trace);
    c.prepare(
        "SELECT n.\"end\" - n.start FROM NVTX_EVENTS n WHERE n.eventType = 59
         AND n.text LIKE 'ProfilerStep#%' AND ((n.globalTid >> 24) & 16777215) =
         (SELECT DISTINCT (globalPid >> 24) & 16777215 FROM CUPTI_ACTIVITY_KIND_KERNEL
          WHERE deviceId = 0) ORDER BY n.start",
    )
    .unwrap()
    .query_map([], |r| r.get(0))
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

use util::reference::lower_median;

fn runs(stem: &str) -> Vec<PathBuf> {
    (1..=5).map(|r| fixture(&format!("ab/runs/{stem}-{r}.sqlite"))).collect()
}

/// Writes a claims file into a temporary folder and returns the audit.
fn audit(yaml: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.yaml");
    std::fs::write(&path, yaml).unwrap();
    run_json(&["check", path.to_str().unwrap(), "--json"])
}

fn outcome(p: &Value) -> (&str, &str) {
    (p["outcome"].as_str().unwrap(), p["reason"]["key"].as_str().unwrap())
}

/// The evidence a part reads.
fn evidence<'a>(audit: &'a Value, part: &Value) -> &'a Value {
    let key = part["evidence"].as_str().unwrap();
    let e = audit["ledger"].as_array().unwrap().iter().find(|e| e["key"] == key).unwrap();
    &e["evidence"]
}

const HEAD: &str = "report: { id: t, languages: [en], title: { en: t } }";

#[test]
fn runs_as_replicates_support_a_controlled_effect_on_their_medians() {
    let (a, b) = (runs("tp4"), runs("tp8"));
    let yaml = format!(
        r#"{HEAD}
traces:
  a: {{ path: "{}", runs: true }}
  b: {{ path: "{}", runs: true }}
scopes:
  a-runs: {{ trace: a, devices: "0", window: {{ nvtx: "ProfilerStep#*", index: all }} }}
  b-runs: {{ trace: b, devices: "0", window: {{ nvtx: "ProfilerStep#*", index: all }} }}
claims:
  - id: c
    statement: {{ en: x }}
    principal: p
    parts:
      - id: p
        kind: causal
        measure: {{ analysis: compare, scope: a-runs, versus: b-runs, of: overlap, metric: total_ns, sample: run, value: change, unit: "%" }}
        condition: {{ at_most: "-5%" }}
        experiment: {{ controlled: true, expect: decrease }}
"#,
        a[0].with_file_name("tp4-*.sqlite").display(),
        b[0].with_file_name("tp8-*.sqlite").display(),
    );
    let audit = audit(&yaml);
    let p = &audit["results"][0]["parts"][0];
    assert_eq!(outcome(p), ("supported", "part.compare_supported"), "{p}");
    let ev = evidence(&audit, p);
    assert_eq!(ev["parameters"]["sample_unit"], "run");
    // One sample per run: the lower median of its four steps, by SQL.
    let med = |files: &[PathBuf]| -> Vec<i64> {
        files.iter().map(|f| lower_median(&step_lengths(f))).collect()
    };
    let (ma, mb) = (med(&a), med(&b));
    assert!(step_lengths(&a[0]).len() == 4);
    let v = &ev["values"];
    assert_eq!((v["n_a"].as_i64(), v["n_b"].as_i64()), (Some(5), Some(5)));
    assert_eq!(v["a_median"], lower_median(&ma));
    assert_eq!(v["b_median"], lower_median(&mb));
    // The Moses interval of 5 against 5: rank 3 (P(U <= 2) = 4/252, P(U <= 3) = 7/252 > 2.5%).
    let c = moses_rank(5, 5);
    assert_eq!(c, 3);
    let mut d: Vec<i64> = mb.iter().flat_map(|y| ma.iter().map(move |x| y - x)).collect();
    d.sort_unstable();
    assert_eq!((v["ci_low"].as_i64(), v["ci_high"].as_i64()), (Some(d[c - 1]), Some(d[25 - c])));
    assert!(d[25 - c] < 0, "every TP8 run is faster than every TP4 run by this interval");
    // The ratio interval: the 3rd smallest and 3rd largest of the 25 ratios b / a.
    let mut r: Vec<(i64, i64)> = mb.iter().flat_map(|&y| ma.iter().map(move |&x| (y, x))).collect();
    r.sort_by(|p, q| (p.0 as i128 * q.1 as i128).cmp(&(q.0 as i128 * p.1 as i128)));
    assert_eq!(
        (v["ratio_low_b"].as_i64(), v["ratio_low_a"].as_i64()),
        (Some(r[c - 1].0), Some(r[c - 1].1))
    );
    assert_eq!(
        (v["ratio_high_b"].as_i64(), v["ratio_high_a"].as_i64()),
        (Some(r[25 - c].0), Some(r[25 - c].1))
    );
}

/// A claims file over the mfu pair: one part `p` with this measure, condition and says.
fn mfu(measure: &str, rest: &str) -> Value {
    let yaml = format!(
        r#"{HEAD}
traces:
  a: {{ path: "{}" }}
  b: {{ path: "{}" }}
scopes:
  a0: {{ trace: a, devices: "0" }}
  b0: {{ trace: b, devices: "0" }}
  a01: {{ trace: a, devices: "0-1" }}
  b01: {{ trace: b, devices: "0-1" }}
claims:
  - id: c
    statement: {{ en: x }}
    principal: p
    parts:
      - id: p
        kind: causal
        measure: {{ analysis: compare, {measure} }}
        {rest}
"#,
        fixture("nsys-ai/mfu_2gpu_before.sqlite").display(),
        fixture("nsys-ai/mfu_2gpu_after.sqlite").display(),
    );
    audit(&yaml)
}

/// Device `d`'s kernels `(start, end, short name)`, by SQL.
fn kernels(trace: &Path, d: i64) -> Vec<(i64, i64, String)> {
    let c = open_ro(trace);
    c.prepare(
        "SELECT k.start, k.\"end\", s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k
         JOIN StringIds s ON s.id = k.shortName WHERE k.deviceId = ?1 ORDER BY k.start",
    )
    .unwrap()
    .query_map([d], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

/// The 10 equal windows of a device's kernel span: boundaries `a + len * i / 10`.
fn splits(k: &[(i64, i64, String)]) -> Vec<(i64, i64)> {
    let a = k.iter().map(|x| x.0).min().unwrap();
    let b = k.iter().map(|x| x.1).max().unwrap();
    let at = |i: i64| a + ((b - a) as i128 * i as i128 / 10) as i64;
    (0..10).map(|i| (at(i), at(i + 1))).collect()
}

#[test]
fn a_count_of_a_few_calls_per_window_cannot_resolve_ten_percent() {
    let measure = "scope: a0, versus: b0, of: kernels, match: flash_fwd, metric: count, split: 10, value: change, unit: \"%\"";
    let exp = "experiment: { controlled: true, expect: increase }";
    let audit = mfu(
        measure,
        &format!("condition: {{ at_least: \"5%\" }}\n        says: \"10%\"\n        {exp}"),
    );
    let p = &audit["results"][0]["parts"][0];
    // Per-window flash_fwd counts by start (each kernel in the window where it starts), by SQL.
    let counts = |t: &str| -> (Vec<i64>, i64, i64) {
        let k = kernels(&fixture(&format!("nsys-ai/{t}.sqlite")), 0);
        let w = splits(&k);
        let flash: Vec<&(i64, i64, String)> =
            k.iter().filter(|x| x.2.contains("flash_fwd")).collect();
        let per: Vec<i64> = w
            .iter()
            .map(|&(s, e)| flash.iter().filter(|x| x.0 >= s && x.0 < e).count() as i64)
            .collect();
        let span = w[9].1 - w[0].0;
        (per, flash.len() as i64, span)
    };
    let (ca, ta, la) = counts("mfu_2gpu_before");
    let (cb, tb, lb) = counts("mfu_2gpu_after");
    assert_eq!(ca.iter().sum::<i64>(), ta, "every call in exactly one window");
    let median = lower_median(&ca);
    // One call is 1 / median of a window: more than the claimed 10%.
    assert!(1.0 / median as f64 > 0.10, "median {median}");
    assert_eq!(outcome(p), ("unverifiable", "part.compare_cannot_resolve"), "{p}");
    assert_eq!(p["reason"]["args"]["effect"], "10.0%", "{p}");
    let v = &evidence(&audit, p)["values"];
    assert_eq!(v["a_median"], median);
    assert_eq!(v["b_median"], lower_median(&cb));
    assert_eq!((v["a_total"].as_i64(), v["b_total"].as_i64()), (Some(ta), Some(tb)));
    assert_eq!((v["a_span_ns"].as_i64(), v["b_span_ns"].as_i64()), (Some(la), Some(lb)));
    let pooled = (tb as f64 / lb as f64) / (ta as f64 / la as f64) - 1.0;
    assert!((v["pooled_change"].as_f64().unwrap() - pooled).abs() < 1e-12, "{pooled}");
    // A claimed effect larger than one call is not refused by this rule.
    let big = format!("condition: {{ at_least: \"5%\" }}\n        says: \"50%\"\n        {exp}");
    let p = &mfu(measure, &big)["results"][0]["parts"][0];
    assert_ne!(p["reason"]["key"], "part.compare_cannot_resolve", "{p}");
}

#[test]
fn an_open_interval_whose_detectable_shift_exceeds_the_claim_is_underpowered() {
    // Two TP4 runs of 4 steps each: no change made, 4 against 4 samples.
    let (t1, t2) = (fixture("ab/runs/tp4-1.sqlite"), fixture("ab/runs/tp4-2.sqlite"));
    let yaml = format!(
        r#"{HEAD}
traces:
  a: {{ path: "{}" }}
  b: {{ path: "{}" }}
scopes:
  first: {{ trace: a, devices: "0", window: {{ nvtx: "ProfilerStep#*", index: all }} }}
  next: {{ trace: b, devices: "0", window: {{ nvtx: "ProfilerStep#*", index: all }} }}
claims:
  - id: c
    statement: {{ en: x }}
    principal: p
    parts:
      - id: p
        kind: causal
        measure: {{ analysis: compare, scope: first, versus: next, of: overlap, metric: total_ns, value: change, unit: "%" }}
        condition: {{ at_most: "-1%" }}
        experiment: {{ controlled: true, expect: decrease }}
"#,
        t1.display(),
        t2.display()
    );
    let audit = audit(&yaml);
    let p = &audit["results"][0]["parts"][0];
    let (a, b) = (step_lengths(&t1), step_lengths(&t2));
    let (a, b) = (&a[..], &b[..]);
    // 4 against 4: the Moses rank is 1 (P(U <= 0) = 1/70), so the interval runs from the
    // smallest to the largest difference, and it includes no change.
    assert_eq!(moses_rank(4, 4), 1);
    let d: Vec<i64> = b.iter().flat_map(|y| a.iter().map(move |x| y - x)).collect();
    assert!(*d.iter().min().unwrap() < 0 && *d.iter().max().unwrap() > 0, "{d:?}");
    // (z_0.975 + z_0.80) * pooled sd * sqrt(1/4 + 1/4) * sqrt(pi / 3), over A's median
    // (z from the normal quantile tables: 1.959964, 0.841621).
    let ss = |x: &[i64]| {
        let m = x.iter().sum::<i64>() as f64 / x.len() as f64;
        x.iter().map(|&v| (v as f64 - m).powi(2)).sum::<f64>()
    };
    let sd = ((ss(a) + ss(b)) / 6.0).sqrt();
    let mde = (1.959964 + 0.841621) * sd * 0.5f64.sqrt() * (std::f64::consts::PI / 3.0).sqrt();
    let rel = mde / lower_median(a) as f64;
    assert!(rel > 0.01, "{rel}");
    let v = &evidence(&audit, p)["values"];
    // Rounded up by the tool; the tabled z carry six decimals.
    assert!((v["mde"].as_i64().unwrap() as f64 - mde).abs() < 1e-6 * mde, "{v} against {mde}");
    assert!(v["ci_low"].as_i64().unwrap() < 0 && v["ci_high"].as_i64().unwrap() > 0, "{v}");
    assert_eq!(outcome(p), ("unverifiable", "part.compare_underpowered"), "{p}");
}

/// A device's exposed-NCCL share on each of its 10 split windows, by a brute-force sweep of
/// its kernels clipped to the window.
fn exposed_shares(trace: &Path, d: i64) -> Vec<f64> {
    let k = kernels(trace, d);
    splits(&k)
        .into_iter()
        .map(|(s, e)| {
            let clipped: Vec<(i64, i64, bool)> = k
                .iter()
                .filter(|x| x.0 < e && x.1 > s)
                .map(|x| (x.0.max(s), x.1.min(e), x.2.to_ascii_lowercase().contains("nccl")))
                .collect();
            let (_, nccl_only, _) = util::sweep(&clipped);
            nccl_only as f64 / (e - s) as f64
        })
        .collect()
}

/// Device 0's exposed NCCL share fell and device 1's rose. In windows of one capture per side
/// with the author's reason that they stand for runs, that reversal refutes the claim; without
/// it, the comparison could not have supported the claim and cannot refute it either: the part
/// stays open, naming device 1 and its interval.
#[test]
fn a_part_that_reverses_on_another_device_is_not_supported() {
    let measure = "scope: a01, versus: b01, of: overlap, metric: \"nccl_only_ns / total_ns\", split: 10, value: delta, unit: pp";
    let capped = mfu(
        measure,
        "condition: { below: \"0 pp\" }\n        experiment: { controlled: true, expect: decrease }",
    );
    let p = &capped["results"][0]["parts"][0];
    assert_eq!(outcome(p), ("unverifiable", "part.compare_against_within_run"), "{p}");
    assert_eq!(p["reason"]["args"]["device"], "1", "{p}");
    let uncontrolled = mfu(
        measure,
        "condition: { below: \"0 pp\" }\n        experiment: { expect: decrease, within_run: { en: \"steady state\" } }",
    );
    let p = &uncontrolled["results"][0]["parts"][0];
    assert_eq!(outcome(p), ("unverifiable", "part.compare_against_uncontrolled"), "{p}");
    assert_eq!(p["reason"]["args"]["device"], "1", "{p}");
    let audit = mfu(
        measure,
        "condition: { below: \"0 pp\" }\n        experiment: { controlled: true, expect: decrease, within_run: { en: \"steady state\" } }",
    );
    let p = &audit["results"][0]["parts"][0];
    let (before, after) =
        (fixture("nsys-ai/mfu_2gpu_before.sqlite"), fixture("nsys-ai/mfu_2gpu_after.sqlite"));
    // The Moses interval of each device's shares, from the pairwise differences.
    let interval = |d: i64| {
        let (a, b) = (exposed_shares(&before, d), exposed_shares(&after, d));
        let mut diffs: Vec<f64> = b.iter().flat_map(|y| a.iter().map(move |x| y - x)).collect();
        diffs.sort_by(f64::total_cmp);
        let c = moses_rank(10, 10);
        (diffs[c - 1], diffs[100 - c])
    };
    let (lo0, hi0) = interval(0);
    let (lo1, hi1) = interval(1);
    assert!(hi0 < 0.0, "device 0 fell: {lo0} to {hi0}");
    assert!(lo1 > 0.0, "device 1 rose: {lo1} to {hi1}");
    assert_eq!(outcome(p), ("not_supported", "part.compare_device_reversal"), "{p}");
    assert_eq!(p["reason"]["args"]["device"], "1", "{p}");
    // The evidence's per-device intervals, in billionths, are the same to rounding.
    let ev = evidence(&audit, p);
    let rows = ev["values"]["devices"].as_array().unwrap();
    let got = |d: usize, k: &str| rows[d]["values"][k].as_f64().unwrap() / 1e9;
    for (d, (lo, hi)) in [(0, (lo0, hi0)), (1, (lo1, hi1))] {
        assert_eq!(rows[d]["device"], d as i64);
        assert!((got(d, "ci_low") - lo).abs() < 2e-9 && (got(d, "ci_high") - hi).abs() < 2e-9);
    }
}

#[test]
fn a_relative_interval_of_a_non_negative_metric_stays_above_minus_one_hundred_percent() {
    // SendRecv kernel time per window: the shift interval's low end over A's median is below
    // -100%, which no non-negative metric can fall; the ratio interval is not.
    let measure = "scope: a0, versus: b0, of: kernels, match: SendRecv, metric: total_ns, split: 10, value: change, unit: \"%\"";
    let audit = mfu(
        measure,
        "condition: { at_most: \"-100%\" }\n        experiment: { controlled: true, expect: decrease }",
    );
    let p = &audit["results"][0]["parts"][0];
    // Per-window SendRecv time, each kernel clipped to each window it runs in, by SQL.
    let per = |t: &str| -> Vec<i64> {
        let k = kernels(&fixture(&format!("nsys-ai/{t}.sqlite")), 0);
        splits(&k)
            .into_iter()
            .map(|(s, e)| {
                k.iter()
                    .filter(|x| x.2.contains("SendRecv") && x.0 < e && x.1 > s)
                    .map(|x| x.1.min(e) - x.0.max(s))
                    .sum()
            })
            .collect()
    };
    let (a, b) = (per("mfu_2gpu_before"), per("mfu_2gpu_after"));
    let c = moses_rank(10, 10);
    let mut d: Vec<i64> = b.iter().flat_map(|y| a.iter().map(move |x| y - x)).collect();
    d.sort_unstable();
    assert!((d[c - 1] as f64 / lower_median(&a) as f64) < -1.0, "the old low end");
    let mut r: Vec<f64> =
        b.iter().flat_map(|&y| a.iter().map(move |&x| y as f64 / x as f64)).collect();
    r.sort_by(f64::total_cmp);
    let (lo, hi) = (r[c - 1] - 1.0, r[100 - c] - 1.0);
    assert!(lo > -1.0 && hi < 0.0, "{lo} to {hi}");
    let v = &evidence(&audit, p)["values"];
    assert_eq!(v["ci_low"].as_i64(), Some(d[c - 1]));
    assert!((v["change_low"].as_f64().unwrap() - lo).abs() < 1e-12);
    assert!((v["change_high"].as_f64().unwrap() - hi).abs() < 1e-12);
    // "At least a 100% cut" is outside the whole ratio interval: excluded, not open, in a
    // comparison whose windows the author declares stand for runs; without that declaration
    // the same interval cannot exclude the effect (within-run variation only).
    assert_eq!(outcome(p), ("unverifiable", "part.compare_against_within_run"), "{p}");
    let audit = mfu(
        measure,
        "condition: { at_most: \"-100%\" }\n        experiment: { controlled: true, expect: decrease, within_run: { en: \"steady state\" } }",
    );
    let p = &audit["results"][0]["parts"][0];
    assert_eq!(outcome(p), ("not_supported", "part.compare_excludes"), "{p}");
}

#[test]
fn runs_and_their_sampling_unit_are_checked_at_their_place() {
    let one = fixture("ab/runs/tp4-1.sqlite");
    let glob = one.with_file_name("tp4-*.sqlite");
    let yaml = format!(
        r#"{HEAD}
traces:
  single: {{ path: "{}", runs: true }}
  many: {{ path: "{}", runs: true }}
  long: {{ path: "{}" }}
scopes:
  s: {{ trace: many, devices: "0" }}
  l: {{ trace: long, devices: "0" }}
claims:
  - id: c
    statement: {{ en: x }}
    principal: p
    parts:
      - id: p
        kind: causal
        measure: {{ analysis: compare, scope: s, versus: l, of: overlap, metric: total_ns, value: delta }}
      - id: q
        kind: causal
        measure: {{ analysis: compare, scope: l, versus: l, of: overlap, metric: total_ns, value: delta, sample: walk }}
      - id: r
        kind: observation
        measure: {{ analysis: overlap, scope: s, value: total_ns }}
"#,
        one.display(),
        glob.display(),
        fixture("ab/tp4.sqlite").display(),
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.yaml");
    std::fs::write(&path, yaml).unwrap();
    let out = util::run_in(None, &["check", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("c.yaml:3:") && err.contains("`runs: true` on a single path"), "{err}");
    assert!(
        err.contains("c.yaml:16:")
            && err.contains("one side is over runs and the other is one capture"),
        "{err}"
    );
    assert!(err.contains("c.yaml:19:") && err.contains("`sample` is `walk`"), "{err}");
    assert!(err.contains("c.yaml:22:") && err.contains("scope `s` is over runs"), "{err}");
}

//! `compare`: two sides (A and B), each a sample of one metric of another analysis, over its
//! windows (NVTX steps, equal splits, or one window), compared with exact statistics.
//!
//! A pure function of the two sides' evidence: it reads no trace. Each sample's metric is
//! evaluated exactly; the statistics (medians, a bootstrap interval of the median difference
//! from a disclosed seed, a Mann-Whitney U test, the Hodges-Lehmann shift with its rank
//! interval) come from [`crate::stats`]. Over `kernels`, `nvtx` and `copies` it also gives the
//! per-name deltas of the two sides. Judging is done in `verdict`.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{
    AnalysisSpec, Evidence, Field, FieldKind, QueryError, ScopeRule, ToolRef, Unit, WindowInfo,
};
use crate::formula::{Expr, Rational};
use crate::stats;

/// The fields of a comparison, each in the metric's unit (`Unit::Metric`) or a count or ratio.
pub const SPEC: AnalysisSpec = AnalysisSpec {
    name: "compare",
    summary: "two sides (runs, trace sets or windows) compared on one metric of another analysis, with exact statistics",
    fields: &[
        Field {
            name: "n_a",
            unit: Unit::Count,
            kind: FieldKind::Count,
            definition: "samples of side A (windows)",
        },
        Field {
            name: "n_b",
            unit: Unit::Count,
            kind: FieldKind::Count,
            definition: "samples of side B (windows)",
        },
        Field {
            name: "a_median",
            unit: Unit::Metric,
            kind: FieldKind::Metric,
            definition: "lower median of A's samples",
        },
        Field {
            name: "b_median",
            unit: Unit::Metric,
            kind: FieldKind::Metric,
            definition: "lower median of B's samples",
        },
        Field {
            name: "delta",
            unit: Unit::Metric,
            kind: FieldKind::Metric,
            definition: "b_median - a_median",
        },
        Field {
            name: "ci_low",
            unit: Unit::Metric,
            kind: FieldKind::Metric,
            definition: "low end of the 95% percentile bootstrap interval of the median difference (seeded)",
        },
        Field {
            name: "ci_high",
            unit: Unit::Metric,
            kind: FieldKind::Metric,
            definition: "high end of the same interval",
        },
        Field {
            name: "change",
            unit: Unit::Ratio,
            kind: FieldKind::Metric,
            definition: "delta / a_median: the relative change of the median",
        },
        Field {
            name: "change_low",
            unit: Unit::Ratio,
            kind: FieldKind::Metric,
            definition: "ci_low / a_median",
        },
        Field {
            name: "change_high",
            unit: Unit::Ratio,
            kind: FieldKind::Metric,
            definition: "ci_high / a_median",
        },
        Field {
            name: "ratio",
            unit: Unit::Ratio,
            kind: FieldKind::Metric,
            definition: "b_median / a_median",
        },
    ],
    sums: &[],
    params: &[],
    scope: ScopeRule::Summed,
    needs: &[],
    cross_rank: &[],
    ratios: &[
        ("change", "delta / a_median"),
        ("change_low", "ci_low / a_median"),
        ("change_high", "ci_high / a_median"),
        ("ratio", "b_median / a_median"),
    ],
    per_name: false,
    rank_rows: None,
    across: &[],
    chart: None,
    terms: &[],
    run: |_, _| {
        Err(QueryError::Failed {
            reason: "`compare` runs over two sides, not one trace".into(),
            hint: "use `verdict query compare --of ANALYSIS --metric FORMULA --a KEY=VALUE... --b KEY=VALUE...`".into(),
        })
    },
    table,
};

/// The confidence of every interval: 95%.
pub const CONFIDENCE: (i128, i128) = (95, 100);

/// The scale of a metric whose samples are not whole numbers (shares, bandwidths): parts per
/// billion, rounded half away from zero (disclosed).
pub const RATIO_SCALE: i128 = 1_000_000_000;

/// The unit a metric formula gives: the unit of its fields when they share one and the
/// formula only adds, subtracts or scales them (`compute_only_ns + overlap_ns` is ns); a
/// ratio otherwise (a quotient, a declared ratio field, or fields of different units).
pub fn metric_unit(of: &AnalysisSpec, metric: &Expr, text: &str) -> Unit {
    let vars = metric.vars();
    if vars.iter().any(|v| of.ratios.iter().any(|(r, _)| r == v)) || text.contains('/') {
        return Unit::Ratio;
    }
    let units: Vec<Unit> = vars.iter().filter_map(|v| of.field(v).map(|f| f.unit)).collect();
    match units.split_first() {
        Some((first, rest)) if rest.iter().all(|u| u == first) => match first {
            Unit::Device => Unit::Count,
            u => *u,
        },
        _ => Unit::Ratio,
    }
}

/// One side's samples: the metric on each window, exactly, with the window.
pub fn samples(ev: &Evidence, metric: &Expr) -> Result<Vec<([i64; 2], Rational)>, String> {
    // One evidence without its samples, whose values each window replaces in turn.
    let mut one = Evidence { samples: Vec::new(), rows: None, values: None, ..ev.clone() };
    let mut eval = |values: &super::values::Values| -> Result<Rational, String> {
        one.values = Some(values.clone());
        let mut vars = BTreeMap::new();
        for v in metric.vars() {
            match one.field(&v) {
                Ok(Some(x)) => {
                    vars.insert(v, x);
                }
                Ok(None) => return Err(format!("`{v}` is null in a window of this side")),
                Err(e) => return Err(e.to_string()),
            }
        }
        metric.eval(&vars).map_err(|e| e.to_string())
    };
    if ev.samples.is_empty() {
        let values = ev.values.as_ref().ok_or_else(|| {
            "the evidence has one row per device: name one device in each side's scope".to_string()
        })?;
        let w = ev.window.effective_ns.or(ev.window.requested_ns).unwrap_or([0, 0]);
        return Ok(vec![(w, eval(values)?)]);
    }
    ev.samples.iter().map(|s| Ok((s.window_ns, eval(&s.values)?))).collect()
}

/// A sample as the integer the statistics take: the value itself, or in parts per billion
/// when the metric is not whole (`scale` [`RATIO_SCALE`]).
fn scaled(v: Rational, scale: i128) -> Option<i64> {
    let n = v.num.checked_mul(scale)?;
    let q = n / v.den;
    let r = n % v.den;
    // Half away from zero.
    let q = if 2 * r.abs() >= v.den.abs() { q + n.signum() * v.den.signum() } else { q };
    i64::try_from(q).ok()
}

/// The per-name table of a side: `(name, count, total_ns)` from kernels rows, NVTX rows
/// (ranges, CPU time) or copy kinds (rows, busy time).
fn names_of(ev: &Evidence) -> BTreeMap<String, (i64, i64)> {
    use super::values::{Rows, Values};
    let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    match (&ev.rows, &ev.values) {
        (Some(Rows::Kernels(rows)), _) => {
            rows.iter().map(|r| (r.name.clone(), (r.stats.count, r.stats.total_ns))).collect()
        }
        (Some(Rows::Nvtx(rows)), _) => {
            rows.iter().map(|r| (r.name.clone(), (count(r.ranges), r.range_ns))).collect()
        }
        (_, Some(Values::Copies(v))) => {
            v.kinds.iter().map(|k| (k.label.clone(), (k.stats.count, k.stats.busy_ns))).collect()
        }
        _ => BTreeMap::new(),
    }
}

/// The values being built, as the JSON contract has them.
fn values_mut(ev: &mut Evidence) -> &mut serde_json::Map<String, Value> {
    match ev.values.as_mut() {
        Some(super::values::Values::Map(m)) => m,
        _ => unreachable!("compare sets its values as a map before adding to them"),
    }
}

/// The query behind a side's per-name table: the side's own, over the whole span its samples
/// cover (its window, or from its first window's start to its last one's end), every name (no
/// top-N limit: a name past the limit is not absent).
pub fn names_params(side: &super::Params, ev: &Evidence) -> super::Params {
    let mut whole = side.clone();
    whole.split = None;
    whole.limit = None;
    whole.window =
        ev.window.requested_ns.map(|[a, b]| crate::scope::Window { start_ns: a, end_ns: b });
    whole.semantics = ev.window.semantics;
    whole
}

/// Whether an analysis's evidence has a per-name table, as its registry entry says.
pub fn has_names(analysis: &str) -> bool {
    super::spec(analysis).is_some_and(|s| s.per_name)
}

/// Per-name deltas, sorted by the size of their contribution to the total change.
fn name_deltas(a: &Evidence, b: &Evidence) -> Value {
    let (na, nb) = (names_of(a), names_of(b));
    let total_a: i128 = na.values().map(|v| i128::from(v.1)).sum();
    let total_b: i128 = nb.values().map(|v| i128::from(v.1)).sum();
    let change = total_b - total_a;
    let mut names: Vec<&String> = na.keys().chain(nb.keys()).collect();
    names.sort();
    names.dedup();
    let mut rows: Vec<(i128, Value)> = names
        .into_iter()
        .map(|n| {
            let (ca, ta) = na.get(n).copied().unwrap_or((0, 0));
            let (cb, tb) = nb.get(n).copied().unwrap_or((0, 0));
            let delta = i128::from(tb) - i128::from(ta);
            let only = match (na.contains_key(n), nb.contains_key(n)) {
                (true, false) => json!("a"),
                (false, true) => json!("b"),
                _ => Value::Null,
            };
            let mean = |t: i64, c: i64| if c > 0 { json!([t, c]) } else { Value::Null };
            (
                delta.abs(),
                json!({
                    "name": n,
                    "a_count": ca, "a_total_ns": ta, "a_mean_ns": mean(ta, ca),
                    "b_count": cb, "b_total_ns": tb, "b_mean_ns": mean(tb, cb),
                    "delta_ns": delta.to_string().parse::<i64>().unwrap_or(i64::MAX),
                    "share_of_change": if change != 0 { json!([delta.to_string(), change.to_string()]) } else { Value::Null },
                    "only_in": only,
                }),
            )
        })
        .collect();
    rows.sort_by_key(|x| std::cmp::Reverse(x.0));
    json!({
        "a_total_ns": total_a.to_string().parse::<i64>().unwrap_or(i64::MAX),
        "b_total_ns": total_b.to_string().parse::<i64>().unwrap_or(i64::MAX),
        "rows": rows.into_iter().map(|(_, v)| v).collect::<Vec<_>>(),
    })
}

/// What one side is, for the evidence: its trace, window, devices and samples.
fn side_json(ev: &Evidence, label: &str, samples: &[([i64; 2], Rational)], ints: &[i64]) -> Value {
    let s = stats::summarize(ints);
    json!({
        "label": label,
        "trace": ev.trace.path,
        "sha256": ev.trace.sha256,
        "set_files": ev.trace.set.as_ref().map(|s| s.files.len()),
        "window_ns": ev.window.requested_ns,
        "semantics": ev.window.semantics,
        "devices": ev.scope.devices,
        "missing_devices": ev.scope.missing_devices,
        "samples": samples.iter().zip(ints).map(|((w, v), i)| json!({
            "window_ns": w,
            "value": [v.num.to_string(), v.den.to_string()],
            "scaled": i,
        })).collect::<Vec<_>>(),
        "summary": s.map(|s| json!({
            "n": s.n, "min": s.min, "p10": s.p10, "median": s.median, "p90": s.p90, "max": s.max,
            "mean": [s.mean.num.to_string(), s.mean.den.to_string()],
        })),
    })
}

/// What is compared: the analysis, its metric, the labels of the sides, and the seed.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// The analysis each side ran.
    pub of: &'static AnalysisSpec,
    /// The metric as written.
    pub metric_text: &'a str,
    /// The metric, parsed.
    pub metric: &'a Expr,
    /// Labels of the sides (the scope or trace names).
    pub labels: [&'a str; 2],
    /// The bootstrap's seed.
    pub seed: u64,
    /// Each side's evidence over its whole span, for the per-name deltas (kernels, nvtx,
    /// copies).
    pub names: Option<[&'a Evidence; 2]>,
}

/// Compares side A with side B.
pub fn run(a: &Evidence, b: &Evidence, req: &Request) -> Result<Evidence, QueryError> {
    let failed = |side: &str, reason: String| {
        QueryError::Failed {
        reason: format!("side {side}: {reason}"),
        hint: "each side needs the metric's fields on every window: one device for per-device analyses, and windows with kernels".into(),
    }
    };
    let sa = samples(a, req.metric).map_err(|e| failed("A", e))?;
    let sb = samples(b, req.metric).map_err(|e| failed("B", e))?;
    let unit = metric_unit(req.of, req.metric, req.metric_text);
    let whole = sa.iter().chain(&sb).all(|(_, v)| v.den == 1);
    let scale = if whole { 1 } else { RATIO_SCALE };
    let to_ints = |s: &[([i64; 2], Rational)], side: &str| -> Result<Vec<i64>, QueryError> {
        s.iter()
            .map(|(_, v)| scaled(*v, scale))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| failed(side, "a sample does not fit 64 bits".into()))
    };
    let (ia, ib) = (to_ints(&sa, "A")?, to_ints(&sb, "B")?);
    let confidence = Rational::new(CONFIDENCE.0, CONFIDENCE.1).expect("95/100 is a fraction");
    let md = stats::median_difference(&ia, &ib).ok_or_else(|| failed("A", "no sample".into()))?;
    let mut ev = Evidence {
        analysis: SPEC.name.into(),
        tool: ToolRef::current(),
        trace: a.trace.clone(),
        window: WindowInfo {
            requested_ns: a.window.requested_ns,
            effective_ns: None,
            semantics: a.window.semantics,
        },
        scope: a.scope.clone(),
        parameters: BTreeMap::new(),
        metrics: SPEC
            .fields
            .iter()
            .map(|f| (f.name.to_string(), f.definition.to_string()))
            .collect(),
        values: None,
        rows: None,
        notes: Vec::new(),
        samples: Vec::new(),
    };
    ev.parameters.insert("of".into(), json!(req.of.name));
    ev.parameters.insert("metric".into(), json!(req.metric_text));
    ev.parameters.insert("metric_unit".into(), json!(unit.as_str()));
    ev.parameters.insert("metric_scale".into(), json!(scale as i64));
    ev.parameters.insert("seed".into(), json!(req.seed));
    ev.parameters.insert("resamples".into(), json!(stats::DEFAULT_RESAMPLES));
    ev.parameters.insert("confidence".into(), json!("95%"));
    let mut values = serde_json::Map::new();
    values.insert("n_a".into(), json!(ia.len()));
    values.insert("n_b".into(), json!(ib.len()));
    values.insert("a_median".into(), json!(md.median_a));
    values.insert("b_median".into(), json!(md.median_b));
    values.insert("delta".into(), json!(i64::try_from(md.difference).ok()));
    for f in ["ci_low", "ci_high", "change", "change_low", "change_high", "ratio"] {
        values.insert(f.into(), Value::Null);
    }
    values.insert("a".into(), side_json(a, req.labels[0], &sa, &ia));
    values.insert("b".into(), side_json(b, req.labels[1], &sb, &ib));
    ev.values = Some(super::values::Values::Map(values));
    // Ratios of the median: null when A's median is 0.
    let approx = |x: i128| x as f64 / md.median_a as f64;
    if md.median_a != 0 {
        let v = values_mut(&mut ev);
        v.insert("change".into(), json!(approx(md.difference)));
        v.insert("ratio".into(), json!(approx(md.median_b.into())));
    } else {
        ev.leave_null(
            &["change", "ratio", "change_low", "change_high"],
            "note.compare_zero_base",
            &[],
            ("need.compare_nonzero", &[]),
        );
    }
    let few = ia.len().min(ib.len());
    if few < stats::MIN_SAMPLES {
        ev.leave_null(
            &["ci_low", "ci_high", "change_low", "change_high"],
            "note.compare_one_sample",
            &[("n_a", ia.len().to_string()), ("n_b", ib.len().to_string())],
            ("need.compare_samples", &[]),
        );
    } else {
        if few < stats::FEW_SAMPLES {
            ev.note(
                "note.compare_few",
                &[
                    ("n_a", ia.len().to_string()),
                    ("n_b", ib.len().to_string()),
                    ("min", stats::FEW_SAMPLES.to_string()),
                ],
            );
        }
        match stats::bootstrap_median_difference(
            &ia,
            &ib,
            confidence,
            stats::DEFAULT_RESAMPLES,
            req.seed,
        ) {
            Ok(bi) => {
                let v = values_mut(&mut ev);
                v.insert("ci_low".into(), json!(i64::try_from(bi.low).ok()));
                v.insert("ci_high".into(), json!(i64::try_from(bi.high).ok()));
                if md.median_a != 0 {
                    v.insert("change_low".into(), json!(approx(bi.low)));
                    v.insert("change_high".into(), json!(approx(bi.high)));
                }
                v.insert(
                    "bootstrap".into(),
                    json!({"seed": bi.seed, "resamples": bi.resamples, "confidence": "95%", "low": bi.low.to_string(), "high": bi.high.to_string(), "observed": bi.observed.to_string()}),
                );
            }
            Err(e) => ev.leave_null(
                &["ci_low", "ci_high", "change_low", "change_high"],
                "note.compare_refused",
                &[("reason", e.to_string())],
                ("need.compare_samples", &[]),
            ),
        }
        match stats::mann_whitney(&ia, &ib) {
            Ok(mw) => {
                values_mut(&mut ev).insert(
                    "rank_test".into(),
                    json!({
                        "test": "Mann-Whitney U, two-sided",
                        "u_a_doubled": mw.u_a_doubled,
                        "u_b_doubled": mw.u_b_doubled,
                        "p_value": mw.p_value,
                        "p_exact": mw.p_exact.map(|p| [p.num.to_string(), p.den.to_string()]),
                        "method": method(mw.method),
                        "ties": mw.ties,
                    }),
                );
            }
            Err(e) => ev.note("note.compare_refused", &[("reason", e.to_string())]),
        }
        match stats::hodges_lehmann(&ia, &ib, confidence) {
            Ok(hl) => {
                values_mut(&mut ev).insert(
                    "shift".into(),
                    json!({
                        "estimate": [hl.estimate.num.to_string(), hl.estimate.den.to_string()],
                        "low": hl.low.to_string(),
                        "high": hl.high.to_string(),
                        "achieved": hl.achieved,
                        "method": method(hl.method),
                        "ties": hl.ties,
                    }),
                );
            }
            Err(e) => ev.note("note.compare_no_shift", &[("reason", e.to_string())]),
        }
    }
    if scale != 1 {
        ev.note("note.compare_scaled", &[]);
    }
    // Sides over populations of different sizes: stated here, judged by gate R2.
    if a.scope.devices.len() != b.scope.devices.len() {
        ev.note(
            "note.compare_populations",
            &[("a", a.scope.devices.len().to_string()), ("b", b.scope.devices.len().to_string())],
        );
    }
    if let Some([na, nb]) = req.names {
        values_mut(&mut ev).insert("names".into(), name_deltas(na, nb));
    }
    Ok(ev)
}

fn method(m: stats::Method) -> &'static str {
    match m {
        stats::Method::Exact => "exact",
        stats::Method::Normal => "normal",
    }
}

/// The terminal text of a comparison.
pub fn table(ev: &Evidence, width: usize) -> String {
    use crate::term as t;
    let Some(super::values::Values::Map(v)) = ev.values.as_ref() else { return String::new() };
    let scale = ev.parameters.get("metric_scale").and_then(Value::as_i64).unwrap_or(1);
    let unit = ev.parameters.get("metric_unit").and_then(Value::as_str).unwrap_or("");
    let show = |x: Option<i64>| match x {
        None => "n/a".to_string(),
        Some(x) => show_metric(x, unit, scale),
    };
    let int = |k: &str| v.get(k).and_then(Value::as_i64);
    // A difference of shares is in percentage points.
    let show_delta = |x: Option<i64>| match (x, scale) {
        (Some(x), s) if s != 1 => crate::units::decimal(i128::from(x) * 100, s.into(), 1)
            .map_or_else(|| x.to_string(), |d| format!("{d} pp")),
        _ => show(x),
    };
    let mut s = String::new();
    for side in ["a", "b"] {
        let sd = &v[side];
        let sum = &sd["summary"];
        s += &t::hang(
            &format!(
                "{:<13}",
                format!("{} {}", side.to_uppercase(), sd["label"].as_str().unwrap_or(""))
            ),
            &format!(
                "n {} · median {} · p10 {} · p90 {} · min {} · max {} · {}",
                sum["n"],
                show(sum["median"].as_i64()),
                show(sum["p10"].as_i64()),
                show(sum["p90"].as_i64()),
                show(sum["min"].as_i64()),
                show(sum["max"].as_i64()),
                sd["trace"].as_str().unwrap_or("")
            ),
            13,
            width,
        );
    }
    s += &t::hang(
        "difference   ",
        &format!(
            "B - A = {} (95% bootstrap CI {} to {}, seed {})",
            show_delta(int("delta")),
            show_delta(int("ci_low")),
            show_delta(int("ci_high")),
            ev.parameters.get("seed").cloned().unwrap_or(Value::Null)
        ),
        13,
        width,
    );
    if let Some(rt) = v.get("rank_test") {
        s += &t::hang(
            "rank test    ",
            &format!(
                "Mann-Whitney U two-sided p {} ({})",
                match rt["p_value"].as_f64() {
                    Some(p) if p < 0.0001 => "< 0.0001".to_string(),
                    Some(p) => format!("= {p:.4}"),
                    None => "n/a".into(),
                },
                rt["method"].as_str().unwrap_or("")
            ),
            13,
            width,
        );
    }
    if let Some(rows) = v.get("names").and_then(|n| n["rows"].as_array()) {
        for r in rows.iter().take(10) {
            s += &t::hang(
                "  ",
                &format!(
                    "{}  A {}  B {}  Δ {}{}",
                    r["name"].as_str().unwrap_or(""),
                    crate::units::ms(r["a_total_ns"].as_i64().unwrap_or(0)),
                    crate::units::ms(r["b_total_ns"].as_i64().unwrap_or(0)),
                    crate::units::ms(r["delta_ns"].as_i64().unwrap_or(0)),
                    match r["only_in"].as_str() {
                        Some(x) => format!(" (only in {})", x.to_uppercase()),
                        None => String::new(),
                    }
                ),
                2,
                width,
            );
        }
    }
    s
}

/// A metric value for display: ns as ms, a scaled ratio as a percentage, else the integer.
pub fn show_metric(x: i64, unit: &str, scale: i64) -> String {
    match (unit, scale) {
        ("ns", 1) => format!("{} ms", crate::units::ms(x)),
        (_, 1) => crate::units::thousands(x.into()),
        _ => crate::units::percent(x.into(), scale.into()).unwrap_or_else(|| x.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaling_rounds_half_away_from_zero() {
        let r = |n, d| Rational::new(n, d).unwrap();
        assert_eq!(scaled(r(1, 3), RATIO_SCALE), Some(333_333_333));
        assert_eq!(scaled(r(2, 3), RATIO_SCALE), Some(666_666_667));
        assert_eq!(scaled(r(-2, 3), RATIO_SCALE), Some(-666_666_667));
        assert_eq!(scaled(r(1, 2_000_000_000), RATIO_SCALE), Some(1));
        assert_eq!(scaled(r(7, 1), 1), Some(7));
    }

    #[test]
    fn a_metric_of_one_field_has_its_unit_and_a_quotient_is_a_ratio() {
        let p = |s| Expr::parse(s).unwrap();
        let o = &super::super::overlap::SPEC;
        let u = |spec, t| metric_unit(spec, &p(t), t);
        assert_eq!(u(o, "total_ns"), Unit::Ns);
        assert_eq!(u(o, "compute_only_ns + overlap_ns"), Unit::Ns);
        assert_eq!(u(o, "2 * idle_ns"), Unit::Ns);
        assert_eq!(u(o, "idle_ns / total_ns"), Unit::Ratio);
        assert_eq!(u(&super::super::nccl_skew::SPEC, "wait_share"), Unit::Ratio);
        assert_eq!(u(&super::super::kernels::SPEC, "count"), Unit::Count);
        assert_eq!(u(&super::super::kernels::SPEC, "count + total_ns"), Unit::Ratio);
    }
}

//! `compare`: two sides (A and B), each a sample of one metric of another analysis: one value
//! per run (several traces), or per window of one capture (NVTX steps, equal splits, or one
//! window), compared with exact statistics.
//!
//! A pure function of the two sides' evidence: it reads no trace. Each sample's metric is
//! evaluated exactly; the statistics (medians, the Hodges-Lehmann shift with its exact Moses
//! interval, which verdicts use, and the ratio interval of the same ranks, a Mann-Whitney U
//! test, the pooled rate of a count, the minimum detectable shift, and a bootstrap of the
//! median difference from a disclosed seed as a cross-check) come from [`crate::stats`]. Over `kernels`, `nvtx` and `copies` it also gives the
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
            definition: "samples of side A (runs, steps or windows: `parameters.sample_unit`)",
        },
        Field {
            name: "n_b",
            unit: Unit::Count,
            kind: FieldKind::Count,
            definition: "samples of side B",
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
            definition: "low end of the exact 95% Moses interval of the Hodges-Lehmann shift B - A (the median of the pairwise differences)",
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
            definition: "ratio_low_b / ratio_low_a - 1: the low end of the 95% interval of the ratio B / A (the Moses interval of the shift of the logarithms), less 1; never below -100%; null unless every sample is positive",
        },
        Field {
            name: "change_high",
            unit: Unit::Ratio,
            kind: FieldKind::Metric,
            definition: "ratio_high_b / ratio_high_a - 1: the high end of the same interval, less 1",
        },
        Field {
            name: "ratio",
            unit: Unit::Ratio,
            kind: FieldKind::Metric,
            definition: "b_median / a_median",
        },
        Field {
            name: "ratio_low_b",
            unit: Unit::Metric,
            kind: FieldKind::Metric,
            definition: "the B sample of the pairwise ratio b / a at the interval's low end",
        },
        Field {
            name: "ratio_low_a",
            unit: Unit::Metric,
            kind: FieldKind::Metric,
            definition: "the A sample of the same ratio",
        },
        Field {
            name: "ratio_high_b",
            unit: Unit::Metric,
            kind: FieldKind::Metric,
            definition: "the B sample of the pairwise ratio b / a at the interval's high end",
        },
        Field {
            name: "ratio_high_a",
            unit: Unit::Metric,
            kind: FieldKind::Metric,
            definition: "the A sample of the same ratio",
        },
        Field {
            name: "a_total",
            unit: Unit::Metric,
            kind: FieldKind::Metric,
            definition: "A's metric summed over all its windows (counts only; null otherwise)",
        },
        Field {
            name: "b_total",
            unit: Unit::Metric,
            kind: FieldKind::Metric,
            definition: "B's metric summed over all its windows (counts only; null otherwise)",
        },
        Field {
            name: "a_span_ns",
            unit: Unit::Ns,
            kind: FieldKind::Window,
            definition: "the summed length of A's windows",
        },
        Field {
            name: "b_span_ns",
            unit: Unit::Ns,
            kind: FieldKind::Window,
            definition: "the summed length of B's windows",
        },
        Field {
            name: "pooled_change",
            unit: Unit::Ratio,
            kind: FieldKind::Metric,
            definition: "(b_total / b_span_ns) / (a_total / a_span_ns) - 1: the change of the pooled rate (total count over total time)",
        },
        Field {
            name: "mde",
            unit: Unit::Metric,
            kind: FieldKind::Metric,
            definition: "the minimum detectable shift at these sample sizes (5% two-sided, 80% power, from the samples' pooled spread; rounded up)",
        },
    ],
    sums: &[],
    params: &[],
    scope: ScopeRule::Summed,
    needs: &[],
    cross_rank: &[],
    ratios: &[
        ("change", "delta / a_median"),
        ("change_low", "ratio_low_b / ratio_low_a - 1"),
        ("change_high", "ratio_high_b / ratio_high_a - 1"),
        ("ratio", "b_median / a_median"),
        ("pooled_change", "(b_total / b_span_ns) / (a_total / a_span_ns) - 1"),
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

/// How a side's samples were taken: the unit whose variation the interval describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SampleUnit {
    /// One value per run (one trace per run): the variation between runs.
    Run,
    /// One value per NVTX step of one capture: variation inside the run.
    Step,
    /// One value per equal split (or the one window) of one capture: variation inside the
    /// run, at arbitrary cut points.
    Window,
}

impl SampleUnit {
    /// The word of a claims file and of the evidence.
    pub fn as_str(self) -> &'static str {
        match self {
            SampleUnit::Run => "run",
            SampleUnit::Step => "step",
            SampleUnit::Window => "window",
        }
    }

    /// Parses the word of a claims file.
    pub fn parse(s: &str) -> Option<SampleUnit> {
        [SampleUnit::Run, SampleUnit::Step, SampleUnit::Window]
            .into_iter()
            .find(|u| u.as_str() == s)
    }

    /// The unit of one capture's evidence: its NVTX ranges (several windows that are not
    /// splits), else its splits or its one window.
    pub fn of(ev: &Evidence) -> SampleUnit {
        if ev.samples.len() > 1 && !ev.parameters.contains_key("split") {
            SampleUnit::Step
        } else {
            SampleUnit::Window
        }
    }
}

/// The lower median of exact values (sorted exactly), as a run's one value.
fn lower_median(values: &[Rational]) -> Option<Rational> {
    let mut v = values.to_vec();
    v.sort_by(|x, y| x.cmp_to(*y));
    v.get(v.len().checked_sub(1)? / 2).copied()
}

/// One capture's samples: each window with the metric on it.
type Windows = Vec<([i64; 2], Rational)>;

/// Compares side A with side B, each one capture whose windows are the samples.
pub fn run(a: &Evidence, b: &Evidence, req: &Request) -> Result<Evidence, QueryError> {
    run_sides(&[a], &[b], req)
}

/// Compares side A with side B, each one capture or several runs (one evidence per run).
/// With several runs on a side, each run is one sample: the lower median of the metric over
/// its windows (its steps, or its one window), so the interval describes variation between
/// runs; the pooled rate still sums every window of every run.
pub fn run_sides(a: &[&Evidence], b: &[&Evidence], req: &Request) -> Result<Evidence, QueryError> {
    let failed = |side: &str, reason: String| {
        QueryError::Failed {
        reason: format!("side {side}: {reason}"),
        hint: "each side needs the metric's fields on every window: one device for per-device analyses, and windows with kernels".into(),
    }
    };
    let (Some(first_a), Some(first_b)) = (a.first(), b.first()) else {
        return Err(failed("A", "no sample".into()));
    };
    let windows = |evs: &[&Evidence], side: &str| -> Result<Vec<Windows>, QueryError> {
        evs.iter().map(|ev| samples(ev, req.metric).map_err(|e| failed(side, e))).collect()
    };
    let (wa, wb) = (windows(a, "A")?, windows(b, "B")?);
    let by_run = a.len() > 1 || b.len() > 1;
    let unit_of_samples = if by_run { SampleUnit::Run } else { SampleUnit::of(first_a) };
    // A run's one value: the lower median of its windows, over its whole span.
    let per_run = |runs: &[Windows]| -> Windows {
        runs.iter()
            .filter_map(|w| {
                let v: Vec<Rational> = w.iter().map(|(_, v)| *v).collect();
                let span = [w.iter().map(|x| x.0[0]).min()?, w.iter().map(|x| x.0[1]).max()?];
                Some((span, lower_median(&v)?))
            })
            .collect()
    };
    let (sa, sb) =
        if by_run { (per_run(&wa), per_run(&wb)) } else { (wa[0].clone(), wb[0].clone()) };
    let unit = metric_unit(req.of, req.metric, req.metric_text);
    let all_windows = || wa.iter().chain(&wb).flatten();
    let whole = sa.iter().chain(&sb).chain(all_windows()).all(|(_, v)| v.den == 1);
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
        trace: first_a.trace.clone(),
        window: WindowInfo {
            requested_ns: first_a.window.requested_ns,
            effective_ns: None,
            semantics: first_a.window.semantics,
        },
        scope: first_a.scope.clone(),
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
    ev.parameters.insert("sample_unit".into(), json!(unit_of_samples.as_str()));
    ev.parameters.insert("runs".into(), json!([a.len(), b.len()]));
    if by_run {
        ev.parameters.insert("run_value".into(), json!("lower median of the run's windows"));
    }
    ev.parameters.insert("interval".into(), json!("Hodges-Lehmann shift, exact Moses interval"));
    ev.parameters.insert("seed".into(), json!(req.seed));
    ev.parameters.insert("resamples".into(), json!(stats::DEFAULT_RESAMPLES));
    ev.parameters.insert("confidence".into(), json!("95%"));
    let mut values = serde_json::Map::new();
    values.insert("n_a".into(), json!(ia.len()));
    values.insert("n_b".into(), json!(ib.len()));
    values.insert("a_median".into(), json!(md.median_a));
    values.insert("b_median".into(), json!(md.median_b));
    values.insert("delta".into(), json!(i64::try_from(md.difference).ok()));
    for f in [
        "ci_low",
        "ci_high",
        "change",
        "change_low",
        "change_high",
        "ratio",
        "ratio_low_b",
        "ratio_low_a",
        "ratio_high_b",
        "ratio_high_a",
        "a_total",
        "b_total",
        "pooled_change",
        "mde",
    ] {
        values.insert(f.into(), Value::Null);
    }
    // The pooled rate: every window of every run, summed, over their summed length.
    let span = |runs: &[Windows]| -> i64 {
        runs.iter().flatten().map(|(w, _)| w[1].saturating_sub(w[0])).sum()
    };
    values.insert("a_span_ns".into(), json!(span(&wa)));
    values.insert("b_span_ns".into(), json!(span(&wb)));
    if unit == Unit::Count && whole {
        let total = |runs: &[Windows]| -> Option<i64> {
            runs.iter()
                .flatten()
                .try_fold(0i64, |t, (_, v)| t.checked_add(i64::try_from(v.num).ok()?))
        };
        let (ta, tb) = (total(&wa), total(&wb));
        let (la, lb) = (span(&wa), span(&wb));
        values.insert("a_total".into(), json!(ta));
        values.insert("b_total".into(), json!(tb));
        if let (Some(ta), Some(tb)) = (ta, tb)
            && ta > 0
            && la > 0
            && lb > 0
        {
            let pooled = (tb as f64 / lb as f64) / (ta as f64 / la as f64) - 1.0;
            values.insert("pooled_change".into(), json!(pooled));
        }
    }
    let run_json = |evs: &[&Evidence], s: &[([i64; 2], Rational)], ints: &[i64]| -> Value {
        if !by_run {
            return Value::Null;
        }
        json!(evs
            .iter()
            .zip(s.iter().zip(ints))
            .map(|(e, ((w, _), i))| json!({"trace": e.trace.path, "sha256": e.trace.sha256, "windows": e.samples.len().max(1), "span_ns": w, "value": i}))
            .collect::<Vec<_>>())
    };
    let mut side_a = side_json(first_a, req.labels[0], &sa, &ia);
    side_a["runs"] = run_json(a, &sa, &ia);
    let mut side_b = side_json(first_b, req.labels[1], &sb, &ib);
    side_b["runs"] = run_json(b, &sb, &ib);
    values.insert("a".into(), side_a);
    values.insert("b".into(), side_b);
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
        if let Some(mde) = stats::min_detectable_shift(&ia, &ib) {
            values_mut(&mut ev).insert("mde".into(), json!(mde.ceil() as i64));
        }
        // The bootstrap of the difference of medians, kept beside the judged interval as a
        // cross-check that reruns from its disclosed seed.
        match stats::bootstrap_median_difference(
            &ia,
            &ib,
            confidence,
            stats::DEFAULT_RESAMPLES,
            req.seed,
        ) {
            Ok(bi) => {
                values_mut(&mut ev).insert(
                    "bootstrap".into(),
                    json!({"seed": bi.seed, "resamples": bi.resamples, "confidence": "95%", "low": bi.low.to_string(), "high": bi.high.to_string(), "observed": bi.observed.to_string()}),
                );
            }
            Err(e) => ev.note("note.compare_refused", &[("reason", e.to_string())]),
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
                let v = values_mut(&mut ev);
                v.insert("ci_low".into(), json!(i64::try_from(hl.low).ok()));
                v.insert("ci_high".into(), json!(i64::try_from(hl.high).ok()));
                v.insert(
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
            Err(e) => ev.leave_null(
                &["ci_low", "ci_high"],
                "note.compare_no_shift",
                &[("reason", e.to_string())],
                ("need.compare_samples", &[]),
            ),
        }
        match stats::ratio_interval(&ia, &ib, confidence) {
            Ok(r) => {
                let v = values_mut(&mut ev);
                v.insert("ratio_low_b".into(), json!(r.low.0));
                v.insert("ratio_low_a".into(), json!(r.low.1));
                v.insert("ratio_high_b".into(), json!(r.high.0));
                v.insert("ratio_high_a".into(), json!(r.high.1));
                // The ratios read back exactly from their formulas; these floats are for
                // readers of the JSON.
                let f = |(y, x): (i64, i64)| y as f64 / x as f64 - 1.0;
                v.insert("change_low".into(), json!(f(r.low)));
                v.insert("change_high".into(), json!(f(r.high)));
                v.insert(
                    "ratio_interval".into(),
                    json!({
                        "estimate": [r.estimate.0, r.estimate.1],
                        "low": [r.low.0, r.low.1],
                        "high": [r.high.0, r.high.1],
                        "achieved": r.achieved,
                        "method": method(r.method),
                    }),
                );
            }
            Err(e) if md.median_a != 0 => ev.leave_null(
                &["change_low", "change_high"],
                "note.compare_no_ratio",
                &[("reason", e.to_string())],
                ("need.compare_positive", &[]),
            ),
            Err(_) => {}
        }
    }
    if scale != 1 {
        ev.note("note.compare_scaled", &[]);
    }
    if by_run {
        ev.note(
            "note.compare_runs",
            &[("runs_a", a.len().to_string()), ("runs_b", b.len().to_string())],
        );
    } else if first_a.parameters.contains_key("split") {
        ev.note("note.compare_split_fallback", &[]);
    }
    // Sides over populations of different sizes: stated here, judged by gate R2.
    if first_a.scope.devices.len() != first_b.scope.devices.len() {
        ev.note(
            "note.compare_populations",
            &[
                ("a", first_a.scope.devices.len().to_string()),
                ("b", first_b.scope.devices.len().to_string()),
            ],
        );
    }
    if let Some([na, nb]) = req.names {
        values_mut(&mut ev).insert("names".into(), name_deltas(na, nb));
    }
    Ok(ev)
}

/// A comparison over several devices: the first device's comparison, with every device's
/// values under `devices` (`[{device, values}]`), each judged on its own.
pub fn with_devices(mut first: Evidence, per_device: Vec<(i64, Evidence)>) -> Evidence {
    let rows: Vec<Value> = per_device
        .into_iter()
        .map(|(d, ev)| {
            json!({
                "device": d,
                "parameters": ev.parameters,
                "values": ev.values.map(|v| {
                    let mut v = v.to_map();
                    v.remove("names");
                    Value::Object(v)
                }),
            })
        })
        .collect();
    if let Some(super::values::Values::Map(v)) = first.values.as_mut() {
        v.insert("devices".into(), Value::Array(rows));
    }
    first
}

/// Each device's comparison of a comparison over several devices, as evidence of its own.
pub fn device_evidences(ev: &Evidence) -> Vec<(i64, Evidence)> {
    ev.value("devices")
        .as_ref()
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|row| {
            let d = row.get("device")?.as_i64()?;
            let values = row.get("values")?.as_object()?.clone();
            let parameters = row.get("parameters")?.as_object()?.clone().into_iter().collect();
            Some((
                d,
                Evidence {
                    values: Some(super::values::Values::Map(values)),
                    parameters,
                    ..ev.clone()
                },
            ))
        })
        .collect()
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
            "B - A = {} (95% Moses interval of the shift {} to {}; bootstrap of the medians {} to {}, seed {})",
            show_delta(int("delta")),
            show_delta(int("ci_low")),
            show_delta(int("ci_high")),
            show_delta(v.get("bootstrap").and_then(|b| b["low"].as_str()?.parse().ok())),
            show_delta(v.get("bootstrap").and_then(|b| b["high"].as_str()?.parse().ok())),
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

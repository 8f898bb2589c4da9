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

use schemars::JsonSchema;
use serde::Serialize;
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
    per_device: &[],
    rank_rows: None,
    across: &[],
    stats: &[],
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
fn name_deltas(a: &Evidence, b: &Evidence) -> NameDeltas {
    let (na, nb) = (names_of(a), names_of(b));
    let total_a: i128 = na.values().map(|v| i128::from(v.1)).sum();
    let total_b: i128 = nb.values().map(|v| i128::from(v.1)).sum();
    let change = total_b - total_a;
    let mut names: Vec<&String> = na.keys().chain(nb.keys()).collect();
    names.sort();
    names.dedup();
    let clamp = |x: i128| i64::try_from(x).unwrap_or(if x < 0 { i64::MIN } else { i64::MAX });
    let mut rows: Vec<(i128, NameDelta)> = names
        .into_iter()
        .map(|n| {
            let (ca, ta) = na.get(n).copied().unwrap_or((0, 0));
            let (cb, tb) = nb.get(n).copied().unwrap_or((0, 0));
            let delta = i128::from(tb) - i128::from(ta);
            let only_in = match (na.contains_key(n), nb.contains_key(n)) {
                (true, false) => Some("a"),
                (false, true) => Some("b"),
                _ => None,
            };
            let mean = |t: i64, c: i64| (c > 0).then_some([t, c]);
            (
                delta.abs(),
                NameDelta {
                    name: n.clone(),
                    a_count: ca,
                    a_total_ns: ta,
                    a_mean_ns: mean(ta, ca),
                    b_count: cb,
                    b_total_ns: tb,
                    b_mean_ns: mean(tb, cb),
                    delta_ns: clamp(delta),
                    share_of_change: (change != 0).then(|| [delta.to_string(), change.to_string()]),
                    only_in,
                },
            )
        })
        .collect();
    rows.sort_by_key(|x| std::cmp::Reverse(x.0));
    NameDeltas {
        a_total_ns: clamp(total_a),
        b_total_ns: clamp(total_b),
        rows: rows.into_iter().map(|(_, v)| v).collect(),
    }
}

/// The values of a comparison: each side's summary and samples, the median difference, the
/// exact interval of the shift and of the ratio that the verdicts read, the rank test, the
/// pooled rate of a count, and the per-name, per-device and per-run tables where there are
/// any. A value that does not exist here (no interval over too few samples, no ratio over a
/// zero median) is absent, and a note says why.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
#[schemars(rename = "CompareValues")]
pub struct Values {
    /// Samples of side A.
    pub n_a: i64,
    /// Samples of side B.
    pub n_b: i64,
    /// A's lower median, in the samples' scale.
    pub a_median: i64,
    /// B's lower median.
    pub b_median: i64,
    /// `b_median - a_median`.
    pub delta: Option<i64>,
    /// The exact Moses interval of the Hodges-Lehmann shift B - A, low end.
    pub ci_low: Option<i64>,
    /// Its high end.
    pub ci_high: Option<i64>,
    /// `delta / a_median`.
    pub change: Option<f64>,
    /// The ratio interval's low end, as a change.
    pub change_low: Option<f64>,
    /// Its high end.
    pub change_high: Option<f64>,
    /// `b_median / a_median`.
    pub ratio: Option<f64>,
    /// The pair behind the ratio interval's low end: B's value.
    pub ratio_low_b: Option<i64>,
    /// Its A value.
    pub ratio_low_a: Option<i64>,
    /// The pair behind the high end: B's value.
    pub ratio_high_b: Option<i64>,
    /// Its A value.
    pub ratio_high_a: Option<i64>,
    /// A count's total over every window of A.
    pub a_total: Option<i64>,
    /// Over B.
    pub b_total: Option<i64>,
    /// The summed length of A's windows.
    pub a_span_ns: i64,
    /// Of B's.
    pub b_span_ns: i64,
    /// The pooled rate's change: B's total over its time against A's.
    pub pooled_change: Option<f64>,
    /// The smallest shift these samples detect (5% two-sided, 80% power).
    pub mde: Option<i64>,
    /// Side A.
    pub a: Side,
    /// Side B.
    pub b: Side,
    /// The bootstrap of the medians, a cross-check.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bootstrap: Option<Bootstrap>,
    /// The two-sided Mann-Whitney U test.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank_test: Option<RankTest>,
    /// The Hodges-Lehmann shift with its exact interval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shift: Option<Shift>,
    /// The interval of the ratio B / A.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio_interval: Option<RatioInterval>,
    /// The per-name deltas (kernels, nvtx, copies).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub names: Option<NameDeltas>,
    /// Each device's comparison, over several devices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub devices: Option<Vec<DeviceComparison>>,
    /// What each side's traces say about their runs, for the experiment check.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs: Option<Runs>,
}

/// One side of a comparison: its trace, window, devices and samples.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct Side {
    /// The scope's (or the command's) label.
    pub label: String,
    /// Its trace (the first run's, over runs).
    pub trace: String,
    /// Its digest.
    pub sha256: String,
    /// Files of its set, when it is one.
    pub set_files: Option<usize>,
    /// Its requested window.
    pub window_ns: Option<[i64; 2]>,
    /// How the window selected.
    pub semantics: crate::scope::Semantics,
    /// Its devices.
    pub devices: Vec<i64>,
    /// Expected devices without kernels.
    pub missing_devices: Vec<i64>,
    /// Each sample: its window, exact value and the integer compared.
    pub samples: Vec<SideSample>,
    /// Their summary.
    pub summary: Option<SideSummary>,
    /// Over runs, each run's one sample.
    pub runs: Option<Vec<RunSample>>,
}

/// One sample of a side.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SideSample {
    /// Its window.
    pub window_ns: [i64; 2],
    /// The metric on it, exactly: numerator and denominator as text.
    pub value: [String; 2],
    /// The integer the statistics take (the value, or parts per billion).
    pub scaled: i64,
}

/// The summary of a side's samples.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SideSummary {
    /// Samples.
    pub n: usize,
    /// Smallest.
    pub min: i64,
    /// 10th percentile.
    pub p10: i64,
    /// Lower median.
    pub median: i64,
    /// 90th percentile.
    pub p90: i64,
    /// Largest.
    pub max: i64,
    /// Exact mean, numerator and denominator as text.
    pub mean: [String; 2],
}

/// One run of a side over runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RunSample {
    /// Its trace.
    pub trace: String,
    /// Its digest.
    pub sha256: String,
    /// Its windows.
    pub windows: usize,
    /// Its span.
    pub span_ns: [i64; 2],
    /// Its one sample.
    pub value: i64,
}

/// The bootstrap of the difference of medians, redone from its seed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Bootstrap {
    /// The seed of the SplitMix64 stream.
    pub seed: u64,
    /// Resamples.
    pub resamples: u32,
    /// Its confidence.
    pub confidence: &'static str,
    /// Low end, as text.
    pub low: String,
    /// High end.
    pub high: String,
    /// The observed difference.
    pub observed: String,
}

/// The rank test.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct RankTest {
    /// Which test.
    pub test: &'static str,
    /// 2 U of A.
    pub u_a_doubled: u64,
    /// 2 U of B.
    pub u_b_doubled: u64,
    /// Its p-value.
    pub p_value: f64,
    /// The exact p, numerator and denominator as text, when exact.
    pub p_exact: Option<[String; 2]>,
    /// Exact or normal.
    pub method: &'static str,
    /// Whether the samples tie.
    pub ties: bool,
}

/// The Hodges-Lehmann shift and its exact interval.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Shift {
    /// The estimate, numerator and denominator as text.
    pub estimate: [String; 2],
    /// Low end, as text.
    pub low: String,
    /// High end.
    pub high: String,
    /// The confidence the ranks achieve.
    pub achieved: f64,
    /// Exact or normal.
    pub method: &'static str,
    /// Whether the samples tie.
    pub ties: bool,
}

/// The interval of the ratio B / A: each end a pair (B's value, A's value).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct RatioInterval {
    /// The median ratio's pair.
    pub estimate: [i64; 2],
    /// The low end's pair.
    pub low: [i64; 2],
    /// The high end's pair.
    pub high: [i64; 2],
    /// The confidence the ranks achieve.
    pub achieved: f64,
    /// Exact or normal.
    pub method: &'static str,
}

/// The per-name deltas of two sides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct NameDeltas {
    /// A's total over every name.
    pub a_total_ns: i64,
    /// B's.
    pub b_total_ns: i64,
    /// One row per name, largest change first.
    pub rows: Vec<NameDelta>,
}

/// One name's delta.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct NameDelta {
    /// The name.
    pub name: String,
    /// A's count.
    pub a_count: i64,
    /// A's total.
    pub a_total_ns: i64,
    /// A's mean as (total, count); absent over no row.
    pub a_mean_ns: Option<[i64; 2]>,
    /// B's count.
    pub b_count: i64,
    /// B's total.
    pub b_total_ns: i64,
    /// B's mean.
    pub b_mean_ns: Option<[i64; 2]>,
    /// B's total - A's.
    pub delta_ns: i64,
    /// Its share of the total change, as text; absent when nothing changed.
    pub share_of_change: Option<[String; 2]>,
    /// `a` or `b` for a name on one side only.
    pub only_in: Option<&'static str>,
}

/// One device's comparison, over several devices.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct DeviceComparison {
    /// The device.
    pub device: i64,
    /// Its evidence's parameters.
    pub parameters: BTreeMap<String, Value>,
    /// Its values (without the per-name table).
    pub values: Box<Values>,
}

/// What each side's traces say about their runs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Runs {
    /// Side A.
    pub a: crate::trace::SideRun,
    /// Side B.
    pub b: crate::trace::SideRun,
}

/// What one side is, for the evidence: its trace, window, devices and samples.
fn side_of(ev: &Evidence, label: &str, samples: &[([i64; 2], Rational)], ints: &[i64]) -> Side {
    Side {
        label: label.to_string(),
        trace: ev.trace.path.clone(),
        sha256: ev.trace.sha256.clone(),
        set_files: ev.trace.set.as_ref().map(|s| s.files.len()),
        window_ns: ev.window.requested_ns,
        semantics: ev.window.semantics,
        devices: ev.scope.devices.clone(),
        missing_devices: ev.scope.missing_devices.clone(),
        samples: samples
            .iter()
            .zip(ints)
            .map(|((w, v), i)| SideSample {
                window_ns: *w,
                value: [v.num.to_string(), v.den.to_string()],
                scaled: *i,
            })
            .collect(),
        summary: stats::summarize(ints).map(|s| SideSummary {
            n: s.n,
            min: s.min,
            p10: s.p10,
            median: s.median,
            p90: s.p90,
            max: s.max,
            mean: [s.mean.num.to_string(), s.mean.den.to_string()],
        }),
        runs: None,
    }
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, JsonSchema)]
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
        parameters: parameters(req, unit, scale, unit_of_samples, [a.len(), b.len()]),
        metrics: SPEC.metrics(),
        values: None,
        rows: None,
        notes: Vec::new(),
        samples: Vec::new(),
    };
    // The pooled rate: every window of every run, summed, over their summed length.
    let span = |runs: &[Windows]| -> i64 {
        runs.iter().flatten().map(|(w, _)| w[1].saturating_sub(w[0])).sum()
    };
    let mut v = Values {
        n_a: ia.len() as i64,
        n_b: ib.len() as i64,
        a_median: md.median_a,
        b_median: md.median_b,
        delta: i64::try_from(md.difference).ok(),
        a_span_ns: span(&wa),
        b_span_ns: span(&wb),
        ..Values::default()
    };
    if unit == Unit::Count && whole {
        pooled_totals(&mut v, &wa, &wb);
    }
    let run_samples = |evs: &[&Evidence], s: &[([i64; 2], Rational)], ints: &[i64]| {
        by_run.then(|| {
            evs.iter()
                .zip(s.iter().zip(ints))
                .map(|(e, ((w, _), i))| RunSample {
                    trace: e.trace.path.clone(),
                    sha256: e.trace.sha256.clone(),
                    windows: e.samples.len().max(1),
                    span_ns: *w,
                    value: *i,
                })
                .collect()
        })
    };
    v.a = Side { runs: run_samples(a, &sa, &ia), ..side_of(first_a, req.labels[0], &sa, &ia) };
    v.b = Side { runs: run_samples(b, &sb, &ib), ..side_of(first_b, req.labels[1], &sb, &ib) };
    // Ratios of the median: absent when A's median is 0.
    let approx = |x: i128| x as f64 / md.median_a as f64;
    if md.median_a != 0 {
        v.change = Some(approx(md.difference));
        v.ratio = Some(approx(md.median_b.into()));
    } else {
        ev.leave_null(
            &["change", "ratio", "change_low", "change_high"],
            "note.compare_zero_base",
            &[],
            ("need.compare_nonzero", &[]),
        );
    }
    statistics(&mut ev, &mut v, &ia, &ib, &md, req.seed);
    v.names = req.names.map(|[na, nb]| name_deltas(na, nb));
    ev.values = Some(super::values::Values::Compare(Box::new(v)));
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
    Ok(ev)
}

/// The parameters of a comparison's evidence: what it compares, how its samples were taken
/// (one per run when a side has `runs` above one) and rounded (to 1/`scale`), and how its
/// interval and cross-checks were computed.
fn parameters(
    req: &Request,
    unit: Unit,
    scale: i128,
    sample_unit: SampleUnit,
    runs: [usize; 2],
) -> BTreeMap<String, Value> {
    let mut p = BTreeMap::new();
    p.insert("of".into(), json!(req.of.name));
    p.insert("metric".into(), json!(req.metric_text));
    p.insert("metric_unit".into(), json!(unit.as_str()));
    p.insert("metric_scale".into(), json!(scale as i64));
    // Samples of a metric that is not a whole number are kept in units of 1/metric_scale:
    // the evidence says how they were rounded.
    p.insert(
        "sample_rounding".into(),
        json!(if scale > 1 { "half away from zero, to 1/metric_scale" } else { "none" }),
    );
    p.insert("sample_unit".into(), json!(sample_unit.as_str()));
    p.insert("runs".into(), json!(runs));
    if runs[0] > 1 || runs[1] > 1 {
        p.insert("run_value".into(), json!("lower median of the run's windows"));
    }
    p.insert("interval".into(), json!("Hodges-Lehmann shift, exact Moses interval"));
    p.insert("seed".into(), json!(req.seed));
    p.insert("resamples".into(), json!(stats::DEFAULT_RESAMPLES));
    p.insert("confidence".into(), json!("95%"));
    p
}

/// A count's totals on each side (`wa`, `wb`: every window of every run) and the pooled
/// change of its rate: each side's total over its summed span (`v.a_span_ns`, `v.b_span_ns`).
fn pooled_totals(v: &mut Values, wa: &[Windows], wb: &[Windows]) {
    let total = |runs: &[Windows]| -> Option<i64> {
        runs.iter().flatten().try_fold(0i64, |t, (_, v)| t.checked_add(i64::try_from(v.num).ok()?))
    };
    let (ta, tb) = (total(wa), total(wb));
    let (la, lb) = (v.a_span_ns, v.b_span_ns);
    (v.a_total, v.b_total) = (ta, tb);
    if let (Some(ta), Some(tb)) = (ta, tb)
        && ta > 0
        && la > 0
        && lb > 0
    {
        v.pooled_change = Some((tb as f64 / lb as f64) / (ta as f64 / la as f64) - 1.0);
    }
}

/// The statistics of the two sides' samples (`ia`, `ib`, with their medians `md`) into `v`:
/// none with fewer than [`stats::MIN_SAMPLES`] a side, else the minimum detectable shift, the
/// cross-checks and the judged intervals; each one refused is a note of `ev`.
fn statistics(
    ev: &mut Evidence,
    v: &mut Values,
    ia: &[i64],
    ib: &[i64],
    md: &stats::MedianDifference,
    seed: u64,
) {
    let confidence = Rational::new(CONFIDENCE.0, CONFIDENCE.1).expect("95/100 is a fraction");
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
        v.mde = stats::min_detectable_shift(ia, ib).map(|mde| mde.ceil() as i64);
        cross_checks(ev, v, ia, ib, confidence, seed);
        intervals(ev, v, ia, ib, md, confidence);
    }
}

/// The cross-checks of a comparison: a bootstrap of the difference of medians and a
/// Mann-Whitney U test.
fn cross_checks(
    ev: &mut Evidence,
    v: &mut Values,
    ia: &[i64],
    ib: &[i64],
    confidence: Rational,
    seed: u64,
) {
    // The bootstrap of the difference of medians, kept beside the judged interval as a
    // cross-check that reruns from its disclosed seed.
    match stats::bootstrap_median_difference(ia, ib, confidence, stats::DEFAULT_RESAMPLES, seed) {
        Ok(bi) => {
            v.bootstrap = Some(Bootstrap {
                seed: bi.seed,
                resamples: bi.resamples,
                confidence: "95%",
                low: bi.low.to_string(),
                high: bi.high.to_string(),
                observed: bi.observed.to_string(),
            });
        }
        Err(e) => ev.note("note.compare_refused", &[("reason", e.to_string())]),
    }
    match stats::mann_whitney(ia, ib) {
        Ok(mw) => {
            v.rank_test = Some(RankTest {
                test: "Mann-Whitney U, two-sided",
                u_a_doubled: mw.u_a_doubled,
                u_b_doubled: mw.u_b_doubled,
                p_value: mw.p_value,
                p_exact: mw.p_exact.map(|p| [p.num.to_string(), p.den.to_string()]),
                method: method(mw.method),
                ties: mw.ties,
            });
        }
        Err(e) => ev.note("note.compare_refused", &[("reason", e.to_string())]),
    }
}

/// The judged intervals of a comparison: the Hodges-Lehmann shift with its exact Moses
/// interval, and the interval of the ratio of the same ranks (none said when A's median `md`
/// is 0: the ratios are absent already).
fn intervals(
    ev: &mut Evidence,
    v: &mut Values,
    ia: &[i64],
    ib: &[i64],
    md: &stats::MedianDifference,
    confidence: Rational,
) {
    match stats::hodges_lehmann(ia, ib, confidence) {
        Ok(hl) => {
            v.ci_low = i64::try_from(hl.low).ok();
            v.ci_high = i64::try_from(hl.high).ok();
            v.shift = Some(Shift {
                estimate: [hl.estimate.num.to_string(), hl.estimate.den.to_string()],
                low: hl.low.to_string(),
                high: hl.high.to_string(),
                achieved: hl.achieved,
                method: method(hl.method),
                ties: hl.ties,
            });
        }
        Err(e) => ev.leave_null(
            &["ci_low", "ci_high"],
            "note.compare_no_shift",
            &[("reason", e.to_string())],
            ("need.compare_samples", &[]),
        ),
    }
    match stats::ratio_interval(ia, ib, confidence) {
        Ok(r) => {
            (v.ratio_low_b, v.ratio_low_a) = (Some(r.low.0), Some(r.low.1));
            (v.ratio_high_b, v.ratio_high_a) = (Some(r.high.0), Some(r.high.1));
            // The ratios read back exactly from their formulas; these floats are for
            // readers of the JSON.
            let f = |(y, x): (i64, i64)| y as f64 / x as f64 - 1.0;
            v.change_low = Some(f(r.low));
            v.change_high = Some(f(r.high));
            v.ratio_interval = Some(RatioInterval {
                estimate: [r.estimate.0, r.estimate.1],
                low: [r.low.0, r.low.1],
                high: [r.high.0, r.high.1],
                achieved: r.achieved,
                method: method(r.method),
            });
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

/// A comparison over several devices: the first device's comparison, with every device's
/// values under `devices` (`[{device, values}]`), each judged on its own.
pub fn with_devices(mut first: Evidence, per_device: Vec<(i64, Evidence)>) -> Evidence {
    let rows: Vec<DeviceComparison> = per_device
        .into_iter()
        .filter_map(|(device, ev)| {
            let mut values = Values::of(&ev)?.clone();
            values.names = None;
            Some(DeviceComparison { device, parameters: ev.parameters, values: Box::new(values) })
        })
        .collect();
    if let Some(super::values::Values::Compare(v)) = first.values.as_mut() {
        v.devices = Some(rows);
    }
    first
}

/// Each device's comparison of a comparison over several devices, as evidence of its own.
pub fn device_evidences(ev: &Evidence) -> Vec<(i64, Evidence)> {
    let Some(v) = Values::of(ev) else { return Vec::new() };
    v.devices
        .iter()
        .flatten()
        .map(|d| {
            let values = Some(super::values::Values::Compare(d.values.clone()));
            (d.device, Evidence { values, parameters: d.parameters.clone(), ..ev.clone() })
        })
        .collect()
}

impl Values {
    /// The comparison values of `ev`, when it is a comparison.
    pub fn of(ev: &Evidence) -> Option<&Values> {
        match ev.values.as_ref()? {
            super::values::Values::Compare(v) => Some(v),
            _ => None,
        }
    }
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
    let Some(v) = Values::of(ev) else { return String::new() };
    let scale = ev.parameters.get("metric_scale").and_then(Value::as_i64).unwrap_or(1);
    let unit = ev.parameters.get("metric_unit").and_then(Value::as_str).unwrap_or("");
    let show = |x: Option<i64>| match x {
        None => "n/a".to_string(),
        Some(x) => show_metric(x, unit, scale),
    };
    // A difference of shares is in percentage points.
    let show_delta = |x: Option<i64>| match (x, scale) {
        (Some(x), s) if s != 1 => crate::units::decimal(i128::from(x) * 100, s.into(), 1)
            .map_or_else(|| x.to_string(), |d| format!("{d} pp")),
        _ => show(x),
    };
    let mut s = String::new();
    for (name, sd) in [("A", &v.a), ("B", &v.b)] {
        let sum = sd.summary.as_ref();
        let stat = |f: fn(&SideSummary) -> i64| show(sum.map(f));
        s += &t::hang(
            &format!("{:<13}", format!("{name} {}", sd.label)),
            &format!(
                "n {} · median {} · p10 {} · p90 {} · min {} · max {} · {}",
                sum.map_or("n/a".into(), |x| x.n.to_string()),
                stat(|x| x.median),
                stat(|x| x.p10),
                stat(|x| x.p90),
                stat(|x| x.min),
                stat(|x| x.max),
                sd.trace
            ),
            13,
            width,
        );
    }
    let bootstrap = |f: fn(&Bootstrap) -> &String| {
        show_delta(v.bootstrap.as_ref().and_then(|b| f(b).parse().ok()))
    };
    s += &t::hang(
        "difference   ",
        &format!(
            "B - A = {} (95% Moses interval of the shift {} to {}; bootstrap of the medians {} to {}, seed {})",
            show_delta(v.delta),
            show_delta(v.ci_low),
            show_delta(v.ci_high),
            bootstrap(|b| &b.low),
            bootstrap(|b| &b.high),
            ev.parameters.get("seed").cloned().unwrap_or(Value::Null)
        ),
        13,
        width,
    );
    if let Some(rt) = &v.rank_test {
        s += &t::hang(
            "rank test    ",
            &format!(
                "Mann-Whitney U two-sided p {} ({})",
                match rt.p_value {
                    p if p < 0.0001 => "< 0.0001".to_string(),
                    p => format!("= {p:.4}"),
                },
                rt.method
            ),
            13,
            width,
        );
    }
    for r in v.names.iter().flat_map(|n| n.rows.iter().take(10)) {
        s += &t::hang(
            "  ",
            &format!(
                "{}  A {}  B {}  Δ {}{}",
                r.name,
                crate::units::ms(r.a_total_ns),
                crate::units::ms(r.b_total_ns),
                crate::units::ms(r.delta_ns),
                match r.only_in {
                    Some(x) => format!(" (only in {})", x.to_uppercase()),
                    None => String::new(),
                }
            ),
            2,
            width,
        );
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

//! Gates R1, R3 and R4 and the verdict table's label over the whole grid the claims format
//! accepts (issue 38): every analysis x every field (of its values, and of its per-rank rows
//! with `rank:` or `over_ranks:`) x formula shape x aggregation (one device, two devices, one
//! rank's row, every rank's row; the claim per device, summed or silent) x window (none, clip,
//! contain with and without kernels cut at an edge).
//!
//! The oracle is this file's own reading of each field, written by hand from the analyses'
//! definitions (`verdict analyses`): which fields are statistics (a min, a median, a max, a
//! skew, a count of distinct names), which are ratios of others and over what, and which
//! combine ranks by summing or by their differences. The test asserts that the denominator the
//! gates state is the one the formula divides by, that R1 calls the window a denominator
//! exactly when the formula divides by it, and that R4 and the label state the aggregation
//! the formula computes. A field an analysis adds without a line here fails the test.

use std::collections::{BTreeMap, BTreeSet};

use verdict::analysis::{self, AnalysisSpec, Context, FieldKind, Params, ScopeRule};
use verdict::claims::{About, Measure, Per, RankSel, Reduce, Unit, Who};
use verdict::formula::Expr;
use verdict::scope::{DeviceSel, Semantics};
use verdict::trace::Kernels;
use verdict::verdict::reading::Reading;
use verdict::verdict::{GateStatus, r1, r3, r4};

/// The statistic fields of each analysis, by hand from their definitions, with the word
/// gate R3 prints for them.
const STATS: &[(&str, &str, &str)] = &[
    ("kernels", "mean_ns", "mean"),
    ("kernels", "min_ns", "min"),
    ("kernels", "median_ns", "median"),
    ("kernels", "max_ns", "max"),
    ("kernels", "names", "distinct"),
    ("kernels", "devices_with_match", "distinct"),
    ("nvtx", "names", "distinct"),
    ("nvtx", "range_min_ns", "min"),
    ("nvtx", "range_median_ns", "median"),
    ("nvtx", "range_p90_ns", "p90"),
    ("nvtx", "range_max_ns", "max"),
    ("nccl-skew", "start_skew_median_ns", "median"),
    ("nccl-skew", "start_skew_max_ns", "max"),
    ("nccl-skew", "end_skew_median_ns", "median"),
    ("nccl-skew", "end_skew_max_ns", "max"),
    ("nccl-skew", "start_offset_median_ns", "median"),
    ("nccl-skew", "start_offset_max_ns", "max"),
    ("nccl-skew", "end_offset_median_ns", "median"),
    ("nccl-skew", "end_offset_max_ns", "max"),
    ("nccl-calls", "start_skew_ns", "skew"),
    ("nccl-calls", "skew_from_call_ns", "skew"),
    ("nccl-calls", "skew_from_launch_ns", "skew"),
    ("nccl-calls", "skew_from_queue_ns", "skew"),
    ("nccl-calls", "skew_from_init_ns", "skew"),
    ("nccl-calls", "init_end_skew_ns", "skew"),
    ("nccl-calls", "call_skew_ns", "skew"),
    ("nccl-calls", "call_to_kernel_max_ns", "max"),
    ("nccl-calls", "call_to_kernel_min_ns", "min"),
    ("coverage", "streams", "distinct"),
];

/// Fields that are a ratio of others: (analysis, field, numerator, denominator), from the
/// definitions `verdict analyses` prints. `rows` marks a ratio of per-rank rows.
const RATIOS: &[(&str, &str, &str, &str, bool)] = &[
    ("nccl-skew", "wait_share", "wait_ns", "nccl_ns", false),
    ("nccl-skew", "straggler_share", "straggler_last", "matched", false),
    ("nccl-skew", "last_share", "arrived_last", "matched", true),
    ("nccl-skew", "first_share", "arrived_first", "matched", true),
    ("nccl-skew", "mean_wait_ns", "wait_ns", "matched", true),
    ("copies", "bandwidth", "bytes", "memcpy_busy_ns", false),
    ("nvtx", "kernel_share", "kernel_ns", "selected_kernel_ns", false),
];

/// How a cross-rank field combines its ranks: summed over them, or a difference between them.
const SUMMED_OVER_RANKS: &[(&str, &str)] = &[
    ("nccl-skew", "nccl_ns"),
    ("nccl-skew", "wait_ns"),
    ("nccl-skew", "transfer_ns"),
    ("nccl-skew", "wait_share"),
];
const SPREAD_ACROSS_RANKS: &[(&str, &str)] = &[
    ("nccl-skew", "start_skew_median_ns"),
    ("nccl-skew", "start_skew_max_ns"),
    ("nccl-skew", "end_skew_median_ns"),
    ("nccl-skew", "end_skew_max_ns"),
    ("nccl-calls", "start_skew_ns"),
    ("nccl-calls", "skew_from_call_ns"),
    ("nccl-calls", "skew_from_launch_ns"),
    ("nccl-calls", "skew_from_queue_ns"),
    ("nccl-calls", "skew_from_init_ns"),
    ("nccl-calls", "init_end_skew_ns"),
    ("nccl-calls", "call_skew_ns"),
];

fn stat(analysis: &str, field: &str) -> Option<&'static str> {
    STATS.iter().find(|(a, f, _)| *a == analysis && *f == field).map(|(_, _, s)| *s)
}

fn ratio(analysis: &str, field: &str, rows: bool) -> Option<(&'static str, &'static str)> {
    let find = |of_rows: bool| {
        RATIOS.iter().find(|(a, f, .., r)| *a == analysis && *f == field && *r == of_rows)
    };
    // Over rows, the rows' ratios come first, then the values'; over values, the values' only.
    let found = if rows { find(true).or_else(|| find(false)) } else { find(false) };
    found.map(|(_, _, n, d, _)| (*n, *d))
}

/// The analyses a claim can bind (compare has gates of its own: `compare_gates`).
fn specs() -> Vec<&'static AnalysisSpec> {
    analysis::ANALYSES.iter().collect()
}

/// A field's declared kind, from its analysis's values or rows.
fn kind(spec: &AnalysisSpec, field: &str) -> FieldKind {
    spec.field(field).unwrap_or_else(|| panic!("{} has no field {field}", spec.name)).kind
}

#[test]
fn the_oracle_names_only_declared_fields_and_every_declared_statistic_is_in_it() {
    for (a, f, _) in STATS {
        let spec = analysis::spec(a).unwrap();
        assert!(spec.field(f).is_some(), "{a} {f}");
    }
    for (a, f, n, d, _) in RATIOS {
        let spec = analysis::spec(a).unwrap();
        for x in [f, n, d] {
            assert!(spec.field(x).is_some(), "{a} {x}");
        }
    }
    // A statistic field whose definition says so must be in the oracle: the words of the
    // definitions `verdict analyses` prints.
    let words = ["median", "longest", "shortest", "largest", "smallest", "percentile", "distinct"];
    for spec in specs() {
        let rows = spec.row_fields().map(|r| r.fields).unwrap_or(&[]);
        for f in spec.fields.iter().chain(rows) {
            let d = f.definition.to_lowercase();
            let first = d.split([':', '(']).next().unwrap_or("");
            if words.iter().any(|w| first.contains(w)) && !first.contains("instances in which") {
                assert!(
                    stat(spec.name, f.name).is_some(),
                    "{} `{}` reads as a statistic ({}), but the oracle does not list it",
                    spec.name,
                    f.name,
                    f.definition
                );
            }
        }
    }
}

/// Evidence of `analysis` over `devices`, with a window as given: the gates read the scope,
/// the window and the analysis's declarations, never the numbers.
fn evidence(
    analysis: &str,
    devices: &[i64],
    window: Option<[i64; 2]>,
    effective: Option<[i64; 2]>,
) -> verdict::analysis::Evidence {
    let ctx = Context::from_kernels(Kernels::from_rows(&[
        (0, 7, 100, 400, "gemm"),
        (1, 7, 120, 380, "gemm"),
        (0, 56, 500, 900, "ncclAllReduce"),
        (1, 56, 520, 900, "ncclAllReduce"),
    ]));
    let mut ev = analysis::run("kernels", &Params::new(DeviceSel::All), &ctx).unwrap();
    ev.analysis = analysis.to_string();
    ev.scope.devices = devices.to_vec();
    ev.scope.missing_devices = Vec::new();
    ev.window.requested_ns = window;
    ev.window.effective_ns = effective;
    ev
}

fn measure(analysis: &str, value: &str, ranks: Option<RankSel>) -> Measure {
    Measure {
        analysis: analysis.into(),
        scope: "s".into(),
        value_text: value.into(),
        value: Expr::parse(value).unwrap(),
        unit: Unit::Count,
        args: Vec::new(),
        params: Params::new(DeviceSel::All),
        compare: None,
        ranks,
        over: None,
    }
}

fn about(devices: &[i64], per: Option<Per>) -> About {
    About {
        window: None,
        devices: Some(devices.to_vec()),
        per,
        quantity: None,
        denominator: None,
        denominator_text: None,
        chosen_by: Who::Source,
    }
}

/// One formula of the grid: its text, the field it divides by (the oracle's), and every
/// field it reads once a ratio field alone is read through its definition.
struct Shape {
    text: String,
    den: Option<String>,
    operands: Vec<String>,
    /// The numerator's fields, when the formula divides.
    num: Vec<String>,
    /// The fields as the formula is written.
    written: Vec<String>,
}

fn shapes(spec: &AnalysisSpec, field: &str, rows: bool) -> Vec<Shape> {
    let mut out = Vec::new();
    let alone = |text: String| match ratio(spec.name, field, rows) {
        Some((n, d)) => Shape {
            text,
            den: Some(d.into()),
            operands: vec![n.into(), d.into()],
            num: vec![n.into()],
            written: vec![field.into()],
        },
        None => Shape {
            text,
            den: None,
            operands: vec![field.into()],
            num: vec![field.into()],
            written: vec![field.into()],
        },
    };
    out.push(alone(field.to_string()));
    out.push(alone(format!("{field} * 1000")));
    let others: Vec<&str> = if rows {
        spec.row_fields().map(|r| r.fields.iter().map(|f| f.name).collect()).unwrap_or_default()
    } else {
        spec.fields.iter().map(|f| f.name).collect()
    };
    for g in others.into_iter().filter(|g| *g != field) {
        for text in [format!("{field} / {g}"), format!("1 - {field} / {g}")] {
            out.push(Shape {
                text,
                den: Some(g.into()),
                operands: vec![field.into(), g.into()],
                num: vec![field.into()],
                written: vec![field.into(), g.into()],
            });
        }
        out.push(Shape {
            text: format!("{field} + {g}"),
            den: None,
            operands: vec![field.into(), g.into()],
            num: vec![field.into(), g.into()],
            written: vec![field.into(), g.into()],
        });
    }
    out
}

#[derive(Clone, Copy, Debug)]
enum Win {
    None,
    Clip,
    ContainCut,
    ContainWhole,
}

const WINDOW: [i64; 2] = [100, 1_000];
const KEPT: [i64; 2] = [120, 900];

#[test]
fn every_gate_states_the_denominator_and_aggregation_the_formula_computes() {
    let mut cases = 0usize;
    let mut seen: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for spec in specs() {
        let row_fields: Vec<&str> = spec
            .row_fields()
            .map(|r| r.fields.iter().map(|f| f.name).collect())
            .unwrap_or_default();
        let mut fields: Vec<(&str, bool)> = spec.fields.iter().map(|f| (f.name, false)).collect();
        fields.extend(row_fields.iter().map(|f| (*f, true)));
        for (field, rows) in fields {
            for shape in shapes(spec, field, rows) {
                let selections: Vec<(Vec<i64>, Option<RankSel>)> = if rows {
                    vec![
                        (vec![0, 1], Some(RankSel::One("1".into()))),
                        (vec![0, 1], Some(RankSel::Every(Reduce::Max))),
                    ]
                } else if spec.scope == ScopeRule::PerDevice {
                    vec![(vec![0], None)]
                } else {
                    vec![(vec![0], None), (vec![0, 1], None)]
                };
                let windows: &[Win] = if spec.scope == ScopeRule::WholeTrace {
                    &[Win::None]
                } else {
                    &[Win::None, Win::Clip, Win::ContainCut, Win::ContainWhole]
                };
                for (devices, ranks) in &selections {
                    for win in windows {
                        for per in [None, Some(Per::Device), Some(Per::Sum)] {
                            let (w, eff, sem) = match win {
                                Win::None => (None, Some(KEPT), Semantics::Clip),
                                Win::Clip => (Some(WINDOW), Some(WINDOW), Semantics::Clip),
                                Win::ContainCut => (Some(WINDOW), Some(KEPT), Semantics::Contain),
                                Win::ContainWhole => {
                                    (Some(WINDOW), Some(WINDOW), Semantics::Contain)
                                }
                            };
                            let ev = evidence(spec.name, devices, w, eff);
                            let m = measure(spec.name, &shape.text, ranks.clone());
                            let a = about(devices, per);
                            let reading = Reading::of(&m, &ev, sem);
                            let at = format!(
                                "{} `{}` devices {devices:?} ranks {ranks:?} {win:?} per {per:?}",
                                spec.name, shape.text
                            );
                            check_r1(spec, &shape, *win, &r1(&a, &reading, &ev), &at);
                            check_r3(spec, &shape, &r3(&a, &m, &reading), &at);
                            let g4 = r4(&a, &m, &reading, None, None, &ev);
                            let label = check_r4(spec, &shape, devices, ranks, per, &g4, &at);
                            if let Some(label) = label {
                                assert_eq!(reading.devices_label(), label, "label: {at}");
                            }
                            seen.entry(spec.name).or_default().insert(g4.finding.key.clone());
                            cases += 1;
                        }
                    }
                }
            }
        }
    }
    // The grid is the whole format: every analysis, tens of thousands of cases.
    assert_eq!(seen.len(), analysis::ANALYSES.len());
    assert!(cases > 20_000, "{cases} cases");
    eprintln!("gate grid: {cases} cases; R4 findings per analysis: {seen:?}");
}

fn check_r1(spec: &AnalysisSpec, shape: &Shape, win: Win, g: &verdict::verdict::Gate, at: &str) {
    let den_is_window = shape.den.as_deref().is_some_and(|d| kind(spec, d) == FieldKind::Window);
    // A sum the analysis declares equal to the window (`busy_ns + idle_ns` of streams: the
    // intervals that add up to it), added rather than divided, reads the window as the
    // window's own field does.
    let sums_to_window = shape.den.is_none()
        && spec.sums.iter().any(|(terms, k)| {
            *k == FieldKind::Window
                && terms.len() == shape.operands.len()
                && terms.iter().all(|t| shape.operands.iter().any(|o| o == t))
        });
    let reads_window =
        sums_to_window || shape.operands.iter().any(|o| kind(spec, o) == FieldKind::Window);
    let (status, key) = match win {
        Win::None => (GateStatus::Note, "gate.r1.whole_trace"),
        _ if spec.scope == ScopeRule::Ranks => (GateStatus::Pass, "gate.r1.same_window_instances"),
        Win::ContainCut if den_is_window => (GateStatus::Note, "gate.r1.contain_span"),
        _ if den_is_window => (GateStatus::Pass, "gate.r1.same_window"),
        Win::ContainCut if reads_window => (GateStatus::Note, "gate.r1.contain_span_value"),
        _ if reads_window => (GateStatus::Pass, "gate.r1.same_window_span"),
        Win::ContainCut => (GateStatus::Pass, "gate.r1.contain_selects"),
        _ => (GateStatus::Pass, "gate.r1.same_window_selects"),
    };
    assert_eq!((g.status, g.finding.key.as_str()), (status, key), "R1: {at}");
    // A window named as the denominator is the formula's denominator, and only then.
    let says_denominator = matches!(key, "gate.r1.contain_span" | "gate.r1.same_window");
    assert_eq!(
        says_denominator && !matches!(win, Win::None),
        den_is_window && !matches!(win, Win::None),
        "{at}"
    );
}

fn check_r3(spec: &AnalysisSpec, shape: &Shape, g: &verdict::verdict::Gate, at: &str) {
    match shape.den.as_deref() {
        None => assert_eq!(g.finding.key, "gate.r3.not_a_share", "R3: {at}"),
        Some(d) => match stat(spec.name, d) {
            Some(s) => {
                assert_eq!(g.finding.key, "gate.r3.unstated_statistic", "R3: {at}");
                assert_eq!(g.finding.args["field"], d, "R3: {at}");
                assert_eq!(g.finding.args["stat"], s, "R3: {at}");
            }
            None => {
                // Bytes over a time is a bandwidth, not a share of that time.
                let dk = kind(spec, d);
                let bandwidth = !shape.num.is_empty()
                    && shape.num.iter().all(|n| kind(spec, n) == FieldKind::Bytes)
                    && (dk.is_wall() || dk.is_kernel_time());
                let key = if bandwidth { "gate.r3.bandwidth_unstated" } else { "gate.r3.unstated" };
                assert_eq!(g.finding.key, key, "R3: {at}");
                assert_eq!(g.finding.args["denominator"], dk.key(), "R3: {at}");
            }
        },
    }
}

/// Checks R4 and returns the label the verdict table must give, where it is the formula's.
fn check_r4(
    spec: &AnalysisSpec,
    shape: &Shape,
    devices: &[i64],
    ranks: &Option<RankSel>,
    per: Option<Per>,
    g: &verdict::verdict::Gate,
    at: &str,
) -> Option<&'static str> {
    let key = g.finding.key.as_str();
    match ranks {
        Some(RankSel::One(_)) => {
            assert_eq!(key, "gate.r4.one_rank", "R4: {at}");
            return None;
        }
        Some(RankSel::Every(_)) => {
            assert_eq!(key, "gate.r4.each_rank", "R4: {at}");
            return None;
        }
        None => {}
    }
    if devices.len() == 1 || spec.scope == ScopeRule::WholeTrace {
        assert_eq!(key, "gate.r4.ok", "R4: {at}");
        return None;
    }
    let any = |list: &[(&str, &str)]| {
        shape
            .operands
            .iter()
            .chain(&shape.written)
            .any(|o| list.iter().any(|(a, f)| *a == spec.name && f == o))
    };
    let stats = shape.operands.iter().any(|o| stat(spec.name, o).is_some());
    let ratio_of_stats = shape.den.as_deref().is_some_and(|d| stat(spec.name, d).is_some())
        && shape.num.iter().all(|n| stat(spec.name, n).is_some());
    let ranks_rule = spec.scope == ScopeRule::Ranks;
    let summed = |ranks_rule: bool| match (per, ranks_rule) {
        (Some(Per::Device), _) => "gate.r4.sum_as_per_device",
        (Some(Per::Sum), true) => "gate.r4.ranks_summed",
        (Some(Per::Sum), false) => "gate.r4.summed",
        (None, true) => "gate.r4.ranks_summed_unstated",
        (None, false) => "gate.r4.summed_unstated",
    };
    let pooled = |ranks_rule: bool| match (per, ranks_rule, ratio_of_stats) {
        (Some(Per::Device), ..) => "gate.r4.pooled_as_per_device",
        (Some(Per::Sum), ..) => "gate.r4.pooled_as_sum",
        (None, true, _) => "gate.r4.ranks_pooled",
        (None, false, true) => "gate.r4.pooled_ratio",
        (None, false, false) => "gate.r4.pooled",
    };
    let (want, label) = if ranks_rule {
        if any(SPREAD_ACROSS_RANKS) && !any(SUMMED_OVER_RANKS) {
            ("gate.r4.across_ranks", "scope.devices_across")
        } else if any(SUMMED_OVER_RANKS) {
            (summed(true), "scope.devices_sum")
        } else if stats {
            (pooled(true), "scope.devices_pooled")
        } else {
            ("gate.r4.ok", "scope.devices")
        }
    } else if stats {
        (pooled(false), "scope.devices_pooled")
    } else {
        (summed(false), "scope.devices_sum")
    };
    assert_eq!(key, want, "R4: {at}");
    // Never a total where a statistic was computed, never "a statistic" of a total.
    assert_eq!(
        key.contains("summed") || key.contains("sum_as"),
        label == "scope.devices_sum",
        "{at}"
    );
    Some(label)
}

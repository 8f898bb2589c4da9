//! Gates R1-R4: is the evidence comparable with what the claim speaks of?
//!
//! R1 window, R2 population, R3 metric and denominator, R4 aggregation and units. Each
//! passes, passes with a note the reader must see, or fails; a failed gate makes the part
//! not judgeable.

use crate::analysis::Evidence;
use crate::claims::{
    About, Condition, Denominator, Measure, Per, Quantity, QuantityKind, Scope, Unit,
};
use crate::scope::{Semantics, format_device_list};
use crate::units::ms;

use serde::Serialize;

use super::reading::{Operand, Over, Reading, Shape, WindowRole};
use super::{Finding, Gate, GateStatus};

/// What a field measures, for R3: the analysis's own declaration.
pub(super) use crate::analysis::FieldKind as Q;

/// The quantity of an analysis field, as its analysis declares it (None: no such analysis or
/// field, which validation refuses before any gate runs).
pub fn field_quantity(analysis: &str, field: &str) -> Option<Q> {
    crate::analysis::spec(analysis)?.kind(field)
}

fn gate(gate: &'static str, status: GateStatus, key: &str, args: &[(&str, String)]) -> Gate {
    Gate { gate, status, finding: Finding::new(key, args) }
}

/// The finding key worded for who chose the scope: `gate.r2.same_devices` says "as the claim
/// states", `gate.r2.same_devices_auditor` "as the auditor chose".
fn by(about: &About, key: &str) -> String {
    match about.chosen_by {
        crate::claims::Who::Source => key.to_string(),
        crate::claims::Who::Auditor => format!("{key}_auditor"),
    }
}

fn span_text(w: [i64; 2]) -> String {
    format!("{}–{} s", crate::scope::format_seconds(w[0]), crate::scope::format_seconds(w[1]))
}

/// The window the evidence covers, or R1's failure when the claim names another. Compared
/// with the window the evidence discloses, not the one the scope asked for: an analysis that
/// covers the whole trace must not pass as windowed.
fn claim_window(about: &About, ev: &Evidence) -> Result<Option<crate::scope::Window>, Gate> {
    let covered =
        ev.window.requested_ns.map(|[a, b]| crate::scope::Window { start_ns: a, end_ns: b });
    match about.window {
        Some(cw) if covered != Some(cw) => Err(gate(
            "R1",
            GateStatus::Fail,
            "gate.r1.window_differs",
            &[
                ("claim", cw.to_string()),
                ("evidence", covered.map_or("whole trace".into(), |w| w.to_string())),
            ],
        )),
        _ => Ok(covered),
    }
}

/// R1: the same time window, and what the window does to the value: its length (or the span
/// of the kernels kept inside it) as the formula's denominator, a selection of what is
/// counted, or a selection of whole collective instances, as the formula read says.
pub fn r1(about: &About, reading: &Reading, ev: &Evidence) -> Gate {
    let covered = match claim_window(about, ev) {
        Ok(w) => w,
        Err(g) => return g,
    };
    let Some(w) = covered else {
        return gate(
            "R1",
            GateStatus::Note,
            "gate.r1.whole_trace",
            &[("span", ev.window.effective_ns.map_or("-".into(), span_text))],
        );
    };
    let mut args = vec![
        ("window", span_text(w.as_array())),
        ("window_ms", ms(w.len_ns())),
        ("semantics", reading.semantics.to_string()),
    ];
    // Under contain, the kept kernels' span differs from the window when a kernel crosses an
    // edge: the reader must see which length the number stands on.
    let kept = ev
        .window
        .effective_ns
        .filter(|eff| reading.semantics == Semantics::Contain && *eff != w.as_array());
    if let Some(eff) = kept {
        args.push(("span", span_text(eff)));
        args.push(("span_ms", ms(eff[1] - eff[0])));
    }
    let (status, key) = match (reading.window, kept.is_some()) {
        // Cross-rank matching keeps kernels whole: the window selects instances, it is no
        // denominator.
        (WindowRole::Instances, _) => (GateStatus::Pass, "gate.r1.same_window_instances"),
        (WindowRole::Denominator, true) => (GateStatus::Note, "gate.r1.contain_span"),
        (WindowRole::Denominator, false) => (GateStatus::Pass, "gate.r1.same_window"),
        (WindowRole::Span, true) => (GateStatus::Note, "gate.r1.contain_span_value"),
        (WindowRole::Span, false) => (GateStatus::Pass, "gate.r1.same_window_span"),
        // The window is no part of the formula: what it left out is the evidence's own note.
        (WindowRole::Selects, true) => (GateStatus::Pass, "gate.r1.contain_selects"),
        (WindowRole::Selects, false) => (GateStatus::Pass, "gate.r1.same_window_selects"),
        (WindowRole::WholeTrace, _) => (GateStatus::Pass, "gate.r1.same_window"),
    };
    gate("R1", status, key, &args)
}

/// R2: the same devices (and streams); coverage always disclosed; a quantity that compares
/// ranks needs at least two ranks in one scope and a matched instance.
pub fn r2(about: &About, measure: &Measure, ev: &Evidence) -> Gate {
    let devices = r2_devices(about, measure, ev);
    if devices.status == GateStatus::Fail {
        return devices;
    }
    too_few_ranks(measure, ev).unwrap_or(devices)
}

/// Fails when the formula reads a field that compares ranks (the analysis' `cross_rank`) and
/// the evidence has fewer than two ranks or no matched instance. The evidence's own note on
/// why that field is null is the finding.
fn too_few_ranks(measure: &Measure, ev: &Evidence) -> Option<Gate> {
    let cross = crate::analysis::spec(&measure.analysis).map_or(&[][..], |s| s.cross_rank);
    // A per-rank row of a cross-rank analysis compares ranks whatever its field.
    let rows = measure.ranks.is_some() && !cross.is_empty();
    let field = measure.value.vars().into_iter().find(|v| rows || cross.contains(&v.as_str()))?;
    let ranks = ev.scope.devices.len();
    let matched = ev.values.as_ref().and_then(crate::analysis::values::Values::matched);
    // Why the quantities that compare ranks do not exist here: the field's own note, else
    // the note that nulls them all (a window that cuts an instance, kernels without a
    // counterpart, instances failing the overlap test).
    let reason = ev
        .null_reasons(&field)
        .first()
        .copied()
        .or_else(|| cross.iter().find_map(|f| ev.null_reasons(f).first().copied()));
    if ranks >= 2 && matched != Some(0) && reason.is_none() {
        return None;
    }
    let finding = match reason {
        Some(note) => note.finding.clone(),
        None => Finding::new(
            "gate.r2.too_few_ranks",
            &[
                ("field", field.clone()),
                ("ranks", ranks.to_string()),
                ("matched", matched.map_or("-".into(), |m| m.to_string())),
            ],
        ),
    };
    Some(Gate { gate: "R2", status: GateStatus::Fail, finding })
}

fn r2_devices(about: &About, measure: &Measure, ev: &Evidence) -> Gate {
    let evd = &ev.scope.devices;
    let missing = &ev.scope.missing_devices;
    let mut args = vec![
        ("evidence", format_device_list(evd)),
        ("missing", format_device_list(missing)),
        ("streams", (crate::analysis::STREAM.get)(&measure.params).unwrap_or_else(|| "all".into())),
    ];
    // A trace set: its ranks, by label; a claim's device numbers cannot name them.
    if let Some(set) = ev.trace.set.as_deref().filter(|s| s.files.len() > 1) {
        let labels: Vec<String> = evd.iter().map(|r| format!("{r} {}", set.label(*r))).collect();
        args.push(("files", set.files.len().to_string()));
        args.push(("labels", labels.join(", ")));
        return match (&about.devices, missing.is_empty()) {
            (Some(cd), _) if cd != evd => {
                args.push(("claim", format_device_list(cd)));
                gate("R2", GateStatus::Fail, "gate.r2.set_ranks_differ", &args)
            }
            (_, true) => gate("R2", GateStatus::Pass, "gate.r2.set_ranks", &args),
            (_, false) => gate("R2", GateStatus::Note, "gate.r2.set_ranks_missing", &args),
        };
    }
    match &about.devices {
        Some(cd) if cd == evd => {
            args.push(("claim", format_device_list(cd)));
            if missing.is_empty() {
                gate("R2", GateStatus::Pass, &by(about, "gate.r2.same_devices"), &args)
            } else {
                gate("R2", GateStatus::Note, &by(about, "gate.r2.same_devices_missing"), &args)
            }
        }
        Some(cd) => {
            args.push(("claim", format_device_list(cd)));
            let extra: Vec<i64> = cd.iter().copied().filter(|d| !evd.contains(d)).collect();
            let subset = evd.iter().all(|d| cd.contains(d));
            if subset && !extra.is_empty() && extra.iter().all(|d| missing.contains(d)) {
                gate("R2", GateStatus::Note, &by(about, "gate.r2.claim_covers_missing"), &args)
            } else {
                gate("R2", GateStatus::Fail, &by(about, "gate.r2.devices_differ"), &args)
            }
        }
        None => gate("R2", GateStatus::Note, "gate.r2.unstated", &args),
    }
}

/// R3: the quantity computed is the one the claim speaks of, with the same denominator: the
/// numerator and denominator of the formula read ([`Reading`]), a statistic named as one.
pub fn r3(about: &About, measure: &Measure, reading: &Reading) -> Gate {
    let num = reading.numerator().map(Operand::quantity);
    let den = reading.denominator();
    let den_text = match &reading.shape {
        Shape::Ratio { den_text, .. } => den_text.clone(),
        _ => String::new(),
    };
    let formula = measure.value_text.clone();
    // Bytes over a time is a bandwidth: its own quantity, not bytes and not a share of the
    // time it divides by.
    let bandwidth = reading.is_bandwidth();
    if let (Some(claimed), Some(n)) = (about.quantity, num) {
        let ok = match claimed {
            QuantityKind::WallTime => n.is_wall(),
            QuantityKind::KernelTime => n.is_kernel_time(),
            QuantityKind::Count => n == Q::Count,
            QuantityKind::Bytes => n == Q::Bytes && !bandwidth,
            QuantityKind::Bandwidth => bandwidth,
            QuantityKind::StepTimeReduction | QuantityKind::ThroughputGain => true,
        };
        if !ok {
            let key = if claimed == QuantityKind::WallTime
                && matches!(n, Q::KernelTime | Q::NcclKernelTime)
            {
                "gate.r3.kernel_time_as_wall"
            } else {
                "gate.r3.quantity_differs"
            };
            return gate(
                "R3",
                GateStatus::Fail,
                key,
                &[
                    ("claim", quantity_key(claimed).into()),
                    ("evidence", reading.measured_key().unwrap_or(n.key()).into()),
                    ("formula", formula),
                ],
            );
        }
    }
    if bandwidth {
        let (key, status) = if about.quantity == Some(QuantityKind::Bandwidth) {
            ("gate.r3.bandwidth", GateStatus::Pass)
        } else {
            ("gate.r3.bandwidth_unstated", GateStatus::Note)
        };
        let den = den.map_or("none", |d| d.quantity().key());
        return gate(
            "R3",
            status,
            key,
            &[("denominator", den.into()), ("den_field", den_text), ("formula", formula)],
        );
    }
    if about.quantity == Some(QuantityKind::Bytes) && den.is_none() {
        return gate("R3", GateStatus::Pass, "gate.r3.bytes", &[("formula", formula)]);
    }
    if let Some(claimed) = about.denominator {
        let want = match claimed {
            Denominator::Window => Q::Window,
            Denominator::NcclBusy => Q::NcclBusy,
            Denominator::ComputeBusy => Q::ComputeBusy,
            Denominator::NcclKernelTime => Q::NcclKernelTime,
            Denominator::KernelTime => Q::KernelTime,
            Denominator::Idle => Q::Idle,
        };
        return match den {
            Some(Operand::Total(k)) if k == want => gate(
                "R3",
                GateStatus::Pass,
                "gate.r3.same_metric",
                &[("denominator", want.key().into()), ("formula", formula)],
            ),
            Some(Operand::Statistic(s, _)) => gate(
                "R3",
                GateStatus::Fail,
                "gate.r3.denominator_statistic",
                &[
                    ("claim", want.key().into()),
                    ("field", den_text),
                    ("stat", s.key().into()),
                    ("formula", formula),
                ],
            ),
            d => gate(
                "R3",
                GateStatus::Fail,
                "gate.r3.denominator_differs",
                &[
                    ("claim", want.key().into()),
                    ("evidence", d.map_or("none", |d| d.quantity().key()).into()),
                    ("formula", formula),
                ],
            ),
        };
    }
    match den {
        Some(Operand::Statistic(s, _)) => gate(
            "R3",
            GateStatus::Note,
            "gate.r3.unstated_statistic",
            &[("field", den_text), ("stat", s.key().into()), ("formula", formula)],
        ),
        Some(d) => gate(
            "R3",
            GateStatus::Note,
            "gate.r3.unstated",
            &[("denominator", d.quantity().key().into()), ("formula", formula)],
        ),
        None => gate("R3", GateStatus::Pass, "gate.r3.not_a_share", &[("formula", formula)]),
    }
}

fn quantity_key(q: QuantityKind) -> &'static str {
    match q {
        QuantityKind::WallTime => "wall",
        QuantityKind::KernelTime => "kernel_time",
        QuantityKind::Count => "count",
        QuantityKind::StepTimeReduction => "step_time_reduction",
        QuantityKind::ThroughputGain => "throughput_gain",
        QuantityKind::Bytes => "bytes",
        QuantityKind::Bandwidth => "bandwidth",
    }
}

/// R4: per device vs summed, units, percent vs percentage points, step time vs throughput.
pub fn r4(
    about: &About,
    measure: &Measure,
    reading: &Reading,
    condition: Option<&Condition>,
    says: Option<&Quantity>,
    ev: &Evidence,
) -> Gate {
    let unit = measure.unit;
    if let Some(g) = stated_units(unit, condition, says) {
        return g;
    }
    r4_aggregation(about, measure, reading, ev)
}

/// R4's check of the stated numbers (the condition's bounds and `says`) against the unit the
/// value is shown in: percent against percentage points, and units that do not convert.
fn stated_units(
    unit: Unit,
    condition: Option<&Condition>,
    says: Option<&Quantity>,
) -> Option<Gate> {
    let mut stated: Vec<&Quantity> = says.into_iter().collect();
    match condition {
        Some(Condition::Between(a, b)) => stated.extend([a, b]),
        Some(Condition::Approx(a, tol)) => {
            stated.push(a);
            // A tolerance around a percentage is a difference of percentages: percentage points.
            let ok = if unit == Unit::Percent {
                tol.unit == Unit::PercentagePoints
            } else {
                tol.unit.compatible(unit)
            };
            if !ok {
                let key = if unit == Unit::Percent {
                    "gate.r4.tolerance_in_pp"
                } else {
                    "gate.r4.unit_mismatch"
                };
                return Some(gate(
                    "R4",
                    GateStatus::Fail,
                    key,
                    &[("stated", tol.text.clone()), ("unit", unit.symbol().into())],
                ));
            }
        }
        Some(
            Condition::AtLeast(a)
            | Condition::AtMost(a)
            | Condition::Above(a)
            | Condition::Below(a),
        ) => stated.push(a),
        _ => {}
    }
    for q in stated {
        if (q.unit == Unit::PercentagePoints) != (unit == Unit::PercentagePoints)
            && (q.unit == Unit::Percent
                || unit == Unit::Percent
                || q.unit == Unit::PercentagePoints)
        {
            return Some(gate(
                "R4",
                GateStatus::Fail,
                "gate.r4.pp_vs_percent",
                &[("stated", q.text.clone()), ("unit", unit.symbol().into())],
            ));
        }
        if !q.unit.compatible(unit) {
            return Some(gate(
                "R4",
                GateStatus::Fail,
                "gate.r4.unit_mismatch",
                &[("stated", q.text.clone()), ("unit", unit.symbol().into())],
            ));
        }
    }
    None
}

/// R4 after the units: a share read as a throughput gain (or the reverse), and how the value
/// combines its devices against the claim's `per`.
fn r4_aggregation(about: &About, measure: &Measure, reading: &Reading, ev: &Evidence) -> Gate {
    let unit = measure.unit;
    let is_share = measure.value.as_ratio().is_some() || unit == Unit::Percent;
    match about.quantity {
        Some(QuantityKind::ThroughputGain) if is_share => {
            return gate(
                "R4",
                GateStatus::Fail,
                "gate.r4.step_as_throughput",
                &[("formula", measure.value_text.clone())],
            );
        }
        Some(QuantityKind::StepTimeReduction) if unit == Unit::Times => {
            return gate(
                "R4",
                GateStatus::Fail,
                "gate.r4.throughput_as_step",
                &[("formula", measure.value_text.clone())],
            );
        }
        // Bytes are counted in bytes and a bandwidth in GB/s: a value in another unit is not
        // the number the claim states.
        Some(q @ (QuantityKind::Bytes | QuantityKind::Bandwidth)) => {
            let want =
                if q == QuantityKind::Bytes { Unit::Bytes } else { Unit::GigabytesPerSecond };
            if unit != want {
                return gate(
                    "R4",
                    GateStatus::Fail,
                    "gate.r4.quantity_unit",
                    &[
                        ("claim", quantity_key(q).into()),
                        ("want", want.symbol().into()),
                        ("unit", unit.symbol().into()),
                    ],
                );
            }
        }
        _ => {}
    }
    let devices = &ev.scope.devices;
    let args = [
        ("devices", format_device_list(devices)),
        ("n", devices.len().to_string()),
        ("unit", unit.symbol().to_string()),
    ];
    let ranks = crate::analysis::spec(&measure.analysis)
        .is_some_and(|s| s.scope == crate::analysis::ScopeRule::Ranks);
    // How the value combines its devices is the formula's, as read: a rank's row, each rank's
    // row, a total, a statistic of every device's population taken together, or of the
    // differences between ranks.
    match &reading.over {
        Over::Rank(rank) => gate(
            "R4",
            GateStatus::Pass,
            "gate.r4.one_rank",
            &[("rank", rank.clone()), ("unit", unit.symbol().to_string())],
        ),
        Over::EachRank(red) if measure.ranks.is_some() => gate(
            "R4",
            GateStatus::Pass,
            "gate.r4.each_rank",
            &[
                ("n", devices.len().to_string()),
                ("reduce", red.clone()),
                ("unit", unit.symbol().to_string()),
            ],
        ),
        Over::AcrossRanks => gate("R4", GateStatus::Note, "gate.r4.across_ranks", &args),
        Over::Pooled => {
            let key = match (about.per, ranks, reading.is_ratio_of_statistics()) {
                (Some(Per::Device), _, _) => {
                    return gate("R4", GateStatus::Fail, "gate.r4.pooled_as_per_device", &args);
                }
                (Some(Per::Sum), _, _) => {
                    return gate("R4", GateStatus::Fail, "gate.r4.pooled_as_sum", &args);
                }
                (None, true, _) => "gate.r4.ranks_pooled",
                (None, false, true) => "gate.r4.pooled_ratio",
                (None, false, false) => "gate.r4.pooled",
            };
            gate("R4", GateStatus::Note, key, &args)
        }
        Over::Summed => match (about.per, ranks) {
            (Some(Per::Device), _) => {
                gate("R4", GateStatus::Fail, "gate.r4.sum_as_per_device", &args)
            }
            (Some(Per::Sum), true) => {
                gate("R4", GateStatus::Note, &by(about, "gate.r4.ranks_summed"), &args)
            }
            (Some(Per::Sum), false) => {
                gate("R4", GateStatus::Note, &by(about, "gate.r4.summed"), &args)
            }
            (None, true) => gate("R4", GateStatus::Note, "gate.r4.ranks_summed_unstated", &args),
            (None, false) => gate("R4", GateStatus::Note, "gate.r4.summed_unstated", &args),
        },
        Over::Device
            if about.per == Some(Per::Sum)
                && devices.len() == 1
                && about.devices.as_ref().is_some_and(|d| d.len() > 1) =>
        {
            gate("R4", GateStatus::Fail, "gate.r4.device_as_sum", &args)
        }
        _ => gate("R4", GateStatus::Pass, "gate.r4.ok", &args),
    }
}

/// Gates R1-R4 of a comparison: R1 the two sides' windows (the same phase, the same length
/// where the metric is a total), R2 their populations, R3 the metric (one analysis, one
/// formula on both sides), R4 the units; then the declared `held` items against the two
/// runs' traces ([`held_gates`]).
pub(super) fn compare_gates(
    about: &About,
    m: &Measure,
    c: &crate::claims::Compare,
    scopes: [Option<&Scope>; 2],
    p: &crate::claims::Part,
    ev: &Evidence,
) -> Vec<Gate> {
    let none = crate::analysis::compare::Side::default();
    let (a, b) = match crate::analysis::compare::Values::of(ev) {
        Some(v) => (&v.a, &v.b),
        None => (&none, &none),
    };
    let n = |s: &crate::analysis::compare::Side| s.samples.len();
    // The median length of a side's windows.
    let len = |s: &crate::analysis::compare::Side| -> i64 {
        let mut l: Vec<i64> = s.samples.iter().map(|x| x.window_ns[1] - x.window_ns[0]).collect();
        l.sort_unstable();
        l.get(l.len().saturating_sub(1) / 2).copied().unwrap_or(0)
    };
    let (la, lb) = (len(a), len(b));
    let share = ev.parameters.get("metric_scale").and_then(serde_json::Value::as_i64) != Some(1)
        || ev.parameters.get("metric_unit").and_then(serde_json::Value::as_str) == Some("ratio");
    let phase = |s: Option<&Scope>| {
        s.and_then(|s| s.nvtx.as_ref()).map(|w| (w.name.clone(), w.index, w.on))
    };
    let (pa, pb) = (phase(scopes[0]), phase(scopes[1]));
    let ms = |x: i64| crate::units::ms(x);
    let common = [
        ("a", c.sides[0].scope.clone()),
        ("b", c.sides[1].scope.clone()),
        ("n_a", n(a).to_string()),
        ("n_b", n(b).to_string()),
        ("len_a", ms(la)),
        ("len_b", ms(lb)),
        ("tolerance", c.same_length.text.clone()),
    ];
    let r1 = match (&pa, &pb) {
        (Some(x), Some(y)) if x == y => gate(
            "R1",
            GateStatus::Pass,
            "gate.r1.compare_same_phase",
            &[&common[..], &[("nvtx", x.0.clone())]].concat(),
        ),
        (Some(_), Some(_)) | (Some(_), None) | (None, Some(_)) => {
            gate("R1", GateStatus::Fail, "gate.r1.compare_phases_differ", &common)
        }
        (None, None) => {
            // Equal within the stated tolerance of the longer (`same_length`, 1% unless the
            // claim says otherwise): splits of two runs are rarely equal to the nanosecond.
            // |la - lb| <= t * max, exactly: |la - lb| * den <= num * max.
            let t = c.same_length.value;
            let diff = i128::from(la) - i128::from(lb);
            let longest = i128::from(la.unsigned_abs().max(lb.unsigned_abs()));
            let same = diff
                .unsigned_abs()
                .checked_mul(t.den.unsigned_abs())
                .zip(t.num.unsigned_abs().checked_mul(longest.unsigned_abs()))
                .is_some_and(|(l, r)| l <= r);
            if same {
                gate("R1", GateStatus::Pass, "gate.r1.compare_same_length", &common)
            } else if share {
                gate("R1", GateStatus::Note, "gate.r1.compare_share_lengths", &common)
            } else {
                gate("R1", GateStatus::Fail, "gate.r1.compare_lengths_differ", &common)
            }
        }
    };
    // Each side's population as its scope selects it: the scope's devices (or ranks of a set),
    // else every device the comparison covers (over several devices, each one's comparison).
    let each: Option<Vec<i64>> = crate::analysis::compare::Values::of(ev)
        .and_then(|v| v.devices.as_ref())
        .map(|d| d.iter().map(|c| c.device).collect());
    let selected = |s: Option<&Scope>, side: &crate::analysis::compare::Side| -> Vec<i64> {
        match s.map(|s| &s.devices) {
            Some(crate::scope::DeviceSel::Set(v)) => v.clone(),
            _ => each.clone().unwrap_or_else(|| side.devices.clone()),
        }
    };
    let (da, db) = (selected(scopes[0], a), selected(scopes[1], b));
    let missing = |s: &crate::analysis::compare::Side| !s.missing_devices.is_empty();
    let pop = [
        ("a", format_device_list(&da)),
        ("b", format_device_list(&db)),
        ("n_a", da.len().to_string()),
        ("n_b", db.len().to_string()),
    ];
    let sets = a.set_files.is_some() || b.set_files.is_some();
    let r2 = if da.len() != db.len() {
        gate("R2", GateStatus::Fail, "gate.r2.compare_populations_differ", &pop)
    } else if missing(a) || missing(b) {
        gate("R2", GateStatus::Note, "gate.r2.compare_missing", &pop)
    } else if sets {
        gate("R2", GateStatus::Pass, "gate.r2.compare_same_ranks", &pop)
    } else if each.as_ref().is_some_and(|d| d.len() > 1) {
        gate("R2", GateStatus::Pass, "gate.r2.compare_same_population_each", &pop)
    } else {
        gate("R2", GateStatus::Pass, "gate.r2.compare_same_population", &pop)
    };
    let r3 = gate(
        "R3",
        GateStatus::Pass,
        if share { "gate.r3.compare_share" } else { "gate.r3.compare_metric" },
        &[("of", c.of.clone()), ("metric", c.metric_text.clone())],
    );
    let reading = Reading::of(m, ev, Semantics::Clip);
    let mut r4 = r4(about, m, &reading, p.condition.as_ref(), p.says.as_ref(), ev);
    if r4.status != GateStatus::Fail {
        r4 = gate(
            "R4",
            GateStatus::Pass,
            "gate.r4.compare_units",
            &[("unit", m.unit.symbol().to_string())],
        );
    }
    let mut gates = vec![r1, r2, r3, r4];
    gates.extend(held_gates(p.experiment.as_ref(), ev));
    gates
}

/// One fact about the runs behind the two sides of a comparison, as each side's traces record
/// it: None where the export does not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunFact {
    /// What it is: the i18n key `exp.fact.<name>` names it (`gpu_model`, `driver`, `steps`...).
    pub name: &'static str,
    /// Side A's value, as shown.
    pub a: Option<String>,
    /// Side B's value, as shown.
    pub b: Option<String>,
    /// Whether the two agree: None when a side does not record it.
    pub same: Option<bool>,
    /// For kernel names: the names found on one side only, A's then B's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub only: Option<[Vec<String>; 2]>,
    /// For the capture start: B's start minus A's, in ns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub apart_ns: Option<i64>,
}

impl RunFact {
    fn new(name: &'static str, a: Option<String>, b: Option<String>) -> RunFact {
        let same = match (&a, &b) {
            (Some(x), Some(y)) => Some(x == y),
            _ => None,
        };
        RunFact { name, a, b, same, only: None, apart_ns: None }
    }
}

/// A `held` item the traces record something about, with the facts that check it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeldCheck {
    /// The item as declared (`hardware`).
    pub item: String,
    /// Its facts, in order.
    pub facts: Vec<RunFact>,
    /// Whether the facts only stand in for the item (kernel names for `model`): a difference
    /// is shown, never read as a contradiction.
    pub proxy: bool,
}

impl HeldCheck {
    /// The facts recorded on both sides that differ: what contradicts the declaration.
    pub fn contradictions(&self) -> impl Iterator<Item = &RunFact> {
        self.facts.iter().filter(|f| f.same == Some(false))
    }
}

/// A comparison's experiment against its traces: what the author declared, which `held`
/// items the traces check and how, which they cannot, and every visible difference between
/// the two runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExperimentCheck {
    /// `controlled` as the author declared it.
    pub declared: bool,
    /// The `held` items a trace records something about.
    pub checked: Vec<HeldCheck>,
    /// The `held` items no trace records (`data`, `seed`...).
    pub uncheckable: Vec<String>,
    /// Every fact recorded on both sides that differs, held or not.
    pub differs: Vec<RunFact>,
}

/// Which facts check which `held` item; items absent here are not checkable from a trace.
/// `model` is checked through a proxy, the kernel names (see [`HeldCheck::proxy`]).
pub const HELD_FACTS: &[(&str, &[&str])] = &[
    ("hardware", &["gpu_model", "gpu_count", "driver"]),
    ("software", &["nsys", "driver", "cuda_driver", "cuda", "nccl"]),
    ("steps", &["steps"]),
    ("model", &["kernel_names"]),
];

/// The facts listed when they differ whatever was declared, after the `held` facts.
const OTHER_FACTS: &[&str] = &["host", "gpu_uuids", "pids", "capture_start", "derived"];

/// The distinct values of one field over a side's files, in file order, joined; None when no
/// file records it.
fn over_files(
    s: &crate::trace::SideRun,
    f: impl Fn(&crate::trace::RunInfo) -> Option<String>,
) -> Option<String> {
    let mut seen: Vec<String> = Vec::new();
    for v in s.files.iter().flatten().filter_map(&f) {
        if !seen.contains(&v) {
            seen.push(v);
        }
    }
    (!seen.is_empty()).then(|| seen.join(", "))
}

/// The GPUs of a side's devices as `TARGET_INFO_GPU` lists them (over a set, every file's);
/// all of them where the side's devices are not listed.
fn side_gpus(s: &crate::trace::SideRun) -> Vec<&crate::trace::RunGpu> {
    let all: Vec<&crate::trace::RunGpu> = s.files.iter().flatten().flat_map(|f| &f.gpus).collect();
    let own: Vec<&crate::trace::RunGpu> = match s.files.as_slice() {
        [_] => all.iter().copied().filter(|g| s.devices.contains(&g.id)).collect(),
        _ => Vec::new(),
    };
    if own.is_empty() { all } else { own }
}

/// A UTC-epoch time as `2026-05-26 07:58:50 UTC`.
fn utc_text(ns: i64) -> String {
    match time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ns)) {
        Ok(t) => format!(
            "{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC",
            t.year(),
            u8::from(t.month()),
            t.day(),
            t.hour(),
            t.minute(),
            t.second()
        ),
        Err(_) => format!("{ns} ns"),
    }
}

/// A long span of time in whole units: `1 h 19 min`, `12 min 5 s`, `42 s`, `750 ms`.
pub fn gap_text(ns: i64) -> String {
    let s = ns.unsigned_abs() / 1_000_000_000;
    match s {
        0 => crate::units::duration(ns.abs()),
        1..60 => format!("{s} s"),
        60..3600 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, (s % 3600) / 60),
    }
}

/// One fact of the two sides by its name (one of [`HELD_FACTS`] or [`OTHER_FACTS`]).
fn fact(name: &'static str, r: &[crate::trace::SideRun; 2]) -> RunFact {
    let both = |f: &dyn Fn(&crate::trace::SideRun) -> Option<String>| {
        RunFact::new(name, f(&r[0]), f(&r[1]))
    };
    match name {
        "gpu_model" => both(&|s| {
            let mut names: Vec<String> = Vec::new();
            for n in side_gpus(s).into_iter().filter_map(|g| g.name.clone()) {
                if !names.contains(&n) {
                    names.push(n);
                }
            }
            (!names.is_empty()).then(|| names.join(", "))
        }),
        "gpu_count" => both(&|s| Some(s.job_devices.to_string())),
        "driver" => both(&|s| over_files(s, |f| f.driver.clone())),
        "nsys" => both(&|s| over_files(s, |f| f.nsys_version.clone().flatten())),
        "cuda_driver" => both(&|s| over_files(s, |f| f.cuda_driver.clone())),
        "cuda" => both(&|s| over_files(s, |f| f.cuda.clone())),
        "nccl" => both(&|s| over_files(s, |f| f.nccl.clone())),
        "steps" => both(&|s| s.steps.map(|n| n.to_string())),
        "kernel_names" => {
            let [a, b] = [&r[0].kernel_names, &r[1].kernel_names];
            let only_a: Vec<String> = a.iter().filter(|n| !b.contains(n)).cloned().collect();
            let only_b: Vec<String> = b.iter().filter(|n| !a.contains(n)).cloned().collect();
            let known = !a.is_empty() && !b.is_empty();
            RunFact {
                name,
                a: Some(a.len().to_string()),
                b: Some(b.len().to_string()),
                same: known.then_some(only_a.is_empty() && only_b.is_empty()),
                only: Some([only_a, only_b]),
                apart_ns: None,
            }
        }
        "host" => both(&|s| over_files(s, |f| f.host.clone())),
        "gpu_uuids" => both(&|s| {
            // The first eight hex digits name a GPU well enough to see that two differ; the
            // evidence keeps them whole.
            let short = |u: &String| {
                let u = u.strip_prefix("GPU-").unwrap_or(u);
                u.get(..8).map_or_else(|| u.to_string(), |h| format!("{h}…"))
            };
            let uuids: Vec<String> =
                side_gpus(s).into_iter().filter_map(|g| g.uuid.as_ref()).map(short).collect();
            if !uuids.is_empty() {
                return Some(uuids.join(" "));
            }
            over_files(s, |f| {
                (!f.visible_devices.is_empty())
                    .then(|| f.visible_devices.iter().map(short).collect::<Vec<_>>().join(" "))
            })
        }),
        "pids" => both(&|s| {
            (!s.pids.is_empty())
                .then(|| s.pids.iter().map(i64::to_string).collect::<Vec<_>>().join(", "))
        }),
        "capture_start" => {
            let first = |s: &crate::trace::SideRun| {
                s.files.iter().flatten().filter_map(|f| f.capture_start_utc_ns).min()
            };
            let mut f = RunFact::new(name, first(&r[0]).map(utc_text), first(&r[1]).map(utc_text));
            // Two starts say how far apart they are, to the ns.
            if let (Some(x), Some(y)) = (first(&r[0]), first(&r[1])) {
                f.same = Some(x == y);
                f.apart_ns = Some(y - x);
            }
            f
        }
        "derived" => {
            // Not derived is a value too: a capture as nsys wrote it.
            let d = |s: &crate::trace::SideRun| {
                (!s.files.is_empty() && s.files.iter().all(Option::is_some))
                    .then(|| over_files(s, |f| f.derived_by.clone()).unwrap_or_else(|| "-".into()))
            };
            both(&|s| d(s))
        }
        _ => RunFact::new(name, None, None),
    }
}

/// Checks an experiment's `held` items against the runs of its two sides: each item a trace
/// can check ([`HELD_FACTS`]) gets its facts, the others are listed as not checkable, and
/// every fact that differs between the runs is listed.
pub fn check_experiment(
    e: &crate::claims::Experiment,
    runs: &[crate::trace::SideRun; 2],
) -> ExperimentCheck {
    let mut checked = Vec::new();
    let mut uncheckable = Vec::new();
    for item in &e.held {
        match HELD_FACTS.iter().find(|(h, _)| h == item) {
            Some((_, facts)) => checked.push(HeldCheck {
                item: item.clone(),
                facts: facts.iter().map(|f| fact(f, runs)).collect(),
                proxy: item == "model",
            }),
            None => uncheckable.push(item.clone()),
        }
    }
    let mut differs: Vec<RunFact> = Vec::new();
    let names = HELD_FACTS.iter().flat_map(|(_, f)| f.iter()).chain(OTHER_FACTS);
    for name in names {
        if differs.iter().any(|f| f.name == *name) {
            continue;
        }
        let f = fact(name, runs);
        if f.same == Some(false) {
            differs.push(f);
        }
    }
    ExperimentCheck { declared: e.controlled, checked, uncheckable, differs }
}

/// A list argument, `-` when empty.
fn list_or_dash(items: Vec<String>) -> String {
    if items.is_empty() { "-".into() } else { crate::i18n::list_arg(items) }
}

/// The runs behind a comparison's two sides, as its evidence carries them (`runs`).
pub fn side_runs(ev: &Evidence) -> Option<[crate::trace::SideRun; 2]> {
    let runs = crate::analysis::compare::Values::of(ev)?.runs.as_ref()?;
    Some([runs.a.clone(), runs.b.clone()])
}

/// The gate of a comparison's declared `held` items against its traces: a finding per fact
/// that contradicts a declared item (recorded on both sides, different), the first failing
/// the gate and the others noted beside it; a note for a proxy that differs; else one pass
/// that names what was checked and what cannot be.
/// Without a declared `held` list there is nothing to check, and no gate.
pub(super) fn held_gates(e: Option<&crate::claims::Experiment>, ev: &Evidence) -> Vec<Gate> {
    let Some(e) = e.filter(|e| !e.held.is_empty()) else { return Vec::new() };
    let Some(runs) = side_runs(ev) else {
        return vec![gate(
            "held",
            GateStatus::Note,
            "gate.held.unread",
            &[("held", crate::i18n::list_arg(e.held.iter().cloned()))],
        )];
    };
    let check = check_experiment(e, &runs);
    let mut out = Vec::new();
    for h in &check.checked {
        for f in h.contradictions() {
            let mut args = vec![
                ("held", h.item.clone()),
                ("a", f.a.clone().unwrap_or_default()),
                ("b", f.b.clone().unwrap_or_default()),
            ];
            if let Some([only_a, only_b]) = &f.only {
                args.push(("only_a", list_or_dash(only_a.clone())));
                args.push(("only_b", list_or_dash(only_b.clone())));
            }
            // The gate fails once, at its first contradiction; the others are listed with it.
            let failed = out.iter().any(|g: &Gate| g.status == GateStatus::Fail);
            let status = if h.proxy || failed { GateStatus::Note } else { GateStatus::Fail };
            out.push(gate("held", status, &format!("gate.held.{}", f.name), &args));
        }
    }
    if out.is_empty() {
        let checked: Vec<String> = check
            .checked
            .iter()
            .filter(|h| h.facts.iter().any(|f| f.same.is_some()))
            .map(|h| h.item.clone())
            .collect();
        let unrecorded: Vec<String> = check
            .checked
            .iter()
            .filter(|h| h.facts.iter().all(|f| f.same.is_none()))
            .map(|h| h.item.clone())
            .chain(check.uncheckable.iter().cloned())
            .collect();
        let key =
            if checked.is_empty() { "gate.held.none_checked" } else { "gate.held.consistent" };
        out.push(gate(
            "held",
            GateStatus::Pass,
            key,
            &[("checked", list_or_dash(checked)), ("unchecked", list_or_dash(unrecorded))],
        ));
    }
    out
}

/// One operand of a judged ratio: its part, what it binds and reads, and its formula read.
pub(super) struct RatioSide<'a> {
    /// The operand's part id.
    pub id: &'a str,
    /// Its measure.
    pub measure: &'a Measure,
    /// Its evidence.
    pub ev: &'a Evidence,
    /// Its scope.
    pub scope: &'a Scope,
    /// Its formula, as read over its evidence.
    pub reading: Reading,
}

impl RatioSide<'_> {
    /// The window it covers: the requested one, or `whole_trace` (a key the finding
    /// translates).
    fn window(&self) -> String {
        self.ev.window.requested_ns.map_or_else(|| "whole_trace".into(), span_text)
    }

    /// How it combines its devices, as a word the finding translates (`q.over.*`).
    fn over(&self) -> &'static str {
        match self.reading.over {
            Over::Device => "device",
            Over::Summed => "summed",
            Over::Pooled => "pooled",
            Over::AcrossRanks => "across",
            Over::Rank(_) => "rank",
            Over::EachRank(_) => "each_rank",
            Over::Whole => "whole",
        }
    }
}

/// Gates R1-R4 of a judged ratio (`ratio: {of, to}`): R1 and R2 ask that both operands read
/// one trace, window, semantics and set of devices, or that the part declares why they differ
/// (`ratio.differs`, quoted in a note); R3 states what is divided by what, from the operands'
/// readings, against the claim's quantity and denominator; R4 checks the stated units and
/// that both operands are one total each, combined over their devices the same way.
pub(super) fn ratio_gates(
    about: &About,
    ratio: &crate::claims::Ratio,
    sides: [&RatioSide; 2],
    unit: Unit,
    condition: Option<&Condition>,
    says: Option<&Quantity>,
) -> Vec<Gate> {
    vec![
        ratio_r1(about, ratio, sides),
        ratio_r2(about, ratio, sides),
        ratio_r3(about, sides),
        ratio_r4(about, sides, unit, condition, says),
    ]
}

fn with_reason(mut g: Gate, differs: &crate::claims::Text) -> Gate {
    g.finding = g.finding.with_text("reason", differs);
    g
}

fn ratio_r1(about: &About, ratio: &crate::claims::Ratio, [a, b]: [&RatioSide; 2]) -> Gate {
    let same = a.scope.trace == b.scope.trace
        && a.ev.window.requested_ns == b.ev.window.requested_ns
        && a.scope.semantics == b.scope.semantics;
    if !same {
        let args = [
            ("of", a.id.to_string()),
            ("to", b.id.to_string()),
            ("of_trace", a.scope.trace.clone()),
            ("to_trace", b.scope.trace.clone()),
            ("of_window", a.window()),
            ("to_window", b.window()),
            ("of_semantics", a.scope.semantics.to_string()),
            ("to_semantics", b.scope.semantics.to_string()),
        ];
        return match &ratio.differs {
            Some(t) => with_reason(
                gate("R1", GateStatus::Note, "gate.r1.ratio_differs_declared", &args),
                t,
            ),
            None => gate("R1", GateStatus::Fail, "gate.r1.ratio_windows_differ", &args),
        };
    }
    // One window for both: the claim's window, as R1 compares it for any measured part.
    let covered = match claim_window(about, a.ev) {
        Ok(w) => w,
        Err(g) => return g,
    };
    let mut args = vec![
        ("of", a.id.to_string()),
        ("to", b.id.to_string()),
        ("trace", a.scope.trace.clone()),
        ("window", a.window()),
        ("semantics", a.scope.semantics.to_string()),
    ];
    if covered.is_none() {
        args.push(("span", a.ev.window.effective_ns.map_or("-".into(), span_text)));
        // As for any measured part, a number over the whole trace is noted: the claim may
        // speak of a step.
        return gate("R1", GateStatus::Note, "gate.r1.ratio_same_trace", &args);
    }
    gate("R1", GateStatus::Pass, "gate.r1.ratio_same_window", &args)
}

fn ratio_r2(about: &About, ratio: &crate::claims::Ratio, [a, b]: [&RatioSide; 2]) -> Gate {
    let streams = |s: &RatioSide| {
        (crate::analysis::STREAM.get)(&s.measure.params).unwrap_or_else(|| "all".into())
    };
    if a.ev.scope.devices != b.ev.scope.devices || streams(a) != streams(b) {
        let args = [
            ("of", a.id.to_string()),
            ("to", b.id.to_string()),
            ("of_devices", format_device_list(&a.ev.scope.devices)),
            ("to_devices", format_device_list(&b.ev.scope.devices)),
            ("of_streams", streams(a)),
            ("to_streams", streams(b)),
        ];
        return match &ratio.differs {
            Some(t) => with_reason(
                gate("R2", GateStatus::Note, "gate.r2.ratio_devices_differ_declared", &args),
                t,
            ),
            None => gate("R2", GateStatus::Fail, "gate.r2.ratio_devices_differ", &args),
        };
    }
    // One population for both: the claim's devices, as R2 compares them for any measured
    // part (a failure or a note about missing devices is that gate's own).
    let own = r2(about, a.measure, a.ev);
    if own.status != GateStatus::Pass {
        return own;
    }
    gate(
        "R2",
        GateStatus::Pass,
        &by(about, "gate.r2.ratio_same_devices"),
        &[
            ("of", a.id.to_string()),
            ("to", b.id.to_string()),
            ("devices", format_device_list(&a.ev.scope.devices)),
            ("streams", streams(a)),
        ],
    )
}

fn ratio_r3(about: &About, [a, b]: [&RatioSide; 2]) -> Gate {
    let formula = format!("{} / {}", a.id, b.id);
    // Each operand is one quantity: a field, or a sum its analysis declares as one.
    let mut kinds = Vec::new();
    for s in [a, b] {
        match &s.reading.shape {
            Shape::One(o) => kinds.push(o.quantity()),
            _ => {
                return gate(
                    "R3",
                    GateStatus::Fail,
                    "gate.r3.ratio_operand_not_one",
                    &[
                        ("part", s.id.to_string()),
                        ("value", s.measure.value_text.clone()),
                        ("formula", formula),
                    ],
                );
            }
        }
    }
    let (n, d) = (kinds[0], kinds[1]);
    let args = |extra: &[(&'static str, String)]| {
        let mut v = vec![
            ("of", a.id.to_string()),
            ("to", b.id.to_string()),
            ("of_kind", n.key().to_string()),
            ("to_kind", d.key().to_string()),
            ("formula", formula.clone()),
        ];
        v.extend(extra.iter().cloned());
        v
    };
    let family = |k: Q| {
        if k.is_wall() {
            1
        } else if k.is_kernel_time() {
            2
        } else {
            0
        }
    };
    // Bytes over a time is a bandwidth, no share: its kinds differ by definition.
    let bandwidth = n == Q::Bytes && family(d) != 0;
    if n != d && !bandwidth && (family(n) == 0 || family(n) != family(d)) {
        return gate("R3", GateStatus::Fail, "gate.r3.ratio_mixes_kinds", &args(&[]));
    }
    if let Some(claimed) = about.quantity {
        let ok = match claimed {
            QuantityKind::WallTime => n.is_wall(),
            QuantityKind::KernelTime => n.is_kernel_time(),
            QuantityKind::Count => n == Q::Count,
            QuantityKind::Bytes => n == Q::Bytes && !bandwidth,
            QuantityKind::Bandwidth => bandwidth,
            QuantityKind::StepTimeReduction | QuantityKind::ThroughputGain => true,
        };
        if !ok {
            return gate(
                "R3",
                GateStatus::Fail,
                "gate.r3.quantity_differs",
                &[
                    ("claim", quantity_key(claimed).into()),
                    ("evidence", n.key().into()),
                    ("formula", formula),
                ],
            );
        }
    }
    let Some(claimed) = about.denominator else {
        return gate("R3", GateStatus::Note, "gate.r3.ratio_unstated", &args(&[]));
    };
    let want = match claimed {
        Denominator::Window => Q::Window,
        Denominator::NcclBusy => Q::NcclBusy,
        Denominator::ComputeBusy => Q::ComputeBusy,
        Denominator::NcclKernelTime => Q::NcclKernelTime,
        Denominator::KernelTime => Q::KernelTime,
        Denominator::Idle => Q::Idle,
    };
    if d == want {
        gate("R3", GateStatus::Pass, "gate.r3.ratio_share", &args(&[]))
    } else {
        gate(
            "R3",
            GateStatus::Fail,
            "gate.r3.denominator_differs",
            &[("claim", want.key().into()), ("evidence", d.key().into()), ("formula", formula)],
        )
    }
}

fn ratio_r4(
    about: &About,
    [a, b]: [&RatioSide; 2],
    unit: Unit,
    condition: Option<&Condition>,
    says: Option<&Quantity>,
) -> Gate {
    if let Some(g) = stated_units(unit, condition, says) {
        return g;
    }
    // Each operand is one total: not a statistic, not one value per window or per rank.
    for s in [a, b] {
        if let Shape::One(Operand::Statistic(stat, _)) = s.reading.shape {
            return gate(
                "R4",
                GateStatus::Fail,
                "gate.r4.ratio_statistic",
                &[
                    ("part", s.id.to_string()),
                    ("value", s.measure.value_text.clone()),
                    ("stat", stat.key().to_string()),
                ],
            );
        }
        if !s.ev.samples.is_empty() {
            return gate(
                "R4",
                GateStatus::Fail,
                "gate.r4.ratio_windows",
                &[("part", s.id.to_string()), ("n", s.ev.samples.len().to_string())],
            );
        }
        if matches!(s.reading.over, Over::EachRank(_)) {
            return gate(
                "R4",
                GateStatus::Fail,
                "gate.r4.ratio_ranks",
                &[("part", s.id.to_string()), ("n", s.ev.scope.devices.len().to_string())],
            );
        }
    }
    if a.over() != b.over() {
        return gate(
            "R4",
            GateStatus::Fail,
            "gate.r4.ratio_aggregation_differs",
            &[
                ("of", a.id.to_string()),
                ("to", b.id.to_string()),
                ("of_over", a.over().to_string()),
                ("to_over", b.over().to_string()),
            ],
        );
    }
    let devices = &a.ev.scope.devices;
    let args = [
        ("of", a.id.to_string()),
        ("to", b.id.to_string()),
        ("devices", format_device_list(devices)),
        ("n", devices.len().to_string()),
        ("unit", unit.symbol().to_string()),
    ];
    match a.reading.over {
        Over::Summed if about.per == Some(Per::Device) => {
            gate("R4", GateStatus::Fail, "gate.r4.sum_as_per_device", &args)
        }
        Over::Summed if about.per == Some(Per::Sum) => {
            gate("R4", GateStatus::Pass, "gate.r4.ratio_summed", &args)
        }
        Over::Summed => gate("R4", GateStatus::Note, "gate.r4.ratio_summed_unstated", &args),
        Over::Device
            if about.per == Some(Per::Sum)
                && devices.len() == 1
                && about.devices.as_ref().is_some_and(|d| d.len() > 1) =>
        {
            gate("R4", GateStatus::Fail, "gate.r4.device_as_sum", &args)
        }
        Over::Device => gate("R4", GateStatus::Pass, "gate.r4.ratio_one_device", &args),
        _ => gate(
            "R4",
            GateStatus::Pass,
            "gate.r4.ratio_same_aggregation",
            &[
                ("of", a.id.to_string()),
                ("to", b.id.to_string()),
                ("over", a.over().to_string()),
                ("unit", unit.symbol().to_string()),
            ],
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{Context, Params};
    use crate::formula::Expr;
    use crate::scope::DeviceSel;
    use crate::trace::Kernels;

    fn about(devices: &[i64]) -> About {
        About {
            window: None,
            devices: Some(devices.to_vec()),
            per: None,
            quantity: None,
            denominator: None,
            denominator_text: None,
            chosen_by: Default::default(),
        }
    }

    fn measure(value: &str) -> Measure {
        Measure {
            analysis: "nccl-skew".into(),
            scope: "s".into(),
            value_text: value.into(),
            value: Expr::parse(value).unwrap(),
            unit: Unit::Percent,
            args: Vec::new(),
            params: Params::new(DeviceSel::All),
            compare: None,
            ranks: None,
            over: None,
        }
    }

    /// NCCL kernels on devices 1 and 2, one instance each.
    fn skew(devices: &[i64]) -> Evidence {
        let ctx = Context::from_kernels(Kernels::from_rows(&[
            (1, 56, 100, 1000, "ncclAG"),
            (2, 56, 400, 1000, "ncclAG"),
        ]));
        crate::analysis::run("nccl-skew", &Params::new(DeviceSel::Set(devices.to_vec())), &ctx)
            .unwrap()
    }

    #[test]
    fn r2_fails_for_a_cross_rank_field_over_one_rank_with_the_evidences_reason() {
        let ev = skew(&[1]);
        for value in ["wait_share", "start_skew_max_ns", "wait_ns / nccl_ns"] {
            let g = r2(&about(&[1]), &measure(value), &ev);
            assert_eq!(g.status, GateStatus::Fail, "{value}");
            assert_eq!(g.finding.key, "note.one_rank", "{value}");
            assert_eq!(g.finding.args["devices"], "1");
        }
        // A quantity that exists for one rank passes as before.
        let g = r2(&about(&[1]), &measure("nccl_ns"), &ev);
        assert_eq!((g.status, g.finding.key.as_str()), (GateStatus::Pass, "gate.r2.same_devices"));
        // Two ranks with a matched instance can be compared.
        let g = r2(&about(&[1, 2]), &measure("wait_share"), &skew(&[1, 2]));
        assert_eq!((g.status, g.finding.key.as_str()), (GateStatus::Pass, "gate.r2.same_devices"));
    }

    #[test]
    fn r2_fails_with_no_matched_instance_even_without_a_note() {
        let mut ev = skew(&[1, 2]);
        // Evidence from elsewhere (another tool's ledger, an older version) may carry no note:
        // the population alone decides, and the gate says so itself.
        if let Some(crate::analysis::values::Values::NcclSkew(v)) = ev.values.as_mut() {
            v.matched = 0;
        }
        let g = r2(&about(&[1, 2]), &measure("wait_share"), &ev);
        assert_eq!(g.status, GateStatus::Fail);
        assert_eq!(g.finding.key, "gate.r2.too_few_ranks");
        assert_eq!(g.finding.args["field"], "wait_share");
        assert_eq!(g.finding.args["ranks"], "2");
        assert_eq!(g.finding.args["matched"], "0");
    }

    fn run(driver: Option<&str>, gpus: usize, names: &[&str]) -> crate::trace::SideRun {
        crate::trace::SideRun {
            files: vec![Some(crate::trace::RunInfo {
                driver: driver.map(str::to_string),
                ..Default::default()
            })],
            devices: vec![0],
            job_devices: gpus,
            pids: vec![1],
            kernel_names: names.iter().map(|n| n.to_string()).collect(),
            sampling: "windows".into(),
            steps: None,
        }
    }

    fn experiment(held: &[&str]) -> crate::claims::Experiment {
        crate::claims::Experiment {
            changed: None,
            held: held.iter().map(|h| h.to_string()).collect(),
            controlled: true,
            expect: None,
            within_run: None,
        }
    }

    /// Comparison evidence whose sides ran `runs`.
    fn with_runs(runs: [crate::trace::SideRun; 2]) -> Evidence {
        let mut ev = skew(&[1]);
        let [a, b] = runs;
        let values = crate::analysis::compare::Values {
            runs: Some(crate::analysis::compare::Runs { a, b }),
            ..Default::default()
        };
        ev.values = Some(crate::analysis::values::Values::Compare(Box::new(values)));
        ev
    }

    #[test]
    fn a_held_item_fails_only_on_a_fact_both_sides_record_and_the_first_contradiction_fails() {
        let keys = |gates: &[Gate]| -> Vec<(String, GateStatus)> {
            gates.iter().map(|g| (g.finding.key.clone(), g.status)).collect()
        };
        // A driver recorded on one side only is no contradiction.
        let ev = with_runs([run(Some("580.95.05"), 2, &["k"]), run(None, 2, &["k"])]);
        let g = held_gates(Some(&experiment(&["hardware", "seed"])), &ev);
        assert_eq!(keys(&g), [("gate.held.consistent".to_string(), GateStatus::Pass)]);
        assert_eq!(g[0].finding.args["checked"], "hardware");
        assert_eq!(g[0].finding.args["unchecked"], "seed");
        // Two contradictions: the first fails the gate, the second is noted with it.
        let ev = with_runs([run(Some("580"), 2, &["k"]), run(Some("570"), 8, &["k"])]);
        let g = held_gates(Some(&experiment(&["hardware"])), &ev);
        assert_eq!(
            keys(&g),
            [
                ("gate.held.gpu_count".to_string(), GateStatus::Fail),
                ("gate.held.driver".to_string(), GateStatus::Note)
            ]
        );
        assert_eq!(
            (g[1].finding.args["a"].as_str(), g[1].finding.args["b"].as_str()),
            ("580", "570")
        );
        // Kernel names stand in for the model: a difference is a note, never a failure.
        let ev = with_runs([run(None, 2, &["a", "b"]), run(None, 2, &["b", "c"])]);
        let g = held_gates(Some(&experiment(&["model"])), &ev);
        assert_eq!(keys(&g), [("gate.held.kernel_names".to_string(), GateStatus::Note)]);
        assert_eq!(g[0].finding.args["only_a"], "a");
        assert_eq!(g[0].finding.args["only_b"], "c");
        // Nothing declared held: no gate. Evidence without runs: a note that nothing was read.
        assert!(held_gates(Some(&experiment(&[])), &ev).is_empty());
        assert!(held_gates(None, &ev).is_empty());
        let g = held_gates(Some(&experiment(&["hardware"])), &skew(&[1]));
        assert_eq!(keys(&g), [("gate.held.unread".to_string(), GateStatus::Note)]);
    }

    #[test]
    fn every_visible_difference_is_listed_whatever_was_held() {
        let mut a = run(Some("580"), 2, &["k"]);
        let mut b = run(Some("580"), 2, &["k"]);
        b.pids = vec![2];
        a.files[0].as_mut().unwrap().capture_start_utc_ns = Some(1_000_000_000_000);
        b.files[0].as_mut().unwrap().capture_start_utc_ns =
            Some(1_000_000_000_000 + 3_700_000_000_000);
        let check = check_experiment(&experiment(&["data"]), &[a, b]);
        assert_eq!(check.uncheckable, ["data"]);
        assert!(check.checked.is_empty());
        let names: Vec<&str> = check.differs.iter().map(|f| f.name).collect();
        assert_eq!(names, ["pids", "capture_start"]);
        assert_eq!(check.differs[1].apart_ns, Some(3_700_000_000_000));
        // 3,700 s = 1 h 1 min 40 s.
        assert_eq!(gap_text(3_700_000_000_000), "1 h 1 min");
        assert_eq!(gap_text(125_000_000_000), "2 min 5 s");
        assert_eq!(gap_text(42_000_000_000), "42 s");
    }

    #[test]
    fn r2_reports_differing_devices_before_the_rank_count() {
        let g = r2(&about(&[1, 2]), &measure("wait_share"), &skew(&[1]));
        assert_eq!(
            (g.status, g.finding.key.as_str()),
            (GateStatus::Fail, "gate.r2.devices_differ")
        );
    }
}

//! `overlap`: compute / NCCL / overlap / idle breakdown of one device's wall time.
//!
//! C = union of compute-kernel intervals, N = union of NCCL-kernel intervals (short name
//! contains `nccl`, any case), all streams of the device. overlap = |C ∩ N|, compute_only =
//! |C| - overlap, nccl_only = |N| - overlap, idle = total - |C ∪ N|; the four sum to total.
//! Reads the kernel scan only (start, end, deviceId, streamId, shortName).

use rayon::prelude::*;
use schemars::JsonSchema;
use serde::Serialize;

use super::intervals::{intersection_length, length, union};
use super::{
    AnalysisSpec, ChartKind, Context, Evidence, Field, FieldKind, Params, QueryError, ScopeRule,
    Table, Unit, edge_crossings, select,
};
use crate::scope::Semantics;
use crate::term as table;

/// Registry entry.
pub const SPEC: AnalysisSpec = AnalysisSpec {
    name: "overlap",
    summary: "compute-only, NCCL-only, overlapped and idle wall time of a device (interval unions)",
    fields: &[
        Field {
            name: "compute_only_ns",
            unit: Unit::Ns,
            kind: FieldKind::Wall,
            definition: "wall time with compute kernels and no NCCL kernel: |C| - |C ∩ N|",
        },
        Field {
            name: "nccl_only_ns",
            unit: Unit::Ns,
            kind: FieldKind::Wall,
            definition: "exposed NCCL: wall time with NCCL kernels and no compute kernel: |N| - |C ∩ N|",
        },
        Field {
            name: "overlap_ns",
            unit: Unit::Ns,
            kind: FieldKind::Wall,
            definition: "wall time with both compute and NCCL kernels: |C ∩ N|",
        },
        Field {
            name: "idle_ns",
            unit: Unit::Ns,
            kind: FieldKind::Idle,
            definition: "wall time with no kernel: total - |C ∪ N|",
        },
        Field {
            name: "total_ns",
            unit: Unit::Ns,
            kind: FieldKind::Window,
            definition: "denominator: window length (clip), span of the kept kernels (contain), or the device's kernel span (no window)",
        },
        Field {
            name: "nccl_busy_ns",
            unit: Unit::Ns,
            kind: FieldKind::NcclBusy,
            definition: "|N|: union of NCCL kernel intervals (= nccl_only + overlap)",
        },
        Field {
            name: "compute_busy_ns",
            unit: Unit::Ns,
            kind: FieldKind::ComputeBusy,
            definition: "|C|: union of compute kernel intervals (= compute_only + overlap)",
        },
        Field {
            name: "kernels",
            unit: Unit::Count,
            kind: FieldKind::Count,
            definition: "kernels kept in the window (compute + NCCL)",
        },
        Field {
            name: "compute_kernels",
            unit: Unit::Count,
            kind: FieldKind::Count,
            definition: "compute kernels kept",
        },
        Field {
            name: "nccl_kernels",
            unit: Unit::Count,
            kind: FieldKind::Count,
            definition: "NCCL kernels kept",
        },
        Field {
            name: "edge_kernels",
            unit: Unit::Count,
            kind: FieldKind::Count,
            definition: "kernels crossing a window edge: clipped (clip) or dropped (contain)",
        },
        Field {
            name: "idle_copy_ns",
            unit: Unit::Ns,
            kind: FieldKind::Wall,
            definition: "idle wall time with a memcpy or memset in flight: |copies ∩ S| - |copies ∩ K ∩ S| (null when the export has no copy tables)",
        },
        Field {
            name: "idle_none_ns",
            unit: Unit::Ns,
            kind: FieldKind::Wall,
            definition: "idle wall time with neither a kernel nor a copy: idle - idle_copy (null when the export has no copy tables)",
        },
    ],
    sums: &[
        (&["nccl_only_ns", "overlap_ns"], FieldKind::NcclBusy),
        (&["compute_only_ns", "overlap_ns"], FieldKind::ComputeBusy),
        (&["compute_only_ns", "nccl_only_ns", "overlap_ns", "idle_ns"], FieldKind::Window),
        (&["idle_copy_ns", "idle_none_ns"], FieldKind::Idle),
    ],
    params: &[super::CLUSTER, super::ENGINE],
    scope: ScopeRule::PerDevice,
    needs: &[Table::Kernels, Table::Copies],
    cross_rank: &[],
    ratios: &[],
    per_name: false,
    per_device: &[],
    rank_rows: None,
    across: &[],
    stats: &[],
    chart: Some(ChartKind::Breakdown),
    terms: &["exposed", "overlap", "idle", "contain"],
    run,
    table,
};

/// The breakdown of one device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Breakdown {
    /// |C| - overlap.
    pub compute_only: i64,
    /// |N| - overlap.
    pub nccl_only: i64,
    /// |C ∩ N|.
    pub overlap: i64,
    /// total - |C ∪ N|.
    pub idle: i64,
    /// The denominator.
    pub total: i64,
    /// Kernels kept.
    pub compute_kernels: i64,
    /// NCCL kernels kept.
    pub nccl_kernels: i64,
    /// Kernels crossing a window edge.
    pub edge_kernels: i64,
    /// The interval the total covers.
    pub effective: [i64; 2],
}

/// The kernels of one device the window keeps, clipped, each with whether it is an NCCL
/// kernel and whether it is counted here; and how many cross a window edge: the scan of
/// [`breakdown`], which a worker of a cluster runs on its ranks.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Kept {
    /// (start, end, NCCL, counted).
    pub rows: Vec<(i64, i64, bool, bool)>,
    /// Kernels crossing a window edge.
    pub edges: i64,
}

/// The scan of one device.
pub fn kept(ctx: &Context, device: i64, params: &Params) -> Kept {
    let k = &ctx.kernels;
    let rows = k.device_rows(device);
    let kept = select(k, rows.clone(), params.window, params.semantics, true);
    Kept {
        rows: kept
            .iter()
            .map(|&(i, s, e)| (s, e, k.is_nccl(i), params.counts(k.start[i])))
            .collect(),
        edges: params.window.map_or(0, |w| edge_crossings(k, rows, w)),
    }
}

/// Computes the breakdown of one device.
pub fn breakdown(ctx: &Context, device: i64, params: &Params) -> Breakdown {
    breakdown_of(&kept(ctx, device, params), params)
}

/// The breakdown of the kernels a device keeps: the reduce, wherever they were scanned.
pub fn breakdown_of(kept: &Kept, params: &Params) -> Breakdown {
    let (mut c, mut n) = (Vec::new(), Vec::new());
    // Wall time from every kernel in the window; counts only of those that belong to it (in a
    // split, a kernel that started in the window before is counted there).
    let (mut compute_kernels, mut nccl_kernels) = (0i64, 0i64);
    for &(s, e, nccl, counted) in &kept.rows {
        let counted = i64::from(counted);
        if nccl {
            n.push((s, e));
            nccl_kernels += counted;
        } else {
            c.push((s, e));
            compute_kernels += counted;
        }
    }
    let span = || {
        let lo = kept.rows.iter().map(|x| x.0).min().unwrap_or(0);
        let hi = kept.rows.iter().map(|x| x.1).max().unwrap_or(0);
        [lo, hi]
    };
    let effective = match (params.window, params.semantics) {
        (Some(w), Semantics::Clip) => w.as_array(),
        _ => span(),
    };
    let total = effective[1] - effective[0];
    let (cu, nu) = (union(c), union(n));
    let overlap = intersection_length(&cu, &nu);
    let (cl, nl) = (length(&cu), length(&nu));
    Breakdown {
        compute_only: cl - overlap,
        nccl_only: nl - overlap,
        overlap,
        // |C ∪ N| as |C| + |N \ C|: both parts and their sum lie within the span, whereas
        // |C| + |N| may not fit 64 bits.
        idle: total - (cl + (nl - overlap)),
        total,
        compute_kernels,
        nccl_kernels,
        edge_kernels: kept.edges,
        effective,
    }
}

/// The map of a worker: one line per device of its shard, the kernels it keeps.
pub fn map_rows(ctx: &Context, params: &Params) -> Vec<serde_json::Value> {
    let devices: Vec<i64> = ctx.inventory.devices.iter().map(|d| d.device).collect();
    devices
        .par_iter()
        .map(|&d| {
            let rows = serde_json::to_value(kept(ctx, d, params)).unwrap_or_default();
            super::cluster::line(ctx, d, rows)
        })
        .collect()
}

/// The breakdowns of `devices` from the kernels each keeps, scanned on the cluster at
/// `address`; a device the workers kept nothing of (no kernel in its file) keeps nothing here.
fn on_cluster(
    ctx: &Context,
    devices: &[i64],
    params: &Params,
    address: Option<&str>,
) -> Result<Vec<(i64, Breakdown)>, QueryError> {
    let mut got = super::cluster::run(ctx, &SPEC, params, address)?;
    devices
        .iter()
        .map(|&d| {
            let kept: Kept = match got.remove(&d) {
                Some(v) => serde_json::from_value(v).map_err(|e| QueryError::Failed {
                    reason: format!("the cluster's map of device {d} is unreadable ({e})"),
                    hint: "run the workers' verdict from the release of this one".into(),
                })?,
                None => Kept::default(),
            };
            Ok((d, breakdown_of(&kept, params)))
        })
        .collect()
}

/// The breakdowns of `devices` with their unions and counts from `params.engine`
/// (`overlap.sql`): the kept rows of each device go to the engine, the window's arithmetic
/// stays here, as in [`breakdown`].
fn on_engine(
    ctx: &Context,
    devices: &[i64],
    params: &Params,
) -> Result<Vec<(i64, Breakdown)>, QueryError> {
    let k = &ctx.kernels;
    let mut rows = crate::engine::Intervals::default();
    let mut edges = Vec::with_capacity(devices.len());
    for (r, &d) in devices.iter().enumerate() {
        let all = k.device_rows(d);
        for (i, s, e) in select(k, all.clone(), params.window, params.semantics, true) {
            rows.rank.push(r as i64);
            rows.start.push(s);
            rows.end.push(e);
            rows.nccl.push(k.is_nccl(i));
            rows.counted.push(params.counts(k.start[i]));
        }
        edges.push(params.window.map_or(0, |w| edge_crossings(k, all, w)));
    }
    let unions = crate::engine::overlap(&params.engine, &rows, devices.len() as i64)
        .map_err(|e| QueryError::Failed { reason: e.reason, hint: e.hint })?;
    Ok(devices
        .iter()
        .zip(unions)
        .zip(edges)
        .map(|((&d, u), edge_kernels)| {
            let effective = match (params.window, params.semantics) {
                (Some(w), Semantics::Clip) => w.as_array(),
                _ => [u.lo, u.hi],
            };
            let total = effective[1] - effective[0];
            // |C ∩ N| = |C| + |N| - |C ∪ N|, in 128 bits: |C| + |N| may not fit 64.
            let overlap = (i128::from(u.compute_busy) + i128::from(u.nccl_busy)
                - i128::from(u.all_busy)) as i64;
            let b = Breakdown {
                compute_only: u.compute_busy - overlap,
                nccl_only: u.nccl_busy - overlap,
                overlap,
                idle: total - u.all_busy,
                total,
                compute_kernels: u.compute_kernels,
                nccl_kernels: u.nccl_kernels,
                edge_kernels,
                effective,
            };
            (d, b)
        })
        .collect())
}

/// The values of one device: the breakdown, and how much of its idle time had a copy in
/// flight (absent when the trace has no copy table).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(rename = "OverlapValues")]
pub struct Values {
    /// |C| - overlap.
    pub compute_only_ns: i64,
    /// |N| - overlap.
    pub nccl_only_ns: i64,
    /// |C ∩ N|.
    pub overlap_ns: i64,
    /// total - |C ∪ N|.
    pub idle_ns: i64,
    /// The denominator.
    pub total_ns: i64,
    /// |N|.
    pub nccl_busy_ns: i64,
    /// |C|.
    pub compute_busy_ns: i64,
    /// Kernels counted.
    pub kernels: i64,
    /// Compute kernels counted.
    pub compute_kernels: i64,
    /// NCCL kernels counted.
    pub nccl_kernels: i64,
    /// Kernels crossing a window edge.
    pub edge_kernels: i64,
    /// Idle time with a copy in flight.
    pub idle_copy_ns: Option<i64>,
    /// Idle time with neither a kernel nor a copy.
    pub idle_none_ns: Option<i64>,
}

/// The values of one device among several.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(rename = "OverlapRow")]
pub struct Row {
    /// The device.
    pub device: i64,
    /// The interval its total covers.
    pub effective_ns: [i64; 2],
    /// Its rank's label, over a set of files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Its values.
    #[serde(flatten)]
    pub values: Values,
}

impl super::EvidenceRow for Row {
    fn label_device(&mut self, label: &dyn Fn(i64) -> String) {
        self.label = Some(label(self.device));
    }
}

impl Values {
    fn new(b: Breakdown, idle_split: Option<(i64, i64)>) -> Values {
        Values {
            compute_only_ns: b.compute_only,
            nccl_only_ns: b.nccl_only,
            overlap_ns: b.overlap,
            idle_ns: b.idle,
            total_ns: b.total,
            nccl_busy_ns: b.nccl_only + b.overlap,
            compute_busy_ns: b.compute_only + b.overlap,
            kernels: b.compute_kernels + b.nccl_kernels,
            compute_kernels: b.compute_kernels,
            nccl_kernels: b.nccl_kernels,
            edge_kernels: b.edge_kernels,
            idle_copy_ns: idle_split.map(|s| s.0),
            idle_none_ns: idle_split.map(|s| s.1),
        }
    }
}

/// Runs the analysis: `values` for one device, `rows` (one per device) for several.
pub fn run(params: &Params, ctx: &Context) -> Result<Evidence, QueryError> {
    let devices = ctx.resolve_devices(&params.devices)?;
    ctx.check_window(params.window, &devices)?;
    let mut ev = ctx.evidence(&SPEC, params, devices.clone());
    // Devices are independent: one per core, or each one's aggregates on an engine.
    let parts: Vec<(i64, Breakdown)> = match &params.engine {
        crate::engine::Engine::Rust => {
            devices.par_iter().map(|&d| (d, breakdown(ctx, d, params))).collect()
        }
        crate::engine::Engine::Dask(at) => on_cluster(ctx, &devices, params, at.as_deref())?,
        crate::engine::Engine::Supplied(_) => on_engine(ctx, &devices, params)?,
    };
    let edges: i64 = parts.iter().map(|p| p.1.edge_kernels).sum();
    if params.window.is_some() && edges > 0 {
        match params.semantics {
            Semantics::Clip => ev.note("note.edges_clipped", &[("n", edges.to_string())]),
            Semantics::Contain => ev.note("note.edges_dropped", &[("n", edges.to_string())]),
        }
    }
    ev.note_span_denominators(params, parts.iter().map(|(d, b)| (*d, b.total)));
    if parts.iter().any(|p| p.1.compute_kernels + p.1.nccl_kernels == 0) {
        ev.note("note.empty_device", &[]);
    }
    // Idle split by copies: "no kernel" keeps its nsys-ai meaning; how much of it had a copy
    // in flight is disclosed beside it.
    let mut idle_split: Vec<Option<(i64, i64)>> = Vec::new();
    let copy_tables = ctx.copies.as_ref().filter(|c| c.memcpy.present || c.memset.present);
    for (d, b) in &parts {
        let split = match copy_tables {
            None => None,
            Some(c) => {
                super::copies::device_copies(c, &ctx.kernels, *d, params.window, params.semantics)
                    .map_err(|e| QueryError::Failed { reason: e.to_string(), hint: e.hint() })?
                    .idle
                    .map(|i| (i.idle_copy_ns, i.idle_none_ns))
            }
        };
        if let Some((copy, _)) = split
            && b.idle > 0
            && copy * 10 >= b.idle
        {
            ev.note(
                "note.idle_has_copies",
                &[
                    ("device", d.to_string()),
                    ("idle_copy_ms", crate::units::ms(copy)),
                    ("idle_ms", crate::units::ms(b.idle)),
                    (
                        "share",
                        crate::units::percent(copy.into(), b.idle.into()).unwrap_or_default(),
                    ),
                ],
            );
        }
        idle_split.push(split);
    }
    if let [(_, b)] = parts.as_slice() {
        ev.window.effective_ns = Some(b.effective);
        ev.values = Some(super::values::Values::Overlap(Values::new(*b, idle_split[0])));
    } else {
        let lo = parts.iter().map(|p| p.1.effective[0]).min();
        let hi = parts.iter().map(|p| p.1.effective[1]).max();
        if let (Some(lo), Some(hi)) = (lo, hi) {
            ev.window.effective_ns = Some([lo, hi]);
        }
        ev.rows = Some(super::values::Rows::Overlap(
            parts
                .iter()
                .zip(&idle_split)
                .map(|((d, b), split)| Row {
                    device: *d,
                    effective_ns: b.effective,
                    label: None,
                    values: Values::new(*b, *split),
                })
                .collect(),
        ));
    }
    Ok(ev)
}

/// The terminal table of `verdict query` (below the scope lines).
pub fn table(ev: &Evidence, width: usize) -> String {
    #[allow(unused_imports)]
    use super::show::*;
    #[allow(unused_imports)]
    use crate::term::Column;
    let mut s = String::new();
    let rows: Vec<(i64, &Values)> = match (&ev.values, &ev.rows) {
        (Some(super::values::Values::Overlap(v)), _) => {
            ev.scope.devices.first().map(|d| (*d, v)).into_iter().collect()
        }
        (None, Some(super::values::Rows::Overlap(r))) => {
            r.iter().map(|r| (r.device, &r.values)).collect()
        }
        _ => vec![],
    };
    let mut out = Vec::new();
    for (device, r) in &rows {
        out.push(vec![
            device.to_string(),
            dur(r.compute_only_ns),
            dur(r.nccl_only_ns),
            dur(r.overlap_ns),
            dur(r.idle_ns),
            dur(r.total_ns),
            share(Some(r.nccl_only_ns), Some(r.total_ns)),
            share(Some(r.overlap_ns), Some(r.nccl_only_ns + r.overlap_ns)),
            num(r.kernels),
        ]);
    }
    s += &table::render(
        &[
            Column::value("device"),
            Column::number("compute_only"),
            Column::number("nccl_only"),
            Column::number("overlap"),
            Column::number("idle"),
            Column::number("total"),
            Column::number("exposed NCCL"),
            Column::number("NCCL hidden"),
            Column::number("kernels"),
        ],
        &out,
        width,
    );
    if let [(_, r)] = rows.as_slice() {
        let m = crate::units::ms;
        s += &format!(
            "\n{} + {} + {} + {} = {} ms\n",
            m(r.compute_only_ns),
            m(r.nccl_only_ns),
            m(r.overlap_ns),
            m(r.idle_ns),
            m(r.total_ns)
        );
        s += &table::hang(
            "",
            "exposed NCCL = nccl_only / total; NCCL hidden = overlap / (nccl_only + overlap)",
            2,
            width,
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Idle split by copies, by hand: kernels cover [0, 150) on device 1; window [0, 300)
    /// clip, so idle = 150. An HtoD copy [140, 200) adds 50 idle ns (10 of it is under a
    /// kernel), a memset [210, 220) 10 more: idle_copy = 60, idle_none = 90.
    #[test]
    fn idle_splits_by_copies_by_hand() {
        use crate::scope::{DeviceSel, Window};
        use crate::trace::{Copies, CopyKind, Kernels};
        let ctx = Context::from_kernels(Kernels::from_rows(&[
            (1, 7, 0, 100, "gemm"),
            (1, 56, 50, 150, "ncclAG"),
        ]))
        .with_copies(Copies::from_rows(&[
            (1, 9, 140, 200, 4096, CopyKind::HtoD),
            (1, 9, 210, 220, 64, CopyKind::Memset),
        ]));
        let mut p = Params::new(DeviceSel::Set(vec![1]));
        p.window = Some(Window { start_ns: 0, end_ns: 300 });
        let ev = run(&p, &ctx).unwrap();
        let Some(super::super::values::Values::Overlap(v)) = &ev.values else { panic!() };
        assert_eq!((v.idle_ns, v.idle_copy_ns, v.idle_none_ns), (150, Some(60), Some(90)));
        assert!(ev.notes.iter().any(|n| n.finding.key == "note.idle_has_copies"));
        // Without copy tables the split is null, never 0 (the field's definition says so).
        let ev = run(&p, &Context::from_kernels(ctx.kernels.clone())).unwrap();
        let Some(super::super::values::Values::Overlap(v)) = &ev.values else { panic!() };
        assert_eq!(v.idle_copy_ns, None);
        assert!(ev.value("idle_copy_ns").is_some_and(|v| v.is_null()));
    }
    use crate::analysis::Params;
    use crate::scope::{DeviceSel, Window};
    use crate::trace::Kernels;

    fn ctx() -> Context {
        // Device 0 in µs-scale ns: compute [1000,2000) [3000,4000) [8000,9000),
        // NCCL [2500,3500) [4500,5500), plus a compute kernel straddling 9500.
        Context::from_kernels(Kernels::from_rows(&[
            (0, 7, 1000, 2000, "gemm"),
            (0, 7, 3000, 4000, "gemm"),
            (0, 7, 8000, 9000, "gemm"),
            (0, 9, 2500, 3500, "ncclDevKernel_AllGather"),
            (0, 9, 4500, 5500, "ncclKernel_x"),
            (0, 7, 9400, 9800, "gemm"),
            (1, 7, 0, 100, "gemm"),
        ]))
    }

    fn params(window: Option<&str>, semantics: Semantics) -> Params {
        let mut p = Params::new(DeviceSel::Set(vec![0]));
        p.window = window.map(|w| Window::parse(w).unwrap());
        p.semantics = semantics;
        p
    }

    #[test]
    fn whole_trace_breakdown_by_hand() {
        let b = breakdown(&ctx(), 0, &params(None, Semantics::Clip));
        // span 1000..9800 = 8800; C = 1000+1000+1000+400 = 3400; N = 2000; C∩N = 500.
        assert_eq!(b.total, 8800);
        assert_eq!(b.overlap, 500);
        assert_eq!(b.compute_only, 2900);
        assert_eq!(b.nccl_only, 1500);
        assert_eq!(b.idle, 8800 - (3400 + 2000 - 500));
        assert_eq!(b.compute_only + b.nccl_only + b.overlap + b.idle, b.total);
    }

    #[test]
    fn clip_and_contain_differ_at_edges() {
        // Window [0.0000025 s, 0.0000096 s) = [2500, 9600) ns.
        let w = Some("0.0000025:0.0000096");
        let clip = breakdown(&ctx(), 0, &params(w, Semantics::Clip));
        assert_eq!(clip.total, 7100);
        // C clipped: [3000,4000) [8000,9000) [9400,9600) = 2200; N = 2000; overlap 500.
        assert_eq!((clip.compute_only, clip.nccl_only, clip.overlap), (1700, 1500, 500));
        assert_eq!(clip.idle, 7100 - 3700);
        assert_eq!(clip.edge_kernels, 1);
        let contain = breakdown(&ctx(), 0, &params(w, Semantics::Contain));
        // Kept: [3000,4000) [8000,9000) compute, both NCCL; span 2500..9000.
        assert_eq!(contain.total, 6500);
        assert_eq!(contain.effective, [2500, 9000]);
        assert_eq!((contain.compute_only, contain.nccl_only, contain.overlap), (1500, 1500, 500));
        assert_eq!(contain.idle, 6500 - 3500);
    }

    #[test]
    fn several_devices_give_rows() {
        let mut p = params(None, Semantics::Clip);
        p.devices = DeviceSel::All;
        let ev = run(&p, &ctx()).unwrap();
        let Some(crate::analysis::values::Rows::Overlap(rows)) = ev.rows else { panic!() };
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1].device, 1);
        assert_eq!(rows[1].values.idle_ns, 0);
        assert!(ev.values.is_none());
    }

    #[test]
    fn unknown_device_and_outside_window_are_errors() {
        let mut p = params(None, Semantics::Clip);
        p.devices = DeviceSel::Set(vec![5]);
        assert!(matches!(run(&p, &ctx()), Err(QueryError::UnknownDevice { device: 5, .. })));
        let p = params(Some("1:2"), Semantics::Clip);
        assert!(matches!(run(&p, &ctx()), Err(QueryError::WindowOutside { .. })));
    }
}

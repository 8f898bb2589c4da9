//! `copies`: memcpy and memset traffic of one device, and how much of its idle time has a copy.
//!
//! Per kind (each memcpy kind present, and memset) and over all copies: rows, bytes, busy =
//! length of the union of their intervals, bandwidth = bytes / busy as an exact fraction (bytes
//! per ns is decimal GB/s). With span S and kernel union K: idle = |S| - |K ∩ S|, idle_copy =
//! |C ∩ S| - |C ∩ K ∩ S|, idle_none = idle - idle_copy. Pure: it reads the memcpy/memset scan
//! ([`Copies`]) and the kernel scan, never the trace.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;

use super::intervals::{intersection_length, union};
use super::{
    AnalysisSpec, Context, Evidence, Field, FieldKind, Params, QueryError, ScopeRule, Table, Unit,
    select,
};
use crate::formula::Rational;
use crate::scope::{Semantics, Window};
use crate::trace::{Copies, CopyKind, KernelFilter, Kernels};

/// Errors computing the copies of one device.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CopiesError {
    /// A sum does not fit a 64-bit integer; no wrapped or saturated value is returned.
    #[error("the {quantity} of device {device} overflows a 64-bit integer")]
    Overflow {
        /// The device.
        device: i64,
        /// What was being summed (`bytes`, `busy time`...).
        quantity: &'static str,
    },
    /// The scan was read with a filter that leaves out rows this device and window need.
    #[error(
        "device {device} over {window} was not read by the `{scan}` scan (it was filtered to {filter})"
    )]
    NotLoaded {
        /// The device.
        device: i64,
        /// The window asked for, formatted (`the whole trace` without one).
        window: String,
        /// `kernel` or `copies`.
        scan: &'static str,
        /// The scan's filter, formatted.
        filter: String,
    },
}

impl CopiesError {
    /// A hint on what to do about it.
    pub fn hint(&self) -> String {
        match self {
            CopiesError::Overflow { .. } => {
                "the byte counts or timestamps are far outside what nsys writes; re-export the report with `nsys export --type sqlite`".into()
            }
            CopiesError::NotLoaded { .. } => {
                "load both scans with a filter that covers every device and window asked for".into()
            }
        }
    }
}

/// Bytes over busy time, kept as the two integers (1 byte/ns = 1 GB/s, decimal).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Bandwidth {
    /// Numerator: bytes (B).
    pub bytes: i64,
    /// Denominator: busy time (ns), always > 0.
    pub busy_ns: i64,
}

impl Bandwidth {
    /// `bytes / busy_ns`; None when nothing was busy (a rate over no time does not exist).
    pub fn new(bytes: i64, busy_ns: i64) -> Option<Bandwidth> {
        (busy_ns > 0).then_some(Bandwidth { bytes, busy_ns })
    }

    /// The exact fraction, in bytes per ns (= GB/s).
    pub fn as_rational(self) -> Rational {
        Rational::new(i128::from(self.bytes), i128::from(self.busy_ns))
            .expect("busy_ns is positive by construction")
    }
}

/// Rows, bytes and busy time of a set of copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, JsonSchema)]
pub struct CopyStats {
    /// Rows kept.
    pub count: i64,
    /// Sum of their bytes (B). In clip semantics a row crossing a window edge counts whole
    /// while its time is clipped; [`DeviceCopies::edge_bytes`] says how much that concerns.
    pub bytes: i64,
    /// Length of the union of their (clipped) intervals (ns).
    pub busy_ns: i64,
    /// `bytes / busy_ns` (None when `busy_ns` is 0).
    pub bandwidth: Option<Bandwidth>,
}

/// The stats of one kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct KindStats {
    /// The kind.
    pub kind: CopyKind,
    /// Its display label (the export's `ENUM_CUDA_MEMCPY_OPER` label when it has one).
    pub label: String,
    /// Its rows, bytes, busy time and bandwidth.
    #[serde(flatten)]
    pub stats: CopyStats,
}

/// The split of a device's idle time by whether a copy runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct IdleSplit {
    /// The span S: the window (clip), the span of the kept kernels (contain), or the device's
    /// kernel span (no window).
    pub span: [i64; 2],
    /// |S| (ns).
    pub span_ns: i64,
    /// |K ∩ S|: time with at least one kernel (ns).
    pub kernel_ns: i64,
    /// |S| - |K ∩ S|: time with no kernel (ns).
    pub idle_ns: i64,
    /// |C ∩ S| - |C ∩ K ∩ S|: idle time with at least one copy or memset (ns).
    pub idle_copy_ns: i64,
    /// idle - idle_copy: time with neither a kernel nor a copy (ns).
    pub idle_none_ns: i64,
}

/// Copies and memsets of one device in one scope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeviceCopies {
    /// nsys `deviceId`.
    pub device: i64,
    /// The window asked for (None: the whole trace).
    pub window: Option<Window>,
    /// How the window selected rows.
    pub semantics: Semantics,
    /// Per kind present in the scope: memcpy kinds by code, then memset.
    pub kinds: Vec<KindStats>,
    /// Over all copies and memsets: busy is the union over every kind, so it can be less than
    /// the sum of the kinds' busy times. Its bytes add bytes copied and bytes set.
    pub total: CopyStats,
    /// Over the memcpy rows alone (every kind but memset): the bytes moved, and the bandwidth.
    pub memcpy: CopyStats,
    /// Kernels kept.
    pub kernels: i64,
    /// |C ∩ K|: time with both a copy and a kernel (ns).
    pub copy_kernel_overlap_ns: i64,
    /// Copies crossing a window edge: clipped (clip) or dropped (contain).
    pub edge_copies: i64,
    /// Bytes of those copies (B).
    pub edge_bytes: i64,
    /// The idle split; None when the span does not exist (no window and no kernel on the
    /// device, or a contain window that keeps no kernel).
    pub idle: Option<IdleSplit>,
}

/// Whether a scan read with `filter` holds every row that `device` over `window` selects.
fn covers(filter: &KernelFilter, device: i64, window: Option<Window>) -> bool {
    let device_ok = filter.devices.as_ref().is_none_or(|v| v.contains(&device));
    // Both semantics select rows with `end >= start_ns` and `start <= end_ns` (a subset of
    // intersecting the window), which is what the filter's bounds keep.
    let bounds_ok = match (filter.bounds, window) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some((a, b)), Some(w)) => a <= w.start_ns && b >= w.end_ns,
    };
    device_ok && bounds_ok
}

fn describe(filter: &KernelFilter) -> String {
    let devices = match &filter.devices {
        None => "all devices".to_string(),
        Some(v) => format!("devices {v:?}"),
    };
    match filter.bounds {
        None => devices,
        Some((a, b)) => format!("{devices}, rows touching [{a}, {b}] ns"),
    }
}

/// The interval a row contributes, as the overlap analysis selects kernels: clipped to the
/// window (clip), unclipped when fully inside (contain), or as is (no window).
fn pick(s: i64, e: i64, window: Option<Window>, semantics: Semantics) -> Option<(i64, i64)> {
    match (window, semantics) {
        (None, _) => Some((s, e)),
        (Some(w), Semantics::Clip) => {
            (e > w.start_ns && s < w.end_ns).then(|| (s.max(w.start_ns), e.min(w.end_ns)))
        }
        (Some(w), Semantics::Contain) => (s >= w.start_ns && e <= w.end_ns).then_some((s, e)),
    }
}

/// Length of a union, checked. Once both unions' lengths fit, [`intersection_length`] cannot
/// overflow: each of its pieces is part of one interval of each, and their sum is at most the
/// smaller length.
fn checked_length(u: &[(i64, i64)], device: i64) -> Result<i64, CopiesError> {
    let overflow = || CopiesError::Overflow { device, quantity: "busy time" };
    u.iter().try_fold(0i64, |acc, &(s, e)| {
        e.checked_sub(s).and_then(|d| acc.checked_add(d)).ok_or_else(overflow)
    })
}

/// Rows, bytes and intervals of one kind while collecting.
#[derive(Default)]
struct Acc {
    count: i64,
    bytes: i64,
    intervals: Vec<(i64, i64)>,
}

impl Acc {
    fn stats(self, device: i64) -> Result<(CopyStats, Vec<(i64, i64)>), CopiesError> {
        let u = union(self.intervals);
        let busy_ns = checked_length(&u, device)?;
        let stats = CopyStats {
            count: self.count,
            bytes: self.bytes,
            busy_ns,
            bandwidth: Bandwidth::new(self.bytes, busy_ns),
        };
        Ok((stats, u))
    }
}

/// Computes the copies of one device over an optional window.
///
/// Both scans must hold every row the device and window select (their filters are checked);
/// a device with no rows gives zero counts and, without a span, no idle split.
pub fn device_copies(
    copies: &Copies,
    kernels: &Kernels,
    device: i64,
    window: Option<Window>,
    semantics: Semantics,
) -> Result<DeviceCopies, CopiesError> {
    device_copies_from(copies, kernels, device, window, semantics, None)
}

/// [`device_copies`] in a window of a split: copies that start before `counted_from` belong
/// to an earlier window, where their rows and bytes are counted; here they add only their
/// (clipped) time to the busy unions and the idle split, which are wall time.
pub fn device_copies_from(
    copies: &Copies,
    kernels: &Kernels,
    device: i64,
    window: Option<Window>,
    semantics: Semantics,
    counted_from: Option<i64>,
) -> Result<DeviceCopies, CopiesError> {
    for (scan, filter) in [("kernel", &kernels.filter), ("copies", &copies.filter)] {
        if !covers(filter, device, window) {
            return Err(CopiesError::NotLoaded {
                device,
                window: window.map_or("the whole trace".into(), |w| format!("{w} s")),
                scan,
                filter: describe(filter),
            });
        }
    }
    let overflow = |quantity| CopiesError::Overflow { device, quantity };

    let kept_k = select(kernels, kernels.device_rows(device), window, semantics, true);
    let span = match (window, semantics) {
        (Some(w), Semantics::Clip) => Some(w.as_array()),
        _ => kept_k
            .iter()
            .map(|x| x.1)
            .min()
            .zip(kept_k.iter().map(|x| x.2).max())
            .map(|(lo, hi)| [lo, hi]),
    };
    let k_union = union(kept_k.iter().map(|&(_, s, e)| (s, e)).collect());
    checked_length(&k_union, device)?;

    let mut per_kind: BTreeMap<CopyKind, Acc> = BTreeMap::new();
    let (mut all, mut moved) = (Acc::default(), Acc::default());
    let (mut edge_copies, mut edge_bytes) = (0i64, 0i64);
    for i in copies.device_rows(device) {
        let (s, e, bytes) = (copies.start[i], copies.end[i], copies.bytes[i]);
        if let Some(w) = window
            && ((s < w.start_ns && e > w.start_ns) || (s < w.end_ns && e > w.end_ns))
        {
            edge_copies += 1;
            edge_bytes = edge_bytes.checked_add(bytes).ok_or_else(|| overflow("bytes"))?;
        }
        let Some(iv) = pick(s, e, window, semantics) else { continue };
        let counted = counted_from.is_none_or(|t| s >= t);
        let kind = copies.kind[i];
        let mut accs = vec![per_kind.entry(kind).or_default(), &mut all];
        if kind.is_memcpy() {
            accs.push(&mut moved);
        }
        for acc in accs {
            if counted {
                acc.count += 1;
                acc.bytes = acc.bytes.checked_add(bytes).ok_or_else(|| overflow("bytes"))?;
            }
            acc.intervals.push(iv);
        }
    }
    let mut kinds = Vec::with_capacity(per_kind.len());
    for (kind, acc) in per_kind {
        let (stats, _) = acc.stats(device)?;
        kinds.push(KindStats { kind, label: copies.label(kind).into_owned(), stats });
    }
    let (total, c_union) = all.stats(device)?;
    let (memcpy, _) = moved.stats(device)?;
    let copy_kernel_overlap_ns = intersection_length(&c_union, &k_union);

    let idle = match span {
        None => None,
        Some([lo, hi]) => {
            let span_ns = hi.checked_sub(lo).ok_or_else(|| overflow("span"))?;
            let s = [(lo, hi)];
            // K clipped to S, so that |C ∩ K ∩ S| is one intersection of two unions.
            let k_in_s = union(
                k_union
                    .iter()
                    .filter_map(|&(a, b)| {
                        let (a, b) = (a.max(lo), b.min(hi));
                        (b > a).then_some((a, b))
                    })
                    .collect(),
            );
            let kernel_ns = checked_length(&k_in_s, device)?;
            let idle_ns = span_ns - kernel_ns;
            let idle_copy_ns =
                intersection_length(&c_union, &s) - intersection_length(&c_union, &k_in_s);
            Some(IdleSplit {
                span: [lo, hi],
                span_ns,
                kernel_ns,
                idle_ns,
                idle_copy_ns,
                idle_none_ns: idle_ns - idle_copy_ns,
            })
        }
    };
    Ok(DeviceCopies {
        device,
        window,
        semantics,
        kinds,
        total,
        memcpy,
        kernels: kept_k.len() as i64,
        copy_kernel_overlap_ns,
        edge_copies,
        edge_bytes,
        idle,
    })
}

/// [`device_copies`] for every device with kernels or copies in the scans, ascending.
pub fn all_devices(
    copies: &Copies,
    kernels: &Kernels,
    window: Option<Window>,
    semantics: Semantics,
) -> Result<Vec<DeviceCopies>, CopiesError> {
    let mut devices = kernels.devices();
    devices.extend(copies.devices());
    devices.sort_unstable();
    devices.dedup();
    devices.into_iter().map(|d| device_copies(copies, kernels, d, window, semantics)).collect()
}

/// The registry entry.
pub const SPEC: AnalysisSpec = AnalysisSpec {
    name: "copies",
    summary: "memcpy and memset traffic of a device: count, bytes, busy time and bandwidth per kind, and how much of its idle time has a copy in flight",
    fields: &[
        f("copies", Unit::Count, FieldKind::Count, "memcpy and memset rows kept in the scope"),
        f(
            "bytes",
            Unit::Bytes,
            FieldKind::Bytes,
            "bytes the memcpy rows move, every memcpy kind (memsets apart: memset_bytes; a copy clipped by a window edge counts whole)",
        ),
        f(
            "busy_ns",
            Unit::Ns,
            FieldKind::CopyTime,
            "wall time with at least one copy or memset: union of their intervals over every kind",
        ),
        f(
            "memcpy_busy_ns",
            Unit::Ns,
            FieldKind::CopyTime,
            "wall time with at least one memcpy: union of the memcpy rows' intervals (memsets apart)",
        ),
        f(
            "bandwidth",
            Unit::Ratio,
            FieldKind::Bytes,
            "bytes / memcpy_busy_ns: memcpy bytes per ns, i.e. decimal GB/s (effective, over the memcpy busy time; memsets set memory, they move none)",
        ),
        f("htod_bytes", Unit::Bytes, FieldKind::Bytes, "host-to-device bytes"),
        f("htod_busy_ns", Unit::Ns, FieldKind::CopyTime, "union of host-to-device copies"),
        f("dtoh_bytes", Unit::Bytes, FieldKind::Bytes, "device-to-host bytes"),
        f("dtoh_busy_ns", Unit::Ns, FieldKind::CopyTime, "union of device-to-host copies"),
        f("dtod_bytes", Unit::Bytes, FieldKind::Bytes, "device-to-device bytes"),
        f("dtod_busy_ns", Unit::Ns, FieldKind::CopyTime, "union of device-to-device copies"),
        f("ptop_bytes", Unit::Bytes, FieldKind::Bytes, "peer-to-peer bytes"),
        f("ptop_busy_ns", Unit::Ns, FieldKind::CopyTime, "union of peer-to-peer copies"),
        f(
            "unified_htod_bytes",
            Unit::Bytes,
            FieldKind::Bytes,
            "unified memory migrated host to device (bytes)",
        ),
        f(
            "unified_htod_busy_ns",
            Unit::Ns,
            FieldKind::CopyTime,
            "union of unified-memory host-to-device migrations",
        ),
        f(
            "unified_dtoh_bytes",
            Unit::Bytes,
            FieldKind::Bytes,
            "unified memory migrated device to host (bytes)",
        ),
        f(
            "unified_dtoh_busy_ns",
            Unit::Ns,
            FieldKind::CopyTime,
            "union of unified-memory device-to-host migrations",
        ),
        f("memset_bytes", Unit::Bytes, FieldKind::Bytes, "bytes set by memsets"),
        f("memset_busy_ns", Unit::Ns, FieldKind::CopyTime, "union of memsets"),
        f(
            "copy_kernel_overlap_ns",
            Unit::Ns,
            FieldKind::Wall,
            "wall time with both a copy and a kernel: |copies ∩ kernels|",
        ),
        f(
            "span_ns",
            Unit::Ns,
            FieldKind::Window,
            "the span S the idle split covers: the window (clip), the span of the kept kernels (contain), or the device's kernel span (no window); null when there is none",
        ),
        f(
            "idle_ns",
            Unit::Ns,
            FieldKind::Idle,
            "wall time in S with no kernel (the overlap analysis's idle)",
        ),
        f(
            "idle_copy_ns",
            Unit::Ns,
            FieldKind::Wall,
            "idle time with a copy or memset in flight: |copies ∩ S| - |copies ∩ K ∩ S|",
        ),
        f(
            "idle_none_ns",
            Unit::Ns,
            FieldKind::Wall,
            "idle time with neither a kernel nor a copy: idle - idle_copy",
        ),
        f(
            "edge_copies",
            Unit::Count,
            FieldKind::Count,
            "copies crossing a window edge: clipped (clip) or dropped (contain)",
        ),
    ],
    sums: &[(&["idle_copy_ns", "idle_none_ns"], FieldKind::Idle)],
    params: &[],
    scope: ScopeRule::PerDevice,
    needs: &[Table::Kernels, Table::Copies],
    cross_rank: &[],
    ratios: &[("bandwidth", "bytes / memcpy_busy_ns")],
    per_name: true,
    per_device: &[],
    rank_rows: None,
    across: &[],
    stats: &[],
    chart: None,
    terms: &["idle_copy"],
    run,
    table,
};

const fn f(name: &'static str, unit: Unit, kind: FieldKind, definition: &'static str) -> Field {
    Field { name, unit, kind, definition }
}

/// The values of one device.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(rename = "CopiesValues")]
pub struct Values {
    /// Memcpy and memset rows kept.
    pub copies: i64,
    /// Bytes the memcpy rows move (memsets apart).
    pub bytes: i64,
    /// Union of every copy and memset.
    pub busy_ns: i64,
    /// Union of the memcpy rows.
    pub memcpy_busy_ns: i64,
    /// `bytes / memcpy_busy_ns` (GB/s, decimal); absent over no memcpy time.
    pub bandwidth: Option<f64>,
    /// Host to device: bytes.
    pub htod_bytes: i64,
    /// Host to device: union of their intervals.
    pub htod_busy_ns: i64,
    /// Device to host: bytes.
    pub dtoh_bytes: i64,
    /// Device to host: union of their intervals.
    pub dtoh_busy_ns: i64,
    /// Device to device: bytes.
    pub dtod_bytes: i64,
    /// Device to device: union of their intervals.
    pub dtod_busy_ns: i64,
    /// Peer to peer: bytes.
    pub ptop_bytes: i64,
    /// Peer to peer: union of their intervals.
    pub ptop_busy_ns: i64,
    /// Unified memory, host to device: bytes.
    pub unified_htod_bytes: i64,
    /// Unified memory, host to device: union of their intervals.
    pub unified_htod_busy_ns: i64,
    /// Unified memory, device to host: bytes.
    pub unified_dtoh_bytes: i64,
    /// Unified memory, device to host: union of their intervals.
    pub unified_dtoh_busy_ns: i64,
    /// Memsets: bytes.
    pub memset_bytes: i64,
    /// Memsets: union of their intervals.
    pub memset_busy_ns: i64,
    /// |copies ∩ kernels|.
    pub copy_kernel_overlap_ns: i64,
    /// The span of the idle split; absent when it does not exist.
    pub span_ns: Option<i64>,
    /// Time with no kernel in the span.
    pub idle_ns: Option<i64>,
    /// Idle time with a copy in flight.
    pub idle_copy_ns: Option<i64>,
    /// Idle time with nothing at all.
    pub idle_none_ns: Option<i64>,
    /// Copies crossing a window edge.
    pub edge_copies: i64,
    /// Per kind present.
    pub kinds: Vec<KindStats>,
}

/// One device among several.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(rename = "CopiesRow")]
pub struct Row {
    /// The device.
    pub device: i64,
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
    fn new(d: &DeviceCopies) -> Values {
        let kind = |k: CopyKind| {
            d.kinds
                .iter()
                .find(|x| x.kind == k)
                .map_or((0, 0), |x| (x.stats.bytes, x.stats.busy_ns))
        };
        let [htod, dtoh, dtod, ptop, unified_htod, unified_dtoh, memset] = [
            CopyKind::HtoD,
            CopyKind::DtoH,
            CopyKind::DtoD,
            CopyKind::PtoP,
            CopyKind::UnifiedHtoD,
            CopyKind::UnifiedDtoH,
            CopyKind::Memset,
        ]
        .map(kind);
        Values {
            copies: d.total.count,
            bytes: d.memcpy.bytes,
            busy_ns: d.total.busy_ns,
            memcpy_busy_ns: d.memcpy.busy_ns,
            bandwidth: d.memcpy.bandwidth.map(|b| b.bytes as f64 / b.busy_ns as f64),
            htod_bytes: htod.0,
            htod_busy_ns: htod.1,
            dtoh_bytes: dtoh.0,
            dtoh_busy_ns: dtoh.1,
            dtod_bytes: dtod.0,
            dtod_busy_ns: dtod.1,
            ptop_bytes: ptop.0,
            ptop_busy_ns: ptop.1,
            unified_htod_bytes: unified_htod.0,
            unified_htod_busy_ns: unified_htod.1,
            unified_dtoh_bytes: unified_dtoh.0,
            unified_dtoh_busy_ns: unified_dtoh.1,
            memset_bytes: memset.0,
            memset_busy_ns: memset.1,
            copy_kernel_overlap_ns: d.copy_kernel_overlap_ns,
            span_ns: d.idle.map(|i| i.span_ns),
            idle_ns: d.idle.map(|i| i.idle_ns),
            idle_copy_ns: d.idle.map(|i| i.idle_copy_ns),
            idle_none_ns: d.idle.map(|i| i.idle_none_ns),
            edge_copies: d.edge_copies,
            kinds: d.kinds.clone(),
        }
    }
}

/// Runs the analysis: `values` for one device, `rows` (one per device) for several.
pub fn run(params: &Params, ctx: &Context) -> Result<Evidence, QueryError> {
    let devices = ctx.resolve_devices(&params.devices)?;
    ctx.check_window(params.window, &devices)?;
    let copies = ctx.copies.as_ref().ok_or_else(|| QueryError::Failed {
        reason: "the memcpy/memset tables were not read".into(),
        hint: "the planner reads the tables an analysis declares; this is a defect".into(),
    })?;
    let mut ev = ctx.evidence(&SPEC, params, devices.clone());
    let mut per = Vec::new();
    for &d in &devices {
        per.push(
            device_copies_from(
                copies,
                &ctx.kernels,
                d,
                params.window,
                params.semantics,
                params.counted_from,
            )
            .map_err(|e| QueryError::Failed { reason: e.to_string(), hint: e.hint() })?,
        );
    }
    if !copies.memcpy.present && !copies.memset.present {
        ev.note("note.no_copy_tables", &[]);
    }
    let edges: i64 = per.iter().map(|d| d.edge_copies).sum();
    if params.window.is_some() && edges > 0 {
        let key = match params.semantics {
            Semantics::Clip => "note.copy_edges_clipped",
            Semantics::Contain => "note.copy_edges_dropped",
        };
        ev.note(key, &[("n", edges.to_string())]);
    }
    for d in &per {
        if let Some(i) = d.idle
            && i.idle_ns > 0
            && i.idle_copy_ns * 10 >= i.idle_ns
        {
            ev.note(
                "note.idle_has_copies",
                &[
                    ("device", d.device.to_string()),
                    ("idle_copy_ms", crate::units::ms(i.idle_copy_ns)),
                    ("idle_ms", crate::units::ms(i.idle_ns)),
                    (
                        "share",
                        crate::units::percent(i.idle_copy_ns.into(), i.idle_ns.into())
                            .unwrap_or_default(),
                    ),
                ],
            );
        }
    }
    if let [d] = per.as_slice() {
        ev.window.effective_ns = d.idle.map(|i| i.span);
        ev.values = Some(super::values::Values::Copies(Values::new(d)));
        // A rate over no memcpy time does not exist.
        if d.memcpy.bandwidth.is_none() {
            ev.leave_null(
                &["bandwidth"],
                "note.no_memcpy",
                &[("device", d.device.to_string())],
                ("need.memcpy", &[]),
            );
        }
    } else {
        let spans: Vec<[i64; 2]> = per.iter().filter_map(|d| d.idle.map(|i| i.span)).collect();
        if let (Some(lo), Some(hi)) =
            (spans.iter().map(|s| s[0]).min(), spans.iter().map(|s| s[1]).max())
        {
            ev.window.effective_ns = Some([lo, hi]);
        }
        ev.rows = Some(super::values::Rows::Copies(
            per.iter()
                .map(|d| Row { device: d.device, label: None, values: Values::new(d) })
                .collect(),
        ));
    }
    Ok(ev)
}

/// The terminal table of `verdict query` (below the scope lines): one row per device and
/// kind, then the idle split.
pub fn table(ev: &Evidence, width: usize) -> String {
    use super::show::{dur, num, share};
    use super::values::{Rows, Values as Any};
    use crate::term::Column;
    let rows: Vec<(Option<i64>, &Values)> = match (&ev.values, &ev.rows) {
        (Some(Any::Copies(v)), _) => vec![(ev.scope.devices.first().copied(), v)],
        (None, Some(Rows::Copies(r))) => r.iter().map(|r| (Some(r.device), &r.values)).collect(),
        _ => vec![],
    };
    let gbps = |bytes: i64, busy: i64| match busy {
        t if t > 0 => format!("{:.2} GB/s", bytes as f64 / t as f64),
        _ => "n/a".into(),
    };
    let bytes = |b: i64| crate::units::thousands(b.into());
    let mut out = Vec::new();
    for (device, r) in &rows {
        let d = device.map_or("n/a".into(), |d| d.to_string());
        for k in &r.kinds {
            out.push(vec![
                d.clone(),
                k.label.clone(),
                num(k.stats.count),
                bytes(k.stats.bytes),
                dur(k.stats.busy_ns),
                gbps(k.stats.bytes, k.stats.busy_ns),
            ]);
        }
        let memcpy_rows: i64 =
            r.kinds.iter().filter(|k| k.kind != CopyKind::Memset).map(|k| k.stats.count).sum();
        out.push(vec![
            d.clone(),
            "all memcpy".into(),
            num(memcpy_rows),
            bytes(r.bytes),
            dur(r.memcpy_busy_ns),
            gbps(r.bytes, r.memcpy_busy_ns),
        ]);
        out.push(vec![
            d,
            "all copies and memsets".into(),
            num(r.copies),
            String::new(),
            dur(r.busy_ns),
            String::new(),
        ]);
    }
    let mut s = crate::term::render(
        &[
            Column::value("device"),
            Column::text("kind"),
            Column::number("count"),
            Column::number("bytes"),
            Column::number("busy"),
            Column::number("bandwidth"),
        ],
        &out,
        width,
    );
    s.push('\n');
    let idle: Vec<Vec<String>> = rows
        .iter()
        .map(|(device, r)| {
            vec![
                device.map_or("n/a".into(), |d| d.to_string()),
                dur(r.span_ns),
                dur(r.idle_ns),
                dur(r.idle_copy_ns),
                share(r.idle_copy_ns, r.idle_ns),
                dur(r.idle_none_ns),
                dur(r.copy_kernel_overlap_ns),
            ]
        })
        .collect();
    s += &crate::term::render(
        &[
            Column::value("device"),
            Column::number("span"),
            Column::number("idle"),
            Column::number("idle, copy"),
            Column::number("of idle"),
            Column::number("idle, none"),
            Column::number("copy ∩ kernel"),
        ],
        &idle,
        width,
    );
    s += &crate::term::hang(
        "",
        "idle = no kernel (as in overlap); idle, copy = a copy or memset in flight; idle, none = nothing at all",
        2,
        width,
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{Context, Params, overlap};
    use crate::scope::DeviceSel;

    fn kernels() -> Kernels {
        Kernels::from_rows(&[
            (0, 7, 100, 200, "gemm"),
            (0, 7, 300, 400, "gemm"),
            (0, 9, 350, 600, "ncclDevKernel_SendRecv"),
            (2, 7, 0, 10, "gemm"),
        ])
    }

    /// Device 0: copies of three kinds that overlap each other, one in the kernel gap, one
    /// memset under another copy. Device 1: copies and no kernel.
    fn copies() -> Copies {
        use CopyKind::*;
        Copies::from_rows(&[
            (0, 7, 50, 150, 100, HtoD),
            (0, 8, 120, 180, 60, DtoD),
            (0, 8, 220, 260, 40, DtoH),
            (0, 7, 500, 700, 300, HtoD),
            (0, 7, 650, 660, 8, Memset),
            (1, 3, 0, 1000, 1000, HtoD),
        ])
    }

    #[test]
    fn bandwidth_over_no_memcpy_is_null_with_the_reason() {
        use crate::analysis::{Context, Params};
        use crate::scope::DeviceSel;
        // Device 2 runs a kernel and no copy; device 0 copies 500 bytes (memset apart) in
        // the union [50, 180) + [220, 260) + [500, 700) = 130 + 40 + 200 = 370 ns.
        let ctx = Context::from_kernels(kernels()).with_copies(copies());
        let ev = run(&Params::new(DeviceSel::Set(vec![2])), &ctx).unwrap();
        let v = ev.values.as_ref().unwrap().to_map();
        assert_eq!((v["copies"].as_i64(), v["bytes"].as_i64()), (Some(0), Some(0)));
        assert!(v["bandwidth"].is_null());
        assert_eq!(ev.null_reasons("bandwidth")[0].finding.key, "note.no_memcpy");
        let ev = run(&Params::new(DeviceSel::Set(vec![0])), &ctx).unwrap();
        let v = ev.values.as_ref().unwrap().to_map();
        assert_eq!((v["bytes"].as_i64(), v["memcpy_busy_ns"].as_i64()), (Some(500), Some(370)));
        assert_eq!(v["memset_bytes"].as_i64(), Some(8));
        assert_eq!(v["bandwidth"].as_f64(), Some(500.0 / 370.0));
    }

    fn stats(d: &DeviceCopies) -> Vec<(String, i64, i64, i64)> {
        d.kinds
            .iter()
            .map(|k| (k.kind.to_string(), k.stats.count, k.stats.bytes, k.stats.busy_ns))
            .collect()
    }

    fn window(a: i64, b: i64) -> Option<Window> {
        Some(Window { start_ns: a, end_ns: b })
    }

    #[test]
    fn whole_trace_by_hand() {
        let d = device_copies(&copies(), &kernels(), 0, None, Semantics::Clip).unwrap();
        assert_eq!(
            stats(&d),
            [
                ("HtoD".into(), 2, 400, 300),
                ("DtoH".into(), 1, 40, 40),
                ("DtoD".into(), 1, 60, 60),
                ("memset".into(), 1, 8, 10)
            ]
        );
        assert_eq!(d.kinds[0].label, "Host-to-Device");
        // C = [50,180) ∪ [220,260) ∪ [500,700): the memset and the HtoD/DtoD overlap count
        // once, so the total busy is less than the sum over kinds (410).
        assert_eq!((d.total.count, d.total.bytes, d.total.busy_ns), (5, 508, 370));
        assert_eq!(d.total.bandwidth, Some(Bandwidth { bytes: 508, busy_ns: 370 }));
        assert_eq!(d.total.bandwidth.unwrap().as_rational(), Rational::new(254, 185).unwrap());
        // K = [100,200) ∪ [300,600); C ∩ K = [100,180) ∪ [500,600).
        assert_eq!(d.copy_kernel_overlap_ns, 180);
        assert_eq!(d.kernels, 3);
        assert_eq!((d.edge_copies, d.edge_bytes), (0, 0));
        let idle = d.idle.unwrap();
        // S = kernel span [100,600); idle = [200,300); a copy runs in [220,260) of it.
        assert_eq!(idle.span, [100, 600]);
        assert_eq!((idle.span_ns, idle.kernel_ns, idle.idle_ns), (500, 400, 100));
        assert_eq!((idle.idle_copy_ns, idle.idle_none_ns), (40, 60));
    }

    #[test]
    fn clip_cuts_rows_at_the_edges() {
        let w = window(150, 550);
        let d = device_copies(&copies(), &kernels(), 0, w, Semantics::Clip).unwrap();
        // HtoD [50,150) only touches the window; DtoD becomes [150,180), HtoD [500,550).
        assert_eq!(
            stats(&d),
            [("HtoD".into(), 1, 300, 50), ("DtoH".into(), 1, 40, 40), ("DtoD".into(), 1, 60, 30)]
        );
        assert_eq!((d.total.count, d.total.bytes, d.total.busy_ns), (3, 400, 120));
        assert_eq!((d.edge_copies, d.edge_bytes), (2, 360));
        assert_eq!(d.copy_kernel_overlap_ns, 80);
        let idle = d.idle.unwrap();
        assert_eq!(
            (idle.span, idle.span_ns, idle.kernel_ns, idle.idle_ns),
            ([150, 550], 400, 300, 100)
        );
        assert_eq!((idle.idle_copy_ns, idle.idle_none_ns), (40, 60));
    }

    #[test]
    fn contain_keeps_rows_inside_and_spans_the_kept_kernels() {
        let w = window(150, 550);
        let d = device_copies(&copies(), &kernels(), 0, w, Semantics::Contain).unwrap();
        assert_eq!(stats(&d), [("DtoH".into(), 1, 40, 40)]);
        assert_eq!(d.kernels, 1);
        assert_eq!((d.edge_copies, d.edge_bytes), (2, 360));
        let idle = d.idle.unwrap();
        // Only kernel [300,400) is inside; the DtoH copy lies outside that span.
        assert_eq!(
            (idle.span, idle.idle_ns, idle.idle_copy_ns, idle.idle_none_ns),
            ([300, 400], 0, 0, 0)
        );
        assert_eq!(d.copy_kernel_overlap_ns, 0);
    }

    #[test]
    fn the_idle_time_and_span_are_those_of_overlap() {
        let ctx = Context::from_kernels(kernels());
        for (w, sem) in [
            (None, Semantics::Clip),
            (window(150, 550), Semantics::Clip),
            (window(150, 550), Semantics::Contain),
            (window(120, 650), Semantics::Contain),
        ] {
            let mut p = Params::new(DeviceSel::Set(vec![0]));
            p.window = w;
            p.semantics = sem;
            let b = overlap::breakdown(&ctx, 0, &p);
            let idle = device_copies(&copies(), &kernels(), 0, w, sem).unwrap().idle.unwrap();
            assert_eq!((idle.span, idle.idle_ns, idle.span_ns), (b.effective, b.idle, b.total));
        }
    }

    #[test]
    fn empty_devices() {
        // No kernel and no copy: zeros, no bandwidth, no span without a window.
        let d = device_copies(&copies(), &kernels(), 5, None, Semantics::Clip).unwrap();
        assert!(d.kinds.is_empty());
        assert_eq!(d.total, CopyStats::default());
        assert_eq!(d.total.bandwidth, None);
        assert_eq!(d.idle, None);
        // A clip window has a span of its own: all of it is idle, none with a copy.
        let d = device_copies(&copies(), &kernels(), 5, window(0, 1000), Semantics::Clip).unwrap();
        let idle = d.idle.unwrap();
        assert_eq!((idle.idle_ns, idle.idle_copy_ns, idle.idle_none_ns), (1000, 0, 1000));
        // Copies without kernels: stats exist, the span does not.
        let d = device_copies(&copies(), &kernels(), 1, None, Semantics::Clip).unwrap();
        assert_eq!((d.total.count, d.total.busy_ns, d.idle), (1, 1000, None));
        // Kernels without copies: the whole idle time has no copy.
        let d = device_copies(&copies(), &kernels(), 2, None, Semantics::Clip).unwrap();
        assert_eq!(d.total, CopyStats::default());
        assert_eq!(d.idle.unwrap().idle_ns, 0);
        let all = all_devices(&copies(), &kernels(), None, Semantics::Clip).unwrap();
        assert_eq!(all.iter().map(|d| d.device).collect::<Vec<_>>(), [0, 1, 2]);
    }

    #[test]
    fn scans_that_miss_the_scope_are_refused() {
        let mut k = kernels();
        k.filter = KernelFilter { devices: Some(vec![2]), bounds: None, ..Default::default() };
        let err = device_copies(&copies(), &k, 0, None, Semantics::Clip).unwrap_err();
        assert!(matches!(err, CopiesError::NotLoaded { scan: "kernel", device: 0, .. }), "{err}");
        let mut c = copies();
        c.filter = KernelFilter { devices: None, bounds: Some((200, 500)), ..Default::default() };
        let err = device_copies(&c, &kernels(), 0, None, Semantics::Clip).unwrap_err();
        assert!(matches!(err, CopiesError::NotLoaded { scan: "copies", .. }), "{err}");
        assert!(device_copies(&c, &kernels(), 0, window(200, 500), Semantics::Clip).is_ok());
        assert!(device_copies(&c, &kernels(), 0, window(199, 500), Semantics::Clip).is_err());
    }

    #[test]
    fn sums_that_overflow_are_errors() {
        let c = Copies::from_rows(&[
            (0, 7, 0, 10, i64::MAX, CopyKind::HtoD),
            (0, 7, 20, 30, 1, CopyKind::DtoD),
        ]);
        let err = device_copies(&c, &kernels(), 0, None, Semantics::Clip).unwrap_err();
        assert_eq!(err, CopiesError::Overflow { device: 0, quantity: "bytes" });
        let c = Copies::from_rows(&[(0, 7, i64::MIN, i64::MAX, 1, CopyKind::HtoD)]);
        let err = device_copies(&c, &kernels(), 0, None, Semantics::Clip).unwrap_err();
        assert_eq!(err, CopiesError::Overflow { device: 0, quantity: "busy time" });
    }
}

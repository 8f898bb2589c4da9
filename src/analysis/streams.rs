//! `streams`: a device's busy wall time, stream by stream.
//!
//! For each stream of the device, the union of its kernels' intervals in the window; busy is
//! the union over every stream, idle the rest of the denominator. The streams' busy times add
//! up to more than the device's busy time by the time streams ran at once. Reads the kernel
//! scan only (start, end, deviceId, streamId).

use std::collections::BTreeMap;

use rayon::prelude::*;
use schemars::JsonSchema;
use serde::Serialize;

use super::intervals::{length, union};
use super::{
    AnalysisSpec, Context, Evidence, Field, FieldKind, Params, QueryError, ScopeRule, Table, Unit,
    select,
};
use crate::scope::Semantics;
use crate::term as table;

/// Registry entry.
pub const SPEC: AnalysisSpec = AnalysisSpec {
    name: "streams",
    summary: "busy wall time of a device per stream, its union over the streams, and its idle time (interval unions)",
    fields: &[
        Field {
            name: "busy_ns",
            unit: Unit::Ns,
            kind: FieldKind::Wall,
            definition: "wall time with a kernel on any stream of the device: the union of every kept kernel's interval",
        },
        Field {
            name: "idle_ns",
            unit: Unit::Ns,
            kind: FieldKind::Idle,
            definition: "wall time with no kernel on any stream: total - busy",
        },
        Field {
            name: "total_ns",
            unit: Unit::Ns,
            kind: FieldKind::Window,
            definition: "denominator: window length (clip), span of the kept kernels (contain), or the device's kernel span (no window)",
        },
        Field {
            name: "stream_busy_ns",
            unit: Unit::Ns,
            kind: FieldKind::KernelTime,
            definition: "the streams' busy times added: each stream's union, summed over the streams; more than busy by the time streams ran at once",
        },
        Field {
            name: "busiest_stream_ns",
            unit: Unit::Ns,
            kind: FieldKind::Wall,
            definition: "the busy time of the busiest stream (its union)",
        },
        Field {
            name: "streams",
            unit: Unit::Count,
            kind: FieldKind::Count,
            definition: "streams with a kernel kept",
        },
        Field {
            name: "kernels",
            unit: Unit::Count,
            kind: FieldKind::Count,
            definition: "kernels kept in the window, on every stream",
        },
    ],
    sums: &[(&["busy_ns", "idle_ns"], FieldKind::Window)],
    params: &[],
    scope: ScopeRule::PerDevice,
    needs: &[Table::Kernels],
    cross_rank: &[],
    ratios: &[],
    per_name: false,
    per_device: &[],
    rank_rows: None,
    across: &[],
    stats: &[],
    chart: None,
    terms: &["idle", "contain"],
    run,
    table,
};

/// One stream of a device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Stream {
    /// The stream, as the trace numbers it.
    pub stream: i64,
    /// Kernels kept on it.
    pub kernels: i64,
    /// The union of their intervals.
    pub busy_ns: i64,
}

/// The values of one device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(rename = "StreamsValues")]
pub struct Values {
    /// Union over every stream.
    pub busy_ns: i64,
    /// The denominator less busy.
    pub idle_ns: i64,
    /// The denominator.
    pub total_ns: i64,
    /// The streams' unions, added.
    pub stream_busy_ns: i64,
    /// The largest stream's union.
    pub busiest_stream_ns: i64,
    /// Streams with a kernel kept.
    pub streams: i64,
    /// Kernels kept.
    pub kernels: i64,
    /// Each stream, the busiest first (ties by stream).
    pub per_stream: Vec<Stream>,
}

/// The values of one device among several.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(rename = "StreamsRow")]
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

/// The values of one device, with the interval its total covers.
fn device(ctx: &Context, device: i64, params: &Params) -> Result<(Values, [i64; 2]), QueryError> {
    let k = &ctx.kernels;
    let kept = select(k, k.device_rows(device), params.window, params.semantics, true);
    let mut by_stream: BTreeMap<i64, (i64, Vec<(i64, i64)>)> = BTreeMap::new();
    for &(i, s, e) in &kept {
        let entry = by_stream.entry(k.stream[i]).or_default();
        // Wall time from every kernel in the window; counts only of those that belong to it
        // (in a split, a kernel that started in the window before is counted there).
        entry.0 += i64::from(params.counts(k.start[i]));
        entry.1.push((s, e));
    }
    let effective = match (params.window, params.semantics) {
        (Some(w), Semantics::Clip) => w.as_array(),
        _ => [
            kept.iter().map(|x| x.1).min().unwrap_or(0),
            kept.iter().map(|x| x.2).max().unwrap_or(0),
        ],
    };
    let total = effective[1] - effective[0];
    let busy = length(&union(kept.iter().map(|&(_, s, e)| (s, e)).collect()));
    let mut per_stream: Vec<Stream> = by_stream
        .into_iter()
        .map(|(stream, (kernels, spans))| Stream { stream, kernels, busy_ns: length(&union(spans)) })
        .collect();
    per_stream.sort_by(|a, b| b.busy_ns.cmp(&a.busy_ns).then(a.stream.cmp(&b.stream)));
    let stream_busy = super::checked_sum(
        per_stream.iter().map(|s| s.busy_ns),
        &format!("the streams' busy time on device {device}"),
    )?;
    Ok((
        Values {
            busy_ns: busy,
            idle_ns: total - busy,
            total_ns: total,
            stream_busy_ns: stream_busy,
            busiest_stream_ns: per_stream.first().map_or(0, |s| s.busy_ns),
            streams: per_stream.len() as i64,
            kernels: per_stream.iter().map(|s| s.kernels).sum(),
            per_stream,
        },
        effective,
    ))
}

/// Runs the analysis.
pub fn run(params: &Params, ctx: &Context) -> Result<Evidence, QueryError> {
    let devices = ctx.resolve_devices(&params.devices)?;
    ctx.check_window(params.window, &devices)?;
    let mut ev = ctx.evidence(&SPEC, params, devices.clone());
    let parts: Vec<(i64, Values, [i64; 2])> = devices
        .par_iter()
        .map(|&d| device(ctx, d, params).map(|(v, eff)| (d, v, eff)))
        .collect::<Result<_, _>>()?;
    if parts.iter().any(|p| p.1.kernels == 0) {
        ev.note("note.empty_device", &[]);
    }
    ev.note_span_denominators(params, parts.iter().map(|(d, v, _)| (*d, v.total_ns)));
    if let [(_, v, eff)] = parts.as_slice() {
        ev.window.effective_ns = Some(*eff);
        ev.values = Some(super::Values::Streams(v.clone()));
    } else {
        let lo = parts.iter().map(|p| p.2[0]).min();
        let hi = parts.iter().map(|p| p.2[1]).max();
        if let (Some(lo), Some(hi)) = (lo, hi) {
            ev.window.effective_ns = Some([lo, hi]);
        }
        ev.rows = Some(super::Rows::Streams(
            parts
                .into_iter()
                .map(|(device, values, effective_ns)| Row {
                    device,
                    effective_ns,
                    label: None,
                    values,
                })
                .collect(),
        ));
    }
    Ok(ev)
}

/// The terminal table of `verdict query` (below the scope lines): a line per device and
/// stream.
pub fn table(ev: &Evidence, width: usize) -> String {
    use super::show::*;
    use crate::term::Column;
    let devices: Vec<(i64, &Values)> = match (&ev.values, &ev.rows) {
        (Some(super::Values::Streams(v)), _) => {
            ev.scope.devices.first().map(|d| (*d, v)).into_iter().collect()
        }
        (None, Some(super::Rows::Streams(r))) => r.iter().map(|r| (r.device, &r.values)).collect(),
        _ => vec![],
    };
    let mut out = Vec::new();
    for (d, v) in &devices {
        out.push(vec![
            d.to_string(),
            "all".into(),
            num(v.kernels),
            dur(v.busy_ns),
            share(Some(v.busy_ns), Some(v.total_ns)),
            dur(v.idle_ns),
            dur(v.total_ns),
        ]);
        for s in &v.per_stream {
            out.push(vec![
                String::new(),
                s.stream.to_string(),
                num(s.kernels),
                dur(s.busy_ns),
                share(Some(s.busy_ns), Some(v.total_ns)),
                String::new(),
                String::new(),
            ]);
        }
    }
    table::render(
        &[
            Column::value("device"),
            Column::value("stream"),
            Column::number("kernels"),
            Column::number("busy"),
            Column::number("busy share"),
            Column::number("idle"),
            Column::number("total"),
        ],
        &out,
        width,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scope::{DeviceSel, Window};
    use crate::trace::Kernels;

    /// Device 1: stream 7 runs 100-200 and 300-350, stream 9 runs 150-400 (overlapping both);
    /// device 2: one kernel on stream 7, 1000-1100.
    fn ctx() -> Context {
        Context::from_kernels(Kernels::from_rows(&[
            (1, 7, 100, 200, "a"),
            (1, 7, 300, 350, "a"),
            (1, 9, 150, 400, "b"),
            (2, 7, 1000, 1100, "a"),
        ]))
    }

    #[test]
    fn one_device_by_hand() {
        let ev = run(&Params::new(DeviceSel::Set(vec![1])), &ctx()).unwrap();
        let Some(super::super::Values::Streams(v)) = ev.values else { panic!("values") };
        // Busy: 100-400 = 300; stream 7: 100 + 50; stream 9: 250; span 100-400.
        assert_eq!((v.busy_ns, v.idle_ns, v.total_ns), (300, 0, 300));
        assert_eq!((v.stream_busy_ns, v.busiest_stream_ns), (400, 250));
        assert_eq!((v.streams, v.kernels), (2, 3));
        assert_eq!(
            v.per_stream,
            vec![
                Stream { stream: 9, kernels: 1, busy_ns: 250 },
                Stream { stream: 7, kernels: 2, busy_ns: 150 },
            ]
        );
    }

    #[test]
    fn a_clipped_window_and_rows_per_device() {
        let mut p = Params::new(DeviceSel::All);
        // 0.00000012 s to 0.000001 s: 120 to 1000 ns.
        p.window = Some(Window::parse("0.00000012:0.000001").unwrap());
        let ev = run(&p, &ctx()).unwrap();
        let Some(super::super::Rows::Streams(rows)) = ev.rows else { panic!("rows") };
        let one = &rows[0].values;
        // Clipped to 120-1000: stream 7 120-200 and 300-350 (130), stream 9 150-400 (250);
        // busy 120-400 = 280 of 880.
        assert_eq!((one.busy_ns, one.idle_ns, one.total_ns), (280, 600, 880));
        assert_eq!(one.stream_busy_ns, 380);
        // Device 2's kernel starts at the window's end: nothing kept, an empty device.
        assert_eq!((rows[1].values.kernels, rows[1].values.busy_ns), (0, 0));
        assert!(ev.notes.iter().any(|n| n.finding.key == "note.empty_device"));
    }
}

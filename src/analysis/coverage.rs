//! `coverage`: what the trace holds against what the job should have.
//!
//! Devices, streams, processes and the kernel time range per device, GPUs listed without
//! kernels, and the expected devices that ran nothing. Reads the scan's inventory only.

use schemars::JsonSchema;
use serde::Serialize;

use super::{
    AnalysisSpec, Context, Evidence, Field, FieldKind, Params, QueryError, ScopeRule, Table, Unit,
};
use crate::term as table;
use crate::trace::{DeviceInventory, ListedGpu};

/// Registry entry.
pub const SPEC: AnalysisSpec = AnalysisSpec {
    name: "coverage",
    summary: "devices, streams and time range present in the trace against the devices expected",
    fields: &[
        Field {
            name: "devices_present",
            unit: Unit::Count,
            kind: FieldKind::Count,
            definition: "devices with at least one kernel",
        },
        Field {
            name: "devices_expected",
            unit: Unit::Count,
            kind: FieldKind::Count,
            definition: "devices the job should have (the expected set, else the GPUs the trace lists, else those present)",
        },
        Field {
            name: "devices_missing",
            unit: Unit::Count,
            kind: FieldKind::Count,
            definition: "expected devices without any kernel",
        },
        Field {
            name: "kernels",
            unit: Unit::Count,
            kind: FieldKind::Count,
            definition: "kernel rows over all devices",
        },
        Field {
            name: "streams",
            unit: Unit::Count,
            kind: FieldKind::Count,
            definition: "distinct (device, stream) pairs with kernels",
        },
        Field {
            name: "first_start_ns",
            unit: Unit::Ns,
            kind: FieldKind::Timestamp,
            definition: "first kernel start over all devices",
        },
        Field {
            name: "last_end_ns",
            unit: Unit::Ns,
            kind: FieldKind::Timestamp,
            definition: "last kernel end over all devices",
        },
        Field {
            name: "skipped_invalid",
            unit: Unit::Count,
            kind: FieldKind::Count,
            definition: "kernel rows left out because their timestamps were not collected (0/0) or ran backwards",
        },
    ],
    sums: &[],
    params: &[],
    scope: ScopeRule::WholeTrace,
    needs: &[Table::Kernels],
    cross_rank: &[],
    ratios: &[],
    per_name: false,
    per_device: &[],
    rank_rows: None,
    across: &[],
    stats: &[("streams", super::Stat::Distinct)],
    chart: None,
    terms: &[],
    run,
    table,
};

/// The values: who ran, who was expected, and the trace's extent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(rename = "CoverageValues")]
pub struct Values {
    /// Devices with at least one kernel.
    pub devices_present: i64,
    /// Devices the job has: declared, else listed in the GPU table, else those present.
    pub devices_expected: i64,
    /// Expected devices without a kernel.
    pub devices_missing: i64,
    /// The expected devices.
    pub expected_devices: Vec<i64>,
    /// Kernel rows read.
    pub kernels: i64,
    /// Streams with kernels, over the devices.
    pub streams: i64,
    /// The first kernel start; absent when the trace holds no kernel.
    pub first_start_ns: Option<i64>,
    /// The last kernel end; absent when the trace holds no kernel.
    pub last_end_ns: Option<i64>,
    /// The GPU table, when the export has one.
    pub listed_gpus: Option<Vec<ListedGpu>>,
    /// Listed GPUs without a kernel.
    pub listed_without_kernels: Vec<i64>,
    /// Processes, when the export lists them.
    pub processes: Option<i64>,
    /// NVTX events, when the export has the table.
    pub nvtx_events: Option<i64>,
    /// Kernel rows left out for invalid timestamps.
    pub skipped_invalid: u64,
}

/// One device: the inventory the trace scan took.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(rename = "CoverageRow")]
pub struct Row {
    /// Its inventory.
    #[serde(flatten)]
    pub inventory: DeviceInventory,
    /// Its rank's label, over a set of files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

impl super::EvidenceRow for Row {
    fn label_device(&mut self, label: &dyn Fn(i64) -> String) {
        self.label = Some(label(self.inventory.device));
    }
}

/// Runs the analysis (the whole trace; window and devices are disclosed, not applied).
pub fn run(params: &Params, ctx: &Context) -> Result<Evidence, QueryError> {
    let present = ctx.present_devices();
    let missing = ctx.missing_devices();
    let expected: Vec<i64> = match (&ctx.expected_devices, &ctx.inventory.listed_gpus) {
        (Some(e), _) => e.clone(),
        (None, Some(g)) if !g.is_empty() => g.iter().map(|g| g.id).collect(),
        _ => present.clone(),
    };
    let mut ev = ctx.evidence(&SPEC, params, present.clone());
    ev.window.effective_ns = ctx.inventory.kernel_range_ns;
    let inv = &ctx.inventory;
    let range = inv.kernel_range_ns;
    ev.values = Some(super::values::Values::Coverage(Values {
        devices_present: present.len() as i64,
        devices_expected: expected.len() as i64,
        devices_missing: missing.len() as i64,
        expected_devices: expected,
        kernels: inv.devices.iter().map(|d| d.kernels).sum(),
        streams: inv.devices.iter().map(|d| d.streams.len() as i64).sum(),
        first_start_ns: range.map(|r| r[0]),
        last_end_ns: range.map(|r| r[1]),
        listed_gpus: inv.listed_gpus.clone(),
        listed_without_kernels: inv.listed_without_kernels(),
        processes: inv.processes,
        nvtx_events: inv.nvtx_events,
        skipped_invalid: inv.skipped_invalid,
    }));
    if range.is_none() {
        ev.leave_null(
            &["first_start_ns", "last_end_ns"],
            "note.trace_no_kernels",
            &[],
            ("need.kernel_trace", &[]),
        );
    }
    ev.rows = Some(super::values::Rows::Coverage(
        inv.devices.iter().map(|d| Row { inventory: d.clone(), label: None }).collect(),
    ));
    if !missing.is_empty() {
        ev.note(
            "note.coverage_missing",
            &[
                ("missing", crate::scope::format_device_list(&missing)),
                ("present", crate::scope::format_device_list(&present)),
            ],
        );
    }
    match ctx.trace.set.as_deref() {
        // A set: each node's GPU table, less the GPUs other files of the node cover.
        Some(set) => {
            let idle: Vec<String> = set
                .files
                .iter()
                .flat_map(|f| {
                    let host = f.host.clone().unwrap_or_else(|| f.path.clone());
                    f.idle_listed.iter().map(move |d| format!("{host} GPU {d}"))
                })
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            if idle.is_empty() && set.is_pytorch_profiler() {
                ev.note("note.set_listed_covered_host", &[]);
            } else if idle.is_empty() {
                ev.note("note.set_listed_covered", &[("hosts", set.hosts().len().to_string())]);
            } else {
                ev.note("note.set_listed_idle", &[("gpus", idle.join(", "))]);
            }
        }
        None if inv.listed_gpus.is_none() => ev.note("note.no_gpu_table", &[]),
        None => {}
    }
    if inv.skipped_invalid > 0 {
        ev.note("note.skipped_invalid", &[("n", inv.skipped_invalid.to_string())]);
    }
    Ok(ev)
}
/// The terminal text of its values (`verdict inspect` prints its own tables).
pub fn table(ev: &Evidence, width: usize) -> String {
    #[allow(unused_imports)]
    use super::show::*;
    #[allow(unused_imports)]
    use crate::term::Column;
    let mut s = String::new();
    if let Some(super::values::Values::Coverage(v)) = &ev.values {
        let lines = [
            ("devices_present", v.devices_present.to_string()),
            ("devices_expected", v.devices_expected.to_string()),
            ("devices_missing", v.devices_missing.to_string()),
            ("kernels", v.kernels.to_string()),
            ("streams", v.streams.to_string()),
            ("first_start_ns", v.first_start_ns.map_or("n/a".into(), |n| n.to_string())),
            ("last_end_ns", v.last_end_ns.map_or("n/a".into(), |n| n.to_string())),
            ("skipped_invalid", v.skipped_invalid.to_string()),
        ];
        for (name, value) in lines {
            s += &table::hang(&format!("{name:<18}"), &value, 18, width);
        }
    }
    s
}

//! `coverage`: what the trace holds against what the job should have.
//!
//! Devices, streams, processes and the kernel time range per device, GPUs listed without
//! kernels, and the expected devices that ran nothing. Reads the scan's inventory only.

use serde_json::json;

use super::{
    AnalysisSpec, Context, Evidence, Field, FieldKind, Params, QueryError, ScopeRule, Table, Unit,
    obj, show,
};
use crate::term as table;

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
            definition: "devices the job should have (expected set, else GPUs listed in TARGET_INFO_GPU, else present)",
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
    rank_rows: None,
    across: &[],
    chart: None,
    terms: &[],
    run,
    table,
};

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
    let [first, last] = inv.kernel_range_ns.unwrap_or([0, 0]);
    ev.values = Some(obj([
        ("devices_present", json!(present.len())),
        ("devices_expected", json!(expected.len())),
        ("devices_missing", json!(missing.len())),
        ("expected_devices", json!(expected)),
        ("kernels", json!(inv.devices.iter().map(|d| d.kernels).sum::<i64>())),
        ("streams", json!(inv.devices.iter().map(|d| d.streams.len()).sum::<usize>())),
        ("first_start_ns", json!(first)),
        ("last_end_ns", json!(last)),
        ("listed_gpus", json!(inv.listed_gpus)),
        ("listed_without_kernels", json!(inv.listed_without_kernels())),
        ("processes", json!(inv.processes)),
        ("nvtx_events", json!(inv.nvtx_events)),
        ("skipped_invalid", json!(inv.skipped_invalid)),
    ]));
    ev.rows = Some(
        inv.devices
            .iter()
            .map(|d| {
                obj([
                    ("device", json!(d.device)),
                    ("kernels", json!(d.kernels)),
                    ("first_start_ns", json!(d.first_start_ns)),
                    ("last_end_ns", json!(d.last_end_ns)),
                    (
                        "streams",
                        json!(
                            d.streams
                                .iter()
                                .map(|(k, v)| (k.to_string(), *v))
                                .collect::<std::collections::BTreeMap<_, _>>()
                        ),
                    ),
                    ("pids", json!(d.pids)),
                ])
            })
            .collect(),
    );
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
            if idle.is_empty() {
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
    if let Some(v) = &ev.values {
        for f in SPEC.fields {
            s += &table::hang(&format!("{:<18}", f.name), &show::plain(v.get(f.name)), 18, width);
        }
    }
    s
}

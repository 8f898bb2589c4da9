//! What a trace holds, as `verdict inspect` and the MCP `inspect` tool report it: the traces
//! opened and scanned once without keeping kernel rows, the coverage evidence with the null
//! columns and repeated launch records disclosed, and for one trace its schema, its processes
//! with their NVTX ranges and its copies per device. The terminal layout is `cmd/inspect.rs`.

use serde_json::json;

use crate::analysis::{self, Params};
use crate::cli::InspectArgs;
use crate::plan::Expectation;
use crate::scope::DeviceSel;
use crate::trace::KernelFilter;

/// Opens the traces of `inspect` and scans them once, keeping no kernel rows: the inventory
/// is gathered in the same scan. The open trace is kept for its schema (None for a set).
pub fn load(
    args: &InspectArgs,
) -> anyhow::Result<(Option<crate::trace::Trace>, crate::analysis::Context)> {
    let expect = match (&args.expect_devices, args.expect_ranks) {
        (Some(d), _) => Expectation::Devices(d.0.clone()),
        (None, Some(n)) => Expectation::Ranks(n as usize),
        (None, None) => Expectation::Nothing,
    };
    let filter = KernelFilter { devices: Some(Vec::new()), ..KernelFilter::default() };
    crate::plan::load(&args.traces, args.set, &expect, &filter, &[analysis::Table::Copies])
}

/// The coverage evidence of one trace, with its columns that hold null rows disclosed.
pub fn coverage(
    trace: &crate::trace::Trace,
    ctx: &crate::analysis::Context,
) -> anyhow::Result<analysis::Evidence> {
    let mut ev = analysis::coverage::run(&Params::new(DeviceSel::All), ctx)?;
    for (table, column, n) in &trace.schema().null_rows {
        ev.note(
            "note.null_rows",
            &[("n", n.to_string()), ("table", table.clone()), ("column", column.clone())],
        );
    }
    // Runtime records that repeat a launch key: nested calls (the versioned call inside the
    // runtime call) and true duplicates, resolved as every analysis resolves them.
    let repeated = crate::trace::nvtx::Launches::repeated_keys(trace)?;
    if repeated.nested > 0 {
        ev.note(
            "note.inspect_nested_launches",
            &[("n", repeated.nested.to_string()), ("keys", repeated.len().to_string())],
        );
    }
    if repeated.duplicates > 0 {
        ev.note("note.nvtx_duplicate_launches", &[("n", repeated.duplicates.to_string())]);
    }
    Ok(ev)
}

/// What `inspect --json` prints: the coverage evidence, and for one trace its schema, NVTX
/// ranges per process and copies per device.
pub fn json(
    trace: Option<&crate::trace::Trace>,
    ctx: &crate::analysis::Context,
) -> anyhow::Result<serde_json::Value> {
    let Some(trace) = trace else {
        return Ok(serde_json::to_value(analysis::coverage::run(
            &Params::new(DeviceSel::All),
            ctx,
        )?)?);
    };
    let schema = trace.schema();
    let mut v = serde_json::to_value(coverage(trace, ctx)?)?;
    // An nsys export is described by its tables; a PyTorch profiler trace by what it says of
    // itself (its tables are the reader's, not the file's).
    match schema.source.kineto() {
        Some(k) => {
            v["schema"] = json!({ "time_base": schema.time_base });
            v["source"] = json!({ "format": "kineto", "kineto": k });
        }
        None => {
            v["schema"] = json!({
                "tables": schema.tables.len(),
                "table_names": schema.tables.keys().collect::<Vec<_>>(),
                "metadata_table": schema.metadata_table,
                "kernel_table": schema.kernel_table,
                "string_ids": schema.has_string_ids,
                "nvtx_text": schema.nvtx_text,
                "time_base": schema.time_base,
            })
        }
    }
    #[cfg(feature = "columnar")]
    if let Some(c) = trace.columnar() {
        v["columnar"] = json!(c);
    }
    v["nvtx"] = json!(nvtx_per_process(trace, ctx)?);
    if let Some(c) = &ctx.copies {
        v["copies"] = json!({
            "memcpy_table": c.memcpy.present,
            "memset_table": c.memset.present,
            "per_device": c.inventory,
        });
    }
    Ok(v)
}

/// One process of the trace: its host and rank as the source records them, the devices its
/// kernels ran on, and its NVTX (annotation) ranges.
#[derive(Debug, serde::Serialize)]
pub struct NvtxProcess {
    /// The process id as the source records it.
    pub pid: i64,
    /// Its host, where the source records one.
    pub host: Option<String>,
    /// Its rank, where the source records one for a process that launched kernels.
    pub rank: Option<i64>,
    /// The devices its kernels ran on.
    pub devices: Vec<i64>,
    /// Its NVTX (annotation) ranges.
    pub ranges: u64,
    /// The distinct names of those ranges.
    pub names: u64,
}

/// NVTX ranges per process of a trace.
#[derive(Debug, serde::Serialize)]
pub struct NvtxCounts {
    /// Whether the trace has no NVTX table at all.
    pub table_absent: bool,
    /// Every process that launched kernels or recorded ranges.
    pub processes: Vec<NvtxProcess>,
}

/// Lists every process that launched kernels or recorded NVTX ranges (push/pop and
/// start/end): its host and rank where the source records them (the file's host; a PyTorch
/// profiler trace's `distributedInfo.rank` for the process that launched its kernels), the
/// devices that ran its kernels, and its ranges.
pub fn nvtx_per_process(
    trace: &crate::trace::Trace,
    ctx: &crate::analysis::Context,
) -> anyhow::Result<NvtxCounts> {
    let ranges = crate::trace::nvtx::NvtxRanges::load(trace, None)?;
    let mut per: std::collections::BTreeMap<i64, (u64, std::collections::BTreeSet<u32>)> =
        std::collections::BTreeMap::new();
    for d in &ctx.inventory.devices {
        for &pid in &d.pids {
            per.entry(pid).or_default();
        }
    }
    for i in 0..ranges.len() {
        if let Some(pid) = ranges.pid(i) {
            let e = per.entry(pid).or_default();
            e.0 += 1;
            e.1.insert(ranges.name[i]);
        }
    }
    let host = trace.host_name()?;
    let rank = trace.schema().source.kineto().and_then(|k| k.rank);
    let processes = per
        .into_iter()
        .map(|(pid, (n, names))| {
            let devices: Vec<i64> = ctx
                .inventory
                .devices
                .iter()
                .filter(|d| d.pids.contains(&pid))
                .map(|d| d.device)
                .collect();
            NvtxProcess {
                pid,
                host: host.clone(),
                rank: rank.filter(|_| !devices.is_empty()),
                devices,
                ranges: n,
                names: names.len() as u64,
            }
        })
        .collect();
    Ok(NvtxCounts { table_absent: ranges.table_absent, processes })
}

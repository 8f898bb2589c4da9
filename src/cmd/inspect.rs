//! `verdict inspect`: the schema probe and the coverage analysis, for people or as JSON.

use std::process::ExitCode;

use super::print_json;
use super::table::{self, Column};
use crate::analysis::show::{notes, scope_lines};
use crate::analysis::{self, Params};
use crate::cli::InspectArgs;
use crate::scope::{DeviceSel, format_device_list, format_seconds};
use crate::units::thousands;

/// The source line of a PyTorch profiler trace: its format and version fields, its rank, and
/// what the reader kept of its events.
fn kineto_line(k: &crate::trace::kineto::KinetoInfo) -> String {
    let or = |v: &Option<String>| v.clone().unwrap_or_else(|| "unrecorded".into());
    let mut s = format!(
        "PyTorch profiler (Kineto) JSON{} · schemaVersion {} · rank {} of {}",
        if k.gzip { ", gzip" } else { "" },
        or(&k.schema_version),
        k.rank.map_or_else(|| "unrecorded".into(), |r| r.to_string()),
        k.world_size.map_or_else(|| "unrecorded".into(), |w| w.to_string()),
    );
    if let Some(l) = &k.layout {
        s += &format!(" · layout {l}, its categories read as their later names");
    }
    if let Some(b) = &k.backend {
        s += &format!(" · backend {b}");
    }
    if let Some(n) = &k.nccl_version {
        s += &format!(" · NCCL {n}");
    }
    let kept: Vec<String> =
        k.kept.iter().map(|(c, n)| format!("{c} {}", thousands((*n).into()))).collect();
    s += &format!(
        " · {} events, kept: {}",
        thousands(k.events.into()),
        if kept.is_empty() { "none".into() } else { kept.join(", ") }
    );
    if k.gpu_annotations > 0 {
        s += &format!(
            " · {} gpu_user_annotation read as the GPU projections of annotations, {} tied to a CPU annotation of the file",
            thousands(k.gpu_annotations.into()),
            thousands(k.gpu_annotations_tied.into())
        );
    }
    if k.unlaunched > 0 {
        s += &format!(
            " · {} GPU rows whose correlation matches no runtime call (no process)",
            thousands(k.unlaunched.into())
        );
    }
    s
}

/// The line of a trace read from a folder of Parquet tables: its layout and where it comes
/// from.
fn columnar_line(c: &crate::analysis::ColumnarRef, sha256: &str) -> String {
    match &c.extracted_from {
        Some(from) => format!(
            "an extract (`verdict extract`) of `{from}`, sha256 {} as the manifest records it; every Parquet file matches the manifest",
            sha256.get(..16).unwrap_or(sha256)
        ),
        None => format!(
            "an nsys `parquetdir` export; its digest (over its Parquet files' names and sha256) {}",
            sha256.get(..16).unwrap_or(sha256)
        ),
    }
}

/// Runs `inspect`.
pub(crate) fn run(args: InspectArgs) -> anyhow::Result<ExitCode> {
    let (trace, ctx) = crate::inspect::load(&args)?;
    if args.json {
        print_json(&crate::inspect::json(trace.as_ref(), &ctx)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    let Some(trace) = trace else { return run_set(&ctx) };
    let schema = trace.schema();
    let ev = crate::inspect::coverage(&trace, &ctx)?;
    let nvtx = crate::inspect::nvtx_per_process(&trace, &ctx)?;
    let width = table::width();
    let mut s = scope_lines(&ev, width);
    s += &source_lines(schema, &ev, width);
    s.push('\n');
    s += &devices_table(&ctx, ev.trace.capture_start_ns, width);
    if let Some(g) = &ctx.inventory.listed_gpus {
        let ids: Vec<i64> = g.iter().map(|g| g.id).collect();
        // Each source names its own list of the node's GPUs.
        let list = schema.source.gpu_list();
        let mut listed = format!("GPUs listed in {list}: {}", format_device_list(&ids));
        let without = ctx.inventory.listed_without_kernels();
        if !without.is_empty() {
            listed += &format!(" (without kernels: {})", format_device_list(&without));
        }
        s.push('\n');
        s += &table::hang("", &listed, 2, width);
    }
    if let Some(c) = &ctx.copies {
        s.push('\n');
        s += &copies_table(c, width);
    }
    s.push('\n');
    if nvtx.table_absent && schema.source.is_nsys() {
        s += &table::hang("", "NVTX: the export has no NVTX_EVENTS table", 2, width);
        s.push('\n');
    }
    if !nvtx.processes.is_empty() {
        s += &nvtx_table(&nvtx, schema, width);
    }
    s += &notes(&ev, width);
    super::emit(&s)?;
    Ok(ExitCode::SUCCESS)
}

/// The lines that say what a trace is and how its clock reads. Each format describes itself:
/// an nsys export by its tables, a PyTorch profiler trace by its layout and the events kept.
fn source_lines(
    schema: &crate::trace::Schema,
    ev: &crate::analysis::Evidence,
    width: usize,
) -> String {
    let mut s = match schema.source.kineto() {
        Some(k) => table::hang("source    ", &kineto_line(k), 10, width),
        None => table::hang(
            "schema    ",
            &format!(
                "{} tables · kernel table {} · metadata {} · StringIds {} · NVTX text {:?}",
                schema.tables.len(),
                schema.kernel_table.as_deref().unwrap_or("absent"),
                schema.metadata_table.as_deref().unwrap_or("absent"),
                if schema.has_string_ids { "present" } else { "absent" },
                schema.nvtx_text
            ),
            10,
            width,
        ),
    };
    if let Some(c) = &ev.trace.columnar {
        s += &table::hang("columnar  ", &columnar_line(c, &ev.trace.sha256), 10, width);
    }
    let mut clock = schema.time_base.describe();
    if let Some(o) = ev.trace.capture_start_ns {
        clock +=
            &format!("; capture start at {} s, the origin of the + columns", format_seconds(o));
    }
    s += &table::hang("clock     ", &clock, 10, width);
    s
}

/// The table of a trace's devices: kernels, first start and last end (also from the capture
/// start, when the trace has one), streams and processes.
fn devices_table(ctx: &crate::analysis::Context, origin: Option<i64>, width: usize) -> String {
    let rows: Vec<Vec<String>> = ctx
        .inventory
        .devices
        .iter()
        .map(|d| {
            let mut row = vec![
                d.device.to_string(),
                thousands(d.kernels.into()),
                format_seconds(d.first_start_ns),
                format_seconds(d.last_end_ns),
            ];
            if let Some(o) = origin {
                row.push(format!("+{}", format_seconds(d.first_start_ns - o)));
                row.push(format!("+{}", format_seconds(d.last_end_ns - o)));
            }
            row.push(
                d.streams.iter().map(|(k, v)| format!("{k}:{v}")).collect::<Vec<_>>().join(" "),
            );
            row.push(d.pids.iter().map(i64::to_string).collect::<Vec<_>>().join(","));
            row
        })
        .collect();
    let mut columns = vec![
        Column::value("device"),
        Column::number("kernels"),
        Column::value("first start s"),
        Column::value("last end s"),
    ];
    if origin.is_some() {
        columns.push(Column::value("+ first start s"));
        columns.push(Column::value("+ last end s"));
    }
    columns.push(Column::text("streams (id:kernels)"));
    columns.push(Column::text("pids"));
    table::render(&columns, &rows, width)
}

/// The table of a trace's copies per device and kind, or the line that says the export has
/// no copy table.
fn copies_table(c: &crate::trace::Copies, width: usize) -> String {
    if !c.memcpy.present && !c.memset.present {
        return table::hang("", "copies: the export has no memcpy or memset table", 2, width);
    }
    let rows: Vec<Vec<String>> = c
        .inventory
        .iter()
        .flat_map(|d| {
            d.kinds.iter().map(move |k| {
                vec![
                    d.device.to_string(),
                    k.label.clone(),
                    thousands(k.count.into()),
                    thousands(k.bytes.into()),
                ]
            })
        })
        .collect();
    table::render(
        &[
            Column::value("device"),
            Column::text("copies (memcpy kind or memset)"),
            Column::number("rows"),
            Column::number("bytes"),
        ],
        &rows,
        width,
    )
}

/// The table of the processes that have NVTX ranges: host, rank, devices, ranges and names.
fn nvtx_table(
    nvtx: &crate::inspect::NvtxCounts,
    schema: &crate::trace::Schema,
    width: usize,
) -> String {
    let unrecorded = |v: Option<String>| v.unwrap_or_else(|| "unrecorded".into());
    let rows: Vec<Vec<String>> = nvtx
        .processes
        .iter()
        .map(|p| {
            vec![
                p.pid.to_string(),
                unrecorded(p.host.clone()),
                unrecorded(p.rank.map(|r| r.to_string())),
                if p.devices.is_empty() { "none".into() } else { format_device_list(&p.devices) },
                thousands(p.ranges.into()),
                thousands(p.names.into()),
            ]
        })
        .collect();
    table::render(
        &[
            Column::value("pid"),
            Column::text("host"),
            Column::value("rank"),
            Column::text("devices (kernels)"),
            Column::number(schema.source.ranges()),
            Column::number("names"),
        ],
        &rows,
        width,
    )
}

/// `inspect` on a trace set: its files with their clock alignment, its ranks with their
/// labels on the set's clock, the GPUs a node lists that no file covers, and coverage.
fn run_set(ctx: &crate::analysis::Context) -> anyhow::Result<ExitCode> {
    let ev = analysis::coverage::run(&Params::new(DeviceSel::All), ctx)?;
    let set = ctx.trace.set.as_deref().ok_or_else(|| anyhow::anyhow!("not a trace set"))?;
    let width = table::width();
    let mut s = scope_lines(&ev, width);
    let clock = match set.origin_utc_ns {
        Some(o) => format!(
            "one clock for {} files: 0 s is the earliest {} ({} ns UTC epoch); cross-node differences below the nodes' clock sync are not meaningful",
            set.files.len(),
            if set.is_pytorch_profiler() { "first event" } else { "capture start" },
            thousands(o.into())
        ),
        None => "one file: its own clock".into(),
    };
    s += &table::hang("clock     ", &clock, 10, width);
    if let Some([a, b]) = ctx.inventory.kernel_range_ns {
        s += &table::hang(
            "range     ",
            &format!(
                "kernels from {} to {} s on the set's clock",
                format_seconds(a),
                format_seconds(b)
            ),
            10,
            width,
        );
    }
    s.push('\n');
    let files: Vec<Vec<String>> = set
        .files
        .iter()
        .enumerate()
        .map(|(i, f)| {
            vec![
                i.to_string(),
                f.host.clone().unwrap_or_else(|| "?".into()),
                format!("{:?}", f.alignment).to_lowercase(),
                format_seconds(f.shift_ns),
                f.path.clone(),
            ]
        })
        .collect();
    s += &table::render(
        &[
            Column::value("file"),
            Column::text("host"),
            Column::value("alignment"),
            Column::value("shift s"),
            Column::text("path"),
        ],
        &files,
        width,
    );
    s.push('\n');
    let rows: Vec<Vec<String>> = set
        .ranks
        .iter()
        .map(|r| {
            let d = ctx.inventory.devices.iter().find(|d| d.device == r.rank);
            vec![
                r.rank.to_string(),
                r.label.clone(),
                r.file.to_string(),
                r.device.to_string(),
                d.map_or("0".into(), |d| thousands(d.kernels.into())),
                d.map_or(String::new(), |d| format_seconds(d.first_start_ns)),
                d.map_or(String::new(), |d| format_seconds(d.last_end_ns)),
                d.map_or(String::new(), |d| {
                    d.streams.iter().map(|(k, v)| format!("{k}:{v}")).collect::<Vec<_>>().join(" ")
                }),
            ]
        })
        .collect();
    s += &table::render(
        &[
            Column::value("rank"),
            Column::text("label"),
            Column::value("file"),
            Column::value("device"),
            Column::number("kernels"),
            Column::value("first start s"),
            Column::value("last end s"),
            Column::text("streams (id:kernels)"),
        ],
        &rows,
        width,
    );
    s += &notes(&ev, width);
    super::emit(&s)?;
    Ok(ExitCode::SUCCESS)
}

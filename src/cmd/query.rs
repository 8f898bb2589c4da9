//! `verdict query ...` and `verdict analyses`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;

use super::print_json;
use super::table;
use crate::analysis::{self, ANALYSES, Context, Params, ScopeRule, show};
use crate::cli::QueryCommand;
use crate::scope::DeviceSel;
use crate::trace::{KernelFilter, Trace};

/// Runs one query.
pub fn run(q: QueryCommand) -> anyhow::Result<ExitCode> {
    let spec = q.analysis;
    let sel = match (&q.devices, spec.scope) {
        (Some(d), _) => d.clone(),
        (None, ScopeRule::PerDevice) => {
            return Err(crate::Hinted::new(
                format!("`query {}` needs a device scope", spec.name),
                "pass --device N for one device, --devices LIST or --all-devices for one row per device",
            )
            .into());
        }
        (None, _) => DeviceSel::All,
    };
    let mut params = Params::new(sel.clone());
    params.window = q.window;
    params.semantics = q.semantics;
    params.split = q.split;
    for (name, value) in &q.params {
        params.set(spec, name, value).map_err(|e| {
            let hint = e.hint().unwrap_or_default();
            crate::Hinted::new(e.to_string(), hint)
        })?;
    }
    let needs = analysis::needs([spec], q.nvtx.is_some());
    let ctx = load(
        &q.traces,
        q.window,
        Expect { devices: q.expect_devices.as_ref().map(|d| d.0.clone()), ranks: q.expect_ranks },
        &sel,
        &needs,
    )?;
    let name = trace_name(&q.traces);
    let ev = match &q.nvtx {
        None => analysis::run_split(spec, &params, &ctx),
        Some(w) => {
            let rws = ctx
                .resolve_devices(&sel)
                .and_then(|d| analysis::nvtx::resolve_windows(w, &ctx, &d))
                .map_err(|e| crate::Hinted::new(e.to_string(), e.hint().unwrap_or_default()))?;
            analysis::run_nvtx_windows(spec, &params, &ctx, w, &rws)
        }
    }
    .with_context(|| format!("cannot answer from trace `{name}`"))?;
    if q.json {
        print_json(&ev)?;
    } else {
        super::emit(&show::render(&ev, table::width()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// What the job should have, as the command line says.
pub(super) struct Expect {
    /// `--expect-devices` (one trace).
    pub devices: Option<Vec<i64>>,
    /// `--expect-ranks` (a trace set).
    pub ranks: Option<usize>,
}

/// Opens the trace (or the set) and scans it once with the query's filters pushed into the
/// scan.
pub(super) fn load(
    traces: &[PathBuf],
    window: Option<crate::scope::Window>,
    expect: Expect,
    devices: &DeviceSel,
    needs: &[analysis::Table],
) -> anyhow::Result<Context> {
    open_and_load(traces, window, expect, devices, needs).map(|(_, ctx)| ctx)
}

/// How the command's traces are named in a message.
pub(super) fn trace_name(traces: &[PathBuf]) -> String {
    match traces {
        [one] => one.display().to_string(),
        _ => format!("{} files", traces.len()),
    }
}

/// The files of the command's TRACE arguments: each a file, or a glob (quoted, so that the
/// shell left it) expanded in sorted order; and whether they make a set (several files, or a
/// glob).
pub(super) fn expand(traces: &[PathBuf]) -> anyhow::Result<(Vec<PathBuf>, bool)> {
    let mut out = Vec::new();
    let mut globbed = false;
    for t in traces {
        let text = t.to_string_lossy();
        if t.exists() || !text.contains(['*', '?', '[']) {
            out.push(t.clone());
            continue;
        }
        globbed = true;
        let matches = glob::glob(&text).map_err(|e| {
            crate::Hinted::new(
                format!("`{text}` is not a valid glob ({e})"),
                "quote a glob so that verdict expands it: 'runs/*.sqlite'",
            )
        })?;
        let mut found: Vec<PathBuf> =
            matches.filter_map(Result::ok).filter(|p| p.is_file()).collect();
        if found.is_empty() {
            return Err(crate::Hinted::new(
                format!("`{text}` matches no file"),
                "the glob is read relative to the current folder",
            )
            .into());
        }
        found.sort();
        out.extend(found);
    }
    out.sort();
    out.dedup();
    let set = globbed || out.len() > 1;
    Ok((out, set))
}

/// [`load`], keeping the open trace for its schema (None for a set).
pub(super) fn open_and_load(
    traces: &[PathBuf],
    window: Option<crate::scope::Window>,
    expect: Expect,
    devices: &DeviceSel,
    needs: &[analysis::Table],
) -> anyhow::Result<(Option<Trace>, Context)> {
    let (files, is_set) = expand(traces)?;
    let filter = KernelFilter {
        devices: match devices {
            DeviceSel::Set(v) => Some(v.clone()),
            DeviceSel::All => None,
        },
        bounds: window.map(|w| (w.start_ns, w.end_ns)),
    };
    if is_set {
        if expect.devices.is_some() {
            return Err(crate::Hinted::new(
                "--expect-devices on a trace set",
                "device numbers repeat across the files of a set; give --expect-ranks N",
            )
            .into());
        }
        let ctx = analysis::set::load_set(&files, &filter, expect.ranks, needs, &mut |_| {})
            .map_err(|e| {
                let hint = e.hint().unwrap_or_default();
                crate::Hinted::new(format!("cannot read trace set: {e}"), hint)
            })?;
        return Ok((None, ctx));
    }
    if expect.ranks.is_some() {
        return Err(crate::Hinted::new(
            "--expect-ranks on a single trace",
            "give every rank's file (or a quoted glob) to read a trace set, or --expect-devices for one file",
        )
        .into());
    }
    let path = &files[0];
    let trace =
        Trace::open(path).with_context(|| format!("cannot read trace `{}`", path.display()))?;
    let ctx = Context::load(&trace, &filter, expect.devices, needs, &mut |_| {})
        .with_context(|| format!("cannot read trace `{}`", path.display()))?;
    Ok((Some(trace), ctx))
}

/// `verdict analyses`.
pub fn list_analyses() -> anyhow::Result<ExitCode> {
    let width = table::width();
    let mut s = String::new();
    for a in ANALYSES {
        s += &table::hang(&format!("{}  ", a.name), a.summary, 2, width);
        if !a.params.is_empty() {
            let names: Vec<&str> = a.params.iter().map(|p| p.name).collect();
            let params = format!("window, semantics, devices, {}", names.join(", "));
            s += &table::hang("  parameters: ", &params, 14, width);
        }
        for f in a.fields {
            let first = format!("  {:<22} {:<6} {:<16} ", f.name, f.unit.as_str(), f.kind.key());
            s += &table::hang(&first, f.definition, 49, width);
        }
        s.push('\n');
    }
    super::emit(&s)?;
    Ok(ExitCode::SUCCESS)
}

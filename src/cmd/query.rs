//! `verdict query ...` and `verdict analyses`.

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
    for (name, value) in &q.params {
        params.set(spec, name, value).map_err(|e| {
            let hint = e.hint().unwrap_or_default();
            crate::Hinted::new(e.to_string(), hint)
        })?;
    }
    let needs = analysis::needs([spec], q.nvtx.is_some());
    let ctx =
        load(&q.trace, q.window, q.expect_devices.as_ref().map(|d| d.0.clone()), &sel, &needs)?;
    let ev = match &q.nvtx {
        None => analysis::run_spec(spec, &params, &ctx),
        Some(w) => {
            let rws = ctx
                .resolve_devices(&sel)
                .and_then(|d| analysis::nvtx::resolve_windows(w, &ctx, &d))
                .map_err(|e| crate::Hinted::new(e.to_string(), e.hint().unwrap_or_default()))?;
            analysis::run_nvtx_windows(spec, &params, &ctx, w, &rws)
        }
    }
    .with_context(|| format!("cannot answer from trace `{}`", q.trace.display()))?;
    if q.json {
        print_json(&ev)?;
    } else {
        super::emit(&show::render(&ev, table::width()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Opens the trace and scans it once with the query's filters pushed into the scan.
pub(super) fn load(
    path: &std::path::Path,
    window: Option<crate::scope::Window>,
    expect: Option<Vec<i64>>,
    devices: &DeviceSel,
    needs: &[analysis::Table],
) -> anyhow::Result<Context> {
    open_and_load(path, window, expect, devices, needs).map(|(_, ctx)| ctx)
}

/// [`load`], keeping the open trace for its schema.
pub(super) fn open_and_load(
    path: &std::path::Path,
    window: Option<crate::scope::Window>,
    expect: Option<Vec<i64>>,
    devices: &DeviceSel,
    needs: &[analysis::Table],
) -> anyhow::Result<(Trace, Context)> {
    let trace =
        Trace::open(path).with_context(|| format!("cannot read trace `{}`", path.display()))?;
    let filter = KernelFilter {
        devices: match devices {
            DeviceSel::Set(v) => Some(v.clone()),
            DeviceSel::All => None,
        },
        bounds: window.map(|w| (w.start_ns, w.end_ns)),
    };
    let ctx = Context::load(&trace, &filter, expect, needs, &mut |_| {})
        .with_context(|| format!("cannot read trace `{}`", path.display()))?;
    Ok((trace, ctx))
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

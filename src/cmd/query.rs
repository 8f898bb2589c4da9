//! `verdict query ...` and `verdict analyses`.

use std::path::{Path, PathBuf};
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
    if let Some(c) = &q.compare {
        return compare(c, q.json);
    }
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
        Rows::of(spec, q.window, q.nvtx.is_some() || q.split.is_some()),
        Expect {
            devices: q.expect_devices.as_ref().map(|d| d.0.clone()),
            ranks: q.expect_ranks,
            force_set: q.force_set,
        },
        &sel,
        &needs,
    )?;
    let name = trace_name(&q.traces);
    let ev = analysis::run_query(spec, &params, &ctx, q.nvtx.as_ref())
        .with_context(|| format!("cannot answer from trace `{name}`"))?;
    if q.json {
        print_json(&ev)?;
    } else {
        super::emit(&show::render(&ev, table::width()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `verdict query compare`: each side loaded and queried as `verdict query` would, then
/// compared.
fn compare(c: &crate::cli::CompareArgs, json: bool) -> anyhow::Result<ExitCode> {
    let hinted =
        |e: analysis::QueryError| crate::Hinted::new(e.to_string(), e.hint().unwrap_or_default());
    let of =
        analysis::spec(&c.of).filter(|s| analysis::is_comparable(s.name)).ok_or_else(|| {
            crate::Hinted::new(
                format!("`--of {}` is not an analysis a comparison can run", c.of),
                format!("one of: {}", analysis::comparable_names()),
            )
        })?;
    let metric = crate::formula::Expr::parse(&c.metric).map_err(|e| {
        crate::Hinted::new(
            format!("--metric `{}`: {}", c.metric, e.message),
            "a formula over the analysis's fields: total_ns, 'idle_ns / total_ns'",
        )
    })?;
    for v in metric.vars() {
        if of.field(&v).is_none() {
            return Err(crate::Hinted::new(
                format!("`{}` has no field `{v}`", of.name),
                "`verdict analyses` lists the fields",
            )
            .into());
        }
    }
    let mut evs: Vec<Vec<Vec<analysis::Evidence>>> = Vec::new();
    let mut devs: Vec<Vec<DeviceSel>> = Vec::new();
    let mut names = Vec::new();
    let mut labels = Vec::new();
    for (label, side) in [("A", &c.a), ("B", &c.b)] {
        let get = |k: &str| side.iter().rev().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        labels.push(get("label").unwrap_or_else(|| label.to_string()));
        let traces: Vec<PathBuf> =
            side.iter().filter(|(k, _)| k == "trace").map(|(_, v)| PathBuf::from(v)).collect();
        if traces.is_empty() {
            return Err(crate::Hinted::new(
                format!("side {label} names no trace"),
                format!("give --{} trace=PATH", label.to_lowercase()),
            )
            .into());
        }
        let bad = |k: &str, e: String| {
            crate::Hinted::new(
                format!("side {label}: `{k}`: {e}"),
                "see `verdict query compare --help`",
            )
        };
        let devices = match get("devices").as_deref() {
            None | Some("all") => DeviceSel::All,
            Some(d) => DeviceSel::Set(
                crate::scope::parse_device_list(d).map_err(|e| bad("devices", e.to_string()))?,
            ),
        };
        let window = get("window")
            .map(|w| crate::scope::Window::parse(&w).map_err(|e| bad("window", e.to_string())))
            .transpose()?;
        let mut params = Params::new(devices.clone());
        params.window = window;
        if let Some(sem) = get("semantics") {
            params.semantics = match sem.as_str() {
                "clip" => crate::scope::Semantics::Clip,
                "contain" => crate::scope::Semantics::Contain,
                _ => return Err(bad("semantics", "clip or contain".into()).into()),
            };
        }
        if let Some(n) = get("split") {
            params.split = Some(n.parse().map_err(|_| bad("split", "a number of windows".into()))?);
        }
        for (name, value) in &c.params {
            params.set(of, name, value).map_err(hinted)?;
        }
        let nvtx = match get("nvtx") {
            None => None,
            Some(name) => {
                let mut keys = vec![("nvtx".to_string(), name)];
                for k in ["index", "on", "project", "domain"] {
                    if let Some(v) = get(k) {
                        keys.push((k.to_string(), v));
                    }
                }
                Some(
                    analysis::nvtx::NvtxWindow::from_keys(&keys)
                        .map_err(|(m, h)| crate::Hinted::new(format!("side {label}: {m}"), h))?,
                )
            }
        };
        let needs = analysis::needs([of], nvtx.is_some());
        let expect = Expect {
            devices: get("expect-devices")
                .map(|d| {
                    crate::scope::parse_device_list(&d)
                        .map_err(|e| bad("expect-devices", e.to_string()))
                })
                .transpose()?,
            ranks: get("expect-ranks")
                .map(|n| {
                    n.parse::<usize>().map_err(|_| bad("expect-ranks", "a number of ranks".into()))
                })
                .transpose()?,
            force_set: get("set").is_some_and(|v| v == "true"),
        };
        let windows_later = nvtx.is_some() || params.split.is_some();
        // `runs=true`: each trace is one run, a sample of its own; else the traces are one
        // job. A per-device analysis over several devices: one comparison per device.
        let groups: Vec<Vec<PathBuf>> = if get("runs").is_some_and(|v| v == "true") {
            traces.iter().map(|t| vec![t.clone()]).collect()
        } else {
            vec![traces.clone()]
        };
        let per_device: Vec<DeviceSel> = match &devices {
            DeviceSel::Set(d) if d.len() > 1 && of.scope == analysis::ScopeRule::PerDevice => {
                d.iter().map(|&x| DeviceSel::Set(vec![x])).collect()
            }
            _ => vec![devices.clone()],
        };
        let mut side_evs: Vec<Vec<analysis::Evidence>> = vec![Vec::new(); per_device.len()];
        for (g, group) in groups.iter().enumerate() {
            let expect = Expect {
                devices: expect.devices.clone(),
                ranks: expect.ranks,
                force_set: expect.force_set,
            };
            let ctx = load(group, Rows::of(of, window, windows_later), expect, &devices, &needs)?;
            for (d, sel) in per_device.iter().enumerate() {
                let mut p = params.clone();
                p.devices = sel.clone();
                let ev = analysis::run_query(of, &p, &ctx, nvtx.as_ref()).map_err(hinted)?;
                if g == 0 && d == 0 && analysis::compare::has_names(of.name) {
                    let whole = analysis::compare::names_params(&p, &ev);
                    names.push(analysis::run_spec(of, &whole, &ctx).map_err(hinted)?);
                }
                side_evs[d].push(ev);
            }
        }
        devs.push(per_device);
        evs.push(side_evs);
    }
    let req = analysis::compare::Request {
        of,
        metric_text: &c.metric,
        metric: &metric,
        labels: [&labels[0], &labels[1]],
        seed: c.seed,
        names: match names.as_slice() {
            [a, b] => Some([a, b]),
            _ => None,
        },
    };
    let compared = |d: usize| -> Result<analysis::Evidence, crate::Hinted> {
        let a: Vec<&analysis::Evidence> = evs[0][d].iter().collect();
        let b: Vec<&analysis::Evidence> = evs[1][d].iter().collect();
        analysis::compare::run_sides(&a, &b, &req).map_err(hinted)
    };
    let ev = if devs[0].len() > 1 && devs[0].len() == devs[1].len() {
        let mut per = Vec::new();
        for (d, sel) in devs[0].iter().enumerate() {
            let DeviceSel::Set(one) = sel else { continue };
            per.push((one[0], compared(d)?));
        }
        analysis::compare::with_devices(per[0].1.clone(), per)
    } else {
        compared(0)?
    };
    if json {
        print_json(&ev)?;
    } else {
        super::emit(&show::render(&ev, table::width()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// What the job should have, as the command line says, and whether its traces are a set.
pub(super) struct Expect {
    /// `--expect-devices` (one trace).
    pub devices: Option<Vec<i64>>,
    /// `--expect-ranks` (a trace set).
    pub ranks: Option<usize>,
    /// `--set`: a set even of one file.
    pub force_set: bool,
}

/// The rows a query reads: a window (None: the whole trace), or NCCL kernels alone.
#[derive(Debug, Clone, Copy)]
pub(super) enum Rows {
    /// The selected devices in a window, or over the whole trace, and (`true`) every NCCL
    /// kernel besides, for the cross-rank matching of collectives.
    Window(Option<crate::scope::Window>, bool),
    /// Every NCCL kernel of the whole trace, and no other: the cross-rank matching of
    /// `nccl-skew` without a window reads nothing else.
    Nccl,
}

impl Rows {
    /// The rows `spec` reads over `window`, or over windows known only once the trace is
    /// read (`windows_later`: NVTX windows, or a split of the span).
    pub(super) fn of(
        spec: &analysis::AnalysisSpec,
        window: Option<crate::scope::Window>,
        windows_later: bool,
    ) -> Rows {
        if spec.reads_only_nccl(window.is_none() && !windows_later) {
            Rows::Nccl
        } else {
            Rows::Window(window, spec.needs_nccl_anywhere())
        }
    }
}

/// Opens the trace (or the set) and scans it once with the query's filters pushed into the
/// scan.
pub(super) fn load(
    traces: &[PathBuf],
    rows: Rows,
    expect: Expect,
    devices: &DeviceSel,
    needs: &[analysis::Table],
) -> anyhow::Result<Context> {
    open_and_load(traces, rows, expect, devices, needs).map(|(_, ctx)| ctx)
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
        // A file that exists is that file, whatever its name holds (a `?`, bytes that are
        // not UTF-8, which the glob's text would not match).
        if t.exists() || !crate::claims::validate::is_set_path(Path::new(""), &text) {
            out.push(t.clone());
            continue;
        }
        globbed = true;
        let found = crate::claims::validate::glob_files(Path::new(""), &text).map_err(|e| {
            crate::Hinted::new(
                e,
                "quote a glob so that verdict expands it ('runs/*.sqlite'); it is read relative to the current folder",
            )
        })?;
        out.extend(found);
    }
    out.sort();
    if let Some(w) = out.windows(2).find(|w| w[0] == w[1]) {
        return Err(crate::Hinted::new(
            format!("`{}` is named twice", w[0].display()),
            "a trace set holds each file once: drop the repeated argument or the file the glob already matches",
        )
        .into());
    }
    let set = globbed || out.len() > 1;
    Ok((out, set))
}

/// [`load`], keeping the open trace for its schema (None for a set).
pub(super) fn open_and_load(
    traces: &[PathBuf],
    rows: Rows,
    expect: Expect,
    devices: &DeviceSel,
    needs: &[analysis::Table],
) -> anyhow::Result<(Option<Trace>, Context)> {
    let (files, is_set) = expand(traces)?;
    let is_set = is_set || expect.force_set;
    let filter = match rows {
        Rows::Window(window, nccl_anywhere) => KernelFilter {
            devices: match devices {
                DeviceSel::Set(v) => Some(v.clone()),
                DeviceSel::All => None,
            },
            bounds: window.map(|w| (w.start_ns, w.end_ns)),
            nccl_anywhere,
            ..KernelFilter::default()
        },
        Rows::Nccl => {
            KernelFilter { devices: Some(Vec::new()), nccl_anywhere: true, ..Default::default() }
        }
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
    for a in ANALYSES.iter().chain(analysis::DERIVED) {
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

//! One query, however it was asked for.
//!
//! `verdict query` builds a [`QueryPlan`] from its command line, an audit from a claim's
//! measure and its trace declaration. Both read the trace through [`QueryPlan::load`] (the rows
//! the analysis needs pushed into the one scan) and run it through [`QueryPlan::run`]; the
//! command a report prints to reproduce a number is the plan printed back
//! ([`QueryPlan::command_words`]), and parsing that command gives the plan again, so a
//! reproducing command cannot leave out an option that changes the evidence.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use clap::Parser as _;

use crate::analysis::nvtx::{NvtxWindow, Timeline};
use crate::analysis::{self, AnalysisSpec, Context, Evidence, Params, QueryError, ScopeRule};
use crate::claims::TraceDecl;
use crate::cli::QueryCommand;
use crate::scope::{DeviceSel, Window, format_device_list};
use crate::trace::{KernelFilter, Trace};

/// What the job should have, as the query states it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Expectation {
    /// Nothing: the trace's own GPU table, or the devices present, decide.
    #[default]
    Nothing,
    /// These devices (one trace).
    Devices(Vec<i64>),
    /// This many ranks (a trace set).
    Ranks(usize),
}

/// One query: the analysis, the traces it reads, what the job should have, its parameters
/// (devices, window, semantics, split and the analysis's own) and the NVTX ranges its windows
/// come from.
#[derive(Debug, Clone)]
pub struct QueryPlan {
    /// The analysis.
    pub spec: &'static AnalysisSpec,
    /// The files, as named: one trace, or the files (or globs) of a set.
    pub traces: Vec<PathBuf>,
    /// Read the traces as a set even when they are one file.
    pub force_set: bool,
    /// What the job should have.
    pub expect: Expectation,
    /// The parameters.
    pub params: Params,
    /// Windows from NVTX ranges, when the query names them.
    pub nvtx: Option<NvtxWindow>,
}

/// The rows a query reads: a window (None: the whole trace), or NCCL kernels alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rows {
    /// The selected devices in a window, or over the whole trace, and (`true`) every NCCL
    /// kernel besides, for the cross-rank matching of collectives.
    Window(Option<Window>, bool),
    /// Every NCCL kernel of the whole trace, and no other: the cross-rank matching of
    /// `nccl-skew` without a window reads nothing else.
    Nccl,
}

impl QueryPlan {
    /// The plan of `verdict query ANALYSIS ...`.
    pub fn from_command(q: &QueryCommand) -> Result<QueryPlan, crate::Hinted> {
        let spec = q.analysis;
        let devices = match (&q.devices, spec.scope) {
            (Some(d), _) => d.clone(),
            (None, ScopeRule::PerDevice) => {
                return Err(crate::Hinted::new(
                    format!("`query {}` needs a device scope", spec.name),
                    "pass --device N for one device, --devices LIST or --all-devices for one row per device",
                ));
            }
            (None, _) => DeviceSel::All,
        };
        let mut params = Params::new(devices);
        params.window = q.window;
        params.semantics = q.semantics;
        params.split = q.split;
        for (name, value) in &q.params {
            params.set(spec, name, value).map_err(|e| {
                let hint = e.hint().unwrap_or_default();
                crate::Hinted::new(e.to_string(), hint)
            })?;
        }
        let expect = match (&q.expect_devices, q.expect_ranks) {
            (Some(d), _) => Expectation::Devices(d.0.clone()),
            (None, Some(n)) => Expectation::Ranks(n),
            (None, None) => Expectation::Nothing,
        };
        Ok(QueryPlan {
            spec,
            traces: q.traces.clone(),
            force_set: q.force_set,
            expect,
            params,
            nvtx: q.nvtx.clone(),
        })
    }

    /// The plan of one side of `verdict query compare`: its `KEY=VALUE` pairs are read as the
    /// options of `verdict query OF` (`devices=0` is `--devices 0`, `nvtx=NAME` is
    /// `--nvtx-window NAME`...), by the same parser, with the comparison's `--param`s for
    /// every side. The side's own keys (`label`, `runs`) are the caller's.
    pub fn from_side(
        of: &'static AnalysisSpec,
        side: &[(String, String)],
        params: &[(String, String)],
    ) -> Result<QueryPlan, String> {
        let flag = |k: &str| -> Option<&'static str> {
            Some(match k {
                "devices" => "--devices",
                "window" => "--window",
                "semantics" => "--semantics",
                "split" => "--split",
                "nvtx" => "--nvtx-window",
                "index" => "--nvtx-index",
                "on" | "project" => "--nvtx-on",
                "domain" => "--nvtx-domain",
                "expect-devices" => "--expect-devices",
                "expect-ranks" => "--expect-ranks",
                _ => return None,
            })
        };
        let mut argv: Vec<String> = vec!["verdict".into(), "query".into(), of.name.into()];
        argv.extend(side.iter().filter(|(k, _)| k == "trace").map(|(_, v)| v.clone()));
        let mut devices = false;
        for (k, v) in side {
            match (k.as_str(), flag(k)) {
                ("devices", _) if v == "all" => argv.push("--all-devices".into()),
                ("set", _) if v == "true" => argv.push("--set".into()),
                (_, Some(f)) => argv.extend([f.to_string(), v.clone()]),
                _ => continue,
            }
            devices |= k == "devices";
        }
        // Without devices a side covers every device, also for a per-device analysis, whose
        // comparison then runs one per device.
        if !devices && of.scope == ScopeRule::PerDevice {
            argv.push("--all-devices".into());
        }
        for (k, v) in params {
            argv.extend([format!("--{k}"), v.clone()]);
        }
        let q = match crate::cli::Cli::try_parse_from(&argv) {
            Ok(crate::cli::Cli { command: crate::cli::Command::Query(q), .. }) => q,
            Ok(_) => return Err(format!("`{}` is not a query", argv.join(" "))),
            // The parser's own message names the option (the side's key with dashes).
            Err(e) => {
                let text = e.to_string();
                let first = text.lines().next().unwrap_or_default();
                return Err(first.trim_start_matches("error: ").to_string());
            }
        };
        QueryPlan::from_command(&q).map_err(|e| format!("{e}: {}", e.hint))
    }

    /// The plan of a claim's query of the declared trace `decl`, with the parameters `params`
    /// its measure and scope give; `nvtx` names the ranges its windows come from (then the
    /// window they resolved to is not stated again).
    pub fn of_claim(
        spec: &'static AnalysisSpec,
        decl: &TraceDecl,
        params: &Params,
        nvtx: Option<&NvtxWindow>,
    ) -> QueryPlan {
        let (traces, force_set, expect) = match &decl.set {
            None => (
                vec![crate::trace::open::normalize(&decl.resolved)],
                false,
                decl.expect_devices.clone().map_or(Expectation::Nothing, Expectation::Devices),
            ),
            // A set of one file is read as a set (its devices numbered as ranks) only when
            // told so. The set is named as the claims file names it (a glob stays one glob,
            // which the command expands), so a command for a thousand ranks is one line.
            Some(files) => (
                match &decl.patterns {
                    Some(p) => p.iter().map(|f| crate::trace::open::normalize(f)).collect(),
                    None => files.iter().map(|f| crate::trace::open::normalize(f)).collect(),
                },
                files.len() == 1,
                decl.expect_ranks.map_or(Expectation::Nothing, Expectation::Ranks),
            ),
        };
        QueryPlan {
            spec,
            traces,
            force_set,
            expect,
            params: Params {
                window: if nvtx.is_some() { None } else { params.window },
                ..params.clone()
            },
            nvtx: nvtx.cloned(),
        }
    }

    /// The rows the query reads.
    pub fn rows(&self) -> Rows {
        let windows_later = self.nvtx.is_some() || self.params.split.is_some();
        Rows::of(self.spec, self.params.window, windows_later)
    }

    /// The tables the query reads.
    pub fn needs(&self) -> Vec<analysis::Table> {
        analysis::needs([self.spec], self.nvtx.is_some())
    }

    /// The scan that serves the query: its devices and window (or NCCL kernels alone) pushed
    /// into the reading of the kernel table.
    pub fn scan_filter(&self) -> KernelFilter {
        match self.rows() {
            Rows::Window(window, nccl_anywhere) => KernelFilter {
                devices: match &self.params.devices {
                    DeviceSel::Set(v) => Some(v.clone()),
                    DeviceSel::All => None,
                },
                bounds: window.map(|w| (w.start_ns, w.end_ns)),
                nccl_anywhere,
                ..KernelFilter::default()
            },
            Rows::Nccl => KernelFilter {
                devices: Some(Vec::new()),
                nccl_anywhere: true,
                ..Default::default()
            },
        }
    }

    /// Opens the trace (or the set) and scans it once with the plan's filter, keeping the open
    /// trace for its schema (None for a set).
    pub fn load(&self) -> anyhow::Result<(Option<Trace>, Context)> {
        load(&self.traces, self.force_set, &self.expect, &self.scan_filter(), &self.needs())
    }

    /// Runs the query over a context the plan loaded (or a wider one).
    pub fn run(&self, ctx: &Context) -> Result<Evidence, QueryError> {
        analysis::run_query(self.spec, &self.params, ctx, self.nvtx.as_ref())
    }

    /// The command that runs this plan, as the words the program receives: `verdict query`
    /// with every option that changes the evidence (`verdict inspect` for whole-trace
    /// analyses; a set of NVTX windows named by its ranges; a set by its files, in order).
    pub fn command_words(&self) -> Vec<String> {
        let mut c: Vec<String> = Vec::new();
        let add = |c: &mut Vec<String>, words: &[&str]| {
            c.extend(words.iter().map(|w| w.to_string()));
        };
        let traces = self.traces.iter().map(|t| t.display().to_string());
        // The expected devices or ranks decide `missing_devices` and its notes: a command that
        // left them out would give other evidence than the one it reproduces.
        let expect: Vec<String> = match &self.expect {
            Expectation::Nothing => Vec::new(),
            Expectation::Devices(d) => vec!["--expect-devices".into(), format_device_list(d)],
            Expectation::Ranks(n) => vec!["--expect-ranks".into(), n.to_string()],
        };
        let set: &[&str] = if self.force_set { &["--set"] } else { &[] };
        if !self.spec.is_query() {
            add(&mut c, &["verdict", "inspect"]);
            c.extend(traces);
            add(&mut c, set);
            c.extend(expect);
            c.push("--json".into());
            return c;
        }
        let p = &self.params;
        add(&mut c, &["verdict", "query", self.spec.name]);
        c.extend(traces);
        add(&mut c, set);
        c.extend(expect);
        c.extend(self.spec.device_words(&p.devices));
        match (p.window, &self.nvtx) {
            (Some(w), _) => {
                add(&mut c, &["--window", &w.to_string(), "--semantics", &p.semantics.to_string()])
            }
            // A set of windows from NVTX ranges, named as the ranges.
            (None, Some(n)) => {
                add(&mut c, &["--nvtx-window", &n.name]);
                if let Some(i) = n.index {
                    add(&mut c, &["--nvtx-index", &i.to_string()]);
                }
                if n.on == Timeline::Gpu {
                    add(&mut c, &["--nvtx-on", "gpu"]);
                }
                if let Some(d) = &n.domain {
                    add(&mut c, &["--nvtx-domain", d]);
                }
                add(&mut c, &["--semantics", &p.semantics.to_string()]);
            }
            (None, None) => {}
        }
        if let Some(n) = p.split {
            add(&mut c, &["--split", &n.to_string()]);
        }
        for param in self.spec.params {
            if let Some(v) = (param.get)(p) {
                add(&mut c, &[&format!("--{}", param.name), &v]);
            }
        }
        add(&mut c, &["--json"]);
        c
    }
}

impl Rows {
    /// The rows `spec` reads over `window`, or over windows known only once the trace is
    /// read (`windows_later`: NVTX windows, or a split of the span).
    pub fn of(spec: &AnalysisSpec, window: Option<Window>, windows_later: bool) -> Rows {
        if spec.reads_only_nccl(window.is_none() && !windows_later) {
            Rows::Nccl
        } else {
            Rows::Window(window, spec.needs_nccl_anywhere())
        }
    }
}

/// How the command's traces are named in a message.
pub fn trace_name(traces: &[PathBuf]) -> String {
    match traces {
        [one] => one.display().to_string(),
        _ => format!("{} files", traces.len()),
    }
}

/// The files of the command's TRACE arguments: each a file, or a glob (quoted, so that the
/// shell left it) expanded in sorted order; and whether they make a set (several files, or a
/// glob).
pub fn expand(traces: &[PathBuf]) -> anyhow::Result<(Vec<PathBuf>, bool)> {
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

/// Opens the traces (one file, or a set) and scans them once with `filter`, keeping the open
/// trace for its schema (None for a set).
pub fn load(
    traces: &[PathBuf],
    force_set: bool,
    expect: &Expectation,
    filter: &KernelFilter,
    needs: &[analysis::Table],
) -> anyhow::Result<(Option<Trace>, Context)> {
    let (files, is_set) = expand(traces)?;
    if is_set || force_set {
        let ranks = match expect {
            Expectation::Devices(_) => {
                return Err(crate::Hinted::new(
                    "--expect-devices on a trace set",
                    "device numbers repeat across the files of a set; give --expect-ranks N",
                )
                .into());
            }
            Expectation::Ranks(n) => Some(*n),
            Expectation::Nothing => None,
        };
        let ctx =
            analysis::set::load_set(&files, filter, ranks, needs, &mut |_| {}).map_err(|e| {
                let hint = e.hint().unwrap_or_default();
                crate::Hinted::new(format!("cannot read trace set: {e}"), hint)
            })?;
        return Ok((None, ctx));
    }
    let devices = match expect {
        Expectation::Ranks(_) => {
            return Err(crate::Hinted::new(
                "--expect-ranks on a single trace",
                "give every rank's file (or a quoted glob) to read a trace set, or --expect-devices for one file",
            )
            .into());
        }
        Expectation::Devices(d) => Some(d.clone()),
        Expectation::Nothing => None,
    };
    let path = &files[0];
    let trace =
        Trace::open(path).with_context(|| format!("cannot read trace `{}`", path.display()))?;
    let ctx = Context::load(&trace, filter, devices, needs, &mut |_| {})
        .with_context(|| format!("cannot read trace `{}`", path.display()))?;
    Ok((Some(trace), ctx))
}

/// The evidence of one query: its plan loaded and run, or a comparison's two sides.
pub fn evidence(q: &QueryCommand) -> anyhow::Result<analysis::Evidence> {
    if let Some(c) = &q.compare {
        return compare_evidence(c);
    }
    let plan = QueryPlan::from_command(q)?;
    let (_, ctx) = plan.load()?;
    let name = trace_name(&q.traces);
    plan.run(&ctx).with_context(|| format!("cannot answer from trace `{name}`"))
}

/// `verdict query compare`: each side loaded and queried as `verdict query` would, then
/// compared (what `verify` reruns too).
pub fn compare_evidence(c: &crate::cli::CompareArgs) -> anyhow::Result<analysis::Evidence> {
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
    let mut runs = Vec::new();
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
        // The side's keys are the options of `verdict query OF`, read by its parser.
        let side_plan = QueryPlan::from_side(of, side, &c.params).map_err(|e| {
            crate::Hinted::new(format!("side {label}: {e}"), "see `verdict query compare --help`")
        })?;
        let QueryPlan { params, nvtx, expect, force_set, .. } = side_plan;
        let devices = params.devices.clone();
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
            // One plan reads the group's traces once for every device of the side.
            let plan = QueryPlan {
                spec: of,
                traces: group.clone(),
                force_set,
                expect: expect.clone(),
                params: params.clone(),
                nvtx: nvtx.clone(),
            };
            let (_, ctx) = plan.load()?;
            for (d, sel) in per_device.iter().enumerate() {
                let one = QueryPlan {
                    params: Params { devices: sel.clone(), ..plan.params.clone() },
                    ..plan.clone()
                };
                let ev = one.run(&ctx).map_err(hinted)?;
                if g == 0 && d == 0 {
                    // The run behind the side, for the experiment check, as an audit
                    // records it (over runs, the first run's).
                    let paths: Vec<PathBuf> = match ev.trace.set.as_deref() {
                        Some(set) => set.files.iter().map(|f| PathBuf::from(&f.path)).collect(),
                        None => group.clone(),
                    };
                    let (sampling, steps) = crate::trace::run::sampling(
                        nvtx.is_some(),
                        params.split.is_some(),
                        ev.samples.len(),
                    );
                    runs.push(crate::trace::SideRun::new(
                        crate::trace::run::read_runs(&paths),
                        &ctx.kernels,
                        &ev.scope.devices,
                        ev.window.requested_ns,
                        sampling,
                        steps,
                    ));
                    if analysis::compare::has_names(of.name) {
                        let whole = analysis::compare::names_params(&one.params, &ev);
                        names.push(analysis::run_spec(of, &whole, &ctx).map_err(hinted)?);
                    }
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
    let mut ev = if devs[0].len() > 1 && devs[0].len() == devs[1].len() {
        let mut per = Vec::new();
        for (d, sel) in devs[0].iter().enumerate() {
            let DeviceSel::Set(one) = sel else { continue };
            per.push((one[0], compared(d)?));
        }
        analysis::compare::with_devices(per[0].1.clone(), per)
    } else {
        compared(0)?
    };
    if let (Some(analysis::values::Values::Compare(v)), [a, b]) =
        (ev.values.as_mut(), runs.as_slice())
    {
        v.runs = Some(analysis::compare::Runs { a: a.clone(), b: b.clone() });
    }
    Ok(ev)
}

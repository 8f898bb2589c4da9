//! `verdict query ...` and `verdict analyses`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;

use super::print_json;
use super::table;
use crate::analysis::{self, ANALYSES, Params, show};
use crate::cli::QueryCommand;
use crate::plan::{QueryPlan, trace_name};
use crate::scope::DeviceSel;

/// Runs one query.
pub(crate) fn run(q: QueryCommand) -> anyhow::Result<ExitCode> {
    let ev = evidence(&q)?;
    if q.json {
        print_json(&ev)?;
    } else {
        super::emit(&show::render(&ev, table::width()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The evidence of one query: its plan loaded and run, or a comparison's two sides.
pub(crate) fn evidence(q: &QueryCommand) -> anyhow::Result<analysis::Evidence> {
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
pub(super) fn compare_evidence(c: &crate::cli::CompareArgs) -> anyhow::Result<analysis::Evidence> {
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

/// `verdict analyses`.
pub(crate) fn list_analyses() -> anyhow::Result<ExitCode> {
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

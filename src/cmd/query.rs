//! `verdict query ...` and `verdict analyses`.

use std::process::ExitCode;

use anyhow::Context as _;
use serde_json::Value;

use super::{print_json, table};
use crate::analysis::{self, ANALYSES, Context, Evidence, NameFilter, Params};
use crate::cli::{CommonArgs, DeviceArgs, QueryCommand};
use crate::scope::{DeviceSel, format_device_list, format_seconds};
use crate::trace::{KernelFilter, Trace};
use crate::units::{ms, percent, thousands};

/// Runs one query.
pub fn run(q: QueryCommand) -> anyhow::Result<ExitCode> {
    let (name, common, devices, params) = match q {
        QueryCommand::Overlap(a) => {
            let sel = device_sel(&a.devices).ok_or_else(|| {
                crate::Hinted::new(
                    "`query overlap` needs a device scope",
                    "pass --device N for one device, --devices LIST or --all-devices for one row per device",
                )
            })?;
            let p = Params::new(sel.clone());
            ("overlap", a.common, sel, p)
        }
        QueryCommand::Kernels(a) => {
            let sel = device_sel(&a.devices).unwrap_or(DeviceSel::All);
            let mut p = Params::new(sel.clone());
            p.names = Some(a.names);
            p.limit = Some(a.limit);
            p.filter = match (a.pattern, a.regex) {
                (Some(s), _) => Some(NameFilter::Substring(s)),
                (None, Some(r)) => Some(NameFilter::regex(&r)?),
                (None, None) => None,
            };
            ("kernels", a.common, sel, p)
        }
        QueryCommand::NcclSkew(a) => {
            let sel = a.devices.map_or(DeviceSel::All, |d| DeviceSel::Set(d.0));
            let mut p = Params::new(sel.clone());
            p.stream = a.stream;
            ("nccl-skew", a.common, sel, p)
        }
    };
    let mut params = params;
    params.window = common.window;
    params.semantics = common.semantics;
    let ctx = load(&common, &devices)?;
    let ev = analysis::run(name, &params, &ctx)
        .with_context(|| format!("cannot answer from trace `{}`", common.trace.display()))?;
    if common.json {
        print_json(&ev)?;
    } else {
        super::emit(&render(&ev))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn device_sel(d: &DeviceArgs) -> Option<DeviceSel> {
    if let Some(n) = d.device {
        Some(DeviceSel::Set(vec![n]))
    } else if let Some(v) = &d.devices {
        Some(DeviceSel::Set(v.0.clone()))
    } else if d.all_devices {
        Some(DeviceSel::All)
    } else {
        None
    }
}

/// Opens the trace and scans it once with the query's filters pushed into the scan.
pub(super) fn load(common: &CommonArgs, devices: &DeviceSel) -> anyhow::Result<Context> {
    open_and_load(common, devices).map(|(_, ctx)| ctx)
}

/// [`load`], keeping the open trace for its schema.
pub(super) fn open_and_load(
    common: &CommonArgs,
    devices: &DeviceSel,
) -> anyhow::Result<(Trace, Context)> {
    let trace = Trace::open(&common.trace)
        .with_context(|| format!("cannot read trace `{}`", common.trace.display()))?;
    let filter = KernelFilter {
        devices: match devices {
            DeviceSel::Set(v) => Some(v.clone()),
            DeviceSel::All => None,
        },
        bounds: common.window.map(|w| (w.start_ns, w.end_ns)),
    };
    let ctx = Context::load(
        &trace,
        &filter,
        common.expect_devices.as_ref().map(|d| d.0.clone()),
        &mut |_| {},
    )
    .with_context(|| format!("cannot read trace `{}`", common.trace.display()))?;
    Ok((trace, ctx))
}

/// `verdict analyses`.
pub fn list_analyses() -> anyhow::Result<ExitCode> {
    let mut s = String::new();
    for a in ANALYSES {
        s += &format!("{}  {}\n", a.name, a.summary);
        if !a.params.is_empty() {
            s += &format!("  parameters: window, semantics, devices, {}\n", a.params.join(", "));
        }
        for f in a.fields {
            s += &format!("  {:<22} {:<6} {}\n", f.name, f.unit, f.definition);
        }
        s.push('\n');
    }
    super::emit(&s)?;
    Ok(ExitCode::SUCCESS)
}

fn int(v: Option<&Value>) -> i64 {
    v.and_then(Value::as_i64).unwrap_or(0)
}

/// The scope lines every query prints above its table.
pub(super) fn scope_lines(ev: &Evidence) -> String {
    let t = &ev.trace;
    let mut s = format!("analysis  {}\n", ev.analysis);
    s += &format!(
        "trace     {}  sha256 {}  schema {} · nsys {} · {} clock\n",
        t.path,
        &t.sha256.get(..16).unwrap_or(&t.sha256),
        t.schema_version.as_deref().unwrap_or("unrecorded"),
        t.nsys_version.as_deref().unwrap_or("unrecorded"),
        t.time_base
    );
    let span = |w: [i64; 2]| {
        format!("{}-{} s ({} ms)", format_seconds(w[0]), format_seconds(w[1]), ms(w[1] - w[0]))
    };
    let requested = ev.window.requested_ns.map_or("whole trace".to_string(), span);
    let effective = ev.window.effective_ns.map_or("none".to_string(), span);
    s += &format!(
        "window    requested {requested}, semantics {}; effective {effective}\n",
        ev.window.semantics
    );
    s += &format!(
        "devices   {} · present {} · missing {}",
        format_device_list(&ev.scope.devices),
        format_device_list(&ev.scope.present_devices),
        format_device_list(&ev.scope.missing_devices)
    );
    if let Some(st) = &ev.scope.streams {
        s += &format!(" · streams {}", st.iter().map(i64::to_string).collect::<Vec<_>>().join(","));
    }
    s.push('\n');
    for (k, v) in &ev.parameters {
        if !v.is_null() {
            s += &format!("param     {k} = {}\n", v.as_str().map_or(v.to_string(), str::to_string));
        }
    }
    s
}

/// Renders evidence for a terminal.
pub(super) fn render(ev: &Evidence) -> String {
    let mut s = scope_lines(ev);
    s.push('\n');
    match ev.analysis.as_str() {
        "overlap" => {
            let rows: Vec<&serde_json::Map<String, Value>> = match (&ev.values, &ev.rows) {
                (Some(v), _) => vec![v],
                (None, Some(r)) => r.iter().collect(),
                _ => vec![],
            };
            let mut out = Vec::new();
            for r in &rows {
                let device = r.get("device").and_then(Value::as_i64).unwrap_or(ev.scope.devices[0]);
                let (co, no, ov, id, tot) = (
                    int(r.get("compute_only_ns")),
                    int(r.get("nccl_only_ns")),
                    int(r.get("overlap_ns")),
                    int(r.get("idle_ns")),
                    int(r.get("total_ns")),
                );
                out.push(vec![
                    device.to_string(),
                    ms(co),
                    ms(no),
                    ms(ov),
                    ms(id),
                    ms(tot),
                    percent(no.into(), tot.into()).unwrap_or("n/a".into()),
                    percent(ov.into(), (no + ov).into()).unwrap_or("n/a".into()),
                    thousands(int(r.get("kernels")).into()),
                ]);
            }
            s += &table::render(
                &[
                    "device",
                    "compute_only ms",
                    "nccl_only ms",
                    "overlap ms",
                    "idle ms",
                    "total ms",
                    "exposed NCCL",
                    "NCCL hidden",
                    "kernels",
                ],
                &out,
                &[1, 2, 3, 4, 5, 6, 7, 8],
            );
            if let [r] = rows.as_slice() {
                s += &format!(
                    "\n{} + {} + {} + {} = {} ms\nexposed NCCL = nccl_only / total; NCCL hidden = overlap / (nccl_only + overlap)\n",
                    ms(int(r.get("compute_only_ns"))),
                    ms(int(r.get("nccl_only_ns"))),
                    ms(int(r.get("overlap_ns"))),
                    ms(int(r.get("idle_ns"))),
                    ms(int(r.get("total_ns")))
                );
            }
        }
        "kernels" => {
            let rows: Vec<Vec<String>> = ev
                .rows
                .iter()
                .flatten()
                .map(|r| {
                    let per: Vec<String> = r["per_device"]
                        .as_object()
                        .map(|m| m.iter().map(|(k, v)| format!("{k}:{v}")).collect())
                        .unwrap_or_default();
                    vec![
                        r["name"].as_str().unwrap_or("").to_string(),
                        thousands(int(r.get("count")).into()),
                        ms(int(r.get("total_ns"))),
                        ms(int(r.get("mean_ns"))),
                        ms(int(r.get("median_ns"))),
                        ms(int(r.get("max_ns"))),
                        per.join(" "),
                    ]
                })
                .collect();
            s += &table::render(
                &["name", "count", "total ms", "mean ms", "median ms", "max ms", "per device"],
                &rows,
                &[1, 2, 3, 4, 5],
            );
            if let Some(v) = &ev.values {
                s += &format!(
                    "\nall matching kernels: {} over {} name(s), {} ms kernel time\n",
                    thousands(int(v.get("count")).into()),
                    int(v.get("names")),
                    ms(int(v.get("total_ns")))
                );
            }
        }
        "nccl-skew" => {
            if let Some(v) = &ev.values {
                let (nccl, wait) = (int(v.get("nccl_ns")), int(v.get("wait_ns")));
                let q = |key: &str| {
                    let o = &v[key];
                    format!(
                        "min {} · median {} · p90 {} · max {} ms",
                        ms(int(o.get("min"))),
                        ms(int(o.get("median"))),
                        ms(int(o.get("p90"))),
                        ms(int(o.get("max")))
                    )
                };
                s += &format!(
                    "ranks        {} · matched instances {}\n",
                    int(v.get("ranks")),
                    int(v.get("matched"))
                );
                s += &format!(
                    "per rank     {}\n",
                    v["instance_counts"]
                        .as_object()
                        .map(|m| m
                            .iter()
                            .map(|(k, c)| format!("{k}:{c}"))
                            .collect::<Vec<_>>()
                            .join(" "))
                        .unwrap_or_default()
                );
                s += &format!(
                    "wait share   {} ms / {} ms = {}\n",
                    ms(wait),
                    ms(nccl),
                    percent(wait.into(), nccl.into()).unwrap_or("n/a".into())
                );
                s += &format!("start skew   {}\n", q("start_skew_ns"));
                s += &format!("end skew     {}\n", q("end_skew_ns"));
                s += &format!(
                    "rank wait    {}\n",
                    v["rank_wait_ns"]
                        .as_object()
                        .map(|m| m
                            .iter()
                            .map(|(k, w)| format!("{k}:{}", ms(w.as_i64().unwrap_or(0))))
                            .collect::<Vec<_>>()
                            .join(" "))
                        .unwrap_or_default()
                );
                // A list: several devices when they tie.
                let last: Vec<i64> = v["most_often_last"]
                    .as_array()
                    .map(|l| l.iter().filter_map(Value::as_i64).collect())
                    .unwrap_or_default();
                if let Some(first) = last.first() {
                    s += &format!(
                        "last to arrive most often: device {} ({} of {} instances{})\n",
                        last.iter().map(i64::to_string).collect::<Vec<_>>().join(", "),
                        int(v["last_arrivals"].get(first.to_string())),
                        int(v.get("matched")),
                        if last.len() > 1 { " each, a tie" } else { "" }
                    );
                }
            }
        }
        _ => {}
    }
    if !ev.notes.is_empty() {
        s += "\nnotes:\n";
        for n in &ev.notes {
            s += &format!("- {}\n", n.text);
        }
    }
    s
}

//! `verdict query ...` and `verdict analyses`.

use std::process::ExitCode;

use anyhow::Context as _;
use serde_json::Value;

use super::print_json;
use super::table::{self, Column};
use crate::analysis::{self, ANALYSES, Context, Evidence, NameFilter, Params};
use crate::cli::{CommonArgs, DeviceArgs, QueryCommand};
use crate::scope::{DeviceSel, format_device_list, format_seconds};
use crate::trace::{KernelFilter, Trace};
use crate::units::{duration, ms, percent, thousands};

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
        super::emit(&render(&ev, table::width()))?;
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
    let width = table::width();
    let mut s = String::new();
    for a in ANALYSES {
        s += &table::hang(&format!("{}  ", a.name), a.summary, 2, width);
        if !a.params.is_empty() {
            let params = format!("window, semantics, devices, {}", a.params.join(", "));
            s += &table::hang("  parameters: ", &params, 14, width);
        }
        for f in a.fields {
            let first = format!("  {:<22} {:<6} ", f.name, f.unit);
            s += &table::hang(&first, f.definition, 32, width);
        }
        s.push('\n');
    }
    super::emit(&s)?;
    Ok(ExitCode::SUCCESS)
}

/// An integer field of the evidence; `None` when it is absent or null (a value the analysis
/// could not compute), which prints as `n/a`, never as 0.
fn int(v: Option<&Value>) -> Option<i64> {
    v.and_then(Value::as_i64)
}

/// A field of an evidence object; null when absent, so that a missing value reads `n/a`.
fn field<'a>(m: &'a serde_json::Map<String, Value>, key: &str) -> &'a Value {
    static NULL: Value = Value::Null;
    m.get(key).unwrap_or(&NULL)
}

/// `f` of an integer field, or `n/a`.
fn show(v: Option<&Value>, f: impl Fn(i64) -> String) -> String {
    int(v).map_or_else(|| "n/a".to_string(), f)
}

/// A duration field with its unit, or `n/a`.
fn time(v: Option<&Value>) -> String {
    show(v, duration)
}

/// A count field with thousands separators, or `n/a`.
fn count(v: Option<&Value>) -> String {
    show(v, |n| thousands(n.into()))
}

/// An integer field as it is (an id, a count in a `key:value` list), or `n/a`.
fn plain(v: Option<&Value>) -> String {
    show(v, |n| n.to_string())
}

/// `num / den` as a percentage, or `n/a` when either is missing or `den` is zero.
fn share(num: Option<i64>, den: Option<i64>) -> String {
    num.zip(den).and_then(|(n, d)| percent(n.into(), d.into())).unwrap_or_else(|| "n/a".into())
}

/// `key:value` pairs of an object field, each value through `f`, or `n/a` for a missing one.
fn pairs(v: &Value, f: impl Fn(Option<&Value>) -> String) -> String {
    v.as_object()
        .map(|m| m.iter().map(|(k, x)| format!("{k}:{}", f(Some(x)))).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "n/a".into())
}

/// The scope lines every query prints above its table, wrapped to `width`.
pub(super) fn scope_lines(ev: &Evidence, width: usize) -> String {
    let line = |label: &str, text: &str| table::hang(&format!("{label:<10}"), text, 10, width);
    let t = &ev.trace;
    let mut s = line("analysis", &ev.analysis);
    s += &line(
        "trace",
        &format!(
            "{} · sha256 {} · schema {} · nsys {} · {} clock",
            t.path,
            &t.sha256.get(..16).unwrap_or(&t.sha256),
            t.schema_version.as_deref().unwrap_or("unrecorded"),
            t.nsys_version.as_deref().unwrap_or("unrecorded"),
            t.time_base
        ),
    );
    let span = |w: [i64; 2]| {
        let mut s = format!(
            "{}-{} s ({})",
            format_seconds(w[0]),
            format_seconds(w[1]),
            duration(w[1] - w[0])
        );
        // A UTC-epoch clock reads better from the capture start.
        if let Some(o) = t.capture_start_ns {
            s += &format!(
                ", capture start +{}-+{} s",
                format_seconds(w[0] - o),
                format_seconds(w[1] - o)
            );
        }
        s
    };
    let requested = ev.window.requested_ns.map_or("whole trace".to_string(), span);
    let effective = ev.window.effective_ns.map_or("none".to_string(), span);
    s += &line(
        "window",
        &format!("requested {requested}, semantics {}; effective {effective}", ev.window.semantics),
    );
    let mut devices = format!(
        "{} · present {} · missing {}",
        format_device_list(&ev.scope.devices),
        format_device_list(&ev.scope.present_devices),
        format_device_list(&ev.scope.missing_devices)
    );
    if let Some(st) = &ev.scope.streams {
        devices +=
            &format!(" · streams {}", st.iter().map(i64::to_string).collect::<Vec<_>>().join(","));
    }
    s += &line("devices", &devices);
    for (k, v) in &ev.parameters {
        if !v.is_null() {
            s += &line(
                "param",
                &format!("{k} = {}", v.as_str().map_or(v.to_string(), str::to_string)),
            );
        }
    }
    s
}

/// The notes of a piece of evidence, wrapped to `width`.
pub(super) fn notes(ev: &Evidence, width: usize) -> String {
    if ev.notes.is_empty() {
        return String::new();
    }
    let mut s = "\nnotes:\n".to_string();
    for n in &ev.notes {
        s += &table::hang("- ", &n.text, 2, width);
    }
    s
}

/// Renders evidence for a terminal `width` display columns wide.
pub(super) fn render(ev: &Evidence, width: usize) -> String {
    let mut s = scope_lines(ev, width);
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
                let (no, ov, tot) =
                    (int(r.get("nccl_only_ns")), int(r.get("overlap_ns")), int(r.get("total_ns")));
                out.push(vec![
                    device.to_string(),
                    time(r.get("compute_only_ns")),
                    time(r.get("nccl_only_ns")),
                    time(r.get("overlap_ns")),
                    time(r.get("idle_ns")),
                    time(r.get("total_ns")),
                    share(no, tot),
                    share(ov, no.zip(ov).map(|(n, o)| n + o)),
                    count(r.get("kernels")),
                ]);
            }
            s += &table::render(
                &[
                    Column::value("device"),
                    Column::number("compute_only"),
                    Column::number("nccl_only"),
                    Column::number("overlap"),
                    Column::number("idle"),
                    Column::number("total"),
                    Column::number("exposed NCCL"),
                    Column::number("NCCL hidden"),
                    Column::number("kernels"),
                ],
                &out,
                width,
            );
            if let [r] = rows.as_slice() {
                let m = |k: &str| show(r.get(k), ms);
                s += &format!(
                    "\n{} + {} + {} + {} = {} ms\n",
                    m("compute_only_ns"),
                    m("nccl_only_ns"),
                    m("overlap_ns"),
                    m("idle_ns"),
                    m("total_ns")
                );
                s += &table::hang(
                    "",
                    "exposed NCCL = nccl_only / total; NCCL hidden = overlap / (nccl_only + overlap)",
                    2,
                    width,
                );
            }
        }
        "kernels" => {
            let rows: Vec<Vec<String>> = ev
                .rows
                .iter()
                .flatten()
                .map(|r| {
                    vec![
                        field(r, "name").as_str().unwrap_or("").to_string(),
                        count(r.get("count")),
                        time(r.get("total_ns")),
                        time(r.get("mean_ns")),
                        time(r.get("median_ns")),
                        time(r.get("max_ns")),
                        pairs(field(r, "per_device"), plain),
                    ]
                })
                .collect();
            s += &table::render(
                &[
                    Column::text("name"),
                    Column::number("count"),
                    Column::number("total"),
                    Column::number("mean"),
                    Column::number("median"),
                    Column::number("max"),
                    Column::text("per device"),
                ],
                &rows,
                width,
            );
            if let Some(v) = &ev.values {
                s.push('\n');
                s += &table::hang(
                    "",
                    &format!(
                        "all matching kernels: {} over {} name(s), {} kernel time",
                        count(v.get("count")),
                        plain(v.get("names")),
                        time(v.get("total_ns"))
                    ),
                    2,
                    width,
                );
            }
        }
        "nccl-skew" => {
            if let Some(v) = &ev.values {
                let line =
                    |label: &str, text: &str| table::hang(&format!("{label:<13}"), text, 13, width);
                let skew = |key: &str| {
                    let o = field(v, key);
                    format!(
                        "min {} · median {} · p90 {} · max {}",
                        time(o.get("min")),
                        time(o.get("median")),
                        time(o.get("p90")),
                        time(o.get("max"))
                    )
                };
                s += &line(
                    "ranks",
                    &format!(
                        "{} · matched instances {}",
                        plain(v.get("ranks")),
                        plain(v.get("matched"))
                    ),
                );
                s += &line("per rank", &pairs(field(v, "instance_counts"), plain));
                s += &line(
                    "wait share",
                    &format!(
                        "{} / {} = {}",
                        time(v.get("wait_ns")),
                        time(v.get("nccl_ns")),
                        share(int(v.get("wait_ns")), int(v.get("nccl_ns")))
                    ),
                );
                s += &line("start skew", &skew("start_skew_ns"));
                s += &line("end skew", &skew("end_skew_ns"));
                s += &line("rank wait", &pairs(field(v, "rank_wait_ns"), time));
                // A list: several devices when they tie.
                let last: Vec<i64> = field(v, "most_often_last")
                    .as_array()
                    .map(|l| l.iter().filter_map(Value::as_i64).collect())
                    .unwrap_or_default();
                if let Some(first) = last.first() {
                    s += &table::hang(
                        "",
                        &format!(
                            "last to arrive most often: device {} ({} of {} instances{})",
                            last.iter().map(i64::to_string).collect::<Vec<_>>().join(", "),
                            plain(field(v, "last_arrivals").get(first.to_string())),
                            plain(v.get("matched")),
                            if last.len() > 1 { " each, a tie" } else { "" }
                        ),
                        2,
                        width,
                    );
                }
            }
        }
        _ => {}
    }
    s += &notes(ev, width);
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Kernels;

    /// Three ranks, two matched NCCL instances (the case of `nccl_skew`'s own unit test):
    /// durations 900, 600, 300 and 500, 510, 400 ns.
    fn skew() -> Evidence {
        let ctx = Context::from_kernels(Kernels::from_rows(&[
            (1, 56, 100, 1000, "ncclAG"),
            (2, 56, 400, 1000, "ncclAG"),
            (3, 56, 700, 1000, "ncclAG"),
            (1, 56, 2000, 2500, "ncclRS"),
            (2, 56, 2000, 2510, "ncclRS"),
            (3, 56, 2100, 2500, "ncclRS"),
        ]));
        let mut p = Params::new(DeviceSel::All);
        p.stream = Some(56);
        analysis::run("nccl-skew", &p, &ctx).unwrap()
    }

    fn line<'a>(text: &'a str, label: &str) -> &'a str {
        text.lines().find(|l| l.starts_with(label)).unwrap_or_else(|| panic!("{label}:\n{text}"))
    }

    #[test]
    fn nccl_skew_times_keep_their_unit() {
        let text = render(&skew(), 100);
        // nccl 900 + 600 + 300 + 500 + 510 + 400 = 3,210 ns; wait (600 + 300) + (100 + 110)
        // = 1,110 ns; 1,110 / 3,210 = 34.58%.
        assert_eq!(line(&text, "wait share"), "wait share   1.11 µs / 3.21 µs = 34.6%");
        // Start skews 600 and 100 ns, end skews 0 and 10 ns.
        assert!(line(&text, "start skew").starts_with("start skew   min 100 ns · median "));
        assert!(line(&text, "start skew").ends_with(" · max 600 ns"));
        assert!(line(&text, "end skew").starts_with("end skew     min 0 ns · median "));
        assert!(line(&text, "end skew").ends_with(" · max 10 ns"));
        // Rank 1 waits 600 + 100, rank 2 300 + 110, rank 3 never.
        assert_eq!(line(&text, "rank wait"), "rank wait    1:700 ns 2:410 ns 3:0 ns");
        assert_eq!(line(&text, "ranks"), "ranks        3 · matched instances 2");
    }

    #[test]
    fn a_null_or_absent_nccl_skew_value_reads_n_a_not_zero() {
        let mut ev = skew();
        let v = ev.values.as_mut().unwrap();
        v.insert("wait_ns".into(), Value::Null);
        v.remove("end_skew_ns");
        v["start_skew_ns"]["p90"] = Value::Null;
        v["rank_wait_ns"]["2"] = Value::Null;
        v.insert("matched".into(), Value::Null);
        let text = render(&ev, 100);
        assert_eq!(line(&text, "wait share"), "wait share   n/a / 3.21 µs = n/a");
        assert!(line(&text, "start skew").contains(" · p90 n/a · max 600 ns"), "{text}");
        assert_eq!(
            line(&text, "end skew"),
            "end skew     min n/a · median n/a · p90 n/a · max n/a"
        );
        assert_eq!(line(&text, "rank wait"), "rank wait    1:700 ns 2:n/a 3:0 ns");
        assert_eq!(line(&text, "ranks"), "ranks        3 · matched instances n/a");
        assert!(!text.contains("0.00 ms"), "{text}");
        // The window spans 100-2,510 ns.
        assert!(text.contains("effective 0.0000001-0.00000251 s (2.41 µs)"), "{text}");
    }
}

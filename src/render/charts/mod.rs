//! The charts of an audit, in one language: one SVG per distinct scope, with a caption that says
//! which trace, window, devices (and stream) it shows.
//!
//! Reads the evidence JSON of the ledger and its context and draws minimal SVG by hand
//! (`overlap`, `skew`, `kernels`, over the primitives in `svg`). Every label and caption comes
//! from the i18n strings and every number from [`crate::units`]; a field missing from the
//! evidence means no chart for it, never a zero bar. Judging is not done here.

mod ab;
mod delta;
mod kernels;
mod names;
mod overlap;
mod skew;
mod svg;

use crate::analysis::ChartKind;
use std::collections::BTreeMap;

pub use ab::{AbLabels, AbQuote, AbSide, AbUnit, ab_axis_holds_zero, ab_chart, ab_chart_quoting};
pub use delta::{NameDelta, TOP_NAMES, delta_chart};
pub use kernels::{KernelBar, kernels_chart};
pub use names::shorten;
pub use overlap::{OverlapBar, overlap_chart};
pub use skew::{SkewRank, skew_chart};

use crate::analysis::Evidence;
use crate::audit::{Audit, LedgerEntry};
use crate::claims::PlanId;
use crate::i18n::Strings;
use crate::render::RenderError;
use crate::scope::{format_device_list, format_seconds};

/// One chart of a report in one language.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chart {
    /// File name, relative to the output folder: `ID.LANG.KIND.svg`, then `ID.LANG.KIND-2.svg`…
    pub file: String,
    /// Caption in the chart's language: what it shows and over which scope.
    pub caption: String,
    /// The SVG document.
    pub svg: String,
    /// The ledger entry it draws, when it draws one of the claims' own queries (not a
    /// context query): the report places it under the claim that reads that entry.
    pub key: Option<PlanId>,
}

impl Chart {
    /// The file name of its PNG rendering: the SVG's name with `.png` (`ID.LANG.overlap.png`).
    pub fn png_file(&self) -> String {
        let stem = self.file.strip_suffix(".svg").unwrap_or(&self.file);
        format!("{stem}.png")
    }
}

/// The charts of an audit in the language of `t`, in a fixed order: every distinct overlap
/// scope of the context, every distinct nccl-skew query of the ledger, every distinct kernels
/// scope of the context, each in the order the audit lists them.
///
/// The first chart of a kind is `ID.LANG.overlap.svg` (`nccl-skew`, `kernels`), the n-th
/// `ID.LANG.overlap-N.svg`. Errors are missing i18n keys.
pub fn charts(a: &Audit, t: &Strings) -> Result<Vec<Chart>, RenderError> {
    let labels = Labels::new(t)?;
    let id = &a.claims.report.id;
    let file = |kind: &str, n: usize| {
        if n == 1 {
            format!("{id}.{}.{kind}.svg", t.lang)
        } else {
            format!("{id}.{}.{kind}-{n}.svg", t.lang)
        }
    };
    let mut out = Vec::new();
    // Each chart kind is drawn for the analysis that declares it, in this order.
    let of = |kind: ChartKind| {
        crate::analysis::ANALYSES.iter().find(|s| s.chart == Some(kind)).map_or("", |s| s.name)
    };
    let (breakdown, offsets, top) =
        (of(ChartKind::Breakdown), of(ChartKind::RankOffsets), of(ChartKind::TopNames));

    let mut n = 0;
    for ev in distinct(&a.context, breakdown) {
        // The devices its parts speak of, in the same trace and window, are highlighted.
        let highlighted: Vec<i64> = evidence_of(&a.ledger, breakdown)
            .filter(|p| {
                p.trace.path == ev.trace.path
                    && p.window.requested_ns == ev.window.requested_ns
                    && p.window.semantics == ev.window.semantics
            })
            .flat_map(|p| p.scope.devices.iter().copied())
            .collect();
        let Some(bars) = overlap::bars(ev, &highlighted) else { continue };
        n += 1;
        out.push(Chart {
            file: file(breakdown, n),
            caption: overlap::caption(&Scope::of(a, ev, t)?, ev, t)?,
            svg: overlap_chart(&bars, &labels),
            key: None,
        });
    }

    let mut n = 0;
    for (key, ev) in distinct_entries(&a.ledger, offsets) {
        let Some(ranks) = skew::ranks(ev) else { continue };
        n += 1;
        out.push(Chart {
            file: file(offsets, n),
            caption: skew::caption(&Scope::of(a, ev, t)?, ev, t)?,
            svg: skew_chart(&ranks, &labels),
            key: Some(key.clone()),
        });
    }

    // Comparisons: A beside B, one dot per window; the per-name deltas where there are any.
    let ab_labels = AbLabels::new(t)?;
    let (mut n_ab, mut n_delta) = (0, 0);
    for entry in a.ledger.iter().filter(|e| {
        e.evidence.as_ref().is_some_and(|ev| ev.analysis == crate::analysis::compare::SPEC.name)
    }) {
        let ev = entry.evidence.as_ref().expect("filtered");
        let Some((sa, sb, unit)) = ab_sides(ev) else { continue };
        let arg = |k: &str| ev.parameters.get(k).and_then(serde_json::Value::as_str).unwrap_or("");
        let Some(v) = crate::analysis::compare::Values::of(ev) else { continue };
        // Each side by its trace's label and devices, never by the scope's id.
        let [la, lb] = crate::render::context::compare_sides(
            a,
            t,
            [v.a.label.as_str(), v.b.label.as_str()],
            true,
        )?;
        let quote = quote_of(ev);
        // The caption says what the chart draws: whose samples (a comparison judged on each
        // device draws its first device's), of what, and whether 0 is on its axis.
        let sample = t.get(match arg("sample_unit") {
            "run" => "ui.chart_sample_run",
            "step" => "ui.chart_sample_step",
            _ => "ui.chart_sample_window",
        })?;
        let devices = crate::analysis::compare::device_evidences(ev);
        let whose = match devices.first() {
            Some((d, _)) if devices.len() > 1 => {
                fill(t, "ui.chart_samples_of_device", &[("device", &d.to_string())])?
            }
            _ => String::new(),
        };
        let axis = t.get(if ab_axis_holds_zero(&sa, &sb, unit, true, &quote) {
            "ui.chart_axis_zero"
        } else {
            "ui.chart_axis_zoomed"
        })?;
        let args = [
            ("of", arg("of")),
            ("metric", arg("metric")),
            ("a", la.as_str()),
            ("b", lb.as_str()),
            ("sample", sample),
            ("whose", whose.as_str()),
            ("axis", axis),
        ];
        n_ab += 1;
        out.push(Chart {
            file: file("ab", n_ab),
            caption: fill(t, "ui.chart_ab", &args)?,
            svg: ab_chart_quoting(&sa, &sb, unit, true, &quote, &ab_labels),
            key: Some(entry.key.clone()),
        });
        let rows = name_deltas(ev);
        if !rows.is_empty() {
            n_delta += 1;
            out.push(Chart {
                file: file("delta", n_delta),
                caption: fill(t, "ui.chart_delta", &args)?,
                svg: delta_chart(&rows, &ab_labels),
                key: Some(entry.key.clone()),
            });
        }
    }

    // The per-name queries behind a comparison's deltas are drawn in its delta chart.
    let context: Vec<LedgerEntry> =
        a.context.iter().filter(|e| !e.key.is_names()).cloned().collect();
    let mut n = 0;
    for ev in distinct(&context, top) {
        let Some((bars, names)) = kernels::bars(ev) else { continue };
        n += 1;
        out.push(Chart {
            file: file(top, n),
            caption: kernels::caption(&Scope::of(a, ev, t)?, ev, bars.len(), names, t)?,
            svg: kernels_chart(&bars, &labels),
            key: None,
        });
    }
    Ok(out)
}

/// The two sides of a comparison as chart data: each side's scaled samples and median, and
/// the unit they are in; None without samples.
fn ab_sides(ev: &Evidence) -> Option<(AbSide, AbSide, AbUnit)> {
    let scale = ev.parameters.get("metric_scale")?.as_i64()?;
    let unit = match (ev.parameters.get("metric_unit")?.as_str()?, scale) {
        (_, s) if s != 1 => AbUnit::Ratio,
        ("ns", _) => AbUnit::Ns,
        ("bytes", _) => AbUnit::Bytes,
        ("ratio", _) => AbUnit::Ratio,
        _ => AbUnit::Count,
    };
    let v = crate::analysis::compare::Values::of(ev)?;
    let side = |s: &crate::analysis::compare::Side, name: &str| -> Option<AbSide> {
        Some(AbSide {
            label: format!("{name}: {}", s.label),
            values_ns: s.samples.iter().map(|x| x.scaled).collect(),
            median_ns: s.summary.as_ref()?.median,
        })
    };
    Some((side(&v.a, "A")?, side(&v.b, "B")?, unit))
}

/// What the report quotes of a comparison: its metric, and the interval of B - A in the
/// samples' scale (`ci_low`, `ci_high`), the one the verdict table and page 1 quote.
fn quote_of(ev: &Evidence) -> AbQuote {
    let v = crate::analysis::compare::Values::of(ev);
    // A share of A's median, to one decimal of a percent, as the page shows a change.
    let percent = |x: Option<f64>| {
        let s = format!("{:.1}%", x? * 100.0);
        Some(if s == "-0.0%" { "0.0%".to_string() } else { s })
    };
    AbQuote {
        metric: ev.parameters.get("metric").and_then(serde_json::Value::as_str).map(str::to_string),
        interval: v.and_then(|v| v.ci_low.zip(v.ci_high)).map(|(lo, hi)| [lo, hi]),
        relative: v
            .and_then(|v| percent(v.change_low).zip(percent(v.change_high)))
            .map(|(lo, hi)| [lo, hi]),
    }
}

/// The per-name deltas of a comparison, as chart rows.
fn name_deltas(ev: &Evidence) -> Vec<NameDelta> {
    let Some(names) = crate::analysis::compare::Values::of(ev).and_then(|v| v.names.as_ref())
    else {
        return Vec::new();
    };
    names
        .rows
        .iter()
        .map(|r| NameDelta {
            name: r.name.clone(),
            a_total_ns: r.a_total_ns,
            b_total_ns: r.b_total_ns,
            only_in: match r.only_in {
                Some("a") => Some(crate::stats::Side::A),
                Some("b") => Some(crate::stats::Side::B),
                _ => None,
            },
        })
        .collect()
}

/// The evidence of one analysis among ledger entries (failed queries have none).
fn evidence_of<'a>(
    entries: &'a [LedgerEntry],
    analysis: &'a str,
) -> impl Iterator<Item = &'a Evidence> + 'a {
    entries.iter().filter_map(|e| e.evidence.as_ref()).filter(move |e| e.analysis == analysis)
}

/// The evidence of one analysis, without repeats of the same query (same trace, window,
/// semantics, devices, streams and parameters), in order.
fn distinct<'a>(entries: &'a [LedgerEntry], analysis: &'a str) -> Vec<&'a Evidence> {
    distinct_entries(entries, analysis).into_iter().map(|(_, ev)| ev).collect()
}

/// [`distinct`], each with the key of the first entry that gave it.
fn distinct_entries<'a>(
    entries: &'a [LedgerEntry],
    analysis: &'a str,
) -> Vec<(&'a PlanId, &'a Evidence)> {
    let mut out: Vec<(&PlanId, &Evidence)> = Vec::new();
    for (key, ev) in entries
        .iter()
        .filter_map(|e| Some((&e.key, e.evidence.as_ref()?)))
        .filter(|(_, e)| e.analysis == analysis)
    {
        let same = |(_, o): &(&PlanId, &Evidence)| {
            o.trace.path == ev.trace.path
                && o.window.requested_ns == ev.window.requested_ns
                && o.window.semantics == ev.window.semantics
                && o.scope.devices == ev.scope.devices
                && o.scope.streams == ev.scope.streams
                && o.parameters == ev.parameters
        };
        if !out.iter().any(same) {
            out.push((key, ev));
        }
    }
    out
}

/// The scope of one piece of evidence, as caption fragments in one language.
struct Scope {
    /// `trace `A` (profile A)`.
    trace: String,
    /// `window 39.964–46.123 s (contain)`, or the whole trace.
    window: String,
    /// `devices 1-7` or `device 4`.
    devices: String,
}

impl Scope {
    fn of(a: &Audit, ev: &Evidence, t: &Strings) -> Result<Scope, RenderError> {
        // Evidence names its trace by path; the audit's trace entries carry the same path.
        let entry = a.traces.iter().find(|e| e.path == ev.trace.path);
        let name = entry.map_or(ev.trace.path.as_str(), |e| e.name.as_str());
        let label = entry
            .and_then(|e| a.claims.trace(&e.name))
            .and_then(|d| d.label.as_ref())
            .and_then(|l| l.get(&t.lang));
        let trace = match label {
            Some(label) => fill(t, "ui.chart_trace", &[("name", name), ("label", label)])?,
            None => fill(t, "ui.chart_trace_bare", &[("name", name)])?,
        };
        let window = match ev.window.requested_ns {
            Some([s, e]) => fill(
                t,
                "ui.chart_window",
                &[
                    ("start", &format_seconds(s)),
                    ("end", &format_seconds(e)),
                    ("semantics", ev.window.semantics.as_str()),
                ],
            )?,
            None => t.get("ui.whole_trace")?.to_string(),
        };
        // A UTC-epoch clock also reads from the capture start.
        let window = match (ev.window.requested_ns, ev.trace.capture_start_ns) {
            (Some([s, e]), Some(o)) => fill(
                t,
                "ui.range_from_capture_start",
                &[
                    ("range", &window),
                    ("start", &format_seconds(s - o)),
                    ("end", &format_seconds(e - o)),
                ],
            )?,
            _ => window,
        };
        let list = format_device_list(&ev.scope.devices);
        let key =
            if ev.scope.devices.len() == 1 { "ui.chart_one_device" } else { "ui.chart_devices" };
        Ok(Scope { trace, window, devices: fill(t, key, &[("devices", &list)])? })
    }

    /// The arguments every caption takes.
    fn args(&self) -> Vec<(&'static str, &str)> {
        vec![("trace", &self.trace), ("window", &self.window), ("devices", &self.devices)]
    }
}

/// A string of `t` with `{name}` arguments substituted.
fn fill(t: &Strings, key: &str, args: &[(&str, &str)]) -> Result<String, RenderError> {
    let args: BTreeMap<String, String> =
        args.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    Ok(t.format(key, &args)?)
}

/// Substitutes `{name}` arguments into a label already looked up.
fn subst(template: &str, args: &[(&str, &str)]) -> String {
    let mut s = template.to_string();
    for (k, v) in args {
        s = s.replace(&format!("{{{k}}}"), v);
    }
    s
}

/// Every label drawn inside a chart, in one language.
#[derive(Debug, Clone)]
pub struct Labels {
    no_data: String,
    device: String,
    rank: String,
    compute_only: String,
    nccl_only: String,
    overlap: String,
    idle: String,
    exposed: String,
    share_axis: String,
    segment_tip: String,
    start_offset: String,
    end_offset: String,
    start: String,
    end: String,
    encoding: String,
    offset_axis: String,
    offset_tip: String,
    offset_value: String,
    encoding_one: String,
    offset_tip_one: String,
    compute_kernel: String,
    nccl_kernel: String,
    kernel_axis: String,
    calls: String,
    calls_one: String,
}

impl Labels {
    /// The labels of a language; a missing key is an error.
    pub fn new(t: &Strings) -> Result<Labels, RenderError> {
        let g = |k: &str| t.get(&format!("chart.{k}")).map(str::to_string);
        Ok(Labels {
            no_data: g("no_data")?,
            device: g("device")?,
            rank: g("rank")?,
            compute_only: g("compute_only")?,
            nccl_only: g("nccl_only")?,
            overlap: g("overlap")?,
            idle: g("idle")?,
            exposed: g("exposed")?,
            share_axis: g("share_axis")?,
            segment_tip: g("segment_tip")?,
            start_offset: g("start_offset")?,
            end_offset: g("end_offset")?,
            start: g("start")?,
            end: g("end")?,
            encoding: g("encoding")?,
            offset_axis: g("offset_axis")?,
            offset_tip: g("offset_tip")?,
            offset_value: g("offset_value")?,
            encoding_one: g("encoding_one")?,
            offset_tip_one: g("offset_tip_one")?,
            compute_kernel: g("compute_kernel")?,
            nccl_kernel: g("nccl_kernel")?,
            kernel_axis: g("kernel_axis")?,
            calls: g("calls")?,
            calls_one: g("calls_one")?,
        })
    }

    /// `device 4`.
    fn device(&self, device: i64) -> String {
        subst(&self.device, &[("device", &device.to_string())])
    }

    /// `rank 4` (of a trace set).
    fn rank(&self, rank: i64) -> String {
        subst(&self.rank, &[("rank", &rank.to_string())])
    }
}

#[cfg(test)]
pub(super) mod tests;

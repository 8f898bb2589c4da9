//! Charts as minimal SVG, legible in print and without colour.
//!
//! Three fixed charts (overlap breakdown, NCCL skew, top kernels) drawn by hand on a 640px-wide
//! viewBox. Every series carries a pattern or a direct label besides its grey-scale-safe fill, and
//! the output is byte-for-byte deterministic: coordinates have two decimals, and every number a
//! reader sees is formatted by [`crate::units`] from exact integers.

use std::fmt::Write;

use crate::units;

mod names;

pub use names::shorten;

/// Width of every chart's viewBox, in px.
const WIDTH: f64 = 640.0;
/// Font stack: the CJK face first so the same chart works inside the zh-TW report.
const FONT: &str = "Noto Sans CJK TC, Noto Sans, DejaVu Sans, sans-serif";
const OUTLINE: &str = "#333";
const GRID: &str = "#c8c8c8";
/// Text attributes: none.
const PLAIN: &str = "";
/// Text attributes: bold, for the highlighted device.
const BOLD: &str = " font-weight=\"bold\"";
/// Text attributes: a white outline under the glyphs so that grid lines do not cut through labels.
const HALO: &str =
    " stroke=\"#ffffff\" stroke-width=\"3\" stroke-linejoin=\"round\" paint-order=\"stroke\"";
/// Average advance of a glyph as a share of the font size, for laying out legends.
const GLYPH_W: f64 = 0.56;

/// Appends formatted text to a `String`; writing to a `String` cannot fail.
macro_rules! w {
    ($out:expr, $($arg:tt)*) => {{
        let _ = write!($out, $($arg)*);
    }};
}

/// One device's overlap breakdown, in ns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverlapBar {
    /// Device id as recorded in the trace.
    pub device: i64,
    /// Time with only compute kernels running.
    pub compute_only_ns: i64,
    /// Time with only NCCL kernels running (exposed communication).
    pub nccl_only_ns: i64,
    /// Time with compute and NCCL kernels running together.
    pub overlap_ns: i64,
    /// Time with no kernel running.
    pub idle_ns: i64,
    /// Length of the window; each bar spans this total.
    pub total_ns: i64,
    /// Whether this is the device a claim is about.
    pub highlight: bool,
}

/// One rank's offset statistics, in ns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkewRank {
    /// Device id of the rank.
    pub device: i64,
    /// Median of kernel start minus the instance's earliest start.
    pub start_median_ns: i64,
    /// 90th percentile of the start offset.
    pub start_p90_ns: i64,
    /// Median of kernel end minus the instance's earliest end.
    pub end_median_ns: i64,
    /// 90th percentile of the end offset.
    pub end_p90_ns: i64,
}

/// One kernel name's total time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelBar {
    /// Kernel name; shortened on the chart, kept whole in the tooltip.
    pub name: String,
    /// Sum of the kernel's durations.
    pub total_ns: i64,
    /// Number of launches.
    pub count: i64,
    /// Whether this is an NCCL kernel.
    pub nccl: bool,
}

// ---------------------------------------------------------------------------------------------
// Overlap breakdown

/// Right edge of the device labels.
const OV_LABEL_X: f64 = 74.0;
/// Left edge of the overlap plot area.
const OV_PLOT_X: f64 = 82.0;
/// Width of the overlap plot area; a bar at 100% spans it exactly.
const OV_PLOT_W: f64 = 480.0;
const OV_TOP: f64 = 44.0;
const OV_BAR_H: f64 = 18.0;
const OV_ROW_H: f64 = 27.0;

/// The four overlap segments in drawing order: class, legend label, fill.
const OV_SERIES: [(&str, &str, &str); 4] = [
    ("compute_only", "compute only", "#c6dbef"),
    ("nccl_only", "NCCL only (exposed)", "url(#ov-nccl)"),
    ("overlap", "compute + NCCL overlap", "url(#ov-overlap)"),
    ("idle", "idle", "#ffffff"),
];

/// Stacked 100% bars per device.
///
/// Segments are shares of each device's `total_ns`; the exposed-NCCL share is printed at the end
/// of each bar, and a highlighted bar gets a heavy outline, a bold label and a marker.
pub fn overlap_chart(bars: &[OverlapBar]) -> String {
    if bars.is_empty() {
        return no_data();
    }
    let plot_bottom = OV_TOP + OV_ROW_H * bars.len() as f64 - (OV_ROW_H - OV_BAR_H);
    let height = plot_bottom + 44.0;
    let mut out = String::new();
    open_svg(&mut out, height);
    out.push_str("<defs>");
    hatch(&mut out, "ov-nccl", "#fdd0a2", "#7f2704");
    out.push_str(
        "<pattern id=\"ov-overlap\" patternUnits=\"userSpaceOnUse\" width=\"5\" height=\"5\">\
<rect width=\"5\" height=\"5\" fill=\"#c7e9c0\"/><circle cx=\"2.5\" cy=\"2.5\" r=\"1\" fill=\"#00441b\"/></pattern>",
    );
    out.push_str("</defs>\n");

    // Legend, in one row above the plot.
    let mut x = OV_PLOT_X;
    for (_, label, fill) in OV_SERIES {
        legend_item(&mut out, x, 12.0, fill, label);
        x += 14.0 + 5.0 + text_w(label, 11.0) + 16.0;
    }
    text(&mut out, WIDTH - 4.0, OV_TOP - 6.0, "end", 10.0, PLAIN, "exposed NCCL");

    // Grid and axis.
    for i in 0..=4 {
        let gx = OV_PLOT_X + OV_PLOT_W * f64::from(i) / 4.0;
        w!(
            out,
            "<line x1=\"{x}\" y1=\"{y1}\" x2=\"{x}\" y2=\"{y2}\" stroke=\"{GRID}\" stroke-width=\"0.6\" stroke-dasharray=\"2 2\"/>\n",
            x = f2(gx),
            y1 = f2(OV_TOP - 4.0),
            y2 = f2(plot_bottom + 4.0),
        );
    }
    let ticks: Vec<(f64, String)> =
        (0..=4).map(|i| (f64::from(i) / 4.0, format!("{}%", i * 25))).collect();
    x_axis(&mut out, OV_PLOT_X, OV_PLOT_W, plot_bottom + 4.0, &ticks, "share of total");

    for (i, bar) in bars.iter().enumerate() {
        let y = OV_TOP + OV_ROW_H * i as f64;
        let total = bar.total_ns.max(0);
        let parts = [bar.compute_only_ns, bar.nccl_only_ns, bar.overlap_ns, bar.idle_ns];
        let mut cursor = OV_PLOT_X;
        for ((class, label, fill), ns) in OV_SERIES.iter().zip(parts) {
            let wdt = (share(ns, total) * OV_PLOT_W).min(OV_PLOT_X + OV_PLOT_W - cursor);
            w!(
                out,
                "<rect class=\"{class}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{fill}\" stroke=\"{OUTLINE}\" stroke-width=\"0.5\">\
<title>device {}: {label} {} ms ({})</title></rect>\n",
                f2(cursor),
                f2(y),
                f2(wdt),
                f2(OV_BAR_H),
                bar.device,
                units::ms(ns),
                pct(ns, total),
            );
            cursor += wdt;
        }
        let stroke_w = if bar.highlight { 2.2 } else { 0.8 };
        w!(
            out,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#000\" stroke-width=\"{}\"/>\n",
            f2(OV_PLOT_X),
            f2(y),
            f2(cursor - OV_PLOT_X),
            f2(OV_BAR_H),
            f2(stroke_w),
        );
        let mid = y + OV_BAR_H / 2.0;
        let label = format!("device {}", bar.device);
        let weight = if bar.highlight { BOLD } else { PLAIN };
        text(&mut out, OV_LABEL_X, baseline(mid, 12.0), "end", 12.0, weight, &label);
        let pct = pct(bar.nccl_only_ns, total);
        text(
            &mut out,
            OV_PLOT_X + OV_PLOT_W + 6.0,
            baseline(mid, 12.0),
            "start",
            12.0,
            weight,
            &pct,
        );
        if bar.highlight {
            marker(&mut out, 4.0, mid);
        }
    }
    out.push_str("</g>\n</svg>\n");
    out
}

// ---------------------------------------------------------------------------------------------
// NCCL skew

/// Left edge of the skew plot area; the device label and "start"/"end" sit left of it.
const SK_PLOT_X: f64 = 104.0;
/// Width of the skew plot area, leaving room right of it for the value labels.
const SK_PLOT_W: f64 = 396.0;
const SK_TOP: f64 = 44.0;
const SK_BAR_H: f64 = 9.0;
const SK_ROW_H: f64 = 32.0;

/// Start vs end offset per rank.
///
/// Two bars per rank on one linear ms axis: bar = median, whisker = p90, each labelled with its
/// values so that microsecond-scale end offsets stay readable next to millisecond starts.
pub fn skew_chart(ranks: &[SkewRank]) -> String {
    if ranks.is_empty() {
        return no_data();
    }
    let max_ns = ranks
        .iter()
        .flat_map(|r| [r.start_median_ns, r.start_p90_ns, r.end_median_ns, r.end_p90_ns])
        .max()
        .unwrap_or(0);
    let axis = Axis::nice(max_ns, 10_000);
    let plot_bottom = SK_TOP + SK_ROW_H * ranks.len() as f64 - (SK_ROW_H - 2.0 * SK_BAR_H - 2.0);
    let height = plot_bottom + 44.0;
    let mut out = String::new();
    open_svg(&mut out, height);
    out.push_str("<defs>");
    hatch(&mut out, "sk-start", "#9ecae1", "#08306b");
    out.push_str("</defs>\n");

    // Legend.
    let mut x = SK_PLOT_X;
    for (fill, label) in [("url(#sk-start)", "start offset"), ("#fdae6b", "end offset")] {
        legend_item(&mut out, x, 12.0, fill, label);
        x += 14.0 + 5.0 + text_w(label, 11.0) + 16.0;
    }
    // A sample bar with whisker explains the encoding.
    w!(
        out,
        "<rect x=\"{}\" y=\"14.50\" width=\"18.00\" height=\"9.00\" fill=\"#ffffff\" stroke=\"{OUTLINE}\" stroke-width=\"0.6\"/>\n",
        f2(x)
    );
    whisker(&mut out, x + 18.0, x + 30.0, 19.0);
    text(
        &mut out,
        x + 36.0,
        baseline(19.0, 11.0),
        "start",
        11.0,
        PLAIN,
        "bar = median, whisker = p90",
    );

    // Grid and axis.
    let ticks = axis.ticks();
    for (frac, _) in &ticks {
        let gx = SK_PLOT_X + SK_PLOT_W * frac;
        w!(
            out,
            "<line x1=\"{x}\" y1=\"{y1}\" x2=\"{x}\" y2=\"{y2}\" stroke=\"{GRID}\" stroke-width=\"0.6\" stroke-dasharray=\"2 2\"/>\n",
            x = f2(gx),
            y1 = f2(SK_TOP - 4.0),
            y2 = f2(plot_bottom + 4.0),
        );
    }
    x_axis(
        &mut out,
        SK_PLOT_X,
        SK_PLOT_W,
        plot_bottom + 4.0,
        &ticks,
        "offset from the earliest rank (ms)",
    );

    let scale = |ns: i64| axis.scale(ns, SK_PLOT_W);
    for (i, r) in ranks.iter().enumerate() {
        let y = SK_TOP + SK_ROW_H * i as f64;
        let label = format!("device {}", r.device);
        text(&mut out, 4.0, baseline(y + SK_BAR_H + 1.0, 12.0), "start", 12.0, PLAIN, &label);
        let rows = [
            ("start", "url(#sk-start)", r.start_median_ns, r.start_p90_ns, y),
            ("end", "#fdae6b", r.end_median_ns, r.end_p90_ns, y + SK_BAR_H + 2.0),
        ];
        for (class, fill, med, p90, by) in rows {
            let mid = by + SK_BAR_H / 2.0;
            text(&mut out, SK_PLOT_X - 5.0, baseline(mid, 10.0), "end", 10.0, PLAIN, class);
            let wm = scale(med);
            w!(
                out,
                "<rect class=\"{class}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{fill}\" stroke=\"{OUTLINE}\" stroke-width=\"0.6\">\
<title>device {}: {class} offset median {}, p90 {}</title></rect>\n",
                f2(SK_PLOT_X),
                f2(by),
                f2(wm),
                f2(SK_BAR_H),
                r.device,
                fmt_offset(med),
                fmt_offset(p90),
            );
            let wp = scale(p90);
            whisker(&mut out, SK_PLOT_X + wm, SK_PLOT_X + wp, mid);
            let value = format!("{}, p90 {}", fmt_offset(med), fmt_offset(p90));
            let lx = SK_PLOT_X + wm.max(wp) + 6.0;
            text(&mut out, lx, baseline(mid, 10.0), "start", 10.0, HALO, &value);
        }
    }
    out.push_str("</g>\n</svg>\n");
    out
}

// ---------------------------------------------------------------------------------------------
// Top kernels

/// Left edge of the kernel bars; names sit above their bar at the same x.
const KN_PLOT_X: f64 = 10.0;
/// Width of the kernel plot area, leaving room right of it for the value labels.
const KN_PLOT_W: f64 = 440.0;
const KN_TOP: f64 = 34.0;
const KN_BAR_H: f64 = 12.0;
const KN_ROW_H: f64 = 34.0;
/// Longest label drawn for a kernel name, in characters.
const KN_NAME_MAX: usize = 48;

/// Top kernels by total time.
///
/// One bar per name on a linear ms axis, the name above it (shortened so that distinct names
/// keep distinct labels, whole in the `<title>`); NCCL kernels are hatched and the others plain.
pub fn kernels_chart(bars: &[KernelBar]) -> String {
    if bars.is_empty() {
        return no_data();
    }
    let max_ns = bars.iter().map(|b| b.total_ns).max().unwrap_or(0);
    let axis = Axis::nice(max_ns, 1_000_000);
    let plot_bottom = KN_TOP + KN_ROW_H * bars.len() as f64 - (KN_ROW_H - 15.0 - KN_BAR_H);
    let height = plot_bottom + 44.0;
    let mut out = String::new();
    open_svg(&mut out, height);
    out.push_str("<defs>");
    hatch(&mut out, "kn-nccl", "#fdd0a2", "#7f2704");
    out.push_str("</defs>\n");
    let mut x = KN_PLOT_X;
    for (fill, label) in [("#c6dbef", "compute kernel"), ("url(#kn-nccl)", "NCCL kernel")] {
        legend_item(&mut out, x, 8.0, fill, label);
        x += 14.0 + 5.0 + text_w(label, 11.0) + 16.0;
    }

    let ticks = axis.ticks();
    for (frac, _) in &ticks {
        let gx = KN_PLOT_X + KN_PLOT_W * frac;
        w!(
            out,
            "<line x1=\"{x}\" y1=\"{y1}\" x2=\"{x}\" y2=\"{y2}\" stroke=\"{GRID}\" stroke-width=\"0.6\" stroke-dasharray=\"2 2\"/>\n",
            x = f2(gx),
            y1 = f2(KN_TOP - 2.0),
            y2 = f2(plot_bottom + 4.0),
        );
    }
    x_axis(&mut out, KN_PLOT_X, KN_PLOT_W, plot_bottom + 4.0, &ticks, "total kernel time (ms)");

    let names: Vec<&str> = bars.iter().map(|b| b.name.as_str()).collect();
    let labels = shorten(&names, KN_NAME_MAX);
    for (i, (bar, label)) in bars.iter().zip(&labels).enumerate() {
        let y = KN_TOP + KN_ROW_H * i as f64;
        let by = y + 15.0;
        w!(out, "<g><title>{}</title>\n", esc(&bar.name));
        text(&mut out, KN_PLOT_X, y + 11.0, "start", 11.0, HALO, label);
        let wdt = axis.scale(bar.total_ns, KN_PLOT_W);
        let (class, fill) =
            if bar.nccl { ("nccl", "url(#kn-nccl)") } else { ("compute", "#c6dbef") };
        w!(
            out,
            "<rect class=\"{class}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{fill}\" stroke=\"{OUTLINE}\" stroke-width=\"0.6\"/>\n",
            f2(KN_PLOT_X),
            f2(by),
            f2(wdt),
            f2(KN_BAR_H),
        );
        let calls = if bar.count == 1 { "call" } else { "calls" };
        let value = format!(
            "{} ms ({} {calls})",
            units::ms(bar.total_ns),
            units::thousands(bar.count.into())
        );
        let mid = by + KN_BAR_H / 2.0;
        text(&mut out, KN_PLOT_X + wdt + 6.0, baseline(mid, 11.0), "start", 11.0, HALO, &value);
        out.push_str("</g>\n");
    }
    out.push_str("</g>\n</svg>\n");
    out
}

// ---------------------------------------------------------------------------------------------
// Shared drawing helpers

/// Writes the `<svg>` root, a white background and an open `<g>` carrying the font.
fn open_svg(out: &mut String, height: f64) {
    w!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\">\n\
<rect width=\"{w}\" height=\"{h}\" fill=\"#ffffff\"/>\n<g font-family=\"{FONT}\" fill=\"#000\">\n",
        w = f2(WIDTH),
        h = f2(height),
    );
}

/// Defines a diagonal hatch pattern `id`: `ink` lines on a `fill` ground.
///
/// The lines are drawn corner to corner in an unrotated tile, because a rotated tile
/// (`patternTransform`) shows seams where the PDF tiles meet.
fn hatch(out: &mut String, id: &str, fill: &str, ink: &str) {
    w!(
        out,
        "<pattern id=\"{id}\" patternUnits=\"userSpaceOnUse\" width=\"6\" height=\"6\">\
<rect width=\"6\" height=\"6\" fill=\"{fill}\"/>\
<path d=\"M0,6 L6,0 M-1.5,1.5 L1.5,-1.5 M4.5,7.5 L7.5,4.5\" stroke=\"{ink}\" stroke-width=\"1.3\"/></pattern>"
    );
}

/// A small SVG that says "no data", for empty input.
fn no_data() -> String {
    let mut out = String::new();
    open_svg(&mut out, 40.0);
    text(&mut out, WIDTH / 2.0, baseline(20.0, 12.0), "middle", 12.0, PLAIN, "no data");
    out.push_str("</g>\n</svg>\n");
    out
}

/// Writes one escaped `<text>` element; `extra` is [`PLAIN`], [`BOLD`] or [`HALO`].
fn text(out: &mut String, x: f64, y: f64, anchor: &str, size: f64, extra: &str, s: &str) {
    w!(
        out,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"{anchor}\" font-size=\"{}\"{extra}>{}</text>\n",
        f2(x),
        f2(y),
        f2(size),
        esc(s),
    );
}

/// Baseline that centres a line of text of `size` px on `mid`.
///
/// Computed rather than left to `dominant-baseline`, which SVG renderers handle unevenly.
fn baseline(mid: f64, size: f64) -> f64 {
    mid + 0.35 * size
}

/// Rough width of `s` at `size` px, for spacing legend items.
fn text_w(s: &str, size: f64) -> f64 {
    s.chars().count() as f64 * size * GLYPH_W
}

/// A legend swatch at (`x`, `y`) followed by its label.
fn legend_item(out: &mut String, x: f64, y: f64, fill: &str, label: &str) {
    w!(
        out,
        "<rect x=\"{}\" y=\"{}\" width=\"14.00\" height=\"10.00\" fill=\"{fill}\" stroke=\"{OUTLINE}\" stroke-width=\"0.6\"/>\n",
        f2(x),
        f2(y),
    );
    text(out, x + 19.0, baseline(y + 5.0, 11.0), "start", 11.0, PLAIN, label);
}

/// A right-pointing triangle marking the highlighted bar.
fn marker(out: &mut String, x: f64, mid: f64) {
    w!(
        out,
        "<polygon points=\"{},{} {},{} {},{}\" fill=\"#000\"/>\n",
        f2(x),
        f2(mid - 5.0),
        f2(x + 8.0),
        f2(mid),
        f2(x),
        f2(mid + 5.0),
    );
}

/// A thin horizontal whisker from `x1` to `x2` with a cap at `x2`.
fn whisker(out: &mut String, x1: f64, x2: f64, mid: f64) {
    w!(
        out,
        "<line x1=\"{}\" y1=\"{m}\" x2=\"{}\" y2=\"{m}\" stroke=\"#000\" stroke-width=\"1\"/>\
<line x1=\"{x2}\" y1=\"{}\" x2=\"{x2}\" y2=\"{}\" stroke=\"#000\" stroke-width=\"1\"/>\n",
        f2(x1),
        f2(x2),
        f2(mid - 3.5),
        f2(mid + 3.5),
        m = f2(mid),
        x2 = f2(x2),
    );
}

/// Axis line at `y` under a plot area, with tick marks, tick labels and a centred title.
fn x_axis(out: &mut String, x0: f64, wdt: f64, y: f64, ticks: &[(f64, String)], title: &str) {
    w!(
        out,
        "<line x1=\"{}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"#000\" stroke-width=\"0.8\"/>\n",
        f2(x0),
        f2(x0 + wdt),
        y = f2(y),
    );
    for (frac, label) in ticks {
        let x = x0 + wdt * frac;
        w!(
            out,
            "<line x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\" stroke=\"#000\" stroke-width=\"0.8\"/>\n",
            f2(y),
            f2(y + 4.0),
            x = f2(x),
        );
        text(out, x, y + 15.0, "middle", 10.0, PLAIN, label);
    }
    text(out, x0 + wdt / 2.0, y + 32.0, "middle", 11.0, PLAIN, title);
}

/// A linear axis from 0 to `max_ns` with a tick every `step_ns`, labelled in ms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Axis {
    /// End of the axis, a whole number of steps.
    max_ns: i64,
    /// Distance between ticks.
    step_ns: i64,
}

impl Axis {
    /// Picks a 1-2-5 step giving at most eight intervals, the step no smaller than `min_step_ns`.
    ///
    /// All in integer ns, so that the tick labels are exact decimals of a ms.
    fn nice(max_ns: i64, min_step_ns: i64) -> Axis {
        let min_step = min_step_ns.max(1);
        let max = if max_ns > 0 { max_ns } else { min_step };
        let intervals = |step: i64| (max + step - 1) / step;
        let mut step = min_step;
        let mut k = 0;
        while intervals(step) > 8 {
            step = min_step * [2, 5, 10][k % 3] * 10_i64.pow((k / 3) as u32);
            k += 1;
        }
        Axis { max_ns: intervals(step) * step, step_ns: step }
    }

    /// Tick positions as shares of the axis, with their labels in ms (as few decimals as the
    /// step needs, at most two).
    fn ticks(&self) -> Vec<(f64, String)> {
        let places = match self.step_ns {
            s if s >= 1_000_000 => 0,
            s if s >= 100_000 => 1,
            _ => 2,
        };
        (0..=self.max_ns / self.step_ns)
            .map(|i| {
                let v = self.step_ns * i;
                let label = units::decimal(i128::from(v), 1_000_000, places).unwrap_or_default();
                (v as f64 / self.max_ns as f64, label)
            })
            .collect()
    }

    /// Where `ns` falls on a plot area `wdt` px wide, clamped to it.
    fn scale(&self, ns: i64, wdt: f64) -> f64 {
        (ns.max(0) as f64 / self.max_ns as f64 * wdt).min(wdt)
    }
}

/// `part / total` as a share in `0..=1`; 0 for an empty total.
fn share(part: i64, total: i64) -> f64 {
    if total <= 0 { 0.0 } else { (part.max(0) as f64 / total as f64).clamp(0.0, 1.0) }
}

/// An offset for a value label: ms with two decimals, or whole µs below 0.1 ms.
///
/// End offsets are tens of µs; "0.01 ms" would hide the very differences the chart is about.
fn fmt_offset(ns: i64) -> String {
    if ns.abs() < 100_000 {
        format!("{} µs", units::us(ns))
    } else {
        format!("{} ms", units::ms(ns))
    }
}

/// `part / total` as a percentage with one decimal; a dash for an empty total.
fn pct(part: i64, total: i64) -> String {
    units::percent(i128::from(part), i128::from(total)).unwrap_or_else(|| "–".to_string())
}

/// Two decimals, with negative zero printed as `0.00` so output does not depend on rounding sign.
fn f2(v: f64) -> String {
    let s = format!("{v:.2}");
    if s == "-0.00" { "0.00".to_string() } else { s }
}

/// Escapes the five XML special characters.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;

    /// ms with two decimals, as in DOMAIN.md, to ns.
    fn ms(v: f64) -> i64 {
        (v * 1e6).round() as i64
    }

    fn article_overlap() -> Vec<OverlapBar> {
        let rows = [
            (1, 4158.02, 1207.20, 699.59, 90.82, 6155.63),
            (2, 4520.31, 860.59, 678.53, 96.37, 6155.80),
            (3, 4228.13, 1142.73, 697.40, 87.43, 6155.69),
            (4, 4260.44, 1094.74, 709.19, 91.38, 6155.75),
            (5, 4082.92, 1276.38, 708.02, 88.79, 6156.11),
            (6, 4581.71, 808.76, 670.43, 94.92, 6155.82),
            (7, 4334.06, 1039.31, 688.51, 93.73, 6155.61),
        ];
        rows.iter()
            .map(|&(device, c, n, o, i, t)| OverlapBar {
                device,
                compute_only_ns: ms(c),
                nccl_only_ns: ms(n),
                overlap_ns: ms(o),
                idle_ns: ms(i),
                total_ns: ms(t),
                highlight: device == 4,
            })
            .collect()
    }

    fn article_skew() -> Vec<SkewRank> {
        let rows = [
            (1, 2.14, 5.87, 0.012, 0.021),
            (2, 6.92, 12.40, 0.008, 0.017),
            (3, 3.55, 8.06, 0.027, 0.034),
            (4, 8.71, 14.93, 0.005, 0.011),
            (5, 4.30, 9.12, 0.019, 0.029),
            (6, 2.86, 6.44, 0.030, 0.041),
            (7, 5.48, 11.25, 0.014, 0.022),
        ];
        rows.iter()
            .map(|&(device, sm, sp, em, ep)| SkewRank {
                device,
                start_median_ns: ms(sm),
                start_p90_ns: ms(sp),
                end_median_ns: ms(em),
                end_p90_ns: ms(ep),
            })
            .collect()
    }

    fn article_kernels() -> Vec<KernelBar> {
        let rows = [
            ("ncclDevKernel_AllGather_RING_LL", 24000.0, 5_614, true),
            (
                "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas",
                9_812.37,
                41_160,
                false,
            ),
            ("nvjet_tst_256x128_64x4_1x2_h_bz_coopA_TNT", 7_431.90, 27_440, false),
            ("flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel", 5_204.66, 980, false),
            ("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL", 4_118.25, 2_807, true),
            ("flash_fwd_kernel", 2_297.04, 980, false),
            (
                "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>>",
                1_503.12,
                88_200,
                false,
            ),
            ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 902.48, 140, true),
            ("layer_norm_fwd_kernel", 611.80, 1_960, false),
            ("multi_tensor_apply_kernel", 300.07, 1, false),
        ];
        rows.iter()
            .map(|&(name, t, count, nccl)| KernelBar {
                name: name.to_string(),
                total_ns: ms(t),
                count,
                nccl,
            })
            .collect()
    }

    /// The value of attribute `attr` on the first element that contains `marker`.
    fn attr_of(svg: &str, marker: &str, attr: &str) -> f64 {
        let start = svg.find(marker).unwrap_or_else(|| panic!("{marker} not in svg"));
        let elem = &svg[start..start + svg[start..].find('>').expect("unclosed element")];
        let key = format!(" {attr}=\"");
        let from = elem.find(&key).unwrap_or_else(|| panic!("no {attr} in {elem}")) + key.len();
        elem[from..from + elem[from..].find('"').expect("unclosed attr")].parse().expect("number")
    }

    #[test]
    fn overlap_segments_are_shares_of_plot_width() {
        let bar = OverlapBar {
            device: 0,
            compute_only_ns: 50 * MS,
            nccl_only_ns: 25 * MS,
            overlap_ns: 15 * MS,
            idle_ns: 10 * MS,
            total_ns: 100 * MS,
            highlight: false,
        };
        let svg = overlap_chart(&[bar]);
        assert_eq!(OV_PLOT_W, 480.0);
        assert_eq!(attr_of(&svg, "class=\"compute_only\"", "width"), 240.0);
        assert_eq!(attr_of(&svg, "class=\"compute_only\"", "x"), OV_PLOT_X);
        assert_eq!(attr_of(&svg, "class=\"nccl_only\"", "width"), 120.0);
        assert_eq!(attr_of(&svg, "class=\"nccl_only\"", "x"), OV_PLOT_X + 240.0);
        assert_eq!(attr_of(&svg, "class=\"overlap\"", "width"), 72.0);
        assert_eq!(attr_of(&svg, "class=\"idle\"", "width"), 48.0);
        assert!(svg.contains(">25.0%</text>"), "exposed NCCL share printed");
        assert!(!svg.contains("<polygon"), "no marker without highlight");
    }

    #[test]
    fn overlap_article_device_4_is_highlighted_at_17_8_percent() {
        let svg = overlap_chart(&article_overlap());
        assert!(svg.contains("font-weight=\"bold\">device 4</text>"));
        assert!(svg.contains("font-weight=\"bold\">17.8%</text>"));
        assert_eq!(svg.matches("<polygon").count(), 1);
        assert_eq!(svg.matches("stroke-width=\"2.20\"").count(), 1);
        // 4,260.44 / 6,155.75 of the plot width.
        let w4 = 4260.44 / 6155.75 * OV_PLOT_W;
        let drawn = svg.match_indices("class=\"compute_only\"").nth(3).expect("fourth bar").0;
        assert!((attr_of(&svg[drawn..], "class=", "width") - w4).abs() < 0.01);
    }

    #[test]
    fn overlap_zero_total_draws_zero_width_bars() {
        let bar = OverlapBar {
            device: 3,
            compute_only_ns: 5,
            nccl_only_ns: 0,
            overlap_ns: 0,
            idle_ns: 0,
            total_ns: 0,
            highlight: true,
        };
        let svg = overlap_chart(&[bar]);
        assert_eq!(attr_of(&svg, "class=\"compute_only\"", "width"), 0.0);
        assert!(svg.contains(">–</text>"), "no share of an empty total");
    }

    #[test]
    fn overlap_overfull_bar_is_clamped_to_plot() {
        let bar = OverlapBar {
            device: 1,
            compute_only_ns: 80,
            nccl_only_ns: 80,
            overlap_ns: 0,
            idle_ns: 0,
            total_ns: 100,
            highlight: false,
        };
        let svg = overlap_chart(&[bar]);
        assert_eq!(attr_of(&svg, "class=\"nccl_only\"", "width"), OV_PLOT_W * 0.2);
    }

    #[test]
    fn skew_bars_and_whiskers_follow_the_axis() {
        let r = SkewRank {
            device: 2,
            start_median_ns: 4 * MS,
            start_p90_ns: 7 * MS,
            end_median_ns: 20_000,
            end_p90_ns: 30_000,
        };
        let svg = skew_chart(&[r]);
        // max 7 ms -> step 1 ms, axis 0..7 ms.
        assert_eq!(Axis::nice(7 * MS, 10_000), Axis { max_ns: 7 * MS, step_ns: MS });
        assert_eq!(
            attr_of(&svg, "class=\"start\"", "width"),
            (4.0 / 7.0 * SK_PLOT_W * 100.0).round() / 100.0
        );
        assert_eq!(
            attr_of(&svg, "class=\"end\"", "width"),
            (0.02 / 7.0 * SK_PLOT_W * 100.0).round() / 100.0
        );
        // Whisker cap at p90 = 7 ms, the end of the axis.
        assert!(svg.contains(&format!(
            "x1=\"{0}\" y1=\"{1}\" x2=\"{0}\"",
            f2(SK_PLOT_X + SK_PLOT_W),
            f2(SK_TOP + 1.0)
        )));
        assert!(svg.contains(">4.00 ms, p90 7.00 ms</text>"));
        assert!(svg.contains(">20 µs, p90 30 µs</text>"));
        for t in ["0", "1", "4", "7"] {
            assert!(svg.contains(&format!(">{t}</text>")), "tick {t}");
        }
    }

    #[test]
    fn nice_axis_steps() {
        assert_eq!(Axis::nice(15 * MS, 10_000), Axis { max_ns: 16 * MS, step_ns: 2 * MS });
        assert_eq!(Axis::nice(24_000 * MS, MS), Axis { max_ns: 25_000 * MS, step_ns: 5_000 * MS });
        assert_eq!(Axis::nice(30_000, 10_000), Axis { max_ns: 30_000, step_ns: 10_000 });
        assert_eq!(Axis::nice(70_000, 10_000), Axis { max_ns: 70_000, step_ns: 10_000 });
        assert_eq!(Axis::nice(0, 10_000), Axis { max_ns: 10_000, step_ns: 10_000 });
        assert_eq!(Axis::nice(-5, MS), Axis { max_ns: MS, step_ns: MS });
    }

    #[test]
    fn tick_labels_are_exact_ms() {
        let labels = |a: Axis| a.ticks().into_iter().map(|t| t.1).collect::<Vec<_>>();
        assert_eq!(labels(Axis::nice(30_000, 10_000)), ["0.00", "0.01", "0.02", "0.03"]);
        assert_eq!(
            labels(Axis::nice(700_000, 10_000)),
            ["0.0", "0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7"]
        );
        assert_eq!(
            labels(Axis::nice(24_000 * MS, MS)),
            ["0", "5,000", "10,000", "15,000", "20,000", "25,000"]
        );
    }

    #[test]
    fn kernel_bars_scale_to_axis_and_shorten_names() {
        let svg = kernels_chart(&article_kernels());
        // 24,000 ms on a 0..25,000 ms axis.
        assert_eq!(attr_of(&svg, "class=\"nccl\"", "width"), 24.0 / 25.0 * KN_PLOT_W);
        assert_eq!(
            attr_of(&svg, "class=\"compute\"", "width"),
            (9812.37 / 25000.0 * KN_PLOT_W * 100.0).round() / 100.0
        );
        assert!(svg.contains(">sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn…5x_cublas</text>"));
        assert!(svg.contains("<title>sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64"));
        assert!(svg.contains(">flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel</text>"));
        assert!(svg.contains(">24,000.00 ms (5,614 calls)</text>"));
        assert!(svg.contains(">300.07 ms (1 call)</text>"));
        assert!(svg.contains(">25,000</text>"));
    }

    #[test]
    fn text_is_escaped() {
        let name = "k<int>&\"x\"'y'".to_string();
        let svg = kernels_chart(&[KernelBar { name, total_ns: MS, count: 1, nccl: false }]);
        let escaped = "k&lt;int&gt;&amp;&quot;x&quot;&apos;y&apos;";
        assert!(svg.contains(&format!("<title>{escaped}</title>")));
        assert!(svg.contains(&format!(">{escaped}</text>")));
        assert!(!svg.contains("<int>"));
        assert_eq!(esc("<>&\"'"), "&lt;&gt;&amp;&quot;&apos;");
    }

    #[test]
    fn empty_input_says_no_data() {
        for svg in [overlap_chart(&[]), skew_chart(&[]), kernels_chart(&[])] {
            assert!(svg.starts_with("<svg "));
            assert!(svg.contains(">no data</text>"));
            assert!(svg.trim_end().ends_with("</svg>"));
        }
    }

    #[test]
    fn output_is_deterministic_with_two_decimals() {
        let a = [
            overlap_chart(&article_overlap()),
            skew_chart(&article_skew()),
            kernels_chart(&article_kernels()),
        ];
        let b = [
            overlap_chart(&article_overlap()),
            skew_chart(&article_skew()),
            kernels_chart(&article_kernels()),
        ];
        assert_eq!(a, b);
        let three_decimals = regex::Regex::new(r"\d\.\d{3}").expect("regex");
        for svg in &a {
            assert!(!three_decimals.is_match(svg), "more than two decimals in {svg}");
        }
    }

    #[test]
    fn offsets_switch_to_microseconds_below_a_tenth_of_a_ms() {
        assert_eq!(fmt_offset(12_400), "12 µs");
        assert_eq!(fmt_offset(12_500), "13 µs");
        assert_eq!(fmt_offset(99_999), "100 µs");
        assert_eq!(fmt_offset(100_000), "0.10 ms");
        assert_eq!(fmt_offset(14_930_000), "14.93 ms");
        assert_eq!(fmt_offset(0), "0 µs");
    }

    #[test]
    fn milliseconds_round_half_away_from_zero() {
        // 1,094.745 ms: float formatting printed 1,094.74.
        let bar = OverlapBar {
            device: 4,
            compute_only_ns: 0,
            nccl_only_ns: 1_094_745_000,
            overlap_ns: 0,
            idle_ns: 0,
            total_ns: 6_155_750_000,
            highlight: false,
        };
        assert!(
            overlap_chart(&[bar]).contains(": NCCL only (exposed) 1,094.75 ms (17.8%)</title>")
        );
        let k = KernelBar { name: "k".into(), total_ns: 1_094_745_000, count: 2, nccl: false };
        assert!(kernels_chart(&[k]).contains(">1,094.75 ms (2 calls)</text>"));
    }

    /// Compiles all three charts with typst and requires a clean run.
    ///
    /// Set `VERDICT_CHARTS_DIR` to keep the SVGs, the `.typ` and the PDF for inspection.
    #[test]
    fn typst_renders_charts_without_warnings() {
        if std::process::Command::new("typst").arg("--version").output().is_err() {
            eprintln!("skipping: typst is not on PATH");
            return;
        }
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = match std::env::var_os("VERDICT_CHARTS_DIR") {
            Some(d) => std::path::PathBuf::from(d),
            None => tmp.path().to_path_buf(),
        };
        std::fs::create_dir_all(&dir).expect("mkdir");
        let charts = [
            ("overlap.svg", overlap_chart(&article_overlap())),
            ("skew.svg", skew_chart(&article_skew())),
            ("kernels.svg", kernels_chart(&article_kernels())),
            ("empty.svg", kernels_chart(&[])),
        ];
        for (file, svg) in &charts {
            std::fs::write(dir.join(file), svg).expect("write svg");
            let stem = file.trim_end_matches(".svg");
            let typ = format!(
                "#set page(width: 16cm, height: auto, margin: 1cm)\n#image(\"{file}\", width: 100%)\n"
            );
            std::fs::write(dir.join(format!("{stem}.typ")), typ).expect("write typ");
            let out = std::process::Command::new("typst")
                .arg("compile")
                .arg(dir.join(format!("{stem}.typ")))
                .arg(dir.join(format!("{stem}.pdf")))
                .output()
                .expect("run typst");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "typst failed on {file}: {stderr}");
            assert!(stderr.trim().is_empty(), "typst warned on {file}: {stderr}");
            let pdf = std::fs::read(dir.join(format!("{stem}.pdf"))).expect("read pdf");
            assert!(pdf.starts_with(b"%PDF"));
        }
    }
}

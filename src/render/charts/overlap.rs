//! The overlap breakdown: one stacked 100% bar per device (compute only, exposed NCCL, overlap,
//! idle), read from the rows (or, for one device, the values) of overlap evidence.

use super::svg::{
    BOLD, OUTLINE, PLAIN, WIDTH, baseline, close_svg, f2, grid, hatch, legend, marker, no_data,
    open_svg, share, text, w, x_axis,
};
use super::{Labels, Scope, fill, subst};
use crate::analysis::values::{Rows, Values};
use crate::analysis::{Evidence, overlap};
use crate::i18n::Strings;
use crate::render::RenderError;
use crate::scope::Semantics;
use crate::units;

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
    /// The device's total (window length, or span of its kept kernels); each bar spans it.
    pub total_ns: i64,
    /// Whether this is the device a claim is about.
    pub highlight: bool,
}

/// The bars of overlap evidence, or `None` when it is not overlap evidence.
///
/// Several devices give one row each; a single device gives `values`.
pub(super) fn bars(ev: &Evidence, highlighted: &[i64]) -> Option<Vec<OverlapBar>> {
    let bar = |v: &overlap::Values, device: i64| OverlapBar {
        device,
        compute_only_ns: v.compute_only_ns,
        nccl_only_ns: v.nccl_only_ns,
        overlap_ns: v.overlap_ns,
        idle_ns: v.idle_ns,
        total_ns: v.total_ns,
        highlight: highlighted.contains(&device),
    };
    match (&ev.rows, &ev.values, ev.scope.devices.as_slice()) {
        (Some(Rows::Overlap(rows)), _, _) => {
            Some(rows.iter().map(|r| bar(&r.values, r.device)).collect())
        }
        (None, Some(Values::Overlap(v)), [device]) => Some(vec![bar(v, *device)]),
        _ => None,
    }
}

/// The caption: scope, and what each bar's 100% is.
pub(super) fn caption(scope: &Scope, ev: &Evidence, t: &Strings) -> Result<String, RenderError> {
    let total = match (ev.window.requested_ns, ev.window.semantics) {
        (None, _) => "ui.chart_total_trace",
        (Some(_), Semantics::Clip) => "ui.chart_total_clip",
        (Some(_), Semantics::Contain) => "ui.chart_total_contain",
    };
    let total = t.get(total)?;
    let mut args = scope.args();
    args.push(("total", total));
    fill(t, "ui.chart_overlap", &args)
}

/// Right edge of the device labels.
const LABEL_X: f64 = 74.0;
/// Left edge of the plot area.
const PLOT_X: f64 = 82.0;
/// Width of the plot area; a bar at 100% spans it exactly.
pub(super) const PLOT_W: f64 = 480.0;
const TOP: f64 = 44.0;
const BAR_H: f64 = 18.0;
const ROW_H: f64 = 27.0;

/// Stacked 100% bars per device.
///
/// Segments are shares of each device's `total_ns`; the exposed-NCCL share is printed at the end
/// of each bar, and a highlighted bar gets a heavy outline, a bold label and a marker.
pub fn overlap_chart(bars: &[OverlapBar], l: &Labels) -> String {
    if bars.is_empty() {
        return no_data(&l.no_data);
    }
    // The four segments in drawing order: class, legend label, fill.
    let series = [
        ("compute_only", l.compute_only.as_str(), "#c6dbef"),
        ("nccl_only", l.nccl_only.as_str(), "url(#ov-nccl)"),
        ("overlap", l.overlap.as_str(), "url(#ov-overlap)"),
        ("idle", l.idle.as_str(), "#ffffff"),
    ];
    let plot_bottom = TOP + ROW_H * bars.len() as f64 - (ROW_H - BAR_H);
    let mut out = String::new();
    open_svg(&mut out, plot_bottom + 44.0);
    out.push_str("<defs>");
    hatch(&mut out, "ov-nccl", "#fdd0a2", "#7f2704");
    out.push_str(
        "<pattern id=\"ov-overlap\" patternUnits=\"userSpaceOnUse\" width=\"5\" height=\"5\">\
<rect width=\"5\" height=\"5\" fill=\"#c7e9c0\"/><circle cx=\"2.5\" cy=\"2.5\" r=\"1\" fill=\"#00441b\"/></pattern>",
    );
    out.push_str("</defs>\n");

    let items: Vec<(&str, &str)> = series.iter().map(|(_, label, fill)| (*fill, *label)).collect();
    legend(&mut out, PLOT_X, 12.0, &items);
    text(&mut out, WIDTH - 4.0, TOP - 6.0, "end", 10.0, PLAIN, &l.exposed);

    let ticks: Vec<(f64, String)> =
        (0..=4).map(|i| (f64::from(i) / 4.0, format!("{}%", i * 25))).collect();
    grid(&mut out, PLOT_X, PLOT_W, TOP - 4.0, plot_bottom + 4.0, &ticks);
    x_axis(&mut out, PLOT_X, PLOT_W, plot_bottom + 4.0, &ticks, &l.share_axis);

    for (i, bar) in bars.iter().enumerate() {
        let y = TOP + ROW_H * i as f64;
        let total = bar.total_ns;
        let device = l.device(bar.device);
        let parts = [bar.compute_only_ns, bar.nccl_only_ns, bar.overlap_ns, bar.idle_ns];
        let mut cursor = PLOT_X;
        for ((class, label, fill), ns) in series.iter().zip(parts) {
            let wdt = (share(ns, total) * PLOT_W).min(PLOT_X + PLOT_W - cursor);
            let tip = subst(
                &l.segment_tip,
                &[
                    ("device", &device),
                    ("series", label),
                    ("ms", &units::ms(ns)),
                    ("share", &pct(ns, total)),
                ],
            );
            w!(
                out,
                "<rect class=\"{class}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{fill}\" stroke=\"{OUTLINE}\" stroke-width=\"0.5\">\
<title>{}</title></rect>\n",
                f2(cursor),
                f2(y),
                f2(wdt),
                f2(BAR_H),
                super::svg::esc(&tip),
            );
            cursor += wdt;
        }
        let stroke_w = if bar.highlight { 2.2 } else { 0.8 };
        w!(
            out,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#000\" stroke-width=\"{}\"/>\n",
            f2(PLOT_X),
            f2(y),
            f2(cursor - PLOT_X),
            f2(BAR_H),
            f2(stroke_w),
        );
        let mid = y + BAR_H / 2.0;
        let weight = if bar.highlight { BOLD } else { PLAIN };
        text(&mut out, LABEL_X, baseline(mid, 12.0), "end", 12.0, weight, &device);
        let exposed = pct(bar.nccl_only_ns, total);
        text(&mut out, PLOT_X + PLOT_W + 6.0, baseline(mid, 12.0), "start", 12.0, weight, &exposed);
        if bar.highlight {
            marker(&mut out, 4.0, mid);
        }
    }
    close_svg(&mut out);
    out
}

/// `part / total` as a percentage with one decimal; a dash for an empty total.
fn pct(part: i64, total: i64) -> String {
    units::percent(i128::from(part), i128::from(total)).unwrap_or_else(|| "–".to_string())
}

#[cfg(test)]
mod tests {
    use super::super::tests::{attr_of, en, ms, zh};
    use super::*;

    const MS: i64 = 1_000_000;

    pub(crate) fn article() -> Vec<OverlapBar> {
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

    #[test]
    fn segments_are_shares_of_plot_width() {
        let bar = OverlapBar {
            device: 0,
            compute_only_ns: 50 * MS,
            nccl_only_ns: 25 * MS,
            overlap_ns: 15 * MS,
            idle_ns: 10 * MS,
            total_ns: 100 * MS,
            highlight: false,
        };
        let svg = overlap_chart(&[bar], &en());
        assert_eq!(PLOT_W, 480.0);
        assert_eq!(attr_of(&svg, "class=\"compute_only\"", "width"), 240.0);
        assert_eq!(attr_of(&svg, "class=\"compute_only\"", "x"), PLOT_X);
        assert_eq!(attr_of(&svg, "class=\"nccl_only\"", "width"), 120.0);
        assert_eq!(attr_of(&svg, "class=\"nccl_only\"", "x"), PLOT_X + 240.0);
        assert_eq!(attr_of(&svg, "class=\"overlap\"", "width"), 72.0);
        assert_eq!(attr_of(&svg, "class=\"idle\"", "width"), 48.0);
        assert!(svg.contains(">25.0%</text>"), "exposed NCCL share printed");
        assert!(svg.contains("<title>device 0: NCCL only (exposed) 25.00 ms (25.0%)</title>"));
        assert!(!svg.contains("<polygon"), "no marker without highlight");
    }

    #[test]
    fn article_device_4_is_highlighted_at_17_8_percent() {
        let svg = overlap_chart(&article(), &en());
        assert!(svg.contains("font-weight=\"bold\">device 4</text>"));
        // 1,094.74 / 6,155.75 = 0.17784 -> 17.8%.
        assert!(svg.contains("font-weight=\"bold\">17.8%</text>"));
        assert!(svg.contains("<title>device 4: compute only 4,260.44 ms (69.2%)</title>"));
        assert_eq!(svg.matches("<polygon").count(), 1);
        assert_eq!(svg.matches("stroke-width=\"2.20\"").count(), 1);
        let w4 = 4260.44 / 6155.75 * PLOT_W;
        let drawn = svg.match_indices("class=\"compute_only\"").nth(3).expect("fourth bar").0;
        assert!((attr_of(&svg[drawn..], "class=", "width") - w4).abs() < 0.01);
    }

    #[test]
    fn milliseconds_round_half_away_from_zero() {
        // 1,094.745 ms: the float path printed 1,094.74.
        let bar = OverlapBar {
            device: 4,
            compute_only_ns: 0,
            nccl_only_ns: 1_094_745_000,
            overlap_ns: 0,
            idle_ns: 0,
            total_ns: 6_155_750_000,
            highlight: false,
        };
        let svg = overlap_chart(&[bar], &en());
        assert!(svg.contains("NCCL only (exposed) 1,094.75 ms (17.8%)</title>"), "{svg}");
    }

    #[test]
    fn zero_total_draws_zero_width_bars_and_no_share() {
        let bar = OverlapBar {
            device: 3,
            compute_only_ns: 5,
            nccl_only_ns: 0,
            overlap_ns: 0,
            idle_ns: 0,
            total_ns: 0,
            highlight: true,
        };
        let svg = overlap_chart(&[bar], &en());
        assert_eq!(attr_of(&svg, "class=\"compute_only\"", "width"), 0.0);
        assert!(svg.contains(">–</text>"));
    }

    #[test]
    fn overfull_bar_is_clamped_to_plot() {
        let bar = OverlapBar {
            device: 1,
            compute_only_ns: 80,
            nccl_only_ns: 80,
            overlap_ns: 0,
            idle_ns: 0,
            total_ns: 100,
            highlight: false,
        };
        let svg = overlap_chart(&[bar], &en());
        assert_eq!(attr_of(&svg, "class=\"nccl_only\"", "width"), PLOT_W * 0.2);
    }

    #[test]
    fn zh_tw_labels() {
        let svg = overlap_chart(&article(), &zh());
        for label in [
            "只有運算",
            "只有 NCCL（exposed）",
            "運算與 NCCL 重疊",
            "閒置",
            "各 device 總長中的佔比",
        ] {
            assert!(svg.contains(&format!(">{label}</text>")), "{label}");
        }
        assert!(svg.contains("<title>device 4：只有運算 4,260.44 ms（69.2%）</title>"));
    }
}

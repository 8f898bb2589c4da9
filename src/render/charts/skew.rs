//! NCCL cross-rank skew: per rank, the start and end offsets from the earliest rank (median bar,
//! p90 whisker), read from the per-rank offset maps of nccl-skew evidence.

use super::svg::{
    Axis, HALO, OUTLINE, PLAIN, baseline, close_svg, esc, f2, grid, hatch, legend, no_data,
    open_svg, text, w, whisker, x_axis,
};
use super::{Labels, Scope, fill, subst};
use crate::analysis::Evidence;
use crate::analysis::values::Values;
use crate::i18n::Strings;
use crate::render::RenderError;
use crate::units;

/// One rank's offset statistics, in ns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkewRank {
    /// Device id of the rank (in a trace set, its rank number).
    pub device: i64,
    /// In a trace set, the rank's label (`host:pid/devN`).
    pub label: Option<String>,
    /// Median of kernel start minus the instance's earliest start.
    pub start_median_ns: i64,
    /// 90th percentile of the start offset.
    pub start_p90_ns: i64,
    /// Median of kernel end minus the instance's earliest end.
    pub end_median_ns: i64,
    /// 90th percentile of the end offset.
    pub end_p90_ns: i64,
    /// Matched instances behind the statistics: with one, the median and p90 are that one
    /// offset, drawn as a bar without a whisker and labelled once.
    pub instances: i64,
}

/// The ranks of nccl-skew evidence, sorted by device, or `None` when there is nothing to
/// compare: no matched instance, fewer than two ranks, or offsets that do not exist.
pub(super) fn ranks(ev: &Evidence) -> Option<Vec<SkewRank>> {
    let Some(Values::NcclSkew(v)) = ev.values.as_ref() else { return None };
    // No matched instance: the offsets, however written, measure nothing.
    if v.matched <= 0 {
        return None;
    }
    let (starts, ends) = (v.rank_start_offset_ns.as_ref()?, v.rank_end_offset_ns.as_ref()?);
    if starts.len() < 2 || starts.len() != ends.len() {
        return None;
    }
    // Ranks in order: the maps are keyed by device.
    starts
        .iter()
        .map(|(&device, s)| {
            let (s, e) = ((*s)?, (*ends.get(&device)?)?);
            Some(SkewRank {
                label: ev.trace.set.as_deref().map(|set| set.label(device)),
                device,
                start_median_ns: s.median,
                start_p90_ns: s.p90,
                end_median_ns: e.median,
                end_p90_ns: e.p90,
                instances: v.matched,
            })
        })
        .collect()
}

/// The caption: scope with the stream.
pub(super) fn caption(scope: &Scope, ev: &Evidence, t: &Strings) -> Result<String, RenderError> {
    let stream = match &ev.scope.streams {
        Some(s) => {
            let list = s.iter().map(i64::to_string).collect::<Vec<_>>().join(", ");
            fill(t, "ui.chart_stream", &[("stream", &list)])?
        }
        None => t.get("ui.chart_all_streams")?.to_string(),
    };
    let encoding = match ev.values.as_ref() {
        Some(Values::NcclSkew(v)) if v.matched == 1 => t.get("ui.chart_skew_encoding_one")?,
        _ => t.get("ui.chart_skew_encoding")?,
    };
    let mut args = scope.args();
    args.push(("stream", &stream));
    args.push(("encoding", encoding));
    // A trace set's ranks are no devices: they are named by number, and labelled in the chart.
    let ranks = crate::scope::format_device_list(&ev.scope.devices);
    if ev.trace.set.as_deref().is_some_and(|s| s.files.len() > 1) {
        args.retain(|(k, _)| *k != "devices");
        args.push(("ranks", &ranks));
        return fill(t, "ui.chart_skew_set", &args);
    }
    fill(t, "ui.chart_skew", &args)
}

/// Left edge of the plot area; the device label and the row names sit left of it.
const PLOT_X: f64 = 104.0;
/// Width of the plot area, leaving room right of it for the value labels.
pub(super) const PLOT_W: f64 = 396.0;
pub(super) const TOP: f64 = 44.0;
const BAR_H: f64 = 9.0;
/// Height of a rank's label line in a trace set.
const LABEL_H: f64 = 14.0;
const ROW_H: f64 = 32.0;
/// Finest tick step: 0.01 ms.
const MIN_STEP_NS: i64 = 10_000;

/// Start vs end offset per rank.
///
/// Two bars per rank on one linear ms axis: bar = median, whisker = p90, each labelled with its
/// values so that microsecond-scale end offsets stay readable next to millisecond starts.
pub fn skew_chart(ranks: &[SkewRank], l: &Labels) -> String {
    let Some(max_ns) = ranks
        .iter()
        .flat_map(|r| [r.start_median_ns, r.start_p90_ns, r.end_median_ns, r.end_p90_ns])
        .max()
    else {
        return no_data(&l.no_data);
    };
    let axis = Axis::nice(max_ns, MIN_STEP_NS);
    // Ranks of a trace set carry a label (`host:pid/devN`), on a line of its own above the
    // rank's bars.
    let label_h = if ranks.iter().any(|r| r.label.is_some()) { LABEL_H } else { 0.0 };
    let row_h = ROW_H + label_h;
    let plot_bottom = TOP + row_h * ranks.len() as f64 - (ROW_H - 2.0 * BAR_H - 2.0);
    let mut out = String::new();
    open_svg(&mut out, plot_bottom + 44.0);
    out.push_str("<defs>");
    hatch(&mut out, "sk-start", "#9ecae1", "#08306b");
    out.push_str("</defs>\n");

    let x = legend(
        &mut out,
        PLOT_X,
        12.0,
        &[("url(#sk-start)", &l.start_offset), ("#fdae6b", &l.end_offset)],
    );
    // One matched instance: each bar is its offset, a median and a p90 of one value would
    // say nothing more.
    let one = ranks.iter().all(|r| r.instances == 1);
    // A sample bar (with its whisker) explains the encoding.
    w!(
        out,
        "<rect x=\"{}\" y=\"14.50\" width=\"18.00\" height=\"9.00\" fill=\"#ffffff\" stroke=\"{OUTLINE}\" stroke-width=\"0.6\"/>\n",
        f2(x)
    );
    if one {
        text(&mut out, x + 24.0, baseline(19.0, 11.0), "start", 11.0, PLAIN, &l.encoding_one);
    } else {
        whisker(&mut out, x + 18.0, x + 30.0, 19.0);
        text(&mut out, x + 36.0, baseline(19.0, 11.0), "start", 11.0, PLAIN, &l.encoding);
    }

    let ticks = axis.ticks();
    grid(&mut out, PLOT_X, PLOT_W, TOP - 4.0, plot_bottom + 4.0, &ticks);
    x_axis(&mut out, PLOT_X, PLOT_W, plot_bottom + 4.0, &ticks, &l.offset_axis);

    for (i, r) in ranks.iter().enumerate() {
        let y = TOP + row_h * i as f64 + label_h;
        let device = match &r.label {
            Some(label) => {
                text(&mut out, 4.0, baseline(y - 7.0, 10.0), "start", 10.0, PLAIN, label);
                l.rank(r.device)
            }
            None => l.device(r.device),
        };
        text(&mut out, 4.0, baseline(y + BAR_H + 1.0, 12.0), "start", 12.0, PLAIN, &device);
        let rows = [
            (
                "start",
                &l.start,
                &l.start_offset,
                "url(#sk-start)",
                r.start_median_ns,
                r.start_p90_ns,
                y,
            ),
            (
                "end",
                &l.end,
                &l.end_offset,
                "#fdae6b",
                r.end_median_ns,
                r.end_p90_ns,
                y + BAR_H + 2.0,
            ),
        ];
        for (class, name, which, fill, med, p90, by) in rows {
            let mid = by + BAR_H / 2.0;
            text(&mut out, PLOT_X - 5.0, baseline(mid, 10.0), "end", 10.0, PLAIN, name);
            let (med_s, p90_s) = (offset(med), offset(p90));
            let tip = if one {
                subst(
                    &l.offset_tip_one,
                    &[("device", &device), ("which", which), ("value", &med_s)],
                )
            } else {
                subst(
                    &l.offset_tip,
                    &[("device", &device), ("which", which), ("median", &med_s), ("p90", &p90_s)],
                )
            };
            let wm = axis.scale(med, PLOT_W);
            w!(
                out,
                "<rect class=\"{class}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{fill}\" stroke=\"{OUTLINE}\" stroke-width=\"0.6\">\
<title>{}</title></rect>\n",
                f2(PLOT_X),
                f2(by),
                f2(wm),
                f2(BAR_H),
                esc(&tip),
            );
            let wp = if one { wm } else { axis.scale(p90, PLOT_W) };
            let value = if one {
                med_s
            } else {
                whisker(&mut out, PLOT_X + wm, PLOT_X + wp, mid);
                subst(&l.offset_value, &[("median", &med_s), ("p90", &p90_s)])
            };
            let lx = PLOT_X + wm.max(wp) + 6.0;
            text(&mut out, lx, baseline(mid, 10.0), "start", 10.0, HALO, &value);
        }
    }
    close_svg(&mut out);
    out
}

/// An offset for a value label: ms with two decimals, or whole µs below 0.1 ms.
///
/// End offsets are tens of µs; "0.01 ms" would hide the very differences the chart is about.
fn offset(ns: i64) -> String {
    if ns.abs() < 100_000 {
        format!("{} µs", units::us(ns))
    } else {
        format!("{} ms", units::ms(ns))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{attr_of, en, evidence, ms, zh};
    use super::*;
    use serde_json::json;

    const MS: i64 = 1_000_000;

    pub(crate) fn article() -> Vec<SkewRank> {
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
                label: None,
                start_median_ns: ms(sm),
                start_p90_ns: ms(sp),
                end_median_ns: ms(em),
                end_p90_ns: ms(ep),
                instances: 100,
            })
            .collect()
    }

    /// One matched call: the bar is its offset, with no whisker, no "p90" and no median.
    #[test]
    fn one_matched_call_draws_its_offset_without_a_median_or_p90() {
        let r = SkewRank {
            device: 2,
            label: None,
            start_median_ns: 4 * MS,
            start_p90_ns: 4 * MS,
            end_median_ns: 20_000,
            end_p90_ns: 20_000,
            instances: 1,
        };
        let many = skew_chart(&[SkewRank { instances: 2, ..r.clone() }], &en());
        let one = skew_chart(&[r], &en());
        // The legend's whisker and the two rows' whiskers: three lines of a whisker's pair each.
        let whiskers = |svg: &str| svg.matches("stroke=\"#000\" stroke-width=\"1\"/>").count();
        assert_eq!(whiskers(&many), 6, "{many}");
        assert_eq!(whiskers(&one), 0, "{one}");
        assert!(!one.contains("p90") && !one.contains("median"), "{one}");
        assert!(
            one.contains(">bar = the one call&apos;s offset</text>")
                || one.contains(">bar = the one call's offset</text>"),
            "{one}"
        );
        assert!(one.contains(">4.00 ms</text>"), "{one}");
        assert_eq!(
            attr_of(&one, "class=\"start\"", "width"),
            attr_of(&many, "class=\"start\"", "width")
        );
    }

    #[test]
    fn bars_and_whiskers_follow_the_axis() {
        let r = SkewRank {
            device: 2,
            label: None,
            start_median_ns: 4 * MS,
            start_p90_ns: 7 * MS,
            end_median_ns: 20_000,
            end_p90_ns: 30_000,
            instances: 50,
        };
        let svg = skew_chart(&[r], &en());
        // max 7 ms -> step 1 ms, axis 0..7 ms.
        assert_eq!(
            Axis::nice(7 * MS, MIN_STEP_NS),
            Axis { max_ns: (7 * MS).into(), step_ns: MS.into() }
        );
        assert_eq!(attr_of(&svg, "class=\"start\"", "width"), 226.29); // 4/7 * 396
        assert_eq!(attr_of(&svg, "class=\"end\"", "width"), 1.13); // 0.02/7 * 396
        // Whisker cap at p90 = 7 ms, the end of the axis.
        assert!(svg.contains(&format!(
            "x1=\"{0}\" y1=\"{1}\" x2=\"{0}\"",
            f2(PLOT_X + PLOT_W),
            f2(TOP + 1.0)
        )));
        assert!(svg.contains(">4.00 ms, p90 7.00 ms</text>"));
        assert!(svg.contains(">20 µs, p90 30 µs</text>"));
        assert!(svg.contains("<title>device 2: start offset median 4.00 ms, p90 7.00 ms</title>"));
        assert!(svg.contains("<title>device 2: end offset median 20 µs, p90 30 µs</title>"));
        for t in ["0", "1", "4", "7"] {
            assert!(svg.contains(&format!(">{t}</text>")), "tick {t}");
        }
    }

    #[test]
    fn offsets_switch_to_microseconds_below_a_tenth_of_a_ms() {
        assert_eq!(offset(12_400), "12 µs");
        assert_eq!(offset(12_500), "13 µs");
        assert_eq!(offset(99_999), "100 µs");
        assert_eq!(offset(100_000), "0.10 ms");
        assert_eq!(offset(14_930_000), "14.93 ms");
        assert_eq!(offset(6_405_259), "6.41 ms");
        assert_eq!(offset(0), "0 µs");
    }

    /// Offsets (median, p90) per rank; None for a rank in no instance.
    type Offsets<'a> = &'a [(i64, Option<(i64, i64)>)];

    /// nccl-skew evidence with `matched` instances and these offsets per rank.
    fn skew_evidence(matched: i64, starts: Option<Offsets>, ends: Option<Offsets>) -> Evidence {
        use crate::analysis::nccl_skew::{Spread, Values as SkewValues};
        let map = |o: Offsets| {
            o.iter()
                .map(|(d, x)| (*d, x.map(|(median, p90)| Spread { min: 0, median, p90, max: p90 })))
                .collect()
        };
        let mut ev = evidence("nccl-skew", json!({}));
        ev.values = Some(Values::NcclSkew(Box::new(SkewValues {
            matched,
            rank_start_offset_ns: starts.map(map),
            rank_end_offset_ns: ends.map(map),
            ..SkewValues::default()
        })));
        ev
    }

    #[test]
    fn ranks_come_from_the_offset_maps_sorted_by_device() {
        let ev = skew_evidence(
            1008,
            Some(&[(10, Some((5, 6))), (2, Some((666_715, 6_405_259)))]),
            Some(&[(2, Some((12_186, 24_873))), (10, Some((7, 8)))]),
        );
        let r = ranks(&ev).expect("ranks");
        assert_eq!(r.iter().map(|r| r.device).collect::<Vec<_>>(), [2, 10]);
        assert_eq!(r[0].start_p90_ns, 6_405_259);
        assert_eq!(r[0].end_median_ns, 12_186);
        let svg = skew_chart(&r, &en());
        // 666,715 ns is above 0.1 ms: 0.67 ms.
        assert!(svg.contains(">0.67 ms, p90 6.41 ms</text>"));
        assert!(svg.contains(">12 µs, p90 25 µs</text>"));
    }

    #[test]
    fn nothing_to_compare_means_no_chart() {
        let ok: Offsets = &[(1, Some((1, 2))), (2, Some((1, 2)))];
        assert!(ranks(&skew_evidence(3, Some(ok), Some(ok))).is_some());
        let cases = [
            // A rank in no instance has no offsets.
            skew_evidence(3, Some(&[(1, None), (2, Some((1, 2)))]), Some(ok)),
            // The cross-rank quantities do not exist (fewer than two ranks, a broken matching).
            skew_evidence(3, None, Some(ok)),
            skew_evidence(3, Some(&[]), Some(&[])),
            // One rank: nothing to compare across.
            skew_evidence(3, Some(&[(1, Some((0, 0)))]), Some(&[(1, Some((0, 0)))])),
            // A rank without end offsets.
            skew_evidence(3, Some(ok), Some(&[(1, Some((1, 2))), (3, Some((1, 2)))])),
            // No matched instance: the offsets are not measurements.
            skew_evidence(0, Some(ok), Some(ok)),
        ];
        for (i, ev) in cases.iter().enumerate() {
            assert!(ranks(ev).is_none(), "case {i}");
        }
        // Evidence of another shape, or none.
        assert!(ranks(&evidence("nccl-skew", json!({"matched": 3}))).is_none());
        let mut ev = skew_evidence(3, Some(ok), Some(ok));
        ev.values = None;
        assert!(ranks(&ev).is_none());
    }

    #[test]
    fn zh_tw_labels() {
        let svg = skew_chart(&article(), &zh());
        for label in ["開始偏移", "結束偏移", "開始", "結束", "相對最早 rank 的偏移（ms）"]
        {
            assert!(svg.contains(&format!(">{label}</text>")), "{label}");
        }
        assert!(svg.contains("<title>device 4：開始偏移中位數 8.71 ms，p90 14.93 ms</title>"));
    }
}

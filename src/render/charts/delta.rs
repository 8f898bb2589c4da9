//! Per-name change between two sides: one diverging bar per name (kernel, NVTX range or copy)
//! around a zero line, the change B - A of its totals, largest changes first, the rest summed.
//!
//! Draws the totals it is given: it does not test whether a change is real, judge a claim, or
//! read a trace.

use std::cmp::Reverse;

use super::ab::{AbLabels, AbUnit, Span, duration, signed};
use super::names::shorten;
use super::subst;
use super::svg::{
    HALO, OUTLINE, WIDTH, baseline, close_svg, esc, f2, grid, hatch, legend, no_data, open_svg,
    text, text_w, w, x_axis,
};
use crate::stats::Side;
use crate::units;

/// One name's totals on both sides, in ns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameDelta {
    /// Kernel, NVTX range or copy name; shortened on the chart, whole in the tooltip.
    pub name: String,
    /// Its total on side A (0 when it is absent there).
    pub a_total_ns: i64,
    /// Its total on side B (0 when it is absent there).
    pub b_total_ns: i64,
    /// The one side the name appears on, when it appears on one side only.
    pub only_in: Option<Side>,
}

impl NameDelta {
    /// `B - A`, exact.
    fn delta(&self) -> i128 {
        i128::from(self.b_total_ns) - i128::from(self.a_total_ns)
    }
}

/// The most names drawn with a bar of their own; the others are summed into one last row.
pub const TOP_NAMES: usize = 12;

/// Left edge of the plot area, leaving room left of it for the labels of decreases.
const PLOT_X: f64 = 82.0;
/// Width of the plot area, leaving the same room right of it for the labels of increases.
const PLOT_W: f64 = 476.0;
const TOP: f64 = 34.0;
const BAR_H: f64 = 12.0;
const ROW_H: f64 = 34.0;
/// Names sit above their bar from here.
const NAME_X: f64 = 8.0;
/// Longest label drawn for a name, in characters.
const NAME_MAX: usize = 48;
/// Finest tick step: 0.01 ms.
const MIN_STEP_NS: i64 = 10_000;
const DECREASE: &str = "url(#dl-dec)";
const INCREASE: &str = "#fdae6b";

/// One drawn row.
struct Row {
    /// As drawn: shortened, with the one-sided suffix.
    label: String,
    /// Whole, for the tooltip.
    name: String,
    a: i128,
    b: i128,
    /// Classes besides the direction: `only-a`, `only-b` or `other`.
    class: &'static str,
}

/// Change of each name's total, B - A.
///
/// One horizontal bar per name from a vertical zero line, left for a decrease (hatched) and
/// right for an increase (plain), on a linear ms axis; sorted by the size of the change,
/// largest first (stably, so equal changes keep the caller's order). The first [`TOP_NAMES`]
/// names get a bar of their own, the others one summed "other names" row, always last. Each
/// bar is labelled with its change in ms, each name shortened as in the kernels chart and
/// marked when it appears on one side only (its bar outlined dashed as well).
pub fn delta_chart(rows: &[NameDelta], l: &AbLabels) -> String {
    if rows.is_empty() {
        return no_data(&l.no_data);
    }
    let mut sorted: Vec<&NameDelta> = rows.iter().collect();
    sorted.sort_by_key(|r| Reverse(r.delta().unsigned_abs()));
    let rest = sorted.split_off(TOP_NAMES.min(sorted.len()));

    // Shortened as shown, escapes included, so that a label fits its room.
    let shown: Vec<_> = sorted.iter().map(|r| crate::visible::visible(&r.name, &[])).collect();
    let names: Vec<&str> = shown.iter().map(|n| n.as_ref()).collect();
    let mut drawn: Vec<Row> = sorted
        .iter()
        .zip(shorten(&names, NAME_MAX))
        .map(|(r, label)| {
            let (label, class) = match r.only_in {
                Some(Side::A) => (subst(&l.delta_only_a, &[("name", &label)]), "only-a"),
                Some(Side::B) => (subst(&l.delta_only_b, &[("name", &label)]), "only-b"),
                None => (label, ""),
            };
            Row {
                label,
                name: r.name.clone(),
                a: r.a_total_ns.into(),
                b: r.b_total_ns.into(),
                class,
            }
        })
        .collect();
    if !rest.is_empty() {
        let label = subst(&l.delta_other, &[("n", &units::thousands(rest.len() as i128))]);
        drawn.push(Row {
            name: label.clone(),
            label,
            a: rest.iter().map(|r| i128::from(r.a_total_ns)).sum(),
            b: rest.iter().map(|r| i128::from(r.b_total_ns)).sum(),
            class: "other",
        });
    }

    let lo = drawn.iter().map(|r| r.b - r.a).min().unwrap_or(0).min(0);
    let hi = drawn.iter().map(|r| r.b - r.a).max().unwrap_or(0).max(0);
    let span = Span::new(lo, hi, MIN_STEP_NS);
    let plot_bottom = TOP + ROW_H * drawn.len() as f64 - (ROW_H - 15.0 - BAR_H);
    let mut out = String::new();
    open_svg(&mut out, plot_bottom + 44.0);
    out.push_str("<defs>");
    hatch(&mut out, "dl-dec", "#9ecae1", "#08306b");
    out.push_str("</defs>\n");
    legend(&mut out, NAME_X, 8.0, &[(DECREASE, &l.delta_decrease), (INCREASE, &l.delta_increase)]);

    let ticks = span.ticks(AbUnit::Ns);
    grid(&mut out, PLOT_X, PLOT_W, TOP - 2.0, plot_bottom + 4.0, &ticks);
    x_axis(&mut out, PLOT_X, PLOT_W, plot_bottom + 4.0, &ticks, &l.delta_axis);
    let zero = PLOT_X + span.x(0, PLOT_W);

    for (i, r) in drawn.iter().enumerate() {
        let y = TOP + ROW_H * i as f64;
        let by = y + 15.0;
        let d = r.b - r.a;
        let tip = subst(
            &l.delta_tip,
            &[
                ("name", &r.name),
                ("a", &duration(r.a)),
                ("b", &duration(r.b)),
                ("delta", &signed(duration(d))),
            ],
        );
        w!(out, "<g><title>{}</title>\n", esc(&tip));
        text(&mut out, NAME_X, y + 11.0, "start", 11.0, HALO, &r.label);
        let end = PLOT_X + span.x(d, PLOT_W);
        let (direction, fill) = match d.signum() {
            -1 => ("decrease", DECREASE),
            1 => ("increase", INCREASE),
            _ => ("unchanged", INCREASE),
        };
        let class = if r.class.is_empty() {
            direction.to_string()
        } else {
            format!("{direction} {}", r.class)
        };
        let dash = if r.class.starts_with("only") { " stroke-dasharray=\"3 2\"" } else { "" };
        w!(
            out,
            "<rect class=\"{class}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{fill}\" stroke=\"{OUTLINE}\" stroke-width=\"0.8\"{dash}/>\n",
            f2(zero.min(end)),
            f2(by),
            f2((end - zero).abs()),
            f2(BAR_H),
        );
        // Outside the bar's end; across the zero line when the margin is too narrow.
        let value = format!("{} ms", signed(units::decimal(d, 1_000_000, 2).unwrap_or_default()));
        let tw = text_w(&value, 11.0);
        let (x, anchor) = if d < 0 {
            if end - 5.0 - tw >= 4.0 { (end - 5.0, "end") } else { (zero + 5.0, "start") }
        } else if end + 5.0 + tw <= WIDTH - 4.0 {
            (end + 5.0, "start")
        } else {
            (zero - 5.0, "end")
        };
        text(&mut out, x, baseline(by + BAR_H / 2.0, 11.0), anchor, 11.0, HALO, &value);
        out.push_str("</g>\n");
    }
    w!(
        out,
        "<line class=\"zero\" x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\" stroke=\"#000\" stroke-width=\"1\"/>\n",
        f2(TOP - 2.0),
        f2(plot_bottom + 4.0),
        x = f2(zero),
    );
    close_svg(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::super::ab::tests::{labels, parse};
    use super::*;

    const MS: i64 = 1_000_000;

    fn row(name: &str, a_ms: i64, b_ms: i64) -> NameDelta {
        NameDelta { name: name.into(), a_total_ns: a_ms * MS, b_total_ns: b_ms * MS, only_in: None }
    }

    /// The bars in drawing order: (class, x, width).
    fn bars(svg: &str) -> Vec<(String, f64, f64)> {
        let doc = parse(svg);
        let num = |n: &roxmltree::Node, a: &str| n.attribute(a).expect(a).parse().expect("number");
        doc.descendants()
            .filter(|n| n.has_tag_name("rect") && n.attribute("class").is_some())
            .map(|n| {
                (n.attribute("class").unwrap_or_default().into(), num(&n, "x"), num(&n, "width"))
            })
            .collect()
    }

    #[test]
    fn bars_diverge_from_zero_sorted_by_the_size_of_the_change() {
        let rows = [row("gemm", 10, 9), row("allreduce", 3, 5), row("flash", 20, 15)];
        let svg = delta_chart(&rows, &labels("en"));
        // -5..+2 ms: step 1 ms, 7 intervals of 476/7 = 68 px; zero at 82 + 5 * 68 = 422.
        assert_eq!(Span::new((-5 * MS).into(), (2 * MS).into(), MIN_STEP_NS).lo, (-5 * MS).into());
        assert_eq!(
            bars(&svg),
            [
                ("decrease".to_string(), 82.0, 340.0),
                ("increase".to_string(), 422.0, 136.0),
                ("decrease".to_string(), 354.0, 68.0),
            ]
        );
        assert!(svg.contains("<line class=\"zero\" x1=\"422.00\""));
        let order: Vec<usize> = ["flash", "allreduce", "gemm"]
            .iter()
            .map(|n| svg.find(&format!(">{n}</text>")).expect(n))
            .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
        assert!(svg.contains(">-5.00 ms</text>") && svg.contains(">+2.00 ms</text>"));
        assert!(svg.contains(">-1.00 ms</text>"));
        assert!(svg.contains("<title>flash: A 20.00 ms, B 15.00 ms, B - A -5.00 ms</title>"));
        for t in ["-5", "0", "2"] {
            assert!(svg.contains(&format!(">{t}</text>")), "tick {t}");
        }
        assert!(svg.contains(">change of each name&apos;s total, B - A (ms)</text>"));
        assert!(svg.contains(">less in B</text>") && svg.contains(">more in B</text>"));
    }

    #[test]
    fn names_past_the_top_are_summed_into_one_last_row() {
        // Changes of +1..+14 ms, and a -2 ms that ties with +2 ms: a stable sort keeps the
        // caller's order, so the -2 ms row (given first) comes before the +2 ms one.
        let mut rows = vec![row("minus-two", 2, 0)];
        rows.extend((1..=14).map(|k| row(&format!("k{k}"), 0, k)));
        let svg = delta_chart(&rows, &labels("en"));
        let b = bars(&svg);
        assert_eq!(b.len(), TOP_NAMES + 1);
        // k14..k3 are the twelve largest; minus-two, k2 and k1 make the other row: 3 names,
        // -2 + 2 + 1 = +1 ms.
        assert!(svg.contains(">k3</text>") && !svg.contains(">k2</text>"));
        assert!(!svg.contains(">minus-two</text>"));
        assert_eq!(b[TOP_NAMES].0, "increase other");
        assert!(svg.contains(">other names (3)</text>") && svg.contains(">+1.00 ms</text>"));
        assert!(
            svg.contains("<title>other names (3): A 2.00 ms, B 3.00 ms, B - A +1.00 ms</title>")
        );
        // The stable order among equal changes.
        let rows = [row("down", 2, 0), row("up", 0, 2)];
        let svg = delta_chart(&rows, &labels("en"));
        assert!(svg.find(">down</text>") < svg.find(">up</text>"));
        let svg = delta_chart(&[row("up", 0, 2), row("down", 2, 0)], &labels("en"));
        assert!(svg.find(">up</text>") < svg.find(">down</text>"));
    }

    #[test]
    fn a_name_on_one_side_only_says_so() {
        let rows = [
            NameDelta { only_in: Some(Side::B), ..row("memcpy_peer", 0, 3) },
            NameDelta { only_in: Some(Side::A), ..row("old_kernel", 1, 0) },
            row("both", 4, 5),
        ];
        let svg = delta_chart(&rows, &labels("en"));
        assert!(svg.contains(">memcpy_peer (only in B)</text>"));
        assert!(svg.contains(">old_kernel (only in A)</text>"));
        assert!(svg.contains(">both</text>"));
        let classes: Vec<String> = bars(&svg).into_iter().map(|b| b.0).collect();
        assert_eq!(classes, ["increase only-b", "decrease only-a", "increase"]);
        assert_eq!(svg.matches("stroke-dasharray=\"3 2\"/>").count(), 2);
    }

    #[test]
    fn labels_cross_the_zero_line_when_the_margin_is_too_narrow() {
        let rows = [row("big", 0, 14_000_000), row("small", 1, 0)];
        let svg = delta_chart(&rows, &labels("en"));
        parse(&svg);
        // -2e6..+14e6 ms in steps of 2e6 ms: the increase reaches the right end, so its label
        // goes left of the zero line.
        assert!(
            svg.contains("text-anchor=\"end\" font-size=\"11.00\"")
                && svg.contains(">+14,000,000.00 ms</text>")
        );
        let zero = bars(&svg)[0].1;
        assert!(svg.contains(&format!("<text x=\"{}\" ", f2(zero - 5.0))));
    }

    #[test]
    fn nothing_to_show_and_nothing_changed() {
        let svg = delta_chart(&[], &labels("en"));
        assert!(svg.contains(">no data</text>"));
        let svg = delta_chart(&[], &labels("zh-TW"));
        assert!(svg.contains(">無資料</text>"));
        let svg = delta_chart(&[row("same", 3, 3)], &labels("en"));
        assert_eq!(bars(&svg), [("unchanged".to_string(), 82.0, 0.0)]);
        assert!(svg.contains(">0.00 ms</text>"));
    }

    #[test]
    fn text_is_escaped() {
        let name = "k<int>&\"x\"'y'\u{7}";
        let svg = delta_chart(&[row(name, 1, 2)], &labels("en"));
        let doc = parse(&svg);
        let escaped = "k&lt;int&gt;&amp;&quot;x&quot;&apos;y&apos;\\x07";
        assert!(svg.contains(&format!(">{escaped}</text>")));
        assert!(svg.contains(&format!("<title>{escaped}: A 1.00 ms")));
        assert!(!svg.contains("<int>"));
        assert!(doc.descendants().any(|n| n.text() == Some("k<int>&\"x\"'y'\\x07")));
    }

    #[test]
    fn zh_tw_labels() {
        let mut rows = vec![NameDelta { only_in: Some(Side::A), ..row("gone", 3, 0) }];
        rows.extend((1..=13).map(|k| row(&format!("k{k}"), k, 0)));
        let svg = delta_chart(&rows, &labels("zh-TW"));
        parse(&svg);
        for label in [
            "B 較少",
            "B 較多",
            "各名稱合計的變化，B - A（ms）",
            "其他名稱（2 個）",
            "gone（只在 A）",
        ] {
            assert!(svg.contains(&format!(">{label}</text>")), "{label}");
        }
        assert!(svg.contains("<title>k13：A 13.00 ms，B 0 ns，B - A -13.00 ms</title>"));
    }
}

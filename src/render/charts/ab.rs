//! A/B comparison of one quantity: a dot per sample of each side on one shared axis, each side's
//! median marked, and the difference and ratio of the medians drawn between them.
//!
//! Draws the samples and medians it is given: it does not compute the medians, test whether
//! the difference is real, judge a claim, or read a trace.

use super::names::shorten;
use super::subst;
use super::svg::{
    Axis, HALO, OUTLINE, PLAIN, WIDTH, baseline, close_svg, esc, f2, grid, no_data, open_svg, text,
    text_w, w, x_axis,
};
use crate::i18n::Strings;
use crate::render::RenderError;
use crate::units;

/// One side of a comparison.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AbSide {
    /// The side's name, e.g. `A: before`; shortened on the chart when long, whole in the tooltip.
    pub label: String,
    /// One value per sample (NVTX step or window), in order, in the chart's [`AbUnit`] (named for
    /// the usual case of durations).
    pub values_ns: Vec<i64>,
    /// The side's median as the caller computed it (the lower median of `crate::stats`); drawn
    /// as given, never recomputed here.
    pub median_ns: i64,
}

/// What the values of a comparison are, and so how they are displayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AbUnit {
    /// Nanoseconds: an axis in ms, values as durations (ns, µs or ms, three significant digits).
    Ns,
    /// Parts per billion of 1: shown as percentages, a difference in percentage points.
    Ratio,
    /// Counts, with thousands separators.
    Count,
    /// Bytes, with decimal prefixes (kB, MB, GB), as the copies analysis counts GB/s.
    Bytes,
}

/// Every label drawn inside the A/B and per-name delta charts, in one language.
#[derive(Debug, Clone)]
pub struct AbLabels {
    pub(super) no_data: String,
    samples: String,
    samples_one: String,
    median: String,
    difference: String,
    difference_tip: String,
    encoding: String,
    axis: String,
    axis_count: String,
    axis_metric: String,
    axis_metric_count: String,
    interval: String,
    interval_relative: String,
    interval_tip: String,
    zoomed: String,
    dot_tip: String,
    pub(super) delta_decrease: String,
    pub(super) delta_increase: String,
    pub(super) delta_axis: String,
    pub(super) delta_other: String,
    pub(super) delta_only_a: String,
    pub(super) delta_only_b: String,
    pub(super) delta_tip: String,
}

impl AbLabels {
    /// The labels of a language (`chart.no_data`, `chart.ab_*`, `chart.delta_*`); a missing key
    /// is an error.
    pub fn new(t: &Strings) -> Result<AbLabels, RenderError> {
        let g = |k: &str| t.get(&format!("chart.{k}")).map(str::to_string);
        Ok(AbLabels {
            no_data: g("no_data")?,
            samples: g("ab_samples")?,
            samples_one: g("ab_samples_one")?,
            median: g("ab_median")?,
            difference: g("ab_difference")?,
            difference_tip: g("ab_difference_tip")?,
            encoding: g("ab_encoding")?,
            axis: g("ab_axis")?,
            axis_count: g("ab_axis_count")?,
            axis_metric: g("ab_axis_metric")?,
            axis_metric_count: g("ab_axis_metric_count")?,
            interval: g("ab_interval")?,
            interval_relative: g("ab_interval_relative")?,
            interval_tip: g("ab_interval_tip")?,
            zoomed: g("ab_zoomed")?,
            dot_tip: g("ab_dot_tip")?,
            delta_decrease: g("delta_decrease")?,
            delta_increase: g("delta_increase")?,
            delta_axis: g("delta_axis")?,
            delta_other: g("delta_other")?,
            delta_only_a: g("delta_only_a")?,
            delta_only_b: g("delta_only_b")?,
            delta_tip: g("delta_tip")?,
        })
    }
}

/// Left edge of the plot area; the side labels sit left of it.
const PLOT_X: f64 = 120.0;
/// Width of the plot area.
const PLOT_W: f64 = 448.0;
/// Top of the plot area, below the legend row.
const TOP: f64 = 30.0;
/// Vertical centre of A's row and of B's row; the difference bracket lies between them.
const A_MID: f64 = TOP + 32.0;
const B_MID: f64 = TOP + 98.0;
const BRACKET_Y: f64 = TOP + 66.0;
/// Half the height of a median tick.
const TICK_H: f64 = 13.0;
/// The axis line.
const AXIS_Y: f64 = TOP + 134.0;
/// Radius of a sample's dot.
const DOT_R: f64 = 3.0;
/// Vertical offsets of the dots, taken in turn by sample index so that equal values stay
/// visible as separate dots; deterministic, never random.
const JITTER: [f64; 5] = [0.0, -6.0, 6.0, -3.0, 3.0];
/// Longest side label drawn, in characters, to fit left of the plot area.
const SIDE_MAX: usize = 16;
const A_FILL: &str = "#6baed6";
const B_FILL: &str = "#fd8d3c";

/// Samples of A (above) and B (below) as dots on one shared horizontal axis, each side's median
/// as a vertical tick labelled with its value, and a bracket from A's median to B's labelled with
/// the difference B - A and the ratio B / A (`-3.00 ms (0.75×)`; no ratio when A's median is 0).
///
/// With `zero_based` the axis starts at 0 (or below, for a negative value): a difference is then
/// read against the whole value, which is how a duration should be read, so that a 1% change
/// does not look like a halving. Without it the axis spans only the values, which shows the
/// spread of each side when the difference is small next to the values; the chart then says
/// that 0 is not on its axis, and the caption must say so too: that is the caller's.
///
/// A side without samples means no comparison: the chart says "no data".
pub fn ab_chart(a: &AbSide, b: &AbSide, unit: AbUnit, zero_based: bool, l: &AbLabels) -> String {
    ab_chart_quoting(a, b, unit, zero_based, &AbQuote::default(), l)
}

/// The axis of an A/B chart and the band of the quoted interval on it: over every sample,
/// both medians and the band, from 0 (or below) when `zero_based`.
fn span_of(
    a: &AbSide,
    b: &AbSide,
    unit: AbUnit,
    zero_based: bool,
    quote: &AbQuote,
) -> (Span, Option<[i64; 2]>) {
    // The band's ends, on the values' axis: A's median moved by each end of the interval.
    let band: Option<[i64; 2]> = quote
        .interval
        .and_then(|[lo, hi]| Some([a.median_ns.checked_add(lo)?, a.median_ns.checked_add(hi)?]));
    let all = || {
        a.values_ns
            .iter()
            .chain(&b.values_ns)
            .chain([&a.median_ns, &b.median_ns])
            .chain(band.iter().flatten())
    };
    let (min, max) = (all().copied().min().unwrap_or(0), all().copied().max().unwrap_or(0));
    let span = if zero_based {
        Span::new(min.min(0).into(), max.max(0).into(), unit.min_step())
    } else {
        Span::new(min.into(), max.into(), unit.min_step())
    };
    (span, band)
}

/// Whether the axis [`ab_chart_quoting`] draws for these sides holds 0, which its caption
/// says (a chart without samples has no axis: false).
pub fn ab_axis_holds_zero(
    a: &AbSide,
    b: &AbSide,
    unit: AbUnit,
    zero_based: bool,
    quote: &AbQuote,
) -> bool {
    !a.values_ns.is_empty()
        && !b.values_ns.is_empty()
        && span_of(a, b, unit, zero_based, quote).0.holds_zero()
}

/// What a report quotes of a comparison, drawn on its chart: the metric, named on the axis
/// with its unit, and the interval of the difference B - A that the headline quotes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AbQuote {
    /// The metric as the claim writes it (`nccl_only_ns / total_ns`).
    pub metric: Option<String>,
    /// The interval of B - A, low and high, in the chart's [`AbUnit`]: drawn as a band on the
    /// bracket from A's median plus its low end to A's median plus its high end, where B's
    /// median may lie as the interval allows, and stated under the axis.
    pub interval: Option<[i64; 2]>,
    /// The same interval relative to A's median, as the page quotes it (`-26.2%`, `-3.3%`).
    pub relative: Option<[String; 2]>,
}

/// [`ab_chart`] with the metric on the axis and the quoted interval of B - A drawn.
pub fn ab_chart_quoting(
    a: &AbSide,
    b: &AbSide,
    unit: AbUnit,
    zero_based: bool,
    quote: &AbQuote,
    l: &AbLabels,
) -> String {
    if a.values_ns.is_empty() || b.values_ns.is_empty() {
        return no_data(&l.no_data);
    }
    let (span, band) = span_of(a, b, unit, zero_based, quote);
    let mut out = String::new();
    open_svg(&mut out, AXIS_Y + if band.is_some() { 60.0 } else { 44.0 });

    // The encoding: a sample dot and a median tick.
    w!(
        out,
        "<circle cx=\"{}\" cy=\"13.00\" r=\"{}\" fill=\"{A_FILL}\" stroke=\"{OUTLINE}\" stroke-width=\"0.6\"/>\
<line x1=\"{x}\" y1=\"6.00\" x2=\"{x}\" y2=\"20.00\" stroke=\"#000\" stroke-width=\"2\"/>\n",
        f2(PLOT_X + 4.0),
        f2(DOT_R),
        x = f2(PLOT_X + 14.0),
    );
    text(&mut out, PLOT_X + 22.0, baseline(13.0, 11.0), "start", 11.0, PLAIN, &l.encoding);
    // Said only when 0 is off the axis: an axis from below 0 (a negative difference) still
    // reads every value against 0.
    if !span.holds_zero() {
        text(&mut out, PLOT_X + PLOT_W, baseline(13.0, 11.0), "end", 11.0, PLAIN, &l.zoomed);
    }

    let ticks = span.ticks(unit);
    grid(&mut out, PLOT_X, PLOT_W, TOP, AXIS_Y, &ticks);
    let title = match (unit.tick_scale(span.extent()).1, &quote.metric) {
        ("", None) => l.axis_count.clone(),
        (symbol, None) => subst(&l.axis, &[("unit", symbol)]),
        ("", Some(m)) => subst(&l.axis_metric_count, &[("metric", m)]),
        (symbol, Some(m)) => subst(&l.axis_metric, &[("metric", m), ("unit", symbol)]),
    };
    x_axis(&mut out, PLOT_X, PLOT_W, AXIS_Y, &ticks, &title);

    let shown: Vec<_> =
        [&a.label, &b.label].iter().map(|s| crate::visible::visible(s, &[])).collect();
    let names: Vec<&str> = shown.iter().map(|n| n.as_ref()).collect();
    let names = shorten(&names, SIDE_MAX);
    let x_med = |s: &AbSide| PLOT_X + span.x(s.median_ns.into(), PLOT_W);
    // Median labels above A's row and below B's, so that the bracket between them stays clear.
    let rows = [
        (a, "a", A_FILL, A_MID, &names[0], A_MID - TICK_H - 7.0),
        (b, "b", B_FILL, B_MID, &names[1], B_MID + TICK_H + 13.0),
    ];
    for (side, class, fill, mid, name, label_y) in rows {
        w!(out, "<g><title>{}</title>\n", esc(&side.label));
        text(&mut out, 4.0, baseline(mid - 6.0, 12.0), "start", 12.0, PLAIN, name);
        let n = side.values_ns.len();
        let count = if n == 1 { &l.samples_one } else { &l.samples };
        let count = subst(count, &[("n", &units::thousands(n as i128))]);
        text(&mut out, 4.0, baseline(mid + 8.0, 10.0), "start", 10.0, PLAIN, &count);
        out.push_str("</g>\n");
        for (i, &v) in side.values_ns.iter().enumerate() {
            let tip = subst(
                &l.dot_tip,
                &[
                    ("side", &side.label),
                    ("i", &units::thousands(i as i128 + 1)),
                    ("value", &unit.value(v.into())),
                ],
            );
            w!(
                out,
                "<circle class=\"dot-{class}\" cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{fill}\" fill-opacity=\"0.75\" stroke=\"{OUTLINE}\" stroke-width=\"0.6\"><title>{}</title></circle>\n",
                f2(PLOT_X + span.x(v.into(), PLOT_W)),
                f2(mid + JITTER[i % JITTER.len()]),
                f2(DOT_R),
                esc(&tip),
            );
        }
        let x = x_med(side);
        let value = subst(&l.median, &[("value", &unit.value(side.median_ns.into()))]);
        w!(
            out,
            "<line class=\"median-{class}\" x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\" stroke=\"#000\" stroke-width=\"2\"><title>{}</title></line>\n",
            f2(mid - TICK_H),
            f2(mid + TICK_H),
            esc(&value),
            x = f2(x),
        );
        text(&mut out, centred(x, &value, 11.0), label_y, "middle", 11.0, HALO, &value);
    }

    // The interval the headline quotes, as a band under the bracket, stated under the axis.
    if let (Some([x1, x2]), Some([lo, hi])) = (band, quote.interval) {
        let (x1, x2) = (PLOT_X + span.x(x1.into(), PLOT_W), PLOT_X + span.x(x2.into(), PLOT_W));
        let mut said = subst(
            &l.interval,
            &[("low", &unit.difference(lo.into())), ("high", &unit.difference(hi.into()))],
        );
        if let Some([rl, rh]) = &quote.relative {
            said = subst(&l.interval_relative, &[("interval", &said), ("low", rl), ("high", rh)]);
        }
        w!(
            out,
            "<rect class=\"interval\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"10.00\" fill=\"#969696\" fill-opacity=\"0.45\"><title>{}</title></rect>\n",
            f2(x1.min(x2)),
            f2(BRACKET_Y - 5.0),
            f2((x2 - x1).abs().max(1.0)),
            esc(&subst(
                &l.interval_tip,
                &[("low", &unit.difference(lo.into())), ("high", &unit.difference(hi.into()))]
            )),
        );
        w!(
            out,
            "<rect x=\"{}\" y=\"{}\" width=\"14.00\" height=\"8.00\" fill=\"#969696\" fill-opacity=\"0.45\"/>\n",
            f2(PLOT_X),
            f2(AXIS_Y + 44.0),
        );
        text(&mut out, PLOT_X + 20.0, baseline(AXIS_Y + 48.0, 11.0), "start", 11.0, PLAIN, &said);
    }

    // The bracket: dashed drops from the median ticks, a line from A's median to B's with an
    // arrowhead at B when there is room for one, and the difference above it.
    let (xa, xb) = (x_med(a), x_med(b));
    let d = i128::from(b.median_ns) - i128::from(a.median_ns);
    let difference = unit.difference(d);
    let label = match units::decimal(b.median_ns.into(), a.median_ns.into(), 2) {
        Some(ratio) => subst(&l.difference, &[("difference", &difference), ("ratio", &ratio)]),
        None => difference,
    };
    w!(out, "<g class=\"diff\"><title>{}</title>\n", esc(&l.difference_tip));
    for (x, y1, y2) in [(xa, A_MID + TICK_H, BRACKET_Y), (xb, BRACKET_Y, B_MID - TICK_H)] {
        w!(
            out,
            "<line x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\" stroke=\"#000\" stroke-width=\"0.8\" stroke-dasharray=\"3 2\"/>\n",
            f2(y1),
            f2(y2),
            x = f2(x),
        );
    }
    w!(
        out,
        "<line x1=\"{}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"#000\" stroke-width=\"1.2\"/>\n",
        f2(xa),
        f2(xb),
        y = f2(BRACKET_Y),
    );
    if (xb - xa).abs() >= 8.0 {
        let back = xb - 6.0 * (xb - xa).signum();
        w!(
            out,
            "<polygon points=\"{},{} {},{} {},{}\" fill=\"#000\"/>\n",
            f2(xb),
            f2(BRACKET_Y),
            f2(back),
            f2(BRACKET_Y - 4.0),
            f2(back),
            f2(BRACKET_Y + 4.0),
        );
    }
    let mid = centred((xa + xb) / 2.0, &label, 11.0);
    text(&mut out, mid, BRACKET_Y - 6.0, "middle", 11.0, HALO, &label);
    out.push_str("</g>\n");
    close_svg(&mut out);
    out
}

/// `x` moved so that `s`, centred on it, stays inside the chart.
fn centred(x: f64, s: &str, size: f64) -> f64 {
    let half = text_w(s, size) / 2.0;
    x.min(WIDTH - 4.0 - half).max(4.0 + half)
}

impl AbUnit {
    /// Finest tick step: 0.01 ms, 0.1%, one thing or one byte.
    fn min_step(self) -> i64 {
        match self {
            AbUnit::Ns => 10_000,
            AbUnit::Ratio => 1_000_000,
            AbUnit::Count | AbUnit::Bytes => 1,
        }
    }

    /// A value with its unit: `12.0 ms`, `17.8%`, `1,234`, `1.50 MB`.
    fn value(self, v: i128) -> String {
        match self {
            AbUnit::Ns => duration(v),
            AbUnit::Ratio => units::percent(v, 1_000_000_000).unwrap_or_default(),
            AbUnit::Count => units::thousands(v),
            AbUnit::Bytes => bytes(v),
        }
    }

    /// A difference of two values, signed: `-3.00 ms`, `+1.5 pp`, `+12`, `-2.00 kB`.
    fn difference(self, d: i128) -> String {
        signed(match self {
            AbUnit::Ratio => {
                let pp = d.checked_mul(100).and_then(|v| units::decimal(v, 1_000_000_000, 1));
                format!("{} pp", pp.unwrap_or_default())
            }
            _ => self.value(d),
        })
    }

    /// How tick labels on an axis reaching `extent` are written: values are divided by the
    /// first and read in the second (empty for counts).
    pub(super) fn tick_scale(self, extent: u128) -> (i128, &'static str) {
        match self {
            AbUnit::Ns => (1_000_000, "ms"),
            AbUnit::Ratio => (10_000_000, "%"),
            AbUnit::Count => (1, ""),
            AbUnit::Bytes => prefix(extent),
        }
    }
}

/// A duration with its unit ([`units::duration`]); ms beyond the range of an `i64`.
pub(super) fn duration(v: i128) -> String {
    match i64::try_from(v) {
        Ok(ns) => units::duration(ns),
        Err(_) => format!("{} ms", units::decimal(v, 1_000_000, 2).unwrap_or_default()),
    }
}

/// Bytes with a decimal prefix and two decimals, whole bytes below 1 kB: `1.50 MB`. The prefix
/// is chosen after rounding, so 999,999 bytes read `1.00 MB`, not `1,000.00 kB`.
fn bytes(v: i128) -> String {
    let a = v.unsigned_abs();
    let rounded = |div: u128| (a + div / 200) / (div / 100) * (div / 100);
    let (div, symbol) = if a < 1_000 {
        (1, "B")
    } else if rounded(1_000) < 1_000_000 {
        (1_000, "kB")
    } else if rounded(1_000_000) < 1_000_000_000 {
        (1_000_000, "MB")
    } else {
        (1_000_000_000, "GB")
    };
    let places = if div == 1 { 0 } else { 2 };
    format!("{} {symbol}", units::decimal(v, div, places).unwrap_or_default())
}

/// The decimal prefix of an axis of bytes reaching `extent`.
fn prefix(extent: u128) -> (i128, &'static str) {
    match extent {
        e if e >= 1_000_000_000 => (1_000_000_000, "GB"),
        e if e >= 1_000_000 => (1_000_000, "MB"),
        e if e >= 1_000 => (1_000, "kB"),
        _ => (1, "B"),
    }
}

/// `s` with a `+` in front when it is a positive number: a difference says its direction.
/// A value that rounds to zero keeps no sign, as [`units::decimal`] drops the minus of one.
pub(super) fn signed(s: String) -> String {
    if !s.starts_with('-') && s.chars().any(|c| ('1'..='9').contains(&c)) {
        format!("+{s}")
    } else {
        s
    }
}

/// A linear axis from `lo` to `lo + n * step`, with `lo` a whole number of steps, so that it
/// can start below zero or, zoomed, above it. From 0 it is the [`Axis`] of the other charts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Span {
    /// Start of the axis.
    pub lo: i128,
    /// Distance between ticks, a 1-2-5 multiple of the finest step.
    pub step: i128,
    /// Number of intervals, 1 to 8 (more only for an axis wider than `i64::MAX`).
    pub n: i128,
}

impl Span {
    /// The axis over `min..=max` with at most eight intervals, the step no smaller than
    /// `min_step` (as [`Axis::nice`] picks it).
    pub(super) fn new(min: i128, max: i128, min_step: i64) -> Span {
        let max = max.max(min);
        let mut width = max - min;
        loop {
            let clamped = i64::try_from(width).unwrap_or(i64::MAX);
            let step = Axis::nice(clamped, min_step).step_ns;
            let lo = min.div_euclid(step) * step;
            let n = ((max - lo) + step - 1).div_euclid(step).max(1);
            // Starting at a whole step can add an interval: then the next step up.
            if n <= 8 || clamped == i64::MAX {
                return Span { lo, step, n };
            }
            width = n * step;
        }
    }

    /// Whether 0 is on the axis.
    pub(super) fn holds_zero(&self) -> bool {
        let hi = self.lo.saturating_add(self.step.saturating_mul(self.n));
        self.lo <= 0 && hi >= 0
    }

    /// Where `v` falls on a plot area `wdt` px wide, clamped to it.
    pub(super) fn x(&self, v: i128, wdt: f64) -> f64 {
        ((v - self.lo) as f64 / (self.n * self.step) as f64 * wdt).clamp(0.0, wdt)
    }

    /// The largest magnitude on the axis, which sets the prefix of a byte axis.
    fn extent(&self) -> u128 {
        self.lo.unsigned_abs().max((self.lo + self.n * self.step).unsigned_abs())
    }

    /// Tick positions as shares of the axis, with their labels in the scale of `unit` (as few
    /// decimals as the step needs, at most two).
    pub(super) fn ticks(&self, unit: AbUnit) -> Vec<(f64, String)> {
        let (div, _) = unit.tick_scale(self.extent());
        let places = (0..=2).find(|&p| (self.step * 10_i128.pow(p)) % div == 0).unwrap_or(2);
        (0..=self.n)
            .map(|i| {
                let v = self.lo + self.step * i;
                let label = units::decimal(v, div, places).unwrap_or_default();
                (i as f64 / self.n as f64, label)
            })
            .collect()
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::tests::attr_of;
    use super::*;

    const MS: i64 = 1_000_000;

    pub(crate) fn labels(lang: &str) -> AbLabels {
        AbLabels::new(&Strings::load(lang).expect("strings")).expect("labels")
    }

    /// `svg` parsed as XML; the test fails if it is not XML.
    pub(crate) fn parse(svg: &str) -> roxmltree::Document<'_> {
        roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("{e}\n{svg}"))
    }

    fn side(label: &str, ms: &[i64], median_ms: i64) -> AbSide {
        AbSide {
            label: label.into(),
            values_ns: ms.iter().map(|v| v * MS).collect(),
            median_ns: median_ms * MS,
        }
    }

    fn before_after() -> (AbSide, AbSide) {
        (side("A: before", &[10, 12, 14], 12), side("B: after", &[8, 9, 10], 9))
    }

    #[test]
    fn medians_sit_on_the_shared_axis_with_their_difference_and_ratio() {
        let (a, b) = before_after();
        let svg = ab_chart(&a, &b, AbUnit::Ns, true, &labels("en"));
        parse(&svg);
        // Largest value 14 ms -> step 2 ms, axis 0..14 ms; from 0 it is the other charts' axis.
        let axis = Axis::nice(14 * MS, 10_000);
        assert_eq!(axis, Axis { max_ns: (14 * MS).into(), step_ns: (2 * MS).into() });
        let span = Span::new(0, (14 * MS).into(), 10_000);
        assert_eq!(span, Span { lo: 0, step: axis.step_ns, n: 7 });
        // 12/14 * 448 = 384 and 9/14 * 448 = 288, right of the plot's left edge at 120.
        assert_eq!(attr_of(&svg, "class=\"median-a\"", "x1"), 504.0);
        assert_eq!(attr_of(&svg, "class=\"median-b\"", "x1"), 408.0);
        // B's 8 ms sample: 8/14 * 448 = 256; the second dot of a side is offset upwards.
        assert!(svg.contains("class=\"dot-b\" cx=\"376.00\" cy=\"128.00\""));
        assert!(svg.contains("class=\"dot-b\" cx=\"408.00\" cy=\"122.00\""));
        assert!(svg.contains("class=\"dot-b\" cx=\"440.00\" cy=\"134.00\""));
        // The minus of units.rs, two decimals of a ms above 1 ms, and 9/12 = 0.75.
        assert!(svg.contains(">-3.00 ms (0.75×)</text>"), "{svg}");
        assert!(svg.contains(">median 12.00 ms</text>") && svg.contains(">median 9.00 ms</text>"));
        assert!(svg.contains("<title>B: after, sample 1: 8.00 ms</title>"));
        assert!(svg.contains(">3 samples</text>"));
        for t in ["0", "2", "8", "14"] {
            assert!(svg.contains(&format!(">{t}</text>")), "tick {t}");
        }
        assert!(svg.contains(">value of each sample (ms)</text>"));
        assert!(!svg.contains("0 is not on the axis"));
        // The arrowhead points from A's median to B's: left.
        assert!(svg.contains("<polygon points=\"408.00,96.00 414.00,92.00 414.00,100.00\""));
    }

    #[test]
    fn the_quoted_interval_is_a_band_from_as_median_and_the_axis_names_the_metric() {
        let (a, b) = before_after();
        let quote = AbQuote {
            metric: Some("total_ns".into()),
            interval: Some([-4 * MS, -2 * MS]),
            relative: Some(["-33.3%".into(), "-16.7%".into()]),
        };
        let svg = ab_chart_quoting(&a, &b, AbUnit::Ns, true, &quote, &labels("en"));
        parse(&svg);
        // A's median 12 ms moved by -4 and -2 ms: 8 to 10 ms on the 0..14 ms axis of the
        // test above, 8/14 * 448 = 256 and 10/14 * 448 = 320 right of 120.
        assert!(
            svg.contains("class=\"interval\" x=\"376.00\" y=\"91.00\" width=\"64.00\""),
            "{svg}"
        );
        assert!(svg.contains(
            ">band from A&apos;s median: 95% interval of B - A, -4.00 ms to -2.00 ms (-33.3% to -16.7% of A&apos;s median)</text>"
        ));
        assert!(svg.contains(">total_ns of each sample (ms)</text>"), "{svg}");
        // A band beyond the samples widens the axis rather than being cut: 12 + 6 = 18 ms.
        let wide = AbQuote { interval: Some([0, 6 * MS]), ..quote };
        let svg = ab_chart_quoting(&a, &b, AbUnit::Ns, true, &wide, &labels("en"));
        let span = Span::new(0, (18 * MS).into(), 10_000);
        let x = |v: i64| 120.0 + span.x(v.into(), 448.0);
        let (x1, x2) = (x(12 * MS), x(18 * MS));
        assert!(x2 <= 568.0);
        let band = format!("class=\"interval\" x=\"{x1:.2}\" y=\"91.00\" width=\"{:.2}\"", x2 - x1);
        assert!(svg.contains(&band), "{band} in {svg}");
        // Without a quote the chart is as before: no band, the plain axis title.
        let plain = ab_chart(&a, &b, AbUnit::Ns, true, &labels("en"));
        assert!(!plain.contains("class=\"interval\""));
        assert!(plain.contains(">value of each sample (ms)</text>"));
    }

    #[test]
    fn a_zoomed_axis_spans_the_values_and_says_so() {
        let (a, b) = before_after();
        let svg = ab_chart(&a, &b, AbUnit::Ns, false, &labels("en"));
        parse(&svg);
        // 8..14 ms: width 6 ms -> step 1 ms from 8 ms; A's median 4/6 of 448 = 298.67.
        assert_eq!(Span::new((8 * MS).into(), (14 * MS).into(), 10_000).lo, (8 * MS).into());
        assert_eq!(attr_of(&svg, "class=\"median-a\"", "x1"), 418.67);
        assert_eq!(attr_of(&svg, "class=\"median-b\"", "x1"), 194.67);
        assert!(svg.contains(">0 is not on the axis</text>"));
        assert!(svg.contains(">8</text>") && !svg.contains(">0</text>"));
        // The caption reads the same axis: 0 off it; from 0, on it.
        assert!(!ab_axis_holds_zero(&a, &b, AbUnit::Ns, false, &AbQuote::default()));
        assert!(ab_axis_holds_zero(&a, &b, AbUnit::Ns, true, &AbQuote::default()));
    }

    #[test]
    fn an_axis_from_below_0_still_holds_0_and_says_nothing_of_a_zoom() {
        // B falls below 0 (a difference of shares, say): the axis runs from -4 to 14 ms, 0 on
        // it, as the caption of a chart from 0 says.
        let (a, b) = (side("A: before", &[10, 12, 14], 12), side("B: after", &[-4, -2, 0], -2));
        let svg = ab_chart(&a, &b, AbUnit::Ns, true, &labels("en"));
        parse(&svg);
        assert!(svg.contains(">0</text>"), "{svg}");
        assert!(!svg.contains("0 is not on the axis"), "{svg}");
        assert!(ab_axis_holds_zero(&a, &b, AbUnit::Ns, true, &AbQuote::default()));
    }

    #[test]
    fn starting_at_a_whole_step_never_gives_more_than_eight_intervals() {
        // 3..11: width 8 -> step 1 from 3 (8 intervals); 3.5..11.5 ms needs 9 steps of 1 ms.
        assert_eq!(Span::new(3, 11, 1), Span { lo: 3, step: 1, n: 8 });
        let s = Span::new(3_500_000, 11_500_000, 10_000);
        assert_eq!(s, Span { lo: 2_000_000, step: 2_000_000, n: 5 });
        assert_eq!(Span::new(-5 * i128::from(MS), (2 * MS).into(), 10_000).n, 7);
        assert_eq!(Span::new(7, 7, 1), Span { lo: 7, step: 1, n: 1 });
        let huge = Span::new(i64::MIN.into(), i64::MAX.into(), 1);
        assert!(huge.lo <= i64::MIN.into() && huge.lo + huge.n * huge.step >= i64::MAX.into());
    }

    #[test]
    fn an_empty_side_means_no_data() {
        let (a, mut b) = before_after();
        b.values_ns.clear();
        for (x, y) in [(&a, &b), (&b, &a)] {
            let svg = ab_chart(x, y, AbUnit::Ns, true, &labels("en"));
            parse(&svg);
            assert!(svg.contains(">no data</text>") && !svg.contains("<circle"));
        }
        let svg = ab_chart(&b, &b, AbUnit::Count, false, &labels("zh-TW"));
        assert!(svg.contains(">無資料</text>"));
    }

    #[test]
    fn a_zero_median_has_no_ratio_and_gains_are_signed() {
        let a = AbSide { label: "A".into(), values_ns: vec![0, 0, 4], median_ns: 0 };
        let b = AbSide { label: "B".into(), values_ns: vec![3, 5, 9], median_ns: 5 };
        let svg = ab_chart(&a, &b, AbUnit::Count, true, &labels("en"));
        parse(&svg);
        assert!(svg.contains(">+5</text>"), "{svg}");
        assert!(!svg.contains('×'));
        assert!(svg.contains(">value of each sample</text>"));
        // Equal medians: no sign, ratio 1.
        let svg = ab_chart(&b, &b, AbUnit::Count, true, &labels("en"));
        assert!(svg.contains(">0 (1.00×)</text>"));
    }

    #[test]
    fn each_unit_is_displayed_in_its_own_way() {
        // Shares in parts per billion: 25.0% and 20.0%, 5 percentage points apart.
        let a = AbSide { label: "A".into(), values_ns: vec![250_000_000], median_ns: 250_000_000 };
        let b = AbSide { label: "B".into(), values_ns: vec![200_000_000], median_ns: 200_000_000 };
        let svg = ab_chart(&a, &b, AbUnit::Ratio, true, &labels("en"));
        parse(&svg);
        assert!(svg.contains(">median 25.0%</text>") && svg.contains(">-5.0 pp (0.80×)</text>"));
        assert!(svg.contains(">value of each sample (%)</text>") && svg.contains(">25</text>"));
        assert!(svg.contains(">1 sample</text>"));
        // Bytes: the axis prefix follows its end, values their own size.
        let a = AbSide { label: "A".into(), values_ns: vec![1_500_000], median_ns: 1_500_000 };
        let b = AbSide { label: "B".into(), values_ns: vec![999_999], median_ns: 999_999 };
        let svg = ab_chart(&a, &b, AbUnit::Bytes, true, &labels("en"));
        parse(&svg);
        assert!(svg.contains(">median 1.50 MB</text>") && svg.contains(">median 1.00 MB</text>"));
        assert!(svg.contains(">-500.00 kB (0.67×)</text>"), "{svg}");
        assert!(svg.contains(">value of each sample (MB)</text>") && svg.contains(">1.6</text>"));
        assert_eq!(bytes(999), "999 B");
        assert_eq!(bytes(-1_000), "-1.00 kB");
        assert_eq!(bytes(2_500_000_000), "2.50 GB");
        // Durations keep three significant digits below a ms, and the unit's minus.
        assert_eq!(AbUnit::Ns.difference(-12_345), "-12.3 µs");
        assert_eq!(AbUnit::Ns.difference(850), "+850 ns");
        assert_eq!(AbUnit::Ns.difference(0), "0 ns");
        assert_eq!(AbUnit::Ratio.difference(-1), "0.0 pp");
        assert_eq!(duration(i128::from(i64::MAX) + 1), "9,223,372,036,854.78 ms");
    }

    #[test]
    fn text_is_escaped_and_the_svg_is_xml() {
        let mut a = side("A: <old> & \"slow\"", &[3, 4], 3);
        let b = side("B: new\u{1b}[0m", &[1, 2], 1);
        a.label.push_str(" build");
        let svg = ab_chart(&a, &b, AbUnit::Ns, true, &labels("en"));
        let doc = parse(&svg);
        let seen: Vec<&str> = doc.descendants().filter_map(|n| n.text()).collect();
        assert!(seen.contains(&"A: <old> & \"slow\" build"), "{seen:?}");
        assert!(svg.contains("A: &lt;old&gt; &amp; &quot;slow&quot; build"));
        assert!(svg.contains("B: new\\x1b[0m"));
        assert!(!svg.contains("<old>") && !svg.contains('\u{1b}'));
    }

    #[test]
    fn zh_tw_labels() {
        let (a, b) = before_after();
        let svg = ab_chart(&a, &b, AbUnit::Ns, false, &labels("zh-TW"));
        parse(&svg);
        for label in [
            "點＝一個樣本，直線＝中位數",
            "座標軸上沒有 0",
            "中位數 12.00 ms",
            "-3.00 ms（0.75×）",
            "3 個樣本",
            "每個樣本的值（ms）",
        ] {
            assert!(svg.contains(&format!(">{label}</text>")), "{label}");
        }
        assert!(svg.contains("<title>A: before，第 2 個樣本：12.00 ms</title>"));
    }
}

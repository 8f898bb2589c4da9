//! Drawing primitives shared by the charts: the SVG root, text, legends, axes and patterns.
//!
//! Geometry is f64 printed with two decimals ([`f2`]); every number a reader sees (tick labels
//! included) goes through [`crate::units`] from exact integers. Nothing here knows a language.

use crate::units;

/// Width of every chart's viewBox, in px.
pub(super) const WIDTH: f64 = 640.0;
/// Font stack: the CJK face first so the same chart works inside the zh-TW report.
const FONT: &str = "Noto Sans CJK TC, Noto Sans, DejaVu Sans, sans-serif";
pub(super) const OUTLINE: &str = "#333";
pub(super) const GRID: &str = "#c8c8c8";
/// Text attributes: none.
pub(super) const PLAIN: &str = "";
/// Text attributes: bold, for the highlighted device.
pub(super) const BOLD: &str = " font-weight=\"bold\"";
/// Text attributes: a white outline under the glyphs so that grid lines do not cut through labels.
pub(super) const HALO: &str =
    " stroke=\"#ffffff\" stroke-width=\"3\" stroke-linejoin=\"round\" paint-order=\"stroke\"";
/// Average advance of a Latin glyph as a share of the font size, for laying out legends.
const GLYPH_W: f64 = 0.56;
/// Advance of a CJK glyph as a share of the font size: CJK glyphs are square.
const WIDE_GLYPH_W: f64 = 1.0;

/// Appends formatted text to a `String`; writing to a `String` cannot fail.
macro_rules! w {
    ($out:expr, $($arg:tt)*) => {{
        use ::std::fmt::Write as _;
        let _ = write!($out, $($arg)*);
    }};
}
pub(super) use w;

/// Writes the `<svg>` root, a white background and an open `<g>` carrying the font.
pub(super) fn open_svg(out: &mut String, height: f64) {
    w!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\">\n\
<rect width=\"{w}\" height=\"{h}\" fill=\"#ffffff\"/>\n<g font-family=\"{FONT}\" fill=\"#000\">\n",
        w = f2(WIDTH),
        h = f2(height),
    );
}

/// Closes what [`open_svg`] opened.
pub(super) fn close_svg(out: &mut String) {
    out.push_str("</g>\n</svg>\n");
}

/// Defines a diagonal hatch pattern `id`: `ink` lines on a `fill` ground.
///
/// The lines are drawn corner to corner in an unrotated tile, because a rotated tile
/// (`patternTransform`) shows seams where the PDF tiles meet.
pub(super) fn hatch(out: &mut String, id: &str, fill: &str, ink: &str) {
    w!(
        out,
        "<pattern id=\"{id}\" patternUnits=\"userSpaceOnUse\" width=\"6\" height=\"6\">\
<rect width=\"6\" height=\"6\" fill=\"{fill}\"/>\
<path d=\"M0,6 L6,0 M-1.5,1.5 L1.5,-1.5 M4.5,7.5 L7.5,4.5\" stroke=\"{ink}\" stroke-width=\"1.3\"/></pattern>"
    );
}

/// A small SVG that says `label` ("no data"), for empty input.
pub(super) fn no_data(label: &str) -> String {
    let mut out = String::new();
    open_svg(&mut out, 40.0);
    text(&mut out, WIDTH / 2.0, baseline(20.0, 12.0), "middle", 12.0, PLAIN, label);
    close_svg(&mut out);
    out
}

/// Writes one escaped `<text>` element; `extra` is [`PLAIN`], [`BOLD`] or [`HALO`].
pub(super) fn text(
    out: &mut String,
    x: f64,
    y: f64,
    anchor: &str,
    size: f64,
    extra: &str,
    s: &str,
) {
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
pub(super) fn baseline(mid: f64, size: f64) -> f64 {
    mid + 0.35 * size
}

/// Rough width of `s` at `size` px, for spacing legend items; CJK glyphs count as square.
pub(super) fn text_w(s: &str, size: f64) -> f64 {
    s.chars().map(|c| if is_wide(c) { WIDE_GLYPH_W } else { GLYPH_W }).sum::<f64>() * size
}

/// Whether a character is drawn full width (CJK ideographs, kana, full-width punctuation).
fn is_wide(c: char) -> bool {
    matches!(c, '\u{1100}'..='\u{115F}' | '\u{2E80}'..='\u{A4CF}' | '\u{AC00}'..='\u{D7A3}'
        | '\u{F900}'..='\u{FAFF}' | '\u{FE30}'..='\u{FE4F}' | '\u{FF00}'..='\u{FF60}'
        | '\u{FFE0}'..='\u{FFE6}')
}

/// A row of legend items (swatch fill, label) from `x` at `y`; returns where the row ends.
pub(super) fn legend(out: &mut String, mut x: f64, y: f64, items: &[(&str, &str)]) -> f64 {
    for (fill, label) in items {
        w!(
            out,
            "<rect x=\"{}\" y=\"{}\" width=\"14.00\" height=\"10.00\" fill=\"{fill}\" stroke=\"{OUTLINE}\" stroke-width=\"0.6\"/>\n",
            f2(x),
            f2(y),
        );
        text(out, x + 19.0, baseline(y + 5.0, 11.0), "start", 11.0, PLAIN, label);
        x += 14.0 + 5.0 + text_w(label, 11.0) + 16.0;
    }
    x
}

/// A right-pointing triangle marking the highlighted bar.
pub(super) fn marker(out: &mut String, x: f64, mid: f64) {
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
pub(super) fn whisker(out: &mut String, x1: f64, x2: f64, mid: f64) {
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

/// Dashed vertical grid lines at the ticks of a plot area from `y1` to `y2`.
pub(super) fn grid(out: &mut String, x0: f64, wdt: f64, y1: f64, y2: f64, ticks: &[(f64, String)]) {
    for (frac, _) in ticks {
        w!(
            out,
            "<line x1=\"{x}\" y1=\"{y1}\" x2=\"{x}\" y2=\"{y2}\" stroke=\"{GRID}\" stroke-width=\"0.6\" stroke-dasharray=\"2 2\"/>\n",
            x = f2(x0 + wdt * frac),
            y1 = f2(y1),
            y2 = f2(y2),
        );
    }
}

/// Axis line at `y` under a plot area, with tick marks, tick labels and a centred title.
pub(super) fn x_axis(
    out: &mut String,
    x0: f64,
    wdt: f64,
    y: f64,
    ticks: &[(f64, String)],
    title: &str,
) {
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
///
/// In `i128`, because the axis ends at a whole number of steps past the largest value, which
/// for a value near `i64::MAX` does not fit an `i64`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Axis {
    /// End of the axis, a whole number of steps.
    pub max_ns: i128,
    /// Distance between ticks.
    pub step_ns: i128,
}

impl Axis {
    /// Picks a 1-2-5 step giving at most eight intervals, the step no smaller than `min_step_ns`.
    ///
    /// All in integer ns, so that the tick labels are exact decimals of a ms.
    pub(super) fn nice(max_ns: i64, min_step_ns: i64) -> Axis {
        let min_step = i128::from(min_step_ns.max(1));
        let max = if max_ns > 0 { i128::from(max_ns) } else { min_step };
        let intervals = |step: i128| (max + step - 1) / step;
        let mut step = min_step;
        let mut k = 0;
        while intervals(step) > 8 {
            step = min_step * [2, 5, 10][k % 3] * 10_i128.pow((k / 3) as u32);
            k += 1;
        }
        Axis { max_ns: intervals(step) * step, step_ns: step }
    }

    /// Tick positions as shares of the axis, with their labels in ms (as few decimals as the
    /// step needs, at most two).
    pub(super) fn ticks(&self) -> Vec<(f64, String)> {
        let places = match self.step_ns {
            s if s >= 1_000_000 => 0,
            s if s >= 100_000 => 1,
            _ => 2,
        };
        (0..=self.max_ns / self.step_ns)
            .map(|i| {
                let v = self.step_ns * i;
                let label = units::decimal(v, 1_000_000, places).unwrap_or_default();
                (v as f64 / self.max_ns as f64, label)
            })
            .collect()
    }

    /// Where `ns` falls on a plot area `wdt` px wide, clamped to it.
    pub(super) fn scale(&self, ns: i64, wdt: f64) -> f64 {
        (ns.max(0) as f64 / self.max_ns as f64 * wdt).min(wdt)
    }
}

/// `part / total` as a share in `0..=1` for geometry; 0 for an empty total.
pub(super) fn share(part: i64, total: i64) -> f64 {
    if total <= 0 { 0.0 } else { (part.max(0) as f64 / total as f64).clamp(0.0, 1.0) }
}

/// Two decimals for coordinates, with negative zero printed as `0.00` so that output does not
/// depend on the sign of a rounding.
pub(super) fn f2(v: f64) -> String {
    let s = format!("{v:.2}");
    if s == "-0.00" { "0.00".to_string() } else { s }
}

/// Escapes the five XML special characters, and shows control characters and bidirectional
/// overrides as escapes (`\x1b`, see [`crate::visible`]): XML 1.0 forbids most C0 controls
/// even as character references, so one in a kernel name would make the whole chart invalid.
pub(super) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in crate::visible::visible(s, &[]).chars() {
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

    #[test]
    fn nice_axis_steps() {
        let ms: i64 = 1_000_000;
        let axis = |max: i64, step: i64| Axis { max_ns: max.into(), step_ns: step.into() };
        assert_eq!(Axis::nice(15 * ms, 10_000), axis(16 * ms, 2 * ms));
        assert_eq!(Axis::nice(24_000 * ms, ms), axis(25_000 * ms, 5_000 * ms));
        assert_eq!(Axis::nice(30_000, 10_000), axis(30_000, 10_000));
        assert_eq!(Axis::nice(70_000, 10_000), axis(70_000, 10_000));
        assert_eq!(Axis::nice(0, 10_000), axis(10_000, 10_000));
        assert_eq!(Axis::nice(-5, ms), axis(ms, ms));
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
            labels(Axis::nice(24_000_000_000, 1_000_000)),
            ["0", "5,000", "10,000", "15,000", "20,000", "25,000"]
        );
        let a = Axis::nice(7_000_000, 10_000);
        assert_eq!(a.ticks()[7], (1.0, "7".to_string()));
        assert_eq!(a.scale(3_500_000, 100.0), 50.0);
        assert_eq!(a.scale(9_000_000, 100.0), 100.0);
    }

    #[test]
    fn an_axis_past_the_largest_i64_does_not_overflow() {
        let a = Axis::nice(i64::MAX, 1_000_000);
        assert!(a.max_ns >= i128::from(i64::MAX) && a.max_ns / a.step_ns <= 8, "{a:?}");
        assert_eq!(a.ticks().last().map(|t| t.0), Some(1.0));
        assert_eq!(a.scale(i64::MAX, 100.0), a.scale(i64::MAX, 100.0).min(100.0));
    }

    #[test]
    fn cjk_text_is_wider_than_latin() {
        assert_eq!(text_w("ab", 10.0), 2.0 * 10.0 * GLYPH_W);
        assert_eq!(text_w("閒置", 10.0), 20.0);
        assert_eq!(text_w("（", 10.0), 10.0);
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(esc("<>&\"'"), "&lt;&gt;&amp;&quot;&apos;");
        assert_eq!(esc("a\u{1b}[31m\u{7}\u{202e}"), "a\\x1b[31m\\x07\\u{202e}");
        let mut out = String::new();
        text(&mut out, 1.0, 2.0, "start", 10.0, PLAIN, "a<b");
        assert_eq!(
            out,
            "<text x=\"1.00\" y=\"2.00\" text-anchor=\"start\" font-size=\"10.00\">a&lt;b</text>\n"
        );
    }
}

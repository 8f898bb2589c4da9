//! Fuzzing (issue 12) with proptest: the claims loader and validator, the formula parser and
//! evaluator, window and device-list parsing, the Markdown and Typst writers for author text and
//! the SVG writer of the kernels chart, each fed arbitrary and mutated input. Every target must
//! return (no panic, no hang) and report a refusal as an error with a message; where a target
//! has a checkable meaning, the output is checked too (exact values, round trips, a real parser).
//!
//! `VERDICT_FUZZ_CASES` sets the cases per target (default 256, a smoke run of a few seconds);
//! a long run is `VERDICT_FUZZ_CASES=20000 cargo test --release --test suite fuzz::`. Failing
//! inputs proptest finds are kept in `proptest-regressions/` and replayed first on every run.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::FileFailurePersistence;
use pulldown_cmark::{Event, Options, Parser};
use verdict::formula::{Expr, Op, Rational};
use verdict::i18n::Strings;
use verdict::render::charts::{KernelBar, Labels, kernels_chart};
use verdict::render::markup;
use verdict::scope::{Window, format_device_list, parse_device_list};
use verdict::visible::is_hidden;

/// Cases per target: `VERDICT_FUZZ_CASES`, else a smoke run.
fn config() -> ProptestConfig {
    let cases =
        std::env::var("VERDICT_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256);
    ProptestConfig {
        cases,
        max_shrink_iters: 2_000,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/fuzz.txt",
        ))),
        ..ProptestConfig::default()
    }
}

/// The longest one case may take, even in a debug build on a loaded machine: far beyond any
/// input here, so reaching it means a hang, not a slow machine.
const CASE_LIMIT: Duration = Duration::from_secs(10);

/// Runs `f`, failing when it takes longer than [`CASE_LIMIT`].
fn timed<T>(what: &str, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let out = f();
    let took = start.elapsed();
    assert!(took < CASE_LIMIT, "{what} took {took:?}");
    out
}

// ---------------------------------------------------------------------------------------------
// Claims loader and validator.

const DAY26: &str = include_str!("../../claims/day26-profile-blind.yaml");

/// Loads and validates `text` as the claims file `claims/fuzz.yaml`; an error must carry
/// problems, each with a message, and every problem validation finds has its line and column.
fn check_claims(text: &str) -> Result<(), TestCaseError> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("claims/fuzz.yaml");
    let raw = match timed("parse", || verdict::claims::load::parse(text)) {
        Ok(raw) => raw,
        Err(p) => {
            prop_assert!(!p.message.trim().is_empty(), "a parse error without a message");
            return Ok(());
        }
    };
    match timed("validate", || verdict::claims::validate::validate(raw, &path)) {
        Ok(_) => {}
        Err(e) => {
            prop_assert!(!e.problems.is_empty(), "an error without problems");
            for p in &e.problems {
                prop_assert!(!p.message.trim().is_empty(), "a problem without a message");
                prop_assert!(p.line > 0 && p.column > 0, "{}:{}: {}", p.line, p.column, p.message);
            }
            prop_assert!(!e.to_string().is_empty());
        }
    }
    Ok(())
}

/// One edit of a claims file's text, at a position chosen among its characters or lines.
#[derive(Debug, Clone)]
enum Edit {
    Insert(Index, String),
    Delete(Index, usize),
    Replace(Index, String),
    /// Adds (or with a negative count removes) spaces at the start of a line.
    Indent(Index, i8),
    /// A new `key: value` line with the given indentation.
    Key(Index, usize, String, String),
    /// Swaps two lines.
    SwapLines(Index, Index),
}

/// Characters that mean something to YAML, and some that mean nothing.
const YAML_BITS: &str = "[a-z0-9 :\\-\\[\\]{},\"'#&*!|>%@`.\n\t通]{1,6}";
/// The keys the model knows and a few it does not.
const KEYS: &[&str] = &[
    "report",
    "id",
    "languages",
    "title",
    "question",
    "answer",
    "traces",
    "path",
    "scopes",
    "window",
    "devices",
    "semantics",
    "claims",
    "parts",
    "principal",
    "kind",
    "measure",
    "analysis",
    "scope",
    "value",
    "unit",
    "condition",
    "above",
    "below",
    "formula",
    "en",
    "zh-TW",
    "nvtx",
    "effort",
    "bogus",
    "<<",
    "?",
];
const VALUES: &[&str] = &[
    "",
    "x",
    "0",
    "-1",
    "1e400",
    "99999999999999999999999",
    "0.5%",
    "[]",
    "{}",
    "[a, b]",
    "{ a: 1 }",
    "null",
    "~",
    "true",
    "\"\"",
    "'q'",
    "*a",
    "&a x",
    "!!str 1",
    "|",
    ">",
    "0:1",
    "1-0",
    "all",
    "overlap",
    "nccl_only_ns / total_ns",
    "1 / 0",
    "40:39",
    "1.0000000001:2",
];

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<Index>(), YAML_BITS).prop_map(|(i, s)| Edit::Insert(i, s)),
        (any::<Index>(), 1usize..40).prop_map(|(i, n)| Edit::Delete(i, n)),
        (any::<Index>(), YAML_BITS).prop_map(|(i, s)| Edit::Replace(i, s)),
        (any::<Index>(), -8i8..8).prop_map(|(i, n)| Edit::Indent(i, n)),
        (any::<Index>(), 0usize..12, prop::sample::select(KEYS), prop::sample::select(VALUES))
            .prop_map(|(i, d, k, v)| Edit::Key(i, d, k.to_string(), v.to_string())),
        (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Edit::SwapLines(a, b)),
    ]
}

fn apply(text: &str, edit: &Edit) -> String {
    let chars: Vec<char> = text.chars().collect();
    let at = |i: &Index| i.index(chars.len() + 1);
    let joined = |v: &[char]| v.iter().collect::<String>();
    match edit {
        Edit::Insert(i, s) => {
            let p = at(i);
            format!("{}{s}{}", joined(&chars[..p]), joined(&chars[p..]))
        }
        Edit::Delete(i, n) => {
            let p = at(i);
            let q = (p + n).min(chars.len());
            format!("{}{}", joined(&chars[..p]), joined(&chars[q..]))
        }
        Edit::Replace(i, s) => {
            let p = at(i);
            let q = (p + s.chars().count()).min(chars.len());
            format!("{}{s}{}", joined(&chars[..p]), joined(&chars[q..]))
        }
        Edit::Indent(i, n) => {
            let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
            let l = i.index(lines.len());
            if *n >= 0 {
                lines[l].insert_str(0, &" ".repeat(*n as usize));
            } else {
                let strip = lines[l].len() - lines[l].trim_start_matches(' ').len();
                lines[l].drain(..strip.min(n.unsigned_abs() as usize));
            }
            lines.join("\n")
        }
        Edit::Key(i, depth, k, v) => {
            let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
            let l = i.index(lines.len() + 1);
            lines.insert(l, format!("{}{k}: {v}", " ".repeat(*depth)));
            lines.join("\n")
        }
        Edit::SwapLines(a, b) => {
            let mut lines: Vec<&str> = text.split('\n').collect();
            let (a, b) = (a.index(lines.len()), b.index(lines.len()));
            lines.swap(a, b);
            lines.join("\n")
        }
    }
}

#[test]
fn the_unedited_claims_file_is_valid() {
    let raw = verdict::claims::load::parse(DAY26).expect("parses");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("claims/day26-profile-blind.yaml");
    verdict::claims::validate::validate(raw, &path).expect("valid");
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn claims_from_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..1024)) {
        check_claims(&String::from_utf8_lossy(&bytes))?;
    }

    #[test]
    fn claims_from_yaml_like_text(text in "[a-z0-9 :\\-\\[\\]{},\"'#&*!|>%@`?.\n\t]{0,300}") {
        check_claims(&text)?;
    }

    #[test]
    fn claims_from_an_edited_valid_file(edits in prop::collection::vec(edit(), 1..6)) {
        let text = edits.iter().fold(DAY26.to_string(), |t, e| apply(&t, e));
        check_claims(&text)?;
    }
}

// ---------------------------------------------------------------------------------------------
// Formulas.

/// An exact fraction written independently of the crate: i128 numerator and positive
/// denominator in lowest terms, every operation checked and reduced only at its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Q(i128, i128);

fn gcd(a: i128, b: i128) -> i128 {
    let (mut a, mut b) = (a.checked_abs().unwrap_or(0), b.checked_abs().unwrap_or(0));
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.max(1)
}

impl Q {
    fn new(n: i128, d: i128) -> Option<Q> {
        let (n, d) = if d < 0 { (n.checked_neg()?, d.checked_neg()?) } else { (n, d) };
        let g = gcd(n, d);
        Some(Q(n / g, d / g))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fail {
    DivByZero,
    Overflow,
}

/// Naive evaluation: `a/b + c/d = (ad + cb) / bd` and so on, in the crate's order (left, then
/// right, then the operation).
fn eval_q(e: &Expr, vars: &BTreeMap<String, Q>) -> Result<Q, Fail> {
    let o = Fail::Overflow;
    Ok(match e {
        Expr::Num(r, _) => Q(r.num, r.den),
        Expr::Var(v) => vars[v],
        Expr::Neg(x) => {
            let Q(n, d) = eval_q(x, vars)?;
            Q(n.checked_neg().ok_or(o)?, d)
        }
        Expr::Bin(a, op, b) => {
            let (Q(n1, d1), Q(n2, d2)) = (eval_q(a, vars)?, eval_q(b, vars)?);
            let m = |x: i128, y: i128| x.checked_mul(y).ok_or(Fail::Overflow);
            match op {
                Op::Add => Q::new(m(n1, d2)?.checked_add(m(n2, d1)?).ok_or(o)?, m(d1, d2)?),
                Op::Sub => Q::new(m(n1, d2)?.checked_sub(m(n2, d1)?).ok_or(o)?, m(d1, d2)?),
                Op::Mul => Q::new(m(n1, n2)?, m(d1, d2)?),
                Op::Div if n2 == 0 => return Err(Fail::DivByZero),
                Op::Div => Q::new(m(n1, d2)?, m(d1, n2)?),
            }
            .ok_or(o)?
        }
    })
}

const NAMES: &[&str] = &["a", "b", "total_ns", "nccl_only_ns", "x_1", "share"];

/// A literal as a user writes it: an integer, a decimal or a percentage.
fn literal() -> impl Strategy<Value = Expr> {
    (0u64..100_000, 0u32..4, any::<bool>()).prop_map(|(digits, decimals, percent)| {
        let mut text = digits.to_string();
        if decimals > 0 {
            let d = decimals as usize;
            text = format!("{text:0>width$}", width = d + 1);
            text.insert(text.len() - d, '.');
        }
        let mut value = Rational::parse_decimal(&text).expect("a decimal");
        if percent {
            text.push('%');
            value = value.checked_div(Rational::int(100)).expect("a percentage");
        }
        Expr::Num(value, text)
    })
}

/// Well-formed expressions as the parser builds them.
fn expr() -> impl Strategy<Value = Expr> {
    let leaf =
        prop_oneof![literal(), prop::sample::select(NAMES).prop_map(|n| Expr::Var(n.to_string())),];
    leaf.prop_recursive(6, 48, 2, |inner| {
        prop_oneof![
            inner.clone().prop_map(|e| Expr::Neg(Box::new(e))),
            (inner.clone(), prop::sample::select(&[Op::Add, Op::Sub, Op::Mul, Op::Div][..]), inner)
                .prop_map(|(a, op, b)| Expr::Bin(Box::new(a), op, Box::new(b))),
        ]
    })
}

/// A value for each name: small integers and fractions mostly, sometimes huge.
fn values() -> impl Strategy<Value = Vec<(i128, i128)>> {
    let n = prop_oneof![4 => -1_000i128..1_000, 1 => any::<i64>().prop_map(i128::from)];
    let d = prop_oneof![4 => 1i128..100, 1 => 1i128..i128::from(i64::MAX)];
    prop::collection::vec((n, d), NAMES.len())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn formula_parser_on_arbitrary_text(text in ".{0,200}") {
        if let Err(e) = timed("parse", || Expr::parse(&text)) {
            prop_assert!(!e.message.is_empty());
            prop_assert!(e.offset <= text.chars().count());
        }
    }

    #[test]
    fn formula_parser_on_formula_like_text(
        text in "[a-z_0-9 .%+*/×÷()\\-]{0,300}",
        vals in values(),
    ) {
        let Ok(e) = timed("parse", || Expr::parse(&text)) else { return Ok(()) };
        let vars: BTreeMap<String, Rational> = e
            .vars()
            .into_iter()
            .zip(vals.iter().cycle())
            .map(|(n, &(a, b))| (n, Rational::new(a, b).expect("a fraction")))
            .collect();
        let _ = timed("eval", || e.eval(&vars));
        let shown = e.substitute(&|n| n.to_string());
        prop_assert_eq!(Expr::parse(&shown), Ok(e.clone()), "{}", shown);
    }

    #[test]
    fn formulas_evaluate_exactly_and_round_trip(e in expr(), vals in values()) {
        let shown = e.substitute(&|n| n.to_string());
        prop_assert_eq!(Expr::parse(&shown), Ok(e.clone()), "{}", shown);

        let mut exact = BTreeMap::new();
        let mut naive = BTreeMap::new();
        for (name, &(n, d)) in NAMES.iter().zip(&vals) {
            let q = Q::new(n, d).expect("a fraction");
            exact.insert(name.to_string(), Rational::new(q.0, q.1).expect("a fraction"));
            naive.insert(name.to_string(), q);
        }
        let got = timed("eval", || e.eval(&exact));
        match eval_q(&e, &naive) {
            // The crate reduces before it multiplies, so it succeeds wherever the naive way does.
            Ok(q) => prop_assert_eq!(got.clone().map(|r| (r.num, r.den)), Ok((q.0, q.1)), "{}", shown),
            Err(Fail::DivByZero) => prop_assert!(
                matches!(got, Err(verdict::formula::EvalError::DivByZero(_))), "{} {:?}", shown, got
            ),
            Err(Fail::Overflow) => prop_assert!(
                !matches!(got, Err(verdict::formula::EvalError::Unknown(_))), "{} {:?}", shown, got
            ),
        }

        // Substituting values gives a formula of literals with the same value.
        if let Ok(v) = got {
            let literals = e.substitute(&|n| {
                let r = exact[n];
                format!("({} / {})", r.num, r.den).replace("(-", "(0 - ")
            });
            if let Ok(again) = Expr::parse(&literals) {
                match again.eval(&BTreeMap::new()) {
                    Ok(w) => prop_assert_eq!(w, v, "{}", literals),
                    Err(verdict::formula::EvalError::Overflow(_)) => {}
                    Err(other) => prop_assert!(false, "{} {:?}", literals, other),
                }
            }
        }
    }

    #[test]
    fn rationals_compare_as_their_difference(
        a in any::<i64>(), b in 1i64..i64::MAX, c in any::<i64>(), d in 1i64..i64::MAX,
    ) {
        let x = Rational::new(a.into(), b.into()).expect("fits");
        let y = Rational::new(c.into(), d.into()).expect("fits");
        // i64 halves cannot overflow i128 when cross-multiplied.
        let want = (i128::from(a) * i128::from(d)).cmp(&(i128::from(c) * i128::from(b)));
        prop_assert_eq!(x.cmp_to(y), want);
    }
}

// ---------------------------------------------------------------------------------------------
// Windows and device lists.

proptest! {
    #![proptest_config(config())]

    #[test]
    fn windows_from_arbitrary_text(text in prop_oneof![".{0,40}", "[0-9.: ]{0,40}"]) {
        match timed("window", || Window::parse(&text)) {
            Ok(w) => {
                prop_assert!(w.start_ns < w.end_ns, "{:?}", w);
                prop_assert!(w.start_ns >= 0);
                prop_assert_eq!(Window::parse(&w.to_string()), Ok(w));
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }

    #[test]
    fn windows_round_trip_through_seconds(a in 0i64..i64::MAX, b in 0i64..i64::MAX) {
        let (start_ns, end_ns) = (a.min(b), a.max(b));
        let text = format!(
            "{}:{}",
            verdict::scope::format_seconds(start_ns),
            verdict::scope::format_seconds(end_ns)
        );
        match Window::parse(&text) {
            Ok(w) => prop_assert_eq!(w, Window { start_ns, end_ns }),
            Err(e) => prop_assert!(start_ns == end_ns, "{} {}", text, e),
        }
    }

    #[test]
    fn device_lists_from_arbitrary_text(text in prop_oneof![".{0,40}", "[0-9,\\- ]{0,40}"]) {
        match timed("devices", || parse_device_list(&text)) {
            Ok(ids) => {
                prop_assert!(!ids.is_empty());
                prop_assert!(ids.windows(2).all(|p| p[0] < p[1]), "{:?}", ids);
                prop_assert!(ids.iter().all(|&i| i >= 0));
                let shown = format_device_list(&ids);
                prop_assert_eq!(parse_device_list(&shown), Ok(ids), "{}", shown);
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Markdown and Typst writers for author text.

/// Text with the characters that matter to CommonMark, GFM, HTML, Typst and terminals.
fn author_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[a-c1_*`<>&|#+=.!()~$@\\\\\\[\\]{}\"' \n\r\t\u{0}\u{1b}\u{7f}\u{85}\u{9b}\u{202e}\u{2028}通:/-]{0,80}",
        prop::collection::vec(
            prop::sample::select(
                &[
                    "<",
                    ">",
                    "<!--",
                    "-->",
                    "<a href=x>",
                    "</a>",
                    "<?",
                    "?>",
                    "<![CDATA[",
                    "<script>",
                    "`",
                    "```",
                    "~~~",
                    "    ",
                    "\n",
                    "\n\n",
                    "> ",
                    "- ",
                    "1. ",
                    "| a |",
                    "|---|",
                    "[x](javascript:1)",
                    "![i](y)",
                    "<http://a>",
                    "&amp;",
                    "&#60;",
                    "#set",
                    "$",
                    "\\",
                    "*",
                    "_",
                    "**",
                    "\t",
                    "\r",
                    "\u{1b}",
                    "#",
                    "=",
                    "a",
                    " ",
                ][..]
            ),
            0..24,
        )
        .prop_map(|v| v.concat()),
    ]
}

fn no_html(md: &str) -> Result<(), TestCaseError> {
    let opts = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    for ev in Parser::new_ext(md, opts) {
        prop_assert!(
            !matches!(ev, Event::Html(_) | Event::InlineHtml(_)),
            "raw HTML {:?} in {:?}",
            ev,
            md
        );
    }
    Ok(())
}

/// No control character but the line breaks and tabs a format keeps.
fn no_hidden(out: &str, keep: &[char]) -> Result<(), TestCaseError> {
    let bad = out.chars().find(|&c| is_hidden(c) && !keep.contains(&c));
    prop_assert!(bad.is_none(), "{:?} in {:?}", bad, out);
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn markdown_writers_emit_no_html_and_no_controls(s in author_text()) {
        for inline in [false, true] {
            let md = timed("markdown_safe", || markup::markdown_safe(&s, inline));
            no_html(&md)?;
            no_hidden(&md, &['\n', '\t'])?;
            if inline {
                prop_assert!(!md.contains('\n'), "{:?}", md);
            }
        }
        for cell in [false, true] {
            let md = markup::markdown_text(&s, cell);
            no_html(&md)?;
            no_hidden(&md, &['\n', '\t'])?;
            let span = verdict::markdown::markdown_code_span(&s, cell);
            no_html(&span)?;
            no_hidden(&span, &['\t'])?;
        }
        let block = markup::markdown_code_block(&s);
        no_html(&block)?;
        no_hidden(&block, &['\n', '\t'])?;
    }

    #[test]
    fn typst_writers_emit_no_controls(s in author_text()) {
        for inline in [false, true] {
            let typ = timed("markdown_to_typst", || markup::markdown_to_typst(&s, inline));
            no_hidden(&typ, &['\n', '\t'])?;
        }
        no_hidden(&markup::typst_text(&s), &['\n', '\t'])?;
        let literal = markup::typst_string(&s);
        no_hidden(&literal, &[])?;
        prop_assert!(!literal.contains(['\u{2028}', '\u{2029}']), "{:?}", literal);
    }
}

// ---------------------------------------------------------------------------------------------
// SVG charts.

fn kernel_bar() -> impl Strategy<Value = KernelBar> {
    (author_text(), 0i64..=i64::MAX, 0i64..=i64::MAX, any::<bool>())
        .prop_map(|(name, total_ns, count, nccl)| KernelBar { name, total_ns, count, nccl })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn kernels_chart_is_xml_for_any_names(bars in prop::collection::vec(kernel_bar(), 0..12)) {
        for lang in ["en", "zh-TW"] {
            let labels = Labels::new(&Strings::load(lang).expect("strings")).expect("labels");
            let svg = timed("kernels_chart", || kernels_chart(&bars, &labels));
            let doc = roxmltree::Document::parse(&svg);
            prop_assert!(doc.is_ok(), "{:?}\n{}", doc.err(), svg);
        }
    }
}

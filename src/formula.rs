//! Formulas over exact rationals: `nccl_only_ns / total_ns`, `1 / (1 - share)`, `30 / (100 + 30)`.
//!
//! A formula is parsed once (at load, so a bad one is reported with its position) and
//! evaluated over named values without floating point: integers in, an exact fraction out.
//! Display rounds once, in [`crate::units`]. Every operation is checked (a result that does
//! not fit is an error, never a wrapped value) and comparisons are exact at any size.
//!
//! Limits (issue 12): a formula has at most [`MAX_FORMULA_CHARS`] characters and
//! [`MAX_OPERANDS`] numbers and names, and its parentheses and minus signs nest at most
//! [`MAX_NESTING`] deep. They bound the depth of the parsed tree, so parsing, evaluating,
//! showing and dropping a formula never recurse more than about a hundred frames deep.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;

/// The longest formula, in characters.
pub const MAX_FORMULA_CHARS: usize = 1_000;

/// The most numbers and names one formula may hold.
pub const MAX_OPERANDS: usize = 64;

/// The deepest nesting of parentheses and minus signs (`-(-(a))` nests three deep).
pub const MAX_NESTING: usize = 32;

/// An exact fraction with a positive denominator, in lowest terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rational {
    /// Numerator.
    pub num: i128,
    /// Denominator, always > 0.
    pub den: i128,
}

/// The greatest common divisor of `|a|` and `|b|` (1 when both are 0), unsigned so that
/// `i128::MIN` has an absolute value.
fn gcd(a: i128, b: i128) -> u128 {
    let (mut a, mut b) = (a.unsigned_abs(), b.unsigned_abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.max(1)
}

/// `v / g`, negated when asked, for a divisor `g` of `|v|`; None when it does not fit.
fn div_exact(v: i128, g: u128, negate: bool) -> Option<i128> {
    let q = v.unsigned_abs() / g;
    if (v < 0) != negate { 0i128.checked_sub_unsigned(q) } else { i128::try_from(q).ok() }
}

/// Compares `a / b` with `c / d` exactly, for positive `b` and `d`, without multiplying: the
/// integer parts decide, or else the fractional parts, compared through their reciprocals in
/// the opposite order (the continued fractions of both, term by term). Each step is a
/// Euclidean division by a positive number, which cannot overflow, and the denominators
/// shrink as in Euclid's algorithm, so it ends.
fn cmp_fractions(mut a: i128, mut b: i128, mut c: i128, mut d: i128) -> Ordering {
    let mut flipped = false;
    loop {
        let (qa, ra) = (a.div_euclid(b), a.rem_euclid(b));
        let (qc, rc) = (c.div_euclid(d), c.rem_euclid(d));
        let order = match (qa.cmp(&qc), ra == 0, rc == 0) {
            (Ordering::Equal, true, true) => Ordering::Equal,
            (Ordering::Equal, true, false) => Ordering::Less,
            (Ordering::Equal, false, true) => Ordering::Greater,
            (Ordering::Equal, false, false) => {
                // ra/b against rc/d, both in (0, 1): the larger has the smaller reciprocal.
                (a, b, c, d) = (b, ra, d, rc);
                flipped = !flipped;
                continue;
            }
            (o, _, _) => o,
        };
        return if flipped { order.reverse() } else { order };
    }
}

impl Rational {
    /// `num / den`, reduced; None when `den` is zero or when the reduced fraction with a
    /// positive denominator does not fit (`1 / i128::MIN`).
    pub fn new(num: i128, den: i128) -> Option<Rational> {
        if den == 0 {
            return None;
        }
        let g = gcd(num, den);
        let negate = den < 0;
        Some(Rational { num: div_exact(num, g, negate)?, den: div_exact(den, g, negate)? })
    }

    /// An integer.
    pub fn int(v: i128) -> Rational {
        Rational { num: v, den: 1 }
    }

    /// Parses a plain decimal such as `0.178`, `-3`, `1,094.74` exactly.
    pub fn parse_decimal(text: &str) -> Option<Rational> {
        let t = text.trim().replace(',', "");
        let (neg, t) = match t.strip_prefix('-') {
            Some(r) => (true, r.to_string()),
            None => (false, t.strip_prefix('+').unwrap_or(&t).to_string()),
        };
        let (i, f) = t.split_once('.').unwrap_or((&t, ""));
        if (i.is_empty() && f.is_empty()) || !i.bytes().chain(f.bytes()).all(|b| b.is_ascii_digit())
        {
            return None;
        }
        if i.len() + f.len() > 30 {
            return None;
        }
        let digits: i128 = format!("{i}{f}").parse().ok()?;
        let r = Rational::new(digits, 10_i128.pow(f.len() as u32))?;
        if neg { r.checked_neg() } else { Some(r) }
    }

    /// `-self`; None for a numerator of `i128::MIN`, whose negation does not fit.
    pub fn checked_neg(self) -> Option<Rational> {
        Some(Rational { num: self.num.checked_neg()?, den: self.den })
    }

    /// `|self|`; None for a numerator of `i128::MIN`.
    pub fn checked_abs(self) -> Option<Rational> {
        if self.num < 0 { self.checked_neg() } else { Some(self) }
    }

    /// The two fractions over their least common denominator: `(self's numerator, o's
    /// numerator, denominator)`, None when one does not fit.
    fn common(self, o: Rational) -> Option<(i128, i128, i128)> {
        // Both denominators are positive, so their gcd is an i128.
        let g = i128::try_from(gcd(self.den, o.den)).ok()?;
        let (s, t) = (self.den / g, o.den / g);
        Some((self.num.checked_mul(t)?, o.num.checked_mul(s)?, self.den.checked_mul(t)?))
    }

    /// Checked sum.
    pub fn checked_add(self, o: Rational) -> Option<Rational> {
        let (a, b, den) = self.common(o)?;
        Rational::new(a.checked_add(b)?, den)
    }

    /// Checked difference.
    pub fn checked_sub(self, o: Rational) -> Option<Rational> {
        let (a, b, den) = self.common(o)?;
        Rational::new(a.checked_sub(b)?, den)
    }

    /// Checked product.
    pub fn checked_mul(self, o: Rational) -> Option<Rational> {
        let (g1, g2) = (gcd(self.num, o.den), gcd(o.num, self.den));
        Rational::new(
            div_exact(self.num, g1, false)?.checked_mul(div_exact(o.num, g2, false)?)?,
            div_exact(self.den, g2, false)?.checked_mul(div_exact(o.den, g1, false)?)?,
        )
    }

    /// Checked quotient; None on division by zero or when the result does not fit.
    pub fn checked_div(self, o: Rational) -> Option<Rational> {
        if o.num == 0 {
            return None;
        }
        self.checked_mul(Rational::new(o.den, o.num)?)
    }

    /// The value as a float, for charts only.
    pub fn to_f64(self) -> f64 {
        self.num as f64 / self.den as f64
    }

    /// Compares two rationals exactly: by cross-multiplication when both products fit, else
    /// through their continued fractions (a bound of `2e-30` against a measured share of
    /// nanoseconds needs more than 128 bits to cross-multiply).
    pub fn cmp_to(self, o: Rational) -> Ordering {
        match (self.num.checked_mul(o.den), o.num.checked_mul(self.den)) {
            (Some(a), Some(b)) => a.cmp(&b),
            _ => cmp_fractions(self.num, self.den, o.num, o.den),
        }
    }
}

/// A parsed formula.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A literal, exactly as written.
    Num(Rational, String),
    /// A named value: an analysis field or another part's value.
    Var(String),
    /// Negation.
    Neg(Box<Expr>),
    /// Binary operation.
    Bin(Box<Expr>, Op, Box<Expr>),
}

/// A binary operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
}

impl Op {
    fn symbol(self) -> &'static str {
        match self {
            Op::Add => "+",
            Op::Sub => "-",
            Op::Mul => "×",
            Op::Div => "/",
        }
    }
    fn prec(self) -> u8 {
        match self {
            Op::Add | Op::Sub => 1,
            Op::Mul | Op::Div => 2,
        }
    }
}

/// A parse error with the 0-based character offset where it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// Offset in the formula text.
    pub offset: usize,
    /// What is wrong.
    pub message: String,
}

/// Why a formula could not be evaluated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    /// A name has no value.
    #[error("`{0}` has no value")]
    Unknown(String),
    /// Division by zero.
    #[error("division by zero in `{0}`")]
    DivByZero(String),
    /// Out of the exact range.
    #[error("the value of `{0}` overflows exact arithmetic")]
    Overflow(String),
}

impl Expr {
    /// Parses a formula, within the limits the module documentation states.
    pub fn parse(text: &str) -> Result<Expr, ParseError> {
        if text.chars().nth(MAX_FORMULA_CHARS).is_some() {
            return Err(ParseError {
                offset: MAX_FORMULA_CHARS,
                message: format!(
                    "the formula is longer than {} characters (the limit)",
                    crate::units::thousands(MAX_FORMULA_CHARS as i128)
                ),
            });
        }
        let chars: Vec<char> = text.chars().collect();
        let mut p = Parser { s: &chars, i: 0, depth: 0, operands: 0 };
        let e = p.expr()?;
        p.ws();
        if p.i < chars.len() {
            return Err(ParseError {
                offset: p.i,
                message: format!("unexpected `{}`", chars[p.i]),
            });
        }
        Ok(e)
    }

    /// The names a formula uses, in order of first appearance.
    pub fn vars(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.collect_vars(&mut out);
        out
    }

    fn collect_vars(&self, out: &mut Vec<String>) {
        match self {
            Expr::Num(..) => {}
            Expr::Var(v) => {
                if !out.contains(v) {
                    out.push(v.clone())
                }
            }
            Expr::Neg(e) => e.collect_vars(out),
            Expr::Bin(a, _, b) => {
                a.collect_vars(out);
                b.collect_vars(out);
            }
        }
    }

    /// Evaluates over named values.
    pub fn eval(&self, vars: &BTreeMap<String, Rational>) -> Result<Rational, EvalError> {
        match self {
            Expr::Num(r, _) => Ok(*r),
            Expr::Var(v) => vars.get(v).copied().ok_or_else(|| EvalError::Unknown(v.clone())),
            Expr::Neg(e) => {
                e.eval(vars)?.checked_neg().ok_or_else(|| EvalError::Overflow(self.to_string()))
            }
            Expr::Bin(a, op, b) => {
                let (x, y) = (a.eval(vars)?, b.eval(vars)?);
                let r = match op {
                    Op::Add => x.checked_add(y),
                    Op::Sub => x.checked_sub(y),
                    Op::Mul => x.checked_mul(y),
                    Op::Div => {
                        if y.num == 0 {
                            return Err(EvalError::DivByZero(self.to_string()));
                        }
                        x.checked_div(y)
                    }
                };
                r.ok_or_else(|| EvalError::Overflow(self.to_string()))
            }
        }
    }

    /// Renders the formula with each name replaced by `show(name)`.
    pub fn substitute(&self, show: &dyn Fn(&str) -> String) -> String {
        self.render(show, 0)
    }

    fn render(&self, show: &dyn Fn(&str) -> String, parent: u8) -> String {
        match self {
            Expr::Num(_, text) => text.clone(),
            Expr::Var(v) => show(v),
            Expr::Neg(e) => format!("-{}", e.render(show, 3)),
            Expr::Bin(a, op, b) => {
                let p = op.prec();
                // The right side of - and / needs parentheses at equal precedence.
                let s = format!("{} {} {}", a.render(show, p), op.symbol(), b.render(show, p + 1));
                if p < parent { format!("({s})") } else { s }
            }
        }
    }

    /// The numerator and denominator of a top-level division.
    pub fn as_ratio(&self) -> Option<(&Expr, &Expr)> {
        match self {
            Expr::Bin(a, Op::Div, b) => Some((a, b)),
            _ => None,
        }
    }

    /// The names of a sum of names (`a + b + c`), or None if it is not one.
    pub fn sum_of_vars(&self) -> Option<Vec<String>> {
        match self {
            Expr::Var(v) => Some(vec![v.clone()]),
            Expr::Bin(a, Op::Add, b) => {
                let mut v = a.sum_of_vars()?;
                v.extend(b.sum_of_vars()?);
                Some(v)
            }
            _ => None,
        }
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.substitute(&|v| v.to_string()))
    }
}

struct Parser<'a> {
    s: &'a [char],
    i: usize,
    /// Parentheses and minus signs open around the current position.
    depth: usize,
    /// Numbers and names read so far.
    operands: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_whitespace() {
            self.i += 1;
        }
    }

    fn expr(&mut self) -> Result<Expr, ParseError> {
        let mut lhs = self.term()?;
        loop {
            self.ws();
            let op = match self.s.get(self.i) {
                Some('+') => Op::Add,
                Some('-') => Op::Sub,
                _ => return Ok(lhs),
            };
            self.i += 1;
            let rhs = self.term()?;
            lhs = Expr::Bin(Box::new(lhs), op, Box::new(rhs));
        }
    }

    fn term(&mut self) -> Result<Expr, ParseError> {
        let mut lhs = self.factor()?;
        loop {
            self.ws();
            let op = match self.s.get(self.i) {
                Some('*') | Some('×') => Op::Mul,
                Some('/') | Some('÷') => Op::Div,
                _ => return Ok(lhs),
            };
            self.i += 1;
            let rhs = self.factor()?;
            lhs = Expr::Bin(Box::new(lhs), op, Box::new(rhs));
        }
    }

    /// Opens a parenthesis or a minus sign at `start`, refusing one level beyond the limit.
    fn nest(&mut self, start: usize) -> Result<(), ParseError> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(ParseError {
                offset: start,
                message: format!(
                    "parentheses and minus signs nest deeper than {MAX_NESTING} levels (the limit)"
                ),
            });
        }
        Ok(())
    }

    /// Counts the number or name at `start`, refusing one beyond the limit.
    fn operand(&mut self, start: usize) -> Result<(), ParseError> {
        self.operands += 1;
        if self.operands > MAX_OPERANDS {
            return Err(ParseError {
                offset: start,
                message: format!(
                    "the formula has more than {MAX_OPERANDS} numbers and names (the limit)"
                ),
            });
        }
        Ok(())
    }

    fn factor(&mut self) -> Result<Expr, ParseError> {
        self.ws();
        let start = self.i;
        match self.s.get(self.i) {
            None => Err(ParseError { offset: start, message: "the formula ends too early".into() }),
            Some('(') => {
                self.nest(start)?;
                self.i += 1;
                let e = self.expr()?;
                self.ws();
                if self.s.get(self.i) != Some(&')') {
                    return Err(ParseError { offset: self.i, message: "missing `)`".into() });
                }
                self.i += 1;
                self.depth -= 1;
                Ok(e)
            }
            Some('-') => {
                self.nest(start)?;
                self.i += 1;
                let e = Expr::Neg(Box::new(self.factor()?));
                self.depth -= 1;
                Ok(e)
            }
            Some(c) if c.is_ascii_digit() || *c == '.' => {
                self.operand(start)?;
                while self.i < self.s.len()
                    && (self.s[self.i].is_ascii_digit() || self.s[self.i] == '.')
                {
                    self.i += 1;
                }
                let mut text: String = self.s[start..self.i].iter().collect();
                let mut value = Rational::parse_decimal(&text).ok_or_else(|| ParseError {
                    offset: start,
                    message: format!("`{text}` is not a number"),
                })?;
                if self.s.get(self.i) == Some(&'%') {
                    self.i += 1;
                    text.push('%');
                    value = value.checked_div(Rational::int(100)).ok_or_else(|| ParseError {
                        offset: start,
                        message: format!("`{text}` is out of the exact range"),
                    })?;
                }
                Ok(Expr::Num(value, text))
            }
            Some(c) if c.is_alphabetic() || *c == '_' => {
                self.operand(start)?;
                while self.i < self.s.len()
                    && (self.s[self.i].is_alphanumeric()
                        || self.s[self.i] == '_'
                        || self.s[self.i] == '-')
                {
                    self.i += 1;
                }
                Ok(Expr::Var(self.s[start..self.i].iter().collect()))
            }
            Some(c) => Err(ParseError { offset: start, message: format!("unexpected `{c}`") }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, i128)]) -> BTreeMap<String, Rational> {
        pairs.iter().map(|(k, v)| (k.to_string(), Rational::int(*v))).collect()
    }

    #[test]
    fn article_formulas_are_exact() {
        let e = Expr::parse("30 / (100 + 30)").unwrap();
        assert_eq!(e.eval(&BTreeMap::new()).unwrap(), Rational::new(3, 13).unwrap());
        let e = Expr::parse("nccl_only_ns / total_ns").unwrap();
        let v =
            e.eval(&vars(&[("nccl_only_ns", 1_094_740_000), ("total_ns", 6_155_750_000)])).unwrap();
        assert_eq!(v, Rational::new(109_474, 615_575).unwrap());
        let e = Expr::parse("1 / (1 - share)").unwrap();
        let mut m = BTreeMap::new();
        m.insert("share".to_string(), Rational::parse_decimal("0.178").unwrap());
        assert_eq!(e.eval(&m).unwrap(), Rational::new(1000, 822).unwrap());
        assert_eq!(
            Expr::parse("30%").unwrap().eval(&BTreeMap::new()).unwrap(),
            Rational::new(3, 10).unwrap()
        );
    }

    #[test]
    fn precedence_and_display() {
        let e = Expr::parse("a - (b - c) / d * 2").unwrap();
        assert_eq!(e.to_string(), "a - (b - c) / d × 2");
        let v = e.eval(&vars(&[("a", 10), ("b", 7), ("c", 3), ("d", 4)])).unwrap();
        assert_eq!(v, Rational::int(8));
        let e = Expr::parse("overlap_ns / (nccl_only_ns + overlap_ns)").unwrap();
        assert_eq!(e.substitute(&|v| v.len().to_string()), "10 / (12 + 10)");
        assert_eq!(
            e.as_ratio().unwrap().1.sum_of_vars().unwrap(),
            vec!["nccl_only_ns", "overlap_ns"]
        );
    }

    #[test]
    fn errors() {
        assert_eq!(Expr::parse("a / (b").unwrap_err().message, "missing `)`");
        assert_eq!(Expr::parse("a $ b").unwrap_err().offset, 2);
        assert!(Expr::parse("").is_err());
        let e = Expr::parse("a / b").unwrap();
        assert!(matches!(e.eval(&vars(&[("a", 1), ("b", 0)])), Err(EvalError::DivByZero(_))));
        assert!(matches!(e.eval(&vars(&[("a", 1)])), Err(EvalError::Unknown(_))));
        assert_eq!(Rational::parse_decimal("1,094.74"), Rational::new(109_474, 100));
    }

    /// The error of a formula that must be refused: (0-based offset, message).
    fn refused(text: &str) -> (usize, String) {
        let e = Expr::parse(text).expect_err(text);
        (e.offset, e.message)
    }

    #[test]
    fn bombs_are_refused_at_the_length_limit() {
        // Issue 12: each of these overflowed the stack (exit 134) before the limits.
        let bombs = [
            format!("{}1{}", "(".repeat(10_000), ")".repeat(10_000)),
            vec!["1"; 100_000].join("+"),
            format!("{}1", "-".repeat(100_000)),
        ];
        for text in &bombs {
            let (offset, message) = refused(text);
            assert_eq!(offset, MAX_FORMULA_CHARS, "{message}");
            assert_eq!(message, "the formula is longer than 1,000 characters (the limit)");
        }
        // The limit counts characters, not bytes: 1,000 `×` pass the length check.
        let (offset, message) = refused(&"×".repeat(MAX_FORMULA_CHARS));
        assert_eq!((offset, message.as_str()), (0, "unexpected `×`"));
    }

    #[test]
    fn nesting_and_operands_are_limited_where_they_pass_the_limit() {
        let nested = |n: usize| format!("{}7{}", "(".repeat(n), ")".repeat(n));
        let none = BTreeMap::new();
        assert_eq!(Expr::parse(&nested(MAX_NESTING)).unwrap().eval(&none), Ok(Rational::int(7)));
        let (offset, message) = refused(&nested(MAX_NESTING + 1));
        assert_eq!(offset, MAX_NESTING, "the 33rd `(` is character 33");
        assert_eq!(message, "parentheses and minus signs nest deeper than 32 levels (the limit)");

        // 32 minus signs are an even number of negations; a 33rd is refused.
        let minus = |n: usize| format!("{}5", "-".repeat(n));
        assert_eq!(Expr::parse(&minus(MAX_NESTING)).unwrap().eval(&none), Ok(Rational::int(5)));
        assert_eq!(refused(&minus(MAX_NESTING + 1)).0, MAX_NESTING);
        // Siblings do not nest: 40 parenthesised terms side by side are fine.
        let siblings = vec!["(1)"; 40].join(" + ");
        assert_eq!(Expr::parse(&siblings).unwrap().eval(&none), Ok(Rational::int(40)));

        let terms = |n: usize| vec!["2"; n].join(" + ");
        assert_eq!(Expr::parse(&terms(MAX_OPERANDS)).unwrap().eval(&none), Ok(Rational::int(128)));
        let (offset, message) = refused(&terms(MAX_OPERANDS + 1));
        // "2 + " is four characters: the 65th operand starts at 4 * 64.
        assert_eq!(offset, 4 * MAX_OPERANDS);
        assert_eq!(message, "the formula has more than 64 numbers and names (the limit)");
        // Names count as operands too.
        assert_eq!(refused(&vec!["a"; MAX_OPERANDS + 1].join("*")).0, 2 * MAX_OPERANDS);
    }

    #[test]
    fn the_largest_formula_within_the_limits_evaluates_and_shows() {
        // 32 levels of nesting around a chain of 64 operands: the deepest tree the limits allow.
        let chain = vec!["1"; MAX_OPERANDS].join(" - ");
        let text =
            format!("{}{chain}{}", "-(".repeat(MAX_NESTING / 2), ")".repeat(MAX_NESTING / 2));
        assert!(text.chars().count() <= MAX_FORMULA_CHARS);
        let e = Expr::parse(&text).unwrap();
        // 1 - 63 = -62, negated 16 times.
        assert_eq!(e.eval(&BTreeMap::new()), Ok(Rational::int(-62)));
        assert_eq!(e.to_string(), format!("{}({chain})", "-".repeat(MAX_NESTING / 2)));
    }

    #[test]
    fn arithmetic_at_the_ends_of_the_range_is_an_error_not_a_wrap() {
        let min = Rational::new(i128::MIN, 1).unwrap();
        assert_eq!(min.checked_neg(), None);
        assert_eq!(min.checked_abs(), None);
        assert_eq!(Rational::new(1, i128::MIN), None, "1 / MIN has no positive denominator");
        assert_eq!(Rational::new(-1, i128::MIN), None, "2^127 is no i128");
        assert_eq!(Rational::new(2, i128::MIN), Some(Rational { num: -1, den: 1 << 126 }));
        assert_eq!(Rational::new(i128::MIN, i128::MIN), Some(Rational::int(1)));
        assert_eq!(Rational::int(1).checked_div(min), None);
        assert_eq!(Rational::int(i128::MAX).checked_add(Rational::int(1)), None);
        assert_eq!(min.checked_sub(Rational::int(1)), None);
        assert_eq!(
            Rational::int(i128::MAX).checked_sub(Rational::int(i128::MAX)),
            Some(Rational::int(0))
        );
        let e = Expr::parse("-x").unwrap();
        let vars: BTreeMap<String, Rational> = [("x".to_string(), min)].into_iter().collect();
        assert!(matches!(e.eval(&vars), Err(EvalError::Overflow(_))));
        let e = Expr::parse("x * x").unwrap();
        assert!(matches!(e.eval(&vars), Err(EvalError::Overflow(_))));
    }

    #[test]
    fn comparisons_are_exact_beyond_cross_multiplication() {
        use Ordering::*;
        // Issue 12: `above: 0.0000000000000000000000000002%` against day26's exposed share.
        let tiny = Rational::parse_decimal("0.0000000000000000000000000002")
            .and_then(|r| r.checked_div(Rational::int(100)))
            .unwrap();
        assert_eq!(tiny, Rational::new(1, 5 * 10_i128.pow(29)).unwrap());
        let share = Rational::new(1_094_738_291, 6_155_748_929).unwrap();
        assert!(share.num.checked_mul(tiny.den).is_none(), "the products do not fit");
        assert_eq!(share.cmp_to(tiny), Greater);
        assert_eq!(tiny.cmp_to(share), Less);
        assert_eq!(share.checked_neg().unwrap().cmp_to(tiny), Less);
        assert_eq!(tiny.cmp_to(tiny), Equal);

        // n / (n + 1) grows with n, (n + 1) / n shrinks: near the top of the range the
        // continued fractions must go several terms deep to tell them apart.
        let m = i128::MAX;
        let up = |n: i128| Rational::new(n, n + 1).unwrap();
        let down = |n: i128| Rational::new(n + 1, n).unwrap();
        assert_eq!(up(m - 2).cmp_to(up(m - 1)), Less);
        assert_eq!(up(m - 1).cmp_to(up(m - 2)), Greater);
        assert_eq!(down(m - 2).cmp_to(down(m - 1)), Greater);
        assert_eq!(down(m - 1).cmp_to(down(m - 1)), Equal);
        let neg = |r: Rational| r.checked_neg().unwrap();
        assert_eq!(neg(up(m - 2)).cmp_to(neg(up(m - 1))), Greater);
        // Equal values written with different denominators.
        let (a, b) = (m / 3, m / 2);
        assert_eq!(cmp_fractions(2 * a, 2 * b, a, b), Equal);
        assert_eq!(cmp_fractions(-(2 * a), 2 * b, -a, b), Equal);
        assert_eq!(cmp_fractions(2 * a + 1, 2 * b, a, b), Greater);
    }

    proptest::proptest! {
        /// Where cross-multiplication fits, the continued fractions agree with it.
        #[test]
        fn continued_fractions_agree_with_cross_multiplication(
            a in -1_000_000_000_000i128..1_000_000_000_000,
            b in 1i128..1_000_000_000_000,
            c in -1_000_000_000_000i128..1_000_000_000_000,
            d in 1i128..1_000_000_000_000,
        ) {
            proptest::prop_assert_eq!(cmp_fractions(a, b, c, d), (a * d).cmp(&(c * b)));
        }
    }
}

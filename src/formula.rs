//! Formulas over exact rationals: `nccl_only_ns / total_ns`, `1 / (1 - share)`, `30 / (100 + 30)`.
//!
//! A formula is parsed once (at load, so a bad one is reported with its position) and
//! evaluated over named values without floating point: integers in, an exact fraction out.
//! Display rounds once, in [`crate::units`].

use std::collections::BTreeMap;
use std::fmt;

/// An exact fraction with a positive denominator, in lowest terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rational {
    /// Numerator.
    pub num: i128,
    /// Denominator, always > 0.
    pub den: i128,
}

fn gcd(mut a: i128, mut b: i128) -> i128 {
    a = a.abs();
    b = b.abs();
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.max(1)
}

impl Rational {
    /// `num / den`, reduced; None when `den` is zero.
    pub fn new(num: i128, den: i128) -> Option<Rational> {
        if den == 0 {
            return None;
        }
        let g = gcd(num, den);
        let s = if den < 0 { -1 } else { 1 };
        Some(Rational { num: s * num / g, den: s * den / g })
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
        Some(if neg { r.negated() } else { r })
    }

    /// `-self`.
    pub fn negated(self) -> Rational {
        Rational { num: -self.num, den: self.den }
    }

    /// Checked sum.
    pub fn checked_add(self, o: Rational) -> Option<Rational> {
        let num = self.num.checked_mul(o.den)?.checked_add(o.num.checked_mul(self.den)?)?;
        Rational::new(num, self.den.checked_mul(o.den)?)
    }

    /// Checked difference.
    pub fn checked_sub(self, o: Rational) -> Option<Rational> {
        self.checked_add(o.negated())
    }

    /// Checked product.
    pub fn checked_mul(self, o: Rational) -> Option<Rational> {
        let g1 = gcd(self.num, o.den);
        let g2 = gcd(o.num, self.den);
        Rational::new(
            (self.num / g1).checked_mul(o.num / g2)?,
            (self.den / g2).checked_mul(o.den / g1)?,
        )
    }

    /// Checked quotient; None on division by zero.
    pub fn checked_div(self, o: Rational) -> Option<Rational> {
        if o.num == 0 {
            return None;
        }
        self.checked_mul(Rational { num: o.den * o.num.signum(), den: o.num.abs() })
    }

    /// The value as a float, for charts only.
    pub fn to_f64(self) -> f64 {
        self.num as f64 / self.den as f64
    }

    /// Compares two rationals.
    pub fn cmp_to(self, o: Rational) -> std::cmp::Ordering {
        (self.num * o.den).cmp(&(o.num * self.den))
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
    /// Parses a formula.
    pub fn parse(text: &str) -> Result<Expr, ParseError> {
        let chars: Vec<char> = text.chars().collect();
        let mut p = Parser { s: &chars, i: 0 };
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
            Expr::Neg(e) => Ok(e.eval(vars)?.negated()),
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

    fn factor(&mut self) -> Result<Expr, ParseError> {
        self.ws();
        let start = self.i;
        match self.s.get(self.i) {
            None => Err(ParseError { offset: start, message: "the formula ends too early".into() }),
            Some('(') => {
                self.i += 1;
                let e = self.expr()?;
                self.ws();
                if self.s.get(self.i) != Some(&')') {
                    return Err(ParseError { offset: self.i, message: "missing `)`".into() });
                }
                self.i += 1;
                Ok(e)
            }
            Some('-') => {
                self.i += 1;
                Ok(Expr::Neg(Box::new(self.factor()?)))
            }
            Some(c) if c.is_ascii_digit() || *c == '.' => {
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
                    value = value.checked_div(Rational::int(100)).unwrap_or(value);
                }
                Ok(Expr::Num(value, text))
            }
            Some(c) if c.is_alphabetic() || *c == '_' => {
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
}

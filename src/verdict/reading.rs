//! What a part's formula computes, read once from its analysis's declarations: each operand's
//! kind (a total, a count, a statistic), the value's shape (one operand, a ratio, other
//! arithmetic) with its denominator, how it combines devices and ranks, and what the window
//! does to it.
//!
//! The rules evaluate [`Reading::expr`], and gates R1, R3 and R4 and the verdict table's scope
//! label are worded from the same [`Reading`], so the words around a number come from the
//! formula that computed it, never from the analysis alone (issue 38). Pure: no I/O.

use crate::analysis::{Across, AnalysisSpec, Evidence, FieldKind, ScopeRule, Stat};
use crate::claims::{Measure, RankSel};
use crate::formula::{Expr, Op};
use crate::scope::Semantics;

/// One operand of a formula: what the fields it reads are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operand {
    /// A time (union or sum), bytes or a window length: a total of its kind, which adds up
    /// over devices where the analysis sums them.
    Total(FieldKind),
    /// A count of things, which adds up over devices where the analysis sums them.
    Count,
    /// A statistic of a population (a min, a median, a max, a skew, a number of distinct
    /// names) of a quantity of this kind: never a total.
    Statistic(Stat, FieldKind),
    /// A point in time.
    Timestamp,
    /// A comparison's metric, whatever it measures.
    Metric,
}

impl Operand {
    /// The quantity it measures, for R3's comparison with the claim's quantity.
    pub fn quantity(self) -> FieldKind {
        match self {
            Operand::Total(k) | Operand::Statistic(_, k) => k,
            Operand::Count => FieldKind::Count,
            Operand::Timestamp => FieldKind::Timestamp,
            Operand::Metric => FieldKind::Metric,
        }
    }

    /// Whether it is a statistic.
    pub fn is_statistic(self) -> bool {
        matches!(self, Operand::Statistic(..))
    }
}

/// The shape of the value a formula computes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    /// One operand: a field, or a sum of fields the analysis declares as one quantity
    /// (`nccl_only_ns + overlap_ns` is NCCL busy time), possibly scaled by a constant.
    One(Operand),
    /// A division: its numerator (None when its fields are of several kinds) over its
    /// denominator, which may be a statistic (`max_ns / median_ns`). A constant around it
    /// (`1 - idle_ns / total_ns`, `x * 100`) keeps the shape.
    Ratio {
        /// The numerator, when its fields share one kind.
        num: Option<Operand>,
        /// The denominator, when its fields share one kind (None: mixed, or a literal).
        den: Option<Operand>,
        /// The denominator as written in the formula evaluated (`median_ns`).
        den_text: String,
    },
    /// Other arithmetic over fields of several kinds.
    Other,
}

/// How the value combines the devices (or ranks) of its evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Over {
    /// One device's value.
    Device,
    /// One rank's row (`rank:`).
    Rank(String),
    /// Every rank's row, each judged on its own (`over_ranks:`).
    EachRank(String),
    /// Totals or counts added up over the devices (or a ratio of such totals).
    Summed,
    /// Statistics of the population of every device taken together (the longest kernel of
    /// devices 0-1, a median over them): neither a total nor one device's value.
    Pooled,
    /// Statistics of the differences between ranks (a start skew).
    AcrossRanks,
    /// One value for the devices that neither adds them up nor pools a population (the
    /// instances matched, the ranks compared, a whole-trace inventory).
    Whole,
}

/// What the window does to the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowRole {
    /// No window: the evidence covers the whole trace.
    WholeTrace,
    /// The window's length (clip) or the span of the kernels kept inside it (contain) is the
    /// formula's denominator.
    Denominator,
    /// The window's length (or kept span) enters the formula, but not as its denominator.
    Span,
    /// The window selects what is counted and summed (clipped to it, or only what lies wholly
    /// inside); it is no part of the formula.
    Selects,
    /// The window selects whole collective instances; kernels are never clipped.
    Instances,
}

/// The typed description of what a measured part computes.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    /// The formula evaluated: the part's, or, for a field that is a ratio of others
    /// (`wait_share`), that field's declared formula (`wait_ns / nccl_ns`).
    pub expr: Expr,
    /// The declared formula of a ratio field, as written in its analysis.
    pub definition: Option<&'static str>,
    /// The value's shape and denominator.
    pub shape: Shape,
    /// How it combines devices and ranks.
    pub over: Over,
    /// The devices (ranks) it covers.
    pub devices: usize,
    /// What the window does to it.
    pub window: WindowRole,
    /// How the window selects.
    pub semantics: Semantics,
}

/// The declared formula of a measure whose value is one field that is a ratio of others; over
/// per-rank rows the rows' ratios come first.
pub fn ratio_definition(m: &Measure) -> Option<(&'static str, Expr)> {
    let vars = m.value.vars();
    let [field] = vars.as_slice() else { return None };
    if m.value_text.trim() != field {
        return None;
    }
    field_definition(m, field)
}

/// The declared formula of a field that is a ratio of others; over per-rank rows the rows'
/// ratios come first.
fn field_definition(m: &Measure, field: &str) -> Option<(&'static str, Expr)> {
    let spec = crate::analysis::spec(&m.analysis)?;
    let rows = m.ranks.as_ref().and_then(|_| spec.row_fields()).map_or(&[][..], |r| r.ratios);
    let (_, text) = rows.iter().chain(spec.ratios).find(|(f, _)| *f == field)?;
    Some((*text, Expr::parse(text).ok()?))
}

/// What one field is.
fn field_operand(spec: &AnalysisSpec, field: &str) -> Option<Operand> {
    let kind = spec.kind(field)?;
    if let Some(s) = spec.stat(field) {
        return Some(Operand::Statistic(s, kind));
    }
    Some(match kind {
        FieldKind::Count => Operand::Count,
        FieldKind::Timestamp => Operand::Timestamp,
        FieldKind::Metric => Operand::Metric,
        k => Operand::Total(k),
    })
}

/// Drops a constant around an expression (`1 - x`, `x * 100`, `x / 100`, `-x`).
fn unscaled(e: &Expr) -> &Expr {
    match e {
        Expr::Neg(x) => unscaled(x),
        Expr::Bin(a, _, b) if matches!(**a, Expr::Num(..)) && !matches!(**b, Expr::Num(..)) => {
            unscaled(b)
        }
        Expr::Bin(a, _, b) if matches!(**b, Expr::Num(..)) && !matches!(**a, Expr::Num(..)) => {
            unscaled(a)
        }
        _ => e,
    }
}

/// What an expression without a division is: a declared sum, or the one operand its fields
/// share.
fn operand(spec: &AnalysisSpec, e: &Expr) -> Option<Operand> {
    let e = unscaled(e);
    if let Some(vars) = e.sum_of_vars() {
        let mut set: Vec<&str> = vars.iter().map(String::as_str).collect();
        set.sort_unstable();
        let declared = spec.sums.iter().find(|(terms, _)| {
            let mut t: Vec<&str> = terms.to_vec();
            t.sort_unstable();
            t == set
        });
        if let Some((_, kind)) = declared {
            return Some(Operand::Total(*kind));
        }
    }
    let ops: Vec<Operand> =
        e.vars().iter().map(|v| field_operand(spec, v)).collect::<Option<_>>()?;
    let first = *ops.first()?;
    ops.iter().all(|o| *o == first).then_some(first)
}

/// The division a formula computes, under any constant around it.
fn division(e: &Expr) -> Option<(&Expr, &Expr)> {
    match unscaled(e) {
        Expr::Bin(a, Op::Div, b) => Some((a, b)),
        _ => None,
    }
}

impl Reading {
    /// Reads a measure over its evidence (the devices it covers, its window) and the
    /// semantics of its scope.
    pub fn of(m: &Measure, ev: &Evidence, semantics: Semantics) -> Reading {
        let windowed = ev.window.requested_ns.is_some();
        Reading::from_parts(m, ev.scope.devices.len(), windowed, semantics)
    }

    /// Reads a measure over `devices` devices, with or without a window.
    pub fn from_parts(
        m: &Measure,
        devices: usize,
        windowed: bool,
        semantics: Semantics,
    ) -> Reading {
        let definition = ratio_definition(m);
        let expr = definition.as_ref().map_or_else(|| m.value.clone(), |(_, e)| e.clone());
        let spec = crate::analysis::spec(&m.analysis);
        let shape = match spec {
            None => Shape::Other,
            Some(spec) => match division(&expr) {
                Some((n, d)) => Shape::Ratio {
                    num: operand(spec, n),
                    den: operand(spec, d),
                    den_text: d.to_string(),
                },
                // A ratio field under a constant (`wait_share * 100`) divides as its
                // definition does.
                None => match unscaled(&expr) {
                    Expr::Var(v) => {
                        match field_definition(m, v).as_ref().and_then(|(_, e)| division(e)) {
                            Some((n, d)) => Shape::Ratio {
                                num: operand(spec, n),
                                den: operand(spec, d),
                                den_text: d.to_string(),
                            },
                            None => operand(spec, &expr).map_or(Shape::Other, Shape::One),
                        }
                    }
                    _ => operand(spec, &expr).map_or(Shape::Other, Shape::One),
                },
            },
        };
        let operands: Vec<Operand> = spec
            .map(|s| expr.vars().iter().filter_map(|v| field_operand(s, v)).collect())
            .unwrap_or_default();
        let statistic = operands.iter().any(|o| o.is_statistic());
        let across = |a: Across| {
            spec.is_some_and(|s| expr.vars().iter().any(|v| s.across(v) == Some(a)))
                || spec.is_some_and(|s| m.value.vars().iter().any(|v| s.across(v) == Some(a)))
        };
        let rule = spec.map(|s| s.scope);
        let over = match &m.ranks {
            Some(RankSel::One(r)) => Over::Rank(r.clone()),
            Some(RankSel::Every(red)) => Over::EachRank(red.as_str().to_string()),
            None if rule == Some(ScopeRule::WholeTrace) => Over::Whole,
            None if devices <= 1 => Over::Device,
            None => match rule {
                Some(ScopeRule::Ranks) => {
                    if across(Across::Spread) && !across(Across::Sum) {
                        Over::AcrossRanks
                    } else if across(Across::Sum) {
                        Over::Summed
                    } else if statistic {
                        Over::Pooled
                    } else {
                        Over::Whole
                    }
                }
                Some(ScopeRule::Summed) if statistic => Over::Pooled,
                Some(ScopeRule::Summed) => Over::Summed,
                // A per-device analysis over several devices without a rank selection: each
                // device's row (validation asks for `over_ranks`); a comparison: each device.
                _ => Over::EachRank(String::new()),
            },
        };
        let window_kind =
            |o: &Option<Operand>| o.is_some_and(|o| o.quantity() == FieldKind::Window);
        let window = if !windowed {
            WindowRole::WholeTrace
        } else if rule == Some(ScopeRule::Ranks) {
            WindowRole::Instances
        } else if matches!(&shape, Shape::Ratio { den, .. } if window_kind(den)) {
            WindowRole::Denominator
        } else if operands.iter().any(|o| o.quantity() == FieldKind::Window)
            || matches!(&shape, Shape::One(o) if o.quantity() == FieldKind::Window)
        {
            // A window field, or a sum the analysis declares equal to it (the four exclusive
            // intervals add up to the window, or to the kept kernels' span).
            WindowRole::Span
        } else {
            WindowRole::Selects
        };
        Reading {
            expr,
            definition: definition.map(|(t, _)| t),
            shape,
            over,
            devices,
            window,
            semantics,
        }
    }

    /// The numerator's operand: the value's own operand, or its division's numerator.
    pub fn numerator(&self) -> Option<Operand> {
        match &self.shape {
            Shape::One(o) => Some(*o),
            Shape::Ratio { num, .. } => *num,
            Shape::Other => None,
        }
    }

    /// The denominator's operand, if the value is a division of fields.
    pub fn denominator(&self) -> Option<Operand> {
        match &self.shape {
            Shape::Ratio { den, .. } => *den,
            _ => None,
        }
    }

    /// Whether it is a bandwidth: bytes over a time (`bytes / memcpy_busy_ns`, or the
    /// `bandwidth` field through its declared formula), neither bytes nor a share of time.
    pub fn is_bandwidth(&self) -> bool {
        matches!(
            &self.shape,
            Shape::Ratio { num: Some(n), den: Some(d), .. }
                if n.quantity() == FieldKind::Bytes
                    && (d.quantity().is_wall() || d.quantity().is_kernel_time())
        )
    }

    /// What the value measures, as R3 names it: `bandwidth` for bytes over a time, else the
    /// numerator's kind (None when the formula mixes kinds).
    pub fn measured_key(&self) -> Option<&'static str> {
        if self.is_bandwidth() {
            return Some("bandwidth");
        }
        self.numerator().map(|n| n.quantity().key())
    }

    /// Whether it is a ratio of two statistics (`max_ns / median_ns`).
    pub fn is_ratio_of_statistics(&self) -> bool {
        matches!(
            &self.shape,
            Shape::Ratio { num: Some(n), den: Some(d), .. } if n.is_statistic() && d.is_statistic()
        )
    }

    /// The UI string key of its scope's devices in the verdict table and on page 1 (one
    /// device and trace-set ranks are worded by the caller).
    pub fn devices_label(&self) -> &'static str {
        match self.over {
            Over::Summed => "scope.devices_sum",
            Over::Pooled => "scope.devices_pooled",
            Over::AcrossRanks => "scope.devices_across",
            Over::EachRank(_) => "scope.devices_each",
            Over::Device | Over::Rank(_) | Over::Whole => "scope.devices",
        }
    }
}

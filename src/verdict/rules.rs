//! R5: judging parts and claims by explicit rules.
//!
//! A measured part is judged only when gates R1-R4 let it; an interpretation follows the
//! parts it reads; an unmeasured causal part is unverifiable and names what would decide it;
//! actions are never judged; arithmetic is checked but never counts as evidence. The claim
//! takes its principal part's verdict, capped at partially supported when only lower layers
//! are supported.

use std::collections::BTreeMap;

use serde_json::Value;

use super::gates::{r1, r2, r3, r4};
use super::reading::{Reading, ratio_definition};
use super::*;
use crate::claims::{Condition, Part, Quantity};
use crate::formula::Expr;
use crate::units::{decimal, thousands};

mod compare;

pub use compare::compare_interval;
use compare::compare_part;

/// Shows a base-unit value in a unit: `17.8%`, `1,094.74 ms`, `140`, `1.216x`.
pub fn show(v: Rational, unit: Unit) -> String {
    show_at(v, unit, places_for(v, unit, unit.decimals()))
}

/// The decimals that keep a time that is not zero from showing as zero: its unit's own, or as
/// many more as give it two significant digits (a 2,976 ns median is `0.0030 ms`, not
/// `0.00 ms`), down to the nanosecond at most.
fn places_for(v: Rational, unit: Unit, places: u32) -> u32 {
    let per_unit: i128 = match unit {
        Unit::Ms => 1_000_000,
        Unit::S => 1_000_000_000,
        _ => return places,
    };
    let max = per_unit.ilog10();
    let ns = (v.num / v.den).unsigned_abs();
    if v.num == 0 || places >= max {
        return places;
    }
    // Digits after the point before the first significant one, plus one more.
    let tiny = |p: u32| ns.checked_mul(10u128.pow(p)).is_some_and(|x| x < per_unit.unsigned_abs());
    let mut p = places;
    while p < max && tiny(p) {
        p += 1;
    }
    if p > places { (p + 1).min(max) } else { places }
}

/// Shows a base-unit value in a unit with a given number of decimals.
pub(super) fn show_at(v: Rational, unit: Unit, places: u32) -> String {
    // A value whose scaling does not fit shows as `n/a`, never as a wrapped number.
    let d = |num: Option<i128>, den: Option<i128>| {
        num.zip(den).and_then(|(n, d)| decimal(n, d, places)).unwrap_or_else(|| "n/a".into())
    };
    let (num, den) = (Some(v.num), Some(v.den));
    match unit {
        Unit::Percent => format!("{}%", d(v.num.checked_mul(100), den)),
        Unit::PercentagePoints => format!("{} pp", d(v.num.checked_mul(100), den)),
        Unit::Ms => format!("{} ms", d(num, v.den.checked_mul(1_000_000))),
        Unit::Ns => format!("{} ns", d(num, den)),
        Unit::S => format!("{} s", d(num, v.den.checked_mul(1_000_000_000))),
        Unit::Count => d(num, den),
        Unit::Times => format!("{}×", d(num, den)),
        Unit::Ratio => d(num, den),
        Unit::Bytes => format!("{} B", d(num, den)),
        Unit::GigabytesPerSecond => format!("{} GB/s", d(num, den)),
    }
}

/// Shows a field value for substitution into a formula (ns as ms, counts as integers).
fn show_field(field: &str, v: Rational) -> String {
    if field.ends_with("_ns") {
        show_at(v, Unit::Ms, places_for(v, Unit::Ms, 2)).trim_end_matches(" ms").to_string()
    } else if field == "wait_share" {
        show(v, Unit::Percent)
    } else if v.den == 1 {
        thousands(v.num)
    } else {
        show(v, Unit::Ratio)
    }
}

/// The values of a formula's fields that the evidence has (null and unknown ones left out).
fn vars_of(expr: &Expr, ev: &Evidence) -> BTreeMap<String, Rational> {
    expr.vars().into_iter().filter_map(|f| field_value(ev, &f).map(|v| (f, v))).collect()
}

fn field_value(ev: &Evidence, field: &str) -> Option<Rational> {
    // A null field is a quantity that does not exist here: never rebuilt, never a 0. An
    // undeclared or missing field stays out of the variables, and evaluating the formula
    // then fails with its name.
    ev.field(field).ok().flatten()
}

/// Whether `v` satisfies the condition, exactly; None when the condition's own bounds do not
/// fit exact arithmetic (validation refuses such an `approx`, so this is a guard, not a path).
fn check_condition(c: &Condition, v: Rational) -> Option<(bool, Finding)> {
    use std::cmp::Ordering::*;
    let ge = |q: &Quantity| v.cmp_to(q.value) != Less;
    let le = |q: &Quantity| v.cmp_to(q.value) != Greater;
    Some(match c {
        Condition::Between(a, b) => (
            ge(a) && le(b),
            Finding::new("cond.between", &[("lo", a.text.clone()), ("hi", b.text.clone())]),
        ),
        Condition::AtLeast(a) => (ge(a), Finding::new("cond.at_least", &[("x", a.text.clone())])),
        Condition::AtMost(a) => (le(a), Finding::new("cond.at_most", &[("x", a.text.clone())])),
        Condition::Above(a) => {
            (v.cmp_to(a.value) == Greater, Finding::new("cond.above", &[("x", a.text.clone())]))
        }
        Condition::Below(a) => {
            (v.cmp_to(a.value) == Less, Finding::new("cond.below", &[("x", a.text.clone())]))
        }
        Condition::Approx(a, t) => {
            // |v - a| <= t as a - t <= v <= a + t: the bounds are the author's numbers, and the
            // comparisons are exact whatever the measured value's denominator.
            let (lo, hi) = crate::claims::approx_bounds(a, t)?;
            (
                v.cmp_to(lo) != Less && v.cmp_to(hi) != Greater,
                Finding::new("cond.approx", &[("x", a.text.clone()), ("tol", t.text.clone())]),
            )
        }
        Condition::Exists => (v.num > 0, Finding::new("cond.exists", &[])),
    })
}

/// Shows a value next to a condition: with more decimals when the usual rounding would make
/// it look equal to a bound it differs from ("17.8% is below 17.8%" never appears).
fn show_beside(v: Rational, unit: Unit, c: &Condition) -> String {
    let bounds: Vec<&Quantity> = match c {
        Condition::Between(a, b) => vec![a, b],
        Condition::AtLeast(a)
        | Condition::AtMost(a)
        | Condition::Above(a)
        | Condition::Below(a) => vec![a],
        Condition::Approx(a, _) => vec![a],
        Condition::Exists => vec![],
    };
    let usual = show(v, unit);
    let clash = bounds.iter().any(|q| q.value != v && show(q.value, unit) == usual);
    if clash { show_at(v, unit, unit.decimals() + 3) } else { usual }
}

fn says_check(says: &Quantity, v: Rational) -> SaysCheck {
    let measured = show_at(v, says.unit, says.decimals);
    let shown: String =
        measured.chars().filter(|c| c.is_ascii_digit() || *c == '.' || *c == '-').collect();
    let stated_num = says.value.checked_div(says.unit.to_base());
    let matches = Rational::parse_decimal(&shown).zip(stated_num).is_some_and(|(a, b)| a == b);
    SaysCheck { stated: says.text.clone(), measured, matches }
}

fn blank(p: &Part, outcome: PartOutcome, reason: Finding) -> PartResult {
    PartResult {
        id: p.id.clone(),
        kind: p.kind,
        evidence: None,
        gates: Vec::new(),
        formula: None,
        condition: None,
        says: None,
        outcome,
        reason,
        needs: p.needs.clone(),
        value: None,
        samples: Vec::new(),
        ratio: None,
        device: None,
    }
}

/// What a measured part speaks of: the claim's `about` describes its principal assertion; a
/// supporting part keeps the claim's window and devices but states its own metric (or none).
fn about_of(claim: &Claim, p: &Part) -> crate::claims::About {
    match &p.about {
        Some(a) => a.clone(),
        None if p.id == claim.principal => claim.about.clone(),
        None => crate::claims::About {
            quantity: None,
            denominator: None,
            denominator_text: None,
            ..claim.about.clone()
        },
    }
}

/// A judged ratio: the measured value of part `of` over that of part `to`, exactly, after the
/// ratio's own gates (both operands over one scope, or a declared difference; one quantity
/// over another; one total each), judged by the part's condition like any measured value.
fn ratio_part(
    set: &ClaimSet,
    claim: &Claim,
    p: &Part,
    done: &[PartResult],
    evidence: &EvidenceMap,
) -> PartResult {
    let Some(ratio) = &p.ratio else { unreachable!("called for ratio parts") };
    let unit = p.unit.unwrap_or(Unit::Percent);
    let mut r = blank(p, PartOutcome::NotEvaluated, Finding::new("part.not_evaluated", &[]));
    let part = |id: &str| claim.parts.iter().find(|q| q.id == id);
    let result = |id: &str| done.iter().find(|d| d.id == id);
    let operand_unit =
        |id: &str| part(id).and_then(|q| q.measure.as_ref()).map_or(Unit::Ratio, |m| m.unit);
    let operand = |id: &str| {
        let v = result(id).and_then(|d| d.value);
        RatioOperand {
            part: id.to_string(),
            evidence: result(id).and_then(|d| d.evidence.clone()),
            display: v.map(|v| show(v, operand_unit(id))),
            exact: v.map(|v| [v.num.to_string(), v.den.to_string()]),
        }
    };
    r.ratio = Some(RatioResult {
        of: operand(&ratio.of),
        to: operand(&ratio.to),
        differs: ratio.differs.clone(),
    });
    let side = |id: &str| {
        let q = part(id)?;
        let m = q.measure.as_ref()?;
        let ev = evidence.get(&set.plan_id(m))?.as_ref().ok()?;
        let scope = set.scopes.get(&m.scope)?;
        Some(super::gates::RatioSide {
            id: &q.id,
            measure: m,
            ev,
            scope,
            reading: Reading::of(m, ev, scope.semantics),
        })
    };
    if let (Some(a), Some(b)) = (side(&ratio.of), side(&ratio.to)) {
        r.gates = super::gates::ratio_gates(
            &about_of(claim, p),
            ratio,
            [&a, &b],
            unit,
            p.condition.as_ref(),
            p.says.as_ref(),
        );
    }
    let symbolic = format!("{} / {}", ratio.of, ratio.to);
    let values = [&ratio.of, &ratio.to].map(|id| result(id).and_then(|d| d.value));
    let shown =
        |i: usize, id: &str| values[i].map_or_else(|| "n/a".into(), |v| show(v, operand_unit(id)));
    let substituted = format!("{} / {}", shown(0, &ratio.of), shown(1, &ratio.to));
    let mut formula = FormulaResult {
        symbolic,
        definition: None,
        substituted,
        display: None,
        exact: None,
        unit,
        error: None,
    };
    let [Some(num), Some(den)] = values else {
        let missing: Vec<String> = [&ratio.of, &ratio.to]
            .into_iter()
            .zip(values)
            .filter(|(_, v)| v.is_none())
            .map(|(id, _)| id.clone())
            .collect();
        r.formula = Some(formula);
        r.outcome = PartOutcome::Unverifiable;
        r.reason = Finding::new("part.ratio_unmeasured", &[("parts", missing.join(", "))]);
        return r;
    };
    if den.num == 0 {
        r.formula = Some(formula);
        r.outcome = PartOutcome::Unverifiable;
        r.reason = Finding::new(
            "part.ratio_zero_denominator",
            &[("to", ratio.to.clone()), ("value", show(den, operand_unit(&ratio.to)))],
        );
        return r;
    }
    let Some(value) = num.checked_div(den) else {
        formula.error = Some("the ratio does not fit exact arithmetic".into());
        r.formula = Some(formula);
        r.outcome = PartOutcome::Unverifiable;
        r.reason = Finding::new(
            "part.formula_failed",
            &[("error", "the ratio does not fit exact arithmetic".to_string())],
        );
        return r;
    };
    formula.display = Some(show(value, unit));
    formula.exact = Some([value.num.to_string(), value.den.to_string()]);
    r.formula = Some(formula);
    // The ratio's own gates decide whether it is comparable with the claim: its operands'
    // gates compare each with the claim's scope, which a declared difference sets aside.
    judge_value(r, p, unit, true, value)
}

fn measured(set: &ClaimSet, claim: &Claim, p: &Part, evidence: &EvidenceMap) -> PartResult {
    let Some(m) = &p.measure else { unreachable!("called for measured parts") };
    let key = set.plan_id(m);
    let mut r = blank(p, PartOutcome::NotEvaluated, Finding::new("part.not_evaluated", &[]));
    r.evidence = Some(key.clone());
    let ev = match evidence.get(&key) {
        Some(Ok(ev)) => ev,
        Some(Err(e)) => {
            r.reason = Finding::new("part.query_failed", &[("error", e.to_string())]);
            return r;
        }
        None => return r,
    };
    let Some(scope) = set.scopes.get(&m.scope) else { return r };
    let about = about_of(claim, p);
    if let Some(c) = &m.compare {
        let scopes = [set.scopes.get(&c.sides[0].scope), set.scopes.get(&c.sides[1].scope)];
        r.gates = super::gates::compare_gates(&about, m, c, scopes, p, ev);
        return compare_part(r, p, m, ev);
    }
    // One reading of the formula words the gates and gives the expression evaluated.
    let reading = Reading::of(m, ev, scope.semantics);
    r.gates = vec![
        r1(&about, &reading, ev),
        r2(&about, m, ev),
        r3(&about, m, &reading),
        r4(&about, m, &reading, p.condition.as_ref(), p.says.as_ref(), ev),
    ];
    if let Some(sel) = &m.ranks {
        return per_rank(set, r, p, m, ev, sel);
    }
    if !ev.samples.is_empty() {
        return samples(r, p, m, ev);
    }
    single(set, r, p, m, &reading, ev)
}

/// The name a report gives a rank's row: its label over a trace set, else its number.
fn row_label(row: &serde_json::Map<String, Value>) -> String {
    match (row.get("label").and_then(Value::as_str), row.get("device").and_then(Value::as_i64)) {
        (Some(l), Some(d)) => format!("{d} {l}"),
        (None, Some(d)) => d.to_string(),
        (Some(l), None) => l.to_string(),
        (None, None) => "?".into(),
    }
}

/// A measure over per-rank rows: one rank's row judged as one value (`rank:`), or the
/// formula on every rank's row, decided by the declared reduction (`over_ranks:`) with each
/// rank's value listed. A rank the evidence does not have, or a row value that does not
/// exist, leaves the part unverifiable with the reason.
fn per_rank(
    set: &ClaimSet,
    mut r: PartResult,
    p: &Part,
    m: &crate::claims::Measure,
    ev: &Evidence,
    sel: &crate::claims::RankSel,
) -> PartResult {
    use crate::claims::{RankSel, Reduce};
    // The claim names a row's field by its text: the rows as the JSON contract has them.
    let rows = ev.rows.as_ref().map(crate::analysis::values::Rows::to_maps).unwrap_or_default();
    let view = |row: &serde_json::Map<String, Value>| Evidence {
        values: Some(crate::analysis::values::Values::Map(row.clone())),
        rows: None,
        samples: Vec::new(),
        ..ev.clone()
    };
    let labels = || rows.iter().map(row_label).collect::<Vec<_>>().join(", ");
    let reduce = match sel {
        RankSel::One(want) => {
            let found = rows.iter().find(|row| {
                row.get("device").and_then(Value::as_i64).is_some_and(|d| d.to_string() == *want)
                    || row.get("label").and_then(Value::as_str) == Some(want.as_str())
            });
            let Some(row) = found else {
                r.outcome = PartOutcome::Unverifiable;
                r.reason = Finding::new(
                    "part.rank_absent",
                    &[("rank", want.clone()), ("ranks", labels())],
                );
                return r;
            };
            let reading = Reading::of(m, ev, crate::scope::Semantics::Clip);
            let mut out = single(set, r, p, m, &reading, &view(row));
            if let Some(f) = &mut out.formula {
                f.substituted = format!("rank {}: {}", row_label(row), f.substituted);
            }
            return out;
        }
        RankSel::Every(red) => *red,
    };
    let definition = ratio_definition(m);
    let expr = definition.as_ref().map_or(&m.value, |(_, e)| e);
    let mut values: Vec<(String, Rational)> = Vec::new();
    for row in &rows {
        let one = view(row);
        match expr.eval(&vars_of(expr, &one)) {
            Ok(v) => values.push((row_label(row), v)),
            Err(_) => {
                // The first field the row lacks: its reason is the evidence's note.
                let field = expr
                    .vars()
                    .into_iter()
                    .find(|f| one.value(f).is_none_or(|v| v.is_null()))
                    .unwrap_or_default();
                r.outcome = PartOutcome::Unverifiable;
                r.reason = ev.null_reasons(&field).first().map_or_else(
                    || {
                        Finding::new(
                            "part.rank_value_missing",
                            &[("rank", row_label(row)), ("field", field.clone())],
                        )
                    },
                    |n| n.finding.clone(),
                );
                return r;
            }
        }
    }
    if values.is_empty() {
        r.outcome = PartOutcome::Unverifiable;
        r.reason = Finding::new("part.rank_absent", &[("rank", "-".into()), ("ranks", "-".into())]);
        return r;
    }
    let shown = |v: Rational| show(v, m.unit);
    let listing = values.iter().map(|(l, v)| format!("{l}: {}", shown(*v))).collect::<Vec<_>>();
    let n = values.len();
    let pick = |max: bool| {
        let mut best = values[0].clone();
        for (l, v) in &values[1..] {
            let o = v.cmp_to(best.1);
            if (max && o == std::cmp::Ordering::Greater) || (!max && o == std::cmp::Ordering::Less)
            {
                best = (l.clone(), *v);
            }
        }
        best
    };
    r.samples = values.iter().map(|(_, v)| [v.num.to_string(), v.den.to_string()]).collect();
    match reduce {
        Reduce::Max | Reduce::Min => {
            let (label, v) = pick(reduce == Reduce::Max);
            r.formula = Some(FormulaResult {
                symbolic: m.value_text.clone(),
                definition: definition.map(|(text, _)| text.to_string()),
                substituted: format!(
                    "{} over {n} ranks = rank {label} ({})",
                    reduce.as_str(),
                    listing.join(", ")
                ),
                display: Some(shown(v)),
                exact: Some([v.num.to_string(), v.den.to_string()]),
                unit: m.unit,
                error: None,
            });
            judge_value(r, p, m.unit, divides(m), v)
        }
        Reduce::All | Reduce::Any => each_member(
            r,
            p,
            m,
            definition.map(|(text, _)| text.to_string()),
            &values,
            reduce == Reduce::All,
            Members::Ranks,
        ),
    }
}

/// What a quantifier runs over: the ranks of per-rank rows (`over_ranks:`) or the windows of
/// a set (`over:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Members {
    Ranks,
    Windows,
}

impl Members {
    /// The plural noun in a formula's substitution.
    fn noun(self) -> &'static str {
        match self {
            Members::Ranks => "ranks",
            Members::Windows => "windows",
        }
    }

    /// The i18n keys of: no condition to judge, the condition holds, it fails.
    fn keys(self) -> [&'static str; 3] {
        match self {
            Members::Ranks => {
                ["part.over_ranks_needs_condition", "part.ranks_hold", "part.ranks_fail"]
            }
            Members::Windows => {
                ["part.over_windows_needs_condition", "part.windows_hold", "part.windows_fail"]
            }
        }
    }
}

/// The part's condition checked on each member's value and decided by `all` (every member)
/// or `any` (one): every value listed, the members it fails on named.
fn each_member(
    mut r: PartResult,
    p: &Part,
    m: &crate::claims::Measure,
    definition: Option<String>,
    values: &[(String, Rational)],
    all: bool,
    members: Members,
) -> PartResult {
    let word = if all { "all" } else { "any" };
    let [needs, hold, fail] = members.keys();
    let Some(c) = &p.condition else {
        r.outcome = PartOutcome::Unverifiable;
        r.reason = Finding::new(needs, &[("reduce", word.into())]);
        return r;
    };
    let shown = |v: Rational| show(v, m.unit);
    let listing = values.iter().map(|(l, v)| format!("{l}: {}", shown(*v))).collect::<Vec<_>>();
    let n = values.len();
    let mut held = Vec::new();
    let mut failed = Vec::new();
    let mut finding = None;
    for (l, v) in values {
        let Some((ok, f)) = check_condition(c, *v) else {
            r.reason = Finding::new(
                "part.formula_failed",
                &[("error", "the condition's bounds overflow exact arithmetic".to_string())],
            );
            return r;
        };
        finding = Some(f);
        if ok { held.push(l.clone()) } else { failed.push(format!("{l}: {}", shown(*v))) }
    }
    let ok = if all { failed.is_empty() } else { !held.is_empty() };
    r.formula = Some(FormulaResult {
        symbolic: m.value_text.clone(),
        definition,
        substituted: format!("{word} of {n} {} ({})", members.noun(), listing.join(", ")),
        display: Some(format!("{} of {n} {}", held.len(), members.noun())),
        exact: None,
        unit: m.unit,
        error: None,
    });
    r.condition = finding.map(|f| ConditionResult { finding: f, satisfied: ok });
    if blocked(&mut r, p, listing.join(", ")) {
        return r;
    }
    let (held_n, total) = (held.len().to_string(), n.to_string());
    if ok {
        r.outcome = PartOutcome::Supported;
        r.reason = Finding::new(hold, &[("reduce", word.into()), ("held", held_n), ("n", total)]);
    } else {
        r.outcome = PartOutcome::NotSupported;
        r.reason = Finding::new(
            fail,
            &[
                ("reduce", word.into()),
                ("held", held_n),
                ("n", total),
                ("failed", failed.join(", ")),
            ],
        );
    }
    r
}

/// Whether a measured value cannot decide the part, with the reason set: a failed gate, or a
/// causal part (every analysis measures what one trace shows: an observation, which cannot
/// lift a causal claim; that needs op attribution or an A/B run).
fn blocked(r: &mut PartResult, p: &Part, value: String) -> bool {
    let failed: Vec<&str> =
        r.gates.iter().filter(|g| g.status == GateStatus::Fail).map(|g| g.gate).collect();
    if !failed.is_empty() {
        r.outcome = PartOutcome::Unverifiable;
        r.reason = Finding::new("part.gate_failed", &[("gates", failed.join(", "))]);
        return true;
    }
    if p.kind == Kind::Causal {
        r.outcome = PartOutcome::Unverifiable;
        r.reason = Finding::new("part.causal_measured", &[("value", value)]);
        return true;
    }
    false
}

/// One value: the formula over the evidence's values, substituted, and judged.
fn single(
    set: &ClaimSet,
    mut r: PartResult,
    p: &Part,
    m: &crate::claims::Measure,
    reading: &Reading,
    ev: &Evidence,
) -> PartResult {
    // A field that is a ratio of others (`wait_share`) is evaluated through its formula, so
    // the report shows its fraction and the value is exact: the expression the gates read.
    let definition = reading.definition;
    let expr = &reading.expr;
    let vars = vars_of(expr, ev);
    let mut nulls: Vec<String> = m.value.vars();
    nulls.extend(expr.vars());
    nulls.retain(|f| ev.value(f).is_some_and(|v| v.is_null()));
    nulls.dedup();
    let mut substituted = expr.substitute(&|f| match vars.get(f) {
        Some(v) => show_field(f, *v),
        None if nulls.iter().any(|n| n == f) => "n/a".into(),
        None => format!("{f}?"),
    });
    // A ratio of times names the unit its terms are shown in: `1,094.74 / 6,155.75 ms`.
    let all_times = expr.vars().iter().all(|f| f.ends_with("_ns"));
    if all_times && !matches!(m.unit, Unit::Ms | Unit::Ns | Unit::S) && nulls.is_empty() {
        substituted += " ms";
    }
    // Times are stored in ns, the base unit of ms, ns and s: no conversion is needed.
    let value = expr.eval(&vars);
    r.formula = Some(FormulaResult {
        symbolic: m.value_text.clone(),
        definition: definition.map(str::to_string),
        substituted,
        display: value.as_ref().ok().map(|v| show(*v, m.unit)),
        exact: value.as_ref().ok().map(|v| [v.num.to_string(), v.den.to_string()]),
        unit: m.unit,
        error: value.as_ref().err().map(|e| e.to_string()),
    });
    if let Some(field) = nulls.first() {
        // The evidence says why the quantity does not exist; that is the reason, and what it
        // needs is what would decide the part.
        r.outcome = PartOutcome::Unverifiable;
        r.reason = ev.null_reasons(field).first().map_or_else(
            || Finding::new("part.field_null", &[("field", field.clone())]),
            |n| n.finding.clone(),
        );
        for need in nulls.iter().flat_map(|f| ev.null_reasons(f)).filter_map(|n| n.needs.as_ref()) {
            let text: crate::claims::Text = set
                .report
                .languages
                .iter()
                .map(|l| (l.clone(), need.finding.in_language(l).unwrap_or(need.text.clone())))
                .collect();
            if !r.needs.contains(&text) {
                r.needs.push(text);
            }
        }
        return r;
    }
    let value = match value {
        Ok(v) => v,
        Err(e) => {
            r.outcome = PartOutcome::Unverifiable;
            r.reason = Finding::new("part.formula_failed", &[("error", e.to_string())]);
            return r;
        }
    };
    judge_value(r, p, m.unit, divides(m), value)
}

/// A measure over a set of windows (NVTX steps or equal splits): the formula on each window,
/// and the part decided by the measure's quantifier (`over:`): the condition on every window
/// (`all`) or on one (`any`), or the median or lower median (the default) judged as one
/// value, with the distribution shown.
fn samples(mut r: PartResult, p: &Part, m: &crate::claims::Measure, ev: &Evidence) -> PartResult {
    use crate::claims::Over;
    let definition = ratio_definition(m);
    let expr = definition.as_ref().map_or(&m.value, |(_, e)| e);
    let over = m.over.unwrap_or(Over::LowerMedian);
    let mut windows: Vec<(String, Rational)> = Vec::new();
    for (i, s) in ev.samples.iter().enumerate() {
        let mut one = ev.clone();
        one.values = Some(s.values.clone());
        one.samples = Vec::new();
        let label = format!(
            "window {} ({}-{} s)",
            i + 1,
            crate::scope::format_seconds(s.window_ns[0]),
            crate::scope::format_seconds(s.window_ns[1])
        );
        match expr.eval(&vars_of(expr, &one)) {
            Ok(v) => windows.push((label, v)),
            // Every window counts under `all` and `any`: one without a value leaves the
            // quantifier undecided.
            Err(e) if matches!(over, Over::All | Over::Any) => {
                r.outcome = PartOutcome::Unverifiable;
                r.reason =
                    Finding::new("part.formula_failed", &[("error", format!("{label}: {e}"))]);
                return r;
            }
            Err(_) => {}
        }
    }
    if windows.is_empty() {
        r.outcome = PartOutcome::Unverifiable;
        r.reason = Finding::new("part.samples_empty", &[("n", ev.samples.len().to_string())]);
        return r;
    }
    r.samples = windows.iter().map(|(_, v)| [v.num.to_string(), v.den.to_string()]).collect();
    if matches!(over, Over::All | Over::Any) {
        let definition = definition.map(|(text, _)| text.to_string());
        return each_member(r, p, m, definition, &windows, over == Over::All, Members::Windows);
    }
    let mut values: Vec<Rational> = windows.iter().map(|(_, v)| *v).collect();
    values.sort_by(|a, b| a.cmp_to(*b));
    let n = values.len();
    let lower = values[(n - 1) / 2];
    // The median of an even count is the mean of the two middle values, exactly.
    let median = match over {
        Over::Median if n.is_multiple_of(2) => {
            match lower.checked_add(values[n / 2]).and_then(|x| x.checked_div(Rational::int(2))) {
                Some(v) => v,
                None => {
                    r.reason = Finding::new(
                        "part.formula_failed",
                        &[("error", "the median overflows exact arithmetic".to_string())],
                    );
                    return r;
                }
            }
        }
        _ => lower,
    };
    let (min, p90, max) = (values[0], values[(9 * n).div_ceil(10) - 1], values[n - 1]);
    let shown = |v: Rational| show(v, m.unit);
    r.formula = Some(FormulaResult {
        symbolic: m.value_text.clone(),
        definition: definition.map(|(text, _)| text.to_string()),
        substituted: format!(
            "{} of {n} windows (min {}, p90 {}, max {})",
            over.as_str().replace('-', " "),
            shown(min),
            shown(p90),
            shown(max)
        ),
        display: Some(shown(median)),
        exact: Some([median.num.to_string(), median.den.to_string()]),
        unit: m.unit,
        error: None,
    });
    judge_value(r, p, m.unit, divides(m), median)
}

/// Whether a measure's formula divides (as it is read): a value reported without a condition
/// is then said to be "with its denominator".
fn divides(m: &crate::claims::Measure) -> bool {
    let reading = Reading::from_parts(m, 1, false, crate::scope::Semantics::Clip);
    matches!(reading.shape, super::reading::Shape::Ratio { .. })
}

/// Judges a measured value, shown in `unit`: the stated number, the condition, the gates and
/// the kind.
fn judge_value(
    mut r: PartResult,
    p: &Part,
    unit: Unit,
    divides: bool,
    value: Rational,
) -> PartResult {
    r.value = Some(value);
    r.says = p.says.as_ref().map(|s| says_check(s, value));
    if let Some(c) = &p.condition {
        let Some((ok, finding)) = check_condition(c, value) else {
            r.reason = Finding::new(
                "part.formula_failed",
                &[("error", "the condition's bounds overflow exact arithmetic".to_string())],
            );
            return r;
        };
        r.condition = Some(ConditionResult { finding, satisfied: ok });
    }
    if blocked(&mut r, p, show(value, unit)) {
        return r;
    }
    let shown =
        p.condition.as_ref().map_or_else(|| show(value, unit), |c| show_beside(value, unit, c));
    match &r.condition {
        Some(c) if c.satisfied => {
            r.outcome = PartOutcome::Supported;
            r.reason = Finding::new("part.condition_holds", &[("value", shown)]);
        }
        Some(_) => {
            r.outcome = PartOutcome::NotSupported;
            r.reason = Finding::new("part.condition_fails", &[("value", shown)]);
        }
        None => {
            r.outcome = PartOutcome::Reported;
            // "with its denominator" only where the formula divides (as it was read).
            let key = if divides { "part.reported" } else { "part.reported_plain" };
            r.reason = Finding::new(key, &[("value", show(value, unit))]);
        }
    }
    r
}

fn arithmetic(p: &Part, done: &[PartResult], claim: &Claim) -> PartResult {
    let mut r = blank(p, PartOutcome::NotEvaluated, Finding::new("part.not_evaluated", &[]));
    let Some(f) = &p.formula else { return r };
    let unit = p.unit.unwrap_or(Unit::Ratio);
    let mut vars = BTreeMap::new();
    let mut unmeasured = Vec::new();
    for v in f.vars() {
        let part = claim.parts.iter().find(|q| q.id == v);
        let from_result = done.iter().find(|d| d.id == v).and_then(|d| d.value);
        // A measured part enters with its measured value only: its stated number is what the
        // measurement checks, never a stand-in when the measurement is missing.
        let from_says =
            part.filter(|q| !q.is_measured()).and_then(|q| q.says.as_ref()).map(|s| s.value);
        match from_result.or(from_says) {
            Some(x) => {
                vars.insert(v, x);
            }
            None if part.is_some_and(Part::is_measured) => unmeasured.push(v),
            None => {}
        }
    }
    if !unmeasured.is_empty() {
        r.reason = Finding::new("part.arithmetic_unmeasured", &[("parts", unmeasured.join(", "))]);
        return r;
    }
    let unit_of = |id: &str| {
        claim.parts.iter().find(|q| q.id == id).and_then(|q| q.unit).unwrap_or(Unit::Ratio)
    };
    let substituted = f.substitute(&|v| {
        vars.get(v).map_or(format!("{v}?"), |x| {
            // A share enters arithmetic as the fraction it is (0.178), not as 17.8.
            let u = unit_of(v);
            if u == Unit::Percent { show_at(*x, Unit::Ratio, 4) } else { show(*x, u) }
        })
    });
    let value = f.eval(&vars);
    r.formula = Some(FormulaResult {
        symbolic: p.formula_text.clone().unwrap_or_default(),
        definition: None,
        substituted,
        display: value.as_ref().ok().map(|v| show(*v, unit)),
        exact: value.as_ref().ok().map(|v| [v.num.to_string(), v.den.to_string()]),
        unit,
        error: value.as_ref().err().map(|e| e.to_string()),
    });
    match value {
        Err(e) => r.reason = Finding::new("part.formula_failed", &[("error", e.to_string())]),
        Ok(v) => {
            r.value = Some(v);
            r.says = p.says.as_ref().map(|s| says_check(s, v));
            let ok = r.says.as_ref().is_none_or(|s| s.matches);
            r.outcome = if ok { PartOutcome::Holds } else { PartOutcome::DoesNotHold };
            r.reason = Finding::new(
                if ok { "part.arithmetic_holds" } else { "part.arithmetic_fails" },
                &[("value", show(v, unit))],
            );
        }
    }
    r
}

/// Judges one claim.
pub fn judge(set: &ClaimSet, claim: &Claim, evidence: &EvidenceMap) -> ClaimResult {
    let mut results: Vec<PartResult> = Vec::new();
    for p in claim
        .parts
        .iter()
        .filter(|p| p.kind != Kind::Arithmetic && p.kind != Kind::Interpretation)
        .filter(|p| p.ratio.is_none())
    {
        results.push(match (p.kind, &p.measure) {
            (Kind::Action, _) => blank(p, PartOutcome::NotJudged, Finding::new("part.action", &[])),
            (_, Some(_)) => measured(set, claim, p, evidence),
            (_, None) => {
                blank(p, PartOutcome::Unverifiable, Finding::new("part.needs_evidence", &[]))
            }
        });
    }
    // A ratio reads the values of the measured parts it divides.
    for p in claim.parts.iter().filter(|p| p.ratio.is_some() && p.kind != Kind::Interpretation) {
        let r = ratio_part(set, claim, p, &results, evidence);
        results.push(r);
    }
    for p in claim.parts.iter().filter(|p| p.kind == Kind::Interpretation) {
        let from: Vec<PartOutcome> = p
            .from
            .iter()
            .filter_map(|f| results.iter().find(|r| &r.id == f).map(|r| r.outcome))
            .collect();
        let (outcome, key) = if from.contains(&PartOutcome::NotSupported) {
            (PartOutcome::NotSupported, "part.interpretation_refuted")
        } else if !from.is_empty() && from.iter().all(|o| matches!(o, PartOutcome::Supported)) {
            (PartOutcome::Supported, "part.interpretation_holds")
        } else {
            (PartOutcome::Unverifiable, "part.interpretation_open")
        };
        results.push(blank(p, outcome, Finding::new(key, &[("from", p.from.join(", "))])));
    }
    for p in claim.parts.iter().filter(|p| p.kind == Kind::Arithmetic) {
        let r = arithmetic(p, &results, claim);
        results.push(r);
    }
    // Back to file order.
    let mut parts: Vec<PartResult> = Vec::new();
    for p in &claim.parts {
        if let Some(i) = results.iter().position(|r| r.id == p.id) {
            parts.push(results.swap_remove(i));
        }
    }
    let (verdict, reason, open) = decide(claim, &parts);
    ClaimResult {
        id: claim.id.clone(),
        verdict,
        reason,
        principal: claim.principal.clone(),
        parts,
        open,
    }
}

/// The one composition rule (docs/claims.md, "How it is judged"): the claim's verdict with its
/// reason, and the parts that keep its open item on page 1 and in the brief's decision.
///
/// The verdict comes from the principal part, capped and lowered by the others. A part that
/// carries `needs` or `work` keeps the claim open whatever its verdict: the author named
/// evidence that would take the claim further, so a supported claim is "supported as far as it
/// goes" (`claim.supported_so_far`) and its open item stays, as an unverifiable one does.
pub(crate) fn decide(claim: &Claim, parts: &[PartResult]) -> (Verdict, Finding, Vec<String>) {
    let carrying: Vec<String> = claim
        .parts
        .iter()
        .filter(|p| !p.needs.is_empty() || !p.work.is_empty())
        .map(|p| p.id.clone())
        .collect();
    let (verdict, reason) = compose(claim, parts);
    let mut open: Vec<String> = match verdict {
        Verdict::PartiallySupported | Verdict::Unverifiable => parts
            .iter()
            .filter(|p| p.kind.layer() > 0)
            .filter(|p| {
                !matches!(
                    p.outcome,
                    PartOutcome::Supported | PartOutcome::Reported | PartOutcome::NotSupported
                )
            })
            .map(|p| p.id.clone())
            .collect(),
        _ => Vec::new(),
    };
    for id in carrying {
        if !open.contains(&id) {
            open.push(id);
        }
    }
    if matches!(verdict, Verdict::PartiallySupported | Verdict::Unverifiable) && open.is_empty() {
        open.push(claim.principal.clone());
    }
    let reason = match verdict {
        Verdict::Supported if !open.is_empty() => Finding::new(
            "claim.supported_so_far",
            &[("part", claim.principal.clone()), ("parts", open.join(", "))],
        ),
        _ => reason,
    };
    (verdict, reason, open)
}

fn compose(claim: &Claim, parts: &[PartResult]) -> (Verdict, Finding) {
    let Some(principal) = parts.iter().find(|p| p.id == claim.principal) else {
        return (Verdict::Unverifiable, Finding::new("claim.no_principal", &[]));
    };
    let judged = |p: &&PartResult| p.kind.layer() > 0 && p.id != principal.id;
    let refuted: Vec<&str> = parts
        .iter()
        .filter(judged)
        .filter(|p| p.outcome == PartOutcome::NotSupported)
        .map(|p| p.id.as_str())
        .collect();
    let p_id = principal.id.clone();
    match principal.outcome {
        PartOutcome::NotSupported => {
            (Verdict::NotSupported, Finding::new("claim.principal_refuted", &[("part", p_id)]))
        }
        _ if !refuted.is_empty() => (
            Verdict::NotSupported,
            Finding::new("claim.part_refuted", &[("parts", refuted.join(", "))]),
        ),
        PartOutcome::PartiallySupported => (
            Verdict::PartiallySupported,
            Finding::new("claim.principal_partial", &[("part", p_id)]),
        ),
        PartOutcome::Supported => {
            let open: Vec<&str> = parts
                .iter()
                .filter(judged)
                .filter(|p| !matches!(p.outcome, PartOutcome::Supported | PartOutcome::Reported))
                .map(|p| p.id.as_str())
                .collect();
            if open.is_empty() {
                (Verdict::Supported, Finding::new("claim.supported", &[("part", p_id)]))
            } else {
                (
                    Verdict::PartiallySupported,
                    Finding::new(
                        "claim.others_open",
                        &[("part", p_id), ("parts", open.join(", "))],
                    ),
                )
            }
        }
        _ => {
            let lower: Vec<&str> = parts
                .iter()
                .filter(|p| p.kind.layer() > 0 && p.kind.layer() < principal.kind.layer())
                .filter(|p| p.id != principal.id && p.outcome == PartOutcome::Supported)
                .map(|p| p.id.as_str())
                .collect();
            if lower.is_empty() {
                (Verdict::Unverifiable, Finding::new("claim.unverifiable", &[("part", p_id)]))
            } else {
                (
                    Verdict::PartiallySupported,
                    Finding::new("claim.capped", &[("part", p_id), ("parts", lower.join(", "))]),
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{Context, Params};
    use crate::scope::DeviceSel;
    use crate::trace::Kernels;

    fn q(text: &str) -> Quantity {
        Quantity::parse(text, Unit::Ratio).unwrap()
    }

    #[test]
    fn a_time_that_is_not_zero_never_shows_as_zero() {
        let ns = |n: i128| Rational::int(n);
        // Two significant digits once the unit's decimals would show 0.
        assert_eq!(show(ns(2_976), Unit::Ms), "0.0030 ms");
        assert_eq!(show(ns(300), Unit::Ms), "0.00030 ms");
        assert_eq!(show(ns(-2_976), Unit::Ms), "-0.0030 ms");
        assert_eq!(show(ns(7), Unit::Ms), "0.000007 ms");
        // A value the unit's decimals already show, and zero, as before.
        assert_eq!(show(ns(1_234_567), Unit::Ms), "1.23 ms");
        assert_eq!(show(ns(12_000), Unit::Ms), "0.01 ms");
        assert_eq!(show(ns(0), Unit::Ms), "0.00 ms");
        // A substituted field: `max_ns / median_ns` over µs kernels.
        assert_eq!(show_field("median_ns", ns(2_976)), "0.0030");
    }

    #[test]
    fn conditions_are_exact_where_cross_multiplying_overflows() {
        // Issue 12: day26's exposed share against bounds whose denominators are near 1e30.
        let share = Rational::new(1_094_738_291, 6_155_748_929).unwrap();
        let tiny = Quantity::parse("0.0000000000000000000000000002%", Unit::Percent).unwrap();
        let huge = Quantity::parse("99999999999999999999999999999%", Unit::Percent).unwrap();
        assert!(share.num.checked_mul(tiny.value.den).is_none());
        assert!(huge.value.num.checked_mul(share.den).is_none());
        let holds = |c: Condition| check_condition(&c, share).unwrap().0;
        assert!(holds(Condition::Above(tiny.clone())));
        assert!(holds(Condition::AtLeast(tiny.clone())));
        assert!(!holds(Condition::Below(tiny.clone())));
        assert!(!holds(Condition::AtMost(tiny.clone())));
        assert!(holds(Condition::AtMost(huge.clone())));
        assert!(holds(Condition::Between(tiny.clone(), huge.clone())));
        assert!(!holds(Condition::Between(huge.clone(), huge)));

        // |v - a| = 1 / (1e20 (1e20 + 1)), about 1e-40: within 1e-26, although v - a itself
        // needs a denominator of about 1e40.
        let v = Rational::new(1, 10_i128.pow(20) + 1).unwrap();
        let a = q("0.00000000000000000001");
        assert!(v.checked_sub(a.value).is_none());
        let approx = |t: &str| check_condition(&Condition::Approx(a.clone(), q(t)), v).unwrap().0;
        assert!(approx("0.00000000000000000000000001"));
        assert!(!approx("0"));
        assert!(approx("0.00000000000000000001"));
    }

    /// A claims file over one scope `s` (devices 1, or as given) with one claim `c` whose
    /// principal part `p` measures `value` of `analysis` above 0.
    fn set(analysis: &str, value: &str, unit: &str, devices: &str) -> ClaimSet {
        let trace = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/nsys-ai/mock.sqlite");
        let yaml = format!(
            r#"report: {{ id: t, languages: [en, zh-TW], title: {{ en: t, zh-TW: t }} }}
traces:
  A: {{ path: "{trace}" }}
scopes:
  s: {{ trace: A, devices: "{devices}" }}
claims:
  - id: c
    statement: {{ en: "ranks wait", zh-TW: "rank 在等" }}
    about: {{ devices: "{devices}" }}
    principal: p
    parts:
      - id: p
        kind: observation
        measure: {{ analysis: {analysis}, scope: s, value: "{value}", unit: "{unit}" }}
        condition: {{ above: "0{unit}" }}
"#
        );
        let raw = crate::claims::load::parse(&yaml).unwrap();
        crate::claims::validate::validate(raw, std::path::Path::new("claims.yaml")).unwrap()
    }

    fn ctx() -> Context {
        Context::from_kernels(Kernels::from_rows(&[
            (1, 56, 100, 1000, "ncclAG"),
            (1, 21, 0, 2000, "gemm"),
            (2, 56, 400, 1000, "ncclAG"),
        ]))
    }

    fn evidence(analysis: &str, devices: &[i64]) -> Evidence {
        let p = Params::new(DeviceSel::Set(devices.to_vec()));
        crate::analysis::run(analysis, &p, &ctx()).unwrap()
    }

    fn judge_with(set: &ClaimSet, ev: Evidence) -> ClaimResult {
        let m = set.claims[0].parts[0].measure.as_ref().unwrap();
        let map: EvidenceMap = [(set.plan_id(m), Ok(ev))].into();
        judge(set, &set.claims[0], &map)
    }

    /// Overlap evidence over a set of windows of `len_ns` each, one after another: exposed
    /// NCCL `n` of a total of 10 in window k for the k-th share.
    fn windows_of(shares: &[i64], len_ns: i64) -> Evidence {
        let mut ev = evidence("overlap", &[1]);
        ev.samples = shares
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let values = ev.values.as_ref().unwrap().edited(|v| {
                    v.insert("nccl_only_ns".into(), (*n).into());
                    v.insert("total_ns".into(), 10.into());
                });
                crate::analysis::Sample {
                    window_ns: [i as i64 * len_ns, (i as i64 + 1) * len_ns],
                    values,
                }
            })
            .collect();
        ev
    }

    /// A set of windows by hand: shares 1/10, 3/10, 2/10 and 0/10; the lower median of the
    /// four is 1/10, judged against `above 0%`; with every share 0 it fails.
    #[test]
    fn a_set_of_windows_is_judged_on_the_lower_median_of_its_samples() {
        let set = set("overlap", "nccl_only_ns / total_ns", "%", "1");
        let with = |shares: &[i64]| judge_with(&set, windows_of(shares, 10));
        let r = with(&[1, 3, 2, 0]);
        let p = &r.parts[0];
        assert_eq!(p.value, Rational::new(1, 10));
        assert_eq!(p.samples.len(), 4);
        assert_eq!(p.outcome, PartOutcome::Supported);
        let f = p.formula.as_ref().unwrap();
        assert_eq!(f.substituted, "lower median of 4 windows (min 0.0%, p90 30.0%, max 30.0%)");
        let r = with(&[0, 0, 0]);
        assert_eq!(r.parts[0].outcome, PartOutcome::NotSupported);
    }

    /// `over:` on the same windows by hand: the median of 1/10, 3/10, 2/10 and 0/10 is
    /// (1/10 + 2/10) / 2 = 3/20; `all` fails on the fourth window (0/10 is not above 0%), `any`
    /// holds on three of four; `all` over 1/10, 2/10 and 3/10 holds.
    #[test]
    fn over_decides_a_set_of_windows_by_its_quantifier() {
        use crate::claims::Over;
        let with = |over: Over, shares: &[i64]| {
            let mut set = set("overlap", "nccl_only_ns / total_ns", "%", "1");
            set.claims[0].parts[0].measure.as_mut().unwrap().over = Some(over);
            judge_with(&set, windows_of(shares, 1_000_000_000)).parts.remove(0)
        };
        let p = with(Over::Median, &[1, 3, 2, 0]);
        assert_eq!(p.value, Rational::new(3, 20));
        assert_eq!(p.outcome, PartOutcome::Supported);
        assert!(p.formula.unwrap().substituted.starts_with("median of 4 windows"));
        let p = with(Over::All, &[1, 3, 2, 0]);
        assert_eq!(p.outcome, PartOutcome::NotSupported);
        assert_eq!(p.reason.key, "part.windows_fail");
        assert_eq!(p.reason.args.get("held").map(String::as_str), Some("3"));
        assert_eq!(p.reason.args.get("failed").map(String::as_str), Some("window 4 (3-4 s): 0.0%"));
        let p = with(Over::Any, &[1, 3, 2, 0]);
        assert_eq!(
            (p.outcome, p.reason.key.as_str()),
            (PartOutcome::Supported, "part.windows_hold")
        );
        assert_eq!(p.reason.args.get("held").map(String::as_str), Some("3"));
        let p = with(Over::All, &[1, 2, 3]);
        assert_eq!(p.outcome, PartOutcome::Supported);
        assert_eq!(p.formula.unwrap().display.as_deref(), Some("3 of 3 windows"));
        let p = with(Over::Any, &[0, 0]);
        assert_eq!(p.outcome, PartOutcome::NotSupported);
    }

    /// Arithmetic over a measured part whose query failed is not evaluated: the part's stated
    /// number never stands in for the missing measurement.
    #[test]
    fn arithmetic_over_a_missing_measurement_is_not_evaluated() {
        let trace = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/nsys-ai/mock.sqlite");
        let yaml = format!(
            r#"report: {{ id: t, languages: [en], title: {{ en: t }} }}
traces:
  A: {{ path: "{trace}" }}
scopes:
  s: {{ trace: A, devices: "1" }}
claims:
  - id: c
    statement: {{ en: "exposed" }}
    principal: share
    parts:
      - id: share
        kind: observation
        measure: {{ analysis: overlap, scope: s, value: "nccl_only_ns / total_ns", unit: "%" }}
        says: "17.8%"
      - id: bound
        kind: arithmetic
        formula: "1 / (1 - share)"
        unit: x
        says: "1.216x"
"#
        );
        let raw = crate::claims::load::parse(&yaml).unwrap();
        let set = crate::claims::validate::validate(raw, std::path::Path::new("c.yaml")).unwrap();
        let m = set.claims[0].parts[0].measure.as_ref().unwrap();
        let map: EvidenceMap =
            [(set.plan_id(m), Err(crate::diag::Diagnostic::plain("cannot read trace")))].into();
        let r = judge(&set, &set.claims[0], &map);
        let bound = r.parts.iter().find(|p| p.id == "bound").unwrap();
        assert_eq!(bound.outcome, PartOutcome::NotEvaluated);
        assert_eq!(bound.reason.key, "part.arithmetic_unmeasured");
        assert!(bound.value.is_none());
    }

    #[test]
    fn a_cross_rank_value_over_one_rank_is_unverifiable_never_zero() {
        for value in ["wait_share", "wait_ns / nccl_ns", "start_skew_max_ns"] {
            let unit = if value.ends_with("_ns") { "ms" } else { "%" };
            let set = set("nccl-skew", value, unit, "1");
            let r = judge_with(&set, evidence("nccl-skew", &[1]));
            let p = &r.parts[0];
            assert_eq!(p.outcome, PartOutcome::Unverifiable, "{value}");
            assert_eq!(p.reason.key, "note.one_rank", "{value}");
            assert_eq!(p.value, None, "{value}: no value, in particular not 0");
            let f = p.formula.as_ref().unwrap();
            assert_eq!((f.display.as_deref(), f.exact.as_ref()), (None, None), "{value}");
            assert!(f.substituted.contains("n/a"), "{value}: {}", f.substituted);
            assert!(p.condition.is_none(), "{value}: no condition is checked against nothing");
            let r2 = p.gates.iter().find(|g| g.gate == "R2").unwrap();
            assert_eq!((r2.status, r2.finding.key.as_str()), (GateStatus::Fail, "note.one_rank"));
            let need: crate::claims::Text = [
                (
                    "en".to_string(),
                    "at least two ranks in one scope (one file per rank: every rank's file, as a trace set)"
                        .to_string(),
                ),
                (
                    "zh-TW".to_string(),
                    "同一個 scope 內至少兩個 rank（每個 rank 一個檔案時：所有 rank 的檔案，當成一個 trace set）"
                        .to_string(),
                ),
            ]
            .into();
            assert_eq!(p.needs, vec![need], "{value}");
            assert_eq!(r.verdict, Verdict::Unverifiable, "{value}");
        }
        // Two ranks: judged on the value, 300 of 1,500 ns waited (by hand: 900 + 600, min 600).
        let set = set("nccl-skew", "wait_share", "%", "1-2");
        let r = judge_with(&set, evidence("nccl-skew", &[1, 2]));
        assert_eq!(r.parts[0].value, Rational::new(300, 1500));
        assert_eq!(r.parts[0].outcome, PartOutcome::Supported);
    }

    #[test]
    fn any_null_field_makes_its_part_unverifiable_with_the_evidences_reason() {
        // The mechanism is not tied to one analysis or field: an overlap value nulled with a
        // note is unverifiable for that note's reason and needs what it needs.
        let set = set("overlap", "nccl_only_ns / total_ns", "%", "1");
        let mut ev = evidence("overlap", &[1]);
        ev.values =
            ev.values.map(|v| v.edited(|v| drop(v.insert("nccl_only_ns".into(), Value::Null))));
        ev.leave_null(
            &["nccl_only_ns"],
            "note.one_rank",
            &[("devices", "1".into())],
            ("need.two_ranks", &[]),
        );
        let p = &judge_with(&set, ev).parts[0];
        assert_eq!(
            (p.outcome, p.reason.key.as_str()),
            (PartOutcome::Unverifiable, "note.one_rank")
        );
        assert_eq!(p.needs.len(), 1);
        // A null that no note explains still is no value.
        let mut ev = evidence("overlap", &[1]);
        ev.values = ev.values.map(|v| v.edited(|v| drop(v.insert("total_ns".into(), Value::Null))));
        let p = &judge_with(&set, ev).parts[0];
        assert_eq!(
            (p.outcome, p.reason.key.as_str()),
            (PartOutcome::Unverifiable, "part.field_null")
        );
        assert_eq!(p.reason.args["field"], "total_ns");
        assert!(p.needs.is_empty());
    }

    #[test]
    fn a_null_wait_share_is_not_rebuilt_from_wait_and_nccl_time() {
        let set = set("nccl-skew", "wait_share", "%", "1-2");
        let mut ev = evidence("nccl-skew", &[1, 2]);
        let v = ev
            .values
            .as_ref()
            .unwrap()
            .edited(|v| drop(v.insert("wait_share".into(), Value::Null)));
        let m = v.to_map();
        assert!(m["wait_ns"].is_i64() && m["nccl_ns"].is_i64());
        ev.values = Some(v);
        let p = &judge_with(&set, ev).parts[0];
        assert_eq!((p.outcome, p.value), (PartOutcome::Unverifiable, None));
        assert_eq!(p.reason.key, "part.field_null");
    }
}

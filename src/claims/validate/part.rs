//! One part of a claim: what it binds (a measure, a ratio of two other parts, a formula over
//! them), its unit, its condition, its experiment and what its kind must state. A measure's
//! own keys are checked where every measure's are.

use std::collections::BTreeMap;

use serde_saphyr::Spanned;

use super::{
    Checker, about, at, did_you_mean, formula_hint, measurement, shown_formula, suggestion,
};
use crate::claims::raw::*;
use crate::claims::*;
use crate::formula::Expr;

/// A part's `ratio`: two other measured parts of the claim, each named once, and the reason
/// their scopes differ in every language; with its unit (`%` unless it says `ratio` or `x`).
fn ratio(
    c: &mut Checker,
    rp: &RawPart,
    r: &Spanned<RawRatio>,
    what: &str,
    siblings: &[RawPart],
) -> (Ratio, Unit) {
    let kind = rp.kind.value;
    let pid = &rp.id.value;
    if matches!(kind, Kind::Action | Kind::Arithmetic) {
        c.err(
            at(r),
            format!("{what}: a{} part cannot be a judged ratio", if kind == Kind::Action { "n action" } else { "n arithmetic" }),
            Some("make it an observation (a ratio of two measures), or compute `formula: \"a / b\"` as arithmetic, which is never evidence".into()),
        );
    }
    if let Some(m) = &rp.measure {
        c.err(
            at(r),
            format!("{what}: the part has both `measure` and `ratio`"),
            Some(format!(
                "a part is one measure or the ratio of two: move the measure to a part of its own (line {}) and name it in `ratio`",
                at(m).0
            )),
        );
    }
    if rp.formula.is_some() {
        c.err(
            at(r),
            format!("{what}: the part has both `formula` and `ratio`"),
            Some("a judged ratio takes no formula: its value is `of` over `to`".into()),
        );
    }
    let names: Vec<&str> = siblings.iter().map(|p| p.id.value.as_str()).collect();
    for (key, side) in [("of", &r.value.of), ("to", &r.value.to)] {
        let name = side.value.as_str();
        if name == pid {
            c.err(
                at(side),
                format!("{what}: `ratio.{key}` names the part itself"),
                Some("a ratio divides two other parts of the claim, each with a `measure`".into()),
            );
            continue;
        }
        let Some(target) = siblings.iter().find(|p| p.id.value == name) else {
            c.err(
                at(side),
                format!("{what}: `ratio.{key}` names `{name}`, which is not a part of this claim"),
                Some(suggestion(name, names.iter().copied())),
            );
            continue;
        };
        let why = match (&target.measure, &target.ratio) {
            (_, Some(_)) => Some("is itself a ratio"),
            (None, None) => Some(match target.kind.value {
                Kind::Arithmetic => "is arithmetic",
                Kind::Action => "is an action",
                _ => "has no `measure`",
            }),
            (Some(m), None) if m.value.analysis.as_ref().is_some_and(|a| a.value == "compare") => {
                Some("binds a comparison of two sides")
            }
            (Some(_), None) if target.kind.value == Kind::Interpretation => {
                Some("is an interpretation, judged from the parts it reads")
            }
            _ => None,
        };
        if let Some(why) = why {
            c.err(
                at(side),
                format!("{what}: `ratio.{key}` names `{name}`, which {why}: not a measured part"),
                Some("name a part that binds a `measure` of one scope (an observation or causal part)".into()),
            );
        }
    }
    if r.value.of.value == r.value.to.value && r.value.of.value != *pid {
        c.err(
            at(&r.value.to),
            format!("{what}: `ratio` divides `{}` by itself", r.value.of.value),
            Some("name two different measured parts in `of` and `to`".into()),
        );
    }
    let unit = match &rp.unit {
        None => Unit::Percent,
        Some(u) => match Unit::parse(&u.value) {
            Some(x @ (Unit::Percent | Unit::Ratio | Unit::Times)) => x,
            Some(x) => {
                c.err(
                    at(u),
                    format!(
                        "{what}: a ratio is shown in `%`, `ratio` or `x`, not `{}`",
                        x.symbol()
                    ),
                    Some("drop `unit` (a share in %), or write `unit: ratio` or `unit: x`".into()),
                );
                Unit::Percent
            }
            // Reported with the other units below.
            None => Unit::Percent,
        },
    };
    let differs = r.value.differs.as_ref().map(|t| c.text(t, &format!("{what}: `ratio.differs`")));
    (Ratio { of: r.value.of.value.clone(), to: r.value.to.value.clone(), differs }, unit)
}

/// One part of claim `claim`, among its `siblings`: what it binds (a measure over the declared
/// `scopes`, a ratio of two other parts, a formula over them), its unit, its condition and
/// what its kind must state.
pub(super) fn part(
    c: &mut Checker,
    rp: &RawPart,
    claim: &str,
    siblings: &[RawPart],
    scopes: &BTreeMap<String, Scope>,
    raw_scopes: &BTreeMap<String, RawScope>,
) -> Part {
    let kind = rp.kind.value;
    let pid = &rp.id.value;
    let what = format!("claim `{claim}` part `{pid}`");
    let part_names: Vec<&str> = siblings.iter().map(|p| p.id.value.as_str()).collect();
    let part_names = part_names.as_slice();
    if let Some(u) = &rp.unreviewed {
        unreviewed(c, u, at(&rp.id), &what);
    }
    let measure = rp.measure.as_ref().and_then(|m| measure(c, rp, m, &what, scopes, raw_scopes));
    let mut unit = measure.as_ref().map(|m: &Measure| m.unit);
    let ratio = rp.ratio.as_ref().map(|r| {
        let (r, u) = ratio(c, rp, r, &what, siblings);
        unit = Some(u);
        r
    });
    let formula = formula(c, rp, &what, part_names);
    if let Some(u) = &rp.unit {
        match Unit::parse(&u.value) {
            // A ratio's unit is checked with the ratio.
            Some(_) if ratio.is_some() => {}
            Some(x) => unit = Some(x),
            None => c.err(
                at(u),
                format!("{what}: unknown unit `{}`", u.value),
                Some("use %, pp, ms, ns, s, count, x, ratio, bytes or GB/s".to_string()),
            ),
        }
    }
    let says = rp.says.as_ref().and_then(|s| {
        let default = unit.unwrap_or(Unit::Count);
        let q = c.quantity(at(s), &s.value, default, &format!("{what}: `says`"));
        if unit.is_none() {
            unit = q.as_ref().map(|q| q.unit);
        }
        q
    });
    if kind == Kind::Arithmetic && unit.is_none() {
        unit = Some(Unit::Ratio);
    }
    let condition = rp.condition.as_ref().and_then(|cond| {
        if rp.measure.is_none() && rp.ratio.is_none() {
            c.err(
                at(cond),
                format!("{what}: a condition needs a `measure` to apply to"),
                Some("add a `measure` (or a `ratio` of two measured parts) to the part, or drop the condition".into()),
            );
        }
        condition(c, cond, unit.unwrap_or(Unit::Count), &what)
    });
    check_from(c, rp, &what, part_names);
    check_stated(c, rp, &what);
    Part {
        id: pid.clone(),
        kind,
        text: c.opt_text(&rp.text, &format!("{what} text")),
        condition,
        says,
        says_by: rp.says_by.unwrap_or_default(),
        formula_text: rp.formula.as_ref().map(|f| f.value.clone()),
        formula,
        unit,
        from: rp.from.iter().map(|f| f.value.clone()).collect(),
        mapping: c.opt_text(&rp.mapping, &format!("{what} mapping")),
        needs: rp.needs.iter().map(|n| c.text(n, &format!("{what} needs"))).collect(),
        work: work(rp),
        effort: rp.effort,
        unblocks: c.opt_text(&rp.unblocks, &format!("{what} unblocks")),
        caveats: c.opt_text(&rp.caveats, &format!("{what} caveats")),
        note: c.opt_text(&rp.note, &format!("{what} note")),
        about: rp.about.as_ref().map(|a| about(c, a)),
        experiment: rp.experiment.as_ref().and_then(|e| {
            let compares = measure.as_ref().is_some_and(|m| m.compare.is_some());
            if !compares {
                c.err(
                    at(e),
                    format!("{what}: an `experiment` describes a comparison; this part binds none"),
                    Some("bind `measure: {analysis: compare, scope: A, versus: B, of: ..., metric: ..., value: ...}`".into()),
                );
            }
            experiment(c, e, &what)
        }),
        line: at(&rp.id).0,
        column: at(&rp.id).1,
        measure,
        ratio,
    }
}

/// A part's `measure` (`m`), bound to its analysis and scope; an action or an arithmetic part
/// cannot be measured.
fn measure(
    c: &mut Checker,
    rp: &RawPart,
    m: &Spanned<RawMeasure>,
    what: &str,
    scopes: &BTreeMap<String, Scope>,
    raw_scopes: &BTreeMap<String, RawScope>,
) -> Option<Measure> {
    let kind = rp.kind.value;
    if matches!(kind, Kind::Action | Kind::Arithmetic) {
        c.err(
            m.value.analysis.as_ref().map_or_else(|| at(m), at),
            format!(
                "{what}: a{} part cannot be measured",
                if kind == Kind::Action { "n action" } else { "n arithmetic" }
            ),
            Some("measure an observation, interpretation or causal part; an arithmetic part computes a `formula` from others, an action is text".into()),
        );
    }
    measurement(c, m, what, scopes, raw_scopes)
}

/// A part's `formula`, parsed, over the other parts of the claim (`part_names`): only an
/// arithmetic part has one, and it must.
fn formula(c: &mut Checker, rp: &RawPart, what: &str, part_names: &[&str]) -> Option<Expr> {
    let kind = rp.kind.value;
    let pid = &rp.id.value;
    let mut formula = None;
    if let Some(f) = &rp.formula {
        if kind != Kind::Arithmetic {
            c.err(
                at(f),
                format!("{what}: only arithmetic parts have a `formula`"),
                Some("measured parts put their formula in `measure.value`".to_string()),
            );
        }
        match Expr::parse(&f.value) {
            Ok(e) => {
                for v in e.vars() {
                    if !part_names.contains(&v.as_str()) || v == *pid {
                        c.err(at(f), format!("{what}: formula names `{v}`, which is not another part of this claim"), Some(suggestion(&v, part_names.iter().copied())));
                    }
                }
                formula = Some(e);
            }
            Err(e) => c.err(
                at(f),
                format!(
                    "{what}: formula {}: {} (at character {})",
                    shown_formula(&f.value),
                    e.message,
                    e.offset + 1
                ),
                Some(formula_hint(&e)),
            ),
        }
    } else if kind == Kind::Arithmetic {
        c.err(
            at(&rp.id),
            format!("{what}: an arithmetic part needs a `formula`"),
            Some("e.g. formula: \"1 / (1 - share)\", over the ids of measured parts".into()),
        );
    }
    formula
}

/// A part's `from`: each entry another part of the claim (`part_names`).
fn check_from(c: &mut Checker, rp: &RawPart, what: &str, part_names: &[&str]) {
    let pid = &rp.id.value;
    for f in &rp.from {
        if f.value == *pid {
            c.err(
                at(f),
                format!("{what}: `from` names the part itself"),
                Some(
                    "an interpretation reads other parts: name the observations it rests on".into(),
                ),
            );
        } else if !part_names.contains(&f.value.as_str()) {
            c.err(
                at(f),
                format!("{what}: `from` names `{}`, which is not a part of this claim", f.value),
                Some(suggestion(&f.value, part_names.iter().copied())),
            );
        }
    }
}

/// What a part's kind must state: an interpretation its `mapping` and the parts it reads, an
/// unmeasured causal part the evidence that would decide it, an action its text.
fn check_stated(c: &mut Checker, rp: &RawPart, what: &str) {
    let kind = rp.kind.value;
    if kind == Kind::Interpretation && rp.mapping.is_none() {
        c.err(
            at(&rp.id),
            format!("{what}: an interpretation must state the `mapping` it relies on"),
            Some(
                "e.g. mapping: {en: \"flash_bwd_* is FlashAttention's backward kernel\"}"
                    .to_string(),
            ),
        );
    }
    if kind == Kind::Interpretation && rp.from.is_empty() {
        c.err(
            at(&rp.id),
            format!("{what}: an interpretation must name the parts it reads in `from`"),
            Some("e.g. from: [share], the observations the interpretation rests on".into()),
        );
    }
    if kind == Kind::Causal && rp.measure.is_none() && rp.ratio.is_none() && rp.needs.is_empty() {
        c.err(at(&rp.id), format!("{what}: an unmeasured causal part must list the evidence that would decide it in `needs`"), Some("e.g. needs: [{en: \"a fusion on/off A/B run\"}]".to_string()));
    }
    if kind == Kind::Action && rp.text.is_none() {
        c.err(
            at(&rp.id),
            format!("{what}: an action needs its `text`"),
            Some("e.g. text: {en: \"run an A/B of NCCL overlap on and off\"}".into()),
        );
    }
}

/// A part's `work`: each step of its kind, with the part's `effort` unless the step gives
/// its own.
fn work(rp: &RawPart) -> Vec<Step> {
    rp.work
        .iter()
        .map(|w| match &w.value {
            RawWork::Kind(kind) => {
                Step { kind: *kind, effort: rp.effort, runs: None, gpu_hours: None, people: None }
            }
            RawWork::Step(s) => Step {
                kind: s.kind,
                effort: s.effort.or(rp.effort),
                runs: s.runs,
                gpu_hours: s.gpu_hours,
                people: s.people,
            },
        })
        .collect()
}

/// A part `verdict draft` proposed and nobody has reviewed yet: never judged. The problem sits
/// at the part's id, quoting the sentence it came from.
fn unreviewed(c: &mut Checker, u: &Spanned<RawUnreviewed>, pos: (u32, u32), what: &str) {
    const SHOWN: usize = 60;
    let from = match (&u.value.line, &u.value.quote) {
        (Some(line), Some(q)) => {
            let q: String = q.chars().take(SHOWN).collect();
            let cut =
                if q.chars().count() < u.value.quote.as_deref().map_or(0, |x| x.chars().count()) {
                    "…"
                } else {
                    ""
                };
            format!(" (drafted from line {line} of the answer: \"{q}{cut}\")")
        }
        (Some(line), None) => format!(" (drafted from line {line} of the answer)"),
        _ => String::new(),
    };
    c.err(
        pos,
        format!("{what} is unreviewed{from}: a drafted part is not judged"),
        Some("check its `kind`, bind a `measure` (one of `unreviewed.analyses`, with a scope) and, for a range, move `unreviewed.condition` beside it, or delete the part; then remove the `unreviewed` block (docs/claims.md, \"Drafted parts\")".into()),
    );
}

/// An `experiment:`: what changed, what was held (known names only), controlled, expected
/// direction.
fn experiment(c: &mut Checker, e: &Spanned<RawExperiment>, what: &str) -> Option<Experiment> {
    let mut held = Vec::new();
    for h in &e.value.held {
        if HELD.contains(&h.value.as_str()) {
            held.push(h.value.clone());
        } else {
            c.err(
                at(h),
                format!("{what}: `held` names `{}`, which is not a known condition", h.value),
                Some(match did_you_mean(&h.value, HELD.iter().copied()) {
                    Some(n) => format!("did you mean `{n}`? known: {}", HELD.join(", ")),
                    None => format!("known: {}", HELD.join(", ")),
                }),
            );
        }
    }
    let expect = match &e.value.expect {
        None => None,
        Some(x) => match x.value.as_str() {
            "decrease" => Some(Direction::Decrease),
            "increase" => Some(Direction::Increase),
            other => {
                c.err(
                    at(x),
                    format!("{what}: `expect` is `{other}`"),
                    Some("`decrease` or `increase`: the direction of B against A".into()),
                );
                None
            }
        },
    };
    Some(Experiment {
        changed: c.opt_text(&e.value.changed, &format!("{what} experiment changed")),
        held,
        controlled: e.value.controlled.unwrap_or(false),
        expect,
        within_run: c.opt_text(&e.value.within_run, &format!("{what} experiment within_run")),
    })
}

/// A part's `condition`: exactly one of its forms, its values read in the part's `unit`.
fn condition(
    c: &mut Checker,
    cond: &Spanned<RawCondition>,
    unit: Unit,
    what: &str,
) -> Option<Condition> {
    let r = &cond.value;
    let pos = at(cond);
    let n = [
        r.between.is_some(),
        r.at_least.is_some(),
        r.at_most.is_some(),
        r.above.is_some(),
        r.below.is_some(),
        r.approx.is_some(),
        r.exists.is_some(),
    ]
    .iter()
    .filter(|x| **x)
    .count();
    if n != 1 {
        c.err(pos, format!("{what}: a condition has exactly one of between, at_least, at_most, above, below, approx, exists ({n} given)"), Some("keep one condition per part; a second claim of the part goes in another part".into()));
        return None;
    }
    let mut q = |t: &str| c.quantity(pos, t, unit, &format!("{what}: condition value"));
    Some(if let Some(b) = &r.between {
        if b.len() != 2 {
            c.err(
                pos,
                format!("{what}: `between` takes two values [low, high]"),
                Some("e.g. between: [\"10%\", \"30%\"]".into()),
            );
            return None;
        }
        let (lo, hi) = (q(&b[0])?, q(&b[1])?);
        if lo.value.cmp_to(hi.value) == std::cmp::Ordering::Greater {
            c.err(
                pos,
                format!("{what}: `between` bounds are reversed ({} is above {})", lo.text, hi.text),
                Some(format!("write the lower bound first: between: [{}, {}]", hi.text, lo.text)),
            );
            return None;
        }
        Condition::Between(lo, hi)
    } else if let Some(x) = &r.at_least {
        Condition::AtLeast(q(x)?)
    } else if let Some(x) = &r.at_most {
        Condition::AtMost(q(x)?)
    } else if let Some(x) = &r.above {
        Condition::Above(q(x)?)
    } else if let Some(x) = &r.below {
        Condition::Below(q(x)?)
    } else if let Some(a) = &r.approx {
        let (value, tolerance) = (q(&a.value)?, q(&a.tolerance)?);
        if tolerance.value.num < 0 {
            c.err(
                pos,
                format!("{what}: `approx` tolerance `{}` is negative", tolerance.text),
                Some(format!(
                    "a tolerance is a distance either side of the value: write {}",
                    tolerance.text.trim_start_matches(['-', ' '])
                )),
            );
            return None;
        }
        if approx_bounds(&value, &tolerance).is_none() {
            c.err(
                pos,
                format!(
                    "{what}: `approx` {} ± {} is out of the exact range",
                    value.text, tolerance.text
                ),
                Some("write the value and its tolerance with fewer digits".into()),
            );
            return None;
        }
        Condition::Approx(value, tolerance)
    } else if r.exists == Some(false) {
        c.err(
            pos,
            format!("{what}: `exists: false` is not a condition"),
            Some("use `at_most: 0` to claim absence".to_string()),
        );
        return None;
    } else {
        Condition::Exists
    })
}

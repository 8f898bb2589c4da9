//! The causal rules of a part bound to `compare`: the interval of its value, the direction
//! and effect it claims, and the verdict per device and across devices. Pure, as the rest of
//! the rules: evidence in, a part's result out.

use super::*;

/// The interval of a comparison's value, when the value is one of the fields that has one:
/// `delta` (the Moses interval of the shift), `change` (the ratio interval less 1), `ratio` (the
/// ratio interval).
pub fn compare_interval(m: &crate::claims::Measure, ev: &Evidence) -> Option<(Rational, Rational)> {
    let vars = m.value.vars();
    let [field] = vars.as_slice() else { return None };
    if m.value_text.trim() != field {
        return None;
    }
    let get = |f: &str| field_value(ev, f);
    match field.as_str() {
        "delta" => Some((get("ci_low")?, get("ci_high")?)),
        "change" => Some((get("change_low")?, get("change_high")?)),
        "ratio" => {
            let one = Rational::int(1);
            Some((one.checked_add(get("change_low")?)?, one.checked_add(get("change_high")?)?))
        }
        _ => None,
    }
}

/// The direction a comparison part claims: the experiment's `expect`; else, for a value that
/// is `delta`, `change` (no change at 0) or `ratio` (no change at 1), the side of no change its
/// condition asks for. Any other formula states its direction with `expect`.
fn claimed_direction(p: &Part, m: &crate::claims::Measure) -> Option<crate::claims::Direction> {
    use crate::claims::Direction;
    use std::cmp::Ordering::*;
    if let Some(d) = p.experiment.as_ref().and_then(|e| e.expect) {
        return Some(d);
    }
    let neutral = match m.value_text.trim() {
        "delta" | "change" => Rational::int(0),
        "ratio" => Rational::int(1),
        _ => return None,
    };
    let side = |q: &Quantity| q.value.cmp_to(neutral);
    match p.condition.as_ref()? {
        Condition::AtMost(q) | Condition::Below(q) if side(q) != Greater => {
            Some(Direction::Decrease)
        }
        Condition::AtLeast(q) | Condition::Above(q) if side(q) != Less => Some(Direction::Increase),
        Condition::Between(a, b) if side(b) == Less => {
            let _ = a;
            Some(Direction::Decrease)
        }
        Condition::Between(a, _) if side(a) == Greater => Some(Direction::Increase),
        Condition::Approx(x, _) if side(x) == Less => Some(Direction::Decrease),
        Condition::Approx(x, _) if side(x) == Greater => Some(Direction::Increase),
        _ => None,
    }
}

/// Whether any value of `[lo, hi]` satisfies the condition: for a one-sided condition its
/// ends decide; for `between` and `approx`, whether the two ranges overlap.
fn interval_meets(c: &Condition, lo: Rational, hi: Rational) -> bool {
    use std::cmp::Ordering::*;
    let (lo, hi) = if lo.cmp_to(hi) == Greater { (hi, lo) } else { (lo, hi) };
    match c {
        Condition::AtLeast(q) => hi.cmp_to(q.value) != Less,
        Condition::Above(q) => hi.cmp_to(q.value) == Greater,
        Condition::AtMost(q) => lo.cmp_to(q.value) != Greater,
        Condition::Below(q) => lo.cmp_to(q.value) == Less,
        Condition::Between(a, b) => hi.cmp_to(a.value) != Less && lo.cmp_to(b.value) != Greater,
        Condition::Approx(x, t) => match crate::claims::approx_bounds(x, t) {
            Some((a, b)) => hi.cmp_to(a) != Less && lo.cmp_to(b) != Greater,
            None => true,
        },
        Condition::Exists => hi.num > 0,
    }
}

/// Judges a part bound to `compare`. Supported only when the experiment is declared
/// controlled, both sides have [`crate::stats::FEW_SAMPLES`] samples or more, the interval of
/// the median difference excludes zero in the claimed direction and the condition holds;
/// partially supported when the effect is there but the experiment is not declared controlled
/// or the samples are few; not supported when the interval excludes the claimed effect (or
/// lies on the other side of zero) in a comparison that could have supported it, and
/// unverifiable, with the direction shown, in one that could not (symmetric: what caps a
/// support caps a refutation); open otherwise. An observation bound to `compare` is judged
/// on the point value as any measure.
pub(super) fn compare_part(
    r: PartResult,
    p: &Part,
    m: &crate::claims::Measure,
    ev: &Evidence,
) -> PartResult {
    let devices = crate::analysis::compare::device_evidences(ev);
    if devices.len() < 2 {
        return compare_one(r, p, m, ev);
    }
    // Every device judged on its own comparison; the part is the first device's, unless
    // another device reverses it or decides less.
    let judged: Vec<(i64, PartResult)> =
        devices.iter().map(|(d, e)| (*d, compare_one(r.clone(), p, m, e))).collect();
    let spread = judged
        .iter()
        .map(|(d, j)| {
            let interval =
                compare_interval(m, &devices.iter().find(|x| x.0 == *d).expect("judged").1)
                    .map(|(lo, hi)| format!(" [{} to {}]", show(lo, m.unit), show(hi, m.unit)))
                    .unwrap_or_default();
            format!(
                "device {d}: {}{interval}",
                j.value.map_or_else(|| "n/a".into(), |v| show(v, m.unit))
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    // The part is the first device's, unless another device reverses it or decides less:
    // then that device's value, formula and reason speak for it, so that the number shown
    // beside the verdict is the one that decided it.
    let speaks = |d: i64, j: &PartResult, outcome: PartOutcome, key: &str, named: bool| {
        let mut out = j.clone();
        out.outcome = outcome;
        if let Some(f) = out.formula.as_mut() {
            f.substituted = format!("by device: {spread}; device {d}: {}", f.substituted);
        }
        let mut args = j.reason.args.clone();
        if named {
            args.insert("device".into(), d.to_string());
            out.device = Some(d);
        }
        out.reason = Finding { key: key.to_string(), args };
        out
    };
    let against = |j: &PartResult| j.reason.key == "part.compare_against";
    let holds = |j: &PartResult| {
        matches!(j.outcome, PartOutcome::Supported | PartOutcome::PartiallySupported)
    };
    if judged.iter().any(|(_, j)| holds(j))
        && let Some((d, j)) = judged.iter().find(|(_, j)| against(j))
    {
        // One device shows the claimed direction, another the opposite one.
        return speaks(*d, j, PartOutcome::NotSupported, "part.compare_device_reversal", true);
    }
    let rank = |o: PartOutcome| match o {
        PartOutcome::Supported => 4,
        PartOutcome::PartiallySupported => 3,
        PartOutcome::Unverifiable => 2,
        PartOutcome::NotSupported => 1,
        _ => 0,
    };
    let (d0, first) = &judged[0];
    match judged.iter().min_by_key(|(_, j)| rank(j.outcome)) {
        Some((d, worst)) if rank(worst.outcome) < rank(first.outcome) => {
            speaks(*d, worst, worst.outcome, &worst.reason.key, true)
        }
        _ => speaks(*d0, first, first.outcome, &first.reason.key, false),
    }
}

/// The effect a part claims, as a positive share of A's median: the stated number (`says`)
/// or else the condition's bound, away from no change; None when it is no change itself (any
/// change at all is claimed) or the value is not `change`, `ratio` or `delta`.
fn claimed_effect(p: &Part, m: &crate::claims::Measure, a_median: Rational) -> Option<Rational> {
    let q = match (&p.says, &p.condition) {
        (Some(q), _) => q.value,
        (
            None,
            Some(
                Condition::AtMost(q)
                | Condition::Below(q)
                | Condition::AtLeast(q)
                | Condition::Above(q),
            ),
        ) => q.value,
        (None, Some(Condition::Approx(q, _))) => q.value,
        _ => return None,
    };
    let one = Rational::int(1);
    let rel = match m.value_text.trim() {
        "change" => q,
        "ratio" => q.checked_sub(one)?,
        "delta" if a_median.num != 0 => q.checked_div(a_median)?,
        _ => return None,
    };
    let rel = if rel.num < 0 { rel.checked_neg()? } else { rel };
    (rel.num != 0).then_some(rel)
}

/// A comparison's samples and test as its reasons show them: the samples per side, the
/// interval of its value and the rank test's p-value.
struct Test {
    /// The samples of side A.
    n_a: i64,
    /// The samples of side B.
    n_b: i64,
    /// The interval of the value, when the value has one ([`compare_interval`]).
    interval: Option<(Rational, Rational)>,
    /// The interval shown in the value's unit, or `n/a`.
    interval_text: String,
    /// The Mann-Whitney p-value shown as `= 0.012` or `< 0.001`, or `n/a`.
    p_value: String,
}

impl Test {
    /// Reads the test of a comparison's evidence for a measure.
    fn of(m: &crate::claims::Measure, ev: &Evidence) -> Self {
        let int = |f: &str| {
            field_value(ev, f).and_then(|v| i64::try_from(v.num).ok().filter(|_| v.den == 1))
        };
        let interval = compare_interval(m, ev);
        let rank_test = crate::analysis::compare::Values::of(ev).and_then(|v| v.rank_test.as_ref());
        Test {
            n_a: int("n_a").unwrap_or(0),
            n_b: int("n_b").unwrap_or(0),
            interval,
            interval_text: interval
                .map(|(lo, hi)| format!("{} to {}", show(lo, m.unit), show(hi, m.unit)))
                .unwrap_or_else(|| "n/a".into()),
            p_value: rank_test.map(|t| t.p_value).map_or_else(
                || "n/a".into(),
                |p| if p < 0.001 { "< 0.001".into() } else { format!("= {p:.3}") },
            ),
        }
    }
}

/// The formula of a comparison's part as the report shows it: the medians of both sides with
/// the test beside them, or, for a pooled rate, the totals over time of both sides.
fn compare_formula(
    m: &crate::claims::Measure,
    ev: &Evidence,
    t: &Test,
    value: &Result<Rational, crate::formula::EvalError>,
) -> FormulaResult {
    let get = |f: &str| field_value(ev, f);
    let Test { n_a, n_b, interval_text, p_value, .. } = t;
    let metric_unit = match ev.parameters.get("metric_scale").and_then(Value::as_i64) {
        Some(1) if ev.parameters.get("metric_unit").and_then(Value::as_str) == Some("ns") => {
            Unit::Ms
        }
        Some(1) => Unit::Count,
        _ => Unit::Percent,
    };
    let shown = |v: Option<Rational>| v.map_or_else(|| "n/a".into(), |v| show(v, metric_unit));
    // A difference of shares is in percentage points.
    let delta_unit =
        if metric_unit == Unit::Percent { Unit::PercentagePoints } else { metric_unit };
    let unit_word = ev.parameters.get("sample_unit").and_then(Value::as_str).unwrap_or("window");
    let pooled_text = field_value(ev, "pooled_change")
        .map(|v| format!("; pooled rate {}", show(v, Unit::Percent)))
        .unwrap_or_default();
    let medians = format!(
        "median B {} vs A {} (n = {n_b} vs {n_a} {unit_word}s; 95% interval {interval_text}, exact Moses interval of the Hodges-Lehmann shift; Mann-Whitney p {p_value}{pooled_text}), B - A = {}",
        shown(get("b_median")),
        shown(get("a_median")),
        get("delta").map_or_else(|| "n/a".into(), |v| show(v, delta_unit)),
    );
    // The pooled rate reads totals over time, not medians.
    let pooled_rate = |side: &str| {
        let total =
            get(&format!("{side}_total")).map_or_else(|| "n/a".into(), |v| show(v, Unit::Count));
        let span =
            get(&format!("{side}_span_ns")).map_or_else(|| "n/a".into(), |v| show(v, Unit::Ms));
        format!("{total} in {span}")
    };
    let substituted = if m.value.vars().iter().any(|v| v == "pooled_change") {
        format!("pooled rate: B {} vs A {}", pooled_rate("b"), pooled_rate("a"))
    } else {
        medians
    };
    FormulaResult {
        symbolic: m.value_text.clone(),
        definition: ratio_definition(m).map(|(t, _)| t.to_string()),
        substituted,
        display: value.as_ref().ok().map(|v| show(*v, m.unit)),
        exact: value.as_ref().ok().map(|v| [v.num.to_string(), v.den.to_string()]),
        unit: m.unit,
        error: value.as_ref().err().map(|e| e.to_string()),
    }
}

/// Judges a part bound to `compare` on one device's evidence: its formula, a null field, the
/// stated number and the condition, the gates; then an observation on its value and a causal
/// part on its test ([`judge_causal`]).
fn compare_one(
    mut r: PartResult,
    p: &Part,
    m: &crate::claims::Measure,
    ev: &Evidence,
) -> PartResult {
    let get = |f: &str| field_value(ev, f);
    let vars = vars_of(&m.value, ev);
    let value = m.value.eval(&vars);
    let t = Test::of(m, ev);
    r.formula = Some(compare_formula(m, ev, &t, &value));
    let failed: Vec<&str> =
        r.gates.iter().filter(|g| g.status == GateStatus::Fail).map(|g| g.gate).collect();
    let value = match value {
        Ok(v) => v,
        Err(_) => {
            // A null field: the evidence says why (one sample, a zero baseline).
            let field = m.value.vars().into_iter().find(|f| get(f).is_none()).unwrap_or_default();
            r.outcome = PartOutcome::Unverifiable;
            r.reason = ev.null_reasons(&field).first().map_or_else(
                || Finding::new("part.field_null", &[("field", field.clone())]),
                |n| n.finding.clone(),
            );
            return r;
        }
    };
    r.value = Some(value);
    r.says = p.says.as_ref().map(|s| says_check(s, value));
    let cond = p.condition.as_ref().and_then(|c| check_condition(c, value));
    if let Some((ok, finding)) = &cond {
        r.condition = Some(ConditionResult { finding: finding.clone(), satisfied: *ok });
    }
    if !failed.is_empty() {
        r.outcome = PartOutcome::Unverifiable;
        r.reason = Finding::new("part.gate_failed", &[("gates", failed.join(", "))]);
        return r;
    }
    if p.kind != Kind::Causal {
        return judge_value(r, p, m.unit, divides(m), value);
    }
    let holds = cond.as_ref().is_none_or(|(ok, _)| *ok);
    judge_causal(r, p, m, ev, &t, value, holds)
}

/// Judges a causal part on a comparison's test, once its value is known and its gates pass:
/// enough samples, a claimed direction, an effect the metric can resolve; then the interval
/// against the claimed direction and effect, capped by what the experiment declares.
fn judge_causal(
    mut r: PartResult,
    p: &Part,
    m: &crate::claims::Measure,
    ev: &Evidence,
    t: &Test,
    value: Rational,
    holds: bool,
) -> PartResult {
    use crate::claims::Direction;
    let get = |f: &str| field_value(ev, f);
    let (n_a, n_b) = (t.n_a, t.n_b);
    if n_a < crate::stats::MIN_SAMPLES as i64 || n_b < crate::stats::MIN_SAMPLES as i64 {
        r.outcome = PartOutcome::Unverifiable;
        r.reason = Finding::new(
            "part.compare_one_sample",
            &[("n_a", n_a.to_string()), ("n_b", n_b.to_string())],
        );
        return r;
    }
    let Some(direction) = claimed_direction(p, m) else {
        r.outcome = PartOutcome::Unverifiable;
        r.reason = Finding::new("part.compare_no_direction", &[]);
        return r;
    };
    let zero = Rational::int(0);
    let (lo, hi) = (get("ci_low"), get("ci_high"));
    use std::cmp::Ordering::*;
    let (with, against) = match (lo, hi, direction) {
        (Some(lo), Some(hi), Direction::Decrease) => {
            (hi.cmp_to(zero) == Less, lo.cmp_to(zero) == Greater)
        }
        (Some(lo), Some(hi), Direction::Increase) => {
            (lo.cmp_to(zero) == Greater, hi.cmp_to(zero) == Less)
        }
        _ => (false, false),
    };
    // The whole interval outside the claimed effect: every value it allows fails the
    // condition.
    let excluded = match (&p.condition, t.interval) {
        (Some(c), Some((a, b))) => !interval_meets(c, a, b),
        _ => false,
    };
    let args = [
        ("value", show(value, m.unit)),
        ("interval", t.interval_text.clone()),
        ("p", t.p_value.clone()),
        ("n_a", n_a.to_string()),
        ("n_b", n_b.to_string()),
    ];
    let few = n_a.min(n_b) < crate::stats::FEW_SAMPLES as i64;
    let controlled = p.experiment.as_ref().is_some_and(|e| e.controlled);
    let a_median = get("a_median").filter(|v| v.num != 0);
    let effect = a_median.and_then(|a| claimed_effect(p, m, a));
    let pooled = get("pooled_change").map_or_else(|| "n/a".into(), |v| show(v, Unit::Percent));
    let resolution_args = |extra: (&'static str, String)| {
        let mut a = args.to_vec();
        a.push(("effect", effect.map_or_else(|| "n/a".into(), |e| show(e, Unit::Percent))));
        a.push(("pooled", pooled.clone()));
        a.push(extra);
        a
    };
    // A count in a window of a few calls moves in steps of one call: a claimed effect
    // smaller than one step cannot show in the medians, nor in their interval.
    let counts = ev.parameters.get("metric_unit").and_then(Value::as_str) == Some("count")
        && ev.parameters.get("metric_scale").and_then(Value::as_i64) == Some(1);
    if counts
        && let (Some(e), Some(a)) = (effect, a_median)
        && let Some(step) = Rational::int(1).checked_div(a)
        && step.cmp_to(e) == Greater
    {
        r.outcome = PartOutcome::Unverifiable;
        r.reason = Finding::new(
            "part.compare_cannot_resolve",
            &resolution_args(("step", show(step, Unit::Percent))),
        );
        return r;
    }
    let unit = ev.parameters.get("sample_unit").and_then(Value::as_str).unwrap_or("window");
    let within_run = p.experiment.as_ref().and_then(|e| e.within_run.as_ref());
    // What keeps a comparison from supporting a cause keeps it from refuting one: an
    // uncontrolled experiment, few samples, or samples inside one capture per side without
    // the author's reason. Its direction is then an observation, not a verdict.
    let cap = if !controlled {
        Some("part.compare_against_uncontrolled")
    } else if few {
        Some("part.compare_against_few")
    } else if unit != "run" && within_run.is_none() {
        Some("part.compare_against_within_run")
    } else {
        None
    };
    if (against || excluded)
        && let Some(key) = cap
    {
        let mut a = args.to_vec();
        a.push(("unit", unit.to_string()));
        r.outcome = PartOutcome::Unverifiable;
        r.reason = Finding::new(key, &a);
    } else if against || excluded {
        r.outcome = PartOutcome::NotSupported;
        r.reason = Finding::new(
            if against { "part.compare_against" } else { "part.compare_excludes" },
            &args,
        );
    } else if with && holds {
        (r.outcome, r.reason) = supported_as(controlled, few, unit, within_run, &args);
    } else if let (Some(e), Some(a), Some(mde)) = (effect, a_median, get("mde"))
        && let Some(rel) = mde.checked_div(a)
        && rel.cmp_to(e) == Greater
    {
        // Open, and at this n only a larger effect than the claimed one would show.
        r.outcome = PartOutcome::Unverifiable;
        let rel = if rel.num < 0 { rel.checked_neg().unwrap_or(rel) } else { rel };
        r.reason = Finding::new(
            "part.compare_underpowered",
            &resolution_args(("mde", show(rel, Unit::Percent))),
        );
    } else {
        r.outcome = PartOutcome::Unverifiable;
        r.reason = Finding::new("part.compare_open", &args);
    }
    r
}

/// How far a test that shows the claimed effect supports a cause: fully with a controlled
/// experiment, enough samples and a run per sample (or samples inside one capture per side,
/// declared and justified); partly otherwise.
fn supported_as(
    controlled: bool,
    few: bool,
    unit: &str,
    within_run: Option<&crate::claims::Text>,
    args: &[(&'static str, String)],
) -> (PartOutcome, Finding) {
    if controlled && !few && unit == "run" {
        (PartOutcome::Supported, Finding::new("part.compare_supported", args))
    } else if controlled
        && !few
        && let Some(why) = within_run
    {
        // Samples inside one capture per side, which the author declares and justifies.
        let mut a = args.to_vec();
        a.push(("unit", unit.to_string()));
        a.push(("why_en", why.get("en").cloned().unwrap_or_default()));
        a.push(("why_zh", why.get("zh-TW").cloned().unwrap_or_default()));
        (PartOutcome::Supported, Finding::new("part.compare_supported_within_run", &a))
    } else if controlled && !few {
        let mut a = args.to_vec();
        a.push(("unit", unit.to_string()));
        (PartOutcome::PartiallySupported, Finding::new("part.compare_within_run", &a))
    } else {
        (
            PartOutcome::PartiallySupported,
            Finding::new(
                if !controlled { "part.compare_uncontrolled" } else { "part.compare_few" },
                args,
            ),
        )
    }
}

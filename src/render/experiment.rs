//! The words of an A/B comparison for a reader: the experiment as declared and as its traces
//! check it ("controlled: declared by the author; checked: ...; differs: ..."), the rank
//! test's p outside the formula, and the "How to read an A/B" block.
//!
//! Reads the claims, the evidence and the experiment check of `crate::verdict`; computes no
//! statistic and judges nothing.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::analysis::Evidence;
use crate::claims::{ClaimSet, Experiment, Measure};
use crate::i18n::Strings;
use crate::render::RenderError;
use crate::verdict::{RunFact, check_experiment, gap_text, side_runs};

fn args<const N: usize>(pairs: [(&str, String); N]) -> BTreeMap<String, String> {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// One fact in words: `driver 580.95.05 on both sides`, `process ids A 144, B 148`.
fn fact_text(t: &Strings, f: &RunFact) -> Result<String, RenderError> {
    let label = t.get(&format!("exp.fact.{}", f.name))?;
    let unrecorded = || t.get("exp.unrecorded").map(str::to_string);
    let value = match (f.name, &f.a, &f.b, f.same) {
        ("kernel_names", Some(n), _, Some(true)) => {
            t.format("exp.names_same", &args([("n", n.clone())]))?
        }
        ("kernel_names", _, _, Some(false)) => {
            let [a, b] = f.only.clone().unwrap_or_default();
            let list = |v: Vec<String>| {
                if v.is_empty() {
                    "-".to_string()
                } else {
                    v.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(" ")
                }
            };
            t.format("exp.names_differ", &args([("only_a", list(a)), ("only_b", list(b))]))?
        }
        ("capture_start", Some(a), Some(b), Some(false)) => t.format(
            "exp.apart",
            &args([
                ("a", a.clone()),
                ("b", b.clone()),
                ("gap", f.apart_ns.map(gap_text).unwrap_or_default()),
            ]),
        )?,
        (_, Some(v), _, Some(true)) => t.format("exp.same", &args([("value", v.clone())]))?,
        (_, None, None, _) => unrecorded()?,
        (_, a, b, _) => t.format(
            "exp.pair",
            &args([
                ("a", a.clone().map_or_else(unrecorded, Ok)?),
                ("b", b.clone().map_or_else(unrecorded, Ok)?),
            ]),
        )?,
    };
    Ok(format!("{label} {value}"))
}

/// The experiment of a comparison in one line: `controlled: declared by the author; checked:
/// hardware (...); not checkable from a trace: data; differs: process ids (...)`. Without an
/// experiment, the comparison is not declared controlled and nothing was declared held.
pub fn controlled_line(
    t: &Strings,
    e: Option<&Experiment>,
    ev: &Evidence,
) -> Result<String, RenderError> {
    let sep = t.get("exp.sep")?;
    let colon = t.get("ui.colon")?;
    let list = t.get("ui.list_sep")?;
    let declared =
        if e.is_some_and(|e| e.controlled) { "exp.declared" } else { "exp.not_declared" };
    let mut out = format!("{}{colon}{}", t.get("exp.controlled")?, t.get(declared)?);
    let Some(runs) = side_runs(ev) else {
        out += &format!("{sep}{}", t.get("exp.unread")?);
        return Ok(out);
    };
    let none = Experiment {
        changed: None,
        held: Vec::new(),
        controlled: false,
        expect: None,
        within_run: None,
    };
    let check = check_experiment(e.unwrap_or(&none), &runs);
    if check.checked.is_empty() && check.uncheckable.is_empty() {
        out += &format!("{sep}{}", t.get("exp.nothing_held")?);
    }
    if !check.checked.is_empty() {
        let items = check
            .checked
            .iter()
            .map(|h| {
                let mut facts =
                    h.facts.iter().map(|f| fact_text(t, f)).collect::<Result<Vec<_>, _>>()?;
                if h.proxy {
                    facts.push(t.get("exp.proxy")?.to_string());
                }
                Ok(format!(
                    "`{}`{}{}{}",
                    h.item,
                    t.get("ui.paren_open")?,
                    facts.join(list),
                    t.get("ui.paren_close")?
                ))
            })
            .collect::<Result<Vec<_>, RenderError>>()?;
        out += &format!("{sep}{}{colon}{}", t.get("exp.checked")?, items.join(list));
    }
    if !check.uncheckable.is_empty() {
        let items: Vec<String> = check.uncheckable.iter().map(|h| format!("`{h}`")).collect();
        out += &format!("{sep}{}{colon}{}", t.get("exp.uncheckable")?, items.join(list));
    }
    let differs = if check.differs.is_empty() {
        t.get("exp.nothing_differs")?.to_string()
    } else {
        check.differs.iter().map(|f| fact_text(t, f)).collect::<Result<Vec<_>, _>>()?.join(list)
    };
    out += &format!("{sep}{}{colon}{differs}", t.get("exp.differs")?);
    Ok(out)
}

/// The rank test in words, for beside the formula: `Mann-Whitney U, two-sided, exact: p =
/// 0.195`; None where the evidence has no test.
pub fn test_line(t: &Strings, ev: &Evidence) -> Result<Option<String>, RenderError> {
    let Some(rt) = crate::analysis::compare::Values::of(ev).and_then(|v| v.rank_test.as_ref())
    else {
        return Ok(None);
    };
    let p = rt.p_value;
    // Two decimals, a third below 0.01 so that a small p never reads 0.00.
    let p = match p {
        p if p < 0.001 => "p < 0.001".to_string(),
        p if p < 0.01 => format!("p = {p:.3}"),
        p => format!("p = {p:.2}"),
    };
    let method = match rt.method {
        "exact" => t.get("ab.test_exact")?,
        _ => t.get("ab.test_normal")?,
    };
    Ok(Some(t.format("ab.test", &args([("method", method.to_string()), ("p", p)]))?))
}

/// A comparison's formula line without the interval and the rank test inside its sample
/// parenthesis (`(n = 10 vs 10; 95% interval ...; Mann-Whitney p = 0.195)`), which read as
/// part of the arithmetic: the interval is the scope's and the test has its own line. A line
/// of another shape is kept as it is.
pub fn without_test(line: &str) -> String {
    let Some(open) = line.find("(n = ") else { return line.to_string() };
    let rest = &line[open..];
    let (Some(semi), Some(close)) = (rest.find("; "), rest.find(')')) else {
        return line.to_string();
    };
    if semi > close || !rest[semi..close].contains("Mann-Whitney") {
        return line.to_string();
    }
    format!("{}{}", &line[..open + semi], &rest[close..])
}

/// How a side's samples were taken, in words, with n: `12 NVTX steps of one capture`.
fn sampling_text(t: &Strings, sampling: &str, n: i64) -> Result<String, RenderError> {
    let key = match sampling {
        "runs" => "ab.unit_runs",
        "steps" => "ab.unit_steps",
        "windows" => "ab.unit_windows",
        _ => "ab.unit_one",
    };
    Ok(t.format(key, &args([("n", n.to_string())]))?)
}

/// The "How to read an A/B" block: what the interval covers, the sample unit and n of each
/// comparison, what "controlled" means here, and which test; empty without a comparison.
pub fn reading<'a>(
    t: &Strings,
    set: &ClaimSet,
    evidence: impl Fn(&Measure) -> Option<&'a Evidence>,
) -> Result<Vec<String>, RenderError> {
    let mut lines = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    let mut seed = None;
    let mut resamples = None;
    for m in set.claims.iter().flat_map(|c| &c.parts).filter_map(|p| p.measure.as_ref()) {
        let (Some(c), Some(ev)) = (&m.compare, evidence(m)) else { continue };
        let v = crate::analysis::compare::Values::of(ev);
        let n = |k: usize| v.map_or(0, |v| if k == 0 { v.n_a } else { v.n_b });
        let by_run = ev.parameters.get("sample_unit").and_then(Value::as_str) == Some("run");
        let sampling = |k: usize| {
            if by_run {
                return "runs".to_string();
            }
            let runs = side_runs(ev);
            runs.map(|r| r[k].sampling.clone()).unwrap_or_else(|| {
                let s = set.scopes.get(&c.sides[k].scope);
                if s.is_some_and(|s| s.nvtx.is_some()) {
                    "steps".into()
                } else if c.split.is_some() {
                    "windows".into()
                } else {
                    "one".into()
                }
            })
        };
        let line = t.format(
            "ab.read_sample",
            &args([
                ("a", c.sides[0].scope.clone()),
                ("b", c.sides[1].scope.clone()),
                ("unit_a", sampling_text(t, &sampling(0), n(0))?),
                ("unit_b", sampling_text(t, &sampling(1), n(1))?),
            ]),
        )?;
        if !seen.contains(&line) {
            seen.push(line);
        }
        seed = seed.or_else(|| ev.parameters.get("seed").cloned());
        resamples = resamples.or_else(|| ev.parameters.get("resamples").and_then(Value::as_i64));
    }
    if seen.is_empty() {
        return Ok(lines);
    }
    let seed = seed.map_or_else(|| "-".into(), |s| s.to_string());
    let resamples = resamples.map_or_else(|| "-".into(), |n| crate::units::thousands(n.into()));
    lines.push(t.format("ab.read_interval", &args([("seed", seed), ("resamples", resamples)]))?);
    lines.extend(seen);
    lines.push(t.get("ab.read_within")?.to_string());
    lines.push(t.get("ab.read_controlled")?.to_string());
    lines.push(t.get("ab.read_test")?.to_string());
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_test_leaves_the_sample_parenthesis_and_nothing_else_does() {
        let line = "change = delta / a_median = median B 3 vs A 3 (n = 10 vs 10; 95% interval -33.3% to 0.0%, bootstrap seed 1; Mann-Whitney p = 0.195), B - A = 0 = 0.0%";
        assert_eq!(
            without_test(line),
            "change = delta / a_median = median B 3 vs A 3 (n = 10 vs 10), B - A = 0 = 0.0%"
        );
        // Another shape is kept whole.
        for other in ["a / b = 1 / 2 = 50%", "x (n = 3), y", "(n = 3; no test), z"] {
            assert_eq!(without_test(other), other);
        }
    }
}

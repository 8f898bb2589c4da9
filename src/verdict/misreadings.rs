//! The common misreadings an audit could lead its reader into, each filled from this audit's
//! own numbers.
//!
//! A misreading is a [`Finding`] `mis.NAME` whose arguments come from the parts, gates and
//! evidence that make it apply; the reports print `mis.NAME.title` and `mis.NAME.text` with
//! them. One that has no number of its own (`presence`, `hedges`) names the parts it is
//! about instead, so no report ever shows another audit's numbers.

use super::{ClaimResult, EvidenceMap, Finding, GateStatus, PartOutcome, PartResult};
use crate::claims::{ClaimSet, Kind, Unit};
use crate::formula::Rational;
use crate::units;

/// The misreadings that apply, in a fixed order.
pub fn applicable(set: &ClaimSet, results: &[ClaimResult], evidence: &EvidenceMap) -> Vec<Finding> {
    let mut out: Vec<Finding> = [
        zero_refuted(results),
        presence(set, results),
        gate_note(results, "gate.r1.contain_span").map(|g| {
            Finding::new(
                "mis.window_span",
                &[("window_ms", arg(g, "window_ms")), ("span_ms", arg(g, "span_ms"))],
            )
        }),
        device_total(results),
        across_ranks(results),
        denominators(set, results),
        step_vs_throughput(results),
        transfer_baseline(evidence),
    ]
    .into_iter()
    .flatten()
    .collect();
    out.extend(comparisons(set, results));
    // Each misreading once: the first part it applies to stands for the others.
    let mut seen = std::collections::BTreeSet::new();
    out.retain(|f| seen.insert(f.key.clone()));
    out.extend(hedges(results));
    out
}

/// Every part of every claim, with its claim.
fn parts(results: &[ClaimResult]) -> impl Iterator<Item = (&ClaimResult, &PartResult)> {
    results.iter().flat_map(|r| r.parts.iter().map(move |p| (r, p)))
}

/// No claim refuted while some are open: "zero not supported" read as "all correct".
fn zero_refuted(results: &[ClaimResult]) -> Option<Finding> {
    let open = results
        .iter()
        .filter(|r| {
            matches!(r.verdict, super::Verdict::PartiallySupported | super::Verdict::Unverifiable)
        })
        .count();
    let refuted = results.iter().filter(|r| r.verdict == super::Verdict::NotSupported).count();
    (open > 0 && refuted == 0).then(|| {
        Finding::new(
            "mis.zero_refuted",
            &[("open", open.to_string()), ("claims", results.len().to_string())],
        )
    })
}

/// "It ran" read as "it is optimised": an interpretation supported by a kernel observation.
fn presence(set: &ClaimSet, results: &[ClaimResult]) -> Option<Finding> {
    let (r, p, observed) = set.claims.iter().zip(results).find_map(|(claim, r)| {
        let observed = kernel_observations(claim, r);
        let p = r
            .parts
            .iter()
            .find(|p| p.kind == Kind::Interpretation && p.outcome == PartOutcome::Supported)?;
        let first = *observed.first()?;
        Some((r, p, first))
    })?;
    let observed = observed
        .formula
        .as_ref()
        .and_then(|f| f.display.clone())
        .map(|d| format!("{} = {d}", code(&observed.id)));
    Some(Finding::new(
        "mis.presence",
        &[
            ("part", format!("{}/{}", r.id, p.id)),
            ("observed", observed.unwrap_or_else(|| code(&p.id))),
        ],
    ))
}

/// The supported observations of a claim (`r`, its results) that measure `kernels`.
fn kernel_observations<'a>(
    claim: &crate::claims::Claim,
    r: &'a ClaimResult,
) -> Vec<&'a PartResult> {
    claim
        .parts
        .iter()
        .zip(&r.parts)
        .filter(|(part, o)| {
            o.kind == Kind::Observation
                && o.outcome == PartOutcome::Supported
                && part
                    .measure
                    .as_ref()
                    .is_some_and(|m| m.analysis == crate::analysis::kernels::SPEC.name)
        })
        .map(|(_, o)| o)
        .collect()
}

/// A total over devices read as one device's number: the first part whose gate R4 says it
/// sums.
fn device_total(results: &[ClaimResult]) -> Option<Finding> {
    let (p, g) = parts(results).find_map(|(_, p)| {
        p.gates
            .iter()
            .find(|g| {
                g.status != GateStatus::Fail
                    && matches!(
                        g.finding.key.as_str(),
                        "gate.r4.summed" | "gate.r4.summed_unstated"
                    )
            })
            .map(|g| (p, &g.finding))
    })?;
    Some(Finding::new(
        "mis.device_total",
        &[
            ("part", p.id.clone()),
            ("value", shown(p)),
            ("n", arg(g, "n")),
            ("devices", arg(g, "devices")),
        ],
    ))
}

/// A difference across ranks read as a total or as one rank's number: the first part whose
/// gate R4 says it is across ranks.
fn across_ranks(results: &[ClaimResult]) -> Option<Finding> {
    let (p, g) = parts(results).find_map(|(_, p)| {
        p.gates
            .iter()
            .find(|g| g.status != GateStatus::Fail && g.finding.key == "gate.r4.across_ranks")
            .map(|g| (p, &g.finding))
    })?;
    Some(Finding::new(
        "mis.across_ranks",
        &[
            ("part", p.id.clone()),
            ("value", shown(p)),
            ("n", arg(g, "n")),
            ("devices", arg(g, "devices")),
        ],
    ))
}

/// Two shares of different denominators side by side in one claim: the first such claim.
fn denominators(set: &ClaimSet, results: &[ClaimResult]) -> Option<Finding> {
    for (claim, r) in set.claims.iter().zip(results) {
        let mut shares: Vec<(String, String)> = Vec::new();
        for (part, p) in claim.parts.iter().zip(&r.parts) {
            if let Some((_, den)) = part.measure.as_ref().and_then(|m| m.value.as_ratio()) {
                let den = den.to_string();
                if !shares.iter().any(|(d, _)| *d == den) {
                    shares.push((den, format!("{} = {}", code(&p.id), shown(p))));
                }
            }
        }
        if shares.len() > 1 {
            let list = crate::i18n::list_arg(shares.into_iter().map(|(_, s)| s));
            return Some(Finding::new("mis.denominators", &[("shares", list)]));
        }
    }
    None
}

/// A throughput multiplier x = 1/(1-f): step time -f is throughput +(x-1).
fn step_vs_throughput(results: &[ClaimResult]) -> Option<Finding> {
    if let Some(p) = parts(results).map(|(_, p)| p).find(|p| {
        p.kind == Kind::Arithmetic && p.formula.as_ref().is_some_and(|f| f.unit == Unit::Times)
    }) && let Some(x) = p.value
        && x.num > 0
        && let one = Rational::int(1)
        && let Some(step) = one.checked_div(x).and_then(|r| one.checked_sub(r))
        && let Some(gain) = x.checked_sub(one)
    {
        return Some(Finding::new(
            "mis.step_vs_throughput",
            &[
                ("part", p.id.clone()),
                ("x", shown(p)),
                ("step", units::percent(step.num, step.den).unwrap_or_default()),
                ("throughput", units::percent(gain.num, gain.den).unwrap_or_default()),
            ],
        ));
    }
    None
}

/// The wait share rests on the shortest duration standing in for transfer.
fn transfer_baseline(evidence: &EvidenceMap) -> Option<Finding> {
    let (e, wait, nccl) =
        evidence.values().filter_map(|e| e.as_ref().ok()).find_map(|e| match &e.values {
            Some(crate::analysis::values::Values::NcclSkew(v)) => {
                Some((e, v.wait_ns?, v.nccl_ns)).filter(|_| v.nccl_ns > 0 && v.wait_share.is_some())
            }
            _ => None,
        })?;
    Some(Finding::new(
        "mis.transfer_baseline",
        &[
            ("share", units::percent(i128::from(wait), i128::from(nccl)).unwrap_or_default()),
            ("devices", crate::scope::format_device_list(&e.scope.devices)),
        ],
    ))
}

/// What a comparison may be read as, part by part: a before/after read as a cause (a
/// comparison bound to a causal part whose experiment is not declared controlled), and a
/// median step time read as throughput when the batch may have changed.
fn comparisons(set: &ClaimSet, results: &[ClaimResult]) -> Vec<Finding> {
    let mut out = Vec::new();
    for (claim, r) in set.claims.iter().zip(results) {
        for (part, p) in claim.parts.iter().zip(&r.parts) {
            let Some(m) = part.measure.as_ref().filter(|m| m.compare.is_some()) else { continue };
            let controlled = part.experiment.as_ref().is_some_and(|e| e.controlled);
            if part.kind == Kind::Causal && !controlled {
                out.push(Finding::new(
                    "mis.ab_uncontrolled",
                    &[("part", format!("{}/{}", r.id, p.id)), ("value", shown(p))],
                ));
            }
            // A median step time read as throughput when the batch may have changed.
            let held_batch = part
                .experiment
                .as_ref()
                .is_some_and(|e| e.held.iter().any(|h| h == "global-batch"));
            let of = m.compare.as_ref().map_or("", |c| c.of.as_str());
            let duration = m.compare.as_ref().is_some_and(|c| {
                crate::analysis::spec(of).is_some_and(|s| {
                    crate::analysis::compare::metric_unit(s, &c.sides[0].value, &c.metric_text)
                        == crate::analysis::Unit::Ns
                })
            });
            if duration && !held_batch {
                out.push(Finding::new(
                    "mis.ab_batch",
                    &[("part", format!("{}/{}", r.id, p.id)), ("value", shown(p))],
                ));
            }
        }
    }
    out
}

/// Open claims read as empty: the claims with a causal part left unverifiable, each naming
/// the evidence that would decide it.
fn hedges(results: &[ClaimResult]) -> Option<Finding> {
    let hedged: Vec<String> = parts(results)
        .filter(|(_, p)| p.kind == Kind::Causal && p.outcome == PartOutcome::Unverifiable)
        .map(|(r, _)| code(&r.id))
        .collect();
    (!hedged.is_empty()).then(|| {
        Finding::new(
            "mis.hedges",
            &[("n", hedged.len().to_string()), ("claims", crate::i18n::list_arg(hedged))],
        )
    })
}

/// An id as a Markdown code span that holds it whatever backticks it has: the findings are
/// Markdown.
fn code(id: &str) -> String {
    crate::markdown::markdown_code_span(id, false)
}

/// The first gate finding with `key` that did not fail.
fn gate_note<'a>(results: &'a [ClaimResult], key: &str) -> Option<&'a Finding> {
    results
        .iter()
        .flat_map(|r| &r.parts)
        .flat_map(|p| &p.gates)
        .find(|g| g.finding.key == key && g.status != GateStatus::Fail)
        .map(|g| &g.finding)
}

/// Argument `name` of finding `f`, or nothing.
fn arg(f: &Finding, name: &str) -> String {
    f.args.get(name).cloned().unwrap_or_default()
}

/// A part's value as displayed, or `n/a`.
fn shown(p: &PartResult) -> String {
    p.formula.as_ref().and_then(|f| f.display.clone()).unwrap_or_else(|| "n/a".into())
}

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
#[expect(clippy::too_many_lines, reason = "predates the 150-line limit; to be cut along its seams")]
pub fn applicable(set: &ClaimSet, results: &[ClaimResult], evidence: &EvidenceMap) -> Vec<Finding> {
    let parts = || results.iter().flat_map(|r| r.parts.iter().map(move |p| (r, p)));
    let mut out = Vec::new();
    let open = results
        .iter()
        .filter(|r| {
            matches!(r.verdict, super::Verdict::PartiallySupported | super::Verdict::Unverifiable)
        })
        .count();
    let refuted = results.iter().filter(|r| r.verdict == super::Verdict::NotSupported).count();
    if open > 0 && refuted == 0 {
        out.push(Finding::new(
            "mis.zero_refuted",
            &[("open", open.to_string()), ("claims", results.len().to_string())],
        ));
    }
    // "It ran" read as "it is optimised": an interpretation supported by a kernel observation.
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
    if let Some((r, p, observed)) = set.claims.iter().zip(results).find_map(|(claim, r)| {
        let observed = kernel_observations(claim, r);
        let p = r
            .parts
            .iter()
            .find(|p| p.kind == Kind::Interpretation && p.outcome == PartOutcome::Supported)?;
        let first = *observed.first()?;
        Some((r, p, first))
    }) {
        let observed = observed
            .formula
            .as_ref()
            .and_then(|f| f.display.clone())
            .map(|d| format!("{} = {d}", code(&observed.id)));
        out.push(Finding::new(
            "mis.presence",
            &[
                ("part", format!("{}/{}", r.id, p.id)),
                ("observed", observed.unwrap_or_else(|| code(&p.id))),
            ],
        ));
    }
    if let Some(g) = gate_note(results, "gate.r1.contain_span") {
        out.push(Finding::new(
            "mis.window_span",
            &[("window_ms", arg(g, "window_ms")), ("span_ms", arg(g, "span_ms"))],
        ));
    }
    if let Some((p, g)) = parts().find_map(|(_, p)| {
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
    }) {
        out.push(Finding::new(
            "mis.device_total",
            &[
                ("part", p.id.clone()),
                ("value", shown(p)),
                ("n", arg(g, "n")),
                ("devices", arg(g, "devices")),
            ],
        ));
    }
    if let Some((p, g)) = parts().find_map(|(_, p)| {
        p.gates
            .iter()
            .find(|g| g.status != GateStatus::Fail && g.finding.key == "gate.r4.across_ranks")
            .map(|g| (p, &g.finding))
    }) {
        out.push(Finding::new(
            "mis.across_ranks",
            &[
                ("part", p.id.clone()),
                ("value", shown(p)),
                ("n", arg(g, "n")),
                ("devices", arg(g, "devices")),
            ],
        ));
    }
    // Two shares of different denominators side by side in one claim.
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
            out.push(Finding::new("mis.denominators", &[("shares", list)]));
            break;
        }
    }
    // A throughput multiplier x = 1/(1-f): step time -f is throughput +(x-1).
    if let Some(p) = parts().map(|(_, p)| p).find(|p| {
        p.kind == Kind::Arithmetic && p.formula.as_ref().is_some_and(|f| f.unit == Unit::Times)
    }) && let Some(x) = p.value
        && x.num > 0
        && let one = Rational::int(1)
        && let Some(step) = one.checked_div(x).and_then(|r| one.checked_sub(r))
        && let Some(gain) = x.checked_sub(one)
    {
        out.push(Finding::new(
            "mis.step_vs_throughput",
            &[
                ("part", p.id.clone()),
                ("x", shown(p)),
                ("step", units::percent(step.num, step.den).unwrap_or_default()),
                ("throughput", units::percent(gain.num, gain.den).unwrap_or_default()),
            ],
        ));
    }
    // The wait share rests on the shortest duration standing in for transfer.
    if let Some((e, wait, nccl)) =
        evidence.values().filter_map(|e| e.as_ref().ok()).find_map(|e| match &e.values {
            Some(crate::analysis::values::Values::NcclSkew(v)) => {
                Some((e, v.wait_ns?, v.nccl_ns)).filter(|_| v.nccl_ns > 0 && v.wait_share.is_some())
            }
            _ => None,
        })
    {
        out.push(Finding::new(
            "mis.transfer_baseline",
            &[
                ("share", units::percent(i128::from(wait), i128::from(nccl)).unwrap_or_default()),
                ("devices", crate::scope::format_device_list(&e.scope.devices)),
            ],
        ));
    }
    // A before/after read as a cause: a comparison bound to a causal part whose experiment is
    // not declared controlled.
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
    // Each misreading once: the first part it applies to stands for the others.
    let mut seen = std::collections::BTreeSet::new();
    out.retain(|f| seen.insert(f.key.clone()));
    let hedged: Vec<String> = parts()
        .filter(|(_, p)| p.kind == Kind::Causal && p.outcome == PartOutcome::Unverifiable)
        .map(|(r, _)| code(&r.id))
        .collect();
    if !hedged.is_empty() {
        out.push(Finding::new(
            "mis.hedges",
            &[("n", hedged.len().to_string()), ("claims", crate::i18n::list_arg(hedged))],
        ));
    }
    out
}

/// The first gate finding with `key` that did not fail.
/// An id as a Markdown code span that holds it whatever backticks it has: the findings are
/// Markdown.
fn code(id: &str) -> String {
    crate::markdown::markdown_code_span(id, false)
}

fn gate_note<'a>(results: &'a [ClaimResult], key: &str) -> Option<&'a Finding> {
    results
        .iter()
        .flat_map(|r| &r.parts)
        .flat_map(|p| &p.gates)
        .find(|g| g.finding.key == key && g.status != GateStatus::Fail)
        .map(|g| &g.finding)
}

fn arg(f: &Finding, name: &str) -> String {
    f.args.get(name).cloned().unwrap_or_default()
}

/// A part's value as displayed, or `n/a`.
fn shown(p: &PartResult) -> String {
    p.formula.as_ref().and_then(|f| f.display.clone()).unwrap_or_else(|| "n/a".into())
}

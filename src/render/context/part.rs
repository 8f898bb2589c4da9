//! The lines of one part of a claim in the report: its scope, the evidence block it reads,
//! and what was said of its number.

use super::*;
use crate::render::RenderError;

/// A part's scope in a few words: its evidence's, a per-device comparison's deciding device's,
/// or a ratio's numerator's (gates R1 and R2 say whether the denominator's is the same).
pub(super) fn scope(
    s: &Inputs,
    claim: &crate::claims::Claim,
    part: &crate::claims::Part,
    p: &crate::verdict::PartResult,
    ev: Option<&crate::analysis::Evidence>,
) -> Result<Option<String>, RenderError> {
    let (t, a) = (s.t, s.a);
    Ok(match (ev, &part.measure) {
        // A comparison judged on each device, spoken for by one of them: that device's.
        (Some(ev), Some(m)) if p.device.is_some() => {
            let d = p.device.expect("guarded");
            let one = crate::analysis::compare::device_evidences(ev).into_iter().find(|x| x.0 == d);
            let scope = short_scope(t, a, one.as_ref().map_or(ev, |x| &x.1), m, false)?;
            Some(format!(
                "{}{}{scope}",
                t.format("scope.device", &args([("device", d.to_string())]))?,
                t.get("ui.colon")?
            ))
        }
        (Some(ev), Some(m)) => Some(short_scope(t, a, ev, m, true)?),
        // A ratio's scope is its numerator's (gates R1 and R2 say whether the denominator's is
        // the same, or why it differs).
        _ => match (&part.ratio, &p.ratio) {
            (Some(ratio), Some(res)) => {
                let m =
                    claim.parts.iter().find(|q| q.id == ratio.of).and_then(|q| q.measure.as_ref());
                let ev = res
                    .of
                    .evidence
                    .as_ref()
                    .and_then(|k| s.evidence(k))
                    .and_then(|e| e.evidence.as_ref());
                match (ev, m) {
                    (Some(ev), Some(m)) => Some(short_scope(t, a, ev, m, true)?),
                    _ => None,
                }
            }
            _ => None,
        },
    })
}

/// The label of the evidence block a part reads (`E1`...), the block added the first time.
pub(super) fn evidence_ref(
    s: &Inputs,
    p: &crate::verdict::PartResult,
    part: &crate::claims::Part,
    entry: Option<&crate::audit::LedgerEntry>,
    ev: Option<&crate::analysis::Evidence>,
    so_far: &mut PartsSoFar,
) -> Result<Option<String>, RenderError> {
    let (t, a) = (s.t, s.a);
    Ok(match (entry, &part.measure) {
        (Some(e), Some(m)) => {
            let at = match so_far.block_keys.iter().position(|k| k == &e.key) {
                Some(i) => i,
                None => {
                    so_far.block_keys.push(e.key.clone());
                    so_far.blocks.push(EvidenceCtx {
                        label: format!("E{}", so_far.blocks.len() + 1),
                        analysis: m.analysis.clone(),
                        scope: evidence_scope(t, a, ev, m)?,
                        identity: ev.and_then(identity_of),
                        gates: Vec::new(),
                        passed: Vec::new(),
                        notes: ev
                            .map(|e| {
                                // Gate R1 already states the span denominator.
                                let r1_span =
                                    p.gates.iter().any(|g| g.finding.key == "gate.r1.contain_span");
                                e.notes
                                    .iter()
                                    .filter(|n| {
                                        !(r1_span && n.finding.key == "note.span_denominator")
                                        // The scope line says the sum.
                                        && n.finding.key != "note.summed_devices"
                                    })
                                    .map(|n| t.finding(&n.finding))
                                    .collect::<Result<Vec<_>, _>>()
                            })
                            .transpose()?
                            .unwrap_or_default(),
                        command: e.command.clone(),
                        command_block: crate::render::shell::layout(
                            &e.argv,
                            crate::render::shell::REPORT_WIDTH,
                        ),
                        error: e.error.clone(),
                    });
                    so_far.blocks.len() - 1
                }
            };
            Some(so_far.blocks[at].label.clone())
        }
        _ => None,
    })
}

/// What the source or the auditor said of a part's number, beside what was measured; None
/// when it matches the auditor's own figure already shown.
pub(super) fn says(
    t: &Strings,
    c: &ClaimIn,
    part: &crate::claims::Part,
    p: &crate::verdict::PartResult,
) -> Result<Option<String>, RenderError> {
    Ok(p.says
        .as_ref()
        .map(|said| {
            let who = match part.says_by {
                crate::claims::Who::Auditor => t.get("ui.says_auditor")?.to_string(),
                crate::claims::Who::Source => t.format(
                    "ui.says_source",
                    &args([(
                        "source",
                        c.source_label
                            .cloned()
                            .unwrap_or_else(|| t.get("ui.source").unwrap_or("").to_string()),
                    )]),
                )?,
            };
            let how = if part.kind == Kind::Arithmetic { "ui.computed" } else { "ui.measured" };
            // A number that matches shows once; a mismatch shows both. The auditor's
            // own figure that matches is the result already shown beside it.
            if said.matches && part.says_by == crate::claims::Who::Auditor {
                return Ok(None);
            }
            Ok::<_, RenderError>(Some(if said.matches {
                format!("{who} {}", said.stated)
            } else {
                format!("{who} {} · {} {}", said.stated, t.get(how)?, said.measured)
            }))
        })
        .transpose()?
        .flatten())
}

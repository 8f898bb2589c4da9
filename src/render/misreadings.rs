//! Common misreadings that apply to an audit, chosen from its verdicts, gates and parts.
//!
//! Each is an i18n pair (`mis.NAME.title`, `mis.NAME.text`); a misreading is listed only when
//! something in this audit could lead a reader into it.

use super::context::MisreadingCtx;
use super::i18n::Strings;
use crate::audit::Audit;
use crate::claims::{Kind, Unit};
use crate::verdict::{GateStatus, PartOutcome};

/// The misreadings that apply, in a fixed order.
pub fn applicable(a: &Audit, t: &Strings) -> Result<Vec<MisreadingCtx>, String> {
    let parts = || a.results.iter().flat_map(|r| r.parts.iter());
    let gate_note = |key: &str| {
        parts().flat_map(|p| &p.gates).any(|g| g.finding.key == key && g.status != GateStatus::Fail)
    };
    let claim_parts = || a.claims.claims.iter().flat_map(|c| c.parts.iter());
    let mut names = Vec::new();
    if !a.summary.open.is_empty()
        && a.summary.counts.get("not_supported").copied().unwrap_or(0) == 0
    {
        names.push("zero_refuted");
    }
    if parts().any(|p| p.kind == Kind::Interpretation && p.outcome == PartOutcome::Supported) {
        names.push("presence");
    }
    if gate_note("gate.r1.contain_span") {
        names.push("window_span");
    }
    if gate_note("gate.r4.summed") || gate_note("gate.r4.summed_unstated") {
        names.push("device_total");
    }
    let denominators = a.claims.claims.iter().any(|c| {
        let mut d: Vec<String> = c
            .parts
            .iter()
            .filter_map(|p| p.measure.as_ref())
            .filter_map(|m| m.value.as_ratio().map(|(_, den)| den.to_string()))
            .collect();
        d.sort();
        d.dedup();
        d.len() > 1
    });
    if denominators {
        names.push("denominators");
    }
    if claim_parts().any(|p| p.kind == Kind::Arithmetic && p.unit == Some(Unit::Times)) {
        names.push("step_vs_throughput");
    }
    if a.ledger.iter().any(|e| e.evidence.as_ref().is_some_and(|e| e.analysis == "nccl-skew")) {
        names.push("transfer_baseline");
    }
    if parts().any(|p| p.kind == Kind::Causal && p.outcome == PartOutcome::Unverifiable) {
        names.push("hedges");
    }
    names
        .into_iter()
        .map(|n| {
            Ok(MisreadingCtx {
                title: t.get(&format!("mis.{n}.title"))?.to_string(),
                text: t.get(&format!("mis.{n}.text"))?.to_string(),
            })
        })
        .collect()
}

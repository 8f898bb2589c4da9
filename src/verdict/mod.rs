//! Judging claims against evidence: gates R1-R4, the R5 rules, the summary.
//!
//! Pure functions, no I/O: a [`ClaimSet`] and the evidence of its queries in, results out.
//! Every reason is a [`Finding`] (an i18n key with arguments), so the same judgement reads
//! the same in every language.

mod gates;
mod misreadings;
pub mod reading;
mod rules;

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;

use crate::analysis::Evidence;
use crate::claims::{Claim, ClaimSet, Kind, PlanId, Text, Unit};
use crate::formula::Rational;

pub use gates::{
    ExperimentCheck, HELD_FACTS, HeldCheck, RunFact, check_experiment, field_quantity, gap_text,
    side_runs,
};
pub use gates::{r1, r2, r3, r4};
pub use misreadings::applicable as misreadings;
pub use rules::{compare_interval, judge, show};

pub use crate::i18n::Finding;

/// The outcome of one gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GateStatus {
    /// Comparable.
    Pass,
    /// Comparable, with a difference the reader must see.
    Note,
    /// Not comparable: the part cannot be judged.
    Fail,
}

/// One gate's result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Gate {
    /// `R1`..`R4`.
    pub gate: &'static str,
    /// Outcome.
    pub status: GateStatus,
    /// Why.
    pub finding: Finding,
}

/// The verdict of a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Evidence of the claim's own kind, comparable scope, condition satisfied.
    Supported,
    /// Lower layers supported, the principal assertion open.
    PartiallySupported,
    /// This evidence cannot answer it.
    Unverifiable,
    /// Comparable evidence contradicts it.
    NotSupported,
}

impl Verdict {
    /// All verdicts in display order.
    pub const ALL: [Verdict; 4] = [
        Verdict::Supported,
        Verdict::PartiallySupported,
        Verdict::Unverifiable,
        Verdict::NotSupported,
    ];

    /// Key used in JSON and i18n.
    pub fn key(self) -> &'static str {
        match self {
            Verdict::Supported => "supported",
            Verdict::PartiallySupported => "partially_supported",
            Verdict::Unverifiable => "unverifiable",
            Verdict::NotSupported => "not_supported",
        }
    }
}

/// The outcome of one part.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PartOutcome {
    /// Gates pass and the condition holds.
    Supported,
    /// A comparison shows the claimed effect, but the experiment is not declared controlled
    /// or a side has few samples: the effect, not the cause.
    PartiallySupported,
    /// Gates pass and the condition fails.
    NotSupported,
    /// Measured and shown, with no condition to judge.
    Reported,
    /// Cannot be decided with this evidence.
    Unverifiable,
    /// The query failed.
    NotEvaluated,
    /// An action: never judged.
    NotJudged,
    /// Arithmetic that holds (never evidence).
    Holds,
    /// Arithmetic that does not hold as stated.
    DoesNotHold,
}

impl PartOutcome {
    /// Key used in JSON and i18n.
    pub fn key(self) -> &'static str {
        match self {
            PartOutcome::Supported => "supported",
            PartOutcome::PartiallySupported => "partially_supported",
            PartOutcome::NotSupported => "not_supported",
            PartOutcome::Reported => "reported",
            PartOutcome::Unverifiable => "unverifiable",
            PartOutcome::NotEvaluated => "not_evaluated",
            PartOutcome::NotJudged => "not_judged",
            PartOutcome::Holds => "holds",
            PartOutcome::DoesNotHold => "does_not_hold",
        }
    }
}

/// A formula with its values.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FormulaResult {
    /// As written.
    pub symbolic: String,
    /// The formula a ratio field stands for (`wait_ns / nccl_ns` for `wait_share`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub definition: Option<String>,
    /// With values substituted, in display units.
    pub substituted: String,
    /// The result in display form (`17.8%`).
    pub display: Option<String>,
    /// The exact result in the unit's base, `[num, den]`.
    pub exact: Option<[String; 2]>,
    /// The unit.
    pub unit: Unit,
    /// Why it could not be evaluated.
    pub error: Option<String>,
}

/// The author's stated number against the measured one.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SaysCheck {
    /// As written.
    pub stated: String,
    /// The measured value at the stated precision.
    pub measured: String,
    /// Whether they agree at the stated precision.
    pub matches: bool,
}

/// A condition and whether it held.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ConditionResult {
    /// The condition, in words (i18n finding).
    pub finding: Finding,
    /// Whether the value satisfies it.
    pub satisfied: bool,
}

/// One part's result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PartResult {
    /// Part id.
    pub id: String,
    /// Kind.
    pub kind: Kind,
    /// The evidence it reads (its query's key in the ledger), if measured.
    pub evidence: Option<PlanId>,
    /// Gates R1-R4, if measured.
    pub gates: Vec<Gate>,
    /// The formula and its value.
    pub formula: Option<FormulaResult>,
    /// The condition.
    pub condition: Option<ConditionResult>,
    /// The stated number check.
    pub says: Option<SaysCheck>,
    /// Outcome.
    pub outcome: PartOutcome,
    /// Why.
    pub reason: Finding,
    /// Evidence that would decide it, when open.
    pub needs: Vec<Text>,
    /// The exact value in base units, for arithmetic that reads it.
    #[serde(skip)]
    pub value: Option<Rational>,
    /// Over a set of windows: the value on each, sorted, as exact `[num, den]`; the part is
    /// judged by the measure's quantifier (`over`, default the lower median).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<[String; 2]>,
    /// A judged ratio: its two operands with their measured values.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio: Option<RatioResult>,
    /// A comparison judged on each device: the device whose comparison speaks for the part
    /// (its value, formula and reason), when it is not the first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<i64>,
}

/// The operands of a judged ratio (`ratio: {of, to}`), as the ledger records them.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RatioResult {
    /// The numerator.
    pub of: RatioOperand,
    /// The denominator.
    pub to: RatioOperand,
    /// The author's reason why the operands' scopes differ, when declared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub differs: Option<Text>,
}

/// One operand of a judged ratio.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RatioOperand {
    /// Its part id.
    pub part: String,
    /// The evidence it reads (its query's key in the ledger).
    pub evidence: Option<PlanId>,
    /// Its measured value in display form (`41.30 ms`), when it has one.
    pub display: Option<String>,
    /// Its exact measured value in the unit's base, `[num, den]`.
    pub exact: Option<[String; 2]>,
}

/// One claim's result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ClaimResult {
    /// Claim id.
    pub id: String,
    /// Verdict.
    pub verdict: Verdict,
    /// Why.
    pub reason: Finding,
    /// The principal part.
    pub principal: String,
    /// Part results in file order.
    pub parts: Vec<PartResult>,
    /// The parts that keep its open item on page 1 and in the brief's decision: those still
    /// open, and any that carries `needs` or `work`, whatever the verdict
    /// (`rules::decide`). Empty: the claim is settled.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub open: Vec<String>,
}

/// The audit's summary.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Summary {
    /// Claims per verdict key.
    pub counts: BTreeMap<String, usize>,
    /// Claims.
    pub claims: usize,
    /// Claims still open (partially supported or unverifiable).
    pub open: Vec<String>,
    /// Gates that failed.
    pub gate_failures: usize,
    /// Stated numbers that disagree with the measurement.
    pub says_mismatches: usize,
    /// Arithmetic that does not hold.
    pub arithmetic_failures: usize,
    /// Queries that failed.
    pub not_evaluated: usize,
}

/// The evidence available to judging: each query's evidence, or why it failed.
pub type EvidenceMap = BTreeMap<PlanId, Result<Evidence, crate::diag::Diagnostic>>;

/// Summarises claim results.
pub fn summarize(results: &[ClaimResult]) -> Summary {
    let mut counts: BTreeMap<String, usize> =
        Verdict::ALL.iter().map(|v| (v.key().to_string(), 0)).collect();
    for r in results {
        *counts.entry(r.verdict.key().into()).or_default() += 1;
    }
    let parts = || results.iter().flat_map(|r| r.parts.iter());
    Summary {
        counts,
        claims: results.len(),
        open: results.iter().filter(|r| !r.open.is_empty()).map(|r| r.id.clone()).collect(),
        gate_failures: parts()
            .flat_map(|p| &p.gates)
            .filter(|g| g.status == GateStatus::Fail)
            .count(),
        says_mismatches: parts().filter(|p| p.says.as_ref().is_some_and(|s| !s.matches)).count(),
        arithmetic_failures: parts().filter(|p| p.outcome == PartOutcome::DoesNotHold).count(),
        not_evaluated: parts().filter(|p| p.outcome == PartOutcome::NotEvaluated).count(),
    }
}

/// Judges every claim.
pub fn judge_all(set: &ClaimSet, evidence: &EvidenceMap) -> Vec<ClaimResult> {
    set.claims.iter().map(|c: &Claim| judge(set, c, evidence)).collect()
}

//! The claims file as written: serde types with positions, unknown fields refused.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_saphyr::Spanned;

use super::{Denominator, Effort, Kind, Per, QuantityKind, Who, Work};
use crate::scope::Semantics;
use crate::trace::NameStyle;

/// A text per language, with its position.
pub type RawText = Spanned<BTreeMap<String, String>>;

/// The whole file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawClaimFile {
    /// Report metadata.
    pub report: RawReport,
    /// Who made the claims.
    #[serde(default)]
    pub sources: BTreeMap<String, RawSource>,
    /// Named traces.
    pub traces: BTreeMap<String, RawTrace>,
    /// Named scopes.
    #[serde(default)]
    pub scopes: BTreeMap<String, RawScope>,
    /// The claims.
    pub claims: Vec<RawClaim>,
    /// The reviewer's R6 note and next step.
    #[serde(default)]
    pub review: Option<RawReview>,
}

/// `report:`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawReport {
    /// Id.
    pub id: Spanned<String>,
    /// Languages.
    pub languages: Spanned<Vec<String>>,
    /// Title.
    pub title: RawText,
    /// The question asked.
    pub question: Option<RawText>,
    /// Author.
    pub author: Option<String>,
    /// Date.
    pub date: Option<String>,
    /// The one-sentence answer, with `{claim/part}` placeholders for measured values.
    pub answer: Option<RawText>,
    /// The decision the report asks its reader for.
    pub decision: Option<RawText>,
}

/// `sources.NAME:`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSource {
    /// Label.
    pub label: RawText,
    /// Note.
    pub note: Option<RawText>,
}

/// `traces.NAME:`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTrace {
    /// Path relative to the claims file.
    pub path: Spanned<String>,
    /// Label.
    pub label: Option<RawText>,
    /// Devices the job has, e.g. `0-7`.
    pub expect_devices: Option<Spanned<String>>,
}

/// `scopes.NAME:`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawScope {
    /// Trace name.
    pub trace: Spanned<String>,
    /// `START:END` in seconds.
    pub window: Option<Spanned<String>>,
    /// `4`, `1-7`, `all`.
    pub devices: Option<Spanned<String>>,
    /// `clip` or `contain`.
    pub semantics: Option<Semantics>,
}

/// `about:` of a claim.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAbout {
    /// The window the claim speaks of.
    pub window: Option<Spanned<String>>,
    /// The devices the claim speaks of.
    pub devices: Option<Spanned<String>>,
    /// `device` or `sum`.
    pub per: Option<Per>,
    /// What the number measures.
    pub quantity: Option<QuantityKind>,
    /// What a share is of.
    pub denominator: Option<Denominator>,
    /// The author's words for the denominator.
    pub denominator_text: Option<RawText>,
    /// Who chose this window and these devices: the claim's source, or the auditor.
    pub chosen_by: Option<Who>,
}

/// One claim.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawClaim {
    /// Id.
    pub id: Spanned<String>,
    /// Source id.
    pub source: Option<Spanned<String>>,
    /// The claim as written.
    pub statement: RawText,
    /// What it speaks about.
    #[serde(default)]
    pub about: RawAbout,
    /// The principal part id.
    pub principal: Option<Spanned<String>>,
    /// Parts.
    pub parts: Vec<RawPart>,
    /// A reviewer's note on this claim (R6).
    pub review: Option<RawText>,
}

/// One part.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPart {
    /// Id.
    pub id: Spanned<String>,
    /// Kind.
    pub kind: Spanned<Kind>,
    /// What the part asserts.
    pub text: Option<RawText>,
    /// Measurement.
    pub measure: Option<RawMeasure>,
    /// Condition.
    pub condition: Option<Spanned<RawCondition>>,
    /// The number stated in prose.
    pub says: Option<Spanned<String>>,
    /// Who stated it: the claim's source (default) or the auditor.
    pub says_by: Option<Who>,
    /// Arithmetic formula.
    pub formula: Option<Spanned<String>>,
    /// Unit of an arithmetic result.
    pub unit: Option<Spanned<String>>,
    /// Parts an interpretation reads.
    #[serde(default)]
    pub from: Vec<Spanned<String>>,
    /// Mapping of an interpretation.
    pub mapping: Option<RawText>,
    /// Evidence that would decide it.
    #[serde(default)]
    pub needs: Vec<RawText>,
    /// The kind of work that collects it.
    #[serde(default)]
    pub work: Vec<Work>,
    /// How long that work takes.
    pub effort: Option<Effort>,
    /// The decision it unblocks.
    pub unblocks: Option<RawText>,
    /// Caveats.
    pub caveats: Option<RawText>,
    /// Note.
    pub note: Option<RawText>,
    /// What this part speaks about, when it differs from the claim's principal assertion.
    pub about: Option<RawAbout>,
}

/// `measure:`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMeasure {
    /// Analysis name.
    pub analysis: Spanned<String>,
    /// Scope name.
    pub scope: Spanned<String>,
    /// Formula over the analysis' fields.
    pub value: Spanned<String>,
    /// Unit of the result.
    pub unit: Option<Spanned<String>>,
    /// Kernel-name substring (kernels).
    #[serde(rename = "match")]
    pub pattern: Option<Spanned<String>>,
    /// Kernel-name regex (kernels).
    pub regex: Option<Spanned<String>>,
    /// Name style (kernels).
    pub names: Option<NameStyle>,
    /// Stream (nccl-skew).
    pub stream: Option<Spanned<String>>,
}

/// `condition:`, exactly one key.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCondition {
    /// `[lo, hi]`, inclusive.
    pub between: Option<Vec<String>>,
    /// `>=`.
    pub at_least: Option<String>,
    /// `<=`.
    pub at_most: Option<String>,
    /// `>`.
    pub above: Option<String>,
    /// `<`.
    pub below: Option<String>,
    /// `{value, tolerance}`.
    pub approx: Option<RawApprox>,
    /// `true`: the value is above zero.
    pub exists: Option<bool>,
}

/// `approx:`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawApprox {
    /// Target.
    pub value: String,
    /// Allowed absolute difference.
    pub tolerance: String,
}

/// `review:`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawReview {
    /// R6 note.
    pub r6: Option<RawText>,
    /// Next step.
    pub next: Option<RawText>,
    /// Reviewer.
    pub reviewer: Option<String>,
    /// When the review was made.
    pub date: Option<String>,
}

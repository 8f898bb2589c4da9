//! The claims file as written: serde types with positions, unknown fields refused.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_saphyr::Spanned;

use super::{Denominator, Effort, Kind, Per, QuantityKind, Who, Work};
use crate::scope::Semantics;

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
    /// Named traces (an answer of an eval may leave them to the eval file).
    #[serde(default)]
    pub traces: BTreeMap<String, RawTrace>,
    /// Named scopes.
    #[serde(default)]
    pub scopes: BTreeMap<String, RawScope>,
    /// The claims.
    pub claims: Vec<RawClaim>,
    /// The reviewer's R6 note and next step.
    #[serde(default)]
    pub review: Option<RawReview>,
    /// The author's prose of a post (the blog profile).
    #[serde(default)]
    pub narrative: Option<super::narrative::RawNarrative>,
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
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTrace {
    /// Path relative to the claims file: one file, a glob, or a list of files and globs (a
    /// trace set).
    pub path: Spanned<RawPaths>,
    /// Label.
    pub label: Option<RawText>,
    /// Devices the job has, e.g. `0-7`.
    pub expect_devices: Option<Spanned<String>>,
    /// Ranks the set should have.
    pub expect_ranks: Option<Spanned<i64>>,
    /// The files of the list or glob are runs of one configuration (each one sample of a
    /// comparison), not the ranks of one job.
    pub runs: Option<Spanned<bool>>,
    /// What a generated or stand-in trace stands for, in the author's words: page 1 says it
    /// where it says the trace is no capture of the job.
    pub stands_for: Option<RawText>,
    /// Where to get the trace when it is not in the repository (public source, commit, path):
    /// shown in the report and in `check`'s error when the file is missing.
    pub obtain: Option<Spanned<String>>,
}

/// A trace's `path:`: one string, or a list of them.
#[derive(Debug, Clone)]
pub enum RawPaths {
    /// One path or glob.
    One(String),
    /// A list of paths or globs.
    Many(Vec<String>),
}

impl<'de> Deserialize<'de> for RawPaths {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<RawPaths, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = RawPaths;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a path, a glob, or a list of paths")
            }
            fn visit_str<E>(self, v: &str) -> Result<RawPaths, E> {
                Ok(RawPaths::One(v.to_string()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut s: A,
            ) -> Result<RawPaths, A::Error> {
                let mut out = Vec::new();
                while let Some(v) = s.next_element::<String>()? {
                    out.push(v);
                }
                Ok(RawPaths::Many(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// `scopes.NAME:`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawScope {
    /// Trace name.
    pub trace: Spanned<String>,
    /// `START:END` in seconds, or `{nvtx: NAME, index: N, on: cpu|gpu, domain: D}`.
    pub window: Option<Spanned<RawWindow>>,
    /// `4`, `1-7`, `all`.
    pub devices: Option<Spanned<String>>,
    /// On a trace set: `0-5`, `all` (ranks by number).
    pub ranks: Option<Spanned<String>>,
    /// `clip` or `contain`.
    pub semantics: Option<Semantics>,
}

/// A scope's `window:`: seconds as text, or the keys of an NVTX window.
#[derive(Debug, Clone)]
pub enum RawWindow {
    /// `START:END`.
    Seconds(String),
    /// The keys of a mapping, as text.
    Keys(Vec<(String, String)>),
}

impl<'de> Deserialize<'de> for RawWindow {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<RawWindow, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = RawWindow;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("`START:END` in seconds, or a mapping with `nvtx`")
            }
            fn visit_str<E>(self, v: &str) -> Result<RawWindow, E> {
                Ok(RawWindow::Seconds(v.to_string()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<RawWindow, A::Error> {
                let mut keys = Vec::new();
                while let Some((k, v)) = m.next_entry::<String, Scalar>()? {
                    keys.push((k, v.0));
                }
                Ok(RawWindow::Keys(keys))
            }
        }
        d.deserialize_any(V)
    }
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
    pub measure: Option<Spanned<RawMeasure>>,
    /// A judged ratio of two measured parts of the claim, instead of a `measure`.
    pub ratio: Option<Spanned<RawRatio>>,
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
    /// The kinds of work that collect it: a kind alone (`ab`), or a step with its own effort
    /// and size (`{kind: ab, effort: days, runs: 4, gpu_hours: 32, people: 1}`).
    #[serde(default)]
    pub work: Vec<Spanned<RawWork>>,
    /// How long that work takes: the effort of each kind given alone.
    pub effort: Option<Effort>,
    /// The decision it unblocks.
    pub unblocks: Option<RawText>,
    /// Caveats.
    pub caveats: Option<RawText>,
    /// Note.
    pub note: Option<RawText>,
    /// What this part speaks about, when it differs from the claim's principal assertion.
    pub about: Option<RawAbout>,
    /// The experiment behind a comparison.
    pub experiment: Option<Spanned<RawExperiment>>,
    /// The proposals `verdict draft` made for this part, not yet reviewed: while the block is
    /// there, validation refuses the file (see [`RawUnreviewed`]).
    pub unreviewed: Option<Spanned<RawUnreviewed>>,
}

/// `ratio:` of a part: the measured value of part `of` over that of part `to`, and the
/// reason their scopes may differ.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRatio {
    /// The numerator: a measured part of the same claim.
    pub of: Spanned<String>,
    /// The denominator: a measured part of the same claim.
    pub to: Spanned<String>,
    /// Why the two parts may measure different traces, windows, semantics or devices.
    pub differs: Option<RawText>,
}

/// A name that reads the same in every language (`Lin`), or a description per language
/// (`{en: the article's author, zh-TW: 文章作者}`).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum RawName {
    /// One name for every language.
    Plain(String),
    /// A text per language.
    Text(RawText),
}

/// One entry of a part's `work`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum RawWork {
    /// A kind of work alone; its effort is the part's `effort`.
    Kind(Work),
    /// A step: a kind of work with its own effort and size.
    Step(RawStep),
}

/// A step of work with its effort and size, as the claims file states them.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawStep {
    /// The kind of work.
    pub kind: Work,
    /// How long it takes.
    pub effort: Option<Effort>,
    /// Runs (captures, A/B runs, profiled runs) it takes.
    pub runs: Option<u32>,
    /// GPU-hours it takes, whole hours.
    pub gpu_hours: Option<u32>,
    /// People it takes.
    pub people: Option<u32>,
}

/// `unreviewed:` of a part: what `verdict draft` read in a prose answer and proposes for the
/// part. Its presence is the marker: a person or an agent binds the part (its kind, a `measure`,
/// a `condition`) and then deletes the block; `check` judges nothing before.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawUnreviewed {
    /// The line of the answer the number is on.
    pub line: Option<u64>,
    /// The sentence, verbatim.
    pub quote: Option<String>,
    /// The number as the sentence writes it (`約 10–30%`).
    pub number: Option<String>,
    /// The cue words that chose the part's kind (none: an observation).
    #[serde(default)]
    pub cues: Vec<String>,
    /// For a range: the condition it proposes once a measure is bound.
    pub condition: Option<RawCondition>,
    /// Candidate measures, best first: each a `measure` without its scope, and the cue word.
    #[serde(default)]
    pub analyses: Vec<RawCandidate>,
    /// Why no analysis of a trace can measure it, when none can.
    pub unmeasurable: Option<String>,
}

/// One candidate measure of an unreviewed part.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCandidate {
    /// The analysis.
    pub analysis: String,
    /// A formula over its fields.
    pub value: String,
    /// The unit of the result.
    pub unit: Option<String>,
    /// A kernel or range name the sentence gives.
    #[serde(rename = "match")]
    pub name_match: Option<String>,
    /// The word of the sentence that suggested it.
    pub cue: Option<String>,
}

/// `experiment:` of a part that binds `compare`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawExperiment {
    /// What was changed.
    pub changed: Option<RawText>,
    /// What was held fixed.
    #[serde(default)]
    pub held: Vec<Spanned<String>>,
    /// Whether the comparison is controlled.
    pub controlled: Option<bool>,
    /// `decrease` or `increase`.
    pub expect: Option<Spanned<String>>,
    /// Why samples inside one capture per side may stand for runs (steps or windows).
    pub within_run: Option<RawText>,
}

/// `measure:`: the analysis, the scope, the formula and its unit, and every other key a
/// parameter of the analysis (checked against the analysis's declaration in validation, so a
/// misspelled one gets "did you mean").
#[derive(Debug)]
pub struct RawMeasure {
    /// Analysis name (required; validation says when it is missing).
    pub analysis: Option<Spanned<String>>,
    /// Scope name (required).
    pub scope: Option<Spanned<String>>,
    /// Formula over the analysis' fields (required).
    pub value: Option<Spanned<String>>,
    /// Unit of the result.
    pub unit: Option<Spanned<String>>,
    /// The other keys, in the file's order of names: the analysis's parameters.
    pub params: Vec<(String, Spanned<String>)>,
}

/// A YAML scalar of any type, as its text (`stream: 56` and `match: flash` alike).
struct Scalar(String);

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Scalar, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Scalar;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a scalar (text or number)")
            }
            fn visit_str<E>(self, v: &str) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_bool<E>(self, v: bool) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for RawMeasure {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<RawMeasure, D::Error> {
        let map: BTreeMap<String, Spanned<Scalar>> = BTreeMap::deserialize(d)?;
        let mut params = Vec::new();
        let (mut analysis, mut scope, mut value, mut unit) = (None, None, None, None);
        for (k, v) in map {
            let v = Spanned::new(v.value.0, v.referenced, v.defined);
            match k.as_str() {
                "analysis" => analysis = Some(v),
                "scope" => scope = Some(v),
                "value" => value = Some(v),
                "unit" => unit = Some(v),
                _ => params.push((k, v)),
            }
        }
        Ok(RawMeasure { analysis, scope, value, unit, params })
    }
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
    /// Reviewer: a name, or a description per language (its position kept here: inside the
    /// untagged enum a text's own is lost).
    pub reviewer: Option<Spanned<RawName>>,
    /// When the review was made.
    pub date: Option<String>,
}

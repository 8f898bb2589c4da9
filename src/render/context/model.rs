//! The shapes a template sees: the render context of one language and every section, row
//! and line in it, each field already text in that language (or author Markdown). Nothing
//! here computes; the builders in the parent fill them.

use super::*;

/// Everything a template sees.
#[derive(Debug, Clone, Serialize)]
pub struct RenderContext {
    /// Language code.
    pub lang: String,
    /// UI strings of that language.
    pub t: BTreeMap<String, String>,
    /// Report metadata.
    pub report: ReportCtx,
    /// `verdict x.y.z`.
    pub tool: String,
    /// The summary for leadership.
    pub summary: SummaryCtx,
    /// Traces with coverage.
    pub traces: Vec<TraceCtx>,
    /// Scopes used.
    pub scopes: Vec<ScopeCtx>,
    /// The verdict table.
    pub table: Vec<RowCtx>,
    /// One section per claim.
    pub claims: Vec<ClaimCtx>,
    /// Misreadings that apply to this audit.
    pub misreadings: Vec<MisreadingCtx>,
    /// Charts (file names relative to the output folder) with captions.
    pub charts: Vec<ChartCtx>,
    /// Commands that reproduce every number.
    pub provenance: Vec<ProvenanceCtx>,
    /// The reviewer's R6 note (Markdown).
    pub r6: Option<String>,
    /// The next step (Markdown).
    pub next: Option<String>,
    /// Who reviewed.
    pub reviewer: Option<String>,
    /// Which sections to show: `full`, `blog` or `brief`.
    pub profile: String,
    /// Page 1: the answer, the bound, the decision, the open items, the conditions.
    pub brief: BriefCtx,
    /// Plain words for the gates and the content kinds.
    pub legend: Vec<KvCtx>,
    /// Provenance facts a postmortem cites: claims file hash, commit, dates, ledger, origin.
    pub provenance_facts: Vec<KvCtx>,
    /// Definitions of the terms and metrics the report uses.
    pub definitions: Vec<KvCtx>,
    /// How to read an A/B comparison (Markdown items), when the audit has one.
    pub ab_reading: Vec<String>,
}

/// What a render adds to the audit: the profile, the date, and facts about the files.
#[derive(Debug, Clone, Default)]
pub struct Meta {
    /// `full`, `blog` or `brief` (empty: `full`).
    pub profile: String,
    /// The render date, `YYYY-MM-DD`.
    pub render_date: Option<String>,
    /// The ledger file written beside the report.
    pub ledger_file: Option<String>,
    /// sha256 of the claims file.
    pub claims_sha256: Option<String>,
    /// The commit that last changed the claims file, when it is in a repository.
    pub vcs: Option<crate::render::provenance::Vcs>,
}

/// A labelled value.
#[derive(Debug, Clone, Serialize)]
pub struct KvCtx {
    /// Label.
    pub key: String,
    /// Value (plain text).
    pub value: String,
    /// Whether the value is code (a hash, a path, a command).
    pub code: bool,
}

/// Page 1.
#[derive(Debug, Clone, Serialize)]
pub struct BriefCtx {
    /// The one-sentence answer, numbers filled in from the evidence (Markdown).
    pub answer: String,
    /// Multipliers computed from measured shares, with their caveats.
    pub bounds: Vec<BoundCtx>,
    /// The author's framing of the decision (Markdown).
    pub decision: Option<String>,
    /// The steps of work the open items need, one per kind of work, cheapest first.
    pub steps: Vec<DecisionStepCtx>,
    /// The runs and GPU-hours the steps add up to, in words (none stated: None).
    pub budget: Option<String>,
    /// Some step runs only if an earlier one leaves its question open: the budget is a most.
    pub gated: bool,
    /// The next step: the cheapest step, in words.
    pub next: Option<String>,
    /// Open items, cheapest first.
    pub open_items: Vec<OpenItemCtx>,
    /// Who claimed what.
    pub sources: Vec<SourceCtx>,
    /// How the audit was made.
    pub conditions: Vec<KvCtx>,
    /// Each trace with its path and origin (not in the brief: its origin notices say it).
    pub trace_conditions: Vec<KvCtx>,
    /// Warnings about the traces' origin (a synthetic trace says so).
    pub origin_warnings: Vec<String>,
}

/// An actionable bound.
#[derive(Debug, Clone, Serialize)]
pub struct BoundCtx {
    /// What it bounds (Markdown, the part's text or its claim's statement).
    pub label: String,
    /// The value: `1.216x`.
    pub value: String,
    /// The formula it comes from, on one line.
    pub formula: String,
    /// Its caveat (Markdown).
    pub caveat: Option<String>,
}

/// One kind of work the open items need, with the effort and size the claims file gives.
#[derive(Debug, Clone, Serialize)]
pub struct DecisionStepCtx {
    /// The kind of work with its effort and size (plain).
    pub text: String,
    /// The open items (1-based, cheapest first) it serves.
    pub items: Vec<usize>,
    /// What it lets the reader decide, in one phrase from the items' `unblocks` (Markdown).
    pub decides: Option<String>,
}

/// An open item.
#[derive(Debug, Clone, Serialize)]
pub struct OpenItemCtx {
    /// The claim's id.
    pub claim: String,
    /// The claim's statement (Markdown).
    pub statement: String,
    /// Verdict label.
    pub verdict: String,
    /// What would decide it (Markdown items).
    pub needs: Vec<String>,
    /// The decision it unblocks (Markdown).
    pub unblocks: Option<String>,
    /// Its steps of work, each with its effort and size, in one phrase (plain).
    pub plan: Option<String>,
}

/// A source of claims.
#[derive(Debug, Clone, Serialize)]
pub struct SourceCtx {
    /// Label (Markdown).
    pub label: String,
    /// Note (Markdown).
    pub note: Option<String>,
    /// How many claims it made.
    pub claims: usize,
    /// The same, in words.
    pub claims_text: String,
}

/// Report metadata.
#[derive(Debug, Clone, Serialize)]
pub struct ReportCtx {
    /// Id.
    pub id: String,
    /// Title (Markdown).
    pub title: String,
    /// The question (Markdown).
    pub question: Option<String>,
    /// Author.
    pub author: Option<String>,
    /// Date.
    pub date: Option<String>,
    /// The claims file.
    pub claims_file: String,
}

/// The summary.
#[derive(Debug, Clone, Serialize)]
pub struct SummaryCtx {
    /// Verdict counts with labels.
    pub counts: Vec<CountCtx>,
    /// The counts in one sentence.
    pub counts_line: String,
    /// Zero refuted is not all correct (or how many stay open).
    pub open_line: Option<String>,
    /// The few numbers that matter.
    pub key_numbers: Vec<KeyNumberCtx>,
    /// Open claims and what would decide them.
    pub open: Vec<OpenCtx>,
    /// Findings (failed gates, mismatched numbers), if any.
    pub findings: Vec<String>,
}

/// One verdict count.
#[derive(Debug, Clone, Serialize)]
pub struct CountCtx {
    /// Verdict key.
    pub key: String,
    /// Label.
    pub label: String,
    /// Count.
    pub n: usize,
}

/// A number that matters.
#[derive(Debug, Clone, Serialize)]
pub struct KeyNumberCtx {
    /// Claim id.
    pub claim: String,
    /// What it is (Markdown, the part's text).
    pub label: String,
    /// The value, or the words for "no number" when the claim has none.
    pub value: String,
    /// Where the value holds: devices, window or whole trace, stream, summed or not.
    pub scope: Option<String>,
    /// The same quantity on every device, when the value is one device's.
    pub spread: Option<String>,
    /// What a share is a share of, as R3 read it from the formula (`the window`).
    pub denominator: Option<String>,
    /// The claim's verdict key.
    pub verdict_key: String,
    /// The claim's verdict label.
    pub verdict: String,
}

/// An open claim.
#[derive(Debug, Clone, Serialize)]
pub struct OpenCtx {
    /// Claim id.
    pub id: String,
    /// Verdict label.
    pub verdict: String,
    /// Evidence that would decide it (Markdown items).
    pub needs: Vec<String>,
}

/// A trace.
#[derive(Debug, Clone, Serialize)]
pub struct TraceCtx {
    /// Name.
    pub name: String,
    /// Label (Markdown).
    pub label: Option<String>,
    /// Path.
    pub path: String,
    /// sha256.
    pub sha256: String,
    /// What the version line is called: "schema / nsys" for an nsys export, "format" for a
    /// PyTorch profiler trace.
    pub schema_label: String,
    /// The version line: the export schema version, or the profiler's format and
    /// `schemaVersion`.
    pub schema: String,
    /// The nsys version beside the schema version, for an nsys export.
    pub nsys_version: Option<String>,
    /// Clock.
    pub time_base: String,
    /// Devices with kernels.
    pub present: String,
    /// Expected devices without kernels.
    pub missing: String,
    /// Kernel rows.
    pub kernels: String,
    /// First start - last end, seconds.
    pub range: String,
    /// Why it could not be read.
    pub error: Option<String>,
    /// What the trace's own metadata says about where it comes from.
    pub origin: Option<String>,
    /// A trace set's files, each with its host and how it was put on the set's clock.
    pub files: Vec<SetFileCtx>,
}

/// A file of a trace set.
#[derive(Debug, Clone, Serialize)]
pub struct SetFileCtx {
    /// Path.
    pub path: String,
    /// Host, or `?`.
    pub host: String,
    /// How it joined the set's clock, with its capture start on that clock.
    pub clock: String,
}

/// A scope.
#[derive(Debug, Clone, Serialize)]
pub struct ScopeCtx {
    /// Name.
    pub name: String,
    /// Trace name.
    pub trace: String,
    /// Requested window.
    pub window: String,
    /// Window semantics.
    pub semantics: String,
    /// Devices.
    pub devices: String,
}

/// A row of the verdict table.
#[derive(Debug, Clone, Serialize)]
pub struct RowCtx {
    /// Claim id.
    pub id: String,
    /// Statement (Markdown).
    pub statement: String,
    /// Evidence summary (plain).
    pub evidence: String,
    /// The claim's principal number with its scope (plain), or the words for "no number".
    pub number: String,
    /// Verdict key.
    pub verdict_key: String,
    /// Verdict label.
    pub verdict: String,
}

/// A claim section.
#[derive(Debug, Clone, Serialize)]
pub struct ClaimCtx {
    /// Id.
    pub id: String,
    /// Statement (Markdown).
    pub statement: String,
    /// Source label (Markdown).
    pub source: Option<String>,
    /// Verdict key.
    pub verdict_key: String,
    /// Verdict label.
    pub verdict: String,
    /// Why.
    pub reason: String,
    /// Reviewer's note (Markdown).
    pub review: Option<String>,
    /// The source's note (Markdown).
    pub source_note: Option<String>,
    /// The evidence its parts read, each once.
    pub evidence: Vec<EvidenceCtx>,
    /// Parts.
    pub parts: Vec<PartCtx>,
    /// The charts of the analyses this claim reads first.
    pub charts: Vec<ChartCtx>,
    /// Its place in the open items of page 1, in words ("open item 2 on page 1").
    pub open_item: Option<String>,
}

/// One query's evidence, shown once per claim; parts refer to it by `label`.
#[derive(Debug, Clone, Serialize)]
pub struct EvidenceCtx {
    /// `E1`, `E2`… within the claim.
    pub label: String,
    /// Analysis name.
    pub analysis: String,
    /// The scope: devices, window, stream, filter.
    pub scope: String,
    /// The identity check of an overlap breakdown, when no part shows it.
    pub identity: Option<String>,
    /// The gates every part reading it shares.
    pub gates: Vec<GateCtx>,
    /// The ids of those that passed without a note (`R3`).
    pub passed: Vec<String>,
    /// Notes from the evidence.
    pub notes: Vec<String>,
    /// The command that reproduces it, on one line.
    pub command: String,
    /// The same command laid out for a page.
    pub command_block: String,
    /// Why the query failed.
    pub error: Option<String>,
}

/// A part.
#[derive(Debug, Clone, Serialize)]
pub struct PartCtx {
    /// Id.
    pub id: String,
    /// Kind key.
    pub kind_key: String,
    /// Kind label.
    pub kind: String,
    /// Whether it is the principal part.
    pub principal: bool,
    /// Text (Markdown).
    pub text: Option<String>,
    /// Outcome key.
    pub outcome_key: String,
    /// Outcome label.
    pub outcome: String,
    /// Why.
    pub reason: String,
    /// Formula block lines: symbolic, substituted, result.
    pub formula: Option<FormulaCtx>,
    /// The identity check of an overlap breakdown.
    pub identity: Option<String>,
    /// Condition text and whether it held.
    pub condition: Option<String>,
    /// Whether the condition held.
    pub condition_ok: bool,
    /// The stated number check.
    pub says: Option<String>,
    /// Whether it matched.
    pub says_ok: bool,
    /// Gates R1-R4.
    pub gates: Vec<GateCtx>,
    /// The gates whose finding differs from the other parts reading the same evidence.
    pub own_gates: Vec<GateCtx>,
    /// The evidence it reads (`E1`).
    pub evidence_ref: Option<String>,
    /// The formula on one line, each step once: `a / b = 1,094.74 / 6,155.75 ms = 17.8%`.
    pub formula_line: Option<String>,
    /// The same quantity on every device, when the value is one device's.
    pub spread: Option<String>,
    /// Its value as a change in words with its size (`fell by 1.6 pp`), when it is a change.
    pub change: Option<String>,
    /// Whether page 1 shows it (a bound) with its note.
    pub in_brief: bool,
    /// The scope line (analysis, window, devices).
    pub scope: Option<String>,
    /// The command that reproduces it, on one line.
    pub command: Option<String>,
    /// The same command laid out for a page, continued between arguments.
    pub command_block: Option<String>,
    /// Mapping of an interpretation (Markdown).
    pub mapping: Option<String>,
    /// Evidence that would decide it (Markdown items).
    pub needs: Vec<String>,
    /// Caveats (Markdown).
    pub caveats: Option<String>,
    /// Note (Markdown).
    pub note: Option<String>,
    /// Notes from the evidence (plain).
    pub evidence_notes: Vec<String>,
    /// A comparison's rank test, outside its formula: `Mann-Whitney U, two-sided, exact: p = 0.20`.
    pub test: Option<String>,
    /// A comparison's experiment as declared and as its traces check it (Markdown).
    pub controlled: Option<String>,
}

/// A formula.
#[derive(Debug, Clone, Serialize)]
pub struct FormulaCtx {
    /// As written.
    pub symbolic: String,
    /// With values.
    pub substituted: String,
    /// Result.
    pub result: String,
}

/// A gate.
#[derive(Debug, Clone, Serialize)]
pub struct GateCtx {
    /// `R1`..`R4`.
    pub id: String,
    /// Gate label.
    pub gate: String,
    /// Status key.
    pub status_key: String,
    /// Status label.
    pub status: String,
    /// Why.
    pub text: String,
}

/// A misreading.
#[derive(Debug, Clone, Serialize)]
pub struct MisreadingCtx {
    /// Title.
    pub title: String,
    /// Text.
    pub text: String,
}

/// A chart.
#[derive(Debug, Clone, Serialize)]
pub struct ChartCtx {
    /// File name.
    pub file: String,
    /// What the Markdown's image links to: the file name, or the absolute address of the
    /// chart's PNG or SVG under `render --image-base`.
    pub md_src: String,
    /// Caption.
    pub caption: String,
    /// The analysis it draws (`overlap`, `nccl-skew`, `kernels`).
    pub kind: String,
    /// The ledger entry it draws, when it is one of the claims' own queries.
    #[serde(skip)]
    pub key: Option<PlanId>,
}

/// A chart as the report receives it: its file, caption and the ledger entry it draws.
#[derive(Debug, Clone)]
pub struct ChartIn {
    /// File name.
    pub file: String,
    /// Caption in the report's language.
    pub caption: String,
    /// The ledger entry it draws, if one of the claims' own.
    pub key: Option<PlanId>,
}

/// One reproducible query.
#[derive(Debug, Clone, Serialize)]
pub struct ProvenanceCtx {
    /// The command, laid out for a page (continued between arguments).
    pub command: String,
    /// The parts whose numbers it gives.
    pub parts: String,
    /// Per-rank detail of a cross-rank query: waits and last arrivals.
    pub details: Vec<String>,
}

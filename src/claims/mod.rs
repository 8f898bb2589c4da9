//! The claims file: what was claimed, split into parts, and what each part binds to.
//!
//! [`load()`] reads YAML (serde-saphyr, unknown fields refused) into the raw model kept with
//! positions; [`validate`] resolves references and parses formulas into a [`ClaimSet`],
//! reporting every error at once as `FILE:LINE:COL: message` with a hint. No trace is read here.

pub mod load;
pub mod narrative;
pub mod raw;
pub mod schema;
pub mod validate;

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::formula::{Expr, Rational};
use crate::scope::{DeviceSel, Semantics, Window};

pub use load::load;

/// Languages a report can be written in.
pub const LANGUAGES: &[&str] = &["zh-TW", "en"];

/// A text in every requested language.
pub type Text = BTreeMap<String, String>;

/// The four kinds of content, plus arithmetic that is checked but is never evidence.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// What the trace shows directly.
    Observation,
    /// A reading of an observation through a stated mapping.
    Interpretation,
    /// A claim about cause and effect.
    Causal,
    /// A next step; never judged.
    Action,
    /// Arithmetic on stated numbers: verified and shown, never evidence.
    Arithmetic,
}

impl Kind {
    /// The evidence layer: observation 1, interpretation 2, causal 3.
    pub fn layer(self) -> u8 {
        match self {
            Kind::Observation => 1,
            Kind::Interpretation => 2,
            Kind::Causal => 3,
            Kind::Action | Kind::Arithmetic => 0,
        }
    }

    /// The name used in files and keys.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Observation => "observation",
            Kind::Interpretation => "interpretation",
            Kind::Causal => "causal",
            Kind::Action => "action",
            Kind::Arithmetic => "arithmetic",
        }
    }
}

/// The unit a value is stated and shown in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, JsonSchema)]
pub enum Unit {
    /// A share, shown as a percentage with one decimal; stored as a fraction.
    Percent,
    /// Percentage points: a difference of two percentages.
    PercentagePoints,
    /// Nanoseconds (stored), shown as ms with two decimals.
    Ms,
    /// Nanoseconds, shown as ns.
    Ns,
    /// Seconds (stored in ns).
    S,
    /// A count.
    Count,
    /// A multiplier such as a speedup, shown with three decimals and `x`.
    Times,
    /// A plain ratio, three decimals.
    Ratio,
    /// Bytes, exact.
    Bytes,
    /// Decimal gigabytes per second (10^9 bytes per second), which is bytes per ns: stored as
    /// bytes per ns, so `bytes / busy_ns` is GB/s exactly.
    GigabytesPerSecond,
}

impl Unit {
    /// Parses `%`, `pp`, `ms`, `ns`, `s`, `count`, `x`, `ratio`, `bytes` (or `B`), `GB/s`.
    pub fn parse(s: &str) -> Option<Unit> {
        Some(match s.trim() {
            "%" | "percent" => Unit::Percent,
            "pp" | "percentage points" => Unit::PercentagePoints,
            "ms" => Unit::Ms,
            "ns" => Unit::Ns,
            "s" => Unit::S,
            "count" | "" => Unit::Count,
            "x" | "×" => Unit::Times,
            "ratio" => Unit::Ratio,
            "bytes" | "B" => Unit::Bytes,
            "GB/s" => Unit::GigabytesPerSecond,
            _ => return None,
        })
    }

    /// How it is written.
    pub fn symbol(self) -> &'static str {
        match self {
            Unit::Percent => "%",
            Unit::PercentagePoints => "pp",
            Unit::Ms => "ms",
            Unit::Ns => "ns",
            Unit::S => "s",
            Unit::Count => "count",
            Unit::Times => "x",
            Unit::Ratio => "ratio",
            Unit::Bytes => "bytes",
            Unit::GigabytesPerSecond => "GB/s",
        }
    }

    /// Whether values in `self` and `other` can be compared after conversion.
    pub fn compatible(self, other: Unit) -> bool {
        use Unit::*;
        matches!((self, other), (Ms | Ns | S, Ms | Ns | S))
            || self == other
            || matches!((self, other), (Ratio, Times) | (Times, Ratio))
    }

    /// Multiplier from this unit to its stored base (ns for times, fraction for %).
    pub fn to_base(self) -> Rational {
        match self {
            Unit::Percent | Unit::PercentagePoints => {
                Rational::new(1, 100).unwrap_or(Rational::int(1))
            }
            Unit::Ms => Rational::int(1_000_000),
            Unit::S => Rational::int(1_000_000_000),
            _ => Rational::int(1),
        }
    }

    /// Decimals a measured value is shown with.
    pub fn decimals(self) -> u32 {
        match self {
            Unit::Percent | Unit::PercentagePoints => 1,
            Unit::Ms => 2,
            Unit::S => 3,
            Unit::Times | Unit::Ratio | Unit::GigabytesPerSecond => 3,
            Unit::Ns | Unit::Count | Unit::Bytes => 0,
        }
    }
}

impl fmt::Display for Unit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.symbol())
    }
}

/// A number as the author wrote it, with its unit and precision.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Quantity {
    /// The text as written.
    pub text: String,
    /// The value in the unit's stored base.
    #[serde(skip)]
    pub value: Rational,
    /// The unit.
    pub unit: Unit,
    /// Decimals written.
    pub decimals: u32,
}

impl Quantity {
    /// Parses `17.8%`, `140`, `1.216x`, `6,155.75 ms`, `3 pp`.
    pub fn parse(text: &str, default_unit: Unit) -> Option<Quantity> {
        let t = text.trim();
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == ',' || c == '-' || c == '+'))
            .unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let unit = if unit.trim().is_empty() { default_unit } else { Unit::parse(unit)? };
        let n = Rational::parse_decimal(num)?;
        let decimals = num.split_once('.').map_or(0, |(_, f)| f.len() as u32);
        Some(Quantity {
            text: t.to_string(),
            value: n.checked_mul(unit.to_base())?,
            unit,
            decimals,
        })
    }
}

/// The interval `[value - tolerance, value + tolerance]` of an `approx` condition, exactly;
/// None when a bound does not fit exact arithmetic (validation refuses such a condition).
pub fn approx_bounds(value: &Quantity, tolerance: &Quantity) -> Option<(Rational, Rational)> {
    Some((value.value.checked_sub(tolerance.value)?, value.value.checked_add(tolerance.value)?))
}

/// What a claim speaks about, for gates R1-R4.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct About {
    /// The window the claim speaks of, if it names one.
    pub window: Option<Window>,
    /// The devices the claim speaks of.
    pub devices: Option<Vec<i64>>,
    /// Per device or summed over devices.
    pub per: Option<Per>,
    /// The quantity the claimed number measures.
    pub quantity: Option<QuantityKind>,
    /// The denominator the claim's share is of.
    pub denominator: Option<Denominator>,
    /// The author's wording of the denominator, shown verbatim.
    pub denominator_text: Option<Text>,
    /// Who chose the window and devices: the claim's own scope, or the auditor's choice.
    pub chosen_by: Who,
}

/// Who stated a number or chose a scope.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Who {
    /// The claim's source (the answer being audited).
    #[default]
    Source,
    /// The auditor, who chose it to check the claim.
    Auditor,
}

/// The kind of work that collects the evidence an open part needs, cheapest first.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Work {
    /// Read a configuration or a log.
    Config,
    /// Another query over the trace at hand.
    Analysis,
    /// A new or fixed capture (NVTX markers, a missing device).
    Capture,
    /// A kernel-level profile with Nsight Compute.
    Ncu,
    /// Controlled before/after runs.
    Ab,
}

impl Work {
    /// The name used in files and keys.
    pub fn as_str(self) -> &'static str {
        match self {
            Work::Config => "config",
            Work::Analysis => "analysis",
            Work::Capture => "capture",
            Work::Ncu => "ncu",
            Work::Ab => "ab",
        }
    }
}

/// A step of work an open part needs: its kind, effort and size, as the claims file states
/// them (a kind given alone takes the part's `effort` and no size).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Step {
    /// The kind of work.
    pub kind: Work,
    /// How long it takes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effort: Option<Effort>,
    /// Runs it takes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs: Option<u32>,
    /// GPU-hours it takes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_hours: Option<u32>,
    /// People it takes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub people: Option<u32>,
}

/// An effort class, as the claims file states it.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Effort {
    /// Minutes.
    Minutes,
    /// Hours.
    Hours,
    /// Days.
    Days,
    /// Weeks.
    Weeks,
}

impl Effort {
    /// The name used in files and keys.
    pub fn as_str(self) -> &'static str {
        match self {
            Effort::Minutes => "minutes",
            Effort::Hours => "hours",
            Effort::Days => "days",
            Effort::Weeks => "weeks",
        }
    }
}

/// Per device or summed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Per {
    /// One device's number.
    Device,
    /// A total over the devices in scope.
    Sum,
}

/// What a claimed number measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum QuantityKind {
    /// Wall-clock time (interval unions) or a share of it.
    WallTime,
    /// Summed kernel durations.
    KernelTime,
    /// Occurrences.
    Count,
    /// Reduction of step time.
    StepTimeReduction,
    /// Gain in throughput (a multiplier).
    ThroughputGain,
    /// A number of bytes (moved or set), in `bytes`.
    Bytes,
    /// Bytes per unit of time (bytes over a copy or busy time), in `GB/s`.
    Bandwidth,
}

/// What a claimed share is a share of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Denominator {
    /// The window (one step, say): wall time.
    Window,
    /// NCCL busy wall time (union of NCCL kernels).
    NcclBusy,
    /// Compute busy wall time.
    ComputeBusy,
    /// Summed NCCL kernel durations.
    NcclKernelTime,
    /// Summed kernel durations.
    KernelTime,
    /// Idle time: the window's wall time with no kernel.
    Idle,
}

/// A named scope: trace, window, devices, semantics.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Scope {
    /// Its name in the file.
    pub name: String,
    /// The trace it reads.
    pub trace: String,
    /// The window, if any (None for an NVTX window until the trace is read).
    pub window: Option<Window>,
    /// The window as written.
    pub window_text: Option<String>,
    /// A window taken from NVTX ranges of the trace, resolved when the trace is read.
    pub nvtx: Option<crate::analysis::nvtx::NvtxWindow>,
    /// The devices.
    #[serde(skip)]
    pub devices: DeviceSel,
    /// How the window selects kernels.
    pub semantics: Semantics,
}

/// A declared trace.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TraceDecl {
    /// Its name in the file.
    pub name: String,
    /// The path as written (relative to the claims file).
    pub path: String,
    /// The path resolved against the claims file's folder (a set: its first file).
    #[serde(skip)]
    pub resolved: PathBuf,
    /// For a trace set (a list or a glob): every file, resolved, sorted. Its scopes select
    /// ranks, numbered over the files in this order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub set: Option<Vec<PathBuf>>,
    /// For a trace set: its paths and globs as written, resolved against the claims file's
    /// folder (unexpanded), so a command names the set as the file does.
    #[serde(skip)]
    pub patterns: Option<Vec<PathBuf>>,
    /// A label.
    pub label: Option<Text>,
    /// Devices the job has.
    pub expect_devices: Option<Vec<i64>>,
    /// Ranks a set should have.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expect_ranks: Option<usize>,
    /// For one run of a trace declared with `runs: true`: the declared name (this trace is
    /// `NAME#i`, the i-th file of its list or glob).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_of: Option<String>,
    /// What a generated or stand-in trace stands for, in the author's words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stands_for: Option<Text>,
    /// Where to get the trace when it is not in the repository.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub obtain: Option<String>,
}

/// A measurement a part binds to.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Measure {
    /// The analysis.
    pub analysis: String,
    /// The scope name.
    pub scope: String,
    /// The formula over the analysis' fields, as written.
    pub value_text: String,
    /// The parsed formula.
    #[serde(skip)]
    pub value: Expr,
    /// The unit of the result.
    pub unit: Unit,
    /// The analysis's parameters as written, `(name, text)`, in the analysis's order.
    pub args: Vec<(String, String)>,
    /// The query: the scope's window, semantics and devices with `args` applied, parsed by
    /// the same code as the command line's options.
    #[serde(skip)]
    pub params: crate::analysis::Params,
    /// For `compare`: the two sides and what is compared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compare: Option<Box<Compare>>,
    /// Over an analysis with per-rank rows: one rank's row (`rank:`), or every rank's judged
    /// by a declared reduction (`over_ranks:`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ranks: Option<RankSel>,
    /// Over a set of windows: how their values decide the part (`over:`); None is the
    /// default, [`Over::LowerMedian`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub over: Option<Over>,
}

/// How the values of a set of windows decide a part (`over:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Over {
    /// The condition holds on every window.
    All,
    /// The condition holds on at least one window.
    Any,
    /// The median is judged: the mean of the two middle values for an even count.
    Median,
    /// The lower median is judged: the middle value, the lower of the two for an even count
    /// (the default, a value some window had).
    LowerMedian,
}

impl Over {
    /// Every quantifier, in the order the docs list them.
    pub const ALL: [Over; 4] = [Over::All, Over::Any, Over::Median, Over::LowerMedian];

    /// The word in a claims file.
    pub fn as_str(self) -> &'static str {
        match self {
            Over::All => "all",
            Over::Any => "any",
            Over::Median => "median",
            Over::LowerMedian => "lower-median",
        }
    }

    /// Parses the word of a claims file.
    pub fn parse(s: &str) -> Option<Over> {
        Over::ALL.into_iter().find(|o| o.as_str() == s)
    }
}

/// Which per-rank rows a measure reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RankSel {
    /// One rank: by number, or by its label over a trace set (`host:pid/devN`).
    One(String),
    /// Every rank of the scope, the formula evaluated on each.
    Every(Reduce),
}

/// How the per-rank values of `over_ranks:` decide the part.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Reduce {
    /// The condition holds on every rank.
    All,
    /// The condition holds on at least one rank.
    Any,
    /// The largest value over ranks is judged.
    Max,
    /// The smallest value over ranks is judged.
    Min,
}

impl Reduce {
    /// The word in a claims file.
    pub fn as_str(self) -> &'static str {
        match self {
            Reduce::All => "all",
            Reduce::Any => "any",
            Reduce::Max => "max",
            Reduce::Min => "min",
        }
    }

    /// Parses the word of a claims file.
    pub fn parse(s: &str) -> Option<Reduce> {
        [Reduce::All, Reduce::Any, Reduce::Max, Reduce::Min].into_iter().find(|r| r.as_str() == s)
    }
}

/// A `compare` measure: side A (the measure's scope) against side B (`versus`), on one metric
/// of another analysis.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Compare {
    /// The analysis each side runs.
    pub of: String,
    /// The metric, a formula over its fields, as written.
    pub metric_text: String,
    /// Side B's scope.
    pub versus: String,
    /// Equal splits of each side's window, one sample each.
    pub split: Option<u32>,
    /// The bootstrap's seed.
    pub seed: u64,
    /// How far apart the two sides' median window lengths may be, as a share of the longer,
    /// and still be "the same length" for gate R1 (`same_length`, default 1%).
    pub same_length: Quantity,
    /// The declared unit of sampling (`sample`): `run`, `step` or `window`.
    pub sample: crate::analysis::compare::SampleUnit,
    /// The query of each side: `of` over the side's scope, the metric as its value (over
    /// runs, the scope names the runs' declared trace and only `runs` are run).
    #[serde(skip)]
    pub sides: [Measure; 2],
    /// A side over runs (a trace declared with `runs: true`): the query of each run.
    #[serde(skip)]
    pub runs: [Vec<Measure>; 2],
    /// A per-device analysis over several devices: the sides' queries on each device, each
    /// compared and judged on its own.
    #[serde(skip)]
    pub devices: Vec<(i64, [Measure; 2])>,
}

impl Compare {
    /// Every query the comparison reads: its two sides, each run of a side over runs, and
    /// each device's sides of a comparison over several devices.
    pub fn queries(&self) -> Vec<&Measure> {
        // Over several devices, the sides themselves (several devices of a per-device
        // analysis) are never run: each device's are.
        // Over runs, the sides' scopes name the runs' declared trace, which is no trace of
        // its own: each run's query is run.
        let mut out: Vec<&Measure> = if self.devices.is_empty() && self.runs[0].is_empty() {
            self.sides.iter().collect()
        } else {
            Vec::new()
        };
        out.extend(self.runs.iter().flatten());
        out.extend(self.devices.iter().flat_map(|(_, s)| s.iter()));
        out
    }
}

/// What was changed between the two sides of a comparison, what was held fixed, and what
/// the author expects: what lets a comparison decide a causal part.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Experiment {
    /// What was changed.
    pub changed: Option<Text>,
    /// What was held fixed.
    pub held: Vec<String>,
    /// Whether the author declares the comparison controlled (only the change differs).
    pub controlled: bool,
    /// The expected direction of the change (B against A).
    pub expect: Option<Direction>,
    /// The author's reason why samples inside one capture per side (steps or windows) may
    /// stand for runs; without it such samples cap a causal part at partially supported.
    pub within_run: Option<Text>,
}

/// The direction of an expected change, B against A.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// B below A.
    Decrease,
    /// B above A.
    Increase,
}

/// The things an experiment may hold fixed.
pub const HELD: &[&str] = &[
    "checkpoint",
    "global-batch",
    "micro-batch",
    "sequence-length",
    "data",
    "warm-up",
    "software",
    "hardware",
    "steps",
    "seed",
    "parallelism",
    "precision",
    "model",
];

/// A condition on a measured value (in the unit's stored base).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub enum Condition {
    /// lo <= v <= hi.
    Between(Quantity, Quantity),
    /// v >= x.
    AtLeast(Quantity),
    /// v <= x.
    AtMost(Quantity),
    /// v > x.
    Above(Quantity),
    /// v < x.
    Below(Quantity),
    /// |v - x| <= tolerance.
    Approx(Quantity, Quantity),
    /// v > 0.
    Exists,
}

/// A judged ratio: the measured value of part `of` over that of part `to`, both parts of the
/// same claim that bind a `measure` (docs/claims.md, "A ratio of two measures").
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Ratio {
    /// The numerator's part id.
    pub of: String,
    /// The denominator's part id.
    pub to: String,
    /// Why the two parts may measure different traces, windows, semantics or devices: with
    /// it, gates R1 and R2 note the difference instead of failing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub differs: Option<Text>,
}

impl Part {
    /// Whether the part is judged on a measured value: it binds a `measure` or a `ratio`.
    pub fn is_measured(&self) -> bool {
        self.measure.is_some() || self.ratio.is_some()
    }

    /// Whether its value is a change with a direction: a comparison's `delta`, `change` or
    /// `pooled_change` (after against before), or arithmetic whose last step is a difference.
    pub fn is_change(&self) -> bool {
        match (&self.measure, &self.formula) {
            (Some(m), _) => {
                m.compare.is_some()
                    && matches!(m.value_text.trim(), "delta" | "change" | "pooled_change")
            }
            (None, Some(crate::formula::Expr::Bin(_, crate::formula::Op::Sub, _))) => true,
            _ => false,
        }
    }
}

/// One part of a claim.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Part {
    /// Id, unique within the claim.
    pub id: String,
    /// Kind.
    pub kind: Kind,
    /// What the part asserts, in words.
    pub text: Option<Text>,
    /// The measurement, for a measurable part.
    pub measure: Option<Measure>,
    /// A judged ratio of two measured parts of the claim, instead of a measure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio: Option<Ratio>,
    /// The condition that decides it.
    pub condition: Option<Condition>,
    /// The number the author states in prose.
    pub says: Option<Quantity>,
    /// Who stated it.
    pub says_by: Who,
    /// Arithmetic formula (arithmetic parts), over literals and other parts' values.
    pub formula_text: Option<String>,
    /// Parsed arithmetic formula.
    #[serde(skip)]
    pub formula: Option<Expr>,
    /// Unit of an arithmetic result.
    pub unit: Option<Unit>,
    /// Parts an interpretation reads.
    pub from: Vec<String>,
    /// The mapping an interpretation relies on.
    pub mapping: Option<Text>,
    /// Evidence that would decide an open part.
    pub needs: Vec<Text>,
    /// The steps of work that collect it, each with its kind, effort and size.
    pub work: Vec<Step>,
    /// The effort the file gives the part as a whole (the effort of a kind given alone).
    pub effort: Option<Effort>,
    /// The decision it unblocks.
    pub unblocks: Option<Text>,
    /// Caveats shown with the value.
    pub caveats: Option<Text>,
    /// A note.
    pub note: Option<Text>,
    /// What this part speaks about (gates R1-R4); None: the claim's `about` for the principal
    /// part, and the claim's window and devices only for the others.
    pub about: Option<About>,
    /// The experiment behind a comparison (a part that binds `compare`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub experiment: Option<Experiment>,
    /// Line in the claims file.
    pub line: u32,
    /// Column of its id in the claims file (where a CI annotation points); not in the ledger.
    #[serde(skip)]
    pub column: u32,
}

/// A claim.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Claim {
    /// Id, unique in the file.
    pub id: String,
    /// Who claimed it (a source id).
    pub source: Option<String>,
    /// The claim as written.
    pub statement: Text,
    /// What it speaks about.
    pub about: About,
    /// The part whose verdict is the claim's.
    pub principal: String,
    /// The parts.
    pub parts: Vec<Part>,
    /// A reviewer's note (R6), verbatim.
    pub review: Option<Text>,
    /// Line in the claims file.
    pub line: u32,
    /// Column of its id in the claims file (where a CI annotation points); not in the ledger.
    #[serde(skip)]
    pub column: u32,
}

/// A source of claims.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Source {
    /// Id.
    pub id: String,
    /// Label.
    pub label: Text,
    /// Note.
    pub note: Option<Text>,
}

/// Report metadata.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Report {
    /// Id, used in output file names.
    pub id: String,
    /// Languages.
    pub languages: Vec<String>,
    /// Title.
    pub title: Text,
    /// The question that was asked (context for R6).
    pub question: Option<Text>,
    /// Author.
    pub author: Option<String>,
    /// Date as written.
    pub date: Option<String>,
    /// The one-sentence answer, with `{claim/part}` placeholders for measured values.
    pub answer: Option<Text>,
    /// The decision the report asks its reader for.
    pub decision: Option<Text>,
}

/// The reviewer's R6 judgement for the whole audit.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct Review {
    /// The R6 note.
    pub r6: Option<Text>,
    /// The next step.
    pub next: Option<Text>,
    /// Who reviewed.
    pub reviewer: Option<Text>,
    /// When the review was made.
    pub date: Option<String>,
}

/// A validated claims file.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ClaimSet {
    /// The file, as given.
    pub file: String,
    /// Report metadata.
    pub report: Report,
    /// Sources.
    pub sources: Vec<Source>,
    /// Traces.
    pub traces: Vec<TraceDecl>,
    /// Scopes by name.
    pub scopes: BTreeMap<String, Scope>,
    /// Claims in file order.
    pub claims: Vec<Claim>,
    /// Review.
    pub review: Review,
    /// The author's prose of a post: read by the blog profile, not evidence, so not in the
    /// ledger.
    #[serde(skip_serializing)]
    pub narrative: Option<narrative::Narrative>,
}

/// The identity of one query a claims file needs: the trace its scope reads, the analysis,
/// the scope and the measure's own parameters. Measures with one identity are one query, run
/// once; the planner files its evidence under it and the judge and the report find it by it.
/// It is written (the ledger's `key`, a part's `evidence`) as
/// `TRACE/ANALYSIS/SCOPE[/NAME=VALUE...]`, and made only from a measure
/// ([`ClaimSet::plan_id`]), or for the queries the report adds beside the measures': a
/// compared side over its whole span ([`PlanId::names`]) and a chart's context
/// ([`PlanId::chart_context`]).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PlanId {
    /// The text it is written as, which also orders it.
    text: String,
    /// What the query is for.
    purpose: Purpose,
}

/// What a planned query is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Purpose {
    /// A part's measure.
    Measure,
    /// A compared side over its whole span, for the per-name deltas.
    Names,
    /// The every-device context of a chart.
    ChartContext,
}

impl PlanId {
    /// The text the ledger writes.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The query of a compared side (this one) over its whole span, for the per-name deltas:
    /// `KEY/names`.
    pub fn names(&self) -> PlanId {
        PlanId { text: format!("{}/names", self.text), purpose: Purpose::Names }
    }

    /// Whether it is a compared side's whole-span query ([`PlanId::names`]).
    pub fn is_names(&self) -> bool {
        self.purpose == Purpose::Names
    }

    /// The every-device context query of a chart over `scope`: `TRACE/ANALYSIS/SCOPE`.
    pub fn chart_context(trace: &str, analysis: &str, scope: &str) -> PlanId {
        PlanId { text: format!("{trace}/{analysis}/{scope}"), purpose: Purpose::ChartContext }
    }
}

impl fmt::Display for PlanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for PlanId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl JsonSchema for PlanId {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "PlanId".into()
    }

    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        String::json_schema(g)
    }

    fn inline_schema() -> bool {
        true
    }
}

impl ClaimSet {
    /// The identity of the query a measure needs, shared by the planner, the judge and the
    /// report.
    pub fn plan_id(&self, m: &Measure) -> PlanId {
        let trace = self.scopes.get(&m.scope).map_or("", |s| s.trace.as_str());
        let mut text = format!("{trace}/{}/{}", m.analysis, m.scope);
        for (name, value) in &m.args {
            text += &format!("/{name}={value}");
        }
        PlanId { text, purpose: Purpose::Measure }
    }

    /// Refuses a language the file gives no texts in.
    pub fn require_language(&self, lang: &str) -> Result<(), crate::Hinted> {
        if self.report.languages.iter().any(|l| l == lang) {
            return Ok(());
        }
        Err(crate::Hinted::new(
            format!(
                "language `{lang}` is not in the claims file's `report.languages` ({})",
                self.report.languages.join(", ")
            ),
            "pick one of the languages the claims file provides texts for",
        ))
    }

    /// A trace by name.
    pub fn trace(&self, name: &str) -> Option<&TraceDecl> {
        self.traces.iter().find(|t| t.name == name)
    }
}

/// One problem in a claims file, with its position.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// Line (1-based; 0 when unknown).
    pub line: u32,
    /// Column (1-based; 0 when unknown).
    pub column: u32,
    /// What is wrong.
    pub message: String,
    /// What to do.
    pub hint: Option<String>,
}

/// Errors loading a claims file: every problem found, in file order.
#[derive(Debug, Clone, thiserror::Error)]
pub struct ClaimsError {
    /// The file.
    pub file: String,
    /// The problems.
    pub problems: Vec<Problem>,
}

impl fmt::Display for ClaimsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let [p] = self.problems.as_slice()
            && p.line == 0
        {
            // The file itself cannot be read: one line that names it, then the hint.
            f.write_str(&p.message)?;
            if let Some(h) = &p.hint {
                write!(f, "\n  hint: {h}")?;
            }
            return Ok(());
        }
        let n = self.problems.len();
        write!(f, "{} problem{} in `{}`", n, if n == 1 { "" } else { "s" }, self.file)?;
        for p in &self.problems {
            write!(f, "\n{}:{}:{}: {}", self.file, p.line, p.column, p.message)?;
            if let Some(h) = &p.hint {
                write!(f, "\n  hint: {h}")?;
            }
        }
        Ok(())
    }
}

/// What a `{claim/part}` placeholder of `report.answer` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Show {
    /// The value with its scope: `17.8% (device 4, window …)`.
    Scoped,
    /// The value alone.
    Value,
    /// The same quantity on every device of the window: `13.1–20.7% across devices 1-7`.
    Spread,
    /// A change in words with its size: `fell by 1.6 pp`, `rose by 11.4 pp`.
    Change,
    /// The scope alone: `device 4, window …`, for a text that puts the value in words.
    Scope,
}

/// A `{claim/part}` in an answer text, or with `:value`, `:spread`, `:change` or `:scope`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placeholder {
    /// Byte range in the text, braces included.
    pub range: std::ops::Range<usize>,
    /// Claim id.
    pub claim: String,
    /// Part id.
    pub part: String,
    /// What it shows.
    pub show: Show,
}

/// The placeholders of a text, in order; `Err` names the first one that is malformed.
pub fn placeholders(text: &str) -> Result<Vec<Placeholder>, String> {
    let mut out = Vec::new();
    let mut rest = 0;
    while let Some(open) = text[rest..].find('{').map(|i| rest + i) {
        let Some(close) = text[open..].find('}').map(|i| open + i) else {
            return Err(format!("`{}` has no closing `}}`", &text[open..]));
        };
        let inner = &text[open + 1..close];
        let (path, show) = match inner.split_once(':') {
            None => (inner, Show::Scoped),
            Some((p, "value")) => (p, Show::Value),
            Some((p, "spread")) => (p, Show::Spread),
            Some((p, "change")) => (p, Show::Change),
            Some((p, "scope")) => (p, Show::Scope),
            Some((_, other)) => {
                return Err(format!(
                    "`{{{inner}}}`: `{other}` is not `value`, `spread`, `change` or `scope`"
                ));
            }
        };
        let Some((claim, part)) = path.split_once('/') else {
            return Err(format!("`{{{inner}}}` is not `{{claim/part}}`"));
        };
        out.push(Placeholder {
            range: open..close + 1,
            claim: claim.trim().to_string(),
            part: part.trim().to_string(),
            show,
        });
        rest = close + 1;
    }
    Ok(out)
}

#[cfg(test)]
mod placeholder_tests {
    use super::*;

    #[test]
    fn placeholders_are_found_with_their_form() {
        let p = placeholders("a {c/p} b {c/q:value} {d/e:spread}.").unwrap();
        let got: Vec<(usize, usize, &str, &str, Show)> = p
            .iter()
            .map(|x| (x.range.start, x.range.end, x.claim.as_str(), x.part.as_str(), x.show))
            .collect();
        assert_eq!(
            got,
            [
                (2, 7, "c", "p", Show::Scoped),
                (10, 21, "c", "q", Show::Value),
                (22, 34, "d", "e", Show::Spread)
            ]
        );
    }

    #[test]
    fn malformed_placeholders_are_refused() {
        assert!(placeholders("a {c/p").is_err());
        assert!(placeholders("a {cp}").is_err());
        assert!(placeholders("a {c/p:sum}").is_err());
        assert_eq!(placeholders("no braces").unwrap(), []);
    }
}

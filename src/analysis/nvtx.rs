//! NVTX range statistics, and the attribution of GPU kernels to the NVTX ranges that enclose
//! their launch.
//!
//! Pure functions over [`NvtxRanges`], [`Launches`] and a kernel scan: range durations grouped
//! by name (ns), and per range name the kernels attributed to it (count, summed GPU time in ns,
//! GPU span, exact share of the devices' kernel time). Its inputs come from `NVTX_EVENTS`,
//! `CUPTI_ACTIVITY_KIND_RUNTIME` and the kernel table's `correlationId` and `globalPid`; it
//! reads no trace itself, and counts every kernel it cannot attribute under its reason instead
//! of dropping it.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap, VecDeque};

use regex::Regex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use serde_json::json;

use super::{
    AnalysisSpec, Context, Evidence, Field, FieldKind, NvtxData, Params, QueryError, ScopeRule,
    Table, Unit, quantiles_of, select,
};
use crate::formula::Rational;
use crate::scope::{Semantics, Window};
use crate::trace::Kernels;
use crate::trace::nvtx::{Domain, LaunchKey, LaunchKeys, Launches, NvtxRanges};

mod evidence;
mod windows;

pub use windows::*;

/// Errors of the NVTX computations.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NvtxError {
    /// The kernels were scanned without their launch keys.
    #[error("the kernel scan holds no launch keys (it was read without them)")]
    LaunchKeysNotRead,
    /// A sum of nanoseconds does not fit in 64 bits.
    #[error("the sum of {what} overflows 64-bit nanoseconds")]
    Overflow {
        /// What was being summed.
        what: &'static str,
    },
    /// A name pattern does not compile.
    #[error("invalid regex `{pattern}` ({reason})")]
    BadRegex {
        /// The pattern.
        pattern: String,
        /// The compiler's message.
        reason: String,
    },
}

impl NvtxError {
    /// A hint on what to do about it.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            NvtxError::LaunchKeysNotRead => {
                "scan the kernels with `Kernels::load_with_launch_keys` before attributing them".into()
            }
            NvtxError::BadRegex { .. } => {
                "the pattern uses Rust regex syntax; escape special characters, or match a plain substring".into()
            }
            NvtxError::Overflow { .. } => super::OVERFLOW_HINT.into(),
        })
    }
}

/// How range names are normalised before they are grouped, matched and reported.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
pub enum NameRule {
    /// Drops the `, seq = N` and `, op_id = N` parts that PyTorch's NVTX emission appends to
    /// each operator call, so that `aten::mm, seq = 12, op_id = 345` and `aten::mm, op_id = 9`
    /// both group as `aten::mm`.
    ///
    /// A part is dropped only when it has exactly that form: `, ` then `seq = ` or `op_id = `,
    /// one or more decimal digits, then the end of the name or the next `, `. Every other part
    /// stays, so `, sizes = [[2, 3]]` (recorded shapes) still tells calls apart.
    #[default]
    StripPytorchIds,
    /// Names exactly as recorded.
    Verbatim,
}

impl NameRule {
    /// The name under this rule.
    pub fn apply(self, name: &str) -> Cow<'_, str> {
        match self {
            NameRule::Verbatim => Cow::Borrowed(name),
            NameRule::StripPytorchIds => strip_pytorch_ids(name),
        }
    }

    /// The name used on the command line and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            NameRule::StripPytorchIds => "strip_pytorch_ids",
            NameRule::Verbatim => "verbatim",
        }
    }
}

fn strip_pytorch_ids(name: &str) -> Cow<'_, str> {
    const KEYS: [&str; 2] = [", seq = ", ", op_id = "];
    let mut out = String::new();
    let (mut copied_to, mut from) = (0, 0);
    while let Some(off) = name[from..].find(", ") {
        let at = from + off;
        let tail = &name[at..];
        let part = KEYS.iter().find_map(|key| {
            let after = tail.strip_prefix(key)?;
            let digits = after.bytes().take_while(u8::is_ascii_digit).count();
            let next = &after[digits..];
            (digits > 0 && (next.is_empty() || next.starts_with(", ")))
                .then_some(key.len() + digits)
        });
        match part {
            Some(len) => {
                out.push_str(&name[copied_to..at]);
                copied_to = at + len;
                from = at + len;
            }
            None => from = at + 2,
        }
    }
    if copied_to == 0 {
        Cow::Borrowed(name)
    } else {
        out.push_str(&name[copied_to..]);
        Cow::Owned(out)
    }
}

/// How a range name is selected; it is matched against the normalised name.
#[derive(Debug, Clone)]
pub enum NameMatch {
    /// The whole name.
    Exact(String),
    /// A part of the name (case-sensitive).
    Substring(String),
    /// A regular expression (Rust syntax), found anywhere in the name unless anchored.
    Regex(Regex),
}

impl NameMatch {
    /// Compiles a regular expression.
    pub fn regex(pattern: &str) -> Result<NameMatch, NvtxError> {
        Regex::new(pattern)
            .map(NameMatch::Regex)
            .map_err(|e| NvtxError::BadRegex { pattern: pattern.into(), reason: e.to_string() })
    }

    /// Whether a (normalised) name matches.
    pub fn matches(&self, name: &str) -> bool {
        match self {
            NameMatch::Exact(s) => name == s,
            NameMatch::Substring(s) => name.contains(s.as_str()),
            NameMatch::Regex(r) => r.is_match(name),
        }
    }
}

/// A domain, by `domainId` or by name (`default`, a registered name, or `domain #N`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DomainSel {
    /// `domainId` (the same id may name different domains in different processes).
    Id(i64),
    /// The domain's name.
    Name(String),
}

impl DomainSel {
    fn matches(&self, d: &Domain) -> bool {
        match self {
            DomainSel::Id(id) => d.id == Some(*id),
            DomainSel::Name(name) => &d.name == name,
        }
    }
}

/// Which ranges take part. Every set criterion must hold.
#[derive(Debug, Clone, Default)]
pub struct RangeFilter {
    /// The normalised name matches.
    pub name: Option<NameMatch>,
    /// The range's domain is one of these.
    pub domains: Option<Vec<DomainSel>>,
    /// The range's process id (decoded from `globalTid`) is one of these.
    pub pids: Option<Vec<i64>>,
    /// The range's thread id (decoded from `globalTid`) is one of these.
    pub tids: Option<Vec<i64>>,
    /// The range's process key (`globalTid >> 24`: in a trace set, tagged by file) is one of
    /// these: the processes a device scope selects ([`scope_processes`]).
    pub processes: Option<Vec<i64>>,
}

/// Names grouped under a [`NameRule`], with per-range candidacy under a [`RangeFilter`],
/// computed once per distinct name and domain.
struct Grouping<'a> {
    ranges: &'a NvtxRanges,
    rule: NameRule,
    filter: &'a RangeFilter,
    group_of_name: Vec<Option<u32>>,
    group_ok: Vec<bool>,
    groups: Vec<String>,
    group_ids: HashMap<String, u32>,
    domain_ok: Vec<bool>,
}

impl<'a> Grouping<'a> {
    fn new(ranges: &'a NvtxRanges, rule: NameRule, filter: &'a RangeFilter) -> Grouping<'a> {
        let domain_ok = ranges
            .domains()
            .iter()
            .map(|d| filter.domains.as_ref().is_none_or(|sel| sel.iter().any(|s| s.matches(d))))
            .collect();
        Grouping {
            ranges,
            rule,
            filter,
            group_of_name: vec![None; ranges.names().len()],
            group_ok: Vec::new(),
            groups: Vec::new(),
            group_ids: HashMap::new(),
            domain_ok,
        }
    }

    /// The group of range `i`.
    fn group(&mut self, i: usize) -> u32 {
        let name = self.ranges.name[i] as usize;
        if let Some(g) = self.group_of_name[name] {
            return g;
        }
        let text = self.rule.apply(&self.ranges.names()[name]).into_owned();
        let g = match self.group_ids.get(&text) {
            Some(&g) => g,
            None => {
                let g = self.groups.len() as u32;
                self.group_ok.push(self.filter.name.as_ref().is_none_or(|m| m.matches(&text)));
                self.group_ids.insert(text.clone(), g);
                self.groups.push(text);
                g
            }
        };
        self.group_of_name[name] = Some(g);
        g
    }

    /// Whether range `i` takes part.
    fn candidate(&mut self, i: usize) -> bool {
        let r = self.ranges;
        if !self.domain_ok[r.domain[i] as usize] {
            return false;
        }
        if let Some(pids) = &self.filter.pids
            && !r.pid(i).is_some_and(|p| pids.contains(&p))
        {
            return false;
        }
        if let Some(tids) = &self.filter.tids
            && !r.tid(i).is_some_and(|t| tids.contains(&t))
        {
            return false;
        }
        if let Some(keys) = &self.filter.processes
            && !r.global_tid[i].is_some_and(|g| keys.contains(&crate::trace::nvtx::process_of(g)))
        {
            return false;
        }
        let g = self.group(i);
        self.group_ok[g as usize]
    }
}

/// Parameters of [`range_stats`].
#[derive(Debug, Clone, Default)]
pub struct StatsParams {
    /// Which ranges count.
    pub filter: RangeFilter,
    /// How names are normalised.
    pub rule: NameRule,
    /// Only ranges in this window (None: all loaded ranges).
    pub window: Option<Window>,
    /// How the window selects ranges: `clip` keeps ranges that intersect it, with their
    /// durations clipped to it; `contain` keeps ranges fully inside it, unclipped.
    pub semantics: Semantics,
    /// In a window of a split, its start when it is not the first: ranges that start before
    /// it belong to an earlier window and are left out here.
    pub counted_from: Option<i64>,
}

/// Duration statistics of the ranges of one (normalised) name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RangeStats {
    /// The normalised name.
    pub name: String,
    /// Ranges.
    pub count: u64,
    /// Sum of durations (ns); nested ranges each count in full.
    pub total_ns: i64,
    /// Shortest duration (ns).
    pub min_ns: i64,
    /// Lower median duration (ns): the `ceil(n/2)`-th smallest.
    pub median_ns: i64,
    /// Nearest-rank 90th percentile duration (ns): the `ceil(0.9 n)`-th smallest.
    pub p90_ns: i64,
    /// Longest duration (ns).
    pub max_ns: i64,
    /// Of them, ranges without an end, closed at [`RangeSummary::closed_at_ns`].
    pub unterminated: u64,
    /// Distinct recorded names merged into this one by the name rule.
    pub variants: u64,
    /// Names of the domains the ranges belong to, sorted.
    pub domains: Vec<String>,
}

/// NVTX range statistics grouped by normalised name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RangeSummary {
    /// The name rule applied.
    pub rule: NameRule,
    /// The window, if any.
    pub window: Option<Window>,
    /// How the window selected ranges.
    pub semantics: Semantics,
    /// Ranges counted.
    pub ranges: u64,
    /// Of them, ranges without an end, closed at `closed_at_ns`.
    pub unterminated: u64,
    /// Where unterminated ranges were closed: the largest timestamp of the NVTX table.
    pub closed_at_ns: Option<i64>,
    /// Ranges cut at a window edge (clip).
    pub clipped: u64,
    /// The trace has no `NVTX_EVENTS` table.
    pub nvtx_table_absent: bool,
    /// One row per name, by total time descending, then count descending, then name.
    pub rows: Vec<RangeStats>,
    /// Every counted range pooled, whatever its name: (total, min, lower median, p90, max)
    /// in ns; None when no range counts.
    pub pooled: Option<Pooled>,
}

/// Duration statistics of every counted range together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Pooled {
    /// Sum of durations (ns).
    pub total_ns: i64,
    /// Shortest (ns).
    pub min_ns: i64,
    /// Lower median (ns).
    pub median_ns: i64,
    /// Nearest-rank 90th percentile (ns).
    pub p90_ns: i64,
    /// Longest (ns).
    pub max_ns: i64,
}

/// Duration statistics of the selected ranges, grouped by normalised name.
pub fn range_stats(ranges: &NvtxRanges, params: &StatsParams) -> Result<RangeSummary, NvtxError> {
    let mut grouping = Grouping::new(ranges, params.rule, &params.filter);
    struct Acc {
        durations: Vec<i64>,
        unterminated: u64,
        variants: BTreeSet<u32>,
        domains: BTreeSet<String>,
    }
    let mut acc: HashMap<u32, Acc> = HashMap::new();
    let (mut counted, mut unterminated, mut clipped) = (0u64, 0u64, 0u64);
    for i in 0..ranges.len() {
        if !grouping.candidate(i) {
            continue;
        }
        let (s, e) = (ranges.start[i], ranges.end[i]);
        // In a split, a range belongs to the window where it starts, clipped to it.
        if params.counted_from.is_some_and(|t| s < t) {
            continue;
        }
        let (s, e) = match params.window {
            None => (s, e),
            Some(w) => match params.semantics {
                Semantics::Clip => {
                    if !(e > w.start_ns && s < w.end_ns) {
                        continue;
                    }
                    let c = (s.max(w.start_ns), e.min(w.end_ns));
                    if c != (s, e) {
                        clipped += 1;
                    }
                    c
                }
                Semantics::Contain => {
                    if !(s >= w.start_ns && e <= w.end_ns) {
                        continue;
                    }
                    (s, e)
                }
            },
        };
        counted += 1;
        let g = grouping.group(i);
        let a = acc.entry(g).or_insert_with(|| Acc {
            durations: Vec::new(),
            unterminated: 0,
            variants: BTreeSet::new(),
            domains: BTreeSet::new(),
        });
        a.durations.push(e - s);
        if ranges.unterminated[i] {
            a.unterminated += 1;
            unterminated += 1;
        }
        a.variants.insert(ranges.name[i]);
        if !a.domains.contains(&ranges.domain_of(i).name) {
            a.domains.insert(ranges.domain_of(i).name.clone());
        }
    }
    let mut all: Vec<i64> = acc.values().flat_map(|a| a.durations.iter().copied()).collect();
    all.sort_unstable();
    let pooled = match quantiles_of(&all) {
        None => None,
        Some(q) => Some(Pooled {
            total_ns: checked_sum(all.iter().copied(), "range durations")?,
            min_ns: q.min,
            median_ns: q.median,
            p90_ns: q.p90,
            max_ns: q.max,
        }),
    };
    let mut rows = Vec::with_capacity(acc.len());
    for (g, mut a) in acc {
        a.durations.sort_unstable();
        let total = checked_sum(a.durations.iter().copied(), "range durations")?;
        // A group exists because a range joined it.
        let Some(q) = quantiles_of(&a.durations) else { continue };
        let (min, median, p90, max) = (q.min, q.median, q.p90, q.max);
        rows.push(RangeStats {
            name: grouping.groups[g as usize].clone(),
            count: a.durations.len() as u64,
            total_ns: total,
            min_ns: min,
            median_ns: median,
            p90_ns: p90,
            max_ns: max,
            unterminated: a.unterminated,
            variants: a.variants.len() as u64,
            domains: a.domains.into_iter().collect(),
        });
    }
    rows.sort_by(|a, b| {
        b.total_ns.cmp(&a.total_ns).then(b.count.cmp(&a.count)).then_with(|| a.name.cmp(&b.name))
    });
    Ok(RangeSummary {
        rule: params.rule,
        window: params.window,
        semantics: params.semantics,
        ranges: counted,
        unterminated,
        closed_at_ns: if unterminated > 0 { ranges.closed_at_ns } else { None },
        clipped,
        nvtx_table_absent: ranges.table_absent,
        rows,
        pooled,
    })
}

fn checked_sum(v: impl IntoIterator<Item = i64>, what: &'static str) -> Result<i64, NvtxError> {
    v.into_iter().try_fold(0i64, |acc, x| acc.checked_add(x)).ok_or(NvtxError::Overflow { what })
}

/// Which of the ranges enclosing a launch a kernel is attributed to.
///
/// The ranges of one thread are ordered by (start ascending, end descending, table order);
/// the enclosing ranges of a launch are those with `start <= launch start < end`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
pub enum Nesting {
    /// The last enclosing range in that order: the latest start; on equal starts the shorter;
    /// on equal start and end, the later row of the table.
    #[default]
    Innermost,
    /// The first enclosing range in that order: the earliest start; on equal starts the
    /// longer; on equal start and end, the earlier row of the table.
    Outermost,
}

impl Nesting {
    /// The name used on the command line and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Nesting::Innermost => "innermost",
            Nesting::Outermost => "outermost",
        }
    }
}

/// Parameters of [`attribute`].
#[derive(Debug, Clone, Default)]
pub struct AttributionParams {
    /// The devices whose kernels are attributed (nsys `deviceId`).
    pub devices: Vec<i64>,
    /// Only kernels in this window (None: all scanned kernels of the devices).
    pub window: Option<Window>,
    /// How the window selects kernels, on their GPU interval: `clip` keeps kernels that
    /// intersect it and counts only their time inside it; `contain` keeps kernels fully inside
    /// it.
    pub semantics: Semantics,
    /// Innermost or outermost enclosing range.
    pub nesting: Nesting,
    /// How range names are normalised.
    pub rule: NameRule,
    /// Which ranges can receive kernels; the others are ignored, as if not recorded.
    pub ranges: RangeFilter,
    /// In a window of a split, its start when it is not the first: kernels that start before
    /// it belong to an earlier window, where they are counted; here they add only their time.
    pub counted_from: Option<i64>,
}

/// Why a kernel was not attributed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// The kernel table of this export has no `correlationId` or `globalPid` column.
    NoCorrelationColumns,
    /// The kernel's row holds NULL in `correlationId` or `globalPid`.
    NoCorrelationValue,
    /// No runtime/driver API record has the kernel's (process, `correlationId`): the call was
    /// not traced, lies outside the exported time slice, or the runtime table is absent.
    NoLaunchRecord,
    /// The launch was found, but no selected range on its thread encloses its start.
    NoEnclosingRange,
}

/// What became of one kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Attributed to this row of the [`NvtxRanges`].
    Range(usize),
    /// Not attributed, for this reason.
    Unattributed(Reason),
}

/// One selected kernel and its outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct KernelOutcome {
    /// Row in the kernel scan.
    pub kernel: usize,
    /// Start of its GPU interval (ns), clipped to the window under `clip`.
    pub start_ns: i64,
    /// End of its GPU interval (ns), clipped to the window under `clip`.
    pub end_ns: i64,
    /// Whether it is counted in this window: always, but in a split, where a kernel that
    /// started in an earlier window adds only its time here.
    pub counted: bool,
    /// Its launch record's row in the [`Launches`], when found.
    pub launch: Option<usize>,
    /// The range it is attributed to, or why not.
    pub outcome: Outcome,
}

/// The (process, `correlationId`) keys of the kernels an attribution would select: the launch
/// records to read with [`Launches::load`]. Empty when the scan holds no launch keys.
pub fn needed_launches(kernels: &Kernels, params: &AttributionParams) -> Vec<LaunchKey> {
    let mut keys: Vec<LaunchKey> = params
        .devices
        .iter()
        .flat_map(|&d| {
            select(kernels, kernels.device_rows(d), params.window, params.semantics, false)
        })
        .filter_map(|(i, _, _)| kernels.launch_key(i))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// Attributes each selected kernel: kernel -> its launch record by (process, `correlationId`)
/// -> the ranges on the launch's thread (`globalTid`) with `start <= launch start < end` ->
/// the innermost or outermost of them.
///
/// The ranges must cover the launches' times: load them with [`Launches::start_bounds`] as
/// bounds, or unbounded. One sweep per thread over its ranges (sorted) and its launches
/// (sorted by start), with a deque of the ranges that have started: O((k + r) log(k + r)) for
/// k kernels and r ranges, also for start/end ranges that cross instead of nesting.
pub fn attribute_each(
    kernels: &Kernels,
    launches: &Launches,
    ranges: &NvtxRanges,
    params: &AttributionParams,
) -> Result<Vec<KernelOutcome>, NvtxError> {
    let mut out: Vec<KernelOutcome> = params
        .devices
        .iter()
        .flat_map(|&d| {
            select(kernels, kernels.device_rows(d), params.window, params.semantics, true)
        })
        .map(|(kernel, start_ns, end_ns)| KernelOutcome {
            kernel,
            start_ns,
            end_ns,
            counted: params.counted_from.is_none_or(|t| kernels.start[kernel] >= t),
            launch: None,
            outcome: Outcome::Unattributed(Reason::NoLaunchRecord),
        })
        .collect();
    match &kernels.launch_keys {
        LaunchKeys::NotRead => return Err(NvtxError::LaunchKeysNotRead),
        LaunchKeys::Absent { .. } => {
            for o in &mut out {
                o.outcome = Outcome::Unattributed(Reason::NoCorrelationColumns);
            }
            return Ok(out);
        }
        LaunchKeys::Read { .. } => {}
    }
    // (thread, launch start, index into `out`) of every kernel whose launch was found.
    let mut queries: Vec<(i64, i64, usize)> = Vec::new();
    for (j, o) in out.iter_mut().enumerate() {
        let Some(key) = kernels.launch_key(o.kernel) else {
            o.outcome = Outcome::Unattributed(Reason::NoCorrelationValue);
            continue;
        };
        if let Some(l) = launches.find(key) {
            o.launch = Some(l);
            o.outcome = Outcome::Unattributed(Reason::NoEnclosingRange);
            queries.push((launches.global_tid[l], launches.start[l], j));
        }
    }
    queries.sort_unstable();
    // Only the ranges the window keeps can receive kernels, as the range statistics count
    // them: under clip those that intersect it, under contain those inside it. A range that
    // ended before the window (on the CPU) is not kept, even if a kernel it launched runs in
    // the window; that kernel goes to the kept range that encloses its launch, if any.
    let kept = |r: usize| {
        let (s, e) = (ranges.start[r], ranges.end[r]);
        match (params.window, params.semantics) {
            (None, _) => true,
            (Some(w), Semantics::Clip) => e > w.start_ns && s < w.end_ns,
            (Some(w), Semantics::Contain) => s >= w.start_ns && e <= w.end_ns,
        }
    };
    let mut grouping = Grouping::new(ranges, params.rule, &params.ranges);
    let mut active: VecDeque<usize> = VecDeque::new();
    let mut q = 0;
    while q < queries.len() {
        let thread = queries[q].0;
        let q_end = q + queries[q..].partition_point(|x| x.0 == thread);
        let rows = ranges.thread_rows(thread);
        let mut next = rows.start;
        active.clear();
        for &(_, t, j) in &queries[q..q_end] {
            // Rows are in (start, end descending, table order) order, so the deque stays
            // in that order; a range that has ended by `t` has ended for every later launch.
            while next < rows.end && ranges.start[next] <= t {
                if ranges.end[next] > t && kept(next) && grouping.candidate(next) {
                    active.push_back(next);
                }
                next += 1;
            }
            let ended = |r: &usize| ranges.end[*r] <= t;
            let pick = match params.nesting {
                Nesting::Innermost => {
                    while active.back().is_some_and(ended) {
                        active.pop_back();
                    }
                    active.back()
                }
                Nesting::Outermost => {
                    while active.front().is_some_and(ended) {
                        active.pop_front();
                    }
                    active.front()
                }
            };
            if let Some(&r) = pick {
                out[j].outcome = Outcome::Range(r);
            }
        }
        q = q_end;
    }
    Ok(out)
}

/// An exact fraction `num / den`, unreduced so that both terms stay readable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Share {
    /// Numerator (ns).
    pub num: i64,
    /// Denominator (ns).
    pub den: i64,
}

impl Share {
    /// The fraction in lowest terms (None when the denominator is 0).
    pub fn rational(&self) -> Option<Rational> {
        Rational::new(i128::from(self.num), i128::from(self.den))
    }
}

/// A number of kernels and their summed GPU time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    /// Kernels.
    pub kernels: u64,
    /// Sum of their durations (ns).
    pub kernel_ns: i64,
}

impl Tally {
    fn add(&mut self, ns: i64, counted: bool) -> Result<(), NvtxError> {
        self.kernels += u64::from(counted);
        self.kernel_ns = self
            .kernel_ns
            .checked_add(ns)
            .ok_or(NvtxError::Overflow { what: "kernel durations" })?;
        Ok(())
    }
}

/// Kernels not attributed, by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Unattributed {
    /// See [`Reason::NoCorrelationColumns`].
    pub no_correlation_columns: Tally,
    /// See [`Reason::NoCorrelationValue`].
    pub no_correlation_value: Tally,
    /// See [`Reason::NoLaunchRecord`].
    pub no_launch_record: Tally,
    /// See [`Reason::NoEnclosingRange`].
    pub no_enclosing_range: Tally,
}

impl Unattributed {
    /// The tally of one reason.
    pub fn get(&self, reason: Reason) -> Tally {
        match reason {
            Reason::NoCorrelationColumns => self.no_correlation_columns,
            Reason::NoCorrelationValue => self.no_correlation_value,
            Reason::NoLaunchRecord => self.no_launch_record,
            Reason::NoEnclosingRange => self.no_enclosing_range,
        }
    }

    fn get_mut(&mut self, reason: Reason) -> &mut Tally {
        match reason {
            Reason::NoCorrelationColumns => &mut self.no_correlation_columns,
            Reason::NoCorrelationValue => &mut self.no_correlation_value,
            Reason::NoLaunchRecord => &mut self.no_launch_record,
            Reason::NoEnclosingRange => &mut self.no_enclosing_range,
        }
    }

    /// All reasons together.
    pub fn total(&self) -> Tally {
        let all = [
            self.no_correlation_columns,
            self.no_correlation_value,
            self.no_launch_record,
            self.no_enclosing_range,
        ];
        Tally {
            kernels: all.iter().map(|t| t.kernels).sum(),
            kernel_ns: all.iter().map(|t| t.kernel_ns).sum(),
        }
    }
}

/// The kernels attributed to the ranges of one (normalised) name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AttributedName {
    /// The normalised range name.
    pub name: String,
    /// Kernels attributed.
    pub kernels: u64,
    /// Sum of their durations (ns): GPU time, not wall time.
    pub kernel_ns: i64,
    /// Start of the first of them (ns).
    pub first_start_ns: i64,
    /// End of the last of them (ns).
    pub last_end_ns: i64,
    /// `last_end_ns - first_start_ns` (ns): the GPU span, gaps included.
    pub span_ns: i64,
    /// `kernel_ns` over the kernel time of all selected kernels of the devices.
    pub share: Share,
    /// Distinct ranges that received kernels.
    pub ranges: u64,
}

/// GPU kernel time attributed to NVTX range names, with every kernel accounted for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Attribution {
    /// Innermost or outermost.
    pub nesting: Nesting,
    /// The name rule applied.
    pub rule: NameRule,
    /// The devices covered.
    pub devices: Vec<i64>,
    /// The window, if any.
    pub window: Option<Window>,
    /// How the window selected kernels.
    pub semantics: Semantics,
    /// Every selected kernel: the attributed ones plus the unattributed ones.
    pub selected: Tally,
    /// Kernels attributed to a range.
    pub attributed: Tally,
    /// `attributed.kernel_ns / selected.kernel_ns`.
    pub attributed_share: Share,
    /// Kernels not attributed, by reason.
    pub unattributed: Unattributed,
    /// Kernel-table columns missing in this export (then every kernel is unattributed).
    pub missing_columns: Vec<String>,
    /// The trace has no runtime API table.
    pub runtime_table_absent: bool,
    /// The trace has no `NVTX_EVENTS` table.
    pub nvtx_table_absent: bool,
    /// Launch records whose (process, `correlationId`) occurs more than once in the runtime
    /// table beyond the first (the earliest call is used).
    pub duplicate_launches: u64,
    /// Launch records nested on their thread inside the call with the same key (the outermost
    /// call is the launch; see [`Launches::nested`]).
    pub nested_launches: u64,
    /// Ranges that received kernels and had no end (closed at `closed_at_ns`).
    pub unterminated_ranges: u64,
    /// Where unterminated ranges were closed: the largest timestamp of the NVTX table.
    pub closed_at_ns: Option<i64>,
    /// One row per range name, by kernel time descending, then kernels descending, then name.
    pub rows: Vec<AttributedName>,
}

/// Attributes the selected kernels of the devices to NVTX range names (see
/// [`attribute_each`]) and sums them per name.
pub fn attribute(
    kernels: &Kernels,
    launches: &Launches,
    ranges: &NvtxRanges,
    params: &AttributionParams,
) -> Result<Attribution, NvtxError> {
    let each = attribute_each(kernels, launches, ranges, params)?;
    let mut grouping = Grouping::new(ranges, params.rule, &params.ranges);
    let (mut selected, mut attributed) = (Tally::default(), Tally::default());
    let mut unattributed = Unattributed::default();
    struct Acc {
        tally: Tally,
        first: i64,
        last: i64,
        ranges: BTreeSet<usize>,
    }
    let mut acc: HashMap<u32, Acc> = HashMap::new();
    let mut used_unterminated: BTreeSet<usize> = BTreeSet::new();
    for o in &each {
        let ns = o.end_ns - o.start_ns;
        selected.add(ns, o.counted)?;
        match o.outcome {
            Outcome::Unattributed(reason) => unattributed.get_mut(reason).add(ns, o.counted)?,
            Outcome::Range(r) => {
                attributed.add(ns, o.counted)?;
                if ranges.unterminated[r] {
                    used_unterminated.insert(r);
                }
                let a = acc.entry(grouping.group(r)).or_insert(Acc {
                    tally: Tally::default(),
                    first: o.start_ns,
                    last: o.end_ns,
                    ranges: BTreeSet::new(),
                });
                a.tally.add(ns, o.counted)?;
                a.first = a.first.min(o.start_ns);
                a.last = a.last.max(o.end_ns);
                a.ranges.insert(r);
            }
        }
    }
    let mut rows: Vec<AttributedName> = acc
        .into_iter()
        .map(|(g, a)| AttributedName {
            name: grouping.groups[g as usize].clone(),
            kernels: a.tally.kernels,
            kernel_ns: a.tally.kernel_ns,
            first_start_ns: a.first,
            last_end_ns: a.last,
            span_ns: a.last - a.first,
            share: Share { num: a.tally.kernel_ns, den: selected.kernel_ns },
            ranges: a.ranges.len() as u64,
        })
        .collect();
    rows.sort_by(|a, b| {
        b.kernel_ns
            .cmp(&a.kernel_ns)
            .then(b.kernels.cmp(&a.kernels))
            .then_with(|| a.name.cmp(&b.name))
    });
    let unterminated_ranges = used_unterminated.len() as u64;
    Ok(Attribution {
        nesting: params.nesting,
        rule: params.rule,
        devices: params.devices.clone(),
        window: params.window,
        semantics: params.semantics,
        selected,
        attributed,
        attributed_share: Share { num: attributed.kernel_ns, den: selected.kernel_ns },
        unattributed,
        missing_columns: match &kernels.launch_keys {
            LaunchKeys::Absent { missing } => missing.clone(),
            _ => Vec::new(),
        },
        runtime_table_absent: launches.table_absent,
        nvtx_table_absent: ranges.table_absent,
        duplicate_launches: launches.duplicates,
        nested_launches: launches.nested,
        unterminated_ranges,
        closed_at_ns: if unterminated_ranges > 0 { ranges.closed_at_ns } else { None },
        rows,
    })
}

/// The registry entry.
pub const SPEC: AnalysisSpec = AnalysisSpec {
    name: "nvtx",
    summary: "NVTX ranges by name (count and duration statistics on the CPU timeline) and the GPU kernels whose launch they enclose (kernel time, GPU span, share of the devices' kernel time)",
    fields: &[
        f(
            "ranges",
            Unit::Count,
            FieldKind::Count,
            "kept ranges: name, domain and window as asked (CPU timeline; nested ranges each count)",
        ),
        f("names", Unit::Count, FieldKind::Count, "distinct kept range names, after normalisation"),
        f(
            "range_ns",
            Unit::Ns,
            FieldKind::CpuTime,
            "sum of the kept ranges' durations (CPU time; nested ranges each count in full)",
        ),
        f("range_min_ns", Unit::Ns, FieldKind::CpuTime, "shortest kept range"),
        f(
            "range_median_ns",
            Unit::Ns,
            FieldKind::CpuTime,
            "lower median duration of the kept ranges",
        ),
        f(
            "range_p90_ns",
            Unit::Ns,
            FieldKind::CpuTime,
            "nearest-rank 90th percentile duration of the kept ranges",
        ),
        f("range_max_ns", Unit::Ns, FieldKind::CpuTime, "longest kept range"),
        f(
            "kernels",
            Unit::Count,
            FieldKind::Count,
            "kernels on the devices whose launch a kept range encloses (attributed)",
        ),
        f(
            "kernel_ns",
            Unit::Ns,
            FieldKind::KernelTime,
            "their summed duration (kernel time, clipped to the window under clip)",
        ),
        f(
            "gpu_span_ns",
            Unit::Ns,
            FieldKind::Wall,
            "first attributed kernel start to last attributed kernel end (gaps included)",
        ),
        f(
            "selected_kernels",
            Unit::Count,
            FieldKind::Count,
            "every kernel of the devices in the window: the population attributed",
        ),
        f(
            "selected_kernel_ns",
            Unit::Ns,
            FieldKind::KernelTime,
            "their summed duration: the denominator of kernel_share",
        ),
        f(
            "kernel_share",
            Unit::Ratio,
            FieldKind::KernelTime,
            "kernel_ns / selected_kernel_ns: the share of the devices' kernel time under the kept ranges",
        ),
        f(
            "unattributed",
            Unit::Count,
            FieldKind::Count,
            "selected kernels not attributed: no launch record, no enclosing kept range, or no correlation id",
        ),
        f(
            "no_launch_record",
            Unit::Count,
            FieldKind::Count,
            "kernels whose (process, correlationId) has no runtime/driver API record",
        ),
        f(
            "no_enclosing_range",
            Unit::Count,
            FieldKind::Count,
            "kernels whose launch no kept range on its thread encloses",
        ),
        f(
            "no_correlation",
            Unit::Count,
            FieldKind::Count,
            "kernels without correlationId or globalPid (column absent or NULL)",
        ),
    ],
    sums: &[],
    params: &[
        super::NAME,
        super::MATCH,
        super::REGEX,
        super::DOMAIN,
        super::PID,
        super::TID,
        super::NESTING,
        super::NORMALIZE,
    ],
    scope: ScopeRule::Summed,
    needs: &[Table::Kernels, Table::Nvtx],
    cross_rank: &[],
    ratios: &[("kernel_share", "kernel_ns / selected_kernel_ns")],
    per_name: true,
    per_device: &[],
    rank_rows: None,
    across: &[],
    stats: &[
        ("names", super::Stat::Distinct),
        ("range_min_ns", super::Stat::Min),
        ("range_median_ns", super::Stat::Median),
        ("range_p90_ns", super::Stat::P90),
        ("range_max_ns", super::Stat::Max),
    ],
    chart: None,
    terms: &["nvtx_attribution"],
    run,
    table,
};

/// The values of the scope: the ranges that pass the filters, pooled, and the kernels
/// attributed to them.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(rename = "NvtxValues")]
pub struct Values {
    /// Ranges counted.
    pub ranges: u64,
    /// Distinct names among them.
    pub names: u64,
    /// Their CPU time, summed.
    pub range_ns: i64,
    /// The shortest; absent over no range.
    pub range_min_ns: Option<i64>,
    /// The lower median; absent over no range.
    pub range_median_ns: Option<i64>,
    /// The 90th percentile (nearest rank); absent over no range.
    pub range_p90_ns: Option<i64>,
    /// The longest; absent over no range.
    pub range_max_ns: Option<i64>,
    /// Kernels attributed.
    pub kernels: u64,
    /// Their kernel time.
    pub kernel_ns: i64,
    /// First start to last end of the attributed kernels; absent when none is.
    pub gpu_span_ns: Option<i64>,
    /// Kernels selected on the devices and window.
    pub selected_kernels: u64,
    /// Their kernel time.
    pub selected_kernel_ns: i64,
    /// `kernel_ns / selected_kernel_ns`; absent without a denominator or an attribution.
    pub kernel_share: Option<f64>,
    /// Selected kernels not attributed.
    pub unattributed: u64,
    /// Of them, without a launch record.
    pub no_launch_record: u64,
    /// Of them, launched outside every range.
    pub no_enclosing_range: u64,
    /// Of them, without a correlation id.
    pub no_correlation: u64,
}

/// One range name: its ranges and the kernels attributed to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(rename = "NvtxRow")]
pub struct Row {
    /// The name, after the normalisation rule.
    pub name: String,
    /// Ranges counted.
    pub ranges: u64,
    /// Their CPU time.
    pub range_ns: i64,
    /// The shortest; absent when no range of the name counts.
    pub range_min_ns: Option<i64>,
    /// The lower median; absent likewise.
    pub range_median_ns: Option<i64>,
    /// The 90th percentile; absent likewise.
    pub range_p90_ns: Option<i64>,
    /// The longest; absent likewise.
    pub range_max_ns: Option<i64>,
    /// Raw names folded into it.
    pub variants: u64,
    /// Their domains.
    pub domains: Vec<String>,
    /// Kernels attributed.
    pub kernels: u64,
    /// Their kernel time.
    pub kernel_ns: i64,
    /// Their GPU span; absent when none is attributed.
    pub gpu_span_ns: Option<i64>,
}

/// A row per name: no device to label.
impl super::EvidenceRow for Row {}

const fn f(name: &'static str, unit: Unit, kind: FieldKind, definition: &'static str) -> Field {
    Field { name, unit, kind, definition }
}

/// The range filter the parameters ask for.
fn range_filter(params: &Params) -> Result<RangeFilter, QueryError> {
    let name = match (&params.exact, &params.filter) {
        (Some(e), _) => Some(NameMatch::Exact(e.clone())),
        (None, Some(super::NameFilter::Substring(s))) => Some(NameMatch::Substring(s.clone())),
        (None, Some(super::NameFilter::Regex(r))) => Some(NameMatch::Regex(r.clone())),
        (None, None) => None,
    };
    let domains = params.domain.as_ref().map(|d| {
        vec![match d.trim().parse::<i64>() {
            Ok(id) => DomainSel::Id(id),
            Err(_) => DomainSel::Name(d.clone()),
        }]
    });
    Ok(RangeFilter {
        name,
        domains,
        pids: params.pids.clone(),
        tids: params.tids.clone(),
        processes: None,
    })
}

fn failed(e: NvtxError) -> QueryError {
    QueryError::Failed { hint: e.hint().unwrap_or_default(), reason: e.to_string() }
}

/// Runs the analysis: range statistics and kernel attribution of the kept ranges, summed over
/// the devices, with one row per range name.
pub fn run(params: &Params, ctx: &Context) -> Result<Evidence, QueryError> {
    let devices = ctx.resolve_devices(&params.devices)?;
    ctx.check_window(params.window, &devices)?;
    let data = ctx.nvtx.as_ref().ok_or_else(|| QueryError::Failed {
        reason: "the NVTX and runtime tables were not read".into(),
        hint: "the planner reads the tables an analysis declares; this is a defect".into(),
    })?;
    let mut filter = range_filter(params)?;
    // A scope of some devices counts the ranges of the processes that drive them, not every
    // process of the file (torchrun writes many ranks into one); `--pid` chooses others.
    let scoped = match &params.devices {
        crate::scope::DeviceSel::Set(_) if params.pids.is_none() => {
            let s = scope_processes(ctx, &devices);
            if s.by_key {
                filter.processes = Some(s.ids.clone());
            } else {
                filter.pids = Some(s.ids.clone());
            }
            Some(s)
        }
        _ => None,
    };
    let rule = params.normalize.unwrap_or_default();
    let nesting = params.nesting.unwrap_or_default();
    let stats = range_stats(
        &data.ranges,
        &StatsParams {
            filter: filter.clone(),
            rule,
            window: params.window,
            semantics: params.semantics,
            counted_from: params.counted_from,
        },
    )
    .map_err(failed)?;
    let att = attribute(
        &ctx.kernels,
        &data.launches,
        &data.ranges,
        &AttributionParams {
            devices: devices.clone(),
            window: params.window,
            semantics: params.semantics,
            nesting,
            rule,
            ranges: filter,
            counted_from: params.counted_from,
        },
    )
    .map_err(failed)?;
    let mut ev = ctx.evidence(&SPEC, params, devices.clone());
    if let Some(s) = &scoped {
        let pids: Vec<String> = s
            .ids
            .iter()
            .map(|&p| if s.by_key { p & 0xFF_FFFF } else { p })
            .map(|p| p.to_string())
            .collect();
        ev.note(
            "note.nvtx_scope_processes",
            &[
                ("devices", crate::scope::format_device_list(&devices)),
                ("pids", if pids.is_empty() { "-".into() } else { pids.join(", ") }),
            ],
        );
    }
    ev.parameters.insert("nesting".into(), json!(nesting.as_str()));
    ev.parameters.insert("normalize".into(), json!(rule.as_str()));
    // Without the NVTX or the runtime table nothing can be attributed: the share and the span
    // do not exist (the notes below say why), rather than a 0 of an attribution never made.
    let attributable = !data.ranges.table_absent && !data.launches.table_absent;
    ev.values = Some(super::values::Values::Nvtx(evidence::values(&stats, &att, attributable)));
    ev.rows = Some(super::values::Rows::Nvtx(evidence::rows(&stats, &att)));
    evidence::leave_absent(&mut ev, data, &stats, &att);
    evidence::note_kernels(&mut ev, params, data, &stats, &att);
    Ok(ev)
}

/// The terminal table of `verdict query` (below the scope lines): one row per range name, then
/// the attribution totals.
pub fn table(ev: &Evidence, width: usize) -> String {
    use super::show::{dur, num, share};
    use crate::term::Column;
    let n = |x: u64| num(i64::try_from(x).ok());
    let rows: Vec<Vec<String>> = match &ev.rows {
        Some(super::values::Rows::Nvtx(rows)) => rows
            .iter()
            .map(|r| {
                vec![
                    r.name.clone(),
                    n(r.ranges),
                    dur(r.range_ns),
                    dur(r.range_median_ns),
                    dur(r.range_p90_ns),
                    n(r.kernels),
                    dur(r.kernel_ns),
                    dur(r.gpu_span_ns),
                ]
            })
            .collect(),
        _ => Vec::new(),
    };
    let mut s = crate::term::render(
        &[
            Column::text("range name"),
            Column::number("ranges"),
            Column::number("CPU total"),
            Column::number("median"),
            Column::number("p90"),
            Column::number("kernels"),
            Column::number("kernel time"),
            Column::number("GPU span"),
        ],
        &rows,
        width,
    );
    if let Some(super::values::Values::Nvtx(v)) = &ev.values {
        s.push('\n');
        s += &crate::term::hang(
            "",
            &format!(
                "kept ranges: {} over {} name(s), {} CPU time; kernels under them: {} of {}, {} of {} kernel time = {}; unattributed: {} (no launch record {}, no enclosing kept range {}, no correlation id {})",
                n(v.ranges),
                n(v.names),
                dur(v.range_ns),
                n(v.kernels),
                n(v.selected_kernels),
                dur(v.kernel_ns),
                dur(v.selected_kernel_ns),
                share(Some(v.kernel_ns), Some(v.selected_kernel_ns)),
                n(v.unattributed),
                n(v.no_launch_record),
                n(v.no_enclosing_range),
                n(v.no_correlation),
            ),
            2,
            width,
        );
    }
    s
}

#[cfg(test)]
mod tests;

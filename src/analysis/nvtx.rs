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

/// Which timeline an NVTX window is read on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Timeline {
    /// The range's own start and end, on the CPU thread that recorded it.
    #[default]
    Cpu,
    /// The GPU projection: where the trace records one (a PyTorch profiler trace's
    /// `gpu_user_annotation`), the span of the range's recorded projections on the scope's
    /// devices; otherwise first start to last end of the kernels launched inside the range.
    Gpu,
}

/// Where the GPU projections of one window's chosen ranges come from, for a trace that
/// records projections (None for one that does not: all computed, as always).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct GpuSource {
    /// Chosen ranges whose recorded projection was used.
    pub recorded: usize,
    /// Chosen ranges without a recorded projection of their own on the devices: computed
    /// from the kernels launched inside them.
    pub computed: usize,
}

/// A scope's window taken from NVTX ranges: `{nvtx: "step 4"}`, `{nvtx: "ProfilerStep#*",
/// index: 5, on: gpu}`. The ranges are those of the processes that launched the scope's
/// kernels; with several processes, the window spans the chosen range of each.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct NvtxWindow {
    /// The range name: exact, or a pattern where `*` stands for any text.
    pub name: String,
    /// Which matching ranges, counting from 0 in start order on each process; None: the name
    /// must match exactly one range per process. Several give a set of windows.
    pub index: Option<IndexSel>,
    /// CPU range or GPU projection.
    pub on: Timeline,
    /// Only ranges of this domain (id or name).
    pub domain: Option<String>,
}

impl NvtxWindow {
    /// Reads the keys of a claims file's `window:` mapping; an error is (message, hint).
    pub fn from_keys(keys: &[(String, String)]) -> Result<NvtxWindow, (String, String)> {
        let hint = "write `window: {nvtx: \"step 4\"}`, optionally with `index: N` (from 0, in start order; `A-B` or `all` for a set of windows), `project: cpu|gpu` (or `on:`, which YAML 1.1 readers take for a boolean) and `domain: ID|NAME`".to_string();
        let mut w =
            NvtxWindow { name: String::new(), index: None, on: Timeline::Cpu, domain: None };
        let mut named = false;
        let mut timeline: Option<&str> = None;
        for (k, v) in keys {
            match k.as_str() {
                "nvtx" => {
                    if v.trim().is_empty() {
                        return Err(("`nvtx` names a range".into(), hint));
                    }
                    w.name = v.clone();
                    named = true;
                }
                "index" => {
                    w.index = Some(IndexSel::parse(v).ok_or_else(|| {
                        (
                            format!("`index: {v}` is not N, A-B (A <= B, from 0) or all"),
                            hint.clone(),
                        )
                    })?)
                }
                // `project` is `on` under a name no YAML 1.1 reader takes for a boolean.
                "on" | "project" => {
                    if timeline.replace(k.as_str()).is_some() {
                        return Err((
                            "`on` and `project` are one key: give one of them".into(),
                            hint,
                        ));
                    }
                    w.on = match v.trim() {
                        "cpu" => Timeline::Cpu,
                        "gpu" => Timeline::Gpu,
                        _ => return Err((format!("`{k}: {v}` is not cpu or gpu"), hint)),
                    }
                }
                "domain" => w.domain = Some(v.clone()),
                _ => return Err((format!("unknown key `{k}`"), hint)),
            }
        }
        if !named {
            return Err(("a window mapping needs `nvtx: NAME`".into(), hint));
        }
        Ok(w)
    }

    /// Whether a recorded range name matches.
    fn matches(&self, name: &str) -> bool {
        let parts: Vec<&str> = self.name.split('*').collect();
        if parts.len() == 1 {
            return name == self.name;
        }
        let (first, last) = (parts[0], parts[parts.len() - 1]);
        if !name.starts_with(first) || name.len() < first.len() + last.len() {
            return false;
        }
        let mut rest = &name[first.len()..];
        for mid in &parts[1..parts.len() - 1] {
            match rest.find(mid) {
                Some(at) => rest = &rest[at + mid.len()..],
                None => return false,
            }
        }
        rest.ends_with(last)
    }
}

/// Which of the matching ranges a window takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum IndexSel {
    /// One, from 0 in start order.
    One(usize),
    /// `A-B`, both included: a set of windows.
    Range(usize, usize),
    /// Every matching range: a set of windows.
    All,
}

impl IndexSel {
    /// Reads `5`, `3-8` or `all`.
    pub fn parse(text: &str) -> Option<IndexSel> {
        let t = text.trim();
        if t == "all" {
            return Some(IndexSel::All);
        }
        if let Some((a, b)) = t.split_once('-') {
            let (a, b) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
            return (a <= b).then_some(IndexSel::Range(a, b));
        }
        t.parse().ok().map(IndexSel::One)
    }

    fn indices(self, matches: usize) -> std::ops::RangeInclusive<usize> {
        match self {
            IndexSel::One(k) => k..=k,
            IndexSel::Range(a, b) => a..=b,
            IndexSel::All => 0..=matches.saturating_sub(1),
        }
    }
}

impl std::fmt::Display for IndexSel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IndexSel::One(k) => write!(f, "{k}"),
            IndexSel::Range(a, b) => write!(f, "{a}-{b}"),
            IndexSel::All => f.write_str("all"),
        }
    }
}

/// An NVTX window resolved on a trace: the window and the ranges it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResolvedWindow {
    /// The window on the trace's clock.
    pub window: Window,
    /// Per process: (pid, range start, range end) of the chosen range.
    pub ranges: Vec<(i64, i64, i64)>,
    /// Ranges matching the name on each process (the smallest count over processes).
    pub matches: usize,
    /// Its index among them.
    pub index: usize,
    /// On the GPU timeline of a trace that records projections: which rule each chosen
    /// range's projection came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_source: Option<GpuSource>,
}

/// The processes that launched kernels on some devices: what a device or rank scope selects
/// of the CPU side (NVTX ranges and the windows they give).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeProcesses {
    /// Whether `ids` are process keys (`globalPid >> 24`: in a trace set, tagged by file, so
    /// two nodes' equal pids stay apart), read from the kernels' launch keys; else OS pids
    /// from the inventory (the keys were not read).
    pub by_key: bool,
    /// Sorted, distinct.
    pub ids: Vec<i64>,
}

/// [`ScopeProcesses`] of `devices`.
pub fn scope_processes(ctx: &Context, devices: &[i64]) -> ScopeProcesses {
    let k = &ctx.kernels;
    let mut keys: Vec<i64> = devices
        .iter()
        .flat_map(|&d| k.device_rows(d))
        .filter_map(|i| k.launch_key(i).map(|l| l.process))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    if !keys.is_empty() {
        return ScopeProcesses { by_key: true, ids: keys };
    }
    let mut pids: Vec<i64> = ctx
        .inventory
        .devices
        .iter()
        .filter(|d| devices.contains(&d.device))
        .flat_map(|d| d.pids.iter().copied())
        .collect();
    pids.sort_unstable();
    pids.dedup();
    ScopeProcesses { by_key: false, ids: pids }
}

/// Resolves an NVTX window over the processes that launched kernels on `devices`: one window,
/// or one per index of a set, in index order.
pub fn resolve_windows(
    w: &NvtxWindow,
    ctx: &Context,
    devices: &[i64],
) -> Result<Vec<ResolvedWindow>, QueryError> {
    let fail = |reason: String, hint: &str| QueryError::Failed { reason, hint: hint.into() };
    let data = ctx.nvtx.as_ref().ok_or_else(|| {
        fail("the NVTX tables were not read".into(), "this is a defect of the planner")
    })?;
    let r = &data.ranges;
    if r.table_absent {
        return Err(fail(
            format!("window `{}`: the trace has no NVTX_EVENTS table", w.name),
            "capture with `nsys profile --trace=cuda,nvtx`, or give the window in seconds",
        ));
    }
    let ScopeProcesses { by_key, ids } = scope_processes(ctx, devices);
    let (keys, pids) = if by_key { (ids, Vec::new()) } else { (Vec::new(), ids) };
    let domain = w.domain.as_ref().map(|d| match d.trim().parse::<i64>() {
        Ok(id) => DomainSel::Id(id),
        Err(_) => DomainSel::Name(d.clone()),
    });
    let mut per: std::collections::BTreeMap<i64, Vec<usize>> = std::collections::BTreeMap::new();
    for i in 0..r.len() {
        let Some(g) = r.global_tid[i] else { continue };
        let pid =
            if by_key { crate::trace::nvtx::process_of(g) } else { crate::trace::nvtx::pid_of(g) };
        if !(if by_key { keys.contains(&pid) } else { pids.contains(&pid) })
            || !w.matches(&r.names()[r.name[i] as usize])
            || domain.as_ref().is_some_and(|d| !d.matches(r.domain_of(i)))
        {
            continue;
        }
        per.entry(pid).or_default().push(i);
    }
    if per.is_empty() {
        return Err(fail(
            format!(
                "window `{}`: no NVTX range of that name on the processes of devices {}",
                w.name,
                crate::scope::format_device_list(devices)
            ),
            "`verdict query nvtx TRACE` lists the range names; `*` in the name matches any text",
        ));
    }
    let counts: Vec<usize> = per.values().map(Vec::len).collect();
    let matches = counts.iter().copied().min().unwrap_or(0);
    let sel = match w.index {
        Some(k) => k,
        None if counts.iter().all(|&c| c == 1) => IndexSel::One(0),
        None => {
            return Err(fail(
                format!(
                    "window `{}`: {} ranges match on one process",
                    w.name,
                    counts.iter().max().unwrap_or(&0)
                ),
                "pick one with `index: N` (from 0, in start order)",
            ));
        }
    };
    let indices = sel.indices(matches);
    if *indices.end() >= matches {
        return Err(fail(
            format!(
                "window `{}`: index {} is past the {matches} matching range(s)",
                w.name,
                indices.end()
            ),
            "indices count from 0 in start order on each process",
        ));
    }
    for rows in per.values_mut() {
        rows.sort_by_key(|&i| (r.start[i], std::cmp::Reverse(r.end[i])));
    }
    indices.map(|index| one_window(w, ctx, data, devices, &per, index, matches)).collect()
}

/// The window of one index: the chosen range of each process.
fn one_window(
    w: &NvtxWindow,
    ctx: &Context,
    data: &NvtxData,
    devices: &[i64],
    per: &std::collections::BTreeMap<i64, Vec<usize>>,
    index: usize,
    matches: usize,
) -> Result<ResolvedWindow, QueryError> {
    let fail = |reason: String, hint: &str| QueryError::Failed { reason, hint: hint.into() };
    let r = &data.ranges;
    // The OS pid of each process (a process key holds it in its low 24 bits).
    let chosen: Vec<(i64, usize)> =
        per.iter().map(|(key, rows)| (key & 0xFF_FFFF, rows[index])).collect();
    let ranges: Vec<(i64, i64, i64)> =
        chosen.iter().map(|&(pid, i)| (pid, r.start[i], r.end[i])).collect();
    let mut gpu_source = None;
    let window = match w.on {
        Timeline::Cpu => Window {
            start_ns: ranges.iter().map(|x| x.1).min().unwrap_or(0),
            end_ns: ranges.iter().map(|x| x.2).max().unwrap_or(0),
        },
        Timeline::Gpu => {
            // The recorded projection of each chosen range that has one of its own on the
            // devices (with those of the ranges inside it); the others computed.
            let recorded = &r.projections;
            let mut span: Option<(i64, i64)> = None;
            let mut widen = |a: i64, b: i64| {
                span = Some(span.map_or((a, b), |(x, y)| (x.min(a), y.max(b))));
            };
            let mut rows: Vec<usize> = Vec::new();
            for &(_, i) in &chosen {
                let own = r.global_tid[i]
                    .and_then(|tid| recorded.span_of(tid, r.start[i], r.end[i], devices))
                    .filter(|&(_, own)| own);
                match own {
                    Some(((a, b), _)) => widen(a, b),
                    None => rows.push(i),
                }
            }
            if recorded.recorded {
                gpu_source =
                    Some(GpuSource { recorded: chosen.len() - rows.len(), computed: rows.len() });
            }
            // Kernels whose launch one of the remaining ranges encloses: attribute to ranges
            // of that name (outermost), keep those that landed on a chosen row.
            let names: Vec<String> =
                rows.iter().map(|&i| r.names()[r.name[i] as usize].clone()).collect();
            for name in names.iter().collect::<BTreeSet<_>>() {
                let params = AttributionParams {
                    devices: devices.to_vec(),
                    nesting: Nesting::Outermost,
                    rule: NameRule::Verbatim,
                    ranges: RangeFilter {
                        name: Some(NameMatch::Exact(name.clone())),
                        ..RangeFilter::default()
                    },
                    ..AttributionParams::default()
                };
                for o in attribute_each(&ctx.kernels, &data.launches, r, &params).map_err(failed)? {
                    if let Outcome::Range(i) = o.outcome
                        && rows.contains(&i)
                    {
                        widen(o.start_ns, o.end_ns);
                    }
                }
            }
            let (a, b) = span.ok_or_else(|| {
                fail(
                    format!(
                        "window `{}` on the GPU: no kernel of devices {} was launched inside it",
                        w.name,
                        crate::scope::format_device_list(devices)
                    ),
                    "use `on: cpu`, or check that the export has the CUDA runtime table",
                )
            })?;
            Window { start_ns: a, end_ns: b }
        }
    };
    Ok(ResolvedWindow { window, ranges, matches, index, gpu_source })
}

/// Says where the windows taken from NVTX ranges come from: each range of one window, or
/// the first and last of a set.
pub fn note_windows(ev: &mut Evidence, w: &NvtxWindow, rws: &[ResolvedWindow]) {
    let ranges = |rw: &ResolvedWindow| {
        rw.ranges
            .iter()
            .map(|(pid, a, b)| {
                format!(
                    "pid {pid}: {}–{} s",
                    crate::scope::format_seconds(*a),
                    crate::scope::format_seconds(*b)
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    // On a trace that records GPU projections: which were used, and which computed.
    let (recorded, computed) = rws
        .iter()
        .filter_map(|rw| rw.gpu_source)
        .fold((0, 0), |(a, b), g| (a + g.recorded, b + g.computed));
    let timeline = match w.on {
        Timeline::Cpu => "cpu",
        Timeline::Gpu if recorded > 0 => "gpu_recorded",
        Timeline::Gpu => "gpu",
    };
    match rws {
        [] => {}
        [rw] => ev.note(
            &format!("note.window_nvtx_{timeline}"),
            &[
                ("name", w.name.clone()),
                ("index", rw.index.to_string()),
                ("matches", rw.matches.to_string()),
                ("window", rw.window.to_string()),
                ("ranges", ranges(rw)),
            ],
        ),
        [first, .., last] => ev.note(
            &format!("note.windows_nvtx_{timeline}"),
            &[
                ("n", rws.len().to_string()),
                ("name", w.name.clone()),
                ("first_index", first.index.to_string()),
                ("last_index", last.index.to_string()),
                ("matches", first.matches.to_string()),
                ("first", first.window.to_string()),
                ("last", last.window.to_string()),
            ],
        ),
    }
    if computed > 0 {
        ev.note(
            "note.nvtx_gpu_computed",
            &[("n", computed.to_string()), ("of", (recorded + computed).to_string())],
        );
    }
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
mod tests {
    use super::*;

    /// The registered analysis by hand over the shared test context: kernels launched at 0
    /// (corr 1, under `step`), 5 (corr 2, under `step` and the op range), 8 (corr 3, `step`)
    /// and 30 (corr 4, no range); durations 100, 100, 80, 100 ns.
    #[test]
    fn the_analysis_by_hand() {
        use crate::scope::DeviceSel;
        let ctx = crate::analysis::tests::ctx();
        let get = |ev: &Evidence, f: &str| ev.value(f).and_then(|v| v.as_i64());
        let ev = run(&Params::new(DeviceSel::All), &ctx).unwrap();
        assert_eq!(get(&ev, "selected_kernels"), Some(4));
        assert_eq!(get(&ev, "selected_kernel_ns"), Some(380));
        // Innermost: step gets kernels 1 and 3 (180 ns), aten::mm kernel 2 (100 ns).
        assert_eq!((get(&ev, "kernels"), get(&ev, "kernel_ns")), (Some(3), Some(280)));
        assert_eq!(get(&ev, "no_enclosing_range"), Some(1));
        let share = ev.field("kernel_share").unwrap().unwrap();
        assert_eq!((share.num, share.den), (14, 19)); // 280 / 380
        let row = |name: &str| {
            ev.rows.as_ref().unwrap().to_maps().into_iter().find(|r| r["name"] == name).unwrap()
        };
        assert_eq!(
            (row("step")["kernels"].as_i64(), row("step")["kernel_ns"].as_i64()),
            (Some(2), Some(180))
        );
        // The op range's PyTorch suffix is dropped by default.
        assert_eq!(row("aten::mm")["kernel_ns"].as_i64(), Some(100));
        assert_eq!((get(&ev, "ranges"), get(&ev, "range_ns")), (Some(2), Some(25)));
        // Only `step` kept: every kernel it encloses is its own, whatever lies inside it.
        let mut p = Params::new(DeviceSel::All);
        p.exact = Some("step".into());
        let ev = run(&p, &ctx).unwrap();
        assert_eq!((get(&ev, "kernels"), get(&ev, "kernel_ns")), (Some(3), Some(280)));
        assert_eq!((get(&ev, "ranges"), get(&ev, "range_median_ns")), (Some(1), Some(20)));
    }
    use proptest::prelude::*;

    /// Thread 1 and 2 of process 7, thread 1 of process 8.
    const T1: i64 = (7 << 24) | 1;
    const T2: i64 = (7 << 24) | 2;
    const U1: i64 = (8 << 24) | 1;

    #[test]
    fn pytorch_suffixes_are_stripped_and_nothing_else() {
        let r = NameRule::StripPytorchIds;
        assert_eq!(r.apply("aten::mm, seq = 12, op_id = 345"), "aten::mm");
        assert_eq!(r.apply("aten::mm, op_id = 9"), "aten::mm");
        assert_eq!(r.apply("aten::mm, seq = 3"), "aten::mm");
        assert_eq!(
            r.apply("aten::mm, seq = 1, op_id = 2, sizes = [[2, 3], [3, 4]]"),
            "aten::mm, sizes = [[2, 3], [3, 4]]"
        );
        // Not of the exact form: kept.
        assert_eq!(r.apply("x, seq = abc"), "x, seq = abc");
        assert_eq!(r.apply("x, seq = 5x"), "x, seq = 5x");
        assert_eq!(r.apply("x, seq = "), "x, seq = ");
        assert_eq!(r.apply("op_id = 5"), "op_id = 5");
        assert_eq!(r.apply("x,seq = 5"), "x,seq = 5");
        assert_eq!(r.apply("ncclAllReduce"), "ncclAllReduce");
        assert!(matches!(r.apply("ncclAllReduce"), Cow::Borrowed(_)));
        assert_eq!(NameRule::Verbatim.apply("a, op_id = 1"), "a, op_id = 1");
    }

    #[test]
    fn stats_group_normalised_names_with_lower_median_and_nearest_rank_p90() {
        let mut rows: Vec<(i64, i64, Option<i64>, String, i64)> = (1..=10)
            .map(|d| {
                (T1, d * 100, Some(d * 100 + d), format!("aten::mm, seq = {d}, op_id = {d}"), 0)
            })
            .collect();
        rows.push((T1, 5000, Some(5007), "step".into(), 1));
        let rows: Vec<(i64, i64, Option<i64>, &str, i64)> =
            rows.iter().map(|r| (r.0, r.1, r.2, r.3.as_str(), r.4)).collect();
        let ranges = NvtxRanges::from_rows(&rows);
        let s = range_stats(&ranges, &StatsParams::default()).unwrap();
        assert_eq!(s.ranges, 11);
        assert_eq!(s.rows.len(), 2);
        let mm = &s.rows[0];
        assert_eq!(mm.name, "aten::mm");
        assert_eq!(
            (mm.count, mm.total_ns, mm.min_ns, mm.median_ns, mm.p90_ns, mm.max_ns),
            (10, 55, 1, 5, 9, 10)
        );
        assert_eq!(mm.variants, 10);
        assert_eq!(mm.domains, ["default"]);
        assert_eq!(s.rows[1].domains, ["domain #1"]);

        let verbatim = StatsParams { rule: NameRule::Verbatim, ..StatsParams::default() };
        assert_eq!(range_stats(&ranges, &verbatim).unwrap().rows.len(), 11);

        let only = |filter: RangeFilter| {
            range_stats(&ranges, &StatsParams { filter, ..StatsParams::default() })
                .unwrap()
                .rows
                .iter()
                .map(|r| r.name.clone())
                .collect::<Vec<_>>()
        };
        let name = |m: NameMatch| RangeFilter { name: Some(m), ..RangeFilter::default() };
        assert_eq!(only(name(NameMatch::Exact("step".into()))), ["step"]);
        assert_eq!(only(name(NameMatch::Exact("aten::mm, seq = 1, op_id = 1".into()))), [""; 0]);
        assert_eq!(only(name(NameMatch::Substring("mm".into()))), ["aten::mm"]);
        assert_eq!(only(name(NameMatch::regex("^st").unwrap())), ["step"]);
        assert!(matches!(NameMatch::regex("("), Err(NvtxError::BadRegex { .. })));
        let dom = |d: DomainSel| RangeFilter { domains: Some(vec![d]), ..RangeFilter::default() };
        assert_eq!(only(dom(DomainSel::Id(1))), ["step"]);
        assert_eq!(only(dom(DomainSel::Name("default".into()))), ["aten::mm"]);
        let pid = RangeFilter { pids: Some(vec![8]), ..RangeFilter::default() };
        assert!(only(pid).is_empty());
        let tid = RangeFilter { tids: Some(vec![1]), ..RangeFilter::default() };
        assert_eq!(only(tid).len(), 2);
    }

    #[test]
    fn stats_window_clips_or_contains() {
        let ranges =
            NvtxRanges::from_rows(&[(T1, 0, Some(100), "a", 0), (T1, 40, Some(60), "a", 0)]);
        let w = Some(Window { start_ns: 50, end_ns: 200 });
        let clip =
            range_stats(&ranges, &StatsParams { window: w, ..StatsParams::default() }).unwrap();
        assert_eq!((clip.rows[0].count, clip.rows[0].total_ns, clip.clipped), (2, 60, 2));
        let contain =
            StatsParams { window: w, semantics: Semantics::Contain, ..StatsParams::default() };
        assert!(range_stats(&ranges, &contain).unwrap().rows.is_empty());
    }

    /// Kernels on device 0, one per launch, each 10 ns long at 1000 + 100 i; launch i has
    /// correlation id i on thread `threads[i]` at time `launch_at[i]`.
    fn setup(threads: &[i64], launch_at: &[i64]) -> (Kernels, Launches) {
        let rows: Vec<(i64, i64, i64, i64, &str)> = (0..launch_at.len() as i64)
            .map(|i| (0, 7, 1000 + 100 * i, 1010 + 100 * i, "k"))
            .collect();
        let keys: Vec<(Option<i64>, Option<i64>)> =
            threads.iter().enumerate().map(|(i, &t)| (Some(t >> 24), Some(i as i64))).collect();
        let launches: Vec<(i64, i64, i64, i64)> = threads
            .iter()
            .zip(launch_at)
            .enumerate()
            .map(|(i, (&t, &at))| (t, i as i64, at, at + 5))
            .collect();
        (Kernels::from_rows_with_launch_keys(&rows, &keys), Launches::from_rows(&launches))
    }

    fn params(nesting: Nesting) -> AttributionParams {
        AttributionParams { devices: vec![0], nesting, ..AttributionParams::default() }
    }

    fn names_of(k: &Kernels, l: &Launches, r: &NvtxRanges, nesting: Nesting) -> Vec<String> {
        attribute_each(k, l, r, &params(nesting))
            .unwrap()
            .iter()
            .map(|o| match o.outcome {
                Outcome::Range(i) => r.name_of(i).to_string(),
                Outcome::Unattributed(reason) => format!("{reason:?}"),
            })
            .collect()
    }

    #[test]
    fn nesting_picks_innermost_or_outermost_and_a_range_end_encloses_nothing() {
        let ranges = NvtxRanges::from_rows(&[
            (T1, 0, Some(100), "outer", 0),
            (T1, 10, Some(50), "mid", 0),
            (T1, 20, Some(30), "inner", 0),
        ]);
        // Launches at 25, 40, 60, 100 (the outer range's end), 0 (its start).
        let (k, l) = setup(&[T1; 5], &[25, 40, 60, 100, 0]);
        assert_eq!(
            names_of(&k, &l, &ranges, Nesting::Innermost),
            ["inner", "mid", "outer", "NoEnclosingRange", "outer"]
        );
        assert_eq!(
            names_of(&k, &l, &ranges, Nesting::Outermost),
            ["outer", "outer", "outer", "NoEnclosingRange", "outer"]
        );
    }

    #[test]
    fn ties_go_to_the_shorter_inside_and_the_longer_outside() {
        let ranges = NvtxRanges::from_rows(&[
            (T1, 10, Some(50), "long", 0),
            (T1, 10, Some(30), "short", 0),
            (T1, 60, Some(70), "first", 0),
            (T1, 60, Some(70), "second", 0),
        ]);
        let (k, l) = setup(&[T1; 2], &[20, 65]);
        assert_eq!(names_of(&k, &l, &ranges, Nesting::Innermost), ["short", "second"]);
        assert_eq!(names_of(&k, &l, &ranges, Nesting::Outermost), ["long", "first"]);
    }

    #[test]
    fn crossing_start_end_ranges_and_other_threads() {
        let ranges = NvtxRanges::from_rows(&[
            (T1, 0, Some(50), "a", 0),
            (T1, 10, Some(100), "b", 0),
            (T2, 0, Some(1000), "other thread", 0),
        ]);
        let (k, l) = setup(&[T1, T1, U1], &[20, 60, 20]);
        assert_eq!(names_of(&k, &l, &ranges, Nesting::Innermost), ["b", "b", "NoEnclosingRange"]);
        assert_eq!(names_of(&k, &l, &ranges, Nesting::Outermost), ["a", "b", "NoEnclosingRange"]);
    }

    #[test]
    fn unterminated_ranges_close_at_the_last_timestamp() {
        let ranges =
            NvtxRanges::from_rows(&[(T1, 5, None, "open", 0), (T1, 10, Some(200), "closed", 0)]);
        assert_eq!(ranges.closed_at_ns, Some(200));
        let (k, l) = setup(&[T1; 3], &[7, 150, 200]);
        assert_eq!(
            names_of(&k, &l, &ranges, Nesting::Outermost),
            ["open", "open", "NoEnclosingRange"]
        );
        let a = attribute(&k, &l, &ranges, &params(Nesting::Outermost)).unwrap();
        assert_eq!((a.unterminated_ranges, a.closed_at_ns), (1, Some(200)));
        let s = range_stats(&ranges, &StatsParams::default()).unwrap();
        assert_eq!((s.unterminated, s.closed_at_ns), (1, Some(200)));
        assert_eq!(s.rows.iter().find(|r| r.name == "open").unwrap().total_ns, 195);
    }

    #[test]
    fn every_kernel_is_accounted_for_by_reason() {
        let ranges = NvtxRanges::from_rows(&[(T1, 0, Some(100), "r, op_id = 1", 0)]);
        let rows = [
            (0, 7, 1000, 1010, "a"),
            (0, 7, 1100, 1130, "b"),
            (0, 7, 1200, 1300, "c"),
            (0, 7, 1400, 1401, "d"),
            (1, 7, 0, 5, "e"),
        ];
        // a: attributed; b: NULL correlation; c: no launch; d: a launch outside every range;
        // e: on another device (not selected).
        let keys = [
            (Some(7), Some(1)),
            (Some(7), None),
            (Some(7), Some(99)),
            (Some(7), Some(2)),
            (Some(7), Some(1)),
        ];
        let k = Kernels::from_rows_with_launch_keys(&rows, &keys);
        let l = Launches::from_rows(&[(T1, 1, 50, 55), (T1, 2, 500, 505), (U1, 99, 10, 20)]);
        let a = attribute(&k, &l, &ranges, &params(Nesting::Innermost)).unwrap();
        assert_eq!(a.selected, Tally { kernels: 4, kernel_ns: 141 });
        assert_eq!(a.attributed, Tally { kernels: 1, kernel_ns: 10 });
        assert_eq!(a.attributed_share, Share { num: 10, den: 141 });
        assert_eq!(a.unattributed.no_correlation_value, Tally { kernels: 1, kernel_ns: 30 });
        assert_eq!(a.unattributed.no_launch_record, Tally { kernels: 1, kernel_ns: 100 });
        assert_eq!(a.unattributed.no_enclosing_range, Tally { kernels: 1, kernel_ns: 1 });
        assert_eq!(a.unattributed.total().kernels + a.attributed.kernels, a.selected.kernels);
        assert_eq!(a.rows.len(), 1);
        let row = &a.rows[0];
        assert_eq!((row.name.as_str(), row.kernels, row.kernel_ns, row.span_ns), ("r", 1, 10, 10));
        assert_eq!(row.share.rational(), Rational::new(10, 141));
        assert_eq!(needed_launches(&k, &params(Nesting::Innermost)).len(), 3);

        let mut absent = k.clone();
        absent.launch_keys = LaunchKeys::Absent { missing: vec!["correlationId".into()] };
        let a = attribute(&absent, &l, &ranges, &params(Nesting::Innermost)).unwrap();
        assert_eq!(a.unattributed.no_correlation_columns.kernels, 4);
        assert_eq!(a.missing_columns, ["correlationId"]);
        let unread = Kernels::from_rows(&rows);
        assert_eq!(
            attribute(&unread, &l, &ranges, &params(Nesting::Innermost)),
            Err(NvtxError::LaunchKeysNotRead)
        );
    }

    #[test]
    fn correlation_ids_are_matched_within_their_process() {
        let ranges =
            NvtxRanges::from_rows(&[(T1, 0, Some(100), "p7", 0), (U1, 0, Some(100), "p8", 0)]);
        let rows = [(0, 7, 1000, 1010, "k"), (0, 7, 1100, 1110, "k")];
        let k =
            Kernels::from_rows_with_launch_keys(&rows, &[(Some(7), Some(1)), (Some(8), Some(1))]);
        let l = Launches::from_rows(&[(T1, 1, 10, 20), (U1, 1, 30, 40)]);
        assert_eq!(names_of(&k, &l, &ranges, Nesting::Innermost), ["p7", "p8"]);
    }

    #[test]
    fn window_clips_kernel_time_and_span() {
        // The range runs into the window, so the window keeps it (clip) and it can receive
        // the kernels launched inside it.
        let ranges = NvtxRanges::from_rows(&[(T1, 0, Some(2000), "r", 0)]);
        let (k, l) = setup(&[T1; 3], &[10, 20, 30]);
        // Kernels at [1000,1010) [1100,1110) [1200,1210); window [1005, 1205).
        let w = Some(Window { start_ns: 1005, end_ns: 1205 });
        let clip = AttributionParams { window: w, ..params(Nesting::Innermost) };
        let a = attribute(&k, &l, &ranges, &clip).unwrap();
        assert_eq!(a.selected, Tally { kernels: 3, kernel_ns: 20 });
        assert_eq!((a.rows[0].first_start_ns, a.rows[0].last_end_ns), (1005, 1205));
        let contain = AttributionParams { semantics: Semantics::Contain, ..clip };
        let a = attribute(&k, &l, &ranges, &contain).unwrap();
        assert_eq!(a.selected, Tally { kernels: 1, kernel_ns: 10 });
        // Under contain the range is not inside the window: not kept, it receives nothing.
        assert_eq!(a.attributed, Tally::default());
    }

    #[test]
    fn project_is_on_under_a_name_yaml_1_1_keeps_a_string() {
        let keys = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        let w = NvtxWindow::from_keys(&keys(&[("nvtx", "step 4"), ("project", "gpu")])).unwrap();
        assert_eq!(w.on, Timeline::Gpu);
        let w = NvtxWindow::from_keys(&keys(&[("nvtx", "step 4"), ("on", "gpu")])).unwrap();
        assert_eq!(w.on, Timeline::Gpu);
        let both = keys(&[("nvtx", "s"), ("on", "gpu"), ("project", "gpu")]);
        assert!(NvtxWindow::from_keys(&both).unwrap_err().0.contains("one key"));
        let bad = keys(&[("nvtx", "s"), ("project", "gpus")]);
        assert_eq!(NvtxWindow::from_keys(&bad).unwrap_err().0, "`project: gpus` is not cpu or gpu");
    }

    #[test]
    fn a_range_the_window_does_not_keep_receives_no_kernel() {
        // `outer` covers the window; `op` ended before it, on the CPU, but launched the kernel
        // that runs in it: under clip the kernel goes to `outer`, the kept range around `op`.
        let ranges =
            NvtxRanges::from_rows(&[(T1, 0, Some(2000), "outer", 0), (T1, 5, Some(15), "op", 0)]);
        let (k, l) = setup(&[T1; 3], &[10, 20, 30]);
        let w = Some(Window { start_ns: 1005, end_ns: 1205 });
        let clip = AttributionParams { window: w, ..params(Nesting::Innermost) };
        let a = attribute(&k, &l, &ranges, &clip).unwrap();
        assert_eq!(
            a.rows.iter().map(|r| (r.name.as_str(), r.kernels)).collect::<Vec<_>>(),
            [("outer", 3)]
        );
        // Without a window `op` is kept and receives the kernel it launched.
        let a = attribute(&k, &l, &ranges, &params(Nesting::Innermost)).unwrap();
        assert_eq!(a.rows.iter().find(|r| r.name == "op").map(|r| r.kernels), Some(1));
    }

    /// The definition, applied literally: every range of the thread, every kernel.
    fn naive(
        ranges: &[(i64, i64, Option<i64>, &str, i64)],
        closed_at: i64,
        launches: &[(i64, i64)],
        nesting: Nesting,
    ) -> Vec<Option<usize>> {
        launches
            .iter()
            .map(|&(tid, t)| {
                let enclosing = ranges
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| r.0 == tid && r.1 <= t && t < r.2.unwrap_or(closed_at));
                // Order: start ascending, end descending, table order.
                let key = |(i, r): &(usize, &(i64, i64, Option<i64>, &str, i64))| {
                    (r.1, std::cmp::Reverse(r.2.unwrap_or(closed_at)), *i)
                };
                match nesting {
                    Nesting::Innermost => enclosing.max_by_key(key),
                    Nesting::Outermost => enclosing.min_by_key(key),
                }
                .map(|(i, _)| i)
            })
            .collect()
    }

    proptest! {
        #[test]
        fn the_sweep_agrees_with_the_definition(
            raw in prop::collection::vec((0usize..2, 0i64..40, 0i64..25, prop::bool::weighted(0.1)), 0..25),
            at in prop::collection::vec((0usize..2, 0i64..70), 1..20),
        ) {
            let threads = [T1, T2];
            let names: Vec<String> = (0..raw.len()).map(|i| format!("r{i}")).collect();
            let rows: Vec<(i64, i64, Option<i64>, &str, i64)> = raw
                .iter()
                .zip(&names)
                .map(|(&(t, s, d, open), n)| (threads[t], s, (!open).then_some(s + d), n.as_str(), 0))
                .collect();
            let closed_at = rows.iter().map(|r| r.1.max(r.2.unwrap_or(i64::MIN))).max().unwrap_or(0);
            let ranges = NvtxRanges::from_rows(&rows);
            let thread_of: Vec<i64> = at.iter().map(|&(t, _)| threads[t]).collect();
            let times: Vec<i64> = at.iter().map(|&(_, x)| x).collect();
            let (k, l) = setup(&thread_of, &times);
            let launches: Vec<(i64, i64)> = thread_of.iter().copied().zip(times.iter().copied()).collect();
            for nesting in [Nesting::Innermost, Nesting::Outermost] {
                let got: Vec<Option<String>> = attribute_each(&k, &l, &ranges, &params(nesting))
                    .unwrap()
                    .iter()
                    .map(|o| match o.outcome {
                        Outcome::Range(i) => Some(ranges.name_of(i).to_string()),
                        _ => None,
                    })
                    .collect();
                let want: Vec<Option<String>> = naive(&rows, closed_at, &launches, nesting)
                    .into_iter()
                    .map(|i| i.map(|i| names[i].clone()))
                    .collect();
                prop_assert_eq!(got, want);
            }
        }
    }
}

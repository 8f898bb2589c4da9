//! `nccl-skew`: cross-rank alignment of NCCL kernels and the waiting it implies.
//!
//! Ranks are the devices of the trace. Per rank, the NCCL kernels (of one stream, or all of
//! the rank's), sorted by start; instance k is the k-th call on one communicator on each of
//! its ranks where NCCL's NVTX payloads name the communicator of every kernel's call, the
//! kernels of one (process group, `Seq`) where PyTorch's `record_param_comms` ops give every
//! kernel both (PyTorch profiler traces), else the k-th kernel of one collective on every rank.
//! transfer_k = min duration over ranks, wait = duration - transfer_k; wait share = Σ wait /
//! Σ duration. Kernels are selected, never clipped. Reads the kernel scan, and the NVTX
//! ranges and launch records only to tie kernels to their communicators.
//! A quantity that compares ranks does not exist with fewer than two ranks or no matched
//! instance: it is null, with a note saying why, never 0.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Value, json};

use super::{
    Across, AnalysisSpec, ChartKind, Context, Evidence, Field, FieldKind, Params, QueryError,
    RankRows, ScopeRule, Table, Unit, quantiles_of,
};
use crate::engine::{Engine, ReduceParams};
use crate::scope::Semantics;
use crate::term as table;
use crate::trace::NameStyle;

mod map;
mod matching;
mod supplied;

pub use map::map_rows;
use matching::{Groups, choose_rule};
use supplied::{fill, keyed_rows};

/// Registry entry.
pub const SPEC: AnalysisSpec = AnalysisSpec {
    name: "nccl-skew",
    summary: "cross-rank start/end skew of matched NCCL kernels and the share of NCCL time spent waiting",
    fields: &[
        Field {
            name: "ranks",
            unit: Unit::Count,
            kind: FieldKind::Count,
            definition: "ranks (devices) compared",
        },
        Field {
            name: "matched",
            unit: Unit::Count,
            kind: FieldKind::Count,
            definition: "collective instances kept: the k-th kernel of one collective on every rank, all in the window and running at one moment",
        },
        Field {
            name: "nccl_ns",
            unit: Unit::Ns,
            kind: FieldKind::NcclKernelTime,
            definition: "sum of the durations of the matched kernels over all ranks (kernel time)",
        },
        Field {
            name: "wait_ns",
            unit: Unit::Ns,
            kind: FieldKind::NcclKernelTime,
            definition: "sum over instances and ranks of duration - the instance's minimum duration",
        },
        Field {
            name: "transfer_ns",
            unit: Unit::Ns,
            kind: FieldKind::NcclKernelTime,
            definition: "nccl_ns - wait_ns: the minimum duration of each instance times the number of ranks",
        },
        Field {
            name: "wait_share",
            unit: Unit::Ratio,
            kind: FieldKind::NcclKernelTime,
            definition: "wait_ns / nccl_ns (the denominator is matched NCCL kernel time, not wall time)",
        },
        Field {
            name: "start_skew_median_ns",
            unit: Unit::Ns,
            kind: FieldKind::Wall,
            definition: "median over instances of max start - min start",
        },
        Field {
            name: "start_skew_max_ns",
            unit: Unit::Ns,
            kind: FieldKind::Wall,
            definition: "largest start skew of an instance",
        },
        Field {
            name: "end_skew_median_ns",
            unit: Unit::Ns,
            kind: FieldKind::Wall,
            definition: "median over instances of max end - min end",
        },
        Field {
            name: "end_skew_max_ns",
            unit: Unit::Ns,
            kind: FieldKind::Wall,
            definition: "largest end skew of an instance",
        },
        Field {
            name: "unmatched",
            unit: Unit::Count,
            kind: FieldKind::Count,
            definition: "NCCL kernels in the window that no instance holds: a collective with fewer kernels on another rank; any fails gate R2",
        },
        Field {
            name: "cut_instances",
            unit: Unit::Count,
            kind: FieldKind::Count,
            definition: "instances the window cuts (some ranks' kernels in it, others not, or crossing an edge): never matched; with clip they fail gate R2",
        },
        Field {
            name: "overlap_failures",
            unit: Unit::Count,
            kind: FieldKind::Count,
            definition: "instances in the window whose kernels never run at one moment (max start > min end): not one collective, they fail gate R2",
        },
        Field {
            name: "straggler_last",
            unit: Unit::Count,
            kind: FieldKind::Count,
            definition: "instances in which the straggler (the rank that arrives last most often) arrived last",
        },
        Field {
            name: "straggler_share",
            unit: Unit::Ratio,
            kind: FieldKind::Count,
            definition: "straggler_last / matched: the share of instances the straggler arrived last in",
        },
        Field {
            name: "name_mismatches",
            unit: Unit::Count,
            kind: FieldKind::Count,
            definition: "matched instances whose kernels do not all have the same name",
        },
    ],
    sums: &[],
    params: &[super::STREAM, super::MATCH, super::REGEX, super::CLUSTER, super::ENGINE],
    scope: ScopeRule::Ranks,
    needs: &[Table::Kernels, Table::NcclTies],
    cross_rank: CROSS_RANK,
    ratios: &[("wait_share", "wait_ns / nccl_ns"), ("straggler_share", "straggler_last / matched")],
    per_name: false,
    per_device: &[],
    rank_rows: Some(RankRows { fields: RANK_FIELDS, ratios: RANK_RATIOS }),
    across: &[
        ("nccl_ns", Across::Sum),
        ("wait_ns", Across::Sum),
        ("transfer_ns", Across::Sum),
        ("wait_share", Across::Sum),
        ("start_skew_median_ns", Across::Spread),
        ("start_skew_max_ns", Across::Spread),
        ("end_skew_median_ns", Across::Spread),
        ("end_skew_max_ns", Across::Spread),
    ],
    stats: &[
        ("start_skew_median_ns", super::Stat::Median),
        ("start_skew_max_ns", super::Stat::Max),
        ("end_skew_median_ns", super::Stat::Median),
        ("end_skew_max_ns", super::Stat::Max),
        ("start_offset_median_ns", super::Stat::Median),
        ("start_offset_max_ns", super::Stat::Max),
        ("end_offset_median_ns", super::Stat::Median),
        ("end_offset_max_ns", super::Stat::Max),
    ],
    chart: Some(ChartKind::RankOffsets),
    terms: &["matching", "wait_share", "last_arrival"],
    run,
    table,
};

/// Keys of `values` that compare ranks: null with fewer than two ranks in the scope or no
/// matched instance.
pub const CROSS_RANK: &[&str] = &[
    "wait_ns",
    "transfer_ns",
    "wait_share",
    "start_skew_ns",
    "end_skew_ns",
    "start_skew_median_ns",
    "start_skew_max_ns",
    "end_skew_median_ns",
    "end_skew_max_ns",
    "rank_wait_ns",
    "rank_start_offset_ns",
    "rank_end_offset_ns",
    "last_arrivals",
    "most_often_last",
    "first_arrivals",
    "straggler_last",
    "straggler_share",
    "name_mismatches",
];

/// The fields of each rank's row (`rows`, one per rank, with `device` and, over a set,
/// `label`): what a claim binds with `rank:` (one rank) or `over_ranks:` (every rank).
pub const RANK_FIELDS: &[Field] = &[
    Field {
        name: "kernels",
        unit: Unit::Count,
        kind: FieldKind::Count,
        definition: "the rank's NCCL kernels that the window selects",
    },
    Field {
        name: "matched",
        unit: Unit::Count,
        kind: FieldKind::Count,
        definition: "collective instances kept (the same on every rank)",
    },
    Field {
        name: "arrived_last",
        unit: Unit::Count,
        kind: FieldKind::Count,
        definition: "instances in which the rank started last (ties: the lowest rank)",
    },
    Field {
        name: "arrived_first",
        unit: Unit::Count,
        kind: FieldKind::Count,
        definition: "instances in which the rank started first (ties: the lowest rank)",
    },
    Field {
        name: "last_share",
        unit: Unit::Ratio,
        kind: FieldKind::Count,
        definition: "arrived_last / matched",
    },
    Field {
        name: "first_share",
        unit: Unit::Ratio,
        kind: FieldKind::Count,
        definition: "arrived_first / matched",
    },
    Field {
        name: "straggler",
        unit: Unit::Count,
        kind: FieldKind::Count,
        definition: "1 when the rank arrived last most often (each of a tie), else 0",
    },
    Field {
        name: "wait_ns",
        unit: Unit::Ns,
        kind: FieldKind::NcclKernelTime,
        definition: "the rank's waiting summed over instances: its duration - the instance's minimum duration",
    },
    Field {
        name: "mean_wait_ns",
        unit: Unit::Ns,
        kind: FieldKind::NcclKernelTime,
        definition: "wait_ns / matched",
    },
    Field {
        name: "start_offset_median_ns",
        unit: Unit::Ns,
        kind: FieldKind::Wall,
        definition: "median over instances of the rank's start - the instance's earliest start",
    },
    Field {
        name: "start_offset_max_ns",
        unit: Unit::Ns,
        kind: FieldKind::Wall,
        definition: "largest start - earliest start of an instance",
    },
    Field {
        name: "end_offset_median_ns",
        unit: Unit::Ns,
        kind: FieldKind::Wall,
        definition: "median over instances of the rank's end - the instance's earliest end",
    },
    Field {
        name: "end_offset_max_ns",
        unit: Unit::Ns,
        kind: FieldKind::Wall,
        definition: "largest end - earliest end of an instance",
    },
];

/// Row fields that are a ratio of others.
pub const RANK_RATIOS: &[(&str, &str)] = &[
    ("last_share", "arrived_last / matched"),
    ("first_share", "arrived_first / matched"),
    ("mean_wait_ns", "wait_ns / matched"),
];

/// Row fields that compare ranks: null where the scope's values that compare ranks are.
const RANK_CROSS: &[&str] = &[
    "last_share",
    "first_share",
    "mean_wait_ns",
    "arrived_last",
    "arrived_first",
    "straggler",
    "wait_ns",
    "start_offset_median_ns",
    "start_offset_max_ns",
    "end_offset_median_ns",
    "end_offset_max_ns",
];

/// How instances are matched across ranks when the trace names no communicator: the k-th
/// kernel of one collective (the name's collective, [`collective`]) on each rank, each rank's
/// kernels in start order.
pub const MATCH_RULE: &str = "collective-ordinal";

/// How instances are matched when every compared kernel's NCCL call carries a payload that
/// names its communicator: the k-th call on one communicator on each of its ranks (NCCL
/// requires the ranks of a communicator to call its collectives in one order; its payloads
/// carry no sequence number, so the rule is an ordinal per communicator).
pub const COMM_RULE: &str = "communicator-ordinal";

/// How instances are matched when every compared kernel was launched inside a PyTorch
/// `record_param_comms` op that names its process group and sequence number: the kernels of
/// one (process group, `Seq`) on each rank of the group (PyTorch numbers a group's calls in
/// the same order on all its ranks).
pub const GROUP_RULE: &str = "process-group-sequence";

/// The rule a matching used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchRule {
    /// [`MATCH_RULE`].
    CollectiveOrdinal,
    /// [`COMM_RULE`].
    CommunicatorOrdinal,
    /// [`GROUP_RULE`].
    ProcessGroupSequence,
}

impl MatchRule {
    /// The name evidence discloses (`parameters.match_rule`).
    pub fn as_str(self) -> &'static str {
        match self {
            MatchRule::CollectiveOrdinal => MATCH_RULE,
            MatchRule::CommunicatorOrdinal => COMM_RULE,
            MatchRule::ProcessGroupSequence => GROUP_RULE,
        }
    }
}

/// A communicator of a communicator-ordinal matching.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Communicator {
    /// NCCL's communicator id.
    pub id: u64,
    /// Its members among the compared ranks (device ids).
    pub devices: Vec<i64>,
    /// Per member, its NCCL rank from the payload of its communicator init, where read.
    pub nccl_ranks: Vec<Option<i64>>,
    /// Its size from the payload of a communicator init, where read (None also when the
    /// members' inits disagree).
    pub size: Option<i64>,
}

/// A process group of a process-group-sequence matching.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessGroup {
    /// Its `Process Group Name`.
    pub name: String,
    /// Its members among the compared ranks (device ids).
    pub devices: Vec<i64>,
}

/// One matched instance: the kernel of each of its ranks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instance {
    /// The collective (with the communicator under [`COMM_RULE`]).
    pub collective: String,
    /// The indices (into [`Skew::ranks`]) of the ranks it spans, ascending: every compared
    /// rank under [`MATCH_RULE`], the communicator's members under [`COMM_RULE`].
    pub members: Vec<usize>,
    /// The kernel rows, one per member.
    pub rows: Vec<usize>,
}

/// The collective an NCCL kernel runs, from its name: `ncclKernel_AllReduce_RING_LL_Sum_float`
/// and `ncclDevKernel_AllReduce_Sum_f32_RING_LL` are `AllReduce`, `ncclDevKernel_SendRecv` is
/// `SendRecv`. A name without NCCL's kernel prefix is its own collective.
pub fn collective(name: &str) -> &str {
    for prefix in ["ncclKernel_", "ncclDevKernel_"] {
        if let Some(rest) = name.strip_prefix(prefix) {
            let end = rest.find(|c: char| !c.is_ascii_alphanumeric()).unwrap_or(rest.len());
            if end > 0 {
                return &rest[..end];
            }
        }
    }
    name
}

/// Where a matched instance lies against the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// Every rank's kernel is in the window: kept.
    Inside,
    /// No rank's kernel is selected by the window.
    Outside,
    /// Some ranks' kernels are in the window and others are not (or, with `clip`, a kernel
    /// crosses an edge): the window cuts the instance.
    Cut,
}

/// An instance the window cuts, for the finding that names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CutInstance {
    /// The collective.
    pub collective: String,
    /// Its 1-based ordinal among that collective's instances; under [`GROUP_RULE`], its `Seq`.
    pub ordinal: usize,
    /// Earliest start and latest end over the ranks.
    pub span: [i64; 2],
}

/// The result of matching, before it is put into evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skew {
    /// Device ids of the ranks.
    pub ranks: Vec<i64>,
    /// NCCL kernels per rank that the window selects.
    pub counts: Vec<i64>,
    /// Matched instances kept (every rank's kernel in the window, the overlap test passed).
    pub matched: usize,
    /// Σ durations of matched kernels.
    pub nccl: i64,
    /// Σ waits.
    pub wait: i64,
    /// Start skew per instance.
    pub start_skews: Vec<i64>,
    /// End skew per instance.
    pub end_skews: Vec<i64>,
    /// Wait per rank.
    pub rank_wait: Vec<i64>,
    /// Times each rank started last.
    pub last_arrivals: Vec<i64>,
    /// Times each rank started first.
    pub first_arrivals: Vec<i64>,
    /// Instances with differing names.
    pub name_mismatches: i64,
    /// Per rank, the stream its kernels were taken from (None: every stream).
    pub streams: Vec<Option<i64>>,
    /// Per rank, per instance: start minus the instance's earliest start.
    pub start_offsets: Vec<Vec<i64>>,
    /// Per rank, per instance: end minus the instance's earliest end.
    pub end_offsets: Vec<Vec<i64>>,
    /// Instances the window cuts (clip: reported as a broken match; contain: left out).
    pub cut: Vec<CutInstance>,
    /// Instances in the window whose kernels are not all running at one moment (max start >
    /// min end): not one collective, so not an instance.
    pub overlap_failures: Vec<CutInstance>,
    /// Per rank, NCCL kernels in the window that no instance holds (a collective with fewer
    /// kernels on another rank).
    pub unmatched: Vec<i64>,
    /// The kept instances, in time order.
    pub instances: Vec<Instance>,
    /// Per rank, the kept instances it is a member of.
    pub rank_matched: Vec<usize>,
    /// The rule the matching used.
    pub rule: MatchRule,
    /// The communicators of a communicator-ordinal matching.
    pub communicators: Vec<Communicator>,
    /// Ranks whose NCCL calls carry payloads that could not tie every kernel to a
    /// communicator, with the first reason: the matching fell back to [`MATCH_RULE`].
    pub payload_unusable: Vec<(i64, String)>,
    /// The process groups of a process-group-sequence matching.
    pub process_groups: Vec<ProcessGroup>,
    /// Ranks of a PyTorch profiler trace whose kernels could not all be tied to a process
    /// group and `Seq`, with the first reason: the matching fell back to [`MATCH_RULE`].
    pub group_unusable: Vec<(i64, String)>,
    /// Whether the ranks were read from PyTorch profiler traces: there, what would mend an
    /// ordinal matching is each collective's process group and `Seq`.
    pub pytorch_profiler: bool,
}

impl Skew {
    /// Whether the matching inside the window cannot be trusted: an unmatched kernel, an
    /// instance failing the overlap test, or (under `clip`) an instance the window cuts.
    pub fn broken(&self, semantics: Semantics) -> bool {
        self.unmatched.iter().any(|&u| u > 0)
            || !self.overlap_failures.is_empty()
            || (semantics == Semantics::Clip && !self.cut.is_empty())
    }
}

/// Matches the NCCL kernels of every rank into collective instances (every NCCL kernel of
/// the rank the scan holds, in start order, on its stream, so a window never shifts the
/// pairing): the k-th call on one communicator on each of its ranks when every kernel's NCCL
/// call names its communicator in a payload ([`COMM_RULE`]), else the k-th kernel of one
/// collective on each rank ([`MATCH_RULE`]). An instance is kept when every member's kernel
/// is in the window and all of them run at one moment (max start <= min end).
pub fn compute(ctx: &Context, ranks: &[i64], params: &Params) -> Result<Skew, QueryError> {
    if let Some(map) = &params.stream_map
        && let Some(r) = ranks.iter().find(|r| !map.contains_key(r))
    {
        return Err(QueryError::Failed {
            reason: format!("rank {r} has no stream in `--stream`"),
            hint: "give every compared rank its stream (RANK:STREAM,...), or `--stream auto`"
                .into(),
        });
    }
    let (selects, holds) = window_tests(ctx, params);
    // On a cluster, each rank's kernels and ties come from the scan of its file on a worker.
    let (streams, lists, counts, rule) = match &params.engine {
        Engine::Dask(at) => map::on_cluster(ctx, ranks, params, at.as_deref())?,
        _ => {
            let (streams, lists, counts) = rank_kernels(ctx, ranks, params, &selects);
            let rule = choose_rule(ctx, ranks, &lists);
            (streams, lists, counts, rule)
        }
    };
    let (rule, ties, payload_unusable, group_unusable) = rule;
    let Groups { groups, aligned, keys_of, communicators, process_groups } =
        Groups::new(ctx, ranks, &lists, ties);
    let mut out = Skew {
        ranks: ranks.to_vec(),
        streams,
        counts,
        matched: 0,
        nccl: 0,
        wait: 0,
        start_skews: Vec::new(),
        end_skews: Vec::new(),
        rank_wait: vec![0; ranks.len()],
        last_arrivals: vec![0; ranks.len()],
        first_arrivals: vec![0; ranks.len()],
        name_mismatches: 0,
        start_offsets: vec![Vec::new(); ranks.len()],
        end_offsets: vec![Vec::new(); ranks.len()],
        cut: Vec::new(),
        overlap_failures: Vec::new(),
        unmatched: vec![0; ranks.len()],
        instances: Vec::new(),
        rank_matched: vec![0; ranks.len()],
        rule,
        communicators,
        payload_unusable,
        process_groups,
        group_unusable,
        pytorch_profiler: ctx.trace.format.as_deref() == Some("pytorch-profiler"),
    };
    if let Engine::Supplied(_) = params.engine {
        let keyed = keyed_rows(ctx, &groups, &keys_of, &selects, &holds);
        let tile = params
            .window
            .filter(|_| params.tile)
            .map(|w| (w.start_ns, w.end_ns, params.counted_from));
        let reduce = ReduceParams {
            ranks: ranks.len() as i64,
            ordinal: rule == MatchRule::CollectiveOrdinal,
            tile,
        };
        let reduced = crate::engine::nccl_skew(&params.engine, &keyed, &reduce)
            .map_err(|e| QueryError::Failed { reason: e.reason, hint: e.hint })?;
        fill(ctx, &mut out, &groups, reduced)?;
        return Ok(out);
    }
    place_instances(ctx, params, &groups, &aligned, &selects, &holds, &mut out);
    sum_instances(ctx, &mut out)?;
    Ok(out)
}

/// Whether the window of `params` selects a kernel, and whether it holds all of it.
fn window_tests<'a>(
    ctx: &'a Context,
    params: &'a Params,
) -> (impl Fn(usize) -> bool + 'a, impl Fn(usize) -> bool + 'a) {
    let (k, window) = (&ctx.kernels, params.window);
    let selects = move |i: usize| match window {
        None => true,
        Some(w) => match params.semantics {
            Semantics::Clip => k.end[i] > w.start_ns && k.start[i] < w.end_ns,
            Semantics::Contain => k.start[i] >= w.start_ns && k.end[i] <= w.end_ns,
        },
    };
    let holds =
        move |i: usize| window.is_none_or(|w| k.start[i] >= w.start_ns && k.end[i] <= w.end_ns);
    (selects, holds)
}

/// Per rank of `ranks`: the stream its kernels are taken from, its NCCL kernels on that stream
/// (in start order, every one the scan holds, so a window never shifts the pairing) and how
/// many of them the window selects (`selects`; in a tile of a split, where they start).
fn rank_kernels(
    ctx: &Context,
    ranks: &[i64],
    params: &Params,
    selects: &dyn Fn(usize) -> bool,
) -> (Vec<Option<i64>>, Vec<Vec<usize>>, Vec<i64>) {
    let k = &ctx.kernels;
    let mut streams = Vec::with_capacity(ranks.len());
    // Per rank: its NCCL kernels on its stream, in start order.
    let mut lists: Vec<Vec<usize>> = Vec::with_capacity(ranks.len());
    let mut counts = Vec::with_capacity(ranks.len());
    for &d in ranks {
        let mut nccl: Vec<usize> = k.device_rows(d).filter(|&i| k.is_nccl(i)).collect();
        nccl.sort_by_key(|&i| (k.start[i], k.end[i]));
        // `auto`: the stream with the most of this rank's NCCL kernels in the window (ties:
        // the lowest).
        let stream = if let Some(map) = &params.stream_map {
            map.get(&d).copied()
        } else if params.stream_auto {
            let mut per: BTreeMap<i64, usize> = BTreeMap::new();
            for &i in nccl.iter().filter(|&&i| selects(i)) {
                *per.entry(k.stream[i]).or_default() += 1;
            }
            per.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0))).map(|(s, _)| *s)
        } else {
            params.stream
        };
        streams.push(stream);
        let named = |i: usize| {
            params.filter.as_ref().is_none_or(|f| f.matches(k.name(i, NameStyle::Short)))
        };
        let list: Vec<usize> = nccl
            .into_iter()
            .filter(|&i| stream.is_none_or(|s| k.stream[i] == s) && named(i))
            .collect();
        // In a tile of a split, a kernel counts where it starts.
        counts.push(
            list.iter()
                .filter(|&&i| selects(i) && (!params.tile || params.counts(k.start[i])))
                .count() as i64,
        );
        lists.push(list);
    }
    (streams, lists, counts)
}

/// Places the k-th kernels of each group (`groups`, with the keys every member has in
/// `aligned`) as instance k: kept in `out`, cut by the window, or failing the overlap test;
/// and counts each rank's kernels in the window that no instance holds. `selects` and `holds`
/// say whether the window selects a kernel and whether it holds all of it.
fn place_instances(
    ctx: &Context,
    params: &Params,
    groups: &[(String, Vec<Vec<usize>>)],
    aligned: &[Option<Vec<i64>>],
    selects: &dyn Fn(usize) -> bool,
    holds: &dyn Fn(usize) -> bool,
    out: &mut Skew,
) {
    let k = &ctx.kernels;
    let (window, rule, ranks) = (params.window, out.rule, out.ranks.len());
    for ((group, per), seqs) in groups.iter().zip(aligned) {
        // Under the ordinal rule a rank without the collective is a member with no kernel:
        // every kernel of the others is then unmatched.
        let members: Vec<usize> = match rule {
            MatchRule::CollectiveOrdinal => (0..ranks).collect(),
            MatchRule::CommunicatorOrdinal | MatchRule::ProcessGroupSequence => {
                (0..ranks).filter(|&r| !per[r].is_empty()).collect()
            }
        };
        let n = match seqs {
            Some(seqs) => seqs.len(),
            None => members.iter().map(|&r| per[r].len()).min().unwrap_or(0),
        };
        // A communicator or process group with one compared rank has no counterpart here.
        let n = if rule != MatchRule::CollectiveOrdinal && members.len() < 2 && ranks >= 2 {
            0
        } else {
            n
        };
        for &r in &members {
            out.unmatched[r] += per[r][n..].iter().filter(|&&i| selects(i)).count() as i64;
        }
        let column = |j: usize| -> Vec<usize> { members.iter().map(|&r| per[r][j]).collect() };
        for (j, rows) in (0..n).map(column).enumerate() {
            let selected = rows.iter().filter(|&&i| selects(i)).count();
            let smin = rows.iter().map(|&i| k.start[i]).min().unwrap_or(0);
            let smax = rows.iter().map(|&i| k.start[i]).max().unwrap_or(0);
            let emin = rows.iter().map(|&i| k.end[i]).min().unwrap_or(0);
            let emax = rows.iter().map(|&i| k.end[i]).max().unwrap_or(0);
            let place = match window {
                // A tile of a split holds the instances that start in it (the first tile also
                // those that start before it and reach into it): one tile each, none cut.
                Some(w) if params.tile => {
                    if smin < w.end_ns && emax > w.start_ns && params.counts(smin) {
                        Place::Inside
                    } else {
                        Place::Outside
                    }
                }
                _ if rows.iter().all(|&i| selects(i) && holds(i)) => Place::Inside,
                _ if selected == 0 => Place::Outside,
                _ => Place::Cut,
            };
            let label = match rule {
                MatchRule::CollectiveOrdinal => group.clone(),
                MatchRule::CommunicatorOrdinal => {
                    format!("{} on {group}", collective(k.name(rows[0], NameStyle::Short)))
                }
                MatchRule::ProcessGroupSequence => format!(
                    "{} on process group {group}",
                    collective(k.name(rows[0], NameStyle::Short))
                ),
            };
            let ordinal = match seqs {
                Some(seqs) => usize::try_from(seqs[j]).unwrap_or(usize::MAX),
                None => j + 1,
            };
            let this = || CutInstance { collective: label.clone(), ordinal, span: [smin, emax] };
            match place {
                Place::Outside => continue,
                Place::Cut => {
                    out.cut.push(this());
                    continue;
                }
                Place::Inside => {}
            }
            if rows.len() >= 2 && smax > emin {
                out.overlap_failures.push(this());
                continue;
            }
            out.instances.push(Instance { collective: label, members: members.clone(), rows });
        }
    }
}

/// The kept instances of `out` in time order (cut and failed ones by span), and what they
/// add up to: durations and waits, overall and per rank, skews, offsets, arrivals and name
/// mismatches.
fn sum_instances(ctx: &Context, out: &mut Skew) -> Result<(), QueryError> {
    let k = &ctx.kernels;
    // Kept instances in time order.
    out.instances.sort_by_key(|x| {
        (x.rows.iter().map(|&i| k.start[i]).min().unwrap_or(0), x.rows.first().copied())
    });
    out.cut.sort_by_key(|c| c.span);
    out.overlap_failures.sort_by_key(|c| c.span);
    out.matched = out.instances.len();
    for x in &out.instances {
        let rows = &x.rows;
        let durs: Vec<i64> = rows.iter().map(|&i| k.end[i] - k.start[i]).collect();
        let transfer = durs.iter().copied().min().unwrap_or(0);
        for (m, &d) in durs.iter().enumerate() {
            let r = x.members[m];
            // Each duration and wait fits (timestamps are bounded when read); their sums are
            // checked.
            let add = |acc: i64, x: i64, what: &str| {
                acc.checked_add(x).ok_or_else(|| super::overflow(what))
            };
            out.nccl = add(out.nccl, d, "NCCL kernel time")?;
            out.wait = add(out.wait, d - transfer, "NCCL wait time")?;
            out.rank_wait[r] = add(out.rank_wait[r], d - transfer, "NCCL wait time of a rank")?;
            out.rank_matched[r] += 1;
        }
        let starts = rows.iter().map(|&i| k.start[i]);
        let ends = rows.iter().map(|&i| k.end[i]);
        let (smin, smax) = (starts.clone().min().unwrap_or(0), starts.clone().max().unwrap_or(0));
        out.start_skews.push(smax - smin);
        let emin = ends.clone().min().unwrap_or(0);
        out.end_skews.push(ends.max().unwrap_or(0) - emin);
        for (m, &i) in rows.iter().enumerate() {
            out.start_offsets[x.members[m]].push(k.start[i] - smin);
            out.end_offsets[x.members[m]].push(k.end[i] - emin);
        }
        // The last arrival is the rank with the latest start, the first the one with the
        // earliest; ties go to the lowest rank.
        if let Some(m) = rows.iter().position(|&i| k.start[i] == smax) {
            out.last_arrivals[x.members[m]] += 1;
        }
        if let Some(m) = rows.iter().position(|&i| k.start[i] == smin) {
            out.first_arrivals[x.members[m]] += 1;
        }
        let first = k.short[rows[0]];
        if rows.iter().any(|&i| k.short[i] != first) {
            out.name_mismatches += 1;
        }
    }
    Ok(())
}

/// Order statistics of a sample of differences (ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(rename = "SkewSpread")]
pub struct Spread {
    /// The smallest.
    pub min: i64,
    /// The lower median.
    pub median: i64,
    /// The 90th percentile, nearest rank.
    pub p90: i64,
    /// The largest.
    pub max: i64,
}

impl From<super::Quantiles> for Spread {
    fn from(q: super::Quantiles) -> Spread {
        Spread { min: q.min, median: q.median, p90: q.p90, max: q.max }
    }
}

/// The values of the ranks in scope. The quantities that compare ranks are absent over fewer
/// than two ranks, without a matched instance, or when the matching in the window does not
/// hold; a note says which.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
#[schemars(rename = "NcclSkewValues")]
pub struct Values {
    /// Ranks compared.
    pub ranks: i64,
    /// Instances matched on every rank.
    pub matched: i64,
    /// NCCL kernels of each rank.
    pub instance_counts: BTreeMap<i64, i64>,
    /// NCCL kernels without a counterpart on every rank.
    pub unmatched: i64,
    /// Instances a window edge cuts.
    pub cut_instances: i64,
    /// Instances failing the overlap test.
    pub overlap_failures: i64,
    /// NCCL kernel time of the matched instances, over ranks.
    pub nccl_ns: i64,
    /// Time ranks wait for the last to arrive, over ranks and instances.
    pub wait_ns: Option<i64>,
    /// `nccl_ns - wait_ns`.
    pub transfer_ns: Option<i64>,
    /// `wait_ns / nccl_ns`.
    pub wait_share: Option<f64>,
    /// Start skews of the instances.
    pub start_skew_ns: Option<Spread>,
    /// End skews of the instances.
    pub end_skew_ns: Option<Spread>,
    /// Their median.
    pub start_skew_median_ns: Option<i64>,
    /// Their maximum.
    pub start_skew_max_ns: Option<i64>,
    /// The end skews' median.
    pub end_skew_median_ns: Option<i64>,
    /// Their maximum.
    pub end_skew_max_ns: Option<i64>,
    /// Each rank's wait.
    pub rank_wait_ns: Option<BTreeMap<i64, i64>>,
    /// Each rank's start offsets from the earliest rank (absent for a rank in no instance).
    pub rank_start_offset_ns: Option<BTreeMap<i64, Option<Spread>>>,
    /// Each rank's end offsets.
    pub rank_end_offset_ns: Option<BTreeMap<i64, Option<Spread>>>,
    /// How often each rank arrived last.
    pub last_arrivals: Option<BTreeMap<i64, i64>>,
    /// How often each rank arrived first.
    pub first_arrivals: Option<BTreeMap<i64, i64>>,
    /// The ranks that arrived last most often (several on a tie).
    pub most_often_last: Option<Vec<i64>>,
    /// How often they did.
    pub straggler_last: Option<i64>,
    /// `straggler_last / matched`.
    pub straggler_share: Option<f64>,
    /// Instances whose kernels' names differ across ranks.
    pub name_mismatches: Option<i64>,
}

/// One rank: its arrivals, waits and offsets over the instances it is a member of.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(rename = "NcclSkewRow")]
pub struct Row {
    /// The rank.
    pub device: i64,
    /// Its label, over a set of files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Its NCCL kernels.
    pub kernels: i64,
    /// Of them, without a counterpart on every rank.
    pub unmatched: i64,
    /// Instances it is a member of.
    pub matched: i64,
    /// How often it arrived last.
    pub arrived_last: Option<i64>,
    /// How often it arrived first.
    pub arrived_first: Option<i64>,
    /// 1 when it is (one of) the straggler(s).
    pub straggler: Option<i64>,
    /// Its wait.
    pub wait_ns: Option<i64>,
    /// `arrived_last / matched`.
    pub last_share: Option<f64>,
    /// `arrived_first / matched`.
    pub first_share: Option<f64>,
    /// `wait_ns / matched`.
    pub mean_wait_ns: Option<f64>,
    /// The median of its start offsets.
    pub start_offset_median_ns: Option<i64>,
    /// Their maximum.
    pub start_offset_max_ns: Option<i64>,
    /// The median of its end offsets.
    pub end_offset_median_ns: Option<i64>,
    /// Their maximum.
    pub end_offset_max_ns: Option<i64>,
}

/// A rank's row is labelled with its rank over a set of files.
impl super::EvidenceRow for Row {
    fn label_device(&mut self, label: &dyn Fn(i64) -> String) {
        self.label = Some(label(self.device));
    }
}

/// Runs the analysis.
pub fn run(params: &Params, ctx: &Context) -> Result<Evidence, QueryError> {
    let ranks = ctx.resolve_devices(&params.devices)?;
    ctx.check_window(params.window, &ranks)?;
    let s = compute(ctx, &ranks, params)?;
    let mut ev = ctx.evidence(&SPEC, params, ranks.clone());
    disclose_rule(&mut ev, &s, ctx);
    if params.stream_auto || params.stream_map.is_some() {
        let mut all: Vec<i64> = s.streams.iter().flatten().copied().collect();
        all.sort_unstable();
        all.dedup();
        ev.scope.streams = Some(all);
        ev.parameters.insert("stream".into(), stream_parameter(params));
        let per: BTreeMap<String, Value> = s
            .ranks
            .iter()
            .zip(&s.streams)
            .map(|(r, st)| (r.to_string(), st.map_or(Value::Null, |x| json!(x))))
            .collect();
        ev.parameters.insert("rank_streams".into(), json!(per));
        ev.note(
            if params.stream_auto { "note.stream_auto" } else { "note.stream_map" },
            &[(
                "streams",
                s.ranks
                    .iter()
                    .zip(&s.streams)
                    .map(|(r, st)| {
                        format!("{r}: {}", st.map_or("none".to_string(), |x| x.to_string()))
                    })
                    .collect::<Vec<_>>()
                    .join(", "),
            )],
        );
    } else {
        ev.scope.streams = params.stream.map(|s| vec![s]);
        ev.parameters.insert("stream".into(), stream_parameter(params));
    }
    ev.window.effective_ns = effective(ctx, &ranks, params, &s);

    // The quantities that compare ranks exist only over two ranks or more with a matched
    // instance and a matching that holds; the notes below say why they do not.
    let compared = s.ranks.len() >= 2 && s.matched > 0;
    let broken = s.broken(params.semantics);
    let cross = compared && !broken;
    let spread = |v: &[i64]| {
        let mut v = v.to_vec();
        v.sort_unstable();
        quantiles_of(&v).map(Spread::from)
    };
    let by_rank = |v: &[i64]| -> BTreeMap<i64, i64> {
        s.ranks.iter().copied().zip(v.iter().copied()).collect()
    };
    // Every rank that arrived last most often, ascending: a tie is a list of several.
    let most = s.last_arrivals.iter().copied().max().filter(|&n| n > 0);
    let most_last: Vec<i64> = s
        .ranks
        .iter()
        .zip(&s.last_arrivals)
        .filter(|(_, n)| Some(**n) == most)
        .map(|(r, _)| *r)
        .collect();
    let offsets = |v: &[Vec<i64>]| -> BTreeMap<i64, Option<Spread>> {
        s.ranks.iter().copied().zip(v.iter().map(|o| spread(o))).collect()
    };
    let (start, end) = (spread(&s.start_skews), spread(&s.end_skews));
    let when = |x| if cross { x } else { None };
    ev.values = Some(super::values::Values::NcclSkew(Box::new(Values {
        ranks: s.ranks.len() as i64,
        matched: s.matched as i64,
        instance_counts: by_rank(&s.counts),
        unmatched: s.unmatched.iter().sum(),
        cut_instances: s.cut.len() as i64,
        overlap_failures: s.overlap_failures.len() as i64,
        nccl_ns: s.nccl,
        wait_ns: when(Some(s.wait)),
        transfer_ns: when(Some(s.nccl - s.wait)),
        wait_share: if cross && s.nccl > 0 { Some(s.wait as f64 / s.nccl as f64) } else { None },
        start_skew_ns: start.filter(|_| cross),
        end_skew_ns: end.filter(|_| cross),
        start_skew_median_ns: when(start.map(|x| x.median)),
        start_skew_max_ns: when(start.map(|x| x.max)),
        end_skew_median_ns: when(end.map(|x| x.median)),
        end_skew_max_ns: when(end.map(|x| x.max)),
        rank_wait_ns: cross.then(|| by_rank(&s.rank_wait)),
        rank_start_offset_ns: cross.then(|| offsets(&s.start_offsets)),
        rank_end_offset_ns: cross.then(|| offsets(&s.end_offsets)),
        last_arrivals: cross.then(|| by_rank(&s.last_arrivals)),
        first_arrivals: cross.then(|| by_rank(&s.first_arrivals)),
        most_often_last: cross.then(|| most_last.clone()),
        straggler_last: when(Some(most.unwrap_or(0))),
        straggler_share: if cross { ratio(most.unwrap_or(0), s.matched as i64) } else { None },
        name_mismatches: when(Some(s.name_mismatches)),
    })));
    ev.rows = Some(super::values::Rows::NcclSkew(rank_rows(ctx, &s, &most_last, cross)));
    leave_uncomparable_null(&mut ev, ctx, &s, params.semantics, CROSS_RANK, RANK_CROSS);
    if broken {
        leave_broken_null(&mut ev, &s, params, CROSS_RANK, RANK_CROSS);
    } else if !s.cut.is_empty() {
        // `contain`: instances the window cuts are left out, and said so.
        ev.note(
            "note.cut_left_out",
            &[("n", s.cut.len().to_string()), ("list", instance_list(&s.cut))],
        );
    }
    if compared && !broken {
        ev.note("note.transfer_estimate", &[]);
    }
    if !ev.scope.missing_devices.is_empty() {
        let missing = crate::scope::format_device_list(&ev.scope.missing_devices);
        ev.note("note.missing_ranks", &[("missing", missing)]);
    }
    if compared && s.name_mismatches > 0 {
        ev.note("note.name_mismatches", &[("n", s.name_mismatches.to_string())]);
    }
    if compared && !broken && most_last.len() > 1 {
        let tied = most_last.iter().map(i64::to_string).collect::<Vec<_>>().join(", ");
        let n = most.unwrap_or(0).to_string();
        ev.note(
            "note.last_tie",
            &[("devices", tied), ("n", n), ("matched", s.matched.to_string())],
        );
    }
    Ok(ev)
}

/// Discloses the matching rule (`parameters.match_rule`) and, under [`COMM_RULE`], the
/// communicators (`parameters.communicators`); says so when payloads exist but could not be
/// used for a rank.
pub(super) fn disclose_rule(ev: &mut Evidence, s: &Skew, ctx: &Context) {
    ev.parameters.insert("match_rule".into(), json!(s.rule.as_str()));
    // Schemas registered, values not exported (the default of `nsys export`): the ordinal
    // rule stands in for the communicator's, and the option that keeps them is named.
    let no_values = ctx.nvtx.as_ref().is_none_or(|n| n.ranges.payloads.is_empty());
    let compared = s.counts.iter().any(|&n| n > 0);
    if s.rule == MatchRule::CollectiveOrdinal
        && compared
        && ctx.inventory.payload_schemas
        && no_values
    {
        ev.note("note.payloads_not_exported", &[]);
    }
    if s.rule == MatchRule::CommunicatorOrdinal {
        let list: Vec<Value> = s
            .communicators
            .iter()
            .map(|c| {
                json!({
                    "id": format!("0x{:016x}", c.id),
                    "devices": c.devices,
                    "nccl_ranks": c.nccl_ranks,
                    "size": c.size,
                })
            })
            .collect();
        ev.parameters.insert("communicators".into(), Value::Array(list));
        let text = s
            .communicators
            .iter()
            .map(|c| {
                format!(
                    "0x{:016x} ({} {})",
                    c.id,
                    if c.devices.len() == 1 { "device" } else { "devices" },
                    crate::scope::format_device_list(&c.devices)
                )
            })
            .collect::<Vec<_>>()
            .join(", ");
        ev.note(
            "note.match_communicators",
            &[("n", s.communicators.len().to_string()), ("list", text)],
        );
        // A communicator larger than its members here: the others are outside the scope.
        let partial: Vec<String> = s
            .communicators
            .iter()
            .filter(|c| c.size.is_some_and(|n| n > c.devices.len() as i64))
            .map(|c| format!("0x{:016x} ({} of {})", c.id, c.devices.len(), c.size.unwrap_or(0)))
            .collect();
        if !partial.is_empty() {
            ev.note("note.comm_partial", &[("list", partial.join(", "))]);
        }
    }
    if s.rule == MatchRule::ProcessGroupSequence {
        let list: Vec<Value> = s
            .process_groups
            .iter()
            .map(|g| json!({ "name": g.name, "devices": g.devices }))
            .collect();
        ev.parameters.insert("process_groups".into(), Value::Array(list));
        let text = s
            .process_groups
            .iter()
            .map(|g| {
                format!(
                    "{} ({} {})",
                    g.name,
                    if g.devices.len() == 1 { "device" } else { "devices" },
                    crate::scope::format_device_list(&g.devices)
                )
            })
            .collect::<Vec<_>>()
            .join(", ");
        ev.note(
            "note.match_process_groups",
            &[("n", s.process_groups.len().to_string()), ("list", text)],
        );
    }
    if !s.group_unusable.is_empty() {
        let devices: Vec<i64> = s.group_unusable.iter().map(|(d, _)| *d).collect();
        let (d, why) = &s.group_unusable[0];
        ev.note(
            "note.group_unusable",
            &[
                ("devices", crate::scope::format_device_list(&devices)),
                ("device", d.to_string()),
                ("reason", why.clone()),
            ],
        );
    }
    if !s.payload_unusable.is_empty() {
        let devices: Vec<i64> = s.payload_unusable.iter().map(|(d, _)| *d).collect();
        let (d, why) = &s.payload_unusable[0];
        ev.note(
            "note.payload_unusable",
            &[
                ("devices", crate::scope::format_device_list(&devices)),
                ("device", d.to_string()),
                ("reason", why.clone()),
            ],
        );
    }
}

/// The interval a piece of evidence covers: kernels are kept whole, so within a window
/// (clip as contain) the span of the kept instances; else the devices' kernel span.
pub(super) fn effective(
    ctx: &Context,
    ranks: &[i64],
    params: &Params,
    s: &Skew,
) -> Option<[i64; 2]> {
    if params.window.is_none() {
        return super::effective_window(ctx, ranks, params);
    }
    let k = &ctx.kernels;
    s.instances.iter().flat_map(|x| x.rows.iter().copied()).fold(None, |span, i| {
        Some(span.map_or([k.start[i], k.end[i]], |[a, b]: [i64; 2]| {
            [a.min(k.start[i]), b.max(k.end[i])]
        }))
    })
}

/// One row per rank: its arrivals, waits and offsets over the kept instances, the fields a
/// claim binds with `rank:` or `over_ranks:`.
fn rank_rows(ctx: &Context, s: &Skew, most_last: &[i64], cross: bool) -> Vec<Row> {
    let set = ctx.trace.set.as_deref();
    s.ranks
        .iter()
        .enumerate()
        .map(|(r, &rank)| {
            let q = |v: &[i64]| {
                let mut v = v.to_vec();
                v.sort_unstable();
                quantiles_of(&v).filter(|_| cross)
            };
            let (so, eo) = (q(&s.start_offsets[r]), q(&s.end_offsets[r]));
            let matched = s.rank_matched[r] as i64;
            let when = |x: i64| cross.then_some(x);
            Row {
                device: rank,
                label: set.map(|set| set.label(rank)),
                kernels: s.counts[r],
                unmatched: s.unmatched[r],
                matched,
                arrived_last: when(s.last_arrivals[r]),
                arrived_first: when(s.first_arrivals[r]),
                straggler: when(i64::from(most_last.contains(&rank))),
                wait_ns: when(s.rank_wait[r]),
                last_share: ratio(s.last_arrivals[r], matched).filter(|_| cross),
                first_share: ratio(s.first_arrivals[r], matched).filter(|_| cross),
                mean_wait_ns: ratio(s.rank_wait[r], matched).filter(|_| cross),
                start_offset_median_ns: so.map(|q| q.median),
                start_offset_max_ns: so.map(|q| q.max),
                end_offset_median_ns: eo.map(|q| q.median),
                end_offset_max_ns: eo.map(|q| q.max),
            }
        })
        .collect()
}

/// A ratio for display (its exact value is evaluated from the declared formula), absent
/// without a denominator.
fn ratio(num: i64, den: i64) -> Option<f64> {
    (den > 0).then(|| num as f64 / den as f64)
}

/// The instances of a finding, at most five, each as `AllReduce #2 (2.4812-2.5263 s)`.
pub(super) fn instance_list(list: &[CutInstance]) -> String {
    let mut out: Vec<String> = list
        .iter()
        .take(5)
        .map(|c| {
            format!(
                "{} #{} ({}-{} s)",
                c.collective,
                c.ordinal,
                crate::scope::format_seconds(c.span[0]),
                crate::scope::format_seconds(c.span[1])
            )
        })
        .collect();
    if list.len() > 5 {
        out.push(format!("… {} more", list.len() - 5));
    }
    out.join(", ")
}

/// `parameters.stream` of the NCCL analyses, as `--stream` takes it: a stream id as a number,
/// `auto` or a per-rank map as text, null for every stream.
pub(super) fn stream_parameter(params: &Params) -> Value {
    if params.stream_auto || params.stream_map.is_some() {
        (super::STREAM.get)(params).map_or(Value::Null, |s| json!(s))
    } else {
        params.stream.map_or(Value::Null, |s| json!(s))
    }
}

/// Nulls every quantity that compares ranks when the matching in the window cannot be
/// trusted, one note per reason, each naming what broke it; what mends it is the need.
pub(super) fn leave_broken_null(
    ev: &mut Evidence,
    s: &Skew,
    params: &Params,
    fields: &[&str],
    row_fields: &[&str],
) {
    if params.semantics == Semantics::Clip && !s.cut.is_empty() {
        ev.leave_null(
            fields,
            "note.window_cuts",
            &[("n", s.cut.len().to_string()), ("list", instance_list(&s.cut))],
            ("need.whole_instances", &[]),
        );
    }
    // On PyTorch profiler traces matched by ordinal, the missing evidence is the process
    // group and `Seq` of every collective, not another window.
    let mends = if s.pytorch_profiler && s.rule == MatchRule::CollectiveOrdinal {
        "need.kineto_group_seq"
    } else {
        "need.matched_kernels"
    };
    let unmatched: i64 = s.unmatched.iter().sum();
    if unmatched > 0 {
        let per = s
            .ranks
            .iter()
            .zip(&s.unmatched)
            .filter(|(_, u)| **u > 0)
            .map(|(r, u)| format!("{r}:{u}"))
            .collect::<Vec<_>>()
            .join(", ");
        ev.leave_null(
            fields,
            "note.unmatched_kernels",
            &[("n", unmatched.to_string()), ("per_rank", per)],
            (mends, &[]),
        );
    }
    if !s.overlap_failures.is_empty() {
        ev.leave_null(
            fields,
            "note.overlap_failures",
            &[
                ("n", s.overlap_failures.len().to_string()),
                ("list", instance_list(&s.overlap_failures)),
            ],
            (mends, &[]),
        );
    }
    assert_rank_rows_null(ev, row_fields);
}

/// Checks, in a debug build, that the rows were built without the per-rank quantities the
/// notes explain as null.
pub(super) fn assert_rank_rows_null(ev: &Evidence, fields: &[&str]) {
    if let Some(typed) = &ev.rows {
        debug_assert!(
            typed
                .to_maps()
                .iter()
                .all(|r| fields.iter().all(|f| r.get(*f).is_none_or(Value::is_null))),
            "typed rows hold a per-rank quantity that a note explains as null"
        );
    }
}

/// Nulls the quantities that compare ranks when there is nothing to compare, with a note per
/// reason, the most basic first: no NCCL kernel at all, one rank, no matched instance.
pub(super) fn leave_uncomparable_null(
    ev: &mut Evidence,
    ctx: &Context,
    s: &Skew,
    semantics: Semantics,
    fields: &[&str],
    row_fields: &[&str],
) {
    let devices = crate::scope::format_device_list(&s.ranks);
    if s.counts.iter().all(|&c| c == 0) {
        if !ctx.kernels.nccl_in_table {
            ev.leave_null(fields, "note.no_nccl_in_trace", &[], ("need.nccl_trace", &[]));
        } else {
            ev.leave_null(
                fields,
                "note.no_nccl",
                &[("devices", devices.clone())],
                ("need.nccl_kernels", &[]),
            );
        }
    }
    if s.ranks.len() < 2 {
        ev.leave_null(fields, "note.one_rank", &[("devices", devices)], ("need.two_ranks", &[]));
    } else if s.matched == 0 && s.counts.iter().any(|&c| c > 0) {
        let empty: Vec<i64> =
            s.ranks.iter().zip(&s.counts).filter(|(_, c)| **c == 0).map(|(r, _)| *r).collect();
        if !empty.is_empty() {
            ev.leave_null(
                fields,
                "note.no_matched",
                &[("empty", crate::scope::format_device_list(&empty))],
                ("need.matched", &[]),
            );
        } else if !s.broken(semantics) {
            // `contain`: every instance the window selects is cut, and left out.
            ev.leave_null(
                fields,
                "note.no_whole_instance",
                &[("n", s.cut.len().to_string())],
                ("need.whole_instances", &[]),
            );
        }
    }
    if s.ranks.len() < 2 || s.matched == 0 {
        assert_rank_rows_null(ev, row_fields);
    }
}

/// The rows of a cross-rank analysis as a terminal table: rank and label (over a set), then
/// `columns` with each row's cells; empty without rows.
pub(super) fn rank_table(
    columns: &[crate::term::Column],
    rows: Vec<(i64, Option<&str>, Vec<String>)>,
    width: usize,
) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let out: Vec<Vec<String>> = rows
        .into_iter()
        .map(|(rank, label, cells)| {
            let mut row = vec![rank.to_string(), label.unwrap_or("").to_string()];
            row.extend(cells);
            row
        })
        .collect();
    let mut all = vec![crate::term::Column::value("rank"), crate::term::Column::text("label")];
    all.extend_from_slice(columns);
    format!("\n{}", table::render(&all, &out, width))
}

/// The terminal table of `verdict query` (below the scope lines).
pub fn table(ev: &Evidence, width: usize) -> String {
    use super::show::{dur, num, share};
    use super::values::{Rows, Values as Any};
    use crate::term::Column;
    let mut s = String::new();
    let opt = |x: Option<i64>| x.map_or("n/a".to_string(), |x| x.to_string());
    let per = |m: &BTreeMap<i64, i64>, f: &dyn Fn(i64) -> String| {
        m.iter().map(|(r, x)| format!("{r}:{}", f(*x))).collect::<Vec<_>>().join(" ")
    };
    if let Some(Any::NcclSkew(v)) = &ev.values {
        let line = |label: &str, text: &str| table::hang(&format!("{label:<13}"), text, 13, width);
        let skew = |x: Option<Spread>| {
            format!(
                "min {} · median {} · p90 {} · max {}",
                dur(x.map(|x| x.min)),
                dur(x.map(|x| x.median)),
                dur(x.map(|x| x.p90)),
                dur(x.map(|x| x.max))
            )
        };
        s += &line("ranks", &format!("{} · matched instances {}", v.ranks, v.matched));
        s += &line("per rank", &per(&v.instance_counts, &|x| x.to_string()));
        s += &line(
            "wait share",
            &format!(
                "{} / {} = {}",
                dur(v.wait_ns),
                dur(v.nccl_ns),
                share(v.wait_ns, Some(v.nccl_ns))
            ),
        );
        s += &line("start skew", &skew(v.start_skew_ns));
        s += &line("end skew", &skew(v.end_skew_ns));
        s += &line(
            "instances",
            &format!(
                "matched {} · cut by the window {} · failing the overlap test {} · unmatched kernels {} · rule {}",
                v.matched,
                v.cut_instances,
                v.overlap_failures,
                v.unmatched,
                ev.parameters.get("match_rule").and_then(Value::as_str).unwrap_or(MATCH_RULE)
            ),
        );
        s += &line(
            "rank wait",
            &v.rank_wait_ns.as_ref().map_or("n/a".into(), |m| per(m, &|x| dur(x))),
        );
        // A list: several devices when they tie.
        let last = v.most_often_last.clone().unwrap_or_default();
        if let Some(first) = last.first() {
            s += &table::hang(
                "",
                &format!(
                    "last to arrive most often: {} {} ({} of {} instances{})",
                    if ev.trace.set.is_some() { "rank" } else { "device" },
                    last.iter()
                        .map(|r| match ev.trace.set.as_deref() {
                            Some(set) => format!("{r} {}", set.label(*r)),
                            None => r.to_string(),
                        })
                        .collect::<Vec<_>>()
                        .join(", "),
                    opt(v.last_arrivals.as_ref().and_then(|m| m.get(first).copied())),
                    v.matched,
                    if last.len() > 1 { " each, a tie" } else { "" }
                ),
                2,
                width,
            );
        }
    }
    // Per rank: the fields a claim binds with `rank:` or `over_ranks:`.
    let rows = match &ev.rows {
        Some(Rows::NcclSkew(rows)) => rows
            .iter()
            .map(|r| {
                let cells = vec![
                    num(r.kernels),
                    opt(r.arrived_last),
                    opt(r.arrived_first),
                    dur(r.wait_ns),
                    dur(r.start_offset_median_ns),
                    dur(r.start_offset_max_ns),
                    dur(r.end_offset_max_ns),
                ];
                (r.device, r.label.as_deref(), cells)
            })
            .collect(),
        _ => Vec::new(),
    };
    s += &rank_table(
        &[
            Column::number("kernels"),
            Column::number("last"),
            Column::number("first"),
            Column::number("wait"),
            Column::number("start Δ median"),
            Column::number("start Δ max"),
            Column::number("end Δ max"),
        ],
        rows,
        width,
    );
    s
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod table_tests;

//! `nccl-calls`: the CPU side of matched NCCL collectives, and what makes up a start skew.
//!
//! Instances are matched as `nccl-skew` matches them. For each rank's kernel of an instance:
//! the launch record of the CUDA runtime call that launched it (joined on `correlationId`),
//! the NCCL call that encloses that launch on the launching thread (the innermost NVTX range
//! whose name starts with `nccl`, as NCCL's NVTX domain names its API calls:
//! `ncclAllReduce`, `ncclGroupEnd`...), and the communicator init before it (the latest range
//! whose name holds `CommInit` that ends at or before the call starts, on the same thread).
//!
//! A kernel starts at `call start + (launch end - call start) + (kernel start - launch end)`:
//! the CPU's arrival at the collective, the launch (the runtime call, which may block), and the
//! queueing behind earlier work on the stream (negative when the kernel starts before the
//! launch call returns). Between the rank that starts last and the one that starts first, the
//! differences of the three terms add up exactly to the instance's start skew; the
//! difference of the init ends is the part of the first term that communicator set-up
//! explains. Across nodes, each difference carries the nodes' clock synchronisation error.

use schemars::JsonSchema;
use serde::Serialize;

use super::nccl_skew::{self, Skew};
use super::{
    AnalysisSpec, Context, Evidence, Field, FieldKind, Params, QueryError, RankRows, ScopeRule,
    Table, Unit,
};
use crate::scope::format_device_list;
use crate::term as table;
use crate::trace::payload::{Decoded, NcclPayload};

/// Registry entry.
pub const SPEC: AnalysisSpec = AnalysisSpec {
    name: "nccl-calls",
    summary: "the CPU side of matched NCCL collectives: each rank's NCCL call, kernel launch and queueing, and the parts of the largest start skew",
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
            definition: "collective instances kept, as nccl-skew matches them",
        },
        Field {
            name: "instance",
            unit: Unit::Count,
            kind: FieldKind::Count,
            definition: "the instance decomposed (1-based, in time order): `instance`, else the one with the largest start skew (ties: the earliest)",
        },
        Field {
            name: "start_skew_ns",
            unit: Unit::Ns,
            kind: FieldKind::Wall,
            definition: "the instance's latest kernel start - its earliest",
        },
        Field {
            name: "skew_from_call_ns",
            unit: Unit::Ns,
            kind: FieldKind::Wall,
            definition: "call start of the rank that starts last - that of the rank that starts first: the CPU's late arrival at the collective",
        },
        Field {
            name: "skew_from_launch_ns",
            unit: Unit::Ns,
            kind: FieldKind::Wall,
            definition: "the same difference of launch end - call start: a slower kernel launch inside the call",
        },
        Field {
            name: "skew_from_queue_ns",
            unit: Unit::Ns,
            kind: FieldKind::Wall,
            definition: "the same difference of kernel start - launch end: queueing behind earlier work; the three add up to start_skew_ns",
        },
        Field {
            name: "skew_from_init_ns",
            unit: Unit::Ns,
            kind: FieldKind::Wall,
            definition: "the same difference of the communicator init ends: the part of skew_from_call_ns that communicator set-up explains",
        },
        Field {
            name: "init_end_skew_ns",
            unit: Unit::Ns,
            kind: FieldKind::Wall,
            definition: "latest communicator init end - earliest, over the ranks",
        },
        Field {
            name: "call_skew_ns",
            unit: Unit::Ns,
            kind: FieldKind::Wall,
            definition: "latest NCCL call start - earliest, over the ranks",
        },
        Field {
            name: "call_to_kernel_max_ns",
            unit: Unit::Ns,
            kind: FieldKind::Wall,
            definition: "the largest kernel start - call start of a rank",
        },
        Field {
            name: "call_to_kernel_min_ns",
            unit: Unit::Ns,
            kind: FieldKind::Wall,
            definition: "the smallest kernel start - call start of a rank",
        },
    ],
    sums: &[],
    params: &[super::STREAM, super::MATCH, super::REGEX, super::INSTANCE],
    scope: ScopeRule::Ranks,
    needs: &[Table::Kernels, Table::Nvtx],
    cross_rank: CROSS_RANK,
    ratios: &[],
    per_name: false,
    per_device: &[],
    rank_rows: Some(RankRows { fields: RANK_FIELDS, ratios: &[] }),
    across: &[
        ("start_skew_ns", super::Across::Spread),
        ("skew_from_call_ns", super::Across::Spread),
        ("skew_from_launch_ns", super::Across::Spread),
        ("skew_from_queue_ns", super::Across::Spread),
        ("skew_from_init_ns", super::Across::Spread),
        ("init_end_skew_ns", super::Across::Spread),
        ("call_skew_ns", super::Across::Spread),
    ],
    stats: &[
        ("start_skew_ns", super::Stat::Skew),
        ("skew_from_call_ns", super::Stat::Skew),
        ("skew_from_launch_ns", super::Stat::Skew),
        ("skew_from_queue_ns", super::Stat::Skew),
        ("skew_from_init_ns", super::Stat::Skew),
        ("init_end_skew_ns", super::Stat::Skew),
        ("call_skew_ns", super::Stat::Skew),
        ("call_to_kernel_max_ns", super::Stat::Max),
        ("call_to_kernel_min_ns", super::Stat::Min),
    ],
    chart: None,
    terms: &["matching", "call_decomposition"],
    run,
    table,
};

/// Values that compare ranks: null without two ranks, a matched instance, or a matching to
/// trust.
const CROSS_RANK: &[&str] = &[
    "instance",
    "start_skew_ns",
    "skew_from_call_ns",
    "skew_from_launch_ns",
    "skew_from_queue_ns",
    "skew_from_init_ns",
    "init_end_skew_ns",
    "call_skew_ns",
    "call_to_kernel_max_ns",
    "call_to_kernel_min_ns",
];

/// The fields of each rank's row, for the decomposed instance.
pub const RANK_FIELDS: &[Field] = &[
    Field {
        name: "kernel_start_offset_ns",
        unit: Unit::Ns,
        kind: FieldKind::Wall,
        definition: "the rank's kernel start - the instance's earliest",
    },
    Field {
        name: "call_offset_ns",
        unit: Unit::Ns,
        kind: FieldKind::Wall,
        definition: "the rank's NCCL call start - the earliest over the ranks",
    },
    Field {
        name: "init_end_offset_ns",
        unit: Unit::Ns,
        kind: FieldKind::Wall,
        definition: "the rank's communicator init end - the earliest over the ranks",
    },
    Field {
        name: "init_to_call_ns",
        unit: Unit::Ns,
        kind: FieldKind::Wall,
        definition: "call start - the communicator init's end",
    },
    Field {
        name: "call_to_launch_ns",
        unit: Unit::Ns,
        kind: FieldKind::Wall,
        definition: "launch end - call start: reaching and making the kernel launch",
    },
    Field {
        name: "launch_ns",
        unit: Unit::Ns,
        kind: FieldKind::Wall,
        definition: "the launch call's own duration (end - start)",
    },
    Field {
        name: "queue_ns",
        unit: Unit::Ns,
        kind: FieldKind::Wall,
        definition: "kernel start - launch end: queueing (negative when the kernel starts before the call returns)",
    },
    Field {
        name: "call_to_kernel_ns",
        unit: Unit::Ns,
        kind: FieldKind::Wall,
        definition: "kernel start - call start",
    },
];

/// Row fields that compare ranks.
const RANK_CROSS: &[&str] = &["kernel_start_offset_ns", "call_offset_ns", "init_end_offset_ns"];

/// One rank's CPU side of one kernel, on the set's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallSide {
    /// The kernel's start.
    pub kernel_start: i64,
    /// The launch call (start, end), if the runtime table has it.
    pub launch: Option<(i64, i64)>,
    /// The enclosing NCCL call's start and its name id, if an NVTX range encloses the launch.
    pub call: Option<(i64, u32)>,
    /// The end of the communicator init before the call.
    pub init_end: Option<i64>,
    /// Whether the call is the first NCCL call after that init on its thread (init explains
    /// the start-up instance, not a later one).
    pub first_after_init: bool,
}

/// The launch record of kernel row `i` and the innermost NCCL call that encloses it on the
/// launching thread: (row of the launch, row of the call range).
fn launch_and_call(ctx: &Context, i: usize) -> (Option<usize>, Option<usize>) {
    let Some(nvtx) = &ctx.nvtx else { return (None, None) };
    let Some(j) = ctx.kernels.launch_key(i).and_then(|key| nvtx.launches.find(key)) else {
        return (None, None);
    };
    let (ls, le, tid) = (nvtx.launches.start[j], nvtx.launches.end[j], nvtx.launches.global_tid[j]);
    let r = &nvtx.ranges;
    // The innermost NCCL call enclosing the launch: on one thread an enclosing range comes
    // first, so the last one that encloses it is the innermost.
    let mut call: Option<usize> = None;
    for x in r.thread_rows(tid) {
        if r.start[x] > ls {
            break;
        }
        let name = r.name_of(x);
        if name.starts_with("nccl") && !name.contains("CommInit") && r.end[x] >= le {
            call = Some(x);
        }
    }
    (Some(j), call)
}

/// The CPU side of kernel row `i`: its launch record, the NCCL call around it, the init
/// before that.
pub fn call_side(ctx: &Context, i: usize) -> CallSide {
    let k = &ctx.kernels;
    let mut out = CallSide {
        kernel_start: k.start[i],
        launch: None,
        call: None,
        init_end: None,
        first_after_init: false,
    };
    let Some(nvtx) = &ctx.nvtx else { return out };
    let (Some(j), call) = launch_and_call(ctx, i) else { return out };
    out.launch = Some((nvtx.launches.start[j], nvtx.launches.end[j]));
    let r = &nvtx.ranges;
    let rows = r.thread_rows(nvtx.launches.global_tid[j]);
    let Some(c) = call else { return out };
    out.call = Some((r.start[c], r.name[c]));
    out.init_end = rows
        .clone()
        .filter(|&x| r.name_of(x).contains("CommInit") && r.end[x] <= r.start[c])
        .map(|x| r.end[x])
        .max();
    out.first_after_init = out.init_end.is_some_and(|e| {
        !rows.into_iter().any(|x| {
            let name = r.name_of(x);
            x != c
                && name.starts_with("nccl")
                && !name.contains("CommInit")
                && r.start[x] >= e
                && r.start[x] < r.start[c]
        })
    });
    out
}

/// What ties a kernel to its communicator: the NCCL payload of the call that launched it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommTie {
    /// The payload's `NCCL communicator ID`.
    Comm(u64),
    /// Why the kernel cannot be tied (a phrase for a note).
    Untied(String),
}

/// The communicator of kernel row `i`: the `NCCL communicator ID` in the payload of the
/// innermost NCCL call around its launch.
pub fn communicator(ctx: &Context, i: usize) -> CommTie {
    let untied = |why: String| CommTie::Untied(why);
    let Some(nvtx) = &ctx.nvtx else { return untied("no NVTX was read".into()) };
    let (launch, call) = launch_and_call(ctx, i);
    if launch.is_none() {
        return untied("a kernel has no launch record".into());
    }
    let Some(c) = call else {
        return untied("no NCCL call range encloses a kernel's launch".into());
    };
    let r = &nvtx.ranges;
    let name = r.name_of(c);
    let payload = r.global_tid[c]
        .and_then(|tid| r.payloads.get(tid, r.start[c], (!r.unterminated[c]).then_some(r.end[c])));
    match payload {
        None => untied(format!("a call `{name}` carries no payload")),
        Some(Decoded::Undecodable(why)) => {
            untied(format!("the payload of a call `{name}` cannot be read: {why}"))
        }
        Some(Decoded::Values(v)) => match v.comm {
            Some(id) => CommTie::Comm(id),
            None => untied(format!("the payload of a call `{name}` names no communicator")),
        },
    }
}

/// The process group and `Seq` of kernel row `i`: those of the PyTorch `record_param_comms`
/// op its launch lies in (PyTorch profiler traces); else why not (a phrase for a note).
pub fn process_group(ctx: &Context, i: usize) -> Result<(String, i64), String> {
    let Some(nvtx) = &ctx.nvtx else { return Err("no launch record was read".into()) };
    let Some(key) = ctx.kernels.launch_key(i).filter(|&key| nvtx.launches.find(key).is_some())
    else {
        return Err("a kernel has no launch record".into());
    };
    let Some(c) = nvtx.launches.collectives.get(&key) else {
        return Err("no `record_param_comms` op encloses a kernel's launch".into());
    };
    match (&c.group, c.seq) {
        (Some(g), Some(seq)) => Ok((g.clone(), seq)),
        (None, _) => {
            Err("the `record_param_comms` op around a kernel's launch names no process group"
                .into())
        }
        (_, None) => {
            Err("the `record_param_comms` op around a kernel's launch has no `Seq`".into())
        }
    }
}

/// The payload of the communicator init of `comm` on the thread that launched kernel row
/// `i` (its rank and the communicator's size), if the trace has it.
pub fn comm_init(ctx: &Context, i: usize, comm: u64) -> Option<NcclPayload> {
    let nvtx = ctx.nvtx.as_ref()?;
    let j = ctx.kernels.launch_key(i).and_then(|key| nvtx.launches.find(key))?;
    let r = &nvtx.ranges;
    r.thread_rows(nvtx.launches.global_tid[j])
        .filter(|&x| r.name_of(x).contains("CommInit"))
        .find_map(|x| {
            match r.global_tid[x].and_then(|tid| {
                r.payloads.get(tid, r.start[x], (!r.unterminated[x]).then_some(r.end[x]))
            }) {
                Some(Decoded::Values(v)) if v.comm == Some(comm) => Some(v),
                _ => None,
            }
        })
}

/// Runs the analysis.
pub fn run(params: &Params, ctx: &Context) -> Result<Evidence, QueryError> {
    let ranks = ctx.resolve_devices(&params.devices)?;
    ctx.check_window(params.window, &ranks)?;
    let s = nccl_skew::compute(ctx, &ranks, params)?;
    let mut ev = ctx.evidence(&SPEC, params, ranks.clone());
    ev.window.effective_ns = nccl_skew::effective(ctx, &ranks, params, &s);
    nccl_skew::disclose_rule(&mut ev, &s, ctx);
    ev.parameters.insert("stream".into(), nccl_skew::stream_parameter(params));
    // The instance asked for, else the one with the largest start skew (ties: the earliest).
    let pick = match params.instance {
        Some(n) if n > s.matched => {
            return Err(QueryError::Failed {
                reason: format!("instance {n} asked for, {} matched", s.matched),
                hint: format!(
                    "give an instance from 1 to {}, or none for the one with the largest start skew",
                    s.matched
                ),
            });
        }
        Some(n) => Some(n - 1),
        None => s
            .start_skews
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(&a.0)))
            .map(|(j, _)| j),
    };
    // Per compared rank, its side of the instance (None: not a member of it).
    let sides: Vec<Option<CallSide>> = pick
        .map(|j| {
            let x = &s.instances[j];
            (0..s.ranks.len())
                .map(|r| x.members.iter().position(|&m| m == r).map(|m| call_side(ctx, x.rows[m])))
                .collect()
        })
        .unwrap_or_default();
    // The quantities that compare ranks exist over two ranks or more with a matched instance
    // and a matching that holds (nccl-skew's notes say why not); those of the CPU side also
    // need every member's launch, call and init (`missing_cpu_side` says which rank lacks
    // what).
    let cross = s.ranks.len() >= 2 && s.matched > 0 && !s.broken(params.semantics);
    let gaps = Gaps::of(&s, &sides);
    let mut values =
        Values { ranks: s.ranks.len() as i64, matched: s.matched as i64, ..Values::default() };
    if let Some(j) = pick.filter(|_| cross) {
        values.instance = Some(j as i64 + 1);
        values.start_skew_ns = Some(s.start_skews[j]);
        let members: Vec<CallSide> = sides.iter().flatten().copied().collect();
        decompose(&mut values, &members, &gaps);
    }
    if let Some(j) = pick {
        let collective = &s.instances[j].collective;
        let key = if params.instance.is_some() {
            "note.calls_instance_chosen"
        } else {
            "note.calls_instance"
        };
        ev.note(key, &[("k", (j + 1).to_string()), ("collective", collective.clone())]);
    }
    ev.rows = Some(super::values::Rows::NcclCalls(rows(ctx, &s, &sides, cross)));
    ev.values = Some(super::values::Values::NcclCalls(values));
    nccl_skew::leave_uncomparable_null(&mut ev, ctx, &s, params.semantics, CROSS_RANK, RANK_CROSS);
    if s.broken(params.semantics) {
        nccl_skew::leave_broken_null(&mut ev, &s, params, CROSS_RANK, RANK_CROSS);
    }
    missing_cpu_side(&mut ev, ctx, &s, &gaps);
    if let Some(n) = ctx.nvtx.as_ref().map(|n| n.launches.nested).filter(|&n| n > 0) {
        ev.note("note.nested_launches", &[("n", n.to_string())]);
    }
    Ok(ev)
}

/// The values: the decomposition of one instance's start skew.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(rename = "NcclCallsValues")]
pub struct Values {
    /// Ranks compared.
    pub ranks: i64,
    /// Instances matched.
    pub matched: i64,
    /// The instance decomposed, from 1 in time order.
    pub instance: Option<i64>,
    /// Its start skew: the last rank's kernel start - the first's.
    pub start_skew_ns: Option<i64>,
    /// Of it, the difference of their NCCL call starts.
    pub skew_from_call_ns: Option<i64>,
    /// Of it, the difference of their call-to-launch-end times.
    pub skew_from_launch_ns: Option<i64>,
    /// Of it, the difference of their queueing.
    pub skew_from_queue_ns: Option<i64>,
    /// Of the call's part, the difference of their communicator inits' ends.
    pub skew_from_init_ns: Option<i64>,
    /// The spread of the inits' ends over the ranks.
    pub init_end_skew_ns: Option<i64>,
    /// The spread of the call starts over the ranks.
    pub call_skew_ns: Option<i64>,
    /// The largest call-to-kernel-start time.
    pub call_to_kernel_max_ns: Option<i64>,
    /// The smallest.
    pub call_to_kernel_min_ns: Option<i64>,
}

/// One rank's side of the decomposed instance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(rename = "NcclCallsRow")]
pub struct Row {
    /// The rank.
    pub device: i64,
    /// Its label, over a set of files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The NCCL call around the launch.
    pub call: Option<String>,
    /// Its kernel start - the instance's earliest.
    pub kernel_start_offset_ns: Option<i64>,
    /// Its call start - the earliest.
    pub call_offset_ns: Option<i64>,
    /// Its communicator init's end - the earliest.
    pub init_end_offset_ns: Option<i64>,
    /// Call start - init end.
    pub init_to_call_ns: Option<i64>,
    /// Launch end - call start.
    pub call_to_launch_ns: Option<i64>,
    /// The launch call's duration.
    pub launch_ns: Option<i64>,
    /// Kernel start - launch end.
    pub queue_ns: Option<i64>,
    /// Kernel start - call start.
    pub call_to_kernel_ns: Option<i64>,
}

impl super::EvidenceRow for Row {
    fn label_device(&mut self, label: &dyn Fn(i64) -> String) {
        self.label = Some(label(self.device));
    }
}

/// The ranks whose CPU side of the instance lacks a part.
struct Gaps {
    /// No launch record.
    launch: Vec<i64>,
    /// No NCCL call range around the launch.
    call: Vec<i64>,
    /// No communicator init.
    init: Vec<i64>,
    /// An instance that is not the first after init.
    later: Vec<i64>,
}

impl Gaps {
    fn of(s: &Skew, sides: &[Option<CallSide>]) -> Gaps {
        let without = |f: &dyn Fn(&CallSide) -> bool| -> Vec<i64> {
            s.ranks
                .iter()
                .zip(sides)
                .filter_map(|(r, c)| c.as_ref().filter(|c| !f(c)).map(|_| *r))
                .collect()
        };
        Gaps {
            launch: without(&|c| c.launch.is_some()),
            call: without(&|c| c.call.is_some()),
            init: without(&|c| c.init_end.is_some()),
            later: without(&|c| c.first_after_init),
        }
    }

    /// Whether every rank has its launch and its call: the call, launch and queue parts
    /// exist.
    fn calls(&self) -> bool {
        self.launch.is_empty() && self.call.is_empty()
    }
}

/// The differences between the rank that starts last and the one that starts first (ties:
/// the lowest rank), and the spreads over ranks, where every rank has its CPU side.
fn decompose(values: &mut Values, sides: &[CallSide], gaps: &Gaps) {
    let (Some(last), Some(first)) = (
        (0..sides.len())
            .max_by(|&a, &b| sides[a].kernel_start.cmp(&sides[b].kernel_start).then(b.cmp(&a))),
        (0..sides.len())
            .min_by(|&a, &b| sides[a].kernel_start.cmp(&sides[b].kernel_start).then(a.cmp(&b))),
    ) else {
        return;
    };
    let parts = |c: &CallSide| {
        let (_, le) = c.launch?;
        let (cs, _) = c.call?;
        Some((cs, le - cs, c.kernel_start - le))
    };
    let spread = |v: Option<Vec<i64>>| v.and_then(|v| Some(v.iter().max()? - v.iter().min()?));
    if gaps.calls() {
        if let (Some(l), Some(f)) = (parts(&sides[last]), parts(&sides[first])) {
            values.skew_from_call_ns = Some(l.0 - f.0);
            values.skew_from_launch_ns = Some(l.1 - f.1);
            values.skew_from_queue_ns = Some(l.2 - f.2);
        }
        values.call_skew_ns = spread(sides.iter().map(|c| c.call.map(|x| x.0)).collect());
        let to_kernel: Option<Vec<i64>> =
            sides.iter().map(|c| c.call.map(|(cs, _)| c.kernel_start - cs)).collect();
        if let Some(v) = to_kernel.filter(|v| !v.is_empty()) {
            values.call_to_kernel_max_ns = v.iter().max().copied();
            values.call_to_kernel_min_ns = v.iter().min().copied();
        }
    }
    if gaps.init.is_empty() {
        values.init_end_skew_ns = spread(sides.iter().map(|c| c.init_end).collect());
        if let (Some(l), Some(f)) = (sides[last].init_end, sides[first].init_end)
            && gaps.later.is_empty()
        {
            values.skew_from_init_ns = Some(l - f);
        }
    }
}

/// One row per rank for the decomposed instance.
fn rows(ctx: &Context, s: &Skew, sides: &[Option<CallSide>], cross: bool) -> Vec<Row> {
    let set = ctx.trace.set.as_deref();
    let min = |f: &dyn Fn(&CallSide) -> Option<i64>| -> Option<i64> {
        sides.iter().flatten().map(f).collect::<Option<Vec<i64>>>()?.into_iter().min()
    };
    let k0 = min(&|c| Some(c.kernel_start)).filter(|_| cross);
    let c0 = min(&|c| c.call.map(|x| x.0)).filter(|_| cross);
    let i0 = min(&|c| c.init_end).filter(|_| cross);
    s.ranks
        .iter()
        .enumerate()
        .map(|(r, &rank)| {
            let c = sides.get(r).and_then(Option::as_ref);
            let call = c.and_then(|c| c.call);
            let launch = c.and_then(|c| c.launch);
            let ks = c.map(|c| c.kernel_start);
            let init = c.and_then(|c| c.init_end);
            Row {
                device: rank,
                label: set.map(|set| set.label(rank)),
                call: call.and_then(|(_, n)| {
                    ctx.nvtx.as_ref().map(|x| x.ranges.name_text(n).to_string())
                }),
                kernel_start_offset_ns: ks.zip(k0).map(|(a, b)| a - b),
                call_offset_ns: call.zip(c0).map(|((a, _), b)| a - b),
                init_end_offset_ns: init.zip(i0).map(|(a, b)| a - b),
                init_to_call_ns: call.zip(init).map(|((a, _), b)| a - b),
                call_to_launch_ns: call.zip(launch).map(|((a, _), (_, le))| le - a),
                launch_ns: launch.map(|(a, b)| b - a),
                queue_ns: ks.zip(launch).map(|(k, (_, le))| k - le),
                call_to_kernel_ns: ks.zip(call).map(|(k, (a, _))| k - a),
            }
        })
        .collect()
}

/// Nulls what the trace cannot give, with a note: no runtime records, no NCCL ranges around
/// the launches, no communicator init.
fn missing_cpu_side(ev: &mut Evidence, ctx: &Context, s: &Skew, gaps: &Gaps) {
    if s.ranks.is_empty() {
        return;
    }
    let (no_launch, no_call, no_init, later) = (&gaps.launch, &gaps.call, &gaps.init, &gaps.later);
    let absent = ctx.nvtx.as_ref().is_none_or(|n| n.launches.table_absent);
    if !no_launch.is_empty() {
        ev.leave_null(
            &[
                "skew_from_call_ns",
                "skew_from_launch_ns",
                "skew_from_queue_ns",
                "call_skew_ns",
                "call_to_kernel_max_ns",
                "call_to_kernel_min_ns",
            ],
            if absent { "note.no_runtime_table" } else { "note.no_launch_record" },
            &[("devices", format_device_list(no_launch))],
            ("need.runtime_trace", &[]),
        );
    } else if !no_call.is_empty() {
        ev.leave_null(
            &[
                "skew_from_call_ns",
                "skew_from_launch_ns",
                "skew_from_queue_ns",
                "call_skew_ns",
                "call_to_kernel_max_ns",
                "call_to_kernel_min_ns",
            ],
            "note.no_nccl_call",
            &[("devices", format_device_list(no_call))],
            ("need.nccl_nvtx", &[]),
        );
    }
    if !no_init.is_empty() {
        ev.leave_null(
            &["skew_from_init_ns", "init_end_skew_ns"],
            "note.no_comm_init",
            &[("devices", format_device_list(no_init))],
            ("need.comm_init", &[]),
        );
    } else {
        if !later.is_empty() {
            ev.leave_null(
                &["skew_from_init_ns"],
                "note.not_first_after_init",
                &[("devices", format_device_list(later))],
                ("need.first_instance", &[]),
            );
        }
    }
}

/// The terminal table of `verdict query`.
pub fn table(ev: &Evidence, width: usize) -> String {
    use super::show::dur;
    use super::values::{Rows, Values as Any};
    use crate::term::Column;
    let mut s = String::new();
    if let Some(Any::NcclCalls(v)) = &ev.values {
        let line = |label: &str, text: &str| table::hang(&format!("{label:<13}"), text, 13, width);
        s += &line(
            "ranks",
            &format!(
                "{} · matched instances {} · decomposed instance {}",
                v.ranks,
                v.matched,
                v.instance.map_or("n/a".into(), |i| i.to_string())
            ),
        );
        s += &line(
            "start skew",
            &format!(
                "{} = call {} + launch {} + queue {}",
                dur(v.start_skew_ns),
                dur(v.skew_from_call_ns),
                dur(v.skew_from_launch_ns),
                dur(v.skew_from_queue_ns)
            ),
        );
        s += &line(
            "init",
            &format!(
                "init ends spread {} · of the call's part, init explains {}",
                dur(v.init_end_skew_ns),
                dur(v.skew_from_init_ns)
            ),
        );
        s += &line(
            "call→kernel",
            &format!(
                "min {} · max {} · call starts spread {}",
                dur(v.call_to_kernel_min_ns),
                dur(v.call_to_kernel_max_ns),
                dur(v.call_skew_ns)
            ),
        );
    }
    let rows = match &ev.rows {
        Some(Rows::NcclCalls(rows)) => rows
            .iter()
            .map(|r| {
                let cells = vec![
                    r.call.clone().unwrap_or_else(|| "n/a".into()),
                    dur(r.init_end_offset_ns),
                    dur(r.init_to_call_ns),
                    dur(r.call_to_launch_ns),
                    dur(r.queue_ns),
                    dur(r.kernel_start_offset_ns),
                ];
                (r.device, r.label.as_deref(), cells)
            })
            .collect(),
        _ => Vec::new(),
    };
    s += &nccl_skew::rank_table(
        &[
            Column::text("call"),
            Column::number("init end Δ"),
            Column::number("init→call"),
            Column::number("call→launch end"),
            Column::number("queue"),
            Column::number("kernel start Δ"),
        ],
        rows,
        width,
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::NvtxData;
    use crate::scope::DeviceSel;
    use crate::trace::Kernels;
    use crate::trace::nvtx::{Launches, NvtxRanges};
    use serde_json::Value;

    /// Two ranks (processes 1 and 2, one thread each): rank 0 inits until 1,000, calls at
    /// 1,100, its launch runs 1,150-1,300 and the kernel starts at 1,400; rank 1 inits
    /// until 3,000, calls at 3,050, launches 3,060-6,000, and its kernel starts at 6,010.
    fn ctx() -> Context {
        let tid = |p: i64| (p << 24) | 7;
        let kernels = Kernels::from_rows_with_launch_keys(
            &[
                (0, 7, 1_400, 9_000, "ncclKernel_AllReduce_RING_LL_Sum_float"),
                (1, 7, 6_010, 9_000, "ncclKernel_AllReduce_RING_LL_Sum_float"),
            ],
            &[(Some(1), Some(11)), (Some(2), Some(22))],
        );
        let launches =
            Launches::from_rows(&[(tid(1), 11, 1_150, 1_300), (tid(2), 22, 3_060, 6_000)]);
        let ranges = NvtxRanges::from_rows(&[
            (tid(1), 0, Some(1_000), "ncclCommInitRank", 1),
            (tid(1), 1_100, Some(1_350), "ncclAllReduce", 1),
            (tid(2), 0, Some(3_000), "ncclCommInitRank", 1),
            (tid(2), 3_050, Some(6_020), "ncclAllReduce", 1),
        ]);
        Context::from_kernels(kernels).with_nvtx(NvtxData { ranges, launches })
    }

    #[test]
    fn the_start_skew_is_the_sum_of_its_cpu_parts() {
        let ev = run(&Params::new(DeviceSel::All), &ctx()).unwrap();
        let v = ev.values.as_ref().unwrap().to_map();
        // Start skew 6,010 - 1,400 = 4,610 = call (3,050 - 1,100 = 1,950) + launch
        // ((6,000 - 3,050) - (1,300 - 1,100) = 2,750) + queue ((6,010 - 6,000) - (1,400 -
        // 1,300) = -90).
        assert_eq!(v["start_skew_ns"], 4_610);
        assert_eq!(v["skew_from_call_ns"], 1_950);
        assert_eq!(v["skew_from_launch_ns"], 2_750);
        assert_eq!(v["skew_from_queue_ns"], -90);
        assert_eq!(v["skew_from_init_ns"], 2_000);
        assert_eq!(v["init_end_skew_ns"], 2_000);
        assert_eq!(v["call_skew_ns"], 1_950);
        assert_eq!(v["call_to_kernel_max_ns"], 2_960);
        assert_eq!(v["call_to_kernel_min_ns"], 300);
        let rows = ev.rows.as_ref().unwrap().to_maps();
        assert_eq!(rows[1]["call"], "ncclAllReduce");
        assert_eq!(rows[1]["init_to_call_ns"], 50);
        assert_eq!(rows[1]["launch_ns"], 2_940);
        assert_eq!(rows[0]["queue_ns"], 100);
        assert_eq!(rows[1]["init_end_offset_ns"], 2_000);
        assert_eq!(rows[0]["kernel_start_offset_ns"], 0);
    }

    #[test]
    fn without_runtime_records_the_cpu_parts_are_null_with_the_reason() {
        let mut c = ctx();
        c.nvtx.as_mut().unwrap().launches = Launches::from_rows(&[]);
        let ev = run(&Params::new(DeviceSel::All), &c).unwrap();
        let v = ev.values.as_ref().unwrap().to_map();
        assert_eq!(v["start_skew_ns"], 4_610);
        assert_eq!(v["skew_from_call_ns"], Value::Null);
        assert_eq!(ev.null_reasons("skew_from_launch_ns")[0].finding.key, "note.no_launch_record");
    }
}

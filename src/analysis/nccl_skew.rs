//! `nccl-skew`: cross-rank alignment of NCCL kernels and the waiting it implies.
//!
//! Ranks are the devices of the trace. Per rank, the NCCL kernels (of one stream, or all of
//! the rank's) in the window, sorted by start; the k-th kernel of every rank is instance k.
//! transfer_k = min duration over ranks, wait = duration - transfer_k; wait share = Σ wait /
//! Σ duration. Kernels are selected, never clipped. Reads the kernel scan only.
//! A quantity that compares ranks does not exist with fewer than two ranks or no matched
//! instance: it is null, with a note saying why, never 0.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{
    AnalysisSpec, ChartKind, Context, Evidence, Field, FieldKind, Params, QueryError, ScopeRule,
    Table, Unit, obj, quantiles, select,
};
use crate::term as table;

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
            definition: "instances matched on every rank: the smallest per-rank NCCL kernel count",
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
            definition: "NCCL kernels beyond the matched count on ranks with more of them",
        },
        Field {
            name: "name_mismatches",
            unit: Unit::Count,
            kind: FieldKind::Count,
            definition: "matched instances whose kernels do not all have the same name",
        },
    ],
    sums: &[],
    params: &[super::STREAM],
    scope: ScopeRule::Ranks,
    needs: &[Table::Kernels],
    cross_rank: CROSS_RANK,
    ratios: &[("wait_share", "wait_ns / nccl_ns")],
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
    "name_mismatches",
];

/// The result of matching, before it is put into evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skew {
    /// Device ids of the ranks.
    pub ranks: Vec<i64>,
    /// NCCL kernels per rank.
    pub counts: Vec<i64>,
    /// Matched instances.
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
    /// Instances with differing names.
    pub name_mismatches: i64,
    /// Per rank, the stream its kernels were taken from (None: every stream).
    pub streams: Vec<Option<i64>>,
    /// Per rank, per instance: start minus the instance's earliest start.
    pub start_offsets: Vec<Vec<i64>>,
    /// Per rank, per instance: end minus the instance's earliest end.
    pub end_offsets: Vec<Vec<i64>>,
}

/// Matches the k-th NCCL kernels of every rank.
pub fn compute(ctx: &Context, ranks: &[i64], params: &Params) -> Result<Skew, QueryError> {
    let k = &ctx.kernels;
    let mut streams = Vec::with_capacity(ranks.len());
    if let Some(map) = &params.stream_map
        && let Some(r) = ranks.iter().find(|r| !map.contains_key(r))
    {
        return Err(QueryError::Failed {
            reason: format!("rank {r} has no stream in `--stream`"),
            hint: "give every compared rank its stream (RANK:STREAM,...), or `--stream auto`"
                .into(),
        });
    }
    let per_rank: Vec<Vec<usize>> = ranks
        .iter()
        .map(|&d| {
            let nccl: Vec<usize> =
                select(k, k.device_rows(d), params.window, params.semantics, false)
                    .into_iter()
                    .map(|(i, _, _)| i)
                    .filter(|&i| k.is_nccl(i))
                    .collect();
            // `auto`: the stream with the most of this rank's NCCL kernels (ties: the lowest).
            let stream = if let Some(map) = &params.stream_map {
                map.get(&d).copied()
            } else if params.stream_auto {
                let mut per: std::collections::BTreeMap<i64, usize> = BTreeMap::new();
                for &i in &nccl {
                    *per.entry(k.stream[i]).or_default() += 1;
                }
                per.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0))).map(|(s, _)| *s)
            } else {
                params.stream
            };
            streams.push(stream);
            nccl.into_iter().filter(|&i| stream.is_none_or(|s| k.stream[i] == s)).collect()
        })
        .collect();
    let counts: Vec<i64> = per_rank.iter().map(|v| v.len() as i64).collect();
    let matched = per_rank.iter().map(Vec::len).min().unwrap_or(0);
    let mut out = Skew {
        ranks: ranks.to_vec(),
        streams,
        counts,
        matched,
        nccl: 0,
        wait: 0,
        start_skews: Vec::with_capacity(matched),
        end_skews: Vec::with_capacity(matched),
        rank_wait: vec![0; ranks.len()],
        last_arrivals: vec![0; ranks.len()],
        name_mismatches: 0,
        start_offsets: vec![Vec::with_capacity(matched); ranks.len()],
        end_offsets: vec![Vec::with_capacity(matched); ranks.len()],
    };
    for j in 0..matched {
        let rows: Vec<usize> = per_rank.iter().map(|v| v[j]).collect();
        let durs: Vec<i64> = rows.iter().map(|&i| k.end[i] - k.start[i]).collect();
        let transfer = durs.iter().copied().min().unwrap_or(0);
        for (r, &d) in durs.iter().enumerate() {
            // Each duration and wait fits (timestamps are bounded when read); their sums are
            // checked.
            let add = |acc: i64, x: i64, what: &str| {
                acc.checked_add(x).ok_or_else(|| super::overflow(what))
            };
            out.nccl = add(out.nccl, d, "NCCL kernel time")?;
            out.wait = add(out.wait, d - transfer, "NCCL wait time")?;
            out.rank_wait[r] = add(out.rank_wait[r], d - transfer, "NCCL wait time of a rank")?;
        }
        let starts = rows.iter().map(|&i| k.start[i]);
        let ends = rows.iter().map(|&i| k.end[i]);
        let (smin, smax) = (starts.clone().min().unwrap_or(0), starts.clone().max().unwrap_or(0));
        out.start_skews.push(smax - smin);
        let emin = ends.clone().min().unwrap_or(0);
        out.end_skews.push(ends.max().unwrap_or(0) - emin);
        for (r, &i) in rows.iter().enumerate() {
            out.start_offsets[r].push(k.start[i] - smin);
            out.end_offsets[r].push(k.end[i] - emin);
        }
        // The last arrival is the rank with the latest start; ties go to the lowest rank.
        if let Some(r) = rows.iter().position(|&i| k.start[i] == smax) {
            out.last_arrivals[r] += 1;
        }
        let first = k.short[rows[0]];
        if rows.iter().any(|&i| k.short[i] != first) {
            out.name_mismatches += 1;
        }
    }
    Ok(out)
}

/// Runs the analysis.
pub fn run(params: &Params, ctx: &Context) -> Result<Evidence, QueryError> {
    let ranks = ctx.resolve_devices(&params.devices)?;
    ctx.check_window(params.window, &ranks)?;
    let s = compute(ctx, &ranks, params)?;
    let mut ev = ctx.evidence(&SPEC, params, ranks.clone());
    if params.stream_auto || params.stream_map.is_some() {
        let mut all: Vec<i64> = s.streams.iter().flatten().copied().collect();
        all.sort_unstable();
        all.dedup();
        ev.scope.streams = Some(all);
        ev.parameters.insert("stream".into(), json!((super::STREAM.get)(params)));
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
        ev.parameters.insert("stream".into(), params.stream.map_or(Value::Null, |s| json!(s)));
    }
    ev.window.effective_ns = super::effective_window(ctx, &ranks, params);

    let mut starts = s.start_skews.clone();
    starts.sort_unstable();
    let mut ends = s.end_skews.clone();
    ends.sort_unstable();
    let (s_min, s_med, s_p90, s_max) = quantiles(&starts);
    let (e_min, e_med, e_p90, e_max) = quantiles(&ends);
    let unmatched: i64 = s.counts.iter().map(|c| c - s.matched as i64).sum();
    let by_rank = |v: &[i64]| -> BTreeMap<String, i64> {
        s.ranks.iter().zip(v).map(|(r, x)| (r.to_string(), *x)).collect()
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
    let offsets = |v: &[Vec<i64>]| -> BTreeMap<String, Value> {
        s.ranks
            .iter()
            .zip(v)
            .map(|(r, o)| {
                let mut o = o.clone();
                o.sort_unstable();
                let (min, median, p90, max) = quantiles(&o);
                (r.to_string(), json!({"min": min, "median": median, "p90": p90, "max": max}))
            })
            .collect()
    };
    let wait_share = if s.nccl > 0 { json!(s.wait as f64 / s.nccl as f64) } else { Value::Null };
    ev.values = Some(obj([
        ("ranks", json!(s.ranks.len())),
        ("matched", json!(s.matched)),
        ("instance_counts", json!(by_rank(&s.counts))),
        ("unmatched", json!(unmatched)),
        ("nccl_ns", json!(s.nccl)),
        ("wait_ns", json!(s.wait)),
        ("transfer_ns", json!(s.nccl - s.wait)),
        ("wait_share", wait_share),
        ("start_skew_ns", json!({"min": s_min, "median": s_med, "p90": s_p90, "max": s_max})),
        ("end_skew_ns", json!({"min": e_min, "median": e_med, "p90": e_p90, "max": e_max})),
        ("start_skew_median_ns", json!(s_med)),
        ("start_skew_max_ns", json!(s_max)),
        ("end_skew_median_ns", json!(e_med)),
        ("end_skew_max_ns", json!(e_max)),
        ("rank_wait_ns", json!(by_rank(&s.rank_wait))),
        ("rank_start_offset_ns", json!(offsets(&s.start_offsets))),
        ("rank_end_offset_ns", json!(offsets(&s.end_offsets))),
        ("last_arrivals", json!(by_rank(&s.last_arrivals))),
        ("most_often_last", json!(most_last)),
        ("name_mismatches", json!(s.name_mismatches)),
    ]));
    let compared = s.ranks.len() >= 2 && s.matched > 0;
    leave_uncomparable_null(&mut ev, ctx, &s);
    if compared {
        ev.note("note.transfer_estimate", &[]);
    }
    if s.counts.iter().any(|&c| c != s.matched as i64) {
        let counts = s
            .ranks
            .iter()
            .zip(&s.counts)
            .map(|(r, c)| format!("{r}:{c}"))
            .collect::<Vec<_>>()
            .join(", ");
        ev.note("note.unequal_counts", &[("counts", counts), ("matched", s.matched.to_string())]);
    }
    if !ev.scope.missing_devices.is_empty() {
        let missing = crate::scope::format_device_list(&ev.scope.missing_devices);
        ev.note("note.missing_ranks", &[("missing", missing)]);
    }
    if compared && s.name_mismatches > 0 {
        ev.note("note.name_mismatches", &[("n", s.name_mismatches.to_string())]);
    }
    if compared && most_last.len() > 1 {
        let tied = most_last.iter().map(i64::to_string).collect::<Vec<_>>().join(", ");
        let n = most.unwrap_or(0).to_string();
        ev.note(
            "note.last_tie",
            &[("devices", tied), ("n", n), ("matched", s.matched.to_string())],
        );
    }
    Ok(ev)
}

/// Nulls the quantities that compare ranks when there is nothing to compare, with a note per
/// reason, the most basic first: no NCCL kernel at all, one rank, no matched instance.
fn leave_uncomparable_null(ev: &mut Evidence, ctx: &Context, s: &Skew) {
    let devices = crate::scope::format_device_list(&s.ranks);
    if s.counts.iter().all(|&c| c == 0) {
        if !ctx.kernels.nccl_in_table {
            ev.leave_null(CROSS_RANK, "note.no_nccl_in_trace", &[], ("need.nccl_trace", &[]));
        } else {
            ev.leave_null(
                CROSS_RANK,
                "note.no_nccl",
                &[("devices", devices.clone())],
                ("need.nccl_kernels", &[]),
            );
        }
    }
    if s.ranks.len() < 2 {
        ev.leave_null(
            CROSS_RANK,
            "note.one_rank",
            &[("devices", devices)],
            ("need.two_ranks", &[]),
        );
    } else if s.matched == 0 && s.counts.iter().any(|&c| c > 0) {
        let empty: Vec<i64> =
            s.ranks.iter().zip(&s.counts).filter(|(_, c)| **c == 0).map(|(r, _)| *r).collect();
        ev.leave_null(
            CROSS_RANK,
            "note.no_matched",
            &[("empty", crate::scope::format_device_list(&empty))],
            ("need.matched", &[]),
        );
    }
}

/// The terminal table of `verdict query` (below the scope lines).
pub fn table(ev: &Evidence, width: usize) -> String {
    #[allow(unused_imports)]
    use super::show::*;
    #[allow(unused_imports)]
    use crate::term::Column;
    let mut s = String::new();
    if let Some(v) = &ev.values {
        let line = |label: &str, text: &str| table::hang(&format!("{label:<13}"), text, 13, width);
        let skew = |key: &str| {
            let o = field(v, key);
            format!(
                "min {} · median {} · p90 {} · max {}",
                time(o.get("min")),
                time(o.get("median")),
                time(o.get("p90")),
                time(o.get("max"))
            )
        };
        s += &line(
            "ranks",
            &format!("{} · matched instances {}", plain(v.get("ranks")), plain(v.get("matched"))),
        );
        s += &line("per rank", &pairs(field(v, "instance_counts"), plain));
        s += &line(
            "wait share",
            &format!(
                "{} / {} = {}",
                time(v.get("wait_ns")),
                time(v.get("nccl_ns")),
                share(int(v.get("wait_ns")), int(v.get("nccl_ns")))
            ),
        );
        s += &line("start skew", &skew("start_skew_ns"));
        s += &line("end skew", &skew("end_skew_ns"));
        s += &line("rank wait", &pairs(field(v, "rank_wait_ns"), time));
        // A list: several devices when they tie.
        let last: Vec<i64> = field(v, "most_often_last")
            .as_array()
            .map(|l| l.iter().filter_map(Value::as_i64).collect())
            .unwrap_or_default();
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
                    plain(field(v, "last_arrivals").get(first.to_string())),
                    plain(v.get("matched")),
                    if last.len() > 1 { " each, a tie" } else { "" }
                ),
                2,
                width,
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scope::DeviceSel;
    use crate::trace::Kernels;

    #[test]
    fn two_instances_three_ranks_by_hand() {
        // Instance 0 ends together at 1000; starts 100, 400, 700 -> durations 900, 600, 300.
        // Instance 1: starts 2000, 2000, 2100, ends 2500, 2510, 2500 -> 500, 510, 400.
        let ctx = Context::from_kernels(Kernels::from_rows(&[
            (1, 56, 100, 1000, "ncclAG"),
            (2, 56, 400, 1000, "ncclAG"),
            (3, 56, 700, 1000, "ncclAG"),
            (1, 56, 2000, 2500, "ncclRS"),
            (2, 56, 2000, 2510, "ncclRS"),
            (3, 56, 2100, 2500, "ncclRS"),
            (3, 56, 3000, 3100, "ncclRS"),
            (1, 21, 0, 5000, "gemm"),
        ]));
        let mut p = Params::new(DeviceSel::All);
        p.stream = Some(56);
        let s = compute(&ctx, &[1, 2, 3], &p).unwrap();
        assert_eq!(s.matched, 2);
        assert_eq!(s.counts, vec![2, 2, 3]);
        assert_eq!(s.nccl, 900 + 600 + 300 + 500 + 510 + 400);
        assert_eq!(s.wait, (600 + 300) + (100 + 110));
        assert_eq!(s.start_skews, vec![600, 100]);
        assert_eq!(s.end_skews, vec![0, 10]);
        assert_eq!(s.rank_wait, vec![600 + 100, 300 + 110, 0]);
        assert_eq!(s.last_arrivals, vec![0, 0, 2]);
        assert_eq!(s.start_offsets, vec![vec![0, 0], vec![300, 0], vec![600, 100]]);
        assert_eq!(s.end_offsets, vec![vec![0, 0], vec![0, 10], vec![0, 0]]);
        let ev = run(&p, &ctx).unwrap();
        let v = ev.values.unwrap();
        assert_eq!(v["wait_share"], json!(1110.0 / 3210.0));
        assert_eq!(v["most_often_last"], json!([3]));
        assert_eq!(v["unmatched"], 1);
        assert!(
            ev.notes
                .iter()
                .any(|n| n.finding.key == "note.unequal_counts" && n.text.contains("unequal"))
        );
    }

    /// The note of a key, which must be present once.
    fn note<'a>(ev: &'a Evidence, key: &str) -> &'a crate::analysis::Note {
        let found: Vec<_> = ev.notes.iter().filter(|n| n.finding.key == key).collect();
        assert_eq!(found.len(), 1, "one `{key}` note in {:?}", ev.notes);
        found[0]
    }

    /// Every quantity that compares ranks is null, and the ones that exist are not.
    fn assert_cross_rank_null(ev: &Evidence) {
        let v = ev.values.as_ref().unwrap();
        for f in CROSS_RANK {
            assert_eq!(v[*f], Value::Null, "`{f}` must be null, not a stand-in value");
        }
        for f in ["ranks", "matched", "instance_counts", "unmatched", "nccl_ns"] {
            assert!(!v[f].is_null(), "`{f}` exists and keeps its value");
        }
    }

    fn params(devices: &[i64]) -> Params {
        Params::new(DeviceSel::Set(devices.to_vec()))
    }

    #[test]
    fn one_rank_has_no_skew_and_says_it_needs_two() {
        let ctx = Context::from_kernels(Kernels::from_rows(&[
            (1, 56, 100, 1000, "ncclAG"),
            (1, 56, 2000, 2500, "ncclRS"),
            (2, 56, 300, 1000, "ncclAG"),
        ]));
        let ev = run(&params(&[1]), &ctx).unwrap();
        let v = ev.values.as_ref().unwrap();
        assert_eq!(v["ranks"], 1);
        assert_eq!(v["matched"], 2);
        assert_eq!(v["instance_counts"], json!({"1": 2}));
        // Device 1's NCCL kernel time: 900 + 500.
        assert_eq!(v["nccl_ns"], 1400);
        assert_cross_rank_null(&ev);
        let n = note(&ev, "note.one_rank");
        assert_eq!(n.finding.args["devices"], "1");
        assert!(n.text.contains("needs at least two ranks in one scope"), "{}", n.text);
        assert_eq!(n.null_fields.len(), CROSS_RANK.len());
        assert_eq!(n.needs.as_ref().unwrap().finding.key, "need.two_ranks");
        assert_eq!(ev.null_reasons("wait_share")[0].finding.key, "note.one_rank");
        // Nothing is compared, so no caveat about the comparison.
        assert!(ev.notes.iter().all(|n| n.finding.key != "note.transfer_estimate"));
    }

    #[test]
    fn no_matched_instance_when_a_rank_has_no_nccl_kernel() {
        let ctx = Context::from_kernels(Kernels::from_rows(&[
            (1, 56, 100, 1000, "ncclAG"),
            (1, 21, 0, 900, "gemm"),
            (2, 21, 0, 900, "gemm"),
        ]));
        let ev = run(&params(&[1, 2]), &ctx).unwrap();
        let v = ev.values.as_ref().unwrap();
        assert_eq!(v["ranks"], 2);
        assert_eq!(v["matched"], 0);
        assert_eq!(v["instance_counts"], json!({"1": 1, "2": 0}));
        assert_eq!(v["unmatched"], 1);
        assert_eq!(v["nccl_ns"], 0);
        assert_cross_rank_null(&ev);
        let n = note(&ev, "note.no_matched");
        assert_eq!(n.finding.args["empty"], "2");
        assert!(n.text.starts_with("no matched instances"), "{}", n.text);
        assert_eq!(n.needs.as_ref().unwrap().finding.key, "need.matched");
        assert!(ev.notes.iter().all(|n| n.finding.key != "note.no_nccl_in_trace"));
    }

    #[test]
    fn a_trace_without_nccl_kernels_says_so() {
        let ctx = Context::from_kernels(Kernels::from_rows(&[
            (0, 7, 0, 900, "gemm"),
            (1, 15, 0, 800, "elementwise"),
        ]));
        let ev = run(&Params::new(DeviceSel::All), &ctx).unwrap();
        let v = ev.values.as_ref().unwrap();
        assert_eq!((v["ranks"].clone(), v["matched"].clone()), (json!(2), json!(0)));
        assert_cross_rank_null(&ev);
        let n = note(&ev, "note.no_nccl_in_trace");
        assert!(n.text.starts_with("the trace has no NCCL kernels"), "{}", n.text);
        assert_eq!(n.needs.as_ref().unwrap().finding.key, "need.nccl_trace");
        assert!(ev.notes.iter().all(|n| n.finding.key != "note.no_matched"));

        // One device of it: both reasons, the trace's first.
        let ev = run(&params(&[0]), &ctx).unwrap();
        assert_cross_rank_null(&ev);
        let keys: Vec<&str> =
            ev.null_reasons("wait_ns").iter().map(|n| n.finding.key.as_str()).collect();
        assert_eq!(keys, ["note.no_nccl_in_trace", "note.one_rank"]);
    }

    #[test]
    fn a_selection_without_nccl_kernels_is_not_a_trace_without_them() {
        // NCCL runs on stream 56 only; stream 7 selects none of it.
        let ctx = Context::from_kernels(Kernels::from_rows(&[
            (1, 56, 100, 1000, "ncclAG"),
            (2, 56, 400, 1000, "ncclAG"),
        ]));
        let mut p = params(&[1, 2]);
        p.stream = Some(7);
        let ev = run(&p, &ctx).unwrap();
        assert_cross_rank_null(&ev);
        let n = note(&ev, "note.no_nccl");
        assert_eq!(n.finding.args["devices"], "1-2");
        assert_eq!(n.needs.as_ref().unwrap().finding.key, "need.nccl_kernels");
        assert!(ev.notes.iter().all(|n| n.finding.key != "note.no_nccl_in_trace"));
    }

    #[test]
    fn a_tie_for_most_often_last_lists_every_tied_rank() {
        // Instance 0 starts at 100, 300, 500: device 3 is last. Instance 1 starts at 2000,
        // 2400, 2200: device 2 is last. Device 1 is never last.
        let ctx = Context::from_kernels(Kernels::from_rows(&[
            (1, 56, 100, 1000, "ncclAG"),
            (2, 56, 300, 1000, "ncclAG"),
            (3, 56, 500, 1000, "ncclAG"),
            (1, 56, 2000, 3000, "ncclAG"),
            (2, 56, 2400, 3000, "ncclAG"),
            (3, 56, 2200, 3000, "ncclAG"),
        ]));
        let ev = run(&params(&[1, 2, 3]), &ctx).unwrap();
        let v = ev.values.as_ref().unwrap();
        assert_eq!(v["last_arrivals"], json!({"1": 0, "2": 1, "3": 1}));
        assert_eq!(v["most_often_last"], json!([2, 3]));
        let n = note(&ev, "note.last_tie");
        assert_eq!(n.finding.args["devices"], "2, 3");
        assert_eq!(n.text, "a tie: devices 2, 3 each arrived last in 1 of 2 instances");
        assert!(n.null_fields.is_empty());

        // Without the second instance device 3 alone is last: a list of one, no tie.
        let ctx = Context::from_kernels(Kernels::from_rows(&[
            (1, 56, 100, 1000, "ncclAG"),
            (2, 56, 300, 1000, "ncclAG"),
            (3, 56, 500, 1000, "ncclAG"),
        ]));
        let ev = run(&params(&[1, 2, 3]), &ctx).unwrap();
        assert_eq!(ev.values.as_ref().unwrap()["most_often_last"], json!([3]));
        assert!(ev.notes.iter().all(|n| n.finding.key != "note.last_tie"));
    }
}

#[cfg(test)]
mod table_tests {
    use serde_json::Value;

    use crate::analysis::{self, Context, Evidence, Params, show};
    use crate::scope::DeviceSel;
    use crate::trace::Kernels;

    /// Three ranks, two matched NCCL instances (the case of `nccl_skew`'s own unit test):
    /// durations 900, 600, 300 and 500, 510, 400 ns.
    fn skew() -> Evidence {
        let ctx = Context::from_kernels(Kernels::from_rows(&[
            (1, 56, 100, 1000, "ncclAG"),
            (2, 56, 400, 1000, "ncclAG"),
            (3, 56, 700, 1000, "ncclAG"),
            (1, 56, 2000, 2500, "ncclRS"),
            (2, 56, 2000, 2510, "ncclRS"),
            (3, 56, 2100, 2500, "ncclRS"),
        ]));
        let mut p = Params::new(DeviceSel::All);
        p.stream = Some(56);
        analysis::run("nccl-skew", &p, &ctx).unwrap()
    }

    fn line<'a>(text: &'a str, label: &str) -> &'a str {
        text.lines().find(|l| l.starts_with(label)).unwrap_or_else(|| panic!("{label}:\n{text}"))
    }

    #[test]
    fn nccl_skew_times_keep_their_unit() {
        let text = show::render(&skew(), 100);
        // nccl 900 + 600 + 300 + 500 + 510 + 400 = 3,210 ns; wait (600 + 300) + (100 + 110)
        // = 1,110 ns; 1,110 / 3,210 = 34.58%.
        assert_eq!(line(&text, "wait share"), "wait share   1.11 µs / 3.21 µs = 34.6%");
        // Start skews 600 and 100 ns, end skews 0 and 10 ns.
        assert!(line(&text, "start skew").starts_with("start skew   min 100 ns · median "));
        assert!(line(&text, "start skew").ends_with(" · max 600 ns"));
        assert!(line(&text, "end skew").starts_with("end skew     min 0 ns · median "));
        assert!(line(&text, "end skew").ends_with(" · max 10 ns"));
        // Rank 1 waits 600 + 100, rank 2 300 + 110, rank 3 never.
        assert_eq!(line(&text, "rank wait"), "rank wait    1:700 ns 2:410 ns 3:0 ns");
        assert_eq!(line(&text, "ranks"), "ranks        3 · matched instances 2");
    }

    #[test]
    fn a_null_or_absent_nccl_skew_value_reads_n_a_not_zero() {
        let mut ev = skew();
        let v = ev.values.as_mut().unwrap();
        v.insert("wait_ns".into(), Value::Null);
        v.remove("end_skew_ns");
        v["start_skew_ns"]["p90"] = Value::Null;
        v["rank_wait_ns"]["2"] = Value::Null;
        v.insert("matched".into(), Value::Null);
        let text = show::render(&ev, 100);
        assert_eq!(line(&text, "wait share"), "wait share   n/a / 3.21 µs = n/a");
        assert!(line(&text, "start skew").contains(" · p90 n/a · max 600 ns"), "{text}");
        assert_eq!(
            line(&text, "end skew"),
            "end skew     min n/a · median n/a · p90 n/a · max n/a"
        );
        assert_eq!(line(&text, "rank wait"), "rank wait    1:700 ns 2:n/a 3:0 ns");
        assert_eq!(line(&text, "ranks"), "ranks        3 · matched instances n/a");
        assert!(!text.contains("0.00 ms"), "{text}");
        // The window spans 100-2,510 ns.
        assert!(text.contains("effective 0.0000001-0.00000251 s (2.41 µs)"), "{text}");
    }
}

//! The map half of `nccl-skew` on a cluster: per rank, its compared NCCL kernels (the stream
//! they are taken from, how many the window selects) and what ties each to its group, from the
//! same [`rank_kernels`] and [`rank_ties`] the loop runs; and their return
//! onto the kernels read here, where [`decide`] and the loop of [`compute`](super::compute)
//! reduce them.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::matching::{RankTies, Ties, decide, rank_ties};
use super::{Context, MatchRule, Params, QueryError, rank_kernels, window_tests};

/// One rank's map: its kernels by their times on the set's clock and stream.
#[derive(Debug, Serialize, Deserialize)]
struct RankMap {
    stream: Option<i64>,
    count: i64,
    /// (start, end, stream) of each compared kernel, in list order.
    kernels: Vec<(i64, i64, i64)>,
    ties: RankTies,
}

/// The map of a worker: one line per rank of its shard.
pub fn map_rows(ctx: &Context, params: &Params) -> Vec<Value> {
    let k = &ctx.kernels;
    let (selects, _) = window_tests(ctx, params);
    let ranks: Vec<i64> = ctx.inventory.devices.iter().map(|d| d.device).collect();
    ranks
        .iter()
        .map(|&d| {
            let (streams, lists, counts) = rank_kernels(ctx, &[d], params, &selects);
            let list = &lists[0];
            let m = RankMap {
                stream: streams[0],
                count: counts[0],
                kernels: list.iter().map(|&i| (k.start[i], k.end[i], k.stream[i])).collect(),
                ties: if ctx.nvtx.is_some() && !list.is_empty() {
                    rank_ties(ctx, list)
                } else {
                    RankTies { comm: None, group: None }
                },
            };
            let rows = serde_json::to_value(m).unwrap_or(Value::Null);
            crate::analysis::cluster::line(ctx, d, rows)
        })
        .collect()
}

/// What [`compute`](super::compute) takes from the scan: per rank its stream, kernels and
/// count, and the rule with its ties.
type Mapped = (
    Vec<Option<i64>>,
    Vec<Vec<usize>>,
    Vec<i64>,
    (MatchRule, Ties, Vec<(i64, String)>, Vec<(i64, String)>),
);

/// Runs the map of `ranks` on the cluster at `address` and puts each rank's kernels back onto
/// the rows read here.
pub(super) fn on_cluster(
    ctx: &Context,
    ranks: &[i64],
    params: &Params,
    address: Option<&str>,
) -> Result<Mapped, QueryError> {
    if params.stream_map.is_some() {
        return Err(QueryError::Failed {
            reason: "`--stream RANK:STREAM` is not taken on a cluster".into(),
            hint: "give `--stream auto` or one stream, or run without `--cluster`".into(),
        });
    }
    let mut got = crate::analysis::cluster::run(ctx, &super::SPEC, params, address)?;
    let k = &ctx.kernels;
    let bad = |rank: i64, what: &str| QueryError::Failed {
        reason: format!("the cluster's map of rank {rank} {what}"),
        hint: "run the workers' verdict from the release of this one, over the same files".into(),
    };
    let (mut streams, mut lists, mut counts, mut ties) = (vec![], vec![], vec![], vec![]);
    for &d in ranks {
        let rows = got.remove(&d).ok_or_else(|| bad(d, "is missing"))?;
        let m: RankMap =
            serde_json::from_value(rows).map_err(|e| bad(d, &format!("is unreadable ({e})")))?;
        let at: HashMap<(i64, i64, i64), usize> = k
            .device_rows(d)
            .filter(|&i| k.is_nccl(i))
            .map(|i| ((k.start[i], k.end[i], k.stream[i]), i))
            .collect();
        let list = m
            .kernels
            .iter()
            .map(|key| at.get(key).copied())
            .collect::<Option<Vec<usize>>>()
            .ok_or_else(|| bad(d, "names a kernel not read here"))?;
        streams.push(m.stream);
        lists.push(list);
        counts.push(m.count);
        ties.push(m.ties);
    }
    // As `choose_rule`: no kernel, or no NVTX read, is the ordinal rule, said nothing of.
    let rule = if lists.iter().all(Vec::is_empty) || ctx.nvtx.is_none() {
        decide(ranks, Vec::new())
    } else {
        decide(ranks, ties)
    };
    Ok((streams, lists, counts, rule))
}

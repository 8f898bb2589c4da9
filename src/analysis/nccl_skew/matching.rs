//! Which kernels make one collective instance: the rule that ties each rank's compared NCCL
//! kernels to a group (a communicator, a process group and `Seq`, or a collective's name), and
//! the groups whose k-th kernels make instance k. Where each instance lies, and what it
//! measures, is [`super::compute`]'s.

use std::collections::BTreeMap;

use super::super::{Context, nccl_calls};
use super::{Communicator, MatchRule, ProcessGroup, collective};
use crate::trace::NameStyle;
use crate::trace::payload::NcclPayload;

/// Per rank, the key of each of its kernels in a group's list.
pub(super) type RankKeys = Vec<Vec<(i64, i64)>>;

/// The groups whose k-th kernels make instance k: per collective name, per communicator or
/// per process group.
pub(super) struct Groups {
    /// Each group's label and, per rank, its kernels (empty: not a member). A process
    /// group's lists hold first the kernels of the (`Seq`, k-th of that `Seq`) keys every
    /// member has, in key order, then the rest.
    pub(super) groups: Vec<(String, Vec<Vec<usize>>)>,
    /// Per group, the `Seq`s of the keys every member has (their number is the number of
    /// instances); none where the k-th kernels are matched by position.
    pub(super) aligned: Vec<Option<Vec<i64>>>,
    /// Per group, the key of each rank's kernels where it is not their position: (`Seq`, k-th
    /// kernel of that `Seq`) under the process-group rule.
    pub(super) keys_of: Vec<Option<RankKeys>>,
    /// The communicators, under the communicator rule.
    pub(super) communicators: Vec<Communicator>,
    /// The process groups, under the process-group rule.
    pub(super) process_groups: Vec<ProcessGroup>,
}

impl Groups {
    /// The groups of the compared kernels of `ranks` (`lists`, per rank, in start order), as
    /// `ties` ties each kernel.
    pub(super) fn new(ctx: &Context, ranks: &[i64], lists: &[Vec<usize>], ties: Ties) -> Self {
        let mut g = Groups {
            groups: Vec::new(),
            aligned: Vec::new(),
            keys_of: Vec::new(),
            communicators: Vec::new(),
            process_groups: Vec::new(),
        };
        match ties {
            Ties::Group(tags) => g.by_process_group(ranks, lists, &tags),
            Ties::Ordinal => g.by_collective(ctx, ranks, lists),
            Ties::Comm(comm_of) => g.by_communicator(ctx, ranks, lists, &comm_of),
        }
        g
    }

    /// One group per process group, its kernels keyed by (`Seq`, k-th kernel of that `Seq`
    /// on the rank) from `tags`: the keys every member has first, then the rest.
    fn by_process_group(
        &mut self,
        ranks: &[i64],
        lists: &[Vec<usize>],
        tags: &[Vec<(String, i64)>],
    ) {
        let mut by: BTreeMap<&str, Vec<Vec<(i64, usize)>>> = BTreeMap::new();
        for (r, list) in lists.iter().enumerate() {
            for (&i, (g, seq)) in list.iter().zip(&tags[r]) {
                by.entry(g.as_str()).or_insert_with(|| vec![Vec::new(); ranks.len()])[r]
                    .push((*seq, i));
            }
        }
        for (name, per) in by {
            let members: Vec<usize> = (0..ranks.len()).filter(|&r| !per[r].is_empty()).collect();
            // Per member, its kernels by (Seq, k-th kernel of that Seq on the rank).
            let keyed: Vec<BTreeMap<(i64, usize), usize>> = per
                .iter()
                .map(|l| {
                    let mut seen: BTreeMap<i64, usize> = BTreeMap::new();
                    l.iter()
                        .map(|&(seq, i)| {
                            let k = seen.entry(seq).or_default();
                            *k += 1;
                            ((seq, *k - 1), i)
                        })
                        .collect()
                })
                .collect();
            let common: Vec<(i64, usize)> = members
                .first()
                .map(|&m| {
                    keyed[m]
                        .keys()
                        .filter(|key| members.iter().all(|&r| keyed[r].contains_key(key)))
                        .copied()
                        .collect()
                })
                .unwrap_or_default();
            // Per rank, its kernels with their keys.
            let pairs: Vec<Vec<((i64, usize), usize)>> = (0..ranks.len())
                .map(|r| {
                    if per[r].is_empty() {
                        return Vec::new();
                    }
                    let mut l: Vec<((i64, usize), usize)> =
                        common.iter().map(|key| (*key, keyed[r][key])).collect();
                    l.extend(
                        keyed[r]
                            .iter()
                            .filter(|(key, _)| common.binary_search(key).is_err())
                            .map(|(key, &i)| (*key, i)),
                    );
                    l
                })
                .collect();
            let lists: Vec<Vec<usize>> =
                pairs.iter().map(|l| l.iter().map(|&(_, i)| i).collect()).collect();
            self.keys_of.push(Some(
                pairs
                    .iter()
                    .map(|l| l.iter().map(|&((seq, k), _)| (seq, k as i64)).collect())
                    .collect(),
            ));
            self.process_groups.push(ProcessGroup {
                name: name.to_string(),
                devices: members.iter().map(|&r| ranks[r]).collect(),
            });
            self.groups.push((name.to_string(), lists));
            self.aligned.push(Some(common.iter().map(|k| k.0).collect()));
        }
    }

    /// One group per collective name: under the ordinal rule every compared rank is a member
    /// of every collective.
    fn by_collective(&mut self, ctx: &Context, ranks: &[i64], lists: &[Vec<usize>]) {
        let k = &ctx.kernels;
        let mut by: BTreeMap<&str, Vec<Vec<usize>>> = BTreeMap::new();
        for (r, list) in lists.iter().enumerate() {
            for &i in list {
                by.entry(collective(k.name(i, NameStyle::Short)))
                    .or_insert_with(|| vec![Vec::new(); ranks.len()])[r]
                    .push(i);
            }
        }
        self.groups.extend(by.into_iter().map(|(name, l)| (name.to_string(), l)));
        self.aligned.resize(self.groups.len(), None);
        self.keys_of.resize(self.groups.len(), None);
    }

    /// One group per communicator (`comm_of`, per rank, each kernel's), with the ranks, NCCL
    /// ranks and size its initialization gives.
    fn by_communicator(
        &mut self,
        ctx: &Context,
        ranks: &[i64],
        lists: &[Vec<usize>],
        comm_of: &[Vec<u64>],
    ) {
        let mut by: BTreeMap<u64, Vec<Vec<usize>>> = BTreeMap::new();
        for (r, list) in lists.iter().enumerate() {
            for (&i, &c) in list.iter().zip(&comm_of[r]) {
                by.entry(c).or_insert_with(|| vec![Vec::new(); ranks.len()])[r].push(i);
            }
        }
        for (id, per) in by {
            let members: Vec<usize> = (0..ranks.len()).filter(|&r| !per[r].is_empty()).collect();
            let inits: Vec<Option<NcclPayload>> =
                members.iter().map(|&r| nccl_calls::comm_init(ctx, per[r][0], id)).collect();
            let sizes: Vec<i64> = inits.iter().filter_map(|p| p.and_then(|p| p.nranks)).collect();
            self.communicators.push(Communicator {
                id,
                devices: members.iter().map(|&r| ranks[r]).collect(),
                nccl_ranks: inits.iter().map(|p| p.and_then(|p| p.rank)).collect(),
                size: sizes.first().copied().filter(|&n| sizes.iter().all(|&m| m == n)),
            });
            self.groups.push((format!("0x{id:016x}"), per));
            self.aligned.push(None);
            self.keys_of.push(None);
        }
    }
}

/// What ties each compared kernel (per rank, in list order) to its instance's group.
pub(super) enum Ties {
    /// Nothing: the ordinal rule.
    Ordinal,
    /// The communicator of each kernel ([`COMM_RULE`](super::COMM_RULE)).
    Comm(Vec<Vec<u64>>),
    /// The process group and `Seq` of each kernel ([`GROUP_RULE`](super::GROUP_RULE)).
    Group(Vec<Vec<(String, i64)>>),
}

/// What ties one rank's compared kernels (in list order) to their groups, by each rule that
/// can: the map half of [`choose_rule`], which a worker of a cluster runs on its ranks.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct RankTies {
    /// The communicator of each kernel, or why one has none (None: the trace records no
    /// payload).
    pub(crate) comm: Option<Result<Vec<u64>, String>>,
    /// The process group and `Seq` of each kernel, or why one has none (None: the trace
    /// records no collective ops).
    pub(crate) group: Option<Result<Vec<(String, i64)>, String>>,
}

/// The ties of one rank's compared kernels `list` by each rule the trace records.
pub(crate) fn rank_ties(ctx: &Context, list: &[usize]) -> RankTies {
    let Some(nvtx) = ctx.nvtx.as_ref() else { return RankTies { comm: None, group: None } };
    let at = |i: usize| crate::scope::format_seconds(ctx.kernels.start[i]);
    let comm = (!nvtx.ranges.payloads.is_empty()).then(|| {
        list.iter()
            .map(|&i| match nccl_calls::communicator(ctx, i) {
                nccl_calls::CommTie::Comm(id) => Ok(id),
                nccl_calls::CommTie::Untied(why) => {
                    Err(format!("{why} (the kernel at {} s)", at(i)))
                }
            })
            .collect()
    });
    let group =
        (nvtx.ranges.payloads.is_empty() && nvtx.launches.collectives_recorded).then(|| {
            list.iter()
                .map(|&i| {
                    nccl_calls::process_group(ctx, i)
                        .map_err(|why| format!("{why} (the kernel at {} s)", at(i)))
                })
                .collect()
        });
    RankTies { comm, group }
}

/// The communicator of every compared kernel, where the trace's NCCL payloads give each one
/// ([`COMM_RULE`](super::COMM_RULE)); else, in a PyTorch profiler trace, the process group and `Seq` of every
/// compared kernel where its `record_param_comms` op gives both ([`GROUP_RULE`](super::GROUP_RULE)); else the
/// ordinal rule, with the ranks whose payloads, or whose ops, could not be used and why. An
/// nsys trace without payloads uses the ordinal rule and says nothing.
#[allow(clippy::type_complexity)]
pub(super) fn choose_rule(
    ctx: &Context,
    ranks: &[i64],
    lists: &[Vec<usize>],
) -> (MatchRule, Ties, Vec<(i64, String)>, Vec<(i64, String)>) {
    if lists.iter().all(Vec::is_empty) || ctx.nvtx.is_none() {
        return decide(ranks, Vec::new());
    }
    let ties = lists.iter().map(|l| rank_ties(ctx, l)).collect();
    decide(ranks, ties)
}

/// The rule of [`choose_rule`] from every rank's ties (none: the ordinal rule, said nothing
/// of): the reduce half, where the ranks meet.
#[allow(clippy::type_complexity)]
pub(crate) fn decide(
    ranks: &[i64],
    ties: Vec<RankTies>,
) -> (MatchRule, Ties, Vec<(i64, String)>, Vec<(i64, String)>) {
    let ordinal = |p, g| (MatchRule::CollectiveOrdinal, Ties::Ordinal, p, g);
    if ties.is_empty() {
        return ordinal(Vec::new(), Vec::new());
    }
    // The rule is the trace's: every rank's ties are of one kind, or none.
    if ties.iter().all(|t| t.comm.is_some()) {
        let mut comms = Vec::with_capacity(ties.len());
        let mut unusable = Vec::new();
        for (r, t) in ties.into_iter().enumerate() {
            match t.comm {
                Some(Ok(ids)) => comms.push(ids),
                Some(Err(why)) => unusable.push((ranks[r], why)),
                None => {}
            }
        }
        return if unusable.is_empty() {
            (MatchRule::CommunicatorOrdinal, Ties::Comm(comms), unusable, Vec::new())
        } else {
            ordinal(unusable, Vec::new())
        };
    }
    if !ties.iter().all(|t| t.group.is_some()) {
        return ordinal(Vec::new(), Vec::new());
    }
    let mut tags = Vec::with_capacity(ties.len());
    let mut unusable = Vec::new();
    for (r, t) in ties.into_iter().enumerate() {
        match t.group {
            Some(Ok(ids)) => tags.push(ids),
            Some(Err(why)) => unusable.push((ranks[r], why)),
            None => {}
        }
    }
    if unusable.is_empty() {
        (MatchRule::ProcessGroupSequence, Ties::Group(tags), Vec::new(), unusable)
    } else {
        ordinal(Vec::new(), unusable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comm(ids: Result<Vec<u64>, String>) -> RankTies {
        RankTies { comm: Some(ids), group: None }
    }

    #[test]
    fn the_rule_is_decided_from_every_ranks_ties() {
        let ranks = [0, 1];
        let (rule, ..) = decide(&ranks, vec![comm(Ok(vec![7])), comm(Ok(vec![7]))]);
        assert_eq!(rule, MatchRule::CommunicatorOrdinal);
        // One rank that cannot be tied sends every rank to the ordinal rule, and is named.
        let (rule, _, unusable, _) =
            decide(&ranks, vec![comm(Ok(vec![7])), comm(Err("no payload".into()))]);
        assert_eq!(rule, MatchRule::CollectiveOrdinal);
        assert_eq!(unusable, vec![(1, "no payload".to_string())]);
        let group = |g: Result<Vec<(String, i64)>, String>| RankTies { comm: None, group: Some(g) };
        let (rule, ..) = decide(
            &ranks,
            vec![group(Ok(vec![("0".into(), 1)])), group(Ok(vec![("0".into(), 1)]))],
        );
        assert_eq!(rule, MatchRule::ProcessGroupSequence);
        // Nothing recorded: the ordinal rule, said nothing of.
        let none = || RankTies { comm: None, group: None };
        let (rule, _, p, g) = decide(&ranks, vec![none(), none()]);
        assert_eq!((rule, p.len(), g.len()), (MatchRule::CollectiveOrdinal, 0, 0));
    }
}

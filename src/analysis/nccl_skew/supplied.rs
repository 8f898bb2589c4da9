//! The reduce of an engine supplied in process (the SQL specification the tests run): the
//! table `keyed` it reads, and its four tables put back into a [`Skew`] as the loop of
//! [`compute`](super::compute) would have filled it.

use std::collections::BTreeMap;

use super::matching::RankKeys;
use super::{Context, CutInstance, Instance, MatchRule, QueryError, Skew, collective};
use crate::engine::{Keyed, Placed, Reduced, ReducedInstance, ReducedMember};
use crate::trace::NameStyle;

/// The table the engines reduce: every compared kernel with its rank, group and key (see
/// `nccl_skew.sql`).
pub(super) fn keyed_rows(
    ctx: &Context,
    groups: &[(String, Vec<Vec<usize>>)],
    keys_of: &[Option<RankKeys>],
    selects: &dyn Fn(usize) -> bool,
    holds: &dyn Fn(usize) -> bool,
) -> Keyed {
    let k = &ctx.kernels;
    let mut out = Keyed::default();
    for ((name, per), keys) in groups.iter().zip(keys_of) {
        for (r, list) in per.iter().enumerate() {
            for (p, &i) in list.iter().enumerate() {
                let (a, b) = keys.as_ref().map_or((p as i64, 0), |k| k[r][p]);
                out.rank.push(r as i64);
                out.grp.push(name.clone());
                out.a.push(a);
                out.b.push(b);
                out.row.push(i as i64);
                out.start.push(k.start[i]);
                out.end.push(k.end[i]);
                out.name.push(i64::from(k.short[i]));
                out.sel.push(selects(i));
                out.held.push(holds(i));
            }
        }
    }
    out
}

/// Puts an engine's reduce into `out`, as the loop of [`compute`](super::compute) would have:
/// labels and ordinals from the groups, instances in time order, cut and failed ones by span
/// (then in group and key order, the loop's order).
pub(super) fn fill(
    ctx: &Context,
    out: &mut Skew,
    groups: &[(String, Vec<Vec<usize>>)],
    red: Reduced,
) -> Result<(), QueryError> {
    let k = &ctx.kernels;
    let order: BTreeMap<&str, usize> =
        groups.iter().enumerate().map(|(g, (name, _))| (name.as_str(), g)).collect();
    let bad = |what: &str| QueryError::Failed {
        reason: format!("the engine returned {what}"),
        hint: "the engine's definition and verdict disagree: run both from one release".into(),
    };
    let row = |r: i64| usize::try_from(r).ok().filter(|&r| r < k.start.len());
    let label = |x: &ReducedInstance| -> Result<String, QueryError> {
        let first = row(x.first_row).ok_or_else(|| bad("a row outside the kernels"))?;
        Ok(match out.rule {
            MatchRule::CollectiveOrdinal => x.grp.clone(),
            MatchRule::CommunicatorOrdinal => {
                format!("{} on {}", collective(k.name(first, NameStyle::Short)), x.grp)
            }
            MatchRule::ProcessGroupSequence => format!(
                "{} on process group {}",
                collective(k.name(first, NameStyle::Short)),
                x.grp
            ),
        })
    };
    let ordinal = |x: &ReducedInstance| match out.rule {
        MatchRule::ProcessGroupSequence => usize::try_from(x.a).unwrap_or(usize::MAX),
        _ => usize::try_from(x.a).map_or(usize::MAX, |a| a + 1),
    };
    let mut placed: Vec<&ReducedInstance> = red.instances.iter().collect();
    placed.sort_by_key(|x| (x.smin, x.emax, order.get(x.grp.as_str()), x.a, x.b));
    for x in &placed {
        let this =
            CutInstance { collective: label(x)?, ordinal: ordinal(x), span: [x.smin, x.emax] };
        match x.place {
            Placed::Cut => out.cut.push(this),
            Placed::Overlap => out.overlap_failures.push(this),
            Placed::Inside => {}
        }
    }
    let mut kept: Vec<&ReducedInstance> =
        red.instances.iter().filter(|x| x.place == Placed::Inside).collect();
    kept.sort_by_key(|x| (x.smin, x.first_row));
    let mut members: BTreeMap<(&str, i64, i64), Vec<&ReducedMember>> = BTreeMap::new();
    for m in &red.members {
        members.entry((m.grp.as_str(), m.a, m.b)).or_default().push(m);
    }
    let ranks = out.ranks.len();
    for x in &kept {
        let mut ms = members.remove(&(x.grp.as_str(), x.a, x.b)).unwrap_or_default();
        ms.sort_by_key(|m| m.rank);
        if ms.len() as i64 != x.n {
            return Err(bad("an instance whose members are not all there"));
        }
        let mut idx = Vec::with_capacity(ms.len());
        let mut rows = Vec::with_capacity(ms.len());
        for m in &ms {
            let r = usize::try_from(m.rank)
                .ok()
                .filter(|&r| r < ranks)
                .ok_or_else(|| bad("a member outside the compared ranks"))?;
            idx.push(r);
            rows.push(row(m.row).ok_or_else(|| bad("a row outside the kernels"))?);
            out.start_offsets[r].push(m.start_offset);
            out.end_offsets[r].push(m.end_offset);
        }
        out.start_skews.push(x.smax - x.smin);
        out.end_skews.push(x.emax - x.emin);
        out.instances.push(Instance { collective: label(x)?, members: idx, rows });
    }
    out.matched = out.instances.len();
    out.nccl = red.nccl;
    out.wait = red.wait;
    out.name_mismatches = red.mismatches;
    if red.ranks.len() != ranks {
        return Err(bad("another number of ranks"));
    }
    for (r, s) in red.ranks.iter().enumerate() {
        out.unmatched[r] = s.unmatched;
        out.rank_wait[r] = s.wait;
        out.rank_matched[r] = usize::try_from(s.matched).unwrap_or(0);
        out.last_arrivals[r] = s.last;
        out.first_arrivals[r] = s.first;
    }
    Ok(())
}

//! `kernels`: per kernel name count and duration statistics over a device set.
//!
//! Durations are summed per name (kernel time, not wall time: concurrent kernels add up).
//! `values` aggregates every kernel that passes the name filter; `rows` lists names by total
//! time, top-N. Reads the kernel scan only.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Value, json};

use super::{
    AnalysisSpec, ChartKind, Context, Evidence, Field, FieldKind, Params, QueryError, ScopeRule,
    Table, Unit, obj, quantiles_of, select,
};
use crate::scope::Semantics;
use crate::term as table;
use crate::trace::NameStyle;

/// Registry entry.
pub const SPEC: AnalysisSpec = AnalysisSpec {
    name: "kernels",
    summary: "count and duration statistics per kernel name over a device set (kernel time, not wall time)",
    fields: &[
        Field {
            name: "count",
            unit: Unit::Count,
            kind: FieldKind::Count,
            definition: "kernels that pass the name filter, summed over the devices in scope",
        },
        Field {
            name: "total_ns",
            unit: Unit::Ns,
            kind: FieldKind::KernelTime,
            definition: "sum of their durations (kernel time; concurrent kernels add, so this is not wall time)",
        },
        Field {
            name: "mean_ns",
            unit: Unit::Ns,
            kind: FieldKind::KernelTime,
            definition: "total_ns / count, rounded down; null when count is 0",
        },
        Field {
            name: "min_ns",
            unit: Unit::Ns,
            kind: FieldKind::KernelTime,
            definition: "shortest duration",
        },
        Field {
            name: "median_ns",
            unit: Unit::Ns,
            kind: FieldKind::KernelTime,
            definition: "lower median duration",
        },
        Field {
            name: "max_ns",
            unit: Unit::Ns,
            kind: FieldKind::KernelTime,
            definition: "longest duration",
        },
        Field {
            name: "names",
            unit: Unit::Count,
            kind: FieldKind::Count,
            definition: "distinct kernel names that pass the filter",
        },
        Field {
            name: "devices_with_match",
            unit: Unit::Count,
            kind: FieldKind::Count,
            definition: "devices in scope with at least one matching kernel",
        },
    ],
    sums: &[],
    params: &[super::NAMES, super::MATCH, super::REGEX, super::LIMIT],
    scope: ScopeRule::Summed,
    needs: &[Table::Kernels],
    cross_rank: &[],
    ratios: &[],
    per_name: true,
    rank_rows: None,
    across: &[],
    chart: Some(ChartKind::TopNames),
    terms: &["kernel_time"],
    run,
    table,
};

/// The statistics that do not exist over no kernel.
const NO_MATCH_NULLS: [&str; 4] = ["mean_ns", "min_ns", "median_ns", "max_ns"];

/// Default top-N when no limit is given.
pub const DEFAULT_LIMIT: usize = 15;

/// [`DEFAULT_LIMIT`] as the command line's default.
pub const DEFAULT_LIMIT_TEXT: &str = "15";

#[derive(Default)]
struct Group {
    /// The time of every kernel in the window (clipped under clip): kernel time.
    time: Vec<i64>,
    /// The durations of the kernels that belong to the window (in a split, those that start
    /// in it): counts and order statistics.
    durations: Vec<i64>,
    per_device: BTreeMap<i64, i64>,
}

/// The statistics of a group, with its total for sorting; `what` names the group in the error
/// of a total that does not fit 64 bits.
fn stats(g: &Group, what: &str) -> Result<(serde_json::Map<String, Value>, i64), QueryError> {
    let mut d = g.durations.clone();
    d.sort_unstable();
    let q = quantiles_of(&d);
    let total = super::checked_sum(g.time.iter().copied(), what)?;
    let count = d.len() as i64;
    // Over no kernel these do not exist: null, and `run` says why.
    let or_null = |f: fn(&super::Quantiles) -> i64| q.as_ref().map_or(Value::Null, |q| json!(f(q)));
    let values = obj([
        ("count", json!(count)),
        ("total_ns", json!(total)),
        ("mean_ns", if count > 0 { json!(total / count) } else { Value::Null }),
        ("min_ns", or_null(|q| q.min)),
        ("median_ns", or_null(|q| q.median)),
        ("max_ns", or_null(|q| q.max)),
        (
            "per_device",
            json!(
                g.per_device.iter().map(|(k, v)| (k.to_string(), *v)).collect::<BTreeMap<_, _>>()
            ),
        ),
    ]);
    Ok((values, total))
}

/// Runs the analysis.
pub fn run(params: &Params, ctx: &Context) -> Result<Evidence, QueryError> {
    let devices = ctx.resolve_devices(&params.devices)?;
    ctx.check_window(params.window, &devices)?;
    let style = params.names.unwrap_or(NameStyle::Short);
    let limit = params.limit.unwrap_or(DEFAULT_LIMIT);
    let k = &ctx.kernels;
    let mut groups: HashMap<u32, Group> = HashMap::new();
    let mut all = Group::default();
    // Whether each name matches the filter, decided once per name rather than per row.
    let mut matched: Vec<Option<bool>> = vec![None; k.name_count()];
    for &d in &devices {
        for (i, s, e) in select(k, k.device_rows(d), params.window, params.semantics, true) {
            if let Some(f) = &params.filter
                && !*matched[k.name_id(i, style) as usize]
                    .get_or_insert_with(|| f.matches(k.name(i, style)))
            {
                continue;
            }
            let counted = params.counts(k.start[i]);
            for g in [groups.entry(k.name_id(i, style)).or_default(), &mut all] {
                g.time.push(e - s);
                if counted {
                    g.durations.push(e - s);
                    *g.per_device.entry(d).or_default() += 1;
                }
            }
        }
    }
    // All the matching kernels first: when a name's total overflows, so does this one, and the
    // error names the same sum whatever the order of the names.
    let (mut values, _) = stats(&all, "kernel time of the matching kernels")?;
    let mut named: Vec<(&str, serde_json::Map<String, Value>, i64)> = groups
        .iter()
        .map(|(id, g)| {
            let name = k.name_text(*id);
            let (s, total) = stats(g, &format!("kernel time of `{name}`"))?;
            Ok((name, s, total))
        })
        .collect::<Result<_, QueryError>>()?;
    named.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(b.0)));
    let total_names = named.len();

    let mut ev = ctx.evidence(&SPEC, params, devices.clone());
    ev.parameters.insert("names".into(), json!(style.as_str()));
    ev.parameters.insert("limit".into(), json!(limit));
    ev.parameters.insert(
        "match".into(),
        params.filter.as_ref().map_or(Value::Null, |f| json!(f.describe())),
    );
    values.insert("names".into(), json!(total_names));
    values.insert("devices_with_match".into(), json!(all.per_device.len()));
    ev.values = Some(values);
    if all.durations.is_empty() {
        let what = params.filter.as_ref().map_or_else(|| "no filter".into(), |f| f.describe());
        ev.leave_null(
            &NO_MATCH_NULLS,
            "note.no_kernel_match",
            &[("filter", what), ("devices", crate::scope::format_device_list(&devices))],
            ("need.kernel_match", &[]),
        );
    }
    ev.rows = Some(
        named
            .into_iter()
            .take(limit)
            .map(|(name, s, _)| {
                let mut m = obj([("name", json!(name))]);
                m.extend(s);
                m
            })
            .collect(),
    );
    if total_names > limit {
        ev.note(
            "note.top_names",
            &[("limit", limit.to_string()), ("total", total_names.to_string())],
        );
    }
    if devices.len() > 1 {
        ev.note("note.summed_devices", &[("n", devices.len().to_string())]);
    }
    if let (Some(_), Semantics::Clip) = (params.window, params.semantics) {
        ev.note("note.kernels_clipped", &[]);
    }
    ev.window.effective_ns = super::effective_window(ctx, &devices, params);
    Ok(ev)
}

/// The terminal table of `verdict query` (below the scope lines).
pub fn table(ev: &Evidence, width: usize) -> String {
    #[allow(unused_imports)]
    use super::show::*;
    #[allow(unused_imports)]
    use crate::term::Column;
    let mut s = String::new();
    let rows: Vec<Vec<String>> = ev
        .rows
        .iter()
        .flatten()
        .map(|r| {
            vec![
                field(r, "name").as_str().unwrap_or("").to_string(),
                count(r.get("count")),
                time(r.get("total_ns")),
                time(r.get("mean_ns")),
                time(r.get("median_ns")),
                time(r.get("max_ns")),
                pairs(field(r, "per_device"), plain),
            ]
        })
        .collect();
    s += &table::render(
        &[
            Column::text("name"),
            Column::number("count"),
            Column::number("total"),
            Column::number("mean"),
            Column::number("median"),
            Column::number("max"),
            Column::text("per device"),
        ],
        &rows,
        width,
    );
    if let Some(v) = &ev.values {
        s.push('\n');
        s += &table::hang(
            "",
            &format!(
                "all matching kernels: {} over {} name(s), {} kernel time",
                count(v.get("count")),
                plain(v.get("names")),
                time(v.get("total_ns"))
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
    use crate::analysis::NameFilter;
    use crate::scope::{DeviceSel, Window};
    use crate::trace::Kernels;

    fn ctx() -> Context {
        Context::from_kernels(Kernels::from_rows(&[
            (1, 7, 100, 200, "flash_bwd_a"),
            (1, 7, 300, 350, "flash_bwd_a"),
            (2, 7, 100, 130, "flash_bwd_a"),
            (2, 7, 150, 400, "gemm"),
            (3, 7, 500, 900, "flash_bwd_a"),
        ]))
    }

    #[test]
    fn counts_and_stats_by_hand() {
        let mut p = Params::new(DeviceSel::Set(vec![1, 2]));
        p.filter = Some(NameFilter::Substring("flash_bwd".into()));
        let ev = run(&p, &ctx()).unwrap();
        let v = ev.values.unwrap();
        assert_eq!(v["count"], 3);
        assert_eq!(v["total_ns"], 100 + 50 + 30);
        assert_eq!(v["min_ns"], 30);
        assert_eq!(v["median_ns"], 50);
        assert_eq!(v["max_ns"], 100);
        assert_eq!(v["per_device"]["1"], 2);
        assert_eq!(v["per_device"]["2"], 1);
        assert_eq!(ev.rows.unwrap().len(), 1);
    }

    #[test]
    fn contain_window_drops_straddlers_and_rows_sort_by_total() {
        let mut p = Params::new(DeviceSel::All);
        p.window = Some(Window::parse("0.00000012:0.000001").unwrap());
        p.semantics = Semantics::Contain;
        let ev = run(&p, &ctx()).unwrap();
        let rows = ev.rows.unwrap();
        // Kept: (1) 300-350, (2) 150-400 gemm, (3) 500-900; 100-200 and 100-130 start before.
        assert_eq!(rows[0]["name"], "flash_bwd_a");
        assert_eq!(rows[0]["total_ns"], 450);
        assert_eq!(rows[1]["name"], "gemm");
        assert_eq!(ev.values.unwrap()["count"], 3);
    }
}

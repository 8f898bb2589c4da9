//! `kernels`: per kernel name count and duration statistics over a device set.
//!
//! Durations are summed per name (kernel time, not wall time: concurrent kernels add up).
//! `values` aggregates every kernel that passes the name filter; `rows` lists names by total
//! time, top-N. Reads the kernel scan only.

use std::collections::{BTreeMap, HashMap};

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Value, json};

use super::{
    AnalysisSpec, ChartKind, Context, Evidence, Field, FieldKind, Params, QueryError, ScopeRule,
    Table, Unit, quantiles_of, select,
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
    per_device: &[("count", "per_device")],
    rank_rows: None,
    across: &[],
    stats: &[
        ("mean_ns", super::Stat::Mean),
        ("min_ns", super::Stat::Min),
        ("median_ns", super::Stat::Median),
        ("max_ns", super::Stat::Max),
        ("names", super::Stat::Distinct),
        ("devices_with_match", super::Stat::Distinct),
    ],
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

/// The statistics of a group of kernels: all that pass the filter, or those of one name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Stats {
    /// Kernels counted.
    pub count: i64,
    /// Kernel time, summed.
    pub total_ns: i64,
    /// `total_ns / count`, truncated; absent over no kernel.
    pub mean_ns: Option<i64>,
    /// The shortest duration; absent over no kernel.
    pub min_ns: Option<i64>,
    /// The lower median duration; absent over no kernel.
    pub median_ns: Option<i64>,
    /// The longest duration; absent over no kernel.
    pub max_ns: Option<i64>,
    /// Kernels counted on each device.
    pub per_device: BTreeMap<i64, i64>,
}

/// The values of the scope: every kernel that passes the filter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(rename = "KernelsValues")]
pub struct Values {
    /// Their statistics.
    #[serde(flatten)]
    pub stats: Stats,
    /// Distinct names.
    pub names: i64,
    /// Devices with at least one of them.
    pub devices_with_match: i64,
}

/// One name, among the largest totals.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(rename = "KernelsRow")]
pub struct Row {
    /// The name, in the chosen style.
    pub name: String,
    /// Its statistics.
    #[serde(flatten)]
    pub stats: Stats,
}

/// A row per name: no device to label.
impl super::EvidenceRow for Row {}

/// The statistics of a group; `what` names the group in the error of a total that does not
/// fit 64 bits.
fn stats(g: &Group, what: &str) -> Result<Stats, QueryError> {
    let mut d = g.durations.clone();
    d.sort_unstable();
    let q = quantiles_of(&d);
    let total = super::checked_sum(g.time.iter().copied(), what)?;
    let count = d.len() as i64;
    // Over no kernel these do not exist: absent, and `run` says why.
    Ok(Stats {
        count,
        total_ns: total,
        mean_ns: (count > 0).then(|| total / count),
        min_ns: q.as_ref().map(|q| q.min),
        median_ns: q.as_ref().map(|q| q.median),
        max_ns: q.as_ref().map(|q| q.max),
        per_device: g.per_device.clone(),
    })
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
    let all_stats = stats(&all, "kernel time of the matching kernels")?;
    let mut named: Vec<(&str, Stats)> = groups
        .iter()
        .map(|(id, g)| {
            let name = k.name_text(*id);
            Ok((name, stats(g, &format!("kernel time of `{name}`"))?))
        })
        .collect::<Result<_, QueryError>>()?;
    named.sort_by(|a, b| b.1.total_ns.cmp(&a.1.total_ns).then_with(|| a.0.cmp(b.0)));
    let total_names = named.len();

    let mut ev = ctx.evidence(&SPEC, params, devices.clone());
    ev.parameters.insert("names".into(), json!(style.as_str()));
    ev.parameters.insert("limit".into(), json!(limit));
    // The options' values as given (`match` a substring, `regex` a pattern), and the filter
    // in words beside them.
    match &params.filter {
        Some(super::NameFilter::Substring(text)) => {
            ev.parameters.insert("match".into(), json!(text));
        }
        Some(super::NameFilter::Regex(r)) => {
            ev.parameters.insert("regex".into(), json!(r.as_str()));
        }
        None => {
            ev.parameters.insert("match".into(), Value::Null);
        }
    }
    ev.parameters.insert(
        "filter".into(),
        params.filter.as_ref().map_or(Value::Null, |f| json!(f.describe())),
    );
    ev.values = Some(super::values::Values::Kernels(Values {
        stats: all_stats,
        names: total_names as i64,
        devices_with_match: all.per_device.len() as i64,
    }));
    if all.durations.is_empty() {
        let what = params.filter.as_ref().map_or_else(|| "no filter".into(), |f| f.describe());
        ev.leave_null(
            &NO_MATCH_NULLS,
            "note.no_kernel_match",
            &[("filter", what), ("devices", crate::scope::format_device_list(&devices))],
            ("need.kernel_match", &[]),
        );
    }
    ev.rows = Some(super::values::Rows::Kernels(
        named
            .into_iter()
            .take(limit)
            .map(|(name, stats)| Row { name: name.to_string(), stats })
            .collect(),
    ));
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
    let per_device = |m: &BTreeMap<i64, i64>| {
        m.iter().map(|(d, n)| format!("{d}:{n}")).collect::<Vec<_>>().join(" ")
    };
    let rows: Vec<Vec<String>> = match &ev.rows {
        Some(super::values::Rows::Kernels(rows)) => rows
            .iter()
            .map(|r| {
                vec![
                    r.name.clone(),
                    num(r.stats.count),
                    dur(r.stats.total_ns),
                    dur(r.stats.mean_ns),
                    dur(r.stats.median_ns),
                    dur(r.stats.max_ns),
                    per_device(&r.stats.per_device),
                ]
            })
            .collect(),
        _ => Vec::new(),
    };
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
    if let Some(super::values::Values::Kernels(v)) = &ev.values {
        s.push('\n');
        s += &table::hang(
            "",
            &format!(
                "all matching kernels: {} over {} name(s), {} kernel time",
                num(v.stats.count),
                v.names,
                dur(v.stats.total_ns)
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
        let Some(crate::analysis::values::Values::Kernels(v)) = ev.values else { panic!() };
        assert_eq!(v.stats.count, 3);
        assert_eq!(v.stats.total_ns, 100 + 50 + 30);
        assert_eq!(v.stats.min_ns, Some(30));
        assert_eq!(v.stats.median_ns, Some(50));
        assert_eq!(v.stats.max_ns, Some(100));
        assert_eq!(v.stats.per_device, BTreeMap::from([(1, 2), (2, 1)]));
        assert_eq!(ev.rows.unwrap().len(), 1);
    }

    #[test]
    fn contain_window_drops_straddlers_and_rows_sort_by_total() {
        let mut p = Params::new(DeviceSel::All);
        p.window = Some(Window::parse("0.00000012:0.000001").unwrap());
        p.semantics = Semantics::Contain;
        let ev = run(&p, &ctx()).unwrap();
        let Some(crate::analysis::values::Rows::Kernels(rows)) = ev.rows else { panic!() };
        // Kept: (1) 300-350, (2) 150-400 gemm, (3) 500-900; 100-200 and 100-130 start before.
        assert_eq!(rows[0].name, "flash_bwd_a");
        assert_eq!(rows[0].stats.total_ns, 450);
        assert_eq!(rows[1].name, "gemm");
        let Some(crate::analysis::values::Values::Kernels(v)) = ev.values else { panic!() };
        assert_eq!(v.stats.count, 3);
    }
}

//! The evidence of one `nvtx` run, from its range statistics and its attribution: the values,
//! one row per range name, and the notes that say what is absent, empty, unlinked, outside
//! every range or cut. It reads no trace.

use super::super::{Evidence, NvtxData, Params};
use super::{Attribution, RangeSummary, Row, Values};

/// The values of a run: the pooled statistics of the kept ranges and the kernels attributed
/// to them, summed over the devices; the share and the GPU span only where the ranges and the
/// launches were both read (`attributable`).
pub(super) fn values(stats: &RangeSummary, att: &Attribution, attributable: bool) -> Values {
    let un = &att.unattributed;
    let span = match (
        att.rows.iter().map(|r| r.first_start_ns).min(),
        att.rows.iter().map(|r| r.last_end_ns).max(),
    ) {
        (Some(a), Some(b)) if attributable => Some(b - a),
        _ => None,
    };
    let pooled = stats.pooled;
    Values {
        ranges: stats.ranges,
        names: stats.rows.len() as u64,
        range_ns: pooled.map_or(0, |x| x.total_ns),
        range_min_ns: pooled.map(|x| x.min_ns),
        range_median_ns: pooled.map(|x| x.median_ns),
        range_p90_ns: pooled.map(|x| x.p90_ns),
        range_max_ns: pooled.map(|x| x.max_ns),
        kernels: att.attributed.kernels,
        kernel_ns: att.attributed.kernel_ns,
        gpu_span_ns: span,
        selected_kernels: att.selected.kernels,
        selected_kernel_ns: att.selected.kernel_ns,
        kernel_share: att
            .attributed_share
            .rational()
            .filter(|_| attributable)
            .map(|r| r.num as f64 / r.den as f64),
        unattributed: un.total().kernels,
        no_launch_record: un.no_launch_record.kernels,
        no_enclosing_range: un.no_enclosing_range.kernels,
        no_correlation: un.no_correlation_columns.kernels + un.no_correlation_value.kernels,
    }
}

/// One row per range name, ranges and attributed kernels side by side: the names of the
/// ranges first, in their order, then the names only kernels were attributed to.
pub(super) fn rows(stats: &RangeSummary, att: &Attribution) -> Vec<Row> {
    let mut names: Vec<&str> = stats.rows.iter().map(|r| r.name.as_str()).collect();
    for a in &att.rows {
        if !names.contains(&a.name.as_str()) {
            names.push(&a.name);
        }
    }
    names
        .into_iter()
        .map(|name| {
            let r = stats.rows.iter().find(|r| r.name == name);
            let a = att.rows.iter().find(|a| a.name == name);
            Row {
                name: name.to_string(),
                ranges: r.map_or(0, |r| r.count),
                range_ns: r.map_or(0, |r| r.total_ns),
                range_min_ns: r.map(|r| r.min_ns),
                range_median_ns: r.map(|r| r.median_ns),
                range_p90_ns: r.map(|r| r.p90_ns),
                range_max_ns: r.map(|r| r.max_ns),
                variants: r.map_or(0, |r| r.variants),
                domains: r.map(|r| r.domains.clone()).unwrap_or_default(),
                kernels: a.map_or(0, |a| a.kernels),
                kernel_ns: a.map_or(0, |a| a.kernel_ns),
                gpu_span_ns: a.map(|a| a.span_ns),
            }
        })
        .collect()
}

/// Leaves null what a table that was not captured (`data`) makes absent, and the statistics
/// of an empty population; each with its note (for an empty one, which filter left it empty).
pub(super) fn leave_absent(
    ev: &mut Evidence,
    data: &NvtxData,
    stats: &RangeSummary,
    att: &Attribution,
) {
    if data.ranges.table_absent {
        ev.leave_null(
            &[
                "range_min_ns",
                "range_median_ns",
                "range_p90_ns",
                "range_max_ns",
                "kernel_share",
                "gpu_span_ns",
            ],
            "note.nvtx_absent",
            &[],
            ("need.nvtx_capture", &[]),
        );
    } else if data.launches.table_absent {
        ev.leave_null(
            &["kernel_share", "gpu_span_ns"],
            "note.runtime_absent",
            &[],
            ("need.runtime_capture", &[]),
        );
    }
    // Empty populations: their statistics do not exist, and the note says which filter left
    // them empty.
    if !data.ranges.table_absent {
        if stats.pooled.is_none() {
            ev.leave_null(
                &["range_min_ns", "range_median_ns", "range_p90_ns", "range_max_ns"],
                "note.no_range_match",
                &[],
                ("need.range_match", &[]),
            );
        }
        if !data.launches.table_absent && att.rows.is_empty() {
            ev.leave_null(
                &["gpu_span_ns"],
                "note.no_kernel_attributed",
                &[],
                ("need.range_match", &[]),
            );
        }
        if !data.launches.table_absent && att.selected.kernel_ns == 0 {
            ev.leave_null(
                &["kernel_share"],
                "note.no_kernel_time",
                &[],
                ("need.kernels_in_window", &[]),
            );
        }
    }
}

/// Notes what the numbers leave out: kernels no range could ever receive, kernels launched
/// outside every range (without a filter: with one, kernels outside the ranges asked for are
/// the point), unterminated and clipped ranges, duplicate and nested launches.
pub(super) fn note_kernels(
    ev: &mut Evidence,
    params: &Params,
    data: &NvtxData,
    stats: &RangeSummary,
    att: &Attribution,
) {
    let un = &att.unattributed;
    // Kernels that no range could ever receive, and (without a filter) kernels launched
    // outside every range; with a filter, kernels outside the ranges asked for are the point.
    let pct = |ns: i64| {
        crate::units::percent(ns.into(), att.selected.kernel_ns.into())
            .unwrap_or_else(|| "n/a".into())
    };
    let no_corr = un.no_correlation_columns.kernels + un.no_correlation_value.kernels;
    let unlinked = un.no_launch_record.kernels + no_corr;
    if unlinked > 0 && !data.ranges.table_absent {
        let ns = un.no_launch_record.kernel_ns
            + un.no_correlation_columns.kernel_ns
            + un.no_correlation_value.kernel_ns;
        ev.note(
            "note.nvtx_unlinked",
            &[
                ("n", unlinked.to_string()),
                ("of", att.selected.kernels.to_string()),
                ("share", pct(ns)),
                ("no_launch", un.no_launch_record.kernels.to_string()),
                ("no_correlation", no_corr.to_string()),
            ],
        );
    }
    let filtered = params.exact.is_some()
        || params.filter.is_some()
        || params.domain.is_some()
        || params.pids.is_some()
        || params.tids.is_some();
    if !filtered && un.no_enclosing_range.kernels > 0 {
        ev.note(
            "note.nvtx_outside",
            &[
                ("n", un.no_enclosing_range.kernels.to_string()),
                ("of", att.selected.kernels.to_string()),
                ("share", pct(un.no_enclosing_range.kernel_ns)),
            ],
        );
    }
    if stats.unterminated > 0 {
        ev.note(
            "note.nvtx_unterminated",
            &[
                ("n", stats.unterminated.to_string()),
                ("at", stats.closed_at_ns.map_or("-".into(), crate::scope::format_seconds)),
            ],
        );
    }
    if params.window.is_some() && stats.clipped > 0 {
        ev.note("note.nvtx_clipped", &[("n", stats.clipped.to_string())]);
    }
    if att.duplicate_launches > 0 {
        ev.note("note.nvtx_duplicate_launches", &[("n", att.duplicate_launches.to_string())]);
    }
    if att.nested_launches > 0 {
        ev.note("note.nested_launches", &[("n", att.nested_launches.to_string())]);
    }
}

//! NVTX ranges and the attribution of kernels to them, on real Nsight Systems exports.
//!
//! The library's results are checked against references written here, independently of the
//! code under test: range counts, totals and domain names by plain SQL `GROUP BY`, kernels
//! joined to their launch records by an SQL join on (process, correlationId), and the
//! enclosing range of every kernel by a naive loop over every range of the trace (O(kernels x
//! ranges)), straight from the definition. Small synthetic databases cover the schema
//! variants the real files lack (missing columns and tables, unterminated ranges).
//!
//! Committed fixtures (MIT) live in `fixtures/`; the unlicensed traces of `../shared/traces`
//! are read in place only when that folder exists.

use crate::util;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use regex::Regex;
use rusqlite::Connection;
use verdict::analysis::nvtx::{
    Attribution, AttributionParams, NameRule, Nesting, StatsParams, attribute, needed_launches,
    range_stats,
};
use verdict::scope::{Semantics, Window};
use verdict::trace::nvtx::{LaunchKeys, Launches, NvtxRanges};
use verdict::trace::{KernelFilter, Kernels, Trace, TraceError};

use util::{fixture, open_ro, shared_traces, skip_no_shared};

/// Committed real exports: with NVTX and runtime tables (nsys-ai), and without NVTX (2021).
const COMMITTED: &[&str] = &[
    "nsys-ai/mfu_2gpu_before.sqlite",
    "nsys-ai/mfu_2gpu_after.sqlite",
    "nsys-ai/h100_2gpu_1s.sqlite",
    "nsys-ai/mock.sqlite",
    "legacy/mordred_report1_2021.sqlite",
    "extrap/extrap-ex-gpu.s10.sqlite",
];

/// Kernel rows the tool reads: timestamps collected (not 0/0) and not running backwards.
const VALID: &str = "NOT (k.start = 0 AND k.\"end\" = 0) AND k.\"end\" >= k.start";

/// Every trace to check: the committed ones, then the shared ones that are not copies of them.
fn traces(test: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = COMMITTED.iter().map(|f| fixture(f)).collect();
    let Some(dir) = shared_traces() else {
        skip_no_shared(test);
        return out;
    };
    // The shared nsys-ai files are byte-identical copies of the committed ones: same name and
    // size (hashing every file in a debug build would cost more than the checks).
    let key = |p: &Path| (short(p), std::fs::metadata(p).unwrap().len());
    let committed: BTreeSet<(String, u64)> = out.iter().map(|p| key(p)).collect();
    let mut shared = Vec::new();
    collect_sqlite(&dir, &mut shared);
    shared.sort();
    out.extend(shared.into_iter().filter(|p| !committed.contains(&key(p))));
    out
}

fn collect_sqlite(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            collect_sqlite(&p, out);
        } else if p.extension().is_some_and(|e| e == "sqlite") {
            out.push(p);
        }
    }
}

fn short(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

fn has_table(conn: &Connection, table: &str) -> bool {
    conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
        [table],
        |r| r.get::<_, i64>(0),
    )
    .unwrap()
        > 0
}

/// PyTorch's `, seq = N` and `, op_id = N` parts removed: the documented rule, written again
/// with a regular expression.
fn strip_ids(name: &str) -> String {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| Regex::new(r", (?:seq|op_id) = [0-9]+(, |$)").unwrap());
    let mut s = name.to_string();
    loop {
        let next = re.replace_all(&s, "$1").into_owned();
        if next == s {
            return s;
        }
        s = next;
    }
}

fn normalise(rule: NameRule, name: &str) -> String {
    match rule {
        NameRule::Verbatim => name.to_string(),
        NameRule::StripPytorchIds => strip_ids(name),
    }
}

/// The largest NVTX timestamp: where unterminated ranges end.
fn max_nvtx_ts(conn: &Connection) -> Option<i64> {
    conn.query_row(
        "SELECT max(max(start), coalesce(max(\"end\"), max(start))) FROM NVTX_EVENTS",
        [],
        |r| r.get(0),
    )
    .unwrap()
}

/// One range as SQL reads it.
#[derive(Debug, Clone)]
struct Range {
    rowid: i64,
    tid: Option<i64>,
    start: i64,
    end: i64,
    name: String,
}

fn read_ranges(conn: &Connection) -> Vec<Range> {
    let Some(m) = max_nvtx_ts(conn) else { return Vec::new() };
    let mut stmt = conn
        .prepare(
            "SELECT e.rowid, e.globalTid, e.start, coalesce(e.\"end\", ?1), \
                    coalesce(e.text, s.value, '') \
             FROM NVTX_EVENTS AS e LEFT JOIN StringIds AS s ON s.id = e.textId \
             WHERE e.eventType IN (59, 60)",
        )
        .unwrap();
    stmt.query_map([m], |r| {
        Ok(Range {
            rowid: r.get(0)?,
            tid: r.get(1)?,
            start: r.get(2)?,
            end: r.get(3)?,
            name: r.get(4)?,
        })
    })
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
}

/// Per name: count, total, min, lower median, nearest-rank p90, max.
type Stats = BTreeMap<String, (u64, i64, i64, i64, i64, i64)>;

fn stats_of(groups: BTreeMap<String, Vec<i64>>) -> Stats {
    groups
        .into_iter()
        .map(|(name, mut d)| {
            d.sort_unstable();
            let n = d.len();
            let p90 = d[(9 * n).div_ceil(10) - 1];
            (name, (n as u64, d.iter().sum(), d[0], d[(n - 1) / 2], p90, d[n - 1]))
        })
        .collect()
}

#[test]
fn range_statistics_match_sql() {
    for path in traces("range_statistics_match_sql") {
        let conn = open_ro(&path);
        let trace = Trace::open(&path).unwrap();
        let ranges = NvtxRanges::load(&trace, None).unwrap();
        if !has_table(&conn, "NVTX_EVENTS") {
            assert!(ranges.table_absent && ranges.is_empty(), "{}", short(&path));
            let s = range_stats(&ranges, &StatsParams::default()).unwrap();
            assert!(s.nvtx_table_absent && s.rows.is_empty() && s.ranges == 0);
            continue;
        }
        assert!(!ranges.table_absent);
        let m = max_nvtx_ts(&conn).unwrap_or(0);

        // Counts and totals per recorded name, by SQL alone.
        let mut stmt = conn
            .prepare(
                "SELECT coalesce(e.text, s.value, '') AS name, count(*), \
                        sum(coalesce(e.\"end\", ?1) - e.start), sum(e.\"end\" IS NULL) \
                 FROM NVTX_EVENTS AS e LEFT JOIN StringIds AS s ON s.id = e.textId \
                 WHERE e.eventType IN (59, 60) GROUP BY name",
            )
            .unwrap();
        let by_sql: BTreeMap<String, (u64, i64)> = stmt
            .query_map([m], |r| {
                Ok((r.get::<_, String>(0)?, (r.get::<_, i64>(1)? as u64, r.get(2)?)))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let unterminated: i64 = conn
            .query_row(
                "SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN (59, 60) AND \"end\" IS NULL",
                [],
                |r| r.get(0),
            )
            .unwrap();
        let verbatim = range_stats(
            &ranges,
            &StatsParams { rule: NameRule::Verbatim, ..StatsParams::default() },
        )
        .unwrap();
        let got: BTreeMap<String, (u64, i64)> =
            verbatim.rows.iter().map(|r| (r.name.clone(), (r.count, r.total_ns))).collect();
        assert_eq!(got, by_sql, "{}: per-name counts and totals", short(&path));
        assert_eq!(verbatim.ranges, by_sql.values().map(|v| v.0).sum::<u64>());
        assert_eq!(verbatim.unterminated, unterminated as u64);

        // Full statistics under both rules, from the SQL rows grouped here.
        let rows = read_ranges(&conn);
        for rule in [NameRule::Verbatim, NameRule::StripPytorchIds] {
            let mut groups: BTreeMap<String, Vec<i64>> = BTreeMap::new();
            for r in &rows {
                groups.entry(normalise(rule, &r.name)).or_default().push(r.end - r.start);
            }
            let want = stats_of(groups);
            let s = range_stats(&ranges, &StatsParams { rule, ..StatsParams::default() }).unwrap();
            let got: Stats = s
                .rows
                .iter()
                .map(|r| {
                    (
                        r.name.clone(),
                        (r.count, r.total_ns, r.min_ns, r.median_ns, r.p90_ns, r.max_ns),
                    )
                })
                .collect();
            assert_eq!(got, want, "{}: statistics under {rule:?}", short(&path));
        }

        // Domain names: the first eventType-75 row of (domainId, process), else `domain #N`.
        let mut stmt = conn
            .prepare(
                "WITH dn AS MATERIALIZED ( \
                     SELECT d.domainId AS id, d.globalTid >> 24 AS p, \
                            coalesce(d.text, s.value) AS name, min(d.start) \
                     FROM NVTX_EVENTS AS d LEFT JOIN StringIds AS s ON s.id = d.textId \
                     WHERE d.eventType = 75 GROUP BY d.domainId, d.globalTid >> 24) \
                 SELECT CASE WHEN e.domainId = 0 THEN 'default' \
                             ELSE coalesce(dn.name, 'domain #' || e.domainId) END AS dom, count(*) \
                 FROM NVTX_EVENTS AS e \
                 LEFT JOIN dn ON dn.id = e.domainId AND dn.p = e.globalTid >> 24 \
                 WHERE e.eventType IN (59, 60) GROUP BY dom",
            )
            .unwrap();
        let want: BTreeMap<String, u64> = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as u64)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let mut got: BTreeMap<String, u64> = BTreeMap::new();
        for i in 0..ranges.len() {
            *got.entry(ranges.domain_of(i).name.clone()).or_default() += 1;
        }
        assert_eq!(got, want, "{}: ranges per domain", short(&path));
        eprintln!(
            "{}: {} ranges ({} unterminated), {} names verbatim, {} normalised, domains {:?}",
            short(&path),
            verbatim.ranges,
            verbatim.unterminated,
            verbatim.rows.len(),
            range_stats(&ranges, &StatsParams::default()).unwrap().rows.len(),
            got
        );
    }
}

/// The launch record of each (process, correlationId): of the runtime records with that key, the
/// one that starts first, then ends last, then comes first in the table. Where the export nests
/// the versioned call inside the runtime call (`cudaLaunchKernel_v7000` inside
/// `cudaLaunchKernel`, one correlation id, one thread) that is the outer call.
const OUTERMOST: &str = "SELECT correlationId, globalTid, start, \"end\" FROM \
    (SELECT correlationId, globalTid, start, \"end\", row_number() OVER \
       (PARTITION BY globalTid >> 24, correlationId ORDER BY start, \"end\" DESC, rowid) AS n \
     FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE globalTid IS NOT NULL AND correlationId IS NOT NULL) \
    WHERE n = 1";

/// Per trace, the runtime records with the key of a kernel beyond the launch: (nested inside
/// the launch on its thread, others).
fn repeated_launch_records(conn: &Connection) -> (u64, u64) {
    let sql = format!(
        "SELECT coalesce(sum(x.globalTid = o.globalTid AND x.start >= o.start \
                             AND x.\"end\" <= o.\"end\"), 0), \
                coalesce(sum(NOT (x.globalTid = o.globalTid AND x.start >= o.start \
                             AND x.\"end\" <= o.\"end\")), 0) \
         FROM CUPTI_ACTIVITY_KIND_RUNTIME AS x JOIN ({OUTERMOST}) AS o \
           ON o.correlationId = x.correlationId AND (o.globalTid >> 24) = (x.globalTid >> 24) \
         WHERE x.rowid NOT IN (SELECT rowid FROM ({OUTERMOST_ROWID})) \
           AND EXISTS (SELECT 1 FROM CUPTI_ACTIVITY_KIND_KERNEL AS k WHERE {VALID} \
                       AND k.correlationId = x.correlationId \
                       AND (k.globalPid >> 24) = (x.globalTid >> 24))"
    );
    conn.query_row(&sql, [], |r| Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64)))
        .unwrap()
}

/// The rowids of [`OUTERMOST`]'s rows.
const OUTERMOST_ROWID: &str = "SELECT rowid FROM \
    (SELECT rowid, row_number() OVER \
       (PARTITION BY globalTid >> 24, correlationId ORDER BY start, \"end\" DESC, rowid) AS n \
     FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE globalTid IS NOT NULL AND correlationId IS NOT NULL) \
    WHERE n = 1";

/// One kernel and its launch, as SQL joins them.
#[derive(Debug, Clone)]
struct Kernel {
    start: i64,
    end: i64,
    device: i64,
    /// Both `correlationId` and `globalPid` are non-NULL.
    keyed: bool,
    /// The launch record's (thread, start), when one has the kernel's (process, correlationId).
    launch: Option<(i64, i64)>,
}

fn read_kernels(conn: &Connection) -> Vec<Kernel> {
    let runtime = has_table(conn, "CUPTI_ACTIVITY_KIND_RUNTIME");
    let sql = if runtime {
        format!(
            "SELECT k.start, k.\"end\", k.deviceId, \
                    k.correlationId IS NOT NULL AND k.globalPid IS NOT NULL, r.globalTid, r.start \
             FROM CUPTI_ACTIVITY_KIND_KERNEL AS k \
             LEFT JOIN ({OUTERMOST}) AS r \
               ON r.correlationId = k.correlationId AND (r.globalTid >> 24) = (k.globalPid >> 24) \
             WHERE {VALID}"
        )
    } else {
        format!(
            "SELECT k.start, k.\"end\", k.deviceId, \
                    k.correlationId IS NOT NULL AND k.globalPid IS NOT NULL, NULL, NULL \
             FROM CUPTI_ACTIVITY_KIND_KERNEL AS k WHERE {VALID}"
        )
    };
    let mut stmt = conn.prepare(&sql).unwrap();
    let rows: Vec<Kernel> = stmt
        .query_map([], |r| {
            let tid: Option<i64> = r.get(4)?;
            let at: Option<i64> = r.get(5)?;
            Ok(Kernel {
                start: r.get(0)?,
                end: r.get(1)?,
                device: r.get(2)?,
                keyed: r.get(3)?,
                launch: tid.zip(at),
            })
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let all: i64 = conn
        .query_row(
            &format!("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL AS k WHERE {VALID}"),
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(rows.len() as i64, all, "one launch record per kernel: the outermost of its key");
    rows
}

/// Whether a window keeps a range: all without a window, those intersecting it (clip), those
/// inside it (contain): only kept ranges receive kernels.
fn range_kept(r: &Range, window: Option<(Window, Semantics)>) -> bool {
    match window {
        None => true,
        Some((w, Semantics::Clip)) => r.end > w.start_ns && r.start < w.end_ns,
        Some((w, Semantics::Contain)) => r.start >= w.start_ns && r.end <= w.end_ns,
    }
}

/// The innermost and outermost enclosing range (index into `ranges`) of a launch among the
/// ranges the window keeps, by looking at every range: start <= t < end on the launching
/// thread; innermost = latest start, then shorter, then later row; outermost = earliest
/// start, then longer, then earlier row.
fn enclosing(
    ranges: &[Range],
    window: Option<(Window, Semantics)>,
    tid: i64,
    t: i64,
) -> (Option<usize>, Option<usize>) {
    let (mut inner, mut outer): (Option<usize>, Option<usize>) = (None, None);
    let key = |r: &Range| (r.start, -r.end, r.rowid);
    for (i, r) in ranges.iter().enumerate() {
        if r.tid == Some(tid) && r.start <= t && t < r.end && range_kept(r, window) {
            if inner.is_none_or(|j| key(r) > key(&ranges[j])) {
                inner = Some(i);
            }
            if outer.is_none_or(|j| key(r) < key(&ranges[j])) {
                outer = Some(i);
            }
        }
    }
    (inner, outer)
}

/// Per range name: kernels, kernel time, first start, last end.
type PerName = BTreeMap<String, (u64, i64, i64, i64)>;

/// What the naive reference expects of one attribution.
#[derive(Debug, PartialEq, Eq)]
struct Expected {
    selected: (u64, i64),
    no_value: u64,
    no_launch: u64,
    no_range: u64,
    per_name: PerName,
}

fn expected(
    kernels: &[Kernel],
    picks: &[(Option<usize>, Option<usize>)],
    ranges: &[Range],
    window: Option<(Window, Semantics)>,
    nesting: Nesting,
    rule: NameRule,
) -> Expected {
    let mut e = Expected {
        selected: (0, 0),
        no_value: 0,
        no_launch: 0,
        no_range: 0,
        per_name: PerName::new(),
    };
    for (k, &(inner, outer)) in kernels.iter().zip(picks) {
        let (s, t) = match window {
            None => (k.start, k.end),
            Some((w, Semantics::Clip)) => {
                if !(k.end > w.start_ns && k.start < w.end_ns) {
                    continue;
                }
                (k.start.max(w.start_ns), k.end.min(w.end_ns))
            }
            Some((w, Semantics::Contain)) => {
                if !(k.start >= w.start_ns && k.end <= w.end_ns) {
                    continue;
                }
                (k.start, k.end)
            }
        };
        e.selected.0 += 1;
        e.selected.1 += t - s;
        if !k.keyed {
            e.no_value += 1;
            continue;
        }
        if k.launch.is_none() {
            e.no_launch += 1;
            continue;
        }
        let pick = match nesting {
            Nesting::Innermost => inner,
            Nesting::Outermost => outer,
        };
        let Some(r) = pick else {
            e.no_range += 1;
            continue;
        };
        let row = e.per_name.entry(normalise(rule, &ranges[r].name)).or_insert((0, 0, s, t));
        row.0 += 1;
        row.1 += t - s;
        row.2 = row.2.min(s);
        row.3 = row.3.max(t);
    }
    e
}

fn observed(a: &Attribution) -> Expected {
    let u = &a.unattributed;
    assert_eq!(u.no_correlation_columns.kernels, 0);
    assert_eq!(u.total().kernels + a.attributed.kernels, a.selected.kernels);
    Expected {
        selected: (a.selected.kernels, a.selected.kernel_ns),
        no_value: u.no_correlation_value.kernels,
        no_launch: u.no_launch_record.kernels,
        no_range: u.no_enclosing_range.kernels,
        per_name: a
            .rows
            .iter()
            .map(|r| {
                assert_eq!(r.span_ns, r.last_end_ns - r.first_start_ns);
                assert_eq!(r.share.den, a.selected.kernel_ns);
                (r.name.clone(), (r.kernels, r.kernel_ns, r.first_start_ns, r.last_end_ns))
            })
            .collect(),
    }
}

fn pct(num: u64, den: u64) -> String {
    if den == 0 { "n/a".into() } else { format!("{:.1}%", 100.0 * num as f64 / den as f64) }
}

#[test]
fn attribution_matches_a_naive_reference() {
    for path in traces("attribution_matches_a_naive_reference") {
        let conn = open_ro(&path);
        let trace = Trace::open(&path).unwrap();
        let kernels =
            Kernels::load_with_launch_keys(&trace, &KernelFilter::default(), &mut |_| {}).unwrap();
        assert!(matches!(kernels.launch_keys, LaunchKeys::Read { .. }), "{}", short(&path));
        let devices = kernels.devices();

        let ref_kernels: Vec<Kernel> = {
            let mut v = read_kernels(&conn);
            v.sort_by_key(|k| (k.device, k.start, k.end));
            v
        };
        let ref_ranges =
            if has_table(&conn, "NVTX_EVENTS") { read_ranges(&conn) } else { Vec::new() };

        // A window over the middle third of the kernels, for the traces with many.
        let lo = ref_kernels.iter().map(|k| k.start).min().unwrap();
        let hi = ref_kernels.iter().map(|k| k.end).max().unwrap();
        let third = Window { start_ns: lo + (hi - lo) / 3, end_ns: lo + 2 * (hi - lo) / 3 };
        let mut windows: Vec<Option<(Window, Semantics)>> = vec![None];
        if ref_kernels.len() > 100 {
            windows.push(Some((third, Semantics::Clip)));
            windows.push(Some((third, Semantics::Contain)));
        }

        for window in windows {
            let picks: Vec<(Option<usize>, Option<usize>)> = ref_kernels
                .iter()
                .map(|k| match k.launch {
                    Some((tid, t)) if k.keyed => enclosing(&ref_ranges, window, tid, t),
                    _ => (None, None),
                })
                .collect();
            let base = AttributionParams {
                devices: devices.clone(),
                window: window.map(|w| w.0),
                semantics: window.map_or(Semantics::Clip, |w| w.1),
                ..AttributionParams::default()
            };
            let launches = Launches::load(&trace, needed_launches(&kernels, &base)).unwrap();
            if window.is_none() && has_table(&conn, "CUPTI_ACTIVITY_KIND_RUNTIME") {
                assert_eq!(
                    (launches.nested, launches.duplicates),
                    repeated_launch_records(&conn),
                    "{}: runtime records nested in a launch, and other repeats of its key",
                    short(&path)
                );
            }
            let bounded = NvtxRanges::load(&trace, launches.start_bounds()).unwrap();
            let whole = NvtxRanges::load(&trace, None).unwrap();
            assert!(bounded.len() <= whole.len());
            for nesting in [Nesting::Innermost, Nesting::Outermost] {
                for rule in [NameRule::Verbatim, NameRule::StripPytorchIds] {
                    let params = AttributionParams { nesting, rule, ..base.clone() };
                    let want = expected(&ref_kernels, &picks, &ref_ranges, window, nesting, rule);
                    let a = attribute(&kernels, &launches, &bounded, &params).unwrap();
                    assert_eq!(
                        observed(&a),
                        want,
                        "{}: {nesting:?} {rule:?} window {window:?}",
                        short(&path)
                    );
                    let b = attribute(&kernels, &launches, &whole, &params).unwrap();
                    assert_eq!(a, b, "{}: bounded and whole NVTX loads agree", short(&path));
                    if window.is_none() && rule == NameRule::StripPytorchIds {
                        let top: Vec<String> = a
                            .rows
                            .iter()
                            .take(3)
                            .map(|r| format!("{} {}x {} ns", r.name, r.kernels, r.kernel_ns))
                            .collect();
                        eprintln!(
                            "{}: {nesting:?}: {} kernels, attributed {} ({} of kernel time), \
                             no launch {}, no range {}, no value {}; top {top:?}",
                            short(&path),
                            a.selected.kernels,
                            a.attributed.kernels,
                            pct(a.attributed.kernel_ns as u64, a.selected.kernel_ns as u64),
                            a.unattributed.no_launch_record.kernels,
                            a.unattributed.no_enclosing_range.kernels,
                            a.unattributed.no_correlation_value.kernels,
                        );
                    }
                }
            }
        }
    }
}

/// (device, start, end, process, correlationId) of one kernel row.
type KeyedRow = (i64, i64, i64, Option<i64>, Option<i64>);

#[test]
fn launch_keys_leave_the_kernel_scan_unchanged() {
    for path in traces("launch_keys_leave_the_kernel_scan_unchanged") {
        let conn = open_ro(&path);
        let trace = Trace::open(&path).unwrap();
        for filter in [
            KernelFilter::default(),
            KernelFilter { devices: Some(vec![0]), bounds: None, ..Default::default() },
            KernelFilter { devices: None, bounds: Some((0, i64::MAX / 2)), ..Default::default() },
        ] {
            let plain = Kernels::load(&trace, &filter, &mut |_| {}).unwrap();
            let keyed = Kernels::load_with_launch_keys(&trace, &filter, &mut |_| {}).unwrap();
            assert_eq!(plain.launch_keys, LaunchKeys::NotRead);
            assert_eq!(
                (&plain.start, &plain.end, &plain.device, &plain.stream),
                (&keyed.start, &keyed.end, &keyed.device, &keyed.stream)
            );
            assert_eq!((&plain.short, &plain.demangled), (&keyed.short, &keyed.demangled));
            assert_eq!(plain.skipped_invalid, keyed.skipped_invalid);
            let LaunchKeys::Read { correlation, process } = &keyed.launch_keys else {
                panic!("{}: launch keys not read", short(&path));
            };
            assert_eq!((correlation.len(), process.len()), (keyed.len(), keyed.len()));
            if filter == KernelFilter::default() {
                // The multiset of (process, correlationId) per (device, start, end) matches SQL.
                let mut stmt = conn
                    .prepare(&format!(
                        "SELECT k.deviceId, k.start, k.\"end\", k.globalPid >> 24, k.correlationId \
                         FROM CUPTI_ACTIVITY_KIND_KERNEL AS k WHERE {VALID}"
                    ))
                    .unwrap();
                let mut want: Vec<KeyedRow> = stmt
                    .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
                    .unwrap()
                    .collect::<Result<_, _>>()
                    .unwrap();
                let mut got: Vec<KeyedRow> = (0..keyed.len())
                    .map(|i| {
                        (keyed.device[i], keyed.start[i], keyed.end[i], process[i], correlation[i])
                    })
                    .collect();
                want.sort_unstable();
                got.sort_unstable();
                assert_eq!(got, want, "{}", short(&path));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Schema variants, on small synthetic databases
// ---------------------------------------------------------------------------------------------

const KERNEL_DDL: &str = "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, \
    \"end\" INTEGER NOT NULL, deviceId INTEGER NOT NULL, streamId INTEGER NOT NULL, \
    shortName INTEGER NOT NULL, demangledName INTEGER NOT NULL, globalPid INTEGER{extra});
    CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
    INSERT INTO StringIds VALUES (1, 'gemm'), (2, 'registered name');";

const NVTX_DDL: &str = "CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, \"end\" INTEGER, \
    eventType INTEGER NOT NULL, text TEXT, globalTid INTEGER, textId INTEGER{extra});";

/// Process 7, thread 1; process 8, thread 1.
const T7: i64 = (7 << 24) | 1;
const T8: i64 = (8 << 24) | 1;

fn build(dir: &Path, name: &str, sql: &str) -> PathBuf {
    let path = dir.join(name);
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(sql).unwrap();
    drop(conn);
    path
}

#[test]
fn a_missing_nvtx_column_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let sql = format!("{}{}", KERNEL_DDL.replace("{extra}", ""), NVTX_DDL.replace("{extra}", ""));
    let path = build(dir.path(), "no_domain.sqlite", &sql);
    let trace = Trace::open(&path).unwrap();
    match NvtxRanges::load(&trace, None) {
        Err(TraceError::MissingColumn { table, column }) => {
            assert_eq!((table.as_str(), column.as_str()), ("NVTX_EVENTS", "domainId"));
        }
        other => panic!("expected a missing column, got {other:?}"),
    }
    let err = NvtxRanges::load(&trace, None).unwrap_err();
    assert_eq!(err.to_string(), "column `NVTX_EVENTS.domainId` is absent");
}

#[test]
fn old_kernel_tables_load_and_every_kernel_is_counted() {
    let dir = tempfile::tempdir().unwrap();
    // No correlationId in the kernel table, no runtime table, no NVTX table.
    let sql = format!(
        "{} INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (100, 200, 0, 7, 1, 1, {}), \
         (300, 350, 0, 7, 1, 1, {});",
        KERNEL_DDL.replace("{extra}", ""),
        7i64 << 24,
        7i64 << 24
    );
    let path = build(dir.path(), "old.sqlite", &sql);
    let trace = Trace::open(&path).unwrap();
    let kernels =
        Kernels::load_with_launch_keys(&trace, &KernelFilter::default(), &mut |_| {}).unwrap();
    assert_eq!(kernels.len(), 2);
    assert_eq!(kernels.launch_keys, LaunchKeys::Absent { missing: vec!["correlationId".into()] });
    let params = AttributionParams { devices: vec![0], ..AttributionParams::default() };
    assert!(needed_launches(&kernels, &params).is_empty());
    let launches = Launches::load(&trace, needed_launches(&kernels, &params)).unwrap();
    assert!(launches.table_absent);
    let ranges = NvtxRanges::load(&trace, launches.start_bounds()).unwrap();
    assert!(ranges.table_absent);
    let a = attribute(&kernels, &launches, &ranges, &params).unwrap();
    assert_eq!(a.unattributed.no_correlation_columns.kernels, 2);
    assert_eq!(a.unattributed.no_correlation_columns.kernel_ns, 150);
    assert_eq!(a.missing_columns, ["correlationId"]);
    assert!(a.runtime_table_absent && a.nvtx_table_absent);

    // With the column but without a runtime table: no launch record.
    let sql = format!(
        "{} INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (100, 200, 0, 7, 1, 1, {}, 5);",
        KERNEL_DDL.replace("{extra}", ", correlationId INTEGER"),
        7i64 << 24
    );
    let path = build(dir.path(), "no_runtime.sqlite", &sql);
    let trace = Trace::open(&path).unwrap();
    let kernels =
        Kernels::load_with_launch_keys(&trace, &KernelFilter::default(), &mut |_| {}).unwrap();
    let launches = Launches::load(&trace, needed_launches(&kernels, &params)).unwrap();
    assert!(launches.table_absent && launches.is_empty());
    let a = attribute(&kernels, &launches, &NvtxRanges::default(), &params).unwrap();
    assert_eq!(a.unattributed.no_launch_record.kernels, 1);
    assert!(a.runtime_table_absent);
}

#[test]
fn unterminated_ranges_close_at_the_last_nvtx_timestamp_and_domains_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let sql = format!(
        "{kernels} {nvtx}
         CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, \"end\" INTEGER NOT NULL, \
             globalTid INTEGER, correlationId INTEGER);
         INSERT INTO NVTX_EVENTS VALUES
             (0, NULL, 75, 'NCCL', {T7}, NULL, 3),
             (10, NULL, 59, 'open', {T7}, NULL, 0),
             (20, 40, 59, NULL, {T7}, 2, 3),
             (30, 35, 60, 'other process', {T8}, NULL, 3),
             (50, 60, 59, 'late, op_id = 4', {T7}, NULL, 0),
             (900, NULL, 34, 'a mark, the last timestamp', {T7}, NULL, 0);
         INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (25, 27, {T7}, 1), (70, 72, {T7}, 2),
             (950, 951, {T7}, 3), (25, 27, {T8}, 1);
         INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1000, 1010, 0, 7, 1, 1, {P7}, 1),
             (1100, 1120, 0, 7, 1, 1, {P7}, 2), (1200, 1240, 0, 7, 1, 1, {P7}, 3),
             (1300, 1380, 1, 7, 1, 1, {P8}, 1);",
        kernels = KERNEL_DDL.replace("{extra}", ", correlationId INTEGER"),
        nvtx = NVTX_DDL.replace("{extra}", ", domainId INTEGER"),
        P7 = 7i64 << 24,
        P8 = 8i64 << 24,
    );
    let path = build(dir.path(), "nvtx.sqlite", &sql);
    let trace = Trace::open(&path).unwrap();
    let ranges = NvtxRanges::load(&trace, None).unwrap();
    assert_eq!(ranges.len(), 4);
    assert_eq!(ranges.closed_at_ns, Some(900));
    let open = (0..ranges.len()).find(|&i| ranges.name_of(i) == "open").unwrap();
    assert!(ranges.unterminated[open]);
    assert_eq!((ranges.start[open], ranges.end[open]), (10, 900));
    let named: BTreeMap<&str, &str> =
        (0..ranges.len()).map(|i| (ranges.name_of(i), ranges.domain_of(i).name.as_str())).collect();
    assert_eq!(named["registered name"], "NCCL");
    assert_eq!(named["other process"], "domain #3");
    assert_eq!(named["open"], "default");

    // Bounds: the unterminated range reaches 900, so it is kept after the last closed one.
    let late = NvtxRanges::load(&trace, Some((800, 1000))).unwrap();
    assert_eq!((late.len(), late.name_of(0)), (1, "open"));
    let none = NvtxRanges::load(&trace, Some((901, 1000))).unwrap();
    assert!(none.is_empty());

    let s = range_stats(&ranges, &StatsParams::default()).unwrap();
    assert_eq!((s.unterminated, s.closed_at_ns), (1, Some(900)));
    let row = |name: &str| s.rows.iter().find(|r| r.name == name).unwrap().clone();
    assert_eq!(row("open").total_ns, 890);
    assert_eq!(row("late").count, 1);

    let kernels =
        Kernels::load_with_launch_keys(&trace, &KernelFilter::default(), &mut |_| {}).unwrap();
    let params = AttributionParams { devices: vec![0, 1], ..AttributionParams::default() };
    let launches = Launches::load(&trace, needed_launches(&kernels, &params)).unwrap();
    assert_eq!(launches.len(), 4);
    let ranges = NvtxRanges::load(&trace, launches.start_bounds()).unwrap();
    let a = attribute(&kernels, &launches, &ranges, &params).unwrap();
    let per: BTreeMap<&str, (u64, i64)> =
        a.rows.iter().map(|r| (r.name.as_str(), (r.kernels, r.kernel_ns))).collect();
    // Launch 1 (t=25) is inside `registered name`; launch 2 (t=70) only inside `open`; launch 3
    // (t=950) is after the last NVTX timestamp; the process-8 kernel's launch thread has the
    // start/end range [30, 35), which does not cover t=25.
    assert_eq!(per, BTreeMap::from([("registered name", (1, 10)), ("open", (1, 20))]));
    assert_eq!(a.unattributed.no_enclosing_range.kernels, 2);
    assert_eq!((a.unterminated_ranges, a.closed_at_ns), (1, Some(900)));
    let outer = attribute(
        &kernels,
        &launches,
        &ranges,
        &AttributionParams { nesting: Nesting::Outermost, ..params },
    )
    .unwrap();
    assert_eq!(
        outer.rows.iter().map(|r| (r.name.as_str(), r.kernels)).collect::<Vec<_>>(),
        [("open", 2)]
    );
}

/// End to end, as a user runs it: `verdict query nvtx` over all devices, innermost and
/// outermost, gives per range name the kernels and kernel time of the naive reference, the
/// same unattributed counts, and a share whose fraction is the attributed over the selected
/// kernel time; a name filter keeps only the kernels enclosed by a matching range.
#[test]
fn the_nvtx_command_agrees_with_the_naive_reference() {
    let path = util::fixture("nsys-ai/mfu_2gpu_before.sqlite");
    let p = path.to_str().unwrap();
    let conn = open_ro(&path);
    let ref_kernels: Vec<Kernel> = {
        let mut v = read_kernels(&conn);
        v.sort_by_key(|k| (k.device, k.start, k.end));
        v
    };
    let ref_ranges = read_ranges(&conn);
    let picks: Vec<(Option<usize>, Option<usize>)> = ref_kernels
        .iter()
        .map(|k| match k.launch {
            Some((tid, t)) if k.keyed => enclosing(&ref_ranges, None, tid, t),
            _ => (None, None),
        })
        .collect();
    for (nesting, flag) in [(Nesting::Innermost, "innermost"), (Nesting::Outermost, "outermost")] {
        let want =
            expected(&ref_kernels, &picks, &ref_ranges, None, nesting, NameRule::StripPytorchIds);
        let out = assert_cmd::Command::cargo_bin("verdict")
            .unwrap()
            .args(["query", "nvtx", p, "--nesting", flag, "--json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let values = &v["values"];
        assert_eq!(values["selected_kernels"], want.selected.0);
        assert_eq!(values["selected_kernel_ns"], want.selected.1);
        assert_eq!(values["no_launch_record"], want.no_launch, "{flag}");
        assert_eq!(values["no_enclosing_range"], want.no_range, "{flag}");
        let attributed: u64 = want.per_name.values().map(|r| r.0).sum();
        let attributed_ns: i64 = want.per_name.values().map(|r| r.1).sum();
        assert_eq!(values["kernels"], attributed, "{flag}");
        assert_eq!(values["kernel_ns"], attributed_ns, "{flag}");
        let share = values["kernel_share"].as_f64().unwrap();
        assert!((share - attributed_ns as f64 / want.selected.1 as f64).abs() < 1e-12);
        let got: PerName = v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["kernels"].as_u64().unwrap() > 0)
            .map(|r| {
                let span = r["gpu_span_ns"].as_i64().unwrap();
                let name = r["name"].as_str().unwrap().to_string();
                let (_, _, first, last) = want.per_name[&name];
                assert_eq!(span, last - first, "{flag} {name}");
                (
                    name,
                    (r["kernels"].as_u64().unwrap(), r["kernel_ns"].as_i64().unwrap(), first, last),
                )
            })
            .collect();
        assert_eq!(got, want.per_name, "{flag}");
    }
    // A name filter: only ranges named exactly `aten::addmm` receive kernels, so a kernel
    // counts when any enclosing range is an addmm, whatever lies inside it.
    let out = assert_cmd::Command::cargo_bin("verdict")
        .unwrap()
        .args(["query", "nvtx", p, "--name", "aten::addmm", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let enclosed = ref_kernels
        .iter()
        .filter(|k| {
            k.keyed
                && k.launch.is_some_and(|(tid, t)| {
                    ref_ranges.iter().any(|r| {
                        r.tid == Some(tid)
                            && r.start <= t
                            && t < r.end
                            && strip_ids(&r.name) == "aten::addmm"
                    })
                })
        })
        .count() as u64;
    assert!(enclosed > 0);
    assert_eq!(v["values"]["kernels"], enclosed);
}

/// The extra-p export records each launch twice under one correlation id, on one thread:
/// `cudaLaunchKernel` and the `cudaLaunchKernel_v7000` call nested inside it. Each of its six
/// kernels has one launch, the outer `cudaLaunchKernel` (found by name in SQL, independently of
/// the rule), the six inner calls are counted as nested and none as a duplicate; `inspect` says
/// so.
#[test]
fn nested_runtime_calls_give_each_kernel_one_launch_the_outer_call() {
    let path = fixture("extrap/extrap-ex-gpu.s10.sqlite");
    let conn = open_ro(&path);
    let mut stmt = conn
        .prepare(
            "SELECT k.correlationId, k.globalPid >> 24, r.globalTid, r.start, r.\"end\", \
                    (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME AS x \
                     WHERE x.correlationId = k.correlationId) \
             FROM CUPTI_ACTIVITY_KIND_KERNEL AS k \
             JOIN CUPTI_ACTIVITY_KIND_RUNTIME AS r ON r.correlationId = k.correlationId \
             JOIN StringIds AS s ON s.id = r.nameId AND s.value = 'cudaLaunchKernel' \
             ORDER BY k.start",
        )
        .unwrap();
    let outer: Vec<(i64, i64, i64, i64, i64, i64)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(outer.len(), 6, "six kernels, each with one cudaLaunchKernel record");
    assert!(outer.iter().all(|o| o.5 == 2), "two runtime records per kernel's correlation id");
    assert_eq!((outer[0].0, outer[0].3, outer[0].4), (415, 352_044_764, 352_102_717));

    let trace = Trace::open(&path).unwrap();
    let kernels =
        Kernels::load_with_launch_keys(&trace, &KernelFilter::default(), &mut |_| {}).unwrap();
    let params = AttributionParams { devices: kernels.devices(), ..AttributionParams::default() };
    let launches = Launches::load(&trace, needed_launches(&kernels, &params)).unwrap();
    assert_eq!((launches.len(), launches.nested, launches.duplicates), (6, 6, 0));
    for &(correlation, process, tid, start, end, _) in &outer {
        let key = verdict::trace::nvtx::LaunchKey { process, correlation };
        let i = launches.find(key).unwrap_or_else(|| panic!("launch {correlation} found"));
        assert_eq!(
            (launches.global_tid[i], launches.start[i], launches.end[i]),
            (tid, start, end),
            "the launch of correlation id {correlation} is the outer cudaLaunchKernel"
        );
    }
    let a =
        attribute(&kernels, &launches, &NvtxRanges::load(&trace, None).unwrap(), &params).unwrap();
    assert_eq!(a.nested_launches, 6);
    assert_eq!(a.unattributed.no_launch_record.kernels, 0);

    // Over the whole runtime table (malloc, memcpy and synchronize calls are nested the same
    // way): pairs of one key and thread where one call encloses the other, and their keys.
    let (pairs, keys): (i64, i64) = conn
        .query_row(
            "SELECT count(*), count(DISTINCT a.correlationId) \
             FROM CUPTI_ACTIVITY_KIND_RUNTIME AS a JOIN CUPTI_ACTIVITY_KIND_RUNTIME AS b \
               ON a.correlationId = b.correlationId AND a.globalTid = b.globalTid \
              AND a.rowid < b.rowid \
              AND ((a.start <= b.start AND a.\"end\" >= b.\"end\") \
                OR (b.start <= a.start AND b.\"end\" >= a.\"end\"))",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((pairs, keys), (18, 18));
    let ev = util::run_json(&["inspect", util::s(&path), "--json"]);
    let note = util::note(&ev, "note.inspect_nested_launches");
    assert_eq!(
        (note["args"]["n"].as_str(), note["args"]["keys"].as_str()),
        (Some(pairs.to_string().as_str()), Some(keys.to_string().as_str()))
    );
    assert!(
        ev["notes"].as_array().unwrap().iter().all(|n| n["key"] != "note.nvtx_duplicate_launches")
    );
}

/// A device scope counts the NVTX ranges of the process that launched that device's kernels
/// (torchrun writes both ranks into `mfu_2gpu_before.sqlite`), by SQL over the file: the
/// process of device 0's kernels, its `aten::mul` ranges (the name before PyTorch's `, seq`
/// and `, op_id` parts). `--pid` chooses another process; every device counts both.
#[test]
fn a_device_scope_counts_the_ranges_of_its_own_process() {
    let path = fixture("nsys-ai/mfu_2gpu_before.sqlite");
    let conn = open_ro(&path);
    let count = |pids: &str| -> i64 {
        conn.query_row(
            &format!(
                "SELECT count(*) FROM NVTX_EVENTS AS e LEFT JOIN StringIds AS s ON s.id = e.textId \
                 WHERE e.eventType IN (59, 60) AND ((e.globalTid >> 24) & 16777215) IN ({pids}) \
                 AND (coalesce(e.text, s.value) = 'aten::mul' \
                      OR coalesce(e.text, s.value) LIKE 'aten::mul, %')"
            ),
            [],
            |r| r.get(0),
        )
        .unwrap()
    };
    let pid_of = |device: i64| -> i64 {
        conn.query_row(
            "SELECT DISTINCT (globalPid >> 24) & 16777215 FROM CUPTI_ACTIVITY_KIND_KERNEL \
             WHERE deviceId = ?1",
            [device],
            |r| r.get(0),
        )
        .unwrap()
    };
    let (p0, p1) = (pid_of(0), pid_of(1));
    assert_ne!(p0, p1);
    let ranges = |extra: &[&str]| {
        let mut args = vec!["query", "nvtx", util::s(&path), "--name", "aten::mul", "--json"];
        args.extend_from_slice(extra);
        util::int(&util::run_json(&args)["values"], "ranges")
    };
    assert_eq!(ranges(&["--device", "0"]), count(&p0.to_string()));
    assert_eq!(ranges(&["--device", "1"]), count(&p1.to_string()));
    let both = count(&format!("{p0}, {p1}"));
    assert!(both > count(&p0.to_string()));
    assert_eq!(ranges(&["--all-devices"]), both);
    let p1s = p1.to_string();
    assert_eq!(ranges(&["--device", "0", "--pid", &p1s]), count(&p1s));
    let ev = util::run_json(&[
        "query",
        "nvtx",
        util::s(&path),
        "--name",
        "aten::mul",
        "--device",
        "0",
        "--json",
    ]);
    let note = util::note(&ev, "note.nvtx_scope_processes");
    assert_eq!(note["args"]["pids"], p0.to_string());
}

/// The nsys-ai exports register NCCL's NVTX payload schemas but hold no payload values
/// (exported without `--include-blobs=true`, as their metadata records): collectives are
/// matched by order, and the evidence names the option that would keep the communicators.
#[test]
fn payload_schemas_without_values_are_said_with_the_export_option() {
    for name in ["nsys-ai/mfu_2gpu_before.sqlite", "nsys-ai/mfu_2gpu_after.sqlite"] {
        let path = fixture(name);
        let conn = open_ro(&path);
        let (schemas, values, blobs): (i64, i64, String) = conn
            .query_row(
                "SELECT (SELECT count(*) FROM NVTX_PAYLOAD_SCHEMAS), \
                        (SELECT count(binaryData) FROM NVTX_EVENTS), \
                        (SELECT value FROM META_DATA_EXPORT \
                         WHERE name = 'EXPORT_PARAM_INCLUDE_BLOBS')",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        assert!(schemas > 0, "{name}");
        assert_eq!((values, blobs.as_str()), (0, "false"), "{name}");
        let ev = util::run_json(&["query", "nccl-skew", util::s(&path), "--all-devices", "--json"]);
        assert_eq!(ev["parameters"]["match_rule"], "collective-ordinal", "{name}");
        let note = util::note(&ev, "note.payloads_not_exported");
        assert!(note["text"].as_str().unwrap().contains("--include-blobs=true"), "{name}");
    }
    // A trace without NCCL kernels compares nothing: no note.
    let ev = util::run_json(&[
        "query",
        "nccl-skew",
        util::s(&fixture("nsys-ai/h100_2gpu_1s.sqlite")),
        "--all-devices",
        "--json",
    ]);
    let keys: Vec<&str> =
        ev["notes"].as_array().unwrap().iter().filter_map(|n| n["key"].as_str()).collect();
    assert!(!keys.contains(&"note.payloads_not_exported"), "{keys:?}");
}

//! The memcpy/memset scan and the copies analysis on real exports, against references that
//! share no code with them.
//!
//! Rows, counts and bytes come from plain SQL written here (`GROUP BY` per device and kind);
//! busy times, the copy/kernel overlap and the idle split come from the elementary-segment
//! sweep of `tests/suite/util` (every start and end point cuts the timeline, each segment is
//! classified by what covers it). The library must agree to the nanosecond and the byte, on
//! every committed real fixture and, when `../shared/traces` exists, on every trace there
//! (2021 and 2023 schemas, the 3.13 multi-node files, the 3.2x nsys-ai files).

use crate::util;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rusqlite::Connection;

use util::{fixture, open_ro, shared_traces, skip_no_shared, sweep};
use verdict::analysis::copies::{DeviceCopies, all_devices, device_copies};
use verdict::scope::{Semantics, Window};
use verdict::trace::copies::LabelSource;
use verdict::trace::{Copies, KernelFilter, Kernels, Trace};

/// The committed real exports.
const COMMITTED: &[&str] = &[
    "nsys-ai/h100_2gpu_1s.sqlite",
    "nsys-ai/mfu_2gpu_before.sqlite",
    "nsys-ai/mfu_2gpu_after.sqlite",
    "nsys-ai/mock.sqlite",
    "legacy/mordred_report1_2021.sqlite",
];

const MEMCPY: &str = "CUPTI_ACTIVITY_KIND_MEMCPY";
const MEMSET: &str = "CUPTI_ACTIVITY_KIND_MEMSET";

/// Rows with collected timestamps (not 0/0) that do not run backwards.
const VALID: &str = "NOT (start = 0 AND \"end\" = 0) AND \"end\" >= start";

/// The short names of `copyKind` codes, written out from the schema reference.
fn kind_name(code: Option<i64>) -> String {
    match code {
        None => "memset".into(),
        Some(1) => "HtoD".into(),
        Some(2) => "DtoH".into(),
        Some(3) => "HtoA".into(),
        Some(4) => "AtoH".into(),
        Some(5) => "AtoA".into(),
        Some(6) => "AtoD".into(),
        Some(7) => "DtoA".into(),
        Some(8) => "DtoD".into(),
        Some(9) => "HtoH".into(),
        Some(10) => "PtoP".into(),
        Some(11) => "UnifiedHtoD".into(),
        Some(12) => "UnifiedDtoH".into(),
        Some(13) => "UnifiedDtoD".into(),
        Some(n) => format!("unknown_{n}"),
    }
}

/// Every `.sqlite` file under a folder, sorted.
fn sqlite_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(sqlite_files(&p));
        } else if p.extension().is_some_and(|x| x == "sqlite") {
            out.push(p);
        }
    }
    out.sort();
    out
}

fn has_table(conn: &Connection, table: &str) -> bool {
    conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
        [table],
        |r| r.get::<_, i64>(0),
    )
    .unwrap()
        == 1
}

/// One valid copy or memset row.
#[derive(Debug, Clone)]
struct CopyRow {
    device: i64,
    start: i64,
    end: i64,
    bytes: i64,
    kind: String,
}

/// Every valid memcpy and memset row, by plain SQL.
fn read_copies(conn: &Connection) -> Vec<CopyRow> {
    let mut out = Vec::new();
    for (table, kind_col) in [(MEMCPY, "copyKind"), (MEMSET, "NULL")] {
        if !has_table(conn, table) {
            continue;
        }
        let sql = format!(
            "SELECT deviceId, start, \"end\", bytes, {kind_col} FROM {table} WHERE {VALID}"
        );
        let mut stmt = conn.prepare(&sql).unwrap();
        let rows = stmt
            .query_map([], |r| {
                Ok(CopyRow {
                    device: r.get(0)?,
                    start: r.get(1)?,
                    end: r.get(2)?,
                    bytes: r.get(3)?,
                    kind: kind_name(r.get(4)?),
                })
            })
            .unwrap();
        out.extend(rows.map(Result::unwrap));
    }
    out
}

/// Every valid kernel row as (device, start, end), by plain SQL.
fn read_kernels(conn: &Connection) -> Vec<(i64, i64, i64)> {
    let sql =
        format!("SELECT deviceId, start, \"end\" FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE {VALID}");
    let mut stmt = conn.prepare(&sql).unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// Per device and kind: (rows, bytes), by SQL `GROUP BY` over both tables.
fn grouped(conn: &Connection) -> BTreeMap<(i64, String), (i64, i64)> {
    let mut out = BTreeMap::new();
    for (table, kind_col) in [(MEMCPY, "copyKind"), (MEMSET, "NULL")] {
        if !has_table(conn, table) {
            continue;
        }
        let sql = format!(
            "SELECT deviceId, {kind_col}, count(*), sum(bytes) FROM {table} WHERE {VALID} GROUP BY 1, 2"
        );
        let mut stmt = conn.prepare(&sql).unwrap();
        let rows = stmt
            .query_map([], |r| Ok(((r.get(0)?, kind_name(r.get(1)?)), (r.get(2)?, r.get(3)?))))
            .unwrap();
        out.extend(rows.map(Result::unwrap));
    }
    out
}

/// A window and its semantics as the reference applies them.
#[derive(Debug, Clone, Copy)]
enum Win {
    Whole,
    Clip(i64, i64),
    Contain(i64, i64),
}

impl Win {
    fn clipped(self, s: i64, e: i64) -> Option<(i64, i64)> {
        match self {
            Win::Whole => Some((s, e)),
            Win::Clip(a, b) => (s < b && e > a).then(|| (s.max(a), e.min(b))),
            Win::Contain(a, b) => (s >= a && e <= b).then_some((s, e)),
        }
    }

    fn window(self) -> (Option<Window>, Semantics) {
        match self {
            Win::Whole => (None, Semantics::Clip),
            Win::Clip(a, b) => (Some(Window { start_ns: a, end_ns: b }), Semantics::Clip),
            Win::Contain(a, b) => (Some(Window { start_ns: a, end_ns: b }), Semantics::Contain),
        }
    }
}

/// Busy time of a set of intervals: the sweep's covered length.
fn busy(iv: &[(i64, i64)]) -> i64 {
    let flagged: Vec<(i64, i64, bool)> = iv.iter().map(|&(s, e)| (s, e, false)).collect();
    sweep(&flagged).0
}

/// What the reference expects for one device in one window.
#[derive(Debug, PartialEq, Eq)]
struct Expected {
    /// Per kind name: (rows, bytes, busy).
    kinds: BTreeMap<String, (i64, i64, i64)>,
    /// Over all copies: (rows, bytes, busy).
    total: (i64, i64, i64),
    overlap: i64,
    /// (span, idle, idle_copy, idle_none), when there is a span.
    idle: Option<([i64; 2], i64, i64, i64)>,
}

type Intervals = Vec<(i64, i64)>;

fn reference(copies: &[CopyRow], kernels: &[(i64, i64, i64)], device: i64, win: Win) -> Expected {
    let k: Vec<(i64, i64)> = kernels
        .iter()
        .filter(|k| k.0 == device)
        .filter_map(|&(_, s, e)| win.clipped(s, e))
        .collect();
    // Per kind name: rows, bytes, intervals.
    let mut kinds: BTreeMap<String, (i64, i64, Intervals)> = BTreeMap::new();
    let mut all: Vec<(i64, i64)> = Vec::new();
    let mut total = (0i64, 0i64);
    for r in copies.iter().filter(|r| r.device == device) {
        let Some(iv) = win.clipped(r.start, r.end) else { continue };
        let e = kinds.entry(r.kind.clone()).or_default();
        e.0 += 1;
        e.1 += r.bytes;
        e.2.push(iv);
        all.push(iv);
        total.0 += 1;
        total.1 += r.bytes;
    }
    let kinds = kinds.into_iter().map(|(name, (n, b, iv))| (name, (n, b, busy(&iv)))).collect();
    // Copies flagged `true`, kernels `false`: the sweep's third part is copy ∩ kernel.
    let both: Vec<(i64, i64, bool)> = all
        .iter()
        .map(|&(s, e)| (s, e, true))
        .chain(k.iter().map(|&(s, e)| (s, e, false)))
        .collect();
    let overlap = sweep(&both).2;
    let span = match win {
        Win::Clip(a, b) => Some([a, b]),
        _ => k.iter().map(|x| x.0).min().zip(k.iter().map(|x| x.1).max()).map(|(a, b)| [a, b]),
    };
    let idle = span.map(|[a, b]| {
        let in_span = |&(s, e): &(i64, i64)| {
            let (s, e) = (s.max(a), e.min(b));
            (e > s).then_some((s, e))
        };
        let cut: Vec<(i64, i64, bool)> = all
            .iter()
            .filter_map(in_span)
            .map(|(s, e)| (s, e, true))
            .chain(k.iter().filter_map(in_span).map(|(s, e)| (s, e, false)))
            .collect();
        let (kernel_only, copy_only, both) = sweep(&cut);
        let idle = (b - a) - (kernel_only + both);
        ([a, b], idle, copy_only, idle - copy_only)
    });
    Expected { kinds, total: (total.0, total.1, busy(&all)), overlap, idle }
}

fn actual(d: &DeviceCopies) -> Expected {
    Expected {
        kinds: d
            .kinds
            .iter()
            .map(|k| (k.kind.to_string(), (k.stats.count, k.stats.bytes, k.stats.busy_ns)))
            .collect(),
        total: (d.total.count, d.total.bytes, d.total.busy_ns),
        overlap: d.copy_kernel_overlap_ns,
        idle: d.idle.map(|i| (i.span, i.idle_ns, i.idle_copy_ns, i.idle_none_ns)),
    }
}

/// Loads both scans of a trace with a filter.
fn load(path: &Path, filter: &KernelFilter) -> (Copies, Kernels) {
    let trace = Trace::open(path).unwrap();
    let copies = Copies::load(&trace, filter).unwrap();
    let kernels = Kernels::load(&trace, filter, &mut |_| {}).unwrap();
    (copies, kernels)
}

/// Checks the scan's tables, inventory and labels against SQL.
fn check_scan(path: &Path, conn: &Connection, copies: &Copies) {
    let what = path.display();
    for (t, table) in [(&copies.memcpy, MEMCPY), (&copies.memset, MEMSET)] {
        assert_eq!(t.table, table);
        assert_eq!(t.present, has_table(conn, table), "{what}: {table} present");
        let (valid, invalid): (i64, i64) = if t.present {
            conn.query_row(
                &format!("SELECT count(*) FILTER (WHERE {VALID}), count(*) FILTER (WHERE NOT ({VALID})) FROM {table}"),
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap()
        } else {
            (0, 0)
        };
        assert_eq!((t.rows, t.skipped_invalid as i64), (valid, invalid), "{what}: {table} rows");
    }
    let rows = read_copies(conn);
    assert_eq!(copies.len(), rows.len(), "{what}: an unfiltered scan keeps every valid row");
    // Ordered by (device, start, end).
    let keys: Vec<(i64, i64, i64)> =
        (0..copies.len()).map(|i| (copies.device[i], copies.start[i], copies.end[i])).collect();
    assert!(keys.windows(2).all(|w| w[0] <= w[1]), "{what}: rows ordered");

    let want = grouped(conn);
    let got: BTreeMap<(i64, String), (i64, i64)> = copies
        .inventory
        .iter()
        .flat_map(|d| {
            d.kinds.iter().map(move |k| ((d.device, k.kind.to_string()), (k.count, k.bytes)))
        })
        .collect();
    assert_eq!(got, want, "{what}: inventory per device and kind");
    for d in &copies.inventory {
        let dev = rows.iter().filter(|r| r.device == d.device);
        let first = dev.clone().map(|r| r.start).min().unwrap();
        let last = dev.map(|r| r.end).max().unwrap();
        assert_eq!(
            (d.first_start_ns, d.last_end_ns),
            (first, last),
            "{what}: device {} range",
            d.device
        );
    }

    let enum_table = has_table(conn, "ENUM_CUDA_MEMCPY_OPER");
    assert_eq!(copies.label_source == LabelSource::Export, enum_table, "{what}: label source");
    for d in &copies.inventory {
        for k in &d.kinds {
            let Some(code) = k.kind.code() else {
                assert_eq!(k.label, "Memset");
                continue;
            };
            if enum_table {
                let label: String = conn
                    .query_row(
                        "SELECT label FROM ENUM_CUDA_MEMCPY_OPER WHERE id = ?1",
                        [code],
                        |r| r.get(0),
                    )
                    .unwrap();
                assert_eq!(k.label, label, "{what}: label of copyKind {code}");
            }
        }
    }
}

/// Every check on one trace: the scan, then the analysis per device over the whole trace and
/// over a clip and a contain window cut through the middle of the copies. Returns the copies
/// the clip window cut.
fn check_trace(path: &Path) -> i64 {
    let what = path.display().to_string();
    let conn = open_ro(path);
    let rows = read_copies(&conn);
    let kernels_sql = read_kernels(&conn);
    let (copies, kernels) = load(path, &KernelFilter::default());
    check_scan(path, &conn, &copies);

    let mut devices: Vec<i64> =
        rows.iter().map(|r| r.device).chain(kernels_sql.iter().map(|k| k.0)).collect();
    devices.sort_unstable();
    devices.dedup();
    let mut wins = vec![Win::Whole];
    if let (Some(lo), Some(hi)) =
        (rows.iter().map(|r| r.start).min(), rows.iter().map(|r| r.end).max())
    {
        // A window over the middle half of the copies: its edges cut through rows in the
        // busy traces.
        let (a, b) = (lo + (hi - lo) / 4, hi - (hi - lo) / 4);
        if b > a {
            wins.extend([Win::Clip(a, b), Win::Contain(a, b)]);
        }
    }
    let mut cut = 0;
    for win in wins {
        let (window, semantics) = win.window();
        let got = all_devices(&copies, &kernels, window, semantics).unwrap();
        if let Win::Clip(..) = win {
            cut += got.iter().map(|d| d.edge_copies).sum::<i64>();
        }
        assert_eq!(got.iter().map(|d| d.device).collect::<Vec<_>>(), devices, "{what}: devices");
        for d in &got {
            let want = reference(&rows, &kernels_sql, d.device, win);
            assert_eq!(actual(d), want, "{what}: device {} {win:?}", d.device);
            if let Some(i) = d.idle {
                assert_eq!(i.idle_ns + i.kernel_ns, i.span_ns);
                assert_eq!(i.idle_copy_ns + i.idle_none_ns, i.idle_ns);
            }
            for k in d.kinds.iter().map(|k| &k.stats).chain([&d.total]) {
                match k.bandwidth {
                    Some(bw) => assert_eq!((bw.bytes, bw.busy_ns), (k.bytes, k.busy_ns)),
                    None => assert_eq!(k.busy_ns, 0),
                }
            }
            // The filter pushed into the SQL gives the same answer as filtering afterwards.
            let filter = KernelFilter {
                devices: Some(vec![d.device]),
                bounds: window.map(|w| (w.start_ns, w.end_ns)),
                ..Default::default()
            };
            let (c, k) = load(path, &filter);
            assert_eq!(c.inventory, copies.inventory, "{what}: the inventory ignores the filter");
            let again = device_copies(&c, &k, d.device, window, semantics).unwrap();
            assert_eq!(
                &again, d,
                "{what}: device {} {win:?} with the filter in the scan",
                d.device
            );
        }
    }
    cut
}

#[test]
fn every_committed_fixture_matches_sql_and_the_sweep() {
    for f in COMMITTED {
        let cut = check_trace(&fixture(f));
        if f.contains("h100") {
            assert!(cut > 0, "the window cuts copies, so clip and contain differ");
        }
    }
}

#[test]
fn every_shared_trace_matches_sql_and_the_sweep() {
    let Some(dir) = shared_traces() else {
        skip_no_shared("every_shared_trace_matches_sql_and_the_sweep");
        return;
    };
    let files = sqlite_files(&dir);
    assert!(files.len() >= 28, "the shared traces are all there ({} found)", files.len());
    for f in files {
        check_trace(&f);
    }
}

#[test]
fn schemas_without_a_memset_table_or_enum_labels() {
    // mock.sqlite has a memcpy table and no memset table.
    let (copies, _) = load(&fixture("nsys-ai/mock.sqlite"), &KernelFilter::default());
    assert!(copies.memcpy.present && !copies.memset.present);
    assert_eq!(copies.len(), 1);
    // The 2021 export has no ENUM_* table: the built-in labels apply.
    let (copies, _) =
        load(&fixture("legacy/mordred_report1_2021.sqlite"), &KernelFilter::default());
    assert_eq!(copies.label_source, LabelSource::BuiltIn);
    let labels: Vec<(String, String)> =
        copies.inventory[0].kinds.iter().map(|k| (k.kind.to_string(), k.label.clone())).collect();
    assert_eq!(
        labels,
        [
            ("HtoD".into(), "Host-to-Device".into()),
            ("DtoH".into(), "Device-to-Host".into()),
            ("memset".into(), "Memset".into())
        ]
    );
}

/// h100_2gpu_1s over the whole trace: per device, the span is the kernel span; 97.7% of it has
/// no kernel, and a copy runs in 99.3% of that idle time (97.0% of the span, not the ~95% that
/// was quoted: 95.9% is host-to-device alone). Copies and kernels never overlap.
#[test]
fn h100_idle_time_is_mostly_copies() {
    let path = fixture("nsys-ai/h100_2gpu_1s.sqlite");
    let (copies, kernels) = load(&path, &KernelFilter::default());
    let got = all_devices(&copies, &kernels, None, Semantics::Clip).unwrap();
    // (device, span, idle, idle_copy, idle_none, HtoD busy, all copies busy)
    let want = [
        (0, 960_485_009, 938_099_846, 931_561_688, 6_538_158, 920_872_841, 940_505_084),
        (1, 960_307_663, 937_863_304, 931_427_591, 6_435_713, 920_757_957, 940_366_346),
    ];
    assert_eq!(got.len(), want.len());
    for (d, w) in got.iter().zip(want) {
        let i = d.idle.unwrap();
        let htod = d.kinds.iter().find(|k| k.kind.as_str() == "HtoD").unwrap();
        assert_eq!(
            (
                d.device,
                i.span_ns,
                i.idle_ns,
                i.idle_copy_ns,
                i.idle_none_ns,
                htod.stats.busy_ns,
                d.total.busy_ns
            ),
            w
        );
        assert_eq!(d.copy_kernel_overlap_ns, 0);
        let kinds: Vec<(String, i64, i64)> =
            d.kinds.iter().map(|k| (k.kind.to_string(), k.stats.count, k.stats.bytes)).collect();
        assert_eq!(
            kinds,
            [
                ("HtoD".into(), 225, 25_475_253_792),
                ("DtoH".into(), 2, 9),
                ("DtoD".into(), 225, 29_684_236_288),
                ("memset".into(), 11, 8_836)
            ]
        );
        // Shares in per mille, truncated: idle 976 (97.7%), idle with a copy 969 (97.0%) of the
        // span, 993 (99.3%) of the idle time.
        assert_eq!(i.idle_ns * 1000 / i.span_ns, 976);
        assert_eq!(i.idle_copy_ns * 1000 / i.span_ns, 969);
        assert_eq!(i.idle_copy_ns * 1000 / i.idle_ns, 993);
        assert_eq!(htod.stats.busy_ns * 1000 / i.span_ns, 958);
    }
}

/// Runs the binary and parses its JSON.
fn verdict_json(args: &[&str]) -> serde_json::Value {
    let out = assert_cmd::Command::cargo_bin("verdict").unwrap().args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// End to end, as a user runs it: `query copies`, `query overlap` (its idle split) and
/// `inspect` on the H100 capture agree with the SQL and sweep reference, over the whole
/// trace and in a clip window.
#[test]
fn the_commands_report_copies_as_the_reference_computes_them() {
    let path = fixture("nsys-ai/h100_2gpu_1s.sqlite");
    let p = path.to_str().unwrap();
    let conn = open_ro(&path);
    let copies = read_copies(&conn);
    let kernels = read_kernels(&conn);
    // A window inside the capture: 155.5 s to 156.0 s.
    for (win, window) in
        [(Win::Whole, None), (Win::Clip(155_500_000_000, 156_000_000_000), Some("155.5:156"))]
    {
        for device in [0, 1] {
            let want = reference(&copies, &kernels, device, win);
            let d = device.to_string();
            let mut args = vec!["query", "copies", p, "--device", &d, "--json"];
            if let Some(w) = window {
                args.extend(["--window", w]);
            }
            let v = verdict_json(&args);
            let values = &v["values"];
            assert_eq!(values["copies"], want.total.0, "{device} {win:?}");
            // Bytes moved: the memcpy rows alone, memsets apart.
            let memset = want.kinds.get("memset").copied().unwrap_or_default();
            assert_eq!(values["bytes"], want.total.1 - memset.1, "{device} {win:?}");
            assert_eq!(values["memset_bytes"], memset.1, "{device} {win:?}");
            assert_eq!(values["busy_ns"], want.total.2, "{device} {win:?}");
            assert_eq!(values["copy_kernel_overlap_ns"], want.overlap, "{device} {win:?}");
            let (_, idle, idle_copy, idle_none) = want.idle.unwrap();
            assert_eq!(values["idle_ns"], idle, "{device} {win:?}");
            assert_eq!(values["idle_copy_ns"], idle_copy, "{device} {win:?}");
            assert_eq!(values["idle_none_ns"], idle_none, "{device} {win:?}");
            let htod = want.kinds.get("HtoD").copied().unwrap_or_default();
            assert_eq!(
                (values["htod_bytes"].as_i64(), values["htod_busy_ns"].as_i64()),
                (Some(htod.1), Some(htod.2))
            );
            // overlap keeps its idle ("no kernel") and splits it the same way.
            args[1] = "overlap";
            let o = verdict_json(&args);
            assert_eq!(o["values"]["idle_ns"], idle, "overlap {device} {win:?}");
            assert_eq!(o["values"]["idle_copy_ns"], idle_copy, "overlap {device} {win:?}");
            assert_eq!(o["values"]["idle_none_ns"], idle_none, "overlap {device} {win:?}");
        }
    }
    // inspect lists rows and bytes per device and kind, as GROUP BY counts them.
    let v = verdict_json(&["inspect", p, "--json"]);
    let mut listed = BTreeMap::new();
    for d in v["copies"]["per_device"].as_array().unwrap() {
        for k in d["kinds"].as_array().unwrap() {
            listed.insert(
                (d["device"].as_i64().unwrap(), k["kind"].as_str().unwrap().to_string()),
                (k["count"].as_i64().unwrap(), k["bytes"].as_i64().unwrap()),
            );
        }
    }
    assert_eq!(listed, grouped(&conn));
}

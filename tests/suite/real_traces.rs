//! Integration tests through the `verdict` binary on real Nsight Systems exports.
//!
//! Every expected number is computed here, independently of the code under test: the trace
//! is opened read-only with rusqlite, kernel rows are read with plain SQL joined to
//! `StringIds`, and the metrics come from brute-force references written in this file
//! (overlap by an elementary-segment sweep over every start/end point, kernel statistics by
//! SQL `GROUP BY`, NCCL skew by straightforward loops). The tool's `--json` output must agree
//! to the nanosecond. A few anchors come from outside the code altogether (the traces'
//! README and the task's known values).
//!
//! Committed fixtures (MIT) live in `fixtures/`; the unlicensed traces of `../shared/traces`
//! are read in place only when that folder exists.

use crate::util;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use rusqlite::Connection;
use serde_json::{Map, Value, json};

use util::{
    fixture, int, open_ro, run_json, run_json_in, s, seconds, sha256_cached, shared_traces,
    skip_no_shared, snapshot, snapshot_with,
};

/// The committed real exports.
const COMMITTED: &[&str] = &[
    "nsys-ai/mfu_2gpu_before.sqlite",
    "nsys-ai/mfu_2gpu_after.sqlite",
    "nsys-ai/h100_2gpu_1s.sqlite",
    "nsys-ai/mock.sqlite",
    "legacy/mordred_report1_2021.sqlite",
];

const BEFORE: &str = "nsys-ai/mfu_2gpu_before.sqlite";
const AFTER: &str = "nsys-ai/mfu_2gpu_after.sqlite";
const MORDRED: &str = "legacy/mordred_report1_2021.sqlite";

// Rows the tool must read: timestamps collected (not 0/0) and not running backwards.
use util::reference::VALID_KERNEL as VALID;

// ---------------------------------------------------------------------------------------------
// Raw rows and windows
// ---------------------------------------------------------------------------------------------

/// One kernel row, names resolved through `StringIds`.
#[derive(Debug, Clone)]
struct Kernel {
    start: i64,
    end: i64,
    device: i64,
    stream: i64,
    /// Short name contains `nccl` in any case (decided by SQLite's ASCII-case-insensitive LIKE).
    nccl: bool,
}

/// Every valid kernel row of a trace, read with plain SQL.
fn read_kernels(conn: &Connection) -> Vec<Kernel> {
    let sql = format!(
        "SELECT k.start, k.\"end\", k.deviceId, k.streamId, s.value LIKE '%nccl%'
         FROM CUPTI_ACTIVITY_KIND_KERNEL AS k
         JOIN StringIds AS s ON s.id = k.shortName
         JOIN StringIds AS d ON d.id = k.demangledName
         WHERE {VALID}"
    );
    let mut stmt = conn.prepare(&sql).unwrap();
    let rows: Vec<Kernel> = stmt
        .query_map([], |r| {
            Ok(Kernel {
                start: r.get(0)?,
                end: r.get(1)?,
                device: r.get(2)?,
                stream: r.get(3)?,
                nccl: r.get(4)?,
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
    assert_eq!(rows.len() as i64, all, "every kernel row resolves both names in StringIds");
    assert!(!rows.is_empty(), "the trace has kernels");
    rows
}

/// Devices with kernels, ascending (SQL).
fn present_devices(conn: &Connection) -> Vec<i64> {
    let sql = format!(
        "SELECT DISTINCT k.deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL AS k WHERE {VALID} ORDER BY 1"
    );
    let mut stmt = conn.prepare(&sql).unwrap();
    stmt.query_map([], |r| r.get(0)).unwrap().collect::<Result<_, _>>().unwrap()
}

/// A window and its semantics as the reference applies them.
#[derive(Debug, Clone, Copy)]
enum Win {
    Whole,
    Clip(i64, i64),
    Contain(i64, i64),
}

impl Win {
    /// The command-line arguments selecting it.
    fn args(self) -> Vec<String> {
        match self {
            Win::Whole => vec![],
            Win::Clip(a, b) => {
                vec![
                    "--window".into(),
                    format!("{}:{}", seconds(a), seconds(b)),
                    "--semantics".into(),
                    "clip".into(),
                ]
            }
            Win::Contain(a, b) => {
                vec![
                    "--window".into(),
                    format!("{}:{}", seconds(a), seconds(b)),
                    "--semantics".into(),
                    "contain".into(),
                ]
            }
        }
    }

    /// The interval a kernel contributes to wall-time metrics: clipped to the window (clip),
    /// unclipped when fully inside (contain), or as is.
    fn clipped(self, k: &Kernel) -> Option<(i64, i64)> {
        match self {
            Win::Whole => Some((k.start, k.end)),
            Win::Clip(a, b) => (k.start < b && k.end > a).then(|| (k.start.max(a), k.end.min(b))),
            Win::Contain(a, b) => (k.start >= a && k.end <= b).then_some((k.start, k.end)),
        }
    }

    /// Whether a kernel is selected at all (for analyses that never clip).
    fn selects(self, k: &Kernel) -> bool {
        self.clipped(k).is_some()
    }

    /// Whether a kernel crosses a window edge: it intersects the window without lying inside.
    fn crosses_edge(self, k: &Kernel) -> bool {
        match self {
            Win::Whole => false,
            Win::Clip(a, b) | Win::Contain(a, b) => {
                k.start < b && k.end > a && !(k.start >= a && k.end <= b)
            }
        }
    }

    fn requested(self) -> Value {
        match self {
            Win::Whole => Value::Null,
            Win::Clip(a, b) | Win::Contain(a, b) => json!([a, b]),
        }
    }

    fn semantics(self) -> &'static str {
        match self {
            Win::Contain(..) => "contain",
            _ => "clip",
        }
    }
}

/// Asserts that every key of `expected` has the same value in `actual`.
fn assert_fields(actual: &Value, expected: &Value, what: &str) {
    for (k, v) in expected.as_object().unwrap() {
        assert_eq!(actual.get(k), Some(v), "{what}: field `{k}` (tool {actual})");
    }
}

// ---------------------------------------------------------------------------------------------
// The JSON contract
// ---------------------------------------------------------------------------------------------

/// Checks the keys every piece of evidence carries and the identity of the trace.
fn assert_contract(v: &Value, analysis: &str, trace: &Path, sha256: &str) {
    let obj = |key: &str| -> &Map<String, Value> {
        v.get(key)
            .and_then(Value::as_object)
            .unwrap_or_else(|| panic!("`{key}` is not an object in {v}"))
    };
    assert_eq!(v["analysis"], analysis);
    let tool = obj("tool");
    assert_eq!(tool["name"], "verdict");
    assert_eq!(tool["version"], env!("CARGO_PKG_VERSION"));
    let t = obj("trace");
    assert_eq!(t["path"], s(trace));
    assert_eq!(t["sha256"], sha256, "trace.sha256 is the sha256 of the file's bytes");
    for key in ["schema_version", "nsys_version"] {
        assert!(t.get(key).is_some_and(|x| x.is_null() || x.is_string()), "trace.{key} in {v}");
    }
    let w = obj("window");
    for key in ["requested_ns", "effective_ns"] {
        let x = w.get(key).unwrap_or_else(|| panic!("window.{key} missing"));
        assert!(
            x.is_null()
                || x.as_array().is_some_and(|a| a.len() == 2 && a.iter().all(Value::is_i64)),
            "window.{key} is null or [a, b]: {x}"
        );
    }
    assert!(matches!(w["semantics"].as_str(), Some("clip" | "contain")), "window.semantics");
    let sc = obj("scope");
    for key in ["devices", "present_devices", "missing_devices"] {
        assert!(
            sc.get(key).and_then(Value::as_array).is_some_and(|a| a.iter().all(Value::is_i64)),
            "scope.{key} is a list of device ids in {v}"
        );
    }
    assert!(sc.get("streams").is_some_and(|x| x.is_null() || x.is_array()), "scope.streams");
    let metrics = obj("metrics");
    assert!(!metrics.is_empty(), "metrics are defined");
    let values = v.get("values").and_then(Value::as_object);
    let rows = v.get("rows").and_then(Value::as_array);
    assert!(values.is_some() || rows.is_some(), "values or rows present in {v}");
    // Every defined metric is reported: in `values`, or else in every row.
    for m in metrics.keys() {
        let reported = match (values, rows) {
            (Some(vals), _) => vals.contains_key(m),
            (None, Some(r)) => r.iter().all(|row| row.get(m).is_some()),
            _ => false,
        };
        assert!(reported, "metric `{m}` is defined but not reported in {v}");
    }
}

// ---------------------------------------------------------------------------------------------
// Overlap reference: elementary-segment sweep
// ---------------------------------------------------------------------------------------------

/// The overlap breakdown of one device, computed by cutting the timeline at every start and
/// end point and classifying each elementary segment by how many compute and NCCL kernels
/// cover it. Returns the expected `values` and the effective interval.
fn overlap_ref(kernels: &[Kernel], device: i64, win: Win) -> (Value, [i64; 2]) {
    let dev: Vec<&Kernel> = kernels.iter().filter(|k| k.device == device).collect();
    let kept: Vec<(i64, i64, bool)> =
        dev.iter().filter_map(|k| win.clipped(k).map(|(s, e)| (s, e, k.nccl))).collect();
    let effective = match win {
        Win::Clip(a, b) => [a, b],
        _ => [
            kept.iter().map(|x| x.0).min().unwrap_or(0),
            kept.iter().map(|x| x.1).max().unwrap_or(0),
        ],
    };
    let total = effective[1] - effective[0];

    let (compute_only, nccl_only, both) = util::sweep(&kept);
    let nccl_kernels = kept.iter().filter(|x| x.2).count() as i64;
    let edge = dev.iter().filter(|k| win.crosses_edge(k)).count() as i64;
    let values = json!({
        "compute_only_ns": compute_only,
        "nccl_only_ns": nccl_only,
        "overlap_ns": both,
        "idle_ns": total - (compute_only + nccl_only + both),
        "total_ns": total,
        "nccl_busy_ns": nccl_only + both,
        "compute_busy_ns": compute_only + both,
        "kernels": kept.len() as i64,
        "compute_kernels": kept.len() as i64 - nccl_kernels,
        "nccl_kernels": nccl_kernels,
        "edge_kernels": edge,
    });
    (values, effective)
}

/// The tool's per-device results of an overlap query: `rows` for several devices, `values`
/// for one.
fn per_device(v: &Value) -> BTreeMap<i64, (Value, Value)> {
    match v.get("rows").and_then(Value::as_array) {
        Some(rows) => rows
            .iter()
            .map(|r| (int(r, "device"), (r.clone(), r["effective_ns"].clone())))
            .collect(),
        None => {
            let devices = v["scope"]["devices"].as_array().unwrap();
            assert_eq!(devices.len(), 1, "values without rows cover one device");
            let d = devices[0].as_i64().unwrap();
            BTreeMap::from([(d, (v["values"].clone(), v["window"]["effective_ns"].clone()))])
        }
    }
}

/// Runs `query overlap` with a device flag and a window and checks it against the sweep.
fn check_overlap(trace: &Path, kernels: &[Kernel], sha: &str, devices: &[&str], win: Win) -> Value {
    let mut args: Vec<String> = vec!["query".into(), "overlap".into(), s(trace).into()];
    args.extend(devices.iter().map(|d| d.to_string()));
    args.extend(win.args());
    args.push("--json".into());
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let v = run_json(&argv);
    assert_contract(&v, "overlap", trace, sha);
    assert_eq!(v["window"]["requested_ns"], win.requested(), "{argv:?}");
    assert_eq!(v["window"]["semantics"], win.semantics(), "{argv:?}");

    let all: Vec<i64> = {
        let set: BTreeSet<i64> = kernels.iter().map(|k| k.device).collect();
        set.into_iter().collect()
    };
    let want: Vec<i64> = match devices {
        ["--all-devices"] => all.clone(),
        ["--device", d] => vec![d.parse().unwrap()],
        _ => unreachable!(),
    };
    assert_eq!(v["scope"]["devices"], json!(want), "{argv:?}");
    assert_eq!(v["scope"]["present_devices"], json!(all), "{argv:?}");

    let got = per_device(&v);
    assert_eq!(got.keys().copied().collect::<Vec<_>>(), want, "{argv:?}: one result per device");
    let (mut lo, mut hi) = (i64::MAX, i64::MIN);
    for (d, (vals, eff)) in &got {
        let (expected, effective) = overlap_ref(kernels, *d, win);
        assert_fields(vals, &expected, &format!("{argv:?} device {d}"));
        assert_eq!(eff, &json!(effective), "{argv:?} device {d}: effective interval");
        // The four parts are exclusive and exhaustive.
        assert_eq!(
            int(vals, "compute_only_ns")
                + int(vals, "nccl_only_ns")
                + int(vals, "overlap_ns")
                + int(vals, "idle_ns"),
            int(vals, "total_ns")
        );
        lo = lo.min(effective[0]);
        hi = hi.max(effective[1]);
    }
    assert_eq!(v["window"]["effective_ns"], json!([lo, hi]), "{argv:?}: effective window");
    v
}

/// overlap on one trace: all devices, then each device alone.
fn overlap_all_and_each(trace: &Path) {
    let conn = open_ro(trace);
    let kernels = read_kernels(&conn);
    let sha = sha256_cached(trace);
    check_overlap(trace, &kernels, &sha, &["--all-devices"], Win::Whole);
    for d in present_devices(&conn) {
        check_overlap(trace, &kernels, &sha, &["--device", &d.to_string()], Win::Whole);
    }
}

#[test]
fn overlap_on_every_committed_fixture_matches_the_sweep() {
    for f in COMMITTED {
        overlap_all_and_each(&fixture(f));
    }
}

#[test]
fn overlap_anchor_mfu_before_device_0() {
    // Known values (task brief): device 0 (pid 144) of mfu_2gpu_before has its NCCL kernels
    // on the compute stream, so nothing overlaps.
    let trace = fixture(BEFORE);
    let v = run_json(&["query", "overlap", s(&trace), "--device", "0", "--json"]);
    assert_eq!(int(&v["values"], "nccl_busy_ns"), 17_172_652);
    assert_eq!(int(&v["values"], "compute_busy_ns"), 253_690_832);
    assert_eq!(int(&v["values"], "overlap_ns"), 0);
    // The reference agrees with the anchor, so the anchor also checks the reference.
    let (r, _) = overlap_ref(&read_kernels(&open_ro(&trace)), 0, Win::Whole);
    assert_eq!(
        (int(&r, "nccl_busy_ns"), int(&r, "compute_busy_ns"), int(&r, "overlap_ns")),
        (17_172_652, 253_690_832, 0)
    );
    let inspect = run_json(&["inspect", s(&trace), "--json"]);
    assert_eq!(inspect["rows"][0]["device"], 0);
    assert_eq!(inspect["rows"][0]["pids"], json!([144]));
}

/// A window inside mfu_2gpu_before (kernels run 60.1115-60.4114 s) whose edges cut through a
/// kernel on each device.
const WINDOW: (i64, i64) = (60_200_000_000, 60_300_000_000);

#[test]
fn overlap_with_a_window_clip_and_contain() {
    let trace = fixture(BEFORE);
    let kernels = read_kernels(&open_ro(&trace));
    let sha = sha256_cached(&trace);
    let (a, b) = WINDOW;
    for d in [0, 1] {
        let dev: Vec<&Kernel> = kernels.iter().filter(|k| k.device == d).collect();
        assert!(
            dev.iter().any(|k| Win::Clip(a, b).crosses_edge(k)),
            "the window must cut a kernel of device {d} for clip and contain to differ"
        );
    }
    for win in [Win::Clip(a, b), Win::Contain(a, b)] {
        let one = check_overlap(&trace, &kernels, &sha, &["--device", "0"], win);
        check_overlap(&trace, &kernels, &sha, &["--all-devices"], win);
        let total = int(&one["values"], "total_ns");
        match win {
            Win::Clip(..) => assert_eq!(total, b - a, "clip: the total is the window length"),
            Win::Contain(..) => {
                let kept: Vec<&Kernel> = kernels
                    .iter()
                    .filter(|k| k.device == 0 && k.start >= a && k.end <= b)
                    .collect();
                let span = kept.iter().map(|k| k.end).max().unwrap()
                    - kept.iter().map(|k| k.start).min().unwrap();
                assert_eq!(total, span, "contain: the total is the span of the kept kernels");
                assert!(total < b - a);
            }
            Win::Whole => unreachable!(),
        }
    }
}

#[test]
fn overlap_on_shared_cuckoo_2023() {
    let Some(shared) = shared_traces() else {
        return skip_no_shared("overlap_on_shared_cuckoo_2023");
    };
    overlap_all_and_each(&shared.join("legacy-schema/cuckoo_hash_report1_2023.sqlite"));
}

/// The dsl-fs24 exports of one folder: one process, one device, NCCL kernels only.
fn dsl_files(folder: &str) -> Option<Vec<PathBuf>> {
    let dir = shared_traces()?.join("dsl-fs24").join(folder);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sqlite"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{} holds exports", dir.display());
    Some(files)
}

fn dsl_folder(folder: &str, files_expected: usize) {
    let Some(files) = dsl_files(folder) else { return skip_no_shared(folder) };
    assert_eq!(files.len(), files_expected);
    for (i, f) in files.iter().enumerate() {
        let conn = open_ro(f);
        let kernels = read_kernels(&conn);
        let sha = sha256_cached(f);
        let devices = present_devices(&conn);
        assert_eq!(devices.len(), 1, "{}: one device per file", f.display());
        assert!(kernels.iter().all(|k| k.nccl), "{}: NCCL kernels only", f.display());
        let v =
            check_overlap(f, &kernels, &sha, &["--device", &devices[0].to_string()], Win::Whole);
        assert_eq!(int(&v["values"], "compute_busy_ns"), 0);
        if i == 0 {
            check_overlap(f, &kernels, &sha, &["--all-devices"], Win::Whole);
            check_inspect(f, None);
        }
    }
}

#[test]
fn overlap_on_shared_dsl_fs24_ring_6gpus() {
    dsl_folder("results_Ring_2nodes_6GPUs_1010", 6);
}

#[test]
fn overlap_on_shared_dsl_fs24_tree_9gpus() {
    dsl_folder("results_Tree_3nodes_9GPUs_1010", 9);
}

#[test]
fn overlap_on_shared_dsl_fs24_tree_simple_9gpus() {
    dsl_folder("results_Tree_Simple_9GPUs_3nodes_allreduce_2MB_allreduce_2MB", 9);
}

// ---------------------------------------------------------------------------------------------
// Kernel summary reference: SQL GROUP BY
// ---------------------------------------------------------------------------------------------

/// A kernel-summary query as the reference evaluates it in SQL.
struct KernelQuery {
    /// `shortName` or `demangledName`.
    column: &'static str,
    /// A predicate on the name `n.value`, or none.
    name_sql: Option<String>,
    /// Devices, or all.
    devices: Option<Vec<i64>>,
    win: Win,
    /// The tool's arguments besides the trace and `--json`.
    args: Vec<String>,
    limit: usize,
}

impl KernelQuery {
    fn new(args: &[&str]) -> KernelQuery {
        KernelQuery {
            column: "shortName",
            name_sql: None,
            devices: None,
            win: Win::Whole,
            args: args.iter().map(|a| a.to_string()).collect(),
            limit: 15,
        }
    }

    fn duration(&self) -> String {
        match self.win {
            Win::Clip(a, b) => format!("(min(k.\"end\", {b}) - max(k.start, {a}))"),
            _ => "(k.\"end\" - k.start)".into(),
        }
    }

    /// `FROM ... WHERE ...` of every query.
    fn sql_tail(&self) -> String {
        let mut w = vec![VALID.to_string()];
        if let Some(n) = &self.name_sql {
            w.push(n.clone());
        }
        if let Some(d) = &self.devices {
            let list: Vec<String> = d.iter().map(i64::to_string).collect();
            w.push(format!("k.deviceId IN ({})", list.join(",")));
        }
        match self.win {
            Win::Whole => {}
            Win::Clip(a, b) => w.push(format!("k.start < {b} AND k.\"end\" > {a}")),
            Win::Contain(a, b) => w.push(format!("k.start >= {a} AND k.\"end\" <= {b}")),
        }
        format!(
            "FROM CUPTI_ACTIVITY_KIND_KERNEL AS k JOIN StringIds AS n ON n.id = k.{} WHERE {}",
            self.column,
            w.join(" AND ")
        )
    }
}

fn lower_median(sorted: &[i64]) -> i64 {
    if sorted.is_empty() { 0 } else { sorted[(sorted.len() - 1) / 2] }
}

/// Expected `values` and every row (not yet limited), ordered by total time then name.
fn kernels_ref(conn: &Connection, q: &KernelQuery) -> (Value, Vec<Value>) {
    let d = q.duration();
    let fw = q.sql_tail();
    // Durations per name, ascending, for the medians.
    let mut durations: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    let mut all: Vec<i64> = Vec::new();
    let mut stmt = conn.prepare(&format!("SELECT n.value, {d} {fw} ORDER BY n.value, 2")).unwrap();
    let mut rows = stmt.query([]).unwrap();
    while let Some(r) = rows.next().unwrap() {
        let dur: i64 = r.get(1).unwrap();
        durations.entry(r.get(0).unwrap()).or_default().push(dur);
        all.push(dur);
    }
    all.sort_unstable();
    let mut per_device: BTreeMap<String, BTreeMap<String, i64>> = BTreeMap::new();
    let mut stmt = conn
        .prepare(&format!("SELECT n.value, k.deviceId, count(*) {fw} GROUP BY n.value, k.deviceId"))
        .unwrap();
    let mut rows = stmt.query([]).unwrap();
    while let Some(r) = rows.next().unwrap() {
        let dev: i64 = r.get(1).unwrap();
        per_device.entry(r.get(0).unwrap()).or_default().insert(dev.to_string(), r.get(2).unwrap());
    }
    let mut out = Vec::new();
    let mut stmt = conn
        .prepare(&format!(
            "SELECT n.value, count(*), sum({d}), min({d}), max({d}) {fw} GROUP BY n.value ORDER BY 3 DESC, 1 ASC"
        ))
        .unwrap();
    let mut rows = stmt.query([]).unwrap();
    while let Some(r) = rows.next().unwrap() {
        let name: String = r.get(0).unwrap();
        let (count, total): (i64, i64) = (r.get(1).unwrap(), r.get(2).unwrap());
        out.push(json!({
            "name": name,
            "count": count,
            "total_ns": total,
            "mean_ns": total / count,
            "min_ns": r.get::<_, i64>(3).unwrap(),
            "median_ns": lower_median(&durations[&name]),
            "max_ns": r.get::<_, i64>(4).unwrap(),
            "per_device": per_device[&name],
        }));
    }
    let (count, total, names, ndev): (i64, i64, i64, i64) = conn
        .query_row(
            &format!("SELECT count(*), coalesce(sum({d}), 0), count(DISTINCT n.value), count(DISTINCT k.deviceId) {fw}"),
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .unwrap();
    let mut devs: BTreeMap<String, i64> = BTreeMap::new();
    let mut stmt = conn.prepare(&format!("SELECT k.deviceId, count(*) {fw} GROUP BY 1")).unwrap();
    let mut rows = stmt.query([]).unwrap();
    while let Some(r) = rows.next().unwrap() {
        devs.insert(r.get::<_, i64>(0).unwrap().to_string(), r.get(1).unwrap());
    }
    let mut values = json!({
        "count": count,
        "total_ns": total,
        "names": names,
        "devices_with_match": ndev,
        "per_device": devs,
    });
    if count > 0 {
        values["mean_ns"] = json!(total / count);
        values["min_ns"] = json!(all[0]);
        values["median_ns"] = json!(lower_median(&all));
        values["max_ns"] = json!(all[all.len() - 1]);
    }
    (values, out)
}

fn check_kernels(trace: &Path, q: &KernelQuery) -> Value {
    let conn = open_ro(trace);
    let mut args: Vec<&str> = vec!["query", "kernels", s(trace)];
    args.extend(q.args.iter().map(String::as_str));
    args.push("--json");
    let v = run_json(&args);
    assert_contract(&v, "kernels", trace, &sha256_cached(trace));
    let (values, rows) = kernels_ref(&conn, q);
    assert_fields(&v["values"], &values, &format!("{args:?} values"));
    let got = v["rows"].as_array().unwrap();
    let want: Vec<Value> = rows.iter().take(q.limit).cloned().collect();
    assert_eq!(got.len(), want.len(), "{args:?}: rows shown (limit {})", q.limit);
    for (g, w) in got.iter().zip(&want) {
        assert_fields(g, w, &format!("{args:?} row {}", w["name"]));
    }
    let devices = q.devices.clone().unwrap_or_else(|| present_devices(&conn));
    assert_eq!(v["scope"]["devices"], json!(devices), "{args:?}: devices in scope");
    assert_eq!(v["parameters"]["limit"], json!(q.limit));
    assert_eq!(
        v["parameters"]["names"],
        if q.column == "shortName" { "short" } else { "demangled" }
    );
    let shown_note = v["notes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n["text"].as_str().unwrap().contains("names shown"));
    assert_eq!(shown_note, rows.len() > q.limit, "{args:?}: truncation is disclosed");
    v
}

#[test]
fn kernels_on_every_committed_fixture_match_group_by() {
    for f in COMMITTED {
        check_kernels(&fixture(f), &KernelQuery::new(&[]));
    }
}

#[test]
fn kernels_filters_names_devices_and_limit() {
    let trace = fixture(BEFORE);

    let mut q = KernelQuery::new(&["--match", "nvjet"]);
    q.name_sql = Some("instr(n.value, 'nvjet') > 0".into());
    let v = check_kernels(&trace, &q);
    assert_eq!(int(&v["values"], "names"), 3, "three nvjet GEMM names");

    // --match is case-sensitive: no short name contains `NCCL`.
    let mut q = KernelQuery::new(&["--match", "NCCL"]);
    q.name_sql = Some("instr(n.value, 'NCCL') > 0".into());
    let v = check_kernels(&trace, &q);
    assert_eq!(int(&v["values"], "count"), 0);

    // The regex, restated as GLOB patterns.
    let mut q = KernelQuery::new(&["--regex", "^(nccl|flash_)"]);
    q.name_sql = Some("(n.value GLOB 'nccl*' OR n.value GLOB 'flash_*')".into());
    let v = check_kernels(&trace, &q);
    assert_eq!(int(&v["values"], "count"), 66 + 68);

    let mut q = KernelQuery::new(&["--devices", "1", "--limit", "3"]);
    q.devices = Some(vec![1]);
    q.limit = 3;
    let v = check_kernels(&trace, &q);
    assert!(v["values"]["per_device"].get("0").is_none(), "device 0 is out of scope");

    let mut q = KernelQuery::new(&[
        "--device",
        "0",
        "--names",
        "demangled",
        "--match",
        "elementwise",
        "--limit",
        "4",
    ]);
    q.column = "demangledName";
    q.devices = Some(vec![0]);
    q.name_sql = Some("instr(n.value, 'elementwise') > 0".into());
    q.limit = 4;
    check_kernels(&trace, &q);

    let mut q = KernelQuery::new(&["--all-devices", "--names", "demangled", "--limit", "30"]);
    q.column = "demangledName";
    q.limit = 30;
    let v = check_kernels(&trace, &q);
    assert_eq!(int(&v["values"], "names"), 27, "27 demangled names against 11 short ones");
}

#[test]
fn kernels_with_a_window_clip_and_contain() {
    let trace = fixture(BEFORE);
    let (a, b) = WINDOW;
    for win in [Win::Clip(a, b), Win::Contain(a, b)] {
        let args = win.args();
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut q = KernelQuery::new(&argv);
        q.win = win;
        let v = check_kernels(&trace, &q);
        assert_eq!(v["window"]["requested_ns"], json!([a, b]));
        assert_eq!(v["window"]["semantics"], win.semantics());
    }
}

// ---------------------------------------------------------------------------------------------
// NCCL skew reference: loops
// ---------------------------------------------------------------------------------------------

/// Lower median, nearest-rank p90, min and max of unsorted values.
fn stats(v: &[i64]) -> Value {
    let mut s = v.to_vec();
    s.sort_unstable();
    if s.is_empty() {
        return json!({"min": 0, "median": 0, "p90": 0, "max": 0});
    }
    let n = s.len();
    // Nearest rank: the smallest value with at least 90% of the values at or below it.
    let rank = (1..=n).find(|&r| r * 10 >= 9 * n).unwrap();
    json!({"min": s[0], "median": s[(n - 1) / 2], "p90": s[rank - 1], "max": s[n - 1]})
}

/// Expected `values` of nccl-skew (without `wait_share`) and `wait_share` itself.
fn skew_ref(
    kernels: &[Kernel],
    ranks: &[i64],
    stream: Option<i64>,
    win: Win,
) -> (Value, Option<f64>) {
    let per_rank: Vec<Vec<&Kernel>> = ranks
        .iter()
        .map(|&d| {
            let mut v: Vec<&Kernel> = kernels
                .iter()
                .filter(|k| {
                    k.device == d
                        && k.nccl
                        && stream.is_none_or(|s| k.stream == s)
                        && win.selects(k)
                })
                .collect();
            v.sort_by_key(|k| (k.start, k.end, k.stream));
            v
        })
        .collect();
    let matched = per_rank.iter().map(Vec::len).min().unwrap_or(0);
    let (mut nccl, mut wait) = (0i64, 0i64);
    let mut rank_wait = vec![0i64; ranks.len()];
    let mut last = vec![0i64; ranks.len()];
    let (mut start_skews, mut end_skews) = (Vec::new(), Vec::new());
    for j in 0..matched {
        let mut min_dur = i64::MAX;
        for r in &per_rank {
            min_dur = min_dur.min(r[j].end - r[j].start);
        }
        let (mut smin, mut smax, mut emin, mut emax) = (i64::MAX, i64::MIN, i64::MAX, i64::MIN);
        let mut latest = 0;
        for (i, r) in per_rank.iter().enumerate() {
            let k = r[j];
            nccl += k.end - k.start;
            wait += k.end - k.start - min_dur;
            rank_wait[i] += k.end - k.start - min_dur;
            smin = smin.min(k.start);
            emin = emin.min(k.end);
            emax = emax.max(k.end);
            if k.start > smax {
                smax = k.start;
                latest = i;
            }
        }
        last[latest] += 1;
        start_skews.push(smax - smin);
        end_skews.push(emax - emin);
    }
    let by_rank = |v: &[i64]| -> BTreeMap<String, i64> {
        ranks.iter().zip(v).map(|(r, x)| (r.to_string(), *x)).collect()
    };
    let counts: Vec<i64> = per_rank.iter().map(|v| v.len() as i64).collect();
    let max_last = last.iter().copied().max().unwrap_or(0);
    // Every rank that was last that often, ascending (a tie lists several).
    let most_often_last: Vec<i64> = (0..ranks.len())
        .filter(|&i| max_last > 0 && last[i] == max_last)
        .map(|i| ranks[i])
        .collect();
    let (ss, es) = (stats(&start_skews), stats(&end_skews));
    let mut values = json!({
        "ranks": ranks.len(),
        "matched": matched,
        "instance_counts": by_rank(&counts),
        "unmatched": counts.iter().map(|c| c - matched as i64).sum::<i64>(),
        "nccl_ns": nccl,
        "wait_ns": wait,
        "transfer_ns": nccl - wait,
        "start_skew_ns": ss,
        "end_skew_ns": es,
        "start_skew_median_ns": ss["median"],
        "start_skew_max_ns": ss["max"],
        "end_skew_median_ns": es["median"],
        "end_skew_max_ns": es["max"],
        "rank_wait_ns": by_rank(&rank_wait),
        "last_arrivals": by_rank(&last),
        "most_often_last": most_often_last,
        "name_mismatches": 0,
    });
    // Comparing ranks needs two of them and one instance matched on both: otherwise every
    // comparison is null (not 0), and so is the share.
    if ranks.len() < 2 || matched == 0 {
        for f in [
            "wait_ns",
            "transfer_ns",
            "start_skew_ns",
            "end_skew_ns",
            "start_skew_median_ns",
            "start_skew_max_ns",
            "end_skew_median_ns",
            "end_skew_max_ns",
            "rank_wait_ns",
            "last_arrivals",
            "most_often_last",
            "name_mismatches",
        ] {
            values[f] = Value::Null;
        }
        return (values, None);
    }
    (values, (nccl > 0).then(|| wait as f64 / nccl as f64))
}

fn check_skew(trace: &Path, extra: &[&str], ranks: &[i64], stream: Option<i64>, win: Win) -> Value {
    let kernels = read_kernels(&open_ro(trace));
    let wargs = win.args();
    let mut args: Vec<&str> = vec!["query", "nccl-skew", s(trace)];
    args.extend(extra);
    args.extend(wargs.iter().map(String::as_str));
    args.push("--json");
    let v = run_json(&args);
    assert_contract(&v, "nccl-skew", trace, &sha256_cached(trace));
    let (expected, share) = skew_ref(&kernels, ranks, stream, win);
    assert_fields(&v["values"], &expected, &format!("{args:?}"));
    match share {
        Some(x) => {
            let got = v["values"]["wait_share"].as_f64().expect("wait_share is a number");
            assert!((got - x).abs() < 1e-12, "{args:?}: wait_share {got} vs {x}");
        }
        None => assert!(v["values"]["wait_share"].is_null(), "{args:?}: no NCCL time, no share"),
    }
    assert_eq!(v["scope"]["devices"], json!(ranks));
    assert_eq!(v["scope"]["streams"], stream.map_or(Value::Null, |s| json!([s])));
    assert_eq!(v["window"]["requested_ns"], win.requested());
    v
}

#[test]
fn nccl_skew_on_the_mfu_pair_matches_the_loops() {
    for f in [BEFORE, AFTER] {
        let trace = fixture(f);
        let v = check_skew(&trace, &[], &[0, 1], None, Win::Whole);
        // Documented in the traces' README: ncclDevKernel_SendRecv on streams 7 and 15.
        let n = if f == BEFORE { 33 } else { 31 };
        assert_eq!(v["values"]["matched"], n);
        assert_eq!(v["values"]["instance_counts"], json!({"0": n, "1": n}));
        assert!(int(&v["values"], "wait_ns") > 0);
    }
    check_skew(
        &fixture(AFTER),
        &["--devices", "0-1", "--stream", "15"],
        &[0, 1],
        Some(15),
        Win::Whole,
    );
}

#[test]
fn nccl_skew_stream_filter_is_adopted() {
    // Device 0's NCCL kernels run on stream 7, device 1's on stream 15: a stream filter leaves
    // one rank with nothing, so nothing is matched.
    let trace = fixture(BEFORE);
    let v = check_skew(&trace, &["--stream", "7"], &[0, 1], Some(7), Win::Whole);
    assert_eq!(v["values"]["matched"], 0);
    assert_eq!(v["values"]["instance_counts"], json!({"0": 33, "1": 0}));
}

#[test]
fn nccl_skew_with_a_window_clip_and_contain() {
    let trace = fixture(BEFORE);
    let (a, b) = WINDOW;
    for win in [Win::Clip(a, b), Win::Contain(a, b)] {
        check_skew(&trace, &[], &[0, 1], None, win);
    }
}

/// The keys of the notes of a piece of evidence that leave values null, in order.
fn null_notes(v: &Value) -> Vec<String> {
    v["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["null_fields"].as_array().is_some_and(|f| !f.is_empty()))
        .map(|n| n["key"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn nccl_skew_over_one_rank_is_null_with_its_reason() {
    let trace = fixture(BEFORE);
    let v = check_skew(&trace, &["--devices", "0"], &[0], None, Win::Whole);
    assert_eq!(null_notes(&v), ["note.one_rank"]);
    assert_eq!(v["values"]["ranks"], 1);
}

#[test]
fn nccl_skew_tells_a_window_without_nccl_from_a_trace_without_it() {
    // A window that ends before the first NCCL kernel starts selects compute kernels only.
    let trace = fixture(BEFORE);
    let kernels = read_kernels(&open_ro(&trace));
    let first = kernels.iter().map(|k| k.start).min().unwrap();
    let first_nccl = kernels.iter().filter(|k| k.nccl).map(|k| k.start).min().unwrap();
    let win = Win::Clip(first, first_nccl);
    assert!(
        kernels.iter().any(|k| win.selects(k)) && !kernels.iter().any(|k| k.nccl && win.selects(k))
    );
    let v = check_skew(&trace, &[], &[0, 1], None, win);
    assert_eq!(null_notes(&v), ["note.no_nccl"], "the trace has NCCL kernels, the window has none");

    // h100_2gpu_1s has none at all, with or without a window and on any device.
    let trace = fixture("nsys-ai/h100_2gpu_1s.sqlite");
    let kernels = read_kernels(&open_ro(&trace));
    assert!(kernels.iter().all(|k| !k.nccl));
    let v = check_skew(&trace, &[], &[0, 1], None, Win::Whole);
    assert_eq!(null_notes(&v), ["note.no_nccl_in_trace"]);
    let first = kernels.iter().map(|k| k.start).min().unwrap();
    let v =
        check_skew(&trace, &["--devices", "1"], &[1], None, Win::Clip(first, first + 1_000_000));
    assert_eq!(null_notes(&v), ["note.no_nccl_in_trace", "note.one_rank"]);
}

// ---------------------------------------------------------------------------------------------
// inspect: coverage and schema identity vs SQL
// ---------------------------------------------------------------------------------------------

fn has_table(conn: &Connection, t: &str) -> bool {
    conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
        [t],
        |r| r.get::<_, i64>(0),
    )
    .unwrap()
        > 0
}

fn has_column(conn: &Connection, t: &str, c: &str) -> bool {
    let mut stmt = conn.prepare(&format!("PRAGMA table_info({t})")).unwrap();
    let cols: Vec<String> =
        stmt.query_map([], |r| r.get(1)).unwrap().collect::<Result<_, _>>().unwrap();
    cols.iter().any(|x| x == c)
}

/// The export metadata table and its schema and nsys versions, if any.
fn meta(conn: &Connection) -> (Value, Value, Value) {
    for t in ["META_DATA_EXPORT", "EXPORT_META_DATA"] {
        if has_table(conn, t) {
            let get = |key: &str| -> Value {
                conn.query_row(&format!("SELECT value FROM {t} WHERE name = ?1"), [key], |r| {
                    r.get::<_, String>(0)
                })
                .map_or(Value::Null, Value::String)
            };
            return (json!(t), get("EXPORT_SCHEMA_VERSION"), get("EXPORT_PRODUCT_VERSION"));
        }
    }
    (Value::Null, Value::Null, Value::Null)
}

/// Runs `inspect --json` (with `--expect-devices LIST` when given) and checks it against SQL.
fn check_inspect(trace: &Path, expect: Option<(&str, Vec<i64>)>) -> Value {
    let conn = open_ro(trace);
    let mut args: Vec<&str> = vec!["inspect", s(trace), "--json"];
    if let Some((list, _)) = &expect {
        args.extend(["--expect-devices", list]);
    }
    let v = run_json(&args);
    assert_contract(&v, "coverage", trace, &sha256_cached(trace));

    let (table, schema_version, nsys_version) = meta(&conn);
    assert_eq!(v["trace"]["schema_version"], schema_version, "{args:?}");
    assert_eq!(v["trace"]["nsys_version"], nsys_version, "{args:?}");
    assert_eq!(v["schema"]["metadata_table"], table, "{args:?}");
    assert_eq!(v["schema"]["kernel_table"], "CUPTI_ACTIVITY_KIND_KERNEL");

    let present = present_devices(&conn);
    let listed: Option<Vec<i64>> = has_table(&conn, "TARGET_INFO_GPU").then(|| {
        let mut stmt = conn.prepare("SELECT DISTINCT id FROM TARGET_INFO_GPU ORDER BY 1").unwrap();
        stmt.query_map([], |r| r.get(0)).unwrap().collect::<Result<_, _>>().unwrap()
    });
    let expected: Vec<i64> = match (&expect, &listed) {
        (Some((_, e)), _) => e.clone(),
        (None, Some(l)) if !l.is_empty() => l.clone(),
        _ => present.clone(),
    };
    let missing: Vec<i64> = match (&expect, &listed) {
        (Some((_, e)), _) => e.iter().copied().filter(|d| !present.contains(d)).collect(),
        (None, Some(l)) => l.iter().copied().filter(|d| !present.contains(d)).collect(),
        (None, None) => vec![],
    };
    assert_eq!(v["scope"]["present_devices"], json!(present), "{args:?}");
    assert_eq!(v["scope"]["missing_devices"], json!(missing), "{args:?}");

    let (kernels, first, last, streams, total): (i64, i64, i64, i64, i64) = conn
        .query_row(
            &format!(
                "SELECT count(*), min(k.start), max(k.\"end\"), count(DISTINCT k.deviceId || ':' || k.streamId),
                        (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL)
                 FROM CUPTI_ACTIVITY_KIND_KERNEL AS k WHERE {VALID}"
            ),
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )
        .unwrap();
    assert_fields(
        &v["values"],
        &json!({
            "devices_present": present.len(),
            "devices_expected": expected.len(),
            "devices_missing": missing.len(),
            "expected_devices": expected,
            "kernels": kernels,
            "streams": streams,
            "first_start_ns": first,
            "last_end_ns": last,
            "skipped_invalid": total - kernels,
        }),
        &format!("{args:?} values"),
    );

    // Per device: kernel count, first start, last end, kernels per stream, pids.
    let mut stmt = conn
        .prepare(&format!(
            "SELECT k.deviceId, count(*), min(k.start), max(k.\"end\") FROM CUPTI_ACTIVITY_KIND_KERNEL AS k
             WHERE {VALID} GROUP BY 1 ORDER BY 1"
        ))
        .unwrap();
    let want: Vec<(i64, i64, i64, i64)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), want.len(), "{args:?}: one row per device");
    let has_pid = has_column(&conn, "CUPTI_ACTIVITY_KIND_KERNEL", "globalPid");
    for (row, (d, n, first, last)) in rows.iter().zip(want) {
        let mut per_stream: BTreeMap<String, i64> = BTreeMap::new();
        let mut stmt = conn
            .prepare(&format!(
                "SELECT k.streamId, count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL AS k WHERE {VALID} AND k.deviceId = ?1 GROUP BY 1"
            ))
            .unwrap();
        let mut q = stmt.query([d]).unwrap();
        while let Some(r) = q.next().unwrap() {
            per_stream.insert(r.get::<_, i64>(0).unwrap().to_string(), r.get(1).unwrap());
        }
        let pids: Vec<i64> = if has_pid {
            let mut stmt = conn
                .prepare(&format!(
                    "SELECT DISTINCT (k.globalPid >> 24) & 16777215 FROM CUPTI_ACTIVITY_KIND_KERNEL AS k
                     WHERE {VALID} AND k.deviceId = ?1 AND k.globalPid IS NOT NULL ORDER BY 1"
                ))
                .unwrap();
            stmt.query_map([d], |r| r.get(0)).unwrap().collect::<Result<_, _>>().unwrap()
        } else {
            vec![]
        };
        assert_fields(
            row,
            &json!({
                "device": d, "kernels": n, "first_start_ns": first, "last_end_ns": last,
                "streams": per_stream, "pids": pids,
            }),
            &format!("{args:?} device {d}"),
        );
    }
    v
}

#[test]
fn inspect_matches_sql_on_the_committed_fixtures() {
    // mfu_2gpu_before: torchrun, 2 ranks (pid 144/145 on device 0/1), 4 GPUs expected.
    let v = check_inspect(&fixture(BEFORE), Some(("0-3", vec![0, 1, 2, 3])));
    assert_eq!(v["scope"]["missing_devices"], json!([2, 3]));
    assert_eq!(v["trace"]["schema_version"], "3.25.0");
    assert_eq!(v["rows"][1]["pids"], json!([145]));
    check_inspect(&fixture(AFTER), None);

    // h100_2gpu_1s: 1,721 kernels per GPU, pids 111/112 (the traces' README).
    let v = check_inspect(&fixture("nsys-ai/h100_2gpu_1s.sqlite"), Some(("0,1", vec![0, 1])));
    assert_eq!(v["scope"]["missing_devices"], json!([]));
    assert_eq!(v["rows"][0]["kernels"], 1721);
    assert_eq!(v["rows"][1]["kernels"], 1721);
    assert_eq!(v["rows"][0]["pids"], json!([111]));
    assert_eq!(v["rows"][1]["pids"], json!([112]));

    // mock: 2 kernels on one GPU, nsys 2026.1.1, schema 3.24.14, TARGET_INFO_GPU present.
    let v = check_inspect(&fixture("nsys-ai/mock.sqlite"), Some(("0-1", vec![0, 1])));
    assert_eq!(v["scope"]["missing_devices"], json!([1]));
    assert_eq!(v["values"]["kernels"], 2);
    assert_eq!(v["trace"]["schema_version"], "3.24.14");
    check_inspect(&fixture("nsys-ai/mock.sqlite"), None);

    // mordred 2021: no export metadata at all, so both versions are null.
    for expect in [None, Some(("0", vec![0]))] {
        let v = check_inspect(&fixture(MORDRED), expect);
        assert!(v["trace"]["schema_version"].is_null());
        assert!(v["trace"]["nsys_version"].is_null());
        assert!(v["schema"]["metadata_table"].is_null());
        assert_eq!(v["values"]["kernels"], 12);
    }
}

#[test]
fn inspect_on_shared_cuckoo_2023_reads_export_meta_data() {
    let Some(shared) = shared_traces() else {
        return skip_no_shared("inspect_on_shared_cuckoo_2023");
    };
    let v = check_inspect(
        &shared.join("legacy-schema/cuckoo_hash_report1_2023.sqlite"),
        Some(("0", vec![0])),
    );
    assert_eq!(v["schema"]["metadata_table"], "EXPORT_META_DATA");
    assert_eq!(v["trace"]["schema_version"], "3.1.2");
    assert!(v["trace"]["nsys_version"].as_str().unwrap().starts_with("2023.1.2"));
    assert_eq!(v["values"]["kernels"], 61);
}

// ---------------------------------------------------------------------------------------------
// Read-only guarantee
// ---------------------------------------------------------------------------------------------

/// Runs each command on copies in a fresh folder (also the working directory) and checks
/// after each that the folder's listing, sizes and modification times are unchanged, and at
/// the end that every file's bytes still hash to the original's sha256.
fn assert_read_only(copies: &[(&str, &str)], commands: &[Vec<String>]) {
    let dir = tempfile::tempdir().unwrap();
    for (name, src) in copies {
        std::fs::copy(fixture(src), dir.path().join(name)).unwrap();
    }
    let snap = snapshot(dir.path());
    for (name, src) in copies {
        assert_eq!(snap[*name].sha256, sha256_cached(&fixture(src)), "the copy is byte-identical");
    }
    let meta = snapshot_with(dir.path(), false);
    for c in commands {
        let argv: Vec<&str> = c.iter().map(String::as_str).collect();
        let out = util::run_in(Some(dir.path()), &argv);
        assert!(out.status.success(), "{argv:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(snapshot_with(dir.path(), false), meta, "{argv:?} changed the folder");
    }
    assert_eq!(snapshot(dir.path()), snap, "the traces' bytes are unchanged");
}

/// `verdict ARGS` with `T` replaced by `trace` (a file name in the working directory).
fn cmd(trace: &str, args: &[&str]) -> Vec<String> {
    args.iter().map(|x| if *x == "T" { trace.to_string() } else { x.to_string() }).collect()
}

#[test]
fn every_command_leaves_the_trace_and_its_folder_unchanged() {
    let (a, b) = WINDOW;
    let window = format!("{}:{}", seconds(a), seconds(b));
    let mut commands = vec![
        cmd("t.sqlite", &["query", "overlap", "T", "--all-devices", "--json"]),
        cmd("t.sqlite", &["query", "overlap", "T", "--device", "1"]),
        cmd("t.sqlite", &["query", "kernels", "T", "--json"]),
        cmd(
            "t.sqlite",
            &[
                "query",
                "kernels",
                "T",
                "--regex",
                "^(nccl|flash)",
                "--names",
                "demangled",
                "--limit",
                "3",
            ],
        ),
        cmd("t.sqlite", &["query", "nccl-skew", "T", "--json"]),
        cmd("t.sqlite", &["query", "nccl-skew", "T", "--stream", "7"]),
        cmd("t.sqlite", &["inspect", "T", "--json", "--expect-devices", "0-3"]),
        cmd("t.sqlite", &["inspect", "T"]),
    ];
    for (q, sem) in
        [("overlap", "clip"), ("kernels", "contain"), ("nccl-skew", "clip"), ("overlap", "contain")]
    {
        let mut c =
            cmd("t.sqlite", &["query", q, "T", "--window", &window, "--semantics", sem, "--json"]);
        if q == "overlap" {
            c.push("--device".into());
            c.push("0".into());
        }
        commands.push(c);
    }
    assert_read_only(&[("t.sqlite", BEFORE)], &commands);
}

#[test]
fn every_command_leaves_a_2021_trace_and_its_folder_unchanged() {
    let commands = [
        cmd("old.sqlite", &["query", "overlap", "T", "--device", "0", "--json"]),
        cmd("old.sqlite", &["query", "kernels", "T", "--names", "demangled"]),
        cmd("old.sqlite", &["query", "nccl-skew", "T", "--json"]),
        cmd("old.sqlite", &["inspect", "T", "--expect-devices", "0-1"]),
    ];
    assert_read_only(&[("old.sqlite", MORDRED), ("mock.sqlite", "nsys-ai/mock.sqlite")], &commands);
    // The JSON of a copy names the copy and hashes the same bytes as the original.
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(fixture(MORDRED), dir.path().join("old.sqlite")).unwrap();
    let v = run_json_in(
        Some(dir.path()),
        &["query", "overlap", "old.sqlite", "--device", "0", "--json"],
    );
    assert_eq!(v["trace"]["path"], "old.sqlite");
    assert_eq!(v["trace"]["sha256"], sha256_cached(&fixture(MORDRED)));
}

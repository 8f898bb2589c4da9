//! Columnar traces: `verdict extract` writes a trace's tables as Parquet, and every command
//! reads the folder (or an nsys `parquetdir` export) with the evidence it gets from the trace.
//!
//! The reference is the SQLite (or Kineto) path, computed by the code paths every other test
//! checks against SQL and HTA: an extract must give the same evidence, field for field, except
//! the fields that name the source (its path, the extract's own reference, a set's digest
//! over its paths). Row counts are checked against SQL over the source.

#![cfg(feature = "columnar")]

use crate::util;

use std::path::{Path, PathBuf};

use serde_json::Value;
use util::{fixture, manifest_dir, run, run_json, shared_traces, skip_no_shared};

/// Extracts `traces` (files, or one quoted glob) into `out`; asserts success.
fn extract(traces: &[&str], out: &Path) {
    let mut args = vec!["extract"];
    args.extend_from_slice(traces);
    let out_s = out.display().to_string();
    args.extend(["--out", &out_s]);
    let o = run(&args);
    assert!(
        o.status.success(),
        "extract {traces:?} failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The evidence with the fields that name the source taken out: every `columnar` reference,
/// and a set's digest (over its files' paths); each path of the extract replaced by the
/// source's, so commands and file lists compare as text.
fn normalized(v: &Value, paths: &[(String, String)]) -> Value {
    let mut text = serde_json::to_string(v).unwrap();
    // Longest first: a set's folder is a prefix of its members' folders.
    let mut paths = paths.to_vec();
    paths.sort_by_key(|(e, _)| std::cmp::Reverse(e.len()));
    // An extract's numbers carry its manifest's digest; the source's is what the manifest
    // records. Each is read back from the manifest here, so the two compare as the same text.
    for (extracted, _) in &paths {
        if let Ok(bytes) = std::fs::read(Path::new(extracted).join("verdict-extract.json")) {
            let m: Value = serde_json::from_slice(&bytes).unwrap();
            text = text.replace(&util::sha256_hex(&bytes), m["source"]["sha256"].as_str().unwrap());
        }
    }
    for (extracted, source) in &paths {
        text = text.replace(extracted.as_str(), source);
    }
    let mut v: Value = serde_json::from_str(&text).unwrap();
    strip(&mut v);
    v
}

fn strip(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.remove("columnar");
            if m.contains_key("set") {
                m.remove("sha256");
            }
            m.values_mut().for_each(strip);
        }
        Value::Array(a) => a.iter_mut().for_each(strip),
        _ => {}
    }
}

/// The queries compared on every trace.
const QUERIES: &[&[&str]] = &[
    &["overlap", "--all-devices"],
    &["kernels", "--all-devices"],
    &["nvtx", "--all-devices"],
    &["copies", "--all-devices"],
    &["nccl-skew"],
    &["nccl-calls"],
];

/// Runs each query on `source` and on `extracted` and asserts the same evidence (or the same
/// refusal, for a query the trace cannot answer).
fn assert_same_queries(source: &str, extracted: &str, paths: &[(String, String)]) {
    assert_same_queries_but(source, extracted, paths, false);
}

/// [`assert_same_queries`]; with `own_digest`, the folder's digest is its own (an nsys
/// Parquet export has no source file to carry the digest of).
fn assert_same_queries_but(
    source: &str,
    extracted: &str,
    paths: &[(String, String)],
    own_digest: bool,
) {
    for q in QUERIES {
        let mut a = vec!["query"];
        a.extend_from_slice(q);
        let mut b = a.clone();
        a.extend([source, "--json"]);
        b.extend([extracted, "--json"]);
        let (oa, ob) = (run(&a), run(&b));
        assert_eq!(oa.status.code(), ob.status.code(), "{q:?} on {source} vs {extracted}");
        if !oa.status.success() {
            let ea = String::from_utf8_lossy(&oa.stderr).into_owned();
            let eb = paths
                .iter()
                .fold(String::from_utf8_lossy(&ob.stderr).into_owned(), |t, (e, src)| {
                    t.replace(e, src)
                });
            assert_eq!(ea.lines().next(), eb.lines().next(), "{q:?}: the refusals differ");
            continue;
        }
        let va: Value = serde_json::from_slice(&oa.stdout).unwrap();
        let vb: Value = serde_json::from_slice(&ob.stdout).unwrap();
        let (mut na, mut nb) = (normalized(&va, &[]), normalized(&vb, paths));
        if own_digest {
            na["trace"]["sha256"] = Value::Null;
            nb["trace"]["sha256"] = Value::Null;
        }
        let d = first_difference(&na, &nb, "");
        assert_eq!(d, None, "{q:?}: {source} and its extract {extracted} differ");
    }
}

fn s(p: &Path) -> String {
    util::s(p).to_string()
}

#[test]
fn every_fixture_extracted_gives_the_evidence_of_its_source() {
    let dir = tempfile::tempdir().unwrap();
    let files = [
        "day26/megatron.sqlite",
        "nsys-ai/mfu_2gpu_before.sqlite",
        "nsys-ai/h100_2gpu_1s.sqlite",
        "nsys-ai/mock.sqlite",
        "legacy/mordred_report1_2021.sqlite",
        "ab/tp4.sqlite",
        "kineto/nccl_parser_config/nccl_data.json.gz",
    ];
    for (i, f) in files.iter().enumerate() {
        let src = fixture(f);
        let out = dir.path().join(format!("x{i}"));
        extract(&[&s(&src)], &out);
        assert_same_queries(&s(&src), &s(&out), &[(s(&out), s(&src))]);
    }
    // A GPU window of a PyTorch profiler annotation, from its recorded GPU projections:
    // the projections and their tie to the annotation survive the extract.
    let src = fixture("kineto/nccl_parser_config/nccl_data.json.gz");
    let out = dir.path().join(format!("x{}", files.len() - 1));
    let q = |t: &Path| {
        run_json(&[
            "query",
            "overlap",
            &s(t),
            "--device",
            "0",
            "--nvtx-window",
            "DistributedDataParallel.forward",
            "--nvtx-index",
            "1",
            "--nvtx-on",
            "gpu",
            "--json",
        ])
    };
    let (a, b) = (q(&src), q(&out));
    assert!(
        serde_json::to_string(&a).unwrap().contains("window_nvtx_gpu_recorded"),
        "the window comes from the recorded projections"
    );
    let paths = [(s(&out), s(&src))];
    assert_eq!(first_difference(&normalized(&a, &[]), &normalized(&b, &paths), ""), None);
}

/// Rows per table as SQL counts them in the source, against the manifest and `inspect`'s
/// totals over the extract.
#[test]
fn the_manifest_counts_the_rows_sql_counts_and_names_the_source() {
    let dir = tempfile::tempdir().unwrap();
    let src = fixture("nsys-ai/mfu_2gpu_before.sqlite");
    let out = dir.path().join("x");
    extract(&[&s(&src)], &out);
    let m: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("verdict-extract.json")).unwrap())
            .unwrap();
    let conn = util::open_ro(&src);
    let tables = m["tables"].as_array().unwrap();
    let names: Vec<&str> = tables.iter().map(|t| t["table"].as_str().unwrap()).collect();
    // The tables the analyses read, those the export has, and no other.
    assert_eq!(
        names,
        [
            "CUPTI_ACTIVITY_KIND_KERNEL",
            "CUPTI_ACTIVITY_KIND_MEMCPY",
            "CUPTI_ACTIVITY_KIND_MEMSET",
            "CUPTI_ACTIVITY_KIND_RUNTIME",
            "ENUM_CUDA_MEMCPY_OPER",
            "META_DATA_CAPTURE",
            "META_DATA_EXPORT",
            "NVTX_EVENTS",
            "NVTX_PAYLOAD_SCHEMAS",
            "NVTX_PAYLOAD_SCHEMA_ENTRIES",
            "PROCESSES",
            "StringIds",
            "TARGET_INFO_SESSION_START_TIME",
            "TARGET_INFO_SYSTEM_ENV",
        ]
    );
    for t in tables {
        let name = t["table"].as_str().unwrap();
        let n: i64 =
            conn.query_row(&format!("SELECT count(*) FROM \"{name}\""), [], |r| r.get(0)).unwrap();
        assert_eq!(t["rows"].as_i64().unwrap(), n, "{name}");
        let file = out.join(t["file"].as_str().unwrap());
        assert_eq!(t["sha256"].as_str().unwrap(), util::sha256_hex(&std::fs::read(file).unwrap()));
    }
    // The kernel table keeps the columns the scans read, not the launch configuration.
    let kernel = &tables[0]["columns"];
    assert_eq!(
        kernel,
        &serde_json::json!([
            "start",
            "end",
            "deviceId",
            "contextId",
            "streamId",
            "correlationId",
            "globalPid",
            "demangledName",
            "shortName"
        ])
    );
    assert_eq!(
        m["source"]["sha256"].as_str().unwrap(),
        util::sha256_hex(&std::fs::read(&src).unwrap())
    );
    assert_eq!(m["source"]["bytes"].as_u64().unwrap(), std::fs::metadata(&src).unwrap().len());
    assert_eq!(m["kind"], "nsys");
    // The evidence carries the extract's digest (its manifest's, which names every table's),
    // names the extract and the source as the manifest records it.
    let ev = run_json(&["query", "overlap", &s(&out), "--all-devices", "--json"]);
    assert_eq!(
        ev["trace"]["sha256"].as_str().unwrap(),
        util::sha256_hex(&std::fs::read(out.join("verdict-extract.json")).unwrap())
    );
    assert_ne!(ev["trace"]["sha256"], m["source"]["sha256"]);
    assert_eq!(ev["trace"]["columnar"]["layout"], "verdict-extract");
    assert_eq!(ev["trace"]["columnar"]["extracted_from"], s(&src));
    assert_eq!(
        ev["trace"]["columnar"]["manifest_sha256"].as_str().unwrap(),
        util::sha256_hex(&std::fs::read(out.join("verdict-extract.json")).unwrap())
    );
}

/// The files of a folder, for asserting that a failure left nothing behind.
fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    v.sort();
    v
}

#[test]
fn a_changed_parquet_file_or_manifest_is_refused_with_both_digests() {
    let dir = tempfile::tempdir().unwrap();
    let src = fixture("nsys-ai/mock.sqlite");
    let out = dir.path().join("x");
    extract(&[&s(&src)], &out);
    let file = out.join("StringIds.parquet");
    let before = util::sha256_hex(&std::fs::read(&file).unwrap());
    let mut bytes = std::fs::read(&file).unwrap();
    bytes.push(0);
    std::fs::write(&file, &bytes).unwrap();
    let after = util::sha256_hex(&bytes);
    let o = run(&["query", "kernels", &s(&out), "--all-devices"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("StringIds.parquet") && err.contains(&after) && err.contains(&before),
        "{err}"
    );
    assert!(err.contains("hint: extract the trace again"), "{err}");
    assert!(!err.contains("panicked"));

    // A manifest of another version.
    let out2 = dir.path().join("y");
    extract(&[&s(&src)], &out2);
    let mpath = out2.join("verdict-extract.json");
    let text =
        std::fs::read_to_string(&mpath).unwrap().replace("\"version\": 1", "\"version\": 99");
    std::fs::write(&mpath, text).unwrap();
    let o = run(&["inspect", &s(&out2)]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("version 99") && err.contains("verdict-extract.json"), "{err}");
}

#[test]
fn extraction_never_writes_over_and_leaves_nothing_when_it_fails() {
    let dir = tempfile::tempdir().unwrap();
    let src = fixture("nsys-ai/mock.sqlite");
    let out = dir.path().join("x");
    std::fs::create_dir(&out).unwrap();
    let o = run(&["extract", &s(&src), "--out", &s(&out)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("exists already"));
    assert!(entries(&out).is_empty());

    // A set with one unreadable file: no folder, no temporary one left beside it.
    let bad = dir.path().join("bad.sqlite");
    std::fs::write(&bad, b"not a trace at all, but long enough to have a header....").unwrap();
    let set = dir.path().join("set");
    let o = run(&["extract", &s(&src), &s(&bad), "--out", &s(&set)]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("bad.sqlite"), "{err}");
    assert_eq!(entries(dir.path()), [bad, out]);

    // An extract extracted again: refused, nothing written.
    let first = dir.path().join("first");
    extract(&[&s(&src)], &first);
    let again = dir.path().join("again");
    let o = run(&["extract", &s(&first), "--out", &s(&again)]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("is a folder of Parquet tables already"), "{err}");
    assert!(err.contains("hint: every command reads it as it is"), "{err}");
    assert!(!again.exists());
    std::fs::remove_dir_all(&first).unwrap();

    // A folder that is neither an extract nor an nsys Parquet export.
    let o = run(&["inspect", &s(dir.path())]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("is a folder, not a trace file or a folder of Parquet tables"), "{err}");
    assert!(err.contains("verdict extract"), "{err}");
}

/// A folder in the layout of `nsys export --type parquetdir`, written by pyarrow from the
/// SQLite export (fixtures/parquetdir/make.py), with every table and column and narrower
/// integer types: the same evidence as the SQLite file.
#[test]
fn an_nsys_parquetdir_export_gives_the_evidence_of_the_sqlite_export() {
    let src = fixture("nsys-ai/mfu_2gpu_before.sqlite");
    let pq = manifest_dir().join("fixtures/parquetdir/mfu_2gpu_before");
    assert_same_queries_but(&s(&src), &s(&pq), &[(s(&pq), s(&src))], true);
    let v = run_json(&["inspect", &s(&pq), "--json"]);
    // Its digest: sha256 over `NAME SHA256\n` of the files read, in name order.
    let lines: String = v["columnar"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let name = f[0].as_str().unwrap();
            format!("{name} {}\n", util::sha256_file(&pq.join(name)))
        })
        .collect();
    assert_eq!(v["columnar"]["digest"].as_str().unwrap(), util::sha256_hex(lines.as_bytes()));
    assert_eq!(v["columnar"]["layout"], "nsys-parquetdir");
    // The tables no analysis reads are listed, not loaded: every file of the folder is
    // either read or listed as skipped.
    let read = v["columnar"]["files"].as_array().unwrap().len();
    let skipped = v["columnar"]["skipped"].as_array().unwrap().len();
    let on_disk =
        entries(&pq).iter().filter(|p| p.extension().is_some_and(|e| e == "parquet")).count();
    assert_eq!(read + skipped, on_disk);
    assert_eq!(read, 14);
}

/// Every real trace set, extracted per file and read back as a set by a glob over the
/// folders: the same nccl-skew, overlap and nccl-calls evidence.
#[test]
fn real_trace_sets_extracted_per_rank_give_the_sets_evidence() {
    let Some(shared) = shared_traces() else {
        return skip_no_shared("real_trace_sets_extracted_per_rank_give_the_sets_evidence");
    };
    let dir = tempfile::tempdir().unwrap();
    for (i, set) in [
        "results_Ring_2nodes_6GPUs_1010",
        "results_Tree_3nodes_9GPUs_1010",
        "results_Tree_Simple_9GPUs_3nodes_allreduce_2MB_allreduce_2MB",
    ]
    .iter()
    .enumerate()
    {
        let folder = shared.join("dsl-fs24").join(set);
        let glob = format!("{}/*.sqlite", folder.display());
        let out = dir.path().join(format!("s{i}"));
        extract(&[&glob], &out);
        let mut paths: Vec<(String, String)> = Vec::new();
        for f in std::fs::read_dir(&folder).unwrap() {
            let f = f.unwrap().path();
            if f.extension().is_some_and(|e| e == "sqlite") {
                let stem = f.file_stem().unwrap().to_string_lossy().into_owned();
                paths.push((s(&out.join(stem)), s(&f)));
            }
        }
        paths.push((s(&out), folder.display().to_string()));
        // The set's name is its folder: `DIR/ (N files)` on both sides.
        assert_same_queries(&glob, &format!("{}/*", out.display()), &paths);
    }
}

/// The example claims files, their traces replaced by extracts: the same ledger (verdicts,
/// gates, evidence) but for the fields that name the source.
#[test]
fn check_over_extracts_gives_the_ledger_of_the_traces() {
    let dir = tempfile::tempdir().unwrap();
    let claims = manifest_dir().join("claims");
    for (file, traces) in [
        ("day26-profile-blind.yaml", vec!["../fixtures/day26/megatron.sqlite"]),
        (
            "kineto-ddp-overlap.yaml",
            vec!["../fixtures/kineto/nccl_parser_config/nccl_data.json.gz"],
        ),
        (
            "mfu-2gpu-ab.yaml",
            vec![
                "../fixtures/nsys-ai/mfu_2gpu_before.sqlite",
                "../fixtures/nsys-ai/mfu_2gpu_after.sqlite",
            ],
        ),
    ] {
        let mut text = std::fs::read_to_string(claims.join(file)).unwrap();
        let mut paths = Vec::new();
        for (i, t) in traces.iter().enumerate() {
            let out = dir.path().join(format!("{file}-{i}"));
            extract(&[&s(&claims.join(t))], &out);
            text = text.replace(&format!("path: {t}\n"), &format!("path: {}\n", out.display()));
            // Commands name a trace relative to the current folder; the ledger's trace
            // entries as the claims file gives it.
            paths.push((s(&out), s(&manifest_dir().join(t.trim_start_matches("../")))));
        }
        let copy = claims.join(format!(".extract-test-{file}"));
        std::fs::write(&copy, &text).unwrap();
        let a = run_json(&["check", &s(&claims.join(file)), "--json"]);
        let b = run_json(&["check", &s(&copy), "--json"]);
        std::fs::remove_file(&copy).unwrap();
        // Every trace of the copy was read from its extract.
        let raw = serde_json::to_string(&b).unwrap();
        assert!(raw.contains("\"extracted_from\""), "{file}");
        for (extracted, _) in &paths {
            assert!(raw.contains(&format!("\"path\":\"{extracted}\"")), "{file}: {extracted}");
        }
        let mut a = normalized(&a, &[]);
        let mut b = normalized(&b, &paths);
        for v in [&mut a, &mut b] {
            // The claims file's own path, and its trace entries as written in it.
            v["claims"]["file"] = Value::Null;
            ledger_traces_as_written(v);
        }
        assert_eq!(first_difference(&a, &b, ""), None, "{file}");
    }
}

/// Blanks the trace paths as the claims file writes them (relative to it in the original, the
/// extract's absolute path in the copy).
fn ledger_traces_as_written(v: &mut Value) {
    if let Some(traces) = v["claims"].get_mut("traces").and_then(Value::as_array_mut) {
        for t in traces {
            t["path"] = Value::Null;
        }
    }
    if let Some(traces) = v.get_mut("traces").and_then(Value::as_array_mut) {
        for t in traces {
            t["written"] = Value::Null;
        }
    }
}

/// Where two JSON values first differ: the path and both sides, or None when equal.
fn first_difference(a: &Value, b: &Value, at: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys()) {
                let (p, q) = (x.get(k).unwrap_or(&Value::Null), y.get(k).unwrap_or(&Value::Null));
                if let Some(d) = first_difference(p, q, &format!("{at}.{k}")) {
                    return Some(d);
                }
            }
            None
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (p, q))| first_difference(p, q, &format!("{at}[{i}]"))),
        _ if a == b => None,
        _ => Some(format!("{at}: {a} vs {b}")),
    }
}

/// A set's folder gets an index of its members (a dot file, which `DIR/*` does not match);
/// extracts made one job each are indexed by `--merge` into the same index.
#[test]
fn a_set_is_indexed_and_per_file_extracts_merge_into_the_same_index() {
    let dir = tempfile::tempdir().unwrap();
    let a = fixture("nsys-ai/mfu_2gpu_before.sqlite");
    let b = fixture("nsys-ai/mfu_2gpu_after.sqlite");
    let set = dir.path().join("set");
    extract(&[&s(&a), &s(&b)], &set);
    let text = std::fs::read_to_string(set.join(".verdict-set.json")).unwrap();
    let index: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(index["format"], "verdict-extract-set");
    let members = index["members"].as_array().unwrap();
    // In folder order: `mfu_2gpu_after` before `mfu_2gpu_before`.
    for (m, (src, folder)) in members.iter().zip([(&b, "mfu_2gpu_after"), (&a, "mfu_2gpu_before")])
    {
        assert_eq!(m["folder"], folder);
        assert_eq!(m["source"]["sha256"], util::sha256_file(src));
        assert_eq!(m["source"]["bytes"], std::fs::metadata(src).unwrap().len());
        let manifest = set.join(folder).join("verdict-extract.json");
        assert_eq!(m["manifest_sha256"], util::sha256_file(&manifest));
    }
    assert_eq!(members.len(), 2);
    // The glob over the folders names the two members, not the index.
    let v =
        run_json(&["query", "overlap", &format!("{}/*", set.display()), "--all-devices", "--json"]);
    assert_eq!(v["trace"]["set"]["files"].as_array().unwrap().len(), 2);

    // The same two traces, one `extract` each, then indexed: the same members.
    let jobs = dir.path().join("jobs");
    std::fs::create_dir(&jobs).unwrap();
    extract(&[&s(&b)], &jobs.join("mfu_2gpu_after"));
    extract(&[&s(&a)], &jobs.join("mfu_2gpu_before"));
    let o = run(&["extract", "--merge", &s(&jobs)]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let merged: Value =
        serde_json::from_str(&std::fs::read_to_string(jobs.join(".verdict-set.json")).unwrap())
            .unwrap();
    assert_eq!(merged["members"], index["members"]);

    // A folder that is not an extract, and two extracts of one trace: refused, the index kept.
    let before = std::fs::read(jobs.join(".verdict-set.json")).unwrap();
    std::fs::create_dir(jobs.join("stray")).unwrap();
    let o = run(&["extract", "--merge", &s(&jobs)]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("stray") && err.contains("hint:"), "{err}");
    std::fs::remove_dir(jobs.join("stray")).unwrap();
    extract(&[&s(&a)], &jobs.join("again"));
    let o = run(&["extract", "--merge", &s(&jobs)]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("extracts of the same bytes"), "{err}");
    assert_eq!(std::fs::read(jobs.join(".verdict-set.json")).unwrap(), before);
}

/// The tables of the database an open trace reads from, by name.
fn db_tables(trace: &verdict::trace::Trace) -> Vec<String> {
    let mut stmt =
        trace.conn().prepare("SELECT name FROM sqlite_master WHERE type = 'table'").unwrap();
    stmt.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
}

/// An extract's large tables are read only by the scans that need them: the kernel and launch
/// scans read their Parquet columns straight (their tables never enter the trace's database),
/// a scan through SQL loads its own table and no other, and the folder is never written.
/// Each read equals the same read of the SQLite source, and the rows equal SQL's count there.
#[test]
fn a_scan_reads_only_its_tables_of_an_extract_and_never_writes_it() {
    use verdict::trace::nvtx::{Launches, NvtxRanges};
    use verdict::trace::{KernelFilter, Kernels, NameStyle, Trace};
    const KERNEL: &str = "CUPTI_ACTIVITY_KIND_KERNEL";
    const RUNTIME: &str = "CUPTI_ACTIVITY_KIND_RUNTIME";
    const LARGE: [&str; 5] = [
        KERNEL,
        RUNTIME,
        "NVTX_EVENTS",
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        "CUPTI_ACTIVITY_KIND_MEMSET",
    ];
    let dir = tempfile::tempdir().unwrap();
    let src = fixture("nsys-ai/mfu_2gpu_before.sqlite");
    let out = dir.path().join("x");
    extract(&[&s(&src)], &out);
    let before = util::snapshot(&out);
    let sql = util::open_ro(&src);
    let count = |q: &str| -> i64 { sql.query_row(q, [], |r| r.get(0)).unwrap() };

    let (a, b) = (Trace::open(&src).unwrap(), Trace::open(&out).unwrap());
    let loaded = |t: &Trace| -> Vec<String> {
        db_tables(t).into_iter().filter(|n| LARGE.contains(&n.as_str())).collect()
    };
    // Opened: the schema knows every table, the database holds none of the large ones.
    assert!(LARGE.iter().all(|t| b.schema().has_table(t)));
    assert_eq!(loaded(&b), Vec::<String>::new());

    let filter = KernelFilter::default();
    let ka = Kernels::load_with_launch_keys(&a, &filter, &mut |_| {}).unwrap();
    let kb = Kernels::load_with_launch_keys(&b, &filter, &mut |_| {}).unwrap();
    let valid = count(&format!(
        "SELECT count(*) FROM {KERNEL} WHERE NOT (start = 0 AND \"end\" = 0) AND \"end\" >= start"
    ));
    assert_eq!(kb.len() as i64, valid);
    assert_eq!(
        (&ka.start, &ka.end, &ka.device, &ka.stream),
        (&kb.start, &kb.end, &kb.device, &kb.stream)
    );
    for i in 0..ka.len() {
        for style in [NameStyle::Short, NameStyle::Demangled] {
            assert_eq!(ka.name(i, style), kb.name(i, style), "row {i}");
        }
        assert_eq!(ka.launch_key(i), kb.launch_key(i), "row {i}");
    }
    assert_eq!(ka.inventory, kb.inventory);
    let keys: Vec<_> = (0..kb.len()).filter_map(|i| kb.launch_key(i)).collect();
    let (la, lb) = (Launches::load(&a, keys.clone()).unwrap(), Launches::load(&b, keys).unwrap());
    assert_eq!(la, lb);
    // Launches found: the kernels whose correlationId and process meet a runtime row.
    let joined = count(&format!(
        "SELECT count(DISTINCT r.correlationId || ':' || (r.globalTid >> 24)) FROM {KERNEL} k \
         JOIN {RUNTIME} r ON r.correlationId = k.correlationId \
         AND (r.globalTid >> 24) = (k.globalPid >> 24)"
    ));
    assert_eq!(lb.start.len() as i64, joined);
    assert_eq!(loaded(&b), Vec::<String>::new(), "read straight, never loaded");

    // A scan through SQL loads its table, and only it.
    let (na, nb) = (NvtxRanges::load(&a, None).unwrap(), NvtxRanges::load(&b, None).unwrap());
    assert_eq!((&na.start, &na.end, &na.global_tid), (&nb.start, &nb.end, &nb.global_tid));
    assert_eq!(loaded(&b), ["NVTX_EVENTS"]);
    // Loaded on request, a table holds every row of the source's.
    b.load_tables(&[KERNEL, RUNTIME]).unwrap();
    for t in [KERNEL, RUNTIME] {
        let n: i64 =
            b.conn().query_row(&format!("SELECT count(*) FROM {t}"), [], |r| r.get(0)).unwrap();
        assert_eq!(n, count(&format!("SELECT count(*) FROM {t}")), "{t}");
    }
    drop(b);
    // Neither the reads above nor every query wrote to the folder.
    for q in QUERIES {
        let mut args = vec!["query"];
        args.extend_from_slice(q);
        let o = run(&[&args[..], &[&s(&out)]].concat());
        assert!(o.status.success(), "{q:?}: {}", String::from_utf8_lossy(&o.stderr));
    }
    assert_eq!(util::snapshot(&out), before);
}

/// A NULL where a scan reads an integer is refused from an extract as from its source, by
/// the scans that read the Parquet columns straight: the kernel scan (a kernel's `start`) and
/// the launch scan (the `end` of a kernel's launch record).
#[test]
fn a_null_read_straight_from_an_extract_is_refused_as_from_its_source() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "kernel",
            "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = NULL \
             WHERE rowid = (SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL)",
            "`CUPTI_ACTIVITY_KIND_KERNEL.start`",
        ),
        (
            "runtime",
            "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET \"end\" = NULL WHERE rowid = \
             (SELECT r.rowid FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r \
             ON r.correlationId = k.correlationId AND (r.globalTid >> 24) = (k.globalPid >> 24) \
             ORDER BY k.rowid LIMIT 1)",
            "`CUPTI_ACTIVITY_KIND_RUNTIME.end`",
        ),
    ];
    for (name, update, column) in cases {
        let src = dir.path().join(format!("{name}.sqlite"));
        std::fs::copy(fixture("nsys-ai/mfu_2gpu_before.sqlite"), &src).unwrap();
        let conn = rusqlite::Connection::open(&src).unwrap();
        // The tables rebuilt without their NOT NULL constraints (same columns, rows and
        // order), so that the value can be NULL as another tool might write it.
        for t in ["CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME"] {
            conn.execute_batch(&format!(
                "CREATE TABLE t AS SELECT * FROM {t} ORDER BY rowid; DROP TABLE {t}; \
                 ALTER TABLE t RENAME TO {t};"
            ))
            .unwrap();
        }
        assert_eq!(conn.execute(update, []).unwrap(), 1, "{name}");
        drop(conn);
        let out = dir.path().join(name);
        extract(&[&s(&src)], &out);
        assert_same_queries(&s(&src), &s(&out), &[(s(&out), s(&src))]);
        // At least one query reads the value and is refused, naming the table and column,
        // with a hint and exit 2.
        let refused: Vec<String> = QUERIES
            .iter()
            .filter_map(|q| {
                let o = run(&[&["query"], *q, &[&s(&out)]].concat());
                (o.status.code() == Some(2))
                    .then(|| String::from_utf8_lossy(&o.stderr).into_owned())
            })
            .collect();
        assert!(!refused.is_empty(), "{name}: no query read the NULL");
        for err in refused {
            assert!(err.contains(column) && err.contains("Null"), "{name}: {err}");
            assert!(err.contains("hint:"), "{name}: {err}");
        }
    }
}

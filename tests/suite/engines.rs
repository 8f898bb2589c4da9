//! Where the per-rank scan runs: in process, or on a Dask cluster of one scheduler and two
//! workers started here on the loopback (`--cluster ADDRESS`, and its alias `--engine
//! dask=ADDRESS`), where each worker runs `verdict map` over its shard of the set and the reduce
//! stays in process. Each must print the same evidence, byte for byte, on the three real trace
//! sets (whole, cut by windows, split into tiles) and on a generated set of 100 per-rank files,
//! whose instance count the generator fixes; and the SQL specification beside each analysis,
//! run on SQLite in process, must give the loop's evidence on each of them. A scheduler that
//! does not answer, a worker without the binary and a file a worker cannot read are each an
//! error naming it, exit 2, with nothing printed.
//!
//! The cluster needs a Python with `distributed` (and the `dask` command beside it), named by
//! `VERDICT_PYTHON`; its tests are skipped without one, and required when
//! `VERDICT_REQUIRE_DASK` is set (CI).

use crate::util;

// Also a program of its own (the gen-large example), so it loads the fixtures' DDL and random
// stream itself, as the suite's root does for the other generators.
#[path = "../../bench/gen_large.rs"]
#[allow(dead_code, clippy::duplicate_mod)]
mod gen_large;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use util::{run, run_json_on_engines, s, seconds, shared_traces, skip_no_shared};

const RUNS: [&str; 3] = [
    "results_Ring_2nodes_6GPUs_1010",
    "results_Tree_3nodes_9GPUs_1010",
    "results_Tree_Simple_9GPUs_3nodes_allreduce_2MB_allreduce_2MB",
];

/// A Dask scheduler and two workers on 127.0.0.1, stopped when dropped.
pub(crate) struct Cluster {
    children: Vec<Child>,
    pub(crate) address: String,
    _dir: tempfile::TempDir,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The Python that has Dask, if any (required under `VERDICT_REQUIRE_DASK`).
fn dask_python() -> Option<String> {
    let required = std::env::var_os("VERDICT_REQUIRE_DASK").is_some();
    let python = std::env::var("VERDICT_PYTHON").ok();
    let has = python.as_ref().is_some_and(|p| {
        Command::new(p)
            .args(["-c", "import distributed"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    });
    if !has {
        assert!(!required, "VERDICT_REQUIRE_DASK is set but VERDICT_PYTHON has no Dask");
        eprintln!("skipped: the Dask cluster (VERDICT_PYTHON with distributed)");
        return None;
    }
    python
}

/// Starts `dask scheduler` and two `dask worker` processes (one thread each) on the loopback.
fn start_cluster(python: &str) -> Cluster {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("scheduler.json");
    let spawn = |args: &[&str]| {
        Command::new(python)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("dask starts")
    };
    let dask = Path::new(python).with_file_name("dask");
    let dask = s(&dask).to_string();
    let mut children = vec![spawn(&[
        &dask,
        "scheduler",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--no-dashboard",
        "--scheduler-file",
        s(&file),
    ])];
    let began = Instant::now();
    while !file.exists() {
        assert!(began.elapsed() < Duration::from_secs(60), "the Dask scheduler did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    // The file is written whole once the scheduler listens.
    std::thread::sleep(Duration::from_millis(300));
    let info: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let address = info["address"].as_str().unwrap().to_string();
    assert!(address.starts_with("tcp://127.0.0.1:"), "{address}");
    for _ in 0..2 {
        let mut w = spawn(&[
            &dask,
            "worker",
            &address,
            "--nworkers",
            "1",
            "--nthreads",
            "1",
            "--no-dashboard",
            "--host",
            "127.0.0.1",
        ]);
        // A worker says it registered with the scheduler before it takes work.
        let err = w.stderr.take().unwrap();
        let mut lines = BufReader::new(err).lines();
        let began = Instant::now();
        loop {
            let line = lines.next().expect("the worker ended before registering").unwrap();
            if line.contains("Registered to") {
                break;
            }
            assert!(began.elapsed() < Duration::from_secs(60), "a Dask worker did not register");
        }
        // Keep draining its log so it never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        children.push(w);
    }
    Cluster { children, address, _dir: dir }
}

/// A cluster on the loopback, when a Python with Dask is named.
pub(crate) fn cluster() -> Option<Cluster> {
    dask_python().map(|p| start_cluster(&p))
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sqlite"))
        .collect();
    v.sort();
    v
}

/// The three real sets: whole, in a window that cuts instances, in one that holds some whole
/// (contain), split into tiles, and on each rank's own stream.
#[test]
fn the_real_sets_give_the_same_evidence_on_every_engine() {
    let Some(shared) = shared_traces() else {
        return skip_no_shared("the_real_sets_give_the_same_evidence_on_every_engine");
    };
    let cluster = cluster();
    let dask = cluster.as_ref().map(|c| c.address.as_str());
    for set in RUNS {
        let dir = shared.join("dsl-fs24").join(set);
        let glob = format!("{}/*.sqlite", dir.display());
        let whole = run_json_on_engines(&["query", "nccl-skew", &glob, "--json"], dask);
        let matched = whole["values"]["matched"].as_i64().unwrap();
        assert!(matched > 0, "{set}");
        let [a, b] = [0, 1].map(|i| whole["window"]["effective_ns"][i].as_i64().unwrap());
        // A third in: edges inside instances.
        let third = format!("{}:{}", seconds(a + (b - a) / 3), seconds(b - (b - a) / 3));
        let cut =
            run_json_on_engines(&["query", "nccl-skew", &glob, "--window", &third, "--json"], dask);
        let held = run_json_on_engines(
            &["query", "nccl-skew", &glob, "--window", &third, "--semantics", "contain", "--json"],
            dask,
        );
        assert!(
            cut["values"]["cut_instances"].as_i64().unwrap() >= 1
                || held["values"]["matched"].as_i64().unwrap() < matched,
            "{set}: the window should leave instances out"
        );
        let split = run_json_on_engines(
            &["query", "nccl-skew", &glob, "--split", "3", "--stream", "auto", "--json"],
            dask,
        );
        // Each instance is in one tile: the tiles' matched sum to the whole's.
        let tiles: i64 = split["samples"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| util::int(&t["values"], "matched"))
            .sum();
        assert_eq!(tiles, matched, "{set}");
        // Two ranks of the set given as files: a smaller set.
        let f = files(&dir);
        run_json_on_engines(&["query", "nccl-skew", s(&f[0]), s(&f[1]), "--json"], dask);
        // The per-rank unions of `overlap`: every rank, whole, clipped, contained, split.
        let all =
            run_json_on_engines(&["query", "overlap", &glob, "--all-devices", "--json"], dask);
        assert!(all["rows"].as_array().unwrap().len() >= 6, "{set}");
        for extra in [
            &["--all-devices", "--window", third.as_str()][..],
            &["--all-devices", "--window", third.as_str(), "--semantics", "contain"],
            // A split gives one value per window: one rank.
            &["--device", "1", "--split", "3"],
        ] {
            let mut args = vec!["query", "overlap", glob.as_str(), "--json"];
            args.extend(extra);
            run_json_on_engines(&args, dask);
        }
    }
}

/// A generated set of 100 per-rank files: one iteration of 40 collectives on every rank, so 40
/// instances with every kernel matched, on every engine; and windows over it.
#[test]
fn a_generated_set_of_100_ranks_gives_the_same_evidence_on_every_engine() {
    let dir = tempfile::tempdir().unwrap();
    let (paths, kernels, iterations) =
        gen_large::generate(dir.path(), 100_000, 100, 100).expect("the set is written");
    assert_eq!((paths.len(), kernels, iterations), (100, 100_000, 1));
    let glob = format!("{}/*.sqlite", paths[0].parent().unwrap().display());
    let cluster = cluster();
    let dask = cluster.as_ref().map(|c| c.address.as_str());
    let v = run_json_on_engines(&["query", "nccl-skew", &glob, "--json"], dask);
    assert_eq!(v["values"]["ranks"], 100);
    assert_eq!(v["values"]["matched"], 40);
    assert_eq!(v["values"]["unmatched"], 0);
    let [a, b] = [0, 1].map(|i| v["window"]["effective_ns"][i].as_i64().unwrap());
    let half = format!("{}:{}", seconds(a), seconds(a + (b - a) / 2));
    run_json_on_engines(&["query", "nccl-skew", &glob, "--window", &half, "--json"], dask);
    run_json_on_engines(&["query", "nccl-skew", &glob, "--split", "4", "--json"], dask);
    let v = run_json_on_engines(&["query", "overlap", &glob, "--all-devices", "--json"], dask);
    // Each rank ran its 960 compute and 40 NCCL kernels.
    for row in v["rows"].as_array().unwrap() {
        assert_eq!((util::int(row, "compute_kernels"), util::int(row, "nccl_kernels")), (960, 40));
    }
    let args = ["query", "overlap", &glob, "--all-devices", "--window", &half, "--json"];
    run_json_on_engines(&args, dask);
}

/// An engine that cannot run is an error with a hint, exit 2, never another engine's answer.
#[test]
fn an_unavailable_engine_is_an_error_with_a_hint() {
    let trace = util::fixture("day26/megatron.sqlite");
    let out = run(&["query", "nccl-skew", s(&trace), "--engine", "spark"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`spark` is not an engine"), "{err}");
    // No scheduler named anywhere.
    let out = util::verdict()
        .args(["query", "nccl-skew", s(&trace), "--engine", "dask"])
        .env_remove("DASK_SCHEDULER_ADDRESS")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("names no scheduler") && err.contains("hint:"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // DataFusion left the product: its name is refused like any other that is no engine, with
    // the engines that exist.
    for query in [&["nccl-skew"][..], &["overlap", "--all-devices"]] {
        let mut args = vec!["query", query[0], s(&trace)];
        args.extend(&query[1..]);
        args.extend(["--engine", "datafusion"]);
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{query:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("`datafusion` is not an engine: rust, dask or dask=ADDRESS"), "{err}");
        assert!(out.stdout.is_empty() && !err.contains("panicked"), "{err}");
    }
}

/// What stops a cluster run stops it whole: a scheduler that does not answer, a worker that
/// has no `verdict` at the path given, a file a worker cannot read. Each is exit 2 with an
/// error naming it and a hint, and no evidence on stdout.
#[test]
fn a_cluster_that_cannot_map_is_an_error_naming_it() {
    let Some(python) = dask_python() else { return };
    let trace = util::fixture("day26/megatron.sqlite");
    let fails = |args: &[&str], dir: Option<&Path>, env: &[(&str, &str)], want: &[&str]| {
        let mut cmd = util::verdict();
        cmd.args(args).env("VERDICT_PYTHON", &python);
        if let Some(d) = dir {
            cmd.current_dir(d);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?} printed evidence");
        for w in want {
            assert!(err.contains(w), "{args:?}: no `{w}` in {err}");
        }
        assert!(err.contains("hint:") && !err.contains("panicked"), "{err}");
    };
    // Nothing listens on port 1 of the loopback.
    let down = "tcp://127.0.0.1:1";
    fails(
        &["query", "nccl-skew", s(&trace), "--cluster", down],
        None,
        &[],
        &["cannot reach the Dask scheduler at tcp://127.0.0.1:1"],
    );
    let cluster = start_cluster(&python);
    let at = cluster.address.as_str();
    fails(
        &["query", "overlap", s(&trace), "--all-devices", "--cluster", at],
        None,
        &[("VERDICT_WORKER_BINARY", "/nonexistent/verdict")],
        &[
            "the verdict binary `/nonexistent/verdict` is missing on worker",
            "VERDICT_WORKER_BINARY",
        ],
    );
    // The set named relative to a folder the workers do not run in: they cannot read it.
    let dir = tempfile::tempdir().unwrap();
    let (paths, _, _) = gen_large::generate(dir.path(), 2_000, 2, 2).unwrap();
    let folder = paths[0].parent().unwrap().file_name().unwrap().to_string_lossy().into_owned();
    let glob = format!("{folder}/*.sqlite");
    fails(
        &["query", "nccl-skew", &glob, "--cluster", at],
        Some(dir.path()),
        &[],
        &["on worker", "does not exist", "absolute paths"],
    );
}

/// How the SQL specifications are read: statements split at a line ending in `;`, comments
/// dropped, outputs marked, placeholders filled.
#[test]
fn sql_statements_split_on_semicolons_and_fill_placeholders() {
    use util::sql::statements;
    use verdict::engine::ReduceParams;
    let sql = "-- a; comment\nCREATE VIEW v AS\nSELECT {R} AS r, {ordinal} AS o;\n\n-- output: x\nSELECT * FROM v\nWHERE a >= {counted_from};\n";
    let p = ReduceParams { ranks: 3, ordinal: true, tile: Some((5, 9, None)) };
    let s = statements(sql, &p);
    assert_eq!(s.len(), 2);
    assert_eq!(s[0].sql, "CREATE VIEW v AS\nSELECT 3 AS r, TRUE AS o");
    assert_eq!(s[0].output, None);
    assert_eq!(s[1].output.as_deref(), Some("x"));
    assert_eq!(s[1].sql, "SELECT * FROM v\nWHERE a >= (-9223372036854775807 - 1)");
    let p = ReduceParams { tile: Some((5, 9, Some(7))), ..p };
    assert!(statements(sql, &p)[1].sql.ends_with("a >= 7"));
}

//! Collectives matched as collectives, the straggler as fields, and the CPU side of a
//! collective, on the three multi-node runs of `../shared/traces/dsl-fs24/` (read in place:
//! they carry no license) and on copies of them changed here. Every expected value is
//! computed in this file: SQL over each file, the files put on one clock by hand, the k-th
//! kernel of each rank paired, the enclosing NVTX call and the launch record joined by
//! `correlationId`.

use crate::util;

use std::path::{Path, PathBuf};

use serde_json::Value;
use util::{open_ro, run, run_json, run_json_on_engines, seconds, shared_traces, skip_no_shared};

const RUNS: [&str; 3] = [
    "results_Ring_2nodes_6GPUs_1010",
    "results_Tree_3nodes_9GPUs_1010",
    "results_Tree_Simple_9GPUs_3nodes_allreduce_2MB_allreduce_2MB",
];

/// One NCCL kernel of a rank with its CPU side, on the set's clock.
#[derive(Debug, Clone, Copy)]
struct Call {
    start: i64,
    end: i64,
    /// The launch record's end.
    launch_end: i64,
    /// The enclosing `ncclAllReduce` range's start.
    call_start: i64,
    /// The end of the `ncclCommInitRank` range before it.
    init_end: i64,
}

/// Each file of a run (sorted), its NCCL kernels with their CPU side, times on the set's
/// clock: these exports are on UTC (`--ts-normalize`), and 0 is the earliest session start.
fn reference(dir: &Path) -> Vec<Vec<Call>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sqlite"))
        .collect();
    files.sort();
    let mut origin = i64::MAX;
    let mut out = Vec::new();
    for f in &files {
        let c = open_ro(f);
        let start: i64 = c
            .query_row("SELECT min(utcEpochNs) FROM TARGET_INFO_SESSION_START_TIME", [], |r| {
                r.get(0)
            })
            .unwrap();
        origin = origin.min(start);
        let calls: Vec<Call> = c
            .prepare(
                "SELECT k.start, k.\"end\", r.\"end\",
                   (SELECT max(n.start) FROM NVTX_EVENTS n JOIN StringIds s ON s.id = n.textId
                     WHERE n.globalTid = r.globalTid AND s.value = 'ncclAllReduce'
                       AND n.start <= r.start AND n.\"end\" >= r.\"end\"),
                   (SELECT max(n.\"end\") FROM NVTX_EVENTS n JOIN StringIds s ON s.id = n.textId
                     WHERE n.globalTid = r.globalTid AND s.value = 'ncclCommInitRank'
                       AND n.\"end\" <= r.start)
                 FROM CUPTI_ACTIVITY_KIND_KERNEL k
                 JOIN StringIds ks ON ks.id = k.shortName
                 JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId
                   AND (r.globalTid >> 24) = (k.globalPid >> 24)
                 WHERE ks.value LIKE 'ncclKernel_AllReduce%'
                 ORDER BY k.start",
            )
            .unwrap()
            .query_map([], |r| {
                Ok(Call {
                    start: r.get(0)?,
                    end: r.get(1)?,
                    launch_end: r.get(2)?,
                    call_start: r.get(3)?,
                    init_end: r.get(4)?,
                })
            })
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert!(!calls.is_empty(), "{}", f.display());
        out.push(calls);
    }
    let shift = |x: i64| x - origin;
    out.into_iter()
        .map(|calls| {
            calls
                .into_iter()
                .map(|c| Call {
                    start: shift(c.start),
                    end: shift(c.end),
                    launch_end: shift(c.launch_end),
                    call_start: shift(c.call_start),
                    init_end: shift(c.init_end),
                })
                .collect()
        })
        .collect()
}

fn glob(dir: &Path) -> String {
    format!("{}/*.sqlite", dir.display())
}

fn skew(dir: &Path, extra: &[&str]) -> Value {
    skew_on(dir, extra, None)
}

/// [`skew`], and on the cluster at `dask` too.
fn skew_on(dir: &Path, extra: &[&str], dask: Option<&str>) -> Value {
    let g = glob(dir);
    let mut args = vec!["query", "nccl-skew", g.as_str(), "--stream", "auto", "--json"];
    args.extend(extra);
    // Every matching this file checks, on every engine of the build: the same evidence.
    run_json_on_engines(&args, dask)
}

#[test]
fn per_rank_straggler_fields_equal_a_pairing_written_here() {
    let Some(shared) = shared_traces() else {
        return skip_no_shared("per_rank_straggler_fields_equal_a_pairing_written_here");
    };
    for run in RUNS {
        let dir = shared.join("dsl-fs24").join(run);
        let ranks = reference(&dir);
        let matched = ranks.iter().map(Vec::len).min().unwrap();
        let n = ranks.len();
        let (mut last, mut first, mut wait) = (vec![0; n], vec![0; n], vec![0; n]);
        let mut offsets: Vec<Vec<i64>> = vec![Vec::new(); n];
        for j in 0..matched {
            let starts: Vec<i64> = ranks.iter().map(|r| r[j].start).collect();
            let ends: Vec<i64> = ranks.iter().map(|r| r[j].end).collect();
            let (smin, smax) = (*starts.iter().min().unwrap(), *starts.iter().max().unwrap());
            // Every rank is inside the kernel at one moment.
            assert!(smax <= *ends.iter().min().unwrap(), "{run}: instance {j}");
            last[starts.iter().position(|&s| s == smax).unwrap()] += 1;
            first[starts.iter().position(|&s| s == smin).unwrap()] += 1;
            let short = ranks.iter().map(|r| r[j].end - r[j].start).min().unwrap();
            for (i, r) in ranks.iter().enumerate() {
                wait[i] += r[j].end - r[j].start - short;
                offsets[i].push(r[j].start - smin);
            }
        }
        let v = skew(&dir, &[]);
        let rows = v["rows"].as_array().unwrap();
        assert_eq!(rows.len(), n, "{run}");
        assert_eq!(v["values"]["matched"], matched as i64, "{run}");
        assert_eq!(v["values"]["cut_instances"], 0, "{run}");
        assert_eq!(v["values"]["overlap_failures"], 0, "{run}");
        assert_eq!(v["parameters"]["match_rule"], "collective-ordinal", "{run}");
        let most = *last.iter().max().unwrap();
        assert_eq!(v["values"]["straggler_last"], most, "{run}");
        for (i, row) in rows.iter().enumerate() {
            assert_eq!(row["device"], i as i64, "{run}");
            assert_eq!(row["arrived_last"], last[i], "{run} rank {i}");
            assert_eq!(row["arrived_first"], first[i], "{run} rank {i}");
            assert_eq!(row["straggler"], i64::from(last[i] == most), "{run} rank {i}");
            assert_eq!(row["wait_ns"], wait[i], "{run} rank {i}");
            let mut o = offsets[i].clone();
            o.sort_unstable();
            assert_eq!(row["start_offset_median_ns"], o[(o.len() - 1) / 2], "{run} rank {i}");
            assert_eq!(row["start_offset_max_ns"], *o.last().unwrap(), "{run} rank {i}");
            assert!(row["label"].as_str().unwrap().contains(":"), "{run} rank {i}");
        }
    }
}

#[test]
fn a_window_that_cuts_an_instance_judges_no_skew_and_whole_instances_give_the_same_numbers() {
    let Some(shared) = shared_traces() else {
        return skip_no_shared("a_window_that_cuts_an_instance_judges_no_skew");
    };
    for run in RUNS {
        let dir = shared.join("dsl-fs24").join(run);
        let ranks = reference(&dir);
        let matched = ranks.iter().map(Vec::len).min().unwrap();
        let spans: Vec<(i64, i64)> = (0..matched)
            .map(|j| {
                (
                    ranks.iter().map(|r| r[j].start).min().unwrap(),
                    ranks.iter().map(|r| r[j].end).max().unwrap(),
                )
            })
            .collect();
        let end = spans.last().unwrap().1 + 1_000_000_000;
        for (j, &(a, b)) in spans.iter().enumerate() {
            // An edge inside the instance, at its first start + 1 ns and at its last end - 1 ns.
            for w in
                [format!("{}:{}", seconds(a + 1), seconds(end)), format!("0:{}", seconds(b - 1))]
            {
                let v = skew(&dir, &["--window", &w]);
                assert!(v["values"]["cut_instances"].as_i64().unwrap() >= 1, "{run} #{j} {w}");
                assert_eq!(v["values"]["start_skew_max_ns"], Value::Null, "{run} #{j} {w}");
                assert_eq!(v["values"]["wait_share"], Value::Null, "{run} #{j} {w}");
                let keys: Vec<&str> = v["notes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(|n| n["key"].as_str())
                    .collect();
                assert!(keys.contains(&"note.window_cuts"), "{run} #{j} {w}: {keys:?}");
            }
            // A window from just before to just after it holds it whole: its own skew.
            let w = format!("{}:{}", seconds(a - 1), seconds(b + 1));
            let v = skew(&dir, &["--window", &w]);
            let starts: Vec<i64> = ranks.iter().map(|r| r[j].start).collect();
            let skew_j = starts.iter().max().unwrap() - starts.iter().min().unwrap();
            assert_eq!(v["values"]["matched"], 1, "{run} #{j}");
            assert_eq!(v["values"]["start_skew_max_ns"], skew_j, "{run} #{j}");
            assert_eq!(v["window"]["effective_ns"], serde_json::json!([a, b]), "{run} #{j}");
        }
    }
}

#[test]
fn the_cpu_side_decomposes_the_start_skew_exactly() {
    let Some(shared) = shared_traces() else {
        return skip_no_shared("the_cpu_side_decomposes_the_start_skew_exactly");
    };
    for run in RUNS {
        let dir = shared.join("dsl-fs24").join(run);
        let ranks = reference(&dir);
        let matched = ranks.iter().map(Vec::len).min().unwrap();
        for j in 0..matched {
            let n = (j + 1).to_string();
            let g = glob(&dir);
            let v = run_json(&[
                "query",
                "nccl-calls",
                &g,
                "--stream",
                "auto",
                "--instance",
                &n,
                "--json",
            ]);
            let c: Vec<Call> = ranks.iter().map(|r| r[j]).collect();
            let last = (0..c.len()).max_by(|&a, &b| c[a].start.cmp(&c[b].start).then(b.cmp(&a)));
            let first = (0..c.len()).min_by(|&a, &b| c[a].start.cmp(&c[b].start).then(a.cmp(&b)));
            let (l, f) = (c[last.unwrap()], c[first.unwrap()]);
            let vals = &v["values"];
            assert_eq!(vals["instance"], j as i64 + 1);
            assert_eq!(vals["start_skew_ns"], l.start - f.start, "{run} #{j}");
            assert_eq!(vals["skew_from_call_ns"], l.call_start - f.call_start, "{run} #{j}");
            assert_eq!(
                vals["skew_from_launch_ns"],
                (l.launch_end - l.call_start) - (f.launch_end - f.call_start),
                "{run} #{j}"
            );
            assert_eq!(
                vals["skew_from_queue_ns"],
                (l.start - l.launch_end) - (f.start - f.launch_end),
                "{run} #{j}"
            );
            let spread = |x: &dyn Fn(&Call) -> i64| {
                c.iter().map(x).max().unwrap() - c.iter().map(x).min().unwrap()
            };
            assert_eq!(vals["init_end_skew_ns"], spread(&|c| c.init_end), "{run} #{j}");
            assert_eq!(vals["call_skew_ns"], spread(&|c| c.call_start), "{run} #{j}");
            // Init explains the first AllReduce after it, not a later one.
            if j == 0 {
                assert_eq!(vals["skew_from_init_ns"], l.init_end - f.init_end, "{run}");
            } else {
                assert_eq!(vals["skew_from_init_ns"], Value::Null, "{run} #{j}");
            }
            let init0 = c.iter().map(|c| c.init_end).min().unwrap();
            for (i, row) in v["rows"].as_array().unwrap().iter().enumerate() {
                assert_eq!(row["call"], "ncclAllReduce");
                assert_eq!(row["init_end_offset_ns"], c[i].init_end - init0, "{run} #{j} rank {i}");
                assert_eq!(row["call_to_launch_ns"], c[i].launch_end - c[i].call_start);
                assert_eq!(row["queue_ns"], c[i].start - c[i].launch_end);
                assert_eq!(row["call_to_kernel_ns"], c[i].start - c[i].call_start);
            }
        }
    }
}

#[test]
fn the_ring_audit_names_the_late_rank_and_the_init_skew() {
    let Some(_) = shared_traces() else {
        return skip_no_shared("the_ring_audit_names_the_late_rank_and_the_init_skew");
    };
    let v = run_json(&["check", "claims/dsl-fs24-ring.yaml", "--json"]);
    let part = |claim: &str, part: &str| -> Value {
        let c = v["results"].as_array().unwrap().iter().find(|c| c["id"] == claim).unwrap();
        c["parts"].as_array().unwrap().iter().find(|p| p["id"] == part).unwrap().clone()
    };
    // Rank 1 of the ring set (ault43, pid 854727) starts last: by SQL its kernel starts at
    // 1728501278164576908 ns UTC, the latest of the six files.
    assert_eq!(part("straggler", "late-rank")["outcome"], "supported");
    // ault43's inits end at ...154442008-...154442268, ault44's at ...134714428-...134721663:
    // 19,727,840 ns from the earliest to the latest.
    let init = part("late-init", "init-skew");
    assert_eq!(init["outcome"], "supported");
    assert_eq!(init["formula"]["exact"], serde_json::json!(["19727840", "1"]));
    assert_eq!(part("late-init", "init-share")["outcome"], "supported");
    // The slow launch: 1728501278164589155 - 1728501278154643920 = 9,945,235 ns.
    assert_eq!(
        part("late-init", "slow-launch")["formula"]["exact"],
        serde_json::json!(["9945235", "1"])
    );
}

#[test]
fn the_tree_audit_refuses_the_window_that_cuts_the_first_allreduce() {
    let Some(_) = shared_traces() else {
        return skip_no_shared("the_tree_audit_refuses_the_window_that_cuts_the_first_allreduce");
    };
    let out = run(&["check", "claims/dsl-fs24-tree.yaml", "--strict"]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("R2 FAIL: the window cuts 1 collective instance(s)"), "{text}");
    let v = run_json(&["check", "claims/dsl-fs24-tree.yaml", "--json"]);
    let claim = v["results"].as_array().unwrap().iter().find(|c| c["id"] == "cut-window").unwrap();
    assert_eq!(claim["verdict"], "unverifiable");
    assert_eq!(claim["parts"][0]["formula"]["exact"], Value::Null);
}

/// Copies a run's files into a temporary folder, where the test may change them.
fn copy_run(run: &str) -> Option<tempfile::TempDir> {
    let src = shared_traces()?.join("dsl-fs24").join(run);
    let dir = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        let to = dir.path().join(p.file_name().unwrap());
        std::fs::copy(&p, &to).unwrap();
        let mut perm = std::fs::metadata(&to).unwrap().permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perm.set_readonly(false);
        std::fs::set_permissions(&to, perm).unwrap();
    }
    Some(dir)
}

fn sorted_files(dir: &Path) -> Vec<PathBuf> {
    let mut f: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    f.sort();
    f
}

#[test]
fn a_kernel_missing_on_one_rank_fails_the_overlap_test_instead_of_pairing_two_collectives() {
    let Some(dir) = copy_run("results_Tree_Simple_9GPUs_3nodes_allreduce_2MB_allreduce_2MB") else {
        return skip_no_shared("a_kernel_missing_on_one_rank");
    };
    // Rank 4's capture lost its first AllReduce: by position its second would pair with the
    // others' first, two seconds apart.
    let f = &sorted_files(dir.path())[4];
    let c = rusqlite::Connection::open(f).unwrap();
    c.execute(
        "DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE start = (SELECT min(start) FROM CUPTI_ACTIVITY_KIND_KERNEL)",
        [],
    )
    .unwrap();
    drop(c);
    let v = skew(dir.path(), &[]);
    assert_eq!(v["values"]["overlap_failures"], 1);
    // The other eight ranks' second AllReduce has no counterpart on rank 4.
    assert_eq!(v["values"]["unmatched"], 8);
    assert_eq!(v["values"]["matched"], 0);
    assert_eq!(v["values"]["start_skew_max_ns"], Value::Null);
    // A window around the second AllReduce does not mend it: its kernels there still have no
    // counterpart, and the broken pair is cut.
    let ranks = reference(
        &shared_traces()
            .unwrap()
            .join("dsl-fs24")
            .join("results_Tree_Simple_9GPUs_3nodes_allreduce_2MB_allreduce_2MB"),
    );
    let a = ranks.iter().map(|r| r[1].start).min().unwrap();
    let b = ranks.iter().map(|r| r[1].end).max().unwrap();
    let w = format!("{}:{}", seconds(a - 1), seconds(b + 1));
    let v = skew(dir.path(), &["--window", &w]);
    assert_eq!(v["values"]["unmatched"], 8);
    assert_eq!(v["values"]["start_skew_max_ns"], Value::Null);
    // The check of a claim over it fails R2 with that finding.
    let text = String::from_utf8_lossy(
        &run(&["query", "nccl-skew", &glob(dir.path()), "--stream", "auto"]).stdout,
    )
    .to_string();
    assert!(text.contains("fail the overlap test"), "{text}");
}

#[test]
fn two_collectives_interleaved_on_one_stream_are_matched_by_name() {
    let Some(dir) = copy_run("results_Ring_2nodes_6GPUs_1010") else {
        return skip_no_shared("two_collectives_interleaved_on_one_stream");
    };
    let shared = shared_traces().unwrap().join("dsl-fs24").join("results_Ring_2nodes_6GPUs_1010");
    let ranks = reference(&shared);
    // Each file gains an AllGather on the AllReduce's stream at 100 ms after the AllReduce's
    // latest end, 1 ms long, except rank 0, whose AllGather comes 10 ms *before* its AllReduce:
    // by position on the stream rank 0's AllGather would pair with the others' AllReduce.
    let latest = ranks.iter().map(|r| r[0].end).max().unwrap();
    let origin = sorted_files(&shared)
        .iter()
        .map(|f| {
            open_ro(f)
                .query_row("SELECT min(utcEpochNs) FROM TARGET_INFO_SESSION_START_TIME", [], |r| {
                    r.get::<_, i64>(0)
                })
                .unwrap()
        })
        .min()
        .unwrap();
    for (i, f) in sorted_files(dir.path()).iter().enumerate() {
        let c = rusqlite::Connection::open(f).unwrap();
        let id: i64 = c.query_row("SELECT max(id) + 1 FROM StringIds", [], |r| r.get(0)).unwrap();
        c.execute(
            "INSERT INTO StringIds (id, value) VALUES (?1, 'ncclDevKernel_AllGather_RING_LL')",
            [id],
        )
        .unwrap();
        c.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL",
            [],
        )
        .unwrap();
        let start = if i == 0 { ranks[0][0].start - 10_000_000 } else { latest + 100_000_000 };
        c.execute(
            "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = ?1, \"end\" = ?2, shortName = ?3,
               demangledName = ?3, correlationId = correlationId + 100000
             WHERE rowid = (SELECT max(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL)",
            [start + origin, start + origin + 1_000_000, id],
        )
        .unwrap();
    }
    let v = skew(dir.path(), &[]);
    let vals = &v["values"];
    // AllReduce: every rank; AllGather: rank 0's never runs with the others' (the overlap
    // test), so only the AllReduce instance is kept, with the same skew as the unchanged set.
    let starts: Vec<i64> = ranks.iter().map(|r| r[0].start).collect();
    assert_eq!(vals["matched"], 1);
    assert_eq!(vals["overlap_failures"], 1);
    assert_eq!(vals["start_skew_max_ns"], Value::Null);
    // With the AllReduce alone (`match`), the numbers of the unchanged set.
    let v = skew(dir.path(), &["--match", "AllReduce"]);
    assert_eq!(
        v["values"]["start_skew_max_ns"],
        starts.iter().max().unwrap() - starts.iter().min().unwrap()
    );
    assert_eq!(v["values"]["overlap_failures"], 0);
}

#[test]
fn rank_selections_are_checked_where_they_are_written() {
    let dir = tempfile::tempdir().unwrap();
    let trace = util::fixture("day26/megatron.sqlite");
    let claims = format!(
        r#"report: {{ id: r, languages: [en], title: {{en: t}}, question: {{en: q}}, answer: {{en: a}}, decision: {{en: d}}, date: "2026-09-11" }}
sources: {{ s: {{ label: {{ en: s }} }} }}
traces: {{ A: {{ path: "{}", label: {{ en: A }} }} }}
scopes: {{ all: {{ trace: A, devices: 1-7 }} }}
claims:
  - id: c
    source: s
    statement: {{ en: x }}
    principal: p
    parts:
      - id: p
        kind: observation
        text: {{ en: x }}
        measure: {{ analysis: kernels, scope: all, over_ranks: all, value: count }}
        condition: {{ at_least: "1" }}
      - id: q
        kind: observation
        text: {{ en: x }}
        measure: {{ analysis: nccl-skew, scope: all, value: arrived_last }}
        condition: {{ at_least: "1" }}
      - id: r
        kind: observation
        text: {{ en: x }}
        measure: {{ analysis: nccl-skew, scope: all, over_ranks: most, value: wait_ns }}
        condition: {{ at_least: "1 ms" }}
"#,
        trace.display()
    );
    let path = dir.path().join("c.yaml");
    std::fs::write(&path, claims).unwrap();
    let out = run(&["check", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    // Each at its own line and column: the key of the analysis without rows, the formula
    // that reads a per-rank field without a selection, the unknown reduction.
    assert!(err.contains("c.yaml:14:63:") && err.contains("has no per-rank rows"), "{err}");
    assert!(
        err.contains("c.yaml:19:60:") && err.contains("`arrived_last` is a per-rank field"),
        "{err}"
    );
    assert!(err.contains("c.yaml:24:65:") && err.contains("must be all, any, max or min"), "{err}");
}

/// NCCL 2.25's payload schemas of domain 1 as an export lists them (the first entry's offset
/// NULL): the comm init {communicator u64, No. of ranks int @8, Rank int @12, CUDA device
/// int @16} and the all-reduce {communicator u64, Message size size_t @8, Reduction
/// operation enum @16}, 24 bytes each. The DSL files' NCCL predates the communicator entry,
/// so its schemas are replaced.
fn write_nccl_225_schemas(c: &rusqlite::Connection) {
    c.execute_batch(
        "DELETE FROM NVTX_PAYLOAD_SCHEMAS; DELETE FROM NVTX_PAYLOAD_SCHEMA_ENTRIES;
         INSERT INTO NVTX_PAYLOAD_SCHEMAS (domainId, schemaId, name, type, flags, numEntries, payloadSize, alignTo)
           VALUES (1, 16777218, NULL, 1, NULL, 4, 24, NULL), (1, 16777223, NULL, 1, NULL, 3, 24, NULL);
         INSERT INTO NVTX_PAYLOAD_SCHEMA_ENTRIES (domainId, schemaId, idx, flags, type, name, description, arrayOrUnionDetail, \"offset\") VALUES
           (1, 16777218, 0, NULL, 18, 'NCCL communicator ID', NULL, NULL, NULL),
           (1, 16777218, 1, NULL, 5, 'No. of ranks', NULL, NULL, 8),
           (1, 16777218, 2, NULL, 5, 'Rank', NULL, NULL, 12),
           (1, 16777218, 3, NULL, 5, 'CUDA device', NULL, NULL, 16),
           (1, 16777223, 0, NULL, 18, 'NCCL communicator ID', NULL, NULL, NULL),
           (1, 16777223, 1, NULL, 22, 'Message size [bytes]', NULL, NULL, 8),
           (1, 16777223, 2, NULL, 16777232, 'Reduction operation', NULL, NULL, 16);",
    )
    .unwrap();
}

/// A `binaryData` value: the header (domain 1, the schema, the payload size, 32) and the
/// payload, little-endian.
fn payload_blob(schema: u64, payload: &[u8]) -> Vec<u8> {
    let mut b: Vec<u8> =
        [1, schema, payload.len() as u64, 32].iter().flat_map(|w: &u64| w.to_le_bytes()).collect();
    b.extend_from_slice(payload);
    b
}

fn init_blob(comm: u64, nranks: i32, rank: i32, device: i32) -> Vec<u8> {
    let mut p = comm.to_le_bytes().to_vec();
    for x in [nranks, rank, device, 0] {
        p.extend_from_slice(&x.to_le_bytes());
    }
    payload_blob(16777218, &p)
}

fn allreduce_blob(comm: u64) -> Vec<u8> {
    let mut p = comm.to_le_bytes().to_vec();
    p.extend_from_slice(&4096u64.to_le_bytes());
    p.extend_from_slice(&[0; 8]);
    payload_blob(16777223, &p)
}

/// The world communicator of the ring set and the two node groups (ault43's ranks 0-2,
/// ault44's 3-5).
const WORLD: u64 = 0x5a17_0c0d_e000_0001;
const NODE_A: u64 = 0x0b1b_0000_0000_00a3;
const NODE_B: u64 = 0x0b2b_0000_0000_00a4;

/// Per rank of the ring set, its node group's AllReduce: (start offset from the group's
/// base, duration). Rank 0 arrives last in the first group, rank 4 in the second.
const GROUP_KERNELS: [(i64, i64); 6] = [
    (150_000, 1_000_000),
    (0, 1_200_000),
    (60_000, 1_100_000),
    (0, 800_000),
    (90_000, 700_000),
    (30_000, 900_000),
];

/// The ring set with a second AllReduce per rank on the same stream, issued on its node's
/// communicator: ault43's 10 ms after the world AllReduce's latest end, ault44's 50 ms after.
/// Each new kernel has its launch record and its `ncclAllReduce` range, copied from the
/// rank's first and shifted with it.
fn ring_with_node_groups() -> Option<tempfile::TempDir> {
    let dir = copy_run("results_Ring_2nodes_6GPUs_1010")?;
    let files = sorted_files(dir.path());
    let latest_end: i64 = files
        .iter()
        .map(|f| {
            open_ro(f)
                .query_row("SELECT max(\"end\") FROM CUPTI_ACTIVITY_KIND_KERNEL", [], |r| r.get(0))
                .unwrap()
        })
        .max()
        .unwrap();
    let bases = [latest_end + 10_000_000, latest_end + 50_000_000];
    for (r, f) in files.iter().enumerate() {
        let c = rusqlite::Connection::open(f).unwrap();
        let (krow, kstart, corr, pid): (i64, i64, i64, i64) = c
            .query_row(
                "SELECT k.rowid, k.start, k.correlationId, k.globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL k
                 JOIN StringIds s ON s.id = k.shortName WHERE s.value LIKE 'ncclKernel_AllReduce%'",
                [],
                |x| Ok((x.get(0)?, x.get(1)?, x.get(2)?, x.get(3)?)),
            )
            .unwrap();
        let launch: i64 = c
            .query_row(
                "SELECT rowid FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE correlationId = ?1 AND (globalTid >> 24) = (?2 >> 24)",
                [corr, pid],
                |x| x.get(0),
            )
            .unwrap();
        let range = |name: &str| -> i64 {
            c.query_row(
                "SELECT n.rowid FROM NVTX_EVENTS n JOIN StringIds s ON s.id = n.textId WHERE s.value = ?1",
                [name],
                |x| x.get(0),
            )
            .unwrap()
        };
        let (call, init) = (range("ncclAllReduce"), range("ncclCommInitRank"));
        let (base, comm) = if r < 3 { (bases[0], NODE_A) } else { (bases[1], NODE_B) };
        let (off, dur) = GROUP_KERNELS[r];
        let start = base + off;
        let delta = start - kstart;
        let copy = |table: &str, rowid: i64| -> i64 {
            c.execute(
                &format!("INSERT INTO {table} SELECT * FROM {table} WHERE rowid = ?1"),
                [rowid],
            )
            .unwrap();
            c.last_insert_rowid()
        };
        let k2 = copy("CUPTI_ACTIVITY_KIND_KERNEL", krow);
        c.execute(
            "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = ?1, \"end\" = ?2, correlationId = ?3 WHERE rowid = ?4",
            [start, start + dur, corr + 1_000_000, k2],
        )
        .unwrap();
        let l2 = copy("CUPTI_ACTIVITY_KIND_RUNTIME", launch);
        c.execute(
            "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET start = start + ?1, \"end\" = \"end\" + ?1, correlationId = ?2 WHERE rowid = ?3",
            [delta, corr + 1_000_000, l2],
        )
        .unwrap();
        let call2 = copy("NVTX_EVENTS", call);
        c.execute(
            "UPDATE NVTX_EVENTS SET start = start + ?1, \"end\" = \"end\" + ?1 WHERE rowid = ?2",
            [delta, call2],
        )
        .unwrap();
        write_nccl_225_schemas(&c);
        let set = |rowid: i64, blob: Vec<u8>| {
            c.execute(
                "UPDATE NVTX_EVENTS SET binaryData = ?1 WHERE rowid = ?2",
                rusqlite::params![blob, rowid],
            )
            .unwrap();
        };
        set(init, init_blob(WORLD, 6, r as i32, 0));
        set(call, allreduce_blob(WORLD));
        set(call2, allreduce_blob(comm));
    }
    Some(dir)
}

#[test]
fn two_communicators_on_one_stream_are_matched_by_communicator_and_sequence() {
    let Some(dir) = ring_with_node_groups() else {
        return skip_no_shared("two_communicators_on_one_stream");
    };
    let shared = shared_traces().unwrap().join("dsl-fs24").join("results_Ring_2nodes_6GPUs_1010");
    // The world AllReduce, by SQL over the unchanged files.
    let world: Vec<Call> = reference(&shared).into_iter().map(|r| r[0]).collect();
    let starts: Vec<i64> = world.iter().map(|c| c.start).collect();
    let durs: Vec<i64> = world.iter().map(|c| c.end - c.start).collect();
    let min_dur = *durs.iter().min().unwrap();
    let world_skew = starts.iter().max().unwrap() - starts.iter().min().unwrap();
    let world_last = starts.iter().position(|s| s == starts.iter().max().unwrap()).unwrap();
    // The node groups, by hand: starts 150,000 / 0 / 60,000 and 0 / 90,000 / 30,000 ns after
    // their bases; durations 1.0 / 1.2 / 1.1 ms (waits 0, 200,000, 100,000) and 0.8 / 0.7 /
    // 0.9 ms (waits 100,000, 0, 200,000).
    let group_wait = [0, 200_000, 100_000, 100_000, 0, 200_000];
    // Each rank's communicators are read where its file is, on a cluster too.
    let cluster = crate::engines::cluster();
    let v = skew_on(dir.path(), &[], cluster.as_ref().map(|c| c.address.as_str()));
    assert_eq!(v["parameters"]["match_rule"], "communicator-ordinal");
    let vals = &v["values"];
    assert_eq!(vals["matched"], 3);
    assert_eq!((vals["overlap_failures"].clone(), vals["unmatched"].clone()), (0.into(), 0.into()));
    // Start skews: the world's, 150,000 and 90,000 ns; the median of three is the middle one.
    let mut skews = [world_skew, 150_000, 90_000];
    skews.sort_unstable();
    assert_eq!(vals["start_skew_max_ns"], skews[2]);
    assert_eq!(vals["start_skew_median_ns"], skews[1]);
    let world_wait: Vec<i64> = durs.iter().map(|d| d - min_dur).collect();
    assert_eq!(vals["wait_ns"], world_wait.iter().sum::<i64>() + 600_000);
    assert_eq!(
        vals["nccl_ns"],
        durs.iter().sum::<i64>() + GROUP_KERNELS.iter().map(|k| k.1).sum::<i64>()
    );
    let comms = v["parameters"]["communicators"].as_array().unwrap();
    let listed: Vec<(String, Value)> = comms
        .iter()
        .map(|c| (c["id"].as_str().unwrap().to_string(), c["devices"].clone()))
        .collect();
    assert_eq!(
        listed,
        vec![
            (format!("0x{NODE_A:016x}"), serde_json::json!([0, 1, 2])),
            (format!("0x{NODE_B:016x}"), serde_json::json!([3, 4, 5])),
            (format!("0x{WORLD:016x}"), serde_json::json!([0, 1, 2, 3, 4, 5])),
        ]
    );
    // The world communicator's inits give each rank and the size; the node groups have none.
    let world_comm = comms.iter().find(|c| c["id"] == format!("0x{WORLD:016x}")).unwrap();
    assert_eq!(world_comm["size"], 6);
    assert_eq!(world_comm["nccl_ranks"], serde_json::json!([0, 1, 2, 3, 4, 5]));
    assert_eq!(comms[0]["size"], Value::Null);
    for (i, row) in v["rows"].as_array().unwrap().iter().enumerate() {
        assert_eq!(row["matched"], 2, "rank {i}");
        assert_eq!(row["wait_ns"], world_wait[i] + group_wait[i], "rank {i}");
        let last = i64::from(i == world_last) + i64::from(i == 0) + i64::from(i == 4);
        assert_eq!(row["arrived_last"], last, "rank {i}");
    }
    let keys: Vec<&str> =
        v["notes"].as_array().unwrap().iter().filter_map(|n| n["key"].as_str()).collect();
    assert!(keys.contains(&"note.match_communicators"), "{keys:?}");
    assert!(!keys.contains(&"note.payload_unusable"), "{keys:?}");
    assert!(!keys.contains(&"note.payloads_not_exported"), "{keys:?}");

    // Ranks 0-3 only: the world communicator has 4 of its 6 ranks here (its inits say 6),
    // and ault44's group one, rank 3, whose AllReduce has no counterpart here.
    let v = skew(dir.path(), &["--devices", "0-3"]);
    assert_eq!(v["parameters"]["match_rule"], "communicator-ordinal");
    let note = v["notes"].as_array().unwrap().iter().find(|n| n["key"] == "note.comm_partial");
    let text = note.unwrap()["text"].as_str().unwrap();
    assert!(text.contains(&format!("0x{WORLD:016x} (4 of 6)")), "{text}");
    assert_eq!(v["values"]["unmatched"], 1);
    assert_eq!(v["values"]["matched"], 2);
    assert_eq!(v["values"]["start_skew_max_ns"], Value::Null);

    // The CPU side follows the same matching: the second instance in time order is ault43's
    // node AllReduce, ranks 0-2 only, rank 0 the last (150,000 ns after rank 1).
    let g = glob(dir.path());
    let v = run_json(&["query", "nccl-calls", &g, "--stream", "auto", "--instance", "2", "--json"]);
    assert_eq!(v["parameters"]["match_rule"], "communicator-ordinal");
    assert_eq!(v["values"]["start_skew_ns"], 150_000);
    let rows = v["rows"].as_array().unwrap();
    let offsets: Vec<Value> = rows.iter().map(|r| r["kernel_start_offset_ns"].clone()).collect();
    assert_eq!(
        offsets,
        [150_000.into(), 0.into(), 60_000.into(), Value::Null, Value::Null, Value::Null]
    );
    // Each new call was shifted with its kernel: call to kernel as on the rank's first call.
    for (i, row) in rows.iter().take(3).enumerate() {
        assert_eq!(row["call_to_kernel_ns"], world[i].start - world[i].call_start, "rank {i}");
    }

    // By ordinal within the collective name, the second AllReduce of ault43's ranks would pair
    // with ault44's, 50 ms apart: the files without their payloads say so.
    let plain = copy_run("results_Ring_2nodes_6GPUs_1010").unwrap();
    for (f, g) in sorted_files(dir.path()).iter().zip(sorted_files(plain.path())) {
        std::fs::copy(f, &g).unwrap();
        let c = rusqlite::Connection::open(&g).unwrap();
        c.execute("UPDATE NVTX_EVENTS SET binaryData = NULL", []).unwrap();
    }
    let v = skew(plain.path(), &[]);
    assert_eq!(v["parameters"]["match_rule"], "collective-ordinal");
    assert_eq!(v["values"]["overlap_failures"], 1);
    assert_eq!(v["values"]["start_skew_max_ns"], Value::Null);
    // The schemas are registered (NVTX_PAYLOAD_SCHEMAS), the values are not: the evidence
    // names the export option that keeps them.
    let note = util::note(&v, "note.payloads_not_exported");
    assert!(note["text"].as_str().unwrap().contains("--include-blobs=true"), "{note}");
}

#[test]
fn a_malformed_payload_is_named_and_the_ordinal_rule_disclosed() {
    let Some(dir) = ring_with_node_groups() else {
        return skip_no_shared("a_malformed_payload_is_named");
    };
    let files = sorted_files(dir.path());
    // Rank 4's world call: a blob cut to 20 bytes; rank 2's: text, not bytes.
    let c = rusqlite::Connection::open(&files[4]).unwrap();
    c.execute(
        "UPDATE NVTX_EVENTS SET binaryData = substr(binaryData, 1, 20)
         WHERE textId = (SELECT id FROM StringIds WHERE value = 'ncclAllReduce')
           AND start = (SELECT min(start) FROM NVTX_EVENTS WHERE textId = (SELECT id FROM StringIds WHERE value = 'ncclAllReduce'))",
        [],
    )
    .unwrap();
    let c = rusqlite::Connection::open(&files[2]).unwrap();
    c.execute(
        "UPDATE NVTX_EVENTS SET binaryData = 'abc'
         WHERE textId = (SELECT id FROM StringIds WHERE value = 'ncclAllReduce')",
        [],
    )
    .unwrap();
    let out = run(&["query", "nccl-skew", &glob(dir.path()), "--stream", "auto", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["parameters"]["match_rule"], "collective-ordinal");
    let note = util::note(&v, "note.payload_unusable");
    let text = note["text"].as_str().unwrap();
    assert!(text.contains("devices 2,4 "), "{text}");
    assert!(text.contains("holds a text value, not bytes"), "{text}");
    // The ordinal rule pairs the node groups' AllReduces: a broken match, no judged skew.
    assert_eq!(v["values"]["overlap_failures"], 1);
    assert_eq!(v["values"]["start_skew_max_ns"], Value::Null);
    // Rank 4's reason alone, once rank 2's payloads are bytes again.
    for (blob, order) in [(allreduce_blob(WORLD), "ASC"), (allreduce_blob(NODE_A), "DESC")] {
        c.execute(
            &format!(
                "UPDATE NVTX_EVENTS SET binaryData = ?1 WHERE rowid = (SELECT n.rowid FROM NVTX_EVENTS n
                   JOIN StringIds s ON s.id = n.textId WHERE s.value = 'ncclAllReduce' ORDER BY n.start {order} LIMIT 1)"
            ),
            [blob],
        )
        .unwrap();
    }
    let v = skew(dir.path(), &[]);
    let note = util::note(&v, "note.payload_unusable");
    let text = note["text"].as_str().unwrap();
    assert!(text.contains("devices 4 "), "{text}");
    assert!(text.contains("20 bytes, shorter than the 32-byte payload header"), "{text}");
}

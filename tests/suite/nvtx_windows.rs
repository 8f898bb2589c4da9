//! Windows taken from NVTX ranges, on the command line and in claims files: the window each
//! resolves to is checked against SQL over the day26 fixture, and the GPU projection of step 4
//! on device 4 gives the article's numbers (fixtures/day26/check.py).

use crate::util;

use assert_cmd::Command;
use serde_json::Value;
use util::open_ro;

const TRACE: &str = "fixtures/day26/megatron.sqlite";

fn verdict(args: &[&str]) -> std::process::Output {
    Command::cargo_bin("verdict").unwrap().args(args).output().unwrap()
}

fn json(args: &[&str]) -> Value {
    let out = verdict(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The process that launched device 4's kernels, and its `step 4` range, by SQL.
fn step4_of_device4() -> (i64, i64, i64) {
    let conn = open_ro(std::path::Path::new(TRACE));
    let pid: i64 = conn
        .query_row(
            "SELECT DISTINCT (globalPid >> 24) & 16777215 FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId = 4",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let (start, end): (i64, i64) = conn
        .query_row(
            "SELECT start, \"end\" FROM NVTX_EVENTS WHERE text = 'step 4' AND eventType = 59
             AND (globalTid >> 24) & 16777215 = ?1",
            [pid],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    (pid, start, end)
}

#[test]
fn a_cpu_window_is_the_range_on_the_devices_process() {
    let (pid, start, end) = step4_of_device4();
    let v =
        json(&["query", "overlap", TRACE, "--device", "4", "--nvtx-window", "step 4", "--json"]);
    assert_eq!(v["window"]["requested_ns"], serde_json::json!([start, end]));
    let note = v["notes"].as_array().unwrap().iter().find(|n| n["key"] == "note.window_nvtx_cpu");
    assert!(note.unwrap()["text"].as_str().unwrap().contains(&format!("pid {pid}")));
}

#[test]
fn the_gpu_projection_of_step_4_gives_the_articles_breakdown() {
    // By SQL: device 4's kernels whose launch record (same process and correlationId) starts
    // inside the step 4 range; the window is their first start to last end.
    let (pid, start, end) = step4_of_device4();
    let conn = open_ro(std::path::Path::new(TRACE));
    let (lo, hi): (i64, i64) = conn
        .query_row(
            "SELECT min(k.start), max(k.\"end\") FROM CUPTI_ACTIVITY_KIND_KERNEL k
             JOIN CUPTI_ACTIVITY_KIND_RUNTIME r
               ON r.correlationId = k.correlationId AND (r.globalTid >> 24) = (k.globalPid >> 24)
             WHERE k.deviceId = 4 AND (k.globalPid >> 24) & 16777215 = ?1
               AND r.start >= ?2 AND r.start < ?3",
            [pid, start, end],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let v = json(&[
        "query",
        "overlap",
        TRACE,
        "--device",
        "4",
        "--nvtx-window",
        "step *",
        "--nvtx-index",
        "1",
        "--nvtx-on",
        "gpu",
        "--semantics",
        "contain",
        "--json",
    ]);
    assert_eq!(v["window"]["requested_ns"], serde_json::json!([lo, hi]));
    // check.py's device-4 numbers for the article's window.
    let vals = &v["values"];
    assert_eq!(vals["compute_only_ns"], 4_260_443_617_i64);
    assert_eq!(vals["nccl_only_ns"], 1_094_738_291_i64);
    assert_eq!(vals["overlap_ns"], 709_187_543_i64);
    assert_eq!(vals["idle_ns"], 91_379_478_i64);
    assert_eq!(vals["total_ns"], 6_155_748_929_i64);
}

#[test]
fn a_window_that_names_no_single_range_is_an_error_with_a_hint() {
    for (args, says) in [
        (vec!["--nvtx-window", "step *"], "ranges match on one process"),
        (vec!["--nvtx-window", "step *", "--nvtx-index", "6"], "index 6 is past the 6"),
        (vec!["--nvtx-window", "no such range"], "no NVTX range of that name"),
    ] {
        let out = verdict(&[&["query", "overlap", TRACE, "--device", "4"][..], &args].concat());
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says) && err.contains("hint"), "{args:?}: {err}");
    }
}

fn claims(dir: &std::path::Path, window: &str) -> std::path::PathBuf {
    let trace = std::fs::canonicalize(TRACE).unwrap();
    let text = format!(
        r#"report:
  id: w
  languages: [en]
  title: {{ en: "t" }}
traces:
  A: {{ path: "{}" }}
scopes:
  s: {{ trace: A, devices: "4", semantics: contain, window: {window} }}
claims:
  - id: c
    statement: {{ en: "exposed NCCL is 10-30% of step 4" }}
    principal: p
    parts:
      - id: p
        kind: observation
        measure: {{ analysis: overlap, scope: s, value: "nccl_only_ns / total_ns", unit: "%" }}
        condition: {{ between: ["10%", "30%"] }}
"#,
        trace.display()
    );
    let path = dir.join("c.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_claims_scope_takes_its_window_from_a_step_range() {
    let dir = tempfile::tempdir().unwrap();
    let path = claims(dir.path(), r#"{ nvtx: "step 4", on: gpu }"#);
    let v = json(&["check", path.to_str().unwrap(), "--json"]);
    let ev = &v["ledger"][0]["evidence"];
    assert_eq!(ev["values"]["nccl_only_ns"], 1_094_738_291_i64);
    assert_eq!(ev["values"]["total_ns"], 6_155_748_929_i64);
    assert_eq!(v["results"][0]["verdict"], "supported");
    // The reproducing command names the range as the scope does, and the evidence says which
    // window in seconds it resolved to.
    let cmd = v["ledger"][0]["command"].as_str().unwrap();
    assert!(cmd.contains("--nvtx-window 'step 4' --nvtx-on gpu"), "{cmd}");
    assert!(!cmd.contains("--window "), "{cmd}");
    let note = ev["notes"].as_array().unwrap().iter().find(|n| n["key"] == "note.window_nvtx_gpu");
    assert_eq!(note.unwrap()["args"]["window"], "39.966143587:46.121892516");
}

#[test]
fn a_bad_nvtx_window_in_a_claims_file_is_located() {
    let dir = tempfile::tempdir().unwrap();
    for (window, says) in [
        (r#"{ nvtx: "step 4", on: tpu }"#, "`on: tpu` is not cpu or gpu"),
        (r#"{ nvtx: "step 4", idx: 2 }"#, "unknown key `idx`"),
        (r#"{ index: 2 }"#, "needs `nvtx: NAME`"),
    ] {
        let path = claims(dir.path(), window);
        let out = verdict(&["check", path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{window}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(":8:") && err.contains(says) && err.contains("hint"),
            "{window}: {err}"
        );
    }
}

/// A set of windows: one sample per step, each the GPU projection of that step's range (by
/// SQL, as above), and a claim judged on the median of its formula over the samples.
#[test]
fn a_set_of_step_windows_gives_one_sample_per_step_and_a_median() {
    let conn = open_ro(std::path::Path::new(TRACE));
    let (pid, _, _) = step4_of_device4();
    let mut steps: Vec<(i64, i64)> = conn
        .prepare(
            "SELECT start, \"end\" FROM NVTX_EVENTS WHERE text LIKE 'step %' AND eventType = 59
             AND (globalTid >> 24) & 16777215 = ?1 ORDER BY start",
        )
        .unwrap()
        .query_map([pid], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    steps.sort_unstable();
    let projections: Vec<[i64; 2]> = steps
        .iter()
        .map(|&(a, b)| {
            conn.query_row(
                "SELECT min(k.start), max(k.\"end\") FROM CUPTI_ACTIVITY_KIND_KERNEL k
                 JOIN CUPTI_ACTIVITY_KIND_RUNTIME r
                   ON r.correlationId = k.correlationId AND (r.globalTid >> 24) = (k.globalPid >> 24)
                 WHERE k.deviceId = 4 AND r.start >= ?1 AND r.start < ?2",
                [a, b],
                |r| Ok([r.get(0)?, r.get(1)?]),
            )
            .unwrap()
        })
        .collect();
    assert_eq!(projections.len(), 6);
    let dir = tempfile::tempdir().unwrap();
    let path = claims(dir.path(), r#"{ nvtx: "step *", index: all, on: gpu }"#);
    let v = json(&["check", path.to_str().unwrap(), "--json"]);
    let ev = &v["ledger"][0]["evidence"];
    let windows: Vec<[i64; 2]> = ev["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| serde_json::from_value(s["window_ns"].clone()).unwrap())
        .collect();
    assert_eq!(windows, projections);
    // The sample of step 4 (index 1) is the article's breakdown.
    assert_eq!(ev["samples"][1]["values"]["nccl_only_ns"], 1_094_738_291_i64);
    assert_eq!(ev["samples"][1]["values"]["total_ns"], 6_155_748_929_i64);
    // The part's value is the lower median of the six per-step shares, computed here.
    let mut shares: Vec<(i64, i64)> = ev["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["values"]["nccl_only_ns"].as_i64().unwrap(),
                s["values"]["total_ns"].as_i64().unwrap(),
            )
        })
        .collect();
    shares.sort_by(|a, b| (a.0 as i128 * b.1 as i128).cmp(&(b.0 as i128 * a.1 as i128)));
    let median = shares[(shares.len() - 1) / 2];
    let part = &v["results"][0]["parts"][0];
    let exact: [String; 2] = serde_json::from_value(part["formula"]["exact"].clone()).unwrap();
    let (n, d): (i128, i128) = (exact[0].parse().unwrap(), exact[1].parse().unwrap());
    assert_eq!(n * median.1 as i128, d * median.0 as i128, "median {median:?} vs {exact:?}");
    assert_eq!(part["samples"].as_array().unwrap().len(), 6);
    assert_eq!(v["results"][0]["verdict"], "supported");
    // Reproduced by naming the ranges.
    let cmd = v["ledger"][0]["command"].as_str().unwrap();
    assert!(
        cmd.contains("--nvtx-window 'step *' --nvtx-index all --nvtx-on gpu --semantics contain"),
        "{cmd}"
    );
}

/// `inspect` lists every process that recorded NVTX ranges or launched kernels, with its
/// ranges and distinct names, the devices its kernels ran on, and the file's host, as SQL
/// counts them.
#[test]
fn inspect_counts_nvtx_ranges_per_process() {
    let conn = open_ro(std::path::Path::new(TRACE));
    let want: Vec<(i64, i64, i64)> = conn
        .prepare(
            "WITH ranges AS (
               SELECT (e.globalTid >> 24) & 16777215 AS pid, count(*) AS n,
                      count(DISTINCT COALESCE(e.text, s.value)) AS names
               FROM NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId
               WHERE e.eventType IN (59, 60) GROUP BY 1),
             launchers AS (
               SELECT DISTINCT (r.globalTid >> 24) & 16777215 AS pid
               FROM CUPTI_ACTIVITY_KIND_KERNEL k
               JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId
                 AND (r.globalTid >> 24) & 16777215 = (k.globalPid >> 24) & 16777215)
             SELECT pid, n, names FROM ranges
             UNION SELECT pid, 0, 0 FROM launchers WHERE pid NOT IN (SELECT pid FROM ranges)
             ORDER BY 1",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let v = json(&["inspect", TRACE, "--json"]);
    let got: Vec<(i64, i64, i64)> = v["nvtx"]["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["pid"].as_i64().unwrap(),
                p["ranges"].as_i64().unwrap(),
                p["names"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, want);
    let host: Option<String> = conn
        .query_row("SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'Hostname'", [], |r| {
            r.get(0)
        })
        .ok();
    for p in v["nvtx"]["processes"].as_array().unwrap() {
        assert_eq!(p["host"].as_str().map(str::to_string), host, "{p}");
        // An nsys export records no rank.
        assert!(p["rank"].is_null(), "{p}");
    }
    // Rank 0's process has ranges but no kernels; device 4's process is the one of step 4.
    let (pid4, _, _) = step4_of_device4();
    let p4 = v["nvtx"]["processes"].as_array().unwrap().iter().find(|p| p["pid"] == pid4).unwrap();
    assert_eq!(p4["devices"], serde_json::json!([4]));
}

/// Parameters that exclude each other are refused whichever declares the conflict: `name`
/// refuses `match` and `regex`, and `match` refuses `regex`.
#[test]
fn exclusive_parameters_are_refused_either_way_round() {
    let dir = tempfile::tempdir().unwrap();
    let trace = std::fs::canonicalize(TRACE).unwrap();
    for (params, says) in [
        (r#"name: "step 4", match: step"#, "give `match` or `name`, not both"),
        (r#"regex: "^step", name: "step 4""#, "give `name` or `regex`, not both"),
        (r#"match: step, regex: "^step""#, "give `match` or `regex`, not both"),
    ] {
        let text = format!(
            r#"report: {{ id: w, languages: [en], title: {{ en: t }} }}
traces:
  A: {{ path: "{}" }}
scopes:
  s: {{ trace: A, devices: "4" }}
claims:
  - id: c
    statement: {{ en: "s" }}
    principal: p
    parts:
      - id: p
        kind: observation
        measure: {{ analysis: nvtx, scope: s, value: kernel_share, unit: "%", {params} }}
"#,
            trace.display()
        );
        let path = dir.path().join("c.yaml");
        std::fs::write(&path, text).unwrap();
        let out = verdict(&["check", path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{params}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says) && err.contains(":13:"), "{params}: {err}");
    }
}

/// `over:` decides a claim about every step (or one step) from each step's share, checked
/// here against the samples' own numbers: `all` holds only if each step's share lies in
/// 10-30%, `any` if one does, and the steps outside are the ones named.
#[test]
fn over_all_and_any_judge_each_step() {
    let dir = tempfile::tempdir().unwrap();
    let path = claims(dir.path(), r#"{ nvtx: "step *", index: all, on: gpu }"#);
    let text = std::fs::read_to_string(&path).unwrap();
    for over in ["all", "any", "median"] {
        let with = text.replace(r#"unit: "%" }"#, &format!(r#"unit: "%", over: {over} }}"#));
        std::fs::write(&path, &with).unwrap();
        let v = json(&["check", path.to_str().unwrap(), "--json"]);
        let samples = v["ledger"][0]["evidence"]["samples"].as_array().unwrap();
        let inside: Vec<bool> = samples
            .iter()
            .map(|s| {
                let (n, d) = (
                    s["values"]["nccl_only_ns"].as_i64().unwrap() as i128,
                    s["values"]["total_ns"].as_i64().unwrap() as i128,
                );
                10 * d <= 100 * n && 100 * n <= 30 * d
            })
            .collect();
        let part = &v["results"][0]["parts"][0];
        match over {
            "all" | "any" => {
                let holds =
                    if over == "all" { inside.iter().all(|&b| b) } else { inside.contains(&true) };
                let want = if holds { "supported" } else { "not_supported" };
                assert_eq!(part["outcome"], want, "{over}: {part}");
                let held = inside.iter().filter(|&&b| b).count();
                assert_eq!(part["reason"]["args"]["held"], held.to_string(), "{over}");
                assert!(
                    part["reason"]["key"].as_str().unwrap().starts_with("part.windows_"),
                    "{part}"
                );
            }
            _ => {
                let f = part["formula"]["substituted"].as_str().unwrap();
                assert!(f.starts_with(&format!("median of {} windows", samples.len())), "{f}");
            }
        }
    }
    // One window is no set: `over` there is refused at its line and column.
    let one = claims(dir.path(), r#"{ nvtx: "step 4", on: gpu }"#);
    let text = std::fs::read_to_string(&one).unwrap();
    std::fs::write(&one, text.replace(r#"unit: "%" }"#, r#"unit: "%", over: all }"#)).unwrap();
    let out = util::run(&["check", one.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(":16:") && err.contains("`over` quantifies a set of windows"), "{err}");
}

//! `verdict query` on the day26 trace against the numbers of `fixtures/day26/check.py`, an
//! independent Python computation over the same file (see fixtures/day26/README.md), as JSON
//! and, for the units of short times, as terminal text.

use crate::util;

use assert_cmd::Command;
use serde_json::Value;

const TRACE: &str = "fixtures/day26/megatron.sqlite";

/// `verdict query ARGS --json`; an analysis whose aggregates run on an engine runs on every
/// engine of the build, which must print the same evidence.
fn query(args: &[&str]) -> Value {
    if matches!(args[0], "overlap" | "nccl-skew") {
        let mut all = vec!["query"];
        all.extend(args);
        all.push("--json");
        return util::run_json_on_engines(&all, None);
    }
    let out = Command::cargo_bin("verdict")
        .unwrap()
        .arg("query")
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn device_4_breakdown_in_the_article_window() {
    let base = ["overlap", TRACE, "--device", "4", "--window", "39.964:46.123", "--semantics"];
    let v = query(&[&base[..], &["contain"]].concat());
    let vals = &v["values"];
    assert_eq!(vals["compute_only_ns"], 4_260_443_617_i64);
    assert_eq!(vals["nccl_only_ns"], 1_094_738_291_i64);
    assert_eq!(vals["overlap_ns"], 709_187_543_i64);
    assert_eq!(vals["idle_ns"], 91_379_478_i64);
    assert_eq!(vals["total_ns"], 6_155_748_929_i64);
    assert_eq!(
        v["window"]["requested_ns"],
        serde_json::json!([39_964_000_000_i64, 46_123_000_000_i64])
    );
    assert_eq!(
        v["window"]["effective_ns"],
        serde_json::json!([39_966_143_587_i64, 46_121_892_516_i64])
    );
    assert_eq!(v["scope"]["missing_devices"], serde_json::json!([0]));
    assert_eq!(vals["kernels"], 948);

    let v = query(&[&base[..], &["clip"]].concat());
    let vals = &v["values"];
    assert_eq!(vals["compute_only_ns"], 4_261_244_647_i64);
    assert_eq!(vals["nccl_only_ns"], 1_094_738_291_i64);
    assert_eq!(vals["overlap_ns"], 709_187_543_i64);
    assert_eq!(vals["idle_ns"], 93_829_519_i64);
    assert_eq!(vals["total_ns"], 6_159_000_000_i64);
    assert_eq!(vals["kernels"], 950);
}

#[test]
fn flash_bwd_count_over_devices_1_to_7() {
    let v = query(&[
        "kernels",
        TRACE,
        "--devices",
        "1-7",
        "--window",
        "39.964:46.123",
        "--semantics",
        "contain",
        "--match",
        "flash_bwd_dq_dk_dv_loop_seqk_parallel",
    ]);
    assert_eq!(v["values"]["count"], 140);
    for d in 1..=7 {
        assert_eq!(v["values"]["per_device"][d.to_string()], 20);
    }
    // The whole trace has six steps of them.
    let v = query(&["kernels", TRACE, "--match", "flash_bwd_dq_dk_dv_loop_seqk_parallel"]);
    assert_eq!(v["values"]["count"], 840);
}

#[test]
fn stream_56_wait_share() {
    let v = query(&["nccl-skew", TRACE, "--stream", "56"]);
    let vals = &v["values"];
    assert_eq!(vals["matched"], 1008);
    assert_eq!(vals["wait_ns"], 21_078_721_930_i64);
    assert_eq!(vals["nccl_ns"], 74_483_116_358_i64);
    assert_eq!(vals["ranks"], 7);
    let last = &vals["last_arrivals"];
    let expected = [(1, 85), (2, 318), (3, 87), (4, 4), (5, 43), (6, 376), (7, 95)];
    for (d, n) in expected {
        assert_eq!(last[d.to_string()], n, "device {d}");
    }
    // A list: every rank that arrived last most often (one here, no tie).
    assert_eq!(vals["most_often_last"], serde_json::json!([6]));
}

/// `verdict query ARGS` as text laid out for 100 columns; exit code 0.
fn query_text(args: &[&str]) -> String {
    let out = Command::cargo_bin("verdict")
        .unwrap()
        .arg("query")
        .args(args)
        .env("COLUMNS", "100")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn short_kernels_show_microseconds() {
    // The 42 `cleanup` kernels (6 per device), by SQL over the trace: durations sum to
    // 1,723,572 ns, the mean is 41,037.43 ns, the lower median 41,689 ns and the longest
    // 44,849 ns.
    let v = query(&["kernels", TRACE, "--match", "cleanup"]);
    let row = &v["rows"][0];
    assert_eq!(row["name"], "cleanup");
    assert_eq!(row["count"], 42);
    assert_eq!(row["total_ns"], 1_723_572);
    assert_eq!(row["mean_ns"], 41_037);
    assert_eq!(row["median_ns"], 41_689);
    assert_eq!(row["max_ns"], 44_849);
    // 1.723572 ms -> 1.72 ms; 41.037 µs -> 41.0 µs; 41.689 µs -> 41.7 µs; 44.849 µs -> 44.8 µs.
    let text = query_text(&["kernels", TRACE, "--match", "cleanup"]);
    let line = text.lines().find(|l| l.starts_with("cleanup ")).expect("a row for cleanup");
    let cells: Vec<&str> = line.split("  ").map(str::trim).filter(|c| !c.is_empty()).collect();
    assert_eq!(cells[..6], ["cleanup", "42", "1.72 ms", "41.0 µs", "41.7 µs", "44.8 µs"], "{line}");
    assert!(text.contains("all matching kernels: 42 over 1 name(s), 1.72 ms kernel time"));
    // No time in the whole table reads 0.00, and every line fits.
    let text = query_text(&["kernels", TRACE, "--limit", "30"]);
    assert!(!text.contains("0.00"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("cleanup ") && l.contains("41.0 µs")), "{text}");
    for l in text.lines() {
        assert!(unicode_width::UnicodeWidthStr::width(l) <= 100, "{l:?}");
    }
}

#[test]
fn stream_56_end_skew_is_in_microseconds() {
    // fixtures/day26/README.md (check.py): start skew median 6.41 ms, max 18.07 ms; end
    // skew median 24.7 us, max 31.7 us.
    let text = query_text(&["nccl-skew", TRACE, "--stream", "56"]);
    let line = |label: &str| text.lines().find(|l| l.starts_with(label)).unwrap().to_string();
    let start = line("start skew");
    assert!(start.contains("median 6.41 ms") && start.ends_with("max 18.07 ms"), "{start}");
    let end = line("end skew");
    assert!(end.contains("median 24.7 µs") && end.ends_with("max 31.7 µs"), "{end}");
    assert!(line("wait share").ends_with("= 28.3%"));
}

/// The unfused-operator (elementwise) ranges of fixtures/day26/README.md.
const ELEMENTWISE: &str = "^aten::(add|add_|mul|cat|gelu|gelu_backward|index_select|embedding_dense_backward|max|sub|sum|log|copy_)$";

/// NVTX op attribution on device 4, against check.py: step 4 (the article's window,
/// contain) and the whole trace; kernels enclosed by elementwise op ranges, by
/// `recompute_forward` ranges, and the kernels with no launch record.
#[test]
fn device_4_op_shares_by_nvtx_attribution() {
    let step = ["--device", "4", "--window", "39.964:46.123", "--semantics", "contain"];
    let v = query(&[&["nvtx", TRACE, "--regex", ELEMENTWISE][..], &step].concat());
    let vals = &v["values"];
    assert_eq!(vals["kernels"], 258);
    assert_eq!(vals["kernel_ns"], 278_217_535_i64);
    assert_eq!(vals["selected_kernel_ns"], 6_773_556_994_i64);
    assert_eq!(vals["no_launch_record"], 4);
    let v = query(&[&["nvtx", TRACE, "--name", "recompute_forward"][..], &step].concat());
    assert_eq!(v["values"]["kernels"], 24);
    assert_eq!(v["values"]["kernel_ns"], 22_407_403_i64);
    // Whole trace, device 4.
    let v = query(&["nvtx", TRACE, "--regex", ELEMENTWISE, "--device", "4"]);
    assert_eq!(v["values"]["kernels"], 1_552);
    assert_eq!(v["values"]["kernel_ns"], 1_677_791_692_i64);
    assert_eq!(v["values"]["selected_kernel_ns"], 40_645_934_450_i64);
    assert_eq!(v["values"]["no_launch_record"], 7);
    // Innermost without a filter: GEMM (`aten::mm`) and attention, as check.py sums them.
    let v = query(&[&["nvtx", TRACE][..], &step].concat());
    let row = |name: &str| {
        v["rows"].as_array().unwrap().iter().find(|r| r["name"] == name).cloned().unwrap()
    };
    assert_eq!(
        (row("aten::mm")["kernels"].as_i64(), row("aten::mm")["kernel_ns"].as_i64()),
        (Some(245), Some(3_678_227_522))
    );
    let attention: i64 = ["FlashAttnFunc", "FlashAttnFuncBackward"]
        .iter()
        .map(|n| row(n)["kernel_ns"].as_i64().unwrap())
        .sum();
    assert_eq!(attention, 800_357_652);
    // Ranges of one process: device 4's own `step 4` encloses its 948 step-4 kernels but the 4
    // without a launch record; device 1's process launches none of device 4's kernels.
    for (pid, kernels) in [("51881", 944), ("51874", 0)] {
        let v = query(&["nvtx", TRACE, "--device", "4", "--name", "step 4", "--pid", pid]);
        assert_eq!(
            (v["values"]["ranges"].as_i64(), v["values"]["kernels"].as_i64()),
            (Some(1), Some(kernels))
        );
    }
}

/// `streams` on device 4 in the article's window (contain): each stream's busy time and
/// kernels, and the device's union, against SQL over the file: the union of sorted intervals
/// adds each kernel's part past the latest end before it.
#[test]
fn device_4_busy_time_per_stream_by_sql() {
    let (w0, w1) = (39_964_000_000_i64, 46_123_000_000_i64);
    let conn = util::open_ro(std::path::Path::new(TRACE));
    let union_sql = |partition: &str| {
        format!(
            "WITH k AS (SELECT streamId AS s, start AS a, \"end\" AS b \
               FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId = 4 AND start >= ?1 AND \"end\" <= ?2), \
             r AS (SELECT s, a, b, MAX(b) OVER (PARTITION BY {partition} ORDER BY a, b \
               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev FROM k) \
             SELECT {partition}, COUNT(*), SUM(MAX(0, b - MAX(a, COALESCE(prev, a)))), MIN(a), MAX(b) \
             FROM r GROUP BY {partition}"
        )
    };
    let mut stmt = conn.prepare(&union_sql("s")).unwrap();
    let mut per_stream: Vec<(i64, i64, i64)> = stmt
        .query_map([w0, w1], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    per_stream.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
    let (kernels, busy, lo, hi): (i64, i64, i64, i64) = conn
        .query_row(&union_sql("1"), [w0, w1], |r| Ok((r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
        .unwrap();
    assert!(per_stream.len() > 1, "the fixture has several streams on device 4");

    let v = query(&[
        "streams",
        TRACE,
        "--device",
        "4",
        "--window",
        "39.964:46.123",
        "--semantics",
        "contain",
    ]);
    let vals = &v["values"];
    let got: Vec<(i64, i64, i64)> = vals["per_stream"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (util::int(s, "stream"), util::int(s, "kernels"), util::int(s, "busy_ns")))
        .collect();
    assert_eq!(got, per_stream);
    assert_eq!(util::int(vals, "kernels"), kernels);
    assert_eq!(util::int(vals, "busy_ns"), busy);
    assert_eq!(util::int(vals, "total_ns"), hi - lo);
    assert_eq!(util::int(vals, "idle_ns"), hi - lo - busy);
    assert_eq!(util::int(vals, "streams"), per_stream.len() as i64);
    assert_eq!(util::int(vals, "stream_busy_ns"), per_stream.iter().map(|s| s.2).sum::<i64>());
    assert_eq!(util::int(vals, "busiest_stream_ns"), per_stream[0].2);
    // The same device and window as the overlap breakdown above: busy is its three parts.
    assert_eq!(busy, 4_260_443_617 + 1_094_738_291 + 709_187_543);
}

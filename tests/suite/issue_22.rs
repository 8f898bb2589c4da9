//! Regressions of issue 22: meanings that were wrong while every number agreed.
//!
//! Each expected value is computed here independently: by hand, or by SQL over the fixture
//! through a read-only connection, never copied from the tool's output.

use crate::util;

use std::path::Path;

use serde_json::Value;

use util::{fixture, manifest_dir, open_ro, run_in, run_json};

/// Writes `text` as `name` in a fresh temporary folder and returns both.
fn claims_file(name: &str, text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let p = dir.path().join(name);
    std::fs::write(&p, text).expect("write claims");
    (dir, p)
}

/// `verdict check FILE --json`, whatever its exit code (an unverifiable claim is not an error).
fn check_json(file: &Path) -> Value {
    let out = run_in(Some(&manifest_dir()), &["check", file.to_str().unwrap(), "--json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("no JSON ({e}): {stderr}"))
}

// ---------------------------------------------------------------------------------------------
// Empty matches are not 0

/// The review's `zero.yaml`: a median over no kernel.
fn zero_yaml(trace: &Path) -> String {
    format!(
        r#"report: {{ id: zero, languages: [en], title: {{en: z}}, question: {{en: q}}, answer: {{en: a}}, decision: {{en: d}}, date: "2026-08-28" }}
sources: {{ s: {{ label: {{ en: s }} }} }}
traces: {{ A: {{ path: "{}", label: {{ en: A }} }} }}
scopes: {{ all: {{ trace: A, devices: all }} }}
claims:
  - id: c1
    source: s
    statement: {{ en: "the no-such kernel's median is under 1 us" }}
    parts:
      - id: p
        kind: observation
        text: {{ en: "median of no_such_kernel" }}
        measure: {{ analysis: kernels, scope: all, value: "median_ns", unit: ns, match: "no_such_kernel" }}
        condition: {{ at_most: "1000 ns" }}
"#,
        trace.display()
    )
}

#[test]
fn a_median_over_no_kernel_is_null_and_the_claim_unverifiable() {
    let trace = fixture("nsys-ai/h100_2gpu_1s.sqlite");
    // Independently: no kernel of the trace has that name.
    let n: i64 = open_ro(&trace)
        .query_row(
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName WHERE s.value LIKE '%no_such_kernel%'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(n, 0);
    let ev = run_json(&["query", "kernels", trace.to_str().unwrap(), "--match", "zzz", "--json"]);
    let v = &ev["values"];
    assert_eq!(v["count"], 0);
    assert_eq!(v["total_ns"], 0, "a sum over nothing is 0");
    for f in ["mean_ns", "min_ns", "median_ns", "max_ns"] {
        assert!(v[f].is_null(), "{f} = {}", v[f]);
        assert!(
            ev["notes"].as_array().unwrap().iter().any(|n| n["key"] == "note.no_kernel_match"
                && n["null_fields"].as_array().unwrap().iter().any(|x| x == f)),
            "no note explains {f}: {}",
            ev["notes"]
        );
    }
    let (_dir, claims) = claims_file("zero.yaml", &zero_yaml(&trace));
    let audit = check_json(&claims);
    let c1 = audit["results"].as_array().unwrap().iter().find(|r| r["id"] == "c1").unwrap();
    assert_eq!(c1["verdict"], "unverifiable", "{c1}");
    assert_eq!(c1["parts"][0]["outcome"], "unverifiable", "{}", c1["parts"][0]);
    assert_eq!(
        c1["parts"][0]["reason"]["key"], "note.no_kernel_match",
        "the reason is named: {c1}"
    );
}

#[test]
fn nvtx_range_statistics_over_no_range_are_null_with_a_reason() {
    let trace = fixture("day26/megatron.sqlite");
    let ev = run_json(&[
        "query",
        "nvtx",
        trace.to_str().unwrap(),
        "--device",
        "4",
        "--name",
        "no such range",
        "--json",
    ]);
    let v = &ev["values"];
    assert_eq!(v["ranges"], 0);
    assert_eq!(v["kernels"], 0);
    let notes = ev["notes"].as_array().unwrap();
    for (f, key) in [
        ("range_median_ns", "note.no_range_match"),
        ("range_max_ns", "note.no_range_match"),
        ("gpu_span_ns", "note.no_kernel_attributed"),
    ] {
        assert!(v[f].is_null(), "{f} = {}", v[f]);
        assert!(
            notes
                .iter()
                .any(|n| n["key"] == key
                    && n["null_fields"].as_array().unwrap().iter().any(|x| x == f)),
            "{f}: {}",
            ev["notes"]
        );
    }
}

// ---------------------------------------------------------------------------------------------
// `check`'s text

/// `verdict check ARGS` from the crate root: its standard output.
fn check_text(args: &[&str]) -> String {
    let mut a = vec!["check"];
    a.extend_from_slice(args);
    let out = run_in(Some(&manifest_dir()), &a);
    assert!(out.status.code().is_some_and(|c| c < 2), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_check_header_never_ends_on_an_empty_missing_item() {
    let text = check_text(&["claims/h100-2gpu-no-nccl.yaml"]);
    let header: Vec<&str> = text.lines().take_while(|l| !l.trim().is_empty()).collect();
    assert!(header.iter().all(|l| !l.trim_end().ends_with("· missing")), "{text}");
    assert!(text.contains("no expected device is missing"), "{text}");
}

#[test]
fn the_check_header_speaks_the_language_asked_for() {
    let text = check_text(&["claims/day26-profile-blind.yaml", "--lang", "zh-TW"]);
    let header: String =
        text.lines().take_while(|l| !l.trim().is_empty()).collect::<Vec<_>>().join("\n");
    for english in ["claims ", "report ", "devices with kernels", "missing"] {
        assert!(!header.contains(english), "`{english}` in the zh-TW header:\n{header}");
    }
    assert!(header.starts_with("主張檔"), "{header}");
    assert!(header.contains("有 kernel 的 device 1-7"), "{header}");
}

#[test]
fn gate_r2_never_names_device_none() {
    let trace = fixture("nsys-ai/h100_2gpu_1s.sqlite");
    let (_dir, claims) = claims_file("zero.yaml", &zero_yaml(&trace));
    // Lines wrap at 100 columns: read the words.
    let text =
        check_text(&[claims.to_str().unwrap()]).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(!text.contains("device none"), "{text}");
    assert!(text.contains("expected devices without kernels: none"), "{text}");
}

// ---------------------------------------------------------------------------------------------
// Reproducing commands

#[test]
fn a_reproducing_command_keeps_the_expected_devices_and_gives_the_same_evidence() {
    let trace = fixture("nsys-ai/h100_2gpu_1s.sqlite");
    // The capture holds devices 0 and 1 (by SQL); the claims file expects 0-3, so 2 and 3 are
    // missing by its declaration, and by nothing else.
    let present: Vec<i64> = {
        let db = open_ro(&trace);
        let mut st = db
            .prepare("SELECT DISTINCT deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY deviceId")
            .unwrap();
        st.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
    };
    assert_eq!(present, [0, 1]);
    let text = std::fs::read_to_string(manifest_dir().join("claims/h100-2gpu-no-nccl.yaml"))
        .unwrap()
        .replace("../fixtures/nsys-ai/h100_2gpu_1s.sqlite", trace.to_str().unwrap())
        .replace("expect_devices: 0-1", "expect_devices: 0-3");
    let (_dir, claims) = claims_file("expect.yaml", &text);
    let audit = check_json(&claims);
    let ledger = audit["ledger"].as_array().unwrap();
    assert!(!ledger.is_empty());
    for e in ledger {
        let want = &e["evidence"];
        assert_eq!(want["scope"]["missing_devices"], serde_json::json!([2, 3]), "{}", e["command"]);
        let argv: Vec<String> = serde_json::from_value(e["argv"].clone()).unwrap();
        let args: Vec<&str> = argv[1..].iter().map(String::as_str).collect();
        let got = run_json(&args);
        assert_eq!(got["scope"], want["scope"], "{}", e["command"]);
        assert_eq!(got["values"], want["values"], "{}", e["command"]);
        assert_eq!(got["notes"], want["notes"], "{}", e["command"]);
    }
}

// ---------------------------------------------------------------------------------------------
// NVTX attribution under a window

/// Per range name, the kernels of device `device` that a clip window `[a, b)` attributes, by
/// the documented rule read straight from the tables: each kernel intersecting the window
/// (clipped) -> its launch record (same process and correlationId) -> the innermost of the
/// ranges on the launching thread that enclose the launch *and* that the window keeps (that
/// intersect it). Names drop PyTorch's `, op_id = N` and `, seq = N`.
fn clip_attribution_by_sql(
    trace: &Path,
    device: i64,
    (a, b): (i64, i64),
) -> std::collections::BTreeMap<String, (u64, i64)> {
    let db = open_ro(trace);
    let mut st = db
        .prepare(
            "SELECT k.start, k.\"end\", r.globalTid, r.start FROM CUPTI_ACTIVITY_KIND_KERNEL k \
             JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId \
               AND (r.globalTid >> 24) = (k.globalPid >> 24) \
             WHERE k.deviceId = ?1 AND k.\"end\" > ?2 AND k.start < ?3",
        )
        .unwrap();
    let kernels: Vec<(i64, i64, i64, i64)> = st
        .query_map([device, a, b], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut st = db
        .prepare(
            "SELECT e.globalTid, e.start, e.\"end\", coalesce(e.text, s.value), e.rowid \
             FROM NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId \
             WHERE e.eventType = 59 AND e.\"end\" IS NOT NULL AND e.\"end\" > ?1 AND e.start < ?2",
        )
        .unwrap();
    let ranges: Vec<(i64, i64, i64, String, i64)> = st
        .query_map([a, b], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut out = std::collections::BTreeMap::new();
    for (ks, ke, tid, t) in kernels {
        let inner = ranges
            .iter()
            .filter(|r| r.0 == tid && r.1 <= t && t < r.2)
            .max_by_key(|r| (r.1, -r.2, r.4));
        if let Some(r) = inner {
            let name = r.3.split(", op_id = ").next().unwrap().split(", seq = ").next().unwrap();
            let e: &mut (u64, i64) = out.entry(name.to_string()).or_default();
            e.0 += 1;
            e.1 += ke.min(b) - ks.max(a);
        }
    }
    out
}

#[test]
fn nvtx_under_a_clip_window_attributes_kernels_only_to_kept_ranges() {
    let trace = fixture("day26/megatron.sqlite");
    let (a, b) = (39_964_000_000, 46_123_000_000);
    let want = clip_attribution_by_sql(&trace, 4, (a, b));
    // The issue's figures, which the SQL above reproduces.
    assert_eq!(want["aten::copy_"], (4, 4_094_618));
    assert_eq!(want["step 3"].0, 1);
    let ev = run_json(&[
        "query",
        "nvtx",
        trace.to_str().unwrap(),
        "--device",
        "4",
        "--window",
        "39.964:46.123",
        "--json",
    ]);
    let rows = ev["rows"].as_array().unwrap();
    let got: std::collections::BTreeMap<String, (u64, i64)> = rows
        .iter()
        .filter(|r| r["kernels"].as_u64().unwrap() > 0)
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_string(),
                (r["kernels"].as_u64().unwrap(), r["kernel_ns"].as_i64().unwrap()),
            )
        })
        .collect();
    assert_eq!(got, want);
}

// ---------------------------------------------------------------------------------------------
// Split windows

/// The kernels whose short name contains `text` on `device`, by SQL.
fn kernels_by_sql(trace: &Path, device: i64, text: &str) -> i64 {
    open_ro(trace)
        .query_row(
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName \
             WHERE k.deviceId = ?1 AND instr(s.value, ?2) > 0",
            rusqlite::params![device, text],
            |r| r.get(0),
        )
        .unwrap()
}

/// The sum of one count over the samples of a split.
fn split_sum(ev: &Value, field: &str) -> i64 {
    let samples = ev["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 10);
    samples.iter().map(|s| s["values"][field].as_i64().unwrap()).sum()
}

#[test]
fn split_windows_count_each_kernel_once() {
    for (file, want) in [("mfu_2gpu_before", 34), ("mfu_2gpu_after", 30)] {
        let trace = fixture(&format!("nsys-ai/{file}.sqlite"));
        let t = trace.to_str().unwrap();
        // The issue's figures: the trace holds 34 and 30 flash_fwd kernels on device 0.
        assert_eq!(kernels_by_sql(&trace, 0, "flash_fwd"), want, "{file}");
        let ev = run_json(&[
            "query",
            "kernels",
            t,
            "--devices",
            "0",
            "--match",
            "flash_fwd",
            "--split",
            "10",
            "--json",
        ]);
        assert_eq!(split_sum(&ev, "count"), want, "{file}");
        assert_eq!(ev["parameters"]["split_membership"], "start");
        assert!(
            ev["notes"].as_array().unwrap().iter().any(|n| n["key"] == "note.split_membership")
        );
        // Every kernel of the device, once, in overlap's counts too.
        let all = open_ro(&trace)
            .query_row(
                "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId = 0",
                [],
                |r| r.get::<_, i64>(0),
            )
            .unwrap();
        let ev = run_json(&["query", "overlap", t, "--device", "0", "--split", "10", "--json"]);
        assert_eq!(split_sum(&ev, "kernels"), all, "{file}");
        // Wall time still tiles the span: the windows' totals add up to it.
        let [a, b] = [0, 1].map(|i| ev["window"]["requested_ns"][i].as_i64().unwrap());
        assert_eq!(split_sum(&ev, "total_ns"), b - a);
    }
}

// ---------------------------------------------------------------------------------------------
// Copy kinds

/// Length of the union of intervals.
fn union_ns(mut v: Vec<(i64, i64)>) -> i64 {
    v.sort_unstable();
    let (mut total, mut cur): (i64, Option<(i64, i64)>) = (0, None);
    for (s, e) in v {
        match cur {
            Some((a, b)) if s <= b => cur = Some((a, b.max(e))),
            Some((a, b)) => {
                total += b - a;
                cur = Some((s, e));
            }
            None => cur = Some((s, e)),
        }
    }
    total + cur.map_or(0, |(a, b)| b - a)
}

#[test]
fn unified_memory_copies_are_named_from_the_export_and_memsets_kept_apart() {
    // A copy of the H100 capture whose every other host-to-device copy of device 0 is made a
    // unified-memory migration (copyKind 11, which its ENUM_CUDA_MEMCPY_OPER names
    // CUDA_MEMCPY_KIND_UVM_HTOD, "Unified Host-to-Device"). The committed fixture is never
    // written.
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("uvm.sqlite");
    std::fs::copy(fixture("nsys-ai/h100_2gpu_1s.sqlite"), &trace).unwrap();
    {
        let db = rusqlite::Connection::open(&trace).unwrap();
        db.execute(
            "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET copyKind = 11 \
             WHERE deviceId = 0 AND copyKind = 1 AND rowid % 2 = 0",
            [],
        )
        .unwrap();
    }
    let db = open_ro(&trace);
    let (label, name): (String, String) = db
        .query_row("SELECT label, name FROM ENUM_CUDA_MEMCPY_OPER WHERE id = 11", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!(
        (label.as_str(), name.as_str()),
        ("Unified Host-to-Device", "CUDA_MEMCPY_KIND_UVM_HTOD")
    );
    let rows = |sql: &str| -> Vec<(i64, i64, i64)> {
        let mut st = db.prepare(sql).unwrap();
        st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let sum = |v: &[(i64, i64, i64)]| v.iter().map(|r| r.2).sum::<i64>();
    let spans = |v: &[(i64, i64, i64)]| v.iter().map(|r| (r.0, r.1)).collect::<Vec<_>>();
    let memcpy = |kind: &str| {
        rows(&format!(
            "SELECT start, \"end\", bytes FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE deviceId = 0 AND {kind}"
        ))
    };
    let (uvm, htod, all) = (memcpy("copyKind = 11"), memcpy("copyKind = 1"), memcpy("1"));
    let memset =
        rows("SELECT start, \"end\", bytes FROM CUPTI_ACTIVITY_KIND_MEMSET WHERE deviceId = 0");
    assert!(!uvm.is_empty() && !htod.is_empty() && !memset.is_empty());

    let ev = run_json(&["query", "copies", trace.to_str().unwrap(), "--device", "0", "--json"]);
    let v = &ev["values"];
    let kinds = v["kinds"].as_array().unwrap();
    let unified = kinds.iter().find(|k| k["kind"] == "UnifiedHtoD").expect("a unified kind");
    assert_eq!(unified["label"], "Unified Host-to-Device");
    assert!(kinds.iter().all(|k| !k["kind"].as_str().unwrap().starts_with("unknown")), "{kinds:?}");
    assert_eq!(unified["bytes"].as_i64(), Some(sum(&uvm)));
    assert_eq!(v["unified_htod_bytes"].as_i64(), Some(sum(&uvm)));
    assert_eq!(v["unified_htod_busy_ns"].as_i64(), Some(union_ns(spans(&uvm))));
    assert_eq!(v["htod_bytes"].as_i64(), Some(sum(&htod)));
    // Bytes moved are the memcpy rows' alone; memsets are apart.
    assert_eq!(v["bytes"].as_i64(), Some(sum(&all)));
    assert_eq!(v["memset_bytes"].as_i64(), Some(sum(&memset)));
    let busy = union_ns(spans(&all));
    assert_eq!(v["memcpy_busy_ns"].as_i64(), Some(busy));
    let mut every = spans(&all);
    every.extend(spans(&memset));
    assert_eq!(v["busy_ns"].as_i64(), Some(union_ns(every)));
    // Bandwidth over the memcpy rows only: bytes / memcpy busy.
    let bw = v["bandwidth"].as_f64().unwrap();
    assert!((bw - sum(&all) as f64 / busy as f64).abs() < 1e-9, "{bw}");
}

// ---------------------------------------------------------------------------------------------
// Units, the idle denominator and R1's stated tolerance

/// A claims file with one claim of the given parts (YAML list items, indented by 6).
fn one_claim(traces: &str, scopes: &str, about: &str, parts: &str) -> String {
    format!(
        r#"report: {{ id: u, languages: [en, zh-TW], title: {{en: t, zh-TW: t}}, question: {{en: q, zh-TW: q}}, answer: {{en: a, zh-TW: a}}, decision: {{en: d, zh-TW: d}}, date: "2026-08-28" }}
sources: {{ s: {{ label: {{ en: s, zh-TW: s }} }} }}
traces: {traces}
scopes: {scopes}
claims:
  - id: c
    source: s
    statement: {{ en: c, zh-TW: c }}
    about: {about}
    parts:
{parts}"#
    )
}

/// The part `id` of claim `c`.
fn part_of<'a>(audit: &'a Value, id: &str) -> &'a Value {
    audit["results"][0]["parts"].as_array().unwrap().iter().find(|p| p["id"] == id).unwrap()
}

#[test]
fn bytes_and_gigabytes_per_second_are_units_with_exact_values() {
    let trace = fixture("nsys-ai/h100_2gpu_1s.sqlite");
    let db = open_ro(&trace);
    let mut st = db
        .prepare("SELECT start, \"end\", bytes FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE deviceId = 0")
        .unwrap();
    let rows: Vec<(i64, i64, i64)> = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let bytes: i64 = rows.iter().map(|r| r.2).sum();
    let busy = union_ns(rows.iter().map(|r| (r.0, r.1)).collect());
    let text = one_claim(
        &format!("{{ A: {{ path: \"{}\", label: {{ en: A, zh-TW: A }} }} }}", trace.display()),
        "{ d0: { trace: A, devices: \"0\" } }",
        "{ devices: \"0\" }",
        r#"      - id: moved
        kind: observation
        text: { en: m, zh-TW: m }
        measure: { analysis: copies, scope: d0, value: bytes, unit: bytes }
        condition: { above: "1000 bytes" }
      - id: rate
        kind: observation
        text: { en: r, zh-TW: r }
        measure: { analysis: copies, scope: d0, value: "bytes / memcpy_busy_ns", unit: "GB/s" }
        condition: { above: "1 GB/s" }
"#,
    );
    let (_dir, claims) = claims_file("units.yaml", &text);
    let audit = check_json(&claims);
    let exact = |p: &Value| {
        let e = &p["formula"]["exact"];
        let n = |i: usize| -> i128 {
            e[i].as_str()
                .map(|s| s.parse().unwrap())
                .or_else(|| e[i].as_i64().map(i128::from))
                .unwrap()
        };
        (n(0), n(1))
    };
    let moved = part_of(&audit, "moved");
    assert_eq!(moved["outcome"], "supported", "{moved}");
    assert_eq!(exact(moved), (i128::from(bytes), 1));
    assert!(moved["formula"]["display"].as_str().unwrap().ends_with(" B"), "{moved}");
    let rate = part_of(&audit, "rate");
    // Bytes per ns are GB/s, exactly: num/den = bytes/busy.
    let (n, d) = exact(rate);
    assert_eq!(n * i128::from(busy), d * i128::from(bytes), "{rate}");
    assert!(rate["formula"]["display"].as_str().unwrap().ends_with(" GB/s"), "{rate}");
    for g in rate["gates"].as_array().unwrap() {
        assert_ne!(g["status"], "fail", "{g}");
    }
}

#[test]
fn a_share_of_idle_time_has_the_idle_denominator() {
    let trace = fixture("nsys-ai/h100_2gpu_1s.sqlite");
    let text = one_claim(
        &format!("{{ A: {{ path: \"{}\", label: {{ en: A, zh-TW: A }} }} }}", trace.display()),
        "{ d0: { trace: A, devices: \"0\" } }",
        "{ devices: \"0\", denominator: idle }",
        r#"      - id: copy-idle
        kind: observation
        text: { en: i, zh-TW: i }
        measure: { analysis: copies, scope: d0, value: "idle_copy_ns / idle_ns", unit: "%" }
"#,
    );
    let (_dir, claims) = claims_file("idle.yaml", &text);
    let audit = check_json(&claims);
    let p = part_of(&audit, "copy-idle");
    let r3 = p["gates"].as_array().unwrap().iter().find(|g| g["gate"] == "R3").unwrap();
    assert_eq!(
        (r3["status"].as_str(), r3["finding"]["key"].as_str()),
        (Some("pass"), Some("gate.r3.same_metric")),
        "{r3}"
    );
    assert_eq!(r3["finding"]["args"]["denominator"], "idle");
    // A share of the window is not a share of idle time.
    let text = text.replace("idle_copy_ns / idle_ns", "idle_copy_ns / span_ns");
    let (_dir, claims) = claims_file("idle.yaml", &text);
    let audit = check_json(&claims);
    let p = part_of(&audit, "copy-idle");
    let r3 = p["gates"].as_array().unwrap().iter().find(|g| g["gate"] == "R3").unwrap();
    assert_eq!(r3["status"], "fail", "{r3}");
}

#[test]
fn r1_states_its_same_length_tolerance_and_takes_another() {
    // The two sides' windows: device 0's kernel span of each capture over 10, by SQL.
    let span = |file: &str| -> i64 {
        open_ro(&fixture(&format!("nsys-ai/{file}.sqlite")))
            .query_row(
                "SELECT max(\"end\") - min(start) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId = 0",
                [],
                |r| r.get(0),
            )
            .unwrap()
    };
    let (la, lb) = (span("mfu_2gpu_before") / 10, span("mfu_2gpu_after") / 10);
    let apart = (la - lb).abs() as f64 / la.max(lb) as f64;
    // Not equal, within 1%, not within 0.1%: the case the undisclosed tolerance decided.
    assert!(apart > 0.001 && apart < 0.01, "{la} {lb}");
    let traces = format!(
        "{{ before: {{ path: \"{}\", label: {{ en: b, zh-TW: b }} }}, after: {{ path: \"{}\", label: {{ en: a, zh-TW: a }} }} }}",
        fixture("nsys-ai/mfu_2gpu_before.sqlite").display(),
        fixture("nsys-ai/mfu_2gpu_after.sqlite").display()
    );
    let part = |extra: &str| {
        format!(
            r#"      - id: speed
        kind: observation
        text: {{ en: s, zh-TW: s }}
        measure: {{ analysis: compare, scope: b0, versus: a0, of: kernels, match: flash_fwd, metric: count, split: 10, value: change, unit: "%"{extra} }}
"#
        )
    };
    let scopes = "{ b0: { trace: before, devices: \"0\" }, a0: { trace: after, devices: \"0\" } }";
    let r1 = |extra: &str| -> Value {
        let (_dir, claims) =
            claims_file("r1.yaml", &one_claim(&traces, scopes, "{ devices: \"0\" }", &part(extra)));
        let audit = check_json(&claims);
        let p = part_of(&audit, "speed");
        p["gates"].as_array().unwrap().iter().find(|g| g["gate"] == "R1").unwrap().clone()
    };
    let default = r1("");
    assert_eq!(default["status"], "pass", "{default}");
    assert_eq!(default["finding"]["args"]["tolerance"], "1%");
    let strict = r1(", same_length: \"0.1%\"");
    assert_eq!(strict["status"], "fail", "{strict}");
    assert_eq!(strict["finding"]["key"], "gate.r1.compare_lengths_differ");
    assert_eq!(strict["finding"]["args"]["tolerance"], "0.1%");
    // The finding says it in both languages.
    for lang in ["en", "zh-TW"] {
        let t: toml::Value = toml::from_str(
            &std::fs::read_to_string(manifest_dir().join(format!("templates/i18n/{lang}.toml")))
                .unwrap(),
        )
        .unwrap();
        for key in ["gate.r1.compare_same_length", "gate.r1.compare_lengths_differ"] {
            assert!(t[key].as_str().unwrap().contains("{tolerance}"), "{lang} {key}");
        }
    }
}

#[test]
fn a_scope_of_one_rank_says_rank_not_ranks() {
    let trace = fixture("nsys-ai/h100_2gpu_1s.sqlite");
    // A trace set of one file (a list): its devices are ranks.
    let text = one_claim(
        &format!("{{ A: {{ path: [\"{}\"], label: {{ en: A, zh-TW: A }} }} }}", trace.display()),
        "{ r0: { trace: A, ranks: \"0\" }, both: { trace: A, ranks: \"0-1\" } }",
        "{ devices: \"0\" }",
        r#"      - id: k
        kind: observation
        text: { en: k, zh-TW: k }
        measure: { analysis: kernels, scope: r0, value: count }
      - id: k2
        kind: observation
        text: { en: k, zh-TW: k }
        measure: { analysis: kernels, scope: both, value: count }
"#,
    );
    let (dir, claims) = claims_file("rank.yaml", &text);
    let out = dir.path().join("out");
    let o = run_in(
        Some(&manifest_dir()),
        &[
            "render",
            claims.to_str().unwrap(),
            "--format",
            "md",
            "--lang",
            "en",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let md = std::fs::read_to_string(out.join("u.en.md")).unwrap();
    let line = |scope: &str| {
        md.lines()
            .find(|l| l.starts_with(&format!("- `{scope}`:")))
            .unwrap_or_else(|| panic!("{md}"))
            .to_string()
    };
    assert!(line("r0").ends_with(", rank 0"), "{}", line("r0"));
    assert!(line("both").ends_with(", ranks 0-1"), "{}", line("both"));
}

// ---------------------------------------------------------------------------------------------
// Typed evidence values

/// Every analysis run on real fixtures, several scopes each (one device, rows per device or
/// rank, a name filter that matches nothing): each number or null in `values` is a field the
/// analysis declares, every declared field is there, and each row holds the rank fields the
/// analysis declares for its rows. The structs behind the JSON are checked against the
/// registry through what they serialise to.
#[test]
fn typed_values_serialise_to_exactly_the_declared_fields() {
    let megatron = fixture("day26/megatron.sqlite");
    let mfu = fixture("nsys-ai/mfu_2gpu_before.sqlite");
    let (megatron, mfu) = (megatron.to_str().unwrap(), mfu.to_str().unwrap());
    let after = fixture("nsys-ai/mfu_2gpu_after.sqlite");
    let (a, b) = (format!("trace={mfu}"), format!("trace={}", after.to_str().unwrap()));
    let compare = [
        "compare",
        "--of",
        "kernels",
        "--metric",
        "count",
        "--a",
        &a,
        "--a",
        "devices=0",
        "--a",
        "split=6",
        "--b",
        &b,
        "--b",
        "devices=0",
        "--b",
        "split=6",
    ];
    let runs: &[(&str, &[&str])] = &[
        ("overlap", &["overlap", megatron, "--device", "4"]),
        ("overlap", &["overlap", mfu, "--all-devices"]),
        ("kernels", &["kernels", mfu, "--all-devices"]),
        ("kernels", &["kernels", mfu, "--all-devices", "--match", "no such kernel"]),
        ("copies", &["copies", mfu, "--device", "0"]),
        ("copies", &["copies", mfu, "--all-devices"]),
        ("nvtx", &["nvtx", megatron, "--device", "4"]),
        ("nvtx", &["nvtx", megatron, "--device", "4", "--match", "no such range"]),
        ("nccl-skew", &["nccl-skew", mfu, "--all-devices", "--stream", "auto"]),
        ("nccl-skew", &["nccl-skew", mfu, "--device", "0"]),
        ("nccl-calls", &["nccl-calls", mfu, "--all-devices", "--stream", "auto"]),
        ("streams", &["streams", megatron, "--device", "4"]),
        ("streams", &["streams", mfu, "--all-devices"]),
        ("compare", &compare),
    ];
    let mut seen = std::collections::BTreeSet::new();
    // Keys that were null where no other run gave them a number: a structure (a per-rank map,
    // a spread) that does not exist there; each must be a structure in some run.
    let mut nulls: Vec<(&str, String)> = Vec::new();
    let mut structures: std::collections::BTreeSet<(&str, String)> = Default::default();
    // Each piece of evidence is valid against the schema derived from its types, the output
    // schema of the MCP `query` tool.
    let mut schemas = boon::Schemas::new();
    let mut compiler = boon::Compiler::new();
    compiler.add_resource("query.schema.json", verdict::audit::query_evidence_schema()).unwrap();
    let index = compiler.compile("query.schema.json", &mut schemas).unwrap();
    for (name, args) in runs {
        let spec = verdict::analysis::spec(name).expect("a registered analysis");
        let declared: std::collections::BTreeSet<&str> =
            spec.fields.iter().map(|f| f.name).collect();
        let mut argv = vec!["query"];
        argv.extend_from_slice(args);
        argv.push("--json");
        let ev = run_json(&argv);
        if let Err(e) = schemas.validate(&ev, index) {
            panic!("{argv:?}: not valid against the query schema: {e:#}");
        }
        let values = ev["values"].as_object();
        if let Some(values) = values {
            for f in &declared {
                assert!(values.contains_key(*f), "{name}: declared field {f} not produced");
            }
            for (k, v) in values {
                if v.is_number() {
                    assert!(declared.contains(k.as_str()), "{name}: {k} is not declared");
                } else if v.is_null() && !declared.contains(k.as_str()) {
                    nulls.push((name, k.clone()));
                } else if v.is_object() || v.is_array() {
                    structures.insert((name, k.clone()));
                }
            }
        }
        if let (Some(rows), Some(rank_rows)) = (ev["rows"].as_array(), spec.rank_rows) {
            for row in rows {
                for f in rank_rows.fields {
                    assert!(row.get(f.name).is_some(), "{name}: row field {} not produced", f.name);
                }
            }
        }
        assert!(values.is_some() || ev["rows"].is_array(), "{name}: no values and no rows");
        seen.insert(*name);
    }
    for n in &nulls {
        assert!(structures.contains(n), "{}: {} is null and not declared", n.0, n.1);
    }
    // Every analysis of the registry that a query runs is covered here, and the comparison.
    let mut queries: std::collections::BTreeSet<&str> =
        verdict::analysis::ANALYSES.iter().filter(|a| a.is_query()).map(|a| a.name).collect();
    queries.insert("compare");
    assert_eq!(seen, queries);
}

/// The grep-able rule of typed evidence: outside the JSON edge, no code reads evidence values
/// by the text of a key. The edge is where a claim or a formula names a field
/// (`Evidence::field`/`value`, a claim bound to one rank's row, a formula over each device's
/// row).
#[test]
fn no_string_keyed_read_of_evidence_values_outside_the_json_edge() {
    let pattern = regex::Regex::new(
        r#"\.value\("|\.value\((k|key|f|field)\)|\.to_map\(\)|\.to_maps\(\)|Values::Map\(|\.values\.as_ref\(\)\??\.get\(|\bint\(v, ""#,
    )
    .unwrap();
    let edge = [
        // Evidence::field and Evidence::value themselves, and the enums.
        "src/analysis/mod.rs",
        "src/analysis/values.rs",
        // A claim bound to one rank's row; a formula over each device's row.
        "src/verdict/rules.rs",
        "src/audit.rs",
        // The debug check of the rows a note explains.
        "src/analysis/nccl_skew.rs",
    ];
    let mut offenders = Vec::new();
    for p in crate::util::rs_files(&manifest_dir().join("src")) {
        let rel = p.strip_prefix(manifest_dir()).unwrap().to_string_lossy().replace('\\', "/");
        if edge.contains(&rel.as_str()) || rel.ends_with("/tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        // Unit tests build evidence no analysis would give; they sit after `#[cfg(test)]`.
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        for (i, line) in code.lines().enumerate() {
            if pattern.is_match(line) && !line.trim_start().starts_with("//") {
                offenders.push(format!("{rel}:{}: {}", i + 1, line.trim()));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "string-keyed reads of evidence values:\n{}",
        offenders.join("\n")
    );
}

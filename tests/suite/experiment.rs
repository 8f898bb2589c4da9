//! A comparison's experiment against its traces (issue 23): each `held` item a trace can
//! check is checked on real captures (`fixtures/nsys-ai`: the mfu before/after pair, two
//! processes an hour apart; `mock.sqlite`, another machine) and on the generated TP pair
//! (`fixtures/ab`). Every expected value is read here by SQL over the fixtures, never from
//! the tool; each test asserts the finding key a contradiction or an agreement gives.

use crate::util;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;
use util::{fixture, open_ro, run_in, run_json};

fn nsys_ai(name: &str) -> PathBuf {
    fixture(&format!("nsys-ai/{name}.sqlite"))
}

fn ab(name: &str) -> PathBuf {
    fixture(&format!("ab/{name}.sqlite"))
}

/// One value of a name/value metadata table, by SQL.
fn meta(trace: &Path, table: &str, name: &str) -> Option<String> {
    open_ro(trace)
        .query_row(&format!("SELECT value FROM {table} WHERE name = ?1"), [name], |r| {
            r.get::<_, rusqlite::types::Value>(0)
        })
        .ok()
        .map(|v| match v {
            rusqlite::types::Value::Text(s) => s,
            rusqlite::types::Value::Integer(n) => n.to_string(),
            other => format!("{other:?}"),
        })
}

/// Devices with kernels in the whole trace.
fn kernel_devices(trace: &Path) -> i64 {
    open_ro(trace)
        .query_row("SELECT COUNT(DISTINCT deviceId) FROM CUPTI_ACTIVITY_KIND_KERNEL", [], |r| {
            r.get(0)
        })
        .unwrap()
}

/// Distinct kernel short names on device 0.
fn names_on_device_0(trace: &Path) -> BTreeSet<String> {
    let c = open_ro(trace);
    let mut st = c
        .prepare(
            "SELECT DISTINCT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k
             JOIN StringIds s ON s.id = k.shortName WHERE k.deviceId = 0",
        )
        .unwrap();
    st.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
}

/// The pid of device 0's kernels.
fn pid_of_device_0(trace: &Path) -> i64 {
    open_ro(trace)
        .query_row(
            "SELECT DISTINCT (globalPid >> 24) & 16777215 FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId = 0",
            [],
            |r| r.get(0),
        )
        .unwrap()
}

/// `ProfilerStep` ranges of device 0's process.
fn steps_of_device_0(trace: &Path) -> i64 {
    open_ro(trace)
        .query_row(
            "SELECT COUNT(*) FROM NVTX_EVENTS WHERE eventType = 59 AND text LIKE 'ProfilerStep#%'
             AND ((globalTid >> 24) & 16777215) = ?1",
            [pid_of_device_0(trace)],
            |r| r.get(0),
        )
        .unwrap()
}

fn session_start(trace: &Path) -> i64 {
    open_ro(trace)
        .query_row("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME", [], |r| r.get(0))
        .unwrap()
}

/// A claims file comparing device 0 of `a` and `b` with one part whose measure rest and
/// experiment are given, written into `dir`.
fn claims(
    dir: &Path,
    a: &Path,
    b: &Path,
    scopes: &str,
    measure: &str,
    experiment: &str,
) -> PathBuf {
    let yaml = format!(
        r#"report: {{ id: t, languages: [en, zh-TW], title: {{ en: t, zh-TW: t }} }}
traces:
  a: {{ path: "{}" }}
  b: {{ path: "{}" }}
scopes:
{scopes}
claims:
  - id: c
    statement: {{ en: "B differs from A", zh-TW: "B 與 A 不同" }}
    principal: p
    parts:
      - id: p
        kind: observation
        measure: {{ analysis: compare, {measure} }}
        {experiment}
"#,
        a.display(),
        b.display()
    );
    let path = dir.join("c.yaml");
    std::fs::write(&path, yaml).unwrap();
    path
}

const WHOLE: &str = "  a0: { trace: a, devices: \"0\" }\n  b0: { trace: b, devices: \"0\" }";
const SPLIT: &str = "scope: a0, versus: b0, of: overlap, metric: \"idle_ns / total_ns\", split: 2, value: delta, unit: pp";
/// Eight windows a side: enough for the exact interval the chart draws (two are not).
const SPLIT8: &str = "scope: a0, versus: b0, of: overlap, metric: \"idle_ns / total_ns\", split: 8, value: delta, unit: pp";
const STEPS: &str =
    "  a0: { trace: a, devices: \"0\", window: { nvtx: \"ProfilerStep#*\", index: all } }
  b0: { trace: b, devices: \"0\", window: { nvtx: \"ProfilerStep#*\", index: all } }
  b10: { trace: b, devices: \"0\", window: { nvtx: \"ProfilerStep#*\", index: 0-9 } }";
const STEP_LENGTH: &str = "of: overlap, metric: total_ns, value: change, unit: \"%\"";

/// `check --json` of a claims file: the audit.
fn audit_of(a: &Path, b: &Path, scopes: &str, measure: &str, experiment: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let path = claims(dir.path(), a, b, scopes, measure, experiment);
    run_json(&["check", path.to_str().unwrap(), "--json"])
}

/// The part's gates of the held conditions.
fn held(audit: &Value) -> Vec<Value> {
    audit["results"][0]["parts"][0]["gates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["gate"] == "held")
        .cloned()
        .collect()
}

fn key_status(g: &Value) -> (&str, &str) {
    (g["finding"]["key"].as_str().unwrap(), g["status"].as_str().unwrap())
}

/// The comparison's evidence.
fn compare_evidence(audit: &Value) -> Value {
    audit["ledger"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["evidence"]["analysis"] == "compare")
        .map(|e| e["evidence"].clone())
        .expect("a compare entry")
}

#[test]
fn hardware_and_software_held_agree_on_the_mfu_captures() {
    let (a, b) = (nsys_ai("mfu_2gpu_before"), nsys_ai("mfu_2gpu_after"));
    let exp = "experiment: { held: [hardware, software, data] }";
    let audit = audit_of(&a, &b, WHOLE, SPLIT, exp);
    let gates = held(&audit);
    assert_eq!(gates.len(), 1, "{gates:?}");
    assert_eq!(key_status(&gates[0]), ("gate.held.consistent", "pass"));
    let args = &gates[0]["finding"]["args"];
    assert_eq!(args["checked"], "hardware\u{1f}software");
    assert_eq!(args["unchecked"], "data");
    // What the two sides' runs say, as SQL reads the files.
    let runs = &compare_evidence(&audit)["values"]["runs"];
    for (side, trace) in [("a", &a), ("b", &b)] {
        let r = &runs[side];
        let f = &r["files"][0];
        assert_eq!(
            f["driver"].as_str(),
            meta(trace, "TARGET_INFO_SYSTEM_ENV", "NvDriverVersion").as_deref()
        );
        assert_eq!(
            f["nsys_version"].as_str(),
            meta(trace, "META_DATA_EXPORT", "EXPORT_PRODUCT_VERSION").as_deref()
        );
        // CudaDriverVersion 13000 is CUDA 13.0: 1000 * major + 10 * minor.
        let cuda: u32 =
            meta(trace, "TARGET_INFO_SYSTEM_ENV", "CudaDriverVersion").unwrap().parse().unwrap();
        assert_eq!(f["cuda_driver"], format!("{}.{}", cuda / 1000, cuda % 1000 / 10));
        assert_eq!(f["capture_start_utc_ns"], session_start(trace));
        assert_eq!(r["job_devices"], kernel_devices(trace));
        assert_eq!(r["pids"], serde_json::json!([pid_of_device_0(trace)]));
        assert_eq!(
            f["derived_by"].as_str(),
            meta(trace, "META_DATA_EXPORT", "DERIVED_BY").as_deref()
        );
    }
    // Both ran the same driver on two GPUs: nothing contradicts `hardware`.
    assert_eq!(
        meta(&a, "TARGET_INFO_SYSTEM_ENV", "NvDriverVersion"),
        meta(&b, "TARGET_INFO_SYSTEM_ENV", "NvDriverVersion")
    );
    assert_eq!(kernel_devices(&a), kernel_devices(&b));
}

#[test]
fn hardware_held_fails_against_another_machine_and_strict_exits_1() {
    let (a, b) = (nsys_ai("mfu_2gpu_before"), nsys_ai("mock"));
    let dir = tempfile::tempdir().unwrap();
    let path = claims(dir.path(), &a, &b, WHOLE, SPLIT, "experiment: { held: [hardware] }");
    let audit = run_json(&["check", path.to_str().unwrap(), "--json"]);
    let gates = held(&audit);
    let keys: Vec<(&str, &str)> = gates.iter().map(key_status).collect();
    // The mfu capture lists no GPU model (no TARGET_INFO_GPU): the models are not compared.
    // The gate fails at the first contradiction; the next is noted beside it.
    assert_eq!(keys, [("gate.held.gpu_count", "fail"), ("gate.held.driver", "note")]);
    let count = &gates[0]["finding"]["args"];
    assert_eq!(count["held"], "hardware");
    assert_eq!(count["a"], kernel_devices(&a).to_string());
    assert_eq!(count["b"], kernel_devices(&b).to_string());
    let driver = &gates[1]["finding"]["args"];
    assert_eq!(
        driver["a"].as_str(),
        meta(&a, "TARGET_INFO_SYSTEM_ENV", "NvDriverVersion").as_deref()
    );
    assert_eq!(
        driver["b"].as_str(),
        meta(&b, "TARGET_INFO_SYSTEM_ENV", "NvDriverVersion").as_deref()
    );
    let part = &audit["results"][0]["parts"][0];
    assert_eq!(part["outcome"], "unverifiable");
    assert_eq!(part["reason"]["key"], "part.gate_failed");
    assert_eq!(part["reason"]["args"]["gates"], "held");
    // Only the held gate fails: without it, the same file passes `--strict`.
    let others: Vec<&Value> = part["gates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["gate"] != "held" && g["status"] == "fail")
        .collect();
    assert!(others.is_empty(), "{others:?}");
    let p = path.to_str().unwrap();
    assert_eq!(run_in(None, &["check", p, "--strict"]).status.code(), Some(1));
    let free = claims(dir.path(), &a, &b, WHOLE, SPLIT, "experiment: { held: [data] }");
    assert_eq!(run_in(None, &["check", free.to_str().unwrap(), "--strict"]).status.code(), Some(0));
}

#[test]
fn software_held_fails_on_a_different_nsys_and_names_both_versions() {
    let (a, b) = (nsys_ai("mfu_2gpu_before"), nsys_ai("mock"));
    let audit = audit_of(&a, &b, WHOLE, SPLIT, "experiment: { held: [software] }");
    let gates = held(&audit);
    let nsys = gates.iter().find(|g| g["finding"]["key"] == "gate.held.nsys").expect("nsys");
    assert_eq!(nsys["status"], "fail");
    let version = |t: &Path| meta(t, "META_DATA_EXPORT", "EXPORT_PRODUCT_VERSION");
    assert_ne!(version(&a), version(&b));
    assert_eq!(nsys["finding"]["args"]["a"].as_str(), version(&a).as_deref());
    assert_eq!(nsys["finding"]["args"]["b"].as_str(), version(&b).as_deref());
    // The driver and the CUDA version it supports differ too; each is its own finding, noted
    // beside the one that fails the gate.
    let keys: Vec<(&str, &str)> = gates.iter().map(key_status).collect();
    assert_eq!(
        keys,
        [
            ("gate.held.nsys", "fail"),
            ("gate.held.driver", "note"),
            ("gate.held.cuda_driver", "note")
        ]
    );
}

#[test]
fn steps_held_compare_the_nvtx_step_counts() {
    let (a, b) = (ab("tp4"), ab("tp8"));
    let m = format!("scope: a0, versus: b0, {STEP_LENGTH}");
    let audit = audit_of(&a, &b, STEPS, &m, "experiment: { held: [steps] }");
    let gates = held(&audit);
    assert_eq!(
        gates.iter().map(key_status).collect::<Vec<_>>(),
        [("gate.held.consistent", "pass")]
    );
    let runs = &compare_evidence(&audit)["values"]["runs"];
    assert_eq!(runs["a"]["steps"], steps_of_device_0(&a));
    assert_eq!(runs["b"]["steps"], steps_of_device_0(&b));
    // Ten of B's steps against all of A's: a contradiction, with both counts.
    let m = format!("scope: a0, versus: b10, {STEP_LENGTH}");
    let audit = audit_of(&a, &b, STEPS, &m, "experiment: { held: [steps] }");
    let gates = held(&audit);
    assert_eq!(gates.iter().map(key_status).collect::<Vec<_>>(), [("gate.held.steps", "fail")]);
    assert_eq!(gates[0]["finding"]["args"]["a"], steps_of_device_0(&a).to_string());
    assert_eq!(gates[0]["finding"]["args"]["b"], steps_of_device_0(&b).min(10).to_string());
    // Windows of one capture are no steps: nothing to check.
    let audit = split_audit(&nsys_ai("mfu_2gpu_before"), &nsys_ai("mfu_2gpu_after"), "[steps]");
    assert_eq!(
        held(&audit).iter().map(key_status).collect::<Vec<_>>(),
        [("gate.held.none_checked", "pass")]
    );
}

fn split_audit(a: &Path, b: &Path, held: &str) -> Value {
    audit_of(a, b, WHOLE, SPLIT, &format!("experiment: {{ held: {held} }}"))
}

#[test]
fn model_held_is_checked_through_kernel_names_and_a_difference_is_only_a_note() {
    let (a, b) = (ab("tp4"), ab("tp8"));
    let m = format!("scope: a0, versus: b0, {STEP_LENGTH}");
    let audit = audit_of(&a, &b, STEPS, &m, "experiment: { held: [model] }");
    let gates = held(&audit);
    assert_eq!(
        gates.iter().map(key_status).collect::<Vec<_>>(),
        [("gate.held.kernel_names", "note")]
    );
    let (na, nb) = (names_on_device_0(&a), names_on_device_0(&b));
    let only = |x: &BTreeSet<String>, y: &BTreeSet<String>| {
        x.difference(y).cloned().collect::<Vec<_>>().join("\u{1f}")
    };
    let args = &gates[0]["finding"]["args"];
    assert_eq!(args["only_a"], only(&na, &nb));
    assert_eq!(args["only_b"], only(&nb, &na));
    assert_eq!(args["a"], na.len().to_string());
    assert_eq!(args["b"], nb.len().to_string());
    // A proxy never blocks the verdict.
    assert_ne!(audit["results"][0]["parts"][0]["outcome"], "unverifiable");
    // The mfu captures ran the same kernels on device 0.
    let (a, b) = (nsys_ai("mfu_2gpu_before"), nsys_ai("mfu_2gpu_after"));
    assert_eq!(names_on_device_0(&a), names_on_device_0(&b));
    let audit = split_audit(&a, &b, "[model]");
    assert_eq!(
        held(&audit).iter().map(key_status).collect::<Vec<_>>(),
        [("gate.held.consistent", "pass")]
    );
}

#[test]
fn what_no_trace_records_stays_the_authors_word() {
    let audit = split_audit(
        &nsys_ai("mfu_2gpu_before"),
        &nsys_ai("mfu_2gpu_after"),
        "[data, seed, checkpoint]",
    );
    let gates = held(&audit);
    assert_eq!(
        gates.iter().map(key_status).collect::<Vec<_>>(),
        [("gate.held.none_checked", "pass")]
    );
    assert_eq!(gates[0]["finding"]["args"]["unchecked"], "data\u{1f}seed\u{1f}checkpoint");
    // Nothing declared held: no gate at all.
    let audit = audit_of(
        &nsys_ai("mfu_2gpu_before"),
        &nsys_ai("mfu_2gpu_after"),
        WHOLE,
        SPLIT,
        "experiment: { controlled: false }",
    );
    assert!(held(&audit).is_empty());
}

#[test]
fn the_report_says_controlled_is_declared_what_was_checked_and_what_differs() {
    let (a, b) = (nsys_ai("mfu_2gpu_before"), nsys_ai("mfu_2gpu_after"));
    let dir = tempfile::tempdir().unwrap();
    let path = claims(
        dir.path(),
        &a,
        &b,
        WHOLE,
        SPLIT8,
        "experiment: { controlled: true, held: [hardware, data] }",
    );
    let out = dir.path().join("out");
    let o = run_in(
        None,
        &["render", path.to_str().unwrap(), "--out", out.to_str().unwrap(), "--format", "md"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let md = std::fs::read_to_string(out.join("t.en.md")).unwrap();
    let line = md.lines().find(|l| l.contains("controlled: ")).expect("a controlled line");
    assert!(line.contains("controlled: declared by the author"), "{line}");
    let driver = meta(&a, "TARGET_INFO_SYSTEM_ENV", "NvDriverVersion").unwrap();
    assert!(line.contains(&format!("driver {driver} on both sides")), "{line}");
    assert!(line.contains("not checkable from a trace: `data`"), "{line}");
    let (pa, pb) = (pid_of_device_0(&a), pid_of_device_0(&b));
    assert!(line.contains(&format!("process ids A {pa} vs B {pb}")), "{line}");
    // The starts, an hour and a bit apart: whole minutes of the difference in seconds.
    let gap_s = (session_start(&b) - session_start(&a)) / 1_000_000_000;
    let gap = format!("({} h {} min apart)", gap_s / 3600, gap_s % 3600 / 60);
    assert!(line.contains(&gap), "{gap} in {line}");
    // The test's p sits beside the formula, not inside it.
    let part = md.lines().find(|l| l.starts_with("- **p**")).unwrap();
    assert!(part.contains("Mann-Whitney U, two-sided, exact: `p = "), "{part}");
    assert!(!part.contains("Mann-Whitney p"), "{part}");
    // The reader's block, in both languages.
    assert!(md.contains("**How to read an A/B**"));
    assert!(md.contains("**Samples** of `b0` against `a0`: A 8 equal windows of one capture"));
    let zh = std::fs::read_to_string(out.join("t.zh-TW.md")).unwrap();
    assert!(zh.contains("**怎麼讀 A/B 比較**"));
    assert!(zh.contains("受控：作者宣告"));
    // The chart draws the interval the headline quotes, with the metric on its axis.
    let svg = std::fs::read_to_string(out.join("t.en.ab.svg")).unwrap();
    assert!(svg.contains("class=\"interval\""), "{svg}");
    assert!(svg.contains(">idle_ns / total_ns of each sample (%)<"), "{svg}");
}

/// What a reader sees of an A/B part, in both languages and both formats: the test beside
/// the formula, the controlled line, the "How to read an A/B" block, and the interval on the
/// A|B chart. A snapshot of those lines alone, so that unrelated sections do not churn it
/// (`INSTA_UPDATE=always cargo test --test suite experiment::`, then review the diff).
#[test]
fn ab_reading_snapshots() {
    let (a, b) = (nsys_ai("mfu_2gpu_before"), nsys_ai("mfu_2gpu_after"));
    let dir = tempfile::tempdir().unwrap();
    let measure = "scope: a0, versus: b0, of: overlap, metric: \"nccl_only_ns / total_ns\", split: 10, value: delta, unit: pp";
    let exp = "experiment: { controlled: false, held: [model, hardware, data], expect: decrease }";
    // The lines kept hold no path: the trace paths of this machine stay out of the snapshot.
    let path = claims(dir.path(), &a, &b, WHOLE, measure, exp);
    let set = verdict::claims::load(&path).unwrap();
    let audit = verdict::audit::run(set, &mut |_, _| {});
    let options = util::snapshot_render_options();
    let renderers = verdict::render::report::Renderers::new(&options).unwrap();
    for lang in ["en", "zh-TW"] {
        let r = verdict::render::report::render_lang(
            &audit,
            lang,
            verdict::render::report::Profile::Full,
            &options,
            &renderers,
        )
        .unwrap();
        for (format, text) in [("md", &r.md), ("typ", &r.typ)] {
            // The reading block from its title to the next heading, and the part with its
            // controlled line.
            let lines: Vec<&str> = text.lines().collect();
            // Typst escapes the slash.
            let title = if lang == "en" { "How to read an A" } else { "怎麼讀 A" };
            let start = lines
                .iter()
                .position(|l| l.contains(title))
                .unwrap_or_else(|| panic!("the block in {lang} {format}:\n{text}"));
            let end = start
                + lines[start..]
                    .iter()
                    .position(|l| l.starts_with("## ") || l.starts_with("== "))
                    .unwrap();
            let mut kept: Vec<&str> = lines[start..end].to_vec();
            let part = lines
                .iter()
                .position(|l| l.starts_with("- *p*") || l.starts_with("- **p**"))
                .unwrap_or_else(|| panic!("the part in {lang} {format}:\n{text}"));
            kept.push(lines[part]);
            insta::assert_snapshot!(format!("ab_reading.{lang}.{format}"), kept.join("\n"));
        }
        // The A|B chart: its axis title and the interval band with its statement.
        let svg = &r.charts.iter().find(|c| c.file.contains(".ab.")).expect("an A|B chart").svg;
        let kept: Vec<&str> = svg
            .lines()
            .filter(|l| {
                ["class=\"interval\"", "each sample", "每個樣本", "95%"]
                    .iter()
                    .any(|k| l.contains(k))
            })
            .collect();
        insta::assert_snapshot!(format!("ab_reading.{lang}.svg"), kept.join("\n"));
    }
}

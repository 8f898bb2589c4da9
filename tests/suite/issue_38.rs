//! Issue 38, "the words as exact as the numbers": each finding the issue names, through
//! `verdict check --json` and `verdict render` on small claims files, fails on the wording the
//! gates gave before (chosen per analysis, not from the formula computed):
//! - a `max_ns / median_ns` ratio over two devices divides by a median, not by summed kernel
//!   durations, and is a ratio of statistics over both devices, not a total over them;
//! - a `wait_share` under `contain` does not divide by the span of the kernels kept: the window
//!   selects whole instances, and the denominator is NCCL kernel time;
//! - a comparison whose scopes are devices 0-1 on both sides names devices 0-1 on each side;
//! - a part carrying `needs` or `work` keeps its claim's open item on page 1 and its step in
//!   the decision, whatever its verdict;
//! - bytes and a bandwidth are quantities a claim can state (`quantity: bytes | bandwidth`),
//!   each in its own unit: a bandwidth is no longer judged as wall time.

use crate::util;

use std::path::Path;

use serde_json::Value;

use util::{fixture, open_ro, run_in, run_json_in, s};

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    s(&p).to_string()
}

fn gate<'a>(part: &'a Value, name: &str) -> &'a Value {
    part["gates"].as_array().unwrap().iter().find(|g| g["gate"] == name).unwrap()
}

fn part<'a>(ledger: &'a Value, claim: &str, part: &str) -> &'a Value {
    let c = ledger["results"].as_array().unwrap().iter().find(|r| r["id"] == claim).unwrap();
    c["parts"].as_array().unwrap().iter().find(|p| p["id"] == part).unwrap()
}

const HEAD: &str = r#"report:
  id: i38
  languages: [en]
  title: { en: "issue 38" }
  question: { en: "what do the words say" }
sources:
  s: { label: { en: "someone" } }
"#;

#[test]
fn a_ratio_of_statistics_over_two_devices_divides_by_a_median_and_is_no_total() {
    let trace = fixture("nsys-ai/h100_2gpu_1s.sqlite");
    // The numbers, by SQL over the fixture: the longest kernel and the lower median of every
    // kernel duration of devices 0 and 1.
    let db = open_ro(&trace);
    let mut durations: Vec<i64> = db
        .prepare("SELECT \"end\" - start FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId IN (0, 1) ORDER BY 1")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    durations.sort_unstable();
    let (max, median) = (*durations.last().unwrap(), durations[(durations.len() - 1) / 2]);
    let dir = tempfile::tempdir().unwrap();
    let claims = write(
        dir.path(),
        "c.yaml",
        &format!(
            r#"{HEAD}traces:
  H: {{ path: "{}", expect_devices: "0-1" }}
scopes:
  both: {{ trace: H, devices: "0-1" }}
claims:
  - id: tail
    source: s
    statement: {{ en: "the longest kernel is far longer than the median one" }}
    principal: ratio
    parts:
      - id: ratio
        kind: observation
        text: {{ en: "the longest kernel over the median kernel" }}
        measure: {{ analysis: kernels, scope: both, value: "max_ns / median_ns", unit: x }}
        condition: {{ above: "10x" }}
"#,
            s(&trace)
        ),
    );
    let ledger = run_json_in(None, &["check", &claims, "--json"]);
    let p = part(&ledger, "tail", "ratio");
    let exact = &p["formula"]["exact"];
    let (num, den): (i128, i128) =
        (exact[0].as_str().unwrap().parse().unwrap(), exact[1].as_str().unwrap().parse().unwrap());
    assert_eq!(num * i128::from(median), den * i128::from(max), "the value is max / median");
    // R3: the denominator is the median, a statistic; before, "summed kernel durations".
    let r3 = &gate(p, "R3")["finding"];
    assert_eq!(r3["key"], "gate.r3.unstated_statistic");
    assert_eq!(r3["args"]["field"], "median_ns");
    assert_eq!(r3["args"]["stat"], "median");
    // R4: statistics over both devices taken together; before, "a total over 2 devices".
    let r4 = &gate(p, "R4")["finding"];
    assert_eq!(r4["key"], "gate.r4.pooled_ratio");
    assert_eq!(r4["args"]["devices"], "0-1");
    let out = run_in(None, &["check", &claims, "--lang", "en"]);
    // The terminal wraps lines: the words, one space apart.
    let text =
        String::from_utf8_lossy(&out.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(text.contains("divides by `median_ns`, a median: a statistic, not a total"), "{text}");
    assert!(!text.contains("summed kernel durations"), "{text}");
    assert!(!text.contains("a total over 2 devices"), "{text}");
    // The verdict table of the report says the same.
    let out_dir = dir.path().join("out");
    let r =
        run_in(None, &["render", &claims, "--format", "md", "--lang", "en", "--out", s(&out_dir)]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let md = std::fs::read_to_string(out_dir.join("i38.en.md")).unwrap();
    let table: Vec<&str> = md.lines().filter(|l| l.starts_with("| the longest kernel")).collect();
    assert_eq!(table.len(), 1, "{md}");
    assert!(table[0].contains("the 2 devices 0-1 taken together"), "{}", table[0]);
    assert!(!md.contains("summed over 2 devices"), "{md}");
}

#[test]
fn a_wait_share_under_contain_is_not_divided_by_the_kept_kernels_span() {
    let trace = fixture("day26/megatron.sqlite");
    let dir = tempfile::tempdir().unwrap();
    let claims = write(
        dir.path(),
        "c.yaml",
        &format!(
            r#"{HEAD}traces:
  A: {{ path: "{}", expect_devices: "0-7" }}
scopes:
  step-all: {{ trace: A, window: "39.964:46.123", devices: all, semantics: contain }}
claims:
  - id: wait
    source: s
    statement: {{ en: "ranks wait" }}
    principal: share
    parts:
      - id: share
        kind: observation
        text: {{ en: "the share of NCCL kernel time spent waiting" }}
        measure: {{ analysis: nccl-skew, scope: step-all, stream: 56, value: wait_share, unit: "%" }}
        condition: {{ above: "0%" }}
"#,
            s(&trace)
        ),
    );
    let ledger = run_json_in(None, &["check", &claims, "--json"]);
    let p = part(&ledger, "wait", "share");
    assert_eq!(p["formula"]["definition"], "wait_ns / nccl_ns");
    let r1 = &gate(p, "R1");
    // Before: "with contain semantics the denominator is the span of the kernels kept inside
    // the window".
    assert_eq!(r1["finding"]["key"], "gate.r1.same_window_instances");
    assert_eq!(r1["finding"]["args"]["semantics"], "contain");
    let r3 = &gate(p, "R3")["finding"];
    assert_eq!(
        (r3["key"].as_str(), r3["args"]["denominator"].as_str()),
        (Some("gate.r3.unstated"), Some("nccl_kernel_time"))
    );
    let out = run_in(None, &["check", &claims, "--lang", "en"]);
    // The terminal wraps lines: the words, one space apart.
    let text =
        String::from_utf8_lossy(&out.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(!text.contains("span of the kernels kept"), "{text}");
    assert!(text.contains("it selects whole collective instances"), "{text}");
}

#[test]
fn a_comparison_over_devices_0_1_names_devices_0_1_on_each_side() {
    let claims = util::manifest_dir().join("claims/mfu-2gpu-ab.yaml");
    let ledger = run_json_in(None, &["check", s(&claims), "--json"]);
    // The claims file's scopes: before-both and after-both select devices "0-1".
    let p = part(&ledger, "exposed", "exposed-share");
    let r2 = &gate(p, "R2")["finding"];
    assert_eq!(r2["key"], "gate.r2.compare_same_population_each");
    assert_eq!((r2["args"]["a"].as_str(), r2["args"]["b"].as_str()), (Some("0-1"), Some("0-1")));
    // A one-device comparison still names its one device on each side.
    let p = part(&ledger, "faster", "speed");
    let r2 = &gate(p, "R2")["finding"];
    assert_eq!(r2["key"], "gate.r2.compare_same_population");
    assert_eq!((r2["args"]["a"].as_str(), r2["args"]["b"].as_str()), (Some("0"), Some("0")));
}

#[test]
fn a_part_carrying_needs_or_work_keeps_its_open_item_whatever_the_verdict() {
    let trace = fixture("day26/megatron.sqlite");
    let dir = tempfile::tempdir().unwrap();
    let claims = write(
        dir.path(),
        "c.yaml",
        &format!(
            r#"{HEAD}traces:
  A: {{ path: "{}", expect_devices: "0-7" }}
scopes:
  step-all: {{ trace: A, window: "39.964:46.123", devices: all, semantics: contain }}
claims:
  - id: flash
    source: s
    statement: {{ en: "FlashAttention's backward path ran" }}
    principal: path
    parts:
      - id: ran
        kind: observation
        text: {{ en: "flash_bwd kernels in the window" }}
        measure: {{ analysis: kernels, scope: step-all, match: "flash_bwd", value: count, unit: count }}
        condition: {{ at_least: 1 }}
      - id: path
        kind: interpretation
        from: [ran]
        mapping: {{ en: "flash_bwd kernels are FlashAttention's backward pass" }}
        text: {{ en: "a FlashAttention backward path ran" }}
        needs: [{{ en: "the attention settings of the training config" }}]
        work: [config]
        effort: minutes
        unblocks: {{ en: "whether the fused path is the one configured" }}
"#,
            s(&trace)
        ),
    );
    let ledger = run_json_in(None, &["check", &claims, "--json"]);
    let c = &ledger["results"][0];
    // The verdict is the interpretation's, supported; the claim stays open for its needs.
    assert_eq!(c["verdict"], "supported");
    assert_eq!(c["reason"]["key"], "claim.supported_so_far");
    assert_eq!(c["open"], serde_json::json!(["path"]));
    assert_eq!(ledger["summary"]["open"], serde_json::json!(["flash"]));
    let out_dir = dir.path().join("out");
    let r = run_in(
        None,
        &[
            "render",
            &claims,
            "--format",
            "md",
            "--lang",
            "en",
            "--profile",
            "full,brief",
            "--out",
            s(&out_dir),
        ],
    );
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let md = std::fs::read_to_string(out_dir.join("i38.en.md")).unwrap();
    let open = md.split("## Open items").nth(1).expect("page 1 has open items");
    let open = open.split("\n## ").next().unwrap();
    assert!(open.contains("FlashAttention's backward path ran"), "{open}");
    assert!(open.contains("the attention settings of the training config"), "{open}");
    assert!(open.contains("whether the fused path is the one configured"), "{open}");
    // The brief's decision asks for the step the needs name.
    let brief = std::fs::read_to_string(out_dir.join("i38.en.brief.md")).unwrap();
    let decision = brief.split("**Decision requested**").nth(1).expect("a decision");
    let decision = decision.split("\n\n**").next().unwrap();
    assert!(decision.contains("(minutes)"), "{decision}");
    assert!(decision.contains("whether the fused path is the one configured"), "{decision}");
}

#[test]
fn bytes_and_a_bandwidth_are_quantities_in_their_own_units() {
    let trace = fixture("nsys-ai/h100_2gpu_1s.sqlite");
    // The numbers, by SQL over the fixture: device 0's memcpy bytes and the union of its
    // memcpy intervals (the whole trace: no window).
    let db = open_ro(&trace);
    let bytes: i64 = db
        .query_row(
            "SELECT sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE deviceId = 0",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let mut rows: Vec<(i64, i64)> = db
        .prepare("SELECT start, \"end\" FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE deviceId = 0")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    rows.sort_unstable();
    let mut busy = 0i64;
    let mut open: Option<(i64, i64)> = None;
    for (a, b) in rows {
        open = match open {
            Some((s, e)) if a <= e => Some((s, e.max(b))),
            Some((s, e)) => {
                busy += e - s;
                Some((a, b))
            }
            None => Some((a, b)),
        };
    }
    busy += open.map_or(0, |(s, e)| e - s);
    let claim = |id: &str, quantity: &str, value: &str, unit: &str, cond: &str| {
        format!(
            r#"  - id: {id}
    source: s
    statement: {{ en: "{id}" }}
    about: {{ devices: "0", per: device, quantity: {quantity} }}
    principal: p
    parts:
      - id: p
        kind: observation
        text: {{ en: "{id}" }}
        measure: {{ analysis: copies, scope: d0, value: {value}, unit: "{unit}" }}
        condition: {{ above: "{cond}" }}
"#
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let claims = write(
        dir.path(),
        "c.yaml",
        &format!(
            "{HEAD}traces:\n  H: {{ path: \"{}\", expect_devices: \"0-1\" }}\nscopes:\n  d0: {{ trace: H, devices: \"0\" }}\nclaims:\n{}{}{}{}{}",
            s(&trace),
            claim("bw", "bandwidth", "bandwidth", "GB/s", "10 GB/s"),
            claim("bw-as-wall", "wall-time", "bandwidth", "GB/s", "10 GB/s"),
            claim("bw-as-ratio", "bandwidth", "\"bytes / memcpy_busy_ns\"", "ratio", "10"),
            claim("moved", "bytes", "bytes", "bytes", "1000000000 bytes"),
            claim("bw-as-bytes", "bytes", "bandwidth", "GB/s", "10 GB/s"),
        ),
    );
    let ledger = run_json_in(None, &["check", &claims, "--json"]);
    // The bandwidth, exactly: bytes per ns, which is decimal GB/s.
    let p = part(&ledger, "bw", "p");
    let exact = &p["formula"]["exact"];
    let (num, den): (i128, i128) =
        (exact[0].as_str().unwrap().parse().unwrap(), exact[1].as_str().unwrap().parse().unwrap());
    assert_eq!(num * i128::from(busy), den * i128::from(bytes), "the value is bytes / busy");
    assert_eq!(p["outcome"], "supported", "{p}");
    let r3 = &gate(p, "R3");
    assert_eq!(r3["status"], "pass", "{r3}");
    assert_eq!(r3["finding"]["key"], "gate.r3.bandwidth");
    assert_eq!(r3["finding"]["args"]["denominator"], "copy_time");
    assert_eq!(r3["finding"]["args"]["den_field"], "memcpy_busy_ns");
    assert_eq!(gate(p, "R4")["status"], "pass");
    // Before: a bandwidth could only be stated as wall time, and R3 said it measured bytes.
    let r3 = &gate(part(&ledger, "bw-as-wall", "p"), "R3")["finding"];
    assert_eq!(r3["key"], "gate.r3.quantity_differs");
    assert_eq!(
        (&r3["args"]["claim"], &r3["args"]["evidence"]),
        (&"wall".into(), &"bandwidth".into())
    );
    // A bandwidth is stated in GB/s, bytes in bytes.
    let r4 = &gate(part(&ledger, "bw-as-ratio", "p"), "R4");
    assert_eq!(r4["status"], "fail", "{r4}");
    assert_eq!(r4["finding"]["key"], "gate.r4.quantity_unit");
    assert_eq!(r4["finding"]["args"]["want"], "GB/s");
    assert_eq!(r4["finding"]["args"]["unit"], "ratio");
    let p = part(&ledger, "moved", "p");
    assert_eq!(p["formula"]["exact"][0], bytes.to_string(), "{p}");
    assert_eq!(p["outcome"], "supported", "{p}");
    assert_eq!(gate(p, "R3")["finding"]["key"], "gate.r3.bytes");
    let r3 = &gate(part(&ledger, "bw-as-bytes", "p"), "R3")["finding"];
    assert_eq!(r3["key"], "gate.r3.quantity_differs");
    assert_eq!(r3["args"]["evidence"], "bandwidth");
    // The words, as a reader sees them.
    let out = run_in(None, &["check", &claims, "--lang", "en"]);
    let text =
        String::from_utf8_lossy(&out.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        text.contains("`bandwidth` is a bandwidth: bytes over copy time (a union of copy intervals) (`memcpy_busy_ns`), as the claim states"),
        "{text}"
    );
    assert!(
        text.contains("the claim speaks of a bandwidth (bytes over a time), written in GB/s, but the value is in ratio"),
        "{text}"
    );
}

/// The mfu A/B example says what its comparisons can and cannot decide: each open item of a
/// capped comparison is the comparison's own reason (an undeclared control rules a cause out
/// no more than it shows one), and the refuting direction it quotes is the one that lies
/// against the claim: for "exposed NCCL fell", an interval above 0 (device 1's rise), never
/// device 0's fall, which agrees with the claim.
#[test]
fn the_mfu_example_says_what_its_comparisons_cannot_decide() {
    let dir = tempfile::tempdir().unwrap();
    let r = run_in(
        None,
        &[
            "render",
            "claims/mfu-2gpu-ab.yaml",
            "--format",
            "md",
            "--lang",
            "en",
            "--out",
            s(dir.path()),
        ],
    );
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let md = std::fs::read_to_string(dir.path().join("mfu-2gpu-ab.en.md")).unwrap();
    let open = md.split("## Open items").nth(1).unwrap().split("\n## ").next().unwrap();
    let item = |lead: &str| -> String {
        open.lines().find(|l| l.contains(lead)).unwrap_or_else(|| panic!("{lead}: {open}")).into()
    };
    for lead in ["the optimisation cut GPU idle time", "the optimisation reduced exposed NCCL"] {
        let line = item(lead);
        assert!(line.contains("(unverifiable)"), "{line}");
        assert!(line.contains("cannot rule it out"), "{line}");
        assert!(line.contains("an observation, not a verdict"), "{line}");
        assert!(!line.contains("cannot be answered by this evidence"), "{line}");
    }
    // The interval quoted against "reduced" lies above 0 on both ends.
    let line = item("the optimisation reduced exposed NCCL");
    let interval = line.split("the interval of the difference (").nth(1).unwrap();
    let interval = interval.split(';').next().unwrap();
    let ends: Vec<f64> =
        interval.split(" to ").map(|e| e.trim().trim_end_matches(" pp").parse().unwrap()).collect();
    assert!(ends.len() == 2 && ends[0] > 0.0 && ends[1] > 0.0, "{interval}");
    // The claim's section carries the same reason under its comparison.
    let section = md.split("### the optimisation cut GPU idle time").nth(1).unwrap();
    let section = section.split("\n### ").next().unwrap();
    assert!(section.contains("an observation, not a verdict"), "{section}");
}

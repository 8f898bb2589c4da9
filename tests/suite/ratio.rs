//! Issue 38, "claims people write": "GEMMs are over 70% of kernel time" is a share across two
//! measures. Written as arithmetic (`formula: "gemm / all"`) it is checked but never evidence
//! and never a principal; a judged `ratio: {of, to}` is both. Each test below fails on the
//! wording before it: the key `ratio` was refused as unknown.
//!
//! Every expected number is computed here, by SQL over the fixture, never read from the tool.

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

fn claim<'a>(ledger: &'a Value, id: &str) -> &'a Value {
    ledger["results"].as_array().unwrap().iter().find(|r| r["id"] == id).unwrap()
}

fn part<'a>(ledger: &'a Value, c: &str, p: &str) -> &'a Value {
    claim(ledger, c)["parts"].as_array().unwrap().iter().find(|x| x["id"] == p).unwrap()
}

fn exact(v: &Value) -> (i128, i128) {
    (v[0].as_str().unwrap().parse().unwrap(), v[1].as_str().unwrap().parse().unwrap())
}

/// The summed kernel durations of `devices` (a SQL list), of the kernels whose short name
/// matches the GLOB pattern `name` (all kernels when None), over the whole trace.
fn kernel_ns(trace: &Path, devices: &str, name: Option<&str>) -> i128 {
    let db = open_ro(trace);
    let sql = format!(
        "SELECT COALESCE(SUM(k.\"end\" - k.start), 0) FROM CUPTI_ACTIVITY_KIND_KERNEL k \
         JOIN StringIds n ON n.id = k.shortName WHERE k.deviceId IN ({devices}) AND n.value GLOB ?1"
    );
    let total: i64 = db.query_row(&sql, [name.unwrap_or("*")], |r| r.get(0)).unwrap();
    i128::from(total)
}

/// `num / den` with `places` decimals, halves rounded up (positive values below 1,000).
fn half_up(num: i128, den: i128, places: u32) -> String {
    let scale = 10_i128.pow(places);
    let q = (2 * num * scale + den) / (2 * den);
    format!("{}.{:0width$}", q / scale, q % scale, width = places as usize)
}

const GEMM: &str = "sm80_xmma_gemm_*_cublas";

fn head(trace: &Path) -> String {
    format!(
        r#"report:
  id: ratio
  languages: [zh-TW, en]
  title: {{ en: "ratio", zh-TW: "比值" }}
sources:
  s: {{ label: {{ en: "someone", zh-TW: "某人" }} }}
traces:
  H: {{ path: "{}", expect_devices: "0-1" }}
scopes:
  both: {{ trace: H, devices: "0-1" }}
  dev0: {{ trace: H, devices: "0" }}
  dev1: {{ trace: H, devices: "1" }}
  early: {{ trace: H, devices: "0-1", window: "155.4:155.9" }}
claims:
"#,
        s(trace)
    )
}

/// One claim whose principal is `share = gemm / all`, with the given scopes, condition and
/// extra ratio keys.
fn share_claim(num_scope: &str, den_scope: &str, condition: &str, ratio_extra: &str) -> String {
    format!(
        r#"  - id: gemm-dominates
    source: s
    statement: {{ en: "GEMMs are most of kernel time", zh-TW: "GEMM 佔大多數 kernel time" }}
    about: {{ devices: "0-1", per: sum, quantity: kernel-time, denominator: kernel-time }}
    principal: share
    parts:
      - id: gemm
        kind: observation
        measure: {{ analysis: kernels, scope: {num_scope}, regex: "^sm80_xmma_gemm_.*_cublas$", value: total_ns, unit: ms }}
      - id: all
        kind: observation
        measure: {{ analysis: kernels, scope: {den_scope}, value: total_ns, unit: ms }}
      - id: share
        kind: observation
        ratio: {{ of: gemm, to: all{ratio_extra} }}
        condition: {condition}
"#
    )
}

fn check(dir: &Path, yaml: &str) -> Value {
    let file = write(dir, "c.yaml", yaml);
    run_json_in(None, &["check", &file, "--json"])
}

#[test]
fn a_ratio_of_two_measures_is_exact_and_its_condition_decides_the_claim() {
    let trace = fixture("nsys-ai/h100_2gpu_1s.sqlite");
    let gemm = kernel_ns(&trace, "0, 1", Some(GEMM));
    let all = kernel_ns(&trace, "0, 1", None);
    assert!(gemm > 0 && all > gemm);
    let dir = tempfile::tempdir().unwrap();
    for (pct, holds) in [(70, true), (90, false)] {
        // The conditions are on either side of the share, as SQL computes it.
        assert_eq!(gemm * 100 > all * pct, holds);
        let condition = &format!(r#"{{ above: "{pct}%" }}"#);
        let ledger =
            check(dir.path(), &(head(&trace) + &share_claim("both", "both", condition, "")));
        let p = part(&ledger, "gemm-dominates", "share");
        // gemm / all, exactly: num / den = gemm / all.
        let (num, den) = exact(&p["formula"]["exact"]);
        assert_eq!(num * all, den * gemm, "the value is gemm / all");
        assert_eq!(p["formula"]["symbolic"], "gemm / all");
        let ms = |ns: i128| format!("{} ms", half_up(ns, 1_000_000, 2));
        assert_eq!(p["formula"]["substituted"], format!("{} / {}", ms(gemm), ms(all)));
        assert_eq!(p["formula"]["display"], format!("{}%", half_up(gemm * 100, all, 1)));
        // The ledger records both operands with their values.
        assert_eq!(p["ratio"]["of"]["part"], "gemm");
        assert_eq!(p["ratio"]["to"]["part"], "all");
        assert_eq!(exact(&p["ratio"]["of"]["exact"]), (gemm, 1));
        assert_eq!(exact(&p["ratio"]["to"]["exact"]), (all, 1));
        // Same trace, no window, same devices, a share of kernel time summed over both devices.
        assert_eq!(gate(p, "R1")["finding"]["key"], "gate.r1.ratio_same_trace");
        assert_eq!(gate(p, "R1")["status"], "note");
        assert_eq!(gate(p, "R2")["finding"]["key"], "gate.r2.ratio_same_devices");
        assert_eq!(gate(p, "R2")["finding"]["args"]["devices"], "0-1");
        assert_eq!(gate(p, "R3")["finding"]["key"], "gate.r3.ratio_share");
        assert_eq!(gate(p, "R3")["finding"]["args"]["of_kind"], "kernel_time");
        assert_eq!(gate(p, "R3")["finding"]["args"]["to_kind"], "kernel_time");
        assert_eq!(gate(p, "R4")["finding"]["key"], "gate.r4.ratio_summed");
        assert!(p["gates"].as_array().unwrap().iter().all(|g| g["status"] != "fail"));
        // The principal decides: evidence, not arithmetic.
        let (outcome, verdict) =
            if holds { ("supported", "supported") } else { ("not_supported", "not_supported") };
        assert_eq!(p["outcome"], outcome);
        assert_eq!(claim(&ledger, "gemm-dominates")["verdict"], verdict);
        assert_eq!(claim(&ledger, "gemm-dominates")["principal"], "share");
    }
}

#[test]
fn the_gate_words_of_a_ratio_in_both_languages() {
    let trace = fixture("nsys-ai/h100_2gpu_1s.sqlite");
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "c.yaml",
        &(head(&trace) + &share_claim("both", "both", r#"{ above: "70%" }"#, "")),
    );
    let words = |lang: &str| {
        let out = run_in(None, &["check", &file, "--lang", lang]);
        String::from_utf8_lossy(&out.stdout).split_whitespace().collect::<Vec<_>>().join(" ")
    };
    let en = words("en");
    for want in [
        "R2 pass: `gemm` and `all` cover the same devices, 0-1, as the claim states",
        "R3 pass: `gemm / all`: summed kernel durations over summed kernel durations, a share of summed kernel durations, as the claim states",
        "R4 pass: `gemm` and `all` are each a total over 2 devices (0-1), as the claim states: the ratio of the two totals, not a mean of per-device shares",
        "`gemm` and `all` read one trace (H) with no window",
    ] {
        assert!(en.contains(want), "`{want}` in:\n{en}");
    }
    let zh = words("zh-TW");
    for want in [
        "`gemm` 與 `all` 涵蓋相同的 device 0-1，與主張一致",
        "`gemm / all`：kernel duration 加總 除以 kernel duration 加總，是 kernel duration 加總 的佔比，與主張一致",
        "`gemm` 與 `all` 各是 2 張卡（device 0-1）的合計，與主張一致",
    ] {
        assert!(zh.contains(want), "`{want}` in:\n{zh}");
    }
}

#[test]
fn operands_over_different_devices_fail_r2_unless_the_difference_is_declared() {
    let trace = fixture("nsys-ai/h100_2gpu_1s.sqlite");
    let gemm0 = kernel_ns(&trace, "0", Some(GEMM));
    let all1 = kernel_ns(&trace, "1", None);
    let dir = tempfile::tempdir().unwrap();
    // A claim that names no devices: only the ratio's own gates compare the two sides.
    let unscoped = |yaml: String| {
        yaml.replace(
            r#"about: { devices: "0-1", per: sum, quantity: kernel-time, denominator: kernel-time }"#,
            "about: { quantity: kernel-time, denominator: kernel-time }",
        )
    };
    // No reason: R2 fails, naming both sides' devices, and the part is unverifiable.
    let ledger = check(
        dir.path(),
        &unscoped(head(&trace) + &share_claim("dev0", "dev1", r#"{ above: "1%" }"#, "")),
    );
    let p = part(&ledger, "gemm-dominates", "share");
    let r2 = gate(p, "R2");
    assert_eq!(r2["status"], "fail");
    assert_eq!(r2["finding"]["key"], "gate.r2.ratio_devices_differ");
    assert_eq!(r2["finding"]["args"]["of_devices"], "0");
    assert_eq!(r2["finding"]["args"]["to_devices"], "1");
    assert_eq!(p["outcome"], "unverifiable");
    assert_eq!(p["reason"]["key"], "part.gate_failed");
    assert_eq!(claim(&ledger, "gemm-dominates")["verdict"], "unverifiable");
    // The value is still computed and shown: gemm on device 0 over all on device 1.
    let (num, den) = exact(&p["formula"]["exact"]);
    assert_eq!(num * all1, den * gemm0);
    let file = write(
        dir.path(),
        "c.yaml",
        &unscoped(head(&trace) + &share_claim("dev0", "dev1", r#"{ above: "1%" }"#, "")),
    );
    let out = run_in(None, &["check", &file, "--lang", "en"]);
    let text =
        String::from_utf8_lossy(&out.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        text.contains("R2 FAIL: `gemm` covers devices 0 (streams: all), `all` devices 1 (streams: all): a ratio over two populations is no share of either"),
        "{text}"
    );
    // With a reason in every language: a note quoting it, and the ratio is judged.
    let reason =
        r#", differs: { en: "the two devices run the same step", zh-TW: "兩張卡跑同一步" }"#;
    let yaml = unscoped(head(&trace) + &share_claim("dev0", "dev1", r#"{ above: "1%" }"#, reason));
    let ledger = check(dir.path(), &yaml);
    let p = part(&ledger, "gemm-dominates", "share");
    let r2 = gate(p, "R2");
    assert_eq!(r2["status"], "note");
    assert_eq!(r2["finding"]["key"], "gate.r2.ratio_devices_differ_declared");
    assert_eq!(r2["finding"]["args"]["reason@en"], "the two devices run the same step");
    assert_eq!(p["ratio"]["differs"]["zh-TW"], "兩張卡跑同一步");
    assert_eq!(p["outcome"], "supported", "{p:#}");
    assert_eq!(gate(p, "R4")["finding"]["key"], "gate.r4.ratio_one_device");
    let file = write(dir.path(), "c.yaml", &yaml);
    for (lang, want) in [
        ("en", "the difference is declared: the two devices run the same step"),
        ("zh-TW", "差異已說明：兩張卡跑同一步"),
    ] {
        let out = run_in(None, &["check", &file, "--lang", lang]);
        let text =
            String::from_utf8_lossy(&out.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(text.contains(want), "{lang}: `{want}` in:\n{text}");
    }
}

#[test]
fn operands_over_different_windows_fail_r1_naming_both_windows() {
    let trace = fixture("nsys-ai/h100_2gpu_1s.sqlite");
    let dir = tempfile::tempdir().unwrap();
    let ledger = check(
        dir.path(),
        &(head(&trace) + &share_claim("early", "both", r#"{ above: "1%" }"#, "")),
    );
    let p = part(&ledger, "gemm-dominates", "share");
    let r1 = gate(p, "R1");
    assert_eq!(r1["status"], "fail");
    assert_eq!(r1["finding"]["key"], "gate.r1.ratio_windows_differ");
    assert_eq!(r1["finding"]["args"]["of_window"], "155.4–155.9 s");
    assert_eq!(r1["finding"]["args"]["to_window"], "whole_trace");
    assert_eq!(p["outcome"], "unverifiable");
    let file = write(
        dir.path(),
        "c.yaml",
        &(head(&trace) + &share_claim("early", "both", r#"{ above: "1%" }"#, "")),
    );
    let out = run_in(None, &["check", &file, "--lang", "en"]);
    let text =
        String::from_utf8_lossy(&out.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        text.contains("`gemm` reads H, 155.4–155.9 s, clip semantics; `all` reads H, whole trace, clip semantics: a ratio over two different windows is no share of either"),
        "{text}"
    );
}

#[test]
fn a_zero_denominator_leaves_the_ratio_unverifiable_never_zero() {
    let trace = fixture("nsys-ai/h100_2gpu_1s.sqlite");
    // No kernel of the fixture has this name, by SQL.
    assert_eq!(kernel_ns(&trace, "0, 1", Some("no_such_kernel*")), 0);
    let dir = tempfile::tempdir().unwrap();
    let yaml = head(&trace)
        + r#"  - id: none
    source: s
    statement: { en: "GEMMs over nothing", zh-TW: "GEMM 除以零" }
    principal: share
    parts:
      - id: gemm
        kind: observation
        measure: { analysis: kernels, scope: both, regex: "^sm80_xmma_gemm_.*_cublas$", value: total_ns, unit: ms }
      - id: nothing
        kind: observation
        measure: { analysis: kernels, scope: both, regex: "^no_such_kernel", value: total_ns, unit: ms }
      - id: share
        kind: observation
        ratio: { of: gemm, to: nothing }
        condition: { above: "1%" }
"#;
    let ledger = check(dir.path(), &yaml);
    let p = part(&ledger, "none", "share");
    assert_eq!(p["outcome"], "unverifiable");
    assert_eq!(p["reason"]["key"], "part.ratio_zero_denominator");
    assert_eq!(p["reason"]["args"]["to"], "nothing");
    assert!(p["formula"]["display"].is_null());
    assert!(p["condition"].is_null());
    assert_eq!(claim(&ledger, "none")["verdict"], "unverifiable");
}

#[test]
fn an_operand_without_a_value_leaves_the_ratio_unverifiable_naming_it() {
    let trace = fixture("nsys-ai/h100_2gpu_1s.sqlite");
    // The fixture has no NCCL kernel, by SQL: the wait a rank spends in NCCL does not exist.
    let db = open_ro(&trace);
    let nccl: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds n \
             ON n.id = k.shortName WHERE n.value LIKE '%nccl%'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(nccl, 0);
    let dir = tempfile::tempdir().unwrap();
    let yaml = head(&trace)
        + r#"  - id: waits
    source: s
    statement: { en: "waiting is a share of kernel time", zh-TW: "等待佔 kernel time 的比例" }
    principal: share
    parts:
      - id: wait
        kind: observation
        measure: { analysis: nccl-skew, scope: both, value: wait_ns, unit: ms }
      - id: all
        kind: observation
        measure: { analysis: kernels, scope: both, value: total_ns, unit: ms }
      - id: share
        kind: observation
        ratio: { of: wait, to: all }
        condition: { above: "1%" }
"#;
    let ledger = check(dir.path(), &yaml);
    let p = part(&ledger, "waits", "share");
    assert_eq!(p["outcome"], "unverifiable");
    assert_eq!(p["reason"]["key"], "part.ratio_unmeasured");
    assert_eq!(p["reason"]["args"]["parts"], "wait");
    assert!(p["formula"]["substituted"].as_str().unwrap().starts_with("n/a / "));
    assert!(p["ratio"]["of"]["exact"].is_null());
    assert_eq!(claim(&ledger, "waits")["verdict"], "unverifiable");
}

#[test]
fn mixed_kinds_fail_r3_and_a_statistic_fails_r4() {
    let trace = fixture("nsys-ai/h100_2gpu_1s.sqlite");
    let dir = tempfile::tempdir().unwrap();
    let yaml = head(&trace)
        + r#"  - id: mixed
    source: s
    statement: { en: "GEMMs are most of device 0's time", zh-TW: "GEMM 佔 device 0 大多數時間" }
    principal: share
    parts:
      - id: gemm
        kind: observation
        measure: { analysis: kernels, scope: dev0, regex: "^sm80_xmma_gemm_.*_cublas$", value: total_ns, unit: ms }
      - id: span
        kind: observation
        measure: { analysis: overlap, scope: dev0, value: total_ns, unit: ms }
      - id: longest
        kind: observation
        measure: { analysis: kernels, scope: dev0, value: max_ns, unit: ms }
      - id: share
        kind: observation
        ratio: { of: gemm, to: span }
      - id: tail
        kind: observation
        ratio: { of: longest, to: gemm }
"#;
    let ledger = check(dir.path(), &yaml);
    let share = part(&ledger, "mixed", "share");
    let r3 = gate(share, "R3");
    assert_eq!(r3["status"], "fail");
    assert_eq!(r3["finding"]["key"], "gate.r3.ratio_mixes_kinds");
    assert_eq!(r3["finding"]["args"]["of_kind"], "kernel_time");
    assert_eq!(r3["finding"]["args"]["to_kind"], "window");
    let tail = part(&ledger, "mixed", "tail");
    let r4 = gate(tail, "R4");
    assert_eq!(r4["status"], "fail");
    assert_eq!(r4["finding"]["key"], "gate.r4.ratio_statistic");
    assert_eq!(r4["finding"]["args"]["part"], "longest");
    assert_eq!(r4["finding"]["args"]["stat"], "max");
}

/// Each problem of a ratio at its line and column, with its hint; exit 2.
#[test]
fn ratio_errors_are_reported_at_their_line_and_column() {
    let trace = fixture("nsys-ai/h100_2gpu_1s.sqlite");
    let dir = tempfile::tempdir().unwrap();
    let yaml = head(&trace)
        + r#"  - id: bad
    source: s
    statement: { en: "bad ratios", zh-TW: "錯的比值" }
    parts:
      - id: gemm
        kind: observation
        measure: { analysis: kernels, scope: both, value: total_ns, unit: ms }
      - id: sum
        kind: arithmetic
        formula: "gemm * 2"
      - id: unknown
        kind: observation
        ratio: { of: gem, to: gemm }
      - id: itself
        kind: observation
        ratio: { of: itself, to: gemm }
      - id: not-measured
        kind: observation
        ratio: { of: gemm, to: sum }
      - id: both-keys
        kind: observation
        measure: { analysis: kernels, scope: both, value: total_ns, unit: ms }
        ratio: { of: gemm, to: gemm }
      - id: half-reason
        kind: observation
        ratio: { of: gemm, to: unknown, differs: { en: "only English" } }
      - id: in-ms
        kind: observation
        ratio: { of: gemm, to: all-kernels }
        unit: ms
      - id: all-kernels
        kind: observation
        measure: { analysis: kernels, scope: both, value: total_ns, unit: ms }
"#;
    let file = write(dir.path(), "c.yaml", &yaml);
    let out = run_in(None, &["check", &file]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    // Each position is found in the text written.
    let lines: Vec<&str> = yaml.lines().collect();
    let line_of = |needle: &str| lines.iter().position(|l| l.contains(needle)).unwrap() + 1;
    let col_of = |needle: &str, key: &str| {
        let l = lines[line_of(needle) - 1];
        l.find(key).unwrap() + 1
    };
    let expect = [
        (
            line_of("of: gem,"),
            col_of("of: gem,", "gem,"),
            "`ratio.of` names `gem`, which is not a part of this claim",
            "did you mean `gemm`",
        ),
        (
            line_of("of: itself"),
            col_of("of: itself", "itself,"),
            "`ratio.of` names the part itself",
            "two other parts",
        ),
        (
            line_of("to: sum"),
            col_of("to: sum", "sum }"),
            "`ratio.to` names `sum`, which is arithmetic: not a measured part",
            "binds a `measure`",
        ),
        (
            line_of("ratio: { of: gemm, to: gemm }"),
            col_of("ratio: { of: gemm, to: gemm }", "{"),
            "the part has both `measure` and `ratio`",
            "one measure or the ratio of two",
        ),
        (
            line_of("ratio: { of: gemm, to: gemm }"),
            col_of("ratio: { of: gemm, to: gemm }", "gemm }"),
            "`ratio` divides `gemm` by itself",
            "two different measured parts",
        ),
        (
            line_of("to: unknown"),
            col_of("to: unknown", "unknown,"),
            "`ratio.to` names `unknown`, which is itself a ratio: not a measured part",
            "binds a `measure`",
        ),
        (
            line_of("only English"),
            col_of("only English", "{ en"),
            "`ratio.differs` has no `zh-TW` text",
            "every language",
        ),
        (
            lines.iter().position(|l| l.trim() == "unit: ms").unwrap() + 1,
            lines.iter().find(|l| l.trim() == "unit: ms").unwrap().find("ms").unwrap() + 1,
            "a ratio is shown in `%`, `ratio` or `x`, not `ms`",
            "unit: ratio",
        ),
    ];
    for (line, col, msg, hint) in expect {
        let at = format!("{file}:{line}:{col}: claim `bad` part `");
        let found = stderr.lines().enumerate().find(|(_, l)| l.starts_with(&at) && l.contains(msg));
        let Some((i, _)) = found else { panic!("`{at}…{msg}` in:\n{stderr}") };
        let next = stderr.lines().nth(i + 1).unwrap_or("");
        assert!(
            next.trim_start().starts_with("hint:") && next.contains(hint),
            "hint `{hint}` after `{msg}`: {next}"
        );
    }
}

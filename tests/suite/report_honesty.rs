//! What a report must never hide: page 1 keeps every refuted number and every open
//! claim (those open because a gate failed, too), and a trace that cannot be read makes
//! `check` and `render` exit 2 while the other claims are still shown.

use crate::util;

use std::path::Path;

use util::{fixture, run_in};

/// Renders `claims` (English Markdown only) into `dir`; returns the exit code and the report.
fn render_en(claims: &Path, dir: &Path) -> (Option<i32>, String, String) {
    let out = run_in(
        Some(dir),
        &["render", util::s(claims), "--lang", "en", "--format", "md", "--out", util::s(dir)],
    );
    let id = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().to_string())
        .find(|n| n.ends_with(".en.md"));
    let md = id.map(|n| std::fs::read_to_string(dir.join(n)).unwrap()).unwrap_or_default();
    (out.status.code(), md, String::from_utf8_lossy(&out.stderr).to_string())
}

/// The rows of the verdict table on page 1: (statement, number with its scope, verdict).
fn verdict_rows(md: &str) -> Vec<(String, String, String)> {
    let start = md.find("## Verdict table").unwrap_or_else(|| panic!("no verdict table:\n{md}"));
    md[start..]
        .lines()
        .skip_while(|l| !l.starts_with("| "))
        .skip(2)
        .take_while(|l| l.starts_with("| "))
        .map(|l| {
            let cells: Vec<String> =
                l.trim_matches('|').split(" | ").map(|c| c.trim().to_string()).collect();
            (cells[0].clone(), cells[1].clone(), cells[2].trim_matches('*').to_string())
        })
        .collect()
}

/// The numbered items under `## heading`.
fn numbered<'a>(md: &'a str, heading: &str) -> Vec<&'a str> {
    let start =
        md.find(&format!("## {heading}")).unwrap_or_else(|| panic!("no `{heading}`:\n{md}"));
    md[start..]
        .lines()
        .skip(1)
        .skip_while(|l| l.is_empty())
        .take_while(|l| l.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .collect()
}

/// A claims file whose only claim is refuted: on the 2-GPU trace where NCCL shares the
/// compute stream, nothing can overlap, so the hidden ratio is 0 and "at least 50%" fails.
fn only_refuted(dir: &Path) -> std::path::PathBuf {
    let trace = fixture("nsys-ai/mfu_2gpu_before.sqlite");
    let p = dir.join("refuted.yaml");
    std::fs::write(
        &p,
        format!(
            r#"report:
  id: refuted
  languages: [en]
  title: {{ en: "One refuted claim" }}
traces:
  before: {{ path: "{}", expect_devices: 0-1 }}
scopes:
  dev0: {{ trace: before, devices: "0" }}
claims:
  - id: comm-hidden
    statement: {{ en: "communication is mostly hidden (hidden ratio at least 50%)" }}
    about: {{ devices: "0", per: device, quantity: wall-time, denominator: nccl-busy }}
    principal: hidden
    parts:
      - id: hidden
        kind: observation
        text: {{ en: "device 0's NCCL hidden ratio" }}
        measure: {{ analysis: overlap, scope: dev0, value: "overlap_ns / nccl_busy_ns", unit: "%" }}
        condition: {{ at_least: "50%" }}
"#,
            util::s(&trace)
        ),
    )
    .unwrap();
    p
}

#[test]
fn a_refuted_claim_keeps_its_number_and_scope_on_page_one() {
    let dir = tempfile::tempdir().unwrap();
    let (code, md, err) = render_en(&only_refuted(dir.path()), dir.path());
    assert_eq!(code, Some(0), "{err}");
    let rows = verdict_rows(&md);
    // One stream per device: compute and NCCL never overlap, so 0 / busy = 0.0%, on device 0
    // over the whole trace (and on device 1 too); the share is of NCCL busy time, the
    // formula's denominator.
    assert_eq!(
        rows,
        [(
            "communication is mostly hidden (hidden ratio at least 50%)".to_string(),
            "0.0% of NCCL busy time (device 0, whole trace; 0.0% on each of devices 0-1)"
                .to_string(),
            "not supported".to_string()
        )]
    );
}

#[test]
fn every_claim_has_its_number_with_its_scope_on_page_one() {
    // The 2-GPU claims file: two claims refuted, one open; each is listed once.
    let dir = tempfile::tempdir().unwrap();
    let claims = util::manifest_dir().join("claims/mfu-2gpu-same-stream.yaml");
    let (code, md, err) = render_en(&claims, dir.path());
    assert_eq!(code, Some(0), "{err}");
    let rows = verdict_rows(&md);
    // Every claim once, in the claims file's order, each with its number and scope: the
    // refuted one keeps its number.
    let got: Vec<(&str, &str)> = rows.iter().map(|(_, n, v)| (n.as_str(), v.as_str())).collect();
    assert_eq!(
        got,
        [
            (
                "0.0% of NCCL busy time (device 0, whole trace; 0.0% on each of devices 0-1)",
                "not supported",
            ),
            (
                "5.7% of the window (device 0, whole trace; 2.8% to 5.7% across devices 0-1)",
                "supported"
            ),
            ("0.00 ms (device 0, whole trace)", "partially supported"),
        ]
    );
}

#[test]
fn a_claim_open_because_a_gate_failed_is_listed_with_the_gate() {
    let dir = tempfile::tempdir().unwrap();
    let claims = util::manifest_dir().join("fixtures/claims/scope-errors/r1-window-differs.yaml");
    let (code, md, err) = render_en(&claims, dir.path());
    assert_eq!(code, Some(0), "{err}");
    let open = numbered(&md, "Open items, cheapest first");
    assert_eq!(open.len(), 1, "{open:?}");
    assert!(open[0].starts_with("1. **in step 4, "), "{}", open[0]);
    assert!(open[0].contains("(unverifiable): "), "{}", open[0]);
    assert!(open[0].contains("gate R1 window failed"), "{}", open[0]);
    // The claim speaks of 39.964-46.123 s; the scope measured 46.123-52.279 s.
    assert!(open[0].contains("39.964") && open[0].contains("46.123"), "{}", open[0]);
}

#[test]
fn an_unreadable_trace_exits_2_and_the_other_claims_are_still_shown() {
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.sqlite");
    std::fs::write(&broken, b"not a database, only some bytes").unwrap();
    let good = fixture("nsys-ai/mfu_2gpu_before.sqlite");
    let claims = dir.path().join("two.yaml");
    std::fs::write(
        &claims,
        format!(
            r#"report:
  id: two
  languages: [en]
  title: {{ en: "Two traces, one unreadable" }}
traces:
  good: {{ path: "{}" }}
  broken: {{ path: "{}" }}
scopes:
  g0: {{ trace: good, devices: "0" }}
  b0: {{ trace: broken, devices: "0" }}
claims:
  - id: good-claim
    statement: {{ en: "compute and NCCL never overlap on device 0" }}
    principal: o
    parts:
      - id: o
        kind: observation
        measure: {{ analysis: overlap, scope: g0, value: overlap_ns, unit: ms }}
        condition: {{ at_most: "0 ms" }}
  - id: broken-claim
    statement: {{ en: "device 0 ran kernels" }}
    principal: k
    parts:
      - id: k
        kind: observation
        measure: {{ analysis: kernels, scope: b0, value: count, unit: count }}
        condition: {{ at_least: "1" }}
"#,
            util::s(&good),
            util::s(&broken)
        ),
    )
    .unwrap();
    let out = run_in(Some(dir.path()), &["check", util::s(&claims)]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(stderr.contains("broken.sqlite") && stderr.contains("hint:"), "{stderr}");
    assert!(stdout.contains("good-claim") && stdout.contains("supported"), "{stdout}");
    assert!(stdout.contains("broken-claim"), "{stdout}");

    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let (code, md, err) = render_en(&claims, &out_dir);
    assert_eq!(code, Some(2), "{err}");
    assert!(md.contains("good-claim") && md.contains("broken-claim"));
    // The failed query is named with its command, and the open list says why.
    let open = numbered(&md, "Open items, cheapest first");
    assert!(
        open.iter().any(|l| l.contains("device 0 ran kernels") && l.contains("query failed")),
        "{open:?}"
    );
    assert!(md.contains("verdict query kernels") && md.contains("broken.sqlite"), "{md}");
}

/// `num / den` as a percentage with one decimal, half away from zero, for positive values.
fn pct(num: i128, den: i128) -> String {
    let tenths = (num * 2000 + den) / (2 * den);
    format!("{}.{}%", tenths / 10, tenths % 10)
}

#[test]
fn misreadings_quote_this_audit_s_numbers_never_the_article_s() {
    let claims = util::manifest_dir().join("claims/mfu-2gpu-same-stream.yaml");
    let ledger =
        util::run_json_in(Some(&util::manifest_dir()), &["check", util::s(&claims), "--json"]);
    let exposed = ledger["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "own-stream")
        .and_then(|r| r["parts"].as_array().unwrap().iter().find(|p| p["id"] == "exposed"))
        .map(|p| p["formula"]["exact"].clone())
        .unwrap();
    let f: (i128, i128) = (
        exposed[0].as_str().unwrap().parse().unwrap(),
        exposed[1].as_str().unwrap().parse().unwrap(),
    );
    // 1 / (1 - f) = 1 + f / (1 - f): step time -f is throughput +f/(1-f).
    let step = pct(f.0, f.1);
    let gain = pct(f.0, f.1 - f.0);
    assert_eq!(step, "5.7%");

    let dir = tempfile::tempdir().unwrap();
    let (code, md, err) = render_en(&claims, dir.path());
    assert_eq!(code, Some(0), "{err}");
    let start = md.find("## Common misreadings").expect("a misreadings section");
    let end = md[start..].find("\n## Provenance").map_or(md.len(), |e| start + e);
    let section = &md[start..end];
    assert!(section.contains(&format!("step time -{step} is throughput +{gain}")), "{section}");
    for article in ["17.8%", "21.6%", "6,155.75", "28.3%"] {
        assert!(!section.contains(article), "the article's {article} leaked into:\n{section}");
    }
}

#[test]
fn a_utc_clock_is_also_shown_relative_to_the_capture_start() {
    let Some(shared) = util::shared_traces() else {
        return util::skip_no_shared("a_utc_clock_is_also_shown_relative_to_the_capture_start");
    };
    let trace = shared.join(
        "dsl-fs24/results_Ring_2nodes_6GPUs_1010/example_2_nsys_report_ault43.cscs.ch_854723.sqlite",
    );
    // The capture start on the UTC clock, and the kernel range, read with SQL.
    let conn = util::open_ro(&trace);
    let shift: i64 = conn
        .query_row(
            "SELECT CAST(value AS INTEGER) FROM META_DATA_EXPORT WHERE name = 'EXPORT_CONFIG_TIME_SHIFT'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let (first, last): (i64, i64) = conn
        .query_row("SELECT MIN(start), MAX(end) FROM CUPTI_ACTIVITY_KIND_KERNEL", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let claims = dir.path().join("utc.yaml");
    // A window from 2 s to 3 s after the capture start, written on the trace's own clock.
    let (w0, w1) = (shift + 2_000_000_000, shift + 3_000_000_000);
    let secs = |ns: i64| util::seconds(ns);
    std::fs::write(
        &claims,
        format!(
            r#"report:
  id: utc
  languages: [en]
  title: {{ en: "A UTC-clock trace" }}
traces:
  T: {{ path: "{}" }}
scopes:
  w: {{ trace: T, window: "{}:{}", devices: "1" }}
claims:
  - id: busy
    statement: {{ en: "device 1 ran a kernel in the window" }}
    principal: n
    parts:
      - id: n
        kind: observation
        measure: {{ analysis: kernels, scope: w, value: count, unit: count }}
        condition: {{ at_least: "1" }}
"#,
            util::s(&trace),
            secs(w0),
            secs(w1)
        ),
    )
    .unwrap();
    let (code, md, err) = render_en(&claims, dir.path());
    assert_eq!(code, Some(0), "{err}");
    let window = format!("{}–{} s (capture start +2–+3 s)", secs(w0), secs(w1));
    assert!(md.contains(&window), "no `{window}` in:\n{md}");
    let range = format!(
        "{}–{} s (capture start +{}–+{} s)",
        secs(first),
        secs(last),
        secs(first - shift),
        secs(last - shift)
    );
    assert!(md.contains(&range), "no `{range}` in:\n{md}");
}

/// A claims file with one overlap claim on each of `traces` (name, path), device 0.
fn one_claim_per_trace(dir: &Path, traces: &[(&str, &Path)]) -> std::path::PathBuf {
    let mut yaml = String::from(
        "report:\n  id: origins\n  languages: [en]\n  title: { en: \"Origins\" }\ntraces:\n",
    );
    for (name, path) in traces {
        yaml += &format!("  {name}: {{ path: \"{}\" }}\n", util::s(path));
    }
    yaml += "scopes:\n";
    for (name, _) in traces {
        yaml += &format!("  {name}0: {{ trace: {name}, devices: \"0\" }}\n");
    }
    yaml += "claims:\n";
    for (name, _) in traces {
        yaml += &format!(
            "  - id: c-{name}\n    statement: {{ en: \"{name}\" }}\n    principal: p\n    parts:\n      - id: p\n        kind: observation\n        text: {{ en: \"kernel time\" }}\n        measure: {{ analysis: overlap, scope: {name}0, value: total_ns, unit: ms }}\n"
        );
    }
    let p = dir.join("origins.yaml");
    std::fs::write(&p, yaml).unwrap();
    p
}

/// A slice of a real capture is said to be one (its length, window and capture, from the
/// export's own `DERIVED_*` rows, read here by SQL), a generated trace is said not to be a
/// capture, and a plain capture gets no notice at all.
#[test]
fn origins_say_slice_synthetic_or_nothing_as_the_metadata_says() {
    let dir = tempfile::tempdir().unwrap();
    let slice = fixture("nsys-ai/mfu_2gpu_before.sqlite");
    let synthetic = fixture("ab/tp4.sqlite");
    let plain = fixture("legacy/mordred_report1_2021.sqlite");
    let meta = |p: &Path, k: &str| -> Option<String> {
        util::open_ro(p)
            .query_row("SELECT value FROM META_DATA_EXPORT WHERE name = ?1", [k], |r| r.get(0))
            .ok()
    };
    let window = meta(&slice, "DERIVED_WINDOW_NS").unwrap();
    let (a, b) = window.split_once('-').unwrap();
    let (a, b): (i64, i64) = (a.parse().unwrap(), b.parse().unwrap());
    let from = meta(&slice, "DERIVED_FROM").unwrap();
    let by = meta(&slice, "DERIVED_BY").unwrap();
    assert!(meta(&plain, "DERIVED_BY").is_none(), "the legacy export is a plain capture");
    let claims = one_claim_per_trace(
        dir.path(),
        &[("slice", &slice), ("synthetic", &synthetic), ("plain", &plain)],
    );
    let (code, md, stderr) = render_en(&claims, dir.path());
    assert_eq!(code, Some(0), "{stderr}");
    let notices: Vec<&str> = md.lines().filter(|l| l.starts_with("**About the trace**")).collect();
    assert_eq!(notices.len(), 2, "{notices:?}");
    // 300,000,000 ns: 300.00 ms; the window in seconds with nine decimals.
    let length = format!("{}.{:02} ms", (b - a) / 1_000_000, (b - a) % 1_000_000 / 10_000);
    let secs = |x: i64| format!("{}.{:09}", x / 1_000_000_000, x % 1_000_000_000);
    let expected = format!(
        "trace slice is a {length} slice of the capture {from} ({}-{} s on its clock), cut by {by}",
        secs(a),
        secs(b)
    );
    assert!(notices.iter().any(|n| n.contains(&expected)), "{expected} in {notices:?}");
    let gen_by = meta(&synthetic, "DERIVED_BY").unwrap();
    assert!(
        notices.iter().any(|n| n.contains(&format!(
            "trace synthetic is not a capture of the job: its metadata says it was derived by {gen_by}"
        ))),
        "{notices:?}"
    );
    assert!(!notices.iter().any(|n| n.contains("trace plain")), "{notices:?}");
}

/// Every reproducing command in a committed report says which parts it gives numbers to: a
/// comparison's side queries name the comparison that reads them, never an empty "parts:".
#[test]
fn every_reproducing_command_names_the_parts_that_read_it() {
    let mut read = 0;
    for entry in std::fs::read_dir(util::manifest_dir().join("out")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if !name.ends_with(".md") || name.contains(".blog.") || name.contains(".brief.") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (i, line) in text.lines().enumerate() {
            for label in ["parts:", "對應的部分："] {
                if let Some(rest) = line.strip_prefix(label) {
                    read += 1;
                    assert!(!rest.trim().is_empty(), "{name}:{}: an empty `{label}` line", i + 1);
                }
            }
        }
    }
    assert!(read > 50, "{read} command lines read");
}

/// Each image of a report with its caption (the image's text, or the line under it when the
/// image's text is a placeholder) and its file, Markdown escapes removed.
fn images(md: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = md.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(rest) = line.strip_prefix("![") else { continue };
        let (alt, file) = rest.rsplit_once("](").unwrap();
        let caption = if alt.contains('`') {
            alt.to_string()
        } else {
            let under = lines[i + 1..].iter().find(|l| !l.trim().is_empty()).unwrap();
            under.trim_matches('*').to_string()
        };
        out.push((caption.replace('\\', ""), file.trim_end_matches(')').to_string()));
    }
    out
}

/// The text nodes of an SVG, unescaped.
fn svg_texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let body = t.split_once('>')?.1;
            Some(body.split_once("</text>")?.0.replace("&apos;", "'").replace("&amp;", "&"))
        })
        .collect()
}

/// Every A/B chart's caption says what its SVG draws: whether 0 is among the axis's tick
/// labels (read from the SVG, both languages), and, for a comparison judged on each device,
/// whose samples the dots are (device 0's: as many dots per side as its comparison has).
#[test]
fn every_ab_caption_says_what_its_chart_draws() {
    let mut checked = 0;
    for claims in ["claims/mfu-2gpu-ab.yaml", "claims/tp-ab.yaml", "claims/tp-runs-ab.yaml"] {
        let dir = tempfile::tempdir().unwrap();
        let out = run_in(
            Some(&util::manifest_dir()),
            &["render", claims, "--format", "md", "--out", util::s(dir.path())],
        );
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let id = Path::new(claims).file_stem().unwrap().to_str().unwrap();
        let ledger: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join(format!("{id}.evidence.json"))).unwrap(),
        )
        .unwrap();
        for (lang, on, off) in [
            ("en", "0 is on the axis", "0 is not on the axis"),
            ("zh-TW", "座標軸上有 0", "座標軸上沒有 0"),
        ] {
            let md = std::fs::read_to_string(dir.path().join(format!("{id}.{lang}.md"))).unwrap();
            for (caption, file) in images(&md).iter().filter(|(_, f)| f.contains(".ab")) {
                let (caption, file) = (caption.as_str(), file.as_str());
                let svg = std::fs::read_to_string(dir.path().join(file)).unwrap();
                let texts = svg_texts(&svg);
                let zero_tick = texts.iter().any(|t| t.trim().parse::<f64>() == Ok(0.0));
                let said = if caption.ends_with(on) {
                    true
                } else if caption.ends_with(off) {
                    false
                } else {
                    panic!("{file}: the caption says nothing of the axis: {caption}")
                };
                assert_eq!(said, zero_tick, "{file}: {caption}\n{texts:?}");
                // Per-device comparisons: the dots are device 0's.
                if let Some(device) =
                    (lang == "en").then(|| caption.split_once(" of device ").map(|x| x.1)).flatten()
                {
                    let d: i64 = device
                        .split(|c: char| !c.is_ascii_digit())
                        .next()
                        .unwrap()
                        .parse()
                        .unwrap();
                    let metric = caption.split('`').nth(3).unwrap();
                    let ev = ledger["ledger"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter_map(|e| e["evidence"].as_object())
                        .find(|e| {
                            e["parameters"]["metric"] == metric
                                && e["values"]["devices"].as_array().is_some_and(|v| v.len() > 1)
                        })
                        .unwrap();
                    let first = &ev["values"]["devices"][0];
                    assert_eq!(first["device"], d, "{file}: the chart draws the first device");
                    let n_a = first["values"]["n_a"].as_i64().unwrap();
                    assert!(texts.contains(&format!("{n_a} samples")), "{file}: {texts:?}");
                    checked += 1;
                }
                checked += 1;
            }
        }
    }
    // mfu: 4 comparisons, 2 of them per device; tp-ab 2; tp-runs-ab 2; in two languages.
    assert_eq!(checked, (4 + 2 + 2) * 2 + 2, "charts checked");
}

/// A chart stands under the claim whose evidence it draws: in the mfu report each A/B chart
/// is under the claim of its metric (the caption names it), not all under the first claim
/// that reads a comparison.
#[test]
fn each_chart_stands_under_the_claim_it_draws() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_in(
        Some(&util::manifest_dir()),
        &[
            "render",
            "claims/mfu-2gpu-ab.yaml",
            "--lang",
            "en",
            "--format",
            "md",
            "--out",
            util::s(dir.path()),
        ],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let md = std::fs::read_to_string(dir.path().join("mfu-2gpu-ab.en.md")).unwrap();
    let set = verdict::claims::load(&util::manifest_dir().join("claims/mfu-2gpu-ab.yaml")).unwrap();
    let pictures = images(&md);
    let mut next = pictures.iter();
    let mut claim: Option<&verdict::claims::Claim> = None;
    let mut seen = 0;
    for line in md.lines() {
        if let Some(h) = line.strip_prefix("### ") {
            claim = set.claims.iter().find(|c| c.statement["en"] == h);
        }
        if !line.starts_with("![") {
            continue;
        }
        let (caption, file) = next.next().unwrap();
        if !file.contains(".ab") {
            continue;
        }
        let metric = caption.split('`').nth(3).unwrap_or_else(|| panic!("{caption}"));
        let c = claim.unwrap_or_else(|| panic!("{caption} under no claim"));
        let measures: Vec<&str> = c
            .parts
            .iter()
            .filter_map(|p| p.measure.as_ref())
            .filter_map(|m| m.args.iter().find(|(k, _)| k == "metric").map(|(_, v)| v.as_str()))
            .collect();
        assert!(measures.contains(&metric), "`{metric}` under `{}`", c.id);
        seen += 1;
    }
    assert_eq!(seen, 4, "{md}");
}

/// One clock: no committed example is dated after the day it was rendered, and `render` warns
/// when a claims file's date is later than the render's (here SOURCE_DATE_EPOCH 1788393600,
/// 2026-09-03, against the Kineto example's 2026-09-14).
#[test]
fn an_audit_is_never_dated_after_its_rendering() {
    let out = util::manifest_dir().join("out");
    let mut seen = 0;
    for e in std::fs::read_dir(&out).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if !name.ends_with(".en.md") {
            continue;
        }
        let md = std::fs::read_to_string(&p).unwrap();
        let field = |k: &str| md.lines().find_map(|l| l.strip_prefix(k)).map(str::trim);
        if let (Some(dated), Some(rendered)) = (field("- audit date: "), field("- rendered: ")) {
            assert!(dated <= rendered, "{name}: dated {dated}, rendered {rendered}");
            seen += 1;
        }
    }
    assert!(seen >= 3, "{seen}");
    let dir = tempfile::tempdir().unwrap();
    let o = util::verdict()
        .current_dir(util::manifest_dir())
        .env("SOURCE_DATE_EPOCH", "1788393600")
        .args(["render", "claims/kineto-ddp-overlap.yaml", "--lang", "en", "--format", "md"])
        .arg("--out")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("`report.date` is 2026-09-14, after the day it is rendered (2026-09-03)"),
        "{err}"
    );
}

//! Tests of the charts of whole audits (scopes, file names, captions, languages), and the
//! helpers the chart modules' own tests share.

use std::collections::BTreeMap;

use serde_json::Value;

use super::*;
use crate::analysis::{ScopeInfo, ToolRef, TraceRef, WindowInfo};
use crate::scope::Semantics;

/// ms with two decimals, as in the article's tables, to ns.
pub(super) fn ms(v: f64) -> i64 {
    (v * 1e6).round() as i64
}

pub(super) fn en() -> Labels {
    Labels::new(&Strings::load("en").expect("en")).expect("en labels")
}

pub(super) fn zh() -> Labels {
    Labels::new(&Strings::load("zh-TW").expect("zh-TW")).expect("zh-TW labels")
}

/// The value of attribute `attr` on the first element that contains `marker`.
pub(super) fn attr_of(svg: &str, marker: &str, attr: &str) -> f64 {
    let start = svg.find(marker).unwrap_or_else(|| panic!("{marker} not in svg"));
    let elem = &svg[start..start + svg[start..].find('>').expect("unclosed element")];
    let key = format!(" {attr}=\"");
    let from = elem.find(&key).unwrap_or_else(|| panic!("no {attr} in {elem}")) + key.len();
    elem[from..from + elem[from..].find('"').expect("unclosed attr")].parse().expect("number")
}

/// Evidence of `analysis` with `values` and nothing else of interest.
pub(super) fn evidence(analysis: &str, values: Value) -> Evidence {
    let Value::Object(values) = values else { panic!("values must be an object") };
    Evidence {
        analysis: analysis.into(),
        tool: ToolRef::current(),
        trace: TraceRef {
            path: "t.sqlite".into(),
            sha256: String::new(),
            schema_version: None,
            nsys_version: None,
            format: None,
            time_base: "session".into(),
            capture_start_ns: None,
            origin: Default::default(),
            columnar: None,
            set: None,
        },
        window: WindowInfo { requested_ns: None, effective_ns: None, semantics: Semantics::Clip },
        scope: ScopeInfo {
            devices: vec![1, 2],
            present_devices: vec![1, 2],
            missing_devices: Vec::new(),
            streams: None,
        },
        parameters: BTreeMap::new(),
        metrics: BTreeMap::new(),
        values: Some(crate::analysis::values::Values::Map(values)),
        rows: None,
        notes: Vec::new(),
        samples: Vec::new(),
    }
}

/// The day26 trace with a label, plus a 2-GPU trace without one, and several scopes of each.
fn multi_audit() -> Audit {
    let root = env!("CARGO_MANIFEST_DIR");
    let yaml = format!(
        r#"report:
  id: multi
  languages: [en, zh-TW]
  title: {{ en: "Charts of several scopes", zh-TW: "多個範圍的圖表" }}
traces:
  main:
    path: "{root}/fixtures/day26/megatron.sqlite"
    label: {{ en: "Megatron 8x H200", zh-TW: "Megatron 八張 H200" }}
  two:
    path: "{root}/fixtures/nsys-ai/mfu_2gpu_before.sqlite"
scopes:
  step-dev4: {{ trace: main, window: "39.964:46.123", devices: "4", semantics: contain }}
  step-all: {{ trace: main, window: "39.964:46.123", devices: all, semantics: contain }}
  step-clip: {{ trace: main, window: "39.964:46.123", devices: "4" }}
  whole: {{ trace: main, devices: all }}
  whole-again: {{ trace: main, devices: all }}
  two-all: {{ trace: two, devices: all }}
  two-dev0: {{ trace: two, devices: "0" }}
claims:
  - id: c1
    statement: {{ en: "several scopes", zh-TW: "多個範圍" }}
    principal: a
    parts:
      - id: a
        kind: observation
        text: {{ en: "a", zh-TW: "a" }}
        measure: {{ analysis: overlap, scope: step-dev4, value: "nccl_only_ns / total_ns", unit: "%" }}
      - id: b
        kind: observation
        text: {{ en: "b", zh-TW: "b" }}
        measure: {{ analysis: overlap, scope: step-clip, value: "nccl_only_ns / total_ns", unit: "%" }}
      - id: c
        kind: observation
        text: {{ en: "c", zh-TW: "c" }}
        measure: {{ analysis: overlap, scope: two-dev0, value: "nccl_only_ns / total_ns", unit: "%" }}
      - id: d
        kind: observation
        text: {{ en: "d", zh-TW: "d" }}
        measure: {{ analysis: kernels, scope: step-all, value: count, unit: count }}
      - id: e
        kind: observation
        text: {{ en: "e", zh-TW: "e" }}
        measure: {{ analysis: kernels, scope: two-dev0, value: count, unit: count }}
      - id: f
        kind: observation
        text: {{ en: "f", zh-TW: "f" }}
        measure: {{ analysis: nccl-skew, scope: whole, stream: 56, value: wait_share, unit: "%" }}
      - id: g
        kind: observation
        text: {{ en: "g", zh-TW: "g" }}
        measure: {{ analysis: nccl-skew, scope: whole-again, stream: 56, value: wait_share, unit: "%" }}
      - id: h
        kind: observation
        text: {{ en: "h", zh-TW: "h" }}
        measure: {{ analysis: nccl-skew, scope: two-all, value: wait_share, unit: "%" }}
"#
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("multi.yaml");
    std::fs::write(&path, yaml).expect("write claims");
    let set = crate::claims::load(&path).unwrap_or_else(|e| panic!("{e}"));
    crate::audit::run(set, &mut |_, _| {})
}

fn strings(lang: &str) -> Strings {
    Strings::load(lang).expect("strings")
}

#[test]
fn one_chart_per_distinct_scope_with_stable_names() {
    let a = multi_audit();
    let files: Vec<String> =
        charts(&a, &strings("en")).expect("charts").into_iter().map(|c| c.file).collect();
    assert_eq!(
        files,
        [
            "multi.en.overlap.svg",
            "multi.en.overlap-2.svg",
            "multi.en.overlap-3.svg",
            // `whole` and `whole-again` are the same query: one chart.
            "multi.en.nccl-skew.svg",
            "multi.en.nccl-skew-2.svg",
            "multi.en.kernels.svg",
            "multi.en.kernels-2.svg",
        ]
    );
    let zh: Vec<String> =
        charts(&a, &strings("zh-TW")).expect("charts").into_iter().map(|c| c.file).collect();
    assert_eq!(zh[0], "multi.zh-TW.overlap.svg");
    assert_eq!(zh.len(), files.len());
}

#[test]
fn captions_name_the_trace_and_the_scope() {
    let a = multi_audit();
    let c = charts(&a, &strings("en")).expect("charts");
    assert_eq!(
        c[0].caption,
        "Overlap breakdown per device, trace main (Megatron 8x H200), window 39.964–46.123 s \
         (contain), devices 1-7: each bar is 100% of that device's total (the span of its kernels \
         kept inside the window), split into compute only, exposed NCCL, overlap and idle"
    );
    assert!(c[1].caption.contains("window 39.964–46.123 s (clip), devices 1-7"));
    assert!(c[1].caption.contains("(the window length)"));
    // The second trace has no label, and no window: the whole trace, each device's span.
    assert!(
        c[2].caption
            .starts_with("Overlap breakdown per device, trace two, whole trace, devices 0-1: "),
        "{}",
        c[2].caption
    );
    assert!(c[2].caption.contains("(the span of its kernels)"));
    assert_eq!(
        c[3].caption,
        "NCCL cross-rank skew, trace main (Megatron 8x H200), whole trace, stream 56, one rank \
         per device (devices 1-7): start and end offset from the earliest rank (bar: median, \
         whisker: p90)"
    );
    assert!(
        c[4].caption
            .contains("trace two, whole trace, all streams, one rank per device (devices 0-1)")
    );
    assert_eq!(
        c[5].caption,
        "Top kernels by total kernel time (10 of 27 names), trace main (Megatron 8x H200), \
         window 39.964–46.123 s (contain), devices 1-7: each bar sums kernel time over 7 devices \
         (1-7), so it is not wall time: concurrent kernels add up"
    );
    assert!(
        c[6].caption
            .contains("trace two, whole trace, device 0: each bar sums kernel time on device 0")
    );
}

#[test]
fn zh_tw_captions_and_charts_are_in_chinese() {
    let a = multi_audit();
    let c = charts(&a, &strings("zh-TW")).expect("charts");
    assert_eq!(
        c[0].caption,
        "各 device 的運算／NCCL 重疊拆解，trace main（Megatron 八張 H200），時間窗 \
         39.964–46.123 秒（contain 語意），device 1-7：每條長條是該 device 總長（留在時間窗內\
         那些 kernel 的跨度）的 100%，切成只有運算、exposed NCCL、重疊與閒置四段"
    );
    assert!(c[3].caption.contains("整份 trace，stream 56，每個 device 一個 rank（device 1-7）"));
    assert!(c[4].caption.contains("所有 stream"));
    assert!(c[5].caption.contains("（27 個名稱中的前 10 個）"));
    assert!(
        c[5].caption.contains("每條長條是 7 張卡（device 1-7）的 kernel time 合計，不是 wall time")
    );

    let english = Labels::new(&strings("en")).expect("labels");
    let words = [
        &english.compute_only,
        &english.nccl_only,
        &english.overlap,
        &english.idle,
        &english.share_axis,
        &english.start_offset,
        &english.end_offset,
        &english.encoding,
        &english.offset_axis,
        &english.compute_kernel,
        &english.kernel_axis,
        &english.no_data,
    ];
    for chart in &c {
        // What a reader sees: text and tooltips, not class names.
        let seen: String =
            chart.svg.split('>').filter_map(|s| s.split('<').next()).collect::<Vec<_>>().join("\n");
        for w in words {
            assert!(!seen.contains(w.as_str()), "{} shows `{w}`", chart.file);
        }
        for w in ["calls)", " call)", "\nstart\n", "\nend\n", " median "] {
            assert!(!seen.contains(w), "{} shows `{w}`", chart.file);
        }
    }
    assert!(c[0].svg.contains(">只有運算</text>") && c[0].svg.contains(">閒置</text>"));
    assert!(c[3].svg.contains(">開始偏移</text>") && c[3].svg.contains(">結束</text>"));
    assert!(c[5].svg.contains(">kernel time 合計（ms）</text>"));
    assert!(c[5].svg.contains(" 次）</text>"));
}

#[test]
fn charts_show_the_evidence_numbers() {
    let a = multi_audit();
    let c = charts(&a, &strings("en")).expect("charts");
    // Device 4 in the contain window: 1,094,738,291 / 6,155,748,929 ns exposed NCCL = 17.78%,
    // and it is the device the overlap part speaks of.
    assert!(c[0].svg.contains("<title>device 4: NCCL only (exposed) 1,094.74 ms (17.8%)</title>"));
    assert!(c[0].svg.contains("font-weight=\"bold\">device 4</text>"));
    assert_eq!(c[0].svg.matches("<polygon").count(), 1);
    // The clip window's part also speaks of device 4; the second trace's of device 0.
    assert!(c[1].svg.contains("font-weight=\"bold\">device 4</text>"));
    assert_eq!(c[1].svg.matches("<polygon").count(), 1);
    assert!(c[2].svg.contains("font-weight=\"bold\">device 0</text>"));
    // Device 1's offsets on stream 56: start median 666,715 ns, p90 6,405,259 ns; end median
    // 12,186 ns, p90 24,873 ns.
    assert!(c[3].svg.contains(">0.67 ms, p90 6.41 ms</text>"));
    assert!(c[3].svg.contains(">12 µs, p90 25 µs</text>"));
    // The top kernel of the contain window: ReduceScatter, 6,643,308,360 ns in 588 launches.
    assert!(c[5].svg.contains(">6,643.31 ms (588 calls)</text>"));
    assert!(c[5].svg.contains("<title>ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL</title>"));
    assert_eq!(c[5].svg.matches("<g><title>").count(), 10);
}

#[test]
fn a_failed_or_incomplete_query_gives_no_chart() {
    let mut a = multi_audit();
    let before = charts(&a, &strings("en")).expect("charts").len();
    // A skew whose statistics are null (fewer than two ranks, or no matched instance).
    for e in &mut a.ledger {
        if let Some(ev) = e.evidence.as_mut().filter(|ev| ev.analysis == "nccl-skew")
            && let Some(crate::analysis::values::Values::NcclSkew(v)) = ev.values.as_mut()
        {
            v.rank_start_offset_ns = Some(Default::default());
        }
    }
    // A failed overlap query (a row without its total can no longer be built: the rows
    // are typed).
    a.context[0].evidence = None;
    let after = charts(&a, &strings("en")).expect("charts");
    assert_eq!(after.len(), before - 3);
    let files: Vec<&str> = after.iter().map(|c| c.file.as_str()).collect();
    assert_eq!(
        files,
        [
            "multi.en.overlap.svg",
            "multi.en.overlap-2.svg",
            "multi.en.kernels.svg",
            "multi.en.kernels-2.svg"
        ]
    );
    // The first overlap chart is now the clip window's.
    assert!(after[0].caption.contains("(clip)"));
}

#[test]
fn output_is_deterministic_with_at_most_two_decimals() {
    let a = multi_audit();
    let one = charts(&a, &strings("en")).expect("charts");
    let two = charts(&a, &strings("en")).expect("charts");
    assert_eq!(one, two);
    let three_decimals = regex::Regex::new(r"\d\.\d{3}").expect("regex");
    for c in &one {
        // Captions carry window bounds in seconds (39.964); the drawing itself has no more
        // than two decimals anywhere.
        assert!(!three_decimals.is_match(&c.svg), "more than two decimals in {}", c.file);
    }
}

#[test]
fn empty_input_says_no_data_in_the_language() {
    for (labels, said) in [(en(), ">no data</text>"), (zh(), ">無資料</text>")] {
        for svg in
            [overlap_chart(&[], &labels), skew_chart(&[], &labels), kernels_chart(&[], &labels)]
        {
            assert!(svg.starts_with("<svg "));
            assert!(svg.contains(said));
            assert!(svg.trim_end().ends_with("</svg>"));
        }
    }
}

/// Compiles charts of both languages with typst and requires a clean run.
///
/// Set `VERDICT_CHARTS_DIR` to keep the SVGs, the `.typ` and the PDF for inspection.
#[test]
fn typst_renders_charts_without_warnings() {
    if std::process::Command::new("typst").arg("--version").output().is_err() {
        eprintln!("skipping: typst is not on PATH");
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = match std::env::var_os("VERDICT_CHARTS_DIR") {
        Some(d) => std::path::PathBuf::from(d),
        None => tmp.path().to_path_buf(),
    };
    std::fs::create_dir_all(&dir).expect("mkdir");
    let a = multi_audit();
    let mut all = charts(&a, &strings("en")).expect("charts");
    all.extend(charts(&a, &strings("zh-TW")).expect("charts"));
    all.push(Chart {
        file: "empty.svg".into(),
        caption: String::new(),
        svg: kernels_chart(&[], &zh()),
        key: None,
    });
    for c in &all {
        std::fs::write(dir.join(&c.file), &c.svg).expect("write svg");
        let stem = c.file.trim_end_matches(".svg");
        let typ = format!(
            "#set page(width: 16cm, height: auto, margin: 1cm)\n#image(\"{}\", width: 100%)\n",
            c.file
        );
        std::fs::write(dir.join(format!("{stem}.typ")), typ).expect("write typ");
        let out = std::process::Command::new("typst")
            .arg("compile")
            .arg(dir.join(format!("{stem}.typ")))
            .arg(dir.join(format!("{stem}.pdf")))
            .output()
            .expect("run typst");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "typst failed on {}: {stderr}", c.file);
        assert!(stderr.trim().is_empty(), "typst warned on {}: {stderr}", c.file);
        let pdf = std::fs::read(dir.join(format!("{stem}.pdf"))).expect("read pdf");
        assert!(pdf.starts_with(b"%PDF"));
    }
}

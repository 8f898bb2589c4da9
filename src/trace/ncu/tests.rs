//! Tests of the `ncu --csv` reader. Expected values are literals read from the fixtures with
//! `grep` (quoted beside each), never from the reader's output.

use super::*;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/ncu").join(name)
}

fn r(num: i128, den: i128) -> Rational {
    Rational::new(num, den).unwrap()
}

fn only_kernel(report: &Report) -> &Kernel {
    assert_eq!(report.kernels.len(), 1);
    &report.kernels[0]
}

const GEMM: &str = "cutlass3x_sm100_tensorop_s64x256x32gemm_f8_f8_f32_f16_f16_64x256x128_1x1x1_0_tnn_align4_1sm_bias_f16_relu_aux_scalemax";

/// `grep -o '"SOLBottleneck".*' superbench-cublaslt_ncu.log`.
const SOL_BOTTLENECK: &str = "This workload exhibits low compute throughput and memory bandwidth utilization relative to the peak performance of this device. Achieved compute throughput and/or memory bandwidth below 60.0% of peak typically indicate latency issues. Look at Scheduler Statistics and Warp State Statistics for potential reasons.";

#[test]
fn real_log_details_page() {
    let report = read(&fixture("superbench-cublaslt_ncu.log")).unwrap();
    assert_eq!(report.layout, Layout::Details);
    assert_eq!(report.number_style, NumberStyle::DecimalPoint);
    // Two `==PROF==` lines and one line of the benchmark's output come first.
    assert_eq!(report.header_line, 4);
    let k = only_kernel(&report);
    assert_eq!((k.id, k.process_id, k.context, k.stream), (0, 371693, 1, 7));
    assert_eq!((k.process_name.as_str(), k.host.as_str()), ("cublaslt_gemm", "127.0.0.1"));
    assert_eq!(k.name, GEMM);
    assert_eq!(k.block, [384, 1, 1]);
    assert_eq!(k.grid, [9, 32, 1]);
    assert_eq!(k.device, 0);
    assert_eq!(k.compute_capability, ComputeCapability { major: 10, minor: 0 });
    assert_eq!(k.compute_capability.to_string(), "10.0");
    // 58 rows after the header: 50 metric rows, 8 rule rows.
    assert_eq!((k.metrics.len(), k.rules.len()), (50, 8));

    // grep: "Compute (SM) Throughput","%","23.59" / "Memory Throughput","%","21.68" /
    // "Duration","ns","406240" / "DRAM Throughput","%","0.74" /
    // "Achieved Occupancy","%","15.53" / "Waves Per SM","","1.89" /
    // "Registers Per Thread","register/thread","168".
    assert_eq!(k.figure_value(Figure::ComputeThroughput), Some(r(2359, 100)));
    assert_eq!(k.figure_value(Figure::MemoryThroughput), Some(r(2168, 100)));
    assert_eq!(k.figure_value(Figure::DramThroughput), Some(r(74, 100)));
    assert_eq!(k.figure_value(Figure::AchievedOccupancy), Some(r(1553, 100)));
    assert_eq!(k.figure_value(Figure::WavesPerSm), Some(r(189, 100)));
    assert_eq!(k.figure_value(Figure::RegistersPerThread), Some(r(168, 1)));
    assert_eq!(k.duration_ns(), Some(r(406240, 1)));
    let sm = k.figure(Figure::ComputeThroughput).unwrap();
    assert_eq!(sm.section.as_deref(), Some("GPU Speed Of Light Throughput"));
    assert_eq!((sm.unit.as_str(), sm.value.text(), sm.line), ("%", "23.59", 14));
    assert_eq!(sm.quantity(), Some(Quantity::Percent(r(2359, 100))));
    let duration = k.figure(Figure::Duration).unwrap();
    assert_eq!((duration.unit.as_str(), duration.value.text()), ("ns", "406240"));
    assert_eq!(k.figure(Figure::RegistersPerThread).unwrap().unit, "register/thread");

    // grep: "DRAM Frequency","hz","3995313115.40" / "Shared Memory Configuration
    // Size","byte","233472" / "Cluster Scheduling Policy","","PolicySpread".
    let dram = k.metric_in("GPU Speed Of Light Throughput", "DRAM Frequency").unwrap();
    assert_eq!(dram.quantity(), Some(Quantity::Hertz(r(399531311540, 100))));
    let smem = k.metric("Shared Memory Configuration Size").unwrap();
    assert_eq!(smem.quantity(), Some(Quantity::Bytes(r(233472, 1))));
    let policy = k.metric("Cluster Scheduling Policy").unwrap();
    assert_eq!(policy.value, MetricValue::Text("PolicySpread".into()));
    assert_eq!(policy.quantity(), None);
    assert_eq!(k.metric("Enabled TPC IDs").unwrap().value, MetricValue::Text("all".into()));

    // The rule rows, verbatim: `SOLBottleneck` has empty speedup columns (`"",""`).
    let sol: Vec<_> = k.rules_named("SOLBottleneck").collect();
    assert_eq!(sol.len(), 1);
    assert_eq!(sol[0].section.as_deref(), Some("SpeedOfLight"));
    assert_eq!(sol[0].kind, "OPT");
    assert_eq!(sol[0].description, SOL_BOTTLENECK);
    assert_eq!((sol[0].speedup_kind.as_deref(), sol[0].speedup), (None, None));
    assert_eq!((sol[0].speedup_text.as_str(), sol[0].line), ("", 15));
    // grep: "TheoreticalOccupancy" ... "local","81.25"; the second "LaunchConfiguration"
    // ... "global","50"; four "WorkloadImbalance" rows.
    let occ = k.rules_named("TheoreticalOccupancy").next().unwrap();
    assert_eq!((occ.speedup_kind.as_deref(), occ.speedup), (Some("local"), Some(r(8125, 100))));
    let launch: Vec<_> = k.rules_named("LaunchConfiguration").collect();
    assert_eq!(launch.len(), 2);
    assert_eq!(
        (launch[1].speedup_kind.as_deref(), launch[1].speedup),
        (Some("global"), Some(r(50, 1)))
    );
    assert_eq!(k.rules_named("WorkloadImbalance").count(), 4);
}

#[test]
fn raw_page_reads_the_same_figures() {
    let details = read(&fixture("superbench-cublaslt_ncu.log")).unwrap();
    let raw = read(&fixture("superbench-raw.csv")).unwrap();
    assert_eq!(raw.layout, Layout::Raw);
    assert_eq!(raw.number_style, NumberStyle::DecimalPoint);
    let (d, k) = (only_kernel(&details), only_kernel(&raw));
    assert_eq!(
        (k.id, k.process_id, &k.name, k.block, k.grid),
        (d.id, d.process_id, &d.name, d.block, d.grid)
    );
    assert_eq!((k.device, k.compute_capability), (d.device, d.compute_capability));
    assert!(k.rules.is_empty() && k.metrics.iter().all(|m| m.section.is_none()));
    for s in FIGURES {
        let m = k.figure(s.figure).unwrap();
        assert_eq!(m.name, s.raw[0], "the raw page names {:?} by its raw name", s.figure);
        if s.figure != Figure::Duration {
            assert_eq!(k.figure_value(s.figure), d.figure_value(s.figure), "{:?}", s.figure);
        }
    }
    // The raw page writes the duration in µs (`"usecond"`, `"406.24"`) and the clocks in
    // cycles per ns: converted, they are the details page's `406240` ns and hz.
    let duration = k.figure(Figure::Duration).unwrap();
    assert_eq!((duration.unit.as_str(), duration.value.text()), ("usecond", "406.24"));
    assert_eq!(k.duration_ns(), Some(r(406240, 1)));
    assert_eq!(k.duration_ns(), d.duration_ns());
    for (raw_name, label) in [
        ("dram__cycles_elapsed.avg.per_second", "DRAM Frequency"),
        ("gpc__cycles_elapsed.avg.per_second", "SM Frequency"),
    ] {
        let (a, b) = (k.metric(raw_name).unwrap(), d.metric(label).unwrap());
        assert_eq!(a.unit, "cycle/nsecond");
        assert!(matches!(a.quantity(), Some(Quantity::Hertz(_))));
        assert_eq!(a.quantity(), b.quantity(), "{label}");
    }
}

#[test]
fn decimal_comma_export_reads_the_same_values() {
    let en = read(&fixture("superbench-cublaslt_ncu.log")).unwrap();
    let de = read(&fixture("superbench-de.csv")).unwrap();
    assert_eq!(de.number_style, NumberStyle::DecimalComma);
    assert_eq!(de.layout, Layout::Details);
    let (e, g) = (only_kernel(&en), only_kernel(&de));
    assert_eq!(g.figure(Figure::ComputeThroughput).unwrap().value.text(), "23,59");
    assert_eq!(g.figure(Figure::Duration).unwrap().value.text(), "406.240");
    assert_eq!(g.figure_value(Figure::ComputeThroughput), Some(r(2359, 100)));
    assert_eq!(g.duration_ns(), Some(r(406240, 1)));
    // `"3.995.313.115,40"` against `"3995313115.40"`.
    let dram = g.metric("DRAM Frequency").unwrap();
    assert_eq!(
        (dram.value.text(), dram.value.number()),
        ("3.995.313.115,40", Some(r(399531311540, 100)))
    );
    assert_eq!(e.metrics.len(), g.metrics.len());
    for (a, b) in e.metrics.iter().zip(&g.metrics) {
        assert_eq!((&a.section, &a.name, &a.unit), (&b.section, &b.name, &b.unit));
        assert_eq!(a.value.number(), b.value.number(), "{}", a.name);
    }
    assert_eq!(e.rules.len(), g.rules.len());
    for (a, b) in e.rules.iter().zip(&g.rules) {
        assert_eq!((&a.name, &a.description, a.speedup), (&b.name, &b.description, b.speedup));
    }
}

const HEADER: &str = r#""ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value""#;

fn row(id: u32, name: &str, metric: &str, unit: &str, value: &str) -> String {
    format!(
        r#""{id}","42","app","host","{name}","1","7","(256, 1, 1)","(8, 1, 1)","0","9.0","Command line profiler metrics","{metric}","{unit}","{value}""#
    )
}

fn parse_lines(lines: &[String]) -> Result<Report, NcuError> {
    parse(&(lines.join("\n") + "\n"), Path::new("t.csv"))
}

#[test]
fn thousands_separators_read_exactly() {
    let en = parse_lines(&[
        HEADER.into(),
        row(0, "k", "dram__bytes_read.sum", "byte", "1,234,567"),
        row(0, "k", "gpu__time_duration.sum", "nsecond", "2,848"),
        row(0, "k", "sm__cycles_active.avg", "cycle", "1,234.5"),
        row(0, "k", "dram__throughput.avg.pct_of_peak_sustained_elapsed", "", "n/a"),
    ])
    .unwrap();
    assert_eq!(en.number_style, NumberStyle::DecimalPoint);
    let k = only_kernel(&en);
    assert_eq!(
        k.metric("dram__bytes_read.sum").unwrap().quantity(),
        Some(Quantity::Bytes(r(1234567, 1)))
    );
    assert_eq!(k.duration_ns(), Some(r(2848, 1)));
    assert_eq!(k.metric("sm__cycles_active.avg").unwrap().value.number(), Some(r(12345, 10)));
    // Not a number: kept as printed, never 0.
    let dram = k.figure(Figure::DramThroughput).unwrap();
    assert_eq!(dram.value, MetricValue::Text("n/a".into()));
    assert_eq!(k.figure_value(Figure::DramThroughput), None);

    let de = parse_lines(&[
        HEADER.into(),
        row(0, "k", "dram__bytes_read.sum", "byte", "1.234.567"),
        row(0, "k", "gpu__time_duration.sum", "msecond", "1.234,5"),
        row(0, "k", "sm__throughput.avg.pct_of_peak_sustained_elapsed", "%", "-0,25"),
    ])
    .unwrap();
    assert_eq!(de.number_style, NumberStyle::DecimalComma);
    let k = only_kernel(&de);
    assert_eq!(k.metric("dram__bytes_read.sum").unwrap().value.number(), Some(r(1234567, 1)));
    assert_eq!(k.duration_ns(), Some(r(1_234_500_000, 1)));
    assert_eq!(k.figure_value(Figure::ComputeThroughput), Some(r(-25, 100)));

    let plain =
        parse_lines(&[HEADER.into(), row(0, "k", "launch__registers_per_thread", "", "168")]);
    assert_eq!(plain.unwrap().number_style, NumberStyle::PlainIntegers);
}

#[test]
fn units_convert_exactly() {
    let cases = [
        ("usecond", "406.24", Quantity::Nanoseconds(r(406240, 1))),
        ("us", "1.5", Quantity::Nanoseconds(r(1500, 1))),
        ("msecond", "2", Quantity::Nanoseconds(r(2_000_000, 1))),
        ("second", "0.000000001", Quantity::Nanoseconds(r(1, 1))),
        ("Kbyte", "233.47", Quantity::Bytes(r(233470, 1))),
        ("Mbyte", "1.5", Quantity::Bytes(r(1_500_000, 1))),
        ("Gbyte/s", "1.5", Quantity::BytesPerSecond(r(1_500_000_000, 1))),
        ("Tbyte/second", "3.35", Quantity::BytesPerSecond(r(3_350_000_000_000, 1))),
        ("Mhz", "1,755", Quantity::Hertz(r(1_755_000_000, 1))),
        ("Ghz", "1.24", Quantity::Hertz(r(1_240_000_000, 1))),
        ("cycle/usecond", "1.5", Quantity::Hertz(r(1_500_000, 1))),
        ("%", "99.5", Quantity::Percent(r(995, 10))),
    ];
    for (unit, text, want) in cases {
        let v = read_number(text, NumberStyle::DecimalPoint).unwrap();
        assert_eq!(canonical(unit, v), Some(want), "{text} {unit}");
    }
    for unit in ["cycle", "inst", "warp", "block", "register/thread", "byte/block", ""] {
        assert_eq!(canonical(unit, Rational::int(3)), None, "{unit}");
    }
}

#[test]
fn number_styles_that_contradict_or_cannot_be_told_are_refused() {
    let e = parse_lines(&[
        HEADER.into(),
        row(0, "k", "a", "%", "21.68"),
        row(0, "k", "b", "%", "23,59"),
    ])
    .unwrap_err();
    assert!(
        matches!(*e.kind, NcuErrorKind::MixedNumberStyles { point_line: 2, comma_line: 3, .. }),
        "{e}"
    );
    assert!(
        e.to_string().contains("`21.68` (line 2)") && e.to_string().contains("`23,59` (line 3)"),
        "{e}"
    );
    assert!(e.hint().unwrap().contains("LC_ALL"));
    let e = parse_lines(&[
        HEADER.into(),
        row(0, "k", "a", "byte", "1,234"),
        row(0, "k", "b", "byte", "7"),
    ])
    .unwrap_err();
    assert!(matches!(*e.kind, NcuErrorKind::AmbiguousNumbers { .. }), "{e}");
    assert!(
        e.to_string().contains("`1,234` reads as 1234") && e.to_string().contains("617/500"),
        "{e}"
    );
}

/// Writes `text` to a file in a temporary folder and reads it back through [`read`].
fn read_bad(text: &str) -> NcuError {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.csv");
    std::fs::write(&path, text).unwrap();
    let e = read(&path).unwrap_err();
    assert!(e.to_string().contains(&path.display().to_string()), "{e}");
    assert!(e.hint().is_some_and(|h| !h.is_empty()), "{e}");
    e
}

/// A bad file's error is at `line` and its message says `what`.
fn assert_bad(text: &str, line: Option<u64>, what: &str) -> NcuError {
    let e = read_bad(text);
    assert_eq!(e.line, line, "{e}");
    if let Some(l) = line {
        assert!(e.to_string().contains(&format!("bad.csv:{l}`")), "{e}");
    }
    assert!(e.to_string().contains(what), "{e} (wanted `{what}`)");
    e
}

#[test]
fn missing_headers_are_refused() {
    let e = assert_bad("", None, "the file is empty");
    assert!(matches!(*e.kind, NcuErrorKind::NoHeader { .. }));
    let prof = "==PROF== Connected to process 1 (/bin/app)\n==PROF== Disconnected from process 1\n";
    let e = assert_bad(prof, None, "all `==PROF==` or other `==` tool lines");
    assert!(e.to_string().contains("the raw page"), "the message names the layouts read: {e}");
    assert!(e.hint().unwrap().contains("--page raw"));
    assert_bad("2208 2048 5608\nresult: ok\n", None, "none of them a header");
}

#[test]
fn unknown_layouts_are_refused() {
    let old = r#""ID","Process ID","Process Name","Host Name","Kernel Name","Kernel Time","Context","Stream","Section Name","Metric Name","Metric Unit","Metric Value""#;
    let e = assert_bad(
        &format!("==PROF== x\n{old}\n"),
        Some(2),
        "column 6 is `Kernel Time`, not `Context`",
    );
    assert!(matches!(*e.kind, NcuErrorKind::UnknownLayout { .. }));
    assert!(e.hint().unwrap().contains("Kernel Time"));
    let cut = HEADER.replace(r#","Metric Value""#, "");
    assert_bad(&format!("{cut}\n"), Some(1), "details columns after `CC`");
    let bare = HEADER.split(r#","Section Name""#).next().unwrap();
    assert_bad(&format!("{bare}\n"), Some(1), "no metric column");
}

#[test]
fn truncated_rows_are_refused() {
    let full = row(0, "k", "a", "%", "1.5");
    let cut = &full[..full.find(r#","(8, 1, 1)""#).unwrap()];
    let e = assert_bad(
        &format!("{HEADER}\n{full}\n{cut}\n"),
        Some(3),
        "a row of 8 fields under a header of 15",
    );
    assert!(matches!(*e.kind, NcuErrorKind::Truncated { .. }));
    let open = &full[..full.len() - 3];
    let e = assert_bad(&format!("{HEADER}\n{full}\n{open}"), Some(3), "never closed");
    assert!(matches!(*e.kind, NcuErrorKind::Truncated { .. }));
    // The real export cut short: its last rule row without the two speedup fields, and
    // its first metric row without the trailing empty field that ends ncu's metric rows
    // under the rule columns (15 fields; the file's own 16-field rows are read).
    let log = std::fs::read_to_string(fixture("superbench-cublaslt_ncu.log")).unwrap();
    let cut_log = format!("{}\n", log.trim_end().trim_end_matches(r#","global","14.55""#));
    assert_bad(&cut_log, Some(62), "a row of 18 fields under a header of 20");
    let first_rows = log.lines().take(5).collect::<Vec<_>>().join("\n");
    let cut_metric = format!("{}\n", first_rows.trim_end_matches(','));
    assert_bad(&cut_metric, Some(5), "a row of 15 fields under a header of 20");
    let e = assert_bad(
        &format!("{HEADER}\n{full},\"x\"\n"),
        Some(2),
        "a row with 16 fields under a header of 15",
    );
    assert!(matches!(*e.kind, NcuErrorKind::TooManyFields { .. }));
}

#[test]
fn conflicting_identities_are_refused() {
    let text = format!(
        "{HEADER}\n{}\n{}\n{}\n",
        row(0, "k", "a", "%", "1.5"),
        row(1, "j", "a", "%", "2.5"),
        row(0, "other", "b", "%", "3.5")
    );
    let e = assert_bad(
        &text,
        Some(4),
        "kernel ID 0: column `Kernel Name` is `other` here but `k` on line 2",
    );
    assert!(matches!(*e.kind, NcuErrorKind::IdentityConflict { earlier_line: 2, .. }));
    let bad_block = row(0, "k", "a", "%", "1.5").replace("(256, 1, 1)", "(256, 1)");
    assert_bad(
        &format!("{HEADER}\n{bad_block}\n"),
        Some(2),
        "column `Block Size` holds `(256, 1)`, not `(x, y, z)`",
    );
}

#[test]
fn files_without_kernels_are_refused() {
    let e = assert_bad(&format!("==PROF== x\n{HEADER}\n"), Some(2), "no kernel row");
    assert!(matches!(*e.kind, NcuErrorKind::NoKernel));
    let raw = std::fs::read_to_string(fixture("superbench-raw.csv")).unwrap();
    let header_and_units: Vec<&str> = raw.lines().take(2).collect();
    assert_bad(&(header_and_units.join("\n") + "\n"), Some(1), "no kernel row");
}

#[test]
fn raw_pages_without_units_or_with_repeated_kernels_are_refused() {
    let raw = std::fs::read_to_string(fixture("superbench-raw.csv")).unwrap();
    let lines: Vec<&str> = raw.lines().collect();
    let e = assert_bad(&format!("{}\n{}\n", lines[0], lines[2]), Some(2), "not its units row");
    assert!(matches!(*e.kind, NcuErrorKind::MissingUnits { .. }));
    let e = assert_bad(
        &format!("{raw}{}\n", lines[2]),
        Some(4),
        "kernel ID 0 has a row already (line 3)",
    );
    assert!(matches!(*e.kind, NcuErrorKind::DuplicateKernel { .. }));
    let cut = lines[2].rsplit_once(',').unwrap().0;
    assert_bad(
        &format!("{}\n{}\n{cut}\n", lines[0], lines[1]),
        Some(3),
        "a row of 28 fields under a header of 29",
    );
}

#[test]
fn tool_lines_after_the_table_are_skipped() {
    let text = format!(
        "{HEADER}\n{}\n==PROF== Disconnected from process 42\n",
        row(0, "k", "gpu__time_duration.sum", "nsecond", "2848")
    );
    let report = parse(&text, Path::new("t.csv")).unwrap();
    assert_eq!(only_kernel(&report).duration_ns(), Some(r(2848, 1)));
}

#[test]
fn crlf_and_a_byte_order_mark_are_read() {
    let text = format!(
        "\u{feff}==PROF== x\r\n{HEADER}\r\n{}\r\n",
        row(3, "k", "gpu__time_duration.sum", "usecond", "12.50")
    );
    let report = parse(&text, Path::new("t.csv")).unwrap();
    let k = only_kernel(&report);
    assert_eq!((report.header_line, k.id, k.line), (2, 3, 3));
    assert_eq!(k.duration_ns(), Some(r(12500, 1)));
}

#[test]
fn non_utf8_is_refused_at_its_line() {
    let mut bytes = format!("{HEADER}\n").into_bytes();
    bytes.extend_from_slice(b"\"0\",\"\xff\"\n");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.csv");
    std::fs::write(&path, bytes).unwrap();
    let e = read(&path).unwrap_err();
    assert_eq!(e.line, Some(2));
    assert!(matches!(*e.kind, NcuErrorKind::Text(TextError::NotUtf8 { .. })) && e.hint().is_some());
}

//! Nsight Compute `ncu --csv` exports, read into typed kernels with exact numbers.
//!
//! Owns the two layouts ncu writes, told apart by the header row (never by the file's name):
//! the details page (long: one row per kernel, section and metric, with the rule findings of
//! newer versions) and the raw page (`--page raw`, wide: one row per kernel, one column per
//! metric, a second row of units). Lines before the header (`==PROF==` lines, the program's
//! own output) are skipped. It reads the file and computes no metric; nothing is written.
//!
//! Numbers are read from their digits into exact rationals, never through a float. ncu prints
//! them in the locale it runs in, so the style (decimal point with `,` between thousands, or
//! decimal comma with `.` between thousands) is decided from the file as a whole: a value
//! that only one style reads (`21.68`, `23,59`, `1,234.5`) decides it; values both styles read
//! alike (`406240`) do not. A file where both kinds occur, or whose only separators read
//! differently in each style (`1,234` alone), is refused rather than guessed.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use super::open::TextError;
use crate::formula::Rational;

/// The largest export read (1 GiB): a details page of 10,000 kernels with the full section
/// set is a few hundred MB.
pub const MAX_BYTES: u64 = 1 << 30;

/// The identity columns both layouts start with, in ncu's order.
pub const IDENTITY_COLUMNS: [&str; 11] = [
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    "Kernel Name",
    "Context",
    "Stream",
    "Block Size",
    "Grid Size",
    "Device",
    "CC",
];

/// The details page's metric columns, after the identity columns.
pub const DETAILS_METRIC_COLUMNS: [&str; 4] =
    ["Section Name", "Metric Name", "Metric Unit", "Metric Value"];

/// The details page's rule columns of newer versions: ncu writes either none, the first three
/// or all five.
pub const DETAILS_RULE_COLUMNS: [&str; 5] =
    ["Rule Name", "Rule Type", "Rule Description", "Estimated Speedup Type", "Estimated Speedup"];

/// Which page of `ncu --csv` a file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `--page details` (the default): one row per kernel, section and metric, and one per
    /// rule finding.
    Details,
    /// `--page raw`: one row per kernel, one column per raw metric, units in the second row.
    Raw,
}

/// How the file writes numbers, decided from all of its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NumberStyle {
    /// `1,234.5`: a decimal point, `,` between groups of three digits (en).
    DecimalPoint,
    /// `1.234,5`: a decimal comma, `.` between groups of three digits (de, fr, ...).
    DecimalComma,
    /// Only plain integers: both styles read every value alike.
    PlainIntegers,
}

/// A compute capability as ncu prints it (`10.0`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ComputeCapability {
    /// Major version.
    pub major: u32,
    /// Minor version.
    pub minor: u32,
}

impl fmt::Display for ComputeCapability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// A metric's value: exact when it is a number, else the text as printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetricValue {
    /// A number, read exactly.
    Number {
        /// Its value, in the metric's unit as printed.
        value: Rational,
        /// The text as printed (`406.240`, `23,59`).
        text: String,
    },
    /// Anything else (`n/a`, `PolicySpread`, `all`), verbatim; never read as 0.
    Text(String),
}

impl MetricValue {
    /// The number, when it is one.
    pub fn number(&self) -> Option<Rational> {
        match self {
            MetricValue::Number { value, .. } => Some(*value),
            MetricValue::Text(_) => None,
        }
    }

    /// The text as printed.
    pub fn text(&self) -> &str {
        match self {
            MetricValue::Number { text, .. } | MetricValue::Text(text) => text,
        }
    }
}

/// A value in a canonical unit, converted exactly from the unit ncu printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantity {
    /// A duration in ns (`ns`, `nsecond`, `us`, `usecond`, `ms`, `msecond`, `s`, `second`).
    Nanoseconds(Rational),
    /// A size in bytes (`byte`, `Kbyte`, `Mbyte`, `Gbyte`, `Tbyte`: ncu's prefixes are SI,
    /// powers of 1,000).
    Bytes(Rational),
    /// A rate in bytes per second (`byte/second`, `Gbyte/s`, `Tbyte/second`...).
    BytesPerSecond(Rational),
    /// A frequency in Hz (`hz`, `Khz`, `Mhz`, `Ghz`, `cycle/second`, `cycle/nsecond`...).
    Hertz(Rational),
    /// A percentage, kept as percent (`23.59` for `23.59 %`).
    Percent(Rational),
}

/// One metric of one kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metric {
    /// The details page's section (`GPU Speed Of Light Throughput`); None on the raw page.
    pub section: Option<String>,
    /// The name: a label on the details page (`Duration`), a raw metric name on the raw page
    /// (`gpu__time_duration.sum`) or in the details page's `Command line profiler metrics`.
    pub name: String,
    /// The unit as printed (`ns`, `%`, `register/thread`); empty when ncu printed none.
    pub unit: String,
    /// The value.
    pub value: MetricValue,
    /// The line of the file it was read from.
    pub line: u64,
}

impl Metric {
    /// The value in its canonical unit, when the unit has one and the value is a number.
    pub fn quantity(&self) -> Option<Quantity> {
        let v = self.value.number()?;
        canonical(&self.unit, v)
    }
}

/// One rule finding of the details page, quoted verbatim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleFinding {
    /// The section (rule rows name the section by its identifier: `SpeedOfLight`).
    pub section: Option<String>,
    /// The rule (`SOLBottleneck`).
    pub name: String,
    /// The rule type (`OPT`, `WRN`, `INF`...).
    pub kind: String,
    /// The finding's text, verbatim.
    pub description: String,
    /// The estimated speedup's type (`global`, `local`), when given.
    pub speedup_kind: Option<String>,
    /// The estimated speedup (percent of the kernel's time), when given and a number.
    pub speedup: Option<Rational>,
    /// The estimated speedup as printed (empty when none).
    pub speedup_text: String,
    /// The line of the file it was read from.
    pub line: u64,
}

/// One profiled kernel launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kernel {
    /// ncu's result ID.
    pub id: u64,
    /// The profiled process.
    pub process_id: u64,
    /// Its name.
    pub process_name: String,
    /// The host it ran on.
    pub host: String,
    /// The kernel's name as printed.
    pub name: String,
    /// The CUDA context.
    pub context: u64,
    /// The CUDA stream.
    pub stream: u64,
    /// Block size (x, y, z).
    pub block: [u32; 3],
    /// Grid size (x, y, z).
    pub grid: [u32; 3],
    /// The device's ID.
    pub device: u32,
    /// The device's compute capability.
    pub compute_capability: ComputeCapability,
    /// Its metrics, in file order.
    pub metrics: Vec<Metric>,
    /// Its rule findings, in file order (none on the raw page).
    pub rules: Vec<RuleFinding>,
    /// The first line of the file that names it.
    pub line: u64,
}

/// A figure a later analysis reads, whichever page the file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    /// Compute (SM) throughput, % of peak.
    ComputeThroughput,
    /// Memory throughput, % of peak.
    MemoryThroughput,
    /// DRAM throughput, % of peak.
    DramThroughput,
    /// The kernel's duration.
    Duration,
    /// Achieved occupancy, %.
    AchievedOccupancy,
    /// Waves per SM.
    WavesPerSm,
    /// Registers per thread.
    RegistersPerThread,
}

/// Where one figure is found: its details-page section and label, and its raw metric names.
#[derive(Debug, Clone, Copy)]
pub struct FigureSource {
    /// The figure.
    pub figure: Figure,
    /// The details page's section (its display name).
    pub section: &'static str,
    /// The details page's label.
    pub label: &'static str,
    /// The raw metric names, the usual first.
    pub raw: &'static [&'static str],
}

/// The one mapping between the details page's labels and the raw page's metric names.
///
/// Based on the `Metrics { Label, Name }` entries of the section files Nsight Compute ships
/// (`sections/SpeedOfLight.section`, display name "GPU Speed Of Light Throughput";
/// `LaunchStatistics.section`, "Launch Statistics"; `Occupancy.section`, "Occupancy"), whose
/// format the Nsight Compute Customization Guide documents with this very pair:
/// `Label: "Compute (SM) Throughput"`, `Name: "sm__throughput.avg.pct_of_peak_sustained_elapsed"`
/// (docs.nvidia.com/nsight-compute/CustomizationGuide, "Metric Options and Filters"). The
/// other pairs follow the same files but were not checked here against a shipped copy; the
/// labels and section names are as the real export in `fixtures/ncu/` prints them, and the raw
/// names are those `ncu --page raw` prints as column headers. The DRAM figure's second name is
/// the one newer section files use on some architectures (`gpu__dram_throughput`).
pub const FIGURES: &[FigureSource] = &[
    FigureSource {
        figure: Figure::ComputeThroughput,
        section: "GPU Speed Of Light Throughput",
        label: "Compute (SM) Throughput",
        raw: &["sm__throughput.avg.pct_of_peak_sustained_elapsed"],
    },
    FigureSource {
        figure: Figure::MemoryThroughput,
        section: "GPU Speed Of Light Throughput",
        label: "Memory Throughput",
        raw: &["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"],
    },
    FigureSource {
        figure: Figure::DramThroughput,
        section: "GPU Speed Of Light Throughput",
        label: "DRAM Throughput",
        raw: &[
            "dram__throughput.avg.pct_of_peak_sustained_elapsed",
            "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
        ],
    },
    FigureSource {
        figure: Figure::Duration,
        section: "GPU Speed Of Light Throughput",
        label: "Duration",
        raw: &["gpu__time_duration.sum"],
    },
    FigureSource {
        figure: Figure::AchievedOccupancy,
        section: "Occupancy",
        label: "Achieved Occupancy",
        raw: &["sm__warps_active.avg.pct_of_peak_sustained_active"],
    },
    FigureSource {
        figure: Figure::WavesPerSm,
        section: "Launch Statistics",
        label: "Waves Per SM",
        raw: &["launch__waves_per_multiprocessor"],
    },
    FigureSource {
        figure: Figure::RegistersPerThread,
        section: "Launch Statistics",
        label: "Registers Per Thread",
        raw: &["launch__registers_per_thread"],
    },
];

impl Figure {
    /// Where this figure is found.
    pub fn source(self) -> &'static FigureSource {
        FIGURES.iter().find(|s| s.figure == self).expect("every figure is in FIGURES")
    }
}

impl Kernel {
    /// The first metric of this name, in any section.
    pub fn metric(&self, name: &str) -> Option<&Metric> {
        self.metrics.iter().find(|m| m.name == name)
    }

    /// The first metric of this name in this section.
    pub fn metric_in(&self, section: &str, name: &str) -> Option<&Metric> {
        self.metrics.iter().find(|m| m.section.as_deref() == Some(section) && m.name == name)
    }

    /// A figure: the details page's label in its section, else one of its raw names.
    pub fn figure(&self, figure: Figure) -> Option<&Metric> {
        let s = figure.source();
        self.metric_in(s.section, s.label)
            .or_else(|| s.raw.iter().find_map(|name| self.metric(name)))
    }

    /// The figure's value when it is a number (in its unit as printed; `%` for the
    /// throughputs and occupancy).
    pub fn figure_value(&self, figure: Figure) -> Option<Rational> {
        self.figure(figure)?.value.number()
    }

    /// The kernel's duration in ns, exactly (None when absent, not a number, or in a unit
    /// that is not a duration).
    pub fn duration_ns(&self) -> Option<Rational> {
        match self.figure(Figure::Duration)?.quantity()? {
            Quantity::Nanoseconds(ns) => Some(ns),
            _ => None,
        }
    }

    /// The rule findings of this rule.
    pub fn rules_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a RuleFinding> {
        self.rules.iter().filter(move |r| r.name == name)
    }
}

/// A read export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The file.
    pub path: PathBuf,
    /// Which page it is.
    pub layout: Layout,
    /// How it writes numbers.
    pub number_style: NumberStyle,
    /// The line of its header.
    pub header_line: u64,
    /// Its kernels, in the order of their first row.
    pub kernels: Vec<Kernel>,
}

/// An export that cannot be read: where, and what.
#[derive(Debug)]
pub struct NcuError {
    /// The file.
    pub path: PathBuf,
    /// The line (1-based), when the problem has one.
    pub line: Option<u64>,
    /// What is wrong (boxed: the error stays small on the happy path).
    pub kind: Box<NcuErrorKind>,
}

impl fmt::Display for NcuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "`{}:{line}`: {}", self.path.display(), self.kind),
            None => write!(f, "`{}`: {}", self.path.display(), self.kind),
        }
    }
}

impl std::error::Error for NcuError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self.kind.as_ref() {
            NcuErrorKind::Text(TextError::Read(e)) => Some(e),
            _ => None,
        }
    }
}

/// What is wrong with an export.
#[derive(Debug, thiserror::Error)]
pub enum NcuErrorKind {
    /// The file could not be read whole as text (the gate, the size limit, UTF-8).
    #[error(transparent)]
    Text(#[from] TextError),
    /// No line is a header of either layout.
    #[error(
        "no `ncu --csv` header found ({detail}; read: the details page, `\"ID\",\"Process ID\",...,\"CC\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"` with or without the rule columns, and the raw page, `\"ID\",\"Process ID\",...,\"CC\"` then one column per metric)"
    )]
    NoHeader {
        /// What the file holds instead.
        detail: String,
    },
    /// A header of ncu's identity columns that is neither layout.
    #[error("a header that is neither the details page nor the raw page ({detail})")]
    UnknownLayout {
        /// How it differs.
        detail: String,
    },
    /// A row cut short, or a quoted field never closed.
    #[error("the file is truncated ({detail})")]
    Truncated {
        /// What was cut.
        detail: String,
    },
    /// A row with more fields than the header.
    #[error("a row with {found} fields under a header of {expected}")]
    TooManyFields {
        /// Fields in the row.
        found: usize,
        /// Columns in the header.
        expected: usize,
    },
    /// A field that does not hold what its column must.
    #[error("column `{column}` holds `{value}`, not {expected}")]
    BadField {
        /// The column.
        column: String,
        /// The value as printed.
        value: String,
        /// What it must be.
        expected: String,
    },
    /// A row whose identity fields disagree with an earlier row of the same kernel ID.
    #[error(
        "kernel ID {id}: column `{column}` is `{found}` here but `{earlier}` on line {earlier_line}"
    )]
    IdentityConflict {
        /// The kernel ID.
        id: u64,
        /// The column that differs.
        column: String,
        /// Its value on the earlier row.
        earlier: String,
        /// The earlier row's line.
        earlier_line: u64,
        /// Its value here.
        found: String,
    },
    /// A raw-page row for a kernel ID an earlier row had.
    #[error(
        "kernel ID {id} has a row already (line {earlier_line}); the raw page has one per kernel"
    )]
    DuplicateKernel {
        /// The kernel ID.
        id: u64,
        /// The earlier row's line.
        earlier_line: u64,
    },
    /// The raw page's second row is not its units row.
    #[error(
        "the raw page's second row is not its units row (its `ID` field is `{found}`, not empty)"
    )]
    MissingUnits {
        /// The `ID` field found.
        found: String,
    },
    /// Values only a decimal point reads and values only a decimal comma reads, in one file.
    #[error(
        "the file mixes number styles: `{point}` (line {point_line}) is written with a decimal point, `{comma}` (line {comma_line}) with a decimal comma"
    )]
    MixedNumberStyles {
        /// A value only the decimal-point style reads.
        point: String,
        /// Its line.
        point_line: u64,
        /// A value only the decimal-comma style reads.
        comma: String,
        /// Its line.
        comma_line: u64,
    },
    /// No value decides the number style, and some read differently in each.
    #[error(
        "the number style is ambiguous: `{value}` reads as {as_point} with a decimal point and as {as_comma} with a decimal comma, and no value in the file decides which"
    )]
    AmbiguousNumbers {
        /// The value.
        value: String,
        /// Its decimal-point reading.
        as_point: String,
        /// Its decimal-comma reading.
        as_comma: String,
    },
    /// A header and no kernel row.
    #[error("the header is followed by no kernel row")]
    NoKernel,
}

impl NcuError {
    /// A hint on what to do about it: every kind has one.
    pub fn hint(&self) -> Option<String> {
        Some(match self.kind.as_ref() {
            NcuErrorKind::Text(TextError::Read(e)) => match super::open::Refused::of(e) {
                Some(r) => r.hint.clone(),
                None => "pass the CSV file `ncu --csv` wrote (or `ncu --import REPORT.ncu-rep --csv > FILE`)".into(),
            },
            NcuErrorKind::Text(TextError::TooLarge { .. }) => {
                "export fewer kernels or sections (`ncu --import REPORT.ncu-rep --csv --kernel-name NAME --section SpeedOfLight`)".into()
            }
            NcuErrorKind::Text(TextError::NotUtf8 { .. }) => {
                "export it again as text: `ncu --import REPORT.ncu-rep --csv > FILE` (a `.ncu-rep` report is binary)".into()
            }
            NcuErrorKind::NoHeader { .. } => {
                "export the report as CSV: `ncu --import REPORT.ncu-rep --csv` (details page) or add `--page raw`; a log of only `==PROF==` lines means ncu profiled no kernel or wrote its results elsewhere (`--log-file`, `-o`)".into()
            }
            NcuErrorKind::UnknownLayout { .. } => {
                "export it again with a current ncu, `ncu --import REPORT.ncu-rep --csv` or `--csv --page raw`; older layouts (with `Kernel Time` and without `Block Size`, `Grid Size`, `Device`, `CC`) are not read".into()
            }
            NcuErrorKind::Truncated { .. } => {
                "the export was cut off or edited; export it again from the report (`ncu --import REPORT.ncu-rep --csv`)".into()
            }
            NcuErrorKind::TooManyFields { .. } | NcuErrorKind::BadField { .. } => {
                "the row is not as ncu writes it; export it again from the report rather than editing the CSV".into()
            }
            NcuErrorKind::IdentityConflict { .. } | NcuErrorKind::DuplicateKernel { .. } => {
                "two exports were probably concatenated; export each report to its own file (result IDs restart at 0 in each)".into()
            }
            NcuErrorKind::MissingUnits { .. } => {
                "export the raw page as ncu writes it, with its units row: `ncu --import REPORT.ncu-rep --csv --page raw`".into()
            }
            NcuErrorKind::MixedNumberStyles { .. } | NcuErrorKind::AmbiguousNumbers { .. } => {
                "export it again with the locale fixed, e.g. `LC_ALL=C ncu --import REPORT.ncu-rep --csv`".into()
            }
            NcuErrorKind::NoKernel => {
                "the report holds no kernel; check the filters (`--kernel-name`, `--launch-skip`, `--launch-count`) of the profiling run".into()
            }
        })
    }
}

/// Reads an `ncu --csv` export, through the open gate (read-only, regular files only).
pub fn read(path: &Path) -> Result<Report, NcuError> {
    let text_err = |e: TextError| NcuError {
        path: path.to_path_buf(),
        line: e.line(),
        kind: Box::new(NcuErrorKind::Text(e)),
    };
    let bytes = super::open::read_capped(path, MAX_BYTES).map_err(text_err)?;
    parse(super::open::utf8(&bytes).map_err(text_err)?, path)
}

/// Reads an export's text; `path` names it in errors.
pub fn parse(text: &str, path: &Path) -> Result<Report, NcuError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let at =
        |line: Option<u64>, kind| NcuError { path: path.to_path_buf(), line, kind: Box::new(kind) };
    let (header, offset, header_line) = find_header(text).map_err(|(l, k)| at(l, k))?;
    let records = read_records(&text[offset..], header_line).map_err(|(l, k)| at(Some(l), k))?;
    let (layout, raw) = match &header {
        Header::Details { columns } => (Layout::Details, read_details(&records, *columns)),
        Header::Raw { metrics } => (Layout::Raw, read_raw(&records, metrics)),
    };
    let raw = raw.map_err(|(l, k)| at(l, k))?;
    if raw.kernels.is_empty() {
        return Err(at(Some(header_line), NcuErrorKind::NoKernel));
    }
    let style = decide_style(&raw).map_err(|k| at(None, k))?;
    let kernels = raw.kernels.into_iter().map(|k| k.finish(style)).collect();
    Ok(Report { path: path.to_path_buf(), layout, number_style: style, header_line, kernels })
}

/// A problem at a line, before the file's path is attached.
type Located = (Option<u64>, NcuErrorKind);

/// The layout a header names.
#[derive(Debug)]
enum Header {
    /// The details page with this many columns (15, 18 or 20).
    Details { columns: usize },
    /// The raw page with these metric columns.
    Raw { metrics: Vec<String> },
}

/// The first line that is a header: the layout, its byte offset and its line (1-based).
fn find_header(text: &str) -> Result<(Header, usize, u64), Located> {
    let (mut offset, mut line, mut prof, mut other) = (0, 0u64, 0u64, 0u64);
    for raw_line in text.split_inclusive('\n') {
        line += 1;
        let start = offset;
        offset += raw_line.len();
        let l = raw_line.trim_end_matches(['\n', '\r']);
        if l.starts_with("==") {
            prof += 1;
            continue;
        }
        if l.trim().is_empty() {
            continue;
        }
        other += 1;
        let fields = match csv_fields(l) {
            Some(f) if f.len() >= 2 && f[0] == "ID" && f[1] == "Process ID" => f,
            _ => continue,
        };
        return classify_header(&fields).map(|h| (h, start, line)).map_err(|k| (Some(line), k));
    }
    let detail = match (prof, other) {
        (0, 0) => "the file is empty".to_string(),
        (p, 0) => format!("its {p} lines are all `==PROF==` or other `==` tool lines"),
        (p, o) => format!("{p} `==` tool lines and {o} other lines, none of them a header"),
    };
    Err((None, NcuErrorKind::NoHeader { detail }))
}

/// One line's CSV fields, when it parses as one record.
fn csv_fields(line: &str) -> Option<Vec<String>> {
    let mut r =
        csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(line.as_bytes());
    let rec = r.records().next()?.ok()?;
    Some(rec.iter().map(str::to_string).collect())
}

/// Which layout a header of ncu's identity columns is.
fn classify_header(fields: &[String]) -> Result<Header, NcuErrorKind> {
    let n = IDENTITY_COLUMNS.len();
    if let Some(i) =
        (0..n).find(|&i| fields.get(i).map(String::as_str) != Some(IDENTITY_COLUMNS[i]))
    {
        let found = fields.get(i).map_or("nothing".into(), |f| format!("`{f}`"));
        return Err(NcuErrorKind::UnknownLayout {
            detail: format!("column {} is {found}, not `{}`", i + 1, IDENTITY_COLUMNS[i]),
        });
    }
    let rest = &fields[n..];
    if rest.is_empty() {
        return Err(NcuErrorKind::UnknownLayout {
            detail: "the identity columns and nothing after them: no metric column".into(),
        });
    }
    if rest[0] != DETAILS_METRIC_COLUMNS[0] {
        if let Some(c) = rest.iter().find(|c| {
            c.is_empty()
                || DETAILS_METRIC_COLUMNS.contains(&c.as_str())
                || DETAILS_RULE_COLUMNS.contains(&c.as_str())
        }) {
            return Err(NcuErrorKind::UnknownLayout {
                detail: format!("raw-page metric columns mixed with the details column `{c}`"),
            });
        }
        return Ok(Header::Raw { metrics: rest.to_vec() });
    }
    let details: Vec<&str> =
        DETAILS_METRIC_COLUMNS.iter().chain(&DETAILS_RULE_COLUMNS).copied().collect();
    let ok = [4, 7, 9].contains(&rest.len()) && rest.iter().zip(&details).all(|(a, b)| a == b);
    if !ok {
        return Err(NcuErrorKind::UnknownLayout {
            detail: format!(
                "details columns after `CC` are {}, not `{}` (optionally followed by `{}`)",
                rest.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", "),
                DETAILS_METRIC_COLUMNS.join("`, `"),
                DETAILS_RULE_COLUMNS.join("`, `"),
            ),
        });
    }
    Ok(Header::Details { columns: fields.len() })
}

/// One CSV record with its line.
struct Record {
    line: u64,
    fields: csv::StringRecord,
}

/// Every record from the header on (the header first), with lines counted from the file's
/// start; a quoted field never closed is an error at the line it opens.
fn read_records(text: &str, header_line: u64) -> Result<Vec<Record>, (u64, NcuErrorKind)> {
    let mut r =
        csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(text.as_bytes());
    let bytes = text.as_bytes();
    // Lines are counted here rather than taken from the reader: after a `\r\n` its next record
    // starts at the `\n`, on the line before. Counting the line breaks up to and including a
    // record's first byte gives its line either way (a record never starts with a line break).
    let (mut counted_to, mut breaks) = (0usize, 0u64);
    let mut line_at = |byte: usize| {
        let upto = (byte + 1).min(bytes.len());
        breaks += bytes[counted_to.min(upto)..upto].iter().filter(|&&b| b == b'\n').count() as u64;
        counted_to = counted_to.max(upto);
        header_line + breaks
    };
    let mut out = Vec::new();
    let mut starts = Vec::new();
    for rec in r.records() {
        // A `&str` holds UTF-8 and reading it cannot fail; an error is kept all the same.
        let rec = rec.map_err(|e| {
            let line = e.position().map_or(header_line, |p| line_at(p.byte() as usize));
            (line, NcuErrorKind::Truncated { detail: e.to_string() })
        })?;
        let start = rec.position().map_or(0, |p| p.byte() as usize);
        let line = line_at(start);
        starts.push((start, line));
        // ncu's own lines (`==PROF== Disconnected ...`, `==WARNING== ...`) can follow the
        // table when the program's output and ncu's share a stream.
        if rec.len() == 1 && rec[0].starts_with("==") {
            continue;
        }
        out.push(Record { line, fields: rec });
    }
    // The reader ends an unclosed quoted field at the end of the input without an error: a
    // record whose bytes hold an odd number of quotes opened one it never closed.
    for (i, &(start, line)) in starts.iter().enumerate() {
        let end = starts.get(i + 1).map_or(text.len(), |&(s, _)| s);
        if bytes[start..end].iter().filter(|&&b| b == b'"').count() % 2 == 1 {
            return Err((
                line,
                NcuErrorKind::Truncated {
                    detail: "a quoted field opened on this line is never closed".into(),
                },
            ));
        }
    }
    Ok(out)
}

/// A metric whose value is not read yet (the number style is decided over the whole file).
struct RawMetric {
    section: Option<String>,
    name: String,
    unit: String,
    text: String,
    line: u64,
}

/// A rule finding whose speedup is not read yet.
struct RawRule {
    section: Option<String>,
    name: String,
    kind: String,
    description: String,
    speedup_kind: Option<String>,
    speedup_text: String,
    line: u64,
}

/// A kernel whose values are not read yet.
struct RawKernel {
    kernel: Kernel,
    identity: Vec<String>,
    metrics: Vec<RawMetric>,
    rules: Vec<RawRule>,
}

/// Every kernel of the file, values not read yet.
struct RawReport {
    kernels: Vec<RawKernel>,
}

impl RawKernel {
    /// The kernel with its values read in `style`.
    fn finish(self, style: NumberStyle) -> Kernel {
        let mut k = self.kernel;
        k.metrics = self
            .metrics
            .into_iter()
            .map(|m| {
                let value = match read_number(&m.text, style) {
                    Some(value) => MetricValue::Number { value, text: m.text },
                    None => MetricValue::Text(m.text),
                };
                Metric { section: m.section, name: m.name, unit: m.unit, value, line: m.line }
            })
            .collect();
        k.rules = self
            .rules
            .into_iter()
            .map(|r| RuleFinding {
                speedup: read_number(&r.speedup_text, style),
                section: r.section,
                name: r.name,
                kind: r.kind,
                description: r.description,
                speedup_kind: r.speedup_kind,
                speedup_text: r.speedup_text,
                line: r.line,
            })
            .collect();
        k
    }
}

/// The kernel a row names, parsed from its identity fields.
fn parse_identity(rec: &Record) -> Result<Kernel, Located> {
    let f = |i: usize| rec.fields.get(i).unwrap_or("");
    let bad = |i: usize, expected: &str| {
        (
            Some(rec.line),
            NcuErrorKind::BadField {
                column: IDENTITY_COLUMNS[i].into(),
                value: f(i).into(),
                expected: expected.into(),
            },
        )
    };
    let int = |i: usize| f(i).parse::<u64>().map_err(|_| bad(i, "an integer"));
    let dim = |i: usize| parse_dim3(f(i)).ok_or_else(|| bad(i, "`(x, y, z)`"));
    Ok(Kernel {
        id: int(0)?,
        process_id: int(1)?,
        process_name: f(2).into(),
        host: f(3).into(),
        name: f(4).into(),
        context: int(5)?,
        stream: int(6)?,
        block: dim(7)?,
        grid: dim(8)?,
        device: f(9).parse().map_err(|_| bad(9, "a device ID"))?,
        compute_capability: parse_cc(f(10)).ok_or_else(|| bad(10, "`major.minor`"))?,
        metrics: Vec::new(),
        rules: Vec::new(),
        line: rec.line,
    })
}

/// `(384, 1, 1)`.
fn parse_dim3(s: &str) -> Option<[u32; 3]> {
    let inner = s.trim().strip_prefix('(')?.strip_suffix(')')?;
    let mut out = [0u32; 3];
    let mut parts = inner.split(',');
    for slot in &mut out {
        *slot = parts.next()?.trim().parse().ok()?;
    }
    parts.next().is_none().then_some(out)
}

/// `10.0` (or `10,0` where the locale writes a decimal comma).
fn parse_cc(s: &str) -> Option<ComputeCapability> {
    let (major, minor) = s.split_once(['.', ','])?;
    Some(ComputeCapability { major: major.parse().ok()?, minor: minor.parse().ok()? })
}

/// Files the row under its kernel: a new kernel, or the one of its ID after checking that
/// every identity field agrees.
fn kernel_for<'a>(
    kernels: &'a mut Vec<RawKernel>,
    by_id: &mut BTreeMap<u64, usize>,
    rec: &Record,
) -> Result<&'a mut RawKernel, Located> {
    let kernel = parse_identity(rec)?;
    let identity: Vec<String> =
        (0..IDENTITY_COLUMNS.len()).map(|i| rec.fields.get(i).unwrap_or("").to_string()).collect();
    if let Some(&i) = by_id.get(&kernel.id) {
        let k = &mut kernels[i];
        if let Some(c) = (0..identity.len()).find(|&c| identity[c] != k.identity[c]) {
            return Err((
                Some(rec.line),
                NcuErrorKind::IdentityConflict {
                    id: kernel.id,
                    column: IDENTITY_COLUMNS[c].into(),
                    earlier: k.identity[c].clone(),
                    earlier_line: k.kernel.line,
                    found: identity[c].clone(),
                },
            ));
        }
        return Ok(k);
    }
    by_id.insert(kernel.id, kernels.len());
    kernels.push(RawKernel { kernel, identity, metrics: Vec::new(), rules: Vec::new() });
    Ok(kernels.last_mut().expect("just pushed"))
}

/// The details page's rows.
fn read_details(records: &[Record], columns: usize) -> Result<RawReport, Located> {
    let base = IDENTITY_COLUMNS.len() + DETAILS_METRIC_COLUMNS.len();
    let (mut kernels, mut by_id) = (Vec::new(), BTreeMap::new());
    for rec in &records[1..] {
        let n = rec.fields.len();
        let f = |i: usize| rec.fields.get(i).unwrap_or("").to_string();
        // ncu ends a metric row under the rule columns with one empty field (a trailing comma)
        // and leaves the rule columns out.
        let short_metric_row = columns > base && n == base + 1 && f(base).is_empty();
        if n > columns {
            return Err((
                Some(rec.line),
                NcuErrorKind::TooManyFields { found: n, expected: columns },
            ));
        }
        if n < columns && !short_metric_row {
            return Err((
                Some(rec.line),
                NcuErrorKind::Truncated {
                    detail: format!("a row of {n} fields under a header of {columns}"),
                },
            ));
        }
        let k = kernel_for(&mut kernels, &mut by_id, rec)?;
        let section = Some(f(11)).filter(|s| !s.is_empty());
        let rule = if columns > base { f(base) } else { String::new() };
        if !f(12).is_empty() {
            k.metrics.push(RawMetric {
                section,
                name: f(12),
                unit: f(13),
                text: f(14),
                line: rec.line,
            });
        } else if !rule.is_empty() {
            k.rules.push(RawRule {
                section,
                name: rule,
                kind: f(base + 1),
                description: f(base + 2),
                speedup_kind: Some(f(base + 3)).filter(|s| !s.is_empty()),
                speedup_text: f(base + 4),
                line: rec.line,
            });
        } else {
            return Err((
                Some(rec.line),
                NcuErrorKind::BadField {
                    column: "Metric Name".into(),
                    value: String::new(),
                    expected: "a metric name (or, on a rule row, a `Rule Name`)".into(),
                },
            ));
        }
    }
    Ok(RawReport { kernels })
}

/// The raw page's rows: the units row, then one row per kernel.
fn read_raw(records: &[Record], metrics: &[String]) -> Result<RawReport, Located> {
    let columns = IDENTITY_COLUMNS.len() + metrics.len();
    let check_len = |rec: &Record| {
        let n = rec.fields.len();
        match n.cmp(&columns) {
            std::cmp::Ordering::Less => Err((
                Some(rec.line),
                NcuErrorKind::Truncated {
                    detail: format!("a row of {n} fields under a header of {columns}"),
                },
            )),
            std::cmp::Ordering::Greater => {
                Err((Some(rec.line), NcuErrorKind::TooManyFields { found: n, expected: columns }))
            }
            std::cmp::Ordering::Equal => Ok(()),
        }
    };
    let Some(units) = records.get(1) else { return Ok(RawReport { kernels: Vec::new() }) };
    let id = units.fields.get(0).unwrap_or("");
    if !id.is_empty() {
        return Err((Some(units.line), NcuErrorKind::MissingUnits { found: id.into() }));
    }
    check_len(units)?;
    let (mut kernels, mut by_id) = (Vec::new(), BTreeMap::new());
    for rec in &records[2..] {
        check_len(rec)?;
        let id = rec.fields.get(0).unwrap_or("");
        if let Some(&i) = id.parse::<u64>().ok().and_then(|id| by_id.get(&id)) {
            let k: &RawKernel = &kernels[i];
            return Err((
                Some(rec.line),
                NcuErrorKind::DuplicateKernel { id: k.kernel.id, earlier_line: k.kernel.line },
            ));
        }
        let k = kernel_for(&mut kernels, &mut by_id, rec)?;
        for (i, name) in metrics.iter().enumerate() {
            let c = IDENTITY_COLUMNS.len() + i;
            let text = rec.fields.get(c).unwrap_or("");
            // An empty cell is a metric ncu did not collect for this kernel: no value.
            if text.is_empty() {
                continue;
            }
            k.metrics.push(RawMetric {
                section: None,
                name: name.clone(),
                unit: units.fields.get(c).unwrap_or("").into(),
                text: text.into(),
                line: rec.line,
            });
        }
    }
    Ok(RawReport { kernels })
}

/// A number in one style: an optional `-`, digits (grouped by three with `group`, or not),
/// then optionally `decimal` and digits.
fn read_styled(text: &str, decimal: u8, group: u8) -> Option<Rational> {
    let t = text.trim();
    let (neg, body) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t),
    };
    let (int, frac) = match body.bytes().position(|b| b == decimal) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let groups: Vec<&str> = int.split(group as char).collect();
    let int_ok = if groups.len() == 1 {
        digits(int)
    } else {
        digits(groups[0])
            && groups[0].len() <= 3
            && groups[1..].iter().all(|g| g.len() == 3 && digits(g))
    };
    if !int_ok || frac.is_some_and(|f| !digits(f)) {
        return None;
    }
    let plain =
        format!("{}{}.{}", if neg { "-" } else { "" }, groups.concat(), frac.unwrap_or("0"));
    Rational::parse_decimal(&plain)
}

/// A number in the file's style, None when it is not one.
fn read_number(text: &str, style: NumberStyle) -> Option<Rational> {
    match style {
        NumberStyle::DecimalPoint | NumberStyle::PlainIntegers => read_styled(text, b'.', b','),
        NumberStyle::DecimalComma => read_styled(text, b',', b'.'),
    }
}

/// The file's number style, from every metric value and estimated speedup.
fn decide_style(report: &RawReport) -> Result<NumberStyle, NcuErrorKind> {
    let values = report.kernels.iter().flat_map(|k| {
        let m = k.metrics.iter().map(|m| (m.text.as_str(), m.line));
        m.chain(k.rules.iter().map(|r| (r.speedup_text.as_str(), r.line)))
    });
    let (mut point, mut comma, mut ambiguous) = (None, None, None);
    for (text, line) in values {
        match (read_styled(text, b'.', b','), read_styled(text, b',', b'.')) {
            (Some(p), Some(c)) if p != c => {
                ambiguous.get_or_insert((text, p, c));
            }
            (Some(_), None) => {
                point.get_or_insert((text, line));
            }
            (None, Some(_)) => {
                comma.get_or_insert((text, line));
            }
            _ => {}
        }
    }
    match (point, comma, ambiguous) {
        (Some((p, pl)), Some((c, cl)), _) => Err(NcuErrorKind::MixedNumberStyles {
            point: p.into(),
            point_line: pl,
            comma: c.into(),
            comma_line: cl,
        }),
        (Some(_), None, _) => Ok(NumberStyle::DecimalPoint),
        (None, Some(_), _) => Ok(NumberStyle::DecimalComma),
        (None, None, Some((value, p, c))) => Err(NcuErrorKind::AmbiguousNumbers {
            value: value.into(),
            as_point: show(p),
            as_comma: show(c),
        }),
        (None, None, None) => Ok(NumberStyle::PlainIntegers),
    }
}

/// A rational for a message: an integer, or `num/den`.
fn show(r: Rational) -> String {
    if r.den == 1 { r.num.to_string() } else { format!("{}/{}", r.num, r.den) }
}

/// `v` in `unit` converted to its canonical unit, when it has one.
fn canonical(unit: &str, v: Rational) -> Option<Quantity> {
    let u = unit.trim();
    if u == "%" {
        return Some(Quantity::Percent(v));
    }
    let lower = u.to_ascii_lowercase();
    if let Some(ns) = time_ns(&lower) {
        return v.checked_mul(ns).map(Quantity::Nanoseconds);
    }
    if let Some(b) = bytes_factor(&lower) {
        return v.checked_mul(b).map(Quantity::Bytes);
    }
    if let Some(prefix) = lower.strip_suffix("hz") {
        return v.checked_mul(si_prefix(prefix)?).map(Quantity::Hertz);
    }
    let (top, bottom) = lower.split_once('/')?;
    let per_second = Rational::int(1_000_000_000).checked_div(time_ns(bottom)?)?;
    if top == "cycle" {
        return v.checked_mul(per_second).map(Quantity::Hertz);
    }
    let b = bytes_factor(top)?;
    v.checked_mul(b)?.checked_mul(per_second).map(Quantity::BytesPerSecond)
}

/// ns in one of ncu's time units (lowercase).
fn time_ns(unit: &str) -> Option<Rational> {
    Some(Rational::int(match unit {
        "ns" | "nsecond" => 1,
        "us" | "usecond" => 1_000,
        "ms" | "msecond" => 1_000_000,
        "s" | "second" => 1_000_000_000,
        _ => return None,
    }))
}

/// Bytes in one of ncu's size units (lowercase): SI prefixes.
fn bytes_factor(unit: &str) -> Option<Rational> {
    si_prefix(unit.strip_suffix("byte")?)
}

/// An SI prefix (lowercase, as ncu's units are once lowercased): none, k, m, g, t.
fn si_prefix(p: &str) -> Option<Rational> {
    Some(Rational::int(match p {
        "" => 1,
        "k" => 1_000,
        "m" => 1_000_000,
        "g" => 1_000_000_000,
        "t" => 1_000_000_000_000,
        _ => return None,
    }))
}

#[cfg(test)]
mod tests;

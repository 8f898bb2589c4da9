//! Analyses over one kernel scan, each disclosing its window, devices and denominators.
//!
//! One file per analysis; [`ANALYSES`] is the registry that the CLI, the claims validator and
//! the report read. An analysis is a pure function of a [`Context`] (the scan of one trace) and
//! [`Params`]; it never reads the trace itself, so one scan serves every query of a command.

pub mod cluster;
pub mod compare;
mod context;
mod error;
pub mod intervals;
mod params;
#[macro_use]
mod registry;
pub mod set;
pub mod show;
pub mod values;

registry! {
    overlap => Overlap(overlap::Values), overlap::Row;
    kernels => Kernels(kernels::Values), kernels::Row;
    nccl_skew => NcclSkew(Box<nccl_skew::Values>), nccl_skew::Row;
    nccl_calls => NcclCalls(nccl_calls::Values), nccl_calls::Row;
    copies => Copies(copies::Values), copies::Row;
    nvtx => Nvtx(nvtx::Values), nvtx::Row;
    streams => Streams(streams::Values), streams::Row;
    coverage => Coverage(coverage::Values), coverage::Row;
}

pub use context::Context;
pub use error::QueryError;
pub(crate) use error::{OVERFLOW_HINT, checked_sum, overflow};
pub use params::{
    CLUSTER, DOMAIN, ENGINE, INSTANCE, LIMIT, MATCH, NAME, NAMES, NESTING, NORMALIZE, NameFilter,
    PARAMS, PID, Param, Params, REGEX, STREAM, TID,
};
pub use registry::EvidenceRow;

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::scope::{DeviceSel, Semantics, Window, format_device_list, format_seconds};
use crate::trace::{Inventory, Kernels, NameStyle};

/// The unit a field is reported in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Integer nanoseconds.
    Ns,
    /// A count of things.
    Count,
    /// A dimensionless ratio (0-1).
    Ratio,
    /// A device id.
    Device,
    /// Bytes.
    Bytes,
    /// The unit of the metric a comparison compares (its evidence says which, and a scale
    /// when its samples are parts per billion).
    Metric,
}

impl Unit {
    /// The name `verdict analyses` prints.
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Ns => "ns",
            Unit::Count => "count",
            Unit::Ratio => "ratio",
            Unit::Device => "device",
            Unit::Bytes => "bytes",
            Unit::Metric => "metric",
        }
    }
}

impl Serialize for Unit {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// What a field measures: gate R3 compares it with what a claim speaks of, and checks that
/// a share's numerator and denominator are of one kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FieldKind {
    /// Wall time (interval unions).
    Wall,
    /// Wall time with no kernel in the window or span: the denominator of a share of idle
    /// time.
    Idle,
    /// The window's or span's length.
    Window,
    /// Union of NCCL kernels.
    NcclBusy,
    /// Union of compute kernels.
    ComputeBusy,
    /// Summed kernel durations.
    KernelTime,
    /// Summed NCCL kernel durations.
    NcclKernelTime,
    /// Wall time with a copy or memset in flight (interval union of copies).
    CopyTime,
    /// Time on the CPU timeline (NVTX ranges), summed over ranges.
    CpuTime,
    /// A count.
    Count,
    /// A timestamp.
    Timestamp,
    /// Bytes moved.
    Bytes,
    /// The compared metric, whatever it measures (`compare`).
    Metric,
}

impl FieldKind {
    /// The name gates print.
    pub fn key(self) -> &'static str {
        match self {
            FieldKind::Wall => "wall",
            FieldKind::Idle => "idle",
            FieldKind::Window => "window",
            FieldKind::NcclBusy => "nccl_busy",
            FieldKind::ComputeBusy => "compute_busy",
            FieldKind::KernelTime => "kernel_time",
            FieldKind::NcclKernelTime => "nccl_kernel_time",
            FieldKind::CopyTime => "copy_time",
            FieldKind::CpuTime => "cpu_time",
            FieldKind::Count => "count",
            FieldKind::Timestamp => "timestamp",
            FieldKind::Bytes => "bytes",
            FieldKind::Metric => "metric",
        }
    }

    /// Whether it is wall time of some kind (a share of a window or a busy union).
    pub fn is_wall(self) -> bool {
        matches!(
            self,
            FieldKind::Wall
                | FieldKind::Idle
                | FieldKind::Window
                | FieldKind::NcclBusy
                | FieldKind::ComputeBusy
                | FieldKind::CopyTime
        )
    }

    /// Whether it is summed kernel durations.
    pub fn is_kernel_time(self) -> bool {
        matches!(self, FieldKind::KernelTime | FieldKind::NcclKernelTime)
    }
}

/// A field an analysis reports, with its unit, kind and definition.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Field {
    /// Key in `values` / `rows`.
    pub name: &'static str,
    /// The unit of the value.
    pub unit: Unit,
    /// What it measures.
    pub kind: FieldKind,
    /// One line: what it is and its denominator.
    pub definition: &'static str,
}

/// Which devices (ranks) one piece of evidence of an analysis covers, and how its values
/// combine them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ScopeRule {
    /// `values` for exactly one device, `rows` per device otherwise (overlap): a claim's
    /// scope names one device; the command takes `--device N`, `--devices` or
    /// `--all-devices`, and one of them is required.
    PerDevice,
    /// Values summed over a device set (kernels): default every device.
    Summed,
    /// Devices compared as ranks (nccl-skew): default every device.
    Ranks,
    /// The whole trace; window and devices are disclosed, not applied (coverage). Reproduced
    /// by `verdict inspect`.
    WholeTrace,
}

/// The fields of an analysis's per-rank rows, with those that are a ratio of others.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct RankRows {
    /// The numeric fields of each row.
    pub fields: &'static [Field],
    /// Row fields that are a ratio of other row fields, with that formula.
    pub ratios: &'static [(&'static str, &'static str)],
}

/// How a field of a cross-rank analysis combines its ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Across {
    /// Summed over the ranks (NCCL kernel time, waiting), or a ratio of such sums.
    Sum,
    /// A statistic of the differences between ranks (max start - min start of an instance,
    /// its median or maximum over instances): neither a total nor any one rank's value.
    Spread,
}

/// What a statistic field is a statistic of its population: a field listed in an analysis's
/// `stats` is neither a total nor a count that adds up over devices, so gate R3 names it as
/// such where it is a denominator, and R4 and the verdict table say it is taken over the
/// devices together, never summed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stat {
    /// The smallest value.
    Min,
    /// The (lower) median.
    Median,
    /// The mean.
    Mean,
    /// The nearest-rank 90th percentile.
    P90,
    /// The largest value.
    Max,
    /// A difference across ranks (latest minus earliest).
    Skew,
    /// A count of distinct values (names, devices), which does not add up over devices.
    Distinct,
}

impl Stat {
    /// The name findings print (`q.stat.KEY` in the UI strings).
    pub fn key(self) -> &'static str {
        match self {
            Stat::Min => "min",
            Stat::Median => "median",
            Stat::Mean => "mean",
            Stat::P90 => "p90",
            Stat::Max => "max",
            Stat::Skew => "skew",
            Stat::Distinct => "distinct",
        }
    }
}

/// The chart the report draws for an analysis, which decides the context query behind it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChartKind {
    /// Stacked exclusive intervals per device, over every device of the same window (so one
    /// device's number stands among the others): overlap.
    Breakdown,
    /// Per-rank start and end offsets of matched instances, from the evidence itself:
    /// nccl-skew.
    RankOffsets,
    /// The top names by total time over the same devices, without the name filter: kernels.
    TopNames,
}

/// The query behind a chart, besides the parts' own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChartContext {
    /// The same window over every device.
    AllDevices,
    /// The same devices without a name filter, the top N by total time.
    Top(usize),
}

/// Names shown in a top-names chart.
pub const CHART_TOP: usize = 10;

impl ChartKind {
    /// The context query it needs, if any.
    pub fn context(self) -> Option<ChartContext> {
        match self {
            ChartKind::Breakdown => Some(ChartContext::AllDevices),
            ChartKind::TopNames => Some(ChartContext::Top(CHART_TOP)),
            ChartKind::RankOffsets => None,
        }
    }
}

/// A trace table an analysis reads. The planner reads each needed table once per trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Table {
    /// `CUPTI_ACTIVITY_KIND_KERNEL`, with the per-device inventory.
    Kernels,
    /// `CUPTI_ACTIVITY_KIND_MEMCPY` and `..._MEMSET` (absent tables read as no rows).
    Copies,
    /// `NVTX_EVENTS`, the launch records of `CUPTI_ACTIVITY_KIND_RUNTIME` and each kernel's
    /// launch key (absent tables read as no rows).
    Nvtx,
    /// What ties each NCCL kernel to its collective beyond its order, read only from a trace
    /// that records it ([`crate::trace::payload::nccl_ties_recorded`]): the launch records
    /// of the NCCL kernels and the NVTX ranges around them, with their NCCL payloads or
    /// PyTorch's `record_param_comms` ops. Elsewhere nothing is read for it.
    NcclTies,
}

/// `needs` for these traces: [`Table::NcclTies`] is kept when `recorded` says any of them
/// records such ties (a set reads them from every file or none; the first that does ends the
/// look-up), dropped otherwise.
pub(crate) fn resolve_ties<T, E>(
    needs: &[Table],
    traces: impl IntoIterator<Item = T>,
    recorded: impl Fn(T) -> Result<bool, E>,
) -> Result<Vec<Table>, E> {
    if !needs.contains(&Table::NcclTies) {
        return Ok(needs.to_vec());
    }
    for t in traces {
        if recorded(t)? {
            return Ok(needs.to_vec());
        }
    }
    Ok(needs.iter().copied().filter(|t| *t != Table::NcclTies).collect())
}

/// The scan of a trace whose `needs` read launch keys: the filter's key box for NVTX, and the
/// keys of NCCL kernels for their ties; None when no launch key is read.
fn keyed_filter(
    filter: &crate::trace::KernelFilter,
    needs: &[Table],
) -> Option<crate::trace::KernelFilter> {
    let (nvtx, ties) = (needs.contains(&Table::Nvtx), needs.contains(&Table::NcclTies));
    (nvtx || ties).then(|| crate::trace::KernelFilter {
        keys: if nvtx { filter.keys.clone() } else { Some(crate::trace::NO_ROWS) },
        nccl_keys: ties,
        ..filter.clone()
    })
}

/// Which NVTX ranges a load reads beside those that can enclose its launches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RangeSpan {
    /// Every range of the trace.
    Whole,
    /// Those within these bounds (ns) too.
    Bounds((i64, i64)),
}

/// NVTX ranges and the launch records that tie kernels to them.
#[derive(Debug, Clone, Default)]
pub struct NvtxData {
    /// The ranges (push/pop and start/end) with their names and domains.
    pub ranges: crate::trace::nvtx::NvtxRanges,
    /// The runtime/driver API records of the scanned kernels' launches.
    pub launches: crate::trace::nvtx::Launches,
}

impl NvtxData {
    /// The span of ranges to read beside the launches' own: the whole trace for NCCL ties (a
    /// communicator's init, which gives its size and ranks, precedes its collectives), else
    /// the scan's bounds (None: the whole trace).
    pub(crate) fn bounds(filter: &crate::trace::KernelFilter, needs: &[Table]) -> RangeSpan {
        match filter.bounds {
            Some(b) if !needs.contains(&Table::NcclTies) => RangeSpan::Bounds(b),
            _ => RangeSpan::Whole,
        }
    }

    /// Reads the launch records of the kernel rows `keep` selects (those with a launch key),
    /// then the ranges that can enclose them or lie within `bounds`.
    pub(crate) fn load(
        trace: &crate::trace::Trace,
        span: RangeSpan,
        kernels: &Kernels,
        keep: impl Fn(usize) -> bool,
    ) -> Result<NvtxData, crate::trace::TraceError> {
        let keys: Vec<_> =
            (0..kernels.len()).filter(|&i| keep(i)).filter_map(|i| kernels.launch_key(i)).collect();
        let launches = crate::trace::nvtx::Launches::load(trace, keys)?;
        // Ranges that can enclose a launch, and those in the scan's window.
        let bounds = match (span, launches.start_bounds()) {
            (RangeSpan::Whole, _) => None,
            (RangeSpan::Bounds(b), None) => Some(b),
            (RangeSpan::Bounds((a, b)), Some((c, d))) => Some((a.min(c), b.max(d))),
        };
        let ranges = crate::trace::nvtx::NvtxRanges::load(trace, bounds)?;
        Ok(NvtxData { ranges, launches })
    }
}

/// Runs an analysis over the loaded trace.
pub type RunFn = fn(&Params, &Context) -> Result<Evidence, QueryError>;

/// Lays a piece of evidence out for the terminal, below the scope lines, `width` columns wide.
pub type TableFn = fn(&Evidence, usize) -> String;

/// A registered analysis: everything the pipeline, the gates, validation, the command line and
/// the terminal know about it.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct AnalysisSpec {
    /// Name on the command line and in claims files.
    pub name: &'static str,
    /// One line on what it measures.
    pub summary: &'static str,
    /// The numeric fields a formula may use.
    pub fields: &'static [Field],
    /// Sums of fields that are themselves a known quantity (`nccl_only_ns + overlap_ns` is
    /// the NCCL busy union), for gate R3.
    pub sums: &'static [(&'static [&'static str], FieldKind)],
    /// Parameters it adopts besides window, semantics and devices.
    pub params: &'static [Param],
    /// Which devices one piece of evidence covers.
    pub scope: ScopeRule,
    /// The trace tables it reads.
    pub needs: &'static [Table],
    /// Keys of `values` that compare matched instances across ranks. They exist only with at
    /// least two ranks in one scope and one matched instance; otherwise they are null and a
    /// note says why (gate R2 fails for a part that reads one).
    pub cross_rank: &'static [&'static str],
    /// Fields that are a ratio of other fields, with that formula: a claim that reads one is
    /// evaluated and shown through it (`wait_ns / nccl_ns`), exactly, with its fraction.
    pub ratios: &'static [(&'static str, &'static str)],
    /// Whether its evidence has a per-name table (`rows` by kernel, range or copy name), which
    /// a comparison over it breaks down per name.
    pub per_name: bool,
    /// Fields summed over devices that its rows split per device: (field, the rows' column
    /// holding each device's part, `{device: value}`). A total over several devices is shown
    /// with its split (`140: 20 on each of devices 1-7`).
    pub per_device: &'static [(&'static str, &'static str)],
    /// The fields of its per-rank rows where they are not its `values`' own (nccl-skew's
    /// arrivals and waits per rank); an analysis whose rule is `PerDevice` has rows of its own
    /// fields. A claim binds a row with `rank:` or `over_ranks:`.
    pub rank_rows: Option<RankRows>,
    /// How a field of a cross-rank analysis combines the ranks: a total over them, or a
    /// statistic of their differences (the largest start difference is not a total).
    pub across: &'static [(&'static str, Across)],
    /// The fields (of its values or its per-rank rows) that are a statistic of a population
    /// rather than a total or a count that adds up.
    pub stats: &'static [(&'static str, Stat)],
    /// The chart the report draws of it, if any.
    pub chart: Option<ChartKind>,
    /// Keys of the definitions (`def.KEY.term`, `def.KEY.text` in the UI strings) the report's
    /// provenance prints when the audit reads this analysis.
    pub terms: &'static [&'static str],
    /// Computes the evidence.
    #[serde(skip)]
    pub run: RunFn,
    /// The terminal table of `verdict query`.
    #[serde(skip)]
    pub table: TableFn,
}

impl AnalysisSpec {
    /// Whether it reads NCCL kernels alone when it reads the whole trace (`whole_trace`: no
    /// window, no NVTX windows, no split, whose windows' spans need every row): the
    /// cross-rank matching of `nccl-skew`. Its scan keeps NCCL kernels anywhere, no other row.
    pub fn reads_only_nccl(&self, whole_trace: bool) -> bool {
        whole_trace && self.name == nccl_skew::SPEC.name
    }

    /// Each field's definition by name: the `metrics` a piece of its evidence carries.
    pub fn metrics(&self) -> BTreeMap<String, String> {
        self.fields.iter().map(|f| (f.name.to_string(), f.definition.to_string())).collect()
    }

    /// The context query its chart needs.
    pub fn chart_context(&self) -> Option<ChartContext> {
        self.chart.and_then(ChartKind::context)
    }

    /// The sum of fields that equals its window field: the identity its evidence satisfies
    /// (`compute_only + nccl_only + overlap + idle = total`), as (terms, total field).
    pub fn identity(&self) -> Option<(&'static [&'static str], &'static str)> {
        let total = self.fields.iter().find(|f| f.kind == FieldKind::Window)?;
        let (terms, _) = self.sums.iter().find(|(_, k)| *k == FieldKind::Window)?;
        Some((terms, total.name))
    }

    /// A field by name: of its values, else of its per-rank rows.
    pub fn field(&self, name: &str) -> Option<&'static Field> {
        self.fields
            .iter()
            .find(|f| f.name == name)
            .or_else(|| self.rank_rows?.fields.iter().find(|f| f.name == name))
    }

    /// The fields and ratios of its per-rank rows, if it has rows a claim can bind per rank:
    /// its own fields for an analysis with rows per device, else its declared rank rows.
    pub fn row_fields(&self) -> Option<RankRows> {
        match (self.scope, self.rank_rows) {
            (ScopeRule::PerDevice, _) => {
                Some(RankRows { fields: self.fields, ratios: self.ratios })
            }
            (_, rows) => rows,
        }
    }

    /// The statistic a field is, if it is one.
    pub fn stat(&self, field: &str) -> Option<Stat> {
        self.stats.iter().find(|(f, _)| *f == field).map(|(_, s)| *s)
    }

    /// How a field combines the ranks, where the analysis compares ranks and says.
    pub fn across(&self, field: &str) -> Option<Across> {
        self.across.iter().find(|(f, _)| *f == field).map(|(_, a)| *a)
    }

    /// Whether its scan needs every NCCL kernel of the trace whatever the window: the
    /// cross-rank matching of `nccl-skew`, whose k-th instance of a collective must not shift
    /// when a window leaves a rank's earlier kernel out.
    pub fn needs_nccl_anywhere(&self) -> bool {
        self.scope == ScopeRule::Ranks && self.needs.contains(&Table::Kernels)
    }

    /// A parameter by name.
    pub fn param(&self, name: &str) -> Option<&'static Param> {
        self.params.iter().find(|p| p.name == name)
    }

    /// What a field measures. An undeclared field is a programming error caught by
    /// validation before any gate runs; it is never taken for a count.
    pub fn kind(&self, field: &str) -> Option<FieldKind> {
        self.field(field).map(|f| f.kind)
    }

    /// Whether `verdict query NAME` runs it (coverage is `verdict inspect`).
    pub fn is_query(&self) -> bool {
        self.scope != ScopeRule::WholeTrace
    }

    /// The device options of the command that reproduces a query over `devices`.
    pub fn device_words(&self, devices: &DeviceSel) -> Vec<String> {
        let w = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
        match (self.scope, devices) {
            (ScopeRule::PerDevice, DeviceSel::Set(v)) if v.len() == 1 => {
                w(&["--device", &v[0].to_string()])
            }
            (ScopeRule::WholeTrace, _) => Vec::new(),
            (_, DeviceSel::Set(v)) => w(&["--devices", &format_device_list(v)]),
            (ScopeRule::PerDevice | ScopeRule::Summed, DeviceSel::All) => w(&["--all-devices"]),
            (ScopeRule::Ranks, DeviceSel::All) => Vec::new(),
        }
    }
}

/// The tables a set of analyses needs, each once, and NVTX when a window is taken from NVTX
/// ranges.
pub fn needs<'a>(
    specs: impl IntoIterator<Item = &'a AnalysisSpec>,
    nvtx_windows: bool,
) -> Vec<Table> {
    let mut out: Vec<Table> = if nvtx_windows { vec![Table::Nvtx] } else { Vec::new() };
    for s in specs {
        for t in s.needs {
            if !out.contains(t) {
                out.push(*t);
            }
        }
    }
    out
}

/// Looks an analysis up by name.
pub fn spec(name: &str) -> Option<&'static AnalysisSpec> {
    ANALYSES.iter().chain(DERIVED).find(|a| a.name == name)
}

/// The analyses a comparison can run on each side: every `verdict query` analysis of the
/// registry (not `coverage`, which is `verdict inspect`, nor the derived ones).
pub fn comparable() -> impl Iterator<Item = &'static AnalysisSpec> {
    ANALYSES.iter().filter(|a| a.is_query())
}

/// Whether `name` is an analysis a comparison can run.
pub fn is_comparable(name: &str) -> bool {
    comparable().any(|a| a.name == name)
}

/// [`comparable`]'s names, as a hint lists them: `overlap, kernels, ...`.
pub fn comparable_names() -> String {
    comparable().map(|a| a.name).collect::<Vec<_>>().join(", ")
}

/// Analyses over the evidence of others rather than a trace: `compare`. They are not
/// `verdict query` subcommands built from the registry, and run after the per-trace queries.
pub const DERIVED: &[AnalysisSpec] = &[compare::SPEC];

/// Where a trace's evidence comes from: identity of the file.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TraceRef {
    /// The path as given.
    pub path: String,
    /// sha256 of the file.
    pub sha256: String,
    /// `EXPORT_SCHEMA_VERSION`, if recorded.
    pub schema_version: Option<String>,
    /// `EXPORT_PRODUCT_VERSION`, null if not recorded; absent for a file no nsys wrote.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nsys_version: crate::trace::run::NsysVersion,
    /// The file's format where it is not an nsys export: `pytorch-profiler`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// The clock of the timestamps.
    pub time_base: String,
    /// On a UTC-epoch clock (`--ts-normalize` exports), the capture start on that clock
    /// (`EXPORT_CONFIG_TIME_SHIFT`, else `TARGET_INFO_SESSION_START_TIME.utcEpochNs`), so
    /// times can also be read relative to it; null on the session clock, where 0 is the start.
    pub capture_start_ns: Option<i64>,
    /// Where the trace comes from, as its metadata says (a synthetic trace says so).
    pub origin: crate::trace::Origin,
    /// For a trace read from a folder of Parquet tables: where they come from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub columnar: Option<Box<ColumnarRef>>,
    /// For a trace set: its files with their clock alignment, and its ranks with their
    /// labels (the evidence's devices are these ranks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub set: Option<Box<set::SetInfo>>,
}

/// Where the tables of a trace read from a columnar folder come from: the folder, its layout
/// and, for an extract, the file it was made from as the extract records it (the trace's
/// sha256 is the extract's manifest's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ColumnarRef {
    /// `verdict-extract` or `nsys-parquetdir`.
    pub layout: String,
    /// For an extract: the path of the trace it was made from, as given to `verdict extract`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extracted_from: Option<String>,
    /// For an extract: the sha256 of its manifest, which names every Parquet file's sha256.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub manifest_sha256: Option<String>,
    /// For an extract: the sha256 of its source as the extract records it, unchecked (the
    /// trace's digest is the manifest's; `verdict extract DIR --verify SOURCE` checks this).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_sha256_recorded: Option<String>,
}

impl ColumnarRef {
    /// The reference of a trace read from a columnar folder; None for a file.
    pub fn of(trace: &crate::trace::Trace) -> Option<Box<ColumnarRef>> {
        #[cfg(feature = "columnar")]
        if let Some(c) = trace.columnar() {
            return Some(Box::new(ColumnarRef {
                layout: c.layout_name().into(),
                extracted_from: c.manifest().map(|m| m.source.path.clone()),
                manifest_sha256: c.manifest_sha256().map(str::to_string),
                source_sha256_recorded: c.manifest().map(|m| m.source.sha256.clone()),
            }));
        }
        let _ = trace;
        None
    }
}

/// The tool that produced a piece of evidence.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, JsonSchema)]
pub struct ToolRef {
    /// Always `verdict`.
    pub name: String,
    /// The crate version.
    pub version: String,
    /// The commit it was built from (`+modified` when its sources differed from it); None
    /// when the build knew none (outside a git checkout).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build: Option<String>,
}

impl ToolRef {
    /// This build.
    pub fn current() -> ToolRef {
        ToolRef {
            name: "verdict".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            build: BUILD_COMMIT.map(str::to_string),
        }
    }
}

/// The commit this binary was built from, as the build script found it.
pub const BUILD_COMMIT: Option<&str> = option_env!("VERDICT_BUILD_COMMIT");

/// The window of a piece of evidence.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct WindowInfo {
    /// `[a, b]` as requested, or null for the whole trace.
    pub requested_ns: Option<[i64; 2]>,
    /// The interval the denominator covers: the window (clip), the span of the kept kernels
    /// (contain), or the kernel span (no window). For per-device rows, each row has its own.
    pub effective_ns: Option<[i64; 2]>,
    /// `clip` or `contain`.
    pub semantics: Semantics,
}

/// The population of a piece of evidence.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ScopeInfo {
    /// The devices the values cover.
    pub devices: Vec<i64>,
    /// Devices with kernels anywhere in the trace.
    pub present_devices: Vec<i64>,
    /// Devices the job has (expected, or listed in `TARGET_INFO_GPU`) that ran no kernel.
    pub missing_devices: Vec<i64>,
    /// Streams the values cover (null: all streams).
    pub streams: Option<Vec<i64>>,
}

/// One piece of evidence: the JSON contract of `verdict query`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Evidence {
    /// The analysis name.
    pub analysis: String,
    /// The producer.
    pub tool: ToolRef,
    /// The trace.
    pub trace: TraceRef,
    /// The window.
    pub window: WindowInfo,
    /// The population.
    pub scope: ScopeInfo,
    /// Other adopted parameters, with their effective values.
    pub parameters: BTreeMap<String, Value>,
    /// Field name to one-line definition with its denominator.
    pub metrics: BTreeMap<String, String>,
    /// Values of one scope.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub values: Option<values::Values>,
    /// One object per device, rank or kernel name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rows: Option<values::Rows>,
    /// Disclosures that qualify the numbers (edges, unequal counts, estimates).
    pub notes: Vec<Note>,
    /// Over a set of windows (NVTX steps): the values of each window, in window order. Then
    /// `values` holds every declared field as null (no single window stands for the set)
    /// and a claim's formula is evaluated on each sample.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<Sample>,
}

/// The values of one window of a set.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Sample {
    /// The window, `[start, end)` in ns.
    pub window_ns: [i64; 2],
    /// Its values, as `values` would hold them for that window alone.
    pub values: values::Values,
}

/// A disclosure: its i18n key and arguments, and the English text.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Note {
    /// The finding, renderable in any language.
    #[serde(flatten)]
    pub finding: crate::i18n::Finding,
    /// The English text.
    pub text: String,
    /// Keys of `values` that this note leaves null: the quantity cannot exist here, and this
    /// note is why. A part that reads one is unverifiable, never judged on a stand-in 0.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub null_fields: Vec<String>,
    /// What would give those fields a value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub needs: Option<Need>,
}

/// Evidence that would give a null field a value: an i18n key with arguments, and the
/// English text.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Need {
    /// The finding, renderable in any language.
    #[serde(flatten)]
    pub finding: crate::i18n::Finding,
    /// The English text.
    pub text: String,
}

impl Evidence {
    /// Adds a disclosure.
    pub fn note(&mut self, key: &str, args: &[(&str, String)]) {
        let finding = crate::i18n::Finding::new(key, args);
        let text = finding.english();
        self.notes.push(Note { finding, text, null_fields: Vec::new(), needs: None });
    }

    /// Under contain, says of each device whose denominator is the span of its kept kernels
    /// rather than the window's length which span it is: `(device, total)` per device.
    pub(crate) fn note_span_denominators(
        &mut self,
        params: &Params,
        totals: impl IntoIterator<Item = (i64, i64)>,
    ) {
        let Some(w) = params.window.filter(|_| params.semantics == Semantics::Contain) else {
            return;
        };
        for (device, total) in totals {
            if total != w.len_ns() {
                self.note(
                    "note.span_denominator",
                    &[
                        ("device", device.to_string()),
                        ("span_ms", crate::units::ms(total)),
                        ("window_ms", crate::units::ms(w.len_ns())),
                    ],
                );
            }
        }
    }

    /// Adds the note that says why `fields` of `values` are null, with what would give them a
    /// value (`need`, an i18n key). The analysis leaves them `None` in its typed values; the
    /// registry test checks that every null field has such a note. Several notes may explain
    /// the same field; the first added is the main reason.
    pub fn leave_null(
        &mut self,
        fields: &[&str],
        key: &str,
        args: &[(&str, String)],
        need: (&str, &[(&str, String)]),
    ) {
        match self.values.as_mut() {
            Some(values::Values::Map(values)) => {
                for f in fields {
                    values.insert((*f).to_string(), Value::Null);
                }
            }
            Some(typed) => debug_assert!(
                fields.iter().all(|f| typed.to_map().get(*f).is_some_and(Value::is_null)),
                "{}: a note explains {fields:?} as null, yet the typed values hold a number",
                self.analysis
            ),
            None => {}
        }
        let finding = crate::i18n::Finding::new(key, args);
        let text = finding.english();
        let need = crate::i18n::Finding::new(need.0, need.1);
        let needs = Some(Need { text: need.english(), finding: need });
        let null_fields = fields.iter().map(|f| f.to_string()).collect();
        self.notes.push(Note { finding, text, null_fields, needs });
    }

    /// The notes that explain why `field` is null, main reason first; empty when the field
    /// has a value (or no note explains it).
    pub fn null_reasons(&self, field: &str) -> Vec<&Note> {
        if !self.value(field).is_some_and(|v| v.is_null()) {
            return Vec::new();
        }
        self.notes.iter().filter(|n| n.null_fields.iter().any(|f| f == field)).collect()
    }

    /// A declared field of `values`, exactly: `Ok(None)` when null (the quantity does not
    /// exist here, and a note says why). A field the analysis does not declare, or one it
    /// declares but did not produce, is an error, never a stand-in 0. A ratio field
    /// (`wait_share`) is computed exactly from its declared formula.
    pub fn field(&self, name: &str) -> Result<Option<crate::formula::Rational>, FieldError> {
        let spec = spec(&self.analysis)
            .ok_or_else(|| FieldError::Undeclared(self.analysis.clone(), name.into()))?;
        if spec.field(name).is_none() {
            return Err(FieldError::Undeclared(self.analysis.clone(), name.into()));
        }
        let v = self
            .value(name)
            .ok_or_else(|| FieldError::Missing(self.analysis.clone(), name.into()))?;
        if v.is_null() {
            return Ok(None);
        }
        // A row's ratio fields have names of their own (`last_share`), so one lookup serves
        // the values and a rank's row.
        let row_ratios = spec.rank_rows.map_or(&[][..], |r| r.ratios);
        if let Some((_, text)) = spec.ratios.iter().chain(row_ratios).find(|(f, _)| *f == name) {
            let expr = crate::formula::Expr::parse(text)
                .map_err(|_| FieldError::NotExact(self.analysis.clone(), name.into()))?;
            let mut vars = BTreeMap::new();
            for var in expr.vars() {
                match self.field(&var)? {
                    Some(x) => vars.insert(var, x),
                    None => return Ok(None),
                };
            }
            return Ok(expr.eval(&vars).ok());
        }
        // A compared metric whose samples are parts per billion reads back as the fraction.
        let scale = match spec.field(name).map(|f| f.unit) {
            Some(Unit::Metric) => {
                self.parameters.get("metric_scale").and_then(Value::as_i64).unwrap_or(1)
            }
            _ => 1,
        };
        v.as_i64()
            .and_then(|i| crate::formula::Rational::new(i.into(), scale.into()))
            .map(Some)
            .ok_or_else(|| FieldError::NotExact(self.analysis.clone(), name.into()))
    }

    /// A field of `values` by its name, as the JSON contract has it: the edge where a
    /// formula or a claim names a field. Code reads the typed values instead.
    pub fn value(&self, field: &str) -> Option<Value> {
        self.values.as_ref().and_then(|v| v.to_map().remove(field))
    }
}

/// A field read from a piece of evidence that is not there.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FieldError {
    /// The analysis declares no such field.
    #[error("analysis `{0}` has no field `{1}`")]
    Undeclared(String, String),
    /// The analysis declares the field but its evidence lacks it.
    #[error("the evidence of `{0}` lacks its field `{1}`")]
    Missing(String, String),
    /// The value is not an exact number.
    #[error("field `{1}` of `{0}` is not an exact number")]
    NotExact(String, String),
}

/// Runs a named analysis.
pub fn run(name: &str, params: &Params, ctx: &Context) -> Result<Evidence, QueryError> {
    let spec = spec(name).ok_or_else(|| QueryError::UnknownAnalysis(name.into()))?;
    run_spec(spec, params, ctx)
}

/// Runs an analysis, refusing parameters it does not adopt.
pub fn run_spec(
    spec: &'static AnalysisSpec,
    params: &Params,
    ctx: &Context,
) -> Result<Evidence, QueryError> {
    for p in PARAMS {
        if (p.get)(params).is_some() && spec.param(p.name).is_none() {
            return Err(QueryError::NotAdopted {
                analysis: spec.name.into(),
                param: p.name.into(),
            });
        }
    }
    let mut ev = (spec.run)(params, ctx)?;
    if let Some(set) = ctx.trace.set.as_deref() {
        set::disclose(&mut ev, set);
    }
    Ok(ev)
}

/// Runs an analysis over one window, or over each of a set of windows: then the evidence
/// carries one sample per window (the values of that window alone), its `values` hold every
/// declared field as null, and its requested window spans the set.
pub fn run_windows(
    spec: &'static AnalysisSpec,
    params: &Params,
    ctx: &Context,
    windows: &[crate::scope::Window],
) -> Result<Evidence, QueryError> {
    run_windows_as(spec, params, ctx, windows, false)
}

/// [`run_windows`]; with `tiles` (the windows of a split, which tile one window), each row is
/// counted in the window where it starts, the first window taking those that start before it.
fn run_windows_as(
    spec: &'static AnalysisSpec,
    params: &Params,
    ctx: &Context,
    windows: &[crate::scope::Window],
    tiles: bool,
) -> Result<Evidence, QueryError> {
    let [first, rest @ ..] = windows else { return run_spec(spec, params, ctx) };
    let mut p = params.clone();
    let mut runs = Vec::with_capacity(windows.len());
    for (i, w) in windows.iter().enumerate() {
        p.window = Some(*w);
        p.counted_from = (tiles && i > 0).then_some(w.start_ns);
        p.tile = tiles;
        runs.push(run_spec(spec, &p, ctx)?);
    }
    if rest.is_empty() {
        return Ok(runs.remove(0));
    }
    let mut samples = Vec::new();
    let mut notes: Vec<Note> = Vec::new();
    for (w, ev) in windows.iter().zip(&runs) {
        let values = ev.values.clone().ok_or_else(|| QueryError::Failed {
            reason: format!(
                "`{}` gives one row per device: a set of windows needs one value per window",
                spec.name
            ),
            hint: "name one device in the scope".into(),
        })?;
        for n in &ev.notes {
            if !notes.iter().any(|o| o.text == n.text) {
                notes.push(n.clone());
            }
        }
        samples.push(Sample { window_ns: w.as_array(), values });
    }
    // The first window's evidence, every value but its samples' left null.
    let mut base = runs.remove(0);
    base.values = Some(values::Values::Unset(values::AllNull(spec)));
    base.window.requested_ns =
        Some([first.start_ns, windows.iter().map(|w| w.end_ns).max().unwrap_or(first.end_ns)]);
    base.window.effective_ns = None;
    base.notes = notes;
    base.samples = samples;
    Ok(base)
}

/// The largest number of equal splits of a window.
pub const MAX_SPLITS: u32 = 10_000;

/// `n` equal windows that tile `params.window` (or, without one, the kernel span of the
/// devices): boundaries `a + len * i / n`, exact integers, the last ending at `b`.
pub fn split_windows(
    ctx: &Context,
    params: &Params,
    n: u32,
) -> Result<Vec<crate::scope::Window>, QueryError> {
    if !(2..=MAX_SPLITS).contains(&n) {
        return Err(QueryError::BadParam {
            param: "split".into(),
            reason: format!("{n} splits: give 2 to {MAX_SPLITS}"),
        });
    }
    let devices = ctx.resolve_devices(&params.devices)?;
    let (a, b) = match params.window {
        Some(w) => (w.start_ns, w.end_ns),
        None => {
            let [a, b] = ctx.kernel_range_of(&devices).ok_or(QueryError::NoKernels)?;
            (a, b)
        }
    };
    let len = i128::from(b) - i128::from(a);
    if len < i128::from(n) {
        return Err(QueryError::BadParam {
            param: "split".into(),
            reason: format!("the window is {len} ns long, too short for {n} splits"),
        });
    }
    let at = |i: u32| a + i64::try_from(len * i128::from(i) / i128::from(n)).unwrap_or(0);
    Ok((0..n)
        .map(|i| crate::scope::Window {
            start_ns: at(i),
            end_ns: if i + 1 == n { b } else { at(i + 1) },
        })
        .collect())
}

/// Runs an analysis over `params.split` equal splits (one sample each), else as
/// [`run_spec`]; the evidence says how the window was split.
pub fn run_split(
    spec: &'static AnalysisSpec,
    params: &Params,
    ctx: &Context,
) -> Result<Evidence, QueryError> {
    let Some(n) = params.split else { return run_spec(spec, params, ctx) };
    let windows = split_windows(ctx, params, n)?;
    let mut p = params.clone();
    p.split = None;
    let mut ev = run_windows_as(spec, &p, ctx, &windows, true)?;
    let (a, b) = (windows[0].start_ns, windows[windows.len() - 1].end_ns);
    ev.window.requested_ns = Some([a, b]);
    ev.parameters.insert("split".into(), serde_json::json!(n));
    ev.parameters.insert("split_membership".into(), serde_json::json!("start"));
    ev.note("note.split_membership", &[]);
    ev.note(
        if params.window.is_some() { "note.split_window" } else { "note.split_span" },
        &[
            ("n", n.to_string()),
            ("window", crate::scope::Window { start_ns: a, end_ns: b }.to_string()),
        ],
    );
    Ok(ev)
}

/// Runs one query as the command line gives it: over the window (or its `split`), or over the
/// windows an NVTX window resolves to on the processes of the query's devices.
pub fn run_query(
    spec: &'static AnalysisSpec,
    params: &Params,
    ctx: &Context,
    nvtx: Option<&nvtx::NvtxWindow>,
) -> Result<Evidence, QueryError> {
    match nvtx {
        None => run_split(spec, params, ctx),
        Some(w) => ctx
            .resolve_devices(&params.devices)
            .and_then(|d| nvtx::resolve_windows(w, ctx, &d))
            .and_then(|rws| run_nvtx_windows(spec, params, ctx, w, &rws)),
    }
}

/// Runs an analysis over the windows an NVTX window resolved to, and says in the evidence
/// which ranges they came from: the one path of `verdict query --nvtx-window` and of a claims
/// scope with an NVTX window.
pub fn run_nvtx_windows(
    spec: &'static AnalysisSpec,
    params: &Params,
    ctx: &Context,
    w: &nvtx::NvtxWindow,
    resolved: &[nvtx::ResolvedWindow],
) -> Result<Evidence, QueryError> {
    let windows: Vec<crate::scope::Window> = resolved.iter().map(|r| r.window).collect();
    let mut ev = run_windows(spec, params, ctx, &windows)?;
    nvtx::note_windows(&mut ev, w, resolved);
    Ok(ev)
}

/// Which rows of one device a window selects, with the interval each contributes.
///
/// `clip`: rows intersecting `[a, b)` with positive length, clipped to it. `contain`: rows with
/// `start >= a` and `end <= b`, unclipped. No window: every row.
pub(crate) fn select(
    k: &Kernels,
    rows: std::ops::Range<usize>,
    window: Option<Window>,
    semantics: Semantics,
    clip: bool,
) -> Vec<(usize, i64, i64)> {
    let mut out = Vec::new();
    for i in rows {
        let (s, e) = (k.start[i], k.end[i]);
        match window {
            None => out.push((i, s, e)),
            Some(w) => match semantics {
                Semantics::Clip => {
                    if e > w.start_ns && s < w.end_ns {
                        if clip {
                            out.push((i, s.max(w.start_ns), e.min(w.end_ns)));
                        } else {
                            out.push((i, s, e));
                        }
                    }
                }
                Semantics::Contain => {
                    if s >= w.start_ns && e <= w.end_ns {
                        out.push((i, s, e));
                    }
                }
            },
        }
    }
    out
}

/// The interval a selection covers: the window (clip), the span of the kernels kept on the
/// given devices (contain), or those devices' kernel span (no window).
pub(crate) fn effective_window(
    ctx: &Context,
    devices: &[i64],
    params: &Params,
) -> Option<[i64; 2]> {
    match (params.window, params.semantics) {
        (Some(w), Semantics::Clip) => Some(w.as_array()),
        // The devices' kernel span, from the inventory of every row: a scan may keep only
        // some rows of a device outside the boxes its queries read (NCCL kernels alone).
        (None, _) => ctx.kernel_range_of(devices),
        (window, _) => {
            let k = &ctx.kernels;
            let mut span: Option<[i64; 2]> = None;
            for &d in devices {
                for (_, s, e) in select(k, k.device_rows(d), window, params.semantics, false) {
                    span = Some(span.map_or([s, e], |[a, b]| [a.min(s), b.max(e)]));
                }
            }
            span
        }
    }
}

/// Counts rows of a device that cross an edge of the window (start before and end after it).
pub(crate) fn edge_crossings(k: &Kernels, rows: std::ops::Range<usize>, w: Window) -> i64 {
    rows.filter(|&i| {
        let (s, e) = (k.start[i], k.end[i]);
        (s < w.start_ns && e > w.start_ns) || (s < w.end_ns && e > w.end_ns)
    })
    .count() as i64
}

/// Order statistics of a sample that has at least one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Quantiles {
    /// The smallest value.
    pub min: i64,
    /// The lower median: the `ceil(n/2)`-th smallest.
    pub median: i64,
    /// The nearest-rank 90th percentile: the `ceil(0.9 n)`-th smallest.
    pub p90: i64,
    /// The largest value.
    pub max: i64,
}

/// Lower median and nearest-rank p90 of a sorted slice; None for an empty one, whose order
/// statistics do not exist (never a stand-in 0).
pub(crate) fn quantiles_of(sorted: &[i64]) -> Option<Quantiles> {
    let n = sorted.len();
    let (&min, &max) = (sorted.first()?, sorted.last()?);
    Some(Quantiles { min, median: sorted[(n - 1) / 2], p90: sorted[(9 * n).div_ceil(10) - 1], max })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Kernels on two devices with compute and NCCL on two streams, so every analysis has
    /// something to say.
    pub(crate) fn ctx() -> Context {
        use crate::trace::nvtx::{Launches, NvtxRanges};
        use crate::trace::{Copies, CopyKind};
        // One thread of process 1 launches the four kernels (correlation ids 1-4) at CPU
        // times 0, 5, 8 and 30; `step` covers [0, 20), an op range [1, 6).
        let gtid = (1 << 24) + 5;
        let keys: Vec<(Option<i64>, Option<i64>)> = (1..=4).map(|c| (Some(1), Some(c))).collect();
        Context::from_kernels(Kernels::from_rows_with_launch_keys(
            &[
                (1, 7, 0, 100, "gemm"),
                (1, 56, 50, 150, "ncclAG"),
                (2, 7, 10, 90, "gemm"),
                (2, 56, 60, 160, "ncclAG"),
            ],
            &keys,
        ))
        .with_copies(Copies::from_rows(&[
            (1, 9, 140, 200, 4096, CopyKind::HtoD),
            (1, 9, 210, 220, 64, CopyKind::Memset),
        ]))
        .with_nvtx(NvtxData {
            ranges: NvtxRanges::from_rows(&[
                (gtid, 0, Some(20), "step", 0),
                (gtid, 1, Some(6), "aten::mm, op_id = 3", 0),
            ]),
            launches: Launches::from_rows(&[
                (gtid, 1, 0, 1),
                (gtid, 2, 5, 6),
                (gtid, 3, 8, 9),
                (gtid, 4, 30, 31),
            ]),
        })
    }

    /// Every field an analysis declares is produced by its run (in `values`, or in every
    /// row when there are rows), and every number it produces is declared: a renamed key
    /// fails here, not as a 0 in a report.
    #[test]
    fn every_declared_field_is_produced_and_every_produced_number_declared() {
        for spec in ANALYSES {
            let devices = match spec.scope {
                ScopeRule::PerDevice => DeviceSel::Set(vec![1]),
                _ => DeviceSel::All,
            };
            let ev = run_spec(spec, &Params::new(devices), &ctx()).unwrap();
            let values = ev.values.as_ref().unwrap_or_else(|| panic!("{}: no values", spec.name));
            let values = values.to_map();
            for f in spec.fields {
                assert!(
                    values.contains_key(f.name),
                    "{}: field {} not produced",
                    spec.name,
                    f.name
                );
                assert!(ev.field(f.name).is_ok(), "{}: field {} unreadable", spec.name, f.name);
            }
            for (k, v) in &values {
                if v.is_number() {
                    assert!(spec.field(k).is_some(), "{}: number {k} not declared", spec.name);
                }
            }
            assert!(matches!(ev.field("no_such_field"), Err(FieldError::Undeclared(..))));
        }
    }

    /// Every analysis that takes a name filter, run with one that matches nothing: the order
    /// statistics and spans of that empty population are null, never 0, and every null field
    /// of any run is explained by a note.
    #[test]
    fn an_empty_match_gives_no_stand_in_zero_and_every_null_is_explained() {
        let stat =
            |f: &str| ["min", "median", "p90", "max", "mean", "span"].iter().any(|s| f.contains(s));
        let mut filtered = 0;
        for spec in ANALYSES.iter().filter(|s| s.is_query()) {
            let devices = match spec.scope {
                ScopeRule::PerDevice => DeviceSel::Set(vec![1]),
                _ => DeviceSel::All,
            };
            let mut runs = vec![run_spec(spec, &Params::new(devices.clone()), &ctx()).unwrap()];
            if spec.param("match").is_some() {
                let mut p = Params::new(devices);
                p.set(spec, "match", "no such name").unwrap();
                let ev = run_spec(spec, &p, &ctx()).unwrap();
                for f in spec.fields.iter().filter(|f| stat(f.name)) {
                    assert!(
                        ev.value(f.name).is_some_and(|v| v.is_null()),
                        "{}: {}",
                        spec.name,
                        f.name
                    );
                }
                runs.push(ev);
                filtered += 1;
            }
            for ev in &runs {
                for f in spec.fields {
                    if ev.value(f.name).is_some_and(|v| v.is_null()) {
                        assert!(
                            !ev.null_reasons(f.name).is_empty(),
                            "{}: {} is null without a note",
                            spec.name,
                            f.name
                        );
                    }
                }
            }
        }
        assert_eq!(filtered, 4, "kernels, nvtx, nccl-skew and nccl-calls take a name filter");
    }

    #[test]
    fn a_declared_field_missing_from_the_evidence_is_an_error_not_zero() {
        let mut ev =
            run_spec(&overlap::SPEC, &Params::new(DeviceSel::Set(vec![1])), &ctx()).unwrap();
        ev.values = ev.values.map(|v| v.edited(|v| drop(v.remove("idle_ns"))));
        assert!(matches!(ev.field("idle_ns"), Err(FieldError::Missing(..))));
    }

    #[test]
    fn a_ratio_field_is_exact_through_its_formula() {
        let ev = run_spec(&nccl_skew::SPEC, &Params::new(DeviceSel::All), &ctx()).unwrap();
        // Durations 100 and 100: no wait; the share is exactly 0 / 200.
        let share = ev.field("wait_share").unwrap().unwrap();
        assert_eq!((share.num, share.den), (0, 1));
    }

    #[test]
    fn the_command_line_and_a_claim_parse_a_parameter_with_the_same_code() {
        let mut p = Params::new(DeviceSel::All);
        p.set(&kernels::SPEC, "regex", "^flash").unwrap();
        assert_eq!(
            crate::plan::QueryPlan {
                spec: &kernels::SPEC,
                traces: vec!["t.sqlite".into()],
                force_set: false,
                expect: crate::plan::Expectation::Nothing,
                params: p.clone(),
                nvtx: None,
            }
            .command_words(),
            [
                "verdict",
                "query",
                "kernels",
                "t.sqlite",
                "--all-devices",
                "--regex",
                "^flash",
                "--json"
            ]
        );
        assert!(matches!(p.set(&kernels::SPEC, "regex", "("), Err(QueryError::BadParam { .. })));
        assert!(matches!(p.set(&overlap::SPEC, "stream", "7"), Err(QueryError::NotAdopted { .. })));
        // A parameter set on Params that the analysis does not adopt is refused at run time.
        p.stream = Some(7);
        assert!(matches!(run_spec(&kernels::SPEC, &p, &ctx()), Err(QueryError::NotAdopted { .. })));
    }

    #[test]
    fn quantiles_use_lower_median_and_nearest_rank() {
        let q = |v: &[i64]| quantiles_of(v).map(|q| (q.min, q.median, q.p90, q.max));
        assert_eq!(q(&[1, 2, 3, 4]), Some((1, 2, 4, 4)));
        assert_eq!(q(&(1..=10).collect::<Vec<_>>()), Some((1, 5, 9, 10)));
        assert_eq!(q(&[7]), Some((7, 7, 7, 7)));
        assert_eq!(
            quantiles_of(&[1, 2, 3, 4]),
            Some(Quantiles { min: 1, median: 2, p90: 4, max: 4 })
        );
    }

    #[test]
    fn an_empty_sample_has_no_quantiles() {
        assert_eq!(quantiles_of(&[]), None);
    }
}

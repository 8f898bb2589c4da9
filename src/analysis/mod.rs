//! Analyses over one kernel scan, each disclosing its window, devices and denominators.
//!
//! One file per analysis; [`ANALYSES`] is the registry that the CLI, the claims validator and
//! the report read. An analysis is a pure function of a [`Context`] (the scan of one trace) and
//! [`Params`]; it never reads the trace itself, so one scan serves every query of a command.

pub mod coverage;
pub mod intervals;
pub mod kernels;
pub mod nccl_skew;
pub mod nvtx;
pub mod overlap;

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::scope::{DeviceSel, Semantics, Window, format_device_list, format_seconds};
use crate::trace::{Inventory, Kernels, NameStyle};

/// Errors of a query that the trace cannot answer as asked.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum QueryError {
    /// A requested device has no kernels in the trace.
    #[error("device {device} has no kernels in this trace (devices with kernels: {present})")]
    UnknownDevice {
        /// The device asked for.
        device: i64,
        /// The devices present, formatted.
        present: String,
    },
    /// The window selects nothing of the trace.
    #[error("window {window} s lies outside the trace's kernels ({first}-{last} s)")]
    WindowOutside {
        /// The window, formatted.
        window: String,
        /// First kernel start, formatted in seconds.
        first: String,
        /// Last kernel end, formatted in seconds.
        last: String,
    },
    /// The trace has no kernels at all.
    #[error("the trace has no kernels")]
    NoKernels,
    /// A parameter was given that this analysis does not use.
    #[error("analysis `{analysis}` does not take `{param}`")]
    NotAdopted {
        /// The analysis.
        analysis: String,
        /// The parameter.
        param: String,
    },
    /// The analysis name is unknown.
    #[error("unknown analysis `{0}`")]
    UnknownAnalysis(String),
    /// A regular expression does not compile.
    #[error("invalid regex `{pattern}` ({reason})")]
    BadRegex {
        /// The pattern.
        pattern: String,
        /// The compiler's message.
        reason: String,
    },
}

impl QueryError {
    /// A hint on what to do about it.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            QueryError::UnknownDevice { present, .. } => {
                format!(
                    "pick one of the devices with kernels ({present}), or see `verdict inspect TRACE`"
                )
            }
            QueryError::WindowOutside { first, last, .. } => format!(
                "windows are seconds on the trace's own clock; this trace's kernels run from {first} to {last} s"
            ),
            QueryError::NotAdopted { .. } => {
                "a parameter that an analysis would ignore is refused; drop it".into()
            }
            QueryError::NoKernels => {
                "the kernel table has no rows with collected timestamps; profile with CUDA tracing (`nsys profile --trace=cuda`) and export again".into()
            }
            QueryError::BadRegex { .. } => {
                "the pattern uses Rust regex syntax; escape special characters, or use --match for a plain substring".into()
            }
            QueryError::UnknownAnalysis(_) => {
                format!(
                    "known analyses: {}",
                    ANALYSES.iter().map(|a| a.name).collect::<Vec<_>>().join(", ")
                )
            }
        })
    }
}

/// A field an analysis reports, with its unit and definition.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Field {
    /// Key in `values` / `rows`.
    pub name: &'static str,
    /// `ns`, `count`, `ratio`, `device`...
    pub unit: &'static str,
    /// One line: what it is and its denominator.
    pub definition: &'static str,
}

/// A registered analysis.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct AnalysisSpec {
    /// Name on the command line and in claims files.
    pub name: &'static str,
    /// One line on what it measures.
    pub summary: &'static str,
    /// The numeric fields a formula may use.
    pub fields: &'static [Field],
    /// Parameters it adopts besides window, semantics and devices.
    pub params: &'static [&'static str],
    /// Keys of `values` that compare matched instances across ranks. They exist only with at
    /// least two ranks in one scope and one matched instance; otherwise they are null and a
    /// note says why (gate R2 fails for a part that reads one).
    pub cross_rank: &'static [&'static str],
    /// Fields that are a ratio of other fields, with that formula: a claim that reads one is
    /// evaluated and shown through it (`wait_ns / nccl_ns`), exactly, with its fraction.
    pub ratios: &'static [(&'static str, &'static str)],
}

/// Every analysis, in the order the CLI lists them.
pub const ANALYSES: &[AnalysisSpec] =
    &[overlap::SPEC, kernels::SPEC, nccl_skew::SPEC, coverage::SPEC];

/// Looks an analysis up by name.
pub fn spec(name: &str) -> Option<&'static AnalysisSpec> {
    ANALYSES.iter().find(|a| a.name == name)
}

/// A kernel-name filter.
#[derive(Debug, Clone)]
pub enum NameFilter {
    /// Substring, case-sensitive.
    Substring(String),
    /// Regular expression (Rust `regex` syntax).
    Regex(regex::Regex),
}

impl NameFilter {
    /// Compiles a regex filter.
    pub fn regex(pattern: &str) -> Result<NameFilter, QueryError> {
        regex::Regex::new(pattern).map(NameFilter::Regex).map_err(|e| {
            // The compiler's message draws a caret diagram over several lines; keep its
            // last line, the actual reason.
            let full = e.to_string();
            let reason =
                full.lines().last().unwrap_or("").trim().trim_start_matches("error: ").to_string();
            QueryError::BadRegex { pattern: pattern.into(), reason }
        })
    }

    /// Whether a name passes.
    pub fn matches(&self, name: &str) -> bool {
        match self {
            NameFilter::Substring(s) => name.contains(s.as_str()),
            NameFilter::Regex(r) => r.is_match(name),
        }
    }

    /// How it is disclosed.
    pub fn describe(&self) -> String {
        match self {
            NameFilter::Substring(s) => format!("name contains `{s}`"),
            NameFilter::Regex(r) => format!("name matches /{}/", r.as_str()),
        }
    }
}

/// Parameters of one query. Each analysis refuses those it does not adopt.
#[derive(Debug, Clone)]
pub struct Params {
    /// The requested window (None: the whole trace).
    pub window: Option<Window>,
    /// How the window selects kernels.
    pub semantics: Semantics,
    /// Devices.
    pub devices: DeviceSel,
    /// Kernel name style (kernels).
    pub names: Option<NameStyle>,
    /// Kernel name filter (kernels).
    pub filter: Option<NameFilter>,
    /// Top-N by total time (kernels).
    pub limit: Option<usize>,
    /// NCCL stream (nccl-skew).
    pub stream: Option<i64>,
}

impl Params {
    /// Parameters over all devices and the whole trace.
    pub fn new(devices: DeviceSel) -> Params {
        Params {
            window: None,
            semantics: Semantics::Clip,
            devices,
            names: None,
            filter: None,
            limit: None,
            stream: None,
        }
    }

    fn given(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.names.is_some() {
            v.push("names");
        }
        if self.filter.is_some() {
            v.push("match");
        }
        if self.limit.is_some() {
            v.push("limit");
        }
        if self.stream.is_some() {
            v.push("stream");
        }
        v
    }
}

/// Where a trace's evidence comes from: identity of the file.
#[derive(Debug, Clone, Serialize)]
pub struct TraceRef {
    /// The path as given.
    pub path: String,
    /// sha256 of the file.
    pub sha256: String,
    /// `EXPORT_SCHEMA_VERSION`, if recorded.
    pub schema_version: Option<String>,
    /// `EXPORT_PRODUCT_VERSION`, if recorded.
    pub nsys_version: Option<String>,
    /// The clock of the timestamps.
    pub time_base: String,
    /// On a UTC-epoch clock (`--ts-normalize` exports), the capture start on that clock
    /// (`EXPORT_CONFIG_TIME_SHIFT`, else `TARGET_INFO_SESSION_START_TIME.utcEpochNs`), so
    /// times can also be read relative to it; null on the session clock, where 0 is the start.
    pub capture_start_ns: Option<i64>,
    /// Where the trace comes from, as its metadata says (a synthetic trace says so).
    pub origin: crate::trace::Origin,
}

/// Everything the analyses of one trace share: the one scan and what is known around it.
#[derive(Debug, Clone)]
pub struct Context {
    /// Identity of the file.
    pub trace: TraceRef,
    /// The kernel rows of the scan.
    pub kernels: Kernels,
    /// Devices, GPUs and time ranges of the whole trace.
    pub inventory: Inventory,
    /// Devices the job should have (`--expect-devices`, or the claims file).
    pub expected_devices: Option<Vec<i64>>,
}

impl Context {
    /// Devices with kernels anywhere in the trace.
    pub fn present_devices(&self) -> Vec<i64> {
        self.inventory.present_devices()
    }

    /// Devices the job should have but that ran no kernel: the expected set if given, else
    /// the GPUs listed in `TARGET_INFO_GPU`.
    pub fn missing_devices(&self) -> Vec<i64> {
        let present = self.present_devices();
        match &self.expected_devices {
            Some(exp) => exp.iter().copied().filter(|d| !present.contains(d)).collect(),
            None => self.inventory.listed_without_kernels(),
        }
    }

    /// Resolves a device selection, refusing devices without kernels.
    pub fn resolve_devices(&self, sel: &DeviceSel) -> Result<Vec<i64>, QueryError> {
        let present = self.present_devices();
        if present.is_empty() {
            return Err(QueryError::NoKernels);
        }
        let devices = sel.resolve(&present);
        for d in &devices {
            if !present.contains(d) {
                return Err(QueryError::UnknownDevice {
                    device: *d,
                    present: format_device_list(&present),
                });
            }
        }
        Ok(devices)
    }

    /// Refuses a window that selects no kernel time of the given devices.
    pub fn check_window(&self, window: Option<Window>, devices: &[i64]) -> Result<(), QueryError> {
        let Some(w) = window else { return Ok(()) };
        let inv: Vec<_> = self
            .inventory
            .devices
            .iter()
            .filter(|d| devices.contains(&d.device))
            .cloned()
            .collect();
        let [first, last] = crate::trace::kernel_range(&inv).unwrap_or([0, 0]);
        if w.end_ns <= first || w.start_ns >= last {
            return Err(QueryError::WindowOutside {
                window: w.to_string(),
                first: format_seconds(first),
                last: format_seconds(last),
            });
        }
        Ok(())
    }

    fn evidence(&self, spec: &AnalysisSpec, params: &Params, devices: Vec<i64>) -> Evidence {
        Evidence {
            analysis: spec.name.to_string(),
            tool: ToolRef::current(),
            trace: self.trace.clone(),
            window: WindowInfo {
                requested_ns: params.window.map(|w| w.as_array()),
                effective_ns: None,
                semantics: params.semantics,
            },
            scope: ScopeInfo {
                devices,
                present_devices: self.present_devices(),
                missing_devices: self.missing_devices(),
                streams: None,
            },
            parameters: BTreeMap::new(),
            metrics: spec
                .fields
                .iter()
                .map(|f| (f.name.to_string(), f.definition.to_string()))
                .collect(),
            values: None,
            rows: None,
            notes: Vec::new(),
        }
    }
}

/// The tool that produced a piece of evidence.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ToolRef {
    /// Always `verdict`.
    pub name: String,
    /// The crate version.
    pub version: String,
}

impl ToolRef {
    /// This build.
    pub fn current() -> ToolRef {
        ToolRef { name: "verdict".into(), version: env!("CARGO_PKG_VERSION").into() }
    }
}

/// The window of a piece of evidence.
#[derive(Debug, Clone, Serialize)]
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
#[derive(Debug, Clone, Serialize)]
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
#[derive(Debug, Clone, Serialize)]
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
    pub values: Option<Map<String, Value>>,
    /// One object per device or kernel name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rows: Option<Vec<Map<String, Value>>>,
    /// Disclosures that qualify the numbers (edges, unequal counts, estimates).
    pub notes: Vec<Note>,
}

/// A disclosure: its i18n key and arguments, and the English text.
#[derive(Debug, Clone, Serialize)]
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
#[derive(Debug, Clone, Serialize)]
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

    /// Sets `fields` of `values` to null and adds the note that says why, with what would give
    /// them a value (`need`, an i18n key). Several notes may explain the same field; the first
    /// added is the main reason.
    pub fn leave_null(
        &mut self,
        fields: &[&str],
        key: &str,
        args: &[(&str, String)],
        need: (&str, &[(&str, String)]),
    ) {
        if let Some(values) = self.values.as_mut() {
            for f in fields {
                values.insert((*f).to_string(), Value::Null);
            }
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
        if !self.value(field).is_some_and(Value::is_null) {
            return Vec::new();
        }
        self.notes.iter().filter(|n| n.null_fields.iter().any(|f| f == field)).collect()
    }

    /// A numeric field of `values`, as an exact integer or a float.
    pub fn value(&self, field: &str) -> Option<&Value> {
        self.values.as_ref().and_then(|v| v.get(field))
    }
}

/// Runs a named analysis.
pub fn run(name: &str, params: &Params, ctx: &Context) -> Result<Evidence, QueryError> {
    let spec = spec(name).ok_or_else(|| QueryError::UnknownAnalysis(name.into()))?;
    for p in params.given() {
        if !spec.params.contains(&p) {
            return Err(QueryError::NotAdopted { analysis: name.into(), param: p.into() });
        }
    }
    match name {
        "overlap" => overlap::run(params, ctx),
        "kernels" => kernels::run(params, ctx),
        "nccl-skew" => nccl_skew::run(params, ctx),
        "coverage" => coverage::run(params, ctx),
        _ => Err(QueryError::UnknownAnalysis(name.into())),
    }
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

/// Lower median and nearest-rank p90 of a sorted slice.
pub(crate) fn quantiles(sorted: &[i64]) -> (i64, i64, i64, i64) {
    if sorted.is_empty() {
        return (0, 0, 0, 0);
    }
    let n = sorted.len();
    let median = sorted[(n - 1) / 2];
    let p90 = sorted[(9 * n).div_ceil(10) - 1];
    (sorted[0], median, p90, sorted[n - 1])
}

/// Builds a JSON object from key-value pairs.
pub(crate) fn obj<I: IntoIterator<Item = (&'static str, Value)>>(pairs: I) -> Map<String, Value> {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

impl Context {
    /// A context over in-memory kernels, with no GPU table and a placeholder identity; used
    /// by tests and by callers that build kernels themselves.
    pub fn from_kernels(kernels: Kernels) -> Context {
        let devices = kernels.inventory.clone();
        let kernel_range_ns = crate::trace::kernel_range(&devices);
        Context {
            trace: TraceRef {
                path: "<memory>".into(),
                sha256: String::new(),
                schema_version: None,
                nsys_version: None,
                time_base: "session".into(),
                capture_start_ns: None,
                origin: Default::default(),
            },
            inventory: Inventory {
                devices,
                listed_gpus: None,
                processes: None,
                nvtx_events: None,
                kernel_range_ns,
                skipped_invalid: kernels.skipped_invalid,
            },
            kernels,
            expected_devices: None,
        }
    }
}

impl Context {
    /// Scans a trace once for everything one command needs, hashing the file on a second
    /// thread meanwhile.
    pub fn load(
        trace: &crate::trace::Trace,
        filter: &crate::trace::KernelFilter,
        expected_devices: Option<Vec<i64>>,
        progress: &mut dyn FnMut(u64),
    ) -> Result<Context, crate::trace::TraceError> {
        let path = trace.path().to_path_buf();
        let (kernels, sha) = std::thread::scope(|s| {
            let hasher = s.spawn(move || crate::trace::sha256_file(&path));
            let kernels = Kernels::load(trace, filter, progress);
            let sha = hasher
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("hashing thread panicked")));
            (kernels, sha)
        });
        let kernels = kernels?;
        let inventory = trace.inventory(&kernels)?;
        let schema = trace.schema();
        Ok(Context {
            trace: TraceRef {
                path: trace.path().display().to_string(),
                sha256: sha?,
                schema_version: schema.schema_version.clone(),
                nsys_version: schema.nsys_version.clone(),
                time_base: match schema.time_base {
                    crate::trace::TimeBase::Session => "session".into(),
                    crate::trace::TimeBase::Utc { .. } => "utc".into(),
                    crate::trace::TimeBase::Unrecorded => "unrecorded".into(),
                },
                capture_start_ns: match schema.time_base {
                    crate::trace::TimeBase::Utc { shift_ns } => {
                        shift_ns.or(schema.session_start_utc_ns)
                    }
                    _ => None,
                },
                origin: schema.origin.clone(),
            },
            kernels,
            inventory,
            expected_devices,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_use_lower_median_and_nearest_rank() {
        assert_eq!(quantiles(&[1, 2, 3, 4]), (1, 2, 4, 4));
        assert_eq!(quantiles(&(1..=10).collect::<Vec<_>>()), (1, 5, 9, 10));
        assert_eq!(quantiles(&[7]), (7, 7, 7, 7));
    }
}

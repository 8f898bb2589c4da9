//! The pipeline of `check` and `render`: claims -> evidence -> verdicts, as one ledger.
//!
//! Plans every query a claims file needs, scans each trace once for all of them, runs the
//! analyses, then hands the evidence to the pure judges in [`crate::verdict`]. A query that
//! fails is recorded against the parts that need it; the audit goes on.

use std::collections::BTreeMap;
use std::path::PathBuf;

use rayon::prelude::*;
use schemars::JsonSchema;
use serde::Serialize;

use crate::analysis::{self, Context, Evidence, Params, ToolRef};
use crate::claims::{ClaimSet, Measure, PlanId, Scope, TraceDecl};
use crate::diag::{Diagnostic, Hints};
use crate::plan::QueryPlan;
use crate::scope::DeviceSel;
use crate::trace::open::normalize;
use crate::trace::{KernelFilter, NO_ROWS, RowBox, Trace, union_rows};
use crate::verdict::{self, ClaimResult, EvidenceMap, Summary};

/// One query of the ledger.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LedgerEntry {
    /// Key the parts refer to.
    pub key: PlanId,
    /// The command that reproduces it, as one shell line.
    pub command: String,
    /// The same command as the words the program receives (unquoted).
    pub argv: Vec<String>,
    /// The evidence.
    pub evidence: Option<Evidence>,
    /// Or why it failed.
    pub error: Option<String>,
}

/// A trace of the audit with its coverage.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TraceEntry {
    /// Name in the claims file.
    pub name: String,
    /// Path as resolved: relative to the folder the audit ran in (the folder its ledger's
    /// commands are run from), as they name it.
    pub path: String,
    /// The path as the claims file writes it (a set: its list or glob, joined by `, `).
    pub written: String,
    /// The folder `written` is relative to: the claims file's, as the audit was given it.
    pub relative_to: String,
    /// Coverage evidence (devices, missing devices, time range), or an error.
    pub coverage: Option<Evidence>,
    /// Why the trace could not be read.
    pub error: Option<String>,
    /// What to do about it, when the reason has its own hint (a WAL beside the trace, say).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

/// The evidence ledger: what `check --json` prints and `render` writes.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Audit {
    /// The producer.
    pub tool: ToolRef,
    /// The validated claims.
    pub claims: ClaimSet,
    /// Traces with coverage.
    pub traces: Vec<TraceEntry>,
    /// Every query the parts read.
    pub ledger: Vec<LedgerEntry>,
    /// Context queries for the report's charts: the overlap of every device in each overlap
    /// window, and the top kernels of each kernels scope. No part reads them.
    pub context: Vec<LedgerEntry>,
    /// Claim results.
    pub results: Vec<ClaimResult>,
    /// Summary.
    pub summary: Summary,
    /// The common misreadings this audit could lead into, filled from its own numbers.
    pub misreadings: Vec<crate::verdict::Finding>,
    /// One-device numbers recomputed on every device of their window, from the context.
    pub spreads: Vec<Spread>,
}

/// A part measured on one device, recomputed with the same formula on every device of the
/// same window: where the device the claim looked at stands among the others; or a total over
/// several devices split into each device's part.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Spread {
    /// Claim id.
    pub claim: String,
    /// Part id.
    pub part: String,
    /// The query the rows come from: the every-device context query, or for a split total the
    /// part's own.
    pub context: PlanId,
    /// Per device, the value as an exact fraction `[numerator, denominator]`.
    pub per_device: BTreeMap<i64, [String; 2]>,
    /// The same values, for display.
    #[serde(skip)]
    pub values: Vec<(i64, crate::formula::Rational)>,
}

impl Spread {
    /// The smallest and largest value with their devices.
    pub fn range(
        &self,
    ) -> Option<((i64, crate::formula::Rational), (i64, crate::formula::Rational))> {
        let min = self.values.iter().min_by(|a, b| a.1.cmp_to(b.1))?;
        let max = self.values.iter().max_by(|a, b| a.1.cmp_to(b.1))?;
        Some((*min, *max))
    }
}

/// The spreads of every one-device overlap part whose window has an every-device context
/// query (the part's own formula over each device's row), and the per-device split of every
/// total over several devices that its evidence splits per device (`context` is then the
/// part's own query).
fn spreads(set: &ClaimSet, ledger: &[LedgerEntry], context: &[LedgerEntry]) -> Vec<Spread> {
    let mut out = Vec::new();
    for claim in &set.claims {
        for part in &claim.parts {
            let Some(m) = &part.measure else { continue };
            let key = set.plan_id(m);
            let Some(ev) = ledger.iter().find(|e| e.key == key).and_then(|e| e.evidence.as_ref())
            else {
                continue;
            };
            // A total over several devices that the evidence splits per device: each device's
            // part, kept only when the parts add up to the total (rows cut short would not).
            if let Some(split) = device_split(m, ev) {
                out.push(Spread {
                    claim: claim.id.clone(),
                    part: part.id.clone(),
                    context: key.clone(),
                    per_device: split
                        .iter()
                        .map(|(d, v)| (*d, [v.num.to_string(), v.den.to_string()]))
                        .collect(),
                    values: split,
                });
                continue;
            }
            // Shares only: a spread of totals (the identity, ~6,156 ms everywhere) says nothing.
            let share = matches!(m.unit, crate::claims::Unit::Percent | crate::claims::Unit::Ratio);
            let per_device = analysis::spec(&ev.analysis)
                .is_some_and(|s| s.chart_context() == Some(analysis::ChartContext::AllDevices));
            if !per_device || ev.scope.devices.len() != 1 || !share {
                continue;
            }
            let Some((entry, rows)) = context.iter().find_map(|c| {
                let cev = c.evidence.as_ref()?;
                let same = cev.analysis == ev.analysis
                    && cev.trace.path == ev.trace.path
                    && cev.window.requested_ns == ev.window.requested_ns
                    && cev.window.semantics == ev.window.semantics;
                if same { Some((c, cev.rows.as_ref()?.to_maps())) } else { None }
            }) else {
                continue;
            };
            let mut values = Vec::new();
            for row in &rows {
                let Some(device) = row.get("device").and_then(serde_json::Value::as_i64) else {
                    continue;
                };
                let vars: BTreeMap<String, crate::formula::Rational> = m
                    .value
                    .vars()
                    .into_iter()
                    .filter_map(|f| {
                        let v = row.get(&f)?.as_i64()?;
                        Some((f, crate::formula::Rational::int(v.into())))
                    })
                    .collect();
                if let Ok(v) = m.value.eval(&vars) {
                    values.push((device, v));
                }
            }
            if values.len() < 2 {
                continue;
            }
            out.push(Spread {
                claim: claim.id.clone(),
                part: part.id.clone(),
                context: entry.key.clone(),
                per_device: values
                    .iter()
                    .map(|(d, v)| (*d, [v.num.to_string(), v.den.to_string()]))
                    .collect(),
                values,
            });
        }
    }
    out
}

/// A part's total split per device: the measure is one field its analysis splits per device
/// (`count`, from each row's `per_device`), over two devices or more, and the devices' parts
/// add up to the total exactly.
fn device_split(
    m: &crate::claims::Measure,
    ev: &analysis::Evidence,
) -> Option<Vec<(i64, crate::formula::Rational)>> {
    let crate::formula::Expr::Var(field) = &m.value else { return None };
    let spec = analysis::spec(&ev.analysis)?;
    let column = spec.per_device.iter().find(|(f, _)| f == field)?.1;
    if ev.scope.devices.len() < 2 {
        return None;
    }
    let total = ev.values.as_ref()?.to_map().get(field.as_str())?.as_i64()?;
    let mut parts: BTreeMap<i64, i64> = BTreeMap::new();
    for row in ev.rows.as_ref()?.to_maps() {
        for (d, v) in row.get(column)?.as_object()? {
            *parts.entry(d.parse().ok()?).or_default() += v.as_i64()?;
        }
    }
    for d in &ev.scope.devices {
        parts.entry(*d).or_default();
    }
    (parts.len() >= 2 && parts.values().sum::<i64>() == total).then(|| {
        parts.into_iter().map(|(d, v)| (d, crate::formula::Rational::int(v.into()))).collect()
    })
}

impl LedgerEntry {
    /// An entry for the command `argv` and what it gave.
    pub fn new(
        key: PlanId,
        argv: Vec<String>,
        result: Result<Evidence, Diagnostic>,
    ) -> LedgerEntry {
        let command = argv.iter().map(|w| shell_quote(w)).collect::<Vec<_>>().join(" ");
        let (evidence, error) = match result {
            Ok(e) => (Some(e), None),
            // One line, the hints after the message, as the ledger has always said it.
            Err(e) => (None, Some(e.to_string())),
        };
        LedgerEntry { key, command, argv, evidence, error }
    }
}

/// The JSON Schema (draft 2020-12) of the evidence ledger, `verdict schema evidence`: derived
/// from [`Audit`] and the types it holds, as their `Serialize` writes them. A key that is
/// always written is required, a key the types do not have is refused (every object with
/// declared properties allows no others), and every enumerated value is listed.
pub fn evidence_schema() -> serde_json::Value {
    schema_of::<Audit>(
        "https://github.com/verdict/evidence.schema.json",
        format!("verdict {} evidence ledger", env!("CARGO_PKG_VERSION")),
    )
}

/// The JSON Schema of one piece of evidence, as `verdict query --json` prints it and the MCP
/// `query` and `inspect` tools return it: derived from the types that write it, as the
/// ledger's is.
pub fn query_evidence_schema() -> serde_json::Value {
    schema_of::<crate::analysis::Evidence>(
        "https://github.com/verdict/query.schema.json",
        format!("verdict {} evidence of one query", env!("CARGO_PKG_VERSION")),
    )
}

/// The draft 2020-12 schema of what `T` serialises to; an object never holds a key its type
/// does not declare.
fn schema_of<T: JsonSchema>(id: &str, title: String) -> serde_json::Value {
    use schemars::transform::RecursiveTransform;
    let deny_unknown = RecursiveTransform(|s: &mut schemars::Schema| {
        if let Some(obj) = s.as_object_mut()
            && obj.contains_key("properties")
            && !obj.contains_key("additionalProperties")
        {
            obj.insert("additionalProperties".into(), false.into());
        }
    });
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .for_serialize()
        .with_transform(deny_unknown)
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>();
    schema.insert("$id".into(), id.into());
    schema.insert("title".into(), title.into());
    schema.to_value()
}

impl Audit {
    /// The traces that could not be read: `check` and `render` still show every claim, then
    /// exit 2.
    pub fn unreadable_traces(&self) -> impl Iterator<Item = &TraceEntry> {
        self.traces.iter().filter(|t| t.error.is_some())
    }
}

/// The `verdict query compare` command that reproduces a comparison: each side's trace (or
/// set), devices, window and split as `--a`/`--b` keys, the metric and the seed.
pub fn compare_words(set: &ClaimSet, m: &Measure, c: &crate::claims::Compare) -> Vec<String> {
    let mut w: Vec<String> =
        ["verdict", "query", "compare", "--of", &c.of, "--metric", &c.metric_text]
            .iter()
            .map(|s| s.to_string())
            .collect();
    for (k, (flag, side)) in [("--a", &c.sides[0]), ("--b", &c.sides[1])].into_iter().enumerate() {
        let Some(scope) = set.scopes.get(&side.scope) else { continue };
        let Some(decl) = set.trace(&scope.trace).or_else(|| {
            c.runs[k].first().and_then(|m| set.trace(&set.scopes.get(&m.scope)?.trace))
        }) else {
            continue;
        };
        let mut kv = |k: &str, v: String| {
            w.push(flag.into());
            w.push(format!("{k}={v}"));
        };
        // A side over runs: every run's file, each one sample.
        let runs: Vec<&TraceDecl> =
            c.runs[k].iter().filter_map(|m| set.trace(&set.scopes.get(&m.scope)?.trace)).collect();
        if !runs.is_empty() {
            for r in &runs {
                kv("trace", normalize(&r.resolved).display().to_string());
            }
            kv("runs", "true".into());
        }
        match &decl.set {
            _ if !runs.is_empty() => {}
            None => kv("trace", normalize(&decl.resolved).display().to_string()),
            Some(files) => {
                for f in files {
                    kv("trace", normalize(f).display().to_string());
                }
                if files.len() == 1 {
                    kv("set", "true".into());
                }
            }
        }
        if let Some(d) = &decl.expect_devices {
            kv("expect-devices", crate::scope::format_device_list(d));
        }
        if let Some(n) = decl.expect_ranks {
            kv("expect-ranks", n.to_string());
        }
        kv("label", side.scope.clone());
        if let crate::scope::DeviceSel::Set(d) = &scope.devices {
            kv("devices", crate::scope::format_device_list(d));
        }
        if let Some(win) = scope.window {
            kv("window", win.to_string());
        }
        if let Some(n) = &scope.nvtx {
            kv("nvtx", n.name.clone());
            if let Some(i) = n.index {
                kv("index", i.to_string());
            }
            if n.on == analysis::nvtx::Timeline::Gpu {
                kv("on", "gpu".into());
            }
            if let Some(d) = &n.domain {
                kv("domain", d.clone());
            }
        }
        if scope.semantics != crate::scope::Semantics::Clip {
            kv("semantics", scope.semantics.to_string());
        }
        if let Some(n) = c.split {
            kv("split", n.to_string());
        }
    }
    let of = analysis::spec(&c.of);
    for (name, value) in &c.sides[0].args {
        if of.is_some_and(|s| s.param(name).is_some()) {
            w.push("--param".into());
            w.push(format!("{name}={value}"));
        }
    }
    if m.args.iter().any(|(k, _)| k == "seed") {
        w.push("--seed".into());
        w.push(c.seed.to_string());
    }
    w.push("--json".into());
    w
}

/// How a declared trace is named in the audit: its file, or its set's folder and size.
/// The folder of a claims file as given (`.` for a bare file name), which the paths it
/// writes are relative to.
fn claims_folder(file: &str) -> String {
    match std::path::Path::new(file).parent() {
        Some(p) if !p.as_os_str().is_empty() => p.display().to_string(),
        _ => ".".into(),
    }
}

fn trace_path(decl: &crate::claims::TraceDecl) -> String {
    match &decl.set {
        None => normalize(&decl.resolved).display().to_string(),
        Some(files) => {
            analysis::set::set_path(&files.iter().map(|f| normalize(f)).collect::<Vec<_>>())
        }
    }
}

/// A word as a POSIX shell reads it back: bare when safe, else single-quoted.
///
/// A word holding a control character or a bidirectional override (a kernel name with an ESC)
/// is dollar-single-quoted instead (`$'a\x1bb'`, POSIX.1-2024, bash, zsh), its bytes written
/// as `\xHH`: the command then shows no raw control character and still gives the program
/// the same word.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:,".contains(c)) {
        s.to_string()
    } else if s.chars().any(crate::visible::is_hidden) {
        let mut out = String::from("$'");
        for c in s.chars() {
            match c {
                '\\' | '\'' => {
                    out.push('\\');
                    out.push(c);
                }
                c if crate::visible::is_hidden(c) => {
                    for b in c.to_string().bytes() {
                        out.push_str(&format!("\\x{b:02x}"));
                    }
                }
                c => out.push(c),
            }
        }
        out.push('\'');
        out
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Runs the audit of a validated claims file.
pub fn run(set: ClaimSet, progress: &mut dyn FnMut(&str, u64)) -> Audit {
    run_with(set, progress, &Scans::new())
}

/// Every query of a claims file by trace name: its parts' measures and each comparison's two
/// sides.
fn queries_by_trace(set: &ClaimSet) -> BTreeMap<String, Vec<(&Scope, &Measure)>> {
    let mut by_trace: BTreeMap<String, Vec<(&Scope, &Measure)>> = BTreeMap::new();
    for claim in &set.claims {
        for part in &claim.parts {
            let Some(m) = &part.measure else { continue };
            // A comparison runs after its two sides, each an ordinary query of its trace.
            let queries: Vec<&Measure> = match &m.compare {
                Some(c) => c.queries(),
                None => vec![m],
            };
            for q in queries {
                if let Some(scope) = set.scopes.get(&q.scope) {
                    by_trace.entry(scope.trace.clone()).or_default().push((scope, q));
                }
            }
        }
    }
    by_trace
}

/// The one scan a trace's queries need: the rows (a filter) and the tables.
fn scan_of(queries: &[(&Scope, &Measure)]) -> (KernelFilter, Vec<analysis::Table>) {
    let context_scopes = context_scopes_of(queries);
    let filter = union_filter(
        queries
            .iter()
            .filter_map(|(s, m)| Some((*s, analysis::spec(&m.analysis)?, m.params.split.is_some())))
            .chain(context_scopes.iter().map(|(spec, s)| (s, *spec, false))),
    );
    let needs = analysis::needs(
        queries
            .iter()
            .filter_map(|(_, m)| analysis::spec(&m.analysis))
            .chain(context_scopes.iter().map(|(s, _)| *s)),
        queries.iter().any(|(s, _)| s.nvtx.is_some()),
    );
    (filter, needs)
}

/// Scans already made, by a single trace's normalized path: an audit of several claims files
/// over the same traces (`verdict eval`) reads each trace once.
pub type Scans = BTreeMap<PathBuf, Context>;

/// What each single-file trace of a claims file needs read: its normalized path, the rows and
/// the tables (trace sets are read by each audit).
pub fn plan(set: &ClaimSet) -> Vec<(PathBuf, KernelFilter, Vec<analysis::Table>)> {
    let by_trace = queries_by_trace(set);
    set.traces
        .iter()
        .filter(|d| d.set.is_none())
        .map(|d| {
            let queries = by_trace.get(&d.name).cloned().unwrap_or_default();
            let (filter, needs) = scan_of(&queries);
            (normalize(&d.resolved), filter, needs)
        })
        .collect()
}

/// The smallest scan that serves two: the union of their boxes of devices and windows (a box
/// that keeps no rows adds nothing), NCCL kernels anywhere when either keeps them, launch keys
/// for the union of their key boxes, and tables.
pub fn merge_scans(
    a: (KernelFilter, Vec<analysis::Table>),
    b: (KernelFilter, Vec<analysis::Table>),
) -> (KernelFilter, Vec<analysis::Table>) {
    let (devices, bounds) = union_rows((a.0.devices, a.0.bounds), (b.0.devices, b.0.bounds));
    let nccl_anywhere = a.0.nccl_anywhere || b.0.nccl_anywhere;
    // No key box where NVTX is read means every kept row's keys.
    let keys = match (a.0.keys, b.0.keys) {
        (Some(x), Some(y)) => Some(union_rows(x, y)),
        (Some(x), None) if !b.1.contains(&analysis::Table::Nvtx) => Some(x),
        (None, Some(y)) if !a.1.contains(&analysis::Table::Nvtx) => Some(y),
        _ => None,
    };
    let mut needs = a.1;
    for t in b.1 {
        if !needs.contains(&t) {
            needs.push(t);
        }
    }
    (KernelFilter { devices, bounds, nccl_anywhere, keys, nccl_keys: false }, needs)
}

/// [`run`], taking each single trace's scan from `scans` when it is there (it must cover
/// what this file needs: see [`plan`] and [`merge_scans`]).
pub fn run_with(set: ClaimSet, progress: &mut dyn FnMut(&str, u64), scans: &Scans) -> Audit {
    let by_trace = queries_by_trace(&set);
    let sides = side_keys(&set);
    let mut written = Written::default();
    let mut traces = Vec::new();
    for decl in &set.traces {
        let queries = by_trace.get(&decl.name).cloned().unwrap_or_default();
        let (mut entry, ctx) = coverage(decl, load(decl, &queries, scans, progress));
        entry.relative_to = claims_folder(&set.file);
        traces.push(entry);
        let resolved = resolve_windows(&ctx, &queries);
        let plan = TracePlan { decl, queries, ctx, resolved };
        let unique = unique_queries(&set, &plan.queries, &written.evidence);
        let context_scopes = chart_scopes(&set, &plan, &sides.only);
        let (runs, context_runs) = rayon::join(
            || run_queries(&plan, &unique, &sides.names),
            || run_context(&plan, &context_scopes),
        );
        written.record(&plan, unique, runs);
        written.record_context(&plan, &context_scopes, context_runs);
        written.record_sides(&set, &plan);
    }
    compare(&set, &mut written);
    let Written { evidence, ledger, context, .. } = written;
    let results = verdict::judge_all(&set, &evidence);
    let summary = verdict::summarize(&results);
    let misreadings = verdict::misreadings(&set, &results, &evidence);
    let spreads = spreads(&set, &ledger, &context);
    Audit {
        tool: ToolRef::current(),
        claims: set,
        traces,
        ledger,
        context,
        results,
        summary,
        misreadings,
        spreads,
    }
}

/// One trace of the audit: its declaration, the queries that read it, the context loaded
/// from it (or why it could not be read) and its NVTX windows, resolved once per scope.
struct TracePlan<'a> {
    decl: &'a TraceDecl,
    queries: Vec<(&'a Scope, &'a Measure)>,
    ctx: Result<Context, Diagnostic>,
    resolved: ResolvedScopes,
}

/// What the audit has written so far: the ledger, the chart context, the evidence by plan
/// id, and each compared side's evidence over its whole span, for the per-name deltas.
#[derive(Default)]
struct Written {
    evidence: EvidenceMap,
    ledger: Vec<LedgerEntry>,
    context: Vec<LedgerEntry>,
    names: BTreeMap<PlanId, Evidence>,
    /// Each compared side's run, by its plan id: what the experiment check reads.
    sides: BTreeMap<PlanId, crate::trace::SideRun>,
}

/// The keys of comparisons' side queries that need more than their own run.
struct SideKeys {
    /// Sides of comparisons over kernels, nvtx or copies: they also run over each side's
    /// whole span, for the per-name deltas.
    names: Vec<PlanId>,
    /// Sides that no other part reads: they get the comparison's charts, not the per-trace
    /// chart context.
    only: Vec<PlanId>,
}

/// The side keys of every comparison of the file.
fn side_keys(set: &ClaimSet) -> SideKeys {
    let measures = || set.claims.iter().flat_map(|c| &c.parts).filter_map(|p| p.measure.as_ref());
    let compares = || measures().filter_map(|m| m.compare.as_deref());
    let names: Vec<PlanId> = compares()
        .filter(|c| analysis::compare::has_names(&c.of))
        .flat_map(|c| c.queries().into_iter().map(|s| set.plan_id(s)))
        .collect();
    let direct: Vec<PlanId> =
        measures().filter(|m| m.compare.is_none()).map(|m| set.plan_id(m)).collect();
    let only: Vec<PlanId> = compares()
        .flat_map(|c| c.queries().into_iter().map(|s| set.plan_id(s)))
        .filter(|k| !direct.contains(k))
        .collect();
    SideKeys { names, only }
}

/// The context of one trace, from `scans` when it was scanned already, else read with the
/// one scan its queries need (context for charts included: every device in the windows that
/// overlap parts look at); or why it could not be read, with its hint.
fn load(
    decl: &TraceDecl,
    queries: &[(&Scope, &Measure)],
    scans: &Scans,
    progress: &mut dyn FnMut(&str, u64),
) -> Result<Context, Diagnostic> {
    let (filter, needs) = scan_of(queries);
    let scanned = scans.get(&normalize(&decl.resolved)).filter(|_| decl.set.is_none());
    match &decl.set {
        None if scanned.is_some() => {
            let mut ctx = scanned.expect("checked").clone();
            ctx.expected_devices = decl.expect_devices.clone();
            Ok(ctx)
        }
        None => Trace::open(&decl.resolved)
            .and_then(|t| {
                Context::load(&t, &filter, decl.expect_devices.clone(), &needs, &mut |n| {
                    progress(&decl.name, n)
                })
            })
            .map_err(|e| e.diagnostic()),
        Some(files) => {
            let files: Vec<PathBuf> = files.iter().map(|f| normalize(f)).collect();
            analysis::set::load_set(&files, &filter, decl.expect_ranks, &needs, &mut |n| {
                progress(&decl.name, n)
            })
            .map_err(|e| e.diagnostic())
        }
    }
}

/// The trace's entry in the audit, with its coverage or why it could not be read; the
/// context goes on named by the trace's path, or as the error every query of the trace gets.
fn coverage(
    decl: &TraceDecl,
    ctx: Result<Context, Diagnostic>,
) -> (TraceEntry, Result<Context, Diagnostic>) {
    let path = trace_path(decl);
    match ctx {
        Err(e) => {
            let msg = format!("cannot read trace `{path}`: {}", e.message);
            let entry = TraceEntry {
                name: decl.name.clone(),
                path,
                written: decl.path.clone(),
                relative_to: String::new(),
                coverage: None,
                error: Some(msg.clone()),
                hint: e.hints.first().cloned(),
            };
            // Each query of the trace says why; the trace's entry says what to do.
            (entry, Err(Diagnostic::plain(msg)))
        }
        Ok(mut ctx) => {
            if decl.set.is_none() {
                ctx.trace.path = path.clone();
            }
            let coverage = analysis::coverage::run(&Params::new(DeviceSel::All), &ctx).ok();
            let entry = TraceEntry {
                name: decl.name.clone(),
                path,
                written: decl.path.clone(),
                relative_to: String::new(),
                coverage,
                error: None,
                hint: None,
            };
            (entry, Ok(ctx))
        }
    }
}

/// Windows taken from NVTX ranges, resolved once per scope on this trace.
fn resolve_windows(
    ctx: &Result<Context, Diagnostic>,
    queries: &[(&Scope, &Measure)],
) -> ResolvedScopes {
    let mut resolved: ResolvedScopes = BTreeMap::new();
    if let Ok(ctx) = ctx {
        for (scope, _) in queries {
            let Some(w) = &scope.nvtx else { continue };
            if resolved.contains_key(&scope.name) {
                continue;
            }
            let r = ctx
                .resolve_devices(&scope.devices)
                .and_then(|devices| analysis::nvtx::resolve_windows(w, ctx, &devices))
                .map_err(|e| e.diagnostic())
                .map(|rws| {
                    // The scope over the first window (or the span of a set), for charts.
                    let window = match rws.as_slice() {
                        [one] => Some(one.window),
                        _ => None,
                    };
                    (Scope { window, ..(*scope).clone() }, rws)
                });
            resolved.insert(scope.name.clone(), r);
        }
    }
    resolved
}

/// The queries of one trace that have no evidence yet, each once, in file order. An
/// unreadable trace keeps its queries, so that the ledger names each of them, failed.
fn unique_queries<'a>(
    set: &ClaimSet,
    queries: &[(&'a Scope, &'a Measure)],
    evidence: &EvidenceMap,
) -> Vec<(&'a Scope, &'a Measure, PlanId)> {
    let mut unique: Vec<(&Scope, &Measure, PlanId)> = Vec::new();
    for (scope, m) in queries {
        let key = set.plan_id(m);
        if !evidence.contains_key(&key) && !unique.iter().any(|u| u.2 == key) {
            unique.push((*scope, *m, key));
        }
    }
    unique
}

/// The chart context of one trace, over its resolved windows: none when the trace could not
/// be read, and no scope whose NVTX window is a set of windows.
fn chart_scopes(
    set: &ClaimSet,
    plan: &TracePlan,
    sides_only: &[PlanId],
) -> Vec<(&'static analysis::AnalysisSpec, Scope)> {
    let chart_queries: Vec<(&Scope, &Measure)> = plan
        .queries
        .iter()
        .filter(|(_, m)| !sides_only.contains(&set.plan_id(m)))
        .map(|(s, m)| match plan.resolved.get(&s.name) {
            Some(Ok((r, _))) => (r, *m),
            _ => (*s, *m),
        })
        .collect();
    match &plan.ctx {
        Ok(_) => context_scopes_of(&chart_queries)
            .into_iter()
            .filter(|(_, s)| s.nvtx.is_none() || s.window.is_some())
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// A query's run: its parameters and result, and for a compared side over kernels, nvtx or
/// copies the same query over the side's whole span.
type Run = (Params, Result<Evidence, Diagnostic>, Option<(Params, Result<Evidence, Diagnostic>)>);

/// Runs the unique queries of one trace in parallel, their results in their order (`None`
/// for an unknown analysis).
fn run_queries(
    plan: &TracePlan,
    unique: &[(&Scope, &Measure, PlanId)],
    name_sides: &[PlanId],
) -> Vec<Option<Run>> {
    let (ctx, resolved) = (&plan.ctx, &plan.resolved);
    unique
        .par_iter()
        .map(|(scope, m, key)| {
            let mut p = m.params.clone();
            let spec = analysis::spec(&m.analysis)?;
            let result = match (ctx, resolved.get(&scope.name)) {
                (Err(msg), _) => Err(msg.clone()),
                (Ok(_), Some(Err(msg))) => Err(msg.clone()),
                (Ok(ctx), Some(Ok((_, rws)))) => {
                    // One window is reproduced by its seconds, a set by naming its ranges.
                    if let [one] = rws.as_slice() {
                        p.window = Some(one.window);
                    }
                    let w = scope.nvtx.as_ref().expect("resolved scopes have an NVTX window");
                    analysis::run_nvtx_windows(spec, &p, ctx, w, rws).map_err(|e| e.diagnostic())
                }
                (Ok(ctx), None) => analysis::run_split(spec, &p, ctx).map_err(|e| e.diagnostic()),
            };
            // A compared side over kernels, nvtx or copies: the same query over the side's
            // whole span, for the per-name deltas.
            let names = match (ctx, &result, name_sides.contains(key)) {
                (Ok(ctx), Ok(ev), true) => {
                    let whole = analysis::compare::names_params(&m.params, ev);
                    let r = analysis::run_spec(spec, &whole, ctx)
                        .map_err(|e| Diagnostic::plain(e.to_string()));
                    Some((whole, r))
                }
                _ => None,
            };
            Some((p, result, names))
        })
        .collect()
}

/// Runs the chart context of one trace in parallel, its results in its order.
fn run_context(
    plan: &TracePlan,
    context_scopes: &[(&'static analysis::AnalysisSpec, Scope)],
) -> Vec<(Params, Result<Evidence, Diagnostic>)> {
    let Ok(ctx) = &plan.ctx else { return Vec::new() };
    context_scopes
        .par_iter()
        .map(|(spec, scope)| {
            let mut p = Params::new(scope.devices.clone());
            p.window = scope.window;
            p.semantics = scope.semantics;
            if let Some(analysis::ChartContext::Top(n)) = spec.chart_context() {
                p.limit = Some(n);
            }
            let result =
                analysis::run_spec(spec, &p, ctx).map_err(|e| Diagnostic::plain(e.to_string()));
            (p, result)
        })
        .collect()
}

impl Written {
    /// Writes the runs of one trace's unique queries into the ledger and the evidence, each
    /// side's whole-span run into the chart context.
    fn record(
        &mut self,
        plan: &TracePlan,
        unique: Vec<(&Scope, &Measure, PlanId)>,
        runs: Vec<Option<Run>>,
    ) {
        let decl = plan.decl;
        for ((scope, m, key), run) in unique.into_iter().zip(runs) {
            let (Some(spec), Some((p, result, names_run))) = (analysis::spec(&m.analysis), run)
            else {
                continue;
            };
            if let Some((whole, r)) = names_run {
                self.context.push(LedgerEntry::new(
                    key.names(),
                    QueryPlan::of_claim(spec, decl, &whole, None).command_words(),
                    r.clone(),
                ));
                if let Ok(r) = r {
                    self.names.insert(key.clone(), r);
                }
            }
            // A window from NVTX ranges is reproduced by naming them, as the scope does: the
            // command resolves the same window and says so in the same note.
            let words = QueryPlan::of_claim(spec, decl, &p, scope.nvtx.as_ref()).command_words();
            self.ledger.push(LedgerEntry::new(key.clone(), words, result.clone()));
            self.evidence.insert(key, result);
        }
    }

    /// Writes the chart context runs of one trace.
    fn record_context(
        &mut self,
        plan: &TracePlan,
        context_scopes: &[(&'static analysis::AnalysisSpec, Scope)],
        context_runs: Vec<(Params, Result<Evidence, Diagnostic>)>,
    ) {
        for ((spec, scope), (p, result)) in context_scopes.iter().zip(context_runs) {
            self.context.push(LedgerEntry::new(
                PlanId::chart_context(&plan.decl.name, spec.name, &scope.name),
                QueryPlan::of_claim(spec, plan.decl, &p, None).command_words(),
                result,
            ));
        }
    }
}

impl Written {
    /// Records the run of every compared side read from this trace: its files' metadata, and
    /// its devices' processes, kernel names and steps, for the experiment check.
    fn record_sides(&mut self, set: &ClaimSet, plan: &TracePlan) {
        let Ok(ctx) = &plan.ctx else { return };
        let mut files: Option<Vec<Option<crate::trace::RunInfo>>> = None;
        let sides = set
            .claims
            .iter()
            .flat_map(|c| &c.parts)
            .filter_map(|p| p.measure.as_ref()?.compare.as_deref())
            .flat_map(|c| c.queries());
        for side in sides {
            let Some(scope) = set.scopes.get(&side.scope).filter(|s| s.trace == plan.decl.name)
            else {
                continue;
            };
            let key = set.plan_id(side);
            let Some(Ok(ev)) = self.evidence.get(&key) else { continue };
            if self.sides.contains_key(&key) {
                continue;
            }
            // Metadata is read once per trace, from each of its files; a file whose
            // metadata cannot be read is a side the check cannot speak for, not an error.
            let files = files
                .get_or_insert_with(|| {
                    let paths: Vec<PathBuf> = match &plan.decl.set {
                        Some(f) => f.iter().map(|f| normalize(f)).collect(),
                        None => vec![normalize(&plan.decl.resolved)],
                    };
                    crate::trace::run::read_runs(&paths)
                })
                .clone();
            let (sampling, steps) = crate::trace::run::sampling(
                scope.nvtx.is_some(),
                side.params.split.is_some(),
                ev.samples.len(),
            );
            let run = crate::trace::SideRun::new(
                files,
                &ctx.kernels,
                &ev.scope.devices,
                ev.window.requested_ns,
                sampling,
                steps,
            );
            self.sides.insert(key, run);
        }
    }
}

/// Comparisons, over the evidence of their two sides.
fn compare(set: &ClaimSet, written: &mut Written) {
    for claim in &set.claims {
        for part in &claim.parts {
            let Some(m) = &part.measure else { continue };
            let Some(c) = &m.compare else { continue };
            let key = set.plan_id(m);
            if written.evidence.contains_key(&key) {
                continue;
            }
            let result = if c.devices.is_empty() {
                compare_sides(set, written, c, &c.sides, &c.runs)
            } else {
                // One comparison per device, each judged; the first carries them all.
                let none = [Vec::new(), Vec::new()];
                c.devices
                    .iter()
                    .map(|(d, sides)| compare_sides(set, written, c, sides, &none).map(|e| (*d, e)))
                    .collect::<Result<Vec<_>, Diagnostic>>()
                    .map(|per| {
                        let first = per[0].1.clone();
                        analysis::compare::with_devices(first, per)
                    })
            };
            // The runs behind the two sides, for the experiment check: what each side's
            // traces say about their machine, software and capture (over runs, the first's).
            let run_key = |k: usize| match c.devices.first() {
                Some((_, sides)) => set.plan_id(&sides[k]),
                None => set.plan_id(c.runs[k].first().unwrap_or(&c.sides[k])),
            };
            let result = result.map(|mut ev| {
                if let (Some(ra), Some(rb), Some(analysis::values::Values::Compare(v))) = (
                    written.sides.get(&run_key(0)),
                    written.sides.get(&run_key(1)),
                    ev.values.as_mut(),
                ) {
                    v.runs = Some(analysis::compare::Runs { a: ra.clone(), b: rb.clone() });
                }
                ev
            });
            written.ledger.push(LedgerEntry::new(
                key.clone(),
                compare_words(set, m, c),
                result.clone(),
            ));
            written.evidence.insert(key, result);
        }
    }
}

/// One comparison over the evidence of its sides (each one query, or one per run).
fn compare_sides(
    set: &ClaimSet,
    written: &Written,
    c: &crate::claims::Compare,
    sides: &[Measure; 2],
    runs: &[Vec<Measure>; 2],
) -> Result<Evidence, Diagnostic> {
    let side = |k: usize, label: &str| -> Result<Vec<&Evidence>, Diagnostic> {
        let queries: Vec<&Measure> =
            if runs[k].is_empty() { vec![&sides[k]] } else { runs[k].iter().collect() };
        queries
            .into_iter()
            .map(|q| match written.evidence.get(&set.plan_id(q)) {
                Some(Ok(e)) => Ok(e),
                Some(Err(e)) => Err(Diagnostic {
                    message: format!("side {label}: {}", e.message),
                    hints: e.hints.clone(),
                }),
                None => Err(Diagnostic::plain("a side was not measured")),
            })
            .collect()
    };
    let (a, b) = (side(0, "A")?, side(1, "B")?);
    // Over runs, the per-name deltas of the first run of each side.
    let named = |k: usize| runs[k].first().unwrap_or(&sides[k]);
    let [ka, kb] = [set.plan_id(named(0)), set.plan_id(named(1))];
    let names = match (written.names.get(&ka), written.names.get(&kb)) {
        (Some(x), Some(y)) => Some([x, y]),
        _ => None,
    };
    let of = analysis::spec(&c.of).expect("validated");
    let req = analysis::compare::Request {
        of,
        metric_text: &c.metric_text,
        metric: &sides[0].value,
        labels: [&sides[0].scope, &sides[1].scope],
        seed: c.seed,
        names,
    };
    analysis::compare::run_sides(&a, &b, &req).map_err(|e| e.diagnostic())
}

/// NVTX windows resolved per scope name: the scope with its window, and every window.
type ResolvedScopes =
    BTreeMap<String, Result<(Scope, Vec<analysis::nvtx::ResolvedWindow>), Diagnostic>>;

/// The chart queries of one trace, as (analysis, scope), as each analysis declares them:
/// each distinct window of a per-device analysis over all devices, and each scope of a
/// summed analysis without its name filter.
fn context_scopes_of(
    queries: &[(&Scope, &Measure)],
) -> Vec<(&'static analysis::AnalysisSpec, Scope)> {
    let mut out: Vec<(&'static analysis::AnalysisSpec, Scope)> = Vec::new();
    for (scope, m) in queries {
        let Some(spec) = analysis::spec(&m.analysis) else { continue };
        let devices = match spec.chart_context() {
            Some(analysis::ChartContext::AllDevices) => DeviceSel::All,
            Some(analysis::ChartContext::Top(_)) => scope.devices.clone(),
            None => continue,
        };
        let same = |(n, o): &(&'static analysis::AnalysisSpec, Scope)| {
            n.name == spec.name
                && o.window == scope.window
                && o.semantics == scope.semantics
                && o.devices == devices
        };
        if !out.iter().any(same) {
            out.push((
                spec,
                Scope {
                    name: format!("{}:{}", spec.name, scope.name),
                    devices,
                    ..(*scope).clone()
                },
            ));
        }
    }
    out
}

/// The smallest scan that serves every query of one trace, each a scope read by an
/// analysis, split in windows or not: the box of devices and bounds that holds every query's
/// rows, except the cross-rank matching of whole-trace NCCL kernels, which keeps only NCCL
/// kernels wherever they are; and the box whose rows need their launch keys (NVTX
/// attribution, NVTX windows).
fn union_filter<'a>(
    queries: impl Iterator<Item = (&'a Scope, &'static analysis::AnalysisSpec, bool)>,
) -> KernelFilter {
    let (mut rows, mut keys) = (NO_ROWS, None);
    let mut nccl_anywhere = false;
    for (scope, spec, split) in queries {
        // Collectives are matched over every NCCL kernel of a rank, whatever the window.
        nccl_anywhere |= spec.needs_nccl_anywhere();
        if !spec.reads_only_nccl(scope.window.is_none() && scope.nvtx.is_none() && !split) {
            rows = union_rows(rows, box_of(scope));
        }
        if spec.needs.contains(&analysis::Table::Nvtx) || scope.nvtx.is_some() {
            let mut b = box_of(scope);
            // Collectives are matched by communicator over every NCCL kernel of a rank: the
            // launches of all of them, whatever the window.
            if spec.needs_nccl_anywhere() {
                b.1 = None;
            }
            keys = Some(union_rows(keys.unwrap_or(NO_ROWS), b));
        }
    }
    let (devices, bounds) = rows;
    KernelFilter { devices, bounds, nccl_anywhere, keys, nccl_keys: false }
}

/// The rows a scope reads: its devices over its window, or over the whole trace when it has
/// none or takes it from NVTX ranges (known only once they are read).
fn box_of(s: &Scope) -> RowBox {
    let devices = match &s.devices {
        DeviceSel::Set(v) => {
            let mut v = v.clone();
            v.sort_unstable();
            v.dedup();
            Some(v)
        }
        DeviceSel::All => None,
    };
    (devices, s.window.filter(|_| s.nvtx.is_none()).map(|w| (w.start_ns, w.end_ns)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scope::{Semantics, Window};

    fn scope(devices: DeviceSel, window: Option<(i64, i64)>) -> Scope {
        Scope {
            name: "s".into(),
            trace: "A".into(),
            window: window.map(|(start_ns, end_ns)| Window { start_ns, end_ns }),
            window_text: None,
            nvtx: None,
            devices,
            semantics: Semantics::Contain,
        }
    }

    fn spec(name: &str) -> &'static analysis::AnalysisSpec {
        analysis::spec(name).unwrap()
    }

    /// A Day 26-style file: overlap of one device in a window, a kernel count of every device
    /// in it, cross-rank skew over the whole trace, NVTX attribution of one device. The scan
    /// keeps the window of every device and NCCL kernels anywhere, launch keys in the NVTX
    /// query's box only (skew's ties to communicators read the keys of NCCL kernels alone,
    /// and only from a trace that records such ties: decided when the trace is loaded); not
    /// every row of the trace.
    #[test]
    fn whole_trace_skew_keeps_nccl_kernels_not_every_row() {
        let one = scope(DeviceSel::Set(vec![3]), Some((60, 70)));
        let all = scope(DeviceSel::All, Some((60, 70)));
        let whole = scope(DeviceSel::All, None);
        let f = union_filter(
            [
                (&one, spec("overlap"), false),
                (&all, spec("kernels"), false),
                (&whole, spec("nccl-skew"), false),
                (&one, spec("nvtx"), false),
            ]
            .into_iter(),
        );
        assert_eq!(f.devices, None);
        assert_eq!(f.bounds, Some((60, 70)));
        assert!(f.nccl_anywhere);
        assert_eq!(f.keys, Some((Some(vec![3]), Some((60, 70)))));
        assert!(!f.nccl_keys);
        // Skew in a window reads that window like any query, and every NCCL kernel besides
        // (a collective is matched over the whole trace, so a window cannot shift the
        // pairing); other analyses over the whole trace read every row.
        let f = union_filter([(&all, spec("nccl-skew"), false)].into_iter());
        assert_eq!(
            (f.devices, f.bounds, f.nccl_anywhere, f.keys),
            (None, Some((60, 70)), true, None)
        );
        let f = union_filter([(&whole, spec("overlap"), false)].into_iter());
        assert_eq!((f.devices, f.bounds, f.nccl_anywhere), (None, None, false));
        let f = union_filter([(&whole, spec("nccl-skew"), true)].into_iter());
        assert_eq!((f.devices, f.bounds, f.nccl_anywhere), (None, None, true));
        // Only skew: no box at all.
        let f = union_filter([(&whole, spec("nccl-skew"), false)].into_iter());
        assert_eq!((f.devices, f.bounds, f.nccl_anywhere), (Some(vec![]), None, true));
    }

    /// Two files' scans merge into one that serves both: an empty box adds nothing, NCCL
    /// anywhere and key boxes unite.
    #[test]
    fn merged_scans_serve_both() {
        let a = KernelFilter { devices: Some(vec![]), nccl_anywhere: true, ..Default::default() };
        let b = KernelFilter {
            devices: Some(vec![3]),
            bounds: Some((60, 70)),
            keys: Some((Some(vec![3]), Some((60, 70)))),
            ..Default::default()
        };
        let c = KernelFilter {
            devices: Some(vec![1]),
            bounds: Some((50, 65)),
            keys: Some((Some(vec![1]), Some((55, 65)))),
            ..Default::default()
        };
        let nvtx = vec![analysis::Table::Nvtx];
        let (m, needs) = merge_scans((a, vec![]), (b, nvtx.clone()));
        assert_eq!(
            (m.devices.clone(), m.bounds, m.nccl_anywhere),
            (Some(vec![3]), Some((60, 70)), true)
        );
        assert_eq!(needs, nvtx);
        let (m, _) = merge_scans((m, needs), (c, nvtx.clone()));
        assert_eq!((m.devices, m.bounds), (Some(vec![1, 3]), Some((50, 70))));
        assert_eq!(m.keys, Some((Some(vec![1, 3]), Some((55, 70)))));
        // A side that reads NVTX without a key box reads every kept row's keys.
        let all_keys = KernelFilter::default();
        let (m, _) = merge_scans(
            (all_keys, nvtx.clone()),
            (KernelFilter { keys: Some((None, None)), ..Default::default() }, nvtx),
        );
        assert_eq!(m.keys, None);
    }
}

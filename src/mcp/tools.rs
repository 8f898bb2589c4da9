//! The tools of `verdict mcp`: their schemas, and each call run through the functions the
//! commands use (`inspect --json`, `query --json`, `check --json`, `schema`, the registry of
//! `analyses`, the UI strings).
//!
//! A tool reads only paths its roots allow and never writes. A tool's failure (bad arguments,
//! a path outside the roots, a claims document with problems, a trace that cannot be read)
//! is a result with `isError`, its message, hints and, for claims, each problem's line and
//! column; never a protocol error.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use clap::Parser as _;
use serde_json::{Map, Value, json};

use super::roots::Roots;
use super::{args, cap};
use crate::analysis::{self, ANALYSES, AnalysisSpec};

/// The tools, in the order `tools/list` gives them.
pub const NAMES: &[&str] = &["inspect", "analyses", "query", "check", "schema", "explain"];

/// A tool's failure: what went wrong, what to do, and where in a claims document.
#[derive(Debug)]
pub struct ToolError {
    /// What went wrong.
    pub message: String,
    /// What to do about it.
    pub hints: Vec<String>,
    /// For a claims document: each problem with its file, line and column.
    pub problems: Vec<Value>,
}

impl ToolError {
    /// An error with at most one hint.
    pub fn new(message: impl Into<String>, hint: Option<String>) -> ToolError {
        ToolError {
            message: message.into(),
            hints: hint.into_iter().collect(),
            problems: Vec::new(),
        }
    }

    /// An error of the library, its causes on one line, its hints kept.
    fn of(err: &anyhow::Error) -> ToolError {
        if let Some(e) = err.downcast_ref::<crate::claims::ClaimsError>() {
            return ToolError::claims(e);
        }
        ToolError {
            message: crate::diag::message(err),
            hints: crate::diag::hints(err),
            problems: Vec::new(),
        }
    }

    /// A claims document's problems, each at its line and column.
    fn claims(e: &crate::claims::ClaimsError) -> ToolError {
        ToolError {
            message: e.to_string(),
            hints: Vec::new(),
            problems: e
                .problems
                .iter()
                .map(|p| {
                    json!({
                        "file": e.file,
                        "line": p.line,
                        "column": p.column,
                        "message": p.message,
                        "hint": p.hint,
                    })
                })
                .collect(),
        }
    }
}

/// What a tool returns: the structured result and a short summary.
struct Output {
    structured: Value,
    summary: String,
    /// A result that is complete but reports a failure (a trace the audit could not read).
    failed: bool,
}

type RunFn = fn(&Map<String, Value>, &Roots) -> Result<Output, ToolError>;

/// A tool: its name, what it is for, its schemas and its code.
struct Tool {
    name: &'static str,
    title: &'static str,
    description: String,
    input: Value,
    output: Value,
    run: RunFn,
}

fn tools() -> &'static [Tool] {
    static TOOLS: OnceLock<Vec<Tool>> = OnceLock::new();
    TOOLS.get_or_init(|| {
        vec![
            Tool {
                name: "inspect",
                title: "Inspect a trace",
                description: "What a trace holds: devices with kernels and those expected that ran none, streams, processes, time range on the trace's clock, the schema, NVTX ranges per process, copies per device. The same as `verdict inspect TRACE --json`. Start here: windows in claims are seconds on this clock.".into(),
                input: object(
                    &[
                        ("trace", trace_prop()),
                        ("expect-devices", string("Devices the job should have (0-7); those without kernels are reported missing")),
                        ("expect-ranks", json!({"type": "integer", "minimum": 1, "description": "Ranks a trace set should have"})),
                        ("set", boolean("Read the trace as a set of one file (its devices numbered as ranks)")),
                        ("max-rows", max_rows()),
                        ("max-bytes", max_bytes()),
                    ],
                    &["trace"],
                ),
                output: with_truncation(inspect_schema()),
                run: inspect,
            },
            Tool {
                name: "analyses",
                title: "List the analyses",
                description: "Every registered analysis: what it measures, its scope rule (one device, a summed device set, ranks, the whole trace), its parameters with their help and defaults, and the fields a claim's formula may read, each with its unit, kind and definition. The same registry `verdict analyses` prints.".into(),
                input: object(&[], &[]),
                output: analyses_schema(),
                run: analyses,
            },
            Tool {
                name: "query",
                title: "Run one analysis",
                description: format!(
                    "Run one analysis over a trace (or a trace set) and return its evidence, with window, devices and denominators stated: the same as `verdict query ANALYSIS TRACE ... --json`, the options named as on the command line. Analyses: {}. `compare` takes `of`, `metric`, `a`, `b` (KEY=VALUE lists, as `verdict query compare`) instead of a trace. `evidence.notes` says what qualifies the numbers.",
                    query_names().join(", ")
                ),
                input: query_input(),
                output: with_truncation(crate::audit::query_evidence_schema()),
                run: query,
            },
            Tool {
                name: "check",
                title: "Judge a claims document",
                description: "Judge a claims document against its traces: gates R1-R4 per part (window, population, metric and denominator, aggregation and units) and a verdict per claim. Give `claims` (a path) or `yaml` (the document's text; its relative trace paths are read from `dir`, default the first root). Returns the evidence ledger of `verdict check --json`; a document with problems is an error naming each problem's line and column.".into(),
                input: check_input(),
                output: with_truncation(crate::audit::evidence_schema()),
                run: check,
            },
            Tool {
                name: "schema",
                title: "JSON Schema of claims or eval files, or of the evidence",
                description: "The JSON Schema of claims files (`what: claims`), eval files (`what: eval`) or the evidence ledger that `check` returns (`what: evidence`), as `verdict schema` prints it; with `languages`, every text of a claims or eval file must be given in each of them.".into(),
                input: object(
                    &[
                        ("what", json!({"type": "string", "enum": ["claims", "eval", "evidence"], "description": "Which format"})),
                        ("languages", json!({"type": "array", "items": {"type": "string", "enum": crate::claims::LANGUAGES}, "description": "Languages every text must be given in"})),
                    ],
                    &["what"],
                ),
                output: json!({
                    "type": "object",
                    "required": ["what", "schema"],
                    "properties": {
                        "what": {"type": "string", "enum": ["claims", "eval", "evidence"]},
                        "schema": {"type": "object"},
                    },
                }),
                run: schema,
            },
            Tool {
                name: "explain",
                title: "Explain a gate or rule",
                description: "The text of a gate (R1-R6) or of any key a verdict, gate finding, rule or note carries (`gate.r1.window_differs`, `claim.supported`, `verdict.unverifiable`), in English or Traditional Chinese; give the finding's `args` to have them filled in.".into(),
                input: object(
                    &[
                        ("key", string("A gate (R1) or a key from a finding (gate.r2.devices_differ)")),
                        ("lang", json!({"type": "string", "enum": ["en", "zh-TW"], "description": "The language (default en)"})),
                        ("args", json!({"type": "object", "description": "The finding's arguments, to fill its placeholders"})),
                    ],
                    &["key"],
                ),
                output: json!({
                    "type": "object",
                    "required": ["key", "lang", "text", "template", "placeholders"],
                    "properties": {
                        "key": {"type": "string"},
                        "lang": {"type": "string", "enum": ["en", "zh-TW"]},
                        "text": {"type": "string"},
                        "template": {"type": "string"},
                        "placeholders": {"type": "array", "items": {"type": "string"}},
                        "gate": {
                            "type": "object",
                            "required": ["id", "name", "legend"],
                            "properties": {
                                "id": {"type": "string"},
                                "name": {"type": "string"},
                                "legend": {"type": "string"},
                            },
                        },
                    },
                }),
                run: explain,
            },
        ]
    })
}

/// Whether the tool reads a path (and so needs the roots).
pub fn reads_paths(name: &str) -> bool {
    matches!(name, "inspect" | "query" | "check")
}

/// The `tools` of `tools/list`.
pub fn list() -> Vec<Value> {
    tools()
        .iter()
        .map(|t| {
            json!({
                "name": t.name,
                "title": t.title,
                "description": t.description,
                "inputSchema": t.input,
                "outputSchema": t.output,
                "annotations": {
                    "title": t.title,
                    "readOnlyHint": true,
                    "destructiveHint": false,
                    "idempotentHint": true,
                    "openWorldHint": false,
                },
            })
        })
        .collect()
}

/// Calls the tool `name` (None when there is none): its arguments checked against its input
/// schema, then run; a failure is a result with `isError`.
pub fn call(name: &str, arguments: &Map<String, Value>, roots: &Roots) -> Option<Value> {
    // Every file the call opens, wherever in the code, is checked against its roots then.
    let _confined = crate::trace::open::confine(&roots.all());
    let tool = tools().iter().find(|t| t.name == name)?;
    let result = args::check(&Value::Object(arguments.clone()), &tool.input)
        .map_err(|e| {
            ToolError::new(
                format!("{name}: {e}"),
                Some("tools/list gives each tool's input schema".into()),
            )
        })
        .and_then(|()| {
            // A defect must not end the server: the call fails, the next one is served.
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (tool.run)(arguments, roots)))
                .unwrap_or_else(|_| {
                    Err(ToolError::new(
                        format!("{name}: internal error (a defect in verdict; please report it)"),
                        None,
                    ))
                })
        });
    Some(match result {
        Ok(out) => json!({
            "content": [{"type": "text", "text": out.summary}],
            "structuredContent": out.structured,
            "isError": out.failed,
        }),
        Err(e) => {
            let mut text = format!("error: {}", e.message);
            for h in &e.hints {
                text += &format!("\n  hint: {h}");
            }
            let mut error = json!({"message": e.message, "hints": e.hints});
            if !e.problems.is_empty() {
                error["problems"] = Value::Array(e.problems);
            }
            json!({
                "content": [{"type": "text", "text": text}],
                "structuredContent": {"error": error},
                "isError": true,
            })
        }
    })
}

// ---- inspect ----

fn inspect(a: &Map<String, Value>, roots: &Roots) -> Result<Output, ToolError> {
    let (traces, set) = trace_args(a, roots)?;
    let mut argv = vec!["verdict".to_string(), "inspect".into()];
    argv.extend(traces.iter().map(|t| t.display().to_string()));
    if set || flag(a, "set") {
        argv.push("--set".into());
    }
    push_options(&mut argv, a, &["expect-devices", "expect-ranks"]);
    argv.push("--json".into());
    let crate::cli::Command::Inspect(args) = parse(&argv)? else {
        return Err(ToolError::new("not an inspect command", None));
    };
    let (trace, ctx) = crate::inspect::load(&args).map_err(|e| ToolError::of(&e))?;
    let v = crate::inspect::json(trace.as_ref(), &ctx).map_err(|e| ToolError::of(&e))?;
    let summary = evidence_summary(&v);
    capped(v, summary, a, false)
}

// ---- analyses ----

fn analyses(_: &Map<String, Value>, _: &Roots) -> Result<Output, ToolError> {
    let list: Vec<Value> = ANALYSES
        .iter()
        .chain(analysis::DERIVED)
        .map(|s| {
            json!({
                "name": s.name,
                "summary": s.summary,
                "query": s.is_query(),
                "scope": serde_json::to_value(s.scope).unwrap_or(Value::Null),
                "parameters": s.params.iter().filter(|p| served(p)).map(|p| json!({
                    "name": p.name,
                    "value_name": p.value_name,
                    "help": p.help,
                    "default": p.default,
                    "conflicts": p.conflicts,
                })).collect::<Vec<_>>(),
                "fields": s.fields.iter().map(|f| json!({
                    "name": f.name,
                    "unit": f.unit.as_str(),
                    "kind": f.kind.key(),
                    "definition": f.definition,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    let names: Vec<&str> = ANALYSES.iter().chain(analysis::DERIVED).map(|s| s.name).collect();
    Ok(Output {
        summary: format!("{} analyses: {}", names.len(), names.join(", ")),
        structured: json!({ "analyses": list }),
        failed: false,
    })
}

fn analyses_schema() -> Value {
    json!({
        "type": "object",
        "required": ["analyses"],
        "properties": {
            "analyses": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["name", "summary", "query", "scope", "parameters", "fields"],
                    "properties": {
                        "name": {"type": "string"},
                        "summary": {"type": "string"},
                        "query": {"type": "boolean"},
                        "scope": {"type": "string", "enum": ["per_device", "summed", "ranks", "whole_trace"]},
                        "parameters": {"type": "array", "items": {
                            "type": "object",
                            "required": ["name", "value_name", "help", "default", "conflicts"],
                            "properties": {
                                "name": {"type": "string"},
                                "value_name": {"type": "string"},
                                "help": {"type": "string"},
                                "default": {"type": ["string", "null"]},
                                "conflicts": {"type": "array", "items": {"type": "string"}},
                            },
                        }},
                        "fields": {"type": "array", "items": {
                            "type": "object",
                            "required": ["name", "unit", "kind", "definition"],
                            "properties": {
                                "name": {"type": "string"},
                                "unit": {"type": "string"},
                                "kind": {"type": "string"},
                                "definition": {"type": "string"},
                            },
                        }},
                    },
                },
            },
        },
    })
}

// ---- query ----

/// The analyses `query` runs: every analysis with a query of its own, and `compare`.
fn query_specs() -> Vec<&'static AnalysisSpec> {
    ANALYSES.iter().filter(|s| s.is_query()).chain(analysis::DERIVED).collect()
}

fn query_names() -> Vec<&'static str> {
    query_specs().iter().map(|s| s.name).collect()
}

/// Whether an analysis parameter is offered to agents. `engine` and `cluster` are not: they
/// start a process or reach a network address (a Dask scheduler), and the evidence is the same
/// without them.
fn served(p: &analysis::Param) -> bool {
    p.name != analysis::ENGINE.name && p.name != analysis::CLUSTER.name
}

/// The options every analysis but `compare` takes, as on the command line.
fn common_query_props() -> Vec<(&'static str, Value)> {
    vec![
        ("trace", trace_prop()),
        (
            "window",
            string(
                "Time window START:END in seconds on the trace's clock, parsed exactly (39.964:46.123); without it the whole trace",
            ),
        ),
        (
            "nvtx-window",
            string(
                "Take the window from the NVTX range NAME (`*` matches any text) on the processes of the devices",
            ),
        ),
        (
            "nvtx-index",
            string(
                "Which matching range, from 0 in start order (N, A-B or all: one sample per window)",
            ),
        ),
        (
            "nvtx-on",
            json!({"type": "string", "enum": ["cpu", "gpu"], "description": "cpu: the range itself; gpu: the span of the kernels launched inside it (on a PyTorch profiler trace, the GPU projection Kineto recorded for it, where it has one)"}),
        ),
        ("nvtx-domain", string("Only ranges of this NVTX domain, by id or by name")),
        (
            "split",
            json!({"type": "integer", "minimum": 2, "maximum": analysis::MAX_SPLITS, "description": "Run over N equal windows, one sample each"}),
        ),
        (
            "semantics",
            json!({"type": "string", "enum": ["clip", "contain"], "description": "clip (default): kernels intersecting the window, clipped, over the window length; contain: kernels fully inside, over their span"}),
        ),
        (
            "expect-devices",
            string(
                "Devices the job should have (0-7); disclosed as missing when they ran no kernel",
            ),
        ),
        (
            "expect-ranks",
            json!({"type": "integer", "minimum": 1, "description": "Ranks a trace set should have"}),
        ),
        ("set", boolean("Read the traces as a set even when they are one file")),
        ("device", json!({"type": "integer", "description": "One device (nsys deviceId)"})),
        ("devices", string("A device set, e.g. 1-7 or 0,2,4-6")),
        ("all-devices", boolean("Every device with kernels")),
    ]
}

/// The options of `compare`.
fn compare_props() -> Vec<(&'static str, Value)> {
    let pairs = |d: &str| json!({"type": "array", "items": {"type": "string"}, "description": d});
    vec![
        (
            "of",
            json!({"type": "string", "enum": analysis::comparable_names().split(", ").collect::<Vec<_>>(), "description": "The analysis each side runs"}),
        ),
        (
            "metric",
            string(
                "A formula over its fields, evaluated on each window: total_ns, 'idle_ns / total_ns', wait_share",
            ),
        ),
        (
            "a",
            pairs(
                "Side A as KEY=VALUE: trace=PATH (repeat for a set), label=NAME, devices=LIST, window=START:END, nvtx=NAME, index=N|A-B|all, split=N, runs=true ...",
            ),
        ),
        ("b", pairs("Side B, with the same keys")),
        ("param", pairs("A parameter of the compared analysis for both sides, NAME=VALUE")),
        (
            "seed",
            json!({"type": "integer", "minimum": 0, "description": "The bootstrap's seed (disclosed in the evidence)"}),
        ),
    ]
}

/// `query`'s input: the analysis, the shared options, every analysis's own parameters, each
/// allowed only with its analysis.
fn query_input() -> Value {
    let specs = query_specs();
    let mut props: Vec<(String, Value)> = vec![(
        "analysis".into(),
        json!({"type": "string", "enum": query_names(), "description": "The analysis to run"}),
    )];
    props.extend(common_query_props().into_iter().map(|(k, v)| (k.to_string(), v)));
    props.extend(compare_props().into_iter().map(|(k, v)| (k.to_string(), v)));
    // Each analysis's own parameters; one name may serve several analyses.
    let mut own: Vec<(String, Vec<String>)> = Vec::new();
    for s in &specs {
        for p in s.params.iter().filter(|p| served(p)) {
            let line = format!("{}: {}", s.name, p.help);
            match own.iter_mut().find(|(n, _)| n == p.name) {
                Some((_, lines)) => lines.push(line),
                None => own.push((p.name.to_string(), vec![line])),
            }
        }
    }
    for (name, lines) in &own {
        props.push((name.clone(), string(&lines.join("; "))));
    }
    props.push(("max-rows".into(), max_rows()));
    props.push(("max-bytes".into(), max_bytes()));
    let common: Vec<&str> = common_query_props().iter().map(|(k, _)| *k).collect();
    let compare: Vec<&str> = compare_props().iter().map(|(k, _)| *k).collect();
    let conditions: Vec<Value> = specs
        .iter()
        .map(|s| {
            let is_compare = s.name == analysis::compare::SPEC.name;
            let mut forbidden: Map<String, Value> = Map::new();
            for (name, _) in &own {
                if !s.params.iter().any(|p| p.name == name && served(p)) {
                    forbidden.insert(name.clone(), Value::Bool(false));
                }
            }
            let (not_here, required): (&[&str], Vec<&str>) = if is_compare {
                (&common, vec!["of", "metric", "a", "b"])
            } else {
                (&compare, vec!["trace"])
            };
            for k in not_here {
                forbidden.insert(k.to_string(), Value::Bool(false));
            }
            json!({
                "if": {"properties": {"analysis": {"const": s.name}}},
                "then": {"properties": forbidden, "required": required},
            })
        })
        .collect();
    let mut schema = object_owned(props, &["analysis"]);
    schema["allOf"] = Value::Array(conditions);
    schema
}

fn query(a: &Map<String, Value>, roots: &Roots) -> Result<Output, ToolError> {
    let name = a.get("analysis").and_then(Value::as_str).unwrap_or_default();
    let spec = analysis::spec(name)
        .ok_or_else(|| ToolError::new(format!("no analysis `{name}`"), None))?;
    let mut argv = vec!["verdict".to_string(), "query".into(), spec.name.into()];
    if spec.name == analysis::compare::SPEC.name {
        for k in ["of", "metric"] {
            if let Some(v) = a.get(k).and_then(Value::as_str) {
                argv.push(format!("--{k}={v}"));
            }
        }
        // The sides and parameters are parsed by the command line's own parser first, so a
        // key is checked as the command will read it (`" trace"` is `trace` there).
        let mut raw = argv.clone();
        for side in ["a", "b"] {
            for pair in strings(a, side) {
                raw.extend([format!("--{side}"), pair]);
            }
        }
        for p in strings(a, "param") {
            raw.extend(["--param".into(), p]);
        }
        raw.extend(["--seed".into(), "0".into()]);
        let crate::cli::Command::Query(parsed) = parse(&raw)? else {
            return Err(ToolError::new("not a query command", None));
        };
        let Some(c) = parsed.compare else {
            return Err(ToolError::new("not a comparison", None));
        };
        // Only the parameters served to agents: `engine` starts a process or reaches an
        // address, and is not a parameter a tool takes.
        let of = analysis::spec(&c.of);
        for (k, _) in &c.params {
            if !of.is_some_and(|s| s.params.iter().any(|p| p.name == k && served(p))) {
                let names: Vec<&str> = of
                    .map(|s| s.params.iter().filter(|p| served(p)).map(|p| p.name).collect())
                    .unwrap_or_default();
                return Err(ToolError::new(
                    format!("`{k}` is not a parameter this tool takes for `{}`", c.of),
                    Some(if names.is_empty() {
                        format!("`{}` takes no parameters here", c.of)
                    } else {
                        format!("parameters: {}", names.join(", "))
                    }),
                ));
            }
        }
        for (side, pairs) in [("a", &c.a), ("b", &c.b)] {
            for (k, v) in pairs {
                // A side's traces are paths like any other: inside the roots.
                if k == "trace" {
                    let (files, _) = roots.expand(v)?;
                    for f in files {
                        argv.extend([format!("--{side}"), format!("trace={}", f.display())]);
                    }
                } else {
                    argv.extend([format!("--{side}"), format!("{k}={v}")]);
                }
            }
        }
        for (k, v) in &c.params {
            argv.extend(["--param".into(), format!("{k}={v}")]);
        }
        if let Some(seed) = a.get("seed") {
            argv.extend(["--seed".into(), seed.to_string()]);
        }
    } else {
        let (traces, set) = trace_args(a, roots)?;
        argv.extend(traces.iter().map(|t| t.display().to_string()));
        // A glob that matched one file is still a set, as on the command line.
        if (set && traces.len() == 1) || flag(a, "set") {
            argv.push("--set".into());
        }
        let mut names: Vec<&str> = common_query_props()
            .iter()
            .map(|(k, _)| *k)
            .filter(|k| !matches!(*k, "trace" | "set"))
            .collect();
        names.extend(spec.params.iter().filter(|p| served(p)).map(|p| p.name));
        push_options(&mut argv, a, &names);
    }
    argv.push("--json".into());
    let crate::cli::Command::Query(q) = parse(&argv)? else {
        return Err(ToolError::new("not a query command", None));
    };
    // Whatever the words, the parsed command names no engine: it would start a process.
    let engine = analysis::ENGINE.name;
    let runs_elsewhere = |n: &str| n == engine || n == analysis::CLUSTER.name;
    if q.params.iter().any(|(n, _)| runs_elsewhere(n))
        || q.compare.as_ref().is_some_and(|c| c.params.iter().any(|(n, _)| runs_elsewhere(n)))
    {
        return Err(ToolError::new(
            format!("`{engine}` is not a parameter this tool takes"),
            Some("the tools run every analysis in process; `verdict query --engine` is the command line's".into()),
        ));
    }
    let ev = crate::plan::evidence(&q).map_err(|e| ToolError::of(&e))?;
    let v = serde_json::to_value(&ev).map_err(|e| ToolError::new(e.to_string(), None))?;
    let summary = evidence_summary(&v);
    capped(v, summary, a, false)
}

// ---- check ----

fn check_input() -> Value {
    let mut s = object(
        &[
            ("claims", string("Path of a claims file (YAML), inside a root")),
            ("yaml", string("A claims document's text (YAML)")),
            (
                "dir",
                string(
                    "For `yaml`: the folder its relative trace paths are read from (default: the first root)",
                ),
            ),
            ("max-rows", max_rows()),
            ("max-bytes", max_bytes()),
        ],
        &[],
    );
    s["oneOf"] = json!([
        {"required": ["claims"], "properties": {"dir": false}},
        {"required": ["yaml"], "properties": {"claims": false}},
    ]);
    s
}

fn check(a: &Map<String, Value>, roots: &Roots) -> Result<Output, ToolError> {
    let set = match (a.get("claims").and_then(Value::as_str), a.get("yaml").and_then(Value::as_str))
    {
        (Some(path), _) => {
            let path = roots.resolve(path)?;
            crate::claims::load(&path).map_err(|e| ToolError::claims(&e))?
        }
        (None, Some(text)) => {
            let dir = match a.get("dir").and_then(Value::as_str) {
                Some(d) => roots.resolve(d)?,
                None => roots.resolve(".")?,
            };
            // The document has no file: it is named `<inline>` in every message.
            let name = "<inline>";
            let mut set =
                crate::claims::load::load_str(text, &dir.join(name)).map_err(|mut e| {
                    e.file = name.into();
                    ToolError::claims(&e)
                })?;
            set.file = name.into();
            set
        }
        (None, None) => return Err(ToolError::new("give `claims` or `yaml`", None)),
    };
    // Every file the audit would open must lie inside a root, before any is opened.
    for t in &set.traces {
        let files: Vec<&Path> = match &t.set {
            Some(files) => files.iter().map(PathBuf::as_path).collect(),
            None => vec![t.resolved.as_path()],
        };
        for f in files {
            roots.check(f).map_err(|e| ToolError {
                message: format!("trace `{}`: {}", t.name, e.message),
                ..e
            })?;
        }
    }
    let audit = crate::audit::run(set, &mut |_, _| {});
    let unreadable: Vec<String> = audit
        .unreadable_traces()
        .map(|t| {
            format!("trace `{}` could not be read: {}", t.name, t.error.as_deref().unwrap_or(""))
        })
        .collect();
    let v = serde_json::to_value(&audit).map_err(|e| ToolError::new(e.to_string(), None))?;
    let mut summary = audit_summary(&v);
    for u in &unreadable {
        summary += &format!("\n{u}; the claims that read it are not evaluated");
    }
    capped(v, summary, a, !unreadable.is_empty())
}

/// The verdicts, counts and failed gates of a ledger, in a few lines.
fn audit_summary(v: &Value) -> String {
    let s = &v["summary"];
    let count = |k: &str| s["counts"][k].as_u64().unwrap_or(0);
    let mut out = format!(
        "{} claims: {} supported, {} partially supported, {} unverifiable, {} not supported; {} failed gates, {} stated numbers that do not hold, {} arithmetic failures, {} not evaluated",
        s["claims"],
        count("supported"),
        count("partially_supported"),
        count("unverifiable"),
        count("not_supported"),
        s["gate_failures"],
        s["says_mismatches"],
        s["arithmetic_failures"],
        s["not_evaluated"],
    );
    for r in v["results"].as_array().into_iter().flatten() {
        out += &format!(
            "\n{}: {}",
            r["id"].as_str().unwrap_or(""),
            r["verdict"].as_str().unwrap_or("")
        );
        for p in r["parts"].as_array().into_iter().flatten() {
            for g in p["gates"].as_array().into_iter().flatten() {
                if g["status"] == "fail" {
                    out += &format!(
                        "\n  {} {} fail: {}",
                        p["id"].as_str().unwrap_or(""),
                        g["gate"].as_str().unwrap_or(""),
                        crate::i18n::Finding {
                            key: g["finding"]["key"].as_str().unwrap_or("").into(),
                            args: serde_json::from_value(g["finding"]["args"].clone())
                                .unwrap_or_default(),
                        }
                        .english()
                    );
                }
            }
        }
    }
    out
}

// ---- schema ----

fn schema(a: &Map<String, Value>, _: &Roots) -> Result<Output, ToolError> {
    let what = a.get("what").and_then(Value::as_str).unwrap_or("claims");
    let langs: Vec<String> = strings(a, "languages");
    let langs = (!langs.is_empty()).then_some(langs.as_slice());
    let schema = match what {
        "eval" => crate::claims::schema::eval_schema(langs),
        "evidence" => crate::audit::evidence_schema(),
        _ => crate::claims::schema::claims_schema(langs),
    };
    let of = if what == "evidence" {
        "the evidence ledger".to_string()
    } else {
        format!("{what} files")
    };
    Ok(Output {
        summary: format!("the JSON Schema of {of} (`schema`)"),
        structured: json!({"what": what, "schema": schema}),
        failed: false,
    })
}

// ---- explain ----

fn explain(a: &Map<String, Value>, _: &Roots) -> Result<Output, ToolError> {
    let lang = a.get("lang").and_then(Value::as_str).unwrap_or("en");
    let strings = crate::i18n::Strings::load(lang).map_err(|e| ToolError::new(e, None))?;
    let asked = a.get("key").and_then(Value::as_str).unwrap_or_default().trim();
    // A gate by its id (R1, r2): its legend.
    let gate_id = |k: &str| -> Option<String> {
        let id = k.to_ascii_uppercase();
        strings.get(&format!("legend.{id}")).ok().map(|_| id)
    };
    let (key, gate) = match gate_id(asked) {
        Some(id) => (format!("legend.{id}"), Some(id)),
        None => {
            let key = asked.to_string();
            // A finding of a gate (`gate.r1.window_differs`) belongs to that gate.
            let gate =
                key.strip_prefix("gate.").and_then(|rest| rest.split('.').next()).and_then(gate_id);
            (key, gate)
        }
    };
    let template = strings.get(&key).map_err(|_| {
        let keys: Vec<&str> = strings.keys().map(String::as_str).collect();
        let hint = match crate::claims::validate::did_you_mean(&key, keys.iter().copied()) {
            Some(k) => format!("did you mean `{k}`?"),
            None => "a gate id (R1-R6), or the `key` of a finding in the ledger (gates[].finding.key, reason.key, notes[].key)".into(),
        };
        ToolError::new(format!("no text for key `{key}`"), Some(hint))
    })?;
    let placeholders: Vec<String> = template
        .split('{')
        .skip(1)
        .filter_map(|s| s.split_once('}').map(|(n, _)| n.to_string()))
        .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .collect();
    let args: std::collections::BTreeMap<String, String> = a
        .get("args")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().map_or_else(|| v.to_string(), str::to_string)))
                .collect()
        })
        .unwrap_or_default();
    let text = if args.is_empty() {
        template.to_string()
    } else {
        strings
            .finding(&crate::i18n::Finding { key: key.clone(), args })
            .map_err(|e| ToolError::new(e, None))?
    };
    let mut v = json!({
        "key": key,
        "lang": lang,
        "text": text,
        "template": template,
        "placeholders": placeholders,
    });
    if let Some(id) = &gate {
        v["gate"] = json!({
            "id": id,
            "name": strings.get(&format!("gate.{id}")).unwrap_or(id),
            "legend": strings.get(&format!("legend.{id}")).unwrap_or(""),
        });
    }
    Ok(Output { summary: text, structured: v, failed: false })
}

// ---- shared pieces ----

/// The traces of a call, each inside a root: a path, a glob, or a list of them; and whether
/// they make a set (a glob, or several files).
fn trace_args(a: &Map<String, Value>, roots: &Roots) -> Result<(Vec<PathBuf>, bool), ToolError> {
    let mut files = Vec::new();
    let mut set = false;
    for t in strings(a, "trace") {
        let (found, globbed) = roots.expand(&t)?;
        set |= globbed;
        files.extend(found);
    }
    if files.is_empty() {
        return Err(ToolError::new("`trace` names no file", None));
    }
    set |= files.len() > 1;
    Ok((files, set))
}

/// A string argument or a list of them.
fn strings(a: &Map<String, Value>, key: &str) -> Vec<String> {
    match a.get(key) {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(v)) => v.iter().filter_map(Value::as_str).map(str::to_string).collect(),
        _ => Vec::new(),
    }
}

fn flag(a: &Map<String, Value>, key: &str) -> bool {
    a.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// The command line's options for the arguments named `names`: a true boolean is the flag,
/// a value is `--name VALUE`.
fn push_options(argv: &mut Vec<String>, a: &Map<String, Value>, names: &[&str]) {
    for name in names {
        match a.get(*name) {
            Some(Value::Bool(true)) => argv.push(format!("--{name}")),
            // One word `--name=VALUE`: a value that starts with `-` is the value, never an
            // option of its own.
            Some(Value::String(s)) => argv.push(format!("--{name}={s}")),
            Some(Value::Number(n)) => argv.push(format!("--{name}={n}")),
            _ => {}
        }
    }
}

/// The command line parsed by the CLI's own parser: the tool and the command are one path.
fn parse(argv: &[String]) -> Result<crate::cli::Command, ToolError> {
    crate::cli::Cli::try_parse_from(argv).map(|c| c.command).map_err(|e| {
        let text = e.to_string();
        let mut lines = text.lines().filter(|l| !l.trim().is_empty());
        let message = lines.next().unwrap_or("").trim_start_matches("error: ").to_string();
        let hints: Vec<String> =
            lines.filter_map(|l| l.trim().strip_prefix("hint: ")).map(str::to_string).collect();
        ToolError {
            message,
            hints: if hints.is_empty() {
                vec![
                    "tools/list gives each tool's arguments; they are the command line's options"
                        .into(),
                ]
            } else {
                hints
            },
            problems: Vec::new(),
        }
    })
}

/// A structured result capped to the call's rows and bytes, the cut stated in it and in the
/// summary.
fn capped(
    mut v: Value,
    mut summary: String,
    a: &Map<String, Value>,
    failed: bool,
) -> Result<Output, ToolError> {
    let rows = a.get("max-rows").and_then(Value::as_u64).unwrap_or(cap::DEFAULT_ROWS);
    let bytes = a.get("max-bytes").and_then(Value::as_u64).unwrap_or(cap::DEFAULT_BYTES);
    let cut = cap::apply(&mut v, rows, bytes).map_err(|e| {
        ToolError::new(
            e,
            Some(
                "raise `max-bytes`, or narrow the call (a window, fewer devices, a name filter)"
                    .into(),
            ),
        )
    })?;
    if let Some(t) = cut {
        summary += &format!("\n{}", cap::sentence(&t));
        v["truncation"] = t;
    }
    Ok(Output { structured: v, summary, failed })
}

/// One line on a piece of evidence: the analysis, trace, devices, window, and its values.
fn evidence_summary(v: &Value) -> String {
    let list = |x: &Value| -> String {
        let ids: Vec<i64> = x.as_array().into_iter().flatten().filter_map(Value::as_i64).collect();
        if ids.is_empty() { "none".into() } else { crate::scope::format_device_list(&ids) }
    };
    let window =
        match v["window"]["requested_ns"].as_array().map(|w| (w[0].as_i64(), w[1].as_i64())) {
            Some((Some(a), Some(b))) => format!(
                "window {}-{} s ({})",
                crate::scope::format_seconds(a),
                crate::scope::format_seconds(b),
                v["window"]["semantics"].as_str().unwrap_or("")
            ),
            _ => "the whole trace".into(),
        };
    let mut s = format!(
        "{} of {} (sha256 {}): devices {}, missing {}, {}",
        v["analysis"].as_str().unwrap_or(""),
        v["trace"]["path"].as_str().unwrap_or(""),
        v["trace"]["sha256"].as_str().unwrap_or("").get(..16).unwrap_or(""),
        list(&v["scope"]["devices"]),
        list(&v["scope"]["missing_devices"]),
        window,
    );
    if let Some(values) = v["values"].as_object() {
        let shown: Vec<String> = values
            .iter()
            .filter(|(_, x)| x.is_number())
            .take(8)
            .map(|(k, x)| format!("{k}={x}"))
            .collect();
        if !shown.is_empty() {
            s += &format!("; {}", shown.join(", "));
        }
    }
    let notes = v["notes"].as_array().map_or(0, Vec::len);
    if notes > 0 {
        s += &format!("; {notes} note(s) qualify the numbers (`notes`)");
    }
    s
}

// ---- schema pieces ----

fn string(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

fn boolean(description: &str) -> Value {
    json!({"type": "boolean", "description": description})
}

fn trace_prop() -> Value {
    json!({
        "type": ["string", "array"],
        "items": {"type": "string"},
        "description": "The `.sqlite` file of `nsys export --type sqlite` (or a PyTorch profiler `.json`/`.json.gz`, or a folder written by `verdict extract` or `nsys export --type parquetdir`), inside a root (relative paths are read from the first root); several files or a glob ('runs/*.sqlite') make a trace set",
    })
}

fn max_rows() -> Value {
    json!({
        "type": "integer", "minimum": 0, "maximum": cap::MAX_ROWS,
        "description": format!("Items kept of each list in the result (default {}); what is cut is stated in `truncation`", cap::DEFAULT_ROWS),
    })
}

fn max_bytes() -> Value {
    json!({
        "type": "integer", "minimum": 1024, "maximum": cap::MAX_BYTES,
        "description": format!("Bytes of the structured result as JSON (default {}); lists are cut further to fit, and `truncation` says so", cap::DEFAULT_BYTES),
    })
}

fn object(props: &[(&str, Value)], required: &[&str]) -> Value {
    object_owned(props.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(), required)
}

fn object_owned(props: Vec<(String, Value)>, required: &[&str]) -> Value {
    let props: Map<String, Value> = props.into_iter().collect();
    json!({
        "type": "object",
        "properties": props,
        "required": required,
        "additionalProperties": false,
    })
}

/// What `inspect` returns: the coverage evidence (its schema derived from the types) and what
/// inspect adds beside it, each described.
fn inspect_schema() -> Value {
    let mut schema = crate::audit::query_evidence_schema();
    for (key, what) in [
        (
            "schema",
            "The export's tables (an nsys export) or its time base (a PyTorch profiler trace)",
        ),
        ("source", "What a PyTorch profiler trace says of itself: format, schemaVersion, devices"),
        ("columnar", "An extract's tables"),
        ("nvtx", "NVTX ranges per process, with the process's host and rank"),
        ("copies", "Memory copy and set tables, and copies per device"),
    ] {
        schema["properties"][key] = json!({ "description": what });
    }
    schema
}

fn with_truncation(mut schema: Value) -> Value {
    schema["properties"]["truncation"] = json!({
        "type": "object",
        "required": ["max_rows", "rows_kept", "max_bytes", "cut_for_bytes", "lists"],
        "properties": {
            "max_rows": {"type": "integer"},
            "rows_kept": {"type": "integer"},
            "max_bytes": {"type": "integer"},
            "cut_for_bytes": {"type": "boolean"},
            "lists": {"type": "array", "items": {
                "type": "object",
                "required": ["path", "total", "kept"],
                "properties": {
                    "path": {"type": "string"},
                    "total": {"type": "integer"},
                    "kept": {"type": "integer"},
                },
            }},
        },
    });
    schema
}

//! `verdict verify`: rerun what a rendered report recorded, and say what drifted.
//!
//! Each recorded command is parsed as the program parses it and run through its query plan
//! (`verdict query compare` through the command's own comparison), so a rerun is the command a
//! reader would type. The plans that read the same traces share one scan (the union of their
//! filters), as in an audit.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser as _;

use crate::analysis::{self, Context, Params};
use crate::audit::merge_scans;
use crate::cli::{Cli, Command, VerifyArgs};
use crate::plan::{Expectation, QueryPlan};
use crate::scope::DeviceSel;
use crate::verify::{self, Entry, Problem};

/// The most differences shown for one command; the rest are counted.
const SHOWN: usize = 8;

/// How a recorded command is rerun.
enum Rerun {
    /// A query (or `inspect`'s coverage) through its plan.
    Plan(Box<QueryPlan>),
    /// `query compare`.
    Compare(crate::cli::CompareArgs),
}

/// The rerun of a recorded command, or why it cannot be parsed.
fn rerun_of(e: &Entry) -> Result<Rerun, String> {
    let cli = Cli::try_parse_from(&e.argv).map_err(|err| {
        err.to_string().lines().next().unwrap_or_default().trim_start_matches("error: ").to_string()
    })?;
    // What `render` records runs in process: a command that chooses where work runs (an
    // engine, a cluster's address) is not one a report holds, and would start a program.
    let engine = analysis::ENGINE.name;
    let refused = || {
        format!(
            "it names `{engine}`, which a report never records (where work runs is not part of a report)"
        )
    };
    match cli.command {
        Command::Query(q) => match q.compare {
            Some(c) if c.params.iter().any(|(k, _)| k == engine || k == analysis::CLUSTER.name) => {
                Err(refused())
            }
            Some(c) => Ok(Rerun::Compare(c)),
            None => {
                let p = QueryPlan::from_command(&q).map_err(|h| format!("{h}: {}", h.hint))?;
                if p.params.engine != crate::engine::Engine::Rust {
                    return Err(refused());
                }
                Ok(Rerun::Plan(Box::new(p)))
            }
        },
        Command::Inspect(a) => {
            let spec = analysis::spec("coverage").ok_or("no coverage analysis")?;
            let expect = match (&a.expect_devices, a.expect_ranks) {
                (Some(d), _) => Expectation::Devices(d.0.clone()),
                (None, Some(n)) => Expectation::Ranks(n as usize),
                (None, None) => Expectation::Nothing,
            };
            Ok(Rerun::Plan(Box::new(QueryPlan {
                spec,
                traces: a.traces,
                force_set: a.set,
                expect,
                params: Params::new(DeviceSel::All),
                nvtx: None,
            })))
        }
        _ => Err("not a query".into()),
    }
}

/// Evidence as the ledger holds it: written as JSON text and read back by the same reader
/// as the recorded evidence, so that a float compares as the same text, not as two readings
/// of it.
fn as_recorded(ev: &analysis::Evidence) -> Result<serde_json::Value, String> {
    serde_json::to_string(ev)
        .and_then(|text| serde_json::from_str(&text))
        .map_err(|err| err.to_string())
}

/// The traces a plan reads, as one scan's identity.
type Reads = (Vec<PathBuf>, bool, Expectation);

/// Runs `verify`.
pub(super) fn run(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let hinted = |p: &Problem| crate::Hinted::new(p.to_string(), p.hint());
    let record = verify::read(&args.manifest).map_err(|p| hinted(&p))?;
    let problems = verify::check_traces(&record.traces, &std::env::current_dir()?);
    if let Some(first) = problems.first() {
        // Every missing or changed trace on its own line, the first one's hint after them.
        let mut message = problems.iter().map(ToString::to_string).collect::<Vec<_>>();
        let head = message.remove(0);
        let text = std::iter::once(head).chain(message).collect::<Vec<_>>().join("\nerror: ");
        return Err(crate::Hinted::new(text, first.hint()).into());
    }
    let reruns = parse_reruns(&record)?;
    check_reads(&record, &reruns)?;
    let contexts = load_contexts(&reruns)?;
    let mut drifted = 0;
    let mut out = String::new();
    for (e, r) in record.entries.iter().zip(&reruns) {
        let readers = record.readers.get(&e.key).map(|r| r.join(", "));
        let who = match &readers {
            Some(r) => format!("{r} ({})", e.key),
            None => format!("chart context {}", e.key),
        };
        let lines = drift(e, r, &contexts);
        if lines.is_empty() {
            continue;
        }
        drifted += 1;
        out += &format!("drift: {who}\n");
        for l in lines {
            out += &format!("  {l}\n");
        }
        // The words that ran, never the ledger's text, which nothing ties to them.
        let ran: Vec<String> = e.argv.iter().map(|w| crate::audit::shell_quote(w)).collect();
        out += &format!("  rerun: {}\n", ran.join(" "));
    }
    let files = record.traces.len();
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    if drifted > 0 {
        out += &format!(
            "{}: drift: {} of {} give other evidence over {} whose sha256 is as recorded\n",
            record.report,
            plural(drifted, "command", "commands"),
            record.entries.len(),
            plural(files, "trace file", "trace files"),
        );
        let now = env!("CARGO_PKG_VERSION");
        if !record.tool_version.is_empty() && record.tool_version != now {
            out += &format!(
                "note: the report was rendered by verdict {}, this is verdict {now}: a change of the tool can be the cause\n",
                record.tool_version
            );
        }
        super::emit(&out)?;
        return Ok(ExitCode::from(1));
    }
    super::emit(&format!(
        "{}: verified: {} rerun over {} (sha256 as recorded); every number is as the ledger says\n",
        record.report,
        plural(record.entries.len(), "command", "commands"),
        plural(files, "trace file", "trace files"),
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// The rerun of every recorded command, parsed before any runs: a command that does not
/// parse is the record's fault.
fn parse_reruns(record: &verify::Record) -> anyhow::Result<Vec<Rerun>> {
    let mut reruns = Vec::new();
    for e in &record.entries {
        let r = rerun_of(e).map_err(|m| {
            crate::Hinted::new(
                format!(
                    "`{}` in `{}` is not a command this verdict runs: {m}",
                    e.argv.iter().map(|w| crate::audit::shell_quote(w)).collect::<Vec<_>>().join(" "),
                    record.evidence_file.display()
                ),
                format!(
                    "the report was rendered by verdict {}; verify it with that version, or render it again",
                    record.tool_version
                ),
            )
        })?;
        reruns.push(r);
    }
    Ok(reruns)
}

/// Checks that a rerun reads only traces whose sha256 was just checked: a command edited to
/// read another file is the record's fault, not drift.
fn check_reads(record: &verify::Record, reruns: &[Rerun]) -> anyhow::Result<()> {
    let recorded: Vec<PathBuf> = record.traces.iter().map(|t| t.path.clone()).collect();
    let canonical: Vec<PathBuf> =
        recorded.iter().filter_map(|p| std::fs::canonicalize(p).ok()).collect();
    for (e, r) in record.entries.iter().zip(reruns) {
        let named: Vec<PathBuf> = match r {
            Rerun::Plan(p) => p.traces.clone(),
            Rerun::Compare(c) => {
                c.a.iter()
                    .chain(&c.b)
                    .filter(|(k, _)| k == "trace")
                    .map(|(_, v)| PathBuf::from(v))
                    .collect()
            }
        };
        let files = crate::plan::expand(&named).map(|(f, _)| f).unwrap_or(named);
        for f in files {
            let listed = recorded.contains(&f)
                || std::fs::canonicalize(&f).is_ok_and(|c| canonical.contains(&c));
            if !listed {
                return Err(crate::Hinted::new(
                    format!(
                        "`{}` in `{}` reads `{}`, a trace the ledger does not list with its sha256",
                        e.argv
                            .iter()
                            .map(|w| crate::audit::shell_quote(w))
                            .collect::<Vec<_>>()
                            .join(" "),
                        record.evidence_file.display(),
                        f.display()
                    ),
                    "the report set was changed after it was rendered: render it again",
                )
                .into());
            }
        }
    }
    Ok(())
}

/// The traces of the plans, loaded: one scan per set of traces, with the union of its plans'
/// filters.
fn load_contexts(reruns: &[Rerun]) -> anyhow::Result<Vec<(Reads, Context)>> {
    let mut groups: Vec<(Reads, crate::trace::KernelFilter, Vec<analysis::Table>)> = Vec::new();
    for r in reruns {
        let Rerun::Plan(p) = r else { continue };
        let reads = (p.traces.clone(), p.force_set, p.expect.clone());
        let scan = (p.scan_filter(), p.needs());
        match groups.iter_mut().find(|g| g.0 == reads) {
            Some(g) => {
                let merged = merge_scans((g.1.clone(), g.2.clone()), scan);
                (g.1, g.2) = merged;
            }
            None => groups.push((reads, scan.0, scan.1)),
        }
    }
    let mut contexts: Vec<(Reads, Context)> = Vec::new();
    for ((traces, force_set, expect), filter, needs) in groups {
        let (_, ctx) = crate::plan::load(&traces, force_set, &expect, &filter, &needs)?;
        contexts.push(((traces, force_set, expect), ctx));
    }
    Ok(contexts)
}

/// What drifted in one recorded command's evidence, a line each: its differences (the
/// first [`SHOWN`], then a count), a query that now fails, or one that failed and now gives
/// evidence. Empty when nothing drifted.
fn drift(e: &Entry, r: &Rerun, contexts: &[(Reads, Context)]) -> Vec<String> {
    let now: Result<serde_json::Value, String> = match r {
        Rerun::Plan(p) => {
            let reads = (p.traces.clone(), p.force_set, p.expect.clone());
            let ctx =
                &contexts.iter().find(|c| c.0 == reads).expect("every plan's traces were loaded").1;
            p.run(ctx).map_err(|err| err.to_string()).and_then(|ev| as_recorded(&ev))
        }
        Rerun::Compare(c) => crate::plan::compare_evidence(c)
            .map_err(|err| format!("{err:#}"))
            .and_then(|ev| as_recorded(&ev)),
    };
    match (&e.evidence, now) {
        (Some(old), Ok(new)) => {
            let d = verify::diff(old, &new);
            let mut lines: Vec<String> = d
                .iter()
                .take(SHOWN)
                .map(|d| format!("{}: {} -> {}", d.path, d.old, d.new))
                .collect();
            if d.len() > SHOWN {
                lines.push(format!("and {} more values", d.len() - SHOWN));
            }
            lines
        }
        (Some(_), Err(err)) => vec![format!("the query now fails: {err}")],
        (None, Ok(_)) => vec![format!(
            "the query failed when rendered ({}) and now gives evidence",
            e.error.as_deref().unwrap_or("")
        )],
        (None, Err(_)) => Vec::new(),
    }
}

//! `verdict check`: the verdict table, the gates, and the evidence ledger as JSON.

use std::process::ExitCode;

use super::print_json;
use super::table::{self, Column};
use crate::audit::{self, Audit};
use crate::ci;
use crate::claims;
use crate::cli::{CheckArgs, CheckFormat};
use crate::render::i18n::Strings;
use crate::verdict::Verdict;

/// Runs `check`.
pub(super) fn run(args: CheckArgs) -> anyhow::Result<ExitCode> {
    let format = if args.json { CheckFormat::Json } else { args.format };
    let set = claims::load(&args.claims)?;
    if format != CheckFormat::Json {
        set.require_language(&args.lang)?;
    }
    let mut progress = super::progress();
    let audit = audit::run(set, &mut *progress);
    drop(progress);
    if format == CheckFormat::Json {
        print_json(&audit)?;
    } else {
        let t = Strings::load(&args.lang)
            .map_err(|e| crate::Hinted::new(e, "use --lang en or --lang zh-TW"))?;
        let text = match format {
            CheckFormat::Junit => {
                let cases = ci::cases(&audit, &t).map_err(anyhow::Error::msg)?;
                ci::junit(&[(&audit, cases)]).map_err(anyhow::Error::msg)?
            }
            CheckFormat::Github => github(&audit, &t)?,
            _ => render(&audit, &t, table::width()).map_err(anyhow::Error::msg)?,
        };
        super::emit(&text)?;
    }
    let ok = if args.strict && failed(&audit) { ExitCode::from(1) } else { ExitCode::SUCCESS };
    Ok(super::exit_code(&audit, ok))
}

/// The workflow commands of an audit, and its Markdown summary appended to the file that
/// `GITHUB_STEP_SUMMARY` names, when it names one. The annotation's file is the claims path
/// as given, or relative to `GITHUB_WORKSPACE` when it lies inside it.
fn github(audit: &Audit, t: &Strings) -> anyhow::Result<String> {
    let given = std::path::Path::new(&audit.claims.file);
    let file = std::env::var_os("GITHUB_WORKSPACE")
        .and_then(|w| {
            let abs = std::path::absolute(given).ok()?;
            let rel = abs.strip_prefix(std::path::absolute(w).ok()?).ok()?.to_path_buf();
            Some(rel.display().to_string())
        })
        .unwrap_or_else(|| audit.claims.file.clone());
    let cases = ci::cases(audit, t).map_err(anyhow::Error::msg)?;
    if let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) {
        use std::io::Write as _;
        let summary = ci::step_summary(audit, &cases, &file, t).map_err(anyhow::Error::msg)?;
        let shown = std::path::Path::new(&path).display().to_string();
        let mut opts = std::fs::OpenOptions::new();
        opts.append(true).create(true);
        #[cfg(unix)]
        {
            // A FIFO with no reader is refused at once (ENXIO), never waited on.
            use std::os::unix::fs::OpenOptionsExt;
            opts.custom_flags(libc::O_NONBLOCK);
        }
        crate::trace::open::check_writable(std::path::Path::new(&path))
            .and_then(|()| opts.open(&path))
            .and_then(|f| match crate::trace::open::check_writable(std::path::Path::new(&path)) {
                Ok(()) if f.metadata()?.is_file() => Ok(f),
                Ok(()) => Err(std::io::Error::other("not a regular file")),
                Err(e) => Err(e),
            })
            .and_then(|mut f| f.write_all(summary.as_bytes()))
            .map_err(|e| {
                crate::Hinted::new(
                    format!("cannot append the step summary to `{shown}` ({e})"),
                    "GITHUB_STEP_SUMMARY names the file the runner reads; unset it outside a workflow",
                )
            })?;
    }
    ci::github(audit, &cases, &file, t).map_err(anyhow::Error::msg)
}

/// Whether the audit fails under `--strict`: a claim not supported, a failed gate, a query
/// that failed, a stated number or arithmetic that does not hold.
pub(super) fn failed(a: &Audit) -> bool {
    let s = &a.summary;
    a.results.iter().any(|r| r.verdict == Verdict::NotSupported)
        || s.gate_failures > 0
        || s.not_evaluated > 0
        || s.says_mismatches > 0
        || s.arithmetic_failures > 0
}

/// The terminal rendering of an audit in one language, from the same render context as the
/// reports, laid out for `width` display columns.
pub(super) fn render(a: &Audit, t: &Strings, width: usize) -> Result<String, String> {
    let ctx =
        crate::render::context::build(a, t, &[], &Default::default()).map_err(|e| e.to_string())?;
    let line = |first: &str, text: &str, indent: usize| table::hang(first, text, indent, width);
    // The header's labels in the report's language, padded to one display width.
    let (claims_label, trace_label) = (t.get("ui.term_claims")?, t.get("ui.term_trace")?);
    let indent = table::display_width(claims_label).max(table::display_width(trace_label)) + 2;
    let pad = |label: &str| {
        format!("{label}{}", " ".repeat(indent.saturating_sub(table::display_width(label))))
    };
    let mut s = line(
        &pad(claims_label),
        &format!("{} · {} {}", ctx.report.claims_file, t.get("ui.term_report")?, ctx.report.id),
        indent,
    );
    for tr in &ctx.traces {
        let text = match &tr.error {
            None => format!(
                "{} = {} · sha256 {} · {} {} · {}",
                tr.name,
                tr.path,
                tr.sha256.get(..16).unwrap_or(""),
                t.get("ui.term_present")?,
                tr.present,
                if tr.missing.is_empty() {
                    t.get("ui.term_missing_none")?
                } else {
                    tr.missing.as_str()
                }
            ),
            Some(e) => format!("{} = {} · {}: {e}", tr.name, tr.path, t.get("ui.term_error")?),
        };
        s += &line(&pad(trace_label), &text, indent);
    }
    s.push('\n');
    let rows: Vec<Vec<String>> = ctx
        .table
        .iter()
        .map(|r| vec![format!("{} — {}", r.id, r.statement), r.evidence.clone(), r.verdict.clone()])
        .collect();
    s += &table::render(
        &[
            Column::text(t.get("ui.claim")?),
            Column::text(t.get("ui.evidence")?),
            Column::text(t.get("ui.verdict")?),
        ],
        &rows,
        width,
    );
    // Claims start at 0, parts at 2, their details at 6; a claim's or a part's next lines hang
    // at 4, a detail's at 8, or under the text after its label (a gate, a condition).
    let labelled = |label: &str, text: &str| {
        let first = format!("      {label}: ");
        line(&first, text, table::display_width(&first))
    };
    for c in &ctx.claims {
        s.push('\n');
        s += &line("", &format!("{} · {} · {}", c.id, c.verdict, c.reason), 4);
        for p in &c.parts {
            let principal =
                if p.principal { format!(" ({})", t.get("ui.principal")?) } else { String::new() };
            s += &line(
                "  ",
                &format!("{} [{}]{}: {} — {}", p.id, p.kind, principal, p.outcome, p.reason),
                4,
            );
            if let Some(f) = &p.formula {
                s += &line(
                    "      ",
                    &crate::render::context::formula_steps(&[
                        &f.symbolic,
                        &f.substituted,
                        &f.result,
                    ]),
                    8,
                );
            }
            // A comparison's test has its own line, not a place in the arithmetic.
            if let Some(test) = &p.test {
                s += &line("      ", &test.replace('`', ""), 8);
            }
            let mark = |ok: bool| if ok { "✓" } else { "✗" };
            if let Some(cond) = &p.condition {
                s += &labelled(t.get("ui.condition")?, &format!("{cond} {}", mark(p.condition_ok)));
            }
            if let Some(says) = &p.says {
                s += &line("      ", &format!("{says} {}", mark(p.says_ok)), 8);
            }
            for g in &p.gates {
                let status = if g.status_key == "fail" { "FAIL" } else { g.status_key.as_str() };
                s += &labelled(&format!("{} {status}", g.id), &g.text);
            }
            if let Some(c) = &p.controlled {
                s += &line("      ", &c.replace('`', ""), 8);
            }
            if p.outcome_key == "unverifiable" && !p.needs.is_empty() {
                s += &labelled(t.get("ui.needs")?, &p.needs.join("; "));
            }
        }
    }
    s.push('\n');
    let summary = format!("{}: ", t.get("ui.summary")?);
    s += &line(&summary, &ctx.summary.counts_line, table::display_width(&summary));
    if let Some(open) = &ctx.summary.open_line {
        s += &line("", open, 0);
    }
    for f in &ctx.summary.findings {
        s += &line("- ", f, 2);
    }
    Ok(s)
}

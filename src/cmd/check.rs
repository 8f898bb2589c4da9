//! `verdict check`: the verdict table, the gates, and the evidence ledger as JSON.

use std::process::ExitCode;

use super::print_json;
use crate::audit::{self, Audit};
use crate::claims;
use crate::cli::CheckArgs;
use crate::render::i18n::Strings;
use crate::verdict::Verdict;

/// Runs `check`.
pub fn run(args: CheckArgs) -> anyhow::Result<ExitCode> {
    let set = claims::load(&args.claims)?;
    if !args.json {
        set.require_language(&args.lang)?;
    }
    let mut progress = super::progress();
    let audit = audit::run(set, &mut *progress);
    drop(progress);
    if args.json {
        print_json(&audit)?;
    } else {
        let t = Strings::load(&args.lang)
            .map_err(|e| crate::Hinted::new(e, "use --lang en or --lang zh-TW"))?;
        super::emit(&render(&audit, &t).map_err(anyhow::Error::msg)?)?;
    }
    let ok = if args.strict && failed(&audit) { ExitCode::from(1) } else { ExitCode::SUCCESS };
    Ok(super::exit_code(&audit, ok))
}

/// Whether the audit fails under `--strict`: a claim not supported, a failed gate, a query
/// that failed, a stated number or arithmetic that does not hold.
pub fn failed(a: &Audit) -> bool {
    let s = &a.summary;
    a.results.iter().any(|r| r.verdict == Verdict::NotSupported)
        || s.gate_failures > 0
        || s.not_evaluated > 0
        || s.says_mismatches > 0
        || s.arithmetic_failures > 0
}

/// The terminal rendering of an audit in one language, from the same render context as the
/// reports.
pub fn render(a: &Audit, t: &Strings) -> Result<String, String> {
    let ctx = crate::render::context::build(a, t, &[])?;
    let mut s = format!("claims  {} · report {}\n", ctx.report.claims_file, ctx.report.id);
    for tr in &ctx.traces {
        match &tr.error {
            None => {
                s += &format!(
                    "trace   {} = {} · sha256 {} · devices with kernels {} · missing {}\n",
                    tr.name,
                    tr.path,
                    tr.sha256.get(..16).unwrap_or(""),
                    tr.present,
                    tr.missing
                )
            }
            Some(e) => s += &format!("trace   {} = {} · error: {e}\n", tr.name, tr.path),
        }
    }
    s.push('\n');
    let rows: Vec<Vec<String>> = ctx
        .table
        .iter()
        .map(|r| vec![format!("{} — {}", r.id, r.statement), r.evidence.clone(), r.verdict.clone()])
        .collect();
    s += &super::table::render(
        &[t.get("ui.claim")?, t.get("ui.evidence")?, t.get("ui.verdict")?],
        &rows,
        &[],
    );
    for c in &ctx.claims {
        s += &format!("\n{} · {} · {}\n", c.id, c.verdict, c.reason);
        for p in &c.parts {
            let principal =
                if p.principal { format!(" ({})", t.get("ui.principal")?) } else { String::new() };
            s += &format!("  {} [{}]{}: {} — {}\n", p.id, p.kind, principal, p.outcome, p.reason);
            if let Some(f) = &p.formula {
                s += &format!("      {} = {} = {}\n", f.symbolic, f.substituted, f.result);
            }
            let mark = |ok: bool| if ok { "✓" } else { "✗" };
            if let Some(cond) = &p.condition {
                s += &format!(
                    "      {}: {} {}\n",
                    t.get("ui.condition")?,
                    cond,
                    mark(p.condition_ok)
                );
            }
            if let Some(says) = &p.says {
                s += &format!("      {says} {}\n", mark(p.says_ok));
            }
            for g in &p.gates {
                let status = if g.status_key == "fail" { "FAIL" } else { g.status_key.as_str() };
                s += &format!("      {} {status}: {}\n", g.id, g.text);
            }
            if p.outcome_key == "unverifiable" && !p.needs.is_empty() {
                s += &format!("      {}: {}\n", t.get("ui.needs")?, p.needs.join("; "));
            }
        }
    }
    s += &format!("\n{}: {}\n", t.get("ui.summary")?, ctx.summary.counts_line);
    if let Some(open) = &ctx.summary.open_line {
        s += &format!("{open}\n");
    }
    for f in &ctx.summary.findings {
        s += &format!("- {f}\n");
    }
    Ok(s)
}

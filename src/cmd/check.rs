//! `verdict check`: the verdict table, the gates, and the evidence ledger as JSON.

use std::process::ExitCode;

use super::print_json;
use crate::audit::{self, Audit};
use crate::claims::{self, Kind};
use crate::cli::CheckArgs;
use crate::render::i18n::Strings;
use crate::verdict::{GateStatus, PartOutcome, Verdict};

/// Runs `check`.
pub fn run(args: CheckArgs) -> anyhow::Result<ExitCode> {
    let set = claims::load(&args.claims)?;
    if !args.json && !set.report.languages.contains(&args.lang) {
        return Err(crate::Hinted::new(
            format!(
                "language `{}` is not in the claims file's `report.languages` ({})",
                args.lang,
                set.report.languages.join(", ")
            ),
            "pick one of the languages the claims file provides texts for",
        )
        .into());
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
    Ok(if args.strict && failed(&audit) { ExitCode::from(1) } else { ExitCode::SUCCESS })
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

/// The terminal rendering of an audit in one language.
pub fn render(a: &Audit, t: &Strings) -> Result<String, String> {
    let mut s = format!("claims  {} · report {}\n", a.claims.file, a.claims.report.id);
    for tr in &a.traces {
        match (&tr.coverage, &tr.error) {
            (Some(c), _) => {
                s += &format!(
                    "trace   {} = {} · sha256 {} · devices with kernels {} · missing {}\n",
                    tr.name,
                    tr.path,
                    c.trace.sha256.get(..16).unwrap_or(""),
                    crate::scope::format_device_list(&c.scope.present_devices),
                    crate::scope::format_device_list(&c.scope.missing_devices)
                );
            }
            (None, Some(e)) => s += &format!("trace   {} = {} · error: {e}\n", tr.name, tr.path),
            _ => {}
        }
    }
    s.push('\n');
    let lang = &t.lang;
    let mut rows = Vec::new();
    for (claim, r) in a.claims.claims.iter().zip(&a.results) {
        let statement = claim.statement.get(lang).cloned().unwrap_or_default();
        let mut evidence = Vec::new();
        for p in &r.parts {
            if let Some(f) = &p.formula {
                let mut e = format!(
                    "{}: {} = {}",
                    p.id,
                    f.substituted,
                    f.display.clone().unwrap_or_else(|| "n/a".into())
                );
                if p.kind == Kind::Arithmetic {
                    e += " (arithmetic)";
                }
                evidence.push(e);
            } else if p.outcome == PartOutcome::Unverifiable {
                evidence.push(format!(
                    "{}: {}",
                    p.id,
                    t.get(&format!("outcome.{}", "unverifiable"))?
                ));
            }
        }
        rows.push(vec![
            format!("{} — {}", r.id, statement),
            evidence.join("; "),
            t.get(&format!("verdict.{}", r.verdict.key()))?.to_string(),
        ]);
    }
    s += &super::table::render(
        &[t.get("ui.claim")?, t.get("ui.evidence")?, t.get("ui.verdict")?],
        &rows,
        &[],
    );

    for (claim, r) in a.claims.claims.iter().zip(&a.results) {
        s += &format!(
            "\n{} · {} · {}\n",
            r.id,
            t.get(&format!("verdict.{}", r.verdict.key()))?,
            t.finding(&r.reason)?
        );
        for (part, p) in claim.parts.iter().zip(&r.parts) {
            let principal = if p.id == r.principal {
                format!(" ({})", t.get("ui.principal")?)
            } else {
                String::new()
            };
            s += &format!(
                "  {} [{}]{}: {} — {}\n",
                p.id,
                t.get(&format!("kind.{}", p.kind.as_str()))?,
                principal,
                t.get(&format!("outcome.{}", p.outcome.key()))?,
                t.finding(&p.reason)?
            );
            if let Some(f) = &p.formula {
                s += &format!(
                    "      {} = {} = {}\n",
                    f.symbolic,
                    f.substituted,
                    f.display.clone().unwrap_or_else(|| "n/a".into())
                );
            }
            if let Some(c) = &p.condition {
                s += &format!(
                    "      {}: {} {}\n",
                    t.get("ui.condition")?,
                    t.finding(&c.finding)?,
                    if c.satisfied { "✓" } else { "✗" }
                );
            }
            if let Some(sc) = &p.says {
                s += &format!(
                    "      {} {} · {} {} {}\n",
                    t.get("ui.says")?,
                    sc.stated,
                    t.get("ui.measured")?,
                    sc.measured,
                    if sc.matches { "✓" } else { "✗" }
                );
            }
            for g in &p.gates {
                let mark = match g.status {
                    GateStatus::Pass => "pass",
                    GateStatus::Note => "note",
                    GateStatus::Fail => "FAIL",
                };
                s += &format!("      {} {mark}: {}\n", g.gate, t.finding(&g.finding)?);
            }
            if p.outcome == PartOutcome::Unverifiable && !part.needs.is_empty() {
                let needs: Vec<String> =
                    part.needs.iter().filter_map(|n| n.get(lang).cloned()).collect();
                s += &format!("      {}: {}\n", t.get("ui.needs")?, needs.join("; "));
            }
        }
    }
    let sum = &a.summary;
    let counts = t.format(
        "ui.counts",
        &sum.counts.iter().map(|(k, v)| (k.clone(), v.to_string())).collect(),
    )?;
    s += &format!("\n{}: {counts}\n", t.get("ui.summary")?);
    if !sum.open.is_empty() {
        let args = [
            ("open".to_string(), sum.open.len().to_string()),
            ("claims".to_string(), sum.claims.to_string()),
        ];
        s += &format!("{}\n", t.format("ui.zero_refuted", &args.into_iter().collect())?);
    }
    for (n, key) in [
        (sum.gate_failures, "ui.finding_gates"),
        (sum.says_mismatches, "ui.finding_says"),
        (sum.arithmetic_failures, "ui.finding_arithmetic"),
        (sum.not_evaluated, "ui.finding_queries"),
    ] {
        if n > 0 {
            s += &format!("- {}\n", t.format(key, &[("n".to_string(), n.to_string())].into())?);
        }
    }
    Ok(s)
}

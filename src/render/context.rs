//! The render context: an audit seen in one language, every number already formatted.
//!
//! Templates only lay it out. Author texts stay Markdown here (templates convert them with the
//! `md`/`typmd` filters); everything else is plain text that templates escape.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::i18n::Strings;
use crate::audit::Audit;
use crate::claims::{Kind, Text};
use crate::scope::{format_device_list, format_seconds};
use crate::units::{ms, thousands};
use crate::verdict::{GateStatus, PartOutcome, Verdict};

/// Everything a template sees.
#[derive(Debug, Clone, Serialize)]
pub struct RenderContext {
    /// Language code.
    pub lang: String,
    /// UI strings of that language.
    pub t: BTreeMap<String, String>,
    /// Report metadata.
    pub report: ReportCtx,
    /// `verdict x.y.z`.
    pub tool: String,
    /// The summary for leadership.
    pub summary: SummaryCtx,
    /// Traces with coverage.
    pub traces: Vec<TraceCtx>,
    /// Scopes used.
    pub scopes: Vec<ScopeCtx>,
    /// The verdict table.
    pub table: Vec<RowCtx>,
    /// One section per claim.
    pub claims: Vec<ClaimCtx>,
    /// Misreadings that apply to this audit.
    pub misreadings: Vec<MisreadingCtx>,
    /// Charts (file names relative to the output folder) with captions.
    pub charts: Vec<ChartCtx>,
    /// Commands that reproduce every number.
    pub provenance: Vec<ProvenanceCtx>,
    /// The reviewer's R6 note (Markdown).
    pub r6: Option<String>,
    /// The next step (Markdown).
    pub next: Option<String>,
    /// Who reviewed.
    pub reviewer: Option<String>,
}

/// Report metadata.
#[derive(Debug, Clone, Serialize)]
pub struct ReportCtx {
    /// Id.
    pub id: String,
    /// Title (Markdown).
    pub title: String,
    /// The question (Markdown).
    pub question: Option<String>,
    /// Author.
    pub author: Option<String>,
    /// Date.
    pub date: Option<String>,
    /// The claims file.
    pub claims_file: String,
}

/// The summary.
#[derive(Debug, Clone, Serialize)]
pub struct SummaryCtx {
    /// Verdict counts with labels.
    pub counts: Vec<CountCtx>,
    /// The counts in one sentence.
    pub counts_line: String,
    /// Zero refuted is not all correct (or how many stay open).
    pub open_line: Option<String>,
    /// The few numbers that matter.
    pub key_numbers: Vec<KeyNumberCtx>,
    /// Open claims and what would decide them.
    pub open: Vec<OpenCtx>,
    /// Findings (failed gates, mismatched numbers), if any.
    pub findings: Vec<String>,
}

/// One verdict count.
#[derive(Debug, Clone, Serialize)]
pub struct CountCtx {
    /// Verdict key.
    pub key: String,
    /// Label.
    pub label: String,
    /// Count.
    pub n: usize,
}

/// A number that matters.
#[derive(Debug, Clone, Serialize)]
pub struct KeyNumberCtx {
    /// Claim id.
    pub claim: String,
    /// What it is (Markdown, the part's text).
    pub label: String,
    /// The value, or the words for "no number" when the claim has none.
    pub value: String,
    /// The claim's verdict key.
    pub verdict_key: String,
    /// The claim's verdict label.
    pub verdict: String,
}

/// An open claim.
#[derive(Debug, Clone, Serialize)]
pub struct OpenCtx {
    /// Claim id.
    pub id: String,
    /// Verdict label.
    pub verdict: String,
    /// Evidence that would decide it (Markdown items).
    pub needs: Vec<String>,
}

/// A trace.
#[derive(Debug, Clone, Serialize)]
pub struct TraceCtx {
    /// Name.
    pub name: String,
    /// Label (Markdown).
    pub label: Option<String>,
    /// Path.
    pub path: String,
    /// sha256.
    pub sha256: String,
    /// Schema version.
    pub schema_version: String,
    /// nsys version.
    pub nsys_version: String,
    /// Clock.
    pub time_base: String,
    /// Devices with kernels.
    pub present: String,
    /// Expected devices without kernels.
    pub missing: String,
    /// Kernel rows.
    pub kernels: String,
    /// First start - last end, seconds.
    pub range: String,
    /// Why it could not be read.
    pub error: Option<String>,
}

/// A scope.
#[derive(Debug, Clone, Serialize)]
pub struct ScopeCtx {
    /// Name.
    pub name: String,
    /// Trace name.
    pub trace: String,
    /// Requested window.
    pub window: String,
    /// Window semantics.
    pub semantics: String,
    /// Devices.
    pub devices: String,
}

/// A row of the verdict table.
#[derive(Debug, Clone, Serialize)]
pub struct RowCtx {
    /// Claim id.
    pub id: String,
    /// Statement (Markdown).
    pub statement: String,
    /// Evidence summary (plain).
    pub evidence: String,
    /// Verdict key.
    pub verdict_key: String,
    /// Verdict label.
    pub verdict: String,
}

/// A claim section.
#[derive(Debug, Clone, Serialize)]
pub struct ClaimCtx {
    /// Id.
    pub id: String,
    /// Statement (Markdown).
    pub statement: String,
    /// Source label (Markdown).
    pub source: Option<String>,
    /// Verdict key.
    pub verdict_key: String,
    /// Verdict label.
    pub verdict: String,
    /// Why.
    pub reason: String,
    /// Reviewer's note (Markdown).
    pub review: Option<String>,
    /// Parts.
    pub parts: Vec<PartCtx>,
}

/// A part.
#[derive(Debug, Clone, Serialize)]
pub struct PartCtx {
    /// Id.
    pub id: String,
    /// Kind key.
    pub kind_key: String,
    /// Kind label.
    pub kind: String,
    /// Whether it is the principal part.
    pub principal: bool,
    /// Text (Markdown).
    pub text: Option<String>,
    /// Outcome key.
    pub outcome_key: String,
    /// Outcome label.
    pub outcome: String,
    /// Why.
    pub reason: String,
    /// Formula block lines: symbolic, substituted, result.
    pub formula: Option<FormulaCtx>,
    /// The identity check of an overlap breakdown.
    pub identity: Option<String>,
    /// Condition text and whether it held.
    pub condition: Option<String>,
    /// Whether the condition held.
    pub condition_ok: bool,
    /// The stated number check.
    pub says: Option<String>,
    /// Whether it matched.
    pub says_ok: bool,
    /// Gates R1-R4.
    pub gates: Vec<GateCtx>,
    /// The scope line (analysis, window, devices).
    pub scope: Option<String>,
    /// The command that reproduces it, on one line.
    pub command: Option<String>,
    /// The same command laid out for a page, continued between arguments.
    pub command_block: Option<String>,
    /// Mapping of an interpretation (Markdown).
    pub mapping: Option<String>,
    /// Evidence that would decide it (Markdown items).
    pub needs: Vec<String>,
    /// Caveats (Markdown).
    pub caveats: Option<String>,
    /// Note (Markdown).
    pub note: Option<String>,
    /// Notes from the evidence (plain).
    pub evidence_notes: Vec<String>,
}

/// A formula.
#[derive(Debug, Clone, Serialize)]
pub struct FormulaCtx {
    /// As written.
    pub symbolic: String,
    /// With values.
    pub substituted: String,
    /// Result.
    pub result: String,
}

/// A gate.
#[derive(Debug, Clone, Serialize)]
pub struct GateCtx {
    /// `R1`..`R4`.
    pub id: String,
    /// Gate label.
    pub gate: String,
    /// Status key.
    pub status_key: String,
    /// Status label.
    pub status: String,
    /// Why.
    pub text: String,
}

/// A misreading.
#[derive(Debug, Clone, Serialize)]
pub struct MisreadingCtx {
    /// Title.
    pub title: String,
    /// Text.
    pub text: String,
}

/// A chart.
#[derive(Debug, Clone, Serialize)]
pub struct ChartCtx {
    /// File name.
    pub file: String,
    /// What the Markdown's image links to: the file name, or the absolute address of the
    /// chart's PNG or SVG under `render --image-base`.
    pub md_src: String,
    /// Caption.
    pub caption: String,
}

/// One reproducible query.
#[derive(Debug, Clone, Serialize)]
pub struct ProvenanceCtx {
    /// The command, laid out for a page (continued between arguments).
    pub command: String,
    /// The parts whose numbers it gives.
    pub parts: String,
}

fn tr(text: &Option<Text>, lang: &str) -> Option<String> {
    text.as_ref().and_then(|t| t.get(lang).cloned())
}

fn int(v: &Value, k: &str) -> i64 {
    v.get(k).and_then(Value::as_i64).unwrap_or(0)
}

/// The principal number of a claim for the summary: its principal part's value, else the
/// first measured value among its other parts, else the words for "no number".
fn key_number(
    claim: &crate::claims::Claim,
    r: &crate::verdict::ClaimResult,
    lang: &str,
    verdict: &str,
    t: &Strings,
) -> Result<KeyNumberCtx, String> {
    let valued = |p: &&crate::verdict::PartResult| {
        p.kind != Kind::Arithmetic && p.formula.as_ref().is_some_and(|f| f.display.is_some())
    };
    let chosen = r
        .parts
        .iter()
        .find(|p| p.id == r.principal)
        .filter(valued)
        .or_else(|| r.parts.iter().find(valued));
    let text_of =
        |id: &str| claim.parts.iter().find(|p| p.id == id).and_then(|p| tr(&p.text, lang));
    let (label, value) = match chosen {
        Some(p) => (
            text_of(&p.id).unwrap_or_else(|| p.id.clone()),
            p.formula.as_ref().and_then(|f| f.display.clone()).unwrap_or_default(),
        ),
        None => (
            claim.statement.get(lang).cloned().unwrap_or_else(|| claim.id.clone()),
            t.get("ui.no_number")?.to_string(),
        ),
    };
    Ok(KeyNumberCtx {
        claim: claim.id.clone(),
        label,
        value,
        verdict_key: r.verdict.key().into(),
        verdict: verdict.to_string(),
    })
}

/// What would decide an open claim: the evidence its principal part names, every gate that
/// failed (with why), every query that failed, else the reason it stays open.
fn what_would_decide<'a>(
    r: &crate::verdict::ClaimResult,
    lang: &str,
    t: &Strings,
    evidence: impl Fn(&str) -> Option<&'a crate::audit::LedgerEntry>,
) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    if let Some(p) = r.parts.iter().find(|p| p.id == r.principal) {
        for n in &p.needs {
            if let Some(s) = n.get(lang) {
                out.push(s.clone());
            }
        }
    }
    for p in &r.parts {
        for g in p.gates.iter().filter(|g| g.status == GateStatus::Fail) {
            let args = [
                ("part".to_string(), p.id.clone()),
                ("gate".to_string(), t.get(&format!("gate.{}", g.gate))?.to_string()),
                ("why".to_string(), t.finding(&g.finding)?),
            ]
            .into();
            out.push(t.format("ui.open_gate_failed", &args)?);
        }
        if p.outcome == PartOutcome::NotEvaluated {
            let why = p
                .evidence
                .as_deref()
                .and_then(&evidence)
                .and_then(|e| e.error.clone())
                .unwrap_or_else(|| t.finding(&p.reason).unwrap_or_default());
            let args = [("part".to_string(), p.id.clone()), ("why".to_string(), why)].into();
            out.push(t.format("ui.open_query_failed", &args)?);
        }
    }
    if out.is_empty() {
        // Open parts that name no evidence still say why they are open.
        out.push(t.finding(&r.reason)?);
    }
    let mut seen = std::collections::BTreeSet::new();
    out.retain(|s| seen.insert(s.clone()));
    Ok(out)
}

/// A time range in seconds on the trace's clock; on a UTC-epoch clock, also relative to the
/// capture start, which is what a reader can picture.
fn range(t: &Strings, start: i64, end: i64, capture_start: Option<i64>) -> Result<String, String> {
    let abs = format!("{}–{} s", format_seconds(start), format_seconds(end));
    match capture_start {
        None => Ok(abs),
        Some(o) => {
            let args = [
                ("range".to_string(), abs),
                ("start".to_string(), format_seconds(start - o)),
                ("end".to_string(), format_seconds(end - o)),
            ]
            .into();
            t.format("ui.range_from_capture_start", &args)
        }
    }
}

/// Builds the context of one language. `charts` lists the chart files written beside it.
pub fn build(a: &Audit, t: &Strings, charts: &[(String, String)]) -> Result<RenderContext, String> {
    let lang = t.lang.as_str();
    let set = &a.claims;
    let label = |key: &str| t.get(key).map(str::to_string);
    let evidence = |key: &str| a.ledger.iter().find(|e| e.key == key);

    let mut counts = Vec::new();
    for v in Verdict::ALL {
        counts.push(CountCtx {
            key: v.key().into(),
            label: label(&format!("verdict.{}", v.key()))?,
            n: a.summary.counts.get(v.key()).copied().unwrap_or(0),
        });
    }
    let count_args: BTreeMap<String, String> =
        counts.iter().map(|c| (c.key.clone(), c.n.to_string())).collect();
    let open_args: BTreeMap<String, String> = [
        ("open".into(), a.summary.open.len().to_string()),
        ("claims".into(), a.summary.claims.to_string()),
    ]
    .into();
    let refuted = a.summary.counts.get("not_supported").copied().unwrap_or(0);
    let open_line = if a.summary.open.is_empty() {
        None
    } else if refuted == 0 {
        Some(t.format("ui.zero_refuted", &open_args)?)
    } else {
        Some(t.format("ui.open_count", &open_args)?)
    };

    let mut key_numbers = Vec::new();
    let mut open = Vec::new();
    let mut table = Vec::new();
    let mut claims = Vec::new();
    for (claim, r) in set.claims.iter().zip(&a.results) {
        let verdict = label(&format!("verdict.{}", r.verdict.key()))?;
        let mut evidence_bits = Vec::new();
        let mut parts = Vec::new();
        for (part, p) in claim.parts.iter().zip(&r.parts) {
            let entry = p.evidence.as_deref().and_then(evidence);
            let ev = entry.and_then(|e| e.evidence.as_ref());
            let formula = p.formula.as_ref().map(|f| FormulaCtx {
                symbolic: f.symbolic.clone(),
                substituted: f.substituted.clone(),
                result: f.display.clone().unwrap_or_else(|| "n/a".into()),
            });
            if let Some(f) = &formula
                && part.kind != Kind::Arithmetic
            {
                // A lone field (`count`) substitutes to its own result: show it once.
                if f.substituted == f.result {
                    evidence_bits.push(format!("{}: {}", p.id, f.result));
                } else {
                    evidence_bits.push(format!("{}: {} = {}", p.id, f.substituted, f.result));
                }
            } else if let Some(f) = &formula {
                evidence_bits.push(format!(
                    "{}: {} = {} ({})",
                    p.id,
                    f.substituted,
                    f.result,
                    t.get("kind.arithmetic")?
                ));
            } else if p.outcome == PartOutcome::Unverifiable {
                evidence_bits.push(format!("{}: {}", p.id, t.get("outcome.unverifiable")?));
            }
            let identity =
                ev.filter(|e| e.analysis == "overlap").and_then(|e| e.values.as_ref()).map(|v| {
                    let v = Value::Object(v.clone());
                    format!(
                        "{} + {} + {} + {} = {} ms",
                        ms(int(&v, "compute_only_ns")),
                        ms(int(&v, "nccl_only_ns")),
                        ms(int(&v, "overlap_ns")),
                        ms(int(&v, "idle_ns")),
                        ms(int(&v, "total_ns"))
                    )
                });
            let scope = part.measure.as_ref().and_then(|m| {
                let s = set.scopes.get(&m.scope)?;
                let ev = ev?;
                let win = match ev.window.requested_ns {
                    Some(w) => format!(
                        "{}, {}",
                        range(t, w[0], w[1], ev.trace.capture_start_ns).ok()?,
                        s.semantics
                    ),
                    None => t.get("ui.whole_trace").ok()?.to_string(),
                };
                let mut line = format!(
                    "{} · {} · device {}",
                    m.analysis,
                    win,
                    format_device_list(&ev.scope.devices)
                );
                if let Some(st) = m.stream {
                    line += &format!(" · stream {st}");
                }
                if let Some(f) = &m.filter_text {
                    line += &format!(" · {f}");
                }
                Some(line)
            });
            let mut gates = Vec::new();
            for g in &p.gates {
                let key = match g.status {
                    GateStatus::Pass => "pass",
                    GateStatus::Note => "note",
                    GateStatus::Fail => "fail",
                };
                gates.push(GateCtx {
                    id: g.gate.into(),
                    gate: label(&format!("gate.{}", g.gate))?,
                    status_key: key.into(),
                    status: label(&format!("status.{key}"))?,
                    text: t.finding(&g.finding)?,
                });
            }
            let needs: Vec<String> = p.needs.iter().filter_map(|n| n.get(lang).cloned()).collect();
            parts.push(PartCtx {
                id: p.id.clone(),
                kind_key: part.kind.as_str().into(),
                kind: label(&format!("kind.{}", part.kind.as_str()))?,
                principal: p.id == r.principal,
                text: tr(&part.text, lang),
                outcome_key: p.outcome.key().into(),
                outcome: label(&format!("outcome.{}", p.outcome.key()))?,
                reason: t.finding(&p.reason)?,
                formula,
                identity,
                condition: p.condition.as_ref().map(|c| t.finding(&c.finding)).transpose()?,
                condition_ok: p.condition.as_ref().is_some_and(|c| c.satisfied),
                says: p.says.as_ref().map(|s| {
                    format!(
                        "{} {} · {} {}",
                        t.get("ui.says").unwrap_or(""),
                        s.stated,
                        t.get("ui.measured").unwrap_or(""),
                        s.measured
                    )
                }),
                says_ok: p.says.as_ref().is_some_and(|s| s.matches),
                gates,
                scope,
                command: entry.map(|e| e.command.clone()),
                command_block: entry
                    .map(|e| super::shell::layout(&e.argv, super::shell::REPORT_WIDTH)),
                mapping: tr(&part.mapping, lang),
                needs,
                caveats: tr(&part.caveats, lang),
                note: tr(&part.note, lang),
                evidence_notes: ev
                    .map(|e| {
                        e.notes.iter().map(|n| t.finding(&n.finding)).collect::<Result<_, _>>()
                    })
                    .transpose()?
                    .unwrap_or_default(),
            });
        }
        key_numbers.push(key_number(claim, r, lang, &verdict, t)?);
        if a.summary.open.contains(&r.id) {
            open.push(OpenCtx {
                id: claim.id.clone(),
                verdict: verdict.clone(),
                needs: what_would_decide(r, lang, t, evidence)?,
            });
        }
        let statement = claim.statement.get(lang).cloned().unwrap_or_default();
        table.push(RowCtx {
            id: claim.id.clone(),
            statement: statement.clone(),
            evidence: evidence_bits.join("; "),
            verdict_key: r.verdict.key().into(),
            verdict: verdict.clone(),
        });
        claims.push(ClaimCtx {
            id: claim.id.clone(),
            statement,
            source: claim
                .source
                .as_ref()
                .and_then(|s| set.sources.iter().find(|x| &x.id == s))
                .and_then(|s| s.label.get(lang).cloned()),
            verdict_key: r.verdict.key().into(),
            verdict,
            reason: t.finding(&r.reason)?,
            review: tr(&claim.review, lang),
            parts,
        });
    }

    // The bad news first: a refuted claim's number leads the list.
    key_numbers.sort_by_key(|k| k.verdict_key != "not_supported");

    let mut findings = Vec::new();
    let s = &a.summary;
    for (n, key) in [
        (s.gate_failures, "ui.finding_gates"),
        (s.says_mismatches, "ui.finding_says"),
        (s.arithmetic_failures, "ui.finding_arithmetic"),
        (s.not_evaluated, "ui.finding_queries"),
    ] {
        if n > 0 {
            findings.push(t.format(key, &[("n".to_string(), n.to_string())].into())?);
        }
    }

    let traces = a
        .traces
        .iter()
        .map(|tr_| {
            let decl = set.trace(&tr_.name);
            let c = tr_.coverage.as_ref();
            let v = c.and_then(|c| c.values.clone()).map(Value::Object).unwrap_or(Value::Null);
            TraceCtx {
                name: tr_.name.clone(),
                label: decl.and_then(|d| tr(&d.label, lang)),
                path: tr_.path.clone(),
                sha256: c.map(|c| c.trace.sha256.clone()).unwrap_or_default(),
                schema_version: c
                    .and_then(|c| c.trace.schema_version.clone())
                    .unwrap_or_else(|| "-".into()),
                nsys_version: c
                    .and_then(|c| c.trace.nsys_version.clone())
                    .unwrap_or_else(|| "-".into()),
                time_base: c.map(|c| c.trace.time_base.clone()).unwrap_or_default(),
                present: c
                    .map(|c| format_device_list(&c.scope.present_devices))
                    .unwrap_or_default(),
                missing: c
                    .map(|c| format_device_list(&c.scope.missing_devices))
                    .unwrap_or_default(),
                kernels: thousands(int(&v, "kernels").into()),
                range: range(
                    t,
                    int(&v, "first_start_ns"),
                    int(&v, "last_end_ns"),
                    c.and_then(|c| c.trace.capture_start_ns),
                )
                .unwrap_or_default(),
                error: tr_.error.clone(),
            }
        })
        .collect();
    let origin = |trace: &str| {
        a.traces
            .iter()
            .find(|x| x.name == trace)
            .and_then(|x| x.coverage.as_ref())
            .and_then(|c| c.trace.capture_start_ns)
    };
    let scopes = set
        .scopes
        .values()
        .map(|s| ScopeCtx {
            name: s.name.clone(),
            trace: s.trace.clone(),
            window: s.window.map_or_else(
                || t.get("ui.whole_trace").unwrap_or("").to_string(),
                |w| {
                    format!(
                        "{} ({} ms)",
                        range(t, w.start_ns, w.end_ns, origin(&s.trace)).unwrap_or_default(),
                        ms(w.len_ns())
                    )
                },
            ),
            semantics: s.semantics.to_string(),
            devices: match &s.devices {
                crate::scope::DeviceSel::All => t.get("ui.all_devices").unwrap_or("").to_string(),
                crate::scope::DeviceSel::Set(v) => format_device_list(v),
            },
        })
        .collect();

    let mut provenance: Vec<ProvenanceCtx> = a
        .ledger
        .iter()
        .map(|e| {
            let parts: Vec<String> = a
                .results
                .iter()
                .flat_map(|r| {
                    r.parts
                        .iter()
                        .filter(|p| p.evidence.as_deref() == Some(e.key.as_str()))
                        .map(move |p| format!("{}/{}", r.id, p.id))
                })
                .collect();
            ProvenanceCtx {
                command: super::shell::layout(&e.argv, super::shell::REPORT_WIDTH),
                parts: parts.join(", "),
            }
        })
        .collect();
    for e in &a.context {
        provenance.push(ProvenanceCtx {
            command: super::shell::layout(&e.argv, super::shell::REPORT_WIDTH),
            parts: t.get("ui.chart_data")?.to_string(),
        });
    }

    Ok(RenderContext {
        lang: lang.into(),
        t: t.keys().map(|k| (k.clone(), t.get(k).unwrap_or("").to_string())).collect(),
        report: ReportCtx {
            id: set.report.id.clone(),
            title: set.report.title.get(lang).cloned().unwrap_or_default(),
            question: tr(&set.report.question, lang),
            author: set.report.author.clone(),
            date: set.report.date.clone(),
            claims_file: crate::audit::normalize(std::path::Path::new(&set.file))
                .display()
                .to_string(),
        },
        tool: format!("{} {}", a.tool.name, a.tool.version),
        summary: SummaryCtx {
            counts,
            counts_line: t.format("ui.counts", &count_args)?,
            open_line,
            key_numbers,
            open,
            findings,
        },
        traces,
        scopes,
        table,
        claims,
        misreadings: a
            .misreadings
            .iter()
            .map(|m| {
                Ok(MisreadingCtx {
                    title: t.format(&format!("{}.title", m.key), &m.args)?,
                    text: t.format(&format!("{}.text", m.key), &m.args)?,
                })
            })
            .collect::<Result<_, String>>()?,
        charts: charts
            .iter()
            .map(|(f, c)| ChartCtx { file: f.clone(), md_src: f.clone(), caption: c.clone() })
            .collect(),
        provenance,
        r6: tr(&set.review.r6, lang),
        next: tr(&set.review.next, lang),
        reviewer: set.review.reviewer.clone(),
    })
}

//! The render context: an audit seen in one language, every number already formatted.
//!
//! Templates only lay it out. Author texts stay Markdown here (templates convert them with the
//! `md`/`typmd` filters); everything else is plain text that templates escape.

use std::collections::BTreeMap;

use serde::Serialize;

use super::i18n::Strings;
use crate::audit::Audit;
use crate::claims::{Kind, Measure, PlanId, Text};
use crate::formula::Rational;
use crate::scope::{format_device_list, format_seconds};
use crate::units::{ms, thousands};
use crate::verdict::reading::{Over, Reading};
use crate::verdict::{GateStatus, PartOutcome, Verdict};

mod brief;
mod model;
mod part;

use crate::render::RenderError;
use brief::{brief, cheapest, step_text};
pub use model::{
    BoundCtx, BriefCtx, ChartCtx, ChartIn, ClaimCtx, CountCtx, DecisionStepCtx, EvidenceCtx,
    FormulaCtx, GateCtx, KeyNumberCtx, KvCtx, Meta, MisreadingCtx, OpenCtx, OpenItemCtx, PartCtx,
    ProvenanceCtx, RenderContext, ReportCtx, RowCtx, ScopeCtx, SetFileCtx, SourceCtx, SummaryCtx,
    TraceCtx,
};

fn tr(text: &Option<Text>, lang: &str) -> Option<String> {
    text.as_ref().and_then(|t| t.get(lang).cloned())
}

/// The principal number of a claim for the summary: its principal part's value, else the
/// first measured value among its other parts, else the words for "no number"; with its scope.
fn key_number(
    claim: &crate::claims::Claim,
    r: &crate::verdict::ClaimResult,
    lang: &str,
    verdict: &str,
    t: &Strings,
    scoped: &Scoped,
) -> Result<KeyNumberCtx, RenderError> {
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
    let (label, value, scope, spread) = match chosen {
        Some(p) => {
            let Shown { value, scope, spread, .. } =
                scoped.get(&(claim.id.clone(), p.id.clone())).cloned().unwrap_or_default();
            (text_of(&p.id).unwrap_or_else(|| p.id.clone()), value, scope, spread)
        }
        None => (
            claim.statement.get(lang).cloned().unwrap_or_else(|| claim.id.clone()),
            t.get("ui.no_number")?.to_string(),
            None,
            None,
        ),
    };
    // A share's denominator, as R3 names it from the formula's denominator field.
    let denominator = chosen
        .filter(|p| {
            // A share shown as itself: not a count of the windows or ranks it held on.
            p.formula.as_ref().is_some_and(|f| {
                f.exact.is_some()
                    && matches!(f.unit, crate::claims::Unit::Percent | crate::claims::Unit::Ratio)
            })
        })
        .and_then(|p| p.gates.iter().find(|g| g.gate == "R3"))
        .and_then(|g| g.finding.args.get("denominator"))
        .and_then(|d| t.get(&format!("q.of.{d}")).ok())
        .map(str::to_string);
    Ok(KeyNumberCtx {
        claim: claim.id.clone(),
        label,
        value,
        scope,
        spread,
        denominator,
        verdict_key: r.verdict.key().into(),
        verdict: verdict.to_string(),
    })
}

/// Each part's value in the forms a text may ask for, by (claim, part).
pub(super) type Scoped = BTreeMap<(String, String), Shown>;

/// A value in the forms a placeholder may ask for.
#[derive(Debug, Clone, Default)]
pub(super) struct Shown {
    /// The value: `17.8%`.
    pub value: String,
    /// Where it holds: `device 4, window …`.
    pub scope: Option<String>,
    /// The same quantity on every device or window: `13.1% to 20.7% across devices 1-7`.
    pub spread: Option<String>,
    /// A change in words with its size: `fell by 1.6 pp`.
    pub change: Option<String>,
}

/// The analysis a chart draws, from its file name (`ID.LANG.KIND.svg`, `ID.LANG.KIND-2.svg`).
fn chart_kind(file: &str) -> String {
    let stem = file.strip_suffix(".svg").unwrap_or(file);
    let kind = stem.rsplit('.').next().unwrap_or("");
    match kind.rsplit_once('-') {
        Some((k, n)) if n.chars().all(|c| c.is_ascii_digit()) => k.to_string(),
        _ => kind.to_string(),
    }
}

/// The scope of an evidence block: analysis, devices, window with its semantics, filter.
fn evidence_scope(
    t: &Strings,
    a: &Audit,
    ev: Option<&crate::analysis::Evidence>,
    m: &Measure,
) -> Result<String, RenderError> {
    let Some(ev) = ev else { return Ok(m.analysis.clone()) };
    let mut line = format!("{} · {}", m.analysis, short_scope(t, a, ev, m, true)?);
    if ev.window.requested_ns.is_some() {
        line += &format!(
            "{}{}{}",
            t.get("ui.paren_open")?,
            ev.window.semantics,
            t.get("ui.paren_close")?
        );
    }
    match &m.params.filter {
        Some(crate::analysis::NameFilter::Substring(f)) => line += &format!(" · {f}"),
        Some(crate::analysis::NameFilter::Regex(r)) => line += &format!(" · /{}/", r.as_str()),
        None => {}
    }
    Ok(line)
}

/// The exclusive intervals of a breakdown adding up to its total, as its analysis declares
/// them (`compute_only + nccl_only + overlap + idle = total`); None when a term is absent.
fn identity_of(e: &crate::analysis::Evidence) -> Option<String> {
    let (terms, total) = crate::analysis::spec(&e.analysis)?.identity()?;
    let show = |f: &str| -> Option<String> {
        let v = e.field(f).ok()??;
        if v.den != 1 {
            return None;
        }
        Some(ms(i64::try_from(v.num).ok()?))
    };
    let terms: Vec<String> = terms.iter().map(|f| show(f)).collect::<Option<_>>()?;
    Some(format!("{} = {} ms", terms.join(" + "), show(total)?))
}

/// Per-rank waits and last arrivals of a cross-rank NCCL evidence, one line each.
fn rank_lines(t: &Strings, e: &crate::analysis::Evidence) -> Result<Vec<String>, RenderError> {
    let Some(crate::analysis::values::Values::NcclSkew(v)) = e.values.as_ref() else {
        return Ok(Vec::new());
    };
    let sep = t.get("ui.list_sep")?;
    let per = |m: Option<&std::collections::BTreeMap<i64, i64>>, show: &dyn Fn(i64) -> String| {
        let items: Vec<String> =
            m.into_iter().flatten().map(|(d, x)| format!("{d}: {}", show(*x))).collect();
        if items.is_empty() { None } else { Some(items.join(sep)) }
    };
    let mut out = Vec::new();
    if let Some(w) = per(v.rank_wait_ns.as_ref(), &|x| format!("{} ms", ms(x))) {
        out.push(t.format("ui.rank_waits", &args([("waits", w)]))?);
    }
    if let Some(l) = per(v.last_arrivals.as_ref(), &|x| thousands(x.into())) {
        out.push(t.format(
            "ui.last_arrivals",
            &args([("last", l), ("matched", thousands(v.matched.into()))]),
        )?);
    }
    Ok(out)
}

/// What a trace's own metadata says about where it comes from, in one line. The host, export
/// time and input file of a trace a generator wrote are the generator's, and say so.
fn origin_text(t: &Strings, r: &crate::analysis::TraceRef) -> Result<Option<String>, RenderError> {
    let o = &r.origin;
    let mut bits = Vec::new();
    if let Some(d) = &o.derived_by {
        bits.push(t.format("ui.origin_derived_by", &args([("by", d.clone())]))?);
    }
    let mut fields = Vec::new();
    if let Some(f) = &o.input_file {
        fields.push(t.format("ui.origin_input", &args([("file", f.clone())]))?);
    }
    if let Some(x) = &o.exported_utc {
        fields.push(t.format("ui.origin_exported", &args([("utc", x.clone())]))?);
    }
    if let Some(h) = &o.host {
        fields.push(t.format("ui.origin_host", &args([("host", h.clone())]))?);
    }
    if let Some(Some(n)) = &r.nsys_version {
        fields.push(format!("nsys {n}"));
    }
    let sep = t.get("ui.list_sep")?;
    match (&o.derived_by, &o.derived_from) {
        // A generated file: its export fields are what the generator wrote, not a capture's.
        (Some(_), None) if !fields.is_empty() => {
            bits.push(t.format("ui.origin_generated", &args([("fields", fields.join(sep))]))?)
        }
        _ => bits.extend(fields),
    }
    Ok(if bits.is_empty() { None } else { Some(bits.join(sep)) })
}

/// Fills `{claim/part}` placeholders of the answer with measured values and their scope.
/// Fills `{claim/part}` placeholders with the values they ask for: with the scope (stated once:
/// a value in the scope stated just before it is shown alone), alone, as a spread, or as a
/// change in words; then drops the half-width spaces the filled values
/// leave beside full-width punctuation.
pub(super) fn fill_placeholders(
    text: &str,
    t: &Strings,
    values: &Scoped,
) -> Result<String, RenderError> {
    use crate::claims::Show;
    let found = crate::claims::placeholders(text).map_err(RenderError::Placeholder)?;
    let mut out = String::new();
    let mut at = 0;
    // A scope is stated once: a value in the scope stated last is shown alone.
    let mut last_scope: Option<&str> = None;
    for p in found {
        out += &text[at..p.range.start];
        let shown = match values.get(&(p.claim.clone(), p.part.clone())) {
            None => t.get("ui.no_number")?.to_string(),
            Some(v) => match (p.show, &v.scope) {
                (Show::Value, _) | (Show::Scoped, None) => v.value.clone(),
                (Show::Scoped, Some(sc)) if last_scope == Some(sc.as_str()) => v.value.clone(),
                (Show::Scoped, Some(sc)) => {
                    last_scope = Some(sc.as_str());
                    format!(
                        "{}{}{sc}{}",
                        v.value,
                        t.get("ui.paren_open")?,
                        t.get("ui.paren_close")?
                    )
                }
                (Show::Spread, _) => {
                    v.spread.clone().or_else(|| v.scope.clone()).unwrap_or_else(|| v.value.clone())
                }
                (Show::Change, _) => v.change.clone().unwrap_or_else(|| v.value.clone()),
                (Show::Scope, sc) => sc.clone().unwrap_or_default(),
            },
        };
        out += &shown;
        at = p.range.end;
    }
    out += &text[at..];
    Ok(without_spaces_at_full_width_punctuation(&out))
}

/// A signed change in words with its size: `fell by 1.6 pp`, `rose by 11.4 pp`, `did not
/// change`.
fn change_text(t: &Strings, v: Rational, unit: crate::claims::Unit) -> Result<String, RenderError> {
    use std::cmp::Ordering::*;
    let size = |v: Rational| crate::verdict::show(v, unit);
    let text = match v.cmp_to(Rational::int(0)) {
        Less => t.format(
            "ui.change_fell",
            &args([("size", size(Rational { num: -v.num, den: v.den }))]),
        ),
        Greater => t.format("ui.change_rose", &args([("size", size(v))])),
        Equal => t.get("ui.change_none").map(str::to_string),
    };
    Ok(text?)
}

/// Drops a half-width space that the author's text leaves beside full-width punctuation once
/// the placeholders are filled (`（device 0、整份 trace） 與運算`): a full-width mark carries
/// its own spacing. Spaces between other characters stay.
fn without_spaces_at_full_width_punctuation(s: &str) -> String {
    const AFTER: &[char] = &['，', '。', '、', '；', '：', '！', '？', '）', '」', '』'];
    const BEFORE: &[char] = &['（', '「', '『', '，', '。', '、', '；', '：', '）'];
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    for (i, &c) in chars.iter().enumerate() {
        let prev = i.checked_sub(1).map(|j| chars[j]);
        let next = chars.get(i + 1).copied();
        let drop = c == ' '
            && (prev.is_some_and(|p| AFTER.contains(&p))
                || (next.is_some_and(|n| BEFORE.contains(&n))
                    && prev.is_some_and(|p| !p.is_ascii())));
        if !drop {
            out.push(c);
        }
    }
    out
}

/// The tool and its build in one line: `verdict 0.1.0 (build 1a2b3c4d5e6f)`.
fn tool_text(t: &Strings, tool: &crate::analysis::ToolRef) -> Result<String, RenderError> {
    let mut s = format!("{} {}", tool.name, tool.version);
    if let Some(b) = &tool.build {
        let short: String = b.chars().take(12).collect();
        let modified = if b.ends_with("+modified") { "+modified" } else { "" };
        s += &format!(
            "{}{} {short}{modified}{}",
            t.get("ui.paren_open")?,
            t.get("ui.build")?,
            t.get("ui.paren_close")?
        );
    }
    Ok(s)
}

/// Plain words for the content kinds and the gates.
fn legend(t: &Strings) -> Result<Vec<KvCtx>, RenderError> {
    let mut out = Vec::new();
    for k in ["observation", "interpretation", "causal", "action", "arithmetic"] {
        out.push(KvCtx {
            key: t.get(&format!("kind.{k}"))?.to_string(),
            value: t.get(&format!("legend.{k}"))?.to_string(),
            code: false,
        });
    }
    for g in ["R1", "R2", "R3", "R4", "R5", "R6"] {
        out.push(KvCtx {
            key: t.get(&format!("gate.{g}"))?.to_string(),
            value: t.get(&format!("legend.{g}"))?.to_string(),
            code: false,
        });
    }
    Ok(out)
}

/// Definitions of NCCL and of every metric family the audit reads.
fn definitions(a: &Audit, t: &Strings) -> Result<Vec<KvCtx>, RenderError> {
    let used: std::collections::BTreeSet<&str> =
        a.ledger.iter().filter_map(|e| e.evidence.as_ref()).map(|e| e.analysis.as_str()).collect();
    let mut keys = vec!["nccl"];
    for spec in crate::analysis::ANALYSES.iter().filter(|s| used.contains(s.name)) {
        keys.extend(spec.terms.iter().copied());
    }
    keys.iter()
        .map(|k| {
            Ok(KvCtx {
                key: t.get(&format!("def.{k}.term"))?.to_string(),
                value: t.get(&format!("def.{k}.text"))?.to_string(),
                code: false,
            })
        })
        .collect()
}

/// Facts a postmortem cites: the claims file and its hash, the commit, dates, the ledger.
fn provenance_facts(a: &Audit, t: &Strings, meta: &Meta) -> Result<Vec<KvCtx>, RenderError> {
    let mut out = Vec::new();
    let mut kv = |key: &str, value: String, code: bool| -> Result<(), RenderError> {
        out.push(KvCtx { key: t.get(key)?.to_string(), value, code });
        Ok(())
    };
    kv("ui.tool", format!("{} {}", a.tool.name, a.tool.version), true)?;
    if let Some(b) = &a.tool.build {
        kv("ui.tool_build", b.clone(), true)?;
    }
    let file = crate::trace::open::normalize(std::path::Path::new(&a.claims.file));
    kv("ui.claims_file", file.display().to_string(), true)?;
    if let Some(h) = &meta.claims_sha256 {
        kv("ui.claims_sha256", h.clone(), true)?;
    }
    if let Some(v) = &meta.vcs {
        kv("ui.vcs_commit", v.commit.clone(), true)?;
        if let Some(r) = &v.remote {
            kv("ui.vcs_remote", r.clone(), true)?;
        }
        if v.modified {
            kv("ui.vcs_state", t.get("ui.vcs_modified")?.to_string(), false)?;
        }
    }
    if let Some(d) = &meta.render_date {
        kv("ui.cond_rendered", d.clone(), false)?;
    }
    if let Some(l) = &meta.ledger_file {
        kv("ui.ledger_file", l.clone(), true)?;
    }
    Ok(out)
}

/// What would decide an open claim: the evidence its principal part names, every gate that
/// failed (with why), every query that failed, else the reason it stays open.
fn what_would_decide<'a>(
    r: &crate::verdict::ClaimResult,
    lang: &str,
    t: &Strings,
    evidence: impl Fn(&PlanId) -> Option<&'a crate::audit::LedgerEntry>,
) -> Result<Vec<String>, RenderError> {
    let mut out: Vec<String> = Vec::new();
    // The principal's needs first, then those of every other part that keeps the claim open
    // (`rules::decide`): a part that names evidence keeps its item whatever the verdict.
    let principal = r.parts.iter().filter(|p| p.id == r.principal);
    let others = r.parts.iter().filter(|p| p.id != r.principal && r.open.contains(&p.id));
    for p in principal.chain(others) {
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
                .as_ref()
                .and_then(&evidence)
                .and_then(|e| e.error.clone())
                .unwrap_or_else(|| t.finding(&p.reason).unwrap_or_default());
            let args = [("part".to_string(), p.id.clone()), ("why".to_string(), why)].into();
            out.push(t.format("ui.open_query_failed", &args)?);
        }
    }
    if out.is_empty() {
        // Open parts that name no evidence still say why they are open: a comparison says what
        // it could not decide (one capture per side, too few samples, an undeclared control),
        // which is more than the claim's "cannot be answered".
        let principal = r.parts.iter().find(|p| p.id == r.principal);
        match principal.filter(|p| p.reason.key.starts_with("part.compare_")) {
            Some(p) => out.push(t.finding(&p.reason)?),
            None => out.push(t.finding(&r.reason)?),
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    out.retain(|s| seen.insert(s.clone()));
    Ok(out)
}

/// A time range in seconds on the trace's clock; on a UTC-epoch clock, also relative to the
/// capture start, which is what a reader can picture.
fn range(
    t: &Strings,
    start: i64,
    end: i64,
    capture_start: Option<i64>,
) -> Result<String, RenderError> {
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
            Ok(t.format("ui.range_from_capture_start", &args)?)
        }
    }
}

fn args<const N: usize>(pairs: [(&str, String); N]) -> BTreeMap<String, String> {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// The files of a trace set, each with its host and how it joined the set's clock.
fn set_files(t: &Strings, s: &crate::analysis::set::SetInfo) -> Vec<SetFileCtx> {
    use crate::analysis::set::Alignment;
    s.files
        .iter()
        .map(|f| {
            let start = match (f.session_start_utc_ns, s.origin_utc_ns) {
                (Some(a), Some(o)) => format_seconds(a - o),
                _ => "-".into(),
            };
            let key = match f.alignment {
                Alignment::Normalized => "ui.file_clock_utc",
                Alignment::SessionStart => "ui.file_clock_session",
                Alignment::HostClock => "ui.file_clock_host",
                Alignment::HostEpoch => "ui.file_clock_host_epoch",
                Alignment::Own => "ui.file_clock_own",
            };
            SetFileCtx {
                path: f.path.clone(),
                host: f.host.clone().unwrap_or_else(|| "?".into()),
                clock: t
                    .format(key, &args([("start", start), ("shift", format_seconds(f.shift_ns))]))
                    .unwrap_or_default(),
            }
        })
        .collect()
}

/// The i18n key of what one sample of a comparison is: a run, an NVTX step or a window.
fn sample_word(ev: &crate::analysis::Evidence) -> &'static str {
    match ev.parameters.get("sample_unit").and_then(serde_json::Value::as_str) {
        Some("run") => "ui.samples_run",
        Some("step") => "ui.samples_step",
        _ => "ui.samples_window",
    }
}

/// Where a piece of evidence holds, in a few words: `device 4, window 39.964–46.123 s`.
fn short_scope(
    t: &Strings,
    a: &Audit,
    ev: &crate::analysis::Evidence,
    m: &Measure,
    devices: bool,
) -> Result<String, RenderError> {
    if let Some(c) = &m.compare {
        let [side_a, side_b] =
            compare_sides(a, t, [c.sides[0].scope.as_str(), c.sides[1].scope.as_str()], devices)?;
        // Both sides, their samples, and the interval of the value where it has one.
        let v = crate::analysis::compare::Values::of(ev);
        let n = |k: &str| {
            v.map(|v| if k == "n_a" { v.n_a } else { v.n_b }).map_or("-".into(), |v| v.to_string())
        };
        let interval = crate::verdict::compare_interval(m, ev).map_or_else(
            || t.get("ui.no_interval").map(str::to_string),
            |(lo, hi)| {
                t.format(
                    "scope.compare_interval",
                    &args([
                        ("low", crate::verdict::show(lo, m.unit)),
                        ("high", crate::verdict::show(hi, m.unit)),
                    ]),
                )
            },
        )?;
        return Ok(t.format(
            "scope.compare",
            &args([
                ("a", side_a),
                ("b", side_b),
                ("n_a", n("n_a")),
                ("n_b", n("n_b")),
                ("unit", t.get(sample_word(ev))?.to_string()),
                ("interval", interval),
            ]),
        )?);
    }
    let devs = &ev.scope.devices;
    let list = format_device_list(devs);
    let set = ev.trace.set.as_deref().filter(|s| s.files.len() > 1);
    let mut bits = vec![if let Some(set) = set {
        if let [one] = devs[..] {
            t.format("scope.rank", &args([("rank", list), ("label", set.label(one))]))?
        } else {
            let hosts: std::collections::BTreeSet<Option<&str>> = devs
                .iter()
                .filter_map(|d| set.ranks.iter().find(|r| r.rank == *d))
                .map(|r| r.host.as_deref())
                .collect();
            t.format(
                if hosts.len() == 1 { "scope.ranks_one_host" } else { "scope.ranks" },
                &args([
                    ("n", devs.len().to_string()),
                    ("ranks", list),
                    ("hosts", hosts.len().to_string()),
                ]),
            )?
        }
    } else if devs.len() == 1 {
        t.format("scope.device", &args([("device", list)]))?
    } else {
        // Summed, taken together, across ranks or each device's own: as the formula reads,
        // the same reading that words gate R4.
        let reading = Reading::of(m, ev, crate::scope::Semantics::Clip);
        match &reading.over {
            Over::Rank(rank) => t.format("scope.rank_one", &args([("ranks", rank.clone())]))?,
            _ => t.format(
                reading.devices_label(),
                &args([("n", devs.len().to_string()), ("devices", list)]),
            )?,
        }
    }];
    if let Some(st) = m.params.stream {
        bits.push(t.format("scope.stream", &args([("stream", st.to_string())]))?);
    } else if m.params.stream_auto {
        bits.push(t.get("scope.stream_auto")?.to_string());
    }
    bits.push(match ev.window.requested_ns {
        Some(w) => t.format(
            "scope.window",
            &args([("window", range(t, w[0], w[1], ev.trace.capture_start_ns)?)]),
        )?,
        None => t.get("scope.whole_trace")?.to_string(),
    });
    Ok(bits.join(t.get("ui.list_sep")?))
}

/// The spread of a one-device value over every device of its window, in words.
fn spread_text(
    t: &Strings,
    a: &Audit,
    claim: &str,
    part: &str,
    unit: crate::claims::Unit,
) -> Result<Option<String>, RenderError> {
    let Some(sp) = a.spreads.iter().find(|s| s.claim == claim && s.part == part) else {
        return Ok(None);
    };
    let Some(((dmin, min), (dmax, max))) = sp.range() else { return Ok(None) };
    let devices: Vec<i64> = sp.values.iter().map(|(d, _)| *d).collect();
    let (lo, hi) = (crate::verdict::show(min, unit), crate::verdict::show(max, unit));
    if lo == hi {
        return Ok(Some(t.format(
            "scope.spread_same",
            &args([("value", lo), ("devices", format_device_list(&devices))]),
        )?));
    }
    Ok(Some(t.format(
        "scope.spread",
        &args([
            ("min", crate::verdict::show(min, unit)),
            ("max", crate::verdict::show(max, unit)),
            ("min_device", dmin.to_string()),
            ("max_device", dmax.to_string()),
            ("devices", format_device_list(&devices)),
        ]),
    )?))
}

/// The spread of a value over a set of windows, in words: its lowest and highest window.
fn windows_spread_text(
    t: &Strings,
    samples: &[[String; 2]],
    unit: crate::claims::Unit,
) -> Result<Option<String>, RenderError> {
    use crate::formula::Rational;
    let values: Vec<Rational> = samples
        .iter()
        .filter_map(|[n, d]| Rational::new(n.parse().ok()?, d.parse().ok()?))
        .collect();
    let (Some(min), Some(max)) = (
        values.iter().copied().min_by(|a, b| a.cmp_to(*b)),
        values.iter().copied().max_by(|a, b| a.cmp_to(*b)),
    ) else {
        return Ok(None);
    };
    let (lo, hi) = (crate::verdict::show(min, unit), crate::verdict::show(max, unit));
    let n = values.len().to_string();
    Ok(Some(if lo == hi {
        t.format("scope.spread_windows_same", &args([("value", lo), ("n", n)]))?
    } else {
        t.format("scope.spread_windows", &args([("min", lo), ("max", hi), ("n", n)]))?
    }))
}

/// Whether two steps of a formula show the same number, one with its time unit and one
/// without (`38.78` and `38.78 ms`).
pub fn same_number(a: &str, b: &str) -> bool {
    let bare = |x: &str| {
        let x = x.trim();
        [" ms", " ns", " s"].iter().find_map(|u| x.strip_suffix(u)).unwrap_or(x).to_string()
    };
    bare(a) == bare(b)
}

/// Steps of a formula on one line, each distinct step once.
pub fn formula_steps(steps: &[&str]) -> String {
    let mut out: Vec<String> = Vec::new();
    for s in steps {
        let s = s.trim().to_string();
        match out.last_mut() {
            Some(last) if same_number(last, &s) => *last = s,
            _ => out.push(s),
        }
    }
    out.join(" = ")
}

/// A formula on one line, each distinct step once: `count = 140`, not `count = 140 = 140`.
fn formula_line(f: &crate::verdict::FormulaResult) -> String {
    let result = f.display.clone().unwrap_or_else(|| "n/a".into());
    let steps: Vec<&str> = [
        Some(f.symbolic.as_str()),
        f.definition.as_deref(),
        Some(f.substituted.as_str()),
        Some(result.as_str()),
    ]
    .into_iter()
    .flatten()
    .collect();
    formula_steps(&steps)
}

/// The inputs every section of the context reads.
struct Inputs<'a> {
    a: &'a Audit,
    t: &'a Strings,
    lang: &'a str,
    /// The language's list separator, read once so that a missing key fails before any section.
    sep: &'a str,
}

impl<'a> Inputs<'a> {
    /// A UI string of the language, owned.
    fn label(&self, key: &str) -> Result<String, RenderError> {
        Ok(self.t.get(key)?.to_string())
    }

    /// The ledger entry of an evidence key.
    fn evidence(&self, key: &PlanId) -> Option<&'a crate::audit::LedgerEntry> {
        self.a.ledger.iter().find(|e| &e.key == key)
    }
}

/// What the claims add, one after another, to the sections beyond their own.
#[derive(Default)]
struct Sections {
    /// Scope and value of every measured part, for the summary, the table and the answer.
    scoped: Scoped,
    key_numbers: Vec<KeyNumberCtx>,
    open: Vec<OpenCtx>,
    open_items: Vec<(Vec<crate::claims::Step>, OpenItemCtx)>,
    bounds: Vec<BoundCtx>,
    table: Vec<RowCtx>,
    /// The charts no claim has taken yet.
    charts_left: Vec<ChartCtx>,
}

/// One claim as its parts see it.
struct ClaimIn<'a> {
    claim: &'a crate::claims::Claim,
    r: &'a crate::verdict::ClaimResult,
    statement: &'a str,
    source_label: Option<&'a String>,
}

/// A claim's parts and the evidence they read, as the parts are read in order.
#[derive(Default)]
struct PartsSoFar {
    parts: Vec<PartCtx>,
    blocks: Vec<EvidenceCtx>,
    block_keys: Vec<PlanId>,
    /// The terminal table's evidence column, one item per part.
    evidence_bits: Vec<String>,
}

/// One part of a claim; records its value in `out.scoped`, its bound in `out.bounds`, and the
/// evidence it reads in `so_far`.
fn part_ctx(
    s: &Inputs,
    c: &ClaimIn,
    part: &crate::claims::Part,
    p: &crate::verdict::PartResult,
    so_far: &mut PartsSoFar,
    out: &mut Sections,
) -> Result<PartCtx, RenderError> {
    let (t, a, lang) = (s.t, s.a, s.lang);
    let (claim, r) = (c.claim, c.r);
    let entry = p.evidence.as_ref().and_then(|k| s.evidence(k));
    let ev = entry.and_then(|e| e.evidence.as_ref());
    let compare = part.measure.as_ref().filter(|m| m.compare.is_some());
    let formula = p.formula.as_ref().map(|f| FormulaCtx {
        symbolic: f.symbolic.clone(),
        // A comparison's test stands beside its formula, not inside it.
        substituted: match compare {
            Some(_) => super::experiment::without_test(&f.substituted),
            None => f.substituted.clone(),
        },
        result: f.display.clone().unwrap_or_else(|| "n/a".into()),
    });
    let line = p.formula.as_ref().map(formula_line).map(|l| match compare {
        Some(_) => super::experiment::without_test(&l),
        None => l,
    });
    let (test, controlled) = match (compare, ev) {
        (Some(_), Some(ev)) => (
            super::experiment::test_line(t, ev)?,
            (part.kind == Kind::Causal || part.experiment.is_some())
                .then(|| super::experiment::controlled_line(t, part.experiment.as_ref(), ev))
                .transpose()?,
        ),
        _ => (None, None),
    };
    let scope_short = part::scope(s, claim, part, p, ev)?;
    let spread = match (&part.measure, &p.formula) {
        // Over a set of windows: the lowest and highest window.
        (Some(m), Some(_)) if !p.samples.is_empty() => windows_spread_text(t, &p.samples, m.unit)?,
        (Some(m), Some(_)) if p.value.is_some() => spread_text(t, a, &claim.id, &part.id, m.unit)?,
        _ => None,
    };
    let change = match (p.value, &p.formula) {
        (Some(v), Some(f)) if part.is_change() => Some(change_text(t, v, f.unit)?),
        _ => None,
    };
    if let Some(f) = &formula {
        out.scoped.insert(
            (claim.id.clone(), part.id.clone()),
            Shown {
                value: f.result.clone(),
                scope: scope_short.clone(),
                spread: spread.clone(),
                change: change.clone(),
            },
        );
        // The terminal table shows each value with its fraction.
        if part.kind == Kind::Arithmetic {
            so_far.evidence_bits.push(format!(
                "{}: {} = {} ({})",
                p.id,
                f.substituted,
                f.result,
                t.get("kind.arithmetic")?
            ));
        } else if same_number(&f.substituted, &f.result) {
            so_far.evidence_bits.push(format!("{}: {}", p.id, f.result));
        } else {
            so_far.evidence_bits.push(format!("{}: {} = {}", p.id, f.substituted, f.result));
        }
    } else if p.outcome == PartOutcome::Unverifiable {
        so_far.evidence_bits.push(format!("{}: {}", p.id, t.get("outcome.unverifiable")?));
    }
    let bounds_before = out.bounds.len();
    if part.kind == Kind::Arithmetic
        && p.outcome == PartOutcome::Holds
        && p.formula.as_ref().is_some_and(|f| f.unit == crate::claims::Unit::Times)
        && part.formula.as_ref().is_some_and(|e| {
            e.vars().iter().any(|v| claim.parts.iter().any(|q| &q.id == v && q.measure.is_some()))
        })
        && let Some(f) = &p.formula
    {
        out.bounds.push(BoundCtx {
            label: tr(&part.text, lang).unwrap_or_else(|| c.statement.to_string()),
            value: f.display.clone().unwrap_or_default(),
            formula: formula_line(f),
            caveat: tr(&part.note, lang),
        });
    }
    let mut gates = Vec::new();
    for g in &p.gates {
        let key = match g.status {
            GateStatus::Pass => "pass",
            GateStatus::Note => "note",
            GateStatus::Fail => "fail",
        };
        gates.push(GateCtx {
            id: g.gate.into(),
            gate: s.label(&format!("gate.{}", g.gate))?,
            status_key: key.into(),
            status: s.label(&format!("status.{key}"))?,
            text: t.finding(&g.finding)?,
        });
    }
    let evidence_ref = part::evidence_ref(s, p, part, entry, ev, so_far)?;
    let says = part::says(t, c, part, p)?;
    let in_brief = out.bounds.len() > bounds_before;
    Ok(PartCtx {
        in_brief,
        id: p.id.clone(),
        kind_key: part.kind.as_str().into(),
        kind: s.label(&format!("kind.{}", part.kind.as_str()))?,
        principal: p.id == r.principal,
        text: tr(&part.text, lang),
        outcome_key: p.outcome.key().into(),
        outcome: s.label(&format!("outcome.{}", p.outcome.key()))?,
        reason: t.finding(&p.reason)?,
        formula,
        identity: None,
        condition: p.condition.as_ref().map(|c| t.finding(&c.finding)).transpose()?,
        condition_ok: p.condition.as_ref().is_some_and(|c| c.satisfied),
        says,
        says_ok: p.says.as_ref().is_some_and(|s| s.matches),
        gates: gates.clone(),
        own_gates: gates,
        evidence_ref,
        formula_line: line,
        spread,
        change,
        scope: scope_short,
        command: entry.map(|e| e.command.clone()),
        command_block: entry.map(|e| super::shell::layout(&e.argv, super::shell::REPORT_WIDTH)),
        mapping: tr(&part.mapping, lang),
        needs: p.needs.iter().filter_map(|n| n.get(lang).cloned()).collect(),
        caveats: tr(&part.caveats, lang),
        note: tr(&part.note, lang),
        evidence_notes: Vec::new(),
        test,
        controlled,
    })
}

/// Gates every reader of a piece of evidence shares move to the evidence; a part keeps only the
/// findings that are its own.
fn share_gates(parts: &mut [PartCtx], blocks: &mut [EvidenceCtx]) {
    for b in blocks {
        let readers: Vec<usize> = (0..parts.len())
            .filter(|&i| parts[i].evidence_ref.as_deref() == Some(b.label.as_str()))
            .collect();
        let Some(&first) = readers.first() else { continue };
        let shared: Vec<GateCtx> = parts[first]
            .gates
            .iter()
            .filter(|g| {
                readers.iter().all(|&i| {
                    parts[i]
                        .gates
                        .iter()
                        .any(|h| h.id == g.id && h.status_key == g.status_key && h.text == g.text)
                })
            })
            .cloned()
            .collect();
        for &i in &readers {
            parts[i].own_gates.retain(|g| !shared.iter().any(|s| s.id == g.id));
        }
        b.passed = shared.iter().filter(|g| g.status_key == "pass").map(|g| g.id.clone()).collect();
        b.gates = shared;
        // The identity shows once: not beside a part whose formula already is it.
        if let Some(id) = &b.identity
            && readers
                .iter()
                .any(|&i| parts[i].formula.as_ref().is_some_and(|f| id.starts_with(&f.substituted)))
        {
            b.identity = None;
        }
    }
}

/// One claim with its parts and evidence; adds its key number, open item, table row and
/// charts to `out`. `open_item` is left for `build`, which numbers the open items.
fn claim_ctx(
    s: &Inputs,
    claim: &crate::claims::Claim,
    r: &crate::verdict::ClaimResult,
    out: &mut Sections,
) -> Result<ClaimCtx, RenderError> {
    let (t, a, lang, set) = (s.t, s.a, s.lang, &s.a.claims);
    let verdict = s.label(&format!("verdict.{}", r.verdict.key()))?;
    let statement = claim.statement.get(lang).cloned().unwrap_or_default();
    let source = claim.source.as_ref().and_then(|s| set.sources.iter().find(|x| &x.id == s));
    let source_label = source.and_then(|s| s.label.get(lang).cloned());
    let mut so_far = PartsSoFar::default();
    let c = ClaimIn { claim, r, statement: &statement, source_label: source_label.as_ref() };
    for (part, p) in claim.parts.iter().zip(&r.parts) {
        let ctx = part_ctx(s, &c, part, p, &mut so_far, out)?;
        so_far.parts.push(ctx);
    }
    let PartsSoFar { mut parts, mut blocks, evidence_bits, block_keys, .. } = so_far;
    share_gates(&mut parts, &mut blocks);
    // One piece of evidence needs no label to tell it from another.
    if blocks.len() == 1 {
        for part in &mut parts {
            part.evidence_ref = None;
        }
        blocks[0].label = t.get("ui.evidence")?.to_string();
    }
    let key = key_number(claim, r, lang, &verdict, t, &out.scoped)?;
    let (po, pc) = (t.get("ui.paren_open")?, t.get("ui.paren_close")?);
    // A share says what it is a share of, as R3 read it from the formula.
    let value = match &key.denominator {
        Some(d) => t.format(
            "ui.share_of",
            &args([("value", key.value.clone()), ("denominator", d.clone())]),
        )?,
        None => key.value.clone(),
    };
    let number = match (&key.scope, &key.spread) {
        (Some(sc), Some(sp)) => {
            format!("{value}{po}{sc}{}{sp}{pc}", t.get("ui.semicolon")?)
        }
        (Some(sc), None) => format!("{value}{po}{sc}{pc}"),
        _ => value,
    };
    out.key_numbers.push(key);
    if a.summary.open.contains(&r.id) {
        let needs = what_would_decide(r, lang, t, |k| s.evidence(k))?;
        out.open.push(OpenCtx {
            id: claim.id.clone(),
            verdict: verdict.clone(),
            needs: needs.clone(),
        });
        let planned = claim
            .parts
            .iter()
            .find(|q| q.id == r.principal && !q.work.is_empty())
            .or_else(|| claim.parts.iter().find(|q| !q.work.is_empty()));
        let steps = planned.map(|q| q.work.clone()).unwrap_or_default();
        let plan =
            steps.iter().map(|st| step_text(t, st)).collect::<Result<Vec<_>, RenderError>>()?;
        out.open_items.push((
            steps,
            OpenItemCtx {
                claim: claim.id.clone(),
                statement: statement.clone(),
                verdict: verdict.clone(),
                needs,
                unblocks: planned.and_then(|q| tr(&q.unblocks, lang)),
                plan: (!plan.is_empty()).then(|| plan.join(s.sep)),
            },
        ));
    }
    out.table.push(RowCtx {
        id: claim.id.clone(),
        statement: statement.clone(),
        evidence: evidence_bits.join("; "),
        number,
        verdict_key: r.verdict.key().into(),
        verdict: verdict.clone(),
    });
    // A chart of a claim's own query goes with the first claim that reads that query; any
    // other chart with the first claim that reads its analysis.
    let mut own_charts = Vec::new();
    out.charts_left.retain(|c| {
        let mine = match &c.key {
            Some(k) => block_keys.contains(k),
            None => blocks.iter().any(|b| b.analysis == c.kind),
        };
        if mine {
            own_charts.push(c.clone());
        }
        !mine
    });
    Ok(ClaimCtx {
        id: claim.id.clone(),
        statement,
        source: source_label,
        source_note: source.and_then(|s| tr(&s.note, lang)),
        verdict_key: r.verdict.key().into(),
        verdict,
        reason: t.finding(&r.reason)?,
        review: tr(&claim.review, lang),
        evidence: blocks,
        parts,
        charts: own_charts,
        open_item: None,
    })
}

/// The summary: the verdict counts, the open line, the key numbers, the open claims and the
/// audit's findings.
fn summary_ctx(
    s: &Inputs,
    key_numbers: Vec<KeyNumberCtx>,
    open: Vec<OpenCtx>,
) -> Result<SummaryCtx, RenderError> {
    let (t, a) = (s.t, s.a);
    let mut counts = Vec::new();
    for v in Verdict::ALL {
        counts.push(CountCtx {
            key: v.key().into(),
            label: s.label(&format!("verdict.{}", v.key()))?,
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

    let mut findings = Vec::new();
    let sm = &a.summary;
    for (n, key) in [
        (sm.gate_failures, "ui.finding_gates"),
        (sm.says_mismatches, "ui.finding_says"),
        (sm.arithmetic_failures, "ui.finding_arithmetic"),
        (sm.not_evaluated, "ui.finding_queries"),
    ] {
        if n > 0 {
            findings.push(t.format(key, &[("n".to_string(), n.to_string())].into())?);
        }
    }
    Ok(SummaryCtx {
        counts,
        counts_line: t.format("ui.counts", &count_args)?,
        open_line,
        key_numbers,
        open,
        findings,
    })
}

/// One entry per trace: its identity, clock, devices and range, or its set's ranks and files.
fn traces_ctx(s: &Inputs) -> Vec<TraceCtx> {
    let (t, a, lang, set) = (s.t, s.a, s.lang, &s.a.claims);
    a.traces
        .iter()
        .map(|tr_| {
            let decl = set.trace(&tr_.name);
            let c = tr_.coverage.as_ref();
            // Coverage fields, exactly, or None for a trace that could not be read.
            let field = |f: &str| {
                c.and_then(|c| c.field(f).ok().flatten())
                    .and_then(|r| i64::try_from(r.num).ok().filter(|_| r.den == 1))
            };
            // A set of several files: its ranks by label, its clock, its files.
            let set_info = c.and_then(|c| c.trace.set.as_deref()).filter(|s| s.files.len() > 1);
            TraceCtx {
                name: tr_.name.clone(),
                label: decl.and_then(|d| tr(&d.label, lang)),
                path: tr_.path.clone(),
                sha256: c.map(|c| c.trace.sha256.clone()).unwrap_or_default(),
                schema_label: t
                    .get(match c.and_then(|c| c.trace.format.as_deref()) {
                        Some(_) => "ui.format",
                        None => "ui.schema",
                    })
                    .map(str::to_string)
                    .unwrap_or_default(),
                schema: {
                    let schema = c
                        .and_then(|c| c.trace.schema_version.clone())
                        .unwrap_or_else(|| "-".into());
                    // Each format says its own version fields.
                    match c.and_then(|c| c.trace.format.as_deref()) {
                        Some(_) => format!(
                            "PyTorch profiler JSON, schemaVersion {}",
                            schema.trim_start_matches("kineto ")
                        ),
                        None => schema,
                    }
                },
                nsys_version: match c.and_then(|c| c.trace.format.as_deref()) {
                    Some(_) => None,
                    None => Some(
                        c.and_then(|c| c.trace.nsys_version.clone()?).unwrap_or_else(|| "-".into()),
                    ),
                },
                time_base: match set_info {
                    Some(s) => t
                        .format(
                            "ui.set_clock",
                            &args([
                                ("files", s.files.len().to_string()),
                                ("hosts", s.hosts().len().to_string()),
                            ]),
                        )
                        .unwrap_or_default(),
                    None => c.map(|c| c.trace.time_base.clone()).unwrap_or_default(),
                },
                present: match set_info {
                    Some(s) => t
                        .format(
                            "ui.set_ranks",
                            &args([(
                                "ranks",
                                s.ranks
                                    .iter()
                                    .map(|r| format!("{} {}", r.rank, r.label))
                                    .collect::<Vec<_>>()
                                    .join(", "),
                            )]),
                        )
                        .unwrap_or_default(),
                    None => {
                        c.map(|c| format_device_list(&c.scope.present_devices)).unwrap_or_default()
                    }
                },
                missing: c
                    .filter(|c| !c.scope.missing_devices.is_empty())
                    .map(|c| {
                        t.format(
                            "ui.missing_list",
                            &args([("devices", format_device_list(&c.scope.missing_devices))]),
                        )
                    })
                    .transpose()
                    .ok()
                    .flatten()
                    .unwrap_or_default(),
                kernels: field("kernels").map_or_else(|| "n/a".into(), |k| thousands(k.into())),
                range: field("first_start_ns")
                    .zip(field("last_end_ns"))
                    .and_then(|(a, b)| {
                        range(t, a, b, c.and_then(|c| c.trace.capture_start_ns)).ok()
                    })
                    .unwrap_or_default(),
                error: tr_.error.clone(),
                origin: if set_info.is_some() {
                    None
                } else {
                    c.map(|c| origin_text(t, &c.trace)).transpose().ok().flatten().flatten()
                },
                files: set_info.map_or_else(Vec::new, |s| set_files(t, s)),
            }
        })
        .collect()
}

/// One entry per declared scope: its trace, window, semantics and devices (or ranks).
fn scopes_ctx(s: &Inputs) -> Vec<ScopeCtx> {
    let (t, a, set) = (s.t, s.a, &s.a.claims);
    let origin = |trace: &str| {
        a.traces
            .iter()
            .find(|x| x.name == trace)
            .and_then(|x| x.coverage.as_ref())
            .and_then(|c| c.trace.capture_start_ns)
    };
    set.scopes
        .values()
        .map(|s| ScopeCtx {
            name: s.name.clone(),
            trace: s.trace.clone(),
            window: s.window.map_or_else(
                || match (&s.nvtx, &s.window_text) {
                    // A window from NVTX ranges: as written; each evidence says what it resolved to.
                    (Some(_), Some(text)) => text.clone(),
                    _ => t.get("ui.whole_trace").unwrap_or("").to_string(),
                },
                |w| {
                    format!(
                        "{}{}{} ms{}",
                        range(t, w.start_ns, w.end_ns, origin(&s.trace)).unwrap_or_default(),
                        t.get("ui.paren_open").unwrap_or(" ("),
                        ms(w.len_ns()),
                        t.get("ui.paren_close").unwrap_or(")")
                    )
                },
            ),
            semantics: s.semantics.to_string(),
            devices: scope_devices(t, set, s),
        })
        .collect()
}

/// A scope's devices in words: `device 0`, `devices 0-1`, `ranks 0-5`, `all devices`.
fn scope_devices(t: &Strings, set: &crate::claims::ClaimSet, s: &crate::claims::Scope) -> String {
    match (&s.devices, set.trace(&s.trace).is_some_and(|d| d.set.is_some())) {
        (crate::scope::DeviceSel::All, true) => t.get("ui.all_ranks").unwrap_or("").to_string(),
        (crate::scope::DeviceSel::Set(v), true) => t
            .format(
                if v.len() == 1 { "scope.rank_one" } else { "scope.ranks_list" },
                &args([("ranks", format_device_list(v))]),
            )
            .unwrap_or_default(),
        (crate::scope::DeviceSel::All, false) => t.get("ui.all_devices").unwrap_or("").to_string(),
        (crate::scope::DeviceSel::Set(v), false) if v.len() == 1 => {
            t.format("scope.device", &args([("device", format_device_list(v))])).unwrap_or_default()
        }
        (crate::scope::DeviceSel::Set(v), false) => t
            .format("scope.devices", &args([("devices", format_device_list(v))]))
            .unwrap_or_default(),
    }
}

/// The two sides of a comparison in words, by their traces' labels (never the scopes' ids,
/// which a reader of a post does not know): `after on device 0`, `before on device 0`. With
/// `devices` false the devices are left to the sentence, which names the one that decided.
/// Two sides on the same trace and devices are told apart by their windows.
pub(crate) fn compare_sides(
    a: &Audit,
    t: &Strings,
    scopes: [&str; 2],
    devices: bool,
) -> Result<[String; 2], RenderError> {
    let set = &a.claims;
    let one = |name: &str, window: bool| -> Result<String, RenderError> {
        let Some(s) = set.scopes.get(name) else { return Ok(name.to_string()) };
        let trace = set
            .trace(&s.trace)
            .and_then(|d| d.label.as_ref())
            .and_then(|l| l.get(&t.lang).cloned())
            .unwrap_or_else(|| s.trace.clone());
        let mut side = if devices {
            t.format(
                "scope.compare_side",
                &args([("trace", trace), ("devices", scope_devices(t, set, s))]),
            )?
        } else {
            trace
        };
        if window {
            let w = s
                .window_text
                .clone()
                .unwrap_or_else(|| t.get("ui.whole_trace").unwrap_or("").to_string());
            side = t.format("scope.compare_side_window", &args([("side", side), ("window", w)]))?;
        }
        Ok(super::blog::spaced(&side, &t.lang))
    };
    let plain = [one(scopes[0], false)?, one(scopes[1], false)?];
    if plain[0] != plain[1] {
        return Ok(plain);
    }
    Ok([one(scopes[0], true)?, one(scopes[1], true)?])
}

/// One entry per ledger command, with the parts that read it, then the chart-data commands.
fn provenance_ctx(s: &Inputs) -> Result<Vec<ProvenanceCtx>, RenderError> {
    let (t, a) = (s.t, s.a);
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
                        .filter(|p| p.evidence.as_ref() == Some(&e.key))
                        .map(move |p| format!("{}/{}", r.id, p.id))
                })
                .collect();
            // A comparison's side (or run, or device) query is read by the comparison's part.
            let sides: Vec<String> = a
                .claims
                .claims
                .iter()
                .flat_map(|c| {
                    c.parts
                        .iter()
                        .filter(|p| {
                            p.measure.as_ref().and_then(|m| m.compare.as_ref()).is_some_and(|cm| {
                                cm.queries().into_iter().any(|q| a.claims.plan_id(q) == e.key)
                            })
                        })
                        .map(move |p| format!("{}/{}", c.id, p.id))
                })
                .collect();
            let parts = match (parts.is_empty(), sides.is_empty()) {
                (false, _) | (true, true) => parts.join(", "),
                (true, false) => {
                    t.format("ui.parts_compare_side", &args([("parts", sides.join(", "))]))?
                }
            };
            Ok(ProvenanceCtx {
                command: super::shell::layout(&e.argv, super::shell::REPORT_WIDTH),
                parts,
                details: e
                    .evidence
                    .as_ref()
                    .map(|ev| rank_lines(t, ev))
                    .transpose()?
                    .unwrap_or_default(),
            })
        })
        .collect::<Result<_, RenderError>>()?;
    for e in &a.context {
        provenance.push(ProvenanceCtx {
            command: super::shell::layout(&e.argv, super::shell::REPORT_WIDTH),
            parts: t.get("ui.chart_data")?.to_string(),
            details: Vec::new(),
        });
    }
    Ok(provenance)
}

/// The misreadings the judge found, as title and text.
fn misreadings_ctx(s: &Inputs) -> Result<Vec<MisreadingCtx>, RenderError> {
    s.a.misreadings
        .iter()
        .map(|m| {
            Ok(MisreadingCtx {
                title: s.t.format(&format!("{}.title", m.key), &m.args)?,
                text: s.t.format(&format!("{}.text", m.key), &m.args)?,
            })
        })
        .collect()
}

/// Builds the context of one language. `charts` lists the chart files written beside it,
/// with their captions; `meta` what the render adds (profile, date, file facts).
pub fn build(
    a: &Audit,
    t: &Strings,
    charts: &[ChartIn],
    meta: &Meta,
) -> Result<RenderContext, RenderError> {
    let lang = t.lang.as_str();
    let set = &a.claims;
    let s = Inputs { a, t, lang, sep: t.get("ui.list_sep")? };

    let mut out = Sections {
        charts_left: charts
            .iter()
            .map(|c| ChartCtx {
                file: c.file.clone(),
                md_src: c.file.clone(),
                caption: c.caption.clone(),
                kind: chart_kind(&c.file),
                key: c.key.clone(),
            })
            .collect(),
        ..Sections::default()
    };
    let mut claims = set
        .claims
        .iter()
        .zip(&a.results)
        .map(|(claim, r)| claim_ctx(&s, claim, r, &mut out))
        .collect::<Result<Vec<_>, RenderError>>()?;
    let Sections { scoped, mut key_numbers, open, mut open_items, bounds, table, charts_left } =
        out;

    // The bad news first: a refuted claim's number leads the list.
    key_numbers.sort_by_key(|k| k.verdict_key != "not_supported");
    // Cheapest first: by the cheapest step's effort class, then its kind of work; an item
    // with no stated effort or work last.
    open_items.sort_by_key(|(steps, _)| cheapest(steps));
    for c in &mut claims {
        c.open_item = open_items
            .iter()
            .position(|(_, o)| o.claim == c.id)
            .map(|i| t.format("ui.see_open_item", &args([("n", (i + 1).to_string())])))
            .transpose()?;
    }

    let summary = summary_ctx(&s, key_numbers, open)?;
    let traces = traces_ctx(&s);
    let traces_for_brief: Vec<(String, crate::trace::Origin)> = a
        .traces
        .iter()
        .map(|x| {
            (
                x.name.clone(),
                x.coverage.as_ref().map(|c| c.trace.origin.clone()).unwrap_or_default(),
            )
        })
        .collect();
    let scopes = scopes_ctx(&s);
    let provenance = provenance_ctx(&s)?;
    let brief = brief(a, t, meta, &scoped, bounds, open_items, &traces_for_brief)?;
    let legend = legend(t)?;
    let definitions = definitions(a, t)?;
    let provenance_facts = provenance_facts(a, t, meta)?;
    let ab_reading = super::experiment::reading(t, set, |m| {
        s.evidence(&set.plan_id(m)).and_then(|e| e.evidence.as_ref())
    })?;

    Ok(RenderContext {
        lang: lang.into(),
        t: t.keys().map(|k| (k.clone(), t.get(k).unwrap_or("").to_string())).collect(),
        report: ReportCtx {
            id: set.report.id.clone(),
            title: set.report.title.get(lang).cloned().unwrap_or_default(),
            question: tr(&set.report.question, lang),
            author: set.report.author.clone(),
            date: set.report.date.clone(),
            claims_file: crate::trace::open::normalize(std::path::Path::new(&set.file))
                .display()
                .to_string(),
        },
        tool: format!("{} {}", a.tool.name, a.tool.version),
        summary,
        traces,
        scopes,
        table,
        claims,
        misreadings: misreadings_ctx(&s)?,
        charts: charts_left,
        provenance,
        r6: tr(&set.review.r6, lang),
        next: tr(&set.review.next, lang),
        reviewer: tr(&set.review.reviewer, lang),
        profile: if meta.profile.is_empty() { "full".into() } else { meta.profile.clone() },
        brief,
        legend,
        provenance_facts,
        definitions,
        ab_reading,
    })
}

//! Page 1 of a report, the brief: the answer, the bounds, the decision the open items ask
//! for, gathered into steps of work with their budget, the sources and the conditions of the
//! audit, and what the traces stand for when a tool made them.

use super::*;
use crate::render::RenderError;

/// Page 1: the answer, the bounds, the decision, the open items, sources and conditions.
pub(super) fn brief(
    a: &Audit,
    t: &Strings,
    meta: &Meta,
    scoped: &Scoped,
    bounds: Vec<BoundCtx>,
    open_items: Vec<(Vec<crate::claims::Step>, OpenItemCtx)>,
    derived: &[(String, crate::trace::Origin)],
) -> Result<BriefCtx, RenderError> {
    let lang = t.lang.as_str();
    let set = &a.claims;
    let answer = match tr(&set.report.answer, lang) {
        Some(text) => fill_placeholders(&text, t, scoped)?,
        None => default_answer(a, t, scoped)?,
    };
    let sources = set
        .sources
        .iter()
        .map(|s| SourceCtx {
            label: s.label.get(lang).cloned().unwrap_or_else(|| s.id.clone()),
            note: tr(&s.note, lang),
            claims: set.claims.iter().filter(|c| c.source.as_deref() == Some(&s.id)).count(),
            claims_text: String::new(),
        })
        .collect::<Vec<_>>();
    let sources = sources
        .into_iter()
        .map(|mut s| {
            s.claims_text = t.format("ui.claims_count", &args([("n", s.claims.to_string())]))?;
            Ok(s)
        })
        .collect::<Result<Vec<_>, RenderError>>()?;
    let conditions = conditions(a, t, meta)?;
    let trace_conditions = trace_conditions(a, t)?;
    let origin_warnings = origin_warnings(set, t, derived)?;
    let (steps, budget, gated) = decision_steps(t, &open_items)?;
    let next = steps.first().map(|st| st.text.clone());
    Ok(BriefCtx {
        answer,
        bounds,
        decision: tr(&set.report.decision, lang),
        steps,
        budget,
        gated,
        next,
        open_items: open_items.into_iter().map(|(_, o)| o).collect(),
        sources,
        conditions,
        trace_conditions,
        origin_warnings,
    })
}

/// The answer of a report whose author wrote none: the counts of the verdicts, and the first
/// measured principal part with its scope.
fn default_answer(a: &Audit, t: &Strings, scoped: &Scoped) -> Result<String, RenderError> {
    let lang = t.lang.as_str();
    let set = &a.claims;
    let counts: BTreeMap<String, String> = Verdict::ALL
        .iter()
        .map(|v| {
            (v.key().to_string(), a.summary.counts.get(v.key()).copied().unwrap_or(0).to_string())
        })
        .collect();
    let mut s = t.format("ui.counts", &counts)?;
    s.push_str(t.get("ui.sentence_end")?);
    for (c, r) in set.claims.iter().zip(&a.results) {
        if let Some(Shown { value: v, scope: Some(sc), .. }) =
            scoped.get(&(c.id.clone(), r.principal.clone()))
        {
            s += &t.format(
                "ui.default_answer",
                &args([
                    ("statement", c.statement.get(lang).cloned().unwrap_or_default()),
                    ("verdict", t.get(&format!("verdict.{}", r.verdict.key()))?.to_string()),
                    (
                        "value",
                        format!("{v}{}{sc}{}", t.get("ui.paren_open")?, t.get("ui.paren_close")?),
                    ),
                ]),
            )?;
            break;
        }
    }
    Ok(s)
}

/// The conditions of the audit: who reviewed it and when, its author, the tool and the
/// render date, each when known.
fn conditions(a: &Audit, t: &Strings, meta: &Meta) -> Result<Vec<KvCtx>, RenderError> {
    let lang = t.lang.as_str();
    let set = &a.claims;
    let mut conditions = Vec::new();
    let mut kv = |key: &str, value: String| -> Result<(), RenderError> {
        conditions.push(KvCtx { key: t.get(key)?.to_string(), value, code: false });
        Ok(())
    };
    if let Some(r) = tr(&set.review.reviewer, lang) {
        kv("ui.cond_reviewer", r)?;
    }
    if let Some(d) = set.review.date.as_ref().or(set.report.date.as_ref()) {
        kv("ui.cond_date", d.clone())?;
    }
    if let Some(au) = &set.report.author {
        kv("ui.cond_author", au.clone())?;
    }
    kv("ui.cond_tool", tool_text(t, &a.tool)?)?;
    if let Some(d) = &meta.render_date {
        kv("ui.cond_rendered", d.clone())?;
    }
    Ok(conditions)
}

/// One condition per trace: its path, where it came from and how to obtain it.
fn trace_conditions(a: &Audit, t: &Strings) -> Result<Vec<KvCtx>, RenderError> {
    let set = &a.claims;
    let mut trace_conditions = Vec::new();
    for tr_ in &a.traces {
        let origin = tr_
            .coverage
            .as_ref()
            .map(|c| origin_text(t, &c.trace))
            .transpose()?
            .flatten()
            .unwrap_or_else(|| t.get("ui.origin_unknown").unwrap_or("").to_string());
        let mut value = format!("{} · {origin}", tr_.path);
        if let Some(o) =
            set.traces.iter().find(|d| d.name == tr_.name).and_then(|d| d.obtain.as_ref())
        {
            value +=
                &format!(" · {}", t.format("ui.origin_obtain", &args([("obtain", o.clone())]))?);
        }
        trace_conditions.push(KvCtx {
            key: format!("{} {}", t.get("ui.trace")?, tr_.name),
            value,
            code: false,
        });
    }
    Ok(trace_conditions)
}

/// The notices on traces a tool made. A slice of a real capture is said to be one, with its
/// window and its capture; a trace a tool made is not a capture at all. One notice per
/// generator: the runs of an A/B made by one are one notice, naming each trace.
fn origin_warnings(
    set: &crate::claims::ClaimSet,
    t: &Strings,
    derived: &[(String, crate::trace::Origin)],
) -> Result<Vec<String>, RenderError> {
    let lang = t.lang.as_str();
    let mut origin_warnings: Vec<String> = Vec::new();
    // (generator, what the author says the traces stand for) -> the traces.
    type Group<'a> = ((&'a String, Option<String>), Vec<String>);
    let mut by_origin: Vec<Group> = Vec::new();
    for (name, o) in derived {
        let Some(by) = &o.derived_by else { continue };
        if let (Some(from), Some([a, b])) = (&o.derived_from, o.derived_window_ns) {
            origin_warnings.push(t.format(
                "ui.origin_slice",
                &args([
                    ("trace", name.clone()),
                    ("length", format!("{} ms", crate::units::ms(b - a))),
                    ("from", from.clone()),
                    ("window", format!("{}-{}", format_seconds(a), format_seconds(b))),
                    ("by", by.clone()),
                ]),
            )?);
            continue;
        }
        // What the author says the file stands for groups it too: one notice per generator
        // and sentence.
        let stands_for =
            set.traces.iter().find(|d| &d.name == name).and_then(|d| tr(&d.stands_for, lang));
        let key = (by, stands_for);
        match by_origin.iter_mut().find(|(k, _)| *k == key) {
            Some((_, names)) => names.push(name.clone()),
            None => by_origin.push((key, vec![name.clone()])),
        }
    }
    for ((by, stands_for), names) in by_origin {
        let many = names.len() > 1;
        let mut a = args([("by", by.clone())]);
        if many {
            a.insert("list".into(), names.join(t.get("ui.list_sep")?));
        } else {
            a.insert("trace".into(), names[0].clone());
        }
        let key = match (&stands_for, many) {
            (Some(sf), _) => {
                a.insert("stands_for".into(), sf.clone());
                if many { "ui.origin_stand_in_many" } else { "ui.origin_stand_in" }
            }
            (None, true) => "ui.origin_warning_many",
            (None, false) => "ui.origin_warning",
        };
        origin_warnings.push(t.format(key, &a)?);
    }
    Ok(origin_warnings)
}

/// The cost of an item's cheapest step, for ordering: effort class, then kind of work; no
/// stated effort sorts after every stated one, no work after all.
pub(super) fn cheapest(
    steps: &[crate::claims::Step],
) -> (bool, bool, Option<crate::claims::Effort>, Option<crate::claims::Work>) {
    steps
        .iter()
        .map(|st| (false, st.effort.is_none(), st.effort, Some(st.kind)))
        .min()
        .unwrap_or((true, true, None, None))
}

/// A step of work in words: its kind, effort and size (`A/B runs (days; 6 runs, 24 GPU-hours)`).
pub(super) fn step_text(t: &Strings, st: &crate::claims::Step) -> Result<String, RenderError> {
    let mut text = t.get(&format!("work.{}", st.kind.as_str()))?.to_string();
    let mut bits = Vec::new();
    if let Some(e) = st.effort {
        bits.push(t.get(&format!("effort.{}", e.as_str()))?.to_string());
    }
    bits.extend(size_text(t, st.runs, st.gpu_hours, st.people)?);
    if !bits.is_empty() {
        text += &format!(
            "{}{}{}",
            t.get("ui.paren_open")?,
            bits.join(t.get("ui.semicolon")?),
            t.get("ui.paren_close")?
        );
    }
    Ok(text)
}

/// Runs, GPU-hours and people in words; None when none is stated.
fn size_text(
    t: &Strings,
    runs: Option<u32>,
    gpu_hours: Option<u32>,
    people: Option<u32>,
) -> Result<Option<String>, RenderError> {
    let mut bits = Vec::new();
    for (key, n) in
        [("ui.size_runs", runs), ("ui.size_gpu_hours", gpu_hours), ("ui.size_people", people)]
    {
        if let Some(n) = n {
            let key = if n == 1 { format!("{key}_one") } else { key.to_string() };
            bits.push(t.format(&key, &args([("n", thousands(n.into()))]))?);
        }
    }
    Ok((!bits.is_empty()).then(|| bits.join(t.get("ui.list_sep").unwrap_or(", "))))
}

/// The decision page 1 asks for: the open items' steps gathered by kind of work, cheapest
/// first. A kind's effort is the largest its items state; runs and GPU-hours add up (each
/// item's runs are its own experiment), people is the most any item needs at once. Each
/// decision (an item's `unblocks`) is decided by the first step that serves it; a later step
/// serving it too is gated on that one ("if step 2 leaves it open, ..."), so no two steps
/// decide the same thing. Also the budget the steps add up to, and whether any step is gated
/// (the budget is then a most).
fn decision_steps(
    t: &Strings,
    open_items: &[(Vec<crate::claims::Step>, OpenItemCtx)],
) -> Result<(Vec<DecisionStepCtx>, Option<String>, bool), RenderError> {
    use crate::claims::{Effort, Work};
    struct Group {
        kind: Work,
        effort: Option<Effort>,
        runs: Option<u32>,
        gpu_hours: Option<u32>,
        people: Option<u32>,
        items: Vec<usize>,
    }
    let add = |a: Option<u32>, b: Option<u32>| match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
    };
    let mut groups: Vec<Group> = Vec::new();
    for (i, (steps, _)) in open_items.iter().enumerate() {
        for st in steps {
            let g = match groups.iter_mut().position(|g| g.kind == st.kind) {
                Some(at) => &mut groups[at],
                None => {
                    groups.push(Group {
                        kind: st.kind,
                        effort: None,
                        runs: None,
                        gpu_hours: None,
                        people: None,
                        items: Vec::new(),
                    });
                    groups.last_mut().expect("just pushed")
                }
            };
            g.effort = g.effort.max(st.effort);
            g.runs = add(g.runs, st.runs);
            g.gpu_hours = add(g.gpu_hours, st.gpu_hours);
            g.people = g.people.max(st.people);
            if !g.items.contains(&(i + 1)) {
                g.items.push(i + 1);
            }
        }
    }
    groups.sort_by_key(|g| (g.effort.is_none(), g.effort, g.kind));
    // Each decision, in the order of the first step that serves it: that step decides it.
    let mut first: Vec<(&str, usize)> = Vec::new();
    for (at, g) in groups.iter().enumerate() {
        for &i in &g.items {
            if let Some(u) = &open_items[i - 1].1.unblocks
                && !first.iter().any(|(d, _)| *d == u.as_str())
            {
                first.push((u.as_str(), at));
            }
        }
    }
    let sep = t.get("ui.list_sep")?;
    let (mut runs, mut gpu_hours, mut gated) = (None, None, false);
    let mut out = Vec::new();
    for (at, g) in groups.into_iter().enumerate() {
        runs = add(runs, g.runs);
        gpu_hours = add(gpu_hours, g.gpu_hours);
        // This step's decisions: its own, then those gated on each earlier step, by step.
        let mut own: Vec<&str> = Vec::new();
        let mut on: Vec<(usize, Vec<&str>)> = Vec::new();
        for &i in &g.items {
            let Some(u) = open_items[i - 1].1.unblocks.as_deref() else { continue };
            let from = first.iter().find(|(d, _)| *d == u).map(|(_, s)| *s).unwrap_or(at);
            if from == at {
                if !own.contains(&u) {
                    own.push(u);
                }
            } else {
                match on.iter_mut().find(|(s, _)| *s == from) {
                    Some((_, list)) if !list.contains(&u) => list.push(u),
                    Some(_) => {}
                    None => on.push((from, vec![u])),
                }
            }
        }
        on.sort_by_key(|(s, _)| *s);
        let mut bits = Vec::new();
        if !own.is_empty() {
            bits.push(t.format("ui.decides", &args([("list", own.join(sep))]))?);
        }
        for (from, list) in &on {
            gated = true;
            let key = if list.len() > 1 { "ui.decides_if_open_many" } else { "ui.decides_if_open" };
            bits.push(t.format(
                key,
                &args([("step", (from + 1).to_string()), ("list", list.join(sep))]),
            )?);
        }
        let st = crate::claims::Step {
            kind: g.kind,
            effort: g.effort,
            runs: g.runs,
            gpu_hours: g.gpu_hours,
            people: g.people,
        };
        let semicolon = t.get("ui.semicolon")?;
        let decides = (!bits.is_empty()).then(|| bits.join(semicolon));
        out.push(DecisionStepCtx { text: step_text(t, &st)?, items: g.items, decides });
    }
    let budget = size_text(t, runs, gpu_hours, None)?;
    Ok((out, budget, gated))
}

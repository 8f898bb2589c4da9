//! The eval report: the conditions held and varied, the scores by group and by answer, the
//! differences between groups with their intervals, an A|B chart of evidence reached per
//! answer, the blind review and the misreadings that apply, in Markdown and Typst, in one
//! language. Every number is formatted here from the evaluation; judging is `eval`'s.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::eval::{Evaluation, SCORES};
use crate::i18n::{Finding, Strings};
use crate::render::RenderError;

#[derive(Serialize)]
struct Row {
    label: String,
    cells: Vec<String>,
}

#[derive(Serialize)]
struct DiffRow {
    label: String,
    delta: String,
    interval: String,
    p: String,
    n: String,
}

#[derive(Serialize)]
struct AnswerRow {
    claims: String,
    group: String,
    cells: Vec<String>,
}

#[derive(Serialize)]
struct Varied {
    name: String,
    values: String,
}

#[derive(Serialize)]
struct ReviewRow {
    answer: String,
    sheet: String,
    grades: String,
}

#[derive(Serialize)]
struct ReviewCtx {
    rows: Vec<ReviewRow>,
    agreement: Vec<String>,
}

#[derive(Serialize)]
struct Mis {
    title: String,
    text: String,
}

#[derive(Serialize)]
struct ChartCtx {
    file: String,
    caption: String,
}

#[derive(Serialize)]
struct RubricRow {
    name: String,
    text: String,
}

/// One chart of the eval report: its file name and SVG.
pub struct EvalChart {
    /// `ID.LANG.met-evidence.svg`.
    pub file: String,
    /// The SVG document.
    pub svg: String,
}

/// The scores a report shows: the rubric's, and the reviewers' where there are grades.
fn shown_scores(ev: &Evaluation) -> Vec<&'static str> {
    let mut s: Vec<&'static str> = SCORES.iter().map(|(k, _, _)| *k).collect();
    if ev.review.is_some() {
        s.extend(["usefulness_median", "next_step_good"]);
    }
    s
}

/// The misreadings an evaluation could lead into, from its own numbers.
pub fn misreadings(ev: &Evaluation) -> Vec<Finding> {
    let mut out = Vec::new();
    let med = |g: &str, s: &str| ev.groups.get(g).and_then(|m| m.get(s)).map(|x| x.median);
    let names: Vec<&String> = ev.groups.keys().collect();
    for a in &names {
        for b in &names {
            if a == b {
                continue;
            }
            if let (Some(sa), Some(sb), Some(ma), Some(mb)) = (
                med(a, "supported"),
                med(b, "supported"),
                med(a, "measurable_parts"),
                med(b, "measurable_parts"),
            ) && sa > sb
                && ma < mb
            {
                out.push(Finding::new(
                    "mis.eval_supported_fewer",
                    &[
                        ("better", (*a).clone()),
                        ("s_better", sa.to_string()),
                        ("s_other", sb.to_string()),
                        ("m_better", ma.to_string()),
                        ("m_other", mb.to_string()),
                    ],
                ));
            }
        }
    }
    for (g, scores) in &ev.groups {
        if scores.get("claims").is_some_and(|s| s.n == 1) {
            out.push(Finding::new("mis.eval_anecdote", &[("group", g.clone())]));
        }
    }
    let largest = ev.groups.values().filter_map(|s| s.get("claims")).map(|s| s.n).max();
    if largest.is_some_and(|n| n > 1 && n < crate::stats::FEW_SAMPLES) {
        out.push(Finding::new("mis.eval_few", &[("n", largest.unwrap_or(0).to_string())]));
    }
    out
}

/// The A|B chart of `met_evidence` per answer, first group (A) against the second (B).
pub fn charts(ev: &Evaluation, t: &Strings, id: &str) -> Result<Vec<EvalChart>, RenderError> {
    let names: Vec<&String> = ev.groups.keys().collect();
    let [a, b] = names[..] else { return Ok(Vec::new()) };
    let side = |g: &String, tag: &str| {
        let values: Vec<i64> = ev
            .answers
            .iter()
            .filter(|x| x.conditions.get(&ev.eval.groups) == Some(g))
            .map(|x| x.scores.get("met_evidence").copied().unwrap_or(0))
            .collect();
        let median = ev.groups[g].get("met_evidence").map_or(0, |s| s.median);
        crate::render::charts::AbSide {
            label: format!("{tag}: {g}"),
            values_ns: values,
            median_ns: median,
        }
    };
    let labels = crate::render::charts::AbLabels::new(t)?;
    let svg = crate::render::charts::ab_chart(
        &side(a, "A"),
        &side(b, "B"),
        crate::render::charts::AbUnit::Count,
        true,
        &labels,
    );
    Ok(vec![EvalChart { file: format!("{id}.{}.met-evidence.svg", t.lang), svg }])
}

/// The report of an evaluation in one language and format.
pub fn report(
    ev: &Evaluation,
    t: &Strings,
    format: crate::render::templates::Format,
) -> Result<String, RenderError> {
    let lang = t.lang.as_str();
    let tr = |x: &crate::claims::Text| x.get(lang).or_else(|| x.values().next()).cloned();
    let scores = shown_scores(ev);
    let label = |s: &str| score_label(t, s);
    let groups: Vec<String> = ev.groups.keys().cloned().collect();
    let group_rows = group_rows(ev, &scores, &groups, t)?;
    let differences = ev
        .differences
        .iter()
        .map(|d| {
            Ok(DiffRow {
                label: label(&d.score)?,
                delta: format!("{:+}", d.delta),
                interval: d.interval.map_or("-".into(), |[a, b]| format!("{a} – {b}")),
                p: d.p_value.map_or("-".into(), |p| format!("{p:.3}")),
                n: format!("{} / {}", d.n[0], d.n[1]),
            })
        })
        .collect::<Result<Vec<_>, RenderError>>()?;
    let answer_rows: Vec<AnswerRow> = ev
        .answers
        .iter()
        .map(|a| AnswerRow {
            claims: a.claims.clone(),
            group: a.conditions.get(&ev.eval.groups).cloned().unwrap_or_default(),
            cells: scores
                .iter()
                .map(|s| a.scores.get(*s).map_or("-".into(), |v| v.to_string()))
                .collect(),
        })
        .collect();
    let review = ev.review.as_ref().map(|r| review(ev, r, t)).transpose()?;
    let misreadings = misreading_texts(ev, t)?;
    let charts = chart_captions(ev, t)?;
    let controlled = if ev.controlled {
        t.get("eval.controlled")?.to_string()
    } else {
        let args: BTreeMap<String, String> =
            [("list".to_string(), ev.uncontrolled.join(", "))].into_iter().collect();
        t.format("eval.not_controlled", &args)?
    };
    let rubric = rubric(&scores);
    let mut ctx = tera::Context::new();
    ctx.insert("lang", lang);
    ctx.insert("t", &t.table());
    ctx.insert("title", &tr(&ev.eval.title).unwrap_or_default());
    ctx.insert("question", &ev.eval.question.as_ref().and_then(tr));
    ctx.insert("groups_by", &ev.eval.groups);
    ctx.insert("groups_list", &groups.join(", "));
    ctx.insert(
        "held",
        &if ev.eval.held.is_empty() {
            t.get("eval.none")?.to_string()
        } else {
            ev.eval.held.join(", ")
        },
    );
    ctx.insert(
        "varied",
        &ev.varied
            .iter()
            .map(|(k, v)| Varied { name: k.clone(), values: v.join(", ") })
            .collect::<Vec<_>>(),
    );
    ctx.insert("controlled", &controlled);
    ctx.insert("groups", &groups);
    ctx.insert("group_rows", &group_rows);
    ctx.insert("differences", &differences);
    ctx.insert("differences_note", t.get("eval.differences_note")?);
    ctx.insert("charts", &charts);
    ctx.insert(
        "score_labels",
        &scores.iter().map(|s| label(s)).collect::<Result<Vec<_>, RenderError>>()?,
    );
    ctx.insert("answer_rows", &answer_rows);
    ctx.insert("review", &review);
    ctx.insert("misreadings", &misreadings);
    ctx.insert("rubric", &rubric);
    let tera = crate::render::templates::tera(format, None)?;
    let name = format!("eval{}", format.suffix());
    tera.render(&name, &ctx).map_err(|e| RenderError::template(&name, None, &e))
}

/// The label of score `s` in the report's language.
fn score_label(t: &Strings, s: &str) -> Result<String, RenderError> {
    Ok(t.get(&format!("eval.score.{s}"))?.to_string())
}

/// One row per shown score (`scores`), with its median and range in each of `groups`; the
/// reviewers' scores are summarized from the answers' own.
fn group_rows(
    ev: &Evaluation,
    scores: &[&str],
    groups: &[String],
    t: &Strings,
) -> Result<Vec<Row>, RenderError> {
    let mut group_rows = Vec::new();
    for s in scores {
        let mut cells = Vec::new();
        for g in groups {
            let cell = match s {
                &"usefulness_median" | &"next_step_good" => {
                    let v: Vec<i64> = ev
                        .answers
                        .iter()
                        .filter(|a| a.conditions.get(&ev.eval.groups) == Some(g))
                        .filter_map(|a| a.scores.get(*s).copied())
                        .collect();
                    crate::stats::summarize(&v)
                        .map_or("-".into(), |x| format!("{} ({}–{})", x.median, x.min, x.max))
                }
                _ => ev.groups[g]
                    .get(*s)
                    .map_or("-".into(), |x| format!("{} ({}–{})", x.median, x.min, x.max)),
            };
            cells.push(cell);
        }
        group_rows.push(Row { label: score_label(t, s)?, cells });
    }
    Ok(group_rows)
}

/// The blind review (`r`): each answer's sheet with its grades, and the reviewers' agreement.
fn review(ev: &Evaluation, r: &crate::eval::Review, t: &Strings) -> Result<ReviewCtx, RenderError> {
    let mut rows = Vec::new();
    for (a, (sheet, grades)) in ev.answers.iter().zip(&r.answers) {
        let g = grades
            .iter()
            .map(|g| {
                let args: BTreeMap<String, String> = [
                    ("reviewer", g.reviewer.clone()),
                    ("usefulness", g.usefulness.to_string()),
                    ("next", g.next_step.clone()),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect();
                Ok(t.format("eval.grade", &args)?)
            })
            .collect::<Result<Vec<_>, RenderError>>()?;
        rows.push(ReviewRow {
            answer: a.claims.clone(),
            sheet: sheet.clone(),
            grades: g.join(t.get("ui.list_sep")?),
        });
    }
    let k = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.3}"));
    let agreement = r
        .agreement
        .iter()
        .map(|a| {
            let args: BTreeMap<String, String> = [
                ("a", a.reviewers[0].clone()),
                ("b", a.reviewers[1].clone()),
                ("next", k(a.next_step_kappa)),
                ("useful", k(a.usefulness_kappa)),
                ("linear", k(a.usefulness_linear)),
                ("quadratic", k(a.usefulness_quadratic)),
                (
                    "interval",
                    a.usefulness_quadratic_interval
                        .map_or("-".to_string(), |[l, h]| format!("{l:.3} – {h:.3}")),
                ),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
            Ok(t.format("eval.agreement", &args)?)
        })
        .collect::<Result<Vec<_>, RenderError>>()?;
    Ok(ReviewCtx { rows, agreement })
}

/// The misreadings that apply, in the report's language.
fn misreading_texts(ev: &Evaluation, t: &Strings) -> Result<Vec<Mis>, RenderError> {
    misreadings(ev)
        .iter()
        .map(|f| {
            Ok(Mis {
                title: t.get(&format!("{}.title", f.key))?.to_string(),
                text: t
                    .format(&format!("{}.text", f.key), &f.args.clone().into_iter().collect())?,
            })
        })
        .collect()
}

/// The captions of the report's charts: the A|B chart of `met_evidence` when there are two
/// groups, none otherwise.
fn chart_captions(ev: &Evaluation, t: &Strings) -> Result<Vec<ChartCtx>, RenderError> {
    let lang = t.lang.as_str();
    let names: Vec<&String> = ev.groups.keys().collect();
    Ok(match names[..] {
        [a, b] => {
            let args: BTreeMap<String, String> =
                [("score", "met_evidence".to_string()), ("a", a.clone()), ("b", b.clone())]
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v))
                    .collect();
            vec![ChartCtx {
                file: format!("{}.{lang}.met-evidence.svg", ev.eval.id),
                caption: t.format("eval.chart", &args)?,
            }]
        }
        _ => Vec::new(),
    })
}

/// The rubric: what each shown score counts.
fn rubric(scores: &[&str]) -> Vec<RubricRow> {
    scores
        .iter()
        .map(|s| RubricRow {
            name: s.to_string(),
            text: SCORES.iter().find(|(k, _, _)| k == s).map_or_else(
                || match *s {
                    "usefulness_median" => {
                        "the lower median of the reviewers' R6 grades, 1 to 5".to_string()
                    }
                    _ => "reviewers who graded the next step good".to_string(),
                },
                |(_, _, d)| d.to_string(),
            ),
        })
        .collect()
}

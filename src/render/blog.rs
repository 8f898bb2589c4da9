//! The blog profile: a post in the order and paragraph types of an article (templates/blog.md
//! and blog.typ), built from the report's context and the claims file's `narrative:` block.
//!
//! A blog reader never sees a claim or part id: claims are shown by their statement, parts by
//! their text, analyses by their name in words. Values and scopes the tool writes are put in
//! the forms of running text (`1.216×`, `device 1–7`, and in zh-TW `39.964–46.123 秒`); the
//! author's own text is left as written. A chart is linked only when its PNG was written.

use std::collections::BTreeMap;

use regex::Regex;
use serde::Serialize;

use super::context::{RenderContext, same_number};
use super::i18n::Strings;
use crate::audit::Audit;
use crate::claims::Text;
use crate::claims::narrative::Narrative;
use crate::render::RenderError;

/// Everything the blog templates read beyond the report's context.
#[derive(Debug, Clone, Default, Serialize)]
pub struct BlogCtx {
    /// The opening paragraphs; the verdict counts when the author wrote none.
    pub opening: Vec<String>,
    /// The run's conditions in one paragraph, with what the evidence covers.
    pub conditions: Option<String>,
    /// The author's remark after the conditions.
    pub conditions_note: Vec<String>,
    /// Where each trace comes from when it is not a plain capture (page 1's notices).
    pub origins: Vec<String>,
    /// The prompt, verbatim.
    pub prompt: Option<String>,
    /// The heading over the claims: what the model answered, or what its sources claimed.
    pub answer_heading: String,
    /// Why the setup carries its name.
    pub naming: Vec<String>,
    /// What kind of study this is.
    pub design: Vec<String>,
    /// What a real experiment needs.
    pub experiment: Vec<String>,
    /// What the answer did.
    pub behaviour: Vec<String>,
    /// The sentence before the list of what the answer proposed.
    pub candidates_lead: String,
    /// What the answer proposed, one item per claim.
    pub candidates: Vec<CandidateCtx>,
    /// After that list.
    pub candidates_note: Vec<String>,
    /// Before the content kinds.
    pub kinds_lead: Vec<String>,
    /// The four content kinds with an example from this audit.
    pub kinds: Vec<KindCtx>,
    /// After the kinds.
    pub kinds_note: Vec<String>,
    /// What each analysis covered, one line each.
    pub scopes: Vec<String>,
    /// The verdict table: verdict first.
    pub verdicts: Vec<VerdictCtx>,
    /// The author's readings of the verdicts.
    pub readings: Vec<String>,
    /// The charts, numbered.
    pub charts: Vec<BlogChartCtx>,
    /// Before -> after, one sentence per claim, as one paragraph.
    pub changes: String,
    /// The two-denominators section.
    pub denominators: Option<DenominatorsCtx>,
    /// How to read the bound.
    pub bound: Vec<String>,
    /// Before the gates.
    pub gates_lead: Vec<String>,
    /// R1-R6, each with its question.
    pub gates: Vec<PairCtx>,
    /// After the gates.
    pub gates_note: Vec<String>,
    /// The misreadings: the author's, else the audit's.
    pub misreadings: Vec<PairCtx>,
    /// The closing paragraphs.
    pub closing: Vec<String>,
    /// What comes next.
    pub next: Option<String>,
    /// The works the post cites, each with its address.
    pub references: Vec<ReferenceCtx>,
    /// The narrative's slots this post wrote from the audit, the author having left them
    /// empty (`render --profile blog` says which).
    #[serde(skip)]
    pub defaulted: Vec<&'static str>,
}

/// A cited work.
#[derive(Debug, Clone, Serialize)]
pub struct ReferenceCtx {
    /// What is cited (plain).
    pub text: String,
    /// Its address.
    pub url: String,
}

/// One claim as the answer proposed it.
#[derive(Debug, Clone, Serialize)]
pub struct CandidateCtx {
    /// The claim.
    pub statement: String,
    /// The answer's range or judgement, as a sentence.
    pub said: Option<String>,
    /// The evidence it needs (what was measured, and what would decide the rest), as a
    /// sentence.
    pub needs: String,
}

/// One content kind.
#[derive(Debug, Clone, Serialize)]
pub struct KindCtx {
    /// Its name.
    pub kind: String,
    /// A part of this audit of that kind.
    pub example: Option<String>,
    /// How far evidence can take it.
    pub reach: String,
}

/// One row of the verdict table.
#[derive(Debug, Clone, Serialize)]
pub struct VerdictCtx {
    /// `supported`, ...
    pub verdict_key: String,
    /// In words.
    pub verdict: String,
    /// The claim.
    pub statement: String,
    /// What was measured, or what is missing.
    pub evidence: String,
}

/// A chart of the post.
#[derive(Debug, Clone, Serialize)]
pub struct BlogChartCtx {
    /// Its number in the post.
    pub n: usize,
    /// The image link (the PNG, or its address under `--image-base`); None when no PNG was
    /// written.
    pub src: Option<String>,
    /// The SVG file, which the Typst post embeds and which is always written.
    pub file: String,
    /// Alt text: what the chart shows, in a few words.
    pub alt: String,
    /// The caption.
    pub caption: String,
}

/// The two-denominators section.
#[derive(Debug, Clone, Serialize)]
pub struct DenominatorsCtx {
    /// Heading.
    pub title: String,
    /// Before the formulas.
    pub lead: Vec<String>,
    /// The formulas, one line each step.
    pub formulas: Vec<String>,
    /// After the formulas.
    pub questions: Vec<String>,
}

/// A lead and its text.
#[derive(Debug, Clone, Serialize)]
pub struct PairCtx {
    /// Lead.
    pub title: String,
    /// Text.
    pub text: String,
}

/// Values by (claim, part), each form in running-text forms.
type Values = super::context::Scoped;

/// Running-text forms of a value or scope the tool wrote: `×` for a factor, an en dash
/// between the numbers of a range, and in zh-TW `秒` after seconds. Never applied to the
/// author's text, which may hold versions (`v0.3.0-21`) that are not ranges.
pub fn forms(s: &str, lang: &str) -> String {
    static TIMES: std::sync::LazyLock<Regex> =
        std::sync::LazyLock::new(|| Regex::new(r"(\d)x\b").expect("regex"));
    static RANGE: std::sync::LazyLock<Regex> =
        std::sync::LazyLock::new(|| Regex::new(r"(\d)-(\d)").expect("regex"));
    static SECONDS: std::sync::LazyLock<Regex> =
        std::sync::LazyLock::new(|| Regex::new(r"(\d) s\b").expect("regex"));
    let s = TIMES.replace_all(s, "$1×");
    let s = RANGE.replace_all(&s, "$1–$2");
    if lang == "zh-TW" { SECONDS.replace_all(&s, "$1 秒").into_owned() } else { s.into_owned() }
}

/// In zh-TW, a space between a Chinese character and a Latin letter or digit that meet where
/// the tool joins words (`需要 kernel 統計`), as the article writes them. Only for sentences the
/// tool composes; the author's paragraphs keep their spacing.
pub fn spaced(s: &str, lang: &str) -> String {
    if lang != "zh-TW" {
        return s.to_string();
    }
    let han =
        |c: char| ('\u{4e00}'..='\u{9fff}').contains(&c) || ('\u{3400}'..='\u{4dbf}').contains(&c);
    let latin = |c: char| c.is_ascii_alphanumeric();
    let mut out = String::with_capacity(s.len() + 8);
    let mut prev: Option<char> = None;
    for c in s.chars() {
        if let Some(p) = prev
            && ((han(p) && latin(c)) || (latin(p) && han(c)))
        {
            out.push(' ');
        }
        out.push(c);
        prev = Some(c);
    }
    out
}

/// A formula's line cut at its operators into lines a phone shows whole (a code block does not
/// wrap): each continuation indented under the first term.
fn narrow(line: &str) -> Vec<String> {
    const WIDTH: usize = 44;
    if line.chars().count() <= WIDTH {
        return vec![line.to_string()];
    }
    let mut out: Vec<String> = Vec::new();
    let mut cur = String::new();
    // Tokens end before each binary operator, which opens the next line.
    let mut rest = line;
    while !rest.is_empty() {
        let skip = rest.chars().next().map_or(0, char::len_utf8);
        let cut = [" + ", " - ", " / ", " × "]
            .iter()
            .filter_map(|op| rest[skip..].find(op).map(|i| i + skip))
            .min()
            .unwrap_or(rest.len());
        let (token, tail) = rest.split_at(cut);
        if !cur.is_empty() && cur.chars().count() + token.chars().count() > WIDTH {
            out.push(cur);
            cur = format!("     {}", token.trim_start());
        } else {
            cur += token;
        }
        rest = tail;
    }
    out.push(cur);
    out
}

/// A text's paragraphs (separated by blank lines), trimmed, empty ones dropped.
fn paragraphs(s: &str) -> Vec<String> {
    s.split("\n\n").map(|p| p.trim().to_string()).filter(|p| !p.is_empty()).collect()
}

/// Builds the blog's own context.
pub fn build(a: &Audit, t: &Strings, ctx: &RenderContext) -> Result<BlogCtx, RenderError> {
    let empty = Narrative::default();
    let post = Post::new(a, t, ctx, a.claims.narrative.as_ref().unwrap_or(&empty));
    let (n, lang) = (post.n, post.lang);
    let get = |x: &Option<Text>| post.get(x);
    let fill = |x: &Option<Text>| post.fill(x);
    let fill_one = |x: &Option<Text>| post.fill_one(x);
    let mut out = BlogCtx { opening: fill(&n.opening)?, ..BlogCtx::default() };
    post.defaulted(&mut out)?;
    post.opening(&mut out)?;
    // Who answered: a model when the post quotes its prompt, else the claims' sources.
    out.answer_heading = match (&n.prompt, a.claims.sources.as_slice()) {
        (Some(_), _) => t.get("blog.h.answer")?.to_string(),
        (None, [one]) => t.format(
            "blog.h.claimed_by",
            &args([("source", one.label.get(lang).cloned().unwrap_or_else(|| one.id.clone()))]),
        )?,
        (None, _) => t.get("blog.h.claimed")?.to_string(),
    };

    // The conditions, and what the evidence covers.
    out.conditions = match n.conditions {
        Some(_) => conditions(a, t, n, ctx)?,
        None => traces_conditions(a, t, ctx)?,
    };
    if let Some(c) = &n.conditions {
        out.conditions_note = fill(&c.note)?;
    }
    out.origins = ctx.brief.origin_warnings.iter().map(|w| forms(w, lang)).collect();
    out.prompt = get(&n.prompt);
    out.naming = fill(&n.naming)?;
    out.design = fill(&n.design)?;
    out.experiment = fill(&n.experiment)?;
    out.behaviour = fill(&n.behaviour)?;

    post.claims(&mut out)?;
    post.kinds(&mut out)?;
    post.charts(&mut out)?;
    post.denominators(&mut out)?;
    post.gates_and_misreadings(&mut out)?;
    out.closing = fill(&n.closing)?;
    if out.closing.is_empty() {
        // The reviewer's note, else the decision the open items wait on, else what is open.
        if let Some(c) = closing_default(ctx) {
            out.closing.push(c);
        }
    }
    out.next = fill_one(&n.next)?.or_else(|| ctx.next.clone());
    out.references = n
        .references
        .iter()
        .map(|r| ReferenceCtx {
            text: get(&Some(r.text.clone())).unwrap_or_default(),
            url: r.url.clone(),
        })
        .collect();
    Ok(out)
}

/// A post in the making: the audit, the language, the author's narrative, and every value
/// in running-text forms.
struct Post<'a> {
    a: &'a Audit,
    t: &'a Strings,
    ctx: &'a RenderContext,
    n: &'a Narrative,
    lang: &'a str,
    values: Values,
    /// Ids of claims and parts as the audit's sentences write them, with the words a post shows.
    words: Vec<(String, String)>,
}

impl<'a> Post<'a> {
    fn new(a: &'a Audit, t: &'a Strings, ctx: &'a RenderContext, n: &'a Narrative) -> Self {
        let lang = t.lang.as_str();
        // Every measured or computed value, by claim and part.
        let mut values: Values = BTreeMap::new();
        for c in &ctx.claims {
            for p in &c.parts {
                if let Some(f) = &p.formula {
                    values.insert(
                        (c.id.clone(), p.id.clone()),
                        super::context::Shown {
                            value: forms(&f.result, lang),
                            scope: p.scope.as_deref().map(|s| forms(s, lang)),
                            spread: p.spread.as_deref().map(|s| forms(s, lang)),
                            change: p.change.as_deref().map(|s| forms(s, lang)),
                        },
                    );
                }
            }
        }
        // The audit's own sentences (reasons, misreadings) name claims and parts by id: a blog
        // shows their words.
        let mut words: Vec<(String, String)> = Vec::new();
        for c in &ctx.claims {
            let (open, close) = if lang == "zh-TW" { ("「", "」") } else { ("“", "”") };
            words.push((format!("`{}`", c.id), format!("{open}{}{close}", c.statement)));
            for p in &c.parts {
                let w = format!(
                    "{open}{}{close}",
                    p.text.clone().unwrap_or_else(|| c.statement.clone())
                );
                words.push((format!("`{}/{}`", c.id, p.id), w.clone()));
                words.push((format!("`{}`", p.id), w));
            }
        }
        Post { a, t, ctx, n, lang, values, words }
    }

    /// The author's text of a slot in this language.
    fn get(&self, text: &Option<Text>) -> Option<String> {
        text.as_ref().and_then(|x| x.get(self.lang).cloned())
    }

    /// A slot's paragraphs, placeholders filled.
    fn fill(&self, text: &Option<Text>) -> Result<Vec<String>, RenderError> {
        match self.get(text) {
            None => Ok(Vec::new()),
            Some(s) => {
                Ok(paragraphs(&super::context::fill_placeholders(&s, self.t, &self.values)?))
            }
        }
    }

    /// A one-paragraph slot, placeholders filled.
    fn fill_one(&self, text: &Option<Text>) -> Result<Option<String>, RenderError> {
        self.get(text)
            .map(|s| super::context::fill_placeholders(&s, self.t, &self.values))
            .transpose()
    }

    /// The audit's sentence with its ids replaced by the words they stand for.
    fn unslug(&self, s: &str) -> String {
        let mut s = forms(s, self.lang);
        for (id, w) in &self.words {
            // In zh-TW the quotation marks are full width: no space beside them.
            if self.lang == "zh-TW" {
                s = s.replace(&format!("{id} "), w).replace(&format!(" {id}"), w);
            }
            s = s.replace(id, w);
        }
        s
    }

    /// Which slots the author left empty, and which of them the post writes from the audit.
    fn defaulted(&self, out: &mut BlogCtx) -> Result<(), RenderError> {
        let (ctx, n) = (self.ctx, self.n);
        let get = |text: &Option<Text>| self.get(text);
        // Which slots the author left empty in this language, in the file's order, each with
        // whether the post writes it from the audit (the others are simply not in the post).
        let has = |text: &Option<Text>| get(text).is_some();
        let slots: [(&'static str, bool, bool); 19] = [
            ("opening", has(&n.opening), true),
            ("conditions", n.conditions.is_some(), true),
            ("prompt", has(&n.prompt), false),
            ("naming", has(&n.naming), false),
            ("design", has(&n.design), false),
            ("experiment", has(&n.experiment), false),
            ("behaviour", has(&n.behaviour), false),
            ("claims", ctx.claims.iter().all(|c| n.claim(&c.id).is_some()), true),
            ("candidates", has(&n.candidates), false),
            ("kinds_lead", has(&n.kinds_lead), true),
            ("kinds", has(&n.kinds), false),
            ("denominators", n.denominators.is_some(), false),
            ("bound", has(&n.bound), false),
            ("gates", has(&n.gates), false),
            ("gates_note", has(&n.gates_note), false),
            ("misreadings", !n.misreadings.is_empty(), !ctx.misreadings.is_empty()),
            ("closing", has(&n.closing), closing_default(ctx).is_some()),
            ("next", has(&n.next), ctx.next.is_some()),
            ("references", !n.references.is_empty(), false),
        ];
        out.defaulted = slots
            .into_iter()
            .filter(|(_, written, default)| !written && *default)
            .map(|s| s.0)
            .collect();
        Ok(())
    }

    /// The opening without the author's: the question, the answer, then the tally.
    fn opening(&self, out: &mut BlogCtx) -> Result<(), RenderError> {
        let (a, t, ctx, lang) = (self.a, self.t, self.ctx, self.lang);
        let get = |text: &Option<Text>| self.get(text);
        if out.opening.is_empty() {
            // Without the author's opening, a post still opens on its question and its answer,
            // then the tally: never on the tally alone.
            if let Some(q) = get(&a.claims.report.question) {
                out.opening.push(q);
            }
            if !ctx.brief.answer.trim().is_empty() {
                out.opening.push(forms(&ctx.brief.answer, lang));
            }
            let mut s = ctx.summary.counts_line.clone();
            s += t.get("ui.sentence_end")?;
            if let Some(o) = &ctx.summary.open_line {
                s += o;
            }
            out.opening.push(s.trim().to_string());
        }
        Ok(())
    }

    /// What the answer proposed, the verdicts, the readings, and before -> after per claim.
    fn claims(&self, out: &mut BlogCtx) -> Result<(), RenderError> {
        let (a, t, ctx, n, lang) = (self.a, self.t, self.ctx, self.n, self.lang);
        let values = &self.values;
        let get = |text: &Option<Text>| self.get(text);
        let fill = |text: &Option<Text>| self.fill(text);
        let fill_one = |text: &Option<Text>| self.fill_one(text);
        let unslug = |s: &str| self.unslug(s);
        let colon = t.get("ui.colon")?;
        let sep = t.get("ui.list_sep")?;
        let semi = t.get("ui.semicolon")?;
        // What each piece of evidence covers, by the command that produced it.
        let mut scope_of: Vec<(String, String, String)> = Vec::new();
        for e in &a.ledger {
            let Some(ev) = &e.evidence else { continue };
            let Some(scope) = ctx
                .claims
                .iter()
                .flat_map(|c| &c.parts)
                .find(|p| p.command.as_deref() == Some(e.command.as_str()))
                .and_then(|p| p.scope.clone())
            else {
                continue;
            };
            let name = t
                .get(&format!("blog.analysis.{}", ev.analysis))
                .map(str::to_string)
                .unwrap_or_else(|_| ev.analysis.clone());
            scope_of.push((e.command.clone(), name.clone(), forms(&scope, lang)));
            out.scopes.push(format!("{name}{colon}{}", forms(&scope, lang)));
        }

        let mut changes: Vec<String> = Vec::new();
        for (c, claim) in ctx.claims.iter().zip(&a.claims.claims) {
            let cn = n.claim(&c.id);
            let principal = c.parts.iter().find(|p| p.principal);
            let measured: Vec<String> = c
                .parts
                .iter()
                .filter(|p| p.kind_key != "arithmetic" && p.condition.is_some())
                .filter_map(|p| {
                    let v = values.get(&(c.id.clone(), p.id.clone()))?;
                    Some(format!(
                        "{}{colon}{}",
                        p.text.clone().unwrap_or_else(|| c.statement.clone()),
                        v.value
                    ))
                })
                .collect();
            let needs: Vec<String> = principal
                .filter(|p| p.outcome_key != "supported")
                .map(|p| p.needs.clone())
                .unwrap_or_default();
            // What the answer proposed, and the evidence it needs.
            let mut need_bits: Vec<String> = c
                .parts
                .iter()
                .filter_map(|p| p.command.as_deref())
                .filter_map(|cmd| scope_of.iter().find(|(k, _, _)| k == cmd))
                .map(|(_, name, scope)| {
                    format!(
                        "{name}{}{scope}{}",
                        t.get("ui.paren_open").unwrap_or("("),
                        t.get("ui.paren_close").unwrap_or(")")
                    )
                })
                .collect();
            need_bits.dedup();
            need_bits.extend(needs.iter().cloned());
            let said = cn.map(|x| fill_one(&x.said)).transpose()?.flatten();
            out.candidates.push(CandidateCtx {
                statement: c.statement.clone(),
                said: said
                    .map(|x| t.format("blog.said", &args([("said", x)])).map(|s| spaced(&s, lang)))
                    .transpose()?,
                needs: spaced(
                    &t.format("blog.needs", &args([("needs", need_bits.join(sep))]))?,
                    lang,
                ),
            });
            out.verdicts.push(VerdictCtx {
                verdict_key: c.verdict_key.clone(),
                verdict: c.verdict.clone(),
                statement: c.statement.clone(),
                evidence: spaced(
                    &if measured.is_empty() {
                        if needs.is_empty() {
                            unslug(&c.reason)
                        } else {
                            t.format("blog.still_needs", &args([("needs", needs.join(sep))]))?
                        }
                    } else {
                        let mut s =
                            t.format("blog.measured", &args([("values", measured.join(semi))]))?;
                        if !needs.is_empty() {
                            s += semi;
                            s +=
                                &t.format("blog.also_needs", &args([("needs", needs.join(sep))]))?;
                        }
                        s
                    },
                    lang,
                ),
            });
            if let Some(r) = cn.map(|x| fill(&x.reading)).transpose()? {
                out.readings.extend(r);
            }
            // Before -> after.
            let before = cn
                .and_then(|x| get(&x.before).or_else(|| get(&x.said)))
                .map(|s| super::context::fill_placeholders(&s, t, values))
                .transpose()?
                .unwrap_or_else(|| c.statement.clone());
            let after = match cn.map(|x| fill_one(&x.after)).transpose()?.flatten() {
                Some(s) => s,
                None => {
                    let r = a.results.iter().find(|r| r.id == c.id);
                    generated_after(t, c, claim, r, &unslug(&c.reason), values, &needs)?
                }
            };
            changes.push(spaced(
                &t.format("blog.change", &args([("before", before), ("after", after)]))?,
                lang,
            ));
        }
        out.changes = changes.join(t.get("blog.sentence_join")?);
        out.candidates_note = fill(&n.candidates)?;
        out.candidates_lead =
            t.format("blog.candidates_lead", &args([("n", out.candidates.len().to_string())]))?;

        Ok(())
    }

    /// The four content kinds, each with an example from this audit.
    fn kinds(&self, out: &mut BlogCtx) -> Result<(), RenderError> {
        let (t, ctx, n, lang) = (self.t, self.ctx, self.n, self.lang);
        let values = &self.values;
        let fill = |text: &Option<Text>| self.fill(text);
        // The four content kinds, each with the part of this audit that shows it best: from the
        // claim with the most kinds.
        let kinds = ["observation", "interpretation", "causal", "action"];
        let richest = ctx.claims.iter().max_by_key(|c| {
            kinds.iter().filter(|k| c.parts.iter().any(|p| &p.kind_key == *k)).count()
        });
        for k in kinds {
            // With its measured value, when it has one.
            let example = richest
                .into_iter()
                .chain(ctx.claims.iter())
                .flat_map(|c| c.parts.iter().map(move |p| (c, p)))
                .find(|(_, p)| p.kind_key == k && p.text.is_some())
                .map(|(c, p)| {
                    let text = p.text.clone().unwrap_or_default();
                    match values.get(&(c.id.clone(), p.id.clone())) {
                        Some(v) => t
                            .format(
                                "blog.example_value",
                                &args([("text", text), ("value", v.value.clone())]),
                            )
                            .map(|s| spaced(&s, lang)),
                        None => Ok(text),
                    }
                })
                .transpose()?;
            out.kinds.push(KindCtx {
                kind: t.get(&format!("kind.{k}"))?.to_string(),
                example,
                reach: t.get(&format!("blog.reach.{k}"))?.to_string(),
            });
        }
        out.kinds_note = fill(&n.kinds)?;
        out.kinds_lead = fill(&n.kinds_lead)?;
        if out.kinds_lead.is_empty() {
            out.kinds_lead.push(t.get("blog.kinds_lead")?.to_string());
        }

        Ok(())
    }

    /// Every chart, numbered, its caption in a post's words.
    fn charts(&self, out: &mut BlogCtx) -> Result<(), RenderError> {
        let (a, t, ctx, lang) = (self.a, self.t, self.ctx, self.lang);
        let colon = t.get("ui.colon")?;
        // Charts: every one, numbered, linked only when its PNG was written.
        let all = ctx.claims.iter().flat_map(|c| &c.charts).chain(&ctx.charts);
        for (i, ch) in all.enumerate() {
            // A post names its traces, not their files: the files of the audit's traces (and of
            // each set's members) leave the caption with their parentheses.
            let mut caption = ch.caption.clone();
            for file in trace_files(a) {
                for (open, close) in [(" (", ")"), ("（", "）")] {
                    caption = caption.replace(&format!("{open}{file}{close}"), "");
                }
            }
            // An analysis by its name in words, as in the scopes above.
            let mut caption = forms(&caption, lang);
            for spec in crate::analysis::ANALYSES {
                if let Ok(name) = t.get(&format!("blog.analysis.{}", spec.name)) {
                    caption = caption.replace(&format!("`{}`", spec.name), name);
                }
            }
            if lang == "zh-TW" {
                // No space left between two Chinese characters where a code span was.
                static HAN_SPACE: std::sync::LazyLock<Regex> = std::sync::LazyLock::new(|| {
                    Regex::new(r"([\x{4e00}-\x{9fff}]) ([\x{4e00}-\x{9fff}])").expect("regex")
                });
                caption = HAN_SPACE.replace_all(&caption, "$1$2").into_owned();
            }
            let alt = caption
                .split_once(colon)
                .or_else(|| caption.split_once(": "))
                .map_or(caption.as_str(), |(a, _)| a)
                .to_string();
            out.charts.push(BlogChartCtx {
                n: i + 1,
                src: (!ch.md_src.is_empty()).then(|| ch.md_src.clone()),
                file: ch.file.clone(),
                alt,
                caption,
            });
        }

        Ok(())
    }

    /// The two-denominators section, when the author asks for it.
    fn denominators(&self, out: &mut BlogCtx) -> Result<(), RenderError> {
        let (t, ctx, n, lang) = (self.t, self.ctx, self.n, self.lang);
        let get = |text: &Option<Text>| self.get(text);
        let fill = |text: &Option<Text>| self.fill(text);
        let fill_one = |text: &Option<Text>| self.fill_one(text);
        if let Some(d) = &n.denominators {
            let mut formulas = Vec::new();
            for (claim, part, label) in &d.parts {
                let Some(p) = ctx
                    .claims
                    .iter()
                    .find(|c| &c.id == claim)
                    .and_then(|c| c.parts.iter().find(|p| &p.id == part))
                else {
                    continue;
                };
                let Some(f) = &p.formula else { continue };
                formulas.push(get(label).or_else(|| p.text.clone()).unwrap_or_default());
                let mut steps: Vec<String> = Vec::new();
                for s in [&f.symbolic, &f.substituted, &f.result] {
                    let s = forms(s, lang);
                    match steps.last_mut() {
                        Some(last) if same_number(last, &s) => *last = s,
                        _ => steps.push(s),
                    }
                }
                formulas.extend(steps.into_iter().flat_map(|s| narrow(&format!("  = {s}"))));
            }
            out.denominators = Some(DenominatorsCtx {
                title: match fill_one(&d.title)? {
                    Some(s) => s,
                    None => t.get("blog.h.denominators")?.to_string(),
                },
                lead: fill(&d.lead)?,
                formulas,
                questions: fill(&d.questions)?,
            });
        }
        Ok(())
    }

    /// The bound, the gates and the misreadings.
    fn gates_and_misreadings(&self, out: &mut BlogCtx) -> Result<(), RenderError> {
        let (t, ctx, n, lang) = (self.t, self.ctx, self.n, self.lang);
        let values = &self.values;
        let fill = |text: &Option<Text>| self.fill(text);
        let unslug = |s: &str| self.unslug(s);
        out.bound = fill(&n.bound)?;
        out.gates_lead = fill(&n.gates)?;
        for g in ["R1", "R2", "R3", "R4", "R5", "R6"] {
            out.gates.push(PairCtx {
                title: t.get(&format!("gate.{g}"))?.to_string(),
                text: t.get(&format!("blog.gate.{g}"))?.to_string(),
            });
        }
        out.gates_note = fill(&n.gates_note)?;
        out.misreadings = if n.misreadings.is_empty() {
            ctx.misreadings
                .iter()
                .map(|m| PairCtx { title: unslug(&m.title), text: unslug(&m.text) })
                .collect()
        } else {
            n.misreadings
                .iter()
                .map(|m| {
                    Ok(PairCtx {
                        title: super::context::fill_placeholders(
                            &m.title.get(lang).cloned().unwrap_or_default(),
                            t,
                            values,
                        )?,
                        text: super::context::fill_placeholders(
                            &m.text.get(lang).cloned().unwrap_or_default(),
                            t,
                            values,
                        )?,
                    })
                })
                .collect::<Result<_, RenderError>>()?
        };
        Ok(())
    }
}

/// A post's closing when the author wrote none: the reviewer's R6 note, else the report's
/// decision (what the open items wait on), else the line that says what stays open.
fn closing_default(ctx: &RenderContext) -> Option<String> {
    ctx.r6.clone().or_else(|| ctx.brief.decision.clone()).or_else(|| ctx.summary.open_line.clone())
}

/// What the evidence made of a claim, when the author did not say: its principal value when
/// supported or refuted, how far it got when partly supported, what it needs when open.
fn generated_after(
    t: &Strings,
    c: &super::context::ClaimCtx,
    claim: &crate::claims::Claim,
    r: Option<&crate::verdict::ClaimResult>,
    reason: &str,
    values: &Values,
    needs: &[String],
) -> Result<String, RenderError> {
    let principal = c.parts.iter().find(|p| p.principal);
    // The number the answer itself stated for the principal part, beside what was measured.
    let stated = principal.and_then(|p| {
        let part = claim.parts.iter().find(|x| x.id == p.id)?;
        (part.says_by == crate::claims::Who::Source).then_some(())?;
        let res = r?.parts.iter().find(|x| x.id == p.id)?;
        res.says.as_ref().map(|s| s.stated.clone())
    });
    let text_of = |p: &super::context::PartCtx| {
        p.text.clone().unwrap_or_else(|| claim.statement.get(&t.lang).cloned().unwrap_or_default())
    };
    let value = principal.and_then(|p| values.get(&(c.id.clone(), p.id.clone())));
    let sep = t.get("ui.list_sep")?;
    let text = match (c.verdict_key.as_str(), principal, value) {
        ("supported" | "not_supported", Some(p), Some(v)) if stated.is_some() => t.format(
            "blog.after_says",
            &args([
                ("stated", stated.unwrap_or_default()),
                ("value", v.value.clone()),
                ("what", text_of(p)),
            ]),
        ),
        ("supported", Some(p), Some(v)) => t.format(
            "blog.after_supported",
            &args([("value", v.value.clone()), ("what", text_of(p))]),
        ),
        ("not_supported", Some(p), Some(v)) => t.format(
            "blog.after_refuted",
            &args([("value", v.value.clone()), ("what", text_of(p))]),
        ),
        ("partially_supported", Some(p), _) => {
            let reached = c
                .parts
                .iter()
                .filter(|q| q.outcome_key == "supported" && q.kind_key != "arithmetic")
                .max_by_key(|q| claim.parts.iter().find(|x| x.id == q.id).map(|x| x.kind.layer()))
                .map(text_of)
                .unwrap_or_default();
            t.format("blog.after_partial", &args([("reached", reached), ("open", text_of(p))]))
        }
        _ if needs.is_empty() => {
            t.format("blog.after_open_why", &args([("why", reason.to_string())]))
        }
        _ => t.format("blog.after_open", &args([("needs", needs.join(sep))])),
    };
    Ok(text?)
}

/// The run's conditions in one paragraph: who answered with what, when, and what the checking
/// tool's evidence covers (single-device windows, the devices summed over, the devices the
/// trace lacks).
fn conditions(
    a: &Audit,
    t: &Strings,
    n: &Narrative,
    ctx: &RenderContext,
) -> Result<Option<String>, RenderError> {
    let lang = t.lang.as_str();
    let get = |text: &Option<Text>| text.as_ref().and_then(|x| x.get(lang).cloned());
    let end = t.get("ui.sentence_end")?;
    let comma = t.get("blog.comma")?;
    let mut sentences: Vec<String> = Vec::new();
    if let Some(c) = &n.conditions {
        let source = c
            .source
            .as_ref()
            .and_then(|id| a.claims.sources.iter().find(|s| &s.id == id))
            .or_else(|| a.claims.sources.first())
            .and_then(|s| s.label.get(lang).cloned())
            .unwrap_or_default();
        let mut clauses = Vec::new();
        if let Some(x) = &c.client {
            clauses.push(t.format(
                "blog.cond_client",
                &args([("source", source.clone()), ("client", x.clone())]),
            )?);
        }
        if let Some(x) = &c.model {
            clauses.push(t.format("blog.cond_model", &args([("model", x.clone())]))?);
        }
        if let Some(x) = &c.effort {
            clauses.push(t.format("blog.cond_effort", &args([("effort", x.clone())]))?);
        }
        if let Some(x) = get(&c.tools) {
            clauses.push(t.format("blog.cond_tools", &args([("tools", x)]))?);
        }
        if let Some(x) = get(&c.unseen) {
            clauses.push(t.format("blog.cond_unseen", &args([("unseen", x)]))?);
        }
        if !clauses.is_empty() {
            sentences.push(clauses.join(comma));
        }
        let runs = match c.runs {
            None => None,
            Some(1) => Some(t.get("blog.cond_runs_one")?.to_string()),
            Some(k) => Some(t.format("blog.cond_runs", &args([("n", k.to_string())]))?),
        };
        match (&c.date, runs) {
            (Some(d), Some(r)) => sentences
                .push(t.format("blog.cond_date_runs", &args([("date", d.clone()), ("runs", r)]))?),
            (Some(d), None) => {
                sentences.push(t.format("blog.cond_date", &args([("date", d.clone())]))?)
            }
            (None, Some(r)) => sentences.push(r),
            (None, None) => {}
        }
        if let Some(v) = &c.verifier {
            let trace = ctx
                .traces
                .first()
                .map(|tr| tr.label.clone().unwrap_or_else(|| format!("trace {}", tr.name)))
                .unwrap_or_default();
            let mut s =
                t.format("blog.cond_verifier", &args([("tool", v.clone()), ("trace", trace)]))?;
            if let Some(cov) = coverage(a, t)? {
                s += t.get("ui.semicolon")?;
                s += &cov;
            }
            sentences.push(s);
        }
    }
    if sentences.is_empty() {
        return Ok(None);
    }
    let joined: String = sentences.into_iter().map(|s| s + end).collect();
    Ok(Some(spaced(joined.trim(), lang)))
}

/// The conditions when the author gave none: what each trace is, from its own metadata (the
/// profiler and its version, the kernels on which devices, the span), and what the evidence
/// covers.
fn traces_conditions(
    a: &Audit,
    t: &Strings,
    ctx: &RenderContext,
) -> Result<Option<String>, RenderError> {
    let lang = t.lang.as_str();
    let end = t.get("ui.sentence_end")?;
    struct Group {
        labels: Vec<String>,
        tool: String,
        devices: String,
        kernels: String,
        spans: Vec<i64>,
    }
    let mut groups: Vec<Group> = Vec::new();
    let mut sentences: Vec<String> = Vec::new();
    for tr in ctx.traces.iter().filter(|tr| tr.error.is_none()) {
        let tool = match &tr.nsys_version {
            Some(v) if v != "-" => {
                t.format("blog.cond_tool_nsys", &args([("version", v.clone())]))?
            }
            Some(_) => t.get("blog.cond_tool_nsys_unknown")?.to_string(),
            None => t.get("blog.cond_tool_kineto")?.to_string(),
        };
        // A set names its ranks and hosts; one file, its devices.
        let cov = a.traces.iter().find(|x| x.name == tr.name).and_then(|x| x.coverage.as_ref());
        let Some(cov) = cov else { continue };
        let present = &cov.scope.present_devices;
        let list = crate::scope::format_device_list(present);
        let devices = match cov.trace.set.as_deref().filter(|s| s.files.len() > 1) {
            Some(set) => t.format(
                "scope.ranks",
                &args([
                    ("n", set.ranks.len().to_string()),
                    (
                        "ranks",
                        crate::scope::format_device_list(
                            &set.ranks.iter().map(|r| r.rank).collect::<Vec<_>>(),
                        ),
                    ),
                    ("hosts", set.hosts().len().to_string()),
                ]),
            )?,
            None if present.len() == 1 => t.format("scope.device", &args([("device", list)]))?,
            None => t.format("scope.devices", &args([("devices", list)]))?,
        };
        let field = |f: &str| {
            cov.field(f)
                .ok()
                .flatten()
                .and_then(|r| i64::try_from(r.num).ok().filter(|_| r.den == 1))
        };
        let span = field("last_end_ns").zip(field("first_start_ns")).map(|(e, s)| e - s);
        let label = tr.label.clone().unwrap_or_else(|| tr.name.clone());
        match groups.last_mut() {
            // The runs of one side read alike: one sentence for them all.
            Some(g) if g.tool == tool && g.devices == devices && g.kernels == tr.kernels => {
                g.labels.push(label);
                g.spans.extend(span);
            }
            _ => groups.push(Group {
                labels: vec![label],
                tool,
                devices,
                kernels: tr.kernels.clone(),
                spans: span.into_iter().collect(),
            }),
        }
    }
    for g in groups {
        let (lo, hi) = (g.spans.iter().min(), g.spans.iter().max());
        let span = match (lo, hi) {
            (Some(lo), Some(hi)) if lo == hi => crate::units::duration(*lo),
            (Some(lo), Some(hi)) => {
                format!("{}–{}", crate::units::duration(*lo), crate::units::duration(*hi))
            }
            _ => "-".into(),
        };
        let one = g.labels.len() == 1;
        let mut s = t.format(
            if one { "blog.cond_trace" } else { "blog.cond_trace_each" },
            &args([
                ("trace", g.labels.join(t.get("ui.list_sep")?)),
                ("tool", g.tool),
                ("kernels", g.kernels),
                ("devices", g.devices),
                ("span", span),
            ]),
        )?;
        // A sentence opens with a capital, even on a label written in lower case.
        if let Some(c) = s.chars().next().filter(char::is_ascii_lowercase) {
            s.replace_range(..1, &c.to_ascii_uppercase().to_string());
        }
        sentences.push(s);
    }
    if sentences.is_empty() {
        return Ok(None);
    }
    let joined: String = sentences.into_iter().map(|s| forms(&s, lang) + end).collect();
    Ok(Some(spaced(joined.trim(), lang)))
}

/// What the evidence covers: each single-device window, the devices of the summed analyses,
/// and the devices the trace lacks.
fn coverage(a: &Audit, t: &Strings) -> Result<Option<String>, RenderError> {
    let lang = t.lang.as_str();
    let mut one: Vec<(String, String)> = Vec::new();
    let mut many: Vec<i64> = Vec::new();
    let mut missing: Vec<i64> = Vec::new();
    for ev in a.ledger.iter().filter_map(|e| e.evidence.as_ref()) {
        match (&ev.scope.devices[..], ev.window.requested_ns) {
            ([d], Some([s, e])) => {
                let w = forms(
                    &format!(
                        "{}–{} s",
                        crate::scope::format_seconds(s),
                        crate::scope::format_seconds(e)
                    ),
                    lang,
                );
                if !one.contains(&(w.clone(), d.to_string())) {
                    one.push((w, d.to_string()));
                }
            }
            ([_], None) => {}
            (ds, _) => many.extend(ds),
        }
        missing.extend(&ev.scope.missing_devices);
    }
    many.sort_unstable();
    many.dedup();
    missing.sort_unstable();
    missing.dedup();
    let mut bits = Vec::new();
    for (w, d) in one {
        bits.push(t.format("blog.cover_one", &args([("window", w), ("device", d)]))?);
    }
    if !many.is_empty() {
        let list = forms(&crate::scope::format_device_list(&many), lang);
        let mut s = t.format("blog.cover_many", &args([("devices", list)]))?;
        if !missing.is_empty() {
            s += &t.format(
                "blog.cover_missing",
                &args([("missing", forms(&crate::scope::format_device_list(&missing), lang))]),
            )?;
        }
        bits.push(s);
    }
    Ok((!bits.is_empty()).then(|| bits.join(t.get("blog.comma").unwrap_or(", "))))
}

/// Every file the audit read, as its evidence names them: each trace's path and, for a set,
/// each member's.
fn trace_files(a: &Audit) -> Vec<String> {
    let mut files: Vec<String> = Vec::new();
    for e in a.ledger.iter().chain(&a.context).filter_map(|e| e.evidence.as_ref()) {
        let mut add = |f: &str| {
            if !f.is_empty() && !files.iter().any(|x| x == f) {
                files.push(f.to_string());
            }
        };
        add(&e.trace.path);
        if let Some(set) = &e.trace.set {
            for f in &set.files {
                add(&f.path);
            }
        }
        if let Some(v) = crate::analysis::compare::Values::of(e) {
            add(&v.a.trace);
            add(&v.b.trace);
        }
    }
    // The longest first, so that no path is cut inside a longer one.
    files.sort_by_key(|f| std::cmp::Reverse(f.len()));
    files
}

/// A fenced `text` block of plain lines (formulas): a fence longer than any backtick run in
/// them, control characters shown as escapes.
pub fn markdown_text_block(s: &str) -> String {
    let s = crate::visible::visible(&s.replace("\r\n", "\n"), &['\t', '\n']).into_owned();
    let longest = s.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat((longest + 1).max(3));
    format!("{fence}text\n{}\n{fence}", s.trim_end_matches('\n'))
}

fn args<const N: usize>(pairs: [(&str, String); N]) -> BTreeMap<String, String> {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_values_take_running_text_forms_and_versions_are_not_values() {
        assert_eq!(forms("1.216x", "en"), "1.216×");
        assert_eq!(
            forms("device 1-7、時間窗 39.964–46.123 s", "zh-TW"),
            "device 1–7、時間窗 39.964–46.123 秒"
        );
        assert_eq!(forms("window 39.964–46.123 s", "en"), "window 39.964–46.123 s");
        assert_eq!(forms("1 / (1 - 0.1778)", "en"), "1 / (1 - 0.1778)");
    }

    #[test]
    fn the_tool_s_zh_tw_sentences_space_chinese_from_latin_words_and_numbers() {
        assert_eq!(
            spaced("還需要op 歸因、device 0的timeline", "zh-TW"),
            "還需要 op 歸因、device 0 的 timeline"
        );
        // Punctuation and spaces already there stay as they are; English is untouched.
        assert_eq!(spaced("（device 4）：17.8%", "zh-TW"), "（device 4）：17.8%");
        assert_eq!(spaced("still needs op", "en"), "still needs op");
    }

    #[test]
    fn a_long_formula_line_is_cut_at_its_operators() {
        let line = "  = compute_only_ns + nccl_only_ns + overlap_ns + idle_ns";
        let lines = narrow(line);
        assert_eq!(
            lines,
            ["  = compute_only_ns + nccl_only_ns", "     + overlap_ns + idle_ns"],
            "{lines:?}"
        );
        assert!(lines.iter().all(|l| l.chars().count() <= 44));
        // Joined again, nothing is lost.
        assert_eq!(
            lines.join(" ").split_whitespace().collect::<Vec<_>>(),
            line.split_whitespace().collect::<Vec<_>>()
        );
        assert_eq!(narrow("  = 17.8%"), ["  = 17.8%"]);
    }
}

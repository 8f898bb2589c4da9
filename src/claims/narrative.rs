//! `narrative:`: the author's prose of a post (the blog profile), slot by slot, each text in
//! every language of the report. Every slot is optional; a blog without one leaves that
//! paragraph out or says what the audit alone can say.
//!
//! A text may quote measured values with the answer's placeholders (`{claim/part}`,
//! `{claim/part:value}`, `{claim/part:spread}`), so that no number of the post is typed by
//! hand; the prompt is verbatim and never filled. Paragraphs are separated by a blank line.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_saphyr::Spanned;

use super::Text;
use super::raw::RawText;

/// `narrative:` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawNarrative {
    /// The opening: the bottom line and why it matters.
    pub opening: Option<RawText>,
    /// How the claims were produced: model, client, effort, date, what it could not see.
    pub conditions: Option<Spanned<RawConditions>>,
    /// The prompt, verbatim.
    pub prompt: Option<RawText>,
    /// Why the setup carries its name (e.g. why "profile-blind").
    pub naming: Option<RawText>,
    /// What kind of study this is, and is not (e.g. not a controlled experiment).
    pub design: Option<RawText>,
    /// What a real experiment would need.
    pub experiment: Option<RawText>,
    /// What the answer did, and how far that can be read.
    pub behaviour: Option<RawText>,
    /// After the list of what the answer proposed: what its sources do and do not prove.
    pub candidates: Option<RawText>,
    /// Before the legend of content kinds: why a sentence is split.
    pub kinds_lead: Option<RawText>,
    /// After the legend of content kinds: how the split applies beyond this case.
    pub kinds: Option<RawText>,
    /// Per claim: the answer's words, the before -> after sentence, the reading.
    #[serde(default)]
    pub claims: Vec<RawClaimNarrative>,
    /// The section on two shares with two denominators.
    pub denominators: Option<Spanned<RawDenominators>>,
    /// How to read an ideal bound (what a share of step time is worth).
    pub bound: Option<RawText>,
    /// Before the list of gates R1-R6.
    pub gates: Option<RawText>,
    /// After the list of gates.
    pub gates_note: Option<RawText>,
    /// The misreadings the author chose, replacing the generated list in the blog.
    #[serde(default)]
    pub misreadings: Vec<RawMisreading>,
    /// The closing paragraphs.
    pub closing: Option<RawText>,
    /// What comes next (the next day, the next study).
    pub next: Option<RawText>,
    /// The works the post cites, each a text with a link, listed at its end.
    #[serde(default)]
    pub references: Vec<RawReference>,
}

/// One entry of `narrative.references:`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawReference {
    /// What is cited, in every language of the report.
    pub text: RawText,
    /// Its address: `https://` or `http://`.
    pub url: Spanned<String>,
}

/// `narrative.conditions:`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConditions {
    /// Who produced the answer (a source id); the first source when absent.
    pub source: Option<Spanned<String>>,
    /// The model, as its maker names it.
    pub model: Option<String>,
    /// The client or harness that ran it, with its version.
    pub client: Option<String>,
    /// The reasoning effort.
    pub effort: Option<String>,
    /// The date of the run (`YYYY-MM-DD`).
    pub date: Option<Spanned<String>>,
    /// How many runs.
    pub runs: Option<Spanned<i64>>,
    /// The tools it could use.
    pub tools: Option<RawText>,
    /// What it could not see.
    pub unseen: Option<RawText>,
    /// The tool that checked the answer against the trace, with its version.
    pub verifier: Option<String>,
    /// A closing remark on what the run may be used for.
    pub note: Option<RawText>,
}

/// One entry of `narrative.claims:`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawClaimNarrative {
    /// The claim id.
    pub claim: Spanned<String>,
    /// The range or judgement the answer gave, in its words.
    pub said: Option<RawText>,
    /// The answer's words in the before -> after paragraph.
    pub before: Option<RawText>,
    /// What the evidence made of them (placeholders fill the numbers); generated when absent.
    pub after: Option<RawText>,
    /// How to read the verdict, after the verdict table.
    pub reading: Option<RawText>,
}

/// `narrative.denominators:`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDenominators {
    /// The section's heading.
    pub title: Option<RawText>,
    /// Before the formulas.
    pub lead: Option<RawText>,
    /// The formulas shown, each a `claim/part` with a number and an optional label.
    pub parts: Vec<RawDenominatorPart>,
    /// After the formulas: the question each share answers.
    pub questions: Option<RawText>,
}

/// One formula of `narrative.denominators.parts`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDenominatorPart {
    /// `claim/part`.
    pub part: Spanned<String>,
    /// The name on the formula's first line; the part's text when absent.
    pub label: Option<RawText>,
}

/// One entry of `narrative.misreadings:`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMisreading {
    /// The misreading, as a short lead.
    pub title: RawText,
    /// Why it is one.
    pub text: RawText,
}

/// A validated `narrative:`.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct Narrative {
    /// The opening.
    pub opening: Option<Text>,
    /// The run's conditions.
    pub conditions: Option<Conditions>,
    /// The prompt, verbatim.
    pub prompt: Option<Text>,
    /// Why the setup carries its name.
    pub naming: Option<Text>,
    /// What kind of study this is.
    pub design: Option<Text>,
    /// What a real experiment would need.
    pub experiment: Option<Text>,
    /// What the answer did.
    pub behaviour: Option<Text>,
    /// After the list of what the answer proposed.
    pub candidates: Option<Text>,
    /// Before the legend of content kinds.
    pub kinds_lead: Option<Text>,
    /// After the legend of content kinds.
    pub kinds: Option<Text>,
    /// Per claim, in file order of the entries.
    pub claims: Vec<ClaimNarrative>,
    /// The two-denominators section.
    pub denominators: Option<Denominators>,
    /// How to read an ideal bound.
    pub bound: Option<Text>,
    /// Before the gates.
    pub gates: Option<Text>,
    /// After the gates.
    pub gates_note: Option<Text>,
    /// The author's misreadings.
    pub misreadings: Vec<Misreading>,
    /// The closing.
    pub closing: Option<Text>,
    /// What comes next.
    pub next: Option<Text>,
    /// The works the post cites.
    pub references: Vec<Reference>,
}

/// A cited work.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Reference {
    /// What is cited.
    pub text: Text,
    /// Its address.
    pub url: String,
}

/// The run's conditions.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct Conditions {
    /// The source id.
    pub source: Option<String>,
    /// Model.
    pub model: Option<String>,
    /// Client with version.
    pub client: Option<String>,
    /// Reasoning effort.
    pub effort: Option<String>,
    /// Date of the run.
    pub date: Option<String>,
    /// Number of runs.
    pub runs: Option<u32>,
    /// Tools it could use.
    pub tools: Option<Text>,
    /// What it could not see.
    pub unseen: Option<Text>,
    /// The verifying tool.
    pub verifier: Option<String>,
    /// A remark on what the run may be used for.
    pub note: Option<Text>,
}

/// One claim's prose.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ClaimNarrative {
    /// The claim id.
    pub claim: String,
    /// The answer's range or judgement.
    pub said: Option<Text>,
    /// The answer's words before the evidence.
    pub before: Option<Text>,
    /// What the evidence made of them.
    pub after: Option<Text>,
    /// How to read the verdict.
    pub reading: Option<Text>,
}

/// The two-denominators section.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Denominators {
    /// Heading.
    pub title: Option<Text>,
    /// Before the formulas.
    pub lead: Option<Text>,
    /// (claim, part, label) of each formula.
    pub parts: Vec<(String, String, Option<Text>)>,
    /// After the formulas.
    pub questions: Option<Text>,
}

/// An author's misreading.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Misreading {
    /// Lead.
    pub title: Text,
    /// Text.
    pub text: Text,
}

impl Narrative {
    /// The prose of a claim, if the author wrote any.
    pub fn claim(&self, id: &str) -> Option<&ClaimNarrative> {
        self.claims.iter().find(|c| c.claim == id)
    }
}

use super::validate::{Checker, at, suggestion};
use super::{Claim, Show};

/// Validates `narrative:`: every text in every language, every claim and part it names, every
/// placeholder, the conditions' date and count. Problems go to the checker, each at its place.
pub(super) fn validate(
    c: &mut Checker,
    raw: &RawNarrative,
    sources: &std::collections::BTreeMap<String, super::raw::RawSource>,
    claims: &[Claim],
) -> Narrative {
    let s = Slots { claims };
    let conditions = raw.conditions.as_ref().map(|r| s.conditions(c, r, sources));
    let per_claim = s.claims(c, &raw.claims);
    let denominators = raw.denominators.as_ref().map(|d| s.denominators(c, d));
    Narrative {
        opening: s.text(c, &raw.opening, "opening", true),
        conditions,
        prompt: s.text(c, &raw.prompt, "prompt", false),
        naming: s.text(c, &raw.naming, "naming", true),
        design: s.text(c, &raw.design, "design", true),
        experiment: s.text(c, &raw.experiment, "experiment", true),
        behaviour: s.text(c, &raw.behaviour, "behaviour", true),
        candidates: s.text(c, &raw.candidates, "candidates", true),
        kinds_lead: s.text(c, &raw.kinds_lead, "kinds_lead", true),
        kinds: s.text(c, &raw.kinds, "kinds", true),
        claims: per_claim,
        denominators,
        bound: s.text(c, &raw.bound, "bound", true),
        gates: s.text(c, &raw.gates, "gates", true),
        gates_note: s.text(c, &raw.gates_note, "gates_note", true),
        misreadings: s.misreadings(c, &raw.misreadings),
        closing: s.text(c, &raw.closing, "closing", true),
        next: s.text(c, &raw.next, "next", true),
        references: s.references(c, &raw.references),
    }
}

/// What the slots of `narrative:` are checked against: the claims their placeholders and
/// names refer to.
struct Slots<'a> {
    /// The validated claims.
    claims: &'a [Claim],
}

impl Slots<'_> {
    /// The text of slot `what` in every language, its placeholders checked when it is filled
    /// (`fill`; the prompt, quoted verbatim, is not).
    fn text(&self, c: &mut Checker, t: &Option<RawText>, what: &str, fill: bool) -> Option<Text> {
        let t = t.as_ref()?;
        let v = c.text(t, &format!("`narrative.{what}`"));
        if fill {
            placeholders(c, t, &format!("`narrative.{what}`"), self.claims);
        }
        Some(v)
    }

    /// `narrative.conditions`: its source declared, its date a date, its runs a count.
    fn conditions(
        &self,
        c: &mut Checker,
        s: &Spanned<RawConditions>,
        sources: &std::collections::BTreeMap<String, super::raw::RawSource>,
    ) -> Conditions {
        let r = &s.value;
        if let Some(src) = &r.source
            && !sources.contains_key(&src.value)
        {
            c.err(
                at(src),
                format!("`narrative.conditions.source`: no source `{}`", src.value),
                Some(suggestion(&src.value, sources.keys().map(String::as_str))),
            );
        }
        if let Some(d) = &r.date
            && !is_date(&d.value)
        {
            c.err(
                at(d),
                format!("`narrative.conditions.date`: `{}` is not a date", d.value),
                Some("write it as `YYYY-MM-DD`, e.g. `2026-09-11`".into()),
            );
        }
        let runs = r.runs.as_ref().and_then(|n| match u32::try_from(n.value) {
            Ok(v) if v >= 1 => Some(v),
            _ => {
                c.err(
                    at(n),
                    format!("`narrative.conditions.runs`: `{}` is not a number of runs", n.value),
                    Some("give a whole number, 1 or more".into()),
                );
                None
            }
        });
        Conditions {
            source: r.source.as_ref().map(|s| s.value.clone()),
            model: r.model.clone(),
            client: r.client.clone(),
            effort: r.effort.clone(),
            date: r.date.as_ref().map(|d| d.value.clone()),
            runs,
            tools: self.text(c, &r.tools, "conditions.tools", false),
            unseen: self.text(c, &r.unseen, "conditions.unseen", false),
            verifier: r.verifier.clone(),
            note: self.text(c, &r.note, "conditions.note", true),
        }
    }

    /// `narrative.claims`: the prose of each claim, at most one entry per claim.
    fn claims(&self, c: &mut Checker, raw: &[RawClaimNarrative]) -> Vec<ClaimNarrative> {
        let claims = self.claims;
        let mut seen = std::collections::BTreeSet::new();
        raw.iter()
            .map(|rc| {
                let id = &rc.claim.value;
                if !claims.iter().any(|x| &x.id == id) {
                    c.err(
                        at(&rc.claim),
                        format!("`narrative.claims`: no claim `{id}`"),
                        Some(suggestion(id, claims.iter().map(|x| x.id.as_str()))),
                    );
                } else if !seen.insert(id.clone()) {
                    c.err(
                        at(&rc.claim),
                        format!("`narrative.claims`: claim `{id}` has prose twice"),
                        Some("keep one entry per claim".into()),
                    );
                }
                ClaimNarrative {
                    claim: id.clone(),
                    said: self.text(c, &rc.said, &format!("claims[{id}].said"), true),
                    before: self.text(c, &rc.before, &format!("claims[{id}].before"), true),
                    after: self.text(c, &rc.after, &format!("claims[{id}].after"), true),
                    reading: self.text(c, &rc.reading, &format!("claims[{id}].reading"), true),
                }
            })
            .collect()
    }

    /// `narrative.denominators`: at least one part whose formula it shows, each one with a
    /// number.
    fn denominators(&self, c: &mut Checker, s: &Spanned<RawDenominators>) -> Denominators {
        let d = &s.value;
        if d.parts.is_empty() {
            c.err(
                at(s),
                "`narrative.denominators` shows no formula",
                Some(
                    "list the parts whose formulas it shows under `parts`, as `claim/part`".into(),
                ),
            );
        }
        let parts = d
            .parts
            .iter()
            .filter_map(|p| {
                let label = self.text(c, &p.label, "denominators.parts.label", false);
                let (claim, part) =
                    numbered_part(c, &p.part, "`narrative.denominators.parts`", self.claims)?;
                Some((claim, part, label))
            })
            .collect();
        Denominators {
            title: self.text(c, &d.title, "denominators.title", true),
            lead: self.text(c, &d.lead, "denominators.lead", true),
            parts,
            questions: self.text(c, &d.questions, "denominators.questions", true),
        }
    }

    /// `narrative.misreadings`: each one's title and text, numbered from 1.
    fn misreadings(&self, c: &mut Checker, raw: &[RawMisreading]) -> Vec<Misreading> {
        raw.iter()
            .enumerate()
            .map(|(i, m)| Misreading {
                title: self
                    .text(c, &Some(m.title.clone()), &format!("misreadings[{}].title", i + 1), true)
                    .unwrap_or_default(),
                text: self
                    .text(c, &Some(m.text.clone()), &format!("misreadings[{}].text", i + 1), true)
                    .unwrap_or_default(),
            })
            .collect()
    }

    /// `narrative.references`: each one's text, and an address on the web.
    fn references(&self, c: &mut Checker, raw: &[RawReference]) -> Vec<Reference> {
        raw.iter()
            .enumerate()
            .map(|(i, r)| {
                let url = r.url.value.trim();
                let scheme = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://"));
                let bad =
                    |ch: char| ch.is_whitespace() || ch.is_control() || "<>\"()[]`".contains(ch);
                if scheme.is_none_or(|rest| rest.is_empty() || rest.contains(bad)) {
                    c.err(
                        at(&r.url),
                        format!(
                            "`narrative.references[{}].url`: `{}` is not a web address",
                            i + 1,
                            r.url.value
                        ),
                        Some(
                            "give an address that starts with `https://` or `http://`, without \
                             spaces, quotes, brackets or parentheses"
                                .into(),
                        ),
                    );
                }
                Reference {
                    text: self
                        .text(
                            c,
                            &Some(r.text.clone()),
                            &format!("references[{}].text", i + 1),
                            false,
                        )
                        .unwrap_or_default(),
                    url: url.to_string(),
                }
            })
            .collect()
    }
}

/// `YYYY-MM-DD` with a month 01-12 and a day 01-31.
pub(crate) fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    let num = |r: std::ops::Range<usize>| s[r].parse::<u32>().unwrap_or(0);
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && digits(0..4)
        && digits(5..7)
        && digits(8..10)
        && (1..=12).contains(&num(5..7))
        && (1..=31).contains(&num(8..10))
}

/// A `claim/part` that names a part with a number (a measure or an arithmetic formula).
fn numbered_part(
    c: &mut Checker,
    s: &Spanned<String>,
    what: &str,
    claims: &[Claim],
) -> Option<(String, String)> {
    let Some((claim, part)) = s.value.split_once('/') else {
        c.err(
            at(s),
            format!("{what}: `{}` is not `claim/part`", s.value),
            Some("write it as `claim/part`, e.g. `exposed-comm/share`".into()),
        );
        return None;
    };
    check_part(c, at(s), what, claim.trim(), part.trim(), Show::Value, claims)
        .then(|| (claim.trim().to_string(), part.trim().to_string()))
}

/// Whether `claim/part` exists and has a number to show in the form asked; else a problem.
pub(super) fn check_part(
    c: &mut Checker,
    pos: (u32, u32),
    what: &str,
    claim: &str,
    part: &str,
    show: Show,
    claims: &[Claim],
) -> bool {
    let Some(found) = claims.iter().find(|x| x.id == claim) else {
        c.err(
            pos,
            format!("{what}: no claim `{claim}`"),
            Some(suggestion(claim, claims.iter().map(|x| x.id.as_str()))),
        );
        return false;
    };
    let Some(p) = found.parts.iter().find(|x| x.id == part) else {
        c.err(
            pos,
            format!("{what}: claim `{claim}` has no part `{part}`"),
            Some(suggestion(part, found.parts.iter().map(|x| x.id.as_str()))),
        );
        return false;
    };
    if !p.is_measured() && p.formula.is_none() {
        c.err(
            pos,
            format!("{what}: `{claim}/{part}` has no number to show"),
            Some("point at a part with `measure`, `ratio` or an arithmetic `formula`".into()),
        );
        return false;
    }
    if show == Show::Change && !p.is_change() {
        c.err(
            pos,
            format!("{what}: `{claim}/{part}` is not a change: it has no direction to say"),
            Some(
                "use `:change` on a part comparing two sides (`compare` with `value: delta`, \
                 `change` or `ratio`) or on an arithmetic difference"
                    .into(),
            ),
        );
        return false;
    }
    if show == Show::Scope && !p.is_measured() {
        c.err(
            pos,
            format!("{what}: `{claim}/{part}` is arithmetic: it has no scope of its own"),
            Some("use `:scope` on a part with `measure` or `ratio`".into()),
        );
        return false;
    }
    if show == Show::Spread && p.measure.is_none() {
        c.err(
            pos,
            format!(
                "{what}: `{claim}/{part}` is {}: it has no spread across devices",
                if p.ratio.is_some() { "a ratio of two parts" } else { "arithmetic" }
            ),
            Some("use `:spread` on a measured part".into()),
        );
        return false;
    }
    true
}

/// Every placeholder of a text names a part with a number; each problem once per text.
fn placeholders(c: &mut Checker, t: &RawText, what: &str, claims: &[Claim]) {
    let mut seen = std::collections::BTreeSet::new();
    for text in t.value.values() {
        match super::placeholders(text) {
            Ok(found) => {
                for p in found {
                    if seen.insert((p.claim.clone(), p.part.clone(), format!("{:?}", p.show))) {
                        check_part(c, at(t), what, &p.claim, &p.part, p.show, claims);
                    }
                }
            }
            Err(e) => {
                if seen.insert((String::new(), e.clone(), String::new())) {
                    c.err(
                        at(t),
                        format!("{what}: {e}"),
                        Some("write `{claim/part}`, `{claim/part:value}` or `{claim/part:spread}`; a brace is only for a placeholder".into()),
                    );
                }
            }
        }
    }
}

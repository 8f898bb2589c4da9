//! Evaluating many answers to one question: each answer a claims file, judged by the same
//! pipeline, scored by one rubric, and compared across groups of conditions.
//!
//! An eval file names the answers with their conditions (group, model snapshot, prompt, tools,
//! reasoning effort, run, date) and, optionally, an answer key. Scores are counts read from
//! each answer's audit, every one traceable to its claim and part; groups are compared with
//! [`crate::stats`] (n shown, intervals, a rank test), never by a single winner. A condition the
//! eval says must be held fixed but that differs across answers makes the comparison not
//! controlled. No trace is read here: the audits are [`crate::audit::run`]'s.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_saphyr::Spanned;

use crate::audit::Audit;
use crate::claims::{ClaimsError, Kind, Problem, Text};
use crate::formula::Rational;
use crate::verdict::{GateStatus, PartOutcome, Verdict};

/// The eval file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEvalFile {
    eval: RawEval,
    answers: Vec<RawAnswer>,
    #[serde(default)]
    key: Option<RawKey>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEval {
    id: Spanned<String>,
    languages: Vec<String>,
    title: Text,
    #[serde(default)]
    question: Option<Text>,
    #[serde(default)]
    groups: Option<Spanned<String>>,
    #[serde(default)]
    held: Vec<Spanned<String>>,
    #[serde(default)]
    seed: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAnswer {
    claims: Spanned<String>,
    #[serde(default)]
    conditions: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawKey {
    #[serde(default)]
    next_step: Option<Text>,
    #[serde(default)]
    verdicts: BTreeMap<String, Spanned<String>>,
}

/// A validated eval file.
#[derive(Debug, Clone, Serialize)]
pub struct EvalFile {
    /// Id.
    pub id: String,
    /// Languages of its report.
    pub languages: Vec<String>,
    /// Title per language.
    pub title: Text,
    /// The question every answer answers.
    pub question: Option<Text>,
    /// The condition whose values make the groups.
    pub groups: String,
    /// Conditions every answer must share for the comparison to be controlled.
    pub held: Vec<String>,
    /// The bootstrap's seed.
    pub seed: u64,
    /// The answers.
    pub answers: Vec<AnswerDecl>,
    /// The reference next step (graded in review, not here).
    pub next_step: Option<Text>,
    /// Expected verdicts by claim id.
    pub key: BTreeMap<String, Verdict>,
}

/// One answer of an eval.
#[derive(Debug, Clone, Serialize)]
pub struct AnswerDecl {
    /// The claims file as written in the eval.
    pub claims: String,
    /// Resolved against the eval file's folder.
    #[serde(skip)]
    pub resolved: PathBuf,
    /// Its conditions.
    pub conditions: BTreeMap<String, String>,
}

/// Reads and validates an eval file; every problem at once, each at its line and column.
pub fn load(path: &Path) -> Result<EvalFile, ClaimsError> {
    let file = path.display().to_string();
    let err = |problems: Vec<Problem>| ClaimsError { file: file.clone(), problems };
    let text = crate::claims::load::read(path).map_err(|(message, hint)| {
        err(vec![Problem { line: 0, column: 0, message, hint: Some(hint) }])
    })?;
    let raw: RawEvalFile = crate::claims::load::parse_as(&text).map_err(|p| err(vec![p]))?;
    let base = path.parent().unwrap_or(Path::new("."));
    let mut problems = Vec::new();
    let at = |s: &Spanned<String>| (s.referenced.line() as u32, s.referenced.column() as u32);
    let mut problem = |pos: (u32, u32), message: String, hint: &str| {
        problems.push(Problem { line: pos.0, column: pos.1, message, hint: Some(hint.into()) })
    };
    let groups = raw.eval.groups.as_ref().map_or_else(|| "group".to_string(), |g| g.value.clone());
    if raw.answers.is_empty() {
        problem(
            at(&raw.eval.id),
            "the eval lists no answer".into(),
            "list the answers' claims files under `answers`",
        );
    }
    let mut answers = Vec::new();
    for a in &raw.answers {
        let resolved = base.join(&a.claims.value);
        if !resolved.is_file() {
            problem(
                at(&a.claims),
                format!(
                    "answer `{}` does not exist (resolved to `{}`)",
                    a.claims.value,
                    resolved.display()
                ),
                "answers' paths are relative to the eval file's folder",
            );
        }
        if !a.conditions.contains_key(&groups) {
            problem(
                at(&a.claims),
                format!("answer `{}` states no `{groups}` condition", a.claims.value),
                "every answer names its group among its conditions",
            );
        }
        answers.push(AnswerDecl {
            claims: a.claims.value.clone(),
            resolved,
            conditions: a.conditions.clone(),
        });
    }
    let held: Vec<String> = raw.eval.held.iter().map(|h| h.value.clone()).collect();
    for h in &raw.eval.held {
        if h.value == groups {
            problem(
                at(h),
                format!("`held` names `{groups}`, the condition that makes the groups"),
                "the groups differ by it; hold the others",
            );
        }
    }
    let mut key = BTreeMap::new();
    for (id, v) in raw.key.iter().flat_map(|k| &k.verdicts) {
        match Verdict::ALL.iter().find(|x| x.key() == v.value) {
            Some(x) => {
                key.insert(id.clone(), *x);
            }
            None => problem(
                at(v),
                format!("key: `{}` is not a verdict", v.value),
                "supported, partially_supported, unverifiable or not_supported",
            ),
        }
    }
    if !problems.is_empty() {
        return Err(err(problems));
    }
    Ok(EvalFile {
        id: raw.eval.id.value,
        languages: raw.eval.languages,
        title: raw.eval.title,
        question: raw.eval.question,
        groups,
        held,
        seed: raw.eval.seed.unwrap_or(crate::stats::DEFAULT_SEED),
        answers,
        next_step: raw.key.and_then(|k| k.next_step),
        key,
    })
}

/// The rubric's scores of one answer, all counts: name, short column header, definition.
pub const SCORES: &[(&str, &str, &str)] = &[
    ("claims", "claims", "claims in the answer"),
    ("supported", "sup.", "claims supported"),
    ("partially_supported", "partial", "claims partially supported"),
    ("unverifiable", "unverif.", "claims unverifiable"),
    ("not_supported", "not sup.", "claims not supported"),
    ("measurable_parts", "measured", "parts bound to a measure"),
    ("met_evidence", "met ev.", "measured parts that got a value with no failed gate"),
    ("r1_failures", "R1", "scope errors: gate R1 (window) failed"),
    ("r2_failures", "R2", "scope errors: gate R2 (population) failed"),
    ("r3_failures", "R3", "scope errors: gate R3 (metric, denominator) failed"),
    ("r4_failures", "R4", "scope errors: gate R4 (aggregation, units) failed"),
    ("says_failed", "says ✗", "stated numbers that do not hold"),
    ("arithmetic_failed", "arith. ✗", "arithmetic that does not hold"),
    ("causal_without_ab", "causal w/o A/B", "causal parts asserted without an A/B comparison"),
    (
        "causal_on_one_trace",
        "causal 1 trace",
        "of those, parts measured on one trace as if it showed the cause",
    ),
    ("key_agree", "key ✓", "claims whose verdict is the key's"),
    ("key_disagree", "key ✗", "claims whose verdict differs from the key's"),
];

/// Where a score came from: the claim and part (and gate) each count stands for.
#[derive(Debug, Clone, Serialize)]
pub struct Trace {
    /// The score.
    pub score: String,
    /// `claim/part` or `claim`, with the gate where there is one.
    pub at: String,
}

/// One scored answer.
#[derive(Debug, Clone, Serialize)]
pub struct Scored {
    /// The claims file.
    pub claims: String,
    /// Its conditions.
    pub conditions: BTreeMap<String, String>,
    /// Scores by name.
    pub scores: BTreeMap<String, i64>,
    /// What each count stands for.
    pub traces: Vec<Trace>,
    /// Verdict per claim id.
    pub verdicts: BTreeMap<String, Verdict>,
    /// The answer's next step, per language, for review.
    pub next_step: Option<Text>,
    /// Why the answer could not be judged.
    pub error: Option<String>,
}

/// Scores one audited answer by the rubric.
pub fn score(decl: &AnswerDecl, audit: &Audit, key: &BTreeMap<String, Verdict>) -> Scored {
    let mut scores: BTreeMap<String, i64> =
        SCORES.iter().map(|(k, _, _)| (k.to_string(), 0)).collect();
    let mut traces = Vec::new();
    let mut add = |name: &str, at: String| {
        *scores.get_mut(name).expect("a rubric score") += 1;
        traces.push(Trace { score: name.into(), at });
    };
    for (claim, r) in audit.claims.claims.iter().zip(&audit.results) {
        add("claims", claim.id.clone());
        add(r.verdict.key(), claim.id.clone());
        if let Some(expected) = key.get(&claim.id) {
            add(
                if *expected == r.verdict { "key_agree" } else { "key_disagree" },
                claim.id.clone(),
            );
        }
        for (part, p) in claim.parts.iter().zip(&r.parts) {
            let at = format!("{}/{}", claim.id, part.id);
            if let Some(m) = &part.measure {
                add("measurable_parts", at.clone());
                let failed = p.gates.iter().any(|g| g.status == GateStatus::Fail);
                if p.value.is_some() && !failed {
                    add("met_evidence", at.clone());
                }
                if part.kind == Kind::Causal && m.compare.is_none() {
                    add("causal_without_ab", at.clone());
                    add("causal_on_one_trace", at.clone());
                }
            } else if part.kind == Kind::Causal {
                add("causal_without_ab", at.clone());
            }
            for g in p.gates.iter().filter(|g| g.status == GateStatus::Fail) {
                let name = match g.gate {
                    "R1" => "r1_failures",
                    "R2" => "r2_failures",
                    "R3" => "r3_failures",
                    "R4" => "r4_failures",
                    _ => continue,
                };
                add(name, format!("{at} {}", g.gate));
            }
            if p.says.as_ref().is_some_and(|s| !s.matches) {
                add("says_failed", at.clone());
            }
            if p.outcome == PartOutcome::DoesNotHold {
                add("arithmetic_failed", at.clone());
            }
        }
    }
    Scored {
        claims: decl.claims.clone(),
        conditions: decl.conditions.clone(),
        scores,
        traces,
        verdicts: audit
            .claims
            .claims
            .iter()
            .zip(&audit.results)
            .map(|(c, r)| (c.id.clone(), r.verdict))
            .collect(),
        next_step: audit.claims.review.next.clone(),
        error: audit.unreadable_traces().next().and_then(|t| t.error.clone()),
    }
}

/// One score over one group.
#[derive(Debug, Clone, Serialize)]
pub struct GroupScore {
    /// Answers.
    pub n: usize,
    /// Lower median.
    pub median: i64,
    /// Smallest.
    pub min: i64,
    /// Largest.
    pub max: i64,
    /// Exact mean, `[num, den]`.
    pub mean: [String; 2],
}

/// Two groups compared on one score.
#[derive(Debug, Clone, Serialize)]
pub struct Difference {
    /// The score.
    pub score: String,
    /// Group A (the first in order) and B.
    pub groups: [String; 2],
    /// n per group.
    pub n: [usize; 2],
    /// Median of B minus median of A.
    pub delta: i64,
    /// The 95% bootstrap interval of that difference, when both groups have two answers or
    /// more.
    pub interval: Option<[i64; 2]>,
    /// The two-sided Mann-Whitney p-value, when both groups have two answers or more.
    pub p_value: Option<f64>,
    /// Fewer than five answers in a group: the interval and the test are weak.
    pub few: bool,
}

/// The whole evaluation.
#[derive(Debug, Clone, Serialize)]
pub struct Evaluation {
    /// The eval file.
    pub eval: EvalFile,
    /// Every answer, scored.
    pub answers: Vec<Scored>,
    /// Per group (in order of the group's name), per score.
    pub groups: BTreeMap<String, BTreeMap<String, GroupScore>>,
    /// The first two groups compared on every score (more groups: each against the first).
    pub differences: Vec<Difference>,
    /// Conditions that vary across answers (besides the groups, the run and the date).
    pub varied: BTreeMap<String, Vec<String>>,
    /// Conditions the eval holds fixed that nevertheless vary: the comparison is then not
    /// controlled.
    pub uncontrolled: Vec<String>,
    /// Whether only the group condition differs among the held ones.
    pub controlled: bool,
}

/// Conditions that are expected to differ from answer to answer.
const PER_RUN: &[&str] = &["run", "date"];

/// Groups, differences and conditions over scored answers.
pub fn evaluate(eval: EvalFile, answers: Vec<Scored>) -> Evaluation {
    let mut by_group: BTreeMap<String, Vec<&Scored>> = BTreeMap::new();
    for a in &answers {
        let g = a.conditions.get(&eval.groups).cloned().unwrap_or_default();
        by_group.entry(g).or_default().push(a);
    }
    let values = |members: &[&Scored], score: &str| -> Vec<i64> {
        members.iter().map(|a| a.scores.get(score).copied().unwrap_or(0)).collect()
    };
    let mut groups = BTreeMap::new();
    for (g, members) in &by_group {
        let mut per = BTreeMap::new();
        for (score, _, _) in SCORES {
            let v = values(members, score);
            if let Some(s) = crate::stats::summarize(&v) {
                per.insert(
                    score.to_string(),
                    GroupScore {
                        n: s.n,
                        median: s.median,
                        min: s.min,
                        max: s.max,
                        mean: [s.mean.num.to_string(), s.mean.den.to_string()],
                    },
                );
            }
        }
        groups.insert(g.clone(), per);
    }
    let names: Vec<&String> = by_group.keys().collect();
    let mut differences = Vec::new();
    if let Some((first, rest)) = names.split_first() {
        for other in rest {
            for (score, _, _) in SCORES {
                let (a, b) = (values(&by_group[*first], score), values(&by_group[*other], score));
                let Some(md) = crate::stats::median_difference(&a, &b) else { continue };
                let conf = Rational::new(95, 100).expect("a fraction");
                let interval = crate::stats::bootstrap_median_difference(
                    &a,
                    &b,
                    conf,
                    crate::stats::DEFAULT_RESAMPLES,
                    eval.seed,
                )
                .ok()
                .and_then(|bi| Some([i64::try_from(bi.low).ok()?, i64::try_from(bi.high).ok()?]));
                let p_value = crate::stats::mann_whitney(&a, &b).ok().map(|m| m.p_value);
                differences.push(Difference {
                    score: score.to_string(),
                    groups: [(*first).clone(), (*other).clone()],
                    n: [a.len(), b.len()],
                    delta: i64::try_from(md.difference).unwrap_or(i64::MAX),
                    interval,
                    p_value,
                    few: a.len().min(b.len()) < crate::stats::FEW_SAMPLES,
                });
            }
        }
    }
    let mut varied: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let keys: std::collections::BTreeSet<&String> =
        answers.iter().flat_map(|a| a.conditions.keys()).collect();
    for k in keys {
        if *k == eval.groups || PER_RUN.contains(&k.as_str()) {
            continue;
        }
        let mut vals: Vec<String> = answers
            .iter()
            .map(|a| a.conditions.get(k).cloned().unwrap_or_else(|| "(unstated)".into()))
            .collect();
        vals.sort();
        vals.dedup();
        if vals.len() > 1 {
            varied.insert(k.clone(), vals);
        }
    }
    let uncontrolled: Vec<String> =
        eval.held.iter().filter(|h| varied.contains_key(*h)).cloned().collect();
    // A held condition an answer does not state cannot be shown to be held.
    let unstated: Vec<String> = eval
        .held
        .iter()
        .filter(|h| answers.iter().any(|a| !a.conditions.contains_key(*h)))
        .cloned()
        .collect();
    let mut uncontrolled = uncontrolled;
    for u in unstated {
        if !uncontrolled.contains(&u) {
            uncontrolled.push(u);
        }
    }
    let controlled = uncontrolled.is_empty();
    Evaluation { eval, answers, groups, differences, varied, uncontrolled, controlled }
}

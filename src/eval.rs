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
    /// Traces the answers share: an answer without `traces` reads these.
    #[serde(default)]
    traces: BTreeMap<String, crate::claims::raw::RawTrace>,
    /// Scopes the answers share: an answer without `scopes` reads these.
    #[serde(default)]
    scopes: BTreeMap<String, crate::claims::raw::RawScope>,
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
    /// The traces the answers share, their paths resolved against the eval file's folder.
    #[serde(skip)]
    pub traces: BTreeMap<String, crate::claims::raw::RawTrace>,
    /// The scopes the answers share.
    #[serde(skip)]
    pub scopes: BTreeMap<String, crate::claims::raw::RawScope>,
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
    let mut problems = Problems(Vec::new());
    let groups = raw.eval.groups.as_ref().map_or_else(|| "group".to_string(), |g| g.value.clone());
    check_header(&mut problems, &raw);
    let (answers, positions) = answers(&mut problems, &raw.answers, base, &groups);
    check_each_once(&mut problems, &answers, &positions);
    let held: Vec<String> = raw.eval.held.iter().map(|h| h.value.clone()).collect();
    for h in &raw.eval.held {
        if h.value == groups {
            problems.push(
                at(h),
                format!("`held` names `{groups}`, the condition that makes the groups"),
                "the groups differ by it; hold the others",
            );
        }
    }
    let key = answer_key(&mut problems, raw.key.as_ref());
    if !problems.0.is_empty() {
        return Err(err(problems.0));
    }
    // Shared traces: their paths resolved here, so an answer in another folder reads the same
    // files.
    let mut traces = raw.traces;
    for t in traces.values_mut() {
        use crate::claims::raw::RawPaths;
        let abs = |p: &String| base.join(p).display().to_string();
        t.path.value = match &t.path.value {
            RawPaths::One(p) => RawPaths::One(abs(p)),
            RawPaths::Many(v) => RawPaths::Many(v.iter().map(abs).collect()),
        };
    }
    Ok(EvalFile {
        traces,
        scopes: raw.scopes,
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

/// The problems of an eval file, in the order they are found: all of them are reported at
/// once.
struct Problems(Vec<Problem>);

impl Problems {
    /// A problem at `pos` (line, column), with its hint.
    fn push(&mut self, pos: (u32, u32), message: String, hint: &str) {
        self.0.push(Problem { line: pos.0, column: pos.1, message, hint: Some(hint.into()) });
    }
}

/// Where a value of the eval file is written: its line and column.
fn at(s: &Spanned<String>) -> (u32, u32) {
    (s.referenced.line() as u32, s.referenced.column() as u32)
}

/// The eval's id, which names the report's files, and its list of answers, which may not be
/// empty.
fn check_header(problems: &mut Problems, raw: &RawEvalFile) {
    // The id names the report's files (`ID.eval.json`...), as a claims file's report id does:
    // the same characters and length, so that it can neither leave --out nor be too long.
    let id = &raw.eval.id.value;
    if id.is_empty() || !id.chars().all(|ch| ch.is_ascii_alphanumeric() || "-_.".contains(ch)) {
        problems.push(
            at(&raw.eval.id),
            format!("eval id `{id}` cannot name output files"),
            "use letters, digits, `-`, `_` and `.`",
        );
    } else if id.len() > crate::claims::validate::MAX_REPORT_ID {
        problems.push(
            at(&raw.eval.id),
            format!(
                "eval id is {} characters; the limit is {}",
                id.len(),
                crate::claims::validate::MAX_REPORT_ID
            ),
            "the id names every output file, and some file systems take names of 143 bytes at most",
        );
    }
    if raw.answers.is_empty() {
        problems.push(
            at(&raw.eval.id),
            "the eval lists no answer".into(),
            "list the answers' claims files under `answers`",
        );
    }
}

/// The answers of the eval, each with the position of its entry: a path, or a glob that stands
/// for every file it matches; each one's claims file must exist, its `tools` condition read,
/// and its group (condition `groups`) stated.
fn answers(
    problems: &mut Problems,
    raw: &[RawAnswer],
    base: &Path,
    groups: &str,
) -> (Vec<AnswerDecl>, Vec<(u32, u32)>) {
    let mut answers = Vec::new();
    let mut positions = Vec::new();
    for a in raw {
        if let Some(tools) = a.conditions.get("tools")
            && let Err(e) = check_tools(tools)
        {
            problems.push(
                at(&a.claims),
                format!("answer `{}`: condition `tools: {tools}` {e}", a.claims.value),
                "`tools` lists what the answering agent could call, comma-separated (`verdict-mcp`, `nsys-sqlite`), or is `none`",
            );
        }
        let resolved = base.join(&a.claims.value);
        // A glob (that names no file itself) stands for every file it matches, in sorted
        // order, each an answer with the entry's conditions and its file stem as `run`.
        if crate::claims::validate::is_set_path(base, &a.claims.value) {
            let found =
                crate::claims::validate::glob_files(base, &a.claims.value).unwrap_or_else(|e| {
                    problems.push(
                        at(&a.claims),
                        format!("answers: {e}"),
                        "answers' paths and globs are relative to the eval file's folder",
                    );
                    Vec::new()
                });
            for f in found {
                let mut conditions = a.conditions.clone();
                if let Some(stem) = f.file_stem() {
                    conditions
                        .entry("run".into())
                        .or_insert_with(|| stem.to_string_lossy().into_owned());
                }
                let shown = f.strip_prefix(base).unwrap_or(&f).display().to_string();
                if !conditions.contains_key(groups) {
                    problems.push(
                        at(&a.claims),
                        format!("answers `{}` state no `{groups}` condition", a.claims.value),
                        "every answer names its group among its conditions",
                    );
                }
                answers.push(AnswerDecl { claims: shown, resolved: f, conditions });
                positions.push(at(&a.claims));
            }
            continue;
        }
        if !resolved.is_file() {
            problems.push(
                at(&a.claims),
                format!(
                    "answer `{}` does not exist (resolved to `{}`)",
                    a.claims.value,
                    resolved.display()
                ),
                "answers' paths are relative to the eval file's folder",
            );
        }
        if !a.conditions.contains_key(groups) {
            problems.push(
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
        positions.push(at(&a.claims));
    }
    (answers, positions)
}

/// Each answer once (issue 28): the same file under two names, or a copy of its bytes, would
/// be scored twice and weigh twice in its group. `positions` holds each answer's entry.
fn check_each_once(problems: &mut Problems, answers: &[AnswerDecl], positions: &[(u32, u32)]) {
    // Per answer kept: its index, file identity and sha256.
    type Seen = (usize, Option<(u64, u64)>, Option<String>);
    let mut seen: Vec<Seen> = Vec::new();
    for (i, a) in answers.iter().enumerate() {
        let id = crate::trace::open::file_id(&a.resolved);
        // Only a regular file is read: a named pipe would block (`answers` refuses it).
        let sha =
            a.resolved.is_file().then(|| crate::trace::sha256_file(&a.resolved).ok()).flatten();
        let same = seen.iter().find_map(|(j, jid, jsha)| {
            if id.is_some() && id == *jid {
                Some((*j, "the same file as"))
            } else if sha.is_some() && sha == *jsha {
                Some((*j, "byte for byte the same as"))
            } else {
                None
            }
        });
        match same {
            Some((j, how)) => problems.push(
                positions[i],
                format!(
                    "answer `{}` is {how} answer `{}` (line {})",
                    a.claims, answers[j].claims, positions[j].0
                ),
                "list each answer once; a rerun is a new claims file with its own `run` condition",
            ),
            None => seen.push((i, id, sha)),
        }
    }
}

/// The answer key's expected verdicts by claim id, each one a verdict.
fn answer_key(problems: &mut Problems, raw: Option<&RawKey>) -> BTreeMap<String, Verdict> {
    let mut key = BTreeMap::new();
    for (id, v) in raw.iter().flat_map(|k| &k.verdicts) {
        match Verdict::ALL.iter().find(|x| x.key() == v.value) {
            Some(x) => {
                key.insert(id.clone(), *x);
            }
            None => problems.push(
                at(v),
                format!("key: `{}` is not a verdict", v.value),
                "supported, partially_supported, unverifiable or not_supported",
            ),
        }
    }
    key
}

/// Reads one answer: its claims file, with the eval's traces and scopes where it declares none,
/// validated as `verdict check` validates it.
pub fn load_answer(
    eval: &EvalFile,
    a: &AnswerDecl,
) -> Result<crate::claims::ClaimSet, ClaimsError> {
    let mut raw = crate::claims::load::load_raw(&a.resolved)?;
    if raw.traces.is_empty() {
        raw.traces = eval.traces.clone();
        if raw.scopes.is_empty() {
            raw.scopes = eval.scopes.clone();
        }
    }
    crate::claims::validate::validate(raw, &a.resolved)
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
            // A judged ratio of two measures is measured as a measure is.
            if part.is_measured() {
                add("measurable_parts", at.clone());
                let failed = p.gates.iter().any(|g| g.status == GateStatus::Fail);
                if p.value.is_some() && !failed {
                    add("met_evidence", at.clone());
                }
                if part.kind == Kind::Causal
                    && part.measure.as_ref().is_none_or(|m| m.compare.is_none())
                {
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
    /// The reviewers' grades, unblinded (`--grades`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review: Option<Review>,
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
    // A held condition that varies, or that an answer does not state (it cannot be shown to
    // be held).
    let uncontrolled: Vec<String> = eval
        .held
        .iter()
        .filter(|h| {
            varied.contains_key(*h) || answers.iter().any(|a| !a.conditions.contains_key(*h))
        })
        .cloned()
        .collect();
    let controlled = uncontrolled.is_empty();
    Evaluation {
        eval,
        answers,
        groups,
        differences,
        varied,
        uncontrolled,
        controlled,
        review: None,
    }
}

/// Which answer each review sheet shows: sheet `i` (from 0) shows answer `order[i]`. A
/// Fisher-Yates shuffle drawn from SplitMix64 with the eval's seed, so the order is disclosed
/// by the seed and the same in every version.
pub fn sheet_order(n: usize, seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut rng = crate::stats::SplitMix64::new(seed);
    for i in (1..n).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        order.swap(i, j);
    }
    order
}

/// The name of sheet `i` (from 0): `S01`, `S02`...
pub fn sheet_id(i: usize) -> String {
    format!("S{:02}", i + 1)
}

/// The grades a reviewer gives.
pub const NEXT_STEP_GRADES: [&str; 3] = ["good", "partial", "poor"];

/// One blind review sheet in Markdown: the question, the answer's claims as written with the
/// tool's verdict and reason, its next step, and the blanks to fill. Nothing that names the
/// answer's file, source, group or conditions.
///
/// Every value goes through the escaping every report applies ([`crate::render::markup`]):
/// author text is re-emitted as safe Markdown (raw HTML shown as text, links only to http,
/// https and mailto), ids are code spans, and control characters and bidirectional overrides
/// are shown as escapes, since reviewers open sheets in Markdown viewers.
pub fn sheet_markdown(id: &str, eval: &EvalFile, audit: &Audit, lang: &str) -> String {
    use crate::markdown::markdown_code_span;
    use crate::render::markup::{markdown_safe, markdown_text};
    let tr = |t: &Text| t.get(lang).or_else(|| t.values().next()).cloned().unwrap_or_default();
    let inline = |t: &Text| markdown_safe(&tr(t), true);
    let mut s = format!("# Review sheet {id}\n\n");
    if let Some(q) = &eval.question {
        s += &format!("**Question**: {}\n\n", inline(q));
    }
    s += "## The answer's claims, with the tool's verdicts\n\n";
    for (claim, r) in audit.claims.claims.iter().zip(&audit.results) {
        let reason = r.reason.in_language(lang).unwrap_or_else(|| r.reason.english());
        s += &format!(
            "- {}: {} — tool: **{}** ({})\n",
            markdown_code_span(&claim.id, false),
            inline(&claim.statement),
            r.verdict.key().replace('_', " "),
            markdown_safe(&reason, true)
        );
        for (part, p) in claim.parts.iter().zip(&r.parts) {
            let text = part.text.as_ref().map(inline).unwrap_or_default();
            let value = p.formula.as_ref().and_then(|f| f.display.clone());
            s += &format!(
                "  - {} ({}): {}{} — {}\n",
                markdown_code_span(&part.id, false),
                part.kind.as_str(),
                text,
                value.map_or(String::new(), |v| format!(" = {}", markdown_text(&v, true))),
                p.outcome.key().replace('_', " ")
            );
        }
    }
    s += "\n## The answer's next step\n\n";
    s += &audit
        .claims
        .review
        .next
        .as_ref()
        .map_or_else(|| "(none stated)".to_string(), |t| markdown_safe(&tr(t), false));
    s += &format!(
        "\n\n## Your grades (also in the CSV row of {id})\n\n- R6 usefulness, 1 (useless) to 5 (decides the question): ___\n- next step: {} ___\n",
        NEXT_STEP_GRADES.join(" / ")
    );
    s
}

/// The CSV a reviewer fills: one row per sheet, in sheet order.
pub fn grades_template(n: usize) -> String {
    let mut s = String::from("sheet,reviewer,usefulness,next_step,notes\n");
    for i in 0..n {
        s += &format!("{},,,,\n", sheet_id(i));
    }
    s
}

/// One reviewer's grade of one sheet.
#[derive(Debug, Clone, Serialize)]
pub struct Grade {
    /// The reviewer.
    pub reviewer: String,
    /// R6 usefulness, 1-5.
    pub usefulness: i64,
    /// `good`, `partial` or `poor`.
    pub next_step: String,
    /// Free text.
    pub notes: String,
}

/// Reads filled grade files: every sheet graded once by each reviewer, usefulness 1-5, the
/// next step one of [`NEXT_STEP_GRADES`]. Returns the grades by sheet index, or every problem
/// as `FILE:LINE: message`.
///
/// The files are CSV as spreadsheets write it (RFC 4180: a quoted field may hold commas,
/// quotes and line breaks); a note with unquoted commas is read whole, as the last field. One
/// file is one reviewer's: a row naming another reviewer is a problem, and so is a file given
/// twice (issue 28), since either would make a reviewer of a few rows or count a review twice.
pub fn read_grades(files: &[PathBuf], sheets: usize) -> Result<Vec<Vec<Grade>>, Vec<String>> {
    let mut by_sheet: Vec<Vec<Grade>> = vec![Vec::new(); sheets];
    let mut problems = Vec::new();
    let mut given: Vec<(Option<(u64, u64)>, &PathBuf)> = Vec::new();
    // The same grades under a second name (a copy), and one reviewer's second file, would
    // count one review twice.
    let mut contents: Vec<(String, &PathBuf)> = Vec::new();
    let mut reviewers: BTreeMap<String, &PathBuf> = BTreeMap::new();
    for f in files {
        let name = f.display();
        let id = crate::trace::open::file_id(f);
        if let Some((_, first)) = given.iter().find(|(i, p)| (id.is_some() && *i == id) || *p == f)
        {
            problems.push(format!(
                "{name}: the same grades file is given twice (as `{}` before)",
                first.display()
            ));
            continue;
        }
        given.push((id, f));
        let text = match crate::trace::open::read_to_string_limited(f, MAX_GRADES_BYTES) {
            Ok(t) => t,
            Err(e) => {
                problems.push(format!("{name}: cannot read ({e})"));
                continue;
            }
        };
        let digest = {
            use sha2::Digest as _;
            crate::trace::hex(&sha2::Sha256::digest(text.as_bytes()))
        };
        if let Some((_, first)) = contents.iter().find(|(d, _)| *d == digest) {
            problems.push(format!(
                "{name}: the same grades as `{}` (the same bytes): one review counts once",
                first.display()
            ));
            continue;
        }
        contents.push((digest, f));
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(true)
            .flexible(true)
            .trim(csv::Trim::All)
            .from_reader(text.as_bytes());
        let mut seen = vec![false; sheets];
        let mut file_reviewer: Option<(String, u64)> = None;
        for record in reader.records() {
            let record = match record {
                Ok(r) => r,
                Err(e) => {
                    let line = e.position().map_or(0, |p| p.line());
                    problems.push(format!("{name}:{line}: not CSV ({e})"));
                    continue;
                }
            };
            let line = record.position().map_or(0, |p| p.line());
            if record.iter().all(str::is_empty) {
                continue;
            }
            let at = |m: String| format!("{name}:{line}: {m}");
            if record.len() < 5 {
                problems.push(at("expected sheet,reviewer,usefulness,next_step,notes".into()));
                continue;
            }
            let cells: Vec<&str> = record.iter().collect();
            let [sheet, reviewer, usefulness, next] = [cells[0], cells[1], cells[2], cells[3]];
            let notes = cells[4..].join(",");
            let Some(i) = (0..sheets).find(|i| sheet_id(*i) == sheet) else {
                problems.push(at(format!("`{sheet}` is not a sheet of this eval")));
                continue;
            };
            if seen[i] {
                problems.push(at(format!("{sheet} is graded twice in this file")));
                continue;
            }
            seen[i] = true;
            if reviewer.is_empty() {
                problems.push(at(format!("{sheet}: the reviewer is not named")));
            }
            match &file_reviewer {
                None if !reviewer.is_empty() => file_reviewer = Some((reviewer.to_string(), line)),
                Some((r, l)) if !reviewer.is_empty() && r != reviewer => problems.push(at(format!(
                    "{sheet}: reviewer `{reviewer}` is not `{r}`, who grades the file from line {l}"
                ))),
                _ => {}
            }
            let u = usefulness.parse::<i64>().ok().filter(|u| (1..=5).contains(u));
            if u.is_none() {
                problems.push(at(format!("{sheet}: usefulness `{usefulness}` is not 1 to 5")));
            }
            if !NEXT_STEP_GRADES.contains(&next) {
                problems.push(at(format!(
                    "{sheet}: next step `{next}` is not one of {}",
                    NEXT_STEP_GRADES.join(", ")
                )));
            }
            if let Some(u) = u {
                by_sheet[i].push(Grade {
                    reviewer: reviewer.to_string(),
                    usefulness: u,
                    next_step: next.to_string(),
                    notes,
                });
            }
        }
        for (i, s) in seen.iter().enumerate() {
            if !s {
                problems.push(format!("{name}: sheet {} is not graded", sheet_id(i)));
            }
        }
        if let Some((r, _)) = file_reviewer {
            if let Some(first) = reviewers.get(&r) {
                problems.push(format!(
                    "{name}: reviewer `{r}` grades `{}` already: one reviewer's grades count once",
                    first.display()
                ));
            } else {
                reviewers.insert(r, f);
            }
        }
    }
    if problems.is_empty() { Ok(by_sheet) } else { Err(problems) }
}

/// The largest grades file read: a few lines per sheet.
const MAX_GRADES_BYTES: u64 = 64 << 20;

/// Cohen's kappa of two raters over the same items (categories as text): `(p_o - p_e) / (1 -
/// p_e)`; None with no item, or when chance agreement is total (`p_e = 1`).
pub fn cohen_kappa(a: &[String], b: &[String]) -> Option<f64> {
    let n = a.len();
    if n == 0 || n != b.len() {
        return None;
    }
    let agree = a.iter().zip(b).filter(|(x, y)| x == y).count() as f64 / n as f64;
    let mut cats: Vec<&String> = a.iter().chain(b).collect();
    cats.sort();
    cats.dedup();
    let chance: f64 = cats
        .iter()
        .map(|c| {
            let pa = a.iter().filter(|x| x == c).count() as f64 / n as f64;
            let pb = b.iter().filter(|x| x == c).count() as f64 / n as f64;
            pa * pb
        })
        .sum();
    if (1.0 - chance).abs() < f64::EPSILON {
        return None;
    }
    Some((agree - chance) / (1.0 - chance))
}

/// The weights of a weighted kappa: how much a disagreement of two grades counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weights {
    /// `|a - b|`: one step apart counts one.
    Linear,
    /// `(a - b)^2`: far apart counts more.
    Quadratic,
}

/// Weighted kappa of two raters over the same items on an ordered scale:
/// `1 - sum(w O) / sum(w E)`, with `O` the observed pairs, `E` the pairs expected from each
/// rater's own distribution and `w` the disagreement weight. The weights' scale cancels, so
/// the grades need no normalising. None with no item, or when no disagreement is expected.
pub fn weighted_kappa(a: &[i64], b: &[i64], weights: Weights) -> Option<f64> {
    let n = a.len();
    if n == 0 || n != b.len() {
        return None;
    }
    let w = |x: i64, y: i64| {
        let d = (x - y).abs() as f64;
        match weights {
            Weights::Linear => d,
            Weights::Quadratic => d * d,
        }
    };
    let observed: f64 = a.iter().zip(b).map(|(x, y)| w(*x, *y)).sum::<f64>() / n as f64;
    let expected: f64 =
        a.iter().map(|x| b.iter().map(|y| w(*x, *y)).sum::<f64>()).sum::<f64>() / (n * n) as f64;
    if expected.abs() < f64::EPSILON {
        return None;
    }
    Some(1.0 - observed / expected)
}

/// A percentile bootstrap 95% interval of a statistic of paired items: items drawn with
/// replacement from SplitMix64 with the eval's seed, `resamples` times; draws where the
/// statistic does not exist are left out. None when fewer than half of the draws give one.
pub fn paired_bootstrap(
    a: &[i64],
    b: &[i64],
    seed: u64,
    resamples: u32,
    stat: impl Fn(&[i64], &[i64]) -> Option<f64>,
) -> Option<[f64; 2]> {
    let n = a.len();
    if n == 0 || n != b.len() {
        return None;
    }
    let mut rng = crate::stats::SplitMix64::new(seed);
    let mut values = Vec::with_capacity(resamples as usize);
    let (mut da, mut db) = (vec![0; n], vec![0; n]);
    for _ in 0..resamples {
        for i in 0..n {
            let j = rng.below(n as u64) as usize;
            da[i] = a[j];
            db[i] = b[j];
        }
        if let Some(v) = stat(&da, &db) {
            values.push(v);
        }
    }
    if values.len() * 2 < resamples as usize {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
    Some([at(0.025), at(0.975)])
}

/// Resamples of the agreement's bootstrap intervals.
pub const KAPPA_RESAMPLES: u32 = 2_000;

/// The human grades of an eval, unblinded.
#[derive(Debug, Clone, Serialize)]
pub struct Review {
    /// The reviewers, by name.
    pub reviewers: Vec<String>,
    /// Per answer (in the eval's order): its sheet and every reviewer's grade.
    pub answers: Vec<(String, Vec<Grade>)>,
    /// Cohen's kappa per pair of reviewers, on the next-step grades and on usefulness (as
    /// categories).
    pub agreement: Vec<Agreement>,
}

/// Two reviewers' agreement.
#[derive(Debug, Clone, Serialize)]
pub struct Agreement {
    /// The two reviewers.
    pub reviewers: [String; 2],
    /// Cohen's kappa on the next-step grades.
    pub next_step_kappa: Option<f64>,
    /// Cohen's kappa on usefulness, each grade a category.
    pub usefulness_kappa: Option<f64>,
    /// Linearly weighted kappa on usefulness, the 1-5 grades as an ordered scale.
    pub usefulness_linear: Option<f64>,
    /// Quadratically weighted kappa on usefulness.
    pub usefulness_quadratic: Option<f64>,
    /// Percentile bootstrap 95% interval of the quadratic one ([`KAPPA_RESAMPLES`] draws of
    /// the answers, the eval's seed).
    pub usefulness_quadratic_interval: Option<[f64; 2]>,
}

/// Unblinds the grades by sheet into grades by answer, adds the human scores
/// (`usefulness_median`, the lower median of the reviewers' grades; `next_step_good`, the
/// reviewers who graded the next step good) and the reviewers' agreement.
pub fn unblind(ev: &mut Evaluation, by_sheet: Vec<Vec<Grade>>) {
    let order = sheet_order(ev.answers.len(), ev.eval.seed);
    let mut answers: Vec<(String, Vec<Grade>)> =
        vec![(String::new(), Vec::new()); ev.answers.len()];
    for (i, grades) in by_sheet.into_iter().enumerate() {
        answers[order[i]] = (sheet_id(i), grades);
    }
    let mut reviewers: Vec<String> =
        answers.iter().flat_map(|(_, g)| g.iter().map(|x| x.reviewer.clone())).collect();
    reviewers.sort();
    reviewers.dedup();
    for (a, (_, grades)) in ev.answers.iter_mut().zip(&answers) {
        let mut u: Vec<i64> = grades.iter().map(|g| g.usefulness).collect();
        u.sort_unstable();
        if let Some(m) = u.get(u.len().saturating_sub(1) / 2) {
            a.scores.insert("usefulness_median".into(), *m);
        }
        a.scores.insert(
            "next_step_good".into(),
            grades.iter().filter(|g| g.next_step == "good").count() as i64,
        );
    }
    let mut agreement = Vec::new();
    for (i, r1) in reviewers.iter().enumerate() {
        for r2 in &reviewers[i + 1..] {
            let pick = |r: &String, f: &dyn Fn(&Grade) -> String| -> Vec<String> {
                answers
                    .iter()
                    .map(|(_, g)| g.iter().find(|x| &x.reviewer == r).map(f).unwrap_or_default())
                    .collect()
            };
            // Usefulness as an ordered scale, over the answers both reviewers graded.
            let both: Vec<(i64, i64)> = answers
                .iter()
                .filter_map(|(_, g)| {
                    let x = g.iter().find(|x| &x.reviewer == r1)?.usefulness;
                    let y = g.iter().find(|x| &x.reviewer == r2)?.usefulness;
                    Some((x, y))
                })
                .collect();
            let (ua, ub): (Vec<i64>, Vec<i64>) = both.into_iter().unzip();
            agreement.push(Agreement {
                usefulness_linear: weighted_kappa(&ua, &ub, Weights::Linear),
                usefulness_quadratic: weighted_kappa(&ua, &ub, Weights::Quadratic),
                usefulness_quadratic_interval: paired_bootstrap(
                    &ua,
                    &ub,
                    ev.eval.seed,
                    KAPPA_RESAMPLES,
                    |a, b| weighted_kappa(a, b, Weights::Quadratic),
                ),
                reviewers: [r1.clone(), r2.clone()],
                next_step_kappa: cohen_kappa(
                    &pick(r1, &|g| g.next_step.clone()),
                    &pick(r2, &|g| g.next_step.clone()),
                ),
                usefulness_kappa: cohen_kappa(
                    &pick(r1, &|g| g.usefulness.to_string()),
                    &pick(r2, &|g| g.usefulness.to_string()),
                ),
            });
        }
    }
    ev.review = Some(Review { reviewers, answers, agreement });
}

/// The `tools` condition's value for an agent that had `verdict mcp` (docs/agents.md).
pub const TOOLS_VERDICT_MCP: &str = "verdict-mcp";

/// Checks the `tools` condition: names of what the answering agent could call, separated by
/// commas, each once (`verdict-mcp`, `nsys-sqlite`), or `none` alone. An eval compares groups
/// made by it (`groups: tools`), so a typo would make a group of its own.
fn check_tools(value: &str) -> Result<(), String> {
    let items: Vec<&str> = value.split(',').map(str::trim).collect();
    if items.iter().any(|i| i.is_empty()) {
        return Err("has an empty name".into());
    }
    if let Some(bad) = items.iter().find(|i| {
        !i.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_.".contains(c))
    }) {
        return Err(format!(
            "names `{bad}`, which is not a tool name (lowercase letters, digits, `-`, `_`, `.`)"
        ));
    }
    if items.len() > 1 && items.contains(&"none") {
        return Err("says `none` beside other tools".into());
    }
    if let Some(i) = (1..items.len()).find(|&i| items[..i].contains(&items[i])) {
        return Err(format!("names `{}` twice", items[i]));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grades_count_once_by_content_and_by_reviewer() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, reviewer: &str, note: &str| {
            let p = dir.path().join(name);
            let rows: String =
                (0..2).map(|i| format!("{},{reviewer},4,good,{note}\n", sheet_id(i))).collect();
            std::fs::write(&p, format!("sheet,reviewer,usefulness,next_step,notes\n{rows}"))
                .unwrap();
            p
        };
        let ann = write("ann.csv", "ann", "fine");
        let copy = write("copy.csv", "ann", "fine");
        let ann2 = write("ann-again.csv", "ann", "other words");
        let bob = write("bob.csv", "bob", "fine");
        // Two reviewers, one file each: read.
        let ok = read_grades(&[ann.clone(), bob.clone()], 2).unwrap();
        assert_eq!(ok.iter().map(Vec::len).collect::<Vec<_>>(), vec![2, 2]);
        // The same bytes under a second name: once.
        let e = read_grades(&[ann.clone(), copy.clone(), bob.clone()], 2).unwrap_err();
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(
            e[0].contains("copy.csv") && e[0].contains("ann.csv") && e[0].contains("same bytes"),
            "{e:?}"
        );
        // One reviewer's second file, with other words: once.
        let e = read_grades(&[ann, ann2, bob], 2).unwrap_err();
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].contains("ann-again.csv") && e[0].contains("`ann`"), "{e:?}");
    }

    #[test]
    fn the_tools_condition_is_a_list_of_names_or_none() {
        for ok in ["none", "verdict-mcp", "verdict-mcp, nsys-sqlite", "nsys-sqlite"] {
            assert_eq!(check_tools(ok), Ok(()), "{ok}");
        }
        for bad in
            ["", "verdict-mcp,", "none, verdict-mcp", "verdict-mcp,verdict-mcp", "Verdict MCP"]
        {
            assert!(check_tools(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn weighted_kappa_by_hand() {
        // A = 1 2 3, B = 1 3 3. Linear: observed mean |a - b| = (0 + 1 + 0) / 3 = 1/3;
        // expected over all 9 pairs: |1-1| |1-3| |1-3| |2-1| |2-3| |2-3| |3-1| |3-3| |3-3| =
        // 0 2 2 1 1 1 2 0 0 = 9, / 9 = 1; kappa = 1 - (1/3) / 1 = 2/3.
        // Quadratic: observed (0 + 1 + 0) / 3 = 1/3; expected 0 4 4 1 1 1 4 0 0 = 15 / 9 = 5/3;
        // kappa = 1 - (1/3) / (5/3) = 0.8.
        let (a, b) = ([1, 2, 3], [1, 3, 3]);
        assert!((weighted_kappa(&a, &b, Weights::Linear).unwrap() - 2.0 / 3.0).abs() < 1e-12);
        assert!((weighted_kappa(&a, &b, Weights::Quadratic).unwrap() - 0.8).abs() < 1e-12);
        assert_eq!(weighted_kappa(&a, &a, Weights::Linear), Some(1.0));
        assert_eq!(weighted_kappa(&[2, 2], &[2, 2], Weights::Linear), None);
        // Off by one everywhere on a 1-5 scale is partial agreement, not none: Cohen's
        // unweighted kappa of these is below 0, the quadratic one is high.
        let (a, b) = ([1, 2, 3, 4, 5], [2, 3, 4, 5, 5]);
        let q = weighted_kappa(&a, &b, Weights::Quadratic).unwrap();
        let text = |v: &[i64]| v.iter().map(i64::to_string).collect::<Vec<_>>();
        assert!(cohen_kappa(&text(&a), &text(&b)).unwrap() < 0.0);
        assert!(q > 0.7, "{q}");
        // The bootstrap interval is reproducible from the seed and holds the estimate.
        let i = paired_bootstrap(&a, &b, 7, 500, |x, y| weighted_kappa(x, y, Weights::Quadratic));
        assert_eq!(
            i,
            paired_bootstrap(&a, &b, 7, 500, |x, y| weighted_kappa(x, y, Weights::Quadratic))
        );
        let [lo, hi] = i.unwrap();
        assert!(lo <= q && q <= hi, "{lo} {q} {hi}");
    }

    #[test]
    fn kappa_is_cohens_by_hand() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        // 10 items, 7 agreements; rater A: 6 good 4 poor, rater B: 5 good 5 poor.
        // p_o = 0.7, p_e = 0.6*0.5 + 0.4*0.5 = 0.5, kappa = 0.2 / 0.5 = 0.4.
        let a = s(&["g", "g", "g", "g", "g", "g", "p", "p", "p", "p"]);
        let b = s(&["g", "g", "g", "g", "p", "p", "g", "p", "p", "p"]);
        assert!((cohen_kappa(&a, &b).unwrap() - 0.4).abs() < 1e-12);
        assert_eq!(cohen_kappa(&a, &a), Some(1.0));
        let same = s(&["g", "g"]);
        assert_eq!(cohen_kappa(&same, &same), None);
    }

    #[test]
    fn the_sheet_order_is_a_permutation_fixed_by_the_seed() {
        let o = sheet_order(6, 7);
        let mut sorted = o.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..6).collect::<Vec<_>>());
        assert_eq!(o, sheet_order(6, 7));
        assert_ne!(sheet_order(6, 7), sheet_order(6, 8));
    }
}

//! From the file as written to a [`ClaimSet`]: references resolved, formulas parsed, every
//! text present in every requested language. Collects every problem before failing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_saphyr::Spanned;

use super::raw::*;
use super::*;
use crate::analysis;
use crate::formula::Expr;
use crate::scope::{DeviceSel, Window, parse_device_list};

mod compare;
mod part;
mod traces;

pub(super) struct Checker {
    languages: Vec<String>,
    problems: Vec<Problem>,
    /// Validating a comparison's side, which may name several devices of a per-device
    /// analysis (each device is compared on its own).
    compare_side: bool,
}

pub(super) fn at<T>(s: &Spanned<T>) -> (u32, u32) {
    (s.referenced.line() as u32, s.referenced.column() as u32)
}

/// The closest candidate to `name`, if close enough to be a likely typo.
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (strsim::levenshtein(name, c), c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

pub(super) fn suggestion<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str> + Clone,
) -> String {
    match did_you_mean(name, candidates.clone()) {
        Some(c) => format!("did you mean `{c}`?"),
        None => {
            let all: Vec<&str> = candidates.into_iter().collect();
            if all.is_empty() {
                "none is declared".into()
            } else {
                format!("known: {}", all.join(", "))
            }
        }
    }
}

impl Checker {
    pub(super) fn err(
        &mut self,
        pos: (u32, u32),
        message: impl Into<String>,
        hint: impl Into<Option<String>>,
    ) {
        self.problems.push(Problem {
            line: pos.0,
            column: pos.1,
            message: message.into(),
            hint: hint.into(),
        });
    }

    pub(super) fn text(&mut self, t: &RawText, what: &str) -> Text {
        self.text_at(t, at(t), what)
    }

    /// [`Checker::text`] with its problems at `pos`.
    fn text_at(&mut self, t: &RawText, pos: (u32, u32), what: &str) -> Text {
        for lang in &self.languages.clone() {
            if !t.value.contains_key(lang) {
                self.err(
                    pos,
                    format!("{what} has no `{lang}` text"),
                    Some(format!(
                        "give it in every language of `report.languages` ({})",
                        self.languages.join(", ")
                    )),
                );
            }
        }
        for k in t.value.keys() {
            if !self.languages.contains(k) {
                self.err(
                    pos,
                    format!("{what} has text in `{k}`, which `report.languages` does not list"),
                    Some(format!("add `{k}` to `report.languages`, or remove the `{k}` text")),
                );
            }
        }
        t.value.clone()
    }

    pub(super) fn opt_text(&mut self, t: &Option<RawText>, what: &str) -> Option<Text> {
        t.as_ref().map(|t| self.text(t, what))
    }

    fn devices(&mut self, s: &Spanned<String>) -> Option<Vec<i64>> {
        match parse_device_list(&s.value) {
            Ok(v) => Some(v),
            Err(e) => {
                self.err(at(s), e.to_string(), Some(e.hint().to_string()));
                None
            }
        }
    }

    fn window(&mut self, s: &Spanned<String>) -> Option<Window> {
        match Window::parse(&s.value) {
            Ok(w) => Some(w),
            Err(e) => {
                self.err(at(s), e.to_string(), Some(e.hint().to_string()));
                None
            }
        }
    }

    fn quantity(
        &mut self,
        pos: (u32, u32),
        text: &str,
        unit: Unit,
        what: &str,
    ) -> Option<Quantity> {
        let q = Quantity::parse(text, unit);
        if q.is_none() {
            self.err(
                pos,
                format!("{what} `{text}` is not a number with a unit"),
                Some("write it like 17.8%, 140, 6,155.75 ms, 1.216x or 3 pp".to_string()),
            );
        }
        q
    }
}

/// A formula for an error message: in backticks, cut after 60 characters so that a formula
/// refused for its length does not flood the terminal.
fn shown_formula(text: &str) -> String {
    const SHOWN: usize = 60;
    match text.char_indices().nth(SHOWN) {
        None => format!("`{text}`"),
        Some((cut, _)) => {
            format!("`{}…` ({} characters)", &text[..cut], text.chars().count())
        }
    }
}

/// What to do about a formula that does not parse.
fn formula_hint(e: &crate::formula::ParseError) -> String {
    use crate::formula::{MAX_FORMULA_CHARS, MAX_NESTING, MAX_OPERANDS};
    if e.message.contains("(the limit)") {
        format!(
            "a formula holds at most {} characters and {MAX_OPERANDS} numbers and names, nested at most {MAX_NESTING} deep; split it into arithmetic parts that name each other",
            crate::units::thousands(MAX_FORMULA_CHARS as i128)
        )
    } else {
        "write names, numbers, + - * / and parentheses, with spaces around `-` (docs/claims.md)"
            .to_string()
    }
}

/// The longest report id: with the longest suffix a report adds (`.zh-TW.nccl-skew-NN.png`,
/// under 30 bytes) a file name stays within 143 bytes, the shortest limit of a common file
/// system (eCryptfs); ext4, XFS, APFS and NTFS take 255.
pub const MAX_REPORT_ID: usize = 64;

/// The first cycle of a claim's parts through `from` (a part naming itself is reported on its
/// own), as the parts around it with the first again at the end, and the position of the
/// `from` entry that closes it: a cycle would make each part's support rest on itself.
fn from_cycle(parts: &[RawPart]) -> Option<(Vec<String>, (u32, u32))> {
    let index = |id: &str| parts.iter().position(|p| p.id.value == id);
    // 0 unvisited, 1 on the current path, 2 done.
    let mut state = vec![0u8; parts.len()];
    let mut path: Vec<usize> = Vec::new();
    fn visit(
        i: usize,
        parts: &[RawPart],
        index: &dyn Fn(&str) -> Option<usize>,
        state: &mut [u8],
        path: &mut Vec<usize>,
    ) -> Option<(Vec<String>, (u32, u32))> {
        state[i] = 1;
        path.push(i);
        for f in &parts[i].from {
            let Some(j) = index(&f.value).filter(|&j| j != i) else { continue };
            if state[j] == 1 {
                let start = path.iter().position(|&k| k == j).unwrap_or(0);
                let mut cycle: Vec<String> =
                    path[start..].iter().map(|&k| parts[k].id.value.clone()).collect();
                cycle.push(parts[j].id.value.clone());
                return Some((cycle, at(f)));
            }
            if state[j] == 0
                && let Some(found) = visit(j, parts, index, state, path)
            {
                return Some(found);
            }
        }
        path.pop();
        state[i] = 2;
        None
    }
    (0..parts.len()).find_map(|i| {
        if state[i] == 0 { visit(i, parts, &index, &mut state, &mut path) } else { None }
    })
}

/// Validates the raw file; `path` locates relative trace paths.
pub fn validate(raw: RawClaimFile, path: &Path) -> Result<ClaimSet, ClaimsError> {
    let file = path.display().to_string();
    let base = path.parent().unwrap_or(Path::new("."));
    let mut c = Checker { languages: Vec::new(), problems: Vec::new(), compare_side: false };
    let report = report(&mut c, &raw.report);
    let sources = sources(&mut c, &raw.sources);
    let traces = traces::traces(&mut c, &raw.traces, base);
    let mut scopes = scopes(&mut c, &raw.scopes, &raw.traces, base);
    run_scopes(&traces, &mut scopes);
    let claims = claims(&mut c, &raw.claims, &raw.sources, &scopes, &raw.scopes);
    let review = review(&mut c, raw.review.as_ref());
    let narrative = raw
        .narrative
        .as_ref()
        .map(|n| super::narrative::validate(&mut c, n, &raw.sources, &claims));
    if let Some(answer) = &raw.report.answer {
        answer_placeholders(&mut c, answer, &claims);
    }

    if !c.problems.is_empty() {
        c.problems.sort_by_key(|p| (p.line, p.column));
        c.problems.dedup();
        return Err(ClaimsError { file, problems: c.problems });
    }
    Ok(ClaimSet { file, report, sources, traces, scopes, claims, review, narrative })
}

/// The `report` section. Its languages become the checker's: every text after it is checked
/// against them.
fn report(c: &mut Checker, r: &RawReport) -> Report {
    if r.id.value.is_empty()
        || !r.id.value.chars().all(|ch| ch.is_ascii_alphanumeric() || "-_.".contains(ch))
    {
        c.err(
            at(&r.id),
            format!("report id `{}` cannot name output files", r.id.value),
            Some("use letters, digits, `-`, `_` and `.`".into()),
        );
    } else if r.id.value.len() > MAX_REPORT_ID {
        c.err(
            at(&r.id),
            format!(
                "report id is {} characters; the limit is {MAX_REPORT_ID}",
                r.id.value.chars().count()
            ),
            Some(format!(
                "the id names every output file (`ID.zh-TW.nccl-skew-2.png`...), and some file systems take names of 143 bytes at most: use {MAX_REPORT_ID} characters or fewer"
            )),
        );
    }
    let mut langs = Vec::new();
    for l in &r.languages.value {
        if !LANGUAGES.contains(&l.as_str()) {
            c.err(
                at(&r.languages),
                format!("unsupported language `{l}`"),
                Some(format!("supported: {}", LANGUAGES.join(", "))),
            );
        } else if !langs.contains(l) {
            langs.push(l.clone());
        }
    }
    if langs.is_empty() && r.languages.value.is_empty() {
        c.err(
            at(&r.languages),
            "`report.languages` is empty",
            Some("list at least one of zh-TW, en".into()),
        );
    }
    c.languages = langs.clone();
    Report {
        id: r.id.value.clone(),
        languages: langs,
        title: c.text(&r.title, "`report.title`"),
        question: c.opt_text(&r.question, "`report.question`"),
        author: r.author.clone(),
        date: r.date.clone(),
        answer: c.opt_text(&r.answer, "`report.answer`"),
        decision: c.opt_text(&r.decision, "`report.decision`"),
    }
}

/// The `sources` section: each source's label and note.
fn sources(c: &mut Checker, sources: &BTreeMap<String, RawSource>) -> Vec<Source> {
    sources
        .iter()
        .map(|(id, s)| Source {
            id: id.clone(),
            label: c.text(&s.label, &format!("source `{id}` label")),
            note: c.opt_text(&s.note, &format!("source `{id}` note")),
        })
        .collect()
}

/// The `scopes` section: each scope names a declared trace, selects devices on a single file
/// and ranks on a set, and takes its window in seconds or from NVTX ranges.
fn scopes(
    c: &mut Checker,
    raw: &BTreeMap<String, RawScope>,
    traces: &BTreeMap<String, RawTrace>,
    base: &Path,
) -> BTreeMap<String, Scope> {
    let mut scopes = BTreeMap::new();
    for (name, s) in raw {
        if !traces.contains_key(&s.trace.value) {
            c.err(
                at(&s.trace),
                format!("scope `{name}` names trace `{}`, which is not declared", s.trace.value),
                Some(suggestion(&s.trace.value, traces.keys().map(String::as_str))),
            );
        }
        // Runs are single traces each: their scopes select devices.
        let is_set = traces.get(&s.trace.value).is_some_and(|t| {
            !t.runs.as_ref().is_some_and(|r| r.value)
                && match &t.path.value {
                    RawPaths::One(p) => is_set_path(base, p),
                    RawPaths::Many(_) => true,
                }
        });
        if let (true, Some(d)) = (is_set, &s.devices) {
            c.err(
                at(d),
                format!("scope `{name}`: `devices` on a trace set"),
                Some("device numbers repeat across the files of a set; select ranks with `ranks: 0-5` (see `verdict inspect` on the set for their labels)".into()),
            );
        }
        if let (false, Some(r)) = (is_set, &s.ranks) {
            c.err(
                at(r),
                format!("scope `{name}`: `ranks` on a single trace"),
                Some("a single file's scope selects `devices`; `ranks` is for a list or glob of files".into()),
            );
        }
        let devices = match s.devices.as_ref().or(s.ranks.as_ref()) {
            None => DeviceSel::All,
            Some(d) if d.value.trim() == "all" => DeviceSel::All,
            Some(d) => c.devices(d).map(DeviceSel::Set).unwrap_or(DeviceSel::All),
        };
        scopes.insert(
            name.clone(),
            Scope {
                name: name.clone(),
                trace: s.trace.value.clone(),
                window: match s.window.as_ref().map(|w| (w, &w.value)) {
                    Some((w, RawWindow::Seconds(text))) => {
                        c.window(&Spanned::new(text.clone(), w.referenced, w.defined))
                    }
                    _ => None,
                },
                window_text: s.window.as_ref().map(|w| match &w.value {
                    RawWindow::Seconds(t) => t.clone(),
                    RawWindow::Keys(k) => {
                        k.iter().map(|(k, v)| format!("{k}: {v}")).collect::<Vec<_>>().join(", ")
                    }
                }),
                nvtx: match s.window.as_ref().map(|w| (w, &w.value)) {
                    Some((w, RawWindow::Keys(keys))) => {
                        match crate::analysis::nvtx::NvtxWindow::from_keys(keys) {
                            Ok(n) => Some(n),
                            Err((msg, hint)) => {
                                c.err(at(w), format!("scope `{name}`: window: {msg}"), Some(hint));
                                None
                            }
                        }
                    }
                    _ => None,
                },
                devices,
                semantics: s.semantics.unwrap_or_default(),
            },
        );
    }
    scopes
}

/// For each scope over a trace declared with `runs: true`, the same scope over each run:
/// `SCOPE#1` over `TRACE#1`, and so on.
fn run_scopes(traces: &[TraceDecl], scopes: &mut BTreeMap<String, Scope>) {
    let mut added = Vec::new();
    for s in scopes.values() {
        for t in traces.iter().filter(|t| t.run_of.as_deref() == Some(s.trace.as_str())) {
            let i = t.name.rsplit('#').next().unwrap_or_default();
            let name = format!("{}#{i}", s.name);
            added.push(Scope { name, trace: t.name.clone(), ..s.clone() });
        }
    }
    for s in added {
        scopes.insert(s.name.clone(), s);
    }
}

/// The same scope over each run of a scope over runs, in run order (none for one trace).
fn runs_of(scopes: &BTreeMap<String, Scope>, scope: &str) -> Vec<String> {
    (1..).map(|i| format!("{scope}#{i}")).take_while(|n| scopes.contains_key(n)).collect()
}

/// The `claims` section: unique claim and part ids, declared sources, parts that do not read
/// each other in a cycle, and a principal part that can be judged.
fn claims(
    c: &mut Checker,
    raw: &[RawClaim],
    sources: &BTreeMap<String, RawSource>,
    scopes: &BTreeMap<String, Scope>,
    raw_scopes: &BTreeMap<String, RawScope>,
) -> Vec<Claim> {
    let mut claims = Vec::new();
    let mut ids = BTreeSet::new();
    for rc in raw {
        if !ids.insert(rc.id.value.clone()) {
            c.err(
                at(&rc.id),
                format!("duplicate claim id `{}`", rc.id.value),
                Some("claim ids must be unique in the file".into()),
            );
        }
        if let Some(s) = &rc.source
            && !sources.contains_key(&s.value)
        {
            c.err(
                at(s),
                format!(
                    "claim `{}` names source `{}`, which is not declared",
                    rc.id.value, s.value
                ),
                Some(suggestion(&s.value, sources.keys().map(String::as_str))),
            );
        }
        let mut parts = Vec::new();
        let mut part_ids = BTreeSet::new();
        for rp in &rc.parts {
            if !part_ids.insert(rp.id.value.clone()) {
                c.err(
                    at(&rp.id),
                    format!("duplicate part id `{}` in claim `{}`", rp.id.value, rc.id.value),
                    Some("give each part of a claim its own id".into()),
                );
            }
        }
        let part_names: Vec<&str> = rc.parts.iter().map(|p| p.id.value.as_str()).collect();
        for rp in &rc.parts {
            parts.push(part::part(c, rp, &rc.id.value, &rc.parts, scopes, raw_scopes));
        }
        if let Some((cycle, pos)) = from_cycle(&rc.parts) {
            c.err(
                pos,
                format!(
                    "claim `{}`: parts read each other in a cycle through `from` ({})",
                    rc.id.value,
                    cycle.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(" -> ")
                ),
                Some(
                    "an interpretation rests on the parts it reads, never on one that reads it: drop one `from` entry of the cycle"
                        .into(),
                ),
            );
        }
        if parts.is_empty() {
            c.err(
                at(&rc.id),
                format!("claim `{}` has no parts", rc.id.value),
                Some(
                    "split the claim into observation, interpretation, causal and action parts"
                        .into(),
                ),
            );
        }
        let principal = match &rc.principal {
            Some(p) => {
                match parts.iter().find(|x| x.id == p.value) {
                    None => c.err(
                        at(p),
                        format!(
                            "claim `{}`: principal `{}` is not one of its parts",
                            rc.id.value, p.value
                        ),
                        Some(suggestion(&p.value, part_names.iter().copied())),
                    ),
                    Some(x) if matches!(x.kind, Kind::Action | Kind::Arithmetic) => c.err(
                        at(p),
                        format!(
                            "claim `{}`: the principal part `{}` is {}, which is never judged",
                            rc.id.value,
                            p.value,
                            x.kind.as_str()
                        ),
                        Some(
                            "make the principal an observation, interpretation or causal part"
                                .to_string(),
                        ),
                    ),
                    _ => {}
                }
                p.value.clone()
            }
            None => parts
                .iter()
                .filter(|p| p.kind.layer() > 0)
                .max_by_key(|p| p.kind.layer())
                .map(|p| p.id.clone())
                .unwrap_or_default(),
        };
        if principal.is_empty() && !parts.is_empty() {
            c.err(
                at(&rc.id),
                format!("claim `{}` has no part that can be judged", rc.id.value),
                Some("add an observation, interpretation or causal part".into()),
            );
        }
        let about = about(c, &rc.about);
        claims.push(Claim {
            id: rc.id.value.clone(),
            source: rc.source.as_ref().map(|s| s.value.clone()),
            statement: c.text(&rc.statement, &format!("claim `{}` statement", rc.id.value)),
            about,
            principal,
            parts,
            review: c.opt_text(&rc.review, &format!("claim `{}` review", rc.id.value)),
            line: at(&rc.id).0,
            column: at(&rc.id).1,
        });
    }
    claims
}

/// The `review` section, empty when the file has none.
fn review(c: &mut Checker, review: Option<&RawReview>) -> Review {
    match review {
        None => Review::default(),
        Some(r) => Review {
            r6: c.opt_text(&r.r6, "`review.r6`"),
            next: c.opt_text(&r.next, "`review.next`"),
            reviewer: r.reviewer.as_ref().map(|n| match &n.value {
                RawName::Plain(name) => {
                    LANGUAGES.iter().map(|l| (l.to_string(), name.clone())).collect()
                }
                RawName::Text(t) => c.text_at(t, at(n), "`review.reviewer`"),
            }),
            date: r.date.clone(),
        },
    }
}

/// Every `{claim/part}` of `report.answer` names a part with a number: a measured part or
/// arithmetic, so the answer's numbers come from the audit, never from its text.
fn answer_placeholders(c: &mut Checker, answer: &RawText, claims: &[Claim]) {
    let before = c.problems.len();
    for text in answer.value.values() {
        let found = match super::placeholders(text) {
            Ok(found) => found,
            Err(e) => {
                c.err(
                    at(answer),
                    format!("`report.answer`: {e}"),
                    Some(
                        "write `{claim/part}`, or with `:value`, `:spread`, `:change` or `:scope`"
                            .into(),
                    ),
                );
                continue;
            }
        };
        for p in found {
            super::narrative::check_part(
                c,
                at(answer),
                "`report.answer`",
                &p.claim,
                &p.part,
                p.show,
                claims,
            );
        }
    }
    // Each language's text may repeat a placeholder: report it once.
    let mut seen = std::collections::BTreeSet::new();
    let mut i = before;
    while i < c.problems.len() {
        if seen.insert(c.problems[i].message.clone()) {
            i += 1;
        } else {
            c.problems.remove(i);
        }
    }
}

fn about(c: &mut Checker, a: &RawAbout) -> About {
    About {
        window: a.window.as_ref().and_then(|w| c.window(w)),
        devices: a.devices.as_ref().and_then(|d| c.devices(d)),
        per: a.per,
        quantity: a.quantity,
        denominator: a.denominator,
        denominator_text: c.opt_text(&a.denominator_text, "`about.denominator_text`"),
        chosen_by: a.chosen_by.unwrap_or_default(),
    }
}

/// The keys of a `measure` once the required ones are known to be there.
struct MeasureKeys<'a> {
    analysis: &'a Spanned<String>,
    scope: &'a Spanned<String>,
    value: &'a Spanned<String>,
    unit: Option<&'a Spanned<String>>,
    params: &'a [(String, Spanned<String>)],
}

/// The keys a `measure` requires.
const REQUIRED: [&str; 3] = ["analysis", "scope", "value"];

/// A measure bound to its analysis and scope: its keys, its formula over the analysis's
/// fields, the parameters it passes and its unit. A `compare` measure is two such measures,
/// checked as the sides of a comparison.
fn measurement(
    c: &mut Checker,
    outer: &Spanned<RawMeasure>,
    what: &str,
    scopes: &BTreeMap<String, Scope>,
    raw_scopes: &BTreeMap<String, RawScope>,
) -> Option<Measure> {
    let raw = &outer.value;
    if raw.analysis.as_ref().is_some_and(|a| a.value == analysis::compare::SPEC.name) {
        return compare::measurement(c, outer, what, scopes, raw_scopes);
    }
    let m = measure_keys(c, outer, what)?;
    let Some(spec) = analysis::spec(&m.analysis.value) else {
        c.err(
            at(m.analysis),
            format!("{what}: unknown analysis `{}`", m.analysis.value),
            Some(suggestion(&m.analysis.value, analysis::ANALYSES.iter().map(|a| a.name))),
        );
        return None;
    };
    let scope = scopes.get(&m.scope.value);
    if scope.is_none() {
        c.err(
            at(m.scope),
            format!("{what}: scope `{}` is not declared", m.scope.value),
            Some(suggestion(&m.scope.value, raw_scopes.keys().map(String::as_str))),
        );
    }
    let ranks = rank_selection(c, outer, spec, what);
    let value = formula_over(c, m.value, spec, what, ranks.is_some())?;
    let (params, args) = measure_params(c, &m, spec, scope, what);
    check_scope_fits(c, &m, spec, scope, ranks.is_some(), scopes, what);
    let unit = match &m.unit {
        Some(u) => measure_unit(c, u, what),
        None => default_unit(&value, spec),
    };
    let over = window_quantifier(c, outer, scope, &params, what);
    Some(Measure {
        analysis: spec.name.to_string(),
        scope: m.scope.value.clone(),
        value_text: m.value.value.clone(),
        value,
        unit,
        args,
        params,
        compare: None,
        ranks,
        over,
    })
}

/// A measure's keys: each one a key of the measure or a parameter of some analysis (a
/// misspelled or unknown one reported), and the required ones present; none when one is
/// missing.
fn measure_keys<'a>(
    c: &mut Checker,
    outer: &'a Spanned<RawMeasure>,
    what: &str,
) -> Option<MeasureKeys<'a>> {
    let raw = &outer.value;
    // Keys that are no parameter of any analysis: misspelled or unknown.
    for (name, v) in &raw.params {
        if analysis::PARAMS.iter().any(|p| p.name == name) || RANK_KEYS.contains(&name.as_str()) {
            continue;
        }
        // Where a number is computed is an option of the run, never a key of the claims.
        if name == "engine" || name == "cluster" {
            c.err(
                at(v),
                format!("{what}: `{name}` is not a key of a claim's `measure`"),
                Some(
                    "where the work runs is an option of the run, not of the claims file: \
                     remove the key and pass `--cluster ADDRESS` to `verdict query` (the \
                     evidence is the same wherever it runs)"
                        .to_string(),
                ),
            );
            continue;
        }
        let near = did_you_mean(
            name,
            REQUIRED.into_iter().chain(["unit"]).chain(analysis::PARAMS.iter().map(|p| p.name)),
        );
        c.err(
            at(v),
            format!("{what}: unknown field `{name}` in `measure`"),
            Some(match near {
                Some(n) => format!("remove or rename the key: did you mean `{n}`?"),
                None => "remove or rename the key (docs/claims.md lists the keys)".to_string(),
            }),
        );
    }
    let mut required = Vec::new();
    for (name, v) in REQUIRED.into_iter().zip([&raw.analysis, &raw.scope, &raw.value]) {
        match v {
            Some(v) => required.push(v),
            None => {
                // A misspelling of it was reported above.
                let misspelled = raw.params.iter().any(|(k, _)| did_you_mean(k, [name]).is_some());
                if !misspelled {
                    c.err(
                        at(outer),
                        format!("{what}: `measure` has no `{name}`"),
                        Some("add the required key (docs/claims.md lists them)".to_string()),
                    );
                }
            }
        }
    }
    let [analysis_key, scope_key, value_key] = required[..] else { return None };
    Some(MeasureKeys {
        analysis: analysis_key,
        scope: scope_key,
        value: value_key,
        unit: raw.unit.as_ref(),
        params: &raw.params,
    })
}

/// The parameters a measure passes to analysis `spec` over its `scope`, and the keys and
/// values that gave them in the analysis's order: each key is one the analysis declares,
/// parsed by the same code as the command line's option of that name.
fn measure_params(
    c: &mut Checker,
    m: &MeasureKeys<'_>,
    spec: &analysis::AnalysisSpec,
    scope: Option<&Scope>,
    what: &str,
) -> (crate::analysis::Params, Vec<(String, String)>) {
    let mut params =
        crate::analysis::Params::new(scope.map_or(DeviceSel::All, |s| s.devices.clone()));
    if let Some(s) = scope {
        params.window = s.window;
        params.semantics = s.semantics;
    }
    let mut args: Vec<(String, String)> = Vec::new();
    for (name, v) in m.params {
        if !analysis::PARAMS.iter().any(|p| p.name == name) {
            continue; // reported as an unknown field
        }
        let Some(param) = spec.param(name) else {
            let known: Vec<&str> = spec.params.iter().map(|p| p.name).collect();
            let is_param = analysis::PARAMS.iter().any(|p| p.name == name);
            c.err(
                at(v),
                if is_param {
                    format!("{what}: analysis `{}` does not take `{name}`", spec.name)
                } else {
                    format!("{what}: unknown key `{name}` in `measure`")
                },
                Some(match did_you_mean(name, known.iter().copied().chain(["analysis", "scope", "value", "unit"]).chain(RANK_KEYS)) {
                    Some(s) => format!("did you mean `{s}`?"),
                    None if known.is_empty() => format!(
                        "a parameter the analysis would ignore is refused; `{}` takes none besides its scope",
                        spec.name
                    ),
                    None => format!(
                        "a parameter the analysis would ignore is refused; `{}` takes {}",
                        spec.name,
                        known.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
                    ),
                }),
            );
            continue;
        };
        // Conflicts either way round (`name` refuses `match`), reported once per pair.
        let conflicting = |a: &str, b: &str| {
            spec.param(a).is_some_and(|p| p.conflicts.contains(&b))
                || spec.param(b).is_some_and(|p| p.conflicts.contains(&a))
        };
        if let Some((other, _)) = m.params.iter().find(|(n, _)| conflicting(name, n))
            && name < other
        {
            c.err(
                at(v),
                format!("{what}: give `{name}` or `{other}`, not both"),
                Some(format!(
                    "keep one of `{name}` and `{other}`: they select the same thing two ways"
                )),
            );
            continue;
        }
        match (param.set)(&mut params, &v.value) {
            Ok(()) => args.push((name.clone(), v.value.clone())),
            Err(e) => c.err(
                at(v),
                format!("{what}: `{name}`: {e}"),
                Some(format!("`verdict query {} --help` lists `{name}` and its values", spec.name)),
            ),
        }
    }
    args.sort_by_key(|(n, _)| spec.params.iter().position(|p| p.name == n));
    (params, args)
}

/// Whether a measure's scope suits analysis `spec`: no runs outside a comparison, no window
/// for an analysis of the whole trace, one device for a per-device analysis (or several on a
/// comparison's side) unless the measure reads per-rank rows (`per_rank`).
fn check_scope_fits(
    c: &mut Checker,
    m: &MeasureKeys<'_>,
    spec: &analysis::AnalysisSpec,
    scope: Option<&Scope>,
    per_rank: bool,
    scopes: &BTreeMap<String, Scope>,
    what: &str,
) {
    if !c.compare_side && !runs_of(scopes, &m.scope.value).is_empty() {
        c.err(
            at(m.scope),
            format!("{what}: scope `{}` is over runs, which only a comparison reads", m.scope.value),
            Some("compare the runs (`analysis: compare`, `sample: run`), or declare a scope over one of their files".into()),
        );
    }
    if spec.scope == analysis::ScopeRule::WholeTrace
        && let Some(s) = scope
        && s.window.is_some()
    {
        c.err(
            at(m.scope),
            format!(
                "{what}: `{}` describes the whole trace; scope `{}` has a window",
                spec.name, s.name
            ),
            Some("declare a scope without `window` for coverage".to_string()),
        );
    }
    if spec.scope == analysis::ScopeRule::PerDevice
        && !per_rank
        && let Some(s) = scope
        && !matches!(&s.devices, DeviceSel::Set(v) if v.len() == 1 || (c.compare_side && !v.is_empty()))
    {
        c.err(
            at(m.scope),
            format!(
                "{what}: `{}` gives one row per device; scope `{}` must name exactly one device",
                spec.name, s.name
            ),
            Some("declare a scope with `devices: N`".to_string()),
        );
    }
}

/// The unit of a measure that gives none: a share in percent for a ratio formula, else
/// milliseconds for a formula over a time, bytes over a size, a count otherwise.
fn default_unit(value: &Expr, spec: &analysis::AnalysisSpec) -> Unit {
    match value.as_ratio() {
        Some(_) => Unit::Percent,
        None => {
            let has = |unit| {
                value
                    .vars()
                    .iter()
                    .any(|v| spec.fields.iter().any(|f| f.name == v && f.unit == unit))
            };
            if has(analysis::Unit::Ns) {
                Unit::Ms
            } else if has(analysis::Unit::Bytes) {
                Unit::Bytes
            } else {
                Unit::Count
            }
        }
    }
}

/// A measure's `over:` (how the values of a set of windows decide the part), checked: only a
/// scope that gives a set of windows (NVTX ranges with `index: all` or `A-B`, or `split: N`)
/// takes it.
fn window_quantifier(
    c: &mut Checker,
    outer: &Spanned<RawMeasure>,
    scope: Option<&Scope>,
    params: &crate::analysis::Params,
    what: &str,
) -> Option<crate::claims::Over> {
    use crate::analysis::nvtx::IndexSel;
    let (_, v) = outer.value.params.iter().find(|(n, _)| n == "over")?;
    let Some(over) = crate::claims::Over::parse(v.value.trim()) else {
        c.err(
            at(v),
            format!("{what}: `over` must be all, any, median or lower-median, not `{}`", v.value),
            Some("all: the condition on every window; any: on one; median or lower-median (the default): that value judged".into()),
        );
        return None;
    };
    let set = params.split.is_some()
        || scope
            .and_then(|s| s.nvtx.as_ref())
            .is_some_and(|w| matches!(w.index, Some(IndexSel::All) | Some(IndexSel::Range(..))));
    if !set {
        c.err(
            at(v),
            format!(
                "{what}: `over` quantifies a set of windows; scope `{}` gives one",
                scope.map_or("?", |s| s.name.as_str())
            ),
            Some("give the scope's NVTX window `index: all` (or `A-B`), or the measure `split: N`; `over_ranks` quantifies ranks".into()),
        );
        return None;
    }
    Some(over)
}

/// A measure's `unit`, or an error at its place (the count then stands in, so validation goes
/// on and reports every problem).
fn measure_unit(c: &mut Checker, u: &Spanned<String>, what: &str) -> Unit {
    Unit::parse(&u.value).unwrap_or_else(|| {
        c.err(
            at(u),
            format!("{what}: unknown unit `{}`", u.value),
            Some("use %, pp, ms, ns, s, count, x or ratio".to_string()),
        );
        Unit::Count
    })
}

/// The keys of a measure that select per-rank rows, or quantify over a set of windows.
const RANK_KEYS: [&str; 3] = ["rank", "over_ranks", "over"];

/// A measure's `rank:` (one rank's row, by number or label) or `over_ranks:` (every rank's,
/// with a reduction), checked against the analysis: only one with per-rank rows takes them.
fn rank_selection(
    c: &mut Checker,
    outer: &Spanned<RawMeasure>,
    spec: &analysis::AnalysisSpec,
    what: &str,
) -> Option<crate::claims::RankSel> {
    let get = |k: &str| outer.value.params.iter().find(|(n, _)| n == k).map(|(_, v)| v);
    let (one, every) = (get("rank"), get("over_ranks"));
    let first = one.or(every)?;
    if spec.row_fields().is_none() {
        let with: Vec<&str> = analysis::ANALYSES
            .iter()
            .filter(|a| a.row_fields().is_some())
            .map(|a| a.name)
            .collect();
        c.err(
            at(first),
            format!(
                "{what}: analysis `{}` has no per-rank rows for `rank`/`over_ranks`",
                spec.name
            ),
            Some(format!(
                "per-rank rows come from {}",
                with.iter().map(|a| format!("`{a}`")).collect::<Vec<_>>().join(", ")
            )),
        );
        return None;
    }
    match (one, every) {
        (Some(_), Some(e)) => {
            c.err(
                at(e),
                format!("{what}: give `rank` or `over_ranks`, not both"),
                Some("`rank` reads one rank's row; `over_ranks` judges every rank's".into()),
            );
            None
        }
        (Some(r), None) if r.value.trim().is_empty() => {
            c.err(
                at(r),
                format!("{what}: `rank` is empty"),
                Some("give a rank number or its label (`verdict inspect` lists them)".into()),
            );
            None
        }
        (Some(r), None) => Some(crate::claims::RankSel::One(r.value.trim().to_string())),
        (None, Some(e)) => match crate::claims::Reduce::parse(e.value.trim()) {
            Some(red) => Some(crate::claims::RankSel::Every(red)),
            None => {
                c.err(
                    at(e),
                    format!("{what}: `over_ranks` must be all, any, max or min, not `{}`", e.value),
                    Some("all: the condition on every rank; any: on one; max/min: the extreme value judged".into()),
                );
                None
            }
        },
        (None, None) => None,
    }
}

/// A measure's formula, parsed, over fields `spec` declares; each problem reported at the
/// formula's position.
fn formula_over(
    c: &mut Checker,
    value: &Spanned<String>,
    spec: &analysis::AnalysisSpec,
    what: &str,
    per_rank: bool,
) -> Option<Expr> {
    let expr = match Expr::parse(&value.value) {
        Ok(e) => e,
        Err(e) => {
            c.err(
                at(value),
                format!(
                    "{what}: formula {}: {} (at character {})",
                    shown_formula(&value.value),
                    e.message,
                    e.offset + 1
                ),
                Some(formula_hint(&e)),
            );
            return None;
        }
    };
    // Over per-rank rows the formula reads the row's fields; otherwise the values'.
    let fields: Vec<&str> = match spec.row_fields().filter(|_| per_rank) {
        Some(rows) => rows.fields.iter().map(|f| f.name).collect(),
        None => spec.fields.iter().map(|f| f.name).collect(),
    };
    let row_only: Vec<&str> = spec
        .row_fields()
        .map_or(&[][..], |rows| rows.fields)
        .iter()
        .map(|f| f.name)
        .filter(|f| !spec.fields.iter().any(|g| g.name == *f))
        .collect();
    for v in expr.vars() {
        if fields.contains(&v.as_str()) {
            continue;
        }
        if !per_rank && row_only.contains(&v.as_str()) {
            c.err(
                at(value),
                format!("{what}: `{v}` is a per-rank field of `{}`", spec.name),
                Some("add `rank: N` (or the rank's label) for one rank, or `over_ranks: all|any|max|min` for every rank".into()),
            );
            continue;
        }
        c.err(
            at(value),
            format!(
                "{what}: analysis `{}` has no {}field `{v}`",
                spec.name,
                if per_rank { "per-rank " } else { "" }
            ),
            Some(suggestion(&v, fields.iter().copied())),
        );
    }
    Some(expr)
}

/// Gate R1's default tolerance for "the same length" of two sides' windows.
pub const DEFAULT_SAME_LENGTH: &str = "1%";

/// Whether a path is a glob pattern.
fn is_glob(p: &str) -> bool {
    p.contains(['*', '?', '['])
}

/// Whether one path names several files: a glob that is not the name of an existing file.
pub(crate) fn is_set_path(base: &Path, p: &str) -> bool {
    is_glob(p) && !base.join(p).exists()
}

/// The files a glob matches, relative to `base` (its own glob characters escaped), sorted;
/// an error names a pattern that does not parse or matches no file.
pub(crate) fn glob_files(base: &Path, p: &str) -> Result<Vec<PathBuf>, String> {
    let full = if Path::new(p).is_absolute() || base.as_os_str().is_empty() {
        p.to_string()
    } else {
        format!("{}/{p}", glob::Pattern::escape(&base.display().to_string()))
    };
    let mut found = Vec::new();
    // As a shell does, a wildcard never matches a leading dot: a set folder's index
    // (`.verdict-set.json`) and temporary folders are not members.
    let options = glob::MatchOptions { require_literal_leading_dot: true, ..Default::default() };
    for m in
        glob::glob_with(&full, options).map_err(|e| format!("`{p}` is not a valid glob ({e})"))?
    {
        let m = m.map_err(|e| format!("`{p}`: {e}"))?;
        // As a file named in a list would be: never skipped in silence (issue 28).
        if !m.is_file() && !crate::trace::is_trace_dir(&m) {
            return Err(format!(
                "`{}` (matched by `{p}`) is {}, not a regular file",
                m.display(),
                super::load::kind_of_path(&m)
            ));
        }
        found.push(m);
    }
    if found.is_empty() {
        let at = if base.as_os_str().is_empty() { Path::new(".") } else { base };
        return Err(format!("`{p}` matches no file (resolved against `{}`)", at.display()));
    }
    found.sort();
    Ok(found)
}

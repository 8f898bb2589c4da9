//! An audit in the formats CI systems read: JUnit XML, GitHub workflow commands and a
//! Markdown step summary.
//!
//! Every part of every claim is one test case; what makes it fail is what makes `check
//! --strict` fail (a part not supported, a failed gate, a stated number or arithmetic that does
//! not hold, a query that failed), so the exit code of `--strict` and the failures a CI page
//! shows always agree. The texts are the report's own, from the render context of one language.

use quick_xml::Writer;
use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};

use crate::audit::Audit;
use crate::i18n::Strings;
use crate::render::context::{self, PartCtx};
use crate::verdict::{GateStatus, PartOutcome, PartResult};

/// How one part reads as a test case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Case {
    /// Judged and not failed: supported, partially supported, reported, arithmetic that holds.
    Passed,
    /// Not supported, a failed gate, a stated number or arithmetic that does not hold.
    Failed {
        /// `not_supported`, `gate_R2`, `says`, `arithmetic` (the first that applies).
        kind: String,
        /// One line: why.
        message: String,
    },
    /// The query the part reads failed: no verdict.
    Error {
        /// One line: why.
        message: String,
    },
    /// Unverifiable with this evidence (`open`), or an action (never judged).
    Skipped {
        /// Unverifiable: an open item, not an action.
        open: bool,
        /// One line: why.
        message: String,
    },
}

/// One part of one claim, as a test case.
#[derive(Debug, Clone)]
pub struct TestCase {
    /// Claim id.
    pub claim: String,
    /// Part id.
    pub part: String,
    /// Line of the part's id in the claims file.
    pub line: u32,
    /// Column of the part's id in the claims file.
    pub column: u32,
    /// The outcome.
    pub case: Case,
    /// The part's text, formula, condition, gates and reproducing command, one per line.
    pub details: String,
}

/// Plain text from a UI string: code spans lose their backticks, as on the terminal.
fn plain(s: &str) -> String {
    s.replace('`', "")
}

/// The case of a part, from its result (what failed) and its context (the words).
pub fn case_of(r: &PartResult, p: &PartCtx) -> Case {
    let failed_gate = r.gates.iter().position(|g| g.status == GateStatus::Fail);
    let outcome = format!("{}: {}", p.outcome, plain(&p.reason));
    match r.outcome {
        PartOutcome::NotEvaluated => return Case::Error { message: outcome },
        PartOutcome::NotSupported => {
            return Case::Failed { kind: "not_supported".into(), message: outcome };
        }
        PartOutcome::DoesNotHold => {
            return Case::Failed { kind: "arithmetic".into(), message: outcome };
        }
        _ => {}
    }
    if let Some(i) = failed_gate {
        let g = &r.gates[i];
        let text =
            p.gates.iter().find(|c| c.id == g.gate).map_or(String::new(), |c| plain(&c.text));
        return Case::Failed {
            kind: format!("gate_{}", g.gate),
            message: format!("{} FAIL: {text}", g.gate),
        };
    }
    if let Some(s) = r.says.as_ref().filter(|s| !s.matches) {
        return Case::Failed {
            kind: "says".into(),
            message: format!("stated {}, measured {}", s.stated, s.measured),
        };
    }
    match r.outcome {
        PartOutcome::Unverifiable => Case::Skipped { open: true, message: outcome },
        PartOutcome::NotJudged => Case::Skipped { open: false, message: outcome },
        _ => Case::Passed,
    }
}

/// Every part of the audit as a test case, in the claims file's order.
pub fn cases(a: &Audit, t: &Strings) -> Result<Vec<TestCase>, String> {
    let ctx = context::build(a, t, &[], &Default::default()).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for (claim, result) in a.claims.claims.iter().zip(&a.results) {
        let claim_ctx = ctx.claims.iter().find(|c| c.id == claim.id);
        for part in &claim.parts {
            let (Some(r), Some(p)) = (
                result.parts.iter().find(|r| r.id == part.id),
                claim_ctx.and_then(|c| c.parts.iter().find(|p| p.id == part.id)),
            ) else {
                continue;
            };
            let mut details = Vec::new();
            if let Some(text) = &p.text {
                details.push(plain(text));
            }
            if let Some(f) = &p.formula {
                details.push(context::formula_steps(&[&f.symbolic, &f.substituted, &f.result]));
            }
            if let Some(c) = &p.condition {
                details.push(format!("{}: {}", t.get("ui.condition")?, plain(c)));
            }
            if let Some(s) = &p.says {
                details.push(plain(s));
            }
            for g in &p.gates {
                details.push(format!("{} {}: {}", g.id, g.status_key, plain(&g.text)));
            }
            if !p.needs.is_empty() {
                details.push(format!("{}: {}", t.get("ui.needs")?, plain(&p.needs.join("; "))));
            }
            if let Some(cmd) = &p.command {
                details.push(cmd.clone());
            }
            out.push(TestCase {
                claim: claim.id.clone(),
                part: part.id.clone(),
                line: part.line,
                column: part.column,
                case: case_of(r, p),
                details: details.join("\n"),
            });
        }
    }
    Ok(out)
}

/// Text safe for XML 1.0: control characters shown as escapes, and so is every other
/// character XML 1.0 forbids (U+FFFE, U+FFFF; a Rust string holds no surrogate).
fn xml_safe(s: &str) -> String {
    let shown = crate::visible::visible(s, &['\n', '\t']);
    shown
        .chars()
        .map(|c| if xml_char(c) { c.to_string() } else { format!("\\u{{{:x}}}", u32::from(c)) })
        .collect()
}

/// Whether XML 1.0 allows the character (its production `Char`).
fn xml_char(c: char) -> bool {
    matches!(u32::from(c), 0x9 | 0xA | 0xD | 0x20..=0xD7FF | 0xE000..=0xFFFD | 0x10000..=0x10FFFF)
}

/// One line for an XML attribute: line breaks become spaces (a parser would do so anyway).
fn attr(s: &str) -> String {
    xml_safe(&s.replace(['\r', '\n'], " "))
}

/// Counts of a suite: tests, failures, errors, skipped.
fn counts(cases: &[TestCase]) -> [usize; 4] {
    let mut c = [cases.len(), 0, 0, 0];
    for t in cases {
        match t.case {
            Case::Failed { .. } => c[1] += 1,
            Case::Error { .. } => c[2] += 1,
            Case::Skipped { .. } => c[3] += 1,
            Case::Passed => {}
        }
    }
    c
}

/// The JUnit XML of audits: one `testsuite` per claims file, one `testcase` per part
/// (`classname` the report id and claim id, `name` the part id, `file` and `line` where the
/// part is written), `failure` for a part that fails under `--strict`, `error` for a failed
/// query, `skipped` for an unverifiable part or an action.
pub fn junit(audits: &[(&Audit, Vec<TestCase>)]) -> Result<String, String> {
    let io = |e: std::io::Error| e.to_string();
    let mut w = Writer::new_with_indent(Vec::new(), b' ', 2);
    w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None))).map_err(io)?;
    let total = audits.iter().fold([0; 4], |mut acc, (_, cases)| {
        for (a, c) in acc.iter_mut().zip(counts(cases)) {
            *a += c;
        }
        acc
    });
    let with_counts = |name: &str, label: &str, c: [usize; 4]| {
        let mut el = BytesStart::new(name.to_string());
        el.push_attribute(("name", attr(label).as_str()));
        for (k, v) in ["tests", "failures", "errors", "skipped"].iter().zip(c) {
            el.push_attribute((*k, v.to_string().as_str()));
        }
        el
    };
    w.write_event(Event::Start(with_counts("testsuites", "verdict", total))).map_err(io)?;
    for (a, cases) in audits {
        let set = &a.claims;
        w.write_event(Event::Start(with_counts("testsuite", &set.file, counts(cases))))
            .map_err(io)?;
        w.write_event(Event::Start(BytesStart::new("properties"))).map_err(io)?;
        let mut props: Vec<(String, String)> = vec![("report".into(), set.report.id.clone())];
        for tr in &a.traces {
            let read = match &tr.coverage {
                Some(c) => format!("sha256 {}", c.trace.sha256),
                None => "unreadable".into(),
            };
            props.push((format!("trace {}", tr.name), format!("{} {read}", tr.path)));
        }
        for (k, v) in props {
            let mut p = BytesStart::new("property");
            p.push_attribute(("name", attr(&k).as_str()));
            p.push_attribute(("value", attr(&v).as_str()));
            w.write_event(Event::Empty(p)).map_err(io)?;
        }
        w.write_event(Event::End(BytesEnd::new("properties"))).map_err(io)?;
        for t in cases {
            let mut el = BytesStart::new("testcase");
            el.push_attribute(("name", attr(&t.part).as_str()));
            el.push_attribute((
                "classname",
                attr(&format!("{}.{}", set.report.id, t.claim)).as_str(),
            ));
            el.push_attribute(("file", attr(&set.file).as_str()));
            el.push_attribute(("line", t.line.to_string().as_str()));
            let (tag, kind, message): (Option<&str>, Option<&str>, Option<&str>) = match &t.case {
                Case::Passed => (None, None, None),
                Case::Failed { kind, message } => (Some("failure"), Some(kind), Some(message)),
                Case::Error { message } => (Some("error"), Some("query"), Some(message)),
                Case::Skipped { message, .. } => (Some("skipped"), None, Some(message)),
            };
            let Some(tag) = tag else {
                w.write_event(Event::Empty(el)).map_err(io)?;
                continue;
            };
            w.write_event(Event::Start(el)).map_err(io)?;
            let mut inner = BytesStart::new(tag);
            if let Some(m) = message {
                inner.push_attribute(("message", attr(m).as_str()));
            }
            if let Some(k) = kind {
                inner.push_attribute(("type", attr(k).as_str()));
            }
            if tag == "skipped" {
                w.write_event(Event::Empty(inner)).map_err(io)?;
            } else {
                w.write_event(Event::Start(inner)).map_err(io)?;
                w.write_event(Event::Text(BytesText::new(&xml_safe(&t.details)))).map_err(io)?;
                w.write_event(Event::End(BytesEnd::new(tag))).map_err(io)?;
            }
            w.write_event(Event::End(BytesEnd::new("testcase"))).map_err(io)?;
        }
        w.write_event(Event::End(BytesEnd::new("testsuite"))).map_err(io)?;
    }
    w.write_event(Event::End(BytesEnd::new("testsuites"))).map_err(io)?;
    let mut out = String::from_utf8(w.into_inner()).map_err(|e| e.to_string())?;
    out.push('\n');
    Ok(out)
}

/// A workflow command's message, escaped as the runner reads it back (`%`, CR, LF).
fn command_data(s: &str) -> String {
    crate::visible::visible(s, &['\n', '\r', '\t'])
        .replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A workflow command's property value: its message escapes, and `:` and `,`.
fn command_property(s: &str) -> String {
    command_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// GitHub workflow commands for an audit of the claims file `file` (as the repository names
/// it): `::error` at the part's line and column for each case that fails or errs,
/// `::warning` for each unverifiable part, then one plain line with the summary.
pub fn github(a: &Audit, cases: &[TestCase], file: &str, t: &Strings) -> Result<String, String> {
    let mut out = String::new();
    for c in cases {
        let (level, message) = match &c.case {
            Case::Failed { message, .. } | Case::Error { message } => ("error", message),
            Case::Skipped { open: true, message } => ("warning", message),
            _ => continue,
        };
        let title = format!("{} {}/{}", a.claims.report.id, c.claim, c.part);
        out += &format!(
            "::{level} file={},line={},col={},title={}::{}\n",
            command_property(file),
            c.line,
            c.column,
            command_property(&title),
            command_data(&format!("{message}\n{}", c.details)),
        );
    }
    let ctx = context::build(a, t, &[], &Default::default()).map_err(|e| e.to_string())?;
    out += &format!(
        "{} · {}: {}\n",
        crate::term::shown(&a.claims.file),
        t.get("ui.summary")?,
        plain(&ctx.summary.counts_line)
    );
    Ok(out)
}

/// A table cell of the step summary: the value as literal Markdown text.
fn cell(s: &str) -> String {
    crate::render::markup::markdown_text(&crate::visible::visible(&plain(s), &[]), true)
}

/// The Markdown step summary of an audit: the verdict per claim, then every part that fails,
/// errs or is open, with its place in the claims file.
pub fn step_summary(
    a: &Audit,
    cases: &[TestCase],
    file: &str,
    t: &Strings,
) -> Result<String, String> {
    let ctx = context::build(a, t, &[], &Default::default()).map_err(|e| e.to_string())?;
    let [tests, failures, errors, skipped] = counts(cases);
    let mut s = format!(
        "### verdict: {}\n\n{}\n\n",
        crate::markdown::markdown_code_span(file, false),
        cell(&ctx.summary.counts_line)
    );
    let args = |pairs: &[(&str, String)]| -> std::collections::BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
    };
    let passed = tests - failures - errors - skipped;
    let line = t.format(
        "ui.ci_counts",
        &args(&[
            ("n", tests.to_string()),
            ("failed", failures.to_string()),
            ("errors", errors.to_string()),
            ("skipped", skipped.to_string()),
            ("passed", passed.to_string()),
        ]),
    )?;
    s += &format!("{}\n\n", cell(&line));
    s += &format!("| {} | {} |\n|---|---|\n", cell(t.get("ui.claim")?), cell(t.get("ui.verdict")?));
    for r in &ctx.table {
        s += &format!("| {} — {} | {} |\n", cell(&r.id), cell(&r.statement), cell(&r.verdict));
    }
    let listed: Vec<&TestCase> = cases
        .iter()
        .filter(|c| {
            matches!(
                c.case,
                Case::Failed { .. } | Case::Error { .. } | Case::Skipped { open: true, .. }
            )
        })
        .collect();
    if !listed.is_empty() {
        s.push('\n');
        for c in listed {
            let message = match &c.case {
                Case::Failed { message, .. }
                | Case::Error { message }
                | Case::Skipped { message, .. } => message,
                Case::Passed => continue,
            };
            let at = t.format(
                "ui.ci_at",
                &args(&[("line", c.line.to_string()), ("column", c.column.to_string())]),
            )?;
            s += &format!(
                "- {}/{} ({}): {}\n",
                cell(&c.claim),
                cell(&c.part),
                cell(&at),
                cell(message)
            );
        }
    }
    s.push('\n');
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_text_holds_only_characters_xml_allows() {
        let s = xml_safe("a\u{fffe}b\u{ffff}c\u{1}d\re\u{fffd}\u{10000}");
        assert!(s.chars().all(xml_char), "{s:?}");
        assert!(s.starts_with("a\\u{fffe}b\\u{ffff}c"), "{s:?}");
        assert!(s.ends_with("e\u{fffd}\u{10000}"), "{s:?}");
        assert!(!xml_char('\u{fffe}') && !xml_char('\u{1}') && xml_char('\t'));
    }
}

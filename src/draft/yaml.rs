//! The YAML writer of `verdict draft`: a draft as a claims file, every text a quoted scalar
//! that prints as it is written, every part `unreviewed`, with a report id from the answer's
//! file name.

use std::fmt::Write as _;

use super::{Draft, Stated};
use crate::claims::{Kind, Quantity, Unit};

/// A string as a YAML scalar: double-quoted with JSON's escapes, which YAML reads alike, and
/// the characters a terminal must not receive raw (DEL, C1 controls, bidirectional overrides)
/// as `\uXXXX` too, so that the printed draft and the written one are the same text.
fn q(s: &str) -> String {
    let json = serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into());
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if crate::visible::is_hidden(c) {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push(c);
        }
    }
    out
}

/// A report id from the answer's file name: letters, digits, `-`, `_` and `.`, at most 64.
pub fn report_id(file_name: &str) -> String {
    let stem = std::path::Path::new(file_name)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut id: String = stem
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '-' })
        .collect();
    id = id.trim_matches('-').to_string();
    if id.is_empty() {
        id = "answer".into();
    }
    id.truncate(crate::claims::validate::MAX_REPORT_ID - "-draft".len());
    id + "-draft"
}

/// The evidence a drafted causal part needs, in the answer's language.
fn needs(lang: &str, unmeasurable: bool) -> &'static str {
    match (lang, unmeasurable) {
        ("zh-TW", true) => "ncu 的 SM／memory SOL，或只改這一項的受控 A/B",
        ("zh-TW", false) => "能分離這個原因的證據：op 歸因（NVTX）或只改這一項的受控 A/B",
        (_, true) => "ncu SM / memory SOL, or a controlled A/B run that changes only this",
        (_, false) => {
            "evidence that isolates this cause: op attribution (NVTX) or a controlled A/B run that changes only it"
        }
    }
}

/// The draft as a claims file. `file_name` names the answer in the texts and the header.
pub fn to_yaml(d: &Draft, file_name: &str) -> String {
    let lang = d.lang.as_str();
    let t = |s: &str| format!("{{ {lang}: {} }}", q(s));
    let mut y = String::new();
    let _ = writeln!(
        y,
        "# Drafted by `verdict draft` from {}: every part is unreviewed. `verdict check` judges\n\
         # nothing until each part is bound (its kind, a `measure` with a scope, for a range its\n\
         # `condition`) and its `unreviewed` block removed (docs/claims.md, \"Drafted parts\").",
        one_line(file_name)
    );
    let title = match (&d.heading, lang) {
        (Some(h), _) => h.clone(),
        (None, "zh-TW") => format!("從 {file_name} 擬出的主張（未審閱）"),
        (None, _) => format!("Claims drafted from {file_name} (unreviewed)"),
    };
    let _ = writeln!(
        y,
        "report:\n  id: {}\n  languages: [{lang}]\n  title: {}",
        q(&report_id(file_name)),
        t(&title)
    );
    let _ = writeln!(y, "sources:\n  answer:\n    label: {}", t(file_name));
    let _ = writeln!(y, "traces: {{}}");
    if d.claims.is_empty() {
        let _ = writeln!(y, "claims: []");
    } else {
        let _ = writeln!(y, "claims:");
    }
    for c in &d.claims {
        let _ = writeln!(
            y,
            "  - id: {}\n    source: answer\n    statement: {}\n    parts:",
            c.id,
            t(&c.statement)
        );
        for p in &c.parts {
            let _ = writeln!(
                y,
                "      - id: {}\n        kind: {}\n        text: {}",
                p.id,
                p.kind.as_str(),
                t(&p.sentence)
            );
            // A single number in a unit the claims file reads is the part's `says`; a range
            // becomes a proposed condition, and an action's number is never checked.
            if let Stated::One(v) = &p.number.value
                && p.kind != Kind::Action
                && Quantity::parse(v, Unit::Count).is_some()
            {
                let _ = writeln!(y, "        says: {}", q(v));
            }
            if let Some(f) = &p.from {
                let _ = writeln!(y, "        from: [{f}]\n        mapping: {}", t(&p.sentence));
            }
            if p.kind == Kind::Causal {
                let _ = writeln!(
                    y,
                    "        needs:\n          - {}",
                    t(needs(lang, p.unmeasurable.is_some()))
                );
            }
            let _ = writeln!(
                y,
                "        unreviewed:\n          line: {}\n          quote: {}\n          number: {}",
                p.line,
                q(&p.sentence),
                q(&p.number.written)
            );
            let cues: Vec<String> = p.cues.iter().map(|c| q(c)).collect();
            let _ = writeln!(y, "          cues: [{}]", cues.join(", "));
            if let Stated::Range(lo, hi) = &p.number.value
                && Quantity::parse(lo, Unit::Count).is_some()
                && Quantity::parse(hi, Unit::Count).is_some()
            {
                let _ = writeln!(y, "          condition: {{ between: [{}, {}] }}", q(lo), q(hi));
            }
            if p.analyses.is_empty() {
                let _ = writeln!(y, "          analyses: []");
            } else {
                let _ = writeln!(y, "          analyses:");
            }
            for a in &p.analyses {
                let m =
                    a.name_match.as_ref().map(|m| format!(", match: {}", q(m))).unwrap_or_default();
                let _ = writeln!(
                    y,
                    "            - {{ analysis: {}, value: {}, unit: {}{m}, cue: {} }}",
                    a.analysis,
                    q(a.value),
                    q(a.unit),
                    q(&a.cue)
                );
            }
            if let Some(u) = p.unmeasurable {
                let _ = writeln!(y, "          unmeasurable: {}", q(u));
            }
        }
    }
    if !d.skipped.is_empty() {
        let _ = writeln!(y, "# Numbers not drafted:");
        for (line, text, why) in &d.skipped {
            let _ = writeln!(y, "#   line {line}: {} ({})", one_line(text), why.reason());
        }
    }
    y
}

/// A text on one line, for a YAML comment.
fn one_line(s: &str) -> String {
    s.chars().map(|c| if crate::visible::is_hidden(c) { ' ' } else { c }).collect()
}

//! Traditional Chinese as written in Taiwan, not translated: one term per concept
//! (`templates/i18n/glossary.toml`), and full-width punctuation next to Chinese, both in the
//! UI strings and in the rendered zh-TW report of the day26 example.

use crate::util;

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

const CLAIMS: &str = "claims/day26-profile-blind.yaml";
const ID: &str = "day26-profile-blind";

/// Half-width punctuation that must not touch Chinese text.
const HALF_WIDTH: &[char] = &[',', '.', ':', ';', '(', ')', '?', '!'];

/// Marks the start and the end of a UI string in an instrumented render (private use).
const OPEN: char = '\u{e000}';
const CLOSE: char = '\u{e001}';

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Glossary {
    term: Vec<Term>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Term {
    concept: String,
    /// English words (or phrases) that name the concept in en.toml.
    en: Vec<String>,
    /// The chosen zh-TW term.
    zh: String,
    /// Variants no zh-TW string may use.
    rejected: Vec<String>,
    /// Keys whose English uses one of the words in another sense.
    #[serde(default)]
    except: Vec<String>,
    /// Keys that must use the term whatever their English says.
    #[serde(default)]
    keys: Vec<String>,
    #[serde(default)]
    #[allow(dead_code)]
    note: Option<String>,
}

fn glossary() -> Glossary {
    let path = util::manifest_dir().join("templates/i18n/glossary.toml");
    toml::from_str(&std::fs::read_to_string(path).unwrap()).expect("glossary.toml parses")
}

fn strings(src: &str) -> BTreeMap<String, String> {
    toml::from_str(src).expect("the strings parse")
}

fn zh() -> BTreeMap<String, String> {
    strings(verdict::i18n::ZH_TW)
}

fn en() -> BTreeMap<String, String> {
    strings(verdict::i18n::EN)
}

/// The lower-case words of an English string, without its placeholders and code spans.
fn english_words(s: &str) -> Vec<String> {
    let mut plain = String::new();
    let (mut code, mut placeholder) = (false, false);
    for c in s.chars() {
        match c {
            '`' => code = !code,
            '{' if !code => placeholder = true,
            '}' if placeholder => placeholder = false,
            _ if code || placeholder => {}
            _ => plain.push(c),
        }
        if c == '`' || c == '}' {
            plain.push(' ');
        }
    }
    plain
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(String::from)
        .collect()
}

/// Whether `words` holds the word sequence of `phrase`.
fn uses_phrase(words: &[String], phrase: &str) -> bool {
    let p = english_words(phrase);
    !p.is_empty() && words.windows(p.len()).any(|w| w == p.as_slice())
}

/// Whether `text` uses the rejected `variant` of `term`: an occurrence inside the chosen
/// term itself (時間窗內 for 窗內) does not count.
fn uses_rejected(text: &str, term: &str, variant: &str) -> bool {
    let (text, term, variant) = (text.to_lowercase(), term.to_lowercase(), variant.to_lowercase());
    if variant.contains(&term) {
        text.contains(&variant)
    } else {
        text.replace(&term, "\u{0}").contains(&variant)
    }
}

#[test]
fn no_zh_tw_string_uses_a_rejected_variant() {
    let zh = zh();
    let mut found = Vec::new();
    for t in &glossary().term {
        for v in &t.rejected {
            for (k, s) in &zh {
                if uses_rejected(s, &t.zh, v) {
                    found.push(format!("{k}: {v} for {} (use {}): {s}", t.concept, t.zh));
                }
            }
        }
    }
    assert!(found.is_empty(), "rejected variants:\n{}", found.join("\n"));
}

#[test]
fn every_zh_tw_string_uses_the_chosen_terms_of_its_concepts() {
    let (zh, en) = (zh(), en());
    let mut missing = Vec::new();
    for t in &glossary().term {
        let term = t.zh.to_lowercase();
        for (k, e) in &en {
            let words = english_words(e);
            let named = t.en.iter().any(|w| uses_phrase(&words, w));
            if (named && !t.except.contains(k)) || t.keys.contains(k) {
                let s = &zh[k];
                if !s.to_lowercase().contains(&term) {
                    missing.push(format!("{k}: {} → {}: {e} | {s}", t.concept, t.zh));
                }
            }
        }
    }
    assert!(missing.is_empty(), "chosen terms missing:\n{}", missing.join("\n"));
}

#[test]
fn the_glossary_is_consistent_and_every_chosen_term_is_used() {
    let (zh, g) = (zh(), glossary());
    for t in &g.term {
        assert!(
            zh.values().any(|s| s.to_lowercase().contains(&t.zh.to_lowercase())),
            "{}: no zh-TW string uses {}",
            t.concept,
            t.zh
        );
        for k in t.except.iter().chain(&t.keys) {
            assert!(zh.contains_key(k), "{}: no key {k}", t.concept);
        }
        assert!(!t.rejected.contains(&t.zh), "{}: {} is both chosen and rejected", t.concept, t.zh);
        // One concept's chosen term is not another's rejected variant.
        for other in &g.term {
            for v in &other.rejected {
                assert!(
                    !uses_rejected(&t.zh, &other.zh, v),
                    "{} ({}) uses {v}, rejected for {}",
                    t.concept,
                    t.zh,
                    other.concept
                );
            }
        }
    }
    // The article's verdict and content-type words.
    let chosen: BTreeMap<&str, &str> =
        g.term.iter().map(|t| (t.concept.as_str(), t.zh.as_str())).collect();
    for (concept, word) in [
        ("supported", "支持"),
        ("partially supported", "部分支持"),
        ("unverifiable", "無法驗證"),
        ("not supported", "不支持"),
        ("observation", "觀察"),
        ("interpretation", "解釋"),
        ("causal claim", "因果主張"),
        ("action", "建議動作"),
        ("window", "時間窗"),
        ("denominator", "分母"),
    ] {
        assert_eq!(chosen.get(concept).copied(), Some(word), "{concept}");
    }
}

#[test]
fn the_term_checks_read_words_and_skip_the_chosen_term() {
    assert!(
        uses_rejected("時間窗口", "時間窗", "時間窗口") && uses_rejected("窗口", "時間窗", "窗口")
    );
    assert!(
        !uses_rejected("時間窗內", "時間窗", "窗內") && uses_rejected("窗內", "時間窗", "窗內")
    );
    assert!(!uses_rejected("時間戳記", "時間戳記", "時間戳"));
    assert_eq!(
        english_words("the claim's `{formula}` over {n} devices"),
        ["the", "claim", "s", "over", "devices"]
    );
}

/// A character of Chinese text: ideographs, kana and bopomofo, CJK and full-width punctuation.
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x2e80..=0x303f | 0x3040..=0x9fff | 0xf900..=0xfaff | 0xfe30..=0xfe4f
            | 0xff00..=0xffef | 0x20000..=0x3ffff)
}

/// One character of a text being checked.
#[derive(Debug, Clone, Copy)]
struct Cell {
    c: char,
    /// Inside a code span or block (backticks included).
    code: bool,
    /// Inside a UI string (instrumented renders only).
    ui: bool,
}

/// The characters of `text`, with code spans marked (a run of n backticks not escaped by a
/// backslash opens one, the next run of n closes it) and the instrumentation marks dropped.
fn cells(text: &str) -> Vec<Cell> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::with_capacity(chars.len());
    let (mut depth, mut fence) = (0usize, 0usize);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            OPEN => depth += 1,
            CLOSE => depth -= 1,
            '`' if i == 0 || chars[i - 1] != '\\' => {
                let mut n = 0;
                while chars.get(i + n) == Some(&'`') {
                    n += 1;
                }
                if fence == 0 {
                    fence = n;
                } else if fence == n {
                    fence = 0;
                }
                for _ in 0..n {
                    out.push(Cell { c: '`', code: true, ui: depth > 0 });
                }
                i += n;
                continue;
            }
            _ => out.push(Cell { c, code: fence > 0, ui: depth > 0 }),
        }
        i += 1;
    }
    out
}

/// A half-width punctuation mark next to Chinese.
#[derive(Debug)]
struct Offender {
    /// 1-based line.
    line: usize,
    /// The mark with its Chinese neighbour(s), as read (emphasis marks left out).
    pair: String,
    /// The mark and its Chinese neighbour both come from UI strings.
    ui: bool,
    /// The line, for the message.
    text: String,
}

/// The half-width marks of `cells` that touch a CJK character, outside code. Markdown
/// emphasis (`*`) between the two does not separate them: the reader sees `提問:`.
fn offenders(cells: &[Cell]) -> Vec<Offender> {
    let text: String = cells.iter().map(|c| c.c).collect();
    let lines: Vec<&str> = text.lines().collect();
    let neighbour = |from: usize, step: isize| -> Option<Cell> {
        let mut j = from as isize + step;
        while j >= 0 && (j as usize) < cells.len() {
            let c = cells[j as usize];
            if c.c != '*' || c.code {
                return Some(c);
            }
            j += step;
        }
        None
    };
    let mut line = 1;
    let mut found = Vec::new();
    for (i, cell) in cells.iter().enumerate() {
        if cell.c == '\n' {
            line += 1;
        }
        if cell.code || !HALF_WIDTH.contains(&cell.c) {
            continue;
        }
        let cjk = |n: Option<Cell>| n.filter(|n| !n.code && is_cjk(n.c));
        let (left, right) = (cjk(neighbour(i, -1)), cjk(neighbour(i, 1)));
        if left.is_none() && right.is_none() {
            continue;
        }
        let pair = format!(
            "{}{}{}",
            left.map_or(String::new(), |c| c.c.to_string()),
            cell.c,
            right.map_or(String::new(), |c| c.c.to_string())
        );
        let ui = cell.ui && left.iter().chain(&right).any(|n| n.ui);
        found.push(Offender { line, pair, ui, text: lines[line - 1].to_string() });
    }
    found
}

#[test]
fn no_zh_tw_string_has_half_width_punctuation_next_to_chinese() {
    let bad: Vec<String> = zh()
        .iter()
        .flat_map(|(k, s)| {
            offenders(&cells(s)).into_iter().map(move |o| format!("{k}: {} in {s}", o.pair))
        })
        .collect();
    assert!(bad.is_empty(), "half-width punctuation next to Chinese:\n{}", bad.join("\n"));
}

#[test]
fn the_checks_see_what_a_reader_sees() {
    let count = |s: &str| offenders(&cells(s)).len();
    assert_eq!(count("主張：證據（device 4），1/(1-f) 倍"), 0);
    assert_eq!(count("主張: 證據"), 1);
    assert_eq!(count("**提問**: 8"), 1, "emphasis does not separate");
    assert_eq!(count("(觀察, 主要部分)"), 3);
    assert_eq!(count("`公式: a.b` 與 ``x`,y`` 之`(間`"), 0, "code spans are not text");
    assert_eq!(count("trace \\`A\\`（主檔 A）"), 0);
    assert_eq!(count("17.8%, p90 14.93 ms"), 0, "English-only fragments keep half-width");
    let marked = format!("{OPEN}分母{CLOSE}: {OPEN}x{CLOSE}（{OPEN}說明:{CLOSE}）");
    let o = offenders(&cells(&marked));
    assert_eq!(
        o.iter().map(|o| (o.pair.as_str(), o.ui)).collect::<Vec<_>>(),
        [("母:", false), ("明:）", true)]
    );
}

/// The zh-TW strings with every value between the instrumentation marks, as TOML.
fn marked_strings() -> String {
    let esc = |s: &str| {
        s.chars()
            .map(|c| match c {
                '\\' => "\\\\".to_string(),
                '"' => "\\\"".to_string(),
                c if c.is_control() => format!("\\u{:04x}", c as u32),
                c => c.to_string(),
            })
            .collect::<String>()
    };
    zh().iter()
        .map(|(k, v)| format!("\"{}\" = \"{}\"\n", esc(k), esc(&format!("{OPEN}{v}{CLOSE}"))))
        .collect()
}

/// `verdict render CLAIMS --lang zh-TW --format md`, with `templates` when given.
fn render_zh(out: &Path, templates: Option<&Path>) -> String {
    let mut cmd = util::verdict();
    cmd.current_dir(util::manifest_dir())
        .args(["render", CLAIMS, "--lang", "zh-TW", "--format", "md", "--out"])
        .arg(out);
    if let Some(t) = templates {
        cmd.arg("--templates").arg(t);
    }
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::read_to_string(out.join(format!("{ID}.zh-TW.md"))).unwrap()
}

/// The zh-TW texts of the claims file (what its author wrote).
fn author_texts() -> Vec<String> {
    fn walk(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, v) in m {
                    match v {
                        serde_json::Value::String(s) if k == "zh-TW" => out.push(s.clone()),
                        _ => walk(v, out),
                    }
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let src = std::fs::read_to_string(util::manifest_dir().join(CLAIMS)).unwrap();
    let v: serde_json::Value = serde_saphyr::from_str(&src).expect("the claims file parses");
    let mut out = Vec::new();
    walk(&v, &mut out);
    assert!(out.len() > 20, "the claims file has zh-TW texts");
    out
}

/// Half-width punctuation next to Chinese in the rendered zh-TW report: none, whether it would
/// come from the UI strings, the templates shared by both languages, or the author's text of
/// the claims file (each is printed with `cargo test --test suite zh_tw:: -- --nocapture`); and no
/// rejected glossary variant anywhere in the report.
#[test]
fn the_rendered_zh_tw_report_has_no_half_width_punctuation_and_no_rejected_term() {
    let dir = tempfile::tempdir().unwrap();
    let plain = render_zh(&dir.path().join("plain"), None);
    // The same render with every UI string marked tells which text came from the strings.
    let tpl = dir.path().join("tpl");
    let o = util::verdict().args(["templates", "eject"]).arg(&tpl).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::write(tpl.join("i18n/zh-TW.toml"), marked_strings()).unwrap();
    let marked = render_zh(&dir.path().join("marked"), Some(&tpl));
    let marked_cells = cells(&marked);
    // The marks may only move Markdown escapes (`\=` at the start of a string's text).
    let unmarked: String = marked_cells.iter().map(|c| c.c).collect();
    let (a, b) = (unmarked.replace('\\', ""), plain.replace('\\', ""));
    assert_eq!(a.lines().count(), b.lines().count(), "marking the strings changed the report");
    for (m, p) in a.lines().zip(b.lines()) {
        assert_eq!(m, p, "marking the strings changed the report");
    }
    assert!(marked_cells.iter().any(|c| c.ui) && marked_cells.iter().any(|c| !c.ui));

    let author = author_texts();
    let by_author = |o: &Offender| author.iter().any(|a| a.contains(&o.pair));
    let found = offenders(&marked_cells);
    let (ui, rest): (Vec<&Offender>, Vec<&Offender>) = found.iter().partition(|o| o.ui);
    let (authored, templated): (Vec<&Offender>, Vec<&Offender>) =
        rest.into_iter().partition(|o| by_author(o));
    let show = |what: &str, list: &[&Offender]| {
        println!("{what}: {}", list.len());
        // By shape first (漢 stands for any ideograph), then one by one.
        let mut shapes: BTreeMap<String, usize> = BTreeMap::new();
        for o in list {
            let shape = o
                .pair
                .chars()
                .map(|c| if is_cjk(c) && c.is_alphabetic() { '漢' } else { c })
                .collect();
            *shapes.entry(shape).or_default() += 1;
        }
        for (shape, n) in &shapes {
            println!("  {shape} × {n}");
        }
        for o in list {
            println!("  line {:>3}  {:<6} {}", o.line, o.pair, o.text.trim());
        }
    };
    show("from the templates or code", &templated);
    show("from the claims file's author text", &authored);
    show("from the UI strings", &ui);
    // Terms of the glossary that the report uses differently, wherever the text comes from.
    let mut rejected = Vec::new();
    for t in &glossary().term {
        for v in &t.rejected {
            for (n, l) in plain.lines().enumerate() {
                if uses_rejected(l, &t.zh, v) {
                    rejected.push(format!(
                        "line {}: {v} (glossary: {}): {}",
                        n + 1,
                        t.zh,
                        l.trim()
                    ));
                }
            }
        }
    }
    assert!(ui.is_empty(), "half-width punctuation next to Chinese from the UI strings: {ui:#?}");
    assert!(templated.is_empty(), "… from the templates or code: {templated:#?}");
    assert!(authored.is_empty(), "… from the claims file's text: {authored:#?}");
    assert!(rejected.is_empty(), "rejected glossary variants in the report: {rejected:#?}");
}

/// The blog and brief reports share the templates' pieces but lay them out their own way:
/// neither may put half-width punctuation next to Chinese either.
#[test]
fn the_blog_and_brief_zh_tw_reports_have_no_half_width_punctuation() {
    let dir = tempfile::tempdir().unwrap();
    let o = util::verdict()
        .current_dir(util::manifest_dir())
        .args(["render", CLAIMS, "--lang", "zh-TW", "--format", "md", "--profile", "blog,brief"])
        .arg("--out")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for profile in ["blog", "brief"] {
        let md =
            std::fs::read_to_string(dir.path().join(format!("{ID}.zh-TW.{profile}.md"))).unwrap();
        let found: Vec<String> = offenders(&cells(&md))
            .into_iter()
            .map(|o| format!("line {}: {} in {}", o.line, o.pair, o.text.trim()))
            .collect();
        assert!(found.is_empty(), "{profile}: {found:#?}");
    }
}

/// A full-width mark carries its own spacing: no committed zh-TW report leaves a half-width
/// space after one before prose (`（device 0、整份 trace） 與運算`, `設定。 請依成本`), whether
/// the space came from the author's text around a placeholder or from a template's join. Table
/// rows (`） |`) and code spans are Markdown, not prose.
#[test]
fn no_zh_tw_report_leaves_a_half_width_space_after_full_width_punctuation() {
    let after = regex::Regex::new(r"[，。、；：！？」』）] [\p{Han}A-Za-z0-9]").unwrap();
    let code = regex::Regex::new(r"`[^`]*`").unwrap();
    let mut found = Vec::new();
    let mut read = 0;
    for entry in std::fs::read_dir(util::manifest_dir().join("out")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if !(name.contains(".zh-TW.") && name.ends_with(".md")) || name.starts_with("eval-") {
            continue;
        }
        read += 1;
        let text = std::fs::read_to_string(&path).unwrap();
        for (i, line) in text.lines().enumerate() {
            let prose = code.replace_all(line, "`code`");
            if let Some(m) = after.find(&prose) {
                found.push(format!("{name}:{}: {}", i + 1, m.as_str()));
            }
        }
    }
    assert!(read >= 10, "{read} reports read");
    assert!(found.is_empty(), "{found:#?}");
}

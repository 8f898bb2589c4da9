//! Escaping (issue 12): every author field of a claims file and every string a trace holds
//! (kernel and NVTX names, export metadata, its file name) carries a corpus of payloads, and
//! every output is read back by a real parser: the Markdown with pulldown-cmark (no raw HTML,
//! links only to http, https and mailto, table rows whole), the SVG charts with an XML parser,
//! the PDF's text with pdftotext (payloads shown literally, control characters as `\x1b`), and
//! the terminal output of `check`, `query` and `inspect` (no raw control character).

use crate::util;

use util::typst::typst_ready;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use rusqlite::Connection;

/// Strings that break naive escaping somewhere: code span fences, raw HTML, comments, table
/// pipes, Typst markup, links to other schemes or relative places, control characters (ESC,
/// BEL, NUL, DEL, a C1 CSI), a right-to-left override, carriage returns that start a new
/// Markdown block, and a very long word.
fn payloads() -> Vec<String> {
    let mut p: Vec<String> = [
        "``<script>alert(1)</script>``",
        "` `` <img src=x onerror=alert(2)> ``` `",
        "<iframe src=\"javascript:alert(3)\"></iframe>",
        "<!-- hidden --> & &lt; &#60;b&#62;",
        "a | b || c \\| d",
        "]] [[x]] #set page(width: 1cm) #panic(\"x\") $x^2$ @ref <lbl> * _ ~",
        "```\nfenced\n```",
        "esc\u{1b}[31mred\u{1b}[0m bel\u{7} nul\u{0} del\u{7f} csi\u{9b}2J",
        "rtl \u{202e}gnp.exe\u{202c} end",
        "\r<script>alert(4)</script>\r<!-- cr -->\r| x | y |",
        "[a](javascript:alert(5)) [b](/etc/passwd) [c](../up) [d](//host/x) [e](file:///etc/passwd) <javascript:alert(6)> [ok](https://example.org/ok)",
    ]
    .into_iter()
    .map(str::to_string)
    .collect();
    p.push(format!("long{}word", "x".repeat(400)));
    p
}

/// The whole corpus as one author text: each payload on a line of its own, so those that
/// matter at the start of a line (`<script>`, `|`, ```` ``` ````) are there.
fn corpus() -> String {
    payloads().join("\n")
}

/// A double-quoted YAML scalar holding `s` exactly: YAML forbids most control characters
/// raw, so they are written as `\u` escapes.
fn yaml(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `{en: ...}` with the corpus.
fn text() -> String {
    format!("{{ en: {} }}", yaml(&corpus()))
}

/// A file name that holds what a file name can (anything but `/`): backticks, HTML, a pipe,
/// ESC and CR.
fn hostile_file(stem: &str, ext: &str) -> String {
    format!("{stem} ``<img src=x onerror=alert(7)>`` | \u{1b}[31m \r<script>alert(8).{ext}")
}

/// Process 1, thread 1, in Nsight's global ids.
const PID: i64 = 1 << 24;
const TID: i64 = PID | 1;

/// A small trace whose kernel names, NVTX range names and export metadata are the payloads:
/// per payload, one NVTX range enclosing one launch record of one kernel on device 0.
fn build_trace(path: &Path) {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(
        "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
         CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, \"end\" INTEGER NOT NULL,
             deviceId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER,
             globalPid INTEGER, demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL);
         CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, \"end\" INTEGER NOT NULL,
             globalTid INTEGER, correlationId INTEGER);
         CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, \"end\" INTEGER, eventType INTEGER NOT NULL,
             text TEXT, globalTid INTEGER, textId INTEGER, domainId INTEGER);
         CREATE TABLE META_DATA_EXPORT (name TEXT NOT NULL, value TEXT);",
    )
    .unwrap();
    let names: Vec<String> =
        payloads().into_iter().chain(["ncclDevKernel_AllReduce_Sum".to_string()]).collect();
    for (i, name) in names.iter().enumerate() {
        let (id, at, corr) = (i as i64 + 1, 1_000_000 * (i as i64 + 1), i as i64 + 1);
        conn.execute("INSERT INTO StringIds VALUES (?1, ?2)", (id, name)).unwrap();
        conn.execute(
            "INSERT INTO NVTX_EVENTS VALUES (?1, ?2, 59, ?3, ?4, NULL, 0)",
            (at, at + 500_000, name, TID),
        )
        .unwrap();
        conn.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?1, ?2, ?3, ?4)",
            (at + 100, at + 200, TID, corr),
        )
        .unwrap();
        conn.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?1, ?2, 0, 7, ?3, ?4, ?5, ?5)",
            (at + 1_000, at + 2_000 + 100 * i as i64, corr, PID, id),
        )
        .unwrap();
    }
    let line = payloads().join(" ");
    for (key, value) in [
        ("EXPORT_SCHEMA_VERSION", "3.25.0"),
        ("EXPORT_PRODUCT_VERSION", "2026.2.1.210"),
        ("DERIVED_BY", line.as_str()),
        ("EXPORT_HOST", line.as_str()),
        ("EXPORT_TIME_UTC", line.as_str()),
        ("EXPORT_PARAM_INPUT_FILE", line.as_str()),
    ] {
        conn.execute("INSERT INTO META_DATA_EXPORT VALUES (?1, ?2)", (key, value)).unwrap();
    }
}

/// The claims file: every free-text field carries the corpus; each payload names a scope, is
/// a claim's id, and is the `match` text of its kernels and NVTX parts; one scope takes its
/// window from an NVTX range named by a payload.
fn build_claims(dir: &Path, trace_file: &str) -> PathBuf {
    let t = text();
    let trace = yaml(&format!("T {}", payloads().join(" ")).replace('\n', " "));
    let mut y = format!(
        "report:
  id: hostile
  languages: [en]
  title: {t}
  question: {t}
  answer: {{ en: {answer} }}
  decision: {t}
sources:
  src:
    label: {t}
    note: {t}
traces:
  {trace}: {{ path: {path}, label: {t} }}
scopes:
  plain: {{ trace: {trace}, devices: \"0\" }}
  by-range: {{ trace: {trace}, window: {{ nvtx: {range} }}, devices: \"0\" }}
",
        answer = yaml(&format!("{{plain/k}} and {{plain/k:value}} {}", corpus())),
        path = yaml(trace_file),
        range = yaml(&payloads()[0]),
    );
    for p in payloads() {
        y += &format!("  {}: {{ trace: {trace}, devices: \"0\" }}\n", yaml(&p));
    }
    y += "claims:\n";
    let claim = |id: &str, scope: &str, pattern: &str| {
        format!(
            "  - id: {id}
    source: src
    statement: {t}
    review: {t}
    principal: cause
    parts:
      - id: k
        kind: observation
        text: {t}
        measure: {{ analysis: kernels, scope: {scope}, match: {pattern}, value: total_ns, unit: ms }}
        condition: {{ above: \"0 ms\" }}
        note: {t}
        caveats: {t}
      - id: n
        kind: observation
        text: {t}
        measure: {{ analysis: nvtx, scope: {scope}, match: {pattern}, value: kernels, unit: count }}
      - id: why
        kind: interpretation
        from: [k, n]
        text: {t}
        mapping: {t}
      - id: cause
        kind: causal
        text: {t}
        needs: [{t}]
        work: [ab]
        effort: days
        unblocks: {t}
"
        )
    };
    y += &claim("plain", "plain", &yaml(&payloads()[1]));
    y += &claim("by-range", "by-range", &yaml(&payloads()[0]));
    for p in payloads() {
        let p = yaml(&p);
        y += &claim(&p, &p, &p);
    }
    y += &format!("review:\n  reviewer: {}\n  r6: {t}\n  next: {t}\n", yaml(&corpus()));
    let path = dir.join(hostile_file("claims", "yaml"));
    std::fs::write(&path, y).unwrap();
    path
}

/// A temporary folder with the hostile trace and claims file.
struct Case {
    dir: tempfile::TempDir,
    trace: PathBuf,
    claims: PathBuf,
}

fn case() -> Case {
    let dir = tempfile::tempdir().unwrap();
    let trace_file = hostile_file("trace", "sqlite");
    let trace = dir.path().join(&trace_file);
    build_trace(&trace);
    let claims = build_claims(dir.path(), &trace_file);
    Case { dir, trace, claims }
}

fn verdict(args: &[&std::ffi::OsStr]) -> Output {
    let out = util::verdict().args(args).output().expect("verdict runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "verdict panicked:\n{stderr}");
    out
}

/// Whether a character must never reach an output raw: a control character but the line
/// break (and the tab, where `tab` says it may stand), or a bidirectional override.
fn forbidden(c: char, tab: bool) -> bool {
    (c.is_control() && c != '\n' && !(tab && c == '\t'))
        || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

fn assert_no_raw_controls(what: &str, text: &str, tab: bool) {
    if let Some((at, c)) = text.char_indices().find(|&(_, c)| forbidden(c, tab)) {
        let near: String = text[at.saturating_sub(60)..].chars().take(100).collect();
        panic!("{what}: raw {:?} at byte {at}, near {near:?}", c);
    }
}

/// Checks one Markdown report as a CommonMark/GFM reader sees it.
fn check_markdown(name: &str, md: &str) {
    let events = check_markdown_text(name, md);
    if name.contains(".blog.") {
        check_verdict_items(name, &events);
    } else {
        check_table_rows(name, &events);
    }
}

/// A blog lists the verdicts, each item led by its verdict in bold, one item per claim: a
/// payload in a statement cannot end the item or take the lead.
fn check_verdict_items(name: &str, events: &[Event<'_>]) {
    let verdicts =
        ["supported", "partially supported", "not supported", "unverifiable", "reported"];
    let (mut in_item, mut lead, mut strong, mut items) = (false, None::<String>, false, 0);
    for e in events {
        match e {
            Event::Start(Tag::Item) => (in_item, lead) = (true, None),
            Event::Start(Tag::Strong) if in_item && lead.is_none() => {
                (strong, lead) = (true, Some(String::new()))
            }
            Event::End(TagEnd::Strong) => strong = false,
            Event::Text(t) if strong => lead.as_mut().unwrap().push_str(t),
            Event::End(TagEnd::Item) => {
                in_item = false;
                if lead.as_deref().is_some_and(|l| verdicts.contains(&l)) {
                    items += 1;
                }
            }
            _ => {}
        }
    }
    assert_eq!(items, 2 + payloads().len(), "{name}: one verdict item per claim");
}

/// Checks Markdown for raw HTML, links and images other than ours, payloads that do not show
/// as text, and raw control characters; returns its events.
fn check_markdown_text<'a>(name: &str, md: &'a str) -> Vec<Event<'a>> {
    let opts = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    let events: Vec<Event<'_>> = Parser::new_ext(md, opts).collect();
    // No raw HTML of any kind, links only to the allowed schemes, images only of our charts.
    for e in &events {
        match e {
            Event::Html(h) | Event::InlineHtml(h) => panic!("{name}: raw HTML {h:?}"),
            Event::Start(Tag::Link { dest_url, .. }) => assert!(
                ["http://", "https://", "mailto:"].iter().any(|s| dest_url.starts_with(s)),
                "{name}: a link to {dest_url:?}"
            ),
            Event::Start(Tag::Image { dest_url, .. }) => assert!(
                dest_url.starts_with("hostile.en.")
                    && (dest_url.ends_with(".svg") || dest_url.ends_with(".png"))
                    && !dest_url.contains('/'),
                "{name}: an image of {dest_url:?}"
            ),
            _ => {}
        }
    }
    let mut html = String::new();
    pulldown_cmark::html::push_html(&mut html, events.clone().into_iter());
    // pulldown-cmark writes every `<` of text as `&lt;`, so each `<` left starts a tag it made
    // from Markdown; raw HTML would add others (`<script`, `<iframe`, `<img onerror`, `<!--`).
    const TAGS: &[&str] = &[
        "p",
        "h1",
        "h2",
        "h3",
        "strong",
        "em",
        "del",
        "code",
        "pre",
        "ul",
        "ol",
        "li",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "a",
        "img",
        "blockquote",
        "hr",
        "br",
    ];
    for (at, _) in html.match_indices('<') {
        let tag = &html[at + 1..at + html[at..].find('>').unwrap()];
        let element = tag.trim_start_matches('/').split([' ', '/']).next().unwrap();
        assert!(TAGS.contains(&element), "{name}: <{tag}> in the HTML");
        let attrs = tag.split_once(' ').map_or("", |(_, a)| a);
        match element {
            _ if tag.starts_with('/') => assert_eq!(tag, format!("/{element}"), "{name}"),
            "a" => assert!(
                ["href=\"http://", "href=\"https://", "href=\"mailto:"]
                    .iter()
                    .any(|s| attrs.starts_with(s)),
                "{name}: <{tag}>"
            ),
            "img" => assert!(attrs.starts_with("src=\"hostile.en."), "{name}: <{tag}>"),
            "code" => {
                assert!(attrs.is_empty() || attrs == "class=\"language-sh\"", "{name}: <{tag}>")
            }
            _ => assert!(!attrs.contains('='), "{name}: <{tag}>"),
        }
    }
    // The payloads are shown, as text.
    for shown in ["&lt;script&gt;alert(1)&lt;/script&gt;", "\\x1b[31mred", "\\u{202e}gnp.exe"] {
        assert!(html.contains(shown), "{name}: `{shown}` is not shown");
    }
    assert!(html.contains("<a href=\"https://example.org/ok\">ok</a>"), "{name}: the https link");
    assert_no_raw_controls(name, md, true);
    events
}

/// Every table row of a report ends with its verdict, one row per claim.
fn check_table_rows(name: &str, events: &[Event<'_>]) {
    // Every table row ends with its verdict: a `|` in a cell would shift it.
    let verdicts =
        ["supported", "partially supported", "not supported", "unverifiable", "reported"];
    let mut row: Option<Vec<String>> = None;
    let mut rows = 0;
    for e in events {
        match e {
            Event::Start(Tag::TableRow) => row = Some(Vec::new()),
            Event::Start(Tag::TableCell) => {
                if let Some(r) = row.as_mut() {
                    r.push(String::new());
                }
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some(cell) = row.as_mut().and_then(|r| r.last_mut()) {
                    cell.push_str(t);
                }
            }
            Event::End(TagEnd::TableRow) => {
                let r = row.take().unwrap();
                assert_eq!(r.len(), 3, "{name}: {r:?}");
                assert!(verdicts.contains(&r[2].as_str()), "{name}: a row ends with {:?}", r[2]);
                rows += 1;
            }
            _ => {}
        }
    }
    assert_eq!(rows, 2 + payloads().len(), "{name}: one row per claim");
}

/// Renders the hostile claims into `out` in `formats`, every profile.
fn render(c: &Case, out: &Path, formats: &str) -> Output {
    let out = verdict(&[
        "render".as_ref(),
        c.claims.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
        "--format".as_ref(),
        formats.as_ref(),
        "--profile".as_ref(),
        "full,blog,brief".as_ref(),
    ]);
    assert!(out.status.success(), "render failed:\n{}", String::from_utf8_lossy(&out.stderr));
    out
}

fn files(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    v.sort();
    v
}

#[test]
fn every_markdown_report_reads_as_text_with_safe_links_and_whole_table_rows() {
    let c = case();
    let out = c.dir.path().join("out");
    render(&c, &out, "md");
    let mds = files(&out, ".md");
    assert_eq!(mds.len(), 3, "{mds:?}");
    for md in mds {
        let name = md.file_name().unwrap().to_string_lossy().into_owned();
        check_markdown(&name, &std::fs::read_to_string(&md).unwrap());
    }
}

#[test]
fn every_chart_is_well_formed_xml_that_shows_the_names() {
    let c = case();
    let out = c.dir.path().join("out");
    render(&c, &out, "md");
    let svgs = files(&out, ".svg");
    assert!(!svgs.is_empty());
    let mut titles = String::new();
    for svg in &svgs {
        let text = std::fs::read_to_string(svg).unwrap();
        let doc = roxmltree::Document::parse(&text)
            .unwrap_or_else(|e| panic!("{} is not XML: {e}", svg.display()));
        for n in doc.descendants().filter(|n| n.has_tag_name("title") || n.has_tag_name("text")) {
            titles += n.text().unwrap_or("");
            titles.push('\n');
        }
    }
    assert_no_raw_controls("the charts' text", &titles, false);
    for shown in ["esc\\x1b[31mred\\x1b[0m bel\\x07 nul\\x00 del\\x7f csi\\x9b2J", "<script>"] {
        assert!(titles.contains(shown), "`{shown}` is not in the charts:\n{titles}");
    }
}

#[test]
fn the_pdf_compiles_and_shows_every_payload_as_text() {
    if !typst_ready("the PDF checks") {
        return;
    }
    let c = case();
    let out = c.dir.path().join("out");
    render(&c, &out, "md,pdf");
    let pdf = out.join("hostile.en.pdf");
    let bytes = std::fs::read(&pdf).unwrap();
    assert!(bytes.starts_with(b"%PDF"));
    // Link annotations only to the allowed schemes (typst writes them uncompressed).
    let raw = String::from_utf8_lossy(&bytes);
    // `/S/URI/URI(target)`: the action's type, then its target string.
    let uris: Vec<&str> =
        raw.split("/URI").skip(1).map(str::trim_start).filter(|u| u.starts_with('(')).collect();
    assert!(uris.iter().any(|u| u.starts_with("(https://example.org/ok)")), "no https link");
    for u in &uris {
        assert!(
            ["(http://", "(https://", "(mailto:"].iter().any(|s| u.starts_with(s)),
            "a PDF link to {:?}",
            u.get(..40).unwrap_or(u)
        );
    }
    let Ok(text) = Command::new("pdftotext").arg("-raw").arg(&pdf).arg("-").output() else {
        eprintln!("skipping the PDF text check: pdftotext is not installed");
        return;
    };
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    // pdftotext ends each page with a form feed.
    assert_no_raw_controls("the PDF's text", &text.replace('\u{c}', "\n"), true);
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    for shown in [
        "``<script>alert(1)</script>``",
        "#set page(width: 1cm) #panic(\"x\") $x^2$ @ref <lbl>",
        "<!-- hidden --> & &lt; &#60;b&#62;",
        "esc\\x1b[31mred\\x1b[0m bel\\x07 nul\\x00 del\\x7f csi\\x9b2J",
        "rtl \\u{202e}gnp.exe\\u{202c} end",
        "[b](/etc/passwd)",
    ] {
        assert!(flat.contains(shown), "`{shown}` is not shown in the PDF:\n{flat}");
    }
}

#[test]
fn the_terminal_never_receives_a_control_character() {
    let c = case();
    let trace = c.trace.as_os_str();
    let runs: Vec<Vec<&std::ffi::OsStr>> = vec![
        vec!["check".as_ref(), c.claims.as_os_str()],
        vec!["query".as_ref(), "kernels".as_ref(), trace, "--device".as_ref(), "0".as_ref()],
        vec!["query".as_ref(), "nvtx".as_ref(), trace, "--device".as_ref(), "0".as_ref()],
        vec!["inspect".as_ref(), trace],
    ];
    for args in runs {
        let out = verdict(&args);
        let what = format!("verdict {args:?}");
        assert!(out.status.success(), "{what}:\n{}", String::from_utf8_lossy(&out.stderr));
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert_no_raw_controls(&what, &stdout, false);
        assert_no_raw_controls(&what, &String::from_utf8(out.stderr).unwrap(), false);
        assert!(stdout.contains("\\x1b[31m"), "{what} does not show the ESC:\n{stdout}");
    }
    // JSON keeps every value exact: the escapes are JSON's own.
    let out = verdict(&["check".as_ref(), c.claims.as_os_str(), "--json".as_ref()]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_no_raw_controls("check --json", &stdout, false);
    let ledger: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert!(ledger.to_string().contains("csi\u{9b}2J"), "the C1 character is kept in the value");
}

#[test]
fn an_error_message_shows_control_characters_as_escapes() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no\u{1b}[2J\u{7}such.sqlite");
    let out = verdict(&["inspect".as_ref(), missing.as_os_str()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_no_raw_controls("the error", &stderr, false);
    assert!(stderr.contains("no\\x1b[2J\\x07such.sqlite"), "{stderr}");
}

/// Blind review sheets (issue 28) are read in Markdown viewers: the hostile answer's
/// statements, part texts, ids and next step show as text there too.
#[test]
fn every_review_sheet_reads_as_text_with_safe_links() {
    let c = case();
    let eval = c.dir.path().join("eval.yaml");
    std::fs::write(
        &eval,
        format!(
            "eval:\n  id: hostile-eval\n  languages: [en]\n  title: {{ en: t }}\n  question: {t}\n  groups: group\n  held: []\nanswers:\n  - claims: {}\n    conditions: {{ group: a }}\n",
            yaml(&c.claims.file_name().unwrap().to_string_lossy()),
            t = text(),
        ),
    )
    .unwrap();
    let sheets = c.dir.path().join("sheets");
    let out = verdict(&[
        "eval".as_ref(),
        eval.as_os_str(),
        "--review-sheets".as_ref(),
        sheets.as_os_str(),
    ]);
    assert!(out.status.success(), "eval failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let sheet = std::fs::read_to_string(sheets.join("S01.md")).unwrap();
    check_markdown_text("S01.md", &sheet);
    // The payloads of ids, which are code spans, show whole.
    assert!(sheet.contains("```` ` `` <img src=x onerror=alert(2)> ``` ` ````"), "{sheet}");
}

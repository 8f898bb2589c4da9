//! The Markdown reports paste into other renderers: pulldown-cmark and markdown-rs (two
//! independent CommonMark + GFM parsers) must read every committed report alike, and the
//! blog profile must use nothing an older Markdown dialect reads differently.

use crate::util;

use std::path::PathBuf;

fn out_dir() -> PathBuf {
    util::manifest_dir().join("out")
}

/// Every committed Markdown report.
fn reports() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir(out_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    out.sort();
    assert!(out.len() >= 6, "the committed reports: {out:?}");
    out
}

fn html_pulldown(md: &str) -> String {
    use pulldown_cmark::{Options, Parser, html};
    let mut s = String::new();
    html::push_html(
        &mut s,
        Parser::new_ext(md, Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH),
    );
    s
}

fn html_markdown_rs(md: &str) -> String {
    markdown::to_html_with_options(md, &markdown::Options::gfm()).unwrap()
}

/// What a reader sees: tags and text, without the whitespace between tags and the spelling
/// differences of equivalent HTML (`<img ... />` and `<img ...>`, entity forms).
fn normalize(html: &str) -> Vec<String> {
    let s = html
        .replace(" />", ">")
        .replace("/>", ">")
        .replace("&#x27;", "'")
        .replace("&#39;", "'")
        .replace("&quot;", "\"")
        .replace(" align=\"left\"", "")
        .replace(" style=\"text-align: left\"", "");
    // One tag or text run per item, trimmed.
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in s.chars() {
        match c {
            '<' => {
                if !cur.trim().is_empty() {
                    out.push(cur.split_whitespace().collect::<Vec<_>>().join(" "));
                }
                cur = "<".into();
            }
            '>' => {
                cur.push('>');
                out.push(cur.clone());
                cur.clear();
            }
            c => cur.push(c),
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur.split_whitespace().collect::<Vec<_>>().join(" "));
    }
    out
}

#[test]
fn the_two_parsers_agree_on_every_committed_report() {
    for (name, md) in reports() {
        let (a, b) = (normalize(&html_pulldown(&md)), normalize(&html_markdown_rs(&md)));
        if let Some(i) = (0..a.len().max(b.len())).find(|&i| a.get(i) != b.get(i)) {
            panic!(
                "{name}: the parsers differ at item {i}: pulldown-cmark {:?}, markdown-rs {:?}",
                a.get(i.saturating_sub(2)..(i + 3).min(a.len())),
                b.get(i.saturating_sub(2)..(i + 3).min(b.len()))
            );
        }
    }
}

#[test]
fn the_comparison_sees_a_real_difference() {
    // A GFM table that markdown-rs reads and a parser without tables would not: with tables
    // off on one side, the helper must notice.
    let md = "| a | b |\n|---|---|\n| 1 | 2 |\n";
    let plain = {
        let mut s = String::new();
        pulldown_cmark::html::push_html(&mut s, pulldown_cmark::Parser::new(md));
        s
    };
    assert_ne!(normalize(&plain), normalize(&html_markdown_rs(md)));
    assert_eq!(normalize(&html_pulldown(md)), normalize(&html_markdown_rs(md)));
}

/// Backslash escapes that Markdown.pl, the original dialect, also honours.
const PORTABLE_ESCAPES: &str = "\\`*_{}[]()#+-.!";

#[test]
fn blog_reports_read_alike_in_older_dialects() {
    for (name, md) in reports().into_iter().filter(|(n, _)| n.contains(".blog.")) {
        let mut in_code = false;
        for (n, line) in md.lines().enumerate() {
            if line.starts_with("```") {
                in_code = !in_code;
            }
            if in_code {
                continue;
            }
            // Flat lists only: nesting needs 4 spaces in some dialects and 2 in others.
            let indented = line.len() - line.trim_start().len();
            let item = line.trim_start().starts_with("- ")
                || line
                    .trim_start()
                    .split_once(". ")
                    .is_some_and(|(d, _)| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()));
            assert!(!(item && indented > 0), "{name}:{}: a nested list item: {line}", n + 1);
            // No escape that an older dialect would print literally.
            let chars: Vec<char> = line.chars().collect();
            let mut i = 0;
            while i < chars.len() {
                if chars[i] == '`' {
                    // Skip a code span: its backslashes are literal everywhere.
                    let run = chars[i..].iter().take_while(|c| **c == '`').count();
                    let fence: String = "`".repeat(run);
                    let rest: String = chars[i + run..].iter().collect();
                    let end = rest
                        .find(&fence)
                        .map_or(chars.len(), |e| i + run + rest[..e].chars().count() + run);
                    i = end;
                    continue;
                }
                if chars[i] == '\\' {
                    let next = chars.get(i + 1).copied().unwrap_or(' ');
                    assert!(
                        PORTABLE_ESCAPES.contains(next),
                        "{name}:{}: `\\{next}` shows literally in older Markdown: {line}",
                        n + 1
                    );
                    i += 1;
                }
                i += 1;
            }
        }
        // Images: absolute or beside the file, and PNG, which every blog editor takes.
        for l in md.lines().filter(|l| l.starts_with("![")) {
            assert!(l.contains(".png)"), "{name}: the blog links a chart that is not PNG: {l}");
        }
    }
}

//! Tests of author Markdown made safe: escaping for Typst and Markdown against strings that
//! break naive escaping, links and their schemes, code spans and blocks, lists, table cells,
//! CJK soft breaks, and real typst compiling what the writers produce.

use super::*;

/// Strings that break naive escaping in Typst, Markdown or both.
const NASTY: &[&str] = &[
    "#set page(width: 1cm)",
    "*bold* _x_ $x$ @ref <lbl> [a] `code` ~ // c /* c */ -- --- ... = h",
    "]#panic(\"x\")[",
    "http://x.y and https://x.y/z?a=1&b=2",
    "1. item",
    "- item",
    "+ item",
    "= heading",
    "/ term: def",
    "a\\",
    "\\u{41} \\#",
    "\"quotes\" and 'single'",
    "通訊佔步時 17.8%",
    "emoji 😀 ok",
    "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel",
    "nccl_only_ns / total_ns",
    "verdict query kernel_time --json --trace t.sqlite",
    "C:\\temp\\x.yaml",
    "<script>alert(1)</script> &amp; &#65;",
    "a | b || c",
    "~~s~~ ***x*** __y__ _z",
    "![img](x.png) [l](u) <http://a.b>",
    "> quote",
    "```",
    "line one\nline two",
    "{braces} (parens) !bang 3) x",
];

fn normalize(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

// --- Typst ---

#[test]
fn typst_text_escapes_every_ascii_punctuation() {
    assert_eq!(typst_text("a\\"), r"a\\");
    assert_eq!(typst_text("#set page(width: 1cm)"), r"\#set page\(width\: 1cm\)");
    assert_eq!(typst_text("]#panic(\"x\")["), r#"\]\#panic\(\"x\"\)\["#);
    assert_eq!(typst_text("x\ny\r\nz"), "x#linebreak()y#linebreak()z");
    assert_eq!(typst_text("通訊佔步時 17.8%"), r"通訊佔步時 17\.8\%");
    assert_eq!(typst_text("a\tb\u{1}c\u{1b}[31m\u{202e}"), r"a b\\x01c\\x1b\[31m\\u\{202e\}");
    assert_eq!(typst_text("a\u{b}b\u{85}c"), r"a\\x0bb\\x85c");
}

#[test]
fn typst_string_escapes_quotes_backslashes_and_newlines() {
    assert_eq!(typst_string("a\"b\\c\nd\te\u{1}"), r#"a\"b\\c\nd\te\\x01"#);
    assert_eq!(typst_string("a\r\nb\rc\u{1b}\u{202e}"), r#"a\nb\nc\\x1b\\u{202e}"#);
    assert_eq!(typst_string("通訊"), "通訊");
}

#[test]
fn typst_inline_markup() {
    assert_eq!(markdown_to_typst("*a* **b** ~~c~~", true), "#emph[a] #strong[b] #strike[c]");
    assert_eq!(markdown_to_typst("*a **b** c*", true), "#emph[a #strong[b] c]");
    assert_eq!(markdown_to_typst("***x***", true), "#emph[#strong[x]]");
    assert_eq!(markdown_to_typst("``a`b``", true), "#raw(\"a`b\")");
    assert_eq!(
        markdown_to_typst("see [x](http://e.com/a\"b)", true),
        r#"see #link("http://e.com/a\"b")[x]"#
    );
    assert_eq!(markdown_to_typst("<a@b.c>", true), r#"#link("mailto:a@b.c")[a\@b\.c]"#);
    assert_eq!(markdown_to_typst("![alt *t*](http://x/y.png)", true), "alt #emph[t]");
    assert_eq!(markdown_to_typst("$x$", true), r"\$x\$");
    assert_eq!(markdown_to_typst("a\\\nb", true), "a#linebreak()b");
}

#[test]
fn typst_refuses_unsafe_link_schemes() {
    assert_eq!(
        markdown_to_typst("[x](javascript:alert(1))", true),
        r"x \(javascript\:alert\(1\)\)"
    );
    assert_eq!(markdown_to_typst("[x](https://e.com/a)", true), r#"#link("https://e.com/a")[x]"#);
    for (src, shown) in [
        ("[x](docs/a.md)", r"x \(docs\/a\.md\)"),
        ("[x](/etc/passwd)", r"x \(\/etc\/passwd\)"),
        ("[x](../a)", r"x \(\.\.\/a\)"),
        ("[x](//host/a)", r"x \(\/\/host\/a\)"),
        ("[x](file:///etc/passwd)", r"x \(file\:\/\/\/etc\/passwd\)"),
        ("[x](http:/a)", r"x \(http\:\/a\)"),
    ] {
        assert_eq!(markdown_to_typst(src, true), shown, "{src}");
    }
    assert_eq!(markdown_to_typst("[a]() [](http://x)", true), r#"a #link("http://x")"#);
}

#[test]
fn typst_injection_attempts_are_text() {
    assert_eq!(markdown_to_typst("#set page(width: 1cm)", false), r"\#set page\(width\: 1cm\)");
    assert_eq!(markdown_to_typst("]#panic(\"x\")[", true), r#"\]\#panic\(\"x\"\)\["#);
    assert_eq!(
        markdown_to_typst("<script>alert(1)</script>", false),
        r"\<script\>alert\(1\)\<\/script\>"
    );
    assert_eq!(markdown_to_typst("a <b>x</b>", true), r"a \<b\>x\<\/b\>");
}

#[test]
fn typst_blocks() {
    assert_eq!(markdown_to_typst("a\n\nb", false), "a\n\nb");
    assert_eq!(markdown_to_typst("a\n\nb", true), "a#linebreak()b");
    assert_eq!(markdown_to_typst("# Title\n\nBody", false), "#strong[Title]\n\nBody");
    assert_eq!(markdown_to_typst("# Title\n\nBody", true), "#strong[Title]#linebreak()Body");
    assert_eq!(markdown_to_typst("> q", false), "#quote(block: true)[q]");
    assert_eq!(markdown_to_typst("> q", true), "#quote[q]");
    assert_eq!(
        markdown_to_typst("```rust\nfn x() {}\n```", false),
        r#"#raw(block: true, lang: "rust", "fn x() {}")"#
    );
    assert_eq!(markdown_to_typst("```rust\nfn x() {}\n```", true), r#"#raw("fn x() {}")"#);
    assert_eq!(markdown_to_typst("| a | b |\n|---|---|\n| 1 | 2 |", false), "a \\| b\n\n1 \\| 2");
    assert_eq!(
        markdown_to_typst("| a | b |\n|---|---|\n| 1 | 2 |", true),
        r"a \| b#linebreak()1 \| 2"
    );
}

#[test]
fn typst_lists_block_and_inline() {
    assert_eq!(markdown_to_typst("- a\n- b", false), "#list([a], [b])");
    assert_eq!(markdown_to_typst("3. a\n4. b", false), "#enum(start: 3, [a], [b])");
    assert_eq!(markdown_to_typst("1. a", false), "#enum([a])");
    assert_eq!(markdown_to_typst("- a\n  - b\n- c", false), "#list([a\n#list([b])], [c])");
    assert_eq!(markdown_to_typst("Intro:\n\n- a", false), "Intro\\:\n\n#list([a])");
    assert_eq!(markdown_to_typst("- a\n- b", true), r"a\; b");
    assert_eq!(markdown_to_typst("3. a\n4. b", true), r"3\. a\; 4\. b");
    assert_eq!(markdown_to_typst("- a\n  - b\n  - c\n- d", true), r"a \(b\; c\)\; d");
    assert_eq!(markdown_to_typst("Intro:\n\n- a\n- b", true), r"Intro\:#linebreak()a\; b");
}

#[test]
fn typst_soft_breaks_join_cjk_without_space() {
    assert_eq!(markdown_to_typst("通訊\n佔步", true), "通訊佔步");
    assert_eq!(markdown_to_typst("abc\ndef", true), "abc def");
    assert_eq!(markdown_to_typst("通訊 17.8%", false), r"通訊 17\.8\%");
}

/// Compiles `doc` with the real typst and returns pdftotext's output, or `None` when either
/// tool is missing. Fails on any typst error or warning.
fn compile_with_typst(doc: &str) -> Option<String> {
    use std::process::Command;
    let have = |tool: &str, arg: &str| Command::new(tool).arg(arg).output().is_ok();
    if !have("typst", "--version") || !have("pdftotext", "-v") {
        eprintln!("skipping: `typst` or `pdftotext` is not on PATH");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let typ = dir.path().join("t.typ");
    let pdf = dir.path().join("t.pdf");
    std::fs::write(&typ, doc).unwrap();
    let run = Command::new("typst")
        .args(["compile", "--diagnostic-format", "short"])
        .arg(&typ)
        .arg(&pdf)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success() && stderr.trim().is_empty(), "typst said:\n{stderr}\n{doc}");
    // `-raw`: the default mode joins a line ending in `-` with the next one, as if hyphenated.
    let text = Command::new("pdftotext").arg("-raw").arg(&pdf).arg("-").output().unwrap();
    assert!(text.status.success());
    Some(String::from_utf8(text.stdout).unwrap())
}

// A wide page keeps each paragraph on one line, so line wrapping can't split a word.
const PREAMBLE: &str =
    "#set text(font: (\"Noto Sans CJK TC\"))\n#set page(width: auto, height: auto)\n";

#[test]
fn typst_text_round_trips_through_real_typst() {
    let mut doc = PREAMBLE.to_owned();
    for s in NASTY {
        doc.push_str(&typst_text(s));
        doc.push_str("\n\n");
    }
    let Some(text) = compile_with_typst(&doc) else { return };
    let expected = normalize(&NASTY.join(" "));
    let got = normalize(&text);
    if got != expected {
        let at = got.chars().zip(expected.chars()).take_while(|(a, b)| a == b).count();
        let tail = |s: &str| s.chars().skip(at.saturating_sub(20)).take(60).collect::<String>();
        panic!("differs at char {at}:\n got: {}\nwant: {}", tail(&got), tail(&expected));
    }
}

#[test]
fn markdown_to_typst_compiles_cleanly_with_real_typst() {
    let author = [
        "#set page(width: 1cm)",
        "]#panic(\"x\")[ and `code with ` backtick` and *em* **strong**",
        "<script>alert(1)</script>",
        "# Heading\n\n- a\n  - b\n- c\n\n3. x\n4. y\n\n> quote\n\n```sh\nverdict query --json\n```",
        "[link](http://e.com/a\"b) [bad](javascript:x) ![alt](i.png) a\\\nb",
        "| t | u |\n|---|---|\n| 1 | 2 |",
        "通訊佔步時\n17.8% $x$ a\\",
    ];
    let mut doc = PREAMBLE.to_owned();
    doc.push_str("#table(columns: 2,\n");
    for a in author {
        doc.push_str(&format!("  [cell], [{}],\n", markdown_to_typst(a, true)));
    }
    doc.push_str(")\n\n");
    for a in author {
        doc.push_str(&format!("#block[{}]\n\n", markdown_to_typst(a, false)));
    }
    let Some(text) = compile_with_typst(&doc) else { return };
    let text = normalize(&text);
    for literal in
        ["#set page(width: 1cm)", "]#panic(\"x\")[", "<script>alert(1)</script>", "$x$ a\\"]
    {
        assert!(text.contains(literal), "{literal:?} not shown literally in:\n{text}");
    }
}

/// Deterministic pseudo-random strings over characters that matter to Typst and Markdown.
fn random_strings(count: usize) -> Vec<String> {
    let alphabet: Vec<char> = "ab1 \n\\#*_$@<>[]`~/-+='\":.,;(){}!?|&%^通訊😀hpt".chars().collect();
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        // xorshift64: good enough to spread characters, and reproducible across runs.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    (0..count)
        .map(|_| {
            let len = (next() % 24) as usize;
            (0..len).map(|_| alphabet[(next() % alphabet.len() as u64) as usize]).collect()
        })
        .collect()
}

#[test]
fn real_typst_accepts_escaped_random_text() {
    let strings = random_strings(300);
    let mut doc = PREAMBLE.to_owned();
    for s in &strings {
        doc.push_str(&typst_text(s));
        doc.push_str("\n\n");
    }
    doc.push_str("#table(columns: 2,\n");
    for s in &strings {
        doc.push_str(&format!("  [{}], [{}],\n", markdown_to_typst(s, true), typst_text(s)));
    }
    doc.push_str(")\n");
    for s in &strings {
        doc.push_str(&format!("#block[{}]\n", markdown_to_typst(s, false)));
    }
    let Some(text) = compile_with_typst(&doc) else { return };
    // The literal paragraphs come first, before the table. pdftotext puts spaces around CJK
    // and fallback-font glyphs, so whitespace is left out of this comparison.
    let squeeze = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    let (got, expected) = (squeeze(&text), squeeze(&strings.concat()));
    if !got.starts_with(&expected) {
        let at = got.chars().zip(expected.chars()).take_while(|(a, b)| a == b).count();
        let near = |s: &str| s.chars().skip(at.saturating_sub(20)).take(60).collect::<String>();
        panic!("differs at char {at}:\n got: {}\nwant: {}", near(&got), near(&expected));
    }
}

// --- Markdown ---

#[test]
fn markdown_text_escapes() {
    assert_eq!(markdown_text("a|b", true), r"a\|b");
    assert_eq!(
        markdown_text("flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel", true),
        "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel"
    );
    assert_eq!(markdown_text("nccl_only_ns / total_ns", true), "nccl_only_ns / total_ns");
    assert_eq!(
        markdown_text("verdict query kernel_time --json", true),
        "verdict query kernel_time --json"
    );
    assert_eq!(markdown_text("17.8% (2.1 ms)!", true), "17.8% (2.1 ms)!");
    assert_eq!(markdown_text("_x_ *y* `z`", false), r"\_x\_ \*y\* \`z\`");
    assert_eq!(
        markdown_text("1. item\n- item\n# h\n  + p\n= e\n12) x", false),
        "1\\. item\n\\- item\n\\# h\n\\+ p\n\\= e\n12\\) x"
    );
    assert_eq!(markdown_text("a\nb", true), "a b");
    assert_eq!(markdown_text("-x", true), r"\-x");
    assert_eq!(markdown_text("<b>&amp;</b>", true), "&lt;b&gt;&amp;amp;&lt;/b&gt;");
    assert_eq!(markdown_text("$x$ ~s~ [l](u) \\", true), r"\$x\$ \~s\~ \[l\](u) \\");
    assert_eq!(markdown_text("通訊佔步時 17.8%", true), "通訊佔步時 17.8%");
}

/// The cells of the first row of the first table in `md`: their text, with any other event
/// inside a cell written as `⟨Debug⟩` so that a comparison with plain text fails on it.
fn table_cells(md: &str) -> Vec<String> {
    let mut cells: Vec<String> = Vec::new();
    let mut in_head = false;
    for event in parser(md) {
        match event {
            Event::Start(Tag::TableHead) => in_head = true,
            Event::End(TagEnd::TableHead) => in_head = false,
            Event::Start(Tag::TableCell) if in_head => cells.push(String::new()),
            Event::End(TagEnd::TableCell) => {}
            Event::Text(t) if in_head => cells.last_mut().unwrap().push_str(&t),
            other if in_head => cells.last_mut().unwrap().push_str(&format!("⟨{other:?}⟩")),
            _ => {}
        }
    }
    cells
}

#[test]
fn markdown_text_in_a_table_cell_round_trips() {
    for s in NASTY {
        let md = format!("| a | {} |\n| --- | --- |\n", markdown_text(s, true));
        let cells = table_cells(&md);
        assert_eq!(cells.len(), 2, "{md}");
        assert_eq!(normalize(&cells[1]), normalize(s), "{md}");
    }
}

#[test]
fn markdown_text_as_a_paragraph_round_trips() {
    for s in NASTY {
        let md = markdown_text(s, false);
        let mut text = String::new();
        for event in parser(&md) {
            match event {
                Event::Text(t) => text.push_str(&t),
                Event::SoftBreak => text.push(' '),
                Event::Start(Tag::Paragraph) | Event::End(TagEnd::Paragraph) => text.push(' '),
                other => panic!("unexpected {other:?} in:\n{md}"),
            }
        }
        assert_eq!(normalize(&text), normalize(s), "{md}");
    }
}

#[test]
fn markdown_safe_shows_html_as_text() {
    assert_eq!(
        markdown_safe("<script>alert(1)</script>", false),
        "&lt;script&gt;alert(1)&lt;/script&gt;"
    );
    assert_eq!(markdown_safe("a <b>x</b> c", true), "a &lt;b&gt;x&lt;/b&gt; c");
    assert_eq!(markdown_safe("#set x", true), r"\#set x");
}

#[test]
fn markdown_safe_re_emits_inline_markup() {
    assert_eq!(markdown_safe("*a* **b** `c|d` ~~e~~", true), r"*a* **b** `c\|d` ~~e~~");
    assert_eq!(markdown_safe("*a* **b** `c|d` ~~e~~", false), "*a* **b** `c|d` ~~e~~");
    assert_eq!(markdown_safe("``a`b``", true), "``a`b``");
    assert_eq!(markdown_safe("[x](http://e.com/a\"b|d)", true), "[x](http://e.com/a%22b%7Cd)");
    assert_eq!(markdown_safe("[x](javascript:alert(1))", true), "x (javascript:alert(1))");
    // A link's text is escaped as text is (`http\://`): it reads the same, and a bare
    // address never becomes a link of its own.
    assert_eq!(markdown_safe("[a]() [](http://x_y)", true), r"a [http\://x_y](http://x_y)");
    assert_eq!(markdown_safe("![alt](http://x/y.png)", true), "alt");
    assert_eq!(markdown_safe("通訊\n佔步", true), "通訊佔步");
    assert_eq!(markdown_safe("通訊\n佔步\nab\ncd", false), "通訊佔步\nab\ncd");
    assert_eq!(markdown_safe("flash_bwd_dq and $x$", true), r"flash_bwd_dq and \$x\$");
}

#[test]
fn bare_addresses_stay_text_in_every_renderer() {
    assert_eq!(
        markdown_text("see https://e.com/x, www.e.com or a@b.c; not xhttp://y", false),
        r"see https\://e.com/x, www\.e.com or a\@b.c; not xhttp://y"
    );
}

#[test]
fn markdown_refuses_relative_and_unsafe_links() {
    assert_eq!(markdown_safe("[x](https://e.com/a)", true), "[x](https://e.com/a)");
    assert_eq!(
        markdown_safe("[m](mailto:a@b.c) <a@b.c>", true),
        r"[m](mailto:a@b.c) [a\@b.c](mailto:a@b.c)"
    );
    for (src, shown) in [
        ("[x](docs/a.md)", "x (docs/a.md)"),
        ("[x](/etc/passwd)", "x (/etc/passwd)"),
        ("[x](../a)", "x (../a)"),
        ("[x](//host/a)", "x (//host/a)"),
        ("[x](#part)", "x (#part)"),
        ("[x](file:///etc/passwd)", "x (file:///etc/passwd)"),
        ("[x](JavaScript:alert(1))", "x (JavaScript:alert(1))"),
        ("<javascript:alert(1)>", "javascript:alert(1) (javascript:alert(1))"),
        ("[x](https://a%0Ab)", "[x](https://a%0Ab)"),
    ] {
        assert_eq!(markdown_safe(src, true), shown, "{src}");
    }
}

#[test]
fn control_characters_show_as_escapes_in_markdown() {
    assert_eq!(markdown_text("a\u{1b}[31mb\u{7}\u{0}", true), r"a\\x1b\[31mb\\x07\\x00");
    assert_eq!(markdown_text("abc\u{202e}fed\u{9b}", false), r"abc\\u{202e}fed\\x9b");
    assert_eq!(markdown_safe("`a\u{1b}b` c\u{7}", true), r"`a\x1bb` c\\x07");
    assert_eq!(markdown_code_span("a\u{1b}b\tc", false), "`a\\x1bb\tc`");
    assert_eq!(markdown_code_block("a\u{7}\r\nb"), "```sh\na\\x07\nb\n```");
    assert_eq!(markdown_safe("```\na\u{1b}\n```", false), "```\na\\x1b\n```");
}

#[test]
fn a_code_span_holds_any_value_on_one_line() {
    assert_eq!(markdown_code_span("a``b", false), "```a``b```");
    assert_eq!(markdown_code_span("`a", false), "`` `a ``");
    assert_eq!(markdown_code_span("a|b", false), "`a|b`");
    assert_eq!(markdown_code_span("a|b", true), r"`a\|b`");
    assert_eq!(markdown_code_span("", false), "` `");
    assert_eq!(markdown_code_span("a\r<script>x\n<!-- c -->", false), "`a <script>x <!-- c -->`");
    for value in [
        "a\r<script>alert(1)</script>",
        "x\r\n<!-- c -->",
        "``\r| a | b |",
        "`` <img src=x onerror=y> ``",
    ] {
        for cell in [false, true] {
            let md = format!("- s: {}: after", markdown_code_span(value, cell));
            for event in parser(&md) {
                assert!(
                    !matches!(
                        event,
                        Event::Html(_) | Event::InlineHtml(_) | Event::Start(Tag::Table(_))
                    ),
                    "{event:?} in {md:?}"
                );
            }
            assert!(
                parser(&md).any(|e| matches!(e, Event::Text(t) if t.as_ref() == ": after")),
                "{md:?}"
            );
        }
    }
}

#[test]
fn markdown_safe_blocks() {
    assert_eq!(markdown_safe("a\n\nb", true), "a / b");
    assert_eq!(markdown_safe("a\n\nb", false), "a\n\nb");
    assert_eq!(markdown_safe("a\\\nb", true), "a / b");
    assert_eq!(markdown_safe("a\\\nb", false), "a\\\nb");
    assert_eq!(markdown_safe("- a\n- b", true), "a; b");
    assert_eq!(markdown_safe("- a\n- b", false), "- a\n- b");
    assert_eq!(markdown_safe("1. a\n   - b\n2. c", false), "1. a\n   - b\n2. c");
    assert_eq!(markdown_safe("1. a\n   - b\n2. c", true), r"1\. a (b); 2. c");
    assert_eq!(markdown_safe("# Title\n\nBody", false), "**Title**\n\nBody");
    assert_eq!(markdown_safe("# Title\n\nBody", true), "**Title** / Body");
    assert_eq!(markdown_safe("> q\n>\n> r", false), "> q\n>\n> r");
    assert_eq!(markdown_safe("- x\n  > q", true), "x / q");
    assert_eq!(markdown_to_typst("- x\n  > q", true), "x#linebreak()#quote[q]");
    assert_eq!(markdown_safe("```\na|b\n```", true), r"`a\|b`");
    assert_eq!(markdown_safe("```sh\na|b\n```", false), "```sh\na|b\n```");
    assert_eq!(markdown_safe("| a | b |\n|---|---|\n| 1 | 2 |", true), r"a \| b / 1 \| 2");
}

#[test]
fn markdown_safe_keeps_the_structure_of_plain_markdown() {
    // Inputs with nothing that markdown_safe deliberately changes (headings, HTML, images,
    // tables, refused links), so the re-parsed events must equal the original ones.
    let inputs = [
        "a *b* **c** ~~d~~ `e|f` [g](http://h.i/j?k=1&l=2) \\* \\_ x_y",
        "p1 line\nline two\\\nhard\n\np2",
        "- a\n- b\n  - c\n  - d\n- e",
        "1. a\n\n   more a\n\n2. b\n   3. c",
        "> q *x*\n>\n> - l1\n> - l2\n>\n> > nested",
        "- item\n\n  ```rust\n  let `a` = ```;\n  ```\n- ```\n  x\n  ```",
        "```\n~~~\n\n    indented\n```\n\n***\n\n1) paren list\n2) two",
        // A break between CJK characters is deliberately dropped, so this one is before a digit.
        "通訊佔步時\n17.8% `flash_bwd` _強調_",
    ];
    let events = |md: &str| {
        let mut out: Vec<String> = Vec::new();
        let mut text: Option<String> = None;
        for event in parser(md) {
            // Escapes split text events differently, so compare merged runs of text.
            if let Event::Text(t) = &event {
                text.get_or_insert_default().push_str(t);
                continue;
            }
            out.extend(text.take().map(|t| format!("text {t}")));
            out.push(match event {
                // Only the target matters; `<url>` and `[url](url)` differ in link type.
                Event::Start(Tag::Link { dest_url, .. }) => format!("link {dest_url}"),
                other => format!("{other:?}"),
            });
        }
        out
    };
    for src in inputs {
        let md = markdown_safe(src, false);
        assert_eq!(events(&md), events(src), "{src:?}\nbecame\n{md}");
    }
}

#[test]
fn markdown_safe_never_yields_html_or_breaks_a_table() {
    let mut inputs: Vec<&str> = NASTY.to_vec();
    inputs.extend([
        "<div>\n\n*md*\n\n</div>",
        "<!-- c -->\n<script>\nalert(1)\n</script>",
        "a <span onclick=\"x\">b</span> <http://x.y> <a@b.c>",
        "- <b>x</b>\n  > <i>q</i>\n\n      <pre>indented</pre>",
        "&lt;b&gt; &#60;i&#62;",
        "text\n---\nmore\n===",
    ]);
    for src in inputs {
        for inline in [false, true] {
            let md = markdown_safe(src, inline);
            for event in parser(&md) {
                assert!(
                    !matches!(event, Event::Html(_) | Event::InlineHtml(_)),
                    "{event:?} in markdown_safe({src:?}, {inline}) = {md:?}"
                );
            }
            if inline {
                assert!(!md.contains('\n'), "{md:?}");
                let cells = table_cells(&format!("| a | {md} |\n| --- | --- |\n"));
                assert_eq!(cells.len(), 2, "{md:?}");
            }
        }
    }
}

#[test]
fn a_block_after_an_empty_quote_stays_out_of_it() {
    let md = markdown_safe(">\n    <!--", false);
    assert!(!parser(&md).any(|e| matches!(e, Event::Html(_) | Event::InlineHtml(_))), "{md:?}");
}

// Random text built from the characters that matter to CommonMark, GFM and HTML.
const MD_CHARS: &str = "[a-c1_*`<>&|#+=.!()~$\\\\\\[\\] \n\t通訊:/-]{0,40}";

proptest::proptest! {
    #[test]
    fn markdown_text_in_a_cell_round_trips_random_text(s in MD_CHARS) {
        let md = format!("| a | {} |\n| --- | --- |\n", markdown_text(&s, true));
        let cells = table_cells(&md);
        proptest::prop_assert_eq!(cells.len(), 2, "{}", md);
        proptest::prop_assert_eq!(normalize(&cells[1]), normalize(&s), "{}", md);
    }

    #[test]
    fn markdown_safe_never_yields_html_for_random_text(s in MD_CHARS) {
        for inline in [false, true] {
            let md = markdown_safe(&s, inline);
            let html = parser(&md).any(|e| matches!(e, Event::Html(_) | Event::InlineHtml(_)));
            proptest::prop_assert!(!html, "{:?} -> {:?}", s, md);
            if inline {
                proptest::prop_assert!(!md.contains('\n'));
                let cells = table_cells(&format!("| a | {md} |\n| --- | --- |\n"));
                proptest::prop_assert_eq!(cells.len(), 2, "{:?} -> {:?}", s, md);
            }
        }
    }
}

//! `verdict render`: the reports of the day26 example, their snapshots, the committed copies
//! in `out/`, the PDF's text, escaping of hostile author text, and failure modes.

use crate::util;

use util::typst::typst_ready;

use std::path::{Path, PathBuf};
use std::process::Command;

use assert_cmd::prelude::*;

const CLAIMS: &str = "claims/day26-profile-blind.yaml";
const ID: &str = "day26-profile-blind";
/// The example audits whose reports are committed in `out/`: claims file, report id and the
/// profiles rendered.
const EXAMPLES: [(&str, &str, &str); 7] = [
    (CLAIMS, ID, "full,blog,brief"),
    ("claims/h100-2gpu-no-nccl.yaml", "h100-2gpu-no-nccl", "full"),
    ("claims/day26-op-attribution.yaml", "day26-op-attribution", "full"),
    ("claims/mfu-2gpu-ab.yaml", "mfu-2gpu-ab", "full"),
    ("claims/tp-ab.yaml", "tp-ab", "full"),
    ("claims/tp-runs-ab.yaml", "tp-runs-ab", "full"),
    ("claims/kineto-ddp-overlap.yaml", "kineto-ddp-overlap", "full"),
];

/// The `SOURCE_DATE_EPOCH` of the committed examples (2026-09-14 UTC), so their render date
/// and PDF timestamps do not change from day to day.
const EXAMPLE_EPOCH: &str = "1789344000";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn verdict() -> Command {
    let mut c = Command::cargo_bin("verdict").unwrap();
    c.current_dir(root());
    c
}

fn render_to(dir: &Path, formats: &str) -> std::process::Output {
    verdict()
        .args(["render", CLAIMS, "--out"])
        .arg(dir)
        .args(["--format", formats])
        .output()
        .unwrap()
}

/// The day26 audit, as built by one fixed build of the tool: the snapshots hold its
/// reports, not the commit of whichever build runs the test.
fn audit() -> verdict::audit::Audit {
    let set = verdict::claims::load(Path::new(CLAIMS)).unwrap();
    let mut a = verdict::audit::run(set, &mut |_, _| {});
    a.tool.build = Some("0123456789abcdef0123456789abcdef01234567".into());
    a
}

fn options() -> verdict::render::report::Options {
    util::snapshot_render_options()
}

#[test]
fn markdown_and_typst_snapshots() {
    let a = audit();
    let renderers = verdict::render::report::Renderers::new(&options()).unwrap();
    for lang in ["zh-TW", "en"] {
        let r = verdict::render::report::render_lang(
            &a,
            lang,
            verdict::render::report::Profile::Full,
            &options(),
            &renderers,
        )
        .unwrap();
        insta::assert_snapshot!(format!("day26.{lang}.md"), r.md);
        insta::assert_snapshot!(format!("day26.{lang}.typ"), r.typ);
    }
}

#[test]
fn markdown_holds_the_article_s_table() {
    let dir = tempfile::tempdir().unwrap();
    let out = render_to(dir.path(), "md");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let zh = std::fs::read_to_string(dir.path().join(format!("{ID}.zh-TW.md"))).unwrap();
    let en = std::fs::read_to_string(dir.path().join(format!("{ID}.en.md"))).unwrap();
    // The article's numbers and verdict words, in the order of its table.
    for needle in [
        "1,094.74 / 6,155.75 ms = 17.8%",
        "709.19 / (1,094.74 + 709.19) ms = 39.3%",
        "4,260.44 + 1,094.74 + 709.19 + 91.38 = 6,155.75 ms",
        "140",
        "28.3%",
        "30 / (100 + 30)",
        "23.1%",
        "1.216×",
    ] {
        assert!(zh.contains(needle) && en.contains(needle), "missing {needle}");
    }
    let row_verdicts = |md: &str| -> Vec<String> {
        let start = md.find("|---|---|---|\n").unwrap() + "|---|---|---|\n".len();
        md[start..]
            .lines()
            .take(5)
            .map(|l| {
                l.trim_end_matches(" |").rsplit("| ").next().unwrap().trim_matches('*').to_string()
            })
            .collect()
    };
    assert_eq!(row_verdicts(&zh), ["支持", "部分支持", "無法驗證", "無法驗證", "部分支持"]);
    assert_eq!(
        row_verdicts(&en),
        ["supported", "partially supported", "unverifiable", "unverifiable", "partially supported"]
    );
    // Every table row of the verdict table has exactly three cells once parsed.
    let parser = pulldown_cmark::Parser::new_ext(&en, pulldown_cmark::Options::ENABLE_TABLES);
    let mut in_row = false;
    let mut cells = 0;
    let mut rows = Vec::new();
    for ev in parser {
        match ev {
            pulldown_cmark::Event::Start(pulldown_cmark::Tag::TableRow) => {
                in_row = true;
                cells = 0;
            }
            pulldown_cmark::Event::Start(pulldown_cmark::Tag::TableCell) if in_row => cells += 1,
            pulldown_cmark::Event::End(pulldown_cmark::TagEnd::TableRow) => {
                rows.push(cells);
                in_row = false;
            }
            _ => {}
        }
    }
    assert!(rows.contains(&3));
    // The ledger and each language's charts are written beside the reports.
    assert!(dir.path().join(format!("{ID}.evidence.json")).is_file());
    for lang in ["zh-TW", "en"] {
        for kind in ["overlap", "nccl-skew", "kernels"] {
            let f = format!("{ID}.{lang}.{kind}.svg");
            assert!(dir.path().join(&f).is_file(), "{f} missing");
        }
    }
    let zh_chart = std::fs::read_to_string(dir.path().join(format!("{ID}.zh-TW.overlap.svg")));
    assert!(zh_chart.unwrap().contains(">只有運算</text>"), "the zh-TW chart is not in Chinese");
    let ledger: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.path().join(format!("{ID}.evidence.json"))).unwrap(),
    )
    .unwrap();
    assert_eq!(ledger["results"][0]["verdict"], "supported");
}

/// The committed content of `out/NAME`: as git's index holds it in a checkout (so a render
/// into out/ with today's date, as the README's first command does, does not count as drift),
/// else as the file on disk.
fn committed_file(name: &str) -> Option<Vec<u8>> {
    let git = Command::new("git")
        .current_dir(root())
        .args(["show", &format!(":out/{name}")])
        .output()
        .ok()
        .filter(|o| o.status.success() && in_git_checkout());
    match git {
        Some(o) => Some(o.stdout),
        None if in_git_checkout() => None,
        None => std::fs::read(root().join("out").join(name)).ok(),
    }
}

/// The file names of out/, as git's index holds them in a checkout, else on disk.
fn committed_names() -> Vec<String> {
    if in_git_checkout() {
        let o = Command::new("git")
            .current_dir(root())
            .args(["ls-files", "--", "out"])
            .output()
            .unwrap();
        return String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter_map(|l| l.strip_prefix("out/").map(str::to_string))
            .collect();
    }
    std::fs::read_dir(root().join("out"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect()
}

fn in_git_checkout() -> bool {
    Command::new("git")
        .current_dir(root())
        .args(["rev-parse", "--is-inside-work-tree"])
        .output()
        .is_ok_and(|o| o.status.success() && o.stdout.starts_with(b"true"))
}

#[test]
fn committed_examples_are_current() {
    let pdf = typst_ready("the PDF and PNG checks");
    // The trace-set example reads unlicensed traces from ../shared, never committed: it is
    // compared where they are.
    let shared: &[(&str, &str, &str)] = if util::shared_traces().is_some() {
        &[
            ("claims/dsl-fs24-ring.yaml", "dsl-fs24-ring", "full"),
            ("claims/dsl-fs24-tree.yaml", "dsl-fs24-tree", "full"),
        ]
    } else {
        util::skip_no_shared("committed_examples_are_current (dsl-fs24-ring)");
        &[]
    };
    for &(claims, id, profiles) in EXAMPLES.iter().chain(shared) {
        let dir = tempfile::tempdir().unwrap();
        // The README's command: default formats, the PDF only where typst can make it.
        let out = verdict()
            .args(["render", claims, "--profile", profiles, "--out"])
            .arg(dir.path())
            .env("SOURCE_DATE_EPOCH", EXAMPLE_EPOCH)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let mut rendered = Vec::new();
        for entry in std::fs::read_dir(dir.path()).unwrap() {
            let p = entry.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            let old =
                committed_file(&name).unwrap_or_else(|| panic!("out/{name} is not committed"));
            let new = std::fs::read(&p).unwrap();
            // Without typst the manifest lacks the PDFs and PNGs: the rest must be the same.
            // The build commit is the renderer's, not the output's: blanked on both sides.
            let same = if name == format!("{id}.manifest.json") {
                manifest_without_build(&old, pdf) == manifest_without_build(&new, pdf)
            } else if !pdf && name.ends_with(".blog.md") {
                // Without typst no PNG is written, so the blog names each chart's SVG in its
                // caption instead of linking the PNG (`tests/suite/blog.rs` checks both forms).
                eprintln!("skip comparing out/{name}: its chart links need the PNGs typst makes");
                true
            } else {
                match (util::without_build(&name, &old), util::without_build(&name, &new)) {
                    (Some(a), Some(b)) => a == b,
                    _ => {
                        eprintln!("skip comparing out/{name}: pdftotext is missing");
                        true
                    }
                }
            };
            assert!(
                same,
                "out/{name} drifted: run `SOURCE_DATE_EPOCH={EXAMPLE_EPOCH} cargo run --release -- render {claims} --profile {profiles}`"
            );
            rendered.push(name);
        }
        // The committed manifest names the committed files as they are.
        let manifest: serde_json::Value =
            serde_json::from_slice(&committed_file(&format!("{id}.manifest.json")).unwrap())
                .unwrap();
        for f in manifest["files"].as_array().unwrap() {
            let name = f["name"].as_str().unwrap();
            let bytes = committed_file(name).unwrap();
            assert_eq!(f["bytes"], bytes.len(), "out/{name}");
            assert_eq!(
                f["sha256"],
                util::sha256_hex(&bytes),
                "out/{name} differs from its manifest"
            );
        }
        // Every committed file was rendered again (the PDFs only where typst is here).
        let mut expected: Vec<String> = committed_names()
            .into_iter()
            .filter(|n| {
                n.starts_with(&format!("{id}."))
                    && (pdf || !(n.ends_with(".pdf") || n.ends_with(".png")))
            })
            .collect();
        expected.sort();
        rendered.sort();
        assert_eq!(rendered, expected);
        assert!(rendered.iter().any(|n| n.ends_with(".md")), "no Markdown compared");
    }
    if !pdf {
        eprintln!(
            "skipping: the committed PDFs and PNGs were not compared (no typst with the CJK font)"
        );
    }
}

/// A manifest without its PDF and PNG entries, which only a machine with typst renders.
fn manifest_without_typst(bytes: &[u8]) -> serde_json::Value {
    let mut m: serde_json::Value = serde_json::from_slice(bytes).unwrap();
    m["files"].as_array_mut().unwrap().retain(|f| {
        !f["name"].as_str().is_some_and(|n| n.ends_with(".pdf") || n.ends_with(".png"))
    });
    m
}

/// A manifest without the build commit, and without the sizes and hashes of the files that
/// carry it (each of those is compared on its own, blanked): only the PNG charts keep theirs.
/// Without typst, the PDFs and PNGs are left out as well.
fn manifest_without_build(bytes: &[u8], pdf: bool) -> serde_json::Value {
    let mut m =
        if pdf { serde_json::from_slice(bytes).unwrap() } else { manifest_without_typst(bytes) };
    if let Some(t) = m["tool"].as_object_mut() {
        t.remove("build");
    }
    for f in m["files"].as_array_mut().unwrap() {
        if !f["name"].as_str().is_some_and(|n| n.ends_with(".png")) {
            let f = f.as_object_mut().unwrap();
            f.remove("bytes");
            f.remove("sha256");
        }
    }
    m
}

#[test]
fn pdf_holds_chinese_verdicts_and_numbers() {
    if !typst_ready("the PDF and PNG checks")
        || Command::new("pdftotext").arg("-v").output().is_err()
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = render_to(dir.path(), "pdf");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for lang in ["zh-TW", "en"] {
        let pdf = dir.path().join(format!("{ID}.{lang}.pdf"));
        assert!(std::fs::read(&pdf).unwrap().starts_with(b"%PDF"));
        let text = Command::new("pdftotext").args(["-layout"]).arg(&pdf).arg("-").output().unwrap();
        let text = String::from_utf8_lossy(&text.stdout).to_string();
        for n in ["17.8%", "1,094.74", "6,155.75", "39.3%", "28.3%", "23.1%", "1.216×"] {
            assert!(text.contains(n), "{lang} PDF lacks {n}");
        }
        if lang == "zh-TW" {
            for w in ["支持", "部分支持", "無法驗證", "觀察", "因果主張", "建議動作"]
            {
                assert!(text.contains(w), "zh-TW PDF lacks {w}");
            }
        }
        let fonts = Command::new("pdffonts").arg(&pdf).output().unwrap();
        assert!(
            String::from_utf8_lossy(&fonts.stdout).contains("NotoSansCJK"),
            "the CJK font is not embedded"
        );
    }
    // Same inputs, same bytes.
    let again = tempfile::tempdir().unwrap();
    assert!(render_to(again.path(), "pdf").status.success());
    let a = std::fs::read(dir.path().join(format!("{ID}.en.pdf"))).unwrap();
    let b = std::fs::read(again.path().join(format!("{ID}.en.pdf"))).unwrap();
    assert!(a == b, "two renders of the same inputs differ");
}

/// Page 1 of each PDF is the decision brief: the answer, the bound, the decision, the open
/// items, the sources and the audit conditions, all before the first page break.
#[test]
fn pdf_page_one_is_the_decision_brief() {
    if !typst_ready("the PDF and PNG checks")
        || Command::new("pdftotext").arg("-v").output().is_err()
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = render_to(dir.path(), "pdf");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let wants = [
        (
            "en",
            [
                "Answer",
                "About a sixth, not a majority",
                "The ceiling",
                "1.216×",
                "Decision requested",
                "Approve, cheapest first",
                "budget at most: 21 runs, 82 GPU-hours",
                "1. read a config (minutes): decides whether recompute is a candidate at all",
                "profile-blind answer",
                "one model, one prompt, one run",
                "reviewed by",
                "derived by verdict fixtures/day26/generate.rs",
            ],
        ),
        (
            "zh-TW",
            [
                "結論",
                "約六分之一，不是多數",
                "可爭取的上限",
                "1.216×",
                "需要拍板的事",
                "請依成本由低到高核准",
                // The page breaks the line inside 預算上限: its figures are checked.
                "21 次執行、82 GPU 小時",
                "讀設定檔（幾分鐘）：用來決定 recompute 是否值得當成候選原因",
                "profile-blind 回答",
                "單一模型、單一 prompt、單次執行",
                "審查者",
                "由 verdict fixtures/day26/generate.rs",
            ],
        ),
    ];
    for (lang, want) in wants {
        let pdf = dir.path().join(format!("{ID}.{lang}.pdf"));
        let out = Command::new("pdftotext")
            .args(["-f", "1", "-l", "1"])
            .arg(&pdf)
            .arg("-")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        // pdftotext breaks lines where the page does: compare without them.
        let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
        for w in want {
            let w: String = w.split_whitespace().collect::<Vec<_>>().join(" ");
            assert!(flat.contains(&w), "{lang} page 1 lacks `{w}`:\n{text}");
        }
    }
}

/// A claims file whose author texts try to break out of their place.
fn hostile(dir: &Path) -> PathBuf {
    let trace = root().join("fixtures/day26/megatron.sqlite");
    let yaml = format!(
        r##"report:
  id: hostile
  languages: [en]
  title: {{ en: "Title with | pipe and #set page(width: 1cm) and <script>alert(1)</script>" }}
  question: {{ en: "]#panic(\"x\")[ *bold* $x$ @ref <lbl>" }}
traces:
  A: {{ path: "{}" }}
scopes:
  dev4: {{ trace: A, window: "39.964:46.123", devices: "4", semantics: contain }}
claims:
  - id: c1
    statement: {{ en: "a | b || c <b>html</b> `code` #import \"x\"" }}
    parts:
      - id: share
        kind: observation
        text: {{ en: "line one\n\nline two | with pipe" }}
        measure: {{ analysis: overlap, scope: dev4, value: "nccl_only_ns / total_ns", unit: "%" }}
        condition: {{ at_most: "50%" }}
"##,
        trace.display()
    );
    let p = dir.join("hostile.yaml");
    std::fs::write(&p, yaml).unwrap();
    p
}

#[test]
fn author_text_cannot_break_tables_or_inject_code() {
    let dir = tempfile::tempdir().unwrap();
    let claims = hostile(dir.path());
    let out_dir = dir.path().join("out");
    let pdf = typst_ready("the PDF and PNG checks");
    let out = verdict()
        .arg("render")
        .arg(&claims)
        .arg("--out")
        .arg(&out_dir)
        .args(["--format", if pdf { "md,pdf" } else { "md" }])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let md = std::fs::read_to_string(out_dir.join("hostile.en.md")).unwrap();
    assert!(!md.contains("<script>") && !md.contains("<b>"), "raw HTML passed through");
    // The verdict table still has three cells in its row.
    let table_line = md.lines().find(|l| l.starts_with("| a ")).unwrap();
    let header = "| a | b | c |\n|---|---|---|\n";
    let doc = format!("{header}{table_line}\n");
    let cells = pulldown_cmark::Parser::new_ext(&doc, pulldown_cmark::Options::ENABLE_TABLES)
        .filter(|e| matches!(e, pulldown_cmark::Event::Start(pulldown_cmark::Tag::TableCell)))
        .count();
    assert_eq!(
        cells, 6,
        "the hostile row must parse as 3 cells under a 3-cell header: {table_line}"
    );
    if pdf {
        let text = Command::new("pdftotext")
            .arg(out_dir.join("hostile.en.pdf"))
            .arg("-")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&text.stdout).to_string();
        assert!(text.contains("#set page(width: 1cm)"), "the Typst code must show as text");
        assert!(text.contains("<script>alert(1)</script>"), "the HTML must show as text");
    }
}

#[test]
fn a_template_error_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let templates = dir.path().join("tpl");
    std::fs::create_dir_all(&templates).unwrap();
    std::fs::write(templates.join("report.md"), "{{ nope(").unwrap();
    let out_dir = dir.path().join("out");
    let out = verdict()
        .args(["render", CLAIMS, "--format", "md", "--templates"])
        .arg(&templates)
        .arg("--out")
        .arg(&out_dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("report.md"));
    assert!(
        !out_dir.exists() || std::fs::read_dir(&out_dir).unwrap().next().is_none(),
        "files were written"
    );
}

/// `render CLAIMS --format md --lang en` with the templates of `tpl`, into `out_dir`.
fn render_en_md_with(tpl: &std::path::Path, out_dir: &std::path::Path) -> std::process::Output {
    verdict()
        .args(["render", CLAIMS, "--format", "md", "--lang", "en", "--templates"])
        .arg(tpl)
        .arg("--out")
        .arg(out_dir)
        .output()
        .unwrap()
}

/// A template folder whose strings lack a key the report uses: the render fails before any
/// file is written, names the key and the language, and says how to get a complete copy.
#[test]
fn a_string_missing_from_a_template_folder_is_named_with_its_hint() {
    let dir = tempfile::tempdir().unwrap();
    let tpl = dir.path().join("tpl");
    assert!(verdict().args(["templates", "eject"]).arg(&tpl).status().unwrap().success());
    let en = std::fs::read_to_string(tpl.join("i18n/en.toml")).unwrap();
    let kept: String = en
        .lines()
        .filter(|l| !l.starts_with("\"ui.says_auditor\""))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_ne!(kept, en, "the built-in strings have `ui.says_auditor`");
    std::fs::write(tpl.join("i18n/en.toml"), kept).unwrap();
    let out_dir = dir.path().join("out");
    let out = render_en_md_with(&tpl, &out_dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("missing i18n key `ui.says_auditor` for `en`"), "{err}");
    assert!(err.contains("verdict templates eject DIR"), "{err}");
    assert!(
        !out_dir.exists() || std::fs::read_dir(&out_dir).unwrap().next().is_none(),
        "files were written"
    );
}

#[test]
fn templates_can_be_ejected_and_override_the_built_ins() {
    let dir = tempfile::tempdir().unwrap();
    let tpl = dir.path().join("tpl");
    assert!(verdict().args(["templates", "eject"]).arg(&tpl).status().unwrap().success());
    for f in ["report.md", "report.typ", "partials/claim.md", "i18n/en.toml", "i18n/zh-TW.toml"] {
        assert!(tpl.join(f).is_file(), "{f} not ejected");
    }
    // Ejecting again refuses to overwrite.
    assert_eq!(
        verdict().args(["templates", "eject"]).arg(&tpl).output().unwrap().status.code(),
        Some(2)
    );
    let md = std::fs::read_to_string(tpl.join("report.md")).unwrap();
    std::fs::write(tpl.join("report.md"), format!("CUSTOM HEADER\n{md}")).unwrap();
    let out_dir = dir.path().join("out");
    let out = render_en_md_with(&tpl, &out_dir);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        std::fs::read_to_string(out_dir.join(format!("{ID}.en.md")))
            .unwrap()
            .starts_with("CUSTOM HEADER")
    );
    assert!(!out_dir.join(format!("{ID}.zh-TW.md")).exists(), "--lang en must write English only");
}

#[test]
fn without_typst_the_default_render_writes_the_rest_and_warns_once() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-typst");
    let out = verdict()
        .env("TYPST_BIN", &missing)
        .args(["render", CLAIMS, "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    // One warning, naming what the PDF needs and the exact install commands.
    assert_eq!(err.matches("warning:").count(), 1, "{err}");
    assert!(
        err.contains(
            "no-such-typst` not found, so neither the PDF nor the PNG charts were written"
        ),
        "{err}"
    );
    assert!(err.contains("cargo install typst-cli --locked --version 0.15.1"), "{err}");
    assert!(err.contains("apt-get install fonts-noto-cjk"), "{err}");
    for lang in ["zh-TW", "en"] {
        assert!(dir.path().join(format!("{ID}.{lang}.md")).is_file());
        assert!(dir.path().join(format!("{ID}.{lang}.typ")).is_file());
        assert!(!dir.path().join(format!("{ID}.{lang}.pdf")).exists());
    }
    assert!(dir.path().join(format!("{ID}.evidence.json")).is_file());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains(".pdf") && !stdout.contains(".png"), "{stdout}");
    assert!(files_ending(dir.path(), ".png").is_empty(), "a PNG was written without typst");
    // The Markdown links the SVGs written beside it.
    for lang in ["zh-TW", "en"] {
        let md = std::fs::read_to_string(dir.path().join(format!("{ID}.{lang}.md"))).unwrap();
        let want: Vec<String> = KINDS.iter().map(|k| format!("{ID}.{lang}.{k}.svg")).collect();
        assert_eq!(image_links(&md), want);
        for f in &want {
            assert!(dir.path().join(f).is_file(), "{f} is linked but not written");
        }
    }
}

/// The charts of the day26 report, in the order the Markdown shows them.
/// The charts, in the order the report shows them: beside the first claim that reads each
/// analysis (exposed-comm: overlap, flash-attention: kernels, rank-wait: nccl-skew).
const KINDS: [&str; 3] = ["overlap", "kernels", "nccl-skew"];

/// The destinations of every image of a Markdown document, in order.
fn image_links(md: &str) -> Vec<String> {
    pulldown_cmark::Parser::new_ext(md, pulldown_cmark::Options::ENABLE_TABLES)
        .filter_map(|e| match e {
            pulldown_cmark::Event::Start(pulldown_cmark::Tag::Image { dest_url, .. }) => {
                Some(dest_url.to_string())
            }
            _ => None,
        })
        .collect()
}

/// The names of the files of a folder that end with `suffix`, sorted.
fn files_ending(dir: &Path, suffix: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with(suffix))
        .collect();
    v.sort();
    v
}

/// Width and height of a PNG, read from its IHDR chunk (the first, right after the signature).
fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG signature");
    assert_eq!(&bytes[12..16], b"IHDR", "the first chunk is not IHDR");
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    (be(&bytes[16..20]), be(&bytes[20..24]))
}

/// The `height` attribute of an SVG's root element.
fn svg_height(svg: &str) -> f64 {
    let root = &svg[svg.find("<svg").unwrap()..];
    let root = &root[..root.find('>').unwrap()];
    let h = &root[root.find(" height=\"").unwrap() + 9..];
    h[..h.find('"').unwrap()].parse().unwrap()
}

#[test]
fn png_charts_are_1280_pixels_wide_and_reproducible() {
    if !typst_ready("the PDF and PNG checks") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = render_to(dir.path(), "md,png");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let again = tempfile::tempdir().unwrap();
    assert!(render_to(again.path(), "md,png").status.success());
    let mut expected = Vec::new();
    for lang in ["zh-TW", "en"] {
        for kind in KINDS {
            expected.push(format!("{ID}.{lang}.{kind}.png"));
        }
    }
    expected.sort();
    assert_eq!(files_ending(dir.path(), ".png"), expected);
    // Neither the PDF nor its Typst source was asked for.
    assert!(
        files_ending(dir.path(), ".pdf").is_empty() && files_ending(dir.path(), ".typ").is_empty()
    );
    for png in &expected {
        let bytes = std::fs::read(dir.path().join(png)).unwrap();
        let (w, h) = png_size(&bytes);
        // 640 pt at 144 pixels per inch; the height keeps the SVG's proportions.
        assert_eq!(w, 1280, "{png}");
        let svg = std::fs::read_to_string(dir.path().join(png.replace(".png", ".svg"))).unwrap();
        let want_h = svg_height(&svg) * 1280.0 / 640.0;
        assert!((f64::from(h) - want_h).abs() <= 1.0, "{png}: {h} px high, not {want_h}");
        assert!(bytes == std::fs::read(again.path().join(png)).unwrap(), "{png} differs");
    }
    // Without --image-base the Markdown still links the SVGs, whatever this machine has.
    let md = std::fs::read_to_string(dir.path().join(format!("{ID}.en.md"))).unwrap();
    let want: Vec<String> = KINDS.iter().map(|k| format!("{ID}.en.{k}.svg")).collect();
    assert_eq!(image_links(&md), want);
}

fn render_with_base(dir: &Path, base: &str, formats: &str, typst: bool) -> std::process::Output {
    let mut c = verdict();
    if !typst {
        c.env("TYPST_BIN", dir.join("no-such-typst"));
    }
    c.args(["render", CLAIMS, "--image-base", base, "--format", formats, "--out"])
        .arg(dir)
        .output()
        .unwrap()
}

#[test]
fn image_base_makes_the_markdown_links_absolute() {
    // Without typst: the SVGs, under the base, joined with one `/` whatever the base ends in.
    for base in ["https://example.org/posts/day_26", "https://example.org/posts/day_26/"] {
        let dir = tempfile::tempdir().unwrap();
        let out = render_with_base(dir.path(), base, "md", false);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        for lang in ["zh-TW", "en"] {
            let md = std::fs::read_to_string(dir.path().join(format!("{ID}.{lang}.md"))).unwrap();
            let want: Vec<String> = KINDS
                .iter()
                .map(|k| format!("https://example.org/posts/day_26/{ID}.{lang}.{k}.svg"))
                .collect();
            assert_eq!(image_links(&md), want, "{base}");
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let out = render_with_base(dir.path(), "/", "md", false);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let md = std::fs::read_to_string(dir.path().join(format!("{ID}.en.md"))).unwrap();
    assert_eq!(image_links(&md)[0], format!("/{ID}.en.overlap.svg"));
    if !typst_ready("the PDF and PNG checks") {
        return;
    }
    // With the PNGs written, the links go to them; the PDF's source keeps the local SVGs.
    let dir = tempfile::tempdir().unwrap();
    let out = render_with_base(dir.path(), "/posts/day26//", "md,pdf,png", true);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let md = std::fs::read_to_string(dir.path().join(format!("{ID}.en.md"))).unwrap();
    let want: Vec<String> = KINDS.iter().map(|k| format!("/posts/day26/{ID}.en.{k}.png")).collect();
    assert_eq!(image_links(&md), want);
    let typ = std::fs::read_to_string(dir.path().join(format!("{ID}.en.typ"))).unwrap();
    for k in KINDS {
        assert!(typ.contains(&format!("image(\"{ID}.en.{k}.svg\"")), "{k} not local in the Typst");
    }
    assert!(!typ.contains("/posts/day26"));
}

#[test]
fn image_base_joins_with_exactly_one_slash_and_survives_markdown_escaping() {
    use verdict::render::report::ImageBase;
    let join = |base: &str| ImageBase::parse(base).unwrap().join("a.png");
    for base in ["https://example.org/p", "https://example.org/p/", "https://example.org/p///"] {
        assert_eq!(join(base), "https://example.org/p/a.png", "{base}");
    }
    assert_eq!(join("HTTP://Example.org"), "HTTP://Example.org/a.png");
    assert_eq!(join("/"), "/a.png");
    assert!(ImageBase::parse("http:///p/").is_err(), "a URL without a host");
    // Characters the Markdown escaping touches still reach the link as they are.
    let dir = tempfile::tempdir().unwrap();
    let base = "https://example.org/a&b/~x_*y$/";
    let out = render_with_base(dir.path(), base, "md", false);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let md = std::fs::read_to_string(dir.path().join(format!("{ID}.en.md"))).unwrap();
    assert_eq!(image_links(&md)[0], format!("{base}{ID}.en.overlap.svg"));
}

#[test]
fn a_bad_image_base_is_an_error_that_writes_nothing() {
    for base in ["ftp://example.org/", "https://", "images/", "https://example.org/a b/", "/p?x=1"]
    {
        let dir = tempfile::tempdir().unwrap();
        let out_dir = dir.path().join("out");
        let out = render_with_base(&out_dir, base, "md", false);
        assert_eq!(out.status.code(), Some(2), "{base}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&format!("`{base}` is not an image base")), "{err}");
        assert!(err.contains("https://example.org/posts/day26/"), "{err}");
        assert!(!out_dir.exists(), "{base}: an error must leave no file behind");
    }
}

#[test]
fn without_typst_an_explicit_pdf_or_png_is_an_error_that_writes_nothing() {
    for (formats, what) in
        [("md,pdf", "no PDF was written"), ("md,png", "no PNG chart was written")]
    {
        let dir = tempfile::tempdir().unwrap();
        let out_dir = dir.path().join("out");
        let out = verdict()
            .env("TYPST_BIN", dir.path().join("no-such-typst"))
            .args(["render", CLAIMS, "--format", formats, "--out"])
            .arg(&out_dir)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{formats}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&format!("not found, so {what}")), "{formats}: {err}");
        assert!(err.contains("cargo install typst-cli --locked"), "{formats}: {err}");
        assert!(!out_dir.exists(), "{formats}: an error must leave no file behind");
    }
}

#[test]
fn outputs_get_the_mode_the_umask_leaves() {
    let dir = tempfile::tempdir().unwrap();
    let bin = assert_cmd::cargo::cargo_bin("verdict");
    let status = Command::new("sh")
        .current_dir(root())
        .arg("-c")
        .arg("umask 027; exec \"$0\" render \"$1\" --out \"$2\"")
        .arg(&bin)
        .arg(CLAIMS)
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    let mut n = 0;
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let p = entry.unwrap().path();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o640, "{} has mode {mode:o}", p.display());
        }
        n += 1;
    }
    assert!(n >= 6, "only {n} files");
}

/// A stand-in typst that answers `--version` and lists `fonts`.
fn fake_typst(dir: &Path, version: &str, fonts: &str) -> PathBuf {
    let fake = dir.join("typst");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\nif [ \"$1\" = --version ]; then echo '{version}'; else printf '{fonts}\\n'; fi\n"
        ),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    fake
}

#[test]
fn doctor_names_what_the_pdf_lacks_with_its_install_command() {
    let dir = tempfile::tempdir().unwrap();
    let doctor = |bin: &Path| verdict().env("TYPST_BIN", bin).arg("doctor").output().unwrap();

    let out = doctor(&dir.path().join("no-such-typst"));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("typst     missing")
            && text.contains("cargo install typst-cli --locked --version 0.15.1"),
        "{text}"
    );
    assert!(text.contains("apt-get install fonts-noto-cjk"), "{text}");

    let no_font = tempfile::tempdir().unwrap();
    let out = doctor(&fake_typst(no_font.path(), "typst 0.15.1 (abc)", "DejaVu Sans"));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("typst     ok: typst 0.15.1 (abc)"), "{text}");
    assert!(text.contains("missing `Noto Sans CJK TC` (typst sees no CJK font)"), "{text}");

    let old = tempfile::tempdir().unwrap();
    let out =
        doctor(&fake_typst(old.path(), "typst 0.11.0", "Noto Sans CJK TC\\nNoto Sans CJK JP"));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(text.contains("found typst 0.11.0") && text.contains("written for 0.15.x"), "{text}");
    assert!(text.contains("fonts     ok: Noto Sans CJK TC, Noto Sans CJK JP"), "{text}");
    assert_eq!(out.status.code(), Some(0), "{text}");
}

#[test]
fn a_missing_cjk_font_fails_before_typst_draws_tofu() {
    let dir = tempfile::tempdir().unwrap();
    // A typst that answers --version but lists no CJK font.
    let fake = fake_typst(dir.path(), "typst 0.15.1", "DejaVu Sans");
    let out = verdict()
        .env("TYPST_BIN", &fake)
        .args(["render", CLAIMS, "--lang", "en", "--format", "pdf", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Noto Sans CJK TC") && err.contains("fonts-noto-cjk"), "{err}");
    assert!(!dir.path().join(format!("{ID}.en.pdf")).exists());
}

#[test]
fn an_unknown_language_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = verdict()
        .args(["render", CLAIMS, "--lang", "fr", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("`fr`"));
}

/// The commands of a PDF's provenance as `pdftotext` gives them: each starts at a line
/// `verdict ...` and goes on while a line ends in a backslash.
fn pdf_commands(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(l) = lines.next() {
        // A command at the top of a page follows pdftotext's form feed.
        let l = l.trim_start_matches('\u{c}');
        if !l.starts_with("verdict ") {
            continue;
        }
        let mut cmd = l.to_string();
        while cmd.ends_with('\\') {
            match lines.next() {
                Some(next) => {
                    cmd.push('\n');
                    cmd.push_str(next);
                }
                None => break,
            }
        }
        out.push(cmd);
    }
    out
}

#[test]
fn commands_copied_from_the_pdf_run_as_they_are_on_long_paths_and_regexes() {
    if !typst_ready("the PDF and PNG checks")
        || Command::new("pdftotext").arg("-v").output().is_err()
    {
        return;
    }
    // A trace deep in folders with a space in their names, so its path is longer than a line.
    let dir = tempfile::tempdir().unwrap();
    let deep = dir.path().join(
        "an audit folder of the H100 capture/with several levels/of nesting inside it/2026-12-02",
    );
    std::fs::create_dir_all(&deep).unwrap();
    let trace = deep.join("h100_2gpu_1s.sqlite");
    std::fs::copy(root().join("fixtures/nsys-ai/h100_2gpu_1s.sqlite"), &trace).unwrap();
    let claims = deep.join("h100.yaml");
    let text = std::fs::read_to_string(root().join("claims/h100-2gpu-no-nccl.yaml")).unwrap();
    std::fs::write(
        &claims,
        text.replace("../fixtures/nsys-ai/h100_2gpu_1s.sqlite", "h100_2gpu_1s.sqlite"),
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    let out = verdict()
        .args(["render"])
        .arg(&claims)
        .args(["--lang", "en", "--format", "pdf", "--out"])
        .arg(&out_dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(trace.display().to_string().len() > 100, "the path must be longer than a line");
    let text = Command::new("pdftotext")
        .arg(out_dir.join("h100-2gpu-no-nccl.en.pdf"))
        .arg("-")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout).to_string();
    let commands = pdf_commands(&text);
    let ledger: serde_json::Value = serde_json::from_slice(
        &std::fs::read(out_dir.join("h100-2gpu-no-nccl.evidence.json")).unwrap(),
    )
    .unwrap();
    let entries: Vec<&serde_json::Value> = ledger["ledger"]
        .as_array()
        .unwrap()
        .iter()
        .chain(ledger["context"].as_array().unwrap())
        .collect();
    // Commands of the provenance section (the claim sections show them too): one per entry.
    assert!(commands.len() >= entries.len(), "{commands:#?}");
    assert!(commands.iter().any(|c| c.contains("--regex")), "{commands:#?}");
    assert!(
        commands.iter().any(|c| c.lines().count() > 1),
        "no command was continued: {commands:#?}"
    );
    let bin = assert_cmd::cargo::cargo_bin("verdict");
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for e in entries {
        let want = e["evidence"].clone();
        let argv: Vec<String> = serde_json::from_value(e["argv"].clone()).unwrap();
        let copied = commands
            .iter()
            .find(|c| {
                // The copied command the shell reads back as this entry's words.
                let words = Command::new("sh")
                    .arg("-c")
                    .arg(format!("printf '%s\\0' {}", c.trim_start_matches("verdict ")))
                    .output()
                    .unwrap();
                let words: Vec<String> = String::from_utf8_lossy(&words.stdout)
                    .split_terminator('\0')
                    .map(str::to_string)
                    .collect();
                words == argv[1..]
            })
            .unwrap_or_else(|| panic!("no copied command reads back as {argv:?}:\n{commands:#?}"));
        let run = Command::new("sh").env("PATH", &path).arg("-c").arg(copied).output().unwrap();
        assert!(run.status.success(), "{copied}\n{}", String::from_utf8_lossy(&run.stderr));
        let got: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
        assert_eq!(got["values"], want["values"], "{copied}");
        assert_eq!(got["rows"], want["rows"], "{copied}");
    }
}

#[test]
fn without_the_cjk_font_the_default_render_writes_the_rest_and_names_the_font() {
    let dir = tempfile::tempdir().unwrap();
    let fake = fake_typst(dir.path(), "typst 0.15.1", "DejaVu Sans");
    let out_dir = dir.path().join("out");
    let out = verdict()
        .env("TYPST_BIN", &fake)
        .args(["render", CLAIMS, "--lang", "en", "--out"])
        .arg(&out_dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(err.matches("warning:").count(), 1, "{err}");
    assert!(
        err.contains("Noto Sans CJK TC") && err.contains("apt-get install fonts-noto-cjk"),
        "{err}"
    );
    assert!(out_dir.join(format!("{ID}.en.md")).is_file());
    assert!(!out_dir.join(format!("{ID}.en.pdf")).exists());
}

//! `verdict render`: the reports of the day26 example, their snapshots, the committed copies
//! in `out/`, the PDF's text, escaping of hostile author text, and failure modes.

mod util;

use std::path::{Path, PathBuf};
use std::process::Command;

use assert_cmd::prelude::*;

const CLAIMS: &str = "claims/day26-profile-blind.yaml";
const ID: &str = "day26-profile-blind";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn verdict() -> Command {
    let mut c = Command::cargo_bin("verdict").unwrap();
    c.current_dir(root());
    c
}

/// Whether typst with the CJK font can be used; CI sets VERDICT_REQUIRE_TYPST so a missing
/// typst fails the run instead of skipping.
fn typst_ready() -> bool {
    let ok = Command::new("typst").arg("fonts").output().is_ok_and(|o| {
        o.status.success()
            && String::from_utf8_lossy(&o.stdout).lines().any(|l| l.trim() == "Noto Sans CJK TC")
    });
    if !ok && std::env::var_os("VERDICT_REQUIRE_TYPST").is_some() {
        panic!("VERDICT_REQUIRE_TYPST is set but typst with Noto Sans CJK TC is not available");
    }
    if !ok {
        eprintln!("skipping: typst with Noto Sans CJK TC is not installed");
    }
    ok
}

fn render_to(dir: &Path, formats: &str) -> std::process::Output {
    verdict()
        .args(["render", CLAIMS, "--out"])
        .arg(dir)
        .args(["--format", formats])
        .output()
        .unwrap()
}

fn audit() -> verdict::audit::Audit {
    let set = verdict::claims::load(Path::new(CLAIMS)).unwrap();
    verdict::audit::run(set, &mut |_, _| {})
}

fn options() -> verdict::render::report::Options {
    verdict::render::report::Options {
        langs: vec!["zh-TW".into(), "en".into()],
        markdown: true,
        pdf: true,
        out: PathBuf::from("out"),
        templates: None,
        timestamp: 0,
    }
}

#[test]
fn markdown_and_typst_snapshots() {
    let a = audit();
    let renderers = verdict::render::report::Renderers::new(&options()).unwrap();
    for lang in ["zh-TW", "en"] {
        let r = verdict::render::report::render_lang(&a, lang, &options(), &renderers).unwrap();
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
        "1,094.74 / 6,155.75 = 17.8%",
        "709.19 / (1,094.74 + 709.19) = 39.3%",
        "4,260.44 + 1,094.74 + 709.19 + 91.38 = 6,155.75 ms",
        "140",
        "28.3%",
        "30 / (100 + 30)",
        "23.1%",
        "1.216x",
    ] {
        assert!(zh.contains(needle) && en.contains(needle), "missing {needle}");
    }
    let row_verdicts = |md: &str| -> Vec<String> {
        let start = md.find("| **exposed-comm**").unwrap();
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

#[test]
fn committed_examples_are_current() {
    let dir = tempfile::tempdir().unwrap();
    let pdf = typst_ready();
    let out = render_to(dir.path(), if pdf { "md,pdf" } else { "md" });
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let committed = root().join("out");
    let mut checked = 0;
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let p = entry.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        let old = std::fs::read(committed.join(&name))
            .unwrap_or_else(|_| panic!("out/{name} is not committed"));
        assert!(
            old == std::fs::read(&p).unwrap(),
            "out/{name} drifted: run `cargo run --release -- render {CLAIMS}`"
        );
        checked += 1;
    }
    assert!(checked >= 7, "only {checked} files compared");
}

#[test]
fn pdf_holds_chinese_verdicts_and_numbers() {
    if !typst_ready() || Command::new("pdftotext").arg("-v").output().is_err() {
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
        for n in ["17.8%", "1,094.74", "6,155.75", "39.3%", "28.3%", "23.1%", "1.216x"] {
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
    let pdf = typst_ready();
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
    let table_line = md.lines().find(|l| l.starts_with("| **c1**")).unwrap();
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
    let out = verdict()
        .args(["render", CLAIMS, "--format", "md", "--lang", "en", "--templates"])
        .arg(&tpl)
        .arg("--out")
        .arg(&out_dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        std::fs::read_to_string(out_dir.join(format!("{ID}.en.md")))
            .unwrap()
            .starts_with("CUSTOM HEADER")
    );
    assert!(!out_dir.join(format!("{ID}.zh-TW.md")).exists(), "--lang en must write English only");
}

#[test]
fn without_typst_the_markdown_lands_and_the_pdf_fails_with_the_install_command() {
    let dir = tempfile::tempdir().unwrap();
    let out = verdict()
        .env("TYPST_BIN", dir.path().join("no-such-typst"))
        .args(["render", CLAIMS, "--lang", "en", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cargo install typst-cli --locked"), "{err}");
    assert!(dir.path().join(format!("{ID}.en.md")).is_file());
    assert!(!dir.path().join(format!("{ID}.en.pdf")).exists());
}

#[test]
fn a_missing_cjk_font_fails_before_typst_draws_tofu() {
    let dir = tempfile::tempdir().unwrap();
    // A typst that answers --version but lists no CJK font.
    let fake = dir.path().join("typst");
    std::fs::write(&fake, "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'typst 0.15.1'; else echo 'DejaVu Sans'; fi\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
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

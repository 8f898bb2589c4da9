//! Provenance that reruns anywhere and a page 1 that is one page: the tool's build commit,
//! commands that paste back out of a PDF with its indentation, traces that say where to get
//! them, what a synthetic trace stands for, and the brief's page count.

use crate::util;

use std::path::{Path, PathBuf};
use std::process::Command;

use util::typst::typst_ready;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `git rev-parse HEAD` of the checkout, when this is one.
fn head() -> Option<String> {
    let out = Command::new("git").current_dir(root()).args(["rev-parse", "HEAD"]).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// A claims file with one overlap claim over `trace`, and whatever `trace_extra` adds to the
/// trace's entry.
fn overlap_claims(dir: &Path, trace: &str, trace_extra: &str) -> PathBuf {
    let yaml = format!(
        "report:\n  id: prov\n  languages: [en]\n  title: {{ en: \"Provenance\" }}\ntraces:\n  A: {{ path: \"{trace}\"{trace_extra} }}\nscopes:\n  d4: {{ trace: A, devices: \"4\", window: \"39.964:46.123\", semantics: contain }}\nclaims:\n  - id: share\n    statement: {{ en: \"exposed NCCL\" }}\n    principal: p\n    parts:\n      - id: p\n        kind: observation\n        text: {{ en: \"exposed NCCL share\" }}\n        measure: {{ analysis: overlap, scope: d4, value: \"nccl_only_ns / total_ns\", unit: \"%\" }}\n"
    );
    let p = dir.join("prov.yaml");
    std::fs::write(&p, yaml).unwrap();
    p
}

/// The commands of a Markdown report's `sh` blocks, each as the shell joins it: continuations
/// removed, runs of blanks made one.
fn md_commands(md: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = md;
    while let Some(start) = rest.find("```sh\n") {
        let body = &rest[start + 6..];
        let end = body.find("\n```").unwrap();
        out.push(joined(&body[..end]));
        rest = &body[end..];
    }
    out
}

/// Lines continued by a backslash joined into one as a shell does (the backslash-newline
/// removed, nothing put in its place), blanks then collapsed: a word cut across lines reads
/// back whole only when the next line has nothing before it.
fn joined(text: &str) -> String {
    text.replace("\\\n", "").split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The commands in a PDF's text as `pdftotext -layout` gives it (the indentation of the page
/// kept on every line, as a reader's copy has it): from each `verdict query` or `verdict
/// inspect` to the first line that does not end in a backslash. None without pdftotext.
fn pdf_commands(pdf: &Path) -> Option<Vec<String>> {
    let out = Command::new("pdftotext").arg("-layout").arg(pdf).arg("-").output().ok()?;
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let lines: Vec<&str> = text.lines().collect();
    let mut cmds = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i].trim_start();
        if l.starts_with("verdict query ") || l.starts_with("verdict inspect ") {
            // A reader pastes the lines as they are, indentation and all: a continuation inside
            // a word would show up here as a blank in the middle of the word.
            let mut cmd = String::new();
            loop {
                let line = lines[i].trim_end();
                cmd.push_str(line);
                cmd.push('\n');
                if !line.ends_with('\\') || i + 1 == lines.len() {
                    break;
                }
                i += 1;
            }
            cmds.push(joined(&cmd));
        }
        i += 1;
    }
    Some(cmds)
}

/// The version line names the commit the binary was built from, as git has it.
#[test]
fn the_version_and_the_report_name_the_build_commit() {
    let Some(head) = head() else {
        eprintln!("skip: not a git checkout");
        return;
    };
    let out = util::run(&["--version"]);
    let v = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(v.starts_with(&format!("verdict {} (build {head}", env!("CARGO_PKG_VERSION"))), "{v}");
    let dir = tempfile::tempdir().unwrap();
    let trace = util::fixture("day26/megatron.sqlite");
    let claims = overlap_claims(dir.path(), util::s(&trace), "");
    let o =
        util::run(&["render", util::s(&claims), "--format", "md", "--out", util::s(dir.path())]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let md = std::fs::read_to_string(dir.path().join("prov.en.md")).unwrap();
    assert!(md.contains(&format!("- build commit of the tool: `{head}")), "{md}");
    assert!(md.contains(&format!("(build {}", &head[..12])), "{md}");
    let ledger: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("prov.evidence.json")).unwrap())
            .unwrap();
    assert!(ledger["tool"]["build"].as_str().unwrap().starts_with(&head), "{}", ledger["tool"]);
}

/// Every command of a PDF reads back, pasted with the page's indentation, as the same words
/// as in the Markdown: for the day26 example, and for a trace whose path is longer than a
/// command line (the block is scaled down rather than the word cut).
#[test]
fn pdf_commands_paste_back_with_their_indentation() {
    if !typst_ready("the PDF command round trip")
        || Command::new("pdftotext").arg("-v").output().is_err()
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let long =
        dir.path().join(format!("{}/megatron.sqlite", "a-folder-with-a-long-name".repeat(5)));
    std::fs::create_dir_all(long.parent().unwrap()).unwrap();
    std::fs::copy(util::fixture("day26/megatron.sqlite"), &long).unwrap();
    assert!(util::s(&long).len() > verdict::render::shell::REPORT_WIDTH);
    let claims = overlap_claims(dir.path(), util::s(&long), "");
    for (claims, id, cwd) in [
        (claims.clone(), "prov", dir.path().to_path_buf()),
        (root().join("claims/day26-profile-blind.yaml"), "day26-profile-blind", root()),
    ] {
        let out = dir.path().join(format!("out-{id}"));
        let o = util::run_in(
            Some(&cwd),
            &[
                "render",
                util::s(&claims),
                "--lang",
                "en",
                "--format",
                "md,pdf",
                "--out",
                util::s(&out),
            ],
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let md = md_commands(&std::fs::read_to_string(out.join(format!("{id}.en.md"))).unwrap());
        let pdf = pdf_commands(&out.join(format!("{id}.en.pdf"))).unwrap();
        assert!(!md.is_empty());
        // Each command is printed twice in the PDF (under its claim and in the provenance),
        // once in the Markdown's provenance and once under its claim as well.
        let mut md_sorted = md.clone();
        md_sorted.sort();
        md_sorted.dedup();
        let mut pdf_sorted = pdf.clone();
        pdf_sorted.sort();
        pdf_sorted.dedup();
        assert_eq!(pdf_sorted, md_sorted, "{id}");
        if id == "prov" {
            assert!(md.iter().all(|c| c.contains(util::s(&long))), "{md:?}");
        }
    }
}

/// A trace set is named in a command as the claims file names it: one quoted glob on one
/// line, not its files one by one.
#[test]
fn a_trace_set_is_one_quoted_glob_in_its_commands() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    std::fs::create_dir(&runs).unwrap();
    for i in 0..3 {
        let from = util::fixture(&format!("ab/runs/tp4-{}.sqlite", i + 1));
        std::fs::copy(from, runs.join(format!("rank{i}.sqlite"))).unwrap();
    }
    let yaml = "report:\n  id: set\n  languages: [en]\n  title: { en: \"Set\" }\ntraces:\n  S: { path: \"runs/*.sqlite\", expect_ranks: 3 }\nscopes:\n  all: { trace: S, ranks: all }\nclaims:\n  - id: c\n    statement: { en: \"kernels\" }\n    principal: p\n    parts:\n      - id: p\n        kind: observation\n        text: { en: \"kernel count\" }\n        measure: { analysis: kernels, scope: all, value: count, unit: count }\n";
    std::fs::write(dir.path().join("set.yaml"), yaml).unwrap();
    let o =
        util::run_in(Some(dir.path()), &["render", "set.yaml", "--format", "md", "--out", "out"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let md = std::fs::read_to_string(dir.path().join("out/set.en.md")).unwrap();
    let cmds = md_commands(&md);
    assert!(!cmds.is_empty());
    for c in &cmds {
        assert!(c.starts_with("verdict query kernels 'runs/*.sqlite' --expect-ranks 3"), "{c}");
        assert!(!c.contains("rank0.sqlite"), "{c}");
    }
    // The command, run where the report says (the claims file's folder here), gives the
    // ledger's evidence again.
    let words: Vec<String> =
        cmds[0].split(' ').skip(1).map(|w| w.trim_matches('\'').to_string()).collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let rerun = util::run_json_in(Some(dir.path()), &words);
    let ledger: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("out/set.evidence.json")).unwrap())
            .unwrap();
    let first = &ledger["ledger"][0]["evidence"]["values"];
    assert_eq!(&rerun["values"], first);
}

/// A trace the repository does not hold says where to get it: in `check`'s error (exit 2,
/// nothing judged) and in the report where it is present.
#[test]
fn a_missing_trace_says_where_to_get_it() {
    let dir = tempfile::tempdir().unwrap();
    let obtain = "https://github.com/example/traces (commit 0123456789ab), file run.sqlite";
    let claims =
        overlap_claims(dir.path(), "missing/run.sqlite", &format!(", obtain: \"{obtain}\""));
    let o = util::run(&["check", util::s(&claims)]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("`missing/run.sqlite` does not exist"), "{err}");
    assert!(err.contains(&format!("the claims file says where to get it: {obtain}")), "{err}");
    // Present: the report's trace line says it too.
    let trace = util::fixture("day26/megatron.sqlite");
    let claims = overlap_claims(dir.path(), util::s(&trace), &format!(", obtain: \"{obtain}\""));
    let o =
        util::run(&["render", util::s(&claims), "--format", "md", "--out", util::s(dir.path())]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let md = std::fs::read_to_string(dir.path().join("prov.en.md")).unwrap();
    // In Markdown, `https\://` keeps the address text in every renderer.
    let escaped = obtain.replace("https://", "https\\://");
    assert!(md.contains(&format!("where to get it: {escaped}")), "{md}");
}

/// A generated trace is told as what the author says it stands for, and the export fields the
/// generator wrote (host, export time, input file) are labelled as the generator's.
#[test]
fn a_synthetic_trace_says_what_it_stands_for_and_whose_fields_are_whose() {
    let dir = tempfile::tempdir().unwrap();
    let trace = util::fixture("day26/megatron.sqlite");
    let meta = |k: &str| -> String {
        util::open_ro(&trace)
            .query_row("SELECT value FROM META_DATA_EXPORT WHERE name = ?1", [k], |r| r.get(0))
            .unwrap()
    };
    let (by, host) = (meta("DERIVED_BY"), meta("EXPORT_HOST"));
    let claims = overlap_claims(
        dir.path(),
        util::s(&trace),
        ", stands_for: { en: \"a stand-in that reproduces the article's numbers\" }",
    );
    let o =
        util::run(&["render", util::s(&claims), "--format", "md", "--out", util::s(dir.path())]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let md = std::fs::read_to_string(dir.path().join("prov.en.md")).unwrap();
    assert!(
        md.contains(&format!(
            "**About the trace**: trace A is not a capture of the job: its metadata says it was \
             derived by {by}. It is a stand-in that reproduces the article's numbers."
        )),
        "{md}"
    );
    let lead = format!("derived by {by}, its export fields are the generator's: ");
    assert!(md.contains(&lead), "{md}");
    let line = md.lines().find(|l| l.contains(&lead)).unwrap();
    let generated = &line[line.find(&lead).unwrap()..];
    assert!(generated.contains(&format!("host {host}")), "{line}");
}

/// Page 1 alone is one page at the default paper size, in both languages, for every example.
#[test]
fn the_brief_is_one_page_for_every_example() {
    if !typst_ready("the brief's page count") || Command::new("pdfinfo").arg("-v").output().is_err()
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut n = 0;
    for entry in std::fs::read_dir(root().join("claims")).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_none_or(|e| e != "yaml") {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        if text.contains("shared/traces") && util::shared_traces().is_none() {
            continue;
        }
        let out = dir.path().join(p.file_stem().unwrap());
        let o = util::run(&[
            "render",
            util::s(&p),
            "--profile",
            "brief",
            "--format",
            "pdf",
            "--out",
            util::s(&out),
        ]);
        assert!(o.status.success(), "{}: {}", p.display(), String::from_utf8_lossy(&o.stderr));
        for e in std::fs::read_dir(&out).unwrap() {
            let pdf = e.unwrap().path();
            if !pdf.to_string_lossy().ends_with(".brief.pdf") {
                continue;
            }
            let info = Command::new("pdfinfo").arg(&pdf).output().unwrap();
            let info = String::from_utf8_lossy(&info.stdout);
            let pages = info.lines().find(|l| l.starts_with("Pages:")).unwrap();
            assert_eq!(pages.split_whitespace().nth(1), Some("1"), "{}", pdf.display());
            n += 1;
        }
    }
    assert!(n >= 14, "{n} briefs");
}

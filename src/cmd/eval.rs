//! `verdict eval`: every answer of an eval file judged and scored, the groups compared.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use super::print_json;
use super::table::{self, Column};
use crate::analysis::{self, Context};
use crate::audit;
use crate::cli::EvalArgs;
use crate::eval::{self, SCORES};
use crate::trace::{KernelFilter, Trace};

/// Runs `eval`.
pub(super) fn run(args: EvalArgs) -> anyhow::Result<ExitCode> {
    let file = eval::load(&args.eval)?;
    // The sheets are written in one of the report's languages, or not at all.
    if args.review_sheets.is_some() && !file.languages.contains(&args.lang) {
        return Err(crate::Hinted::new(
            format!(
                "--lang `{}` is not a language of `{}` ({})",
                args.lang,
                args.eval.display(),
                file.languages.join(", ")
            ),
            format!("pass one of its languages: --lang {}", file.languages.join(" or --lang ")),
        )
        .into());
    }
    if let Some(dir) = args.review_sheets.as_deref().filter(|_| !args.force) {
        refuse_filled_sheets(dir)?;
    }
    let mut sets = Vec::new();
    for a in &file.answers {
        sets.push(eval::load_answer(&file, a)?);
    }
    let scans = scan_traces(&sets);
    let mut scored = Vec::new();
    let mut audits = Vec::new();
    for (a, set) in file.answers.iter().zip(sets) {
        let audit = audit::run_with(set, &mut |_, _| {}, &scans);
        scored.push(eval::score(a, &audit, &file.key));
        audits.push(audit);
    }
    if let Some(dir) = &args.review_sheets {
        write_sheets(dir, &file, &audits, &args.lang)?;
    }
    let mut ev = eval::evaluate(file, scored);
    if !args.grades.is_empty() {
        let by_sheet = eval::read_grades(&args.grades, ev.answers.len()).map_err(|p| {
            crate::Hinted::new(
                format!("the grades do not hold:\n  {}", p.join("\n  ")),
                "each file grades every sheet once: usefulness 1 to 5, next step good, partial or poor, the reviewer named",
            )
        })?;
        eval::unblind(&mut ev, by_sheet);
    }
    if let Some(dir) = &args.out {
        write_report(&ev, dir)?;
    }
    if args.json {
        print_json(&ev)?;
        return Ok(ExitCode::SUCCESS);
    }
    super::emit(&report_text(&ev))?;
    Ok(ExitCode::SUCCESS)
}

/// The scans of every trace the answers read, each read once for every answer: the union of
/// what they need. A trace that cannot be read is left out, for each audit to report.
fn scan_traces(sets: &[crate::claims::ClaimSet]) -> audit::Scans {
    let mut plans: BTreeMap<PathBuf, (KernelFilter, Vec<analysis::Table>)> = BTreeMap::new();
    for set in sets {
        for (path, filter, needs) in audit::plan(set) {
            let merged = match plans.remove(&path) {
                Some(p) => audit::merge_scans(p, (filter, needs)),
                None => (filter, needs),
            };
            plans.insert(path, merged);
        }
    }
    let mut scans = audit::Scans::new();
    for (path, (filter, needs)) in plans {
        // A trace that cannot be read is left to each audit, which reports it.
        if let Ok(ctx) =
            Trace::open(&path).and_then(|t| Context::load(&t, &filter, None, &needs, &mut |_| {}))
        {
            scans.insert(path, ctx);
        }
    }
    scans
}

/// Writes the blind review sheets in `lang`, in the eval's shuffled order, and a blank grades
/// file: all of them or none.
fn write_sheets(
    dir: &std::path::Path,
    file: &eval::EvalFile,
    audits: &[crate::audit::Audit],
    lang: &str,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("cannot create `{}`: {e}", dir.display()))?;
    let order = eval::sheet_order(audits.len(), file.seed);
    let mut files: Vec<(String, String)> = order
        .iter()
        .enumerate()
        .map(|(i, &a)| {
            let id = eval::sheet_id(i);
            let sheet = eval::sheet_markdown(&id, file, &audits[a], lang);
            (format!("{id}.md"), sheet)
        })
        .collect();
    files.push(("grades.csv".into(), eval::grades_template(audits.len())));
    // All or none: a write that fails (a full disk) takes back the files written before
    // it, so no partial set of sheets is left to be handed out.
    let mut written = Vec::new();
    for (name, text) in &files {
        if let Err(e) = put(dir, name, text.as_bytes()) {
            for w in &written {
                let _ = std::fs::remove_file(dir.join(w));
            }
            return Err(e);
        }
        written.push(name);
    }
    Ok(())
}

/// The text of an evaluation: a row of scores per answer, the groups' differences, whether
/// the answers were controlled and what varied, and the reviewers' grades and agreement.
fn report_text(ev: &eval::Evaluation) -> String {
    let width = table::width();
    let mut s = String::new();
    // Per answer: its group and every score.
    let mut columns = vec![Column::text("answer"), Column::text("group")];
    columns.extend(SCORES.iter().map(|(_, short, _)| Column::number(short)));
    let rows: Vec<Vec<String>> = ev
        .answers
        .iter()
        .map(|a| {
            let mut row = vec![
                a.claims.clone(),
                a.conditions.get(&ev.eval.groups).cloned().unwrap_or_default(),
            ];
            row.extend(
                SCORES.iter().map(|(k, _, _)| a.scores.get(*k).copied().unwrap_or(0).to_string()),
            );
            row
        })
        .collect();
    s += &table::render(&columns, &rows, width);
    s.push('\n');
    for d in &ev.differences {
        s += &table::hang(
            "",
            &format!(
                "{}: {} (n {}) against {} (n {}): median difference {}{}{}{}",
                d.score,
                d.groups[1],
                d.n[1],
                d.groups[0],
                d.n[0],
                d.delta,
                d.interval.map_or(String::new(), |[a, b]| format!(", 95% interval {a} to {b}")),
                d.p_value.map_or(String::new(), |p| format!(", Mann-Whitney p = {p:.4}")),
                if d.few { " (few answers: weak)" } else { "" }
            ),
            2,
            width,
        );
    }
    s.push('\n');
    if ev.controlled {
        s += &table::hang(
            "",
            "controlled: every held condition is the same in every answer",
            2,
            width,
        );
    } else {
        s += &table::hang(
            "",
            &format!(
                "not controlled: held conditions that differ or are unstated: {}",
                ev.uncontrolled.join(", ")
            ),
            2,
            width,
        );
    }
    for (k, v) in &ev.varied {
        s += &table::hang("", &format!("varied: {k} = {}", v.join(", ")), 2, width);
    }
    if let Some(r) = &ev.review {
        s.push('\n');
        for (a, (sheet, grades)) in ev.answers.iter().zip(&r.answers) {
            let g: Vec<String> = grades
                .iter()
                .map(|g| format!("{} {}/5, next step {}", g.reviewer, g.usefulness, g.next_step))
                .collect();
            s += &table::hang("", &format!("{} ({sheet}): {}", a.claims, g.join("; ")), 2, width);
        }
        for ag in &r.agreement {
            let k = |x: Option<f64>| x.map_or("n/a".to_string(), |v| format!("{v:.3}"));
            s += &table::hang(
                "",
                &format!(
                    "agreement {} / {}: Cohen's kappa {} on the next step, {} on usefulness",
                    ag.reviewers[0],
                    ag.reviewers[1],
                    k(ag.next_step_kappa),
                    k(ag.usefulness_kappa)
                ),
                2,
                width,
            );
        }
    }
    s
}

/// Writes the eval report in every language of the eval: Markdown, Typst, the chart, the
/// evaluation as JSON, and the PDF where typst can make it (else a warning, as `render` does).
fn write_report(ev: &eval::Evaluation, dir: &std::path::Path) -> anyhow::Result<()> {
    use crate::render::templates::Format;
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("cannot create `{}`: {e}", dir.display()))?;
    let id = &ev.eval.id;
    let put = |name: &str, bytes: &[u8]| put(dir, name, bytes);
    let mut json = serde_json::to_string_pretty(ev)?;
    json.push('\n');
    put(&format!("{id}.eval.json"), json.as_bytes())?;
    let toolchain = crate::render::typst::Toolchain::probe();
    let timestamp = super::render::source_date_epoch()?;
    for lang in &ev.eval.languages {
        let t = crate::i18n::Strings::load(lang)?;
        for chart in crate::render::eval::charts(ev, &t, id)? {
            put(&chart.file, chart.svg.as_bytes())?;
        }
        for format in [Format::Markdown, Format::Typst] {
            let text = crate::render::eval::report(ev, &t, format)?;
            put(&format!("{id}.{lang}{}", format.suffix()), text.as_bytes())?;
        }
        if toolchain.ready() {
            crate::render::typst::compile(
                &toolchain.bin,
                dir,
                dir,
                &format!("{id}.{lang}"),
                timestamp,
                &crate::render::interrupt::Interrupt::default(),
            )?;
            eprintln!("wrote {}", dir.join(format!("{id}.{lang}.pdf")).display());
        }
    }
    if let Some(h) = toolchain.missing("the PDF") {
        eprintln!("warning: {}\n  hint: {}", h.message, h.hint);
    }
    Ok(())
}

/// Refuses a review-sheets folder that already holds sheets or a grades file: they may be a
/// reviewer's filled work, which blank ones would replace.
fn refuse_filled_sheets(dir: &std::path::Path) -> anyhow::Result<()> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        // Absent (it is created) or unreadable (creating or writing in it says why).
        return Ok(());
    };
    let mut found: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n == "grades.csv" || is_sheet_name(n))
        .collect();
    if found.is_empty() {
        return Ok(());
    }
    found.sort();
    Err(crate::Hinted::new(
        format!(
            "`{}` already holds review sheets or grades ({})",
            dir.display(),
            found.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
        ),
        "they may hold a reviewer's work: write the sheets into another folder, or pass --force to replace them",
    )
    .into())
}

/// Whether a file name is a review sheet's: `S` and at least two digits, then `.md`.
fn is_sheet_name(name: &str) -> bool {
    name.strip_prefix('S')
        .and_then(|n| n.strip_suffix(".md"))
        .is_some_and(|d| d.len() >= 2 && d.bytes().all(|b| b.is_ascii_digit()))
}

/// Writes one file of the eval's output atomically and says so.
fn put(dir: &std::path::Path, name: &str, bytes: &[u8]) -> anyhow::Result<()> {
    let path = dir.join(name);
    crate::render::write::atomic(&path, bytes)
        .map_err(|e| anyhow::anyhow!("cannot write `{}`: {e}", path.display()))?;
    eprintln!("wrote {}", path.display());
    Ok(())
}

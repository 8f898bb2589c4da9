//! `verdict draft`: reads a prose answer and prints (or writes) the claims skeleton drafted from
//! it. Reads no trace; a bad path or a file that is not UTF-8 text is an error with a hint.

use std::process::ExitCode;

use crate::cli::DraftArgs;

/// The largest answer read, in bytes: a diagnosis is prose, not a log.
const MAX_ANSWER_BYTES: u64 = 4 * 1024 * 1024;

/// Runs `draft`.
pub fn run(args: DraftArgs) -> anyhow::Result<ExitCode> {
    let path = &args.answer;
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| {
        crate::Hinted::new(
            format!("cannot read answer `{shown}` ({e})"),
            "pass the Markdown file of the answer; the path is relative to the current folder",
        )
    })?;
    if !meta.is_file() {
        return Err(crate::Hinted::new(
            format!("answer `{shown}` is not a regular file"),
            "pass the Markdown file of the answer itself",
        )
        .into());
    }
    if meta.len() > MAX_ANSWER_BYTES {
        return Err(crate::Hinted::new(
            format!("answer `{shown}` is {} bytes; the limit is 4 MiB", meta.len()),
            "draft from the diagnosis itself, not from a log or a trace",
        )
        .into());
    }
    let bytes = std::fs::read(path).map_err(|e| {
        crate::Hinted::new(format!("cannot read answer `{shown}` ({e})"), "check its permissions")
    })?;
    let text = String::from_utf8(bytes).map_err(|e| {
        crate::Hinted::new(
            format!(
                "answer `{shown}` is not UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
            "save the answer as UTF-8",
        )
    })?;
    let name =
        path.file_name().map_or_else(|| shown.to_string(), |n| n.to_string_lossy().into_owned());
    let d = crate::draft::draft(&text, args.lang.as_deref());
    let yaml = crate::draft::to_yaml(&d, &name);
    let parts = d.parts().count();
    match &args.out {
        Some(out) => std::fs::write(out, &yaml).map_err(|e| {
            crate::Hinted::new(
                format!("cannot write `{}` ({e})", out.display()),
                "check that the folder exists and is writable",
            )
        })?,
        None => super::emit(&yaml)?,
    }
    eprintln!(
        "drafted {} claim{} with {parts} unreviewed part{} from `{}` ({} number{} left out, listed at the end); `verdict check` refuses the file until each part is bound and its `unreviewed` block removed",
        d.claims.len(),
        if d.claims.len() == 1 { "" } else { "s" },
        if parts == 1 { "" } else { "s" },
        crate::term::shown(&name),
        d.skipped.len(),
        if d.skipped.len() == 1 { "" } else { "s" },
    );
    Ok(ExitCode::SUCCESS)
}

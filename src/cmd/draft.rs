//! `verdict draft`: reads a prose answer and prints (or writes) the claims skeleton drafted from
//! it. Reads no trace; a bad path or a file that is not UTF-8 text is an error with a hint.

use std::process::ExitCode;

use crate::cli::DraftArgs;

/// The largest answer read, in bytes: a diagnosis is prose, not a log.
const MAX_ANSWER_BYTES: u64 = 4 * 1024 * 1024;

/// Runs `draft`.
pub(super) fn run(args: DraftArgs) -> anyhow::Result<ExitCode> {
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
    let bytes = crate::trace::open::read_limited(path, MAX_ANSWER_BYTES).map_err(|e| {
        let hint = crate::trace::open::Refused::of(&e)
            .map_or_else(|| "check its permissions".to_string(), |r| r.hint.clone());
        crate::Hinted::new(format!("cannot read answer `{shown}` ({e})"), hint)
    })?;
    if let Some(out) = &args.out {
        refuse_out(path, out, args.force)?;
    }
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
        Some(out) => write_out(out, &yaml, args.force).map_err(|e| {
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

/// Refuses an `--out` that would destroy something: the answer itself (the same file, by
/// device and inode, whatever the path), or, without `--force`, any existing file.
fn refuse_out(answer: &std::path::Path, out: &std::path::Path, force: bool) -> anyhow::Result<()> {
    let Ok(meta) = std::fs::metadata(out) else { return Ok(()) };
    let shown = out.display();
    if same_file(answer, out) {
        return Err(crate::Hinted::new(
            format!(
                "--out `{shown}` is the answer itself: drafting into it would replace the answer"
            ),
            "write the claims file beside it under another name (`--out ANSWER.claims.yaml`)",
        )
        .into());
    }
    if !meta.is_file() {
        return Err(crate::Hinted::new(
            format!("--out `{shown}` exists and is not a regular file"),
            "name a new file for the claims skeleton",
        )
        .into());
    }
    if !force {
        return Err(crate::Hinted::new(
            format!("--out `{shown}` exists; it is left as it is"),
            "name a new file, or pass --force to replace it",
        )
        .into());
    }
    Ok(())
}

/// Whether two paths name one file (device and inode on Unix; the resolved paths elsewhere).
fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let (Ok(x), Ok(y)) = (std::fs::metadata(a), std::fs::metadata(b)) {
            return x.dev() == y.dev() && x.ino() == y.ino();
        }
        false
    }
    #[cfg(not(unix))]
    {
        matches!((std::fs::canonicalize(a), std::fs::canonicalize(b)), (Ok(x), Ok(y)) if x == y)
    }
}

/// Writes the skeleton: into a new file, or with `force` over an existing one (never a file
/// that appeared since the check, without it).
fn write_out(out: &std::path::Path, yaml: &str, force: bool) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true);
    if force {
        opts.create(true).truncate(true);
    } else {
        opts.create_new(true);
    }
    opts.open(out)?.write_all(yaml.as_bytes())
}

//! `verdict render` and `verdict templates eject`.

use std::process::ExitCode;

use crate::cli::{OutputFormat, RenderArgs, TemplatesCommand};
use crate::render::{report, templates};
use crate::{audit, claims};

/// Runs `render`.
pub fn run(args: RenderArgs) -> anyhow::Result<ExitCode> {
    let set = claims::load(&args.claims)?;
    let langs = if args.lang.is_empty() { set.report.languages.clone() } else { args.lang.clone() };
    let formats = if args.format.is_empty() {
        vec![OutputFormat::Md, OutputFormat::Pdf]
    } else {
        args.format.clone()
    };
    let opts = report::Options {
        langs,
        markdown: formats.contains(&OutputFormat::Md),
        pdf: formats.contains(&OutputFormat::Pdf),
        out: args.out.clone(),
        templates: args.templates.clone(),
        timestamp: std::env::var("SOURCE_DATE_EPOCH")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0),
    };
    let mut progress = super::progress();
    let audit = audit::run(set, &mut *progress);
    drop(progress);
    let written = report::render(&audit, &opts)?;
    let mut s = String::new();
    for p in written {
        s += &format!("wrote {}\n", p.display());
    }
    super::emit(&s)?;
    Ok(if args.strict && super::check::failed(&audit) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Runs `templates ...`.
pub fn templates(cmd: TemplatesCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        TemplatesCommand::Eject { dir } => {
            let written = templates::eject(&dir)
                .map_err(|e| crate::Hinted::new(e, "pass a new or empty folder; edit the files there and use `render --templates DIR`"))?;
            super::emit(&written.iter().map(|p| format!("wrote {p}\n")).collect::<String>())?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

//! `verdict render` and `verdict templates eject`.

use std::process::ExitCode;

use crate::cli::{OutputFormat, RenderArgs, TemplatesCommand};
use crate::render::report::{self, Pdf};
use crate::render::templates;
use crate::{audit, claims};

/// Runs `render`.
pub fn run(args: RenderArgs) -> anyhow::Result<ExitCode> {
    let set = claims::load(&args.claims)?;
    let langs = if args.lang.is_empty() { set.report.languages.clone() } else { args.lang.clone() };
    // Asked for by name, the PDF and the PNG charts are required; by default they are written
    // when typst can.
    let named = |f| if args.format.contains(&f) { Pdf::Required } else { Pdf::No };
    let (markdown, pdf, png) = if args.format.is_empty() {
        (true, Pdf::IfAvailable, Pdf::IfAvailable)
    } else {
        (
            args.format.contains(&OutputFormat::Md),
            named(OutputFormat::Pdf),
            named(OutputFormat::Png),
        )
    };
    let opts = report::Options {
        langs,
        markdown,
        pdf,
        png,
        image_base: args.image_base.clone(),
        out: args.out.clone(),
        templates: args.templates.clone(),
        timestamp: source_date_epoch()?,
        profiles: args.profile.clone(),
        render_date: Some(crate::render::provenance::render_date().map_err(|e| {
            crate::Hinted::new(
                e,
                "set it to seconds since 1970-01-01 UTC (`date +%s`), or unset it",
            )
        })?),
    };
    let mut progress = super::progress();
    let audit = audit::run(set, &mut *progress);
    drop(progress);
    let rendered = report::render(&audit, &opts)?;
    let mut s = String::new();
    for p in &rendered.written {
        s += &format!("wrote {}\n", p.display());
    }
    super::emit(&s)?;
    if let Some(why) = &rendered.pdf_skipped {
        eprintln!("warning: {}\n  hint: {}", why.message, why.hint);
    }
    let ok = if args.strict && super::check::failed(&audit) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    };
    Ok(super::exit_code(&audit, ok))
}

/// The PDF creation timestamp: `SOURCE_DATE_EPOCH` (whole seconds), else 0.
fn source_date_epoch() -> anyhow::Result<i64> {
    match std::env::var("SOURCE_DATE_EPOCH") {
        Err(_) => Ok(0),
        Ok(s) => s.trim().parse().map_err(|_| {
            crate::Hinted::new(
                format!("SOURCE_DATE_EPOCH is `{s}`, not a whole number of seconds"),
                "set it to seconds since 1970-01-01 UTC (`date +%s`), or unset it",
            )
            .into()
        }),
    }
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

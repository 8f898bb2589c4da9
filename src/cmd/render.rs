//! `verdict render` and `verdict templates eject`.

use std::process::ExitCode;
use std::time::Duration;

use crate::cli::{OutputFormat, RenderArgs, TemplatesCommand};
use crate::render::interrupt::{Interrupt, Interrupted};
use crate::render::report::{self, Pdf};
use crate::render::templates;
use crate::{audit, claims};

/// Runs `render`.
pub(super) fn run(args: RenderArgs) -> anyhow::Result<ExitCode> {
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
    if let Some(dir) = &args.templates
        && !dir.is_dir()
    {
        return Err(crate::Hinted::new(
            format!("the templates folder `{}` does not exist or is not a folder", dir.display()),
            "write one with `verdict templates eject DIR`, or leave out --templates for the built-in templates",
        )
        .into());
    }
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
        render_date: Some(crate::render::provenance::render_date()?),
        lock_timeout: Duration::from_secs(args.lock_timeout),
        clean: args.clean,
        interrupt: Interrupt::default(),
    };
    let mut progress = super::progress();
    let audit = audit::run(set, &mut *progress);
    drop(progress);
    // Caught from here on: before, nothing in `--out` is touched and a signal ends the process
    // at once; from now on the render stops where it can clean up after itself.
    let opts = report::Options {
        interrupt: Interrupt::catch()
            .map_err(|e| anyhow::anyhow!("cannot catch SIGINT and SIGTERM ({e})"))?,
        ..opts
    };
    let rendered = match report::render(&audit, &opts, &mut |m| eprintln!("{m}")) {
        Ok(r) => r,
        Err(e) => {
            if let Some(stop) = e.downcast_ref::<Interrupted>() {
                eprintln!(
                    "error: {stop}: the render into `{}` stopped; its temporary folder is removed and the report set there is as it was",
                    args.out.display()
                );
                return Ok(end_by(stop.signal));
            }
            return Err(e);
        }
    };
    let mut s = String::new();
    for p in &rendered.written {
        s += &format!("wrote {}\n", p.display());
    }
    super::emit(&s)?;
    for p in &rendered.leftovers {
        eprintln!("removed `{}`: a temporary folder of a render that was killed", p.display());
    }
    for p in &rendered.removed {
        eprintln!(
            "removed `{}`: a file of report `{}` this render did not write",
            p.display(),
            audit.claims.report.id
        );
    }
    for p in &rendered.kept {
        eprintln!(
            "kept `{}`: a file of report `{}` from an earlier run, not in `{}` (`--clean` removes such files)",
            p.display(),
            audit.claims.report.id,
            crate::render::set::manifest_name(&audit.claims.report.id)
        );
    }
    for (p, why) in &rendered.not_removed {
        eprintln!(
            "warning: cannot remove `{}`, a file of report `{}` this render did not write ({why})\n  hint: it is not in `{}`; remove it by hand",
            p.display(),
            audit.claims.report.id,
            crate::render::set::manifest_name(&audit.claims.report.id)
        );
    }
    if let Some(why) = &rendered.pdf_skipped {
        eprintln!("warning: {}\n  hint: {}", why.message, why.hint);
    }
    // One clock: an audit or a review dated after the day it is rendered is a typo or a wrong
    // SOURCE_DATE_EPOCH, and the report would show both dates.
    if let Some(rendered_on) = opts.render_date.as_deref() {
        let dated = [
            ("report.date", audit.claims.report.date.as_deref()),
            ("review.date", audit.claims.review.date.as_deref()),
        ];
        for (key, date) in dated {
            if let Some(d) =
                date.filter(|d| crate::claims::narrative::is_date(d) && *d > rendered_on)
            {
                eprintln!(
                    "warning: report `{}`: `{key}` is {d}, after the day it is rendered ({rendered_on})\n  hint: correct `{key}`, or render with SOURCE_DATE_EPOCH set to that day or unset",
                    audit.claims.report.id
                );
            }
        }
    }
    // A post says which of its narrative slots it wrote from the audit.
    if let Some((slots, langs)) = rendered.blog_slots.as_ref().filter(|(s, _)| !s.is_empty()) {
        let list = slots.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", ");
        let whose = match audit.claims.narrative {
            None => "has no `narrative:` block".to_string(),
            Some(_) => format!(
                "leaves {} of its narrative empty",
                if slots.len() == 1 { "a slot" } else { "slots" }
            ),
        };
        eprintln!(
            "warning: report `{}` {whose}: its post ({}) wrote {list} from the audit\n  hint: write them in the claims file's `narrative:` block (docs/claims.md, section \"The narrative of a post\") for the post's own words",
            audit.claims.report.id,
            langs.join(", "),
        );
    }
    // A signal during the moves is answered now that the set is whole.
    if let Some(sig) = opts.interrupt.signal() {
        return Ok(end_by(sig));
    }
    let ok = if args.strict && super::check::failed(&audit) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    };
    Ok(super::exit_code(&audit, ok))
}

/// Ends the process as the signal would have, now that the render cleaned up: a shell sees
/// `SIGTERM`, not an exit status. 128 + the signal where that fails, as shells report it.
fn end_by(signal: i32) -> ExitCode {
    let _ = signal_hook::low_level::emulate_default_handler(signal);
    ExitCode::from(u8::try_from(128 + signal).unwrap_or(2))
}

/// The PDF creation timestamp: `SOURCE_DATE_EPOCH` (whole seconds), else 0.
pub(super) fn source_date_epoch() -> anyhow::Result<i64> {
    match std::env::var("SOURCE_DATE_EPOCH") {
        Err(_) => Ok(0),
        // Seconds since 1970 as the reproducible-builds convention defines it: a whole
        // number, not negative (typst refuses a negative timestamp).
        Ok(s) => s.trim().parse::<i64>().ok().filter(|t| *t >= 0).ok_or_else(|| {
            crate::Hinted::new(
                format!("SOURCE_DATE_EPOCH is `{s}`, not a whole number of seconds from 0"),
                "set it to seconds since 1970-01-01 UTC (`date +%s`), or unset it",
            )
            .into()
        }),
    }
}

/// Runs `templates ...`.
pub(super) fn templates(cmd: TemplatesCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        TemplatesCommand::Eject { dir } => {
            let written = templates::eject(&dir)?;
            super::emit(&written.iter().map(|p| format!("wrote {p}\n")).collect::<String>())?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

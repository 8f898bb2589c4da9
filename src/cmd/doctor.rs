//! `verdict doctor`: what this machine offers for the PDF and the PNG charts, and how to install what it lacks.

use std::process::ExitCode;

use crate::render::typst::{self, Toolchain};

/// Runs `doctor`.
pub(super) fn run() -> anyhow::Result<ExitCode> {
    let tc = Toolchain::probe();
    super::emit(&report(&tc))?;
    Ok(if tc.ready() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// The text of the check, one finding a line.
pub(super) fn report(tc: &Toolchain) -> String {
    let mut s = format!("verdict {}\n", env!("VERDICT_VERSION"));
    let bin = tc.bin.display();
    match (&tc.version, &tc.error) {
        (Some(v), _) if tc.version_ok() => s += &format!("typst     ok: {v} (`{bin}`)\n"),
        (Some(v), _) => {
            s += &format!(
                "typst     found {v} (`{bin}`), but the templates are written for {}.x: install it with `{}`\n",
                typst::TYPST_SERIES,
                typst::INSTALL_TYPST_CMD
            )
        }
        (None, e) => {
            s += &format!(
                "typst     missing: {}; install it with `{}` (or set TYPST_BIN)\n",
                e.as_deref().unwrap_or("no answer"),
                typst::INSTALL_TYPST_CMD
            )
        }
    }
    if tc.version.is_none() {
        s += &format!(
            "fonts     not checked (typst lists them); the PDF needs `{}`: `{}`\n",
            typst::CJK_FONT,
            typst::INSTALL_FONT_CMD
        );
    } else if tc.has_font() {
        s += &format!("fonts     ok: {}\n", tc.cjk_fonts.join(", "));
    } else {
        let seen = if tc.cjk_fonts.is_empty() {
            "no CJK font".to_string()
        } else {
            tc.cjk_fonts.join(", ")
        };
        s += &format!(
            "fonts     missing `{}` (typst sees {seen}): `{}`\n",
            typst::CJK_FONT,
            typst::INSTALL_FONT_CMD
        );
    }
    s += if tc.ready() {
        "pdf       ready: `verdict render` writes the PDF and the PNG charts\n"
    } else {
        "pdf       not possible here: `verdict render` writes the Markdown, ledger and SVG charts, and warns\n"
    };
    s
}

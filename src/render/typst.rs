//! Running the `typst` command: finding it, checking the CJK font, compiling reproducibly.
//!
//! typst exits 0 and draws tofu when a font is missing, so the font is checked first; the
//! creation timestamp is fixed so the same inputs give the same PDF bytes.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The font family the PDF templates use.
pub const CJK_FONT: &str = "Noto Sans CJK TC";

/// How to install typst.
pub const INSTALL_TYPST: &str = "install it with `cargo install typst-cli --locked` (or set TYPST_BIN), or render Markdown only with `--format md`";

/// How to install the font.
pub const INSTALL_FONT: &str = "install the Noto CJK fonts (Debian: `apt-get install fonts-noto-cjk`) so `typst fonts` lists Noto Sans CJK TC";

/// The typst binary: `TYPST_BIN`, else `typst` on PATH.
pub fn find() -> Result<PathBuf, crate::Hinted> {
    let bin =
        std::env::var_os("TYPST_BIN").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("typst"));
    match Command::new(&bin).arg("--version").output() {
        Ok(o) if o.status.success() => Ok(bin),
        Ok(o) => Err(crate::Hinted::new(
            format!(
                "`{} --version` failed ({})",
                bin.display(),
                String::from_utf8_lossy(&o.stderr).trim()
            ),
            INSTALL_TYPST,
        )),
        Err(_) => Err(crate::Hinted::new(
            format!("`{}` not found, so no PDF was written", bin.display()),
            INSTALL_TYPST,
        )),
    }
}

/// Fails unless typst can see the CJK font.
pub fn check_font(bin: &Path) -> Result<(), crate::Hinted> {
    let out = Command::new(bin).arg("fonts").output().map_err(|e| {
        crate::Hinted::new(format!("cannot run `typst fonts` ({e})"), INSTALL_TYPST)
    })?;
    if String::from_utf8_lossy(&out.stdout).lines().any(|l| l.trim() == CJK_FONT) {
        Ok(())
    } else {
        Err(crate::Hinted::new(
            format!("typst cannot find the font `{CJK_FONT}`, so no PDF was written"),
            INSTALL_FONT,
        ))
    }
}

/// Compiles `typ` (inside `root`) to `pdf`, atomically, with a fixed creation timestamp.
pub fn compile(
    bin: &Path,
    root: &Path,
    typ: &Path,
    pdf: &Path,
    timestamp: i64,
) -> Result<(), crate::Hinted> {
    let tmp = tempfile::Builder::new().prefix(".verdict-pdf").tempdir_in(root).map_err(|e| {
        crate::Hinted::new(
            format!("cannot create a temporary folder in `{}` ({e})", root.display()),
            "check that the output folder is writable",
        )
    })?;
    let out_tmp = tmp.path().join("out.pdf");
    let output = Command::new(bin)
        .arg("compile")
        .arg("--root")
        .arg(root)
        .arg("--creation-timestamp")
        .arg(timestamp.to_string())
        .arg("--diagnostic-format")
        .arg("short")
        .arg(typ)
        .arg(&out_tmp)
        .output()
        .map_err(|e| crate::Hinted::new(format!("cannot run typst ({e})"), INSTALL_TYPST))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() || stderr.contains("unknown font family") {
        return Err(crate::Hinted::new(
            format!("typst failed on `{}`: {}", typ.display(), stderr.trim()),
            "the generated Typst source is kept beside it; a custom template (--templates) may be at fault",
        ));
    }
    std::fs::rename(&out_tmp, pdf).map_err(|e| {
        crate::Hinted::new(
            format!("cannot write `{}` ({e})", pdf.display()),
            "check that the output folder is writable",
        )
    })
}

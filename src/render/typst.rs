//! Running the `typst` command: finding it, checking the CJK font, compiling the PDF
//! reproducibly and rasterising the SVG charts to PNG.
//!
//! typst exits 0 and draws tofu when a font is missing, so the font is checked first; the
//! creation timestamp is fixed so the same inputs give the same PDF bytes. PNG charts go through
//! the same typst and fonts as the PDF, so they look like its figures.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The font family the PDF templates use.
pub const CJK_FONT: &str = "Noto Sans CJK TC";

/// The typst line the templates are written for.
pub const TYPST_SERIES: &str = "0.15";

/// The command that installs typst.
pub const INSTALL_TYPST_CMD: &str = "cargo install typst-cli --locked --version 0.15.1";

/// The command that installs the font (Debian and Ubuntu).
pub const INSTALL_FONT_CMD: &str = "apt-get install fonts-noto-cjk";

/// How to install typst.
pub const INSTALL_TYPST: &str = "install it with `cargo install typst-cli --locked --version 0.15.1` (or set TYPST_BIN), or render Markdown only with `--format md`";

/// How to install the font.
pub const INSTALL_FONT: &str = "install the Noto CJK fonts (Debian: `apt-get install fonts-noto-cjk`) so `typst fonts` lists Noto Sans CJK TC";

/// What this machine offers for the PDF: the typst found, its version, the CJK font.
#[derive(Debug, Clone)]
pub struct Toolchain {
    /// The binary asked for: `TYPST_BIN`, else `typst` on PATH.
    pub bin: PathBuf,
    /// The first line of `typst --version`, when it ran.
    pub version: Option<String>,
    /// Why `typst --version` did not answer, when it did not.
    pub error: Option<String>,
    /// The CJK font families `typst fonts` lists (empty when typst did not run).
    pub cjk_fonts: Vec<String>,
}

impl Toolchain {
    /// Asks the typst of `TYPST_BIN` (else `typst` on PATH) for its version and fonts.
    pub fn probe() -> Toolchain {
        let bin = std::env::var_os("TYPST_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("typst"));
        let (version, error) = match Command::new(&bin).arg("--version").output() {
            Ok(o) if o.status.success() => (
                Some(
                    String::from_utf8_lossy(&o.stdout)
                        .lines()
                        .next()
                        .unwrap_or("")
                        .trim()
                        .to_string(),
                ),
                None,
            ),
            Ok(o) => (
                None,
                Some(format!(
                    "`{} --version` failed: {}",
                    bin.display(),
                    String::from_utf8_lossy(&o.stderr).trim()
                )),
            ),
            Err(_) => (None, Some(format!("`{}` not found", bin.display()))),
        };
        let cjk_fonts = if version.is_some() {
            Command::new(&bin)
                .arg("fonts")
                .output()
                .map(|o| {
                    String::from_utf8_lossy(&o.stdout)
                        .lines()
                        .map(str::trim)
                        .filter(|l| l.contains("CJK"))
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        Toolchain { bin, version, error, cjk_fonts }
    }

    /// Whether typst runs and sees the font the templates use.
    pub fn ready(&self) -> bool {
        self.version.is_some() && self.has_font()
    }

    /// Whether typst lists the font the templates use.
    pub fn has_font(&self) -> bool {
        self.cjk_fonts.iter().any(|f| f == CJK_FONT)
    }

    /// Whether the version is of the line the templates are written for.
    pub fn version_ok(&self) -> bool {
        self.version
            .as_deref()
            .and_then(|v| v.split_whitespace().nth(1))
            .is_some_and(|v| v.starts_with(&format!("{TYPST_SERIES}.")) || v == TYPST_SERIES)
    }

    /// What the PDF and the PNG charts still need, with the exact install commands; `None`
    /// when ready. `skipped` ends the message: what is not written for want of it (`no PDF was
    /// written`).
    pub fn missing(&self, skipped: &str) -> Option<crate::Hinted> {
        if let Some(e) = &self.error {
            let hint = format!(
                "install it with `{INSTALL_TYPST_CMD}` and the fonts with `{INSTALL_FONT_CMD}` (or set TYPST_BIN), or render Markdown only with `--format md`"
            );
            return Some(crate::Hinted::new(format!("{e}, so {skipped}"), hint));
        }
        if !self.has_font() {
            return Some(crate::Hinted::new(
                format!("typst cannot find the font `{CJK_FONT}`, so {skipped}"),
                INSTALL_FONT,
            ));
        }
        None
    }
}

/// The typst binary, checked to run and to see the CJK font; the error ends with `skipped`.
pub fn find(skipped: &str) -> Result<PathBuf, crate::Hinted> {
    let tc = Toolchain::probe();
    match tc.missing(skipped) {
        None => Ok(tc.bin),
        Some(e) => Err(e),
    }
}

/// The width every PNG chart is placed at, in points (the SVG charts' own width).
pub const PNG_WIDTH_PT: u32 = 640;

/// The resolution of the PNG charts: twice the charts' own scale, sharp on high-density screens.
pub const PNG_PPI: u32 = 144;

/// The pixel width of every PNG chart: `PNG_WIDTH_PT` at `PNG_PPI`.
pub const PNG_WIDTH_PX: u32 = PNG_WIDTH_PT * PNG_PPI / 72;

/// The Typst document that shows each SVG (a file name in the root) on a page of its own, at
/// the fixed width, with no margin, as tall as the chart.
pub fn png_document(svgs: &[&str]) -> String {
    let mut s = format!("#set page(width: {PNG_WIDTH_PT}pt, height: auto, margin: 0pt)\n");
    for (i, svg) in svgs.iter().enumerate() {
        if i > 0 {
            s += "#pagebreak()\n";
        }
        s += &format!("#image(\"/{}\", width: 100%)\n", super::markup::typst_string(svg));
    }
    s
}

/// Rasterises SVG charts already written in `root` to PNG: `charts` pairs each SVG's file name
/// with the PNG to write. One typst run renders them all as the pages of one document into a
/// temporary folder in `root`; each page is then renamed into place, so a PNG is either whole
/// or absent. The bytes depend only on the SVG, typst and its fonts.
pub fn rasterise(bin: &Path, root: &Path, charts: &[(&str, PathBuf)]) -> Result<(), crate::Hinted> {
    if charts.is_empty() {
        return Ok(());
    }
    let tmp = temp_dir(root, ".verdict-png")?;
    let typ = tmp.path().join("charts.typ");
    let svgs: Vec<&str> = charts.iter().map(|(svg, _)| *svg).collect();
    std::fs::write(&typ, png_document(&svgs)).map_err(|e| {
        crate::Hinted::new(
            format!("cannot write `{}` ({e})", typ.display()),
            "check that the output folder is writable",
        )
    })?;
    let output = Command::new(bin)
        .arg("compile")
        .arg("--root")
        .arg(root)
        .arg("--format")
        .arg("png")
        .arg("--ppi")
        .arg(PNG_PPI.to_string())
        .arg("--diagnostic-format")
        .arg("short")
        .arg(&typ)
        .arg(tmp.path().join("{p}.png"))
        .output()
        .map_err(|e| crate::Hinted::new(format!("cannot run typst ({e})"), INSTALL_TYPST))?;
    if !output.status.success() {
        return Err(crate::Hinted::new(
            format!(
                "typst failed to rasterise the charts: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ),
            "the SVG charts are written; `--format md,pdf` renders without PNG",
        ));
    }
    for (i, (svg, png)) in charts.iter().enumerate() {
        let page = tmp.path().join(format!("{}.png", i + 1));
        std::fs::rename(&page, png).map_err(|e| {
            crate::Hinted::new(
                format!("cannot write `{}` from `{svg}` ({e})", png.display()),
                "check that the output folder is writable",
            )
        })?;
    }
    Ok(())
}

fn temp_dir(root: &Path, prefix: &str) -> Result<tempfile::TempDir, crate::Hinted> {
    tempfile::Builder::new().prefix(prefix).tempdir_in(root).map_err(|e| {
        crate::Hinted::new(
            format!("cannot create a temporary folder in `{}` ({e})", root.display()),
            "check that the output folder is writable",
        )
    })
}

/// Compiles `typ` (inside `root`) to `pdf`, atomically, with a fixed creation timestamp.
pub fn compile(
    bin: &Path,
    root: &Path,
    typ: &Path,
    pdf: &Path,
    timestamp: i64,
) -> Result<(), crate::Hinted> {
    let tmp = temp_dir(root, ".verdict-pdf")?;
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
            "the generated Typst source is kept beside it: with --templates, check the custom templates; with the built-in ones, this is a bug in verdict, to report with that file",
        ));
    }
    std::fs::rename(&out_tmp, pdf).map_err(|e| {
        crate::Hinted::new(
            format!("cannot write `{}` ({e})", pdf.display()),
            "check that the output folder is writable",
        )
    })
}

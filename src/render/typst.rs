//! Running the `typst` command: finding it, checking the CJK font, compiling the PDF
//! reproducibly and rasterising the SVG charts to PNG.
//!
//! typst exits 0 and draws tofu when a font is missing, so the font is checked first; the
//! creation timestamp is fixed so the same inputs give the same PDF bytes. PNG charts go through
//! the same typst and fonts as the PDF, so they look like its figures. typst runs inside a
//! render's temporary folder, in a process group of its own that an interrupt kills whole.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use super::interrupt::Interrupt;

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
        let probe = |arg: &str| {
            let mut cmd = Command::new(&bin);
            cmd.arg(arg);
            match crate::engine::process::run(&mut cmd, PROBE_TIMEOUT, || Ok::<(), ()>(())) {
                Ok(Ok(o)) => Ok(o),
                Ok(Err(())) => Err(None),
                Err(crate::engine::process::Failure::TimedOut { after, .. }) => Err(Some(format!(
                    "`{} {arg}` did not end within {} s",
                    bin.display(),
                    after.as_secs_f64()
                ))),
                Err(_) => Err(None),
            }
        };
        let (version, error) = match probe("--version") {
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
            Err(Some(timed_out)) => (None, Some(timed_out)),
            Err(None) => (None, Some(format!("`{}` not found", bin.display()))),
        };
        let cjk_fonts = if version.is_some() {
            probe("fonts")
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

/// Rasterises SVG charts already in a render's temporary folder `stage` to PNG: `charts` pairs
/// each SVG's file name with the PNG's. One typst run renders them all as the pages of one
/// document in a folder of its own inside `stage`, and each page is then renamed to its PNG.
/// The bytes depend only on the SVG, typst and its fonts.
pub fn rasterise(
    bin: &Path,
    stage: &Path,
    charts: &[(&str, String)],
    interrupt: &Interrupt,
) -> anyhow::Result<()> {
    if charts.is_empty() {
        return Ok(());
    }
    let pages = stage.join(PAGES);
    let svgs: Vec<&str> = charts.iter().map(|(svg, _)| *svg).collect();
    std::fs::create_dir(&pages)
        .and_then(|()| std::fs::write(pages.join("charts.typ"), png_document(&svgs)))
        .map_err(|e| {
            crate::Hinted::new(
                format!("cannot write the PNG charts' document in `{}` ({e})", pages.display()),
                "check that the output folder is writable",
            )
        })?;
    let mut cmd = Command::new(program(bin));
    cmd.current_dir(stage)
        .args(["compile", "--root", ".", "--format", "png", "--ppi"])
        .arg(PNG_PPI.to_string())
        .args(["--diagnostic-format", "short"])
        .arg(format!("{PAGES}/charts.typ"))
        .arg(format!("{PAGES}/{{p}}.png"));
    let output = run(&mut cmd, interrupt)?;
    if !output.status.success() {
        return Err(crate::Hinted::new(
            format!(
                "typst failed to rasterise the charts: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            ),
            "nothing in the output folder was changed; `--format md,pdf` renders without PNG",
        )
        .into());
    }
    for (i, (svg, png)) in charts.iter().enumerate() {
        let page = pages.join(format!("{}.png", i + 1));
        std::fs::rename(&page, stage.join(png)).map_err(|e| {
            crate::Hinted::new(
                format!("typst wrote no page for `{svg}` ({e})"),
                "check that the output folder is writable",
            )
        })?;
    }
    Ok(())
}

/// The folder in a render's temporary folder where typst rasterises the charts.
const PAGES: &str = ".pages";

/// Compiles `STEM.typ` in a render's temporary folder `stage` to `STEM.pdf` beside it, with a
/// fixed creation timestamp. `out` is only named in errors, where the PDF was to go.
pub fn compile(
    bin: &Path,
    stage: &Path,
    out: &Path,
    stem: &str,
    timestamp: i64,
    interrupt: &Interrupt,
) -> anyhow::Result<()> {
    let typ = format!("{stem}.typ");
    let mut cmd = Command::new(program(bin));
    // Run in the folder, so typst's diagnostics name the file as the set does (`ID.en.typ`).
    cmd.current_dir(stage)
        .args(["compile", "--root", ".", "--creation-timestamp"])
        .arg(timestamp.to_string())
        .args(["--diagnostic-format", "short"])
        .arg(&typ)
        .arg(format!("{stem}.pdf"));
    let output = run(&mut cmd, interrupt)?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() || stderr.contains("unknown font family") {
        let source = std::fs::read_to_string(stage.join(&typ)).unwrap_or_default();
        return Err(crate::Hinted::new(
            format!(
                "typst failed on `{typ}`, the Typst source of `{}`: {}",
                out.join(format!("{stem}.pdf")).display(),
                quote_lines(stderr.trim(), &typ, &source)
            ),
            "nothing in the output folder was changed; with --templates, check the custom templates; with the built-in ones, this is a bug in verdict, to report with this message",
        )
        .into());
    }
    Ok(())
}

/// typst's short diagnostics, each followed by the source line it names in `file` (the source
/// is not kept when the PDF fails, so the line is shown here).
fn quote_lines(diagnostics: &str, file: &str, source: &str) -> String {
    let mut s = String::new();
    for d in diagnostics.lines() {
        if !s.is_empty() {
            s.push('\n');
        }
        s.push_str(d);
        let line = d
            .strip_prefix(file)
            .and_then(|r| r.strip_prefix(':'))
            .and_then(|r| r.split(':').next())
            .and_then(|n| n.parse::<usize>().ok());
        if let Some(n) = line
            && let Some(text) = source.lines().nth(n.wrapping_sub(1))
        {
            s += &format!("\n  {n} | {text}");
        }
    }
    s
}

/// The typst to run from another folder: a path with folders is made absolute, a bare name is
/// looked up on PATH.
fn program(bin: &Path) -> std::path::PathBuf {
    if bin.components().count() > 1 {
        std::path::absolute(bin).unwrap_or_else(|_| bin.to_path_buf())
    } else {
        bin.to_path_buf()
    }
}

/// Runs typst to its end, in a process group of its own: on an interrupt the whole group is
/// killed (typst, or whatever a `TYPST_BIN` wrapper started), so nothing goes on writing.
fn run(cmd: &mut Command, interrupt: &Interrupt) -> anyhow::Result<Output> {
    interrupt.check()?;
    let timeout = crate::engine::process::timeout_from_env(TIMEOUT_ENV, DEFAULT_TIMEOUT);
    match crate::engine::process::run(cmd, timeout, || interrupt.check()) {
        Ok(Ok(output)) => Ok(output),
        Ok(Err(stop)) => Err(stop.into()),
        Err(crate::engine::process::Failure::Start(e)) => {
            Err(crate::Hinted::new(format!("cannot run typst ({e})"), INSTALL_TYPST).into())
        }
        Err(crate::engine::process::Failure::TimedOut { after, stderr }) => Err(crate::Hinted::new(
            format!(
                "typst did not end within {} s and was stopped; its stderr: {}",
                after.as_secs_f64(),
                crate::engine::process::last_line(&stderr)
            ),
            format!("nothing in the output folder was changed; allow longer with {TIMEOUT_ENV}=SECONDS, or check the `TYPST_BIN` program ends"),
        )
        .into()),
        Err(crate::engine::process::Failure::Wait(e)) => Err(e.into()),
    }
}

/// The environment variable that sets how long one typst run may take, in seconds.
pub const TIMEOUT_ENV: &str = "VERDICT_TYPST_TIMEOUT";

/// How long one typst run may take without it.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// How long `typst --version` and `typst fonts` may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(60);

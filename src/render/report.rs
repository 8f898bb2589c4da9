//! Rendering an audit into files: Markdown and Typst per language, the PDF, the evidence
//! ledger and the charts.
//!
//! Every text output is rendered in memory first, so a template error writes nothing; files
//! are then written atomically. The PDF comes last: without typst the Markdown still lands.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::charts::{self, KernelBar, OverlapBar, SkewRank};
use super::i18n::Strings;
use super::templates::{self, Format};
use super::{context, typst, write};
use crate::audit::Audit;

/// Whether `render` writes the PDF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pdf {
    /// No PDF.
    No,
    /// The PDF when typst and the CJK font are there; otherwise everything else, and a warning.
    IfAvailable,
    /// The PDF or an error, before any file is written.
    Required,
}

/// The files a render wrote, and why the PDF was left out when it was.
#[derive(Debug)]
pub struct Rendered {
    /// Every file written, in order.
    pub written: Vec<PathBuf>,
    /// Why no PDF was written although one was wanted (with `Pdf::IfAvailable`).
    pub pdf_skipped: Option<crate::Hinted>,
}

/// What to render.
#[derive(Debug, Clone)]
pub struct Options {
    /// Languages (each must be one of the report's).
    pub langs: Vec<String>,
    /// Write Markdown.
    pub markdown: bool,
    /// Whether to write the PDF.
    pub pdf: Pdf,
    /// Output folder.
    pub out: PathBuf,
    /// Template overrides.
    pub templates: Option<PathBuf>,
    /// PDF creation timestamp (seconds since the epoch).
    pub timestamp: i64,
}

fn int(v: &Value, k: &str) -> i64 {
    v.get(k).and_then(Value::as_i64).unwrap_or(0)
}

/// The charts of an audit: (file name, caption key, SVG).
pub fn charts(a: &Audit) -> Vec<(String, &'static str, String)> {
    let id = &a.claims.report.id;
    let mut out = Vec::new();
    // Devices the overlap parts speak of are highlighted.
    let highlighted: Vec<i64> = a
        .ledger
        .iter()
        .filter_map(|e| e.evidence.as_ref())
        .filter(|e| e.analysis == "overlap")
        .flat_map(|e| e.scope.devices.clone())
        .collect();
    if let Some(rows) = a
        .context
        .iter()
        .filter_map(|e| e.evidence.as_ref())
        .find(|e| e.analysis == "overlap")
        .and_then(|e| e.rows.as_ref())
    {
        let bars: Vec<OverlapBar> = rows
            .iter()
            .map(|r| {
                let v = Value::Object(r.clone());
                let device = int(&v, "device");
                OverlapBar {
                    device,
                    compute_only_ns: int(&v, "compute_only_ns"),
                    nccl_only_ns: int(&v, "nccl_only_ns"),
                    overlap_ns: int(&v, "overlap_ns"),
                    idle_ns: int(&v, "idle_ns"),
                    total_ns: int(&v, "total_ns"),
                    highlight: highlighted.contains(&device),
                }
            })
            .collect();
        out.push((format!("{id}.overlap.svg"), "ui.chart_overlap", charts::overlap_chart(&bars)));
    }
    if let Some(v) = a
        .ledger
        .iter()
        .filter_map(|e| e.evidence.as_ref())
        .find(|e| e.analysis == "nccl-skew")
        .and_then(|e| e.values.clone())
    {
        let v = Value::Object(v);
        let ranks: Vec<SkewRank> = v["rank_start_offset_ns"]
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(rank, s)| {
                        let e = &v["rank_end_offset_ns"][rank];
                        SkewRank {
                            device: rank.parse().unwrap_or(0),
                            start_median_ns: int(s, "median"),
                            start_p90_ns: int(s, "p90"),
                            end_median_ns: int(e, "median"),
                            end_p90_ns: int(e, "p90"),
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut ranks = ranks;
        ranks.sort_by_key(|r| r.device);
        out.push((format!("{id}.nccl-skew.svg"), "ui.chart_skew", charts::skew_chart(&ranks)));
    }
    if let Some(rows) = a
        .context
        .iter()
        .filter_map(|e| e.evidence.as_ref())
        .find(|e| e.analysis == "kernels")
        .and_then(|e| e.rows.as_ref())
    {
        let bars: Vec<KernelBar> = rows
            .iter()
            .map(|r| {
                let name = r.get("name").and_then(Value::as_str).unwrap_or("").to_string();
                let v = Value::Object(r.clone());
                KernelBar {
                    nccl: name.to_ascii_lowercase().contains("nccl"),
                    name,
                    total_ns: int(&v, "total_ns"),
                    count: int(&v, "count"),
                }
            })
            .collect();
        out.push((format!("{id}.kernels.svg"), "ui.chart_kernels", charts::kernels_chart(&bars)));
    }
    out
}

/// The strings of a language, from the override folder when it has them.
pub fn strings(lang: &str, overrides: Option<&Path>) -> Result<Strings, String> {
    let name = format!("i18n/{lang}.toml");
    let src = templates::source(&name, overrides)?;
    Strings::parse(lang, &src)
}

/// The Tera instances of both formats, built once per render.
pub struct Renderers {
    md: tera::Tera,
    typ: tera::Tera,
}

impl Renderers {
    /// Loads the templates (built-in, or overridden from the options' folder).
    pub fn new(opts: &Options) -> Result<Renderers, String> {
        Ok(Renderers {
            md: templates::tera(Format::Markdown, opts.templates.as_deref())?,
            typ: templates::tera(Format::Typst, opts.templates.as_deref())?,
        })
    }
}

/// One language rendered: (Markdown, Typst).
pub fn render_lang(
    a: &Audit,
    lang: &str,
    opts: &Options,
    renderers: &Renderers,
    charts: &[(String, &'static str, String)],
) -> Result<(String, String), String> {
    let t = strings(lang, opts.templates.as_deref())?;
    let captions: Vec<(String, String)> = charts
        .iter()
        .map(|(f, key, _)| Ok((f.clone(), t.get(key)?.to_string())))
        .collect::<Result<_, String>>()?;
    let ctx = context::build(a, &t, &captions)?;
    let tctx = tera::Context::from_serialize(&ctx).map_err(|e| format!("render context: {e}"))?;
    let md = renderers
        .md
        .render("report.md", &tctx)
        .map_err(|e| format!("template `report.md` ({lang}): {}", error_chain(&e)))?;
    let typ = renderers
        .typ
        .render("report.typ", &tctx)
        .map_err(|e| format!("template `report.typ` ({lang}): {}", error_chain(&e)))?;
    Ok((md, typ))
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s += &format!(": {c}");
        cur = c.source();
    }
    s
}

/// Renders everything the options ask for; returns the files written.
///
/// The typst toolchain is checked before anything is written: with `Pdf::Required` a missing
/// typst or font is an error that leaves no file behind; with `Pdf::IfAvailable` every other
/// file is written and the reason is returned.
pub fn render(a: &Audit, opts: &Options) -> anyhow::Result<Rendered> {
    let id = &a.claims.report.id;
    for l in &opts.langs {
        a.claims.require_language(l)?;
    }
    let (typst_bin, pdf_skipped) = match opts.pdf {
        Pdf::No => (None, None),
        Pdf::Required => (Some(typst::find()?), None),
        Pdf::IfAvailable => match typst::find() {
            Ok(bin) => (Some(bin), None),
            Err(why) => (None, Some(why)),
        },
    };
    let charts = charts(a);
    // Everything in memory first: a template error must leave no file behind.
    let renderers = Renderers::new(opts).map_err(anyhow::Error::msg)?;
    let mut texts = Vec::new();
    for lang in &opts.langs {
        let (md, typ) =
            render_lang(a, lang, opts, &renderers, &charts).map_err(anyhow::Error::msg)?;
        texts.push((lang.clone(), md, typ));
    }
    let ledger = serde_json::to_string_pretty(a)? + "\n";
    std::fs::create_dir_all(&opts.out)
        .map_err(|e| anyhow::anyhow!("cannot create `{}` ({e})", opts.out.display()))?;
    let mut written = Vec::new();
    let mut put = |name: &str, bytes: &[u8]| -> anyhow::Result<PathBuf> {
        let p = opts.out.join(name);
        write::atomic(&p, bytes)
            .map_err(|e| anyhow::anyhow!("cannot write `{}` ({e})", p.display()))?;
        written.push(p.clone());
        Ok(p)
    };
    put(&format!("{id}.evidence.json"), ledger.as_bytes())?;
    for (file, _, svg) in &charts {
        put(file, svg.as_bytes())?;
    }
    let mut typs = Vec::new();
    for (lang, md, typ) in &texts {
        if opts.markdown {
            put(&format!("{id}.{lang}.md"), md.as_bytes())?;
        }
        if opts.pdf != Pdf::No {
            // The Typst source lands even without typst: it compiles elsewhere as it is.
            typs.push((lang.clone(), put(&format!("{id}.{lang}.typ"), typ.as_bytes())?));
        }
    }
    if let Some(bin) = typst_bin {
        for (lang, typ) in typs {
            let pdf = opts.out.join(format!("{id}.{lang}.pdf"));
            typst::compile(&bin, &opts.out, &typ, &pdf, opts.timestamp)?;
            written.push(pdf);
        }
    }
    Ok(Rendered { written, pdf_skipped })
}

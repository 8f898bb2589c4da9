//! Rendering an audit into files: Markdown and Typst per language, the PDF, the evidence
//! ledger and the charts (SVG, and PNG through typst).
//!
//! Every text output is rendered in memory first, so a template error writes nothing; files
//! are then written into a temporary folder and moved into place as one set (`set.rs`). The
//! PNG charts and the PDF come last: without typst the Markdown still lands.

use std::path::{Path, PathBuf};

use super::charts::{self, Chart};
use super::i18n::Strings;
use super::interrupt::Interrupt;
use super::templates::{self, Format};
use super::{context, lock, set, typst};
use crate::audit::Audit;
pub use crate::cli::{ImageBase, Profile};
use crate::render::RenderError;

/// Whether `render` writes an output that needs typst: the PDF, or the PNG charts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pdf {
    /// Not written.
    No,
    /// Written when typst and the CJK font are there; otherwise everything else, and a warning.
    IfAvailable,
    /// Written, or an error before any file is written.
    Required,
}

/// The files a render wrote, and why the PDF or the PNG charts were left out when they were.
#[derive(Debug)]
pub struct Written {
    /// Every file of the set, in order; the manifest last.
    pub written: Vec<PathBuf>,
    /// Why no PDF or PNG was written although one was wanted (with `Pdf::IfAvailable`).
    pub pdf_skipped: Option<crate::Hinted>,
    /// Files of the same report id that this render did not write, removed (`clean`).
    pub removed: Vec<PathBuf>,
    /// Such files kept, without `clean`: from an earlier run, not in the new manifest.
    pub kept: Vec<PathBuf>,
    /// Such files that could not be removed, with why.
    pub not_removed: Vec<(PathBuf, String)>,
    /// Temporary folders of renders that were killed outright, removed.
    pub leftovers: Vec<PathBuf>,
    /// A post's narrative slots written from the audit, and the languages of the posts (None
    /// when no post was rendered).
    pub blog_slots: Option<(Vec<&'static str>, Vec<String>)>,
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
    /// Whether to write each chart as PNG too, beside its SVG.
    pub png: Pdf,
    /// Absolute image links in the Markdown: to the PNG charts when they are written (`png`
    /// other than `Pdf::No`; [`render`] decides `IfAvailable` first), else to the SVGs.
    pub image_base: Option<ImageBase>,
    /// Output folder.
    pub out: PathBuf,
    /// Template overrides.
    pub templates: Option<PathBuf>,
    /// PDF creation timestamp (seconds since the epoch).
    pub timestamp: i64,
    /// The sections to render, each its own set of files.
    pub profiles: Vec<Profile>,
    /// The render date shown in the report (`YYYY-MM-DD`).
    pub render_date: Option<String>,
    /// How long to wait for another render into the same folder before failing.
    pub lock_timeout: std::time::Duration,
    /// Remove the files of the report that this render did not write (else only name them).
    pub clean: bool,
    /// Where a signal that stops the render is recorded.
    pub interrupt: Interrupt,
}

/// The strings of a language, from the override folder when it has them.
pub fn strings(lang: &str, overrides: Option<&Path>) -> Result<Strings, RenderError> {
    let name = format!("i18n/{lang}.toml");
    let src = templates::source(&name, overrides)?;
    Ok(Strings::parse(lang, &src)?)
}

/// The Tera instances of both formats, built once per render.
pub struct Renderers {
    md: tera::Tera,
    typ: tera::Tera,
}

impl Renderers {
    /// Loads the templates (built-in, or overridden from the options' folder).
    pub fn new(opts: &Options) -> Result<Renderers, RenderError> {
        Ok(Renderers {
            md: templates::tera(Format::Markdown, opts.templates.as_deref())?,
            typ: templates::tera(Format::Typst, opts.templates.as_deref())?,
        })
    }
}

/// One language of a report, rendered in memory.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// The Markdown report.
    pub md: String,
    /// The Typst source of the PDF.
    pub typ: String,
    /// The charts both refer to, in this language.
    pub charts: Vec<Chart>,
    /// A post's narrative slots that were written from the audit, the author having left
    /// them empty (None for other profiles).
    pub slots: Option<Vec<&'static str>>,
}

/// Renders one language: its charts, then the Markdown and Typst that show them.
pub fn render_lang(
    a: &Audit,
    lang: &str,
    profile: Profile,
    opts: &Options,
    renderers: &Renderers,
) -> Result<Rendered, RenderError> {
    let t = strings(lang, opts.templates.as_deref())?;
    let charts = charts::charts(a, &t)?;
    let captions: Vec<context::ChartIn> = charts
        .iter()
        .map(|c| context::ChartIn {
            file: c.file.clone(),
            caption: c.caption.clone(),
            key: c.key.clone(),
        })
        .collect();
    let claims_path = Path::new(&a.claims.file);
    let meta = context::Meta {
        profile: profile.as_str().into(),
        render_date: opts.render_date.clone(),
        ledger_file: Some(format!("{}.evidence.json", a.claims.report.id)),
        claims_sha256: super::provenance::file_sha256(claims_path).ok(),
        vcs: super::provenance::vcs_of(claims_path),
    };
    let mut ctx = context::build(a, &t, &captions, &meta)?;
    // Image links: the chart file, or under `--image-base` its absolute PNG or SVG address.
    // A blog links the PNG, which every blog editor takes, and only when it is written:
    // without it the post says where the chart is instead of linking a file that is not there.
    let link = |file: &str| {
        let stem = file.strip_suffix(".svg").unwrap_or(file);
        let png = opts.png != Pdf::No && (profile == Profile::Blog || opts.image_base.is_some());
        if profile == Profile::Blog && !png {
            return String::new();
        }
        let name = if png { format!("{stem}.png") } else { file.to_string() };
        match &opts.image_base {
            None => name,
            Some(base) => base.join(&name),
        }
    };
    for c in ctx.charts.iter_mut().chain(ctx.claims.iter_mut().flat_map(|c| c.charts.iter_mut())) {
        c.md_src = link(&c.file);
    }
    let mut tctx =
        tera::Context::from_serialize(&ctx).map_err(|e| RenderError::Context(e.to_string()))?;
    // The blog is its own template, in the article's order, with the narrative's slots.
    let mut slots = None;
    let template = if profile == Profile::Blog {
        let blog = super::blog::build(a, &t, &ctx)?;
        tctx.insert("blog", &blog);
        slots = Some(blog.defaulted);
        "blog"
    } else {
        "report"
    };
    let md = renderers
        .md
        .render(&format!("{template}.md"), &tctx)
        .map_err(|e| RenderError::template(&format!("{template}.md"), Some(lang), &e))?;
    let md = collapse_blank_lines(&md);
    let typ = renderers
        .typ
        .render(&format!("{template}.typ"), &tctx)
        .map_err(|e| RenderError::template(&format!("{template}.typ"), Some(lang), &e))?;
    Ok(Rendered { md, typ, charts, slots })
}

/// At most one blank line in a row: templates leave runs where optional sections are absent,
/// and no fenced block of the report holds a blank line.
fn collapse_blank_lines(md: &str) -> String {
    let mut out = String::with_capacity(md.len());
    let mut blank = 0;
    for line in md.lines() {
        blank = if line.trim().is_empty() { blank + 1 } else { 0 };
        if blank <= 1 {
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
    out
}

/// Renders everything the options ask for, as one report set; returns the files written.
///
/// The typst toolchain is checked before anything is written: when the PDF or the PNG charts
/// are `Pdf::Required`, a missing typst or font is an error that leaves no file behind;
/// otherwise every other file is written and the reason is returned. Every file is rendered in
/// memory or in a temporary folder in `--out` first, under the folder's lock (`on_wait` hears
/// when another render holds it); only a complete set is moved into place, with its manifest
/// last, and the files of the same report id it does not hold are removed then. A failure or an
/// interrupt before that leaves the folder as it was.
pub fn render(a: &Audit, opts: &Options, on_wait: &mut dyn FnMut(&str)) -> anyhow::Result<Written> {
    let id = &a.claims.report.id;
    for l in &opts.langs {
        a.claims.require_language(l)?;
    }
    let skipped = match (opts.pdf != Pdf::No, opts.png != Pdf::No) {
        (true, true) => "neither the PDF nor the PNG charts were written",
        (false, true) => "no PNG chart was written",
        _ => "no PDF was written",
    };
    let (typst_bin, pdf_skipped) = if opts.pdf == Pdf::Required || opts.png == Pdf::Required {
        (Some(typst::find(skipped)?), None)
    } else if opts.pdf == Pdf::IfAvailable || opts.png == Pdf::IfAvailable {
        match typst::find(skipped) {
            Ok(bin) => (Some(bin), None),
            Err(why) => (None, Some(why)),
        }
    } else {
        (None, None)
    };
    // From here on, `png` says whether the PNGs are written: the Markdown links them then.
    let opts = &Options {
        png: if typst_bin.is_some() && opts.png != Pdf::No { Pdf::Required } else { Pdf::No },
        ..opts.clone()
    };
    // Everything in memory first: a template error must leave no file behind.
    let renderers = Renderers::new(opts)?;
    let mut texts = Vec::new();
    for lang in &opts.langs {
        for &profile in &opts.profiles {
            texts.push((lang.clone(), profile, render_lang(a, lang, profile, opts, &renderers)?));
        }
    }
    let ledger = serde_json::to_string_pretty(a)? + "\n";
    let claims_sha256 = super::provenance::file_sha256(Path::new(&a.claims.file)).ok();
    let interrupt = &opts.interrupt;
    interrupt.check()?;
    std::fs::create_dir_all(&opts.out)
        .map_err(|e| anyhow::anyhow!("cannot create `{}` ({e})", opts.out.display()))?;
    let lock = lock::acquire(&opts.out, opts.lock_timeout, interrupt, on_wait)?;
    let leftovers = set::remove_leftovers(&opts.out);
    let mut stage = set::Stage::new(&opts.out)?;
    stage.put(&format!("{id}.evidence.json"), ledger.as_bytes())?;
    let mut typs = Vec::new();
    let mut pngs = Vec::new();
    let mut charted = std::collections::BTreeSet::new();
    for (lang, profile, r) in &texts {
        interrupt.check()?;
        let stem = profile.stem(id, lang);
        for c in &r.charts {
            // Every profile of a language shares its charts: written once.
            if !charted.insert(c.file.clone()) {
                continue;
            }
            stage.put(&c.file, c.svg.as_bytes())?;
            if opts.png != Pdf::No {
                pngs.push((c.file.as_str(), c.png_file()));
            }
        }
        if opts.markdown {
            stage.put(&format!("{stem}.md"), r.md.as_bytes())?;
        }
        if opts.pdf != Pdf::No {
            // The Typst source is written even without typst: it compiles elsewhere as it is.
            stage.put(&format!("{stem}.typ"), r.typ.as_bytes())?;
            typs.push(stem);
        }
    }
    if let Some(bin) = typst_bin {
        typst::rasterise(&bin, stage.path(), &pngs, interrupt)?;
        for (_, png) in &pngs {
            stage.add(png);
        }
        for stem in typs {
            typst::compile(&bin, stage.path(), &opts.out, &stem, opts.timestamp, interrupt)?;
            stage.add(&format!("{stem}.pdf"));
        }
    }
    let manifest = stage.manifest(id, claims_sha256, opts.render_date.clone())?;
    stage.put(&set::manifest_name(id), manifest.to_json().as_bytes())?;
    interrupt.check()?;
    // From the first move on, the set is finished whatever comes: a signal now is answered
    // once the set is in place.
    let written = stage.commit()?;
    let (removed, not_removed, kept) = if opts.clean {
        let (r, n) = set::remove_stale(&opts.out, id, &written);
        (r, n, Vec::new())
    } else {
        (Vec::new(), Vec::new(), set::stale_files(&opts.out, id, &written))
    };
    drop(lock);
    // Every language of a narrative is complete (the claims file is checked so), so each
    // post defaults the same slots: said once, for all of them.
    let posts: Vec<&(String, Profile, Rendered)> =
        texts.iter().filter(|(_, _, r)| r.slots.is_some()).collect();
    let blog_slots = posts
        .first()
        .and_then(|(_, _, r)| r.slots.clone())
        .map(|s| (s, posts.iter().map(|(lang, _, _)| lang.clone()).collect::<Vec<_>>()));
    Ok(Written { written, pdf_skipped, removed, not_removed, kept, leftovers, blog_slots })
}

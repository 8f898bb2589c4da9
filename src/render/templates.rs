//! The Tera templates: embedded built-ins, overridable by name from a folder, one Tera
//! instance per output format with that format's escaping.
//!
//! Every value a template prints is escaped for its format unless it went through one of the
//! author-text filters (`md`, `md_inline`, `typmd`, `typmd_inline`), which convert Markdown
//! safely themselves, or a filter that makes a literal of its own kind (`code`, `shell_block`,
//! `typstr`). All of them show control characters as escapes (`\x1b`). Issue 12.

use std::path::Path;

use tera::{Filter, Kwargs, State, Tera};

use super::markup;
use crate::render::RenderError;

/// The built-in templates: (name, source).
pub const BUILTIN: &[(&str, &str)] = &[
    ("report.md", include_str!("../../templates/report.md")),
    ("report.typ", include_str!("../../templates/report.typ")),
    ("partials/claim.md", include_str!("../../templates/partials/claim.md")),
    ("partials/claim.typ", include_str!("../../templates/partials/claim.typ")),
    ("partials/summary.md", include_str!("../../templates/partials/summary.md")),
    ("partials/summary.typ", include_str!("../../templates/partials/summary.typ")),
    ("blog.md", include_str!("../../templates/blog.md")),
    ("blog.typ", include_str!("../../templates/blog.typ")),
    ("eval.md", include_str!("../../templates/eval.md")),
    ("eval.typ", include_str!("../../templates/eval.typ")),
    ("i18n/en.toml", crate::i18n::EN),
    ("i18n/zh-TW.toml", crate::i18n::ZH_TW),
];

/// An output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Markdown.
    Markdown,
    /// Typst source for the PDF.
    Typst,
}

impl Format {
    /// The suffix of its templates.
    pub fn suffix(self) -> &'static str {
        match self {
            Format::Markdown => ".md",
            Format::Typst => ".typ",
        }
    }
}

/// A filter whose output is already safe for its format.
struct Safe(fn(&str) -> String);

impl Filter<String, String> for Safe {
    fn call(&self, value: String, _: Kwargs, _: &State) -> String {
        (self.0)(&value)
    }

    fn is_safe(&self) -> bool {
        true
    }
}

/// The `code` filter: a value as a Markdown code span; `code(cell=true)` inside a table cell.
struct Code;

impl Filter<String, tera::TeraResult<String>> for Code {
    fn call(&self, value: String, kwargs: Kwargs, _: &State) -> tera::TeraResult<String> {
        let cell = kwargs.get::<bool>("cell")?.unwrap_or(false);
        Ok(crate::markdown::markdown_code_span(&value, cell))
    }

    fn is_safe(&self) -> bool {
        true
    }
}

/// The `md_url` filter: an address as a Markdown link destination, `<...>`, with what would
/// end it (angle brackets, white space, control characters) percent-encoded.
fn markdown_url(s: &str) -> String {
    let mut out = String::from("<");
    for c in s.chars() {
        if c == '<' || c == '>' || c == '\\' || c.is_whitespace() || c.is_control() {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out += &format!("%{b:02X}");
            }
        } else {
            out.push(c);
        }
    }
    out.push('>');
    out
}

fn escape_md(s: &str, w: &mut dyn std::io::Write) -> std::io::Result<()> {
    w.write_all(markup::markdown_text(s, true).as_bytes())
}

fn escape_typ(s: &str, w: &mut dyn std::io::Write) -> std::io::Result<()> {
    w.write_all(markup::typst_text(s).as_bytes())
}

/// A template source by name: the override folder first, then the built-ins.
pub fn source(name: &str, overrides: Option<&Path>) -> Result<String, RenderError> {
    if let Some(dir) = overrides {
        let p = dir.join(name);
        if p.is_file() {
            return std::fs::read_to_string(&p)
                .map_err(|source| RenderError::ReadTemplate { path: p, source });
        }
    }
    BUILTIN
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, s)| s.to_string())
        .ok_or_else(|| RenderError::NoTemplate(name.into()))
}

/// The Tera instance of one format, with every template of that format.
pub fn tera(format: Format, overrides: Option<&Path>) -> Result<Tera, RenderError> {
    let mut tera = Tera::default();
    tera.autoescape_on([format.suffix()]);
    match format {
        Format::Markdown => {
            tera.set_escape_fn(escape_md);
            tera.register_filter("md", Safe(|s| markup::markdown_safe(s, false)));
            tera.register_filter("md_inline", Safe(|s| markup::markdown_safe(s, true)));
            tera.register_filter("code", Code);
            tera.register_filter("shell_block", Safe(markup::markdown_code_block));
            tera.register_filter("text_block", Safe(super::blog::markdown_text_block));
            tera.register_filter("md_url", Safe(markdown_url));
        }
        Format::Typst => {
            tera.set_escape_fn(escape_typ);
            tera.register_filter("typmd", Safe(|s| markup::markdown_to_typst(s, false)));
            tera.register_filter("typmd_inline", Safe(|s| markup::markdown_to_typst(s, true)));
            tera.register_filter("typstr", Safe(markup::typst_string));
        }
    }
    // Added together, so that includes resolve whatever the order.
    let mut sources = Vec::new();
    for (name, _) in BUILTIN {
        if name.ends_with(format.suffix()) {
            sources.push((*name, source(name, overrides)?));
        }
    }
    tera.add_raw_templates(sources.iter().map(|(n, s)| (*n, s.as_str())))
        .map_err(|e| RenderError::Templates(e.to_string()))?;
    Ok(tera)
}

/// Writes the built-in templates into a folder for editing: a new folder, or an empty one.
///
/// A folder that holds anything is refused, naming what it holds (issue 28): the files there
/// may be someone's edited templates. On a failure (a full disk, a read-only folder) every
/// file and folder this call made is removed again, so no partial set is left to be mistaken
/// for the templates.
pub fn eject(dir: &Path) -> Result<Vec<String>, RenderError> {
    match std::fs::read_dir(dir) {
        Ok(entries) => {
            let mut held: Vec<String> = entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            if !held.is_empty() {
                held.sort();
                let more = if held.len() > 5 {
                    format!(" and {} more", held.len() - 5)
                } else {
                    String::new()
                };
                held.truncate(5);
                return Err(RenderError::NotEmpty {
                    dir: dir.into(),
                    held: format!(
                        "{}{more}",
                        held.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
                    ),
                });
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => {
            return Err(RenderError::Io { action: "read", path: dir.into(), source });
        }
    }
    let mut made: Vec<std::path::PathBuf> = Vec::new();
    let result = eject_into(dir, &mut made);
    if result.is_err() {
        // Files first, then folders, the deepest first.
        for p in made.iter().rev() {
            let _ = if p.is_dir() { std::fs::remove_dir(p) } else { std::fs::remove_file(p) };
        }
    }
    result
}

/// Writes every built-in into `dir`, recording each file and folder it makes in `made`.
fn eject_into(dir: &Path, made: &mut Vec<std::path::PathBuf>) -> Result<Vec<String>, RenderError> {
    let mut written = Vec::new();
    let folder = |p: &Path, made: &mut Vec<std::path::PathBuf>| -> Result<(), RenderError> {
        if p.is_dir() {
            return Ok(());
        }
        std::fs::create_dir(p).map_err(|source| RenderError::Io {
            action: "create",
            path: p.into(),
            source,
        })?;
        made.push(p.to_path_buf());
        Ok(())
    };
    // The folders missing above `dir` too, the outermost first, each recorded.
    let missing: Vec<&Path> =
        dir.ancestors().filter(|a| !a.as_os_str().is_empty()).take_while(|a| !a.exists()).collect();
    for a in missing.iter().rev() {
        folder(a, made)?;
    }
    for (name, src) in BUILTIN {
        let p = dir.join(name);
        if let Some(parent) = p.parent() {
            folder(parent, made)?;
        }
        let result = super::write::create(&p, src.as_bytes());
        if p.exists() {
            made.push(p.clone());
        }
        result.map_err(|source| RenderError::Io { action: "write", path: p.clone(), source })?;
        written.push(p.display().to_string());
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_markdown_value_is_literal_and_code_spans_hold_any_value() {
        let tera = tera(Format::Markdown, None).unwrap();
        let mut ctx = tera::Context::new();
        ctx.insert("v", "a``b|c\r<script>\u{1b}");
        let out = tera
            .render_str("{{ v }} / {{ v | code }} / {{ v | code(cell=true) }}", &ctx, true)
            .unwrap();
        assert_eq!(
            out,
            "a\\`\\`b\\|c &lt;script&gt;\\\\x1b / ```a``b|c <script>\\x1b``` / ```a``b\\|c <script>\\x1b```"
        );
    }
}

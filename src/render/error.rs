//! Why a report could not be rendered: every failure of the render in memory (strings,
//! templates, the render date, the template folder), typed, each with its hint. Writing the
//! report set and running typst report their own errors (`write`, `typst`).

use std::path::PathBuf;

use crate::i18n::StringsError;

/// Why a report, or a part of one, could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// A string of the report's language is missing, or its file cannot be read.
    #[error(transparent)]
    Strings(#[from] StringsError),
    /// A placeholder of an author's text (`{claim/part}`) does not parse; validation refuses
    /// it first, so this names a text that reached the render another way.
    #[error("{0}")]
    Placeholder(String),
    /// A template of the folder given with `--templates` cannot be read.
    #[error("cannot read template `{path}` ({source})")]
    ReadTemplate {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// No template has this name, built in or in the folder.
    #[error("no template named `{0}`")]
    NoTemplate(String),
    /// The templates do not parse.
    #[error("templates: {0}")]
    Templates(String),
    /// A template failed while rendering: its name, the language and Tera's chain of causes.
    #[error("template `{template}`{}: {detail}", lang.as_ref().map(|l| format!(" ({l})")).unwrap_or_default())]
    Template {
        /// The template.
        template: String,
        /// The language rendered, where one was.
        lang: Option<String>,
        /// What Tera said, with its causes.
        detail: String,
    },
    /// The context of the templates cannot be serialised.
    #[error("render context: {0}")]
    Context(String),
    /// `SOURCE_DATE_EPOCH` holds no date.
    #[error("SOURCE_DATE_EPOCH is `{value}`: {detail}")]
    Date {
        /// The variable's value.
        value: String,
        /// Why it is no date.
        detail: String,
    },
    /// The folder to eject the templates into holds files already.
    #[error("`{dir}` is not empty (it holds {held}); eject into a new or empty folder")]
    NotEmpty {
        /// The folder.
        dir: PathBuf,
        /// What it holds, as a list.
        held: String,
    },
    /// A file or folder of the template folder cannot be read, made or written.
    #[error("cannot {action} `{path}` ({source})")]
    Io {
        /// What was done: `read`, `create`, `write`.
        action: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

impl RenderError {
    /// A template failure, with Tera's chain of causes.
    pub(crate) fn template(template: &str, lang: Option<&str>, e: &tera::Error) -> RenderError {
        let mut detail = e.to_string();
        let mut cur = std::error::Error::source(e);
        while let Some(c) = cur {
            detail += &format!(": {c}");
            cur = c.source();
        }
        RenderError::Template { template: template.into(), lang: lang.map(Into::into), detail }
    }

    /// What to do about it: every error has one.
    pub fn hint(&self) -> String {
        match self {
            RenderError::Strings(e) => e.hint(),
            RenderError::ReadTemplate { .. } | RenderError::Templates(_) | RenderError::Template { .. } => {
                crate::i18n::FIX_TEMPLATE.into()
            }
            RenderError::NoTemplate(_) => {
                "a template folder overrides the built-in templates by name; `verdict templates eject DIR` writes every name there is".into()
            }
            RenderError::Placeholder(_) => {
                "write a placeholder as `{claim/part}`, `{claim/part:value}` or `{claim/part:spread}`, naming a part with a measure".into()
            }
            RenderError::Context(_) => {
                "the report's values could not be handed to the templates: a defect of verdict, worth reporting with the claims file".into()
            }
            RenderError::Date { .. } => {
                "set it to seconds since 1970-01-01 UTC (`date +%s`), or unset it".into()
            }
            RenderError::NotEmpty { .. } | RenderError::Io { .. } => {
                "pass a new or empty folder whose parent exists and is writable, on a disk with space; edit the files there and use `render --templates DIR`".into()
            }
        }
    }
}

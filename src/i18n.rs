//! UI strings in every language, from `templates/i18n/*.toml` (embedded, overridable), and
//! the [`Finding`]: a sentence as a key with arguments, rendered in any language.
//!
//! A missing key is an error, never a silent fallback to another language. Analyses, verdicts
//! and renderers all use it; it uses nothing of theirs but the Markdown code spans of
//! [`crate::markdown`], for arguments quoted in backticks.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use schemars::JsonSchema;
use serde::Serialize;

/// Why a string cannot be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StringsError {
    /// The language has no string under this key.
    #[error("missing i18n key `{key}` for `{lang}`")]
    Missing {
        /// The key.
        key: String,
        /// The language.
        lang: String,
    },
    /// The language's strings are not a TOML table of strings.
    #[error("i18n `{lang}`: {detail}")]
    Parse {
        /// The language.
        lang: String,
        /// What the TOML reader said.
        detail: String,
    },
    /// No strings are built in for the language.
    #[error("no strings for language `{0}`")]
    NoLanguage(String),
}

impl StringsError {
    /// What to do about it.
    pub fn hint(&self) -> String {
        match self {
            StringsError::Missing { .. } => {
                "a `--templates` folder's `i18n/LANG.toml` replaces the built-in strings whole: write it afresh with `verdict templates eject DIR` and edit that copy".into()
            }
            StringsError::Parse { .. } => FIX_TEMPLATE.into(),
            StringsError::NoLanguage(_) => "the languages built in are `en` and `zh-TW`".into(),
        }
    }
}

/// What to do about a template or strings file of `--templates` that does not parse.
pub(crate) const FIX_TEMPLATE: &str = "fix the template or UI strings file at the line shown (from --templates), or remove it there to use the built-in one (`verdict templates eject DIR` writes them fresh)";

/// A string error where a caller still reports errors as text.
impl From<StringsError> for String {
    fn from(e: StringsError) -> String {
        e.to_string()
    }
}

/// A reason or note, as an i18n key with named arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Finding {
    /// Key in `templates/i18n/*.toml`.
    pub key: String,
    /// Arguments substituted into the text.
    pub args: BTreeMap<String, String>,
}

impl Finding {
    /// A finding with arguments.
    pub fn new(key: &str, args: &[(&str, String)]) -> Finding {
        Finding {
            key: key.into(),
            args: args.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
        }
    }

    /// Adds an author's text as an argument in every language it is given in: `name@LANG`,
    /// shown as `{name}` in that language.
    pub fn with_text(mut self, name: &str, text: &BTreeMap<String, String>) -> Finding {
        for (lang, v) in text {
            self.args.insert(format!("{name}@{lang}"), v.clone());
        }
        self
    }

    /// The finding in English, for JSON and terminals.
    pub fn english(&self) -> String {
        self.in_language("en").unwrap_or_else(|| self.key.clone())
    }

    /// The finding in a shipped language (the embedded strings), or None when the language
    /// or the key is unknown.
    pub fn in_language(&self, lang: &str) -> Option<String> {
        static EN_STRINGS: OnceLock<Option<Strings>> = OnceLock::new();
        static ZH_TW_STRINGS: OnceLock<Option<Strings>> = OnceLock::new();
        let cell = match lang {
            "en" => &EN_STRINGS,
            "zh-TW" => &ZH_TW_STRINGS,
            _ => return None,
        };
        cell.get_or_init(|| Strings::load(lang).ok()).as_ref()?.finding(self).ok()
    }
}

/// Joins the items of a list argument; each language shows it as its `ui.list_sep`.
pub const LIST_SEP: char = '\u{1f}';

/// A list argument: the items joined so that each language can separate them its own way.
pub fn list_arg<I: IntoIterator<Item = String>>(items: I) -> String {
    items.into_iter().collect::<Vec<_>>().join(&LIST_SEP.to_string())
}

/// The English strings as shipped.
pub const EN: &str = include_str!("../templates/i18n/en.toml");
/// The Traditional Chinese strings as shipped.
pub const ZH_TW: &str = include_str!("../templates/i18n/zh-TW.toml");

/// The strings of one language.
#[derive(Debug, Clone)]
pub struct Strings {
    /// Language code.
    pub lang: String,
    map: BTreeMap<String, String>,
}

/// The embedded source of a language's strings.
pub fn embedded(lang: &str) -> Option<&'static str> {
    match lang {
        "en" => Some(EN),
        "zh-TW" => Some(ZH_TW),
        _ => None,
    }
}

impl Strings {
    /// Parses a language's TOML.
    pub fn parse(lang: &str, source: &str) -> Result<Strings, StringsError> {
        let map: BTreeMap<String, String> = toml::from_str(source)
            .map_err(|e| StringsError::Parse { lang: lang.into(), detail: e.to_string() })?;
        Ok(Strings { lang: lang.into(), map })
    }

    /// The embedded strings of a language.
    pub fn load(lang: &str) -> Result<Strings, StringsError> {
        let src = embedded(lang).ok_or_else(|| StringsError::NoLanguage(lang.into()))?;
        Strings::parse(lang, src)
    }

    /// Every string by key, for templates (`t["key"]`).
    pub fn table(&self) -> &BTreeMap<String, String> {
        &self.map
    }

    /// The keys.
    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.map.keys()
    }

    /// A string by key.
    pub fn get(&self, key: &str) -> Result<&str, StringsError> {
        self.map
            .get(key)
            .map(String::as_str)
            .ok_or_else(|| StringsError::Missing { key: key.into(), lang: self.lang.clone() })
    }

    /// A string with `{name}` arguments substituted. An argument that is a list (items
    /// joined by [`LIST_SEP`]) is joined with this language's `ui.list_sep`.
    ///
    /// The strings are Markdown. An argument quoted in backticks in the string (`` `{formula}` ``)
    /// becomes a code span whose fence is longer than any backtick run in the value, so a
    /// part id, a formula or an NVTX name holding backticks stays one span (issue 12). The
    /// string is read once: a value holding `{name}` is not substituted again.
    pub fn format(
        &self,
        key: &str,
        args: &BTreeMap<String, String>,
    ) -> Result<String, StringsError> {
        let template = self.get(key)?;
        let mut out = String::with_capacity(template.len());
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let after = &rest[open + 1..];
            let Some((name, tail)) = after.split_once('}').filter(|(n, _)| args.contains_key(*n))
            else {
                out.push('{');
                rest = after;
                continue;
            };
            let v = &args[name];
            let v = if v.contains(LIST_SEP) {
                v.replace(LIST_SEP, self.get("ui.list_sep")?)
            } else {
                v.clone()
            };
            match tail.strip_prefix('`') {
                Some(tail) if out.ends_with('`') => {
                    out.pop();
                    out.push_str(&crate::markdown::markdown_code_span(&v, false));
                    rest = tail;
                }
                _ => {
                    out.push_str(&v);
                    rest = tail;
                }
            }
        }
        out.push_str(rest);
        Ok(out)
    }

    /// A finding in this language; quantity keys in arguments are translated too.
    pub fn finding(&self, f: &Finding) -> Result<String, StringsError> {
        let mut args: BTreeMap<String, String> = f
            .args
            .iter()
            .map(|(k, v)| {
                // Quantity and statistic names are keys themselves; everything else is shown
                // as given.
                let key = match k.as_str() {
                    "claim" | "evidence" | "denominator" | "of_kind" | "to_kind" => {
                        Some(format!("q.{v}"))
                    }
                    "stat" => Some(format!("q.stat.{v}")),
                    "over" | "of_over" | "to_over" => Some(format!("q.over.{v}")),
                    // A side of a ratio with no window covers the whole trace.
                    "window" | "of_window" | "to_window" if v == "whole_trace" => {
                        Some("ui.whole_trace".to_string())
                    }
                    _ => None,
                };
                let t =
                    key.and_then(|key| self.map.get(&key)).cloned().unwrap_or_else(|| v.clone());
                (k.clone(), t)
            })
            .collect();
        // An author's text given per language (`reason@en`, `reason@zh-TW`, see
        // [`Finding::with_text`]) is shown in this language as `reason`.
        let own: Vec<(String, String)> = f
            .args
            .iter()
            .filter_map(|(k, v)| {
                let (name, lang) = k.split_once('@')?;
                (lang == self.lang).then(|| (name.to_string(), v.clone()))
            })
            .collect();
        args.extend(own);
        self.format(&f.key, &args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_legend_line_never_repeats_its_label() {
        // The legend prints `label: text`; a text opening with its label reads twice
        // (「因果主張：因果主張；…」).
        for lang in ["en", "zh-TW"] {
            let t = Strings::load(lang).unwrap();
            for kind in ["observation", "interpretation", "causal", "action", "arithmetic"] {
                let label = t.get(&format!("kind.{kind}")).unwrap().to_lowercase();
                let text = t.get(&format!("legend.{kind}")).unwrap().to_lowercase();
                assert!(!text.starts_with(&label), "{lang} {kind}: {label} / {text}");
                let article = ["a ", "an ", "the "].iter().find_map(|a| text.strip_prefix(a));
                assert!(!article.is_some_and(|t| t.starts_with(&label)), "{lang} {kind}: {text}");
            }
        }
    }

    #[test]
    fn an_authors_text_argument_is_shown_in_each_language() {
        let text: BTreeMap<String, String> =
            [("en", "one step"), ("zh-TW", "同一步")].map(|(k, v)| (k.into(), v.into())).into();
        let f = Finding::new("gate.r2.ratio_devices_differ_declared", &[("of", "a".into())])
            .with_text("reason", &text);
        assert!(f.in_language("en").unwrap().ends_with("the difference is declared: one step"));
        assert!(f.in_language("zh-TW").unwrap().ends_with("差異已說明：同一步"));
    }

    #[test]
    fn both_languages_have_the_same_keys() {
        let en = Strings::load("en").unwrap();
        let zh = Strings::load("zh-TW").unwrap();
        let a: Vec<&String> = en.keys().collect();
        let b: Vec<&String> = zh.keys().collect();
        assert_eq!(a, b);
    }

    #[test]
    fn arguments_in_backticks_stay_one_code_span_and_are_not_substituted_again() {
        let en = Strings::load("en").unwrap();
        let args = |v: &[(&str, &str)]| -> BTreeMap<String, String> {
            v.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        assert_eq!(
            en.format("claim.supported", &args(&[("part", "share")])).unwrap(),
            "`share` is supported with comparable scope"
        );
        assert_eq!(
            en.format("claim.supported", &args(&[("part", "a`` <b>x</b> ``c")])).unwrap(),
            "```a`` <b>x</b> ``c``` is supported with comparable scope"
        );
        assert_eq!(
            en.format("claim.others_open", &args(&[("part", "{parts}"), ("parts", "x")])).unwrap(),
            "`{parts}` is supported, but x stay open"
        );
        assert_eq!(
            en.format("claim.others_open", &args(&[("part", "p")])).unwrap(),
            "`p` is supported, but {parts} stay open"
        );
    }

    #[test]
    fn terminology_is_the_article_s() {
        let zh = Strings::load("zh-TW").unwrap();
        assert_eq!(zh.get("verdict.supported").unwrap(), "支持");
        assert_eq!(zh.get("verdict.partially_supported").unwrap(), "部分支持");
        assert_eq!(zh.get("verdict.unverifiable").unwrap(), "無法驗證");
        assert_eq!(zh.get("verdict.not_supported").unwrap(), "不支持");
        assert_eq!(zh.get("kind.observation").unwrap(), "觀察");
        assert_eq!(zh.get("kind.interpretation").unwrap(), "解釋");
        assert_eq!(zh.get("kind.causal").unwrap(), "因果主張");
        assert_eq!(zh.get("kind.action").unwrap(), "建議動作");
    }

    #[test]
    fn every_finding_key_used_in_code_exists() {
        let en = Strings::load("en").unwrap();
        // Every source file under the two folders, their submodules' folders included.
        let mut files = Vec::new();
        let mut dirs: Vec<std::path::PathBuf> = ["src/verdict", "src/analysis"]
            .iter()
            .map(|d| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(d))
            .collect();
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    files.push(path);
                }
            }
        }
        assert!(files.len() > 20, "{} files", files.len());
        for path in files {
            let text = std::fs::read_to_string(path).unwrap();
            for piece in text.split('"').skip(1).step_by(2) {
                if piece.starts_with("gate.r")
                    || piece.starts_with("part.")
                    || piece.starts_with("claim.")
                    || piece.starts_with("cond.")
                {
                    assert!(en.get(piece).is_ok(), "missing i18n key {piece}");
                }
            }
        }
    }
}

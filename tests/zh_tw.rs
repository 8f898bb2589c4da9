//! Traditional Chinese as written in Taiwan, not translated: one term per concept
//! (`templates/i18n/glossary.toml`) in the UI strings.

mod util;

use std::collections::BTreeMap;

use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Glossary {
    term: Vec<Term>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Term {
    concept: String,
    /// English words (or phrases) that name the concept in en.toml.
    en: Vec<String>,
    /// The chosen zh-TW term.
    zh: String,
    /// Variants no zh-TW string may use.
    rejected: Vec<String>,
    /// Keys whose English uses one of the words in another sense.
    #[serde(default)]
    except: Vec<String>,
    /// Keys that must use the term whatever their English says.
    #[serde(default)]
    keys: Vec<String>,
    #[serde(default)]
    #[allow(dead_code)]
    note: Option<String>,
}

fn glossary() -> Glossary {
    let path = util::manifest_dir().join("templates/i18n/glossary.toml");
    toml::from_str(&std::fs::read_to_string(path).unwrap()).expect("glossary.toml parses")
}

fn strings(src: &str) -> BTreeMap<String, String> {
    toml::from_str(src).expect("the strings parse")
}

fn zh() -> BTreeMap<String, String> {
    strings(verdict::i18n::ZH_TW)
}

fn en() -> BTreeMap<String, String> {
    strings(verdict::i18n::EN)
}

/// The lower-case words of an English string, without its placeholders and code spans.
fn english_words(s: &str) -> Vec<String> {
    let mut plain = String::new();
    let (mut code, mut placeholder) = (false, false);
    for c in s.chars() {
        match c {
            '`' => code = !code,
            '{' if !code => placeholder = true,
            '}' if placeholder => placeholder = false,
            _ if code || placeholder => {}
            _ => plain.push(c),
        }
        if c == '`' || c == '}' {
            plain.push(' ');
        }
    }
    plain
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(String::from)
        .collect()
}

/// Whether `words` holds the word sequence of `phrase`.
fn uses_phrase(words: &[String], phrase: &str) -> bool {
    let p = english_words(phrase);
    !p.is_empty() && words.windows(p.len()).any(|w| w == p.as_slice())
}

/// Whether `text` uses the rejected `variant` of `term`: an occurrence inside the chosen
/// term itself (時間窗內 for 窗內) does not count.
fn uses_rejected(text: &str, term: &str, variant: &str) -> bool {
    let (text, term, variant) = (text.to_lowercase(), term.to_lowercase(), variant.to_lowercase());
    if variant.contains(&term) {
        text.contains(&variant)
    } else {
        text.replace(&term, "\u{0}").contains(&variant)
    }
}

#[test]
fn no_zh_tw_string_uses_a_rejected_variant() {
    let zh = zh();
    let mut found = Vec::new();
    for t in &glossary().term {
        for v in &t.rejected {
            for (k, s) in &zh {
                if uses_rejected(s, &t.zh, v) {
                    found.push(format!("{k}: {v} for {} (use {}): {s}", t.concept, t.zh));
                }
            }
        }
    }
    assert!(found.is_empty(), "rejected variants:\n{}", found.join("\n"));
}

#[test]
fn every_zh_tw_string_uses_the_chosen_terms_of_its_concepts() {
    let (zh, en) = (zh(), en());
    let mut missing = Vec::new();
    for t in &glossary().term {
        let term = t.zh.to_lowercase();
        for (k, e) in &en {
            let words = english_words(e);
            let named = t.en.iter().any(|w| uses_phrase(&words, w));
            if (named && !t.except.contains(k)) || t.keys.contains(k) {
                let s = &zh[k];
                if !s.to_lowercase().contains(&term) {
                    missing.push(format!("{k}: {} → {}: {e} | {s}", t.concept, t.zh));
                }
            }
        }
    }
    assert!(missing.is_empty(), "chosen terms missing:\n{}", missing.join("\n"));
}

#[test]
fn the_glossary_is_consistent_and_every_chosen_term_is_used() {
    let (zh, g) = (zh(), glossary());
    for t in &g.term {
        assert!(
            zh.values().any(|s| s.to_lowercase().contains(&t.zh.to_lowercase())),
            "{}: no zh-TW string uses {}",
            t.concept,
            t.zh
        );
        for k in t.except.iter().chain(&t.keys) {
            assert!(zh.contains_key(k), "{}: no key {k}", t.concept);
        }
        assert!(!t.rejected.contains(&t.zh), "{}: {} is both chosen and rejected", t.concept, t.zh);
        // One concept's chosen term is not another's rejected variant.
        for other in &g.term {
            for v in &other.rejected {
                assert!(
                    !uses_rejected(&t.zh, &other.zh, v),
                    "{} ({}) uses {v}, rejected for {}",
                    t.concept,
                    t.zh,
                    other.concept
                );
            }
        }
    }
    // The article's verdict and content-type words.
    let chosen: BTreeMap<&str, &str> =
        g.term.iter().map(|t| (t.concept.as_str(), t.zh.as_str())).collect();
    for (concept, word) in [
        ("supported", "支持"),
        ("partially supported", "部分支持"),
        ("unverifiable", "無法驗證"),
        ("not supported", "不支持"),
        ("observation", "觀察"),
        ("interpretation", "解釋"),
        ("causal claim", "因果主張"),
        ("action", "建議動作"),
        ("window", "時間窗"),
        ("denominator", "分母"),
    ] {
        assert_eq!(chosen.get(concept).copied(), Some(word), "{concept}");
    }
}

#[test]
fn the_term_checks_read_words_and_skip_the_chosen_term() {
    assert!(
        uses_rejected("時間窗口", "時間窗", "時間窗口") && uses_rejected("窗口", "時間窗", "窗口")
    );
    assert!(
        !uses_rejected("時間窗內", "時間窗", "窗內") && uses_rejected("窗內", "時間窗", "窗內")
    );
    assert!(!uses_rejected("時間戳記", "時間戳記", "時間戳"));
    assert_eq!(
        english_words("the claim's `{formula}` over {n} devices"),
        ["the", "claim", "s", "over", "devices"]
    );
}

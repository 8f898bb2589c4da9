//! Control characters made visible: the one rule every output (Markdown, Typst, SVG, the
//! terminal) applies to the values it prints, before its own escaping.
//!
//! A kernel name, an NVTX range or a claim's text can hold bytes that a terminal executes
//! (ESC, BEL), that XML forbids, or that reorder what a reader sees (a right-to-left
//! override). They are shown as escapes (`\x1b`, `\u{202e}`) instead of being dropped, so the
//! reader can tell that the value holds them. This module must not do any format's own escaping.

use std::borrow::Cow;

/// The bidirectional embeddings, overrides and isolates (LRE, RLE, PDF, LRO, RLO, LRI, RLI,
/// FSI, PDI): they reorder the text around them, so a name could read as something else.
const BIDI: [char; 9] = [
    '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}', '\u{202E}', '\u{2066}', '\u{2067}', '\u{2068}',
    '\u{2069}',
];

/// Whether `c` is shown as an escape: a C0 control (tab and line feed included; callers keep
/// them where they are legitimate), DEL, a C1 control, or a bidirectional control.
pub fn is_hidden(c: char) -> bool {
    c.is_control() || BIDI.contains(&c)
}

/// The escape that shows `c`: `\x1b` for a control character, `\u{202e}` for a bidirectional
/// control; `None` when `c` shows as itself.
pub fn escape(c: char) -> Option<String> {
    if c.is_control() {
        Some(format!("\\x{:02x}", c as u32))
    } else if BIDI.contains(&c) {
        Some(format!("\\u{{{:x}}}", c as u32))
    } else {
        None
    }
}

/// `s` with every character of [`is_hidden`] shown as its [`escape`], except those in `keep`.
pub fn visible<'a>(s: &'a str, keep: &[char]) -> Cow<'a, str> {
    if !s.chars().any(|c| is_hidden(c) && !keep.contains(&c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match escape(c) {
            Some(e) if !keep.contains(&c) => out.push_str(&e),
            _ => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_bidi_overrides_become_escapes() {
        assert_eq!(visible("a\u{1b}[31mb\u{7}", &[]), "a\\x1b[31mb\\x07");
        assert_eq!(visible("\0\u{7f}\u{9b}", &[]), "\\x00\\x7f\\x9b");
        assert_eq!(visible("abc\u{202e}fed", &[]), "abc\\u{202e}fed");
        assert_eq!(visible("a\tb\nc", &['\n']), "a\\x09b\nc");
        assert_eq!(visible("a\tb\nc\r", &['\t', '\n']), "a\tb\nc\\x0d");
    }

    #[test]
    fn text_without_them_is_borrowed() {
        assert!(matches!(visible("通訊 17.8% <b>`x`</b> \u{200f}", &[]), Cow::Borrowed(_)));
    }
}

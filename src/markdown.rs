//! Markdown the program writes from values rather than from author text: a value as a code
//! span, its fence longer than any backtick run in it. A leaf: the judge, the CI formats, the
//! UI strings and the report's filters all quote values this way.

use std::borrow::Cow;

/// A value as a code span on one line (the `code` filter): the fence is longer than any
/// backtick run inside it.
///
/// Line breaks become spaces (CommonMark reads them so inside a span, but a line that starts
/// with `<script>` or `|` would be read as a new block before the span is seen), and other
/// control characters and bidirectional overrides become escapes (`\x1b`, see
/// [`crate::visible`]); a code span shows backslashes as they are. An empty value is a span
/// holding one space, as `` ` ` `` (two backticks alone are not a span).
///
/// `cell` is for a table cell, where GFM splits cells at `|` even inside a code span: `|` is
/// then written `\|`, which GFM unescapes before the span is parsed. Outside a table that
/// backslash would show, so it is written only when asked.
pub fn markdown_code_span(code: &str, cell: bool) -> String {
    let code = normalize_newlines(code).replace('\n', " ");
    let code = crate::visible::visible(&code, &['\t']);
    if code.is_empty() {
        return "` `".to_owned();
    }
    let fence = "`".repeat(longest_run(&code, '`') + 1);
    // CommonMark strips one space from each end when both are present, and a code span may not
    // start or end with its fence character, so pad in those cases.
    let pad = code.starts_with('`')
        || code.ends_with('`')
        || (code.starts_with(' ') && code.ends_with(' ') && !code.trim().is_empty());
    let pad = if pad { " " } else { "" };
    let body = if cell { code.replace('|', "\\|") } else { code.into_owned() };
    format!("{fence}{pad}{body}{pad}{fence}")
}

/// The longest run of `c` in `s`.
pub(crate) fn longest_run(s: &str, c: char) -> usize {
    let (mut best, mut run) = (0, 0);
    for x in s.chars() {
        run = if x == c { run + 1 } else { 0 };
        best = best.max(run);
    }
    best
}

pub(crate) fn normalize_newlines(s: &str) -> Cow<'_, str> {
    if s.contains('\r') {
        Cow::Owned(s.replace("\r\n", "\n").replace('\r', "\n"))
    } else {
        Cow::Borrowed(s)
    }
}

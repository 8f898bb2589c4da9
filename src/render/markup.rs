//! Author Markdown to safe Markdown and Typst markup, and escaping of plain text for both formats.
//! Owns every escaping decision for generated `.md` and `.typ` text, so that no author string can
//! inject Typst code, raw HTML or table structure, and every number, id, path or command shows literally.
//! Must not decide layout or wording (the templates do), and must never pass author text through unescaped.

use crate::markdown::{longest_run, markdown_code_span, normalize_newlines};

use pulldown_cmark::{CodeBlockKind, Event, LinkType, Options, Parser, Tag, TagEnd};

/// One shared constructor for the Markdown parser with the project's options (tables and strikethrough on).
///
/// Every parser in the crate comes from here, so author text means the same thing in every output
/// (mdBook's `new_cmark_parser`).
pub fn parser(src: &str) -> Parser<'_> {
    Parser::new_ext(src, Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH)
}

/// Plain text as Typst markup that shows it literally (for use inside markup mode, e.g. inside `[...]`).
///
/// Every ASCII punctuation character is backslash-escaped: in Typst markup `\` followed by any
/// non-space character other than `u{` is an escape that shows that character, so this one rule covers
/// markup syntax, line-start markers, comments, shorthands, auto-links, labels and references, and
/// also keeps `"`/`'` straight instead of smart quotes. Line breaks become `#linebreak()`; tabs become
/// spaces; other control characters and bidirectional overrides are shown as escapes (`\x1b`, see
/// [`crate::visible`]). The output never ends inside an expression, so it can be followed by
/// anything, including `.`, `(` or `[`.
pub fn typst_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 4);
    push_typst_text(&mut out, s);
    out
}

fn push_typst_text(out: &mut String, s: &str) {
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                if chars.peek() != Some(&'\n') {
                    out.push_str("#linebreak()");
                }
            }
            // Typst reads these as line ends; two in a row would start a new paragraph.
            '\n' | '\u{2028}' | '\u{2029}' => out.push_str("#linebreak()"),
            '\t' => out.push(' '),
            c if c.is_ascii_punctuation() => {
                out.push('\\');
                out.push(c);
            }
            c => match crate::visible::escape(c) {
                Some(e) => push_typst_text(out, &e),
                None => out.push(c),
            },
        }
    }
}

/// A fenced `sh` code block holding `s` literally: the fence is longer than any run of
/// backticks inside it. Control characters other than tab and line breaks, and bidirectional
/// overrides, are shown as escapes (`\x1b`, see [`crate::visible`]).
pub fn markdown_code_block(s: &str) -> String {
    let s = code_block_text(s);
    let fence = "`".repeat((longest_run(&s, '`') + 1).max(3));
    format!("{fence}sh\n{}\n{fence}", s.trim_end_matches('\n'))
}

/// The text of a code block: line breaks as `\n`, every other control character but tab and
/// every bidirectional override shown as an escape.
fn code_block_text(s: &str) -> String {
    crate::visible::visible(&normalize_newlines(s), &['\t', '\n']).into_owned()
}

/// Plain text as the body of a Typst string literal (escape `\` and `"`, and newlines as \n), without the quotes.
///
/// Line breaks (`\r\n`, `\r`, `\n`) are kept as `\n` and tabs as `\t`, for code blocks; other
/// control characters and bidirectional overrides are shown as escapes (`\x1b`, see
/// [`crate::visible`]), so the string a raw block or a link shows never holds them. The literal
/// stays on one source line.
pub fn typst_string(s: &str) -> String {
    let s = normalize_newlines(s);
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\u{2028}' | '\u{2029}' => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => match crate::visible::escape(c) {
                Some(e) => out.push_str(&e.replace('\\', "\\\\")),
                None => out.push(c),
            },
        }
    }
    out
}

/// Author Markdown as Typst markup.
///
/// `inline` is for a table cell or a heading: paragraphs are joined with `#linebreak()`, lists are
/// flattened to `; `-separated text (a nested list in parentheses after its parent item), a block
/// quote becomes an inline `#quote[..]`, and no block construct is emitted.
///
/// Text goes through [`typst_text`], so author text can add emphasis, code and links but can never
/// run Typst code. Headings become bold paragraphs because author text must not change the document
/// outline; raw HTML is shown as text; images show their alt text only; tables are flattened to rows
/// of `a | b` text. Links are kept only for `http`, `https` and `mailto` targets; any other
/// scheme (`javascript:`, `file:`…) and any relative target (`../x`, `/etc/passwd`, `//host`) is
/// shown as text after the link text. A soft line break between
/// two CJK characters is dropped rather than shown as a space.
pub fn markdown_to_typst(src: &str, inline: bool) -> String {
    let mut w = TypstWriter { core: Core::new(inline) };
    walk(src, &mut w);
    w.core.out
}

/// Plain text as Markdown that shows it literally.
///
/// `cell` is for a table cell: newlines become spaces. (`|` is escaped in both modes, because a
/// paragraph line holding `|` can turn into a table header.)
///
/// Targets CommonMark with the GFM table and strikethrough extensions (GitHub, pulldown-cmark).
/// Characters that are meaningful anywhere (`` \ ` * [ ] ~ | $ ``) are always backslash-escaped; `$`
/// because GitHub renders `$…$` as math. `<`, `>` and `&` become entities, which stay inert even in
/// renderers without CommonMark's backslash escapes. Characters that are meaningful only in some
/// places are escaped only there, so kernel names and formulas stay readable in the raw file: `_`
/// unless it sits between two letters or digits (intraword `_` cannot open emphasis), and `# - + =`
/// and a list number's `.`/`)` only at the start of a line. Without `cell`, leading and trailing
/// whitespace on each line is dropped, because it would otherwise make code blocks or hard breaks.
pub fn markdown_text(s: &str, cell: bool) -> String {
    let s = normalize_newlines(s);
    let mut out = String::with_capacity(s.len() + s.len() / 4);
    for (i, line) in s.split('\n').enumerate() {
        if i > 0 {
            out.push(if cell { ' ' } else { '\n' });
        }
        let line = if cell { line } else { line.trim() };
        push_md_text(&mut out, line, i == 0 || !cell);
    }
    out
}

/// Author Markdown re-emitted as safe Markdown: raw HTML (block and inline) is shown as escaped text, never passed through.
///
/// Text goes through the same escaping as [`markdown_text`]; emphasis, strong, strikethrough, code,
/// links, lists, block quotes and code blocks are re-emitted. Headings become bold paragraphs (author
/// text must not change the document outline), images show their alt text only, and tables are
/// flattened to rows of `a | b` text. Links keep only `http`, `https` and `mailto` targets; others are
/// shown as text after the link text.
///
/// In `inline` mode the output is one line with no HTML: paragraphs, hard line breaks and table rows
/// are joined with ` / `, list items with `; ` (a nested list in parentheses after its parent item),
/// code blocks become code spans, and every `|` is escaped, so the result fits in a table cell.
/// ` / ` rather than `<br>` because no HTML may appear in the output at all. A soft line break
/// between two CJK characters is dropped in both modes.
pub fn markdown_safe(src: &str, inline: bool) -> String {
    let mut w = MdWriter { core: Core::new(inline), prefixes: Vec::new() };
    walk(src, &mut w);
    w.core.out
}

/// A separator owed before the next content, written lazily so that no container ends with one.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Gap {
    None,
    Item,
    Block,
}

/// An open list: the next number for ordered lists, and whether it sits inside another list.
struct ListState {
    next: Option<u64>,
    items: usize,
    nested: bool,
    /// Its items hold paragraphs (pulldown-cmark emits none in a tight list), so they need blank lines
    /// (only Markdown output reads it).
    loose: bool,
}

/// An open link: kept, with its target and where its text starts in the output, or refused.
enum OpenLink {
    Kept { url: String, text_at: usize },
    Refused(String),
}

/// An inline span whose delimiters depend on the output format.
#[derive(Clone, Copy)]
enum Span {
    Emphasis,
    Strong,
    Strikethrough,
    Superscript,
    Subscript,
}

/// Event-walk state that both output formats share.
struct Core {
    out: String,
    inline: bool,
    gap: Gap,
    /// Nothing written yet in the current container, so an owed gap is dropped.
    fresh: bool,
    /// The next character written starts a line, where `#`, `-`, `1.`… would start a block
    /// (only Markdown output reads it).
    line_start: bool,
    /// Text and HTML not yet escaped; adjacent text events are merged before escaping.
    literal: String,
    /// Last character of text written, for deciding whether a soft break is a space.
    last: Option<char>,
    lists: Vec<ListState>,
    /// An open code block: its language and the code so far.
    code: Option<(String, String)>,
    links: Vec<OpenLink>,
    cells: usize,
}

impl Core {
    fn new(inline: bool) -> Self {
        Core {
            out: String::new(),
            inline,
            gap: Gap::None,
            fresh: true,
            line_start: true,
            literal: String::new(),
            last: None,
            lists: Vec::new(),
            code: None,
            links: Vec::new(),
            cells: 0,
        }
    }
}

/// One output format of [`walk`]: how each Markdown construct is written.
///
/// The walk owns everything both formats share: merging adjacent text before escaping, the lazy
/// gaps between blocks, list numbering and inline list flattening, table cells, link scheme
/// filtering, code block collection and dropping soft breaks between CJK characters. A sink writes
/// only its own syntax, at the point the walk has already led up to (any owed gap written). The
/// provided methods are the shared helpers; sinks use them and do not override them.
trait Sink {
    /// The brackets around a nested list that inline mode flattens into its parent item.
    const NESTED_LIST: [&'static str; 2];

    fn core(&mut self) -> &mut Core;
    /// Writes the separator for an owed `gap` (nothing for `Gap::None`).
    fn separator(&mut self, gap: Gap);
    /// Writes merged author text or HTML, escaped; it may hold line breaks but does not end with one.
    fn text(&mut self, text: &str);
    /// Writes generated text that stays on the current line (a list number, a refused link's
    /// target), escaped for where it stands.
    fn plain(&mut self, text: &str);
    /// Writes an inline code span.
    fn code(&mut self, code: &str);
    fn soft_break(&mut self);
    fn hard_break(&mut self);
    /// Writes a thematic break outside inline mode.
    fn rule(&mut self);
    /// The opening and closing delimiters of `span`, or `None` to keep only its text.
    fn delimiters(span: Span) -> Option<[&'static str; 2]>;
    fn block_quote_start(&mut self);
    fn block_quote_end(&mut self);
    /// Writes a whole code block: the language of a fenced block (empty if none or not plain) and
    /// the code without its final newline.
    fn code_block(&mut self, lang: &str, code: &str);
    /// Opens a list outside inline mode; `start` is the first number of an ordered list.
    fn list_start(&mut self, start: Option<u64>);
    /// Closes a list outside inline mode.
    fn list_end(&mut self);
    /// Opens a list item outside inline mode; `number` is its number in an ordered list.
    fn item_start(&mut self, number: Option<u64>, first: bool);
    /// Closes a list item outside inline mode.
    fn item_end(&mut self);
    /// What opens a kept link to `url`, before its text.
    fn link_start(url: &str) -> String;
    /// Closes a kept link to `url`; `empty` if it has no text.
    fn link_end(&mut self, url: &str, empty: bool);

    /// Writes the gap owed before new content, unless nothing has been written in the container yet.
    fn lead(&mut self) {
        if !self.core().fresh {
            let gap = self.core().gap;
            self.separator(gap);
        }
        let core = self.core();
        core.gap = Gap::None;
        core.fresh = false;
    }

    fn open_block(&mut self) {
        let core = self.core();
        core.gap = core.gap.max(Gap::Block);
        self.lead();
    }

    fn close_block(&mut self) {
        let core = self.core();
        core.gap = core.gap.max(Gap::Block);
    }

    /// Writes markup after any owed gap.
    fn mark(&mut self, s: &str) {
        self.lead();
        let core = self.core();
        core.out.push_str(s);
        core.line_start = false;
    }
}

/// The one walk over the events of author Markdown, writing each construct through `sink`.
fn walk<S: Sink>(src: &str, sink: &mut S) {
    let events: Vec<Event<'_>> = parser(src).collect();
    for (i, event) in events.iter().enumerate() {
        if !matches!(event, Event::Text(_) | Event::Html(_) | Event::InlineHtml(_)) {
            flush_literal(sink);
        }
        let core = sink.core();
        match event {
            Event::Text(t) => match &mut core.code {
                Some((_, code)) => code.push_str(t),
                None => core.literal.push_str(t),
            },
            Event::Html(t) | Event::InlineHtml(t) => core.literal.push_str(t),
            Event::Code(c) => {
                sink.lead();
                sink.code(c);
                let core = sink.core();
                core.last = c.chars().last();
                core.line_start = false;
            }
            Event::InlineMath(m) => core.literal.push_str(&format!("${m}$")),
            Event::DisplayMath(m) => core.literal.push_str(&format!("$${m}$$")),
            Event::FootnoteReference(r) => core.literal.push_str(&format!("[^{r}]")),
            Event::TaskListMarker(done) => {
                core.literal.push_str(if *done { "[x] " } else { "[ ] " })
            }
            Event::SoftBreak => {
                if !joins_without_space(core.last, next_char(&events, i)) {
                    sink.soft_break();
                }
            }
            Event::HardBreak => {
                sink.lead();
                sink.hard_break();
            }
            Event::Rule if core.inline => core.gap = core.gap.max(Gap::Block),
            Event::Rule => {
                sink.open_block();
                sink.rule();
                sink.close_block();
            }
            Event::Start(tag) => start(sink, tag),
            Event::End(tag) => end(sink, *tag),
        }
    }
    flush_literal(sink);
}

/// Writes the merged text and HTML collected since the last other event.
fn flush_literal<S: Sink>(sink: &mut S) {
    if sink.core().literal.is_empty() {
        return;
    }
    sink.lead();
    // An HTML block's last line ends with a newline that would become a stray line break.
    let literal = std::mem::take(&mut sink.core().literal);
    let literal = literal.trim_end_matches(['\n', '\r']);
    sink.text(literal);
    sink.core().last = literal.chars().last();
}

fn start<S: Sink>(sink: &mut S, tag: &Tag<'_>) {
    let inline = sink.core().inline;
    match tag {
        Tag::Paragraph
        | Tag::HtmlBlock
        | Tag::TableHead
        | Tag::TableRow
        | Tag::FootnoteDefinition(_)
        | Tag::DefinitionList
        | Tag::DefinitionListTitle
        | Tag::DefinitionListDefinition
        | Tag::MetadataBlock(_) => {
            if let (Tag::Paragraph, Some(list)) = (tag, sink.core().lists.last_mut()) {
                list.loose = true;
            }
            sink.open_block();
            sink.core().cells = 0;
        }
        // The alt text arrives as the image tag's children; the image itself is never fetched.
        Tag::Table(_) | Tag::Image { .. } => {}
        Tag::TableCell => {
            if sink.core().cells > 0 {
                sink.mark(" \\| ");
            }
            sink.core().cells += 1;
        }
        Tag::Heading { .. } => {
            sink.open_block();
            open_span(sink, Span::Strong);
        }
        Tag::BlockQuote(_) => {
            sink.open_block();
            sink.block_quote_start();
            sink.core().fresh = true;
        }
        Tag::CodeBlock(kind) => {
            sink.open_block();
            sink.core().code = Some((code_lang(kind), String::new()));
        }
        Tag::List(start) => {
            let core = sink.core();
            let nested = !core.lists.is_empty();
            core.lists.push(ListState { next: *start, items: 0, nested, loose: false });
            if inline && nested {
                core.gap = Gap::None;
                sink.mark(S::NESTED_LIST[0]);
            } else {
                // A list inside an item follows the item's text on the next line, not a new paragraph.
                core.gap = core.gap.max(if nested { Gap::Item } else { Gap::Block });
                sink.lead();
                if !inline {
                    sink.list_start(*start);
                }
            }
        }
        Tag::Item => {
            let core = sink.core();
            let list = core.lists.last_mut().expect("pulldown-cmark nests items in lists");
            let first = list.items == 0;
            list.items += 1;
            let number = list.next;
            list.next = number.map(|n| n + 1);
            if inline {
                core.gap = Gap::None;
                if !first {
                    sink.separator(Gap::Item);
                }
                if let Some(n) = number {
                    sink.plain(&format!("{n}. "));
                }
                sink.core().line_start = false;
            } else {
                sink.item_start(number, first);
            }
            sink.core().fresh = true;
        }
        Tag::Emphasis => open_span(sink, Span::Emphasis),
        Tag::Strong => open_span(sink, Span::Strong),
        Tag::Strikethrough => open_span(sink, Span::Strikethrough),
        Tag::Superscript => open_span(sink, Span::Superscript),
        Tag::Subscript => open_span(sink, Span::Subscript),
        Tag::Link { link_type, dest_url, .. } => match link_target(*link_type, dest_url) {
            Some(url) => {
                sink.mark(&S::link_start(&url));
                let core = sink.core();
                core.links.push(OpenLink::Kept { url, text_at: core.out.len() });
            }
            None => sink.core().links.push(OpenLink::Refused(dest_url.to_string())),
        },
    }
}

fn end<S: Sink>(sink: &mut S, tag: TagEnd) {
    let inline = sink.core().inline;
    match tag {
        TagEnd::Paragraph
        | TagEnd::HtmlBlock
        | TagEnd::TableHead
        | TagEnd::TableRow
        | TagEnd::FootnoteDefinition
        | TagEnd::DefinitionList
        | TagEnd::DefinitionListTitle
        | TagEnd::DefinitionListDefinition
        | TagEnd::MetadataBlock(_) => sink.close_block(),
        TagEnd::Table | TagEnd::TableCell | TagEnd::Image => {}
        TagEnd::Heading(_) => {
            close_span(sink, Span::Strong);
            sink.close_block();
        }
        TagEnd::BlockQuote(_) => {
            sink.block_quote_end();
            // The quote's marker is written even when the quote is empty: what follows needs
            // its gap, or it would start on the marker's line, inside the quote.
            sink.core().fresh = false;
            sink.close_block();
        }
        TagEnd::CodeBlock => {
            let (lang, code) = sink.core().code.take().unwrap_or_default();
            let code = code.strip_suffix('\n').unwrap_or(&code);
            sink.lead();
            sink.code_block(&lang, code);
            let core = sink.core();
            core.last = code.chars().last();
            core.line_start = false;
            sink.close_block();
        }
        TagEnd::List(_) => {
            let core = sink.core();
            let list = core.lists.pop().expect("pulldown-cmark balances lists");
            if inline && list.nested {
                core.gap = Gap::None;
                sink.mark(S::NESTED_LIST[1]);
            } else {
                if !inline {
                    sink.list_end();
                }
                sink.close_block();
            }
        }
        TagEnd::Item => {
            if inline {
                sink.core().gap = Gap::None;
            } else {
                sink.item_end();
            }
            sink.core().fresh = false;
        }
        TagEnd::Emphasis => close_span(sink, Span::Emphasis),
        TagEnd::Strong => close_span(sink, Span::Strong),
        TagEnd::Strikethrough => close_span(sink, Span::Strikethrough),
        TagEnd::Superscript => close_span(sink, Span::Superscript),
        TagEnd::Subscript => close_span(sink, Span::Subscript),
        TagEnd::Link => match sink.core().links.pop() {
            Some(OpenLink::Kept { url, text_at }) => {
                let empty = text_at == sink.core().out.len();
                sink.link_end(&url, empty);
            }
            Some(OpenLink::Refused(dest)) if !dest.trim().is_empty() => {
                sink.lead();
                sink.plain(&format!(" ({dest})"));
            }
            Some(OpenLink::Refused(_)) | None => {}
        },
    }
}

fn open_span<S: Sink>(sink: &mut S, span: Span) {
    if let Some([open, _]) = S::delimiters(span) {
        sink.mark(open);
    }
}

fn close_span<S: Sink>(sink: &mut S, span: Span) {
    if let Some([_, close]) = S::delimiters(span) {
        sink.core().out.push_str(close);
    }
}

/// The Typst output of [`walk`], for [`markdown_to_typst`].
struct TypstWriter {
    core: Core,
}

impl TypstWriter {
    fn close_container(&mut self) {
        self.core.out.push(']');
        self.core.gap = Gap::None;
        self.core.fresh = false;
    }
}

impl Sink for TypstWriter {
    const NESTED_LIST: [&'static str; 2] = [" \\(", "\\)"];

    fn core(&mut self) -> &mut Core {
        &mut self.core
    }

    fn separator(&mut self, gap: Gap) {
        self.core.out.push_str(match (gap, self.core.inline) {
            (Gap::None, _) => "",
            (Gap::Item, true) => "\\; ",
            (Gap::Block, true) => "#linebreak()",
            (Gap::Item, false) => "\n",
            (Gap::Block, false) => "\n\n",
        });
    }

    fn text(&mut self, text: &str) {
        push_typst_text(&mut self.core.out, text);
    }

    fn plain(&mut self, text: &str) {
        push_typst_text(&mut self.core.out, text);
    }

    fn code(&mut self, code: &str) {
        self.core.out.push_str(&format!("#raw(\"{}\")", typst_string(code)));
    }

    fn soft_break(&mut self) {
        self.core.out.push(' ');
    }

    fn hard_break(&mut self) {
        self.core.out.push_str("#linebreak()");
    }

    fn rule(&mut self) {
        self.core.out.push_str("#line(length: 100%)");
    }

    fn delimiters(span: Span) -> Option<[&'static str; 2]> {
        let open = match span {
            Span::Emphasis => "#emph[",
            Span::Strong => "#strong[",
            Span::Strikethrough => "#strike[",
            Span::Superscript => "#super[",
            Span::Subscript => "#sub[",
        };
        Some([open, "]"])
    }

    fn block_quote_start(&mut self) {
        let open = if self.core.inline { "#quote[" } else { "#quote(block: true)[" };
        self.core.out.push_str(open);
    }

    fn block_quote_end(&mut self) {
        self.close_container();
    }

    fn code_block(&mut self, lang: &str, code: &str) {
        let out = &mut self.core.out;
        out.push_str("#raw(");
        if !self.core.inline {
            out.push_str("block: true, ");
            if !lang.is_empty() {
                out.push_str(&format!("lang: \"{}\", ", typst_string(lang)));
            }
        }
        out.push_str(&format!("\"{}\")", typst_string(code)));
    }

    fn list_start(&mut self, start: Option<u64>) {
        match start {
            None => self.core.out.push_str("#list("),
            Some(1) => self.core.out.push_str("#enum("),
            Some(n) => self.core.out.push_str(&format!("#enum(start: {n}, ")),
        }
    }

    fn list_end(&mut self) {
        self.core.out.push(')');
    }

    fn item_start(&mut self, _number: Option<u64>, first: bool) {
        if !first {
            self.core.out.push_str(", ");
        }
        self.mark("[");
    }

    fn item_end(&mut self) {
        self.close_container();
    }

    fn link_start(url: &str) -> String {
        format!("#link(\"{}\")[", typst_string(url))
    }

    fn link_end(&mut self, _url: &str, empty: bool) {
        if empty {
            // `#link(url)` without a body shows the URL, so an empty `[](url)` stays visible.
            self.core.out.pop();
        } else {
            self.core.out.push(']');
        }
    }
}

/// The Markdown output of [`walk`], for [`markdown_safe`].
struct MdWriter {
    core: Core,
    /// What each continuation line needs so it stays inside the open block quotes and list items.
    prefixes: Vec<String>,
}

impl MdWriter {
    fn newline(&mut self) {
        if self.core.inline {
            self.core.out.push(' ');
            return;
        }
        self.core.out.push('\n');
        for p in &self.prefixes {
            self.core.out.push_str(p);
        }
        self.core.line_start = true;
    }
}

impl Sink for MdWriter {
    const NESTED_LIST: [&'static str; 2] = [" (", ")"];

    fn core(&mut self) -> &mut Core {
        &mut self.core
    }

    fn separator(&mut self, gap: Gap) {
        match (gap, self.core.inline) {
            (Gap::None, _) => {}
            (Gap::Item, true) => self.core.out.push_str("; "),
            (Gap::Block, true) => self.core.out.push_str(" / "),
            (Gap::Item, false) => self.newline(),
            (Gap::Block, false) => {
                self.core.out.push('\n');
                let prefix = self.prefixes.concat();
                self.core.out.push_str(prefix.trim_end());
                self.newline();
            }
        }
    }

    fn text(&mut self, text: &str) {
        for (i, line) in normalize_newlines(text).split('\n').enumerate() {
            if i > 0 {
                self.newline();
            }
            let line_start = self.core.line_start;
            let line = if line_start { line.trim_start() } else { line };
            push_md_text(&mut self.core.out, line, line_start);
            if !line.is_empty() {
                self.core.line_start = false;
            }
        }
    }

    fn plain(&mut self, text: &str) {
        push_md_text(&mut self.core.out, text, self.core.line_start);
    }

    fn code(&mut self, code: &str) {
        self.core.out.push_str(&markdown_code_span(code, self.core.inline));
    }

    fn soft_break(&mut self) {
        self.newline();
    }

    fn hard_break(&mut self) {
        if self.core.inline {
            self.core.out.push_str(" / ");
        } else {
            self.core.out.push('\\');
            self.newline();
        }
    }

    fn rule(&mut self) {
        // `***` rather than `---`: `- ---` would be one thematic break, not an item holding one.
        self.core.out.push_str("***");
    }

    fn delimiters(span: Span) -> Option<[&'static str; 2]> {
        match span {
            Span::Emphasis => Some(["*", "*"]),
            Span::Strong => Some(["**", "**"]),
            Span::Strikethrough => Some(["~~", "~~"]),
            // Neither has a CommonMark form; the text is kept, the raise or drop is not.
            Span::Superscript | Span::Subscript => None,
        }
    }

    fn block_quote_start(&mut self) {
        if !self.core.inline {
            self.core.out.push_str("> ");
            self.prefixes.push("> ".to_owned());
        }
    }

    fn block_quote_end(&mut self) {
        if !self.core.inline {
            self.prefixes.pop();
        }
    }

    fn code_block(&mut self, lang: &str, code: &str) {
        if self.core.inline {
            self.core.out.push_str(&markdown_code_span(code, true));
        } else {
            let code = &code_block_text(code);
            let fence = "`".repeat(longest_run(code, '`').max(2) + 1);
            self.core.out.push_str(&fence);
            self.core.out.push_str(lang);
            for line in code.split('\n').filter(|_| !code.is_empty()) {
                self.newline();
                self.core.out.push_str(line);
            }
            self.newline();
            self.core.out.push_str(&fence);
        }
    }

    fn list_start(&mut self, _start: Option<u64>) {}

    fn list_end(&mut self) {}

    fn item_start(&mut self, number: Option<u64>, first: bool) {
        let marker = match number {
            Some(n) => format!("{n}. "),
            None => "- ".to_owned(),
        };
        if !first {
            self.core.gap = self.core.gap.max(Gap::Item);
        }
        self.lead();
        self.core.out.push_str(&marker);
        self.prefixes.push(" ".repeat(marker.len()));
        self.core.line_start = true;
    }

    fn item_end(&mut self) {
        self.prefixes.pop();
        // Not `max`: a nested list that closed the item left a blank-line gap, which would turn a
        // tight list loose.
        let loose = self.core.lists.last().is_some_and(|l| l.loose);
        self.core.gap = if loose { Gap::Block } else { Gap::Item };
    }

    fn link_start(_url: &str) -> String {
        "[".to_owned()
    }

    fn link_end(&mut self, url: &str, empty: bool) {
        // An empty `[](url)` would be an invisible link; show the URL as its text.
        if empty {
            push_md_text(&mut self.core.out, url, false);
        }
        self.core.out.push_str("](");
        self.core.out.push_str(&md_link_destination(url));
        self.core.out.push(')');
    }
}

/// Appends one line of plain text escaped for Markdown; `line_start` if it begins a line.
/// Whether `chars[i]` is where GFM would start reading an autolink literal: the `:` of
/// `http://` or `https://`, the `.` of `www.`, each at the start of a word, or the `@` of an
/// address (a letter or digit on each side).
fn autolink_at(chars: &[char], i: usize) -> bool {
    let before = |n: usize| -> Option<String> {
        let start = i.checked_sub(n)?;
        let boundary = start == 0 || !chars[start - 1].is_alphanumeric();
        boundary.then(|| chars[start..i].iter().collect::<String>().to_ascii_lowercase())
    };
    let after = |t: &str| chars[i + 1..].iter().take(t.len()).copied().eq(t.chars());
    match chars[i] {
        ':' => {
            after("//")
                && (before(4).as_deref() == Some("http") || before(5).as_deref() == Some("https"))
        }
        '.' => before(3).as_deref() == Some("www"),
        '@' => {
            i > 0
                && chars[i - 1].is_alphanumeric()
                && chars.get(i + 1).is_some_and(|c| c.is_alphanumeric())
        }
        _ => false,
    }
}

fn push_md_text(out: &mut String, line: &str, line_start: bool) {
    let chars: Vec<char> = line.chars().collect();
    // Up to three spaces of indentation still let a line start a block.
    let first = chars.iter().position(|c| !c.is_whitespace()).filter(|_| line_start);
    // A list number has one to nine digits and is followed by `.` or `)` and then a space or the
    // end of the line (CommonMark §5.2), so `17.8%` needs no escape.
    let number_end = first.and_then(|f| {
        let digits = chars[f..].iter().take_while(|c| c.is_ascii_digit()).count();
        let after = chars.get(f + digits + 1);
        ((1..=9).contains(&digits) && after.is_none_or(|c| c.is_whitespace())).then_some(f + digits)
    });
    for (i, &c) in chars.iter().enumerate() {
        match c {
            '\\' | '`' | '*' | '[' | ']' | '~' | '|' | '$' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '_' => {
                let word = |j: Option<usize>| {
                    j.and_then(|j| chars.get(j)).is_some_and(|c| c.is_alphanumeric())
                };
                if !(word(i.checked_sub(1)) && word(Some(i + 1))) {
                    out.push('\\');
                }
                out.push('_');
            }
            '#' | '-' | '+' | '=' if first == Some(i) => {
                out.push('\\');
                out.push(c);
            }
            '.' | ')' if number_end == Some(i) => {
                out.push('\\');
                out.push(c);
            }
            // GFM turns `https://x`, `www.x` and `a@b.c` in plain text into links; CommonMark
            // does not. An escape there keeps them text in every renderer.
            ':' | '.' | '@' if autolink_at(&chars, i) => {
                out.push('\\');
                out.push(c);
            }
            '\t' => out.push(c),
            c => match crate::visible::escape(c) {
                // The escape's backslash, escaped itself, so that `\x1b` shows as it is.
                Some(e) => out.push_str(&e.replace('\\', "\\\\")),
                None => out.push(c),
            },
        }
    }
}

/// A link target as written in Markdown: characters that would end or break the destination, or a
/// table row, are percent-encoded (equivalent for any URL consumer); `&` becomes an entity because
/// destinations decode entities.
fn md_link_destination(url: &str) -> String {
    let mut out = String::with_capacity(url.len());
    for c in url.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            c if c.is_ascii_control()
                || matches!(c, ' ' | '<' | '>' | '(' | ')' | '\\' | '|' | '`' | '"' | '\'') =>
            {
                out.push_str(&format!("%{:02X}", c as u32))
            }
            c => out.push(c),
        }
    }
    out
}

/// The first word of a fenced code block's info string, kept only if it is a plain language name.
fn code_lang(kind: &CodeBlockKind<'_>) -> String {
    match kind {
        CodeBlockKind::Fenced(info) => {
            let lang = info.split_whitespace().next().unwrap_or("");
            if lang.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '+' | '.'))
            {
                lang.to_owned()
            } else {
                String::new()
            }
        }
        CodeBlockKind::Indented => String::new(),
    }
}

/// The URL a link may point to: an `http` or `https` address with a host, or a `mailto`; `None`
/// for anything else, which is then shown as text.
///
/// An allowlist rather than a denylist, because browsers ignore whitespace and case inside schemes
/// (`java\tscript:`), which a denylist would have to replicate. Relative targets (`../x`,
/// `/etc/passwd`, `//host/x`, `#part`) are refused too: a report is read away from the claims
/// file (a PDF sent on, Markdown pasted into a blog), where they would point somewhere else
/// than the author meant, or into the reader's own machine. A target holding whitespace, a
/// control character or a bidirectional override is refused, so a kept link is exactly the
/// address the reader sees.
fn link_target(kind: LinkType, dest: &str) -> Option<String> {
    if dest.is_empty() || dest.chars().any(|c| c.is_whitespace() || crate::visible::is_hidden(c)) {
        return None;
    }
    if kind == LinkType::Email {
        return Some(format!("mailto:{dest}"));
    }
    let (scheme, rest) = dest.split_once(':')?;
    let scheme = scheme.to_ascii_lowercase();
    let ok = match scheme.as_str() {
        // A host must follow: `http:/x` and `http:x` are relative in some readers.
        "http" | "https" => {
            rest.strip_prefix("//").is_some_and(|h| !h.is_empty() && !h.starts_with('/'))
        }
        "mailto" => !rest.is_empty(),
        _ => false,
    };
    ok.then(|| dest.to_owned())
}

/// The first character of the text event after `i`, if the next event is text.
fn next_char(events: &[Event<'_>], i: usize) -> Option<char> {
    match events.get(i + 1) {
        Some(Event::Text(t) | Event::Code(t)) => t.chars().next(),
        _ => None,
    }
}

/// Whether a soft line break between these characters shows as nothing rather than a space.
///
/// Chinese and Japanese text is written without spaces, and authors wrap long CJK lines in YAML
/// block scalars; Typst 0.15 (checked) and browsers would otherwise show a stray space there.
fn joins_without_space(before: Option<char>, after: Option<char>) -> bool {
    before.is_some_and(is_cjk) && after.is_some_and(is_cjk)
}

/// Whether `c` is a Han, kana, bopomofo or CJK punctuation / full-width character (not Hangul,
/// which is written with spaces).
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x2E80..=0x2FDF
        | 0x3000..=0x30FF
        | 0x3100..=0x312F
        | 0x31A0..=0x31FF
        | 0x3400..=0x4DBF
        | 0x4E00..=0x9FFF
        | 0xF900..=0xFAFF
        | 0xFE30..=0xFE4F
        | 0xFF00..=0xFFEF
        | 0x20000..=0x3FFFF)
}

#[cfg(test)]
mod tests;

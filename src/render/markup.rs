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
mod tests {
    use super::*;

    /// Strings that break naive escaping in Typst, Markdown or both.
    const NASTY: &[&str] = &[
        "#set page(width: 1cm)",
        "*bold* _x_ $x$ @ref <lbl> [a] `code` ~ // c /* c */ -- --- ... = h",
        "]#panic(\"x\")[",
        "http://x.y and https://x.y/z?a=1&b=2",
        "1. item",
        "- item",
        "+ item",
        "= heading",
        "/ term: def",
        "a\\",
        "\\u{41} \\#",
        "\"quotes\" and 'single'",
        "通訊佔步時 17.8%",
        "emoji 😀 ok",
        "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel",
        "nccl_only_ns / total_ns",
        "verdict query kernel_time --json --trace t.sqlite",
        "C:\\temp\\x.yaml",
        "<script>alert(1)</script> &amp; &#65;",
        "a | b || c",
        "~~s~~ ***x*** __y__ _z",
        "![img](x.png) [l](u) <http://a.b>",
        "> quote",
        "```",
        "line one\nline two",
        "{braces} (parens) !bang 3) x",
    ];

    fn normalize(s: &str) -> String {
        s.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    // --- Typst ---

    #[test]
    fn typst_text_escapes_every_ascii_punctuation() {
        assert_eq!(typst_text("a\\"), r"a\\");
        assert_eq!(typst_text("#set page(width: 1cm)"), r"\#set page\(width\: 1cm\)");
        assert_eq!(typst_text("]#panic(\"x\")["), r#"\]\#panic\(\"x\"\)\["#);
        assert_eq!(typst_text("x\ny\r\nz"), "x#linebreak()y#linebreak()z");
        assert_eq!(typst_text("通訊佔步時 17.8%"), r"通訊佔步時 17\.8\%");
        assert_eq!(typst_text("a\tb\u{1}c\u{1b}[31m\u{202e}"), r"a b\\x01c\\x1b\[31m\\u\{202e\}");
        assert_eq!(typst_text("a\u{b}b\u{85}c"), r"a\\x0bb\\x85c");
    }

    #[test]
    fn typst_string_escapes_quotes_backslashes_and_newlines() {
        assert_eq!(typst_string("a\"b\\c\nd\te\u{1}"), r#"a\"b\\c\nd\te\\x01"#);
        assert_eq!(typst_string("a\r\nb\rc\u{1b}\u{202e}"), r#"a\nb\nc\\x1b\\u{202e}"#);
        assert_eq!(typst_string("通訊"), "通訊");
    }

    #[test]
    fn typst_inline_markup() {
        assert_eq!(markdown_to_typst("*a* **b** ~~c~~", true), "#emph[a] #strong[b] #strike[c]");
        assert_eq!(markdown_to_typst("*a **b** c*", true), "#emph[a #strong[b] c]");
        assert_eq!(markdown_to_typst("***x***", true), "#emph[#strong[x]]");
        assert_eq!(markdown_to_typst("``a`b``", true), "#raw(\"a`b\")");
        assert_eq!(
            markdown_to_typst("see [x](http://e.com/a\"b)", true),
            r#"see #link("http://e.com/a\"b")[x]"#
        );
        assert_eq!(markdown_to_typst("<a@b.c>", true), r#"#link("mailto:a@b.c")[a\@b\.c]"#);
        assert_eq!(markdown_to_typst("![alt *t*](http://x/y.png)", true), "alt #emph[t]");
        assert_eq!(markdown_to_typst("$x$", true), r"\$x\$");
        assert_eq!(markdown_to_typst("a\\\nb", true), "a#linebreak()b");
    }

    #[test]
    fn typst_refuses_unsafe_link_schemes() {
        assert_eq!(
            markdown_to_typst("[x](javascript:alert(1))", true),
            r"x \(javascript\:alert\(1\)\)"
        );
        assert_eq!(
            markdown_to_typst("[x](https://e.com/a)", true),
            r#"#link("https://e.com/a")[x]"#
        );
        for (src, shown) in [
            ("[x](docs/a.md)", r"x \(docs\/a\.md\)"),
            ("[x](/etc/passwd)", r"x \(\/etc\/passwd\)"),
            ("[x](../a)", r"x \(\.\.\/a\)"),
            ("[x](//host/a)", r"x \(\/\/host\/a\)"),
            ("[x](file:///etc/passwd)", r"x \(file\:\/\/\/etc\/passwd\)"),
            ("[x](http:/a)", r"x \(http\:\/a\)"),
        ] {
            assert_eq!(markdown_to_typst(src, true), shown, "{src}");
        }
        assert_eq!(markdown_to_typst("[a]() [](http://x)", true), r#"a #link("http://x")"#);
    }

    #[test]
    fn typst_injection_attempts_are_text() {
        assert_eq!(markdown_to_typst("#set page(width: 1cm)", false), r"\#set page\(width\: 1cm\)");
        assert_eq!(markdown_to_typst("]#panic(\"x\")[", true), r#"\]\#panic\(\"x\"\)\["#);
        assert_eq!(
            markdown_to_typst("<script>alert(1)</script>", false),
            r"\<script\>alert\(1\)\<\/script\>"
        );
        assert_eq!(markdown_to_typst("a <b>x</b>", true), r"a \<b\>x\<\/b\>");
    }

    #[test]
    fn typst_blocks() {
        assert_eq!(markdown_to_typst("a\n\nb", false), "a\n\nb");
        assert_eq!(markdown_to_typst("a\n\nb", true), "a#linebreak()b");
        assert_eq!(markdown_to_typst("# Title\n\nBody", false), "#strong[Title]\n\nBody");
        assert_eq!(markdown_to_typst("# Title\n\nBody", true), "#strong[Title]#linebreak()Body");
        assert_eq!(markdown_to_typst("> q", false), "#quote(block: true)[q]");
        assert_eq!(markdown_to_typst("> q", true), "#quote[q]");
        assert_eq!(
            markdown_to_typst("```rust\nfn x() {}\n```", false),
            r#"#raw(block: true, lang: "rust", "fn x() {}")"#
        );
        assert_eq!(markdown_to_typst("```rust\nfn x() {}\n```", true), r#"#raw("fn x() {}")"#);
        assert_eq!(
            markdown_to_typst("| a | b |\n|---|---|\n| 1 | 2 |", false),
            "a \\| b\n\n1 \\| 2"
        );
        assert_eq!(
            markdown_to_typst("| a | b |\n|---|---|\n| 1 | 2 |", true),
            r"a \| b#linebreak()1 \| 2"
        );
    }

    #[test]
    fn typst_lists_block_and_inline() {
        assert_eq!(markdown_to_typst("- a\n- b", false), "#list([a], [b])");
        assert_eq!(markdown_to_typst("3. a\n4. b", false), "#enum(start: 3, [a], [b])");
        assert_eq!(markdown_to_typst("1. a", false), "#enum([a])");
        assert_eq!(markdown_to_typst("- a\n  - b\n- c", false), "#list([a\n#list([b])], [c])");
        assert_eq!(markdown_to_typst("Intro:\n\n- a", false), "Intro\\:\n\n#list([a])");
        assert_eq!(markdown_to_typst("- a\n- b", true), r"a\; b");
        assert_eq!(markdown_to_typst("3. a\n4. b", true), r"3\. a\; 4\. b");
        assert_eq!(markdown_to_typst("- a\n  - b\n  - c\n- d", true), r"a \(b\; c\)\; d");
        assert_eq!(markdown_to_typst("Intro:\n\n- a\n- b", true), r"Intro\:#linebreak()a\; b");
    }

    #[test]
    fn typst_soft_breaks_join_cjk_without_space() {
        assert_eq!(markdown_to_typst("通訊\n佔步", true), "通訊佔步");
        assert_eq!(markdown_to_typst("abc\ndef", true), "abc def");
        assert_eq!(markdown_to_typst("通訊 17.8%", false), r"通訊 17\.8\%");
    }

    /// Compiles `doc` with the real typst and returns pdftotext's output, or `None` when either
    /// tool is missing. Fails on any typst error or warning.
    fn compile_with_typst(doc: &str) -> Option<String> {
        use std::process::Command;
        let have = |tool: &str, arg: &str| Command::new(tool).arg(arg).output().is_ok();
        if !have("typst", "--version") || !have("pdftotext", "-v") {
            eprintln!("skipping: `typst` or `pdftotext` is not on PATH");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let typ = dir.path().join("t.typ");
        let pdf = dir.path().join("t.pdf");
        std::fs::write(&typ, doc).unwrap();
        let run = Command::new("typst")
            .args(["compile", "--diagnostic-format", "short"])
            .arg(&typ)
            .arg(&pdf)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(run.status.success() && stderr.trim().is_empty(), "typst said:\n{stderr}\n{doc}");
        // `-raw`: the default mode joins a line ending in `-` with the next one, as if hyphenated.
        let text = Command::new("pdftotext").arg("-raw").arg(&pdf).arg("-").output().unwrap();
        assert!(text.status.success());
        Some(String::from_utf8(text.stdout).unwrap())
    }

    // A wide page keeps each paragraph on one line, so line wrapping can't split a word.
    const PREAMBLE: &str =
        "#set text(font: (\"Noto Sans CJK TC\"))\n#set page(width: auto, height: auto)\n";

    #[test]
    fn typst_text_round_trips_through_real_typst() {
        let mut doc = PREAMBLE.to_owned();
        for s in NASTY {
            doc.push_str(&typst_text(s));
            doc.push_str("\n\n");
        }
        let Some(text) = compile_with_typst(&doc) else { return };
        let expected = normalize(&NASTY.join(" "));
        let got = normalize(&text);
        if got != expected {
            let at = got.chars().zip(expected.chars()).take_while(|(a, b)| a == b).count();
            let tail = |s: &str| s.chars().skip(at.saturating_sub(20)).take(60).collect::<String>();
            panic!("differs at char {at}:\n got: {}\nwant: {}", tail(&got), tail(&expected));
        }
    }

    #[test]
    fn markdown_to_typst_compiles_cleanly_with_real_typst() {
        let author = [
            "#set page(width: 1cm)",
            "]#panic(\"x\")[ and `code with ` backtick` and *em* **strong**",
            "<script>alert(1)</script>",
            "# Heading\n\n- a\n  - b\n- c\n\n3. x\n4. y\n\n> quote\n\n```sh\nverdict query --json\n```",
            "[link](http://e.com/a\"b) [bad](javascript:x) ![alt](i.png) a\\\nb",
            "| t | u |\n|---|---|\n| 1 | 2 |",
            "通訊佔步時\n17.8% $x$ a\\",
        ];
        let mut doc = PREAMBLE.to_owned();
        doc.push_str("#table(columns: 2,\n");
        for a in author {
            doc.push_str(&format!("  [cell], [{}],\n", markdown_to_typst(a, true)));
        }
        doc.push_str(")\n\n");
        for a in author {
            doc.push_str(&format!("#block[{}]\n\n", markdown_to_typst(a, false)));
        }
        let Some(text) = compile_with_typst(&doc) else { return };
        let text = normalize(&text);
        for literal in
            ["#set page(width: 1cm)", "]#panic(\"x\")[", "<script>alert(1)</script>", "$x$ a\\"]
        {
            assert!(text.contains(literal), "{literal:?} not shown literally in:\n{text}");
        }
    }

    /// Deterministic pseudo-random strings over characters that matter to Typst and Markdown.
    fn random_strings(count: usize) -> Vec<String> {
        let alphabet: Vec<char> =
            "ab1 \n\\#*_$@<>[]`~/-+='\":.,;(){}!?|&%^通訊😀hpt".chars().collect();
        let mut state: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move || {
            // xorshift64: good enough to spread characters, and reproducible across runs.
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        (0..count)
            .map(|_| {
                let len = (next() % 24) as usize;
                (0..len).map(|_| alphabet[(next() % alphabet.len() as u64) as usize]).collect()
            })
            .collect()
    }

    #[test]
    fn real_typst_accepts_escaped_random_text() {
        let strings = random_strings(300);
        let mut doc = PREAMBLE.to_owned();
        for s in &strings {
            doc.push_str(&typst_text(s));
            doc.push_str("\n\n");
        }
        doc.push_str("#table(columns: 2,\n");
        for s in &strings {
            doc.push_str(&format!("  [{}], [{}],\n", markdown_to_typst(s, true), typst_text(s)));
        }
        doc.push_str(")\n");
        for s in &strings {
            doc.push_str(&format!("#block[{}]\n", markdown_to_typst(s, false)));
        }
        let Some(text) = compile_with_typst(&doc) else { return };
        // The literal paragraphs come first, before the table. pdftotext puts spaces around CJK
        // and fallback-font glyphs, so whitespace is left out of this comparison.
        let squeeze = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
        let (got, expected) = (squeeze(&text), squeeze(&strings.concat()));
        if !got.starts_with(&expected) {
            let at = got.chars().zip(expected.chars()).take_while(|(a, b)| a == b).count();
            let near = |s: &str| s.chars().skip(at.saturating_sub(20)).take(60).collect::<String>();
            panic!("differs at char {at}:\n got: {}\nwant: {}", near(&got), near(&expected));
        }
    }

    // --- Markdown ---

    #[test]
    fn markdown_text_escapes() {
        assert_eq!(markdown_text("a|b", true), r"a\|b");
        assert_eq!(
            markdown_text("flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel", true),
            "flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel"
        );
        assert_eq!(markdown_text("nccl_only_ns / total_ns", true), "nccl_only_ns / total_ns");
        assert_eq!(
            markdown_text("verdict query kernel_time --json", true),
            "verdict query kernel_time --json"
        );
        assert_eq!(markdown_text("17.8% (2.1 ms)!", true), "17.8% (2.1 ms)!");
        assert_eq!(markdown_text("_x_ *y* `z`", false), r"\_x\_ \*y\* \`z\`");
        assert_eq!(
            markdown_text("1. item\n- item\n# h\n  + p\n= e\n12) x", false),
            "1\\. item\n\\- item\n\\# h\n\\+ p\n\\= e\n12\\) x"
        );
        assert_eq!(markdown_text("a\nb", true), "a b");
        assert_eq!(markdown_text("-x", true), r"\-x");
        assert_eq!(markdown_text("<b>&amp;</b>", true), "&lt;b&gt;&amp;amp;&lt;/b&gt;");
        assert_eq!(markdown_text("$x$ ~s~ [l](u) \\", true), r"\$x\$ \~s\~ \[l\](u) \\");
        assert_eq!(markdown_text("通訊佔步時 17.8%", true), "通訊佔步時 17.8%");
    }

    /// The cells of the first row of the first table in `md`: their text, with any other event
    /// inside a cell written as `⟨Debug⟩` so that a comparison with plain text fails on it.
    fn table_cells(md: &str) -> Vec<String> {
        let mut cells: Vec<String> = Vec::new();
        let mut in_head = false;
        for event in parser(md) {
            match event {
                Event::Start(Tag::TableHead) => in_head = true,
                Event::End(TagEnd::TableHead) => in_head = false,
                Event::Start(Tag::TableCell) if in_head => cells.push(String::new()),
                Event::End(TagEnd::TableCell) => {}
                Event::Text(t) if in_head => cells.last_mut().unwrap().push_str(&t),
                other if in_head => cells.last_mut().unwrap().push_str(&format!("⟨{other:?}⟩")),
                _ => {}
            }
        }
        cells
    }

    #[test]
    fn markdown_text_in_a_table_cell_round_trips() {
        for s in NASTY {
            let md = format!("| a | {} |\n| --- | --- |\n", markdown_text(s, true));
            let cells = table_cells(&md);
            assert_eq!(cells.len(), 2, "{md}");
            assert_eq!(normalize(&cells[1]), normalize(s), "{md}");
        }
    }

    #[test]
    fn markdown_text_as_a_paragraph_round_trips() {
        for s in NASTY {
            let md = markdown_text(s, false);
            let mut text = String::new();
            for event in parser(&md) {
                match event {
                    Event::Text(t) => text.push_str(&t),
                    Event::SoftBreak => text.push(' '),
                    Event::Start(Tag::Paragraph) | Event::End(TagEnd::Paragraph) => text.push(' '),
                    other => panic!("unexpected {other:?} in:\n{md}"),
                }
            }
            assert_eq!(normalize(&text), normalize(s), "{md}");
        }
    }

    #[test]
    fn markdown_safe_shows_html_as_text() {
        assert_eq!(
            markdown_safe("<script>alert(1)</script>", false),
            "&lt;script&gt;alert(1)&lt;/script&gt;"
        );
        assert_eq!(markdown_safe("a <b>x</b> c", true), "a &lt;b&gt;x&lt;/b&gt; c");
        assert_eq!(markdown_safe("#set x", true), r"\#set x");
    }

    #[test]
    fn markdown_safe_re_emits_inline_markup() {
        assert_eq!(markdown_safe("*a* **b** `c|d` ~~e~~", true), r"*a* **b** `c\|d` ~~e~~");
        assert_eq!(markdown_safe("*a* **b** `c|d` ~~e~~", false), "*a* **b** `c|d` ~~e~~");
        assert_eq!(markdown_safe("``a`b``", true), "``a`b``");
        assert_eq!(markdown_safe("[x](http://e.com/a\"b|d)", true), "[x](http://e.com/a%22b%7Cd)");
        assert_eq!(markdown_safe("[x](javascript:alert(1))", true), "x (javascript:alert(1))");
        // A link's text is escaped as text is (`http\://`): it reads the same, and a bare
        // address never becomes a link of its own.
        assert_eq!(markdown_safe("[a]() [](http://x_y)", true), r"a [http\://x_y](http://x_y)");
        assert_eq!(markdown_safe("![alt](http://x/y.png)", true), "alt");
        assert_eq!(markdown_safe("通訊\n佔步", true), "通訊佔步");
        assert_eq!(markdown_safe("通訊\n佔步\nab\ncd", false), "通訊佔步\nab\ncd");
        assert_eq!(markdown_safe("flash_bwd_dq and $x$", true), r"flash_bwd_dq and \$x\$");
    }

    #[test]
    fn bare_addresses_stay_text_in_every_renderer() {
        assert_eq!(
            markdown_text("see https://e.com/x, www.e.com or a@b.c; not xhttp://y", false),
            r"see https\://e.com/x, www\.e.com or a\@b.c; not xhttp://y"
        );
    }

    #[test]
    fn markdown_refuses_relative_and_unsafe_links() {
        assert_eq!(markdown_safe("[x](https://e.com/a)", true), "[x](https://e.com/a)");
        assert_eq!(
            markdown_safe("[m](mailto:a@b.c) <a@b.c>", true),
            r"[m](mailto:a@b.c) [a\@b.c](mailto:a@b.c)"
        );
        for (src, shown) in [
            ("[x](docs/a.md)", "x (docs/a.md)"),
            ("[x](/etc/passwd)", "x (/etc/passwd)"),
            ("[x](../a)", "x (../a)"),
            ("[x](//host/a)", "x (//host/a)"),
            ("[x](#part)", "x (#part)"),
            ("[x](file:///etc/passwd)", "x (file:///etc/passwd)"),
            ("[x](JavaScript:alert(1))", "x (JavaScript:alert(1))"),
            ("<javascript:alert(1)>", "javascript:alert(1) (javascript:alert(1))"),
            ("[x](https://a%0Ab)", "[x](https://a%0Ab)"),
        ] {
            assert_eq!(markdown_safe(src, true), shown, "{src}");
        }
    }

    #[test]
    fn control_characters_show_as_escapes_in_markdown() {
        assert_eq!(markdown_text("a\u{1b}[31mb\u{7}\u{0}", true), r"a\\x1b\[31mb\\x07\\x00");
        assert_eq!(markdown_text("abc\u{202e}fed\u{9b}", false), r"abc\\u{202e}fed\\x9b");
        assert_eq!(markdown_safe("`a\u{1b}b` c\u{7}", true), r"`a\x1bb` c\\x07");
        assert_eq!(markdown_code_span("a\u{1b}b\tc", false), "`a\\x1bb\tc`");
        assert_eq!(markdown_code_block("a\u{7}\r\nb"), "```sh\na\\x07\nb\n```");
        assert_eq!(markdown_safe("```\na\u{1b}\n```", false), "```\na\\x1b\n```");
    }

    #[test]
    fn a_code_span_holds_any_value_on_one_line() {
        assert_eq!(markdown_code_span("a``b", false), "```a``b```");
        assert_eq!(markdown_code_span("`a", false), "`` `a ``");
        assert_eq!(markdown_code_span("a|b", false), "`a|b`");
        assert_eq!(markdown_code_span("a|b", true), r"`a\|b`");
        assert_eq!(markdown_code_span("", false), "` `");
        assert_eq!(
            markdown_code_span("a\r<script>x\n<!-- c -->", false),
            "`a <script>x <!-- c -->`"
        );
        for value in [
            "a\r<script>alert(1)</script>",
            "x\r\n<!-- c -->",
            "``\r| a | b |",
            "`` <img src=x onerror=y> ``",
        ] {
            for cell in [false, true] {
                let md = format!("- s: {}: after", markdown_code_span(value, cell));
                for event in parser(&md) {
                    assert!(
                        !matches!(
                            event,
                            Event::Html(_) | Event::InlineHtml(_) | Event::Start(Tag::Table(_))
                        ),
                        "{event:?} in {md:?}"
                    );
                }
                assert!(
                    parser(&md).any(|e| matches!(e, Event::Text(t) if t.as_ref() == ": after")),
                    "{md:?}"
                );
            }
        }
    }

    #[test]
    fn markdown_safe_blocks() {
        assert_eq!(markdown_safe("a\n\nb", true), "a / b");
        assert_eq!(markdown_safe("a\n\nb", false), "a\n\nb");
        assert_eq!(markdown_safe("a\\\nb", true), "a / b");
        assert_eq!(markdown_safe("a\\\nb", false), "a\\\nb");
        assert_eq!(markdown_safe("- a\n- b", true), "a; b");
        assert_eq!(markdown_safe("- a\n- b", false), "- a\n- b");
        assert_eq!(markdown_safe("1. a\n   - b\n2. c", false), "1. a\n   - b\n2. c");
        assert_eq!(markdown_safe("1. a\n   - b\n2. c", true), r"1\. a (b); 2. c");
        assert_eq!(markdown_safe("# Title\n\nBody", false), "**Title**\n\nBody");
        assert_eq!(markdown_safe("# Title\n\nBody", true), "**Title** / Body");
        assert_eq!(markdown_safe("> q\n>\n> r", false), "> q\n>\n> r");
        assert_eq!(markdown_safe("- x\n  > q", true), "x / q");
        assert_eq!(markdown_to_typst("- x\n  > q", true), "x#linebreak()#quote[q]");
        assert_eq!(markdown_safe("```\na|b\n```", true), r"`a\|b`");
        assert_eq!(markdown_safe("```sh\na|b\n```", false), "```sh\na|b\n```");
        assert_eq!(markdown_safe("| a | b |\n|---|---|\n| 1 | 2 |", true), r"a \| b / 1 \| 2");
    }

    #[test]
    fn markdown_safe_keeps_the_structure_of_plain_markdown() {
        // Inputs with nothing that markdown_safe deliberately changes (headings, HTML, images,
        // tables, refused links), so the re-parsed events must equal the original ones.
        let inputs = [
            "a *b* **c** ~~d~~ `e|f` [g](http://h.i/j?k=1&l=2) \\* \\_ x_y",
            "p1 line\nline two\\\nhard\n\np2",
            "- a\n- b\n  - c\n  - d\n- e",
            "1. a\n\n   more a\n\n2. b\n   3. c",
            "> q *x*\n>\n> - l1\n> - l2\n>\n> > nested",
            "- item\n\n  ```rust\n  let `a` = ```;\n  ```\n- ```\n  x\n  ```",
            "```\n~~~\n\n    indented\n```\n\n***\n\n1) paren list\n2) two",
            // A break between CJK characters is deliberately dropped, so this one is before a digit.
            "通訊佔步時\n17.8% `flash_bwd` _強調_",
        ];
        let events = |md: &str| {
            let mut out: Vec<String> = Vec::new();
            let mut text: Option<String> = None;
            for event in parser(md) {
                // Escapes split text events differently, so compare merged runs of text.
                if let Event::Text(t) = &event {
                    text.get_or_insert_default().push_str(t);
                    continue;
                }
                out.extend(text.take().map(|t| format!("text {t}")));
                out.push(match event {
                    // Only the target matters; `<url>` and `[url](url)` differ in link type.
                    Event::Start(Tag::Link { dest_url, .. }) => format!("link {dest_url}"),
                    other => format!("{other:?}"),
                });
            }
            out
        };
        for src in inputs {
            let md = markdown_safe(src, false);
            assert_eq!(events(&md), events(src), "{src:?}\nbecame\n{md}");
        }
    }

    #[test]
    fn markdown_safe_never_yields_html_or_breaks_a_table() {
        let mut inputs: Vec<&str> = NASTY.to_vec();
        inputs.extend([
            "<div>\n\n*md*\n\n</div>",
            "<!-- c -->\n<script>\nalert(1)\n</script>",
            "a <span onclick=\"x\">b</span> <http://x.y> <a@b.c>",
            "- <b>x</b>\n  > <i>q</i>\n\n      <pre>indented</pre>",
            "&lt;b&gt; &#60;i&#62;",
            "text\n---\nmore\n===",
        ]);
        for src in inputs {
            for inline in [false, true] {
                let md = markdown_safe(src, inline);
                for event in parser(&md) {
                    assert!(
                        !matches!(event, Event::Html(_) | Event::InlineHtml(_)),
                        "{event:?} in markdown_safe({src:?}, {inline}) = {md:?}"
                    );
                }
                if inline {
                    assert!(!md.contains('\n'), "{md:?}");
                    let cells = table_cells(&format!("| a | {md} |\n| --- | --- |\n"));
                    assert_eq!(cells.len(), 2, "{md:?}");
                }
            }
        }
    }

    #[test]
    fn a_block_after_an_empty_quote_stays_out_of_it() {
        let md = markdown_safe(">\n    <!--", false);
        assert!(!parser(&md).any(|e| matches!(e, Event::Html(_) | Event::InlineHtml(_))), "{md:?}");
    }

    // Random text built from the characters that matter to CommonMark, GFM and HTML.
    const MD_CHARS: &str = "[a-c1_*`<>&|#+=.!()~$\\\\\\[\\] \n\t通訊:/-]{0,40}";

    proptest::proptest! {
        #[test]
        fn markdown_text_in_a_cell_round_trips_random_text(s in MD_CHARS) {
            let md = format!("| a | {} |\n| --- | --- |\n", markdown_text(&s, true));
            let cells = table_cells(&md);
            proptest::prop_assert_eq!(cells.len(), 2, "{}", md);
            proptest::prop_assert_eq!(normalize(&cells[1]), normalize(&s), "{}", md);
        }

        #[test]
        fn markdown_safe_never_yields_html_for_random_text(s in MD_CHARS) {
            for inline in [false, true] {
                let md = markdown_safe(&s, inline);
                let html = parser(&md).any(|e| matches!(e, Event::Html(_) | Event::InlineHtml(_)));
                proptest::prop_assert!(!html, "{:?} -> {:?}", s, md);
                if inline {
                    proptest::prop_assert!(!md.contains('\n'));
                    let cells = table_cells(&format!("| a | {md} |\n| --- | --- |\n"));
                    proptest::prop_assert_eq!(cells.len(), 2, "{:?} -> {:?}", s, md);
                }
            }
        }
    }
}

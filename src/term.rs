//! Plain text for the terminal that fits its width: tables whose text columns wrap and whose
//! numbers stay whole and right-aligned, and prose lines with a hanging indent.
//!
//! Every width is in display columns (`unicode-width`: a CJK character takes two), so columns
//! line up in every language. Control characters in the text (an ESC in a kernel name, a BEL
//! in a claim) are shown as escapes (`\x1b`), never sent to the terminal (issue 12). This
//! module lays text out; it formats no number.

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// The width laid out for when `COLUMNS` is unset and stdout is not a terminal.
pub const DEFAULT_WIDTH: usize = 100;

/// The narrowest a text column is squeezed to (unless a word of its title is wider); a table
/// that still does not fit overflows.
const MIN_TEXT: usize = 10;

/// Between two columns.
const GAP: &str = "  ";

/// The width to lay text out for: `COLUMNS` when it is a positive integer, else the width of
/// the terminal when stdout is one, else [`DEFAULT_WIDTH`].
pub fn width() -> usize {
    use std::io::IsTerminal;
    let columns = std::env::var("COLUMNS").ok().and_then(|v| v.trim().parse::<usize>().ok());
    if let Some(n) = columns.filter(|&n| n > 0) {
        return n;
    }
    let out = std::io::stdout();
    if out.is_terminal()
        && let Some((terminal_size::Width(w), _)) = terminal_size::terminal_size_of(&out)
        && w > 0
    {
        return w.into();
    }
    DEFAULT_WIDTH
}

/// How the cells of a column are laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Left-aligned, wrapped onto continuation lines when the table is too wide.
    Text,
    /// Right-aligned and never wrapped.
    Number,
    /// Left-aligned and never wrapped.
    Value,
}

/// A column of a [`render`]ed table: its title and how its cells are laid out. A title may
/// wrap at its spaces in any kind of column.
#[derive(Clone, Copy, Debug)]
pub struct Column<'a> {
    title: &'a str,
    kind: Kind,
}

impl<'a> Column<'a> {
    /// Left-aligned text, wrapped within the column when the table is too wide.
    pub fn text(title: &'a str) -> Self {
        Column { title, kind: Kind::Text }
    }

    /// A right-aligned number, never wrapped.
    pub fn number(title: &'a str) -> Self {
        Column { title, kind: Kind::Number }
    }

    /// A left-aligned value that is never wrapped (an id, a time stamp).
    pub fn value(title: &'a str) -> Self {
        Column { title, kind: Kind::Value }
    }
}

/// Renders `rows` under the column titles within `width` display columns.
///
/// When the natural layout is too wide, the widest text column is narrowed one display column
/// at a time, down to ten (or its title's longest word); then the titles of number and value
/// columns wrap at their spaces, and the columns they narrow give back to the text columns.
/// A table that still does not fit overflows rather than breaking a number. When a row takes
/// more than one line, a blank line separates the rows so that each reads as one block.
pub fn render(columns: &[Column], rows: &[Vec<String>], width: usize) -> String {
    fn cell(r: &[String], i: usize) -> &str {
        r.get(i).map_or("", String::as_str)
    }
    let rows: Vec<Vec<String>> =
        rows.iter().map(|r| r.iter().map(|c| shown_value(c).into_owned()).collect()).collect();
    let widest = |s: &str| s.split('\n').map(UnicodeWidthStr::width).max().unwrap_or(0);
    let mut natural: Vec<usize> = columns.iter().map(|c| widest(c.title)).collect();
    let mut cells_max = vec![0; columns.len()];
    for r in &rows {
        for i in 0..columns.len() {
            cells_max[i] = cells_max[i].max(widest(cell(r, i)));
            natural[i] = natural[i].max(cells_max[i]);
        }
    }
    let floor: Vec<usize> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let word = c.title.split(' ').map(UnicodeWidthStr::width).max().unwrap_or(0);
            match c.kind {
                Kind::Text => natural[i].min(MIN_TEXT.max(word)),
                Kind::Number | Kind::Value => cells_max[i].max(word),
            }
        })
        .collect();
    let budget = width.saturating_sub(GAP.len() * columns.len().saturating_sub(1));
    let mut widths = natural.clone();
    for text in [true, false] {
        while widths.iter().sum::<usize>() > budget {
            let candidate = (0..columns.len())
                .filter(|&i| (columns[i].kind == Kind::Text) == text && widths[i] > floor[i])
                .max_by_key(|&i| (widths[i], std::cmp::Reverse(i)));
            let Some(i) = candidate else { break };
            widths[i] = if text {
                widths[i] - 1
            } else {
                // A title that wraps needs only its longest line.
                let lines = wrap(columns[i].title, widths[i] - 1);
                cells_max[i].max(lines.iter().map(|l| l.width()).max().unwrap_or(0))
            };
        }
    }
    // What a wrapped title gave back goes to the narrowest text column that was narrowed.
    while widths.iter().sum::<usize>() < budget {
        let candidate = (0..columns.len())
            .filter(|&i| columns[i].kind == Kind::Text && widths[i] < natural[i])
            .min_by_key(|&i| (widths[i], i));
        let Some(i) = candidate else { break };
        widths[i] += 1;
    }

    let line = |parts: &[Vec<String>], k: usize| -> String {
        let mut s = String::new();
        for (i, c) in columns.iter().enumerate() {
            if i > 0 {
                s.push_str(GAP);
            }
            let part = parts[i].get(k).map_or("", String::as_str);
            let pad = " ".repeat(widths[i].saturating_sub(part.width()));
            if c.kind == Kind::Number {
                s.push_str(&pad);
                s.push_str(part);
            } else {
                s.push_str(part);
                s.push_str(&pad);
            }
        }
        s.truncate(s.trim_end().len());
        s
    };
    let block = |parts: Vec<Vec<String>>| -> String {
        let height = parts.iter().map(Vec::len).max().unwrap_or(0).max(1);
        (0..height).map(|k| line(&parts, k) + "\n").collect()
    };

    let header: Vec<Vec<String>> =
        columns.iter().zip(&widths).map(|(c, &w)| wrap(c.title, w)).collect();
    let mut out = block(header);
    out += &(widths.iter().map(|&w| "-".repeat(w)).collect::<Vec<_>>().join(GAP) + "\n");
    let body: Vec<String> = rows
        .iter()
        .map(|r| {
            block(
                columns
                    .iter()
                    .enumerate()
                    .map(|(i, c)| match c.kind {
                        Kind::Text => wrap(cell(r, i), widths[i]),
                        Kind::Number | Kind::Value => {
                            cell(r, i).split('\n').map(str::to_string).collect()
                        }
                    })
                    .collect(),
            )
        })
        .collect();
    let separate = body.iter().any(|b| b.matches('\n').count() > 1);
    out += &body.join(if separate { "\n" } else { "" });
    out
}

/// Display columns of `s`: a CJK character takes two.
pub fn display_width(s: &str) -> usize {
    s.width()
}

/// `text` after `first` on its first line and `indent` spaces on the lines that follow, wrapped
/// to `width`; every line ends with a newline. Each line keeps at least ten display columns
/// for the text, overflowing a narrower width.
pub fn hang(first: &str, text: &str, indent: usize, width: usize) -> String {
    let (first, text) = (&*shown_value(first), &*shown_value(text));
    let room = |used: usize| width.saturating_sub(used).max(MIN_TEXT);
    let (first_room, rest_room) = (room(first.width()), room(indent));
    let lines = wrap_to(text, |k| if k == 0 { first_room } else { rest_room });
    let mut out = String::new();
    for (k, l) in lines.iter().enumerate() {
        let line =
            if k == 0 { format!("{first}{l}") } else { format!("{}{l}", " ".repeat(indent)) };
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The longest value shown whole on the terminal, in bytes; past it the value is cut at a
/// character boundary and its length follows (`--json` keeps every value whole).
pub const SHOWN_MAX: usize = 4096;

/// Text as the terminal may receive it: line breaks kept, every other control character
/// (tab and carriage return included: they would move the cursor off the layout) and every
/// bidirectional override shown as an escape (`\x1b`, see [`crate::visible`]).
pub fn shown(text: &str) -> std::borrow::Cow<'_, str> {
    crate::visible::visible(text, &['\n'])
}

/// One value (a table cell, a line of prose) as [`shown`], cut when it is longer than
/// [`SHOWN_MAX`] bytes: its first [`SHOWN_MAX`] and then its length. A megabyte NVTX name
/// is not a cell anyone reads, and laying it out would take longer than the query.
pub fn shown_value(text: &str) -> std::borrow::Cow<'_, str> {
    if text.len() <= SHOWN_MAX {
        return shown(text);
    }
    let mut end = SHOWN_MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let head = shown(&text[..end]);
    std::borrow::Cow::Owned(format!(
        "{head}… (cut: {} characters in all, {} bytes; --json shows the whole value)",
        crate::units::thousands(text.chars().count() as i128),
        crate::units::thousands(text.len() as i128)
    ))
}

/// Breaks `text` into lines of at most `width` display columns (a newline in `text` always
/// breaks), as `wrap_to` does.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    wrap_to(text, |_| width)
}

/// Breaks `text` into lines, line `k` at most `width(k)` display columns: at spaces where
/// possible. A word wider than a line is cut, after a `_`, `/`, `-`, `,` or CJK punctuation in
/// the second half of the line when it has one; a word of more than four CJK characters fills
/// the rest of the line, as CJK text breaks between any two characters. A lone `·` or
/// `—` stays at the end of the line of the word before it.
pub fn wrap_to(text: &str, width: impl Fn(usize) -> usize) -> Vec<String> {
    // Linear in the text (issue 28): the widths of the line and of the rest of the word are
    // kept as they change, never measured again, so a long word is cut in one pass.
    let mut lines: Vec<String> = Vec::new();
    for para in text.split('\n') {
        if para.width() <= width(lines.len()) {
            lines.push(para.to_string());
            continue;
        }
        let mut line = String::new();
        let mut used = 0;
        for word in words(para) {
            let mut rest = word.as_str();
            let mut rest_width = rest.width();
            while !rest.is_empty() {
                let w = width(lines.len()).max(1);
                let sep = usize::from(!line.is_empty());
                if used + sep + rest_width <= w {
                    if sep == 1 {
                        line.push(' ');
                    }
                    line.push_str(rest);
                    used += sep + rest_width;
                    break;
                }
                // A run of more than four CJK characters breaks anywhere; a shorter one is
                // most likely one word (無法驗證) and moves to the next line whole.
                let cjk = rest.chars().next().and_then(UnicodeWidthChar::width) == Some(2)
                    && rest_width > 8;
                if line.is_empty() || cjk {
                    let (head, head_width, tail) =
                        cut(rest, w.saturating_sub(used + sep), line.is_empty());
                    if !head.is_empty() {
                        if sep == 1 {
                            line.push(' ');
                        }
                        line.push_str(head);
                        rest = tail;
                        rest_width -= head_width;
                    }
                }
                lines.push(std::mem::take(&mut line));
                used = 0;
            }
        }
        if !line.is_empty() {
            lines.push(line);
        }
    }
    lines
}

/// The words of a line, split at spaces, with a lone `·`, `—` or `–` joined to the word before
/// it so that no line starts with one.
fn words(s: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in s.split(' ').filter(|w| !w.is_empty()) {
        match out.last_mut() {
            Some(prev) if matches!(w, "·" | "—" | "–") => {
                prev.push(' ');
                prev.push_str(w);
            }
            _ => out.push(w.to_string()),
        }
    }
    out
}

/// Splits `s` so that the head takes at most `room` display columns, preferring to cut after a
/// break character in the second half (or right before an underscore), never before CJK
/// punctuation; with `progress`, the head has at least one character. Returns the head, its
/// display width and the tail; reads no further than the head.
fn cut(s: &str, room: usize, progress: bool) -> (&str, usize, &str) {
    let mut used = 0;
    let mut end = 0;
    let mut soft = None;
    for (i, c) in s.char_indices() {
        let w = c.width().unwrap_or(0);
        if used + w > room && !(progress && end == 0) {
            break;
        }
        used += w;
        end = i + c.len_utf8();
        if matches!(c, '_' | '/' | '-' | ',' | '，' | '、' | '；' | '：' | '。') && used * 2 >= room
        {
            soft = Some((end, used));
        }
    }
    // A cut right before an underscore is as good as one after it.
    let (mut at, mut head_width) = if end < s.len() && !s[end..].starts_with('_') {
        soft.unwrap_or((end, used))
    } else {
        (end, used)
    };
    // CJK punctuation does not start a line: it takes the character before it along.
    if s[at..].starts_with(['，', '。', '、', '；', '：', '）', '」'])
        && let Some((i, c)) = s[..at].char_indices().last().filter(|&(i, _)| i > 0)
    {
        at = i;
        head_width -= c.width().unwrap_or(0);
    }
    let (head, tail) = s.split_at(at);
    (head, head_width, tail)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(r: &[&[&str]]) -> Vec<Vec<String>> {
        r.iter().map(|r| r.iter().map(|c| c.to_string()).collect()).collect()
    }

    fn sp(n: usize) -> String {
        " ".repeat(n)
    }

    #[test]
    fn control_characters_reach_the_terminal_as_escapes() {
        let t = render(
            &[Column::text("name"), Column::number("count")],
            &rows(&[&["k\u{1b}[2Jx\u{7}", "1"], &["a\tb\rc", "2"]]),
            100,
        );
        assert_eq!(
            t,
            "name           count\n-------------  -----\nk\\x1b[2Jx\\x07      1\na\\x09b\\x0dc        2\n"
        );
        assert_eq!(hang("\u{9b}- ", "x\u{202e}y\nz", 2, 100), "\\x9b- x\\u{202e}y\n  z\n");
    }

    #[test]
    fn a_table_that_fits_is_laid_out_on_one_line_per_row() {
        let t = render(
            &[Column::text("name"), Column::number("count")],
            &rows(&[&["a", "1,234"], &["bcd", "5"]]),
            100,
        );
        assert_eq!(t, "name  count\n----  -----\na     1,234\nbcd       5\n");
    }

    #[test]
    fn text_wraps_at_spaces_and_numbers_stay_whole_and_right_aligned() {
        // Of the width 20, the number column takes 6 ("123.45") and the gap 2: the text
        // column gets 12.
        let t = render(
            &[Column::text("claim"), Column::number("value")],
            &rows(&[&["the quick brown fox jumps", "17.8%"], &["short", "123.45"]]),
            20,
        );
        let expected = format!(
            "claim{}value\n{}  {}\nthe quick{}17.8%\nbrown fox\njumps\n\nshort{}123.45\n",
            sp(7 + 2 + 1),
            "-".repeat(12),
            "-".repeat(6),
            sp(3 + 2 + 1),
            sp(7 + 2)
        );
        assert_eq!(t, expected);
    }

    #[test]
    fn the_widest_text_column_is_narrowed_first() {
        // Natural widths 29 and 12 plus a gap: 43. At 30 the first column gives up 13 and
        // stays the wider one: 16 and 12.
        let long = "aaaa bbbb cccc dddd eeee ffff";
        let t =
            render(&[Column::text("a"), Column::text("b")], &rows(&[&[long, "xxxx yyyy zz"]]), 30);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[1], format!("{}  {}", "-".repeat(16), "-".repeat(12)));
        assert_eq!(lines[2], "aaaa bbbb cccc    xxxx yyyy zz");
        assert_eq!(lines[3], "dddd eeee ffff");
        assert_eq!(lines.len(), 4);
    }

    #[test]
    fn long_tokens_are_cut_preferably_after_an_underscore() {
        // 16 columns end in `sm90_xmma_gemm_b`: cut after the last underscore. The next 16 end
        // right before an underscore, which is as good.
        assert_eq!(
            wrap("sm90_xmma_gemm_bf16bf16_bf16f32_kernel", 16),
            ["sm90_xmma_gemm_", "bf16bf16_bf16f32", "_kernel"]
        );
        assert_eq!(
            wrap("ncclDevKernel_AllGather_RING_LL", 13),
            ["ncclDevKernel", "_AllGather_", "RING_LL"]
        );
        // Without a break character in the second half of the line the cut is hard.
        assert_eq!(wrap("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        assert_eq!(wrap("abc_defghij", 4), ["abc_", "defg", "hij"]);
        assert_eq!(wrap("a_bcdefghij", 6), ["a_bcde", "fghij"]);
    }

    #[test]
    fn a_lone_middle_dot_stays_with_the_word_before_it() {
        assert_eq!(wrap("trace A · sha256 f81c", 10), ["trace A ·", "sha256", "f81c"]);
    }

    #[test]
    fn cjk_cells_align_by_display_width() {
        let t = render(
            &[Column::text("主張"), Column::text("判定"), Column::number("n")],
            &rows(&[&["通訊未被運算完全遮蔽，佔步時", "部分支持", "12"], &["ab", "支持", "3"]]),
            24,
        );
        // Natural widths 28, 8 and 2; with two gaps the first column gets 24 - 4 - 8 - 2 = 10
        // display columns: five CJK characters. `遮` goes to the third line with the comma,
        // which does not start a line.
        let expected = format!(
            "主張{}判定{}n\n----------  --------  --\n通訊未被運  部分支持  12\n算完全遮\n蔽，佔步時\n\nab{}支持{}3\n",
            sp(6 + 2),
            sp(4 + 2 + 1),
            sp(8 + 2),
            sp(4 + 2 + 1)
        );
        assert_eq!(t, expected);
        assert!(t.lines().all(|l| l.width() <= 24));
    }

    #[test]
    fn columns_start_at_the_same_display_column_on_every_line() {
        let t = render(
            &[Column::text("名稱"), Column::text("說明")],
            &rows(&[&["一二三四五六七八九十", "x y z"], &["a", "甲乙丙丁戊己庚辛壬癸子丑"]]),
            26,
        );
        // Natural widths 20 and 24 shrink to 12 each: the second column starts at 14.
        let mut second = 0;
        for l in t.lines() {
            assert!(l.width() <= 26, "{l:?}");
            if l.width() > 14 {
                let (i, _) = l.char_indices().find(|&(i, _)| l[..i].width() >= 14).unwrap();
                assert_eq!(l[..i].width(), 14, "a character straddles the column start: {l:?}");
                assert!(l[..i].ends_with("  ") && !l[i..].starts_with(' '), "{l:?}");
                second += 1;
            }
        }
        // The header, the separator and three lines of text.
        assert_eq!(second, 5, "{t}");
        assert!(t.contains("一二三四五六  x y z\n七八九十\n"), "{t}");
        assert!(t.contains(&format!("\n{}庚辛壬癸子丑\n", sp(14))), "{t}");
    }

    #[test]
    fn number_titles_wrap_before_a_number_is_broken() {
        // Cells 8 wide, title 15; in 17 - 2 - 3 = 12 the title wraps at its space and no cell
        // is cut.
        let t = render(
            &[Column::value("dev"), Column::number("compute_only ms")],
            &rows(&[&["4", "4,260.44"]]),
            17,
        );
        let expected =
            format!("dev  compute_only\n{}ms\n---  ------------\n4{}4,260.44\n", sp(15), sp(8));
        assert_eq!(t, expected);
    }

    #[test]
    fn a_wrapped_number_title_gives_its_room_back_to_the_text() {
        // Natural 14 + 12 + 2 = 28 > 22: the text column goes down to 10, still 24; the title
        // wraps to `exposed` / `NCCL`, 7 wide, and the text column takes the 3 left: 13.
        let t = render(
            &[Column::text("name"), Column::number("exposed NCCL")],
            &rows(&[&["aaaa bbbb cccc", "17.8%"]]),
            22,
        );
        let expected = format!(
            "name{}exposed\n{}NCCL\n{}  {}\naaaa bbbb{}17.8%\ncccc\n",
            sp(9 + 2),
            sp(13 + 2 + 3),
            "-".repeat(13),
            "-".repeat(7),
            sp(4 + 2 + 2)
        );
        assert_eq!(t, expected);
    }

    #[test]
    fn a_value_past_the_limit_is_cut_with_its_length() {
        let long = format!("{}é{}", "a".repeat(SHOWN_MAX - 1), "b".repeat(10_000));
        let s = shown_value(&long);
        // `é` takes bytes 4095 and 4096: the cut falls before it.
        let (head, tail) = s.split_at(SHOWN_MAX - 1);
        assert_eq!(head, "a".repeat(SHOWN_MAX - 1));
        assert_eq!(
            tail,
            "… (cut: 14,096 characters in all, 14,097 bytes; --json shows the whole value)"
        );
        let exact = "x".repeat(SHOWN_MAX);
        assert_eq!(shown_value(&exact), exact);
        // Wrapping a long word is linear: a megabyte word is cut into lines of the width.
        let word = "ab_".repeat(400_000);
        let lines = wrap(&word, 100);
        assert_eq!(lines.concat(), word);
        assert!(lines.iter().all(|l| l.width() <= 100));
    }

    #[test]
    fn hanging_indent() {
        let s = hang("  R1 note: ", "the denominator is the span of the kernels", 11, 30);
        let expected =
            format!("  R1 note: the denominator is\n{0}the span of the\n{0}kernels\n", sp(11));
        assert_eq!(s, expected);
        assert_eq!(hang("- ", "short", 2, 30), "- short\n");
        assert_eq!(hang("", "a\n\nb", 0, 30), "a\n\nb\n");
    }
}

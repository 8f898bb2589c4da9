//! `verdict draft`: from a prose diagnosis (Markdown, zh-TW or en) to a claims skeleton.
//!
//! Deterministic and local: pulldown-cmark reads the Markdown, each block (paragraph, list
//! item, heading, table row) is split into sentences, and every number, range or multiplier
//! of a sentence becomes a part with the sentence, its line, a kind proposed from cue words and
//! candidate measures. Every part is written `unreviewed`; nothing here reads a trace or judges.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use crate::claims::Kind;

mod candidates;
mod yaml;

use candidates::ANALYSES;
pub use candidates::candidate_measures;
pub use yaml::{report_id, to_yaml};

/// A language of the answer, which is the language of the drafted texts.
pub const LANGS: &[&str] = &["zh-TW", "en"];

/// A number the extractor read in a sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Number {
    /// The number as the sentence writes it, hedge word included (`約 10–30%`).
    pub written: String,
    /// Byte range of `written` in the sentence.
    pub range: std::ops::Range<usize>,
    /// What it states, in the claims file's units.
    pub value: Stated,
}

/// A stated value: one number or a range, each in the claims file's notation (`23%`, `140`,
/// `5 ms`, `1.2x`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stated {
    /// One number.
    One(String),
    /// A range, low bound first.
    Range(String, String),
}

impl Stated {
    /// The value as one string: `23%` or `10–30%`.
    pub fn text(&self) -> String {
        match self {
            Stated::One(s) => s.clone(),
            Stated::Range(lo, hi) => {
                // The unit once, after the high bound: `10–30%`, `5–10 ms`.
                let unit_start = lo.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == ','));
                match unit_start {
                    Some(i) if hi.ends_with(&lo[i..]) => format!("{}–{hi}", &lo[..i]),
                    _ => format!("{lo}–{hi}"),
                }
            }
        }
    }
}

/// Why a number of the answer was not drafted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// A date or a year (`2026-09-11`, `2026 年`, `Sept 11`).
    Date,
    /// A version (`NCCL 2.18`, `v0.3.0`, `CUDA 12.4`).
    Version,
    /// Part of a name (`TP8`, `H200`, `bf16`, `device 4`, `stream 56`).
    Name,
    /// An ordinal or a list number (`第 2 點`, `2nd`, `(1)`).
    Ordinal,
    /// The size of the job (`8 張 H200`, `8 GPUs`, `2 nodes`).
    Setup,
    /// Inside code (a code span or block).
    Code,
    /// An action's number with no claim before it to join.
    Unclaimed,
    /// A Chinese quantity that states no number or range (`數十`, `幾百`, `一百多`, `一倍`).
    Vague,
}

impl Skip {
    /// The reason in words.
    pub fn reason(self) -> &'static str {
        match self {
            Skip::Date => "a date",
            Skip::Version => "a version",
            Skip::Name => "part of a name",
            Skip::Ordinal => "an ordinal or list number",
            Skip::Setup => "the size of the job",
            Skip::Code => "inside code",
            Skip::Unclaimed => "an action with no claim before it",
            Skip::Vague => "a vague quantity that states no number or range",
        }
    }
}

/// What scanning one sentence found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// A number that becomes a part.
    Number(Number),
    /// A number that does not, and why.
    Skipped(String, Skip),
}

/// A candidate measure for a part: a `measure` without its scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The analysis.
    pub analysis: &'static str,
    /// A formula over its fields.
    pub value: &'static str,
    /// The unit of the result.
    pub unit: &'static str,
    /// A kernel name the sentence gives (kernels only).
    pub name_match: Option<String>,
    /// The word of the sentence that suggested it.
    pub cue: String,
}

/// One drafted part: one number of one sentence.
#[derive(Debug, Clone)]
pub struct DraftPart {
    /// Its id in the claim (`p1`...).
    pub id: String,
    /// The proposed kind.
    pub kind: Kind,
    /// The cue words that chose the kind (none for an observation).
    pub cues: Vec<String>,
    /// The sentence, verbatim.
    pub sentence: String,
    /// The line of the answer the number is on.
    pub line: usize,
    /// The number.
    pub number: Number,
    /// Candidate measures, best first.
    pub analyses: Vec<Candidate>,
    /// Why no analysis of a trace measures it, when the sentence says so by its words.
    pub unmeasurable: Option<&'static str>,
    /// For an interpretation: the observation part it reads.
    pub from: Option<String>,
}

/// One drafted claim: one block of the answer with at least one number.
#[derive(Debug, Clone)]
pub struct DraftClaim {
    /// Its id (`c1`...).
    pub id: String,
    /// The block's text.
    pub statement: String,
    /// Its parts.
    pub parts: Vec<DraftPart>,
}

/// A draft: the claims, and the numbers left out with their reasons.
#[derive(Debug, Clone)]
pub struct Draft {
    /// The language of the texts.
    pub lang: String,
    /// The first heading of the answer, if any.
    pub heading: Option<String>,
    /// The claims.
    pub claims: Vec<DraftClaim>,
    /// Numbers not drafted: line, text, reason.
    pub skipped: Vec<(usize, String, Skip)>,
}

impl Draft {
    /// Every part, in order.
    pub fn parts(&self) -> impl Iterator<Item = &DraftPart> {
        self.claims.iter().flat_map(|c| &c.parts)
    }
}

/// The answer's language when none is given: zh-TW when Han characters are at least a
/// quarter as many as Latin letters, else en.
pub fn detect_lang(text: &str) -> &'static str {
    let han = text.chars().filter(|c| is_han(*c)).count();
    let latin = text.chars().filter(|c| c.is_ascii_alphabetic()).count();
    if han > 0 && han * 4 >= latin { "zh-TW" } else { "en" }
}

fn is_han(c: char) -> bool {
    matches!(c as u32, 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x2FA1F)
}

/// A block's text with, for each piece, where it came from in the source.
#[derive(Default)]
struct Block {
    text: String,
    /// `(start in text, start in source, exact)`: exact when the piece is the source verbatim.
    map: Vec<(usize, usize, bool)>,
    /// Byte ranges of `text` that are code spans.
    code: Vec<std::ops::Range<usize>>,
}

impl Block {
    fn push(&mut self, s: &str, src: usize, exact: bool) {
        self.map.push((self.text.len(), src, exact));
        self.text.push_str(s);
    }

    /// The source offset of a byte of the text.
    fn source(&self, at: usize) -> usize {
        let i = self.map.partition_point(|(start, _, _)| *start <= at);
        match i.checked_sub(1).map(|k| self.map[k]) {
            Some((start, src, true)) => src + (at - start),
            Some((_, src, false)) => src,
            None => 0,
        }
    }
}

/// The blocks of a Markdown text (paragraphs, list items' text, headings, table rows), each
/// with the source offsets of its pieces; code blocks and HTML are left out.
fn blocks(md: &str) -> (Vec<Block>, Option<String>) {
    let mut out = Vec::new();
    let mut heading = None;
    let mut cur = Block::default();
    let mut in_code_block = false;
    let mut in_heading = false;
    let mut heading_text = String::new();
    let mut pending_break = false;
    let flush = |cur: &mut Block, out: &mut Vec<Block>| {
        if !cur.text.trim().is_empty() {
            out.push(std::mem::take(cur));
        } else {
            *cur = Block::default();
        }
    };
    let opts = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    for (event, range) in Parser::new_ext(md, opts).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(_)) => {
                flush(&mut cur, &mut out);
                in_code_block = true;
            }
            Event::End(TagEnd::CodeBlock) => in_code_block = false,
            Event::Start(
                Tag::Paragraph | Tag::Item | Tag::TableRow | Tag::TableHead | Tag::BlockQuote(_),
            )
            | Event::End(
                TagEnd::Paragraph
                | TagEnd::Item
                | TagEnd::TableRow
                | TagEnd::TableHead
                | TagEnd::BlockQuote(_),
            ) => flush(&mut cur, &mut out),
            Event::Start(Tag::Heading { .. }) => {
                flush(&mut cur, &mut out);
                in_heading = true;
            }
            Event::End(TagEnd::Heading(_)) => {
                in_heading = false;
                if heading.is_none() && !heading_text.trim().is_empty() {
                    heading = Some(heading_text.trim().to_string());
                }
                heading_text.clear();
                flush(&mut cur, &mut out);
            }
            Event::End(TagEnd::TableCell) => cur.push(" | ", range.end, false),
            Event::Text(t) if !in_code_block => {
                if std::mem::take(&mut pending_break) {
                    let joined = cur.text.chars().next_back().is_some_and(is_cjk_punct_or_han)
                        && t.chars().next().is_some_and(is_cjk_punct_or_han);
                    cur.push(if joined { "" } else { " " }, range.start, false);
                }
                let exact = md.get(range.clone()) == Some(t.as_ref());
                cur.push(&t, range.start, exact);
                if in_heading {
                    heading_text.push_str(&t);
                }
            }
            Event::Code(t) => {
                if std::mem::take(&mut pending_break) {
                    cur.push(" ", range.start, false);
                }
                // The span's text is the source between the backticks.
                let inner = md.get(range.clone()).and_then(|s| s.find(t.as_ref())).unwrap_or(0);
                let start = cur.text.len();
                cur.push(&t, range.start + inner, true);
                cur.code.push(start..cur.text.len());
                if in_heading {
                    heading_text.push_str(&t);
                }
            }
            // A line break inside a Chinese sentence joins without a space: decided at the
            // next text, when both sides are known.
            Event::SoftBreak | Event::HardBreak => pending_break = true,
            _ => {}
        }
    }
    flush(&mut cur, &mut out);
    (out, heading)
}

fn is_cjk_punct_or_han(c: char) -> bool {
    is_han(c) || matches!(c as u32, 0x3000..=0x303F | 0xFF00..=0xFFEF)
}

/// The sentences of a text, as byte ranges: split after `。！？；` and after `.!?;` that
/// end a word (followed by a space or the end), so that `2.18` and `e.g.x` stay whole.
pub fn sentences(text: &str) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut it = text.char_indices().peekable();
    while let Some((i, c)) = it.next() {
        let end = i + c.len_utf8();
        let ends = match c {
            '。' | '！' | '？' | '；' => true,
            '.' | '!' | '?' | ';' => it.peek().is_none_or(|(_, n)| n.is_whitespace()),
            _ => false,
        };
        if ends {
            push_trimmed(text, start..end, &mut out);
            start = end;
        }
    }
    push_trimmed(text, start..text.len(), &mut out);
    out
}

fn push_trimmed(text: &str, r: std::ops::Range<usize>, out: &mut Vec<std::ops::Range<usize>>) {
    let s = &text[r.clone()];
    let lead = s.len() - s.trim_start().len();
    let trail = s.len() - s.trim_end().len();
    if r.start + lead < r.end - trail {
        out.push(r.start + lead..r.end - trail);
    }
}

/// Units after a number, longest first: what is written, the claims file's unit (`""` for a
/// count), and whether it must not be followed by a letter.
const UNITS: &[(&str, &str)] = &[
    ("個百分點", "pp"),
    ("百分點", "pp"),
    ("percent", "%"),
    ("%", "%"),
    ("％", "%"),
    ("pp", "pp"),
    ("GB/s", "GB/s"),
    ("毫秒", "ms"),
    ("微秒", "µs"),
    ("奈秒", "ns"),
    ("納秒", "ns"),
    ("ms", "ms"),
    ("µs", "µs"),
    ("μs", "µs"),
    ("us", "µs"),
    ("ns", "ns"),
    ("秒", "s"),
    ("s", "s"),
    ("bytes", "bytes"),
    ("GiB", "GiB"),
    ("MiB", "MiB"),
    ("GB", "GB"),
    ("MB", "MB"),
    ("KB", "KB"),
    ("×", "x"),
    ("x", "x"),
    ("倍", "x"),
    ("times", "times"),
    ("次", ""),
    ("個", ""),
    ("筆", ""),
];

/// Words after a number that make it the size of the job, not a measurement.
const SETUP_AFTER: &[&str] =
    &["張", "卡", "台", "臺", "顆", "節點", "gpus", "gpu", "cards", "nodes", "node", "ranks"];

/// Words before a number that make it part of a name (`device 4`, `Day 26`).
const NAME_BEFORE: &[&str] = &[
    "device",
    "devices",
    "gpu",
    "gpus",
    "rank",
    "ranks",
    "stream",
    "streams",
    "step",
    "steps",
    "layer",
    "layers",
    "node",
    "epoch",
    "iteration",
    "iter",
    "day",
    "part",
    "item",
    "section",
    "table",
    "figure",
    "fig",
    "page",
    "line",
    "tp",
    "pp",
    "dp",
    "sm",
    "no",
    "r",
];

/// Words before a decimal number that make it a version (`CUDA 12.4`).
const VERSION_BEFORE: &[&str] = &["version", "版本", "版", "python", "torch", "pytorch"];

/// Hedges written before a number (`約 23%`), longest first.
const HEDGES: &[&str] = &[
    "approximately",
    "roughly",
    "around",
    "about",
    "大約",
    "大概",
    "約略",
    "將近",
    "接近",
    "約",
    "近",
    "~",
    "≈",
    "～",
];

/// Range separators, longest first.
const SEPARATORS: &[&str] = &["to ", "–", "—", "-", "~", "～", "〜", "到", "至"];

const MONTHS: &[&str] =
    &["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];

/// A digit, ASCII or full-width.
fn digit(c: char) -> Option<u32> {
    match c {
        '0'..='9' => Some(c as u32 - '0' as u32),
        '０'..='９' => Some(c as u32 - '０' as u32),
        _ => None,
    }
}

/// Reads a number at `i`: digits, thousands groups and decimals (several dots: a version).
/// Returns its end and its ASCII text.
fn read_number(s: &str, i: usize) -> Option<(usize, String)> {
    let mut out = String::new();
    let mut end = i;
    let mut chars = s[i..].char_indices().peekable();
    while let Some((k, c)) = chars.next() {
        if let Some(d) = digit(c) {
            out.push(char::from_digit(d, 10)?);
            end = i + k + c.len_utf8();
        } else if (c == '.' || c == ',')
            && !out.is_empty()
            && chars.peek().is_some_and(|(_, n)| digit(*n).is_some())
        {
            // `1,094.74` and `2.18.3`; a comma only before a group of three digits.
            if c == ',' {
                let group: String = s[i + k + 1..].chars().take(4).collect();
                let digits = group.chars().take_while(|g| g.is_ascii_digit()).count();
                if digits != 3 {
                    break;
                }
                out.push(',');
            } else {
                out.push('.');
            }
        } else {
            break;
        }
    }
    (!out.is_empty()).then_some((end, out))
}

/// The unit written at `i` (after spaces), its end and the claims file's unit.
fn read_unit(s: &str, i: usize) -> Option<(usize, &'static str)> {
    let rest = &s[i..];
    let t = rest.trim_start_matches([' ', '\u{a0}']);
    let skipped = rest.len() - t.len();
    for (w, u) in UNITS {
        let ascii = w.is_ascii();
        let hit = if ascii {
            t.len() >= w.len()
                && t.is_char_boundary(w.len())
                && t[..w.len()].eq_ignore_ascii_case(w)
        } else {
            t.starts_with(w)
        };
        if !hit {
            continue;
        }
        // `%` may follow a letter (`30%faster` is rare); a word unit must end the word.
        let after = t[w.len()..].chars().next();
        if ascii
            && w.chars().all(|c| c.is_ascii_alphabetic())
            && after.is_some_and(|c| c.is_ascii_alphanumeric())
        {
            continue;
        }
        if *w == "x" && after.is_some_and(|c| c.is_ascii_alphanumeric()) {
            continue;
        }
        // A letter unit needs no space before it only when it is short (`5ms`, `1.2x`).
        return Some((i + skipped + w.len(), u));
    }
    None
}

/// The word (ASCII letters, or a run of Han characters) that ends right before `i`, spaces
/// skipped, lowercased.
fn word_before(s: &str, i: usize) -> String {
    let t = s[..i].trim_end();
    let mut w: Vec<char> = Vec::new();
    for c in t.chars().rev() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.' {
            w.push(c.to_ascii_lowercase());
        } else if is_han(c) && (w.is_empty() || w.iter().all(|x| is_han(*x))) && w.len() < 2 {
            w.push(c);
        } else {
            break;
        }
    }
    w.iter().rev().collect()
}

/// The text after `i`, spaces skipped, lowercased.
fn after(s: &str, i: usize) -> String {
    s[i..].trim_start().chars().take(12).collect::<String>().to_lowercase()
}

/// Dates in a sentence, as byte ranges: `2026-09-11`, `2026/9/11`, `2026 年 9 月 11 日`,
/// `9 月 11 日`, `Sept 11, 2026`.
fn date_ranges(s: &str) -> Vec<std::ops::Range<usize>> {
    use std::sync::LazyLock;
    static DATES: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(
            r"\b\d{4}[-/.]\d{1,2}[-/.]\d{1,2}\b|\d{4}\s*年(\s*\d{1,2}\s*月(\s*\d{1,2}\s*[日號])?)?|\d{1,2}\s*月\s*\d{1,2}\s*[日號]|\b(jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d{1,2}(st|nd|rd|th)?(,\s*\d{4})?\b",
        )
        .expect("the date pattern is valid")
    });
    // ASCII lowercase keeps every byte where it is.
    DATES.find_iter(&s.to_ascii_lowercase()).map(|m| m.range()).collect()
}

/// The numbers of one sentence: those that become parts, and those left out with the reason.
/// `code` lists the byte ranges of code spans (numbers there are never drafted).
pub fn scan(s: &str, code: &[std::ops::Range<usize>]) -> Vec<Found> {
    let dates = date_ranges(s);
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let Some(c) = s[i..].chars().next() else { break };
        if digit(c).is_none() {
            // A Chinese numeral with its unit (`三成`, `兩倍`, `百分之二十`, `一百四十次`).
            if let Some((found, end)) = chinese(s, i, code) {
                out.extend(found);
                i = end;
                continue;
            }
            i += c.len_utf8();
            continue;
        }
        // A date is left out whole: `2026-09-11`, not `2026-09` and `11`.
        if let Some(d) = dates.iter().find(|d| d.start <= i && i < d.end) {
            out.push(Found::Skipped(s[i..d.end].trim().to_string(), Skip::Date));
            i = d.end;
            continue;
        }
        let Some((end, num)) = read_number(s, i) else {
            i += c.len_utf8();
            continue;
        };
        // A range: `10–30%`, `10%–30%`, `10 到 30%`, `5 to 20 ms`.
        let unit1 = read_unit(s, end);
        let after1 = unit1.map_or(end, |(e, _)| e);
        let mut second = None;
        let rest = &s[after1..];
        let t = rest.trim_start_matches(' ');
        if let Some(r) = SEPARATORS.iter().find_map(|sep| t.strip_prefix(sep)) {
            let start2 = s.len() - r.trim_start_matches(' ').len();
            if s[start2..].chars().next().and_then(digit).is_some() {
                second = read_number(s, start2).map(|n2| (start2, n2));
            }
        }
        // Not a range: a high bound below the low one (`5 - 3`), or two different units.
        if let Some((_, (e2, n2))) = &second {
            let value = crate::formula::Rational::parse_decimal;
            let units_differ =
                matches!((unit1, read_unit(s, *e2)), (Some((_, a)), Some((_, b))) if a != b);
            let ordered = match (value(&num), value(n2)) {
                (Some(lo), Some(hi)) => lo.cmp_to(hi) != std::cmp::Ordering::Greater,
                _ => false,
            };
            if !ordered || units_differ {
                second = None;
            }
        }
        let (span_end, hi, unit) = match &second {
            Some((_, (e2, n2))) => {
                let u2 = read_unit(s, *e2);
                let unit = u2.or(unit1).map(|(_, u)| u);
                (u2.map_or(*e2, |(e, _)| e), Some(n2.clone()), unit)
            }
            None => (after1, None, unit1.map(|(_, u)| u)),
        };
        let whole = &s[i..span_end];
        let skip = classify(s, i, span_end, &num, hi.as_deref(), unit, &dates, code);
        if let Some(why) = skip {
            // Shown with the word it belongs to: `H200`, not `200`.
            let name_char = |c: char| c.is_ascii_alphanumeric() || "_.-".contains(c);
            let from = s[..i].trim_end_matches(name_char).len();
            let to = span_end
                + s[span_end..].find(|c: char| !name_char(c)).unwrap_or(s.len() - span_end);
            let shown = if matches!(why, Skip::Name | Skip::Version | Skip::Ordinal) {
                &s[from..to]
            } else {
                whole
            };
            out.push(Found::Skipped(shown.trim_end_matches(['.', '-']).to_string(), why));
            // A name is left out whole: `g1cc03b5` once, not its three digit runs.
            let whole_name = matches!(why, Skip::Name | Skip::Version | Skip::Ordinal);
            i = if whole_name { to.max(span_end) } else { span_end }.max(i + 1);
            continue;
        }
        // `times` is a multiplier before a comparison or after a decimal, else a count.
        let unit = match unit {
            Some("times") => {
                let next = after(s, span_end);
                let compares = ["faster", "slower", "more", "less", "higher", "lower", "as "]
                    .iter()
                    .any(|w| next.starts_with(w));
                if num.contains('.') || compares { "x" } else { "" }
            }
            Some(u) => u,
            None => "",
        };
        // The hedge before it, kept in what is written.
        let start = hedge_start(s, i);
        let notation = |n: &str| match unit {
            "" => n.to_string(),
            "%" | "x" => format!("{n}{unit}"),
            u => format!("{n} {u}"),
        };
        let value = match hi {
            Some(h) => Stated::Range(notation(&num), notation(&h)),
            None => Stated::One(notation(&num)),
        };
        out.push(Found::Number(Number {
            written: s[start..span_end].to_string(),
            range: start..span_end,
            value,
        }));
        i = span_end.max(i + 1);
    }
    out
}

/// Where the number at `i` starts once the hedge written before it (`約`, `about`) is
/// included.
fn hedge_start(s: &str, i: usize) -> usize {
    let before = s[..i].trim_end_matches([' ', '\u{a0}']);
    for h in HEDGES {
        let Some(cut) = before.len().checked_sub(h.len()) else { continue };
        if !before.is_char_boundary(cut) || !before[cut..].eq_ignore_ascii_case(h) {
            continue;
        }
        let word = h.chars().all(|c| c.is_ascii_alphabetic());
        if !word || !before[..cut].ends_with(|c: char| c.is_ascii_alphabetic()) {
            return cut;
        }
        break;
    }
    i
}

/// A Chinese digit (`兩` is 2, as `二`).
fn cn_digit(c: char) -> Option<u64> {
    Some(match c {
        '零' | '〇' => 0,
        '一' => 1,
        '二' | '兩' => 2,
        '三' => 3,
        '四' => 4,
        '五' => 5,
        '六' => 6,
        '七' => 7,
        '八' => 8,
        '九' => 9,
        _ => return None,
    })
}

/// A Chinese power of ten.
fn cn_power(c: char) -> Option<u64> {
    Some(match c {
        '十' => 10,
        '百' => 100,
        '千' => 1000,
        '萬' => 10_000,
        _ => return None,
    })
}

/// An exact decimal: `mantissa / 10^scale`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Decimal {
    mantissa: u64,
    scale: u32,
}

impl Decimal {
    /// Ten times it (`三成` is 30%).
    fn times_ten(self) -> Decimal {
        match self.scale {
            0 => Decimal { mantissa: self.mantissa.saturating_mul(10), scale: 0 },
            s => Decimal { scale: s - 1, ..self },
        }
    }

    /// As the claims file writes it: `140`, `2.5`.
    fn text(self) -> String {
        let digits = self.mantissa.to_string();
        let scale = self.scale as usize;
        if scale == 0 {
            return digits;
        }
        let digits = format!("{digits:0>width$}", width = scale + 1);
        let (int, frac) = digits.split_at(digits.len() - scale);
        format!("{int}.{frac}")
    }
}

/// A Chinese numeral at `i` (`一百四十`, `二十三`, `十`, `兩`, `二點五`): its end, its value,
/// and whether it holds a power of ten (`十`, `百`...), which a bare digit does not.
fn read_chinese(s: &str, i: usize) -> Option<(usize, Decimal, bool)> {
    let (mut total, mut section, mut digit) = (0u64, 0u64, None::<u64>);
    let (mut end, mut powers) = (i, false);
    for (k, c) in s[i..].char_indices() {
        if let Some(d) = cn_digit(c) {
            // `零` holds a place (`一百零五`); two digits in a row are no numeral.
            if digit.is_some() {
                break;
            }
            digit = (d > 0 || (c != '零' && c != '〇')).then_some(d);
        } else if let Some(p) = cn_power(c) {
            // Only `十` stands without a digit before it (`十`, `十幾`).
            let d = match digit {
                Some(d) => d,
                None if p == 10 && section == 0 && total == 0 && k == 0 => 1,
                None => break,
            };
            if p == 10_000 {
                total = (total + section + d).checked_mul(p)?;
                section = 0;
            } else {
                section = section.checked_add(d.checked_mul(p)?)?;
            }
            digit = None;
            powers = true;
        } else {
            break;
        }
        end = i + k + c.len_utf8();
    }
    if end == i {
        return None;
    }
    let mantissa = total.checked_add(section)?.checked_add(digit.unwrap_or(0))?;
    let mut value = Decimal { mantissa, scale: 0 };
    // Decimals: `二點五`.
    if let Some(rest) = s[end..].strip_prefix('點') {
        let frac: Vec<u64> = rest.chars().map_while(cn_digit).collect();
        if !frac.is_empty() {
            for d in &frac {
                value.mantissa = value.mantissa.checked_mul(10)?.checked_add(*d)?;
            }
            value.scale = frac.len() as u32;
            end += '點'.len_utf8() + frac.len() * '一'.len_utf8();
        }
    }
    Some((end, value, powers))
}

/// A value read at `i`, Chinese or ASCII digits, after an optional `百分之` (then a percent).
fn read_value(s: &str, i: usize) -> Option<(usize, Decimal, bool, bool)> {
    let (at, percent) = match s[i..].strip_prefix("百分之") {
        Some(rest) => (s.len() - rest.trim_start().len(), true),
        None => (i, false),
    };
    if let Some((end, v, powers)) = read_chinese(s, at) {
        return Some((end, v, powers, percent));
    }
    if !percent {
        return None;
    }
    // `百分之 20`.
    let (end, text) = read_number(s, at)?;
    let (int, frac) = text.replace(',', "").split_once('.').map_or_else(
        || (text.replace(',', ""), String::new()),
        |(a, b)| (a.to_string(), b.to_string()),
    );
    let mantissa = format!("{int}{frac}").parse().ok()?;
    Some((end, Decimal { mantissa, scale: frac.len() as u32 }, true, true))
}

/// The unit after a Chinese numeral: `成` (tenths, as a percent), else one of [`UNITS`].
fn cn_unit(s: &str, i: usize) -> Option<(usize, &'static str, bool)> {
    let t = s[i..].trim_start_matches(' ');
    if let Some(rest) = t.strip_prefix('成') {
        return Some((s.len() - rest.len(), "%", true));
    }
    read_unit(s, i).map(|(e, u)| (e, u, false))
}

/// The notation of a Chinese value with its unit: `成` is ten times, a percent.
fn cn_notation(v: Decimal, unit: &str, tenths: bool) -> String {
    let v = if tenths { v.times_ten() } else { v };
    match unit {
        "" => v.text(),
        "%" | "x" => format!("{}{unit}", v.text()),
        u => format!("{} {u}", v.text()),
    }
}

/// A Chinese quantity at `i`: a numeral with its unit (`三成` 30%, `兩倍` 2x, `一半` 50%,
/// `百分之二十` 20%, `一百四十次` 140, `十幾毫秒` 11–19 ms, `三到五成` 30–50%), or one left
/// out (`數十次`, `一百多次`, `第一次`, `八張`, inside code), with where scanning goes on.
/// None where the characters are no quantity (`一些`, `十分`, `一個原因`): a Chinese digit
/// counts only with a unit, and a count (`次`, `個`, `筆`) only from ten up, since `一次`,
/// `兩個` are words more often than measurements.
fn chinese(s: &str, i: usize, code: &[std::ops::Range<usize>]) -> Option<(Option<Found>, usize)> {
    let inside = |rs: &[std::ops::Range<usize>]| rs.iter().any(|r| r.start <= i && i < r.end);
    let skip =
        |end: usize, why: Skip| Some((Some(Found::Skipped(s[i..end].to_string(), why)), end));
    // Vague quantities: `數十`, `幾百`, `上百`, `上千`, with a unit.
    for lead in ["數", "幾", "上"] {
        if let Some(rest) = s[i..].strip_prefix(lead) {
            let p = rest.chars().next().and_then(cn_power)?;
            let end = s.len() - rest.len() + '十'.len_utf8();
            return cn_unit(s, end)
                .map(|(e, _, _)| (Some(Found::Skipped(s[i..e].to_string(), Skip::Vague)), e))
                .filter(|_| p >= 10);
        }
    }
    if s[i..].starts_with("一半") {
        let end = i + "一半".len();
        if inside(code) {
            return skip(end, Skip::Code);
        }
        let start = hedge_start(s, i);
        let n = Number {
            written: s[start..end].to_string(),
            range: start..end,
            value: Stated::One("50%".into()),
        };
        return Some((Some(Found::Number(n)), end));
    }
    let (end1, v1, powers1, pct1) = read_value(s, i)?;
    // `十幾`, `二十幾`: a teen or a decade, as a range; `一百多`: no range it states.
    let mut lo_hi = None;
    let mut after = end1;
    if let Some(rest) = s[end1..].strip_prefix('幾') {
        if v1.scale == 0 && (10..100).contains(&v1.mantissa) && v1.mantissa % 10 == 0 && powers1 {
            lo_hi = Some((
                Decimal { mantissa: v1.mantissa + 1, scale: 0 },
                Decimal { mantissa: v1.mantissa + 9, scale: 0 },
            ));
            after = s.len() - rest.len();
        } else {
            let e = s.len() - rest.len();
            return cn_unit(s, e)
                .map(|(u, _, _)| (Some(Found::Skipped(s[i..u].to_string(), Skip::Vague)), u));
        }
    } else if let Some(rest) = s[end1..].strip_prefix('多') {
        let e = s.len() - rest.len();
        if let Some((u, _, _)) = cn_unit(s, e) {
            return Some((Some(Found::Skipped(s[i..u].to_string(), Skip::Vague)), u));
        }
        return None;
    }
    let unit1 = if pct1 { Some((after, "%", false)) } else { cn_unit(s, after) };
    // A range: `三到五成`, `兩到三倍`, `百分之十到二十`, `十到二十次`.
    let mut second = None;
    if lo_hi.is_none() {
        let from = unit1.map_or(after, |(e, _, _)| e);
        let t = s[from..].trim_start_matches(' ');
        if let Some(r) =
            SEPARATORS.iter().filter(|sep| !sep.is_ascii()).find_map(|sep| t.strip_prefix(sep))
        {
            let start2 = s.len() - r.trim_start_matches(' ').len();
            if let Some((end2, v2, powers2, pct2)) = read_value(s, start2) {
                let unit2 = if pct2 { Some((end2, "%", false)) } else { cn_unit(s, end2) };
                let same = match (unit1, unit2) {
                    (Some((_, a, ta)), Some((_, b, tb))) => a == b && ta == tb,
                    _ => true,
                };
                if let (true, Some(u)) = (same, unit2.or(unit1)) {
                    let ordered = v1.mantissa as u128 * 10u128.pow(v2.scale)
                        <= v2.mantissa as u128 * 10u128.pow(v1.scale);
                    // The unit after the high bound, or a percent stated before the low one
                    // (`百分之十到二十`).
                    if ordered && (unit2.is_some() || pct1) {
                        second =
                            Some((v2, powers1 || powers2, u, unit2.map_or(end2, |(e, _, _)| e)));
                    }
                }
            }
        }
    }
    let (unit, span_end, powers) = match (&second, unit1) {
        (Some((_, powers, u, e)), _) => (*u, *e, *powers),
        (None, Some(u)) => (u, u.0, powers1),
        // No unit: no quantity, unless it is the size of the job (`八張 H200`).
        (None, None) => {
            let next = s[after..].trim_start().to_lowercase();
            if SETUP_AFTER.iter().any(|w| next.starts_with(w)) {
                return skip(after, Skip::Setup);
            }
            return None;
        }
    };
    let (_, u, tenths) = unit;
    if inside(code) {
        return skip(span_end, Skip::Code);
    }
    if s[..i].trim_end().ends_with('第') {
        return skip(span_end, Skip::Ordinal);
    }
    // `一次`, `兩個`: words; `一倍` (`快一倍` is twice): no number it states.
    if u.is_empty() && !powers && lo_hi.is_none() && second.is_none() {
        return None;
    }
    if u == "x" && v1 == (Decimal { mantissa: 1, scale: 0 }) && second.is_none() {
        return skip(span_end, Skip::Vague);
    }
    if u == "times" {
        return None;
    }
    // `八成是…`, `八成會…`: "most likely", not 80%.
    if tenths && v1 == (Decimal { mantissa: 8, scale: 0 }) && second.is_none() {
        let next = s[span_end..].trim_start();
        if ["是", "會", "就", "吧", "可能", "也"].iter().any(|w| next.starts_with(w)) {
            return None;
        }
    }
    // `三成五`: 35%.
    let mut span_end = span_end;
    let mut v1 = v1;
    let tenth = s[span_end..].chars().next().and_then(cn_digit).filter(|d| *d > 0);
    if let (Some(d), true) = (tenth, tenths && second.is_none() && lo_hi.is_none()) {
        let next = s[span_end + '一'.len_utf8()..].chars().next();
        let mantissa = v1.mantissa.checked_mul(10).and_then(|m| m.checked_add(d));
        if let (Some(m), false, 0) = (
            mantissa,
            next.is_some_and(|c| cn_digit(c).is_some() || cn_power(c).is_some()),
            v1.scale,
        ) {
            v1 = Decimal { mantissa: m, scale: 1 };
            span_end += '一'.len_utf8();
        }
    }
    let value = match (lo_hi, &second) {
        (Some((lo, hi)), _) => {
            Stated::Range(cn_notation(lo, u, tenths), cn_notation(hi, u, tenths))
        }
        (None, Some((v2, ..))) => {
            Stated::Range(cn_notation(v1, u, tenths), cn_notation(*v2, u, tenths))
        }
        (None, None) => Stated::One(cn_notation(v1, u, tenths)),
    };
    let start = hedge_start(s, i);
    let n = Number { written: s[start..span_end].to_string(), range: start..span_end, value };
    Some((Some(Found::Number(n)), span_end))
}

/// Why a number at `start..end` is not drafted, if it is not.
#[allow(clippy::too_many_arguments)]
fn classify(
    s: &str,
    start: usize,
    end: usize,
    num: &str,
    hi: Option<&str>,
    unit: Option<&str>,
    dates: &[std::ops::Range<usize>],
    code: &[std::ops::Range<usize>],
) -> Option<Skip> {
    let inside =
        |rs: &[std::ops::Range<usize>]| rs.iter().any(|r| r.start <= start && start < r.end);
    if inside(code) {
        return Some(Skip::Code);
    }
    if inside(dates) {
        return Some(Skip::Date);
    }
    let prev = s[..start].chars().next_back();
    let next = s[end..].chars().next();
    // Inside a hyphenated name: `gpt-6-astra`, `v0.3.0-21-g1cc03b5`.
    let before_hyphen = s[..start].strip_suffix('-').and_then(|b| b.chars().next_back());
    let after_hyphen = s[end..].strip_prefix('-').and_then(|a| a.chars().next());
    if before_hyphen.is_some_and(|c| c.is_ascii_alphanumeric())
        || after_hyphen.is_some_and(|c| c.is_ascii_alphabetic())
    {
        return Some(Skip::Name);
    }
    // Glued to a letter: `TP8`, `H200`, `bf16`, `sm_90`, `v0.3.0`.
    if prev.is_some_and(|c| c.is_ascii_alphabetic() || c == '_') {
        let version = matches!(prev, Some('v' | 'V')) && num.contains('.');
        return Some(if version { Skip::Version } else { Skip::Name });
    }
    if unit.is_none() && next.is_some_and(|c| c.is_ascii_alphabetic() || c == '_') {
        // `8B`, `70b`, `2nd`: a name or an ordinal.
        let rest = after(s, end);
        let ordinal = ["st", "nd", "rd", "th"].iter().any(|o| {
            rest.starts_with(o) && !rest[o.len()..].starts_with(|c: char| c.is_ascii_alphabetic())
        });
        return Some(if ordinal { Skip::Ordinal } else { Skip::Name });
    }
    // `8x H200`, `8× GPUs`: the size of the job.
    if unit == Some("x") {
        let rest = after(s, end);
        let hardware =
            ["h100", "h200", "h800", "a100", "a800", "b200", "v100", "l40", "gpu", "mi300"];
        if hardware.iter().any(|h| rest.starts_with(h)) {
            return Some(Skip::Setup);
        }
    }
    if num.matches('.').count() >= 2 {
        return Some(Skip::Version);
    }
    let before = word_before(s, start);
    if s[..start].trim_end().ends_with('第') || s[..start].trim_end().ends_with('#') {
        return Some(Skip::Ordinal);
    }
    // A list number left in the text: `(1)`, `1)`, `1、` at the start of the sentence.
    let lead = s[..start].trim();
    if (lead.is_empty() || lead == "(" || lead == "（")
        && hi.is_none()
        && unit.is_none()
        && next.is_some_and(|c| matches!(c, ')' | '）' | '、' | '.'))
    {
        return Some(Skip::Ordinal);
    }
    if unit.is_none() {
        let next_word = after(s, end);
        if SETUP_AFTER.iter().any(|w| {
            next_word.starts_with(w)
                && !next_word[w.len()..].starts_with(|c: char| c.is_ascii_alphabetic())
        }) {
            return Some(Skip::Setup);
        }
        if NAME_BEFORE.contains(&before.as_str()) {
            return Some(Skip::Name);
        }
        let capitalised = s[..start]
            .trim_end()
            .rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .next()
            .is_some_and(|w| w.chars().any(|c| c.is_ascii_uppercase()));
        if num.contains('.') && (capitalised || VERSION_BEFORE.contains(&before.as_str())) {
            return Some(Skip::Version);
        }
        if capitalised && hi.is_none() {
            // `Day 26`, `Megatron 3`: a number right after a capitalised name names it.
            return Some(Skip::Name);
        }
        if hi.is_none() && !num.contains(['.', ',']) && num.len() == 4 {
            let y: u32 = num.parse().unwrap_or(0);
            if (1900..=2100).contains(&y) {
                return Some(Skip::Date);
            }
        }
        if MONTHS.iter().any(|m| before.starts_with(m)) && num.len() <= 2 {
            return Some(Skip::Date);
        }
    }
    None
}

/// Cue words of a kind, lowercased; an ASCII cue matches at the start of a word.
const ACTION: &[&str] = &[
    "建議",
    "應該",
    "應先",
    "應把",
    "應拆",
    "應改",
    "應開",
    "可以先",
    "先確認",
    "確認",
    "檢查",
    "試試",
    "試著",
    "改成",
    "改用",
    "開啟",
    "關閉",
    "調整",
    "升級",
    "should",
    "try",
    "recommend",
    "consider",
    "check",
    "enable",
    "disable",
    "switch",
    "make sure",
    "verify",
];
const CAUSAL: &[&str] = &[
    "因為",
    "由於",
    "導致",
    "造成",
    "使得",
    "使",
    "讓",
    "所以",
    "因此",
    "拖慢",
    "主因",
    "來自",
    "帶來",
    "多出",
    "because",
    "due to",
    "caus",
    "leads to",
    "lead to",
    "results in",
    "so",
    "therefore",
    "slows",
    "costs",
    "cost",
    "adds",
    "add",
];
const INTERPRETATION: &[&str] = &[
    "代表",
    "表示",
    "意味",
    "顯示",
    "說明",
    "可能",
    "也許",
    "推測",
    "看起來",
    "suggests",
    "indicates",
    "means",
    "likely",
    "probably",
    "may",
    "might",
    "implies",
    "points to",
    "appears",
];
/// Words that contain a cue but are not one (`使用` is "to use", not "to cause").
const FALSE_FRIENDS: &[&str] = &["使用", "即使", "假使", "確認過", "check-in", "checkpoint"];

/// The cues of `list` in `text`, in the list's order.
fn cues_in(text: &str, list: &[&str]) -> Vec<String> {
    let mut t = text.to_lowercase();
    for f in FALSE_FRIENDS {
        t = t.replace(f, &" ".repeat(f.chars().count()));
    }
    let mut found = Vec::new();
    let letter = |c: char| c.is_ascii_alphanumeric();
    for cue in list {
        // An English cue starts a word (`check`, not `recheck`); a short one is the whole word
        // (`so`, not `solve`; `op`, not `open`).
        let ascii = cue.starts_with(|c: char| c.is_ascii_alphabetic());
        let whole = ascii && cue.len() <= 3;
        let hit = t.match_indices(cue).any(|(k, _)| {
            !ascii
                || (!t[..k].ends_with(letter)
                    && (!whole || !t[k + cue.len()..].starts_with(letter)))
        });
        if hit {
            found.push(cue.to_string());
        }
    }
    found
}

/// The clause around a byte range of a sentence: between `，,、：:` and brackets.
fn clause(s: &str, r: &std::ops::Range<usize>) -> String {
    const CUTS: &[char] = &['，', ',', '、', '：', ':', '（', '）', '(', ')'];
    let start =
        s[..r.start].rfind(CUTS).map_or(0, |k| k + s[k..].chars().next().map_or(1, char::len_utf8));
    let end = s[r.end..].find(CUTS).map_or(s.len(), |k| r.end + k);
    s[start..end].to_string()
}

/// The proposed kind of a number's part and the cues that chose it: an action when its clause
/// asks for one, else causal, interpretation or (no cue) observation from the sentence.
pub fn propose_kind(sentence: &str, number: &std::ops::Range<usize>) -> (Kind, Vec<String>) {
    let action = cues_in(&clause(sentence, number), ACTION);
    if !action.is_empty() {
        return (Kind::Action, action);
    }
    let causal = cues_in(sentence, CAUSAL);
    if !causal.is_empty() {
        return (Kind::Causal, causal);
    }
    let interp = cues_in(sentence, INTERPRETATION);
    if !interp.is_empty() {
        return (Kind::Interpretation, interp);
    }
    (Kind::Observation, Vec::new())
}

/// What a stated value is, for choosing a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Category {
    Share,
    Time,
    Count,
    Multiplier,
    Bandwidth,
    Bytes,
}

fn category(v: &Stated) -> Category {
    let s = match v {
        Stated::One(s) | Stated::Range(_, s) => s,
    };
    let unit = s.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.' || c == ',').trim();
    match unit {
        "%" | "pp" => Category::Share,
        "ms" | "s" | "ns" | "µs" => Category::Time,
        "x" => Category::Multiplier,
        "GB/s" => Category::Bandwidth,
        "bytes" | "GB" | "MB" | "KB" | "GiB" | "MiB" => Category::Bytes,
        _ => Category::Count,
    }
}

/// Words that say a number is about kernel efficiency, which a trace cannot show.
const EFFICIENCY: &[&str] =
    &["效率", "利用率", "efficien", "utiliz", "tensor core", "occupancy", "佔用率", "mfu", "sol"];
const UNMEASURABLE: &str = "kernel efficiency (SOL, Tensor Core use, MFU) is not in an Nsight Systems trace: it needs an Nsight Compute (ncu) profile or a controlled A/B run";

/// A kernel name the sentence gives: a code span, or a word with an underscore
/// (`flash_bwd_dq_dk_dv_loop_seqk_parallel`).
fn kernel_name(sentence: &str, code: &[std::ops::Range<usize>]) -> Option<String> {
    if let Some(r) = code.first() {
        return Some(sentence[r.clone()].to_string());
    }
    sentence
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .find(|w| w.contains('_') && w.chars().any(|c| c.is_ascii_alphabetic()))
        .map(str::to_string)
}

/// The candidate measures of a number in a sentence, best first (the more specific analyses
/// first: waiting between ranks, copies, NVTX ranges and ops, kernels, then the NCCL share and
/// idle time), or why none can measure it.
pub fn propose_analyses(
    sentence: &str,
    value: &Stated,
    code: &[std::ops::Range<usize>],
) -> (Vec<Candidate>, Option<&'static str>) {
    if !cues_in(sentence, EFFICIENCY).is_empty() {
        return (Vec::new(), Some(UNMEASURABLE));
    }
    let cat = category(value);
    let mut out: Vec<Candidate> = Vec::new();
    for (analysis, cues, fields) in ANALYSES {
        let Some(cue) = cues_in(sentence, cues).into_iter().next() else { continue };
        let Some((_, field, unit)) = fields.iter().find(|(c, _, _)| *c == cat) else { continue };
        if out.iter().any(|c| c.analysis == *analysis && c.value == *field) {
            continue;
        }
        out.push(Candidate {
            analysis,
            value: field,
            unit,
            name_match: (*analysis == "kernels").then(|| kernel_name(sentence, code)).flatten(),
            cue,
        });
    }
    (out, None)
}

/// Drafts claims from a Markdown answer. `lang` is the answer's language (detected when None).
pub fn draft(md: &str, lang: Option<&str>) -> Draft {
    let lang = lang.unwrap_or_else(|| detect_lang(md)).to_string();
    let line_starts: Vec<usize> =
        std::iter::once(0).chain(md.match_indices('\n').map(|(k, _)| k + 1)).collect();
    let line_of = |src: usize| line_starts.partition_point(|s| *s <= src);
    let (blocks, heading) = blocks(md);
    let mut claims: Vec<DraftClaim> = Vec::new();
    let mut skipped = Vec::new();
    for block in &blocks {
        let mut parts: Vec<DraftPart> = Vec::new();
        for sr in sentences(&block.text) {
            let sentence = &block.text[sr.clone()];
            let code: Vec<std::ops::Range<usize>> = block
                .code
                .iter()
                .filter(|c| c.start >= sr.start && c.end <= sr.end)
                .map(|c| c.start - sr.start..c.end - sr.start)
                .collect();
            for found in scan(sentence, &code) {
                match found {
                    Found::Skipped(text, why) => {
                        let at = sentence.find(&text).unwrap_or(0);
                        skipped.push((line_of(block.source(sr.start + at)), text, why));
                    }
                    Found::Number(number) => {
                        // The line of its first digit (a hedge may end the line before).
                        let digits = number
                            .written
                            .find(|c: char| c.is_ascii_digit() || ('０'..='９').contains(&c))
                            .unwrap_or(0);
                        let line = line_of(block.source(sr.start + number.range.start + digits));
                        let (mut kind, cues) = propose_kind(sentence, &number.range);
                        // The sentence's words first; a sentence with none (`I would put
                        // the cost at 10-25%`) takes its block's.
                        let (mut analyses, mut unmeasurable) =
                            propose_analyses(sentence, &number.value, &code);
                        if analyses.is_empty() && unmeasurable.is_none() {
                            (analyses, unmeasurable) =
                                propose_analyses(&block.text, &number.value, &block.code);
                        }
                        // An interpretation reads an observation; with none before it in the
                        // block, the number is drafted as the observation it states.
                        let from = parts
                            .iter()
                            .rev()
                            .find(|p| p.kind == Kind::Observation)
                            .map(|p| p.id.clone());
                        if kind == Kind::Interpretation && from.is_none() {
                            kind = Kind::Observation;
                        }
                        parts.push(DraftPart {
                            id: format!("p{}", parts.len() + 1),
                            kind,
                            cues,
                            sentence: sentence.to_string(),
                            line,
                            number,
                            analyses,
                            unmeasurable,
                            from: if kind == Kind::Interpretation { from } else { None },
                        });
                    }
                }
            }
        }
        if parts.is_empty() {
            continue;
        }
        // A claim needs a part that can be judged: actions alone join the claim before them.
        if parts.iter().all(|p| p.kind == Kind::Action) {
            if let Some(prev) = claims.last_mut() {
                for mut p in parts {
                    p.id = format!("p{}", prev.parts.len() + 1);
                    prev.parts.push(p);
                }
            } else {
                for p in parts {
                    skipped.push((p.line, p.number.written.clone(), Skip::Unclaimed));
                }
            }
            continue;
        }
        claims.push(DraftClaim {
            id: format!("c{}", claims.len() + 1),
            statement: block.text.trim().to_string(),
            parts,
        });
    }
    skipped.sort_by_key(|(l, _, _)| *l);
    Draft { lang, heading, claims, skipped }
}

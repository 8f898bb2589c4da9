//! Training configurations, read into flat keys with their lines: the source a claim about the
//! run's settings (recompute on or off, the parallel sizes) is checked against.
//!
//! Owns four sources: Megatron-LM's `arguments` block in a log (told by its marker line,
//! whatever the file is called), YAML and TOML files (told by their extension, since YAML
//! accepts almost any text), JSON (told by parsing: text that opens with `{`), and a launch
//! command line (`--tensor-model-parallel-size 8`). It reads; it judges nothing, and a value
//! that is `None`, `null` or left to the launcher to fill in is kept as such, never guessed.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};

use super::open::TextError;
use crate::formula::Rational;

/// The largest file read (64 MiB): a Megatron log is read whole to find its block, and a run's
/// log of a few hundred thousand iterations is tens of MB.
pub const MAX_BYTES: u64 = 64 << 20;

/// The line Megatron-LM prints before its arguments, between runs of dashes.
pub const BLOCK_START: &str = " arguments ";
/// The line Megatron-LM prints after its arguments, between runs of dashes.
pub const BLOCK_END: &str = " end of arguments ";

/// Which kind of source a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A log holding Megatron-LM's `arguments` block (told by its marker line).
    MegatronLog,
    /// A YAML file (`.yaml`, `.yml`), flattened to dotted keys.
    Yaml,
    /// A JSON object (text that opens with `{`, or a `.json` file), flattened to dotted keys.
    Json,
    /// A TOML file (`.toml`), flattened to dotted keys.
    Toml,
    /// A launch command line: `--flag value` pairs, `-` in names read as `_`.
    CommandLine,
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Format::MegatronLog => "Megatron-LM arguments block",
            Format::Yaml => "YAML",
            Format::Json => "JSON",
            Format::Toml => "TOML",
            Format::CommandLine => "command line",
        })
    }
}

/// A setting's value, typed as the source wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigValue {
    /// No value: Python's `None`, YAML's `null` or `~`, JSON's `null`. A claim bound to it is
    /// unverifiable, never false.
    Absent,
    /// `True`/`False`, `true`/`false`, or a command-line flag given without a value (`True`).
    Bool(bool),
    /// A finite number, read exactly from its digits (`0.0003`, `1e-05`, `8`).
    Number {
        /// Its value.
        value: Rational,
        /// The text as written.
        text: String,
    },
    /// Any other text, verbatim (`selective`, `torch.bfloat16`); an empty value is `Text("")`.
    Text(String),
    /// A list whose items are all scalars (`[1, 2]`, `['a', 'b']`, `--data-path a b`).
    List(Vec<ConfigValue>),
    /// An empty mapping (`{}`), which has no keys of its own.
    EmptyMap,
    /// A value the file leaves to be filled in later, so its text is not the value the run
    /// used: a shell expansion (`$TP`) in a command line, an OmegaConf interpolation
    /// (`${model.tp}`) or mandatory marker (`???`) in YAML. Unverifiable, like [`Absent`].
    ///
    /// [`Absent`]: ConfigValue::Absent
    Unresolved(String),
}

impl ConfigValue {
    /// The number, when it is one.
    pub fn number(&self) -> Option<Rational> {
        match self {
            ConfigValue::Number { value, .. } => Some(*value),
            _ => None,
        }
    }

    /// Whether the file gives no usable value (absent, or left to be filled in).
    pub fn is_absent(&self) -> bool {
        matches!(self, ConfigValue::Absent | ConfigValue::Unresolved(_))
    }
}

/// One setting: its flattened key, value and where it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The key: Megatron's argument name, a dotted path (`model.tensor_model_parallel_size`,
    /// `model.optim.betas`, `callbacks.0.name`), or a flag's name with `-` read as `_`
    /// (`launcher.` before it for the launcher's own flags, those before the `.py` script).
    pub key: String,
    /// The value.
    pub value: ConfigValue,
    /// The line (1-based) of the key.
    pub line: u64,
    /// The column (1-based, in characters) of the value, where the parser gives it.
    pub column: Option<u64>,
    /// The value's text as written (for a Megatron line, the whole line without its prefix).
    pub raw: String,
}

/// Where a Megatron log's arguments block was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The line of the `arguments` marker.
    pub start_line: u64,
    /// The line of the `end of arguments` marker.
    pub end_line: u64,
    /// The text before the marker on its line (`[default0]:` under torchrun), empty when none;
    /// only lines with this prefix belong to the block.
    pub prefix: String,
    /// How many blocks the log holds: the first is read, and every later one agrees with it
    /// (a log whose blocks disagree is refused).
    pub blocks: usize,
}

/// A configuration read from one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The file.
    pub path: PathBuf,
    /// The sha256 of the file's bytes, in lowercase hex.
    pub sha256: String,
    /// What kind of source it is.
    pub format: Format,
    /// The block read, for a Megatron log.
    pub block: Option<Block>,
    /// The settings, in file order; keys are unique.
    pub entries: Vec<Entry>,
}

impl Config {
    /// The setting of `key`, when the file has it.
    pub fn get(&self, key: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.key == key)
    }
}

/// A configuration that cannot be read: where, and what.
#[derive(Debug)]
pub struct ConfigError {
    /// The file.
    pub path: PathBuf,
    /// The line (1-based), when the problem has one.
    pub line: Option<u64>,
    /// The column (1-based), when the parser gives one.
    pub column: Option<u64>,
    /// What is wrong (boxed: the error stays small on the happy path).
    pub kind: Box<ConfigErrorKind>,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.path.display();
        match (self.line, self.column) {
            (Some(l), Some(c)) => write!(f, "`{p}:{l}:{c}`: {}", self.kind),
            (Some(l), None) => write!(f, "`{p}:{l}`: {}", self.kind),
            _ => write!(f, "`{p}`: {}", self.kind),
        }
    }
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self.kind.as_ref() {
            ConfigErrorKind::Text(TextError::Read(e)) => Some(e),
            _ => None,
        }
    }
}

/// What is wrong with a configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigErrorKind {
    /// The file could not be read whole as text (the gate, the size limit, UTF-8).
    #[error(transparent)]
    Text(#[from] TextError),
    /// The file holds nothing but white space.
    #[error("the file is empty")]
    Empty,
    /// No source this reader knows.
    #[error(
        "not a training configuration (no Megatron `arguments` block, not YAML, TOML or JSON by its extension or content, and no `--flag` of a command line)"
    )]
    Unrecognised,
    /// An `arguments` block without its `end of arguments` line.
    #[error("the `arguments` block that starts here has no `end of arguments` line")]
    Unterminated,
    /// A line inside the block that is not `  key ... value`.
    #[error("a line of the `arguments` block has no argument name (`{text}`)")]
    NoKey {
        /// The line, without its prefix.
        text: String,
    },
    /// A key given twice.
    #[error("key `{key}` is given twice (first on line {first_line})")]
    DuplicateKey {
        /// The key.
        key: String,
        /// The line of its first occurrence.
        first_line: u64,
    },
    /// A later arguments block that differs from the first.
    #[error(
        "this `arguments` block differs from the one on line {first_start} (`{key}`: `{first}` there, `{here}` here)"
    )]
    BlocksDisagree {
        /// The first block's marker line.
        first_start: u64,
        /// The first key that differs.
        key: String,
        /// Its value in the first block (`<missing>` when absent there).
        first: String,
        /// Its value here.
        here: String,
    },
    /// The parser of the file's format refused it.
    #[error("invalid {format} ({message})")]
    Syntax {
        /// The format.
        format: Format,
        /// The parser's message.
        message: String,
    },
    /// A JSON or TOML document whose top level is not a table or object.
    #[error("the top level of the {format} document is not a mapping of keys")]
    NotAMapping {
        /// The format.
        format: Format,
    },
}

impl ConfigError {
    /// A hint on what to do about it: every kind has one.
    pub fn hint(&self) -> Option<String> {
        Some(match self.kind.as_ref() {
            ConfigErrorKind::Text(TextError::Read(e)) => match super::open::Refused::of(e) {
                Some(r) => r.hint.clone(),
                None => "pass the training log, the config file or a file holding the launch command".into(),
            },
            ConfigErrorKind::Text(TextError::TooLarge { .. }) => {
                "cut the log to its start: the `arguments` block is printed before the first iteration".into()
            }
            ConfigErrorKind::Text(TextError::NotUtf8 { .. }) => {
                "pass the log as text (decompress it first; a log from a non-UTF-8 locale can be converted with `iconv -t UTF-8`)".into()
            }
            ConfigErrorKind::Empty => "the file holds no configuration; pass the run's log or config file".into(),
            ConfigErrorKind::Unrecognised => {
                "pass a Megatron-LM log with its `arguments` block, a `.yaml`/`.yml`/`.toml`/`.json` config, or a file holding the launch command".into()
            }
            ConfigErrorKind::Unterminated => {
                "the log was cut inside the block; pass the whole log, or at least up to `end of arguments`".into()
            }
            ConfigErrorKind::NoKey { .. } => {
                "another process wrote into the block; pass a log of rank 0 alone (torchrun `--redirects`/`--tee` with `--log-dir`) or remove the foreign line".into()
            }
            ConfigErrorKind::DuplicateKey { .. } => {
                "keep one of the two: a run reads only one of them, and which one depends on the program".into()
            }
            ConfigErrorKind::BlocksDisagree { .. } => {
                "the log holds several runs; cut it to the run the claim is about".into()
            }
            ConfigErrorKind::Syntax { .. } => "fix the syntax at this position".into(),
            ConfigErrorKind::NotAMapping { .. } => {
                "pass a config whose top level maps keys to values".into()
            }
        })
    }
}

/// A problem at a line (and column), before the file's path is attached.
type Located = (Option<u64>, Option<u64>, ConfigErrorKind);

/// Reads a configuration, through the open gate (read-only, regular files only).
pub fn read(path: &Path) -> Result<Config, ConfigError> {
    let bytes = super::open::read_capped(path, MAX_BYTES).map_err(|e| ConfigError {
        path: path.to_path_buf(),
        line: e.line(),
        column: None,
        kind: Box::new(ConfigErrorKind::Text(e)),
    })?;
    parse(&bytes, path)
}

/// Reads a configuration's bytes; `path` names it in errors and its extension tells YAML and
/// TOML apart.
pub fn parse(bytes: &[u8], path: &Path) -> Result<Config, ConfigError> {
    let sha256 = super::hex(&Sha256::digest(bytes));
    let at = |(line, column, kind): Located| ConfigError {
        path: path.to_path_buf(),
        line,
        column,
        kind: Box::new(kind),
    };
    let text =
        super::open::utf8(bytes).map_err(|e| at((e.line(), None, ConfigErrorKind::Text(e))))?;
    if text.trim().is_empty() {
        return Err(at((None, None, ConfigErrorKind::Empty)));
    }
    let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    let (format, block, entries) = if let Some(start) = find_block_start(text, 0) {
        let (block, entries) = read_block(text, start).map_err(at)?;
        (Format::MegatronLog, Some(block), entries)
    } else if matches!(ext.as_deref(), Some("yaml" | "yml")) {
        (Format::Yaml, None, flatten(read_yaml(text).map_err(at)?).map_err(at)?)
    } else if matches!(ext.as_deref(), Some("toml")) {
        (Format::Toml, None, flatten(read_toml(text).map_err(at)?).map_err(at)?)
    } else if ext.as_deref() == Some("json") || text.trim_start().starts_with('{') {
        (Format::Json, None, flatten(read_json(text).map_err(at)?).map_err(at)?)
    } else {
        let entries = read_command_line(text).map_err(at)?;
        if entries.is_empty() {
            return Err(at((None, None, ConfigErrorKind::Unrecognised)));
        }
        (Format::CommandLine, None, entries)
    };
    Ok(Config { path: path.to_path_buf(), sha256, format, block, entries })
}

// ---------------------------------------------------------------------------------------------
// Values

/// An exact number from decimal text with an optional exponent (`0.0003`, `1e-05`, `-2.5E+3`),
/// None for anything else (`inf`, `nan`, `1,000`, hex).
fn exact_number(text: &str) -> Option<Rational> {
    let (mantissa, exp) = match text.find(['e', 'E']) {
        Some(i) => (&text[..i], text[i + 1..].parse::<i32>().ok()?),
        None => (text, 0),
    };
    let digits = mantissa.strip_prefix(['-', '+']).unwrap_or(mantissa);
    if digits.is_empty()
        || !digits.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        || !digits.bytes().any(|b| b.is_ascii_digit())
        || digits.bytes().filter(|&b| b == b'.').count() > 1
    {
        return None;
    }
    let m = Rational::parse_decimal(mantissa)?;
    if exp.unsigned_abs() > 30 {
        return None;
    }
    let scale = Rational::int(10_i128.pow(exp.unsigned_abs()));
    if exp >= 0 { m.checked_mul(scale) } else { m.checked_div(scale) }
}

/// A value as Python prints it (`None`, `True`, `3e-05`, `['a', 'b']`, `selective`).
fn python_value(text: &str) -> ConfigValue {
    match text {
        "None" => return ConfigValue::Absent,
        "True" => return ConfigValue::Bool(true),
        "False" => return ConfigValue::Bool(false),
        _ => {}
    }
    if let Some(value) = exact_number(text) {
        return ConfigValue::Number { value, text: text.to_string() };
    }
    if let Some(inner) = text.strip_prefix('[').and_then(|t| t.strip_suffix(']'))
        && let Some(items) = python_list(inner)
    {
        return ConfigValue::List(items);
    }
    ConfigValue::Text(text.to_string())
}

/// The items of a Python list's repr when they are simple: numbers, `True`/`False`/`None`, and
/// quoted strings without quotes, commas or brackets inside. None otherwise (the raw text stays).
fn python_list(inner: &str) -> Option<Vec<ConfigValue>> {
    if inner.trim().is_empty() {
        return Some(Vec::new());
    }
    if inner.contains(['[', ']', '(', ')', '{', '}']) {
        return None;
    }
    inner
        .split(", ")
        .map(|item| {
            let quoted = item
                .strip_prefix('\'')
                .and_then(|s| s.strip_suffix('\''))
                .or_else(|| item.strip_prefix('"').and_then(|s| s.strip_suffix('"')));
            match quoted {
                Some(s) if !s.contains(['\'', '"', '\\']) => Some(ConfigValue::Text(s.into())),
                Some(_) => None,
                None => match python_value(item) {
                    ConfigValue::Text(_) => None,
                    v => Some(v),
                },
            }
        })
        .collect()
}

/// A command-line word as a value: a number when it reads as one, `Unresolved` when the shell
/// would expand it, else text.
fn word_value(word: &str) -> ConfigValue {
    if word.contains('$') || word.contains('`') {
        return ConfigValue::Unresolved(word.to_string());
    }
    match exact_number(word) {
        Some(value) => ConfigValue::Number { value, text: word.to_string() },
        None => ConfigValue::Text(word.to_string()),
    }
}

// ---------------------------------------------------------------------------------------------
// Megatron's arguments block

/// The byte offset of the next line, from `from`, whose text (after any prefix) is the
/// block's start marker: dashes, ` arguments `, dashes.
fn find_block_start(text: &str, from: usize) -> Option<usize> {
    let mut offset = from;
    for line in text[from..].split_inclusive('\n') {
        if marker_prefix(line, BLOCK_START).is_some() {
            return Some(offset);
        }
        offset += line.len();
    }
    None
}

/// The prefix before a marker line (`---- arguments ----`), when `line` is one.
fn marker_prefix<'a>(line: &'a str, title: &str) -> Option<&'a str> {
    let line = line.trim_end();
    let i = line.find(&format!("-{title}-"))?;
    let (before, after) = (&line[..=i], &line[i + 1 + title.len()..]);
    let dashes = before.len() - before.trim_end_matches('-').len();
    let prefix = &before[..before.len() - dashes];
    (dashes >= 3 && after.len() >= 3 && after.bytes().all(|b| b == b'-')).then_some(prefix)
}

/// One line of the block: `  key .... value` (fewer dots, or none, for a long key).
fn block_line(body: &str) -> Option<(&str, &str)> {
    let rest = body.strip_prefix("  ")?;
    let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
    let key = &rest[..end];
    if key.is_empty() || key.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let rest = &rest[end..];
    if rest.is_empty() {
        return Some((key, ""));
    }
    // Megatron writes `key`, a space, 48 - len(key) dots (none for a long key), a space, the value.
    let rest = rest.strip_prefix(' ')?;
    let rest = rest.trim_start_matches('.');
    Some((key, rest.strip_prefix(' ').unwrap_or(rest)))
}

/// Reads the block whose marker starts at byte `start`, then checks that every later block
/// agrees with it.
fn read_block(text: &str, start: usize) -> Result<(Block, Vec<Entry>), Located> {
    let (block, entries, mut next) = read_one_block(text, start)?;
    let mut blocks = 1;
    while let Some(s) = find_block_start(text, next) {
        let (other, later, after) = read_one_block(text, s)?;
        blocks += 1;
        let first: BTreeMap<&str, &Entry> = entries.iter().map(|e| (e.key.as_str(), e)).collect();
        let here: BTreeMap<&str, &Entry> = later.iter().map(|e| (e.key.as_str(), e)).collect();
        for (key, e) in &here {
            let f = first.get(key).map(|f| f.value.clone());
            if f.as_ref() != Some(&e.value) {
                let first = entries
                    .iter()
                    .find(|x| x.key == **key)
                    .map_or("<missing>".into(), |x| value_text(&x.raw));
                return Err(disagree(&block, key, first, value_text(&e.raw), e.line));
            }
        }
        if let Some(f) = entries.iter().find(|f| !here.contains_key(f.key.as_str())) {
            return Err(disagree(
                &block,
                &f.key,
                value_text(&f.raw),
                "<missing>".into(),
                other.start_line,
            ));
        }
        next = after;
    }
    Ok((Block { blocks, ..block }, entries))
}

fn disagree(first: &Block, key: &str, a: String, b: String, line: u64) -> Located {
    (
        Some(line),
        None,
        ConfigErrorKind::BlocksDisagree {
            first_start: first.start_line,
            key: key.into(),
            first: a,
            here: b,
        },
    )
}

/// The value part of a block line's raw text.
fn value_text(raw: &str) -> String {
    block_line(raw).map_or(raw.to_string(), |(_, v)| v.to_string())
}

/// Reads one block from its marker at byte `start`: the block, its entries and the byte after
/// its end marker.
fn read_one_block(text: &str, start: usize) -> Result<(Block, Vec<Entry>, usize), Located> {
    let start_line = text[..start].matches('\n').count() as u64 + 1;
    let mut lines = text[start..].split_inclusive('\n');
    let marker = lines.next().unwrap_or_default();
    let prefix = marker_prefix(marker, BLOCK_START).unwrap_or_default().to_string();
    let mut offset = start + marker.len();
    let mut entries: Vec<Entry> = Vec::new();
    let mut seen: BTreeMap<String, u64> = BTreeMap::new();
    for (i, line) in lines.enumerate() {
        let n = start_line + 1 + i as u64;
        offset += line.len();
        let line = line.trim_end_matches(['\n', '\r']);
        // Under a launcher that prefixes each rank's lines, other ranks' lines may interleave.
        let Some(body) = line.strip_prefix(prefix.as_str()) else { continue };
        if marker_prefix(body, BLOCK_END) == Some("") {
            let block = Block { start_line, end_line: n, prefix, blocks: 1 };
            return Ok((block, entries, offset));
        }
        let Some((key, value)) = block_line(body) else {
            return Err((Some(n), None, ConfigErrorKind::NoKey { text: body.to_string() }));
        };
        if let Some(&first_line) = seen.get(key) {
            return Err((
                Some(n),
                None,
                ConfigErrorKind::DuplicateKey { key: key.into(), first_line },
            ));
        }
        seen.insert(key.to_string(), n);
        let column = (body.len() - value.len() + prefix.chars().count()) as u64 + 1;
        let value_trimmed = value.trim_end();
        entries.push(Entry {
            key: key.to_string(),
            value: python_value(value_trimmed),
            line: n,
            column: Some(column),
            raw: body.to_string(),
        });
    }
    Err((Some(start_line), None, ConfigErrorKind::Unterminated))
}

// ---------------------------------------------------------------------------------------------
// Trees (YAML, JSON, TOML), flattened to dotted keys

/// A node of a parsed document, with where it was written.
struct Node {
    tree: Tree,
    line: u64,
    column: Option<u64>,
    raw: String,
}

enum Tree {
    Scalar(ConfigValue),
    Seq(Vec<Node>),
    /// Keys with their lines, in file order; duplicates are kept here and refused in
    /// [`flatten`].
    Map(Vec<(String, u64, Node)>),
}

/// The dotted-key entries of a document whose top level is a mapping.
fn flatten(root: Node) -> Result<Vec<Entry>, Located> {
    let mut out = Vec::new();
    let mut seen = BTreeMap::new();
    match root.tree {
        Tree::Map(items) => flatten_map("", items, &mut out, &mut seen)?,
        _ => unreachable!("the readers return a mapping at the top"),
    }
    Ok(out)
}

fn flatten_map(
    prefix: &str,
    items: Vec<(String, u64, Node)>,
    out: &mut Vec<Entry>,
    seen: &mut BTreeMap<String, u64>,
) -> Result<(), Located> {
    let mut local: BTreeMap<String, u64> = BTreeMap::new();
    for (k, line, node) in items {
        if let Some(&first_line) = local.get(&k) {
            let key = format!("{prefix}{k}");
            return Err((Some(line), None, ConfigErrorKind::DuplicateKey { key, first_line }));
        }
        local.insert(k.clone(), line);
        flatten_node(format!("{prefix}{k}"), line, node, out, seen)?;
    }
    Ok(())
}

fn flatten_node(
    key: String,
    line: u64,
    node: Node,
    out: &mut Vec<Entry>,
    seen: &mut BTreeMap<String, u64>,
) -> Result<(), Located> {
    let value = match node.tree {
        Tree::Map(items) if !items.is_empty() => {
            return flatten_map(&format!("{key}."), items, out, seen);
        }
        Tree::Map(_) => ConfigValue::EmptyMap,
        Tree::Seq(items) if items.iter().all(|n| matches!(n.tree, Tree::Scalar(_))) => {
            ConfigValue::List(
                items
                    .into_iter()
                    .map(|n| match n.tree {
                        Tree::Scalar(v) => v,
                        _ => unreachable!("checked above"),
                    })
                    .collect(),
            )
        }
        Tree::Seq(items) => {
            for (i, n) in items.into_iter().enumerate() {
                let l = n.line;
                flatten_node(format!("{key}.{i}"), l, n, out, seen)?;
            }
            return Ok(());
        }
        Tree::Scalar(v) => v,
    };
    // Dotted keys may meet from two spellings (`a.b: 1` beside `a: {b: 2}`).
    if let Some(&first_line) = seen.get(&key) {
        return Err((Some(line), None, ConfigErrorKind::DuplicateKey { key, first_line }));
    }
    seen.insert(key.clone(), line);
    out.push(Entry { key, value, line, column: node.column, raw: node.raw });
    Ok(())
}

/// Line starts of a text, to turn byte offsets into lines and columns.
struct Lines<'a> {
    text: &'a str,
    starts: Vec<usize>,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Lines { text, starts }
    }

    /// The 1-based line and column (in characters) of a byte offset.
    fn position(&self, offset: usize) -> (u64, u64) {
        let i = self.starts.partition_point(|&s| s <= offset) - 1;
        let col = self.text.get(self.starts[i]..offset).map_or(0, |s| s.chars().count());
        (i as u64 + 1, col as u64 + 1)
    }
}

// --- YAML

/// A YAML node as serde-saphyr hands it over, with spans kept for lines and raw text.
enum YamlNode {
    Null,
    Bool(bool),
    Int(i128),
    Float,
    Str(String),
    Seq(Vec<serde_saphyr::Spanned<YamlNode>>),
    Map(Vec<(serde_saphyr::Spanned<YamlKey>, serde_saphyr::Spanned<YamlNode>)>),
}

/// A mapping key, whatever its scalar type, as text.
struct YamlKey(String);

impl<'de> Deserialize<'de> for YamlKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = YamlKey;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a scalar key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<YamlKey, E> {
                Ok(YamlKey(v.into()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<YamlKey, E> {
                Ok(YamlKey(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<YamlKey, E> {
                Ok(YamlKey(v.to_string()))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<YamlKey, E> {
                Ok(YamlKey(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<YamlKey, E> {
                Ok(YamlKey(v.to_string()))
            }
            fn visit_unit<E: de::Error>(self) -> Result<YamlKey, E> {
                Ok(YamlKey("null".into()))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for YamlNode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = YamlNode;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a YAML value")
            }
            fn visit_unit<E: de::Error>(self) -> Result<YamlNode, E> {
                Ok(YamlNode::Null)
            }
            fn visit_none<E: de::Error>(self) -> Result<YamlNode, E> {
                Ok(YamlNode::Null)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<YamlNode, D::Error> {
                YamlNode::deserialize(d)
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<YamlNode, E> {
                Ok(YamlNode::Bool(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<YamlNode, E> {
                Ok(YamlNode::Int(v.into()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<YamlNode, E> {
                Ok(YamlNode::Int(v.into()))
            }
            fn visit_i128<E: de::Error>(self, v: i128) -> Result<YamlNode, E> {
                Ok(YamlNode::Int(v))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<YamlNode, E> {
                // The exact value is read from the scalar's text (its span), never the float.
                Ok(YamlNode::Float)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<YamlNode, E> {
                Ok(YamlNode::Str(v.into()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<YamlNode, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(YamlNode::Seq(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<YamlNode, A::Error> {
                let mut items = Vec::new();
                while let Some(k) = map.next_key()? {
                    items.push((k, map.next_value()?));
                }
                Ok(YamlNode::Map(items))
            }
        }
        d.deserialize_any(V)
    }
}

fn read_yaml(text: &str) -> Result<Node, Located> {
    let options = serde_saphyr::options! {
        // Repeated keys reach the visitor, so both lines can be named.
        duplicate_keys: serde_saphyr::DuplicateKeyPolicy::PassThrough,
        strict_booleans: true,
    };
    let root: serde_saphyr::Spanned<YamlNode> = serde_saphyr::from_str_with_options(text, options)
        .map_err(|e| {
            let (line, column) =
                e.location().map_or((None, None), |l| (Some(l.line()), Some(l.column())));
            let full = e.to_string();
            let first = full.lines().next().unwrap_or("").trim();
            let first = first.strip_prefix("error: ").unwrap_or(first);
            // The position is the error's own; the message need not repeat it.
            let message = first
                .split_once(": ")
                .filter(|(pos, _)| pos.starts_with("line "))
                .map_or(first, |(_, m)| m)
                .to_string();
            (line, column, ConfigErrorKind::Syntax { format: Format::Yaml, message })
        })?;
    if !matches!(root.value, YamlNode::Map(_)) {
        return Err((
            Some(root.referenced.line()),
            None,
            ConfigErrorKind::NotAMapping { format: Format::Yaml },
        ));
    }
    Ok(yaml_node(text, root))
}

/// The text a span covers (for an alias, the anchored definition's).
fn span_text(text: &str, loc: &serde_saphyr::Location) -> String {
    let span = loc.span();
    match (span.byte_offset(), span.byte_len()) {
        (Some(o), Some(l)) => {
            text.get(o as usize..(o + l) as usize).unwrap_or_default().to_string()
        }
        _ => String::new(),
    }
}

fn yaml_node(text: &str, node: serde_saphyr::Spanned<YamlNode>) -> Node {
    let raw = span_text(text, &node.defined);
    let (line, column) = (node.referenced.line(), Some(node.referenced.column()));
    let tree = match node.value {
        YamlNode::Null => Tree::Scalar(ConfigValue::Absent),
        YamlNode::Bool(b) => Tree::Scalar(ConfigValue::Bool(b)),
        YamlNode::Int(i) => {
            Tree::Scalar(ConfigValue::Number { value: Rational::int(i), text: raw.clone() })
        }
        YamlNode::Float => Tree::Scalar(match exact_number(&raw.replace('_', "")) {
            Some(value) => ConfigValue::Number { value, text: raw.clone() },
            None => ConfigValue::Text(raw.clone()),
        }),
        YamlNode::Str(s) if s.contains("${") || s == "???" => {
            Tree::Scalar(ConfigValue::Unresolved(s))
        }
        YamlNode::Str(s) => Tree::Scalar(ConfigValue::Text(s)),
        YamlNode::Seq(items) => Tree::Seq(items.into_iter().map(|n| yaml_node(text, n)).collect()),
        YamlNode::Map(items) => Tree::Map(
            items
                .into_iter()
                .map(|(k, v)| (k.value.0, k.referenced.line(), yaml_node(text, v)))
                .collect(),
        ),
    };
    Node { tree, line, column, raw }
}

// --- JSON

/// A JSON object's members in file order, values left as raw slices of the input.
struct JsonObject<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de> Deserialize<'de> for JsonObject<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = JsonObject<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<JsonObject<'de>, A::Error> {
                let mut items = Vec::new();
                while let Some(k) = map.next_key::<Cow<'de, str>>()? {
                    items.push((k, map.next_value()?));
                }
                Ok(JsonObject(items))
            }
        }
        d.deserialize_map(V)
    }
}

fn read_json(text: &str) -> Result<Node, Located> {
    let lines = Lines::new(text);
    let syntax = |e: serde_json::Error| {
        (
            Some(e.line() as u64),
            Some(e.column() as u64),
            ConfigErrorKind::Syntax { format: Format::Json, message: e.to_string() },
        )
    };
    let root: &RawValue = serde_json::from_str(text).map_err(syntax)?;
    if !root.get().starts_with('{') {
        let (line, _) = lines.position(offset_in(text, root.get()));
        return Err((Some(line), None, ConfigErrorKind::NotAMapping { format: Format::Json }));
    }
    json_node(text, &lines, root).map_err(syntax)
}

/// The byte offset of a slice of `text` within it.
fn offset_in(text: &str, part: &str) -> usize {
    part.as_ptr() as usize - text.as_ptr() as usize
}

fn json_node(text: &str, lines: &Lines<'_>, raw: &RawValue) -> Result<Node, serde_json::Error> {
    let s = raw.get();
    let offset = offset_in(text, s);
    let (line, column) = lines.position(offset);
    let tree = match s.as_bytes().first() {
        Some(b'{') => {
            let obj: JsonObject<'_> = serde_json::from_str(s)?;
            let mut items = Vec::with_capacity(obj.0.len());
            for (k, v) in obj.0 {
                let key_line = json_key_line(text, lines, offset_in(text, v.get()));
                items.push((k.into_owned(), key_line, json_node(text, lines, v)?));
            }
            Tree::Map(items)
        }
        Some(b'[') => {
            let items: Vec<&RawValue> = serde_json::from_str(s)?;
            Tree::Seq(
                items.into_iter().map(|v| json_node(text, lines, v)).collect::<Result<_, _>>()?,
            )
        }
        Some(b'"') => Tree::Scalar(ConfigValue::Text(serde_json::from_str(s)?)),
        _ => Tree::Scalar(match s {
            "null" => ConfigValue::Absent,
            "true" => ConfigValue::Bool(true),
            "false" => ConfigValue::Bool(false),
            n => match exact_number(n) {
                Some(value) => ConfigValue::Number { value, text: n.into() },
                None => ConfigValue::Text(n.into()),
            },
        }),
    };
    Ok(Node { tree, line, column: Some(column), raw: s.to_string() })
}

/// The line of the key whose value starts at byte `value`: back over white space and the `:`
/// to the key's closing quote (a key never spans lines).
fn json_key_line(text: &str, lines: &Lines<'_>, value: usize) -> u64 {
    let before = text[..value].trim_end();
    let before = before.strip_suffix(':').unwrap_or(before).trim_end();
    lines.position(before.len().saturating_sub(1)).0
}

// --- TOML

fn read_toml(text: &str) -> Result<Node, Located> {
    let lines = Lines::new(text);
    let root = toml::de::DeTable::parse(text).map_err(|e| {
        let (line, column) = e.span().map_or((None, None), |s| {
            let (l, c) = lines.position(s.start);
            (Some(l), Some(c))
        });
        let message = e.message().to_string();
        (line, column, ConfigErrorKind::Syntax { format: Format::Toml, message })
    })?;
    let span = root.span();
    Ok(toml_node(text, &lines, &toml::de::DeValue::Table(root.into_inner()), span))
}

fn toml_node(
    text: &str,
    lines: &Lines<'_>,
    value: &toml::de::DeValue<'_>,
    span: std::ops::Range<usize>,
) -> Node {
    use toml::de::DeValue;
    let raw = text.get(span.clone()).unwrap_or_default().to_string();
    let (line, column) = lines.position(span.start);
    let number = |t: &str| match exact_number(&t.replace('_', "")) {
        Some(value) => ConfigValue::Number { value, text: t.to_string() },
        None => ConfigValue::Text(t.to_string()),
    };
    let tree = match value {
        DeValue::String(s) => Tree::Scalar(ConfigValue::Text(s.to_string())),
        DeValue::Integer(i) if i.radix() == 10 => Tree::Scalar(number(i.as_str())),
        DeValue::Integer(i) => {
            Tree::Scalar(match i128::from_str_radix(&i.as_str().replace('_', ""), i.radix()) {
                Ok(v) => ConfigValue::Number { value: Rational::int(v), text: raw.clone() },
                Err(_) => ConfigValue::Text(raw.clone()),
            })
        }
        DeValue::Float(f) => Tree::Scalar(number(f.as_str())),
        DeValue::Boolean(b) => Tree::Scalar(ConfigValue::Bool(*b)),
        DeValue::Datetime(d) => Tree::Scalar(ConfigValue::Text(d.to_string())),
        DeValue::Array(a) => {
            Tree::Seq(a.iter().map(|v| toml_node(text, lines, v.get_ref(), v.span())).collect())
        }
        DeValue::Table(t) => Tree::Map(
            t.iter()
                .map(|(k, v)| {
                    let key_line = lines.position(k.span().start).0;
                    (
                        k.get_ref().to_string(),
                        key_line,
                        toml_node(text, lines, v.get_ref(), v.span()),
                    )
                })
                .collect(),
        ),
    };
    Node { tree, line, column: Some(column), raw }
}

// ---------------------------------------------------------------------------------------------
// Command line

/// Whether a word ends a command's arguments (a pipe, a list operator, a redirection).
fn ends_arguments(word: &str) -> bool {
    matches!(word, "|" | "||" | "&&" | ";" | "&" | "|&")
        || word.starts_with('>')
        || word.starts_with('<')
        || word.starts_with("2>")
        || word.starts_with("1>")
        || word.starts_with("&>")
}

/// The words of a command file with the line each starts on: a line ending in `\` continues
/// on the next; a line whose quotes are still open is read with the next ones; `#` at a
/// word's start ends the line (a comment).
fn words(text: &str) -> Vec<Vec<(String, u64)>> {
    // A physical line without its continuation backslash, and whether it had one.
    let strip = |line: &str| -> (String, bool) {
        let t = line.trim_end();
        let continues = t.ends_with('\\') && !t.ends_with("\\\\");
        if continues { (t[..t.len() - 1].to_string(), true) } else { (line.to_string(), false) }
    };
    let physical: Vec<&str> = text.lines().collect();
    let mut commands: Vec<Vec<(String, u64)>> = Vec::new();
    let mut current: Vec<(String, u64)> = Vec::new();
    let mut i = 0;
    while i < physical.len() {
        let first = i;
        let (mut chunk, mut continues) = strip(physical[i]);
        let mut split = shlex::split(&chunk);
        // An open quote: the word goes on over the next lines.
        while split.is_none() && i + 1 < physical.len() {
            i += 1;
            let (next, c) = strip(physical[i]);
            chunk.push('\n');
            chunk.push_str(&next);
            continues = c;
            split = shlex::split(&chunk);
        }
        for w in split.unwrap_or_default() {
            if w.starts_with('#') {
                break;
            }
            current.push((w, first as u64 + 1));
        }
        if !continues && !current.is_empty() {
            commands.push(std::mem::take(&mut current));
        }
        i += 1;
    }
    if !current.is_empty() {
        commands.push(current);
    }
    commands
}

fn read_command_line(text: &str) -> Result<Vec<Entry>, Located> {
    let commands = words(text);
    // The launcher's flags (torchrun's `--nproc_per_node`) come before the script.
    let script = commands
        .iter()
        .enumerate()
        .find_map(|(c, ws)| ws.iter().position(|(w, _)| w.ends_with(".py")).map(|i| (c, i)));
    let mut entries: Vec<Entry> = Vec::new();
    let mut seen: BTreeMap<String, u64> = BTreeMap::new();
    for (c, ws) in commands.iter().enumerate() {
        let mut i = 0;
        while i < ws.len() {
            let (w, line, at) = (&ws[i].0, ws[i].1, i);
            i += 1;
            if ends_arguments(w) {
                continue;
            }
            let Some(flag) =
                w.strip_prefix("--").filter(|f| f.starts_with(|c: char| c.is_ascii_alphabetic()))
            else {
                continue;
            };
            let (name, inline) = match flag.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (flag, None),
            };
            let mut values: Vec<String> = inline.into_iter().collect();
            if values.is_empty() {
                let is_script = |j: usize| script == Some((c, j));
                while i < ws.len()
                    && !ws[i].0.starts_with("--")
                    && !ends_arguments(&ws[i].0)
                    && !is_script(i)
                {
                    values.push(ws[i].0.clone());
                    i += 1;
                }
            }
            let launcher = script.is_some_and(|(sc, si)| c < sc || (c == sc && at < si));
            let key =
                format!("{}{}", if launcher { "launcher." } else { "" }, name.replace('-', "_"));
            if let Some(&first_line) = seen.get(&key) {
                return Err((Some(line), None, ConfigErrorKind::DuplicateKey { key, first_line }));
            }
            seen.insert(key.clone(), line);
            let value = match values.as_slice() {
                [] => ConfigValue::Bool(true),
                [one] => word_value(one),
                many => ConfigValue::List(many.iter().map(|w| word_value(w)).collect()),
            };
            let raw = std::iter::once(w.clone())
                .chain(values.iter().cloned())
                .collect::<Vec<_>>()
                .join(" ");
            entries.push(Entry { key, value, line, column: None, raw });
        }
    }
    Ok(entries)
}

#[cfg(test)]
mod tests;

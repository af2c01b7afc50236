//! The `---` frontmatter block of a Markdown file (`SKILL.md`, a prompt command, a subagent):
//! where it lies, and its top-level entries read with the bounded YAML parser of [`crate::yaml`].

use crate::diagnostic::{Diagnostic, Sink, has_errors};
use crate::yaml::{self, Node, Value};

/// A Markdown file's frontmatter, read by [`parse_frontmatter`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Frontmatter<'s> {
    /// Whether the file opens with a `---` line.
    pub present: bool,
    /// The top-level entries in source order; empty when the block is invalid. A nested
    /// mapping is left out.
    pub fields: Vec<(String, FrontmatterValue)>,
    /// The text after the closing `---` line; all of the file (a byte-order mark removed) when
    /// there is no frontmatter block or it has no closing line.
    pub body: &'s str,
    /// Syntax errors and exceeded bounds, each with its line and column.
    pub diagnostics: Vec<Diagnostic>,
}

impl Frontmatter<'_> {
    /// No error-severity diagnostic.
    pub fn is_valid(&self) -> bool {
        !has_errors(&self.diagnostics)
    }
}

/// A top-level frontmatter value; every scalar is text whatever its form or tag.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FrontmatterValue {
    /// A scalar.
    Text(String),
    /// A list; items that are not scalars are left out.
    List(Vec<String>),
}

/// Reads the frontmatter of a Markdown file: the block between a first `---` line and the
/// next `---` line, one YAML 1.2 document that must be a mapping with string keys (bounded by
/// [`crate::MAX_FRONTMATTER_BYTES`], [`crate::MAX_YAML_DEPTH`] and [`crate::MAX_YAML_NODES`]).
/// A file that does not open with `---` has no frontmatter and is all body.
pub fn parse_frontmatter(source: &str) -> Frontmatter<'_> {
    let mut sink = Sink::new(source);
    let whole = source.strip_prefix('\u{feff}').unwrap_or(source);
    let mut front = Frontmatter {
        present: true,
        fields: Vec::new(),
        body: whole,
        diagnostics: Vec::new(),
    };
    match locate(source) {
        Block::Absent => front.present = false,
        Block::Unterminated => unterminated(&mut sink),
        Block::Found { start, close, body } => {
            front.body = &source[body..];
            if let Some(entries) = entries(source, start, close, &mut sink) {
                front.fields = entries
                    .into_iter()
                    .filter_map(|(key, _, node)| Some((key, value(node.value)?)))
                    .collect();
            }
        }
    }
    front.diagnostics = sink.finish();
    if !front.is_valid() {
        front.fields.clear();
    }
    front
}

fn value(value: Value) -> Option<FrontmatterValue> {
    match value {
        Value::Str(text) => Some(FrontmatterValue::Text(text)),
        Value::List(items) => Some(FrontmatterValue::List(
            items
                .into_iter()
                .filter_map(|item| match item.value {
                    Value::Str(text) => Some(text),
                    _ => None,
                })
                .collect(),
        )),
        Value::Map(_) => None,
    }
}

/// Where a source's frontmatter block lies, as byte offsets in the source.
pub(crate) enum Block {
    /// The source does not open with a `---` line.
    Absent,
    /// No `---` line closes the block.
    Unterminated,
    /// The block's text is `start..close`; the body starts at `body`.
    Found {
        start: usize,
        close: usize,
        body: usize,
    },
}

/// Lines of `source` with their byte offsets, line endings removed.
fn lines(source: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut at = 0;
    source.split_inclusive('\n').map(move |raw| {
        let start = at;
        at += raw.len();
        (start, raw.trim_end_matches(['\n', '\r']))
    })
}

/// Finds the block between the first two `---` lines (a leading byte-order mark skipped).
pub(crate) fn locate(source: &str) -> Block {
    let text = source.strip_prefix('\u{feff}').unwrap_or(source);
    let skip = source.len() - text.len();
    let all: Vec<(usize, &str)> = lines(text).map(|(at, line)| (at + skip, line)).collect();
    if all.first().map(|(_, l)| l.trim_end()) != Some("---") {
        return Block::Absent;
    }
    let Some(&(close, _)) = all.iter().skip(1).find(|(_, l)| l.trim_end() == "---") else {
        return Block::Unterminated;
    };
    let start = all[1].0;
    let body = source[close..]
        .find('\n')
        .map_or(source.len(), |i| close + i + 1);
    Block::Found { start, close, body }
}

/// Reports a block without its closing line.
pub(crate) fn unterminated(sink: &mut Sink<'_>) {
    sink.error(
        "frontmatter-unterminated",
        "",
        0,
        "the frontmatter block has no closing `---` line",
        Some("add a `---` line after the last frontmatter key"),
    );
}

/// The top-level entries of the block `start..close` of `source`, `(key, key offset, value)`
/// in document order; `None` after reporting why when it is not one bounded YAML mapping.
pub(crate) fn entries(
    source: &str,
    start: usize,
    close: usize,
    sink: &mut Sink<'_>,
) -> Option<Vec<(String, usize, Node)>> {
    let root = yaml::parse(&source[start..close], start, sink)?;
    match root.value {
        Value::Map(entries) => Some(entries),
        other => {
            sink.error(
                "frontmatter-not-mapping",
                "",
                root.at,
                format!(
                    "the frontmatter is {}, not a mapping of keys to values",
                    other.kind()
                ),
                Some("write one `key: value` entry per field"),
            );
            None
        }
    }
}

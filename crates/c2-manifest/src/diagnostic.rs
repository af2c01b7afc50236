//! Diagnostics as data: what went wrong, where, and what to do about it.

use std::cell::OnceCell;

use serde::Serialize;

/// How bad a diagnostic is. Any `Error` makes the document invalid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Severity {
    /// The document does not load.
    Error,
    /// The document loads, but something deserves the author's attention.
    Warning,
}

impl Severity {
    /// The lowercase word used in rendered output and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// One problem found in a document, with the exact spot it refers to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Diagnostic {
    /// Stable kebab-case code, listed in [`crate::CODES`].
    pub code: &'static str,
    /// Whether the problem invalidates the document.
    pub severity: Severity,
    /// JSON pointer of the offending value (`""` is the root).
    pub pointer: String,
    /// 1-based line in the source text.
    pub line: u32,
    /// 1-based column in the source text, counted in chars.
    pub column: u32,
    /// What is wrong, in one lowercase sentence.
    pub message: String,
    /// What to do about it, when a fix can be suggested.
    pub help: Option<String>,
}

/// Maps byte offsets in a source text to 1-based line and char column.
///
/// The table of line starts is built on the first lookup: a document without diagnostics,
/// the common case, never pays for scanning its text a second time.
#[derive(Debug)]
pub(crate) struct LineIndex<'s> {
    source: &'s str,
    line_starts: OnceCell<Vec<usize>>,
}

impl<'s> LineIndex<'s> {
    pub(crate) fn new(source: &'s str) -> Self {
        Self {
            source,
            line_starts: OnceCell::new(),
        }
    }

    fn line_starts(&self) -> &[usize] {
        self.line_starts.get_or_init(|| {
            let newlines = self.source.bytes().enumerate().filter(|&(_, b)| b == b'\n');
            std::iter::once(0)
                .chain(newlines.map(|(i, _)| i + 1))
                .collect()
        })
    }

    /// Line and column of a byte offset; an offset inside a char or past the end is clamped.
    pub(crate) fn position(&self, offset: usize) -> (u32, u32) {
        let mut offset = offset.min(self.source.len());
        while !self.source.is_char_boundary(offset) {
            offset -= 1;
        }
        let line_starts = self.line_starts();
        let line = line_starts.partition_point(|&start| start <= offset);
        let start = line_starts[line.saturating_sub(1)];
        let prefix = &self.source[start..offset];
        // Editors hide a byte-order mark, so it takes no column.
        let prefix = if start == 0 {
            prefix.trim_start_matches('\u{feff}')
        } else {
            prefix
        };
        let column = prefix.chars().count() + 1;
        (saturate(line), saturate(column))
    }
}

fn saturate(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Collects diagnostics for one document, resolving offsets to positions as they arrive.
#[derive(Debug)]
pub(crate) struct Sink<'s> {
    index: LineIndex<'s>,
    pub(crate) diagnostics: Vec<Diagnostic>,
}

impl<'s> Sink<'s> {
    pub(crate) fn new(source: &'s str) -> Self {
        Self {
            index: LineIndex::new(source),
            diagnostics: Vec::new(),
        }
    }

    pub(crate) fn push(
        &mut self,
        severity: Severity,
        code: &'static str,
        pointer: &str,
        offset: usize,
        message: impl Into<String>,
        help: Option<&str>,
    ) {
        let (line, column) = self.index.position(offset);
        self.diagnostics.push(Diagnostic {
            code,
            severity,
            pointer: pointer.to_owned(),
            line,
            column,
            message: message.into(),
            help: help.map(str::to_owned),
        });
    }

    pub(crate) fn error(
        &mut self,
        code: &'static str,
        pointer: &str,
        offset: usize,
        message: impl Into<String>,
        help: Option<&str>,
    ) {
        self.push(Severity::Error, code, pointer, offset, message, help);
    }

    pub(crate) fn warning(
        &mut self,
        code: &'static str,
        pointer: &str,
        offset: usize,
        message: impl Into<String>,
        help: Option<&str>,
    ) {
        self.push(Severity::Warning, code, pointer, offset, message, help);
    }

    pub(crate) fn has_errors(&self) -> bool {
        has_errors(&self.diagnostics)
    }

    pub(crate) fn source(&self) -> &'s str {
        self.index.source
    }

    pub(crate) fn finish(mut self) -> Vec<Diagnostic> {
        // Source order reads best; the sort is stable so same-spot diagnostics keep rule order.
        self.diagnostics.sort_by_key(|d| (d.line, d.column));
        self.diagnostics
    }
}

pub(crate) fn has_errors(diagnostics: &[Diagnostic]) -> bool {
    diagnostics.iter().any(|d| d.severity == Severity::Error)
}

/// Appends one reference token to a JSON pointer, escaping `~` and `/` (RFC 6901).
pub(crate) fn pointer_push(base: &str, token: &str) -> String {
    let mut out = String::with_capacity(base.len() + token.len() + 1);
    out.push_str(base);
    out.push('/');
    for c in token.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            _ => out.push(c),
        }
    }
    out
}

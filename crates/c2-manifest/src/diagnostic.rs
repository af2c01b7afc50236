//! Diagnostics as data: what went wrong, where, and what to do about it.

use std::cell::OnceCell;

use serde::Serialize;

/// How bad a diagnostic is. Any `Error` makes the document invalid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
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

/// One refusal or warning about a bundle, as data: [`Diagnostic`] with the file it concerns,
/// and a position only when it has one.
///
/// c2-bundle-collector reports every finding in this type (it re-exports it as its
/// `Diagnostic`), since a finding about a bundle may concern any of its files and may have no
/// position at all (a symlink, a limit). A document diagnostic converts into it without loss
/// through [`Diagnostic::in_file`]. `code` is stable kebab-case; `file` is the path relative to
/// the bundle root (manifest findings use `plugin.json`). [`crate::render_diagnostic`] renders
/// it for a terminal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BundleDiagnostic {
    /// Stable kebab-case code: one of [`crate::CODES`] or one of the collector's own codes.
    pub code: &'static str,
    /// Whether the finding refuses the bundle.
    pub severity: Severity,
    /// Bundle-relative `/`-separated path of the file concerned, when one file is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// JSON pointer inside `file`, for findings in a JSON document.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pointer: Option<String>,
    /// 1-based line in `file`, when the finding has a position.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// 1-based column in `file`, counted in chars, when the finding has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
    /// What is wrong, in one lowercase sentence.
    pub message: String,
    /// What to do about it, when a fix can be suggested.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
}

impl BundleDiagnostic {
    /// An error about `file` (or about the bundle as a whole when `None`), without position.
    pub fn error(code: &'static str, file: impl Into<Option<String>>, message: String) -> Self {
        Self::new(code, Severity::Error, file.into(), message)
    }

    /// A warning about `file` (or about the bundle as a whole when `None`), without position.
    pub fn warning(code: &'static str, file: impl Into<Option<String>>, message: String) -> Self {
        Self::new(code, Severity::Warning, file.into(), message)
    }

    fn new(code: &'static str, severity: Severity, file: Option<String>, message: String) -> Self {
        Self {
            code,
            severity,
            file,
            pointer: None,
            line: None,
            column: None,
            message,
            help: None,
        }
    }

    /// The same finding with `help` as its suggested fix.
    #[must_use]
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// True when the finding refuses the bundle.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl Diagnostic {
    /// This diagnostic as a [`BundleDiagnostic`] about `file`; nothing is lost (the pointer,
    /// line and column become `Some`).
    pub fn in_file(self, file: impl Into<String>) -> BundleDiagnostic {
        BundleDiagnostic {
            code: self.code,
            severity: self.severity,
            file: Some(file.into()),
            pointer: Some(self.pointer),
            line: Some(self.line),
            column: Some(self.column),
            message: self.message,
            help: self.help,
        }
    }
}

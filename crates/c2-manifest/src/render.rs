//! Human rendering of diagnostics in the rustc/ruff shape: header, location, source line,
//! caret, pointer and help. One renderer serves every diagnostic: a document's (plugin.json,
//! mcp.json, SKILL.md, marketplace.json) and a bundle's (c2-bundle-collector's findings).

use std::borrow::Cow;
use std::fmt::Write as _;

use crate::diagnostic::{BundleDiagnostic, Diagnostic, Severity};

const RESET: &str = "\x1b[0m";
const BOLD: &str = "\x1b[1m";
const BLUE: &str = "\x1b[1;34m";
const RED: &str = "\x1b[1;31m";
const YELLOW: &str = "\x1b[1;33m";

/// How [`render_diagnostic`] draws its output. `Default` is plain text without colours.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RenderOptions {
    /// Paint the severity, the gutter and the caret with ANSI colours (for a terminal).
    pub color: bool,
}

impl RenderOptions {
    /// Plain text, no colours.
    pub fn new() -> Self {
        Self::default()
    }

    /// The same options with ANSI colours on or off.
    #[must_use]
    pub fn with_color(mut self, color: bool) -> Self {
        self.color = color;
        self
    }

    fn style(self, code: &'static str) -> &'static str {
        if self.color { code } else { "" }
    }
}

/// Renders one bundle diagnostic; `source` is the text of the file it concerns, so the
/// offending line can be shown with a caret under the column (without it, or without a line,
/// only the location is shown). Text that came from a bundle (the message, the help, the
/// file name, the pointer and the source line) goes through [`terminal_text`], so a hostile
/// bundle cannot drive the terminal.
///
/// ```
/// use c2_manifest::{ManifestOptions, RenderOptions, render_diagnostic, validate_manifest};
///
/// let source = "{\n  \"name\": \"Bad Name\"\n}\n";
/// let report = validate_manifest(source, &ManifestOptions::default());
/// let bad_name = report.diagnostics.iter().find(|d| d.code == "name-invalid").unwrap();
/// let text = render_diagnostic(
///     &bad_name.clone().in_file("plugin.json"),
///     Some(source),
///     &RenderOptions::new(),
/// );
/// assert!(text.starts_with("error[name-invalid]: "), "{text}");
/// assert!(text.contains(" --> plugin.json:2:11\n"));
/// assert!(text.contains("2 |   \"name\": \"Bad Name\"\n  |           ^\n"));
/// assert!(text.contains("  = at: /name\n"));
/// ```
pub fn render_diagnostic(
    diagnostic: &BundleDiagnostic,
    source: Option<&str>,
    options: &RenderOptions,
) -> String {
    let mut out = String::new();
    render_into(&mut out, diagnostic, source, *options);
    out
}

/// Renders every bundle diagnostic, separated by blank lines. `source` is asked for the text
/// of each diagnostic's file (a bundle-relative path); a file without text shows no line.
pub fn render_bundle_diagnostics<'a>(
    diagnostics: &[BundleDiagnostic],
    mut source: impl FnMut(&str) -> Option<Cow<'a, str>>,
    options: &RenderOptions,
) -> String {
    let mut out = String::new();
    for (i, diagnostic) in diagnostics.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let text = diagnostic.file.as_deref().and_then(&mut source);
        render_into(&mut out, diagnostic, text.as_deref(), *options);
    }
    out
}

/// Renders the diagnostics of one document against the `source` they were found in; `file`
/// is the name shown in the ` --> file:line:column` line. ANSI colours are used only when
/// `color` is true. The same renderer as [`render_diagnostic`], for a validator's report.
pub fn render_diagnostics(
    file: &str,
    source: &str,
    diagnostics: &[Diagnostic],
    color: bool,
) -> String {
    let options = RenderOptions::new().with_color(color);
    let mut out = String::new();
    for (i, diagnostic) in diagnostics.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        render_into(
            &mut out,
            &diagnostic.clone().in_file(file),
            Some(source),
            options,
        );
    }
    out
}

fn render_into(out: &mut String, d: &BundleDiagnostic, source: Option<&str>, paint: RenderOptions) {
    let level = paint.style(match d.severity {
        Severity::Error => RED,
        Severity::Warning => YELLOW,
    });
    let (bold, blue, reset) = (paint.style(BOLD), paint.style(BLUE), paint.style(RESET));
    let number = d.line.map(|line| line.to_string()).unwrap_or_default();
    // The message, the help, the file name and the pointer may quote the bundle.
    let message = terminal_text(&d.message, TerminalLines::Indented);
    let help = d
        .help
        .as_deref()
        .map(|help| terminal_text(help, TerminalLines::Indented));
    let file = d
        .file
        .as_deref()
        .map(|file| terminal_text(file, TerminalLines::One));
    let pointer = d
        .pointer
        .as_deref()
        .map(|p| terminal_text(p, TerminalLines::One));
    let pad = " ".repeat(number.len().max(1));
    // Writing to a String cannot fail.
    let _ = writeln!(
        out,
        "{level}{}[{}]{reset}{bold}: {}{reset}",
        d.severity.as_str(),
        d.code,
        message
    );
    match (&file, d.line, d.column) {
        (Some(file), Some(line), Some(column)) => {
            let _ = writeln!(out, "{pad}{blue}-->{reset} {file}:{line}:{column}");
        }
        (Some(file), Some(line), None) => {
            let _ = writeln!(out, "{pad}{blue}-->{reset} {file}:{line}");
        }
        (Some(file), None, _) => {
            let _ = writeln!(out, "{pad}{blue}-->{reset} {file}");
        }
        (None, _, _) => {}
    }
    let shown = d.line.zip(source).and_then(|(line, source)| {
        let index = usize::try_from(line).ok()?.checked_sub(1)?;
        source.lines().nth(index)
    });
    if let Some(text) = shown {
        // Editors hide a byte-order mark, and the column does not count it.
        let text = text.trim_start_matches('\u{feff}');
        let column = d.column.and_then(|c| usize::try_from(c).ok()).unwrap_or(1);
        // Tabs stay tabs so the caret lines up however the terminal expands them.
        let lead: String = text
            .chars()
            .take(column.saturating_sub(1))
            .map(|c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        let _ = writeln!(out, "{pad} {blue}|{reset}");
        let _ = writeln!(
            out,
            "{blue}{number} |{reset} {}",
            terminal_text(text, TerminalLines::One)
        );
        let _ = writeln!(out, "{pad} {blue}|{reset} {lead}{level}^{reset}");
    }
    if let Some(pointer) = pointer.filter(|p| !p.is_empty()) {
        let _ = writeln!(out, "{pad} {blue}={reset} {bold}at{reset}: {pointer}");
    }
    if let Some(help) = help {
        let _ = writeln!(out, "{pad} {blue}={reset} {bold}help{reset}: {help}");
    }
}

/// How [`terminal_text`] treats a line break.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TerminalLines {
    /// The text must stay on one line (a table cell, a name): `\n` is escaped too.
    One,
    /// Line breaks are kept, but every line after the first that does not start with
    /// whitespace is indented by two spaces, so it can never pass for a line of the host's.
    Indented,
}

/// Text that came from a plugin or a bundle (an error, a log, a name, a message), made safe
/// to print on a terminal: every control character (C0 but tab and the kept line breaks, DEL,
/// C1, and the bidirectional overrides that reorder what is shown) is written as a visible
/// escape such as `\u{1b}`, so ESC and OSC sequences never reach the terminal raw and a
/// carriage return cannot overwrite the start of a line. Text that needs nothing is borrowed.
///
/// ```
/// use c2_manifest::{TerminalLines, terminal_text};
///
/// assert_eq!(terminal_text("a\u{1b}[2Jb", TerminalLines::One), "a\\u{1b}[2Jb");
/// assert_eq!(terminal_text("one\ntwo", TerminalLines::Indented), "one\n  two");
/// ```
pub fn terminal_text(text: &str, lines: TerminalLines) -> Cow<'_, str> {
    let keep_newline = lines == TerminalLines::Indented;
    let unsafe_char = |c: char| {
        (c.is_control() && c != '\t' && !(c == '\n' && keep_newline))
            || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
            // Other hidden characters too, but the joiners and variation selectors of emoji.
            || (crate::hidden::hidden_kind(c).is_some()
                && !matches!(c, '\u{200c}' | '\u{200d}' | '\u{fe00}'..='\u{fe0f}'))
    };
    let needs_indent = |text: &str| {
        keep_newline
            && text
                .split('\n')
                .skip(1)
                .any(|line| !line.is_empty() && !line.starts_with([' ', '\t']))
    };
    if !text.chars().any(unsafe_char) && !needs_indent(text) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut line_start = false;
    for c in text.chars() {
        if line_start && c != ' ' && c != '\t' && c != '\n' {
            out.push_str("  ");
        }
        line_start = false;
        if c == '\n' && keep_newline {
            out.push('\n');
            line_start = true;
        } else if unsafe_char(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

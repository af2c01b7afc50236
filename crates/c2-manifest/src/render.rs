//! Human rendering of diagnostics in the rustc/ruff shape: header, location, source line, caret.

use std::fmt::Write as _;

use crate::diagnostic::{Diagnostic, Severity};

const RESET: &str = "\x1b[0m";
const BOLD: &str = "\x1b[1m";
const BLUE: &str = "\x1b[1;34m";

/// Renders `diagnostics` against the `source` they were found in; `file` is the name shown in
/// the ` --> file:line:column` line. ANSI colours are used only when `color` is true.
pub fn render_diagnostics(
    file: &str,
    source: &str,
    diagnostics: &[Diagnostic],
    color: bool,
) -> String {
    let paint = |style: &'static str| if color { style } else { "" };
    let reset = paint(RESET);
    let lines: Vec<&str> = source.lines().collect();
    let mut out = String::new();
    for (i, d) in diagnostics.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let level = paint(match d.severity {
            Severity::Error => "\x1b[1;31m",
            Severity::Warning => "\x1b[1;33m",
        });
        let (bold, blue) = (paint(BOLD), paint(BLUE));
        let number = d.line.to_string();
        let pad = " ".repeat(number.len());
        // Writing to a String cannot fail.
        let _ = writeln!(
            out,
            "{level}{}[{}]{reset}{bold}: {}{reset}",
            d.severity.as_str(),
            d.code,
            d.message
        );
        let _ = writeln!(out, "{pad}{blue}-->{reset} {file}:{}:{}", d.line, d.column);
        let text = usize::try_from(d.line)
            .ok()
            .and_then(|n| n.checked_sub(1))
            .and_then(|n| lines.get(n));
        if let Some(text) = text {
            let text = text.trim_start_matches('\u{feff}');
            // Keep tabs so the caret lines up however the terminal expands them.
            let lead: String = text
                .chars()
                .take(usize::try_from(d.column).unwrap_or(1).saturating_sub(1))
                .map(|c| if c == '\t' { '\t' } else { ' ' })
                .collect();
            let _ = writeln!(out, "{pad} {blue}|{reset}");
            let _ = writeln!(out, "{blue}{number} |{reset} {text}");
            let _ = writeln!(out, "{pad} {blue}|{reset} {lead}{level}^{reset}");
        }
        if let Some(help) = &d.help {
            let _ = writeln!(out, "{pad} {blue}={reset} {bold}help{reset}: {help}");
        }
    }
    out
}

//! Bundle diagnostics and inventories in the two output formats: rustc/ruff-style text with
//! the offending source line and a caret (c2-manifest's one renderer,
//! `render_bundle_diagnostics`, which handles every file of a bundle and findings without a
//! position), and the JSON shapes docs/cli.md promises.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Write as _;

use c2_bundle_collector::{Diagnostic, Inventory};
use c2_manifest::RenderOptions;
use serde::Serialize;
use serde_json::Value;

use crate::output::{Lines, terminal_text};

const RESET: &str = "\x1b[0m";
const RED: &str = "\x1b[1;31m";
const GREEN: &str = "\x1b[1;32m";

/// ANSI styling that collapses to nothing when colours are off.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Paint {
    pub(crate) color: bool,
}

impl Paint {
    fn style(self, code: &'static str) -> &'static str {
        if self.color { code } else { "" }
    }

    fn reset(self) -> &'static str {
        self.style(RESET)
    }

    /// `text` in bold green (good news) or bold red (bad news).
    pub(crate) fn verdict(self, text: &str, good: bool) -> String {
        let style = self.style(if good { GREEN } else { RED });
        format!("{style}{text}{}", self.reset())
    }
}

/// Renders every diagnostic, separated by blank lines. `source` returns the text of a
/// bundle file so the offending line can be shown; a file without text shows no line.
pub(crate) fn render_diagnostics<'a>(
    diagnostics: &[Diagnostic],
    source: impl Fn(&str) -> Option<Cow<'a, str>>,
    paint: Paint,
) -> String {
    let options = RenderOptions::new().with_color(paint.color);
    c2_manifest::render_bundle_diagnostics(diagnostics, source, &options)
}

/// `N errors, M warnings`, with singular forms.
pub(crate) fn counts(diagnostics: &[Diagnostic]) -> String {
    let errors = diagnostics.iter().filter(|d| d.is_error()).count();
    let warnings = diagnostics.len() - errors;
    format!(
        "{}, {}",
        plural(errors, "error", "errors"),
        plural(warnings, "warning", "warnings")
    )
}

pub(crate) fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The contributions found, aligned in columns, then the unsupported ones named again.
pub(crate) fn render_inventory(inventory: &Inventory) -> String {
    let found = &inventory.contributions;
    if found.is_empty() {
        return "contributions: none\n".to_owned();
    }
    let rows: Vec<[String; 4]> = found
        .iter()
        .map(|c| {
            [
                kebab(&c.kind),
                c.id.clone(),
                // `skipped: <why>` / `disabled: <why>` carry their reason.
                c.status_text(),
                match (&c.path, &c.transport) {
                    (Some(path), Some(transport)) => format!("{path} ({transport})"),
                    _ => c
                        .path
                        .clone()
                        .or_else(|| c.title.clone())
                        .unwrap_or_default(),
                },
            ]
        })
        .collect();
    let mut out = format!("contributions ({}):\n", found.len());
    out.push_str(&table(&rows, "  "));
    let unsupported: Vec<String> = inventory
        .unsupported()
        .map(|c| match &c.path {
            Some(path) => format!("{} ({path})", kebab(&c.kind)),
            None => kebab(&c.kind),
        })
        .collect();
    if !unsupported.is_empty() {
        let _ = writeln!(
            out,
            "unsupported (stored, never run): {}",
            unsupported.join(", ")
        );
    }
    out
}

/// One line per contribution kind and count, e.g. `1 runtime-command, 2 skill`.
pub(crate) fn inventory_summary(inventory: &Inventory) -> String {
    let mut by_kind: BTreeMap<String, usize> = BTreeMap::new();
    // A skipped or disabled contribution (a bad MCP entry) is not counted as one.
    for contribution in inventory.contributions.iter().filter(|c| c.is_usable()) {
        *by_kind.entry(kebab(&contribution.kind)).or_default() += 1;
    }
    if by_kind.is_empty() {
        return "none".to_owned();
    }
    by_kind
        .iter()
        .map(|(kind, n)| format!("{n} {kind}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Rows padded into columns; the last column is not padded. Cells are shown through
/// [`terminal_text`] on one line, since names, titles and states may come from a bundle.
pub(crate) fn table<const N: usize>(rows: &[[String; N]], indent: &str) -> String {
    let safe: Vec<[Cow<'_, str>; N]> = rows
        .iter()
        .map(|row| std::array::from_fn(|i| terminal_text(&row[i], Lines::One)))
        .collect();
    let rows = &safe;
    let mut widths = [0usize; N];
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in rows {
        let mut line = indent.to_owned();
        for (i, cell) in row.iter().enumerate() {
            if i + 1 < N {
                let _ = write!(line, "{cell:<width$}  ", width = widths[i]);
            } else {
                line.push_str(cell);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The serde name of a unit enum value (kinds and statuses are kebab-case in the inventory).
pub(crate) fn kebab<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(name)) => name,
        _ => String::from("unknown"),
    }
}

#[cfg(test)]
mod tests {
    use c2_bundle_collector::{Contribution, ContributionKind, ContributionStatus, Severity};
    use serde_json::json;

    use super::*;

    fn diagnostic(line: Option<u32>, column: Option<u32>) -> Diagnostic {
        Diagnostic {
            code: "some-code",
            severity: Severity::Error,
            file: Some("plugin.json".to_owned()),
            pointer: Some("/name".to_owned()),
            line,
            column,
            message: "name is wrong".to_owned(),
            help: Some("fix the name".to_owned()),
        }
    }

    #[test]
    fn a_located_diagnostic_shows_its_line_with_a_caret_under_the_column() {
        let source = "{\n  \"name\": 5\n}\n";
        let text = render_diagnostics(
            &[diagnostic(Some(2), Some(11))],
            |_| Some(Cow::Borrowed(source)),
            Paint { color: false },
        );
        let expected = [
            "error[some-code]: name is wrong",
            " --> plugin.json:2:11",
            "  |",
            "2 |   \"name\": 5",
            "  |           ^",
            "  = at: /name",
            "  = help: fix the name",
            "",
        ];
        assert_eq!(text, expected.join("\n"));
    }

    #[test]
    fn a_diagnostic_without_a_position_shows_only_its_file() {
        let text = render_diagnostics(&[diagnostic(None, None)], |_| None, Paint { color: false });
        assert_eq!(
            text,
            "error[some-code]: name is wrong\n --> plugin.json\n  = at: /name\n  = help: fix the name\n"
        );
    }

    #[test]
    fn colours_appear_only_when_asked_for() {
        let plain = render_diagnostics(&[diagnostic(None, None)], |_| None, Paint { color: false });
        let coloured =
            render_diagnostics(&[diagnostic(None, None)], |_| None, Paint { color: true });
        assert!(!plain.contains('\x1b'));
        assert!(coloured.contains("\x1b[1;31m"));
    }

    #[test]
    fn contributions_are_grouped_by_kind_with_their_status() {
        let inventory = Inventory {
            contributions: vec![
                Contribution {
                    kind: ContributionKind::Hooks,
                    id: "hooks".to_owned(),
                    status: ContributionKind::Hooks.status(),
                    path: Some("hooks/hooks.json".to_owned()),
                    title: None,
                    description: None,
                    transport: None,
                    reason: None,
                },
                Contribution {
                    kind: ContributionKind::RuntimeCommand,
                    id: "a.b".to_owned(),
                    status: ContributionKind::RuntimeCommand.status(),
                    path: None,
                    title: Some("A b".to_owned()),
                    description: None,
                    transport: None,
                    reason: None,
                },
            ],
        };
        assert_eq!(
            inventory.contributions[0].status,
            ContributionStatus::InventoriedUnsupported
        );
        assert_eq!(
            c2_relay::json::contributions(&inventory),
            json!({
                "hooks": [{"id": "hooks", "status": "inventoried-unsupported", "path": "hooks/hooks.json", "title": null}],
                "runtime-command": [{"id": "a.b", "status": "supported-statically", "path": null, "title": "A b"}],
            })
        );
        assert_eq!(inventory_summary(&inventory), "1 hooks, 1 runtime-command");
        let text = render_inventory(&inventory);
        assert!(text.contains("unsupported (stored, never run): hooks (hooks/hooks.json)"));
    }
}

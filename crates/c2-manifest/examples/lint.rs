//! A validator-only linter: checks `plugin.json`, `marketplace.json`, `mcp.json` and `SKILL.md`
//! files with c2-manifest alone and prints rustc-style diagnostics. Exits 1 when any file has an
//! error, 2 when a file cannot be read.
//!
//! ```text
//! cargo run -p c2-manifest --example lint -- packs/hello-runtime/plugin.json skills/x/SKILL.md
//! ```
//!
//! The kind of document is taken from the file name. c2-manifest reads no file itself; this
//! linter does, and would be the place to add bounds on what it reads.
#![expect(
    clippy::disallowed_methods,
    reason = "an example may use the file system freely"
)]
#![expect(clippy::print_stdout, reason = "a linter prints its diagnostics")]

use std::path::Path;
use std::process::ExitCode;

use c2_manifest::{
    Diagnostic, ManifestOptions, Severity, render_diagnostics, validate_manifest,
    validate_marketplace, validate_mcp, validate_skill,
};

fn diagnostics_of(path: &Path, text: &str) -> Result<Vec<Diagnostic>, String> {
    let file = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    Ok(match file {
        "plugin.json" => validate_manifest(text, &ManifestOptions::default()).diagnostics,
        "marketplace.json" => validate_marketplace(text).diagnostics,
        "mcp.json" | ".mcp.json" => validate_mcp(text).diagnostics,
        "SKILL.md" => {
            // A skill's name must match its folder's.
            let folder = path
                .parent()
                .and_then(Path::file_name)
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            validate_skill(text, folder).diagnostics
        }
        _ => {
            return Err(format!(
                "{}: not a file this linter knows (plugin.json, marketplace.json, mcp.json, SKILL.md)",
                path.display()
            ));
        }
    })
}

fn main() -> ExitCode {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    if paths.is_empty() {
        println!("usage: lint FILE...");
        return ExitCode::from(2);
    }
    let (mut errors, mut warnings, mut unreadable) = (0, 0, 0);
    for path in paths.iter().map(Path::new) {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) => {
                println!("{}: cannot read: {error}", path.display());
                unreadable += 1;
                continue;
            }
        };
        let diagnostics = match diagnostics_of(path, &text) {
            Ok(diagnostics) => diagnostics,
            Err(message) => {
                println!("{message}");
                unreadable += 1;
                continue;
            }
        };
        errors += diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .count();
        warnings += diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Warning)
            .count();
        print!(
            "{}",
            render_diagnostics(&path.display().to_string(), &text, &diagnostics, false)
        );
    }
    println!(
        "{} file(s): {errors} error(s), {warnings} warning(s)",
        paths.len() - unreadable
    );
    if unreadable > 0 {
        ExitCode::from(2)
    } else if errors > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

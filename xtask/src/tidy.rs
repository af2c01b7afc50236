//! Source-tree conventions that a compiler does not check.

use std::path::Path;

use crate::layering::Metadata;

/// Every workspace library opens with a `//!` paragraph that says its one job.
pub(crate) fn crate_docs(root: &Path, metadata: &Metadata) -> Vec<String> {
    let mut problems = Vec::new();
    for member in &metadata.members {
        let Some(lib) = &member.lib_path else {
            continue;
        };
        let relative = lib.strip_prefix(root).unwrap_or(lib).display().to_string();
        match std::fs::read_to_string(lib) {
            Ok(text) => {
                let first = text.lines().find(|line| !line.trim().is_empty());
                match first {
                    Some(line) if line.starts_with("//!") && line.len() > 10 => {}
                    _ => problems.push(format!(
                        "{relative}: must open with a `//!` paragraph saying the crate's one job"
                    )),
                }
            }
            Err(error) => problems.push(format!("{relative}: cannot read: {error}")),
        }
    }
    problems
}

//! Every example bundle under packs/ validated through the real collector and validator, the
//! same code path `c2-plugins validate` and the installer use.

use std::path::Path;

use anyhow::{Context, Result};
use c2_bundle_collector::{Limits, collect_dir};

pub(crate) fn check(root: &Path) -> Result<Vec<String>> {
    let packs = root.join("packs");
    let mut problems = Vec::new();
    let mut checked = 0;
    #[expect(clippy::disallowed_methods, reason = "xtask lists the example packs")]
    let entries = std::fs::read_dir(&packs).with_context(|| format!("read {}", packs.display()))?;
    let mut dirs: Vec<_> = entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.join("plugin.json").is_file())
        .collect();
    dirs.sort();
    for dir in dirs {
        checked += 1;
        let name = dir.strip_prefix(root).unwrap_or(&dir).display().to_string();
        match collect_dir(&dir, &Limits::default()) {
            Ok(bundle) => {
                for diagnostic in bundle.diagnostics.iter().filter(|d| d.is_error()) {
                    problems.push(format!(
                        "{name}: {} [{}] {}",
                        diagnostic.file.as_deref().unwrap_or("bundle"),
                        diagnostic.code,
                        diagnostic.message
                    ));
                }
            }
            Err(error) => problems.push(format!("{name}: cannot be collected: {error}")),
        }
    }
    if checked == 0 {
        problems.push("packs/ holds no bundle: the examples are part of the contract".to_owned());
    }
    Ok(problems)
}

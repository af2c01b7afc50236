//! The hidden-text pass over the bundle files no manifest validator reads: prompt commands,
//! subagents and runtime scripts get a warning per hidden character (c2-manifest's
//! [`c2_manifest::scan_hidden_text`]); a prompt command, subagent or skill whose file or
//! folder name holds one refuses the bundle. plugin.json, mcp.json and SKILL.md are scanned by
//! their validators.

use std::collections::{BTreeMap, BTreeSet};

use c2_manifest::{ExecutableRef, Manifest};

use crate::diagnostic::Diagnostic;
use crate::tree::FileEntry;

/// Appends the hidden-text findings of `files` to `diagnostics`.
pub(crate) fn check(
    files: &BTreeMap<String, FileEntry>,
    dirs: &BTreeSet<String>,
    manifest: Option<&Manifest>,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let mut texts: BTreeSet<String> = BTreeSet::new();
    for (dir, what) in [
        ("agents/", "the subagent"),
        ("commands/", "the prompt command"),
    ] {
        for path in files
            .keys()
            .filter(|p| p.starts_with(dir) && p.ends_with(".md"))
        {
            let name = &path[dir.len()..path.len() - 3];
            if name.contains('/') {
                continue;
            }
            diagnostics.extend(c2_manifest::hidden_identifier_diagnostic(what, name, path));
            texts.insert(path.clone());
        }
    }
    for dir in dirs.iter().filter_map(|d| d.strip_prefix("skills/")) {
        if !dir.contains('/') {
            let path = format!("skills/{dir}");
            let what = "the skill folder";
            diagnostics.extend(c2_manifest::hidden_identifier_diagnostic(what, dir, &path));
        }
    }
    texts.extend(runtime_scripts(files, manifest));
    for path in texts {
        let Some(text) = files
            .get(&path)
            .and_then(|f| std::str::from_utf8(&f.bytes).ok())
        else {
            continue;
        };
        let found = c2_manifest::scan_hidden_text(text);
        diagnostics.extend(found.into_iter().map(|d| d.in_file(path.as_str())));
    }
}

/// The bundle files the runtime runs: its command when it is a bundle file, and every
/// argument that names one (`main.py`, `./main.py`, `${PLUGIN_ROOT}/main.py`).
fn runtime_scripts(
    files: &BTreeMap<String, FileEntry>,
    manifest: Option<&Manifest>,
) -> Vec<String> {
    let Some(runtime) = manifest.and_then(|m| m.codetwo.runtime.as_ref()) else {
        return Vec::new();
    };
    let command = match runtime.executable() {
        ExecutableRef::BareName(name) => name.to_owned(),
        ExecutableRef::BundleRelative(path) => crate::bundle::normalize_relative(path),
    };
    std::iter::once(command)
        .chain(runtime.args.iter().map(|arg| {
            let arg = arg.strip_prefix("${PLUGIN_ROOT}/").unwrap_or(arg);
            crate::bundle::normalize_relative(arg)
        }))
        .filter(|path| files.contains_key(path))
        .collect()
}

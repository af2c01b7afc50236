//! Applying a bundle's scaffold (or template) to an explicit target directory: every
//! destination is checked before the first write, and one conflict means nothing is written.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{Error, Result};
use crate::tree::FileEntry;

/// The optional metadata file inside a scaffold folder; never copied.
pub(crate) const SCAFFOLD_METADATA: &str = "scaffold.json";

/// Copies `scaffolds/<name>/` (or else `templates/<name>/`) from a collected bundle into
/// `target`, which must be an existing real directory. Returns the written paths, relative to
/// `target`. Refuses, writing nothing, if any destination exists (even as a dangling link)
/// or any ancestor of one is a symlink or not a directory.
pub fn apply_scaffold(
    files: &BTreeMap<String, FileEntry>,
    name: &str,
    target: &Path,
) -> Result<Vec<String>> {
    let plain = !name.is_empty() && !name.contains('/') && name != "." && name != "..";
    let sources = if plain {
        ["scaffolds", "templates"]
            .iter()
            .map(|root| scaffold_files(files, &format!("{root}/{name}/")))
            .find(|found| !found.is_empty())
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    if sources.is_empty() {
        return Err(Error::UnknownScaffold {
            name: name.to_owned(),
        });
    }
    if !is_real_dir(target)? {
        return Err(Error::InvalidTarget {
            path: target.to_owned(),
        });
    }

    let mut conflicts = Vec::new();
    for (rel, _) in &sources {
        if let Some(conflict) = conflict(target, rel)? {
            conflicts.push(conflict);
        }
    }
    if !conflicts.is_empty() {
        return Err(Error::ScaffoldConflict { conflicts });
    }

    let mut written = Vec::new();
    for (rel, entry) in sources {
        let mut ancestor = String::new();
        for part in rel.split('/').take(rel.split('/').count() - 1) {
            if !ancestor.is_empty() {
                ancestor.push('/');
            }
            ancestor.push_str(part);
            let path = target.join(&ancestor);
            if !crate::store::exists(&path)? {
                #[expect(
                    clippy::disallowed_methods,
                    reason = "the collector owns writing a scaffold's tree"
                )]
                std::fs::create_dir(&path).map_err(Error::io("create", &path))?;
            }
        }
        let mode = if entry.executable { 0o755 } else { 0o644 };
        crate::store::write_file(&target.join(&rel), &entry.bytes, mode)?;
        written.push(rel);
    }
    Ok(written)
}

/// The files of one scaffold folder, relative to it, without its metadata file.
fn scaffold_files<'a>(
    files: &'a BTreeMap<String, FileEntry>,
    prefix: &str,
) -> Vec<(String, &'a FileEntry)> {
    files
        .range(prefix.to_owned()..)
        .take_while(|(path, _)| path.starts_with(prefix))
        .map(|(path, entry)| (path[prefix.len()..].to_owned(), entry))
        .filter(|(rel, _)| rel != SCAFFOLD_METADATA)
        .collect()
}

/// Why `rel` cannot be written under `target`, if it cannot.
fn conflict(target: &Path, rel: &str) -> Result<Option<String>> {
    let parts: Vec<&str> = rel.split('/').collect();
    if parts
        .iter()
        .any(|part| part.is_empty() || *part == "." || *part == "..")
    {
        return Ok(Some(format!("{rel} escapes the target")));
    }
    for depth in 1..parts.len() {
        let ancestor = parts[..depth].join("/");
        let path = target.join(&ancestor);
        if !crate::store::exists(&path)? {
            return Ok(None);
        }
        if !is_real_dir(&path)? {
            return Ok(Some(format!("{ancestor} is a symlink or not a directory")));
        }
    }
    if crate::store::exists(&target.join(rel))? {
        return Ok(Some(format!("{rel} already exists")));
    }
    Ok(None)
}

fn is_real_dir(path: &Path) -> Result<bool> {
    #[expect(
        clippy::disallowed_methods,
        reason = "the collector owns symlink inspection"
    )]
    let meta = std::fs::symlink_metadata(path);
    match meta {
        Ok(meta) => Ok(meta.file_type().is_dir()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(error) => Err(Error::io("inspect", path)(error)),
    }
}

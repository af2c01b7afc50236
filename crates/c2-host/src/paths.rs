//! Project identity and data directories (decisions.md "Realms, scopes, policy").
//!
//! A project path is normalized by resolving it to an existing absolute directory with symlinks
//! resolved and no trailing separator; its hash is the lowercase hex BLAKE3 of the normalized
//! path's bytes. The user instance of a bundle writes to `<plugins-dir>/.data/<id>`, a project
//! instance to `<plugins-dir>/.data/<id>/projects/<hash>`.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::error::HostError;

/// A normalized project: the canonical directory and its BLAKE3 hash.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Project {
    path: PathBuf,
    hash: String,
}

impl Project {
    /// Normalizes `path`: it must name an existing directory; symlinks are resolved.
    pub fn normalize(path: &Path) -> Result<Self, HostError> {
        let canonical = std::fs::canonicalize(path).map_err(|source| HostError::Project {
            path: path.to_path_buf(),
            reason: format!("cannot resolve it: {source}"),
        })?;
        if !canonical.is_dir() {
            return Err(HostError::Project {
                path: path.to_path_buf(),
                reason: "it is not a directory".to_owned(),
            });
        }
        let Some(text) = canonical.to_str() else {
            return Err(HostError::Project {
                path: path.to_path_buf(),
                reason: "its path is not valid UTF-8".to_owned(),
            });
        };
        let hash = blake3::hash(canonical.as_os_str().as_bytes())
            .to_hex()
            .to_string();
        let path = PathBuf::from(text);
        Ok(Self { path, hash })
    }

    /// The normalized directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The normalized path as the policy key and command realm key.
    pub fn key(&self) -> &str {
        self.path.to_str().unwrap_or_default()
    }

    /// Lowercase hex BLAKE3 of the normalized path's bytes.
    pub fn hash(&self) -> &str {
        &self.hash
    }
}

/// The data directory of a bundle instance (the store's layout).
pub(crate) use c2_bundle_collector::data_dir;

#[cfg(test)]
#[expect(
    clippy::disallowed_methods,
    reason = "test code may use the file system freely"
)]
mod tests {
    use super::*;

    #[test]
    fn a_project_is_normalized_through_symlinks_and_dots() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir(&real).unwrap();
        std::os::unix::fs::symlink(&real, dir.path().join("link")).unwrap();
        let a = Project::normalize(&dir.path().join("link/.")).unwrap();
        let b = Project::normalize(&real).unwrap();
        assert_eq!(a, b);
        assert!(!a.key().ends_with('/'));
        assert_eq!(a.hash(), blake3::hash(a.key().as_bytes()).to_hex().as_str());
        assert_eq!(a.hash().len(), 64);
    }

    #[test]
    fn a_missing_path_or_a_file_is_not_a_project() {
        let dir = tempfile::tempdir().unwrap();
        assert!(Project::normalize(&dir.path().join("missing")).is_err());
        let file = dir.path().join("file");
        std::fs::write(&file, "x").unwrap();
        let error = Project::normalize(&file).unwrap_err().to_string();
        assert!(error.contains("not a directory"), "{error}");
    }
}

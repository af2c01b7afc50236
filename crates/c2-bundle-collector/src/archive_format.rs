//! The archive formats a bundle may come in, recognized by file name. Always built: without
//! the `archive` feature, [`crate::collect`] still recognizes an archive and refuses it with
//! [`crate::Error::ArchiveSupportNotBuilt`] instead of mistaking it for a directory.

use std::path::Path;

/// The archive formats a bundle may be distributed as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ArchiveFormat {
    /// `.tar.gz` or `.tgz`.
    TarGz,
    /// `.zip` with stored or deflated entries.
    Zip,
}

impl ArchiveFormat {
    /// The format a file name announces, or `None` for anything else (a directory, say).
    pub fn from_path(path: &Path) -> Option<Self> {
        let name = path.file_name()?.to_str()?.to_ascii_lowercase();
        if name.ends_with(".tar.gz") || name.ends_with(".tgz") {
            Some(Self::TarGz)
        } else if name.ends_with(".zip") {
            Some(Self::Zip)
        } else {
            None
        }
    }
}

use serde::Serialize;

/// Bounds on what collection will read. Exceeding one refuses the bundle with a diagnostic
/// that names the limit and the path; nothing is ever truncated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    /// Stored files in a bundle.
    pub max_files: usize,
    /// Bytes in one file.
    pub max_file_bytes: u64,
    /// Bytes in all stored files together (for an archive: expanded bytes, counted while inflating).
    pub max_bundle_bytes: u64,
    /// Path components of any entry relative to the root (`plugin.json` has depth 1).
    pub max_depth: usize,
    /// Entries examined: stored files, folders, symlinks and everything refused or skipped.
    /// It bounds the work and memory spent on a tree of empty folders or links.
    pub max_entries: usize,
    /// Bytes in one path component.
    pub max_name_bytes: usize,
    /// Bytes read from an archive file, and bytes produced by inflating a whole `.tar.gz`
    /// stream (contents plus tar headers and padding).
    pub max_archive_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_files: 5_000,
            max_file_bytes: 4 * 1024 * 1024,
            max_bundle_bytes: 20 * 1024 * 1024,
            max_depth: 12,
            max_entries: 10_000,
            max_name_bytes: 255,
            // The bundle limit plus room for one 512-byte header and up to 511 bytes of
            // padding per file at the file-count limit, rounded up.
            max_archive_bytes: 32 * 1024 * 1024,
        }
    }
}

//! The raw collected tree shared by the directory walker and the archive readers: stored
//! files, real directories, inside symlinks (never stored) and the refusals met on the way.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::diagnostic::{Diagnostic, codes};
use crate::limits::Limits;

/// One stored file: its bytes and whether any execute bit was set. No other mode is kept.
#[derive(Clone, PartialEq, Eq, Serialize)]
pub struct FileEntry {
    /// The file's contents, read in full under the limits.
    #[serde(skip)]
    pub bytes: Vec<u8>,
    /// Whether any execute bit was set (on disk, or in the archive entry's mode).
    pub executable: bool,
}

impl std::fmt::Debug for FileEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileEntry")
            .field("len", &self.bytes.len())
            .field("executable", &self.executable)
            .finish()
    }
}

/// A symlink that resolves inside the bundle. It is never stored; whether it refuses the
/// bundle depends on the component paths, known only once the manifest is read.
#[derive(Debug, Clone)]
pub(crate) struct InsideLink {
    pub(crate) path: String,
    pub(crate) target: String,
}

/// Collection stops at the first exceeded limit: reading on would be unbounded work.
#[derive(Debug)]
pub(crate) struct Stop;

#[derive(Debug)]
pub(crate) struct Tree {
    pub(crate) limits: Limits,
    pub(crate) files: BTreeMap<String, FileEntry>,
    pub(crate) dirs: BTreeSet<String>,
    pub(crate) links: Vec<InsideLink>,
    pub(crate) diagnostics: Vec<Diagnostic>,
    pub(crate) total_bytes: u64,
    pub(crate) entries: usize,
    /// A limit stopped collection: the tree is partial, so only the refusals so far count.
    pub(crate) stopped: bool,
    /// Set for a fingerprint walk: regular files are `fstat`ed into `stats`, never read.
    pub(crate) stat_only: bool,
    /// What a fingerprint walk saw of each regular file, in walk (sorted) order.
    pub(crate) stats: Vec<FileStat>,
    /// What a fingerprint walk saw of each directory it listed, the root first (as `""`),
    /// then in walk order.
    pub(crate) dir_stats: Vec<FileStat>,
    /// Set for a partial walk: the only root entries walked (see `walk::walk_tops`).
    pub(crate) tops: Option<Vec<String>>,
}

/// The identity and change stamps of one regular file, as `fstat` on its open handle gives
/// them. Writing a file, replacing it, or changing its mode or times changes its `ctime`,
/// which no unprivileged process can set back.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct FileStat {
    pub(crate) rel: String,
    pub(crate) dev: u64,
    pub(crate) ino: u64,
    pub(crate) size: u64,
    pub(crate) mode: u32,
    pub(crate) mtime: (i64, i64),
    pub(crate) ctime: (i64, i64),
}

impl FileStat {
    /// Whether `stat` shows the same entry with the same stamps.
    pub(crate) fn is(&self, stat: &nix::sys::stat::FileStat) -> bool {
        self.dev == stat.st_dev
            && self.ino == stat.st_ino
            && i64::try_from(self.size).is_ok_and(|size| size == stat.st_size)
            && self.mode == stat.st_mode
            && self.mtime == (stat.st_mtime, stat.st_mtime_nsec)
            && self.ctime == (stat.st_ctime, stat.st_ctime_nsec)
    }
}

impl Tree {
    pub(crate) fn new(limits: Limits) -> Self {
        Self {
            limits,
            files: BTreeMap::new(),
            dirs: BTreeSet::new(),
            links: Vec::new(),
            diagnostics: Vec::new(),
            total_bytes: 0,
            entries: 0,
            stopped: false,
            stat_only: false,
            dir_stats: Vec::new(),
            stats: Vec::new(),
            tops: None,
        }
    }

    pub(crate) fn refuse(&mut self, diagnostic: Diagnostic) {
        self.diagnostics.push(diagnostic);
    }

    /// Counts one examined entry against [`Limits::max_entries`].
    pub(crate) fn count_entry(&mut self, rel: &str) -> Result<(), Stop> {
        self.entries += 1;
        if self.entries > self.limits.max_entries {
            self.refuse(limit(
                codes::LIMIT_ENTRIES,
                rel,
                format!(
                    "entry count limit ({}) exceeded at {rel}",
                    self.limits.max_entries
                ),
                "remove files, folders or links from the bundle",
            ));
            return Err(Stop);
        }
        Ok(())
    }

    /// Depth and per-component name length of a bundle-relative path.
    pub(crate) fn check_path(&mut self, rel: &str) -> Result<(), Stop> {
        let depth = rel.split('/').count();
        if depth > self.limits.max_depth {
            self.refuse(limit(
                codes::LIMIT_DEPTH,
                rel,
                format!("depth limit ({}) exceeded by {rel}", self.limits.max_depth),
                "flatten the bundle layout",
            ));
            return Err(Stop);
        }
        if let Some(long) = rel
            .split('/')
            .find(|name| name.len() > self.limits.max_name_bytes)
        {
            self.refuse(limit(
                codes::LIMIT_NAME_LENGTH,
                rel,
                format!(
                    "name length limit ({} bytes) exceeded by {long:?} in {rel}",
                    self.limits.max_name_bytes
                ),
                "rename the entry",
            ));
            return Err(Stop);
        }
        Ok(())
    }

    /// How many bytes the next file may still hold: the smaller of the file and bundle budgets.
    pub(crate) fn read_budget(&self) -> u64 {
        self.limits.max_file_bytes.min(
            self.limits
                .max_bundle_bytes
                .saturating_sub(self.total_bytes),
        )
    }

    /// Stores a file read with `take(read_budget() + 1)`, refusing it if that read overflowed.
    pub(crate) fn add_file(
        &mut self,
        rel: String,
        bytes: Vec<u8>,
        executable: bool,
    ) -> Result<(), Stop> {
        let len = bytes.len() as u64;
        if len > self.limits.max_file_bytes {
            self.refuse(limit(
                codes::LIMIT_FILE_SIZE,
                &rel,
                format!(
                    "file size limit ({} bytes) exceeded by {rel}",
                    self.limits.max_file_bytes
                ),
                "remove the file or keep it out of the bundle",
            ));
            return Err(Stop);
        }
        if self.total_bytes + len > self.limits.max_bundle_bytes {
            self.refuse(limit(
                codes::LIMIT_BUNDLE_SIZE,
                &rel,
                format!(
                    "bundle size limit ({} bytes) exceeded at {rel}",
                    self.limits.max_bundle_bytes
                ),
                "remove large files from the bundle",
            ));
            return Err(Stop);
        }
        if self.files.len() >= self.limits.max_files {
            self.refuse(limit(
                codes::LIMIT_FILES,
                &rel,
                format!(
                    "file count limit ({}) exceeded at {rel}",
                    self.limits.max_files
                ),
                "remove files from the bundle",
            ));
            return Err(Stop);
        }
        self.total_bytes += len;
        self.files.insert(rel, FileEntry { bytes, executable });
        Ok(())
    }
}

fn limit(code: &'static str, rel: &str, message: String, help: &str) -> Diagnostic {
    Diagnostic::error(code, rel.to_owned(), message).with_help(help)
}

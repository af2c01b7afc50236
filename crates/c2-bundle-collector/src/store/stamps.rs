//! The stat manifest of each stored tree: what lets a process vouch for an unchanged tree
//! without reading its bytes.
//!
//! Once a tree's digest has been computed from its bytes, the device, inode, size, mode,
//! mtime and ctime of every file and every directory are kept with the digest: in memory, and
//! in `<dir>/<id>/stamps.json`, so a fresh process (every CLI command) gets the same answer
//! from one `fstatat` per entry, without listing a directory. Writing a file, replacing it
//! (a new inode), or changing its mode or times changes its ctime, which an unprivileged
//! process cannot set back; adding, removing or renaming an entry changes the ctime and mtime
//! of its directory, so the recorded files are still all there is. Any change shows as a
//! mismatch, and a mismatch means the tree is walked and hashed again, failing closed exactly
//! as before. A tree beyond the limits in force is never vouched for either: the walk judges it. The manifest is a cache, never a source of trust: the digest it
//! gives is still compared with the one the user trusted, and it sits beside `installed.json`
//! and `policy.json`, which whoever could rewrite it could rewrite too.
//!
//! The racy rule (as a version-control index has it): a file changed within [`STAMP_SETTLE`]
//! of the moment its stamps were taken is not vouched for by them, since a same-size write in
//! the same clock tick would leave them equal. A tree with such a file is neither remembered
//! nor written down, and a manifest naming such a file is ignored: the tree is hashed.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use std::os::fd::AsFd;
use std::path::Path;

use nix::fcntl::{AtFlags, FlockArg, OFlag};
use nix::sys::stat::{Mode, fstat, fstatat};
use serde::{Deserialize, Serialize};

use super::{InstalledRecord, Store, write_cache};
use crate::error::Result;
use crate::limits::Limits;
use crate::tree::{FileStat, Tree};
use crate::walk::{open_nofollow, read_file_bounded};

/// `<dir>/<id>/stamps.json`: the tree's stat manifest.
const STAMPS: &str = "stamps.json";
/// The manifest's format; another value is ignored (the tree is hashed).
const FORMAT: u32 = 2;
/// A manifest is one small line per file: anything bigger than this is ignored.
const MAX_STAMPS_BYTES: u64 = 64 * 1024 * 1024;

/// A file changed less than this before its stamps were taken is too recent to vouch for
/// with them: file times tick coarsely (a few ms; 2 s on some file systems), so a same-size
/// write within the same tick would leave them equal.
pub(super) const STAMP_SETTLE: Duration = Duration::from_secs(2);

/// The installed files of a bundle are no longer the ones it was installed with, or cannot be
/// checked: the message says which and what to do. Nothing from such a tree may run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ContentChanged(pub String);

/// A tree whose digest was computed from its bytes, and what its files looked like then.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Verified {
    /// Every regular file, in walk order.
    pub(super) stats: Vec<FileStat>,
    /// Every directory, the root (`""`) first: their stamps vouch that no entry was added,
    /// removed or renamed, so the files above are all there is and nothing needs listing.
    pub(super) dirs: Vec<FileStat>,
    pub(super) digest: String,
}

/// The contents of `stamps.json`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(from = "ManifestFields")]
struct Manifest {
    format: u32,
    /// When the stamps were taken (before the bytes were read): seconds and nanoseconds since
    /// the Unix epoch.
    taken: (i64, i64),
    #[serde(flatten)]
    verified: Verified,
}

/// [`Manifest`] as its fields are read: deserializing a flattened struct buffers every value
/// first, which made reading a manifest cost more than checking the tree it describes.
#[derive(Deserialize)]
struct ManifestFields {
    format: u32,
    taken: (i64, i64),
    stats: Vec<FileStat>,
    dirs: Vec<FileStat>,
    digest: String,
}

impl From<ManifestFields> for Manifest {
    fn from(fields: ManifestFields) -> Self {
        Self {
            format: fields.format,
            taken: fields.taken,
            verified: Verified {
                stats: fields.stats,
                dirs: fields.dirs,
                digest: fields.digest,
            },
        }
    }
}

impl Store {
    /// The content digest of what is on disk now under `<id>/bundle/`, for checking it
    /// against the digest the user trusted before anything runs. `Ok(None)` when the tree is
    /// no longer one the store could have written: a symlink, a FIFO, a skipped directory
    /// (`node_modules`, ...), an unreadable file or an exceeded limit was found in it.
    ///
    /// A tree whose digest was computed before (by this process or, through its stat
    /// manifest `<id>/stamps.json`, by any other) is not read again while the device, inode,
    /// size, mode, mtime and ctime of every file and directory are what they were then (one
    /// `fstatat` per entry); any write, replacement, chmod or touch changes the ctime, which an
    /// unprivileged process cannot set back, and any entry added, removed or renamed changes
    /// its directory's. Entries changed within 2 s of the moment their stamps were taken are
    /// not vouched for by them: such a tree is hashed.
    pub fn current_digest(&self, id: &str, limits: &Limits) -> Result<Option<String>> {
        let _lock = self.lock(FlockArg::LockShared)?;
        self.digest_locked(id, limits)
    }

    /// Whether the files under the installed tree of `record` are still the ones it was
    /// installed with (and so the ones a user trusted): [`Store::current_digest`] against
    /// the record's digest. The refusal says what changed and what to do.
    pub fn check_content(
        &self,
        record: &InstalledRecord,
        limits: &Limits,
    ) -> std::result::Result<(), ContentChanged> {
        let current = self.current_digest(&record.id, limits);
        self.content_verdict(record, current.map_err(|error| error.to_string()))
    }

    /// [`Store::check_content`] of each of `records`, in their order, under one hold of the
    /// store's lock: what a listing of every bundle asks.
    pub fn check_contents<'a>(
        &self,
        records: impl IntoIterator<Item = &'a InstalledRecord>,
        limits: &Limits,
    ) -> Vec<std::result::Result<(), ContentChanged>> {
        let records: Vec<&InstalledRecord> = records.into_iter().collect();
        let lock = self.lock(FlockArg::LockShared);
        records
            .iter()
            .map(|record| {
                let current = match &lock {
                    Ok(_) => self
                        .digest_locked(&record.id, limits)
                        .map_err(|error| error.to_string()),
                    Err(error) => Err(error.to_string()),
                };
                self.content_verdict(record, current)
            })
            .collect()
    }

    fn content_verdict(
        &self,
        record: &InstalledRecord,
        current: std::result::Result<Option<String>, String>,
    ) -> std::result::Result<(), ContentChanged> {
        let id = &record.id;
        let what_to_do = "nothing from it runs and its trust is unchanged: reinstall it from its source to restore the reviewed files, or uninstall it";
        let why = match current {
            Ok(Some(digest)) if digest == record.digest => return Ok(()),
            Ok(Some(digest)) => format!(
                "the installed files of {id} changed on disk since it was installed (content digest {} instead of {}); {what_to_do}",
                &digest[..16.min(digest.len())],
                &record.digest[..16.min(record.digest.len())]
            ),
            Ok(None) => format!(
                "the installed files of {id} changed on disk since it was installed (a symlink, special file or unexpected directory appeared in {}); {what_to_do}",
                self.dir.join(id).join("bundle").display()
            ),
            Err(error) => format!(
                "the installed files of {id} cannot be checked against its digest: {error}; {what_to_do}"
            ),
        };
        Err(ContentChanged(why))
    }

    /// [`Store::current_digest`] with the store's lock held.
    fn digest_locked(&self, id: &str, limits: &Limits) -> Result<Option<String>> {
        let dir = self.bundle_dir(id)?;
        if let Some(digest) = self.vouched(id, &dir, limits) {
            return Ok(Some(digest));
        }
        let before = crate::walk::stat_dir(&dir, *limits)?;
        let taken = now();
        let tree = crate::walk::walk_dir(&dir, *limits)?;
        if !clean(&tree) {
            return Ok(None);
        }
        let digest = crate::digest::content_digest(&tree.files);
        // Kept only when every file and directory had settled before its stamps were taken
        // and nothing moved while the bytes were read.
        let verified = Verified {
            stats: before.stats.clone(),
            dirs: before.dir_stats.clone(),
            digest: digest.clone(),
        };
        if clean(&before) && verified.settled(taken) {
            let after = crate::walk::stat_dir(&dir, *limits)?;
            if clean(&after) && after.stats == before.stats && after.dir_stats == before.dir_stats {
                self.write_stamps(id, taken, &verified);
                c2_lock::lock(&self.verified).insert(id.to_owned(), verified);
            }
        }
        Ok(Some(digest))
    }

    /// The digest of the tree of `id` (at `dir`) as this process remembers it or its manifest
    /// gives it, when every directory and file it saw then stats the same now.
    fn vouched(&self, id: &str, dir: &Path, limits: &Limits) -> Option<String> {
        let remembered = c2_lock::lock(&self.verified).get(id).cloned();
        if let Some(known) = remembered
            && known.on_disk(dir, limits)
        {
            return Some(known.digest);
        }
        let manifest = self.read_stamps(id)?;
        if !manifest.verified.settled(manifest.taken) || !manifest.verified.on_disk(dir, limits) {
            return None;
        }
        let digest = manifest.verified.digest.clone();
        c2_lock::lock(&self.verified).insert(id.to_owned(), manifest.verified);
        Some(digest)
    }

    /// The tree's manifest, if there is a readable one of this format.
    fn read_stamps(&self, id: &str) -> Option<Manifest> {
        let path = self.dir.join(id).join(STAMPS);
        let bytes = read_file_bounded(open_nofollow(&path).ok()?, MAX_STAMPS_BYTES).ok()?;
        serde_json::from_slice::<Manifest>(&bytes)
            .ok()
            .filter(|manifest| manifest.format == FORMAT)
    }

    /// Writes the manifest by rename, best effort: a store this process cannot write (read
    /// only) is hashed by every process, as it would be without one.
    fn write_stamps(&self, id: &str, taken: (i64, i64), verified: &Verified) {
        let manifest = Manifest {
            format: FORMAT,
            taken,
            verified: verified.clone(),
        };
        let Ok(bytes) = serde_json::to_vec(&manifest) else {
            return;
        };
        // Not synced: a manifest lost or torn by a crash fails to parse or to match, and the
        // tree is hashed; an fsync per bundle would make the first listing after a change slow.
        write_cache(&self.dir.join(id), STAMPS, &bytes);
    }

    /// Whether this process holds a verified digest of `id` (for tests).
    #[cfg(test)]
    pub(super) fn remembers(&self, id: &str) -> bool {
        c2_lock::lock(&self.verified).contains_key(id)
    }
}

impl Verified {
    /// Whether every file and directory changed at least [`STAMP_SETTLE`] before `taken`.
    fn settled(&self, taken: (i64, i64)) -> bool {
        self.stats
            .iter()
            .chain(&self.dirs)
            .all(|stat| settled(stat, taken))
    }

    /// Whether the tree at `root` is still the one these stamps were taken of: the root
    /// and every directory (so no entry came or went in any of them) and every file stat as
    /// they did, one `fstatat` each, nothing listed or read; and the tree is within `limits`,
    /// which a walk would check.
    fn on_disk(&self, root: &Path, limits: &Limits) -> bool {
        if self.dirs.first().is_none_or(|dir| !dir.rel.is_empty()) || !self.within(limits) {
            return false;
        }
        // A bare descriptor to stat relative to: nothing is listed, so no `DIR` stream.
        let Ok(dir) = nix::fcntl::open(
            root,
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        ) else {
            return false;
        };
        let same = |known: &FileStat| {
            let now = if known.rel.is_empty() {
                fstat(dir.as_fd())
            } else {
                fstatat(
                    dir.as_fd(),
                    known.rel.as_str(),
                    AtFlags::AT_SYMLINK_NOFOLLOW,
                )
            };
            now.is_ok_and(|now| known.is(&now))
        };
        self.dirs.iter().all(same) && self.stats.iter().all(same)
    }

    /// Whether a walk under `limits` would take this tree whole, and every entry is a plain
    /// path inside it (relative, no `.`, `..` or empty component): a manifest naming anything
    /// else vouches for nothing.
    fn within(&self, limits: &Limits) -> bool {
        let entries = self.stats.len() + self.dirs.len() - 1;
        let bytes: u64 = self.stats.iter().map(|stat| stat.size).sum();
        let path_ok = |stat: &FileStat| {
            stat.rel.split('/').count() <= limits.max_depth
                && stat.rel.split('/').all(|name| {
                    !matches!(name, "" | "." | "..") && name.len() <= limits.max_name_bytes
                })
        };
        self.stats.len() <= limits.max_files
            && entries <= limits.max_entries
            && bytes <= limits.max_bundle_bytes
            && self
                .stats
                .iter()
                .all(|stat| stat.size <= limits.max_file_bytes)
            && self.stats.iter().chain(&self.dirs[1..]).all(path_ok)
    }
}

/// A tree the walk took no exception to: what the store could have written.
fn clean(tree: &Tree) -> bool {
    !tree.stopped && tree.diagnostics.is_empty() && tree.links.is_empty()
}

pub(super) fn now() -> (i64, i64) {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or((0, 0), |since| {
            (
                i64::try_from(since.as_secs()).unwrap_or(i64::MAX),
                i64::from(since.subsec_nanos()),
            )
        })
}

/// Whether the file's last change (mtime and ctime) came at least [`STAMP_SETTLE`] before
/// `taken`.
fn settled(stat: &FileStat, taken: (i64, i64)) -> bool {
    settled_times(stat.mtime, stat.ctime, taken)
}

/// [`settled`] of a file last modified at `mtime` and changed at `ctime`.
pub(super) fn settled_times(mtime: (i64, i64), ctime: (i64, i64), taken: (i64, i64)) -> bool {
    let at = |(secs, nanos): (i64, i64)| i128::from(secs) * 1_000_000_000 + i128::from(nanos);
    let limit = at(taken) - i128::try_from(STAMP_SETTLE.as_nanos()).unwrap_or(i128::MAX);
    at(mtime) < limit && at(ctime) < limit
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;
    use std::path::{Path, PathBuf};

    use super::*;
    use crate::digest::SourceIdentity;
    use crate::store::{InstallRequest, InstalledRecord, StoreOptions};

    const MANIFEST: &str = r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
        "name": "cached", "extensions": {"dev.codetwo": {"standardVersion": "1.2.0"}}}"#;

    fn installed() -> (tempfile::TempDir, Store, InstalledRecord) {
        let root = tempfile::tempdir().unwrap();
        let store = Store::open(&root.path().join("plugins"), StoreOptions::default()).unwrap();
        let record = install(&root, &store, "cached");
        (root, store, record)
    }

    /// Installs a bundle named `name` holding `plugin.json` and `lib/data.txt` into `store`.
    fn install(root: &tempfile::TempDir, store: &Store, name: &str) -> InstalledRecord {
        let source = root.path().join("src").join(name);
        std::fs::create_dir_all(source.join("lib")).unwrap();
        let manifest = MANIFEST.replace("\"cached\"", &format!("{name:?}"));
        std::fs::write(source.join("plugin.json"), manifest).unwrap();
        std::fs::write(source.join("lib/data.txt"), "aaaa").unwrap();
        let bundle = crate::collect_dir(&source, &Limits::default()).unwrap();
        let request = InstallRequest::new(SourceIdentity::local(&source).unwrap());
        store.install(&bundle, &request).unwrap()
    }

    /// A store opened afresh on the same directory: what another process would see.
    fn fresh(store: &Store) -> Store {
        Store::open(store.dir(), StoreOptions::default()).unwrap()
    }

    fn digest(store: &Store, id: &str) -> Option<String> {
        store.current_digest(id, &Limits::default()).unwrap()
    }

    fn data(store: &Store, id: &str) -> PathBuf {
        store.bundle_dir(id).unwrap().join("lib/data.txt")
    }

    fn stamps(store: &Store, id: &str) -> PathBuf {
        store.dir().join(id).join(STAMPS)
    }

    /// Rewrites the tree's manifest to claim `digest`, stamps untouched: a process that
    /// answers with it vouched by the stamps alone, without reading a byte.
    fn plant(store: &Store, id: &str, digest: &str) {
        let path = stamps(store, id);
        let mut manifest: Manifest =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        manifest.verified.digest = digest.to_owned();
        std::fs::write(&path, serde_json::to_vec(&manifest).unwrap()).unwrap();
    }

    /// Sets a file's mtime back to what it was (the ctime still moves: no process can set it).
    fn touch_back(path: &Path, modified: SystemTime) {
        std::fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(modified)
            .unwrap();
    }

    const PLANTED: &str = "feedfeedfeedfeedfeedfeedfeedfeedfeedfeedfeedfeedfeedfeedfeedfeed";

    /// Installed, settled and hashed once, so its manifest is on disk.
    fn settled_with_manifest() -> (tempfile::TempDir, Store, InstalledRecord) {
        let (root, store, record) = installed();
        std::thread::sleep(STAMP_SETTLE + Duration::from_millis(200));
        assert_eq!(digest(&store, &record.id), Some(record.digest.clone()));
        assert!(stamps(&store, &record.id).exists());
        (root, store, record)
    }

    #[test]
    fn a_tree_changed_within_the_settle_time_is_hashed_every_time() {
        let (_root, store, record) = installed();
        assert_eq!(digest(&store, &record.id), Some(record.digest.clone()));
        assert!(
            !store.remembers(&record.id),
            "fresh stamps vouch for nothing"
        );
        assert!(
            !stamps(&store, &record.id).exists(),
            "nor are they written down"
        );
    }

    #[test]
    fn a_settled_tree_is_vouched_for_by_its_stamps_until_any_file_changes() {
        let (_root, store, record) = settled_with_manifest();
        let limits = Limits::default();
        assert!(store.remembers(&record.id));
        assert_eq!(
            store.current_digest(&record.id, &limits).unwrap(),
            Some(record.digest.clone()),
            "a hit gives the digest the bytes gave"
        );
        // The same size, other bytes: the stamps move, so the bytes are read again.
        let data = data(&store, &record.id);
        std::fs::write(&data, "bbbb").unwrap();
        let edited = store.current_digest(&record.id, &limits).unwrap();
        assert!(edited.is_some_and(|d| d != record.digest));
        // Back to the original bytes, then only the mode changes: still noticed.
        std::fs::write(&data, "aaaa").unwrap();
        assert_eq!(
            store.current_digest(&record.id, &limits).unwrap(),
            Some(record.digest.clone())
        );
        std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
        let chmodded = store.current_digest(&record.id, &limits).unwrap();
        assert!(chmodded.is_some_and(|d| d != record.digest));
        // A new file is a different tree too.
        std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::fs::write(data.with_file_name("extra.txt"), "x").unwrap();
        let added = store.current_digest(&record.id, &limits).unwrap();
        assert!(added.is_some_and(|d| d != record.digest));
    }

    #[test]
    fn a_fresh_process_vouches_for_an_unchanged_tree_from_the_manifest_alone() {
        let (_root, store, record) = settled_with_manifest();
        // The real digest, from a store that never hashed it.
        assert_eq!(
            digest(&fresh(&store), &record.id),
            Some(record.digest.clone())
        );
        // The planted digest comes back: the bytes were not read.
        plant(&store, &record.id, PLANTED);
        assert_eq!(digest(&fresh(&store), &record.id), Some(PLANTED.to_owned()));
    }

    #[test]
    fn a_manifest_whose_stamps_are_too_recent_is_ignored() {
        let (_root, store, record) = settled_with_manifest();
        plant(&store, &record.id, PLANTED);
        // Stamps taken within the settle time of a file's last change vouch for nothing.
        let path = stamps(&store, &record.id);
        let mut manifest: Manifest =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let last_change = manifest
            .verified
            .stats
            .iter()
            .map(|s| s.ctime)
            .max()
            .unwrap();
        manifest.taken = (last_change.0 + 1, last_change.1);
        std::fs::write(&path, serde_json::to_vec(&manifest).unwrap()).unwrap();
        // (Backdating a file instead moves its ctime, so its stamps no longer match at all.)
        assert_eq!(digest(&fresh(&store), &record.id), Some(record.digest));
    }

    /// What a fresh process must answer after a tamper.
    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Seen {
        /// The installed digest: the same bytes are there.
        Same,
        /// Another digest, computed from the bytes.
        Other,
        /// No digest: the tree is no longer one the store could have written.
        Refused,
    }

    /// Every tamper a fresh process must see through the manifest: a planted digest matching
    /// the old stamps is never given back once a file or directory changed in any way.
    #[test]
    fn every_tamper_is_seen_by_a_fresh_process_despite_the_manifest() {
        type Tamper = fn(&Path);
        let tampers: [(&str, Tamper, Seen); 11] = [
            ("edit", |p| std::fs::write(p, "bbbb").unwrap(), Seen::Other),
            (
                "chmod",
                |p| std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap(),
                Seen::Other,
            ),
            (
                "same size, mtime touched back",
                |p| {
                    let modified = std::fs::metadata(p).unwrap().modified().unwrap();
                    std::fs::write(p, "bbbb").unwrap();
                    touch_back(p, modified);
                },
                Seen::Other,
            ),
            (
                "inode swapped, other bytes, mtime touched back",
                |p| {
                    let modified = std::fs::metadata(p).unwrap().modified().unwrap();
                    let swap = p.with_file_name(".swap");
                    std::fs::write(&swap, "bbbb").unwrap();
                    touch_back(&swap, modified);
                    std::fs::rename(&swap, p).unwrap();
                },
                Seen::Other,
            ),
            (
                "inode swapped, same bytes",
                |p| {
                    let swap = p.with_file_name(".swap");
                    std::fs::copy(p, &swap).unwrap();
                    std::fs::rename(&swap, p).unwrap();
                },
                Seen::Same,
            ),
            (
                "a file added beside it",
                |p| std::fs::write(p.with_file_name("extra.txt"), "x").unwrap(),
                Seen::Other,
            ),
            (
                "a file added at the root, the root's mtime touched back",
                |p| {
                    let root = p.parent().unwrap().parent().unwrap();
                    let modified = std::fs::metadata(root).unwrap().modified().unwrap();
                    std::fs::write(root.join("extra.txt"), "x").unwrap();
                    std::fs::File::open(root)
                        .unwrap()
                        .set_modified(modified)
                        .unwrap();
                },
                Seen::Other,
            ),
            ("removed", |p| std::fs::remove_file(p).unwrap(), Seen::Other),
            (
                "an empty directory added beside it (no file changed)",
                |p| std::fs::create_dir(p.with_file_name("more")).unwrap(),
                Seen::Same,
            ),
            (
                "replaced by a symlink to the same bytes",
                |p| {
                    let outside = p.parent().unwrap().parent().unwrap().parent().unwrap();
                    std::fs::copy(p, outside.join("data.txt")).unwrap();
                    std::fs::remove_file(p).unwrap();
                    std::os::unix::fs::symlink(outside.join("data.txt"), p).unwrap();
                },
                Seen::Refused,
            ),
            (
                "its directory swapped for a symlink to a copy",
                |p| {
                    let lib = p.parent().unwrap();
                    let outside = lib.parent().unwrap().parent().unwrap().join("lib-copy");
                    std::fs::create_dir(&outside).unwrap();
                    std::fs::copy(p, outside.join("data.txt")).unwrap();
                    std::fs::remove_dir_all(lib).unwrap();
                    std::os::unix::fs::symlink(&outside, lib).unwrap();
                },
                Seen::Refused,
            ),
        ];
        // One store of one bundle per tamper, settled and hashed once.
        let root = tempfile::tempdir().unwrap();
        let store = Store::open(&root.path().join("plugins"), StoreOptions::default()).unwrap();
        let records: Vec<InstalledRecord> = (0..tampers.len())
            .map(|n| install(&root, &store, &format!("tampered-{n}")))
            .collect();
        std::thread::sleep(STAMP_SETTLE + Duration::from_millis(200));
        for record in &records {
            assert_eq!(digest(&store, &record.id), Some(record.digest.clone()));
        }
        for ((what, tamper, expected), record) in tampers.into_iter().zip(&records) {
            let data = data(&store, &record.id);
            let before = std::fs::metadata(&data).unwrap();
            plant(&store, &record.id, PLANTED);
            tamper(&data);
            if what.contains("touched back") && data.exists() {
                use std::os::unix::fs::MetadataExt;
                let after = std::fs::metadata(&data).unwrap();
                assert_eq!(
                    (after.len(), after.mtime(), after.mtime_nsec()),
                    (before.len(), before.mtime(), before.mtime_nsec()),
                    "{what}: size and mtime as before"
                );
            }
            let seen = digest(&fresh(&store), &record.id);
            assert_ne!(
                seen.as_deref(),
                Some(PLANTED),
                "{what}: vouched by stale stamps"
            );
            let got = match seen {
                Some(digest) if digest == *record.digest => Seen::Same,
                Some(_) => Seen::Other,
                None => Seen::Refused,
            };
            assert_eq!(got, expected, "{what}");
        }
    }

    /// A manifest whose entry names a path outside the tree (or the same file by another
    /// spelling), with that path's true stamps, is refused before anything is compared.
    #[test]
    fn a_manifest_naming_a_path_outside_the_tree_vouches_for_nothing() {
        use std::os::unix::fs::MetadataExt;
        let (_root, store, record) = settled_with_manifest();
        let path = stamps(&store, &record.id);
        let bundle = store.bundle_dir(&record.id).unwrap();
        for outside in [
            "/etc/passwd",
            "../installed.json",
            "lib/../plugin.json",
            "lib//data.txt",
            "./plugin.json",
        ] {
            let meta = std::fs::symlink_metadata(bundle.join(outside)).unwrap();
            let mut manifest: Manifest =
                serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            manifest.verified.digest = PLANTED.to_owned();
            manifest.verified.stats[0] = FileStat {
                rel: outside.to_owned(),
                dev: meta.dev(),
                ino: meta.ino(),
                size: meta.size(),
                mode: meta.mode(),
                mtime: (meta.mtime(), meta.mtime_nsec()),
                ctime: (meta.ctime(), meta.ctime_nsec()),
            };
            std::fs::write(&path, serde_json::to_vec(&manifest).unwrap()).unwrap();
            assert_eq!(
                digest(&fresh(&store), &record.id),
                Some(record.digest.clone()),
                "{outside}"
            );
        }
    }

    #[test]
    fn a_manifest_of_a_tree_beyond_the_limits_in_force_vouches_for_nothing() {
        let (_root, store, record) = settled_with_manifest();
        plant(&store, &record.id, PLANTED);
        let tight = Limits {
            max_files: 1,
            ..Limits::default()
        };
        let seen = fresh(&store).current_digest(&record.id, &tight).unwrap();
        assert_ne!(seen.as_deref(), Some(PLANTED));
    }
}

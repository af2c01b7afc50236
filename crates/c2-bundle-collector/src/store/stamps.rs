//! The stat manifest of each stored tree: what lets a process vouch for an unchanged tree
//! without reading its bytes.
//!
//! Once a tree's digest has been computed from its bytes, the device, inode, size, mode,
//! mtime and ctime of every file (one `fstat` each) are kept with the digest: in memory, and
//! in `<dir>/<id>/stamps.json`, so a fresh process (every CLI command) gets the same answer
//! from one `fstat` a file. Writing a file, replacing it (a new inode), or changing its mode
//! or times changes its ctime, which an unprivileged process cannot set back; so any change
//! shows as a mismatch, and a mismatch means the bytes are read and hashed again, failing
//! closed exactly as before. The manifest is a cache, never a source of trust: the digest it
//! gives is still compared with the one the user trusted, and it sits beside `installed.json`
//! and `policy.json`, which whoever could rewrite it could rewrite too.
//!
//! The racy rule (as a version-control index has it): a file changed within [`STAMP_SETTLE`]
//! of the moment its stamps were taken is not vouched for by them, since a same-size write in
//! the same clock tick would leave them equal. A tree with such a file is neither remembered
//! nor written down, and a manifest naming such a file is ignored: the tree is hashed.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nix::fcntl::FlockArg;
use serde::{Deserialize, Serialize};

use super::{Store, write_cache};
use crate::error::Result;
use crate::limits::Limits;
use crate::tree::{FileStat, Tree};
use crate::walk::{open_nofollow, read_bounded};

/// `<dir>/<id>/stamps.json`: the tree's stat manifest.
const STAMPS: &str = "stamps.json";
/// The manifest's format; another value is ignored (the tree is hashed).
const FORMAT: u32 = 1;
/// A manifest is one small line per file: anything bigger than this is ignored.
const MAX_STAMPS_BYTES: u64 = 64 * 1024 * 1024;

/// A file changed less than this before its stamps were taken is too recent to vouch for
/// with them: file times tick coarsely (a few ms; 2 s on some file systems), so a same-size
/// write within the same tick would leave them equal.
pub(super) const STAMP_SETTLE: Duration = Duration::from_secs(2);

/// A tree whose digest was computed from its bytes, and what its files looked like then.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Verified {
    pub(super) stats: Vec<FileStat>,
    pub(super) digest: String,
}

/// The contents of `stamps.json`.
#[derive(Debug, Serialize, Deserialize)]
struct Manifest {
    format: u32,
    /// When the stamps were taken (before the bytes were read): seconds and nanoseconds since
    /// the Unix epoch.
    taken: (i64, i64),
    #[serde(flatten)]
    verified: Verified,
}

impl Store {
    /// The content digest of what is on disk now under `<id>/bundle/`, for checking it
    /// against the digest the user trusted before anything runs. `Ok(None)` when the tree is
    /// no longer one the store could have written: a symlink, a FIFO, a skipped directory
    /// (`node_modules`, ...), an unreadable file or an exceeded limit was found in it.
    ///
    /// A tree whose digest was computed before (by this process or, through its stat
    /// manifest `<id>/stamps.json`, by any other) is not read again while every file's
    /// device, inode, size, mode, mtime and ctime are what they were then (one `fstat` per
    /// file, the same walk and refusals); any write, replacement, chmod or touch changes the
    /// ctime, which an unprivileged process cannot set back. Files changed within 2 s of the
    /// moment their stamps were taken are not vouched for by them: such a tree is hashed.
    pub fn current_digest(&self, id: &str, limits: &Limits) -> Result<Option<String>> {
        let _lock = self.lock(FlockArg::LockShared)?;
        let dir = self.bundle_dir(id)?;
        let before = crate::walk::stat_dir(&dir, *limits)?;
        if clean(&before) {
            if let Some(known) = c2_lock::lock(&self.verified)
                .get(id)
                .filter(|known| known.stats == before.stats)
            {
                return Ok(Some(known.digest.clone()));
            }
            if let Some(known) = self
                .read_stamps(id)
                .filter(|m| m.vouches_for(&before.stats))
            {
                let digest = known.verified.digest.clone();
                c2_lock::lock(&self.verified).insert(id.to_owned(), known.verified);
                return Ok(Some(digest));
            }
        }
        let taken = now();
        let tree = crate::walk::walk_dir(&dir, *limits)?;
        if !clean(&tree) {
            return Ok(None);
        }
        let digest = crate::digest::content_digest(&tree.files);
        // Kept only when every file had settled before its stamps were taken and nothing
        // moved while the bytes were read.
        if clean(&before) && before.stats.iter().all(|stat| settled(stat, taken)) {
            let after = crate::walk::stat_dir(&dir, *limits)?;
            if clean(&after) && after.stats == before.stats {
                let verified = Verified {
                    stats: before.stats,
                    digest: digest.clone(),
                };
                self.write_stamps(id, taken, &verified);
                c2_lock::lock(&self.verified).insert(id.to_owned(), verified);
            }
        }
        Ok(Some(digest))
    }

    /// The tree's manifest, if there is a readable one of this format.
    fn read_stamps(&self, id: &str) -> Option<Manifest> {
        let path = self.dir.join(id).join(STAMPS);
        let bytes = read_bounded(open_nofollow(&path).ok()?, MAX_STAMPS_BYTES).ok()?;
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

impl Manifest {
    /// Whether the manifest vouches for a tree whose files stat as `stats`: the same files
    /// with the same stamps, every one settled before the stamps were taken.
    fn vouches_for(&self, stats: &[FileStat]) -> bool {
        self.verified.stats == stats
            && self
                .verified
                .stats
                .iter()
                .all(|stat| settled(stat, self.taken))
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
        let source = root.path().join("src");
        std::fs::create_dir_all(source.join("lib")).unwrap();
        std::fs::write(source.join("plugin.json"), MANIFEST).unwrap();
        std::fs::write(source.join("lib/data.txt"), "aaaa").unwrap();
        let bundle = crate::collect_dir(&source, &Limits::default()).unwrap();
        let store = Store::open(&root.path().join("plugins"), StoreOptions::default()).unwrap();
        let request = InstallRequest::new(SourceIdentity::local(&source).unwrap());
        let record = store.install(&bundle, &request).unwrap();
        (root, store, record)
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

    /// Every tamper a fresh process must see through the manifest: a planted digest matching
    /// the old stamps is never given back once a file changed in any way.
    #[test]
    fn every_tamper_is_seen_by_a_fresh_process_despite_the_manifest() {
        type Tamper = fn(&Path);
        let tampers: [(&str, Tamper, bool); 5] = [
            ("edit", |p| std::fs::write(p, "bbbb").unwrap(), false),
            (
                "chmod",
                |p| std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap(),
                false,
            ),
            (
                "same size, mtime touched back",
                |p| {
                    let modified = std::fs::metadata(p).unwrap().modified().unwrap();
                    std::fs::write(p, "bbbb").unwrap();
                    touch_back(p, modified);
                },
                false,
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
                false,
            ),
            (
                "inode swapped, same bytes",
                |p| {
                    let swap = p.with_file_name(".swap");
                    std::fs::copy(p, &swap).unwrap();
                    std::fs::rename(&swap, p).unwrap();
                },
                true,
            ),
        ];
        for (what, tamper, same_bytes) in tampers {
            let (_root, store, record) = settled_with_manifest();
            let data = data(&store, &record.id);
            let before = std::fs::metadata(&data).unwrap();
            plant(&store, &record.id, PLANTED);
            tamper(&data);
            let after = std::fs::metadata(&data).unwrap();
            if what.contains("touched back") {
                use std::os::unix::fs::MetadataExt;
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
            if same_bytes {
                assert_eq!(seen, Some(record.digest.clone()), "{what}");
            } else {
                assert!(
                    seen.is_some_and(|d| d != record.digest),
                    "{what}: the change is in the digest"
                );
            }
        }
    }
}

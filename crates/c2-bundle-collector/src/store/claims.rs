//! What a process acting on one bundle needs to know of the others without loading them.
//!
//! A process that acts on one bundle (install, trust or enable one id) still has two answers
//! that depend on the others: the typosquat check compares the new name with every installed
//! name from another source, and a command id another bundle registers already makes enabling
//! this one fail. The first needs no file at all: an installed id is `<name>-<8 hex>`, so only
//! the records of ids that name a look-alike are read ([`Store::lookalike_warnings`]). The
//! second comes from `<dir>/claims.json` ([`Store::command_claims`]), a cache of the command
//! ids each record declares, kept with the stamps of the `installed.json` they were read from
//! (device, inode, size, mode, mtime, ctime): a record whose stamps still match, and had
//! settled before they were taken, is not read again; any other is read and its entry
//! rewritten. Like the stamp manifest of a tree (stamps.rs), the file is never a source of
//! trust: it only names which bundles to load, and loading one reads and validates its record
//! and manifest.

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};

use nix::fcntl::FlockArg;
use serde::{Deserialize, Serialize};

use super::stamps::{now, settled_times};
use super::{RECORD, Store, random_name, read_record, rename};
use crate::digest::SourceIdentity;
use crate::error::Result;
use crate::store::InstalledRecord;
use crate::walk::{open_nofollow, read_bounded};

/// `<dir>/claims.json`.
const CLAIMS: &str = "claims.json";
/// The file's format; another value is ignored (every record is read).
const FORMAT: u32 = 1;
/// An entry is a few hundred bytes: anything bigger than this is ignored.
const MAX_CLAIMS_BYTES: u64 = 64 * 1024 * 1024;

/// An installed bundle as the typosquat check compares it ([`crate::lookalike_warnings`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Summary {
    /// The installed id (its directory in the store).
    pub id: String,
    /// The manifest's `name`.
    pub name: String,
    /// Where it was installed from.
    pub source: SourceIdentity,
}

impl Summary {
    /// The summary of `record`.
    pub fn of(record: &InstalledRecord) -> Self {
        Self {
            id: record.id.clone(),
            name: record.name.clone(),
            source: record.source.clone(),
        }
    }
}

/// An `installed.json`'s device, inode, size, mode, mtime and ctime.
type Stamp = (u64, u64, u64, u32, (i64, i64), (i64, i64));

/// The claims a process last saw, by id.
pub(super) type Known = BTreeMap<String, Entry>;

/// One record's command ids with its stamps and when they were taken (before it was read).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Entry(Stamp, (i64, i64), Vec<String>);

impl Entry {
    /// Whether the record had settled before its stamps were taken, so that a later process
    /// may trust equal stamps to mean an unchanged record.
    fn settled(&self) -> bool {
        let Self((_, _, _, _, mtime, ctime), taken, _) = self;
        settled_times(*mtime, *ctime, *taken)
    }
}

/// The contents of `claims.json`.
#[derive(Debug, Serialize, Deserialize)]
struct File {
    format: u32,
    entries: Known,
}

impl Store {
    /// The runtime command ids each installed bundle with a readable record declares, by id:
    /// one directory read, one `lstat` per bundle and one read of `claims.json` (once per
    /// process) when nothing changed, plus a read of each record that did change (written back
    /// to the file, best effort). A record that cannot be read is left out: loading that bundle
    /// reports why.
    pub fn command_claims(&self) -> Result<BTreeMap<String, Vec<String>>> {
        let _lock = self.lock(FlockArg::LockShared)?;
        let mut remembered = c2_lock::lock(&self.claims);
        let mut known = remembered.take().unwrap_or_else(|| self.read_claims());
        let mut fresh = Known::new();
        // Whether the file should change: an entry a later process could use was added or
        // replaced, or one went away.
        let mut changed = false;
        for id in self.bundle_ids()? {
            let path = self.dir.join(&id).join(RECORD);
            #[expect(
                clippy::disallowed_methods,
                reason = "the collector inspects the records it writes without following links"
            )]
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if !meta.is_file() {
                continue;
            }
            let stamp = (
                meta.dev(),
                meta.ino(),
                meta.size(),
                meta.mode(),
                (meta.mtime(), meta.mtime_nsec()),
                (meta.ctime(), meta.ctime_nsec()),
            );
            if let Some(entry) = known.remove(&id)
                && entry.0 == stamp
                && entry.settled()
            {
                fresh.insert(id, entry);
                continue;
            }
            let taken = now();
            let Ok(record) = read_record(&path) else {
                continue;
            };
            let entry = Entry(stamp, taken, record.command_ids());
            // A record changed within the settle time is not vouched for by its stamps later:
            // it is read again each time until it settles, and not written down.
            changed |= entry.settled();
            fresh.insert(id, entry);
        }
        // What is left of `known` is no longer in the store.
        changed |= !known.is_empty();
        if changed {
            let entries = fresh
                .iter()
                .filter(|(_, entry)| entry.settled())
                .map(|(id, entry)| (id.clone(), entry.clone()))
                .collect();
            self.write_claims(&File {
                format: FORMAT,
                entries,
            });
        }
        let claims = fresh
            .iter()
            .map(|(id, Entry(_, _, commands))| (id.clone(), commands.clone()))
            .collect();
        *remembered = Some(fresh);
        Ok(claims)
    }

    /// [`crate::lookalike_warnings`] against every installed bundle, reading only the records
    /// of those whose id (`<name>-<8 hex>`, or any other shape) names a look-alike of `name`:
    /// one directory read for a store of any size.
    pub fn lookalike_warnings(
        &self,
        name: Option<&str>,
        source: &SourceIdentity,
    ) -> Result<Vec<String>> {
        let Some(name) = name else {
            return Ok(Vec::new());
        };
        let _lock = self.lock(FlockArg::LockShared)?;
        let mut candidates = Vec::new();
        for id in self.bundle_ids()? {
            let resembles = crate::digest::installed_name(&id)
                .is_none_or(|installed| c2_manifest::lookalike(name, installed).is_some());
            if resembles && let Ok(record) = read_record(&self.dir.join(&id).join(RECORD)) {
                candidates.push(Summary::of(&record));
            }
        }
        Ok(crate::lookalike_warnings(Some(name), source, &candidates))
    }

    /// The names in the store that can be installed bundles, as in `list`: real directories
    /// (from the directory entries' types, no `lstat` where the file system reports them)
    /// whose name does not start with a dot.
    fn bundle_ids(&self) -> Result<Vec<String>> {
        #[expect(
            clippy::disallowed_methods,
            reason = "the collector owns walking the store it writes"
        )]
        let entries = std::fs::read_dir(&self.dir).map_err(crate::Error::io("read", &self.dir))?;
        let mut ids = Vec::new();
        for entry in entries {
            let entry = entry.map_err(crate::Error::io("read", &self.dir))?;
            let real_dir = entry.file_type().is_ok_and(|kind| kind.is_dir());
            // The store only ever creates UTF-8 names; anything else is not ours to touch.
            if let Ok(id) = entry.file_name().into_string()
                && real_dir
                && !id.starts_with('.')
            {
                ids.push(id);
            }
        }
        Ok(ids)
    }

    fn read_claims(&self) -> Known {
        let path = self.dir.join(CLAIMS);
        open_nofollow(&path)
            .ok()
            .and_then(|file| read_bounded(file, MAX_CLAIMS_BYTES).ok())
            .and_then(|bytes| serde_json::from_slice::<File>(&bytes).ok())
            .filter(|file| file.format == FORMAT)
            .map(|file| file.entries)
            .unwrap_or_default()
    }

    /// Writes the file by rename, best effort: a store this process cannot write reads every
    /// record each time, as it would without the file. Not synced: a file lost or torn by a
    /// crash fails to parse, and every record is read again.
    fn write_claims(&self, file: &File) {
        use std::io::Write;
        let Ok(bytes) = serde_json::to_vec(file) else {
            return;
        };
        let path = self.dir.join(CLAIMS);
        let temporary = self.dir.join(format!(".{CLAIMS}.{}", random_name()));
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
            .open(&temporary)
            .and_then(|mut out| out.write_all(&bytes));
        if written.is_err() || rename(&temporary, &path).is_err() {
            let _ignored = std::fs::remove_file(&temporary);
        }
    }
}

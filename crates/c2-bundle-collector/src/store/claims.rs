//! What a process acting on one bundle needs to know of the others without loading them.
//!
//! A process that acts on one bundle (install, trust or enable one id) still has two answers
//! that depend on the others: the typosquat check compares the new name with every installed
//! name from another source, and a command id another bundle registers already makes enabling
//! this one fail. The first needs no file at all: an installed id is `<name>-<8 hex>`, so only
//! the records of ids that name a look-alike are read ([`Store::lookalike_warnings`]). The
//! second comes from `<dir>/.claims.json` ([`Store::command_neighbours`]), a cache of each
//! record's command ids (as 64-bit hashes) kept with the stamps of the `installed.json` they
//! were read from (device, inode, size, mode, mtime, ctime): a record whose stamps still match,
//! and had settled before they were taken, is not read again; any other is read and its entry
//! rewritten. Like the stamp manifest of a tree (stamps.rs), the file is never a source of
//! trust: it only names which bundles to load, and loading one reads and validates its record
//! and manifest.

use std::cmp::Ordering;
use std::fmt::Write as _;
use std::os::fd::AsFd;
use std::path::Path;

use nix::fcntl::{AtFlags, FlockArg};
use nix::sys::stat::{SFlag, fstatat};
use serde::{Deserialize, Serialize};

use super::stamps::{now, settled_times};
use super::{RECORD, Store, bundle_ids, read_record, write_cache};
use crate::digest::SourceIdentity;
use crate::error::Result;
use crate::store::InstalledRecord;
use crate::walk::{open_nofollow, read_file_bounded};

/// `<dir>/.claims.json`: a dot name, so it is no installed id and no store watcher wakes on it.
const CLAIMS: &str = ".claims.json";
/// The file's format; another value is ignored (every record is read).
const FORMAT: u32 = 2;
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

/// Claims by id, in id order.
type Known = Vec<(String, Entry)>;

/// One record's command claims ([`claim`]) with its stamps and when they were taken (before
/// it was read).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry(Stamp, (i64, i64), #[serde(with = "hex_claims")] Vec<u64>);

impl Entry {
    /// Whether the record had settled before its stamps were taken, so that a later process
    /// may trust equal stamps to mean an unchanged record.
    fn settled(&self) -> bool {
        let Self((_, _, _, _, mtime, ctime), taken, _) = self;
        settled_times(*mtime, *ctime, *taken)
    }
}

/// The contents of `.claims.json`.
#[derive(Debug, Serialize, Deserialize)]
struct File {
    format: u32,
    entries: Known,
}

impl Store {
    /// The installed bundles other than `id` that declare one of `commands`, or one of the
    /// commands of a bundle so found, and so on: every bundle a command conflict involving
    /// `commands` can reach, in id order. One directory read, one `fstatat` per bundle and one
    /// read of `.claims.json` when nothing changed, plus a read of each record that did change
    /// (written back to the file, best effort). A bundle whose record cannot be read is left
    /// out: loading it reports why.
    pub fn command_neighbours(&self, id: &str, commands: &[String]) -> Result<Vec<String>> {
        let _lock = self.lock(FlockArg::LockShared)?;
        let claims = self.command_claims()?;
        // Sorted, for a binary search per hash.
        let mut claimed: Vec<u64> = commands.iter().map(|c| claim(c)).collect();
        claimed.sort_unstable();
        let mut others: Vec<(&String, &Vec<u64>)> = claims
            .iter()
            .filter(|(other, _)| other.as_str() != id)
            .map(|(other, Entry(_, _, hashes))| (other, hashes))
            .collect();
        let mut found = Vec::new();
        loop {
            let (sharing, rest): (Vec<_>, Vec<_>) = others
                .into_iter()
                .partition(|(_, hashes)| hashes.iter().any(|h| claimed.binary_search(h).is_ok()));
            others = rest;
            if sharing.is_empty() {
                break;
            }
            for (other, hashes) in sharing {
                claimed.extend(hashes.iter().copied());
                found.push(other.clone());
            }
            claimed.sort_unstable();
            claimed.dedup();
        }
        found.sort();
        Ok(found)
    }

    /// Each installed bundle's claims, in id order; the caller holds the store's lock.
    fn command_claims(&self) -> Result<Known> {
        // Both in id order: one merge finds each id's entry, and the entries of ids gone.
        let mut known = self.read_claims().into_iter().peekable();
        let mut fresh = Known::new();
        // Whether the file should change: an entry a later process could use was added or
        // replaced, or one went away.
        let mut changed = false;
        let dir = open_store_dir(&self.dir)?;
        let mut path = String::new();
        for id in bundle_ids(&self.dir)? {
            let mut entry = None;
            while let Some((known_id, _)) = known.peek() {
                match known_id.as_str().cmp(&id) {
                    Ordering::Less => {
                        known.next();
                        changed = true;
                    }
                    Ordering::Equal => {
                        entry = known.next().map(|(_, entry)| entry);
                        break;
                    }
                    Ordering::Greater => break,
                }
            }
            path.clear();
            let _ = write!(path, "{id}/{RECORD}");
            // A record that is no longer a file has no claims: its entry, if any, goes.
            let Ok(meta) = fstatat(dir.as_fd(), path.as_str(), AtFlags::AT_SYMLINK_NOFOLLOW) else {
                changed |= entry.is_some();
                continue;
            };
            if SFlag::from_bits_truncate(meta.st_mode) & SFlag::S_IFMT != SFlag::S_IFREG {
                changed |= entry.is_some();
                continue;
            }
            let stamp = (
                meta.st_dev,
                meta.st_ino,
                u64::try_from(meta.st_size).unwrap_or(u64::MAX),
                meta.st_mode,
                (meta.st_mtime, meta.st_mtime_nsec),
                (meta.st_ctime, meta.st_ctime_nsec),
            );
            if let Some(entry) = entry
                && entry.0 == stamp
                && entry.settled()
            {
                fresh.push((id, entry));
                continue;
            }
            let taken = now();
            let Ok(record) = read_record(&self.dir.join(&id).join(RECORD)) else {
                continue;
            };
            let hashes = record.command_ids().iter().map(|c| claim(c)).collect();
            let entry = Entry(stamp, taken, hashes);
            // A record changed within the settle time is not vouched for by its stamps later:
            // it is read again each time until it settles, and not written down.
            changed |= entry.settled();
            fresh.push((id, entry));
        }
        // What is left of `known` is no longer in the store.
        changed |= known.next().is_some();
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
        Ok(fresh)
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
        let new_name = c2_manifest::LookalikeName::new(name);
        let mut candidates = Vec::new();
        for id in bundle_ids(&self.dir)? {
            let resembles = crate::digest::installed_name(&id)
                .is_none_or(|installed| new_name.lookalike(installed).is_some());
            if resembles && let Ok(record) = read_record(&self.dir.join(&id).join(RECORD)) {
                candidates.push(Summary::of(&record));
            }
        }
        Ok(crate::lookalike_warnings(Some(name), source, &candidates))
    }

    fn read_claims(&self) -> Known {
        let path = self.dir.join(CLAIMS);
        open_nofollow(&path)
            .ok()
            .and_then(|file| read_file_bounded(file, MAX_CLAIMS_BYTES).ok())
            .and_then(|bytes| serde_json::from_slice::<File>(&bytes).ok())
            .filter(|file| file.format == FORMAT)
            .map(|file| file.entries)
            .unwrap_or_default()
    }

    /// Writes the file, best effort (see [`write_cache`]): a store this process cannot write
    /// reads every record each time, as it would without the file; a file lost or torn by a
    /// crash fails to parse, and every record is read again.
    fn write_claims(&self, file: &File) {
        if let Ok(bytes) = serde_json::to_vec(file) {
            write_cache(&self.dir, CLAIMS, &bytes);
        }
    }
}

/// The store directory, opened for `fstatat` relative to it.
fn open_store_dir(dir: &Path) -> Result<std::fs::File> {
    std::fs::File::open(dir).map_err(crate::Error::io("open", dir))
}

/// A command id as the file keeps it: the first 8 bytes of its BLAKE3 hash. Two ids with the
/// same claim only make a host load one bundle more than it needs.
fn claim(command: &str) -> u64 {
    let hash = blake3::hash(command.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&hash.as_bytes()[..8]);
    u64::from_le_bytes(first)
}

/// A record's claims as one string of 16 hex digits each: a store of a thousand bundles keeps
/// ten thousand of them, and one string per record parses in a fraction of the time of as many
/// JSON numbers. A string of any other shape fails the file's parse, so every record is read.
mod hex_claims {
    use std::fmt::Write as _;

    use serde::de::{Deserializer, Error, Visitor};
    use serde::ser::Serializer;

    const DIGITS: usize = 16;

    pub(super) fn serialize<S: Serializer>(claims: &[u64], to: S) -> Result<S::Ok, S::Error> {
        let mut text = String::with_capacity(claims.len() * DIGITS);
        for claim in claims {
            let _ = write!(text, "{claim:016x}");
        }
        to.serialize_str(&text)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(from: D) -> Result<Vec<u64>, D::Error> {
        from.deserialize_str(Claims)
    }

    struct Claims;

    impl Visitor<'_> for Claims {
        type Value = Vec<u64>;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("command claims as 16 hex digits each")
        }

        fn visit_str<E: Error>(self, text: &str) -> Result<Vec<u64>, E> {
            if !text.len().is_multiple_of(DIGITS) {
                return Err(E::custom("claims are not 16 hex digits each"));
            }
            text.as_bytes()
                .chunks(DIGITS)
                .map(|digits| {
                    digits
                        .iter()
                        .try_fold(0, |claim, &digit| {
                            let digit = char::from(digit).to_digit(16)?;
                            Some(claim << 4 | u64::from(digit))
                        })
                        .ok_or_else(|| E::custom("a claim is not 16 hex digits"))
                })
                .collect()
        }
    }
}

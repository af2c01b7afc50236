//! The install store: `<dir>/<id>/bundle/` plus `<dir>/<id>/installed.json`.
//!
//! Every change builds a complete `<id>` tree in `<dir>/.staging/`, moves any live `<id>` to
//! `<dir>/.trash/<slot>/<id>`, renames the new tree into place and only then deletes the
//! trash. Opening the store recovers from a crash between any two steps: staging leftovers are
//! deleted, and a trashed tree whose live `<id>` is missing is renamed back. So an `<id>` is
//! always either the complete old tree or the complete new one. Changes are serialized across
//! processes by an exclusive lock on `<dir>/.lock`.
//!
//! A host that has a bundle loaded holds a shared [`Lease`] on `<dir>/<id>/lease`. A tree that
//! leaves the store (uninstall, replace) is deleted only once no lease on it is held
//! ([`Retired`]); the lock is on the file itself, so it follows the tree into the trash.
//!
//! `<dir>/.development/` marks development bundles (developer mode, see development.rs).
#![expect(
    clippy::disallowed_methods,
    reason = "this module is the store's file IO"
)]

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};

use crate::bundle::CollectedBundle;
use crate::digest::{SourceIdentity, installed_id};
use crate::error::{Error, Result};
use crate::fault::Step;
use crate::inventory::Inventory;
use crate::limits::Limits;
use crate::provenance::Provenance;
use crate::surface::UpdateReview;
use crate::walk::{open_nofollow, read_file_bounded};

mod claims;
mod development;
mod lease;
mod settings;
mod stamps;

pub use stamps::ContentChanged;

pub use claims::Summary;
use lease::unleased;
pub use lease::{Lease, Retired};

pub use development::{
    DeveloperStatus, DevelopmentEntry, DevelopmentHold, DevelopmentMark, LastReload, ReloadRecord,
};

const STAGING: &str = ".staging";
const TRASH: &str = ".trash";
const LOCK: &str = ".lock";
const RECORD: &str = "installed.json";
/// `<dir>/<id>/lease`: hosts that have the bundle loaded hold a shared lock on it.
const LEASE: &str = "lease";
const BUNDLE: &str = "bundle";
/// A trash slot with this suffix holds an uninstalled tree: recovery finishes deleting it.
const UNINSTALL_SUFFIX: &str = ".uninstall";
/// installed.json is small (its inventory is bounded by the bundle); refuse anything bigger.
const MAX_RECORD_BYTES: u64 = 16 * 1024 * 1024;

/// Store behaviour switches.
#[derive(Debug, Clone, Default)]
pub struct StoreOptions {
    /// For crash tests: stop the change at this step with [`Error::InjectedFault`], leaving
    /// the disk exactly as a crash there would. `None` in production.
    #[cfg(feature = "fault-injection")]
    pub inject_fault: Option<crate::fault::FaultPoint>,
}

/// What to record about an installation besides the bundle itself.
#[derive(Debug, Clone)]
pub struct InstallRequest {
    /// Where the bundle came from; with the manifest name it fixes the installed id
    /// ([`crate::installed_id`]).
    pub source: SourceIdentity,
    /// The exact commit, for git sources.
    pub commit: Option<String>,
    /// The time recorded as [`InstalledRecord::installed_at`].
    pub installed_at: SystemTime,
    /// The catalog entry it was installed from, if any.
    pub origin: Option<CatalogOrigin>,
    /// Where the bytes came from, recorded as [`InstalledRecord::provenance`].
    pub provenance: Option<Provenance>,
}

/// The catalog entry a bundle was installed from, recorded in `installed.json` so `outdated`
/// and `update` know where to look for a newer version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CatalogOrigin {
    /// The catalog's location: an absolute `marketplace.json` path or a git source.
    pub catalog: String,
    /// The catalog's `name`, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog_name: Option<String>,
    /// The entry's name.
    pub entry: String,
    /// The entry's version when installed.
    pub version: String,
    /// The entry's source kind (`local`, `github`, `git`, `npm`, `archive`).
    pub source_kind: String,
}

impl InstallRequest {
    /// A request stamped with the current time and no commit.
    pub fn new(source: SourceIdentity) -> Self {
        Self {
            source,
            commit: None,
            installed_at: SystemTime::now(),
            origin: None,
            provenance: None,
        }
    }
}

/// The contents of `installed.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InstalledRecord {
    /// The installed id ([`crate::installed_id`] of the name and source), also the name of
    /// its directory in the store.
    pub id: String,
    /// The manifest's `name`.
    pub name: String,
    /// The manifest's `version`; `null` when it declares none (optional in Agent Plugins 1.0.0).
    #[serde(default)]
    pub version: Option<String>,
    /// Where the bundle was installed from.
    pub source: SourceIdentity,
    /// The content digest ([`crate::content_digest`]) of the stored files.
    pub digest: String,
    /// The exact commit, for git sources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// The catalog entry it came from (`c2-plugins install NAME --marketplace ...`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<CatalogOrigin>,
    /// Seconds since the Unix epoch.
    pub installed_at: u64,
    /// Where the bytes came from; `None` is unknown (recorded by an older version).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(deserialize_with = "crate::provenance::lenient")]
    pub provenance: Option<Provenance>,
    /// The contributions found when the bundle was collected for this install.
    pub inventory: Inventory,
    /// For a replace with other content: what changed from the content before (executable
    /// surface and files), the reason a trust bound to the old digest no longer holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<UpdateReview>,
}

impl InstalledRecord {
    /// The ids of the runtime commands the bundle declares, in inventory order.
    pub fn command_ids(&self) -> Vec<String> {
        self.inventory
            .contributions
            .iter()
            .filter(|c| c.kind == crate::inventory::ContributionKind::RuntimeCommand)
            .map(|c| c.id.clone())
            .collect()
    }
}

/// One `<id>` directory found by [`Store::list`], with its record or why it is unreadable.
#[derive(Debug)]
pub struct ListedBundle {
    /// The directory name, which is the installed id.
    pub id: String,
    /// Its `installed.json`, or the error that makes it unreadable.
    pub record: Result<InstalledRecord>,
}

/// An opened plugins directory.
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
    options: StoreOptions,
    /// Trees whose digest this process computed or read from a settled stamp manifest, by id
    /// (see stamps.rs).
    verified: std::sync::Mutex<std::collections::HashMap<String, stamps::Verified>>,
}

impl Store {
    /// Opens (creating if needed) the store at `dir` and recovers from any interrupted change.
    pub fn open(dir: &Path, options: StoreOptions) -> Result<Self> {
        std::fs::create_dir_all(dir).map_err(Error::io("create", dir))?;
        let store = Self {
            dir: dir.to_owned(),
            options,
            verified: std::sync::Mutex::default(),
        };
        // Only an interrupted change needs the exclusive lock (and write access): opening a
        // clean store, read-only or not, writes nothing.
        if store.needs_recovery()? {
            let _lock = store.lock(FlockArg::LockExclusive)?;
            store.recover()?;
        }
        Ok(store)
    }

    /// Whether staging or the trash holds anything a crash (or a retired tree still leased
    /// by another host) may have left.
    fn needs_recovery(&self) -> Result<bool> {
        for root in [STAGING, TRASH] {
            let path = self.dir.join(root);
            if is_real_dir(&path)? && !dir_names(&path)?.is_empty() {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The plugins directory this store was opened at.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where an installed bundle's files live.
    pub fn bundle_dir(&self, id: &str) -> Result<PathBuf> {
        check_id(id)?;
        Ok(self.dir.join(id).join(BUNDLE))
    }

    /// Stores a valid bundle under the id its name and source give, replacing atomically any
    /// bundle already installed from that source. Nothing is written for an invalid bundle,
    /// and nothing from the bundle is run.
    pub fn install(
        &self,
        bundle: &CollectedBundle,
        request: &InstallRequest,
    ) -> Result<InstalledRecord> {
        let (record, retired) = self.install_deferred(bundle, request)?;
        if let Some(retired) = retired {
            retired.finish(Duration::ZERO)?;
        }
        Ok(record)
    }

    /// [`Store::install`], except that a replaced tree is handed back as [`Retired`] instead
    /// of being deleted: the caller tells other hosts first, then deletes it once no host
    /// holds a [`Lease`] on it.
    pub fn install_deferred(
        &self,
        bundle: &CollectedBundle,
        request: &InstallRequest,
    ) -> Result<(InstalledRecord, Option<Retired>)> {
        let errors = bundle.error_count();
        let manifest = match &bundle.manifest {
            Some(manifest) if errors == 0 => manifest,
            _ => {
                return Err(Error::InvalidBundle {
                    errors: errors.max(1),
                });
            }
        };
        let id = installed_id(&manifest.name, &request.source);
        check_id(&id)?;
        let mut record = InstalledRecord {
            id: id.clone(),
            name: manifest.name.clone(),
            version: manifest.version.clone(),
            source: request.source.clone(),
            digest: bundle.digest.clone(),
            commit: request.commit.clone(),
            origin: request.origin.clone(),
            installed_at: request
                .installed_at
                .duration_since(UNIX_EPOCH)
                .map_or(0, |since| since.as_secs()),
            provenance: request.provenance.clone(),
            inventory: bundle.inventory.clone(),
            review: None,
        };
        let _lock = self.lock(FlockArg::LockExclusive)?;
        // A replace with other content records what changed; a failed review records none.
        record.review = self.review_unlocked(&id, bundle).ok();
        record.review.take_if(|r| r.from_digest == r.to_digest);

        let staging_root = self.dir.join(STAGING);
        create_dir_all_synced(&staging_root, &self.dir)?;
        let staging = staging_root.join(random_name());
        if let Err(error) = write_tree(&staging, bundle, &record) {
            // Best effort: the next open would remove it anyway.
            let _ignored = remove_dir_all(&staging);
            return Err(error);
        }
        sync_dir(&staging_root)?;
        self.fault(Step::AfterStaging)?;

        let live = self.dir.join(&id);
        let trash_slot = if exists(&live)? {
            let slot = self.trash_slot("")?;
            rename(&live, &slot.join(&id))?;
            sync_dir(&slot)?;
            sync_dir(&self.dir)?;
            self.fault(Step::AfterOldTrashed)?;
            Some(slot)
        } else {
            None
        };

        rename(&staging, &live)?;
        sync_dir(&self.dir)?;
        sync_dir(&staging_root)?;
        self.fault(Step::AfterNewInPlace)?;

        let retired = trash_slot.map(|slot| Retired {
            store: self.dir.clone(),
            tree: slot.join(&id),
            slot,
        });
        Ok((record, retired))
    }

    /// Removes an installed bundle: renamed into the trash (the atomic step), then deleted.
    pub fn uninstall(&self, id: &str) -> Result<InstalledRecord> {
        let (record, retired) = self.uninstall_deferred(id)?;
        retired.finish(Duration::ZERO)?;
        Ok(record)
    }

    /// The atomic step of [`Store::uninstall`] alone: the tree leaves the store (it is no
    /// longer listed) and is handed back as [`Retired`], to be deleted once no host holds a
    /// [`Lease`] on it.
    pub fn uninstall_deferred(&self, id: &str) -> Result<(InstalledRecord, Retired)> {
        let _lock = self.lock(FlockArg::LockExclusive)?;
        let record = self.read(id)?;
        let retired = self.retire_locked(id)?;
        Ok((record, retired))
    }

    /// Removes the entry `<id>` whatever state it is in: a record that is unreadable or
    /// missing, files that no longer validate. `Ok(None)` when its record could not be read.
    /// [`Error::NotInstalled`] when there is no such directory. Such an entry was never
    /// loaded by a host, so no lease can hold it: it is deleted at once.
    pub fn remove(&self, id: &str) -> Result<Option<InstalledRecord>> {
        check_id(id)?;
        let retired = {
            let _lock = self.lock(FlockArg::LockExclusive)?;
            if !is_real_dir(&self.dir.join(id))? {
                return Err(Error::NotInstalled { id: id.to_owned() });
            }
            let record = self.read(id).ok();
            (record, self.retire_locked(id)?)
        };
        let (record, retired) = retired;
        retired.finish(Duration::ZERO)?;
        Ok(record)
    }

    /// Whether the store has an entry directory `<id>` (loadable or not).
    pub fn contains(&self, id: &str) -> Result<bool> {
        if check_id(id).is_err() {
            return Ok(false);
        }
        is_real_dir(&self.dir.join(id))
    }

    /// The atomic step of a removal, under the exclusive lock: `<id>` moves into the trash.
    fn retire_locked(&self, id: &str) -> Result<Retired> {
        let slot = self.trash_slot(UNINSTALL_SUFFIX)?;
        rename(&self.dir.join(id), &slot.join(id))?;
        sync_dir(&slot)?;
        sync_dir(&self.dir)?;
        self.fault(Step::AfterUninstallTrashed)?;
        Ok(Retired {
            store: self.dir.clone(),
            tree: slot.join(id),
            slot,
        })
    }

    /// The record of one installed bundle.
    pub fn get(&self, id: &str) -> Result<InstalledRecord> {
        let _lock = self.lock(FlockArg::LockShared)?;
        self.read(id)
    }

    /// [`Store::get`] for a caller that holds the lock already.
    fn read(&self, id: &str) -> Result<InstalledRecord> {
        check_id(id)?;
        let path = self.dir.join(id).join(RECORD);
        if !exists(&path)? {
            return Err(Error::NotInstalled { id: id.to_owned() });
        }
        read_record(&path)
    }

    /// Every installed bundle (a directory holding installed.json), sorted by id.
    pub fn list(&self) -> Result<Vec<ListedBundle>> {
        let _lock = self.lock(FlockArg::LockShared)?;
        let mut listed = Vec::new();
        // The plugins directory also holds the host's own files (policy, locks, data): only
        // real directories with a record can be installed bundles.
        for id in bundle_ids(&self.dir)? {
            let record_path = self.dir.join(&id).join(RECORD);
            let record = match open_nofollow(&record_path) {
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
                Err(error) => Err(Error::io("open", &record_path)(error)),
                Ok(file) => parse_record(file, &record_path),
            };
            listed.push(ListedBundle { record, id });
        }
        Ok(listed)
    }

    /// Re-collects an installed bundle's files from disk (for scaffolds or a re-check).
    pub fn collect_installed(&self, id: &str, limits: &Limits) -> Result<CollectedBundle> {
        let _lock = self.lock(FlockArg::LockShared)?;
        self.read(id)?;
        crate::bundle::collect_dir(&self.bundle_dir(id)?, limits)
    }

    /// What storing `bundle` would change in the installed bundle `id` (its executable
    /// surface and files), read from the stored tree under the default [`Limits`] raised to
    /// twice what `bundle` needs. An
    /// installed tree that no longer matches its digest is [`Error::ContentChanged`].
    pub fn review_replace(&self, id: &str, bundle: &CollectedBundle) -> Result<UpdateReview> {
        let _lock = self.lock(FlockArg::LockShared)?;
        self.review_unlocked(id, bundle)
    }

    fn review_unlocked(&self, id: &str, bundle: &CollectedBundle) -> Result<UpdateReview> {
        let previous = self.read(id)?;
        let old = crate::bundle::collect_dir(&self.bundle_dir(id)?, &review_limits(bundle))?;
        if old.digest != previous.digest {
            return Err(Error::ContentChanged { id: id.to_owned() });
        }
        Ok(UpdateReview::between(id, &old, bundle))
    }

    /// Finishes or undoes whatever change a crash interrupted. [`Store::open`] calls it.
    fn recover(&self) -> Result<()> {
        let staging_root = self.dir.join(STAGING);
        if exists(&staging_root)? {
            for name in dir_names(&staging_root)? {
                remove_dir_all(&staging_root.join(name))?;
            }
            sync_dir(&staging_root)?;
        }
        let trash_root = self.dir.join(TRASH);
        if !exists(&trash_root)? {
            return Ok(());
        }
        for slot_name in dir_names(&trash_root)? {
            let slot = trash_root.join(&slot_name);
            // A retired tree another host still has loaded is deleted by a later open.
            let Some(_locks) = unleased(&slot)? else {
                continue;
            };
            if !slot_name.ends_with(UNINSTALL_SUFFIX) {
                for id in dir_names(&slot)? {
                    let live = self.dir.join(&id);
                    if !exists(&live)? {
                        rename(&slot.join(&id), &live)?;
                        sync_dir(&self.dir)?;
                    }
                }
            }
            remove_dir_all(&slot)?;
        }
        sync_dir(&trash_root)
    }

    fn trash_slot(&self, suffix: &str) -> Result<PathBuf> {
        let trash_root = self.dir.join(TRASH);
        create_dir_all_synced(&trash_root, &self.dir)?;
        let slot = trash_root.join(format!("{}{suffix}", random_name()));
        std::fs::create_dir(&slot).map_err(Error::io("create", &slot))?;
        sync_dir(&trash_root)?;
        Ok(slot)
    }

    /// Shared for readers, exclusive for changes. flock locks belong to the open file, so
    /// a caller holding one must not take another (it would wait on itself).
    fn lock(&self, kind: FlockArg) -> Result<Option<Flock<File>>> {
        lock_store(&self.dir, kind)
    }

    fn fault(&self, step: Step) -> Result<()> {
        crate::fault::check(&self.options, step)
    }
}

/// The store's lock: shared for readers, exclusive for changes. The lock file is opened
/// read-only (flock needs no write access), so a read-only store can be read; it is created
/// only when missing. A reader that cannot create it (a read-only store that never had one)
/// reads unlocked (`None`): no writer can have taken it either.
fn lock_store(dir: &Path, kind: FlockArg) -> Result<Option<Flock<File>>> {
    let path = dir.join(LOCK);
    let flags = (nix::fcntl::OFlag::O_NOFOLLOW | nix::fcntl::OFlag::O_CLOEXEC).bits();
    let opened = OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(&path);
    let file = match opened {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            let created = OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .mode(0o600)
                .custom_flags(flags)
                .open(&path);
            match created {
                Ok(file) => file,
                Err(error)
                    if kind == FlockArg::LockShared
                        && matches!(
                            error.kind(),
                            std::io::ErrorKind::PermissionDenied
                                | std::io::ErrorKind::ReadOnlyFilesystem
                        ) =>
                {
                    return Ok(None);
                }
                Err(error) => return Err(Error::io("create", &path)(error)),
            }
        }
        Err(error) => return Err(Error::io("open", &path)(error)),
    };
    Flock::lock(file, kind)
        .map(Some)
        .map_err(|(_, errno)| Error::io("lock", &path)(std::io::Error::from(errno)))
}

/// Ids are single path components that cannot name the store's own entries.
fn check_id(id: &str) -> Result<()> {
    let bad = id.is_empty()
        || id.starts_with('.')
        || id.contains('/')
        || id.contains('\0')
        || id.len() > 255;
    if bad {
        return Err(Error::InvalidId { id: id.to_owned() });
    }
    Ok(())
}

fn write_tree(staging: &Path, bundle: &CollectedBundle, record: &InstalledRecord) -> Result<()> {
    let root = staging.join(BUNDLE);
    std::fs::create_dir(staging).map_err(Error::io("create", staging))?;
    std::fs::create_dir(&root).map_err(Error::io("create", &root))?;
    if let Some(bad) = bundle
        .directories
        .iter()
        .find(|dir| !is_plain_relative(dir))
    {
        return Err(Error::UnsafePath { path: bad.clone() });
    }
    let mut dirs: Vec<&str> = bundle.directories.iter().map(String::as_str).collect();
    for path in bundle.files.keys() {
        let mut ancestor = path.as_str();
        while let Some((parent, _)) = ancestor.rsplit_once('/') {
            dirs.push(parent);
            ancestor = parent;
        }
    }
    dirs.sort_unstable();
    dirs.dedup();
    // Sorted order creates a parent before its children.
    for dir in &dirs {
        let path = root.join(dir);
        std::fs::create_dir(&path).map_err(Error::io("create", &path))?;
        set_mode(&path, 0o755)?;
    }
    for (rel, entry) in &bundle.files {
        if !is_plain_relative(rel) {
            return Err(Error::UnsafePath { path: rel.clone() });
        }
        let mode = if entry.executable { 0o755 } else { 0o644 };
        write_file(&root.join(rel), &entry.bytes, mode)?;
    }
    let json = serde_json::to_vec_pretty(record).map_err(|error| Error::CorruptRecord {
        path: staging.join(RECORD),
        message: error.to_string(),
    })?;
    write_file(&staging.join(RECORD), &json, 0o644)?;
    // Children before parents, so each directory entry is durable before its parent's.
    for dir in dirs.iter().rev() {
        sync_dir(&root.join(dir))?;
    }
    sync_dir(&root)?;
    sync_dir(staging)
}

/// The collector only produces such paths; a hand-built [`CollectedBundle`] might not.
fn is_plain_relative(path: &str) -> bool {
    path.split('/')
        .all(|part| !part.is_empty() && part != "." && part != ".." && !part.contains('\0'))
}

pub(crate) fn write_file(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
        .open(path)
        .map_err(Error::io("create", path))?;
    file.write_all(bytes).map_err(Error::io("write", path))?;
    // The umask may have cleared bits the bundle asked for.
    file.set_permissions(std::fs::Permissions::from_mode(mode))
        .map_err(Error::io("chmod", path))?;
    file.sync_all().map_err(Error::io("sync", path))
}

fn set_mode(path: &Path, mode: u32) -> Result<()> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(Error::io("chmod", path))
}

pub(crate) fn sync_dir(path: &Path) -> Result<()> {
    File::open(path)
        .and_then(|dir| dir.sync_all())
        .map_err(Error::io("sync", path))
}

fn create_dir_all_synced(path: &Path, parent: &Path) -> Result<()> {
    if !exists(path)? {
        std::fs::create_dir_all(path).map_err(Error::io("create", path))?;
        sync_dir(parent)?;
    }
    Ok(())
}

fn rename(from: &Path, to: &Path) -> Result<()> {
    std::fs::rename(from, to).map_err(Error::io("rename", from))
}

fn remove_dir_all(path: &Path) -> Result<()> {
    match std::fs::remove_dir_all(path) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
            Err(Error::io("remove", path)(error))
        }
        _ => Ok(()),
    }
}

/// Whether an entry exists at `path` itself (a symlink counts, and is not followed).
pub(crate) fn exists(path: &Path) -> Result<bool> {
    #[expect(
        clippy::disallowed_methods,
        reason = "the collector owns symlink inspection"
    )]
    let meta = std::fs::symlink_metadata(path);
    match meta {
        Ok(_) => Ok(true),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(error) => Err(Error::io("inspect", path)(error)),
    }
}

/// Whether `path` is a directory itself, not a symlink to one and not a file.
fn is_real_dir(path: &Path) -> Result<bool> {
    #[expect(
        clippy::disallowed_methods,
        reason = "the collector owns symlink inspection"
    )]
    let meta = std::fs::symlink_metadata(path);
    match meta {
        Ok(meta) => Ok(meta.is_dir()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(error) => Err(Error::io("inspect", path)(error)),
    }
}

/// The names in the store that can be installed bundles, in name order: real directories
/// (from the directory entries' types, no `lstat` where the file system reports them) whose
/// name does not start with a dot.
pub(super) fn bundle_ids(dir: &Path) -> Result<Vec<String>> {
    Ok(dir_entries(dir)?
        .into_iter()
        .filter(|(name, real_dir)| *real_dir && !name.starts_with('.'))
        .map(|(name, _)| name)
        .collect())
}

fn dir_names(dir: &Path) -> Result<Vec<String>> {
    Ok(dir_entries(dir)?
        .into_iter()
        .map(|(name, _)| name)
        .collect())
}

/// The names in `dir`, in order, each with whether it is a real directory (not a link).
fn dir_entries(dir: &Path) -> Result<Vec<(String, bool)>> {
    #[expect(
        clippy::disallowed_methods,
        reason = "the collector owns walking the store it writes"
    )]
    let entries = std::fs::read_dir(dir).map_err(Error::io("read", dir))?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(Error::io("read", dir))?;
        let real_dir = entry.file_type().is_ok_and(|kind| kind.is_dir());
        // The store only ever creates UTF-8 names; anything else is not ours to touch.
        if let Ok(name) = entry.file_name().into_string() {
            names.push((name, real_dir));
        }
    }
    names.sort();
    Ok(names)
}

fn read_record(path: &Path) -> Result<InstalledRecord> {
    let file = open_nofollow(path).map_err(Error::io("open", path))?;
    parse_record(file, path)
}

/// The record in `file`, opened from `path`.
fn parse_record(file: File, path: &Path) -> Result<InstalledRecord> {
    let bytes = read_file_bounded(file, MAX_RECORD_BYTES).map_err(Error::io("read", path))?;
    serde_json::from_slice(&bytes).map_err(|error| Error::CorruptRecord {
        path: path.to_owned(),
        message: error.to_string(),
    })
}

/// Writes the cache file `dir/name` (a tree's stamp manifest, the command claims) by rename,
/// owner-only, best effort and not synced: a cache lost or torn by a crash fails to parse, and
/// what it caches is read again; one this process cannot write is simply not kept.
fn write_cache(dir: &Path, name: &str, bytes: &[u8]) {
    let path = dir.join(name);
    let temporary = dir.join(format!(".{name}.{}", random_name()));
    let written = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
        .open(&temporary)
        .and_then(|mut file| file.write_all(bytes));
    if written.is_err() || rename(&temporary, &path).is_err() {
        let _ignored = std::fs::remove_file(&temporary);
    }
}

/// A name no other change is using: process id, time and a counter, hashed.
fn random_name() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos());
    let mut hasher = blake3::Hasher::new();
    hasher.update(&std::process::id().to_le_bytes());
    hasher.update(&nanos.to_le_bytes());
    hasher.update(&COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    hasher.finalize().to_hex()[..16].to_owned()
}

/// The limits a replaced tree is read with for its review: the defaults, raised to twice what
/// the new content needs, so a host with larger limits can still review its updates.
fn review_limits(bundle: &CollectedBundle) -> Limits {
    let defaults = Limits::default();
    let sizes = || bundle.files.values().map(|f| f.bytes.len() as u64);
    let files = bundle.files.len().saturating_mul(2);
    let entries = files.saturating_add(bundle.directories.len().saturating_mul(2));
    Limits {
        max_files: defaults.max_files.max(files),
        max_file_bytes: defaults.max_file_bytes.max(sizes().max().unwrap_or(0) * 2),
        max_bundle_bytes: defaults.max_bundle_bytes.max(sizes().sum::<u64>() * 2),
        max_entries: defaults.max_entries.max(entries),
        ..defaults
    }
}

//! Leases: while a host holds a bundle loaded, no process deletes its tree; a tree that left
//! the store waits in the trash (`Retired`) until the last lease on it is gone.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::fcntl::FlockArg;

use super::{LEASE, Store, check_id, dir_names, exists, lock_store, remove_dir_all};
use crate::error::{Error, Result};

impl Store {
    /// Takes a shared lease on an installed bundle's tree: while any lease on it is held, no
    /// process deletes that tree (an uninstall or a replace waits for it, bounded, and a
    /// later [`Store::open`] deletes what was left). A host holds one for as long as the
    /// bundle is loaded. Fails with [`Error::NotInstalled`] when the bundle is gone or is
    /// being removed.
    pub fn lease(&self, id: &str) -> Result<Lease> {
        check_id(id)?;
        let path = self.dir.join(id).join(LEASE);
        let gone = || Error::NotInstalled { id: id.to_owned() };
        let file = match OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
            .open(&path)
        {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Err(gone()),
            Err(error) => return Err(Error::io("open", &path)(error)),
        };
        match file.try_lock_shared() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Err(gone()),
            Err(std::fs::TryLockError::Error(error)) => {
                return Err(Error::io("lock", &path)(error));
            }
        }
        // The tree may have been moved to the trash between the open and the lock.
        let held = file.metadata().map_err(Error::io("inspect", &path))?;
        if !same_file(&path, &held)? {
            return Err(gone());
        }
        Ok(Lease {
            _file: file,
            id: id.to_owned(),
        })
    }
}

/// A host's shared lock on one installed tree (see [`Store::lease`]); released on drop.
#[derive(Debug)]
pub struct Lease {
    _file: File,
    id: String,
}

impl Lease {
    /// The leased bundle id.
    pub fn id(&self) -> &str {
        &self.id
    }
}

/// A tree that has left the store (uninstalled or replaced) and waits in the trash until no
/// host holds a [`Lease`] on it.
#[derive(Debug)]
#[must_use = "a retired tree stays on disk until it is finished"]
pub struct Retired {
    pub(super) store: PathBuf,
    pub(super) slot: PathBuf,
    pub(super) tree: PathBuf,
}

impl Retired {
    /// Deletes the tree if no lease is held on it; `Ok(false)` (and the tree kept) otherwise.
    pub fn try_finish(&self) -> Result<bool> {
        // Under the store's lock, so a concurrent open's recovery never sees it half deleted.
        let _store = lock_store(&self.store, FlockArg::LockExclusive)?;
        let Some(_locks) = unleased(&self.slot)? else {
            return Ok(false);
        };
        remove_dir_all(&self.slot)?;
        Ok(true)
    }

    /// Waits up to `wait` (checking every 10 ms) for the last lease to go, then deletes the
    /// tree. `Ok(false)` when a lease was still held at the deadline: the tree is kept, and a
    /// later [`Store::open`] deletes it once it is unleased.
    pub fn finish(self, wait: Duration) -> Result<bool> {
        let deadline = Instant::now() + wait;
        loop {
            if self.try_finish()? {
                return Ok(true);
            }
            if Instant::now() >= deadline {
                return Ok(false);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Where the retired tree is now.
    pub fn path(&self) -> &Path {
        &self.tree
    }
}

/// Exclusive locks on the lease of every tree in a trash slot, or `None` if any is held.
pub(super) fn unleased(slot: &Path) -> Result<Option<Vec<File>>> {
    let mut locks = Vec::new();
    if !exists(slot)? {
        return Ok(Some(locks));
    }
    for id in dir_names(slot)? {
        let path = slot.join(id).join(LEASE);
        let file = match OpenOptions::new()
            .write(true)
            .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
            .open(&path)
        {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
            Err(error) => return Err(Error::io("open", &path)(error)),
        };
        match file.try_lock() {
            Ok(()) => locks.push(file),
            Err(std::fs::TryLockError::WouldBlock) => return Ok(None),
            Err(std::fs::TryLockError::Error(error)) => {
                return Err(Error::io("lock", &path)(error));
            }
        }
    }
    Ok(Some(locks))
}

/// Whether `path` (not followed) is the file `held` describes.
fn same_file(path: &Path, held: &std::fs::Metadata) -> Result<bool> {
    use std::os::unix::fs::MetadataExt;
    #[expect(
        clippy::disallowed_methods,
        reason = "the collector owns symlink inspection"
    )]
    let meta = std::fs::symlink_metadata(path);
    match meta {
        Ok(meta) => Ok(meta.ino() == held.ino() && meta.dev() == held.dev()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(error) => Err(Error::io("inspect", path)(error)),
    }
}

//! The store's small settings files (such as `marketplaces.json`): bounded reads, and changes
//! under the store's exclusive lock written atomically.

use nix::fcntl::FlockArg;

use super::{Store, random_name, rename, sync_dir, write_file};
use crate::error::{Error, Result};
use crate::walk::{open_nofollow, read_file_bounded};

impl Store {
    /// Reads the store's small settings file `name` (a plain file name in the store's
    /// directory, such as `marketplaces.json`): `None` when it does not exist. At most
    /// `max_bytes` are read; a larger file is [`Error::SettingsTooLarge`].
    pub fn read_settings(&self, name: &str, max_bytes: u64) -> Result<Option<Vec<u8>>> {
        let _lock = self.lock(FlockArg::LockShared)?;
        self.read_settings_unlocked(name, max_bytes)
    }

    fn read_settings_unlocked(&self, name: &str, max_bytes: u64) -> Result<Option<Vec<u8>>> {
        check_settings_name(name)?;
        let path = self.dir.join(name);
        let file = match open_nofollow(&path) {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(Error::io("open", &path)(error)),
        };
        let bytes = read_file_bounded(file, max_bytes).map_err(Error::io("read", &path))?;
        if bytes.len() as u64 > max_bytes {
            return Err(Error::SettingsTooLarge {
                path,
                limit: max_bytes,
            });
        }
        Ok(Some(bytes))
    }

    /// Replaces the settings file `name` with what `change` makes of its current bytes, under
    /// the store's exclusive lock (so two processes never lose each other's change) and
    /// atomically (temporary file, fsync, rename, directory fsync). `change` returning `Err`
    /// writes nothing and hands the error back inside `Ok`. New contents over `max_bytes` are
    /// refused like an oversized file.
    pub fn update_settings<E>(
        &self,
        name: &str,
        max_bytes: u64,
        change: impl FnOnce(Option<&[u8]>) -> std::result::Result<Vec<u8>, E>,
    ) -> Result<std::result::Result<(), E>> {
        let _lock = self.lock(FlockArg::LockExclusive)?;
        let current = self.read_settings_unlocked(name, max_bytes)?;
        let bytes = match change(current.as_deref()) {
            Ok(bytes) => bytes,
            Err(error) => return Ok(Err(error)),
        };
        let path = self.dir.join(name);
        if bytes.len() as u64 > max_bytes {
            return Err(Error::SettingsTooLarge {
                path,
                limit: max_bytes,
            });
        }
        let temp = self.dir.join(format!(".{name}.{}", random_name()));
        if let Err(error) = write_file(&temp, &bytes, 0o600) {
            let _ignored = std::fs::remove_file(&temp);
            return Err(error);
        }
        if let Err(error) = rename(&temp, &path) {
            let _ignored = std::fs::remove_file(&temp);
            return Err(error);
        }
        sync_dir(&self.dir)?;
        Ok(Ok(()))
    }
}

/// A settings file is a plain file name in the store's directory, never one of its own entries.
fn check_settings_name(name: &str) -> Result<()> {
    if name.is_empty() || name.starts_with('.') || name.contains(['/', '\\', '\0']) {
        return Err(Error::io("name", name)(std::io::Error::other(
            "a settings file is a plain file name in the store",
        )));
    }
    Ok(())
}

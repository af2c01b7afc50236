//! The crate's only file access: atomic owner-only writes, the cross-process lock, reads
//! that never modify anything.
#![expect(
    clippy::disallowed_methods,
    reason = "this module is c2-policy's file IO"
)]

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::Error;

fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.to_path_buf();
    move |source| Error::Io {
        action,
        path,
        source,
    }
}

fn owner_only(options: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(options, 0o600);
    options
}

fn create_dir(dir: &Path) -> Result<(), Error> {
    fs::create_dir_all(dir).map_err(io("create", dir))
}

/// Holds the store's exclusive lock until dropped; blocks while another process holds it.
pub(crate) fn lock(dir: &Path) -> Result<File, Error> {
    create_dir(dir)?;
    let path = dir.join("policy.lock");
    let file = owner_only(
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false),
    )
    .open(&path)
    .map_err(io("open", &path))?;
    file.lock().map_err(io("lock", &path))?;
    Ok(file)
}

/// Replaces `path` so that a reader (or a crash at any instant) sees the old bytes or the new
/// ones, never a mixture. Callers hold the lock, so one temporary name per target suffices.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let dir = path.parent().unwrap_or(Path::new("."));
    create_dir(dir)?;
    let (temp, mut file) = create_temp(dir, path)?;
    // A temporary left behind by a crash keeps its old mode; `mode` only applies on creation.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(fs::Permissions::from_mode(0o600))
            .map_err(io("restrict", &temp))?;
    }
    file.write_all(bytes).map_err(io("write", &temp))?;
    file.sync_all().map_err(io("sync", &temp))?;
    drop(file);
    fs::rename(&temp, path).map_err(io("replace", path))?;
    sync_dir(dir)
}

/// Replaces `path` atomically (temporary, rename) without flushing to disk: for the store
/// generation, which readers only compare for change. The caller holds the lock.
pub(crate) fn replace(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let (temp, mut file) = create_temp(dir, path)?;
    file.write_all(bytes).map_err(io("write", &temp))?;
    drop(file);
    fs::rename(&temp, path).map_err(io("replace", path))
}

/// Creates (or truncates) the one temporary a replace of `path` in `dir` writes first.
fn create_temp(dir: &Path, path: &Path) -> Result<(PathBuf, File), Error> {
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy())
        .unwrap_or_default();
    let temp = dir.join(format!(".{name}.tmp"));
    let file = owner_only(OpenOptions::new().write(true).create(true).truncate(true))
        .open(&temp)
        .map_err(io("create", &temp))?;
    Ok((temp, file))
}

fn sync_dir(dir: &Path) -> Result<(), Error> {
    File::open(dir)
        .and_then(|dir| dir.sync_all())
        .map_err(io("sync", dir))
}

/// Renames an unusable file to `<name>.corrupt-<unix-ms>` so the next write cannot destroy it.
pub(crate) fn move_aside(path: &Path) -> Result<PathBuf, Error> {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_millis())
        .unwrap_or(0);
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy())
        .unwrap_or_default();
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut target = dir.join(format!("{name}.corrupt-{millis}"));
    let mut attempt = 1;
    while target.exists() {
        target = dir.join(format!("{name}.corrupt-{millis}-{attempt}"));
        attempt += 1;
    }
    fs::rename(path, &target).map_err(io("move aside", path))?;
    sync_dir(dir)?;
    Ok(target)
}

/// Removes `path`; a missing file is already removed. The caller holds the lock.
pub(crate) fn remove(path: &Path) -> Result<(), Error> {
    match fs::remove_file(path) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
            Err(io("remove", path)(error))
        }
        _ => sync_dir(path.parent().unwrap_or(Path::new("."))),
    }
}

/// What reading one file found.
#[derive(Debug)]
pub(crate) enum Read {
    Missing,
    Bytes(Vec<u8>),
    Unreadable(String),
}

pub(crate) fn read(path: &Path) -> Read {
    match fs::read(path) {
        Ok(bytes) => Read::Bytes(bytes),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Read::Missing,
        Err(error) => Read::Unreadable(error.to_string()),
    }
}

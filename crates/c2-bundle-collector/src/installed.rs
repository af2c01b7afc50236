//! Reading files of an installed bundle and making its data directories: the host's only file
//! access to a bundle after install goes through here, bounded and without following links.

use std::io::{Error as IoError, ErrorKind};
use std::path::{Path, PathBuf};

use crate::walk::{SubdirectoryRefusal, read_contained_file};

/// Reads the text file `rel` (`/`-separated, relative) of the installed bundle at `dir`,
/// bounded by `max_bytes` and without following any symlink (an installed bundle holds none:
/// the collector refuses them before install). The error is the operating system's for a
/// missing or unreadable file; a symlink, a non-regular file, a file past `max_bytes` or one
/// that is not UTF-8 is `InvalidData` naming why.
pub fn read_installed_file(dir: &Path, rel: &str, max_bytes: u64) -> std::io::Result<String> {
    let bytes = match read_contained_file(dir, rel, max_bytes) {
        Ok(bytes) => bytes,
        Err(SubdirectoryRefusal::Missing(_)) => {
            // Reopen through the plain path only to report the operating system's own reason.
            return Err(open_error(&dir.join(rel)));
        }
        Err(refusal) => return Err(IoError::new(ErrorKind::InvalidData, refusal.to_string())),
    };
    if bytes.len() as u64 > max_bytes {
        return Err(IoError::new(
            ErrorKind::InvalidData,
            format!("it is larger than the {max_bytes}-byte file limit"),
        ));
    }
    String::from_utf8(bytes)
        .map_err(|_| IoError::new(ErrorKind::InvalidData, "stream did not contain valid UTF-8"))
}

/// The error opening `path` gives, for a file [`read_contained_file`] found missing.
fn open_error(path: &Path) -> IoError {
    match crate::walk::open_nofollow(path) {
        Err(error) => error,
        Ok(_) => IoError::new(ErrorKind::NotFound, "the file changed while it was read"),
    }
}

/// The data directory of a bundle instance: `<plugins-dir>/.data/<id>` for the user instance,
/// `<plugins-dir>/.data/<id>/projects/<hash>` for a project's (`project_hash` is the
/// project's BLAKE3 hash).
pub fn data_dir(plugins_dir: &Path, installed_id: &str, project_hash: Option<&str>) -> PathBuf {
    let base = plugins_dir.join(".data").join(installed_id);
    match project_hash {
        None => base,
        Some(hash) => base.join("projects").join(hash),
    }
}

/// Creates the data directory `path` of an installed bundle (and its parents) if it is
/// missing. The layout under the plugins directory is the host's; making it is the store's.
#[expect(
    clippy::disallowed_methods,
    reason = "the collector owns the plugin store's directories, data directories included"
)]
pub fn ensure_data_dir(path: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(path)
}

/// Removes the data directory `path` of an uninstalled bundle with everything in it; a missing
/// one is already gone. A symlink at `path` is removed as a link, never followed.
#[expect(
    clippy::disallowed_methods,
    reason = "the collector owns the plugin store's directories, data directories included"
)]
pub fn remove_data_dir(path: &Path) -> std::io::Result<()> {
    let result = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(error) => Err(error),
    };
    match result {
        Err(error) if error.kind() == ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

//! The one-service-per-directory lock: `<plugins-dir>/.serve.lock`, held with an exclusive
//! advisory lock for the service's whole life and holding its pid, so a second `serve` on the
//! same directory can say which process to stop. The kernel drops the lock when the process
//! ends, however it ends, so a stale file never blocks a new service. The file is opened like
//! every store file: a symbolic link is never followed, and only a regular file with one link,
//! created private, is written, so a planted link cannot make the service truncate another file.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use nix::fcntl::OFlag;

use crate::Error;

/// The lock file's name inside the plugins directory (a dot name is never a bundle id).
pub const LOCK_FILE: &str = ".serve.lock";

/// The held lock; released when dropped or when the process ends.
#[derive(Debug)]
pub struct ServiceLock {
    _file: File,
    /// The lock file.
    pub path: PathBuf,
}

/// Takes the lock of `dir` (which must exist) and writes this process's pid into it, or
/// says which service already holds it ([`Error::ServiceRunning`]).
#[expect(
    clippy::disallowed_methods,
    reason = "the relay's lock file is its own: it holds the service's pid"
)]
pub fn acquire_lock(dir: &Path) -> Result<ServiceLock, Error> {
    let path = dir.join(LOCK_FILE);
    let io = |action: &'static str, source: std::io::Error| Error::Lock {
        action,
        path: path.clone(),
        source,
    };
    let refused = |why: &str| io("open", std::io::Error::other(why.to_owned()));
    // No link is followed (a planted symlink is ELOOP, also when dangling), and a FIFO does
    // not block the open.
    let flags = OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(flags.bits())
        .open(&path)
        .map_err(|e| match e.raw_os_error() {
            Some(code) if code == nix::errno::Errno::ELOOP as i32 => {
                refused("it is a symbolic link, which is never followed; remove it")
            }
            _ => io("open", e),
        })?;
    let meta = file.metadata().map_err(|e| io("open", e))?;
    if !meta.is_file() {
        return Err(refused("it is not a regular file; remove it"));
    }
    if meta.nlink() > 1 {
        return Err(refused(
            "it has another hard link, so writing it would change another file; remove it",
        ));
    }
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let mut text = String::new();
            let _ = file.read_to_string(&mut text);
            let pid = text.trim().parse::<u32>().ok();
            let holder = match pid {
                Some(pid) => format!("pid {pid}"),
                None => "another process".to_owned(),
            };
            return Err(Error::ServiceRunning {
                dir: dir.to_owned(),
                holder,
                pid,
            });
        }
        Err(TryLockError::Error(error)) => return Err(io("lock", error)),
    }
    file.set_len(0).map_err(|e| io("write", e))?;
    file.seek(SeekFrom::Start(0)).map_err(|e| io("write", e))?;
    writeln!(file, "{}", std::process::id()).map_err(|e| io("write", e))?;
    file.flush().map_err(|e| io("write", e))?;
    Ok(ServiceLock { _file: file, path })
}

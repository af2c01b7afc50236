//! The one-service-per-directory lock: `<plugins-dir>/.serve.lock`, held with an exclusive
//! advisory lock for the service's whole life and holding its pid, so a second `serve` on the
//! same directory can say which process to stop. The kernel drops the lock when the process
//! ends, however it ends, so a stale file never blocks a new service.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

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
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| io("open", e))?;
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

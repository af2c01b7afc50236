//! The one-service-per-directory lock: `<plugins-dir>/.serve.lock`, held with an exclusive
//! advisory lock for the service's whole life and holding its pid, so a second `serve` on the
//! same directory can say which process to stop. The kernel drops the lock when the process
//! ends, however it ends, so a stale file never blocks a new service.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::output::Failure;

/// The lock file's name inside the plugins directory (a dot name is never a bundle id).
pub(crate) const LOCK_FILE: &str = ".serve.lock";

/// The held lock; released when dropped or when the process ends.
#[derive(Debug)]
pub(crate) struct ServiceLock {
    _file: File,
    pub(crate) path: PathBuf,
}

/// Takes the lock of `dir` (which must exist) and writes this process's pid into it, or
/// explains which service already holds it.
pub(crate) fn acquire(dir: &Path) -> Result<ServiceLock, Failure> {
    let path = dir.join(LOCK_FILE);
    let io = |what: &str, error: std::io::Error| {
        Failure::environment(
            "io",
            format!("cannot {what} the service lock {}: {error}", path.display()),
        )
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
            let holder = match text.trim().parse::<u32>() {
                Ok(pid) => format!("pid {pid}"),
                Err(_) => "another process".to_owned(),
            };
            return Err(Failure::environment(
                "service_running",
                format!(
                    "a `c2-plugins serve` ({holder}) already serves {}: connect to it, or stop it first (one service per plugins directory)",
                    dir.display()
                ),
            )
            .with_detail("pid", text.trim().parse::<u32>().ok().into()));
        }
        Err(TryLockError::Error(error)) => return Err(io("lock", error)),
    }
    file.set_len(0).map_err(|e| io("write", e))?;
    file.seek(SeekFrom::Start(0)).map_err(|e| io("write", e))?;
    writeln!(file, "{}", std::process::id()).map_err(|e| io("write", e))?;
    file.flush().map_err(|e| io("write", e))?;
    Ok(ServiceLock { _file: file, path })
}

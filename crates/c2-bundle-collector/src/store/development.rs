//! Development marks: `<dir>/.development/<id>.json` says that the installed bundle `<id>` is
//! a development bundle (a working directory installed by developer mode), and
//! `<dir>/.development/<id>.hold` carries the lease of the process that holds it.
//!
//! The holder keeps an exclusive lock on the hold file for as long as developer mode runs; the
//! kernel drops that lock when the process ends, however it ends. So a mark whose hold is not
//! locked belongs to a process that is gone (it crashed or was killed), and the next host that
//! opens the store removes the bundle ([`Store::orphaned_development`]). Nothing here runs,
//! watches or reloads anything: that is the host's and the watcher's.
#![expect(
    clippy::disallowed_methods,
    reason = "development marks are store files"
)]

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{InstallRequest, Store, check_id, exists, random_name, rename, sync_dir, write_file};
use crate::bundle::CollectedBundle;
use crate::error::{Error, Result};
use crate::walk::{open_nofollow, read_file_bounded};

/// `<dir>/.development`: one mark and one hold file per development bundle.
const DEVELOPMENT: &str = ".development";
/// A mark is a few paths and one reload's diagnostics.
const MAX_MARK_BYTES: u64 = 1024 * 1024;

/// What the store records about one development bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DevelopmentMark {
    /// The installed id of the development bundle.
    pub id: String,
    /// The working directory it is installed from (the directory the user named).
    pub dir: PathBuf,
    /// The process that holds it.
    pub pid: u32,
    /// When developer mode took it, in milliseconds since the Unix epoch.
    pub since_ms: u64,
    /// The outcome of the last reload, if any.
    pub last_reload: Option<ReloadRecord>,
}

impl DevelopmentMark {
    /// The mark of `bundle`, collected from the working directory `dir` and to be installed
    /// with `request`, held by this process. Refused with [`Error::InvalidBundle`] when the
    /// bundle does not validate (it has no installed id then).
    pub fn new(bundle: &CollectedBundle, request: &InstallRequest, dir: &Path) -> Result<Self> {
        let manifest = bundle.manifest.as_ref().filter(|_| bundle.is_valid());
        let Some(manifest) = manifest else {
            return Err(Error::InvalidBundle {
                errors: bundle.error_count(),
            });
        };
        Ok(Self {
            id: crate::digest::installed_id(&manifest.name, &request.source),
            dir: std::path::absolute(dir).map_err(Error::io("resolve", dir))?,
            pid: std::process::id(),
            since_ms: now_ms(),
            last_reload: None,
        })
    }
}

/// Milliseconds since the Unix epoch.
fn now_ms() -> u64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    since.map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl ReloadRecord {
    /// The outcome of collecting `bundle` again: valid or not, and its diagnostics as text
    /// (`error[code] file: message`).
    pub fn of(bundle: &CollectedBundle) -> Self {
        let diagnostics = bundle
            .diagnostics
            .iter()
            .map(|d| {
                let severity = if d.is_error() { "error" } else { "warning" };
                let file = d.file.as_deref().unwrap_or("bundle");
                format!("{severity}[{}] {file}: {}", d.code, d.message)
            })
            .collect();
        Self {
            at_ms: now_ms(),
            ok: bundle.is_valid(),
            diagnostics,
        }
    }
}

/// The outcome of one reload of a development bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReloadRecord {
    /// When it ended, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// Whether the new content validated and replaced the old one.
    pub ok: bool,
    /// The diagnostics of the collected working directory (why it was refused, or warnings).
    pub diagnostics: Vec<String>,
}

/// One development bundle as [`Store::development`] finds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DevelopmentEntry {
    /// Its mark.
    #[serde(flatten)]
    pub mark: DevelopmentMark,
    /// Whether the holding process is still alive (it holds the lease).
    pub held: bool,
}

/// Developer mode of a store: its development bundles and the latest reload among them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeveloperStatus {
    /// Whether the store has any development bundle.
    pub enabled: bool,
    /// Whether any development bundle's holder is alive (and so watching its directory).
    pub watching: bool,
    /// The plugins directory.
    pub plugins_dir: PathBuf,
    /// Every development bundle, sorted by id.
    pub bundles: Vec<DevelopmentEntry>,
    /// The most recent reload of any of them.
    pub last_reload: Option<LastReload>,
}

/// The most recent reload in a store: which bundle, and its outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LastReload {
    /// The reloaded bundles' installed ids.
    pub plugins: Vec<String>,
    /// The outcome.
    #[serde(flatten)]
    pub record: ReloadRecord,
}

/// The lease a developer-mode process holds on its development bundle; dropping it (or the
/// process ending) releases it, and the next open of the store then cleans the bundle up.
#[derive(Debug)]
pub struct DevelopmentHold {
    _file: File,
    id: String,
}

impl DevelopmentHold {
    /// The held bundle's installed id.
    pub fn id(&self) -> &str {
        &self.id
    }
}

impl Store {
    fn development_dir(&self) -> PathBuf {
        self.dir.join(DEVELOPMENT)
    }

    /// Marks `mark.id` as a development bundle held by this process. Refused with
    /// [`Error::DevelopmentHeld`] while another live process holds it.
    pub fn hold_development(&self, mark: &DevelopmentMark) -> Result<DevelopmentHold> {
        check_id(&mark.id)?;
        let dir = self.development_dir();
        if !exists(&dir)? {
            std::fs::create_dir_all(&dir).map_err(Error::io("create", &dir))?;
        }
        let path = dir.join(format!("{}.hold", mark.id));
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
            .open(&path)
            .map_err(Error::io("open", &path))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let pid = self.read_mark(&mark.id).ok().flatten().map(|m| m.pid);
                return Err(Error::DevelopmentHeld {
                    id: mark.id.clone(),
                    pid,
                });
            }
            Err(std::fs::TryLockError::Error(error)) => {
                return Err(Error::io("lock", &path)(error));
            }
        }
        self.write_mark(mark)?;
        Ok(DevelopmentHold {
            _file: file,
            id: mark.id.clone(),
        })
    }

    /// Records the outcome of a reload in the bundle's mark and returns the mark.
    pub fn record_reload(&self, id: &str, record: ReloadRecord) -> Result<DevelopmentMark> {
        let mut mark = self
            .read_mark(id)?
            .ok_or_else(|| Error::NotInstalled { id: id.to_owned() })?;
        mark.last_reload = Some(record);
        self.write_mark(&mark)?;
        Ok(mark)
    }

    /// The marks of `id` (refused with [`Error::NotInstalled`] when it has none), or of every
    /// development bundle.
    pub fn development_marks(&self, id: Option<&str>) -> Result<Vec<DevelopmentMark>> {
        let marks: Vec<_> = self
            .development()?
            .into_iter()
            .map(|entry| entry.mark)
            .filter(|mark| id.is_none_or(|id| id == mark.id))
            .collect();
        match id {
            Some(id) if marks.is_empty() => Err(Error::NotInstalled { id: id.to_owned() }),
            _ => Ok(marks),
        }
    }

    /// Removes the bundle's mark and hold file (the bundle itself stays: the host uninstalls
    /// it).
    pub fn release_development(&self, id: &str) -> Result<()> {
        check_id(id)?;
        let dir = self.development_dir();
        for path in [
            dir.join(format!("{id}.json")),
            dir.join(format!("{id}.hold")),
        ] {
            match std::fs::remove_file(&path) {
                Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                    return Err(Error::io("remove", &path)(error));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Every development bundle, sorted by id, with whether its holder is alive.
    pub fn development(&self) -> Result<Vec<DevelopmentEntry>> {
        let dir = self.development_dir();
        if !exists(&dir)? {
            return Ok(Vec::new());
        }
        let mut entries = Vec::new();
        for name in super::dir_names(&dir)? {
            let Some(id) = name.strip_suffix(".json") else {
                continue;
            };
            if check_id(id).is_err() {
                continue;
            }
            let Some(mark) = self.read_mark(id)? else {
                continue;
            };
            let held = is_held(&dir.join(format!("{id}.hold")))?;
            entries.push(DevelopmentEntry { mark, held });
        }
        entries.sort_by(|a, b| a.mark.id.cmp(&b.mark.id));
        Ok(entries)
    }

    /// The store's developer mode: [`Store::development`] summed up.
    pub fn developer_status(&self) -> Result<DeveloperStatus> {
        let bundles = self.development()?;
        let last_reload = bundles
            .iter()
            .filter_map(|entry| Some((&entry.mark.id, entry.mark.last_reload.as_ref()?)))
            .max_by_key(|(_, record)| record.at_ms)
            .map(|(id, record)| LastReload {
                plugins: vec![id.clone()],
                record: record.clone(),
            });
        Ok(DeveloperStatus {
            enabled: !bundles.is_empty(),
            watching: bundles.iter().any(|entry| entry.held),
            plugins_dir: self.dir.clone(),
            bundles,
            last_reload,
        })
    }

    /// The ids of development bundles whose holder is gone: a host opening the store removes
    /// them.
    pub fn orphaned_development(&self) -> Result<Vec<String>> {
        Ok(self
            .development()?
            .into_iter()
            .filter(|entry| !entry.held)
            .map(|entry| entry.mark.id)
            .collect())
    }

    fn read_mark(&self, id: &str) -> Result<Option<DevelopmentMark>> {
        check_id(id)?;
        let path = self.development_dir().join(format!("{id}.json"));
        if !exists(&path)? {
            return Ok(None);
        }
        let file = open_nofollow(&path).map_err(Error::io("open", &path))?;
        let bytes = read_file_bounded(file, MAX_MARK_BYTES).map_err(Error::io("read", &path))?;
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|error| Error::CorruptRecord {
                path: path.clone(),
                message: error.to_string(),
            })
    }

    /// Written to a fresh name and renamed over the mark, so a reader sees the old or the new.
    fn write_mark(&self, mark: &DevelopmentMark) -> Result<()> {
        let dir = self.development_dir();
        let path = dir.join(format!("{}.json", mark.id));
        let staged = dir.join(format!(".{}.tmp", random_name()));
        let bytes = serde_json::to_vec_pretty(mark).map_err(|error| Error::CorruptRecord {
            path: path.clone(),
            message: error.to_string(),
        })?;
        write_file(&staged, &bytes, 0o600)?;
        rename(&staged, &path)?;
        sync_dir(&dir)
    }
}

/// Whether a live process holds the lock on `path` (a missing file is held by nobody).
fn is_held(path: &Path) -> Result<bool> {
    // Read-only: a lock needs no write access, so a read-only store is read too.
    let file = match OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NOFOLLOW.bits())
        .open(path)
    {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(error) => return Err(Error::io("open", path)(error)),
    };
    match file.try_lock_shared() {
        Ok(()) => Ok(false),
        Err(std::fs::TryLockError::WouldBlock) => Ok(true),
        Err(std::fs::TryLockError::Error(error)) => Err(Error::io("lock", path)(error)),
    }
}

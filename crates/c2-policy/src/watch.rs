//! Many hosts, one store: the store generation and the watcher that tells a host another
//! process committed a change.
//!
//! `store.generation` (beside `policy.json`) holds a counter bumped on every committed change:
//! by [`crate::PolicyStore`] under `policy.lock` whenever it writes `policy.json`, and by the
//! host (through [`bump_generation`]) right after every install, replace or uninstall. A
//! [`StoreWatch`] wakes its host when a change lands. With inotify (the default) it blocks in
//! `poll(2)` on the directory's notifications and wakes only for a committed change: the
//! rename of `policy.json` or `store.generation` into place, or a bundle directory arriving or
//! leaving; lock files, temporaries, staging and trash are ignored, so an idle host never
//! wakes. Without inotify (disabled by option, or the per-user instance limit reached) it
//! polls a cheap fingerprint (the generation, `policy.json`'s inode, size and mtime, the
//! directory's mtime) every [`WatchOptions::poll_interval`].

use std::ffi::{OsStr, OsString};
use std::io::{PipeReader, PipeWriter};
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::thread::JoinHandle;
use std::time::Duration;

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, WatchDescriptor};

use crate::error::Error;
use crate::fsio;
use crate::store::PRIMARY_FILE;

/// The store generation counter's file name, in the plugins directory.
pub const GENERATION_FILE: &str = "store.generation";

/// The store generation of `plugins_dir`: 0 when there is none yet (or it is unreadable,
/// which only ever makes a watcher look again).
pub fn read_generation(plugins_dir: &Path) -> u64 {
    match fsio::read(&plugins_dir.join(GENERATION_FILE)) {
        fsio::Read::Bytes(bytes) => std::str::from_utf8(&bytes)
            .ok()
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or(0),
        _ => 0,
    }
}

/// Bumps the store generation under `policy.lock` and returns the new value. Call it after
/// every committed change to the bundle store; policy writes bump it themselves.
pub fn bump_generation(plugins_dir: &Path) -> Result<u64, Error> {
    let _lock = fsio::lock(plugins_dir)?;
    bump_generation_locked(plugins_dir)
}

/// [`bump_generation`] for a caller that holds `policy.lock`.
pub(crate) fn bump_generation_locked(plugins_dir: &Path) -> Result<u64, Error> {
    let next = read_generation(plugins_dir).wrapping_add(1);
    fsio::replace(
        &plugins_dir.join(GENERATION_FILE),
        format!("{next}\n").as_bytes(),
    )?;
    Ok(next)
}

/// How a [`StoreWatch`] notices changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchOptions {
    /// Use inotify (no wake-up while idle). When false, or when inotify is unavailable, the
    /// watcher polls.
    pub notifications: bool,
    /// The polling period of the fallback (500 ms: a change is seen well within 1 s).
    pub poll_interval: Duration,
}

impl Default for WatchOptions {
    fn default() -> Self {
        Self {
            notifications: true,
            poll_interval: Duration::from_millis(500),
        }
    }
}

/// What a running [`StoreWatch`] uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum WatchMode {
    /// inotify on the plugins directory: wakes only for a change.
    Notifications,
    /// A fingerprint checked every [`WatchOptions::poll_interval`].
    Polling,
}

/// A thread that calls back whenever another process (or this one) commits a change to the
/// store at a plugins directory. Stopped and joined on drop. It ends by itself when the
/// directory is deleted.
#[derive(Debug)]
pub struct StoreWatch {
    mode: WatchMode,
    stop: Option<PipeWriter>,
    thread: Option<JoinHandle<()>>,
}

impl StoreWatch {
    /// Starts watching `plugins_dir` (which must exist); `on_change` runs on the watcher's
    /// thread, so it should only signal someone (it may be called for a change that turns out
    /// to change nothing).
    pub fn start(
        plugins_dir: &Path,
        options: &WatchOptions,
        on_change: impl Fn() + Send + 'static,
    ) -> Result<Self, Error> {
        Self::start_with(plugins_dir, None, options, on_change)
    }

    /// [`StoreWatch::start`] that also wakes when `managed`, the managed policy file (see
    /// [`crate::PolicyOptions::managed_policy`]), is written, replaced, created or removed. Its
    /// directory must exist when the watch starts for notifications to cover it; the polling
    /// fallback looks at the file itself.
    pub fn start_with(
        plugins_dir: &Path,
        managed: Option<&Path>,
        options: &WatchOptions,
        on_change: impl Fn() + Send + 'static,
    ) -> Result<Self, Error> {
        let dir = plugins_dir.to_path_buf();
        let managed = managed.map(Path::to_path_buf);
        let inotify = options
            .notifications
            .then(|| notifications(&dir, managed.as_deref()))
            .flatten();
        let mode = if inotify.is_some() {
            WatchMode::Notifications
        } else {
            WatchMode::Polling
        };
        let (reader, writer) = std::io::pipe().map_err(|source| Error::Io {
            action: "create a pipe for",
            path: dir.clone(),
            source,
        })?;
        let interval = options.poll_interval;
        let thread = std::thread::Builder::new()
            .name("c2-store-watch".to_owned())
            .spawn(move || {
                let watched = Watched {
                    dir: &dir,
                    managed: managed.as_deref(),
                };
                run(&watched, inotify, &reader, interval, &on_change);
            })
            .map_err(|source| Error::Io {
                action: "start a watcher thread for",
                path: plugins_dir.to_path_buf(),
                source,
            })?;
        Ok(Self {
            mode,
            stop: Some(writer),
            thread: Some(thread),
        })
    }

    /// Whether the watcher runs on notifications or polls.
    pub fn mode(&self) -> WatchMode {
        self.mode
    }

    /// Tells the watcher thread to stop, without waiting for it: it calls `on_change` no more
    /// once it sees the request, and dropping the watcher then waits for it to end. Closing an
    /// inotify instance waits for the kernel's grace period (milliseconds), so a caller with
    /// other work to do stops first and drops last.
    pub fn stop(&mut self) {
        // Closing the write end wakes the thread's poll with a hang-up.
        drop(self.stop.take());
    }
}

impl Drop for StoreWatch {
    fn drop(&mut self) {
        self.stop();
        if let Some(thread) = self.thread.take()
            && thread.thread().id() != std::thread::current().id()
        {
            let _ignored = thread.join();
        }
    }
}

/// What one watcher looks at: the plugins directory and, optionally, the managed policy file.
struct Watched<'a> {
    dir: &'a Path,
    managed: Option<&'a Path>,
}

/// The inotify instance, and the watch on the managed policy file's directory with the
/// file's name.
type Notifications = (Inotify, Option<(WatchDescriptor, OsString)>);

fn notifications(dir: &Path, managed: Option<&Path>) -> Option<Notifications> {
    let inotify = Inotify::init(InitFlags::IN_CLOEXEC | InitFlags::IN_NONBLOCK)
        .map_err(|errno| tracing::debug!(%errno, "inotify unavailable, polling the store"))
        .ok()?;
    let mask = AddWatchFlags::IN_CREATE
        | AddWatchFlags::IN_DELETE
        | AddWatchFlags::IN_MOVED_FROM
        | AddWatchFlags::IN_MOVED_TO
        | AddWatchFlags::IN_DELETE_SELF
        | AddWatchFlags::IN_MOVE_SELF
        | AddWatchFlags::IN_ONLYDIR;
    inotify
        .add_watch(dir, mask)
        .map_err(|errno| tracing::debug!(%errno, dir = %dir.display(), "cannot watch the store, polling it"))
        .ok()?;
    let managed = managed.and_then(|path| {
        let (parent, name) = (path.parent()?, path.file_name()?);
        let mask = AddWatchFlags::IN_CLOSE_WRITE
            | AddWatchFlags::IN_CREATE
            | AddWatchFlags::IN_DELETE
            | AddWatchFlags::IN_MOVED_FROM
            | AddWatchFlags::IN_MOVED_TO
            | AddWatchFlags::IN_ONLYDIR;
        let parent = if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        };
        inotify
            .add_watch(parent, mask)
            .map_err(|errno| tracing::debug!(%errno, path = %path.display(), "cannot watch the managed policy file"))
            .ok()
            .map(|wd| (wd, name.to_os_string()))
    });
    Some((inotify, managed))
}

/// Whether a directory entry's change can be a committed change of the store.
fn relevant(name: &OsStr) -> bool {
    let name = name.to_string_lossy();
    name == PRIMARY_FILE
        || name == GENERATION_FILE
        || !(name.starts_with('.') || name.starts_with("policy.") || name.starts_with("store."))
}

#[derive(Debug, PartialEq, Eq)]
struct Fingerprint {
    generation: u64,
    policy: Option<(u64, u64, i64, i64)>,
    dir: Option<(i64, i64)>,
    managed: Option<(u64, u64, i64, i64)>,
}

fn file_stamp(path: &Path) -> Option<(u64, u64, i64, i64)> {
    std::fs::metadata(path)
        .ok()
        .map(|m| (m.ino(), m.len(), m.mtime(), m.mtime_nsec()))
}

fn fingerprint(watched: &Watched<'_>) -> Fingerprint {
    let dir = watched.dir;
    Fingerprint {
        generation: read_generation(dir),
        policy: file_stamp(&dir.join(PRIMARY_FILE)),
        dir: std::fs::metadata(dir)
            .ok()
            .map(|m| (m.mtime(), m.mtime_nsec())),
        managed: watched.managed.and_then(file_stamp),
    }
}

fn run(
    watched: &Watched<'_>,
    mut inotify: Option<Notifications>,
    stop: &PipeReader,
    interval: Duration,
    on_change: &dyn Fn(),
) {
    let poll_ms = u16::try_from(interval.as_millis().max(1)).unwrap_or(u16::MAX);
    let dir = watched.dir;
    let mut last = fingerprint(watched);
    loop {
        let timeout = if inotify.is_some() {
            PollTimeout::NONE
        } else {
            PollTimeout::from(poll_ms)
        };
        let (stopped, notified) = {
            let mut fds = vec![PollFd::new(stop.as_fd(), PollFlags::POLLIN)];
            if let Some((inotify, _)) = &inotify {
                fds.push(PollFd::new(inotify.as_fd(), PollFlags::POLLIN));
            }
            match poll(&mut fds, timeout) {
                Ok(_) | Err(Errno::EINTR) => {}
                Err(errno) => {
                    tracing::warn!(%errno, "store watcher cannot poll; stopping it");
                    return;
                }
            }
            let ready = |fd: &PollFd<'_>| fd.revents().is_some_and(|r| !r.is_empty());
            (ready(&fds[0]), fds.get(1).is_some_and(ready))
        };
        if stopped {
            return;
        }
        match &inotify {
            Some((watch, managed)) if notified => {
                let mut changed = false;
                let mut gone = false;
                loop {
                    match watch.read_events() {
                        Ok(events) => {
                            for event in events {
                                let flags = event.mask;
                                if let Some((wd, name)) = managed
                                    && event.wd == *wd
                                {
                                    changed |= event.name.as_deref() == Some(name.as_os_str());
                                    continue;
                                }
                                if flags.intersects(
                                    AddWatchFlags::IN_IGNORED
                                        | AddWatchFlags::IN_DELETE_SELF
                                        | AddWatchFlags::IN_MOVE_SELF,
                                ) {
                                    gone = true;
                                }
                                changed |= flags.contains(AddWatchFlags::IN_Q_OVERFLOW)
                                    || event.name.as_deref().is_some_and(relevant);
                            }
                        }
                        Err(Errno::EINTR) => {}
                        Err(_) => break,
                    }
                }
                if changed {
                    on_change();
                }
                if gone {
                    // The directory was deleted or moved: nothing more to watch.
                    inotify = None;
                    if !dir.is_dir() {
                        return;
                    }
                }
            }
            Some(_) => {}
            None => {
                let now = fingerprint(watched);
                if now != last {
                    last = now;
                    on_change();
                }
            }
        }
    }
}

use std::path::PathBuf;

/// Failures that stop an operation outright. A bundle that is merely invalid is not an
/// `Error`: its refusals are [`crate::Diagnostic`]s on the collected bundle.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A filesystem call failed.
    #[error("cannot {action} {}: {source}; check that the path exists and is readable", path.display())]
    Io {
        /// What was being done (`open`, `read`, `rename`, ...), as a verb.
        action: &'static str,
        /// The path it was done to.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A bundle root that is not a directory.
    #[error("{} is not a directory; select the bundle root directory that holds plugin.json", path.display())]
    NotADirectory {
        /// The path given as the bundle root.
        path: PathBuf,
    },
    /// A file given as an archive whose name or type is not a supported archive.
    #[error("{} is not a supported archive; use a .tar.gz, .tgz or .zip file", path.display())]
    UnsupportedArchive {
        /// The path given as the archive.
        path: PathBuf,
    },
    /// An archive given to a build without the `archive` feature.
    #[error("{} is an archive, but this build reads directories only (c2-bundle-collector without its `archive` feature); extract it and select the directory, or build with the feature", path.display())]
    ArchiveSupportNotBuilt {
        /// The path of the archive.
        path: PathBuf,
    },
    /// [`crate::Store::install`] was given a bundle with error diagnostics.
    #[error(
        "the bundle is invalid ({errors} error(s)); run validate to see the diagnostics and fix them"
    )]
    InvalidBundle {
        /// How many diagnostics are errors.
        errors: usize,
    },
    /// A file path in a bundle handed to the store is not a plain relative path (a bundle
    /// not built by this crate's collect functions).
    #[error(
        "refusing to write {path:?}: it is not a plain relative path; collect bundles with this crate"
    )]
    UnsafePath {
        /// The offending path.
        path: String,
    },
    /// No installed bundle has this id.
    #[error("no bundle named {id} is installed; run list to see the installed ids")]
    NotInstalled {
        /// The id asked for.
        id: String,
    },
    /// A string that cannot be an installed id: empty, hidden, longer than 255 bytes, or
    /// containing `/` or NUL.
    #[error("{id} is not a valid installed id; use an id printed by install or list")]
    InvalidId {
        /// The id asked for.
        id: String,
    },
    /// An `installed.json` that cannot be read or parsed.
    #[error("installed record {} is unreadable: {message}; reinstall the bundle", path.display())]
    CorruptRecord {
        /// The record's path.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// [`crate::apply_scaffold`] was asked for a scaffold the bundle does not have.
    #[error("the bundle has no scaffold named {name}; the inventory lists the available scaffolds")]
    UnknownScaffold {
        /// The scaffold name asked for.
        name: String,
    },
    /// A scaffold target that is not an existing, real directory.
    #[error("scaffold target {} must be an existing directory that is not a symlink", path.display())]
    InvalidTarget {
        /// The target given.
        path: PathBuf,
    },
    /// A scaffold would overwrite a file, escape its target or write through a symlink;
    /// nothing was written.
    #[error("scaffold not applied, nothing was written: {}; move the conflicting files away or pick another target", conflicts.join(", "))]
    ScaffoldConflict {
        /// One sentence per conflicting path (`<path> already exists`, ...).
        conflicts: Vec<String>,
    },
    /// A crash test (the `fault-injection` feature's `StoreOptions::inject_fault`) stopped the
    /// change after the named step. Always present, so a match on [`Error`] does not depend on
    /// the feature.
    #[error("injected fault at {0}; reopen the store to recover")]
    InjectedFault(&'static str),
    /// The stored files of an installed bundle no longer match its recorded digest, so what
    /// an update would change cannot be told.
    #[error("the stored files of {id} are not the ones installed; reinstall it from its source")]
    ContentChanged {
        /// The installed id.
        id: String,
    },
    /// A store settings file (the configured catalogs) is over its byte limit.
    #[error("{} is larger than its limit of {limit} bytes; remove entries from it or delete it", path.display())]
    SettingsTooLarge {
        /// The settings file.
        path: PathBuf,
        /// Its limit in bytes.
        limit: u64,
    },
    /// Another live process holds the bundle in developer mode.
    #[error("{id} is already held by developer mode{}", pid.map(|pid| format!(" in process {pid}")).unwrap_or_default())]
    DevelopmentHeld {
        /// The installed id.
        id: String,
        /// The holder's process id, when its mark is readable.
        pid: Option<u32>,
    },
}

impl Error {
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io {
            action,
            path,
            source,
        }
    }
}

/// This crate's `Result`, with [`Error`] as the default error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

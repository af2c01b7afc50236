use std::path::PathBuf;

use crate::store::FaultPoint;

/// Failures that stop an operation outright. A bundle that is merely invalid is not an
/// `Error`: its refusals are [`crate::Diagnostic`]s on the collected bundle.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot {action} {}: {source}; check that the path exists and is readable", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not a directory; select the bundle root directory that holds plugin.json", path.display())]
    NotADirectory { path: PathBuf },
    #[error("{} is not a supported archive; use a .tar.gz, .tgz or .zip file", path.display())]
    UnsupportedArchive { path: PathBuf },
    #[error("{} is an archive, but this build reads directories only (c2-bundle-collector without its `archive` feature); extract it and select the directory, or build with the feature", path.display())]
    ArchiveSupportNotBuilt { path: PathBuf },
    #[error(
        "the bundle is invalid ({errors} error(s)); run validate to see the diagnostics and fix them"
    )]
    InvalidBundle { errors: usize },
    #[error(
        "refusing to write {path:?}: it is not a plain relative path; collect bundles with this crate"
    )]
    UnsafePath { path: String },
    #[error("no bundle named {id} is installed; run list to see the installed ids")]
    NotInstalled { id: String },
    #[error("{id} is not a valid installed id; use an id printed by install or list")]
    InvalidId { id: String },
    #[error("installed record {} is unreadable: {message}; reinstall the bundle", path.display())]
    CorruptRecord { path: PathBuf, message: String },
    #[error("the bundle has no scaffold named {name}; the inventory lists the available scaffolds")]
    UnknownScaffold { name: String },
    #[error("scaffold target {} must be an existing directory that is not a symlink", path.display())]
    InvalidTarget { path: PathBuf },
    #[error("scaffold not applied, nothing was written: {}; move the conflicting files away or pick another target", conflicts.join(", "))]
    ScaffoldConflict { conflicts: Vec<String> },
    #[error("injected fault at {0:?}; reopen the store to recover")]
    InjectedFault(FaultPoint),
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

pub type Result<T, E = Error> = std::result::Result<T, E>;

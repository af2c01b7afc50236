//! Why a check could not run at all. Everything the bundle does wrong is a failed check item
//! instead.

use std::path::PathBuf;

/// A check that could not run: the bundle directory cannot be read, or a directory the check
/// needs cannot be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The bundle directory could not be collected.
    #[error(transparent)]
    Collect(#[from] c2_bundle_collector::Error),
    /// A filesystem operation of the check's own failed.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// What the check was doing.
        action: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

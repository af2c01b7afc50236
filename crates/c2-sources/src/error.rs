//! The crate's one error type and the kinds a caller matches on.

use std::fmt;
use std::path::PathBuf;

/// What went wrong, as a value to match on. [`SourceErrorKind::as_str`] is the stable
/// snake_case name a command line prints in JSON and a relay puts in `data.kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SourceErrorKind {
    /// A source that cannot be installed from.
    UnsupportedSource,
    /// A source that could make git, npm or the store do something else than fetch a bundle.
    UnsafeSource,
    /// Fetching a git source, or running `git`, failed.
    GitFailed,
    /// The catalog cannot be read or is not a valid `marketplace.json`.
    InvalidCatalog,
    /// The store's list of configured catalogs is unreadable.
    InvalidMarketplaces,
    /// A catalog with that name or location is already configured.
    DuplicateMarketplace,
    /// The configured list of catalogs is full.
    TooManyMarketplaces,
    /// No configured catalog has that name.
    UnknownMarketplace,
    /// No catalog was given and none is configured.
    NoMarketplace,
    /// No catalog lists the name.
    EntryNotFound,
    /// The catalog lists the entry as not available (Codex's `NOT_AVAILABLE`, a Claude entry
    /// that would supply or extend the manifest).
    EntryNotAvailable,
    /// Several catalogs list the name.
    AmbiguousEntry,
    /// The catalog lists the entry, but not at the version asked for.
    VersionNotFound,
    /// The fetched bundle's name, version or installed id is not the catalog entry's.
    CatalogMismatch,
    /// A pinned commit is not the commit checked out.
    CommitMismatch,
    /// An archive's SHA-256 is not the one the catalog declares.
    DigestMismatch,
    /// Downloading an archive failed.
    FetchFailed,
    /// `npm pack` failed or left no tarball.
    NpmFailed,
    /// The bundle was not installed from a catalog, so it has nothing to update from.
    NotFromCatalog,
    /// Reading a bundle or the store failed.
    StoreFailed,
    /// An npm tarball's sha512 integrity is not the recorded or reported one.
    IntegrityMismatch,
    /// A lock file that cannot be read: not JSON, another `lockVersion`, an unknown field, too
    /// large.
    InvalidLock,
    /// A filesystem operation of this crate's own failed.
    Io,
}

impl SourceErrorKind {
    /// The stable snake_case name (`unsafe_source`, `commit_mismatch`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UnsupportedSource => "unsupported_source",
            Self::UnsafeSource => "unsafe_source",
            Self::GitFailed => "git_failed",
            Self::InvalidCatalog => "invalid_catalog",
            Self::InvalidMarketplaces => "invalid_marketplaces",
            Self::DuplicateMarketplace => "duplicate_marketplace",
            Self::TooManyMarketplaces => "too_many_marketplaces",
            Self::UnknownMarketplace => "unknown_marketplace",
            Self::NoMarketplace => "no_marketplace",
            Self::EntryNotFound => "entry_not_found",
            Self::EntryNotAvailable => "entry_not_available",
            Self::AmbiguousEntry => "ambiguous_entry",
            Self::VersionNotFound => "version_not_found",
            Self::CatalogMismatch => "catalog_mismatch",
            Self::CommitMismatch => "commit_mismatch",
            Self::DigestMismatch => "digest_mismatch",
            Self::FetchFailed => "fetch_failed",
            Self::NpmFailed => "npm_failed",
            Self::NotFromCatalog => "not_from_catalog",
            Self::StoreFailed => "store_failed",
            Self::IntegrityMismatch => "integrity_mismatch",
            Self::InvalidLock => "invalid_lock",
            Self::Io => "io",
        }
    }
}

impl fmt::Display for SourceErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Everything parsing, fetching or a catalog operation can fail with. [`SourceError::kind`]
/// is the kind to match on; the message says what is wrong in this crate's terms and
/// [`SourceError::hint`] is the separate advice a command line shows.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// The text is no directory, archive, git source or catalog entry.
    #[error("{0}")]
    Unsupported(String),
    /// A source refused before anything ran (a ref or URL git would read as an option, a
    /// subdirectory through a symlink, a path out of the catalog's directory).
    #[error("{0}")]
    Unsafe(String),
    /// `git` failed, or the checkout is not the commit asked for.
    #[error("git: {0}")]
    Git(String),
    /// The catalog cannot be read or is invalid.
    #[error("{message}")]
    InvalidCatalog {
        /// What is wrong.
        message: String,
        /// The catalog's location when it was read but failed validation (the hint names it).
        invalid: Option<String>,
    },
    /// The store's `marketplaces.json` is unreadable.
    #[error("{0}")]
    InvalidMarketplaces(String),
    /// A catalog with the same name or location is configured.
    #[error("a catalog named `{name}` at {location} is already configured")]
    DuplicateMarketplace {
        /// The configured catalog's name.
        name: String,
        /// Its location.
        location: String,
    },
    /// The most catalogs allowed are configured.
    #[error("{max} catalogs are configured, the most allowed: remove one first")]
    TooManyMarketplaces {
        /// The limit.
        max: usize,
    },
    /// No configured catalog has the name.
    #[error("no configured catalog is named `{name}` (configured: {})", configured_list(.configured))]
    UnknownMarketplace {
        /// The name asked for.
        name: String,
        /// The configured names.
        configured: Vec<String>,
    },
    /// No catalog was named and none is configured.
    #[error("no catalog was given and none is configured")]
    NoMarketplace,
    /// No catalog lists the entry.
    #[error("no catalog lists `{name}`")]
    EntryNotFound {
        /// The entry asked for.
        name: String,
    },
    /// The catalog lists the entry but not as installable; nothing was fetched.
    #[error("{catalog} lists `{name}` as not available: {reason}; nothing was stored")]
    EntryNotAvailable {
        /// The entry's name.
        name: String,
        /// The catalog's name, else its location.
        catalog: String,
        /// Why, from the catalog.
        reason: String,
    },
    /// The catalog a bundle was installed from no longer lists its entry.
    #[error("{catalog} no longer lists `{entry}`; {id} stays as it is")]
    EntryGone {
        /// The catalog's name, else its location.
        catalog: String,
        /// The entry.
        entry: String,
        /// The installed id.
        id: String,
    },
    /// Several catalogs list the entry.
    #[error("`{name}` is listed by several catalogs ({}): choose one with --marketplace", .catalogs.join(", "))]
    AmbiguousEntry {
        /// The entry asked for.
        name: String,
        /// The catalogs that list it.
        catalogs: Vec<String>,
    },
    /// The catalog lists the entry at another version.
    #[error("{0}")]
    VersionNotFound(String),
    /// What was fetched is not what the catalog lists.
    #[error("{0}")]
    CatalogMismatch(String),
    /// A pinned commit is not HEAD.
    #[error("{0}")]
    CommitMismatch(String),
    /// An archive's SHA-256 is not the declared one.
    #[error("{0}")]
    DigestMismatch(String),
    /// A download failed.
    #[error("{0}")]
    FetchFailed(String),
    /// `npm pack` failed.
    #[error("{0}")]
    NpmFailed(String),
    /// The installed bundle has no catalog origin.
    #[error("{id} was not installed from a catalog, so it has no catalog entry to update from")]
    NotFromCatalog {
        /// The installed id.
        id: String,
    },
    /// An npm tarball is not the one its integrity names; nothing was stored.
    #[error(
        "the npm tarball of {package} has integrity {actual}, but {expected}; nothing was stored"
    )]
    IntegrityMismatch {
        /// The package spec packed.
        package: String,
        /// The integrity it should have, and who says so.
        expected: String,
        /// The integrity of the bytes npm produced.
        actual: String,
    },
    /// A lock file that cannot be used.
    #[error("{0}")]
    InvalidLock(String),
    /// Reading a bundle or the store failed.
    #[error(transparent)]
    Store(#[from] c2_bundle_collector::Error),
    /// A filesystem operation of this crate's own failed.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// What was being done.
        action: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

fn configured_list(configured: &[String]) -> String {
    if configured.is_empty() {
        "none".to_owned()
    } else {
        configured.join(", ")
    }
}

impl SourceError {
    /// What kind of failure this is.
    pub fn kind(&self) -> SourceErrorKind {
        match self {
            Self::Unsupported(_) => SourceErrorKind::UnsupportedSource,
            Self::Unsafe(_) => SourceErrorKind::UnsafeSource,
            Self::Git(_) => SourceErrorKind::GitFailed,
            Self::InvalidCatalog { .. } => SourceErrorKind::InvalidCatalog,
            Self::InvalidMarketplaces(_) => SourceErrorKind::InvalidMarketplaces,
            Self::DuplicateMarketplace { .. } => SourceErrorKind::DuplicateMarketplace,
            Self::TooManyMarketplaces { .. } => SourceErrorKind::TooManyMarketplaces,
            Self::UnknownMarketplace { .. } => SourceErrorKind::UnknownMarketplace,
            Self::NoMarketplace => SourceErrorKind::NoMarketplace,
            Self::EntryNotFound { .. } | Self::EntryGone { .. } => SourceErrorKind::EntryNotFound,
            Self::EntryNotAvailable { .. } => SourceErrorKind::EntryNotAvailable,
            Self::AmbiguousEntry { .. } => SourceErrorKind::AmbiguousEntry,
            Self::VersionNotFound(_) => SourceErrorKind::VersionNotFound,
            Self::CatalogMismatch(_) => SourceErrorKind::CatalogMismatch,
            Self::CommitMismatch(_) => SourceErrorKind::CommitMismatch,
            Self::DigestMismatch(_) => SourceErrorKind::DigestMismatch,
            Self::FetchFailed(_) => SourceErrorKind::FetchFailed,
            Self::NpmFailed(_) => SourceErrorKind::NpmFailed,
            Self::NotFromCatalog { .. } => SourceErrorKind::NotFromCatalog,
            Self::Store(_) => SourceErrorKind::StoreFailed,
            Self::IntegrityMismatch { .. } => SourceErrorKind::IntegrityMismatch,
            Self::InvalidLock(_) => SourceErrorKind::InvalidLock,
            Self::Io { .. } => SourceErrorKind::Io,
        }
    }

    /// Advice for a person, in a command line's terms, kept out of the message so an
    /// embedder can show its own. This is the crate's one table of such advice.
    pub fn hint(&self) -> Option<String> {
        match self {
            Self::InvalidCatalog {
                invalid: Some(location),
                ..
            } => Some(format!("`c2-plugins validate {location}` shows every problem")),
            Self::DuplicateMarketplace { name, .. } => Some(format!(
                "remove it first with `c2-plugins marketplace remove {name}`, or add this one with another --name"
            )),
            Self::UnknownMarketplace { .. } => {
                Some("`c2-plugins marketplace list` shows them".to_owned())
            }
            Self::NoMarketplace => Some(
                "give --marketplace PATH|URL, or add one with `c2-plugins marketplace add`"
                    .to_owned(),
            ),
            Self::EntryNotFound { name } => Some(format!(
                "`c2-plugins search {name}` shows what the catalogs offer"
            )),
            Self::EntryNotAvailable { name, .. } => Some(format!(
                "`c2-plugins search {name}` shows the catalog's entries and which are not available"
            )),
            Self::NotFromCatalog { .. } => Some(
                "reinstall it from its source, or install it with `c2-plugins install NAME --marketplace ...`"
                    .to_owned(),
            ),
            Self::IntegrityMismatch { .. } => Some(
                "the package is not the one that was recorded or published: do not install it until its publisher confirms the tarball"
                    .to_owned(),
            ),
            Self::InvalidLock(_) => {
                Some("`c2-plugins lock` writes a lock file this version reads".to_owned())
            }
            _ => None,
        }
    }

    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io {
            action,
            path,
            source,
        }
    }
}

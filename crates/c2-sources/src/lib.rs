//! Where a bundle comes from: one parser of source text, fetching at the edge, and the
//! configured catalogs of a store.
//!
//! [`Source::parse`] reads what a person typed (a bundle directory, an archive, `git+URL#REF:SUBDIR`,
//! a GitHub repository or `/tree/<ref>/<path>` URL, a catalog entry `NAME[@VERSION]`) into one
//! typed value; it is the only place that decides which kind of source a text is.
//! [`fetch`] and [`Catalogs::fetch`] bring a source in: a hardened `git` clone through
//! c2-supervisor's one-shot runner, `npm pack` with scripts disabled, an https download with
//! `curl`, or a local path. Every bundle comes back [`Fetched`], collected once with the
//! caller's [`FetchOptions::collect`], so a caller with the same options does not check it
//! again. [`Catalogs`] keeps the store's `marketplaces.json`, reads catalogs (ours, Claude
//! Code's and Codex's, docs/catalogs.md), finds an entry and verifies what was fetched against
//! it (name, version, pinned commit, SHA-256, an Agent Plugins bundle with a C2 namespace).
//! Every fetch records its [`Provenance`] in the request (kind, location, ref, commit, npm
//! name, version and integrity, SHA-256, catalog entry, time); an npm tarball whose sha512
//! integrity is not the one npm reports or the caller expects is refused. [`LockFile`] is the
//! lock format: an installed set written as sorted JSON, fetched again from its provenance
//! with [`fetch_locked`] (every digest verified before anything is returned) and compared with
//! a store by [`drift`].
//!
//! It deliberately installs nothing, runs nothing from a bundle, walks no bundle tree (that is
//! c2-bundle-collector's) and keeps no policy. c2-host and the c2-plugins CLI may depend on
//! it; it depends on c2-manifest, c2-bundle-collector and c2-supervisor.

#![warn(missing_docs)]

mod catalog;
mod catalogs;
mod error;
mod fetch;
mod git;
mod lock;
mod remote;
mod source;

pub use c2_bundle_collector::{NpmProvenance, Provenance, ProvenanceKind};
pub use catalog::HubOptions;
pub use catalogs::{
    Catalogs, ConfiguredMarketplace, MARKETPLACES_FILE, OutdatedRow, OutdatedStatus, SearchHit,
};
pub use error::{SourceError, SourceErrorKind};
pub use fetch::{FetchOptions, Fetched, fetch, fetch_path};
pub use lock::{
    Drift, DriftKind, LOCK_VERSION, LockEnablement, LockEntry, LockFile, MAX_LOCK_BYTES, drift,
    fetch_locked,
};
pub use source::{EntryLookup, EntrySpec, GitSource, Source, split_name};

#[cfg(test)]
#[expect(
    clippy::disallowed_methods,
    reason = "test code may use the file system freely"
)]
mod tests;

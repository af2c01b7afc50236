//! Bounded, symlink-safe bundle collection, component inventory, digest and atomic install.
//!
//! This crate decides what a bundle is and gets it onto disk safely: it is the security
//! boundary between an untrusted directory or archive and the user's plugin store. It reads a
//! bundle into memory under [`Limits`] (never following or storing a symlink, never reading a
//! FIFO or device, never extracting an archive to disk), runs the checks the manifest crate
//! cannot do alone, inventories the contributions, computes the content digest, and installs,
//! updates and removes bundles atomically in a [`Store`], each with the [`Provenance`] its
//! fetcher recorded (kept in `installed.json`, written with the bundle). Every refusal is a
//! [`Diagnostic`]. It also tells what an update changes: a bundle's [`ExecutableSurface`] and
//! the [`UpdateReview`] of a replace (surface and file diff), which the store records; it scans
//! the bundle files no manifest validator reads for hidden text, and words the typosquat
//! warning of an install ([`lookalike_warnings`]).
//! It deliberately runs nothing from a bundle, spawns no process, keeps no policy (trust,
//! enablement) and fetches nothing: a git source is cloned by the host, which hands the
//! checkout here with a [`SourceIdentity::git`]. After install it is also the host's only file
//! access to a bundle: [`read_installed_file`], the data directories ([`data_dir`],
//! [`ensure_data_dir`], [`remove_data_dir`]) and the Agent Plugins §9 path resolution of a
//! stdio MCP server ([`resolve_mcp_stdio`]), which resolves what a launch runs but starts
//! nothing, and what a bundle offers a session ([`read_parts`] then [`read_library`]). The
//! store also keeps developer mode's marks ([`Store::hold_development`]): which installed
//! bundles are development bundles, each held by a lock that dies with its process. c2-host,
//! the c2-plugins CLI and xtask may depend on it; it depends only on c2-manifest.
//!
//! Typical use: [`collect`] a path, show its diagnostics and [`Inventory`], then
//! [`Store::install`] it if [`CollectedBundle::is_valid`].

#![warn(missing_docs)]

#[cfg(feature = "archive")]
mod archive;
mod archive_format;
mod bundle;
mod component_ref;
mod components;
mod diagnostic;
mod digest;
mod error;
mod fault;
mod hidden_text;
mod installed;
mod inventory;
mod library;
mod limits;
mod marketplace;
mod mcp_paths;
mod provenance;
mod scaffold;
mod store;
mod surface;
mod tree;
mod typosquat;
mod walk;

pub use archive_format::ArchiveFormat;
pub use bundle::{
    BundleParts, CollectedBundle, NPM_PACKAGE_FOLDER, collect, collect_dir, has_any_part,
    read_parts,
};
#[cfg(feature = "archive")]
pub use bundle::{collect_archive, collect_archive_bytes, collect_npm_tarball_bytes};
pub use component_ref::{COMPONENT_KINDS, ComponentRef, InvalidComponent, component_id};
pub use diagnostic::{Diagnostic, Severity, codes};
pub use digest::{SourceIdentity, content_digest, installed_id, installed_name};
pub use error::{Error, Result};
#[cfg(feature = "fault-injection")]
pub use fault::FaultPoint;
pub use installed::{data_dir, ensure_data_dir, read_installed_file, remove_data_dir};
pub use inventory::{Contribution, ContributionKind, ContributionStatus, Inventory};
pub use library::{
    BundleLibrary, LIBRARY_FOLDERS, LibraryKind, LibraryPart, SCENE_MAJOR, SceneKind, ScenePart,
    SceneStatus, inventory_offers_library, may_offer_library, read_library,
};
pub use limits::{CollectOptions, Limits};
pub use marketplace::{CheckedEntry, MarketplaceCheck, check_marketplace};
pub use mcp_paths::{
    DataDirs, McpPathError, McpStdioEntry, ResolvedStdio, expand_plugin_paths, resolve_mcp_stdio,
};
pub use provenance::{NpmProvenance, Provenance, ProvenanceKind, rfc3339};
pub use scaffold::apply_scaffold;
pub use store::{
    CatalogOrigin, ContentChanged, DeveloperStatus, DevelopmentEntry, DevelopmentHold,
    DevelopmentMark, InstallRequest, InstalledRecord, LastReload, Lease, ListedBundle,
    ReloadRecord, Retired, Store, StoreOptions, Summary,
};
pub use surface::{
    ChangeKind, ExecutableSurface, FileDiff, SurfaceChange, SurfaceItem, SurfaceKind, UpdateReview,
};
pub use tree::FileEntry;
pub use typosquat::lookalike_warnings;
pub use walk::{
    SKIPPED_DIRECTORIES, SubdirectoryRefusal, read_contained_file, resolve_subdirectory,
};

// The README example is compiled (and run, unless marked no_run) as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctest;

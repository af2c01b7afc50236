//! The C2 plugin host: installed bundles become dormant, trust-gated, isolated runtimes.
//!
//! The core (`host`, `bundle`, `runtime`, `states`, `components`, `sync`, `plan`, ...) is the
//! lifecycle. Each installed bundle is a kernel factory `bundle:<installed-id>`; when policy has
//! it enabled and its exact content trusted, its manifest commands register as dormant stubs in
//! the user realm and, for project-capable runtimes, in each project realm. The first call to a
//! stub spawns the runtime through c2-supervisor, runs c2-protocol's handshake, then forwards the
//! call. Unloading a scope (disable, untrust, uninstall, replace, shutdown) removes the commands
//! at once and stops the process group, awaited. Many hosts may share one plugins directory: a
//! change committed by any of them reaches every other live host within a second
//! ([`PluginHost::refresh`], [`StoreChanged`]).
//!
//! What is built on the core reaches it through one public door, [`seam`], and registers itself
//! when the host opens: the built-ins of this crate (`builtins/`: `git.status`, the `plugins.*`
//! management commands), which every host carries, and the contributions an embedder passes to
//! [`PluginHost::open_with`]. The contributions (UI descriptors and `host.actions`, connectors,
//! language servers, MCP servers and the content library) are the c2-contributions crate,
//! which depends on this one; no file of this crate names them.
//!
//! It owns no mechanism below the lifecycle: validation, the store and every file read are
//! c2-manifest's and c2-bundle-collector's, sources are c2-sources', processes c2-supervisor's,
//! the wire and the handshake c2-protocol's, registries and realms c2-kernel's, durable intent
//! c2-policy's, and the JSON its callers print is c2-relay's. The CLI, c2-relay and embedders
//! (desktop, TUI, server) depend on it, and c2-contributions builds on it; no crate below it
//! does.

#![warn(missing_docs)]

mod builtins;
mod bundle;
mod catalog;
mod components;
mod development;
mod env;
mod error;
mod events;
mod gate;
mod health;
mod host;
mod hub;
mod installed;
mod listings;
mod loading;
mod modules;
mod options;
mod paths;
mod plan;
mod retire;
mod rt;
mod runtime;
pub mod seam;
mod states;
mod sync;
mod uninstall;

pub use bundle::{BUNDLE_PREFIX, module_name};
pub use c2_policy::{PolicyOptions, WatchMode, WatchOptions};
pub use components::{
    COMPONENT_KINDS, ComponentChoicesDropped, ComponentRef, ComponentState, DroppedChoice,
    disabled_for_user,
};
pub use error::{ErrorKind, HostError, NextAction, PluginError};
pub use events::Subscription;
pub use health::RuntimeHealth;
pub use host::{
    Applied, HostStats, ImpactView, InstallOutcome, InvokeOptions, PluginHost, StateChange, Target,
};
pub use hub::{UpdateFailure, UpdateReport, Updated};
pub use listings::{BundleStatus, CatalogRow, CommandRow, ExtensionsList, FailedExtension};
pub use modules::{ModuleError, ProtectedOwner};
pub use options::{Clock, HostOptions, InstallOptions, Loading, ManualClock, SystemClock};
pub use paths::Project;
pub use plan::{PLAN_FORMAT, PlanAction, PlanFile, PlanRevisions};
pub use states::{BundleState, CommandState, CommandVisibility, UiOperation};
pub use sync::StoreChanged;
pub use uninstall::{UninstallOptions, Uninstalled};

/// The built-ins every host carries, registered in this order when it opens, before the
/// contributions it is opened with (see [`seam`]). This facade is the one file that names both
/// the core and what is built on it.
const WIRING: &[seam::Install] = &[builtins::git::install, builtins::management::install];

// What the host's signatures and public fields use, re-exported so an embedder can call the
// host, configure it and read what it returns with c2-host alone. The `Module` contract
// (`register_module`) comes with what implementing it names: `ModuleMeta` and its `Role`,
// `ScopeContext`, `BoxFuture`. What a module does inside its scope (command specs, handlers,
// event payloads) is c2-kernel's vocabulary; the collector's diagnostics and inventories are
// c2-bundle-collector's: depend on those crates for them.
pub use c2_bundle_collector::{
    CatalogOrigin, CollectedBundle, InstallRequest, InstalledRecord, Limits, StoreOptions,
};
pub use c2_kernel::{
    BoxFuture, Error as KernelError, EventStream, Kernel, KernelOptions, Module, ModuleMeta, Realm,
    Role, ScopeContext, TypedStream,
};
pub use c2_manifest::{
    HostAction, HostActionsLimits, ManifestOptions, UiSlot, validate_host_actions,
};
pub use c2_protocol::PeerOptions;
pub use c2_sources::{
    ConfiguredMarketplace, Fetched, HubOptions, OutdatedRow, OutdatedStatus, SearchHit, Source,
};
pub use c2_supervisor::{Exit, ExitReport, ProcessStdin, RunOptions, SupervisorOptions};

// The README example is compiled (and run, unless marked no_run) as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctest;

#[cfg(test)]
#[expect(
    clippy::disallowed_methods,
    reason = "test code may use the file system freely"
)]
mod tests;

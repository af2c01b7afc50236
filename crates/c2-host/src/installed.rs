//! An installed bundle as the host holds it, and the kernel module name it goes by.

use std::path::PathBuf;

use c2_bundle_collector::InstalledRecord;
use c2_kernel::Realm;
use c2_manifest::{Manifest, ScopeKind as ManifestScope};

/// The prefix of every bundle module name.
pub const BUNDLE_PREFIX: &str = "bundle:";

/// The kernel module name of an installed bundle.
pub fn module_name(installed_id: &str) -> String {
    format!("{BUNDLE_PREFIX}{installed_id}")
}

/// An installed bundle as the host holds it: its record, validated manifest and files.
#[derive(Debug)]
pub struct InstalledBundle {
    pub(crate) record: InstalledRecord,
    pub(crate) manifest: Manifest,
    pub(crate) dir: PathBuf,
    /// [`module_name`] of the installed id, written once.
    pub(crate) module: String,
}

impl InstalledBundle {
    /// The kernel module name the bundle goes by ([`module_name`] of its installed id).
    pub fn module_name(&self) -> &str {
        &self.module
    }

    pub(crate) fn has_runtime(&self) -> bool {
        self.manifest.codetwo.runtime.is_some()
    }

    /// Whether the bundle's module lives in project realms too, so that a project may enable
    /// or disable it on its own: a runtime that declares project scope, or language servers,
    /// which always run in a project (plugin-standard.md §2: a conflict stays "until policy
    /// removes the conflict", per project as well as user-wide). In a project realm the module
    /// of a bundle whose runtime is user-only (or that has none) starts no process and
    /// registers no command (`runtime_in`); its project scope owns the servers started
    /// there, and the runtime stays the user realm's.
    pub fn project_capable(&self) -> bool {
        self.runtime_project_capable() || !self.manifest.codetwo.language_servers.is_empty()
    }

    /// Whether the runtime declares project scope (`scopeSupport` contains `project`).
    pub fn runtime_project_capable(&self) -> bool {
        self.manifest
            .codetwo
            .runtime
            .as_ref()
            .is_some_and(|runtime| runtime.scope_support.contains(&ManifestScope::Project))
    }

    /// Whether the runtime (its stubs and process) belongs in `realm`: always the user realm,
    /// a project realm only when the runtime declares project scope. A user-only runtime is
    /// never started for a project: that project's calls resolve by the kernel's fallback to
    /// the user realm's commands (blocked where the project disables the bundle).
    pub(crate) fn runtime_in(&self, realm: &Realm) -> bool {
        self.has_runtime() && (matches!(realm, Realm::Global) || self.runtime_project_capable())
    }

    /// The factory revision: the content digest, so replacing the content rebuilds the runtime.
    pub(crate) fn revision(&self) -> u64 {
        let digest = &self.record.digest;
        u64::from_str_radix(digest.get(..16).unwrap_or("0"), 16).unwrap_or(0)
    }
}

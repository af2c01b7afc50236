//! Installed bundles as kernel factories named `bundle:<installed-id>`.
//!
//! A bundle's module registers the manifest's commands as dormant stubs (with the manifest's
//! titles, descriptions and schemas) in the realm it is applied to; the first call to a stub
//! activates the process through that realm's [`RuntimeInstance`]. Everything belongs to the
//! module's scope: disposing it removes the stubs at once and stops the process.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};

use c2_bundle_collector::InstalledRecord;
use c2_kernel::{
    BoxFuture, CommandSpec, DefaultState, Error as KernelError, Module, ModuleMeta, Realm, Role,
    ScopeContext, ScopeKind, command_handler,
};
use c2_lock::lock;
use c2_manifest::{Manifest, ScopeKind as ManifestScope};

use crate::error::{ErrorKind, raise};
use crate::host::Shared;
use crate::runtime::RuntimeInstance;

/// One plugin runtime's health in one realm ([`PluginHost::health`](crate::PluginHost::health)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RuntimeHealth {
    /// The installed bundle's id.
    pub bundle: String,
    /// `global`, or the project's realm key.
    pub realm: String,
    /// Its state, process, counts, calls and usage.
    pub health: c2_supervisor::Health,
}

impl crate::PluginHost {
    /// Every plugin runtime's health, per bundle and realm (counts over the crash window).
    pub fn health(&self) -> Vec<RuntimeHealth> {
        let window = self.shared.options.crash_window;
        let bundles = lock(&self.shared.bundles).clone();
        let instances = bundles.values().flat_map(|module| module.instances());
        instances.map(|(_, one)| one.health(window)).collect()
    }
}

/// The prefix of every bundle module name.
pub const BUNDLE_PREFIX: &str = "bundle:";

/// The kernel module name of an installed bundle.
pub fn module_name(installed_id: &str) -> String {
    format!("{BUNDLE_PREFIX}{installed_id}")
}

/// An installed bundle as the host holds it: its record, validated manifest and files.
#[derive(Debug)]
pub(crate) struct InstalledBundle {
    pub(crate) record: InstalledRecord,
    pub(crate) manifest: Manifest,
    pub(crate) dir: PathBuf,
}

impl InstalledBundle {
    pub(crate) fn module_name(&self) -> String {
        module_name(&self.record.id)
    }

    pub(crate) fn has_runtime(&self) -> bool {
        self.manifest.codetwo.runtime.is_some()
    }

    /// Whether the bundle's module lives in project realms too, so that a project may enable
    /// or disable it on its own: a runtime that declares project scope, or language servers,
    /// which always run in a project (plugin-standard.md §2: a conflict stays "until policy
    /// removes the conflict", per project as well as user-wide). In a project realm the module
    /// of a bundle whose runtime is user-only (or that has none) starts no process and
    /// registers no command ([`Self::runtime_in`]); its project scope owns the servers started
    /// there, and the runtime stays the user realm's.
    pub(crate) fn project_capable(&self) -> bool {
        self.runtime_project_capable() || !self.manifest.codetwo.language_servers.is_empty()
    }

    /// Whether the runtime declares project scope (`scopeSupport` contains `project`).
    pub(crate) fn runtime_project_capable(&self) -> bool {
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

/// The kernel module of one installed bundle.
pub(crate) struct BundleModule {
    name: String,
    bundle: Arc<InstalledBundle>,
    host: Weak<Shared>,
    /// The runtime instances of the live scopes, by realm, for listings.
    instances: Mutex<Vec<(Realm, Weak<RuntimeInstance>)>>,
}

impl std::fmt::Debug for BundleModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BundleModule")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl BundleModule {
    pub(crate) fn new(bundle: Arc<InstalledBundle>, host: Weak<Shared>) -> Self {
        Self {
            name: bundle.module_name(),
            bundle,
            host,
            instances: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn bundle(&self) -> &Arc<InstalledBundle> {
        &self.bundle
    }

    /// The live runtime instance of `realm`, if its scope is applied.
    pub(crate) fn instance(&self, realm: &Realm) -> Option<Arc<RuntimeInstance>> {
        let mut instances = lock(&self.instances);
        instances.retain(|(_, weak)| weak.strong_count() > 0);
        instances
            .iter()
            .find(|(r, _)| r == realm)
            .and_then(|(_, weak)| weak.upgrade())
    }

    /// Every live runtime instance.
    pub(crate) fn instances(&self) -> Vec<(Realm, Arc<RuntimeInstance>)> {
        let mut instances = lock(&self.instances);
        instances.retain(|(_, weak)| weak.strong_count() > 0);
        instances
            .iter()
            .filter_map(|(realm, weak)| Some((realm.clone(), weak.upgrade()?)))
            .collect()
    }
}

impl Module for BundleModule {
    fn name(&self) -> &str {
        &self.name
    }

    fn meta(&self) -> ModuleMeta {
        let mut meta = ModuleMeta::new(Role::Extension, self.name.clone(), "bundle");
        if self.bundle.project_capable() {
            meta.scopes = vec![ScopeKind::User, ScopeKind::Project];
        }
        meta.default_state = DefaultState::Disabled;
        meta
    }

    fn inject(&self) -> Vec<String> {
        self.bundle
            .manifest
            .codetwo
            .runtime
            .as_ref()
            .map(|r| r.inject.clone())
            .unwrap_or_default()
    }

    fn optional_inject(&self) -> Vec<String> {
        self.bundle
            .manifest
            .codetwo
            .runtime
            .as_ref()
            .map(|r| r.optional_inject.clone())
            .unwrap_or_default()
    }

    fn apply<'a>(&'a self, ctx: &'a mut ScopeContext) -> BoxFuture<'a, Result<(), KernelError>> {
        Box::pin(async move {
            // While this scope is applied the tree is leased: another process's uninstall or
            // replace deletes it only after this scope (its processes and language servers)
            // is gone. Registered first, so it is released last.
            if let Some(shared) = self.host.upgrade() {
                match shared.store.lease(&self.bundle.record.id) {
                    Ok(lease) => ctx.on_cleanup(move || async move { drop(lease) })?,
                    Err(error @ c2_bundle_collector::Error::NotInstalled { .. }) => {
                        return Err(raise(
                            ErrorKind::NotInstalled,
                            format!("{} left the store: {error}", self.bundle.record.id),
                        ));
                    }
                    // A store this host cannot write (read-only) still runs its bundles; only
                    // the protection against another process deleting them is lost.
                    Err(error) => tracing::warn!(
                        bundle = %self.bundle.record.id,
                        "cannot lease the installed tree: {error}"
                    ),
                }
            }
            if !self.bundle.runtime_in(ctx.realm()) {
                return Ok(());
            }
            // Runtime commands disabled by policy in this realm get no stub; when every one is
            // disabled there is nothing to call, so no runtime instance (and no process).
            let commands: Vec<_> = self
                .bundle
                .manifest
                .codetwo
                .commands
                .iter()
                .filter(|c| {
                    !ctx.withheld()
                        .contains(&format!("runtime-command:{}", c.id))
                })
                .collect();
            let declared = self.bundle.manifest.codetwo.commands.len();
            if commands.len() < declared
                && let Realm::Project(key) = ctx.realm().clone()
            {
                // A withheld command must not resolve to the user realm's process instead.
                ctx.block_fallback(&key, &self.name)?;
            }
            if commands.is_empty() && declared > 0 {
                return Ok(());
            }
            let instance = Arc::new(RuntimeInstance::new(
                self.host.clone(),
                self.bundle.clone(),
                ctx.scope().clone(),
                ctx.config().clone(),
            ));
            for command in commands {
                let spec = CommandSpec {
                    title: command.title.clone(),
                    description: command.description.clone(),
                    args_schema: command.args_schema.clone(),
                    ..CommandSpec::default()
                };
                let stub = instance.clone();
                // Shared, not cloned per call: this closure is on every invocation's path.
                let name: Arc<str> = Arc::from(command.id.as_str());
                ctx.register_command(
                    command.id.clone(),
                    spec,
                    command_handler(move |_call, args| {
                        let stub = stub.clone();
                        let name = name.clone();
                        async move { stub.invoke(&name, args).await }
                    }),
                )?;
            }
            let owned = instance.clone();
            ctx.on_cleanup(move || async move { owned.shutdown().await })?;
            lock(&self.instances).push((ctx.realm().clone(), Arc::downgrade(&instance)));
            Ok(())
        })
    }
}

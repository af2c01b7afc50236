//! Installed bundles as kernel factories named `bundle:<installed-id>`.
//!
//! A bundle's module registers the manifest's commands as dormant stubs (with the manifest's
//! titles, descriptions and schemas) in the realm it is applied to; the first call to a stub
//! activates the process through that realm's [`RuntimeInstance`]. Everything belongs to the
//! module's scope: disposing it removes the stubs at once and stops the process.

use std::sync::{Arc, Mutex, Weak};

use c2_kernel::{
    BoxFuture, CommandSpec, DefaultState, Error as KernelError, Module, ModuleMeta, Realm, Role,
    ScopeContext, ScopeKind, command_handler,
};
use c2_lock::lock;

use crate::env::RuntimeEnv;
use crate::error::{ErrorKind, raise};
use crate::runtime::RuntimeInstance;

pub(crate) use crate::installed::InstalledBundle;
pub use crate::installed::{BUNDLE_PREFIX, module_name};

/// The kernel module of one installed bundle.
pub(crate) struct BundleModule {
    name: String,
    bundle: Arc<InstalledBundle>,
    host: Weak<dyn RuntimeEnv>,
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
    pub(crate) fn new(bundle: Arc<InstalledBundle>, host: Weak<dyn RuntimeEnv>) -> Self {
        Self {
            name: bundle.module_name().to_owned(),
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
                match shared.lease(&self.bundle.record.id) {
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
            let withheld = ctx.withheld();
            let commands: Vec<_> = self
                .bundle
                .manifest
                .codetwo
                .commands
                .iter()
                .filter(|c| {
                    withheld.is_empty() || !withheld.contains(&format!("runtime-command:{}", c.id))
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

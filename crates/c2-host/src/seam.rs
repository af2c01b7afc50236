//! The seam: the one door between the host's lifecycle core and what is built on it.
//!
//! The core (host, bundle, runtime, states, components, modules, sync, events, plan, options,
//! paths, error) installs, trusts, activates and unloads bundles. Built-ins (`builtins/`:
//! `git.status`, the `plugins.*` management plane) and contributions (`contributions/`: UI
//! descriptors and `host.actions`, connectors, language servers, MCP servers, and any later
//! kind) are built on it. They import the core through this module
//! alone, and no core file imports them.
//!
//! The core reaches them the other way round, by registration. Each of them has one
//! [`Install`] function; the crate's facade (lib.rs, the one file that names both sides)
//! lists them in `WIRING`, and [`PluginHost::open`] runs that list once, after the core is
//! built and before any bundle loads. Through the [`Registry`] an installer may:
//! - register a kernel module ([`Registry::module`]): commands, services and event listeners
//!   come and go with their scope like everything else in the kernel;
//! - claim a reserved plugin event name ([`Registry::event_hook`]): a runtime's `event/emit`
//!   of that name goes to the hook, with per-runtime state the hook creates, instead of onto
//!   the public bus;
//! - hand the host the object that owns its state ([`Registry::own`]), e.g. the UI render
//!   cache or the connector provider adapters. The object's type is private to its
//!   contribution, so neither the core nor another contribution can read it; the
//!   contribution's `impl PluginHost` methods fetch it back with [`PluginHost::state`].
//!   The host creates these objects (through the installers) when it opens and drops them
//!   when it closes;
//! - ask to hear of an uninstall ([`Registry::on_uninstall`]), e.g. to remove what it keeps
//!   for the bundle under its data directory; the hooks run, in `WIRING` order, once the
//!   bundle is unloaded and out of the store;
//! - ask to run after every reconcile ([`Registry::after_reconcile`]), e.g. to notice that what
//!   a realm offers changed and publish a host event about it.
//!
//! What else a contribution may use of the core is re-exported here and nowhere else: the
//! kernel and options (public on [`PluginHost`]), the installed bundles
//! ([`PluginHost::installed`], bundle and realm lookup), their withheld components
//! ([`PluginHost::withheld`]), what policy wants of them in a scope
//! ([`PluginHost::desired_bundles`]), the trust, content and ownership checks every activation
//! makes ([`PluginHost::is_trusted`], [`PluginHost::verify_content`],
//! [`PluginHost::contribution`], [`PluginHost::verify_owned_command`],
//! [`PluginHost::refuse_withheld`]), the lock that serializes changes to policy and the graph
//! ([`PluginHost::hold_changes`]), invocation ([`PluginHost::invoke`]), project identity and
//! the data directory layout ([`Project`], [`data_dir`]), the error type and the
//! poison-tolerant [`lock`]. A contribution never touches `Shared`.

use std::any::Any;
use std::collections::BTreeSet;
use std::sync::{Arc, Weak};

use c2_kernel::{Kernel, Module, Realm};
use c2_manifest::Manifest;
use c2_policy::{DesiredState, Scope};
use serde_json::Value;

pub(crate) use crate::bundle::InstalledBundle;
pub(crate) use crate::components::{component_id, realm_scope};
pub(crate) use crate::error::{Advice, ErrorKind, HostError};
pub(crate) use crate::host::{PluginHost, Target, lock, realm_text};
pub(crate) use crate::options::HostOptions;
pub(crate) use crate::paths::{Project, data_dir};
pub(crate) use crate::states::UiOperation;

use crate::host::Shared;

/// How a built-in or a contribution registers itself with a host that is opening.
pub(crate) type Install = fn(&mut Registry<'_>);

/// What a contribution does when bundle `id` is uninstalled; see [`Registry::on_uninstall`].
pub(crate) type UninstallHook = fn(&PluginHost, &str) -> Result<(), HostError>;

/// What a contribution does after every reconcile; see [`Registry::after_reconcile`].
pub(crate) type ReconcileHook = fn(&PluginHost);

/// What an installer may register; see the module docs.
pub(crate) struct Registry<'a> {
    host: &'a PluginHost,
    hooks: Vec<Arc<dyn EventHook>>,
    state: Vec<Arc<dyn Any + Send + Sync>>,
    uninstall: Vec<UninstallHook>,
    reconciled: Vec<ReconcileHook>,
}

impl std::fmt::Debug for Registry<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("hooks", &self.hooks.len())
            .field("state", &self.state.len())
            .field("uninstall", &self.uninstall.len())
            .finish_non_exhaustive()
    }
}

impl Registry<'_> {
    /// The options the host runs with.
    pub(crate) fn options(&self) -> &HostOptions {
        self.host.options()
    }

    /// A handle on the host that does not keep it open, for a module's command handlers.
    pub(crate) fn weak_host(&self) -> WeakHost {
        WeakHost(Arc::downgrade(&self.host.shared))
    }

    /// Registers a kernel module (a factory at `revision`) under the host's own name.
    pub(crate) fn module(&mut self, module: Arc<dyn Module>, revision: u64) {
        self.host.kernel().register_factory(module, revision);
    }

    /// Claims the reserved plugin event name `hook.name()`.
    pub(crate) fn event_hook(&mut self, hook: Arc<dyn EventHook>) {
        self.hooks.push(hook);
    }

    /// Hands the host the object that owns this contribution's state (one per type).
    pub(crate) fn own<T: Send + Sync + 'static>(&mut self, state: Arc<T>) {
        self.state.push(state);
    }

    /// Runs `hook` whenever a bundle is uninstalled, after it is unloaded and out of the store
    /// and before its policy is forgotten. An error fails the uninstall with it.
    pub(crate) fn on_uninstall(&mut self, hook: UninstallHook) {
        self.uninstall.push(hook);
    }

    /// Runs `hook` after every reconcile, with the change lock held: once the graph matches
    /// policy after an install, uninstall, update, switch, trust or component change, or a
    /// refresh after another process changed the store. The first run is the one at open.
    pub(crate) fn after_reconcile(&mut self, hook: ReconcileHook) {
        self.reconciled.push(hook);
    }
}

/// A host that may be gone: [`WeakHost::upgrade`] gives it back while it is open.
#[derive(Clone)]
pub(crate) struct WeakHost(Weak<Shared>);

impl std::fmt::Debug for WeakHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WeakHost").finish_non_exhaustive()
    }
}

impl WeakHost {
    /// The host, unless it has shut down.
    pub(crate) fn upgrade(&self) -> Option<PluginHost> {
        self.0.upgrade().map(|shared| PluginHost { shared })
    }
}

/// A contribution's handler for one reserved plugin event name.
pub(crate) trait EventHook: Send + Sync {
    /// The reserved name, e.g. `connector/event`. Plugins may emit it; it never reaches the
    /// public bus.
    fn name(&self) -> &'static str;

    /// The per-runtime state for one running bundle.
    fn start(&self, manifest: &Manifest) -> Box<dyn RuntimeHook>;
}

/// The per-runtime half of an [`EventHook`].
pub(crate) trait RuntimeHook: Send {
    /// One `event/emit` of the hook's name from the bundle `bundle_id`.
    fn accept(&mut self, kernel: &Kernel, bundle_id: &str, payload: Value);
}

/// The hooks of one running bundle, made when its runtime starts.
#[derive(Default)]
pub(crate) struct RuntimeHooks(Vec<(&'static str, Box<dyn RuntimeHook>)>);

impl std::fmt::Debug for RuntimeHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(name, _)| name))
            .finish()
    }
}

impl RuntimeHooks {
    /// The hooks registered with `host` (none once it shut down), started for `bundle`.
    pub(crate) fn start(host: &Weak<Shared>, bundle: &InstalledBundle) -> Self {
        let Some(shared) = host.upgrade() else {
            return Self::default();
        };
        let Some(wired) = shared.wired.get() else {
            return Self::default();
        };
        Self(
            wired
                .hooks
                .iter()
                .map(|hook| (hook.name(), hook.start(&bundle.manifest)))
                .collect(),
        )
    }

    /// Hands an emitted event to the hook that claimed its name; gives the payload back when
    /// none did, for the public bus.
    pub(crate) fn intercept(
        &mut self,
        kernel: &Kernel,
        bundle_id: &str,
        name: &str,
        payload: Value,
    ) -> Option<Value> {
        match self.0.iter_mut().find(|(claimed, _)| *claimed == name) {
            Some((_, hook)) => {
                hook.accept(kernel, bundle_id, payload);
                None
            }
            None => Some(payload),
        }
    }
}

/// What the installers registered, kept by the core without knowing any of its types.
#[derive(Default)]
pub(crate) struct Wired {
    hooks: Vec<Arc<dyn EventHook>>,
    state: Vec<Arc<dyn Any + Send + Sync>>,
    uninstall: Vec<UninstallHook>,
    reconciled: Vec<ReconcileHook>,
}

impl std::fmt::Debug for Wired {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wired")
            .field("hooks", &self.hooks.len())
            .field("state", &self.state.len())
            .field("uninstall", &self.uninstall.len())
            .finish()
    }
}

impl PluginHost {
    /// Runs every installer once; called by [`PluginHost::open`].
    pub(crate) fn wire(&self, installs: &[Install]) {
        let mut registry = Registry {
            host: self,
            hooks: Vec::new(),
            state: Vec::new(),
            uninstall: Vec::new(),
            reconciled: Vec::new(),
        };
        for install in installs {
            install(&mut registry);
        }
        let Registry {
            hooks,
            state,
            uninstall,
            reconciled,
            ..
        } = registry;
        // Only `open` wires, once, before the host is shared.
        let _ = self.shared.wired.set(Wired {
            hooks,
            state,
            uninstall,
            reconciled,
        });
    }

    /// Runs the after-reconcile hooks; called by the core after each reconcile.
    pub(crate) fn run_reconcile_hooks(&self) {
        let Some(wired) = self.shared.wired.get() else {
            return;
        };
        for hook in &wired.reconciled {
            hook(self);
        }
    }

    /// The project keys this host has realms for (registered on first use), in order.
    pub(crate) fn known_projects(&self) -> Vec<String> {
        lock(&self.shared.projects).keys().cloned().collect()
    }

    /// Runs the uninstall hooks for bundle `id`; called by [`PluginHost::uninstall`].
    pub(crate) fn run_uninstall_hooks(&self, id: &str) -> Result<(), HostError> {
        let Some(wired) = self.shared.wired.get() else {
            return Ok(());
        };
        for hook in &wired.uninstall {
            hook(self, id)?;
        }
        Ok(())
    }

    /// The state object a contribution handed over with [`Registry::own`].
    ///
    /// # Panics
    ///
    /// When no installer registered a `T`: the contribution asking for it is not in lib.rs's
    /// `WIRING`, a bug of this crate that its tests catch.
    pub(crate) fn state<T: Send + Sync + 'static>(&self) -> Arc<T> {
        self.shared
            .wired
            .get()
            .and_then(|wired| {
                wired
                    .state
                    .iter()
                    .find_map(|state| Arc::clone(state).downcast::<T>().ok())
            })
            .unwrap_or_else(|| {
                panic!(
                    "{} is not wired: add its installer to WIRING in lib.rs",
                    std::any::type_name::<T>()
                )
            })
    }

    /// Every installed bundle, in id order.
    pub(crate) fn installed(&self) -> Vec<Arc<InstalledBundle>> {
        lock(&self.shared.bundles)
            .values()
            .map(|module| module.bundle().clone())
            .collect()
    }

    /// The components of `bundle` the user withheld in `scope`, as `<kind>:<local-id>`.
    pub(crate) fn withheld(&self, bundle: &InstalledBundle, scope: &Scope) -> BTreeSet<String> {
        self.shared.withheld(bundle, scope)
    }

    /// The `bundles` whose desired state, in the scope `scope_of` picks for each, passes
    /// `keep`, in their order; one read of policy for all. A bundle policy cannot resolve is
    /// left out.
    pub(crate) fn desired_bundles(
        &self,
        bundles: Vec<Arc<InstalledBundle>>,
        scope_of: impl Fn(&InstalledBundle) -> Scope,
        keep: impl Fn(&DesiredState) -> bool,
    ) -> Vec<Arc<InstalledBundle>> {
        let catalog = self.policy_catalog();
        let policy = lock(&self.shared.policy);
        bundles
            .into_iter()
            .filter(|bundle| {
                policy
                    .desired(&catalog, &bundle.module_name(), &scope_of(bundle))
                    .is_ok_and(|desired| keep(&desired))
            })
            .collect()
    }

    /// Whether the user trusted exactly the installed content of `bundle`.
    pub(crate) fn is_trusted(&self, bundle: &InstalledBundle) -> bool {
        self.shared.is_trusted(bundle)
    }

    /// Whether the files under the bundle's directory are still the ones installed and
    /// trusted (recomputed from disk); `content_changed` saying what changed when not.
    pub(crate) fn verify_content(&self, bundle: &InstalledBundle) -> Result<(), HostError> {
        self.shared
            .verify_content(bundle)
            .map_err(|message| HostError::command(ErrorKind::ContentChanged, message))
    }

    /// Holds the lock that serializes changes to policy, the store and the graph, e.g. so that
    /// no policy change slips between a decision and what it attaches to the graph.
    pub(crate) async fn hold_changes(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.shared.changes.lock().await
    }

    /// The realm an activation targets and the bundle that owns the contribution.
    pub(crate) fn contribution(
        &self,
        id: &str,
        project: Option<&std::path::PathBuf>,
    ) -> Result<(Target, Realm, Arc<InstalledBundle>), HostError> {
        let target = project.cloned().map_or(Target::User, Target::Project);
        let realm = self.realm(&target)?;
        let bundle = self.bundle(id)?.bundle().clone();
        Ok((target, realm, bundle))
    }

    /// The ownership checks every contribution activation makes before its command runs: the
    /// bundle is trusted, it declares `command` itself, and that command is registered in
    /// `realm` by this bundle's own runtime (so it is enabled there and not another plugin's).
    pub(crate) fn verify_owned_command(
        &self,
        bundle: &InstalledBundle,
        command: &str,
        realm: &Realm,
    ) -> Result<(), HostError> {
        let id = &bundle.record.id;
        if !self.shared.is_trusted(bundle) {
            return Err(
                HostError::command(ErrorKind::NotTrusted, format!("{id} is not trusted"))
                    .advise(Advice::Trust(id)),
            );
        }
        if !bundle
            .manifest
            .codetwo
            .commands
            .iter()
            .any(|c| c.id == command)
        {
            return Err(HostError::command(
                ErrorKind::NotOwned,
                format!(
                    "`{command}` is not declared by {id}; a contribution may invoke only its own bundle's commands"
                ),
            ));
        }
        let owner = bundle.module_name();
        let registered = self
            .shared
            .kernel
            .commands(realm)
            .into_iter()
            .any(|c| c.name == command && c.owner == owner);
        if !registered {
            return Err(HostError::command(
                ErrorKind::Disabled,
                format!(
                    "`{command}` of {id} is not registered in realm {}: the bundle is disabled, pending or not project-capable there",
                    realm_text(realm)
                ),
            ));
        }
        Ok(())
    }
}

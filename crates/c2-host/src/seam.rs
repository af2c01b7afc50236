//! The door for crates built on the host's lifecycle: the contributions (the c2-contributions
//! crate: UI descriptors and `host.actions`, connectors, language servers, MCP servers and the
//! content library) and the built-ins of this crate (`git.status`, the `plugins.*` management
//! plane). The core never names them; they reach it through this module alone.
//!
//! The core reaches them the other way round, by registration. Each of them has one
//! [`Install`] function. [`PluginHost::open`] runs the built-ins' installers and
//! [`PluginHost::open_with`] also the ones the embedder passes (c2-contributions' `ALL`), once,
//! after the core is built and before any bundle loads. Through the [`Registry`] an installer
//! may:
//! - register a kernel module ([`Registry::module`]): commands, services and event listeners
//!   come and go with their scope like everything else in the kernel;
//! - add a command to the host's `plugins` management module ([`Registry::command`]);
//! - claim a reserved plugin event name ([`Registry::event_hook`]): a runtime's `event/emit`
//!   of that name goes to the hook, with per-runtime state the hook creates, instead of onto
//!   the public bus;
//! - hand the host the object that owns its state ([`Registry::own`]), e.g. the UI render
//!   cache or the connector provider adapters. The object's type is private to its
//!   contribution, so neither the core nor another contribution can read it; the contribution
//!   fetches it back with [`Core::state`]. The host creates these objects (through the
//!   installers) when it opens and drops them when it closes;
//! - ask to hear of an uninstall ([`Registry::on_uninstall`]), e.g. to remove what it keeps
//!   for the bundle under its data directory; the hooks run, in registration order, once the
//!   bundle is unloaded and out of the store;
//! - ask to run after every reconcile ([`Registry::after_reconcile`]), e.g. to notice that what
//!   a realm offers changed and publish a host event about it.
//!
//! What else a contribution may use of the core is [`Core`], the view [`PluginHost::seam`]
//! gives: the installed bundles and their withheld components, what policy wants of them in a
//! scope, the trust, content and ownership checks every activation makes, the lock that
//! serializes changes to policy and the graph, and the realms. Invocation, the kernel and the
//! options are [`PluginHost`]'s public methods. A contribution never touches the host's
//! private state.

use std::any::Any;
use std::collections::BTreeSet;
use std::sync::{Arc, Weak};

use c2_bundle_collector::ContributionKind;
use c2_kernel::{BoxFuture, Error as KernelError, Module, Realm};
use c2_policy::{DesiredState, Scope};
use serde_json::Value;

pub use crate::components::{component_id, realm_scope};
pub use crate::env::{EventHook, RuntimeHook};
pub use crate::error::Advice;
pub use crate::installed::InstalledBundle;
pub use crate::states::realm_text;

use crate::error::{ErrorKind, HostError};
use crate::host::{PluginHost, Shared, Target, lock};
use crate::options::HostOptions;

/// How a built-in or a contribution registers itself with a host that is opening.
pub type Install = fn(&mut Registry<'_>);

/// What a contribution does when bundle `id` is uninstalled; see [`Registry::on_uninstall`].
pub type UninstallHook = fn(&PluginHost, &str) -> Result<(), HostError>;

/// What a contribution does after every reconcile; see [`Registry::after_reconcile`].
pub type ReconcileHook = fn(&PluginHost);

/// The handler of a command added to the `plugins` module; see [`Registry::command`].
pub type CommandOp = fn(PluginHost, Value) -> BoxFuture<'static, Result<Value, KernelError>>;

/// What an installer may register; see the module docs.
pub struct Registry<'a> {
    host: &'a PluginHost,
    wired: Wired,
}

impl std::fmt::Debug for Registry<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("wired", &self.wired)
            .finish_non_exhaustive()
    }
}

impl Registry<'_> {
    /// The options the host runs with.
    pub fn options(&self) -> &HostOptions {
        self.host.options()
    }

    /// A handle on the host that does not keep it open, for a module's command handlers.
    pub fn weak_host(&self) -> WeakHost {
        WeakHost(Arc::downgrade(&self.host.shared))
    }

    /// Registers a kernel module (a factory at `revision`) under the host's own name.
    pub fn module(&mut self, module: Arc<dyn Module>, revision: u64) {
        self.host.kernel().register_factory(module, revision);
    }

    /// Adds the command `name` (titled `title`) to the host's essential `plugins` module, after
    /// its own: it comes and goes with the management plane and `op` runs it.
    pub fn command(&mut self, name: &'static str, title: &'static str, op: CommandOp) {
        self.wired.commands.push((name, title, op));
    }

    /// Claims the reserved plugin event name `hook.name()`.
    pub fn event_hook(&mut self, hook: Arc<dyn EventHook>) {
        self.wired.hooks.push(hook);
    }

    /// Hands the host the object that owns this contribution's state (one per type).
    pub fn own<T: Send + Sync + 'static>(&mut self, state: Arc<T>) {
        self.wired.state.push(state);
    }

    /// Runs `hook` whenever a bundle is uninstalled with its data (not when the uninstall keeps
    /// it), after it is unloaded and out of the store and before its policy is forgotten. An
    /// error fails the uninstall with it.
    pub fn on_uninstall(&mut self, hook: UninstallHook) {
        self.wired.uninstall.push(hook);
    }

    /// Runs `hook` after every reconcile, with the change lock held: once the graph matches
    /// policy after an install, uninstall, update, switch, trust or component change, or a
    /// refresh after another process changed the store. The first run is the one at open.
    pub fn after_reconcile(&mut self, hook: ReconcileHook) {
        self.wired.reconciled.push(hook);
    }
}

/// A host that may be gone: [`WeakHost::upgrade`] gives it back while it is open.
#[derive(Clone)]
pub struct WeakHost(Weak<Shared>);

impl std::fmt::Debug for WeakHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WeakHost").finish_non_exhaustive()
    }
}

impl WeakHost {
    /// The host, unless it has shut down.
    pub fn upgrade(&self) -> Option<PluginHost> {
        self.0.upgrade().map(|shared| PluginHost { shared })
    }
}

/// What the installers registered, kept by the core without knowing any of its types.
#[derive(Default)]
pub(crate) struct Wired {
    hooks: Vec<Arc<dyn EventHook>>,
    state: Vec<Arc<dyn Any + Send + Sync>>,
    uninstall: Vec<UninstallHook>,
    reconciled: Vec<ReconcileHook>,
    commands: Vec<(&'static str, &'static str, CommandOp)>,
}

impl Wired {
    /// The event hooks, in registration order.
    pub(crate) fn hooks(&self) -> &[Arc<dyn EventHook>] {
        &self.hooks
    }

    /// The commands added to the `plugins` module, in registration order.
    pub(crate) fn commands(&self) -> &[(&'static str, &'static str, CommandOp)] {
        &self.commands
    }
}

impl std::fmt::Debug for Wired {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wired")
            .field("hooks", &self.hooks.len())
            .field("state", &self.state.len())
            .field("uninstall", &self.uninstall.len())
            .field("reconciled", &self.reconciled.len())
            .field("commands", &self.commands.len())
            .finish()
    }
}

impl PluginHost {
    /// [`PluginHost::open_with`] the built-ins alone (`git.status`, the `plugins.*` management
    /// plane): runtimes stay dormant until their first command, and no contribution is wired,
    /// so a contribution's method fails with kind `not_wired`. c2-contributions' `open` opens
    /// with every contribution.
    pub async fn open(options: HostOptions) -> Result<Self, HostError> {
        Self::open_with(options, &[]).await
    }

    /// Runs every installer once; called by [`PluginHost::open_with`].
    pub(crate) fn wire(&self, installs: &[Install]) {
        let mut registry = Registry {
            host: self,
            wired: Wired::default(),
        };
        for install in installs {
            install(&mut registry);
        }
        // Only `open` wires, once, before the host is shared.
        let _ = self.shared.wired.set(registry.wired);
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

    /// The core as a contribution sees it; see the [module docs](self).
    pub fn seam(&self) -> Core<'_> {
        Core { host: self }
    }
}

/// The core as a contribution sees it: what [`PluginHost::seam`] gives.
#[derive(Debug, Clone, Copy)]
pub struct Core<'a> {
    host: &'a PluginHost,
}

impl<'a> Core<'a> {
    /// Holds the lock that serializes changes to policy, the store and the graph, e.g. so that
    /// no policy change slips between a decision and what it attaches to the graph.
    pub async fn hold_changes(self) -> tokio::sync::MutexGuard<'a, ()> {
        self.host.shared.changes.lock().await
    }

    /// The state object a contribution handed over with [`Registry::own`]; `not_wired` when
    /// no installer the host opened with registered a `T`.
    pub fn state<T: Send + Sync + 'static>(&self) -> Result<Arc<T>, HostError> {
        self.host
            .shared
            .wired
            .get()
            .and_then(|wired| {
                wired
                    .state
                    .iter()
                    .find_map(|state| Arc::clone(state).downcast::<T>().ok())
            })
            .ok_or_else(|| {
                HostError::new(
                    ErrorKind::NotWired,
                    format!(
                        "{} is not wired into this host",
                        std::any::type_name::<T>()
                    ),
                )
                .with_hint(
                    "open the host with the contribution's installer (PluginHost::open_with, or c2_contributions::open)",
                )
            })
    }

    /// The project keys this host has realms for (registered on first use), in order.
    pub fn known_projects(&self) -> Vec<String> {
        lock(&self.host.shared.projects).keys().cloned().collect()
    }

    /// The realm of `target`, registering the project's desired state on first use.
    pub fn realm(&self, target: &Target) -> Result<Realm, HostError> {
        self.host.realm(target)
    }

    /// The installed bundle `id`; `not_installed` when there is none.
    pub fn bundle(&self, id: &str) -> Result<Arc<InstalledBundle>, HostError> {
        Ok(self.host.bundle(id)?.bundle().clone())
    }

    /// Every installed bundle, in id order.
    pub fn installed(&self) -> Vec<Arc<InstalledBundle>> {
        lock(&self.host.shared.bundles)
            .values()
            .map(|module| module.bundle().clone())
            .collect()
    }

    /// The components of `bundle` the user withheld in `scope`, as `<kind>:<local-id>`.
    pub fn withheld(&self, bundle: &InstalledBundle, scope: &Scope) -> BTreeSet<String> {
        self.host.shared.withheld(bundle, scope)
    }

    /// `disabled` when policy withholds `<kind>:<local_id>` of `bundle` in `realm`.
    pub fn refuse_withheld(
        &self,
        bundle: &InstalledBundle,
        realm: &Realm,
        kind: ContributionKind,
        local_id: &str,
    ) -> Result<(), HostError> {
        self.host.refuse_withheld(bundle, realm, kind, local_id)
    }

    /// The `bundles` whose desired state, in the scope `scope_of` picks for each, passes
    /// `keep`, in their order; one read of policy for all. A bundle policy cannot resolve is
    /// left out.
    pub fn desired_bundles(
        &self,
        bundles: Vec<Arc<InstalledBundle>>,
        scope_of: impl Fn(&InstalledBundle) -> Scope,
        keep: impl Fn(&DesiredState) -> bool,
    ) -> Vec<Arc<InstalledBundle>> {
        let catalog = self.host.desired_catalog();
        let policy = lock(&self.host.shared.policy);
        bundles
            .into_iter()
            .filter(|bundle| {
                policy
                    .desired(&catalog, bundle.module_name(), &scope_of(bundle))
                    .is_ok_and(|desired| keep(&desired))
            })
            .collect()
    }

    /// Whether the user trusted exactly the installed content of `bundle`.
    pub fn is_trusted(&self, bundle: &InstalledBundle) -> bool {
        self.host.shared.is_trusted(bundle)
    }

    /// Whether the files under the bundle's directory are still the ones installed and
    /// trusted (recomputed from disk); `content_changed` saying what changed when not.
    pub fn verify_content(&self, bundle: &InstalledBundle) -> Result<(), HostError> {
        self.host
            .shared
            .verify_content(bundle)
            .map_err(|message| HostError::new(ErrorKind::ContentChanged, message))
    }

    /// The realm an activation targets and the bundle that owns the contribution.
    pub fn contribution(
        &self,
        id: &str,
        project: Option<&std::path::PathBuf>,
    ) -> Result<(Target, Realm, Arc<InstalledBundle>), HostError> {
        let target = project.cloned().map_or(Target::User, Target::Project);
        let realm = self.host.realm(&target)?;
        let bundle = self.bundle(id)?;
        Ok((target, realm, bundle))
    }

    /// The ownership checks every contribution activation makes before its command runs: the
    /// bundle is trusted, it declares `command` itself, and that command is registered in
    /// `realm` by this bundle's own runtime (so it is enabled there and not another plugin's).
    pub fn verify_owned_command(
        &self,
        bundle: &InstalledBundle,
        command: &str,
        realm: &Realm,
    ) -> Result<(), HostError> {
        let id = &bundle.record.id;
        if !self.host.shared.is_trusted(bundle) {
            return Err(
                HostError::new(ErrorKind::NotTrusted, format!("{id} is not trusted"))
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
            return Err(HostError::new(
                ErrorKind::NotOwned,
                format!(
                    "`{command}` is not declared by {id}; a contribution may invoke only its own bundle's commands"
                ),
            ));
        }
        let owner = bundle.module_name();
        let registered = self
            .host
            .shared
            .kernel
            .commands(realm)
            .into_iter()
            .any(|c| c.name == command && c.owner == owner);
        if !registered {
            return Err(HostError::new(
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

impl InstalledBundle {
    /// The bundle's store record: its installed id, source and content digest.
    pub fn record(&self) -> &c2_bundle_collector::InstalledRecord {
        &self.record
    }

    /// The bundle's validated manifest.
    pub fn manifest(&self) -> &c2_manifest::Manifest {
        &self.manifest
    }

    /// The bundle's installed directory.
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }
}

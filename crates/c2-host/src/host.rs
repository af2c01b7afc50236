//! `PluginHost`: the kernel, the policy store, the bundle store and the supervisor wired into
//! one lifecycle. Every change (install, uninstall, trust, enable, disable, configure, reset) is
//! one transaction: the policy is planned and applied, the live graph is reconciled in every
//! realm, and the policy becomes last-known-good only once the runtime reached the requested
//! state; otherwise both are rolled back.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use c2_bundle_collector::{CollectedBundle, InstallRequest, InstalledRecord, Store};
use c2_kernel::{
    DesiredState as KernelDesired, Error as KernelError, Kernel, Module, ModuleIntent, ModuleState,
    ProjectKey, Realm,
};
use c2_policy::{Catalog, Change, ChangeKind, PolicyStore, Revisions, Scope};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::bundle::{BundleModule, InstalledBundle, module_name};
use crate::env::{Counters, RuntimeEnv};
use crate::error::{Advice, ErrorKind, HostError};
use crate::modules::{ModuleError, ProtectedOwner, Recording, apply_failure};
use crate::options::{HostOptions, InstallOptions, Loading};
use crate::paths::Project;
use crate::seam::Install;
use crate::states::realm_text;
use crate::uninstall::{UninstallOptions, Uninstalled};

pub(crate) use c2_lock::lock;

/// A snapshot of [`PluginHost::stats`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostStats {
    /// Plugin processes spawned since the host opened.
    pub spawns: u64,
    /// Events not delivered to a plugin because its outbound queue was full.
    pub dropped_events: u64,
}

pub(crate) struct Shared {
    pub(crate) options: HostOptions,
    pub(crate) kernel: Kernel,
    pub(crate) store: Store,
    pub(crate) policy: Mutex<PolicyStore>,
    pub(crate) bundles: Mutex<BTreeMap<String, Arc<BundleModule>>>,
    /// Project realms the host has desired state for, with their revision.
    pub(crate) projects: Mutex<BTreeMap<String, u64>>,
    pub(crate) stats: Arc<Counters>,
    /// Serializes changes to policy, the store and the graph.
    pub(crate) changes: tokio::sync::Mutex<()>,
    /// Problems found while loading the store, kept for listings.
    pub(crate) load_problems: Mutex<Vec<String>>,
    /// What the built-ins and contributions registered when the host opened (see seam.rs).
    pub(crate) wired: std::sync::OnceLock<crate::seam::Wired>,
    /// Modules the embedder registered, the only ones it may replace.
    pub(crate) embedded: crate::modules::Embedded,
    /// Wakes the host when any process commits a change to the store (see sync.rs).
    pub(crate) watch: Mutex<Option<c2_policy::StoreWatch>>,
    /// The store generation the host last refreshed at.
    pub(crate) generation: AtomicU64,
    /// What the host last published as its plugin list.
    pub(crate) view: Mutex<crate::sync::View>,
    /// The development bundles this host holds (see development.rs).
    pub(crate) development: Mutex<Vec<c2_bundle_collector::DevelopmentHold>>,
    /// Bumped by every change to `bundles`: with the kernel's factory revision, the key of
    /// `catalog`.
    pub(crate) bundles_revision: AtomicU64,
    /// The last [`PluginHost::desired_catalog`], with the key it was built at.
    pub(crate) catalog: Mutex<Option<(crate::catalog::CatalogKey, Arc<Catalog>)>>,
}

impl Shared {
    /// Changes the loaded bundles through `change`, bumping their revision.
    pub(crate) fn set_bundles<T>(
        &self,
        change: impl FnOnce(&mut BTreeMap<String, Arc<BundleModule>>) -> T,
    ) -> T {
        let changed = change(&mut lock(&self.bundles));
        self.bundles_revision.fetch_add(1, Ordering::SeqCst);
        changed
    }

    /// Whether the user trusted exactly the installed content of `bundle`.
    pub(crate) fn is_trusted(&self, bundle: &InstalledBundle) -> bool {
        let policy = lock(&self.policy);
        policy
            .document()
            .and_then(|document| document.entry(bundle.module_name(), &Scope::User))
            .is_some_and(|entry| entry.is_trusted(&bundle.record.digest))
    }
}

/// The plugin host a desktop, TUI or server embeds, and that the `c2-plugins` CLI runs.
///
/// Cloning is cheap (one `Arc`); every clone is the same host. Its async methods run on the
/// runtime [`HostOptions::runtime`] names, or else on the one they are polled in.
///
/// # Panics
///
/// Methods that may start a process ([`PluginHost::invoke`] and everything built on it) panic,
/// as tokio does, when polled outside any tokio runtime while [`HostOptions::runtime`] is
/// `None`; give the host a runtime handle to call it from anywhere. [`PluginHost::open`] in
/// that situation returns [`ErrorKind::NoRuntime`] instead.
///
/// # Cancel safety
///
/// Dropping an `invoke` future cancels the call and stops the plugin's process (see
/// [`PluginHost::invoke`]). Dropping a store or policy change (`install`, `trust`,
/// `set_state`, ...) never leaves a file half-written: each write is one atomic replace; if it
/// is dropped after its commit, the runtime catches up at the next change,
/// [`PluginHost::refresh`] or [`PluginHost::reconcile`].
#[derive(Clone)]
pub struct PluginHost {
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for PluginHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginHost")
            .field("plugins_dir", &self.shared.options.plugins_dir)
            .finish_non_exhaustive()
    }
}

/// How one [`PluginHost::invoke_with`] call runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct InvokeOptions {
    /// How long to wait for the answer (no deadline by default, as in the protocol; the
    /// host-wide [`HostOptions::invoke_deadline`] still applies). Past it the call ends with
    /// `deadline_exceeded` and is cancelled like a dropped call.
    pub deadline: Option<Duration>,
}

impl InvokeOptions {
    /// Sets [`InvokeOptions::deadline`].
    #[must_use]
    pub fn with_deadline(mut self, deadline: Duration) -> Self {
        self.deadline = Some(deadline);
        self
    }
}

/// The result of an install.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InstallOutcome {
    /// The stored record (id, digest, source, inventory).
    pub record: InstalledRecord,
    /// Whether a bundle from the same source was replaced.
    pub replaced: bool,
    /// Things the user should know: an untrusted runtime, trust lost to changed content,
    /// validation warnings, dropped component choices.
    pub notes: Vec<String>,
    /// Component choices of the replaced bundle whose local id the new content no longer
    /// has: dropped from the policy, reported here once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped_choices: Vec<crate::components::DroppedChoice>,
    /// Enabled because its catalog entry asks for it (Codex's `INSTALLED_BY_DEFAULT`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub enabled_by_catalog: bool,
}

/// The plugin-level switch of a policy change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum StateChange {
    /// Enable in the scope.
    Enable,
    /// Disable in the scope.
    Disable,
    /// Project only: follow the user's choice again.
    Inherit,
}

/// A committed policy change and what it did.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Applied {
    /// The policy revision now in force (and last-known-good).
    pub revision: u64,
    /// What started, stopped and reloaded.
    pub impact: ImpactView,
}

/// The impact of a change, for people and tools.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImpactView {
    /// Modules that become eligible.
    pub starts: Vec<String>,
    /// Modules that stop.
    pub stops: Vec<String>,
    /// Modules that reload.
    pub reloads: Vec<String>,
    /// Modules that go down with them.
    pub dependents: Vec<String>,
    /// Live resources affected.
    pub resources: Vec<String>,
    /// Bundles without a process runtime or language servers whose contributions become
    /// available (nothing starts for them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub enables: Vec<String>,
    /// Bundles without a process runtime or language servers whose contributions become
    /// unavailable (nothing stops for them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disables: Vec<String>,
    /// For a project change: bundles among the above whose runtime is user-only. The change
    /// governs their language servers and whether the project reaches their commands; their
    /// process keeps running for the user realm as the user entry says.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub user_runtimes: Vec<String>,
}

impl From<c2_policy::Impact> for ImpactView {
    fn from(impact: c2_policy::Impact) -> Self {
        Self {
            starts: impact.starts,
            stops: impact.stops,
            reloads: impact.reloads,
            dependents: impact.dependents,
            resources: impact.resources,
            enables: Vec::new(),
            disables: Vec::new(),
            user_runtimes: Vec::new(),
        }
    }
}

/// Where a change applies: the user (the default), or one project.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Target {
    /// The user scope (global realm).
    #[default]
    User,
    /// A project, by directory (normalized by the host).
    Project(PathBuf),
}

impl PluginHost {
    /// Opens the store at `options.plugins_dir` (creating it), loads policy with recovery,
    /// registers the built-in modules, then the contributions `with` in their order (see
    /// [`crate::seam`]), and every installed bundle, and reconciles. No plugin process starts.
    ///
    /// Must be polled inside a tokio runtime, which the host's tasks then run on (see
    /// docs/embedding.md); polled outside one it fails with kind `no_runtime` and touches
    /// nothing.
    pub async fn open_with(mut options: HostOptions, with: &[Install]) -> Result<Self, HostError> {
        if options.runtime.is_none() && tokio::runtime::Handle::try_current().is_err() {
            return Err(HostError::command(
                ErrorKind::NoRuntime,
                "PluginHost::open must run inside a tokio runtime (the host spawns its tasks on it), or be given one in HostOptions::runtime",
            )
            .with_hint("call it from a #[tokio::main] or Runtime::block_on"));
        }
        if options.plugins_dir.as_os_str().is_empty() {
            return Err(HostError::command(
                ErrorKind::InvalidArgs,
                "HostOptions::plugins_dir is empty: name the plugin store's directory",
            ));
        }
        if options.working_dir.is_none() {
            options.working_dir = Some(std::env::current_dir().map_err(HostError::io(
                "read the current directory (set HostOptions::working_dir to avoid it)",
                ".",
            ))?);
        }
        let handle = options.runtime.clone();
        crate::rt::on_runtime(handle.as_ref(), Self::open_on_runtime(options, with)).await
    }

    async fn open_on_runtime(options: HostOptions, with: &[Install]) -> Result<Self, HostError> {
        let store = Store::open(&options.plugins_dir, options.store.clone())?;
        let policy = PolicyStore::open(&options.plugins_dir, options.policy.clone());
        let kernel = Kernel::new(options.kernel.clone());
        let shared = Arc::new(Shared {
            kernel,
            store,
            policy: Mutex::new(policy),
            bundles: Mutex::new(BTreeMap::new()),
            projects: Mutex::new(BTreeMap::new()),
            stats: Arc::new(Counters::default()),
            changes: tokio::sync::Mutex::new(()),
            load_problems: Mutex::new(Vec::new()),
            wired: std::sync::OnceLock::new(),
            embedded: crate::modules::Embedded::default(),
            watch: Mutex::new(None),
            generation: AtomicU64::new(c2_policy::read_generation(&options.plugins_dir)),
            view: Mutex::new(crate::sync::View::default()),
            development: Mutex::new(Vec::new()),
            bundles_revision: AtomicU64::new(0),
            catalog: Mutex::new(None),
            options,
        });
        let host = Self { shared };
        host.wire(&[crate::WIRING, with].concat());
        let everything = match host.shared.options.loading {
            Loading::All => host.shared.store.list()?,
            Loading::OnDemand => Vec::new(),
        };
        for listed in everything {
            host.load_record(&listed.id, listed.record);
        }
        {
            let _changes = host.shared.changes.lock().await;
            host.reconcile_locked().await;
            // The first view is the baseline, not a change.
            let generation = host.shared.generation.load(Ordering::Acquire);
            host.publish_view(generation);
        }
        host.remove_orphaned_development().await;
        host.start_watch();
        let weak = Arc::downgrade(&host.shared);
        let every = host.shared.options.reap_interval;
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.tick().await;
            loop {
                tick.tick().await;
                let Some(shared) = weak.upgrade() else { break };
                PluginHost { shared }.reap_idle().await;
            }
        });
        Ok(host)
    }

    /// `future` polled on the embedder's runtime ([`HostOptions::runtime`]), if it chose one.
    pub(crate) fn on_runtime<F: std::future::Future>(&self, future: F) -> crate::rt::OnRuntime<F> {
        crate::rt::on_runtime(self.shared.options.runtime.as_ref(), future)
    }

    /// The options the host runs with.
    pub fn options(&self) -> &HostOptions {
        &self.shared.options
    }

    /// The kernel: for embedders that register built-in modules, publish host events
    /// (`skills/changed`, `engine/event`, ...) or subscribe to typed internal events.
    pub fn kernel(&self) -> &Kernel {
        &self.shared.kernel
    }

    /// Registers an embedder's module and reconciles, or refuses it and changes nothing.
    ///
    /// Refused: a name the host owns (`git`), an essential module's (`plugins`), the `bundle:`
    /// namespace, a name and revision already registered ([`ModuleError::AlreadyRegistered`],
    /// never a silent no-op), and a module whose `apply` fails in the user realm or a live
    /// project realm, e.g. because a command it registers is taken
    /// ([`ModuleError::DuplicateCommand`]). A refused module is unregistered again, or its
    /// previous revision restored. A new revision of the embedder's own module replaces it.
    /// A module that is disabled by default or waits for a service is not applied yet, so its
    /// conflicts surface later, as a failed module in the catalog.
    pub async fn register_module(
        &self,
        module: Arc<dyn Module>,
        revision: u64,
    ) -> Result<(), ModuleError> {
        let _changes = self.shared.changes.lock().await;
        let name = module.name().to_owned();
        let previous = self.shared.embedded.get(&name);
        match &previous {
            Some((_, current)) if *current == revision => {
                return Err(ModuleError::AlreadyRegistered { name, revision });
            }
            Some(_) => {}
            None if name.starts_with(crate::BUNDLE_PREFIX) => {
                return Err(ModuleError::Protected {
                    name,
                    owner: ProtectedOwner::Bundle,
                });
            }
            None => {
                // Any factory of that name not registered here is the host's own. A project
                // realm's catalog lists the factories the user realm's does not.
                let existing = [Realm::Global, Realm::project("")]
                    .iter()
                    .flat_map(|realm| self.shared.kernel.catalog(realm))
                    .find(|entry| entry.name == name);
                if let Some(entry) = existing {
                    let owner = if entry.meta.essential {
                        ProtectedOwner::Essential
                    } else {
                        ProtectedOwner::Host
                    };
                    return Err(ModuleError::Protected { name, owner });
                }
            }
        }
        let recording = Arc::new(Recording::new(module));
        self.shared
            .kernel
            .register_factory(recording.clone(), revision);
        self.reconcile_locked().await;
        let realms: Vec<Realm> = std::iter::once(Realm::Global)
            .chain(
                self.shared
                    .kernel
                    .live_projects()
                    .into_iter()
                    .map(Realm::Project),
            )
            .collect();
        if let Some(error) = apply_failure(&self.shared.kernel, &recording, &realms) {
            match previous {
                Some((module, revision)) => {
                    self.shared.kernel.register_factory(module, revision);
                }
                None => {
                    // An essential module cannot be removed; it stays, failed, in the catalog.
                    if let Err(removal) = self.shared.kernel.remove_factory(&name) {
                        tracing::warn!("cannot roll back module `{name}`: {removal}");
                    }
                }
            }
            self.reconcile_locked().await;
            return Err(error);
        }
        self.shared
            .embedded
            .set(&name, Some((recording as Arc<dyn Module>, revision)));
        Ok(())
    }

    /// Whether policy is unusable and only essential modules run.
    pub fn is_safe_mode(&self) -> bool {
        lock(&self.shared.policy).is_safe_mode()
    }

    /// Problems met while opening: unusable policy files, unloadable installed bundles.
    pub fn diagnostics(&self) -> Vec<String> {
        let mut problems = lock(&self.shared.load_problems).clone();
        problems.extend(
            lock(&self.shared.policy)
                .diagnostics()
                .iter()
                .map(|d| format!("policy: {d:?}")),
        );
        problems
    }

    /// Counters since the host opened.
    pub fn stats(&self) -> HostStats {
        HostStats {
            spawns: self.shared.stats.spawns.load(Ordering::Relaxed),
            dropped_events: self.shared.stats.dropped_events.load(Ordering::Relaxed),
        }
    }

    /// Reads an installed bundle's manifest and registers its factory (replacing an older one).
    pub(crate) fn load_bundle(
        &self,
        record: InstalledRecord,
    ) -> Result<Arc<BundleModule>, HostError> {
        let dir = self.shared.store.bundle_dir(&record.id)?;
        let path = dir.join("plugin.json");
        let limit = self.shared.options.limits.max_file_bytes;
        let text = c2_bundle_collector::read_installed_file(&dir, "plugin.json", limit)
            .map_err(HostError::io("read", &path))?;
        let report = c2_manifest::validate_manifest(&text, &self.shared.options.manifest);
        let first_error = report
            .diagnostics
            .iter()
            .find(|d| d.severity == c2_manifest::Severity::Error);
        let (Some(manifest), None) = (report.manifest, first_error) else {
            // The store only holds bundles that validated; this one changed on disk since, or
            // was validated under other options.
            let why = first_error.map_or_else(
                || "it has no manifest".to_owned(),
                |d| format!("[{}] {}", d.code, d.message),
            );
            return Err(HostError::command(
                ErrorKind::CorruptStore,
                format!(
                    "{}: the installed plugin.json no longer validates ({why}); reinstall or uninstall it",
                    path.display()
                ),
            ));
        };
        let bundle = Arc::new(InstalledBundle {
            module: module_name(&record.id),
            record,
            manifest,
            dir,
        });
        let module = Arc::new(BundleModule::new(
            bundle.clone(),
            Arc::downgrade(&self.shared) as Weak<dyn RuntimeEnv>,
        ));
        self.shared
            .kernel
            .register_factory(module.clone(), bundle.revision());
        self.shared
            .set_bundles(|bundles| bundles.insert(bundle.record.id.clone(), module.clone()));
        Ok(module)
    }

    /// Pushes policy's desired state into the kernel, for the user realm and every known
    /// project realm. The trust gate is applied here: an untrusted or blocked bundle never is.
    pub(crate) fn sync_desired(&self) {
        let catalog = self.desired_catalog();
        let blocked = self.shared.blocked();
        let policy = lock(&self.shared.policy);
        let desired = |scope: &Scope| {
            let mut state = KernelDesired::default();
            for module in catalog.modules() {
                if let Ok(d) = policy.desired(&catalog, &module.name, scope) {
                    // A bundle's disabled components, `<kind>:<local-id>`, reach its scope.
                    let withheld =
                        module
                            .name
                            .strip_prefix(crate::bundle::BUNDLE_PREFIX)
                            .map(|id| {
                                let prefix = format!("{id}:");
                                d.components
                                    .iter()
                                    .filter(|(_, s)| **s == c2_policy::ComponentSwitch::Disabled)
                                    .filter_map(|(key, _)| key.strip_prefix(&prefix))
                                    .map(str::to_owned)
                                    .collect()
                            });
                    state.modules.insert(
                        module.name.clone(),
                        ModuleIntent {
                            enabled: Some(d.is_runnable() && !blocked.contains_key(&module.name)),
                            config: d.config,
                            withheld,
                        },
                    );
                }
            }
            state
        };
        let user = desired(&Scope::User);
        if let Err(error) = self.shared.kernel.set_desired(user) {
            tracing::warn!("cannot set the user realm's desired state: {error}");
        }
        let projects: Vec<String> = lock(&self.shared.projects).keys().cloned().collect();
        for key in projects {
            let state = desired(&Scope::Project(key.clone()));
            if let Err(error) = self
                .shared
                .kernel
                .set_project_desired(ProjectKey::new(key), state)
            {
                tracing::warn!("cannot set a project realm's desired state: {error}");
            }
        }
    }

    /// Makes the live graph equal to policy in every realm. Call with `changes` held.
    pub(crate) async fn reconcile_locked(&self) {
        self.sync_desired();
        self.on_runtime(self.shared.kernel.reconcile()).await;
        self.run_reconcile_hooks();
    }

    /// Reclaims project realms that have been idle and unleased for `KernelOptions::idle_after`
    /// (5 minutes): their processes stop; the next call in the project builds the realm again.
    /// The host runs this every minute on its own; embedders may call it sooner.
    pub async fn reap_idle(&self) -> Vec<String> {
        let idle_after = self.shared.kernel.options().idle_after;
        let reaped = self
            .on_runtime(
                self.shared
                    .kernel
                    .reap_idle(self.shared.options.clock.now(), idle_after),
            )
            .await;
        let mut projects = lock(&self.shared.projects);
        reaped
            .into_iter()
            .map(|key| {
                // A new realm instance: plans made against the old one are stale.
                if let Some(revision) = projects.get_mut(key.as_str()) {
                    *revision += 1;
                }
                key.as_str().to_owned()
            })
            .collect()
    }

    /// Reconciles now (after an embedder changed services, for example).
    pub async fn reconcile(&self) {
        let _changes = self.shared.changes.lock().await;
        self.reconcile_locked().await;
    }

    /// The realm of `target`, registering the project's desired state on first use.
    pub(crate) fn realm(&self, target: &Target) -> Result<Realm, HostError> {
        match target {
            Target::User => Ok(Realm::Global),
            Target::Project(path) => Ok(Realm::project(self.register_project(path)?)),
        }
    }

    /// Normalizes a project and registers its desired state on first use; returns its key.
    pub(crate) fn register_project(&self, path: &Path) -> Result<String, HostError> {
        let project = Project::normalize(path)?;
        let key = project.key().to_owned();
        let known = {
            let mut projects = lock(&self.shared.projects);
            let known = projects.contains_key(&key);
            if !known {
                projects.insert(key.clone(), 1);
            }
            known
        };
        if !known {
            self.sync_desired();
        }
        Ok(key)
    }

    pub(crate) fn scope_of(&self, target: &Target) -> Result<Scope, HostError> {
        match self.realm(target)? {
            Realm::Global => Ok(Scope::User),
            Realm::Project(key) => Ok(Scope::Project(key.as_str().to_owned())),
        }
    }

    /// Plans, applies, reconciles, and confirms or rolls back one policy change.
    pub(crate) async fn change(
        &self,
        module: String,
        scope: Scope,
        kind: ChangeKind,
    ) -> Result<Applied, HostError> {
        let _changes = self.shared.changes.lock().await;
        let change = Change {
            module,
            scope,
            kind,
        };
        // Another process may commit between this host's look at the store and its write:
        // the write is then refused as stale, and the change is planned again on what is now
        // committed, so racing changes end in one committed state.
        let mut attempts = 0;
        loop {
            attempts += 1;
            self.catch_up_locked().await;
            let catalog = self.policy_catalog();
            let revisions = self.revisions();
            let plan = lock(&self.shared.policy).plan_change(
                change.clone(),
                &catalog,
                &revisions,
                self.shared.options.clock.now(),
            )?;
            match self.apply_locked(plan.id, plan.change, &revisions).await {
                Err(HostError::Policy(c2_policy::Error::StalePlan { .. }))
                    if attempts < self.shared.options.stale_retries =>
                {
                    self.refresh_locked().await?;
                }
                other => return other,
            }
        }
    }

    pub(crate) async fn apply_locked(
        &self,
        id: c2_policy::PlanId,
        change: Change,
        revisions: &Revisions,
    ) -> Result<Applied, HostError> {
        let commit = self.commit_plan(id, revisions)?;
        self.reconcile_locked().await;
        match self.verify(&change) {
            Ok(()) => {
                lock(&self.shared.policy).confirm(commit.revision)?;
                Ok(Applied {
                    revision: commit.revision,
                    impact: self.describe_impact(commit.impact, &change.scope),
                })
            }
            Err(reason) => {
                let rolled = lock(&self.shared.policy).rollback(commit.revision);
                self.reconcile_locked().await;
                if let Ok(revision) = rolled {
                    lock(&self.shared.policy).confirm(revision).ok();
                }
                Err(HostError::command(
                    ErrorKind::ApplyFailed,
                    format!(
                        "the runtime did not reach the requested state ({reason}); policy and runtime were rolled back"
                    ),
                ))
            }
        }
    }

    /// Whether the runtime reached what policy now asks for `change.module`.
    fn verify(&self, change: &Change) -> Result<(), String> {
        let realm = match &change.scope {
            Scope::User => Realm::Global,
            Scope::Project(key) => Realm::project(key.clone()),
        };
        let catalog = self.desired_catalog();
        let runnable = lock(&self.shared.policy)
            .desired(&catalog, &change.module, &change.scope)
            .map(|d| d.is_runnable())
            .map_err(|e| e.to_string())?;
        let entry = self
            .shared
            .kernel
            .catalog(&realm)
            .into_iter()
            .find(|e| e.name == change.module);
        match (runnable, entry.map(|e| e.state)) {
            (true, Some(ModuleState::Failed { reason })) => Err(reason),
            (false, Some(ModuleState::Active { .. })) => {
                Err(format!("{} is still active", change.module))
            }
            _ => Ok(()),
        }
    }

    /// Installs a bundle from a directory, an archive or a git source; runs nothing from it
    /// (a catalog entry's name is installed by [`PluginHost::install_text`]).
    pub async fn install(
        &self,
        source_text: &str,
        options: InstallOptions,
    ) -> Result<InstallOutcome, HostError> {
        self.install_plain(source_text, options).await
    }

    /// Installs an already collected bundle (see [`c2_bundle_collector::collect`]).
    pub async fn install_collected(
        &self,
        bundle: &CollectedBundle,
        request: InstallRequest,
        options: InstallOptions,
    ) -> Result<InstallOutcome, HostError> {
        self.install_checked(bundle, request, options, false).await
    }

    /// The one install path. `checked`: the bundle was collected with the host's own
    /// options ([`PluginHost::collect_options`]), so its diagnostics already decide validity.
    pub(crate) async fn install_checked(
        &self,
        bundle: &CollectedBundle,
        request: InstallRequest,
        options: InstallOptions,
        checked: bool,
    ) -> Result<InstallOutcome, HostError> {
        if !bundle.is_valid() {
            return Err(HostError::InvalidBundle {
                errors: bundle.error_count(),
                diagnostics: bundle.diagnostics.clone(),
            });
        }
        // Every option that decides validity applies before anything is stored: a bundle
        // collected elsewhere may have been read under other limits, or its plugin.json
        // validated with other options while the host's may reserve more namespaces.
        let refusals: Vec<_> = if checked {
            Vec::new()
        } else {
            bundle
                .check_limits(&self.shared.options.limits)
                .into_iter()
                .chain(bundle.check_manifest(&self.shared.options.manifest))
                .filter(c2_bundle_collector::Diagnostic::is_error)
                .collect()
        };
        if !refusals.is_empty() {
            let mut diagnostics = bundle.diagnostics.clone();
            diagnostics.extend(refusals.iter().cloned());
            return Err(HostError::InvalidBundle {
                errors: refusals.len(),
                diagnostics,
            });
        }
        // The kill switch, read afresh: nothing denied or outside an allow list is stored.
        let name = bundle.manifest.as_ref().map_or("", |m| m.name.as_str());
        let id = c2_bundle_collector::installed_id(name, &request.source);
        // Built field by field: `json!` would panic on a source path that is not UTF-8.
        let source = serde_json::to_value(&request.source).unwrap_or_default();
        let record = serde_json::json!({"id": id, "name": name, "digest": bundle.digest,
            "source": source, "origin": request.origin});
        let author = serde_json::json!(bundle.manifest.as_ref().map(|m| &m.author));
        let managed = self.shared.options.policy.managed_policy.as_deref();
        c2_policy::DenyLists::load(&self.shared.options.plugins_dir, managed)
            .admit(&c2_policy::Subject::from_record(&record, &author))?;
        let mut notes: Vec<String> = bundle
            .diagnostics
            .iter()
            .map(|d| {
                format!(
                    "warning[{}] {}: {}",
                    d.code,
                    d.file.as_deref().unwrap_or("bundle"),
                    d.message
                )
            })
            .collect();
        notes.extend(self.lookalike_notes(bundle, &request));
        let (record, replaced, retired) = {
            let _changes = self.shared.changes.lock().await;
            self.catch_up_locked().await;
            let previous = bundle
                .manifest
                .as_ref()
                .map(|m| c2_bundle_collector::installed_id(&m.name, &request.source))
                .and_then(|id| self.bundle(&id).ok());
            // A bundle this host has loaded is unloaded first, so its own lease on the tree
            // that is about to be retired is gone: the bounded wait below is only ever for
            // other processes. It loads again (from the new tree) right after.
            if let Some(previous) = &previous {
                self.unload_locked(previous.bundle().record.id.as_str())
                    .await?;
            }
            let (record, retired) = match self.shared.store.install_deferred(bundle, &request) {
                Ok(stored) => stored,
                Err(error) => {
                    // Nothing changed on disk: the previous content loads again.
                    if let Some(previous) = &previous
                        && let Err(reload) = self.load_bundle(previous.bundle().record.clone())
                    {
                        tracing::warn!("cannot load the previous content again: {reload}");
                    }
                    self.reconcile_locked().await;
                    return Err(error.into());
                }
            };
            self.committed_store_change();
            let module = self.load_bundle(record.clone())?;
            self.load_neighbours(&record);
            if let Some(previous) = &previous {
                let name = previous.bundle().module_name();
                let was_trusted = lock(&self.shared.policy)
                    .document()
                    .and_then(|d| d.entry(name, &Scope::User))
                    .and_then(|e| e.trusted_digest.clone());
                if was_trusted.is_some_and(|digest| digest != record.digest) {
                    let why = record.review.as_ref().map(|r| format!(" ({})", r.reason()));
                    notes.push(format!(
                        "{} changed content, so it is no longer trusted{}: {}",
                        record.id,
                        why.unwrap_or_default(),
                        Advice::ReviewAndTrust(&record.id).hint()
                    ));
                }
            }
            if module.bundle().has_runtime()
                && !options.trust
                && !self.shared.is_trusted(module.bundle())
            {
                notes.push(format!(
                    "{} ships a process runtime; it will not run until you trust it: {}",
                    record.id,
                    Advice::TrustCommand(&record.id).hint()
                ));
            }
            // A choice made with the install is committed next, and its reconcile applies the
            // new content with it: no realm sees new content untrusted in between.
            if !options.trust && !options.enable {
                self.reconcile_locked().await;
            }
            (record, previous.is_some(), retired)
        };
        if let Some(choice) = ChangeKind::for_install(options.trust, options.enable, &record.digest)
            && let Err(error) = self
                .change(module_name(&record.id), Scope::User, choice)
                .await
        {
            // Refused, or rolled back: the new content is applied without it.
            self.reconcile().await;
            return Err(error);
        }
        // The bundle is stored whatever happens here: a choice that cannot be dropped now
        // (the policy refused the write) is named, and matches nothing in the new content.
        let dropped_choices = if replaced {
            match self.drop_vanished_choices(&record).await {
                Ok(dropped) => dropped,
                Err(error) => {
                    notes.push(format!(
                        "component choices of {} that name components the new content no longer has could not be dropped ({error}); they have no effect: {}",
                        record.id,
                        Advice::ListComponents.hint()
                    ));
                    Vec::new()
                }
            }
        } else {
            Vec::new()
        };
        notes.extend(dropped_choices.iter().map(|dropped| {
            format!(
                "the component choice {} ({}) was dropped: the new content of {} has no such component",
                dropped.component, dropped.scope, dropped.id
            )
        }));
        // Last, so the trust and enablement of new content reach other hosts without waiting
        // for them to let go of the old tree.
        if let Some(retired) = retired {
            self.finish_retired(retired).await;
        }
        Ok(InstallOutcome {
            record,
            replaced,
            notes,
            dropped_choices,
            enabled_by_catalog: false,
        })
    }

    /// Stops every realm's runtime, removes the bundle from the store and forgets its policy.
    /// A store entry that does not load (its record or plugin.json is unreadable or no longer
    /// valid) is removed too: it never ran, so there is nothing to stop.
    ///
    /// The files go only once no host holds the bundle loaded: every other live host on the
    /// store sees the uninstall within a second and stops the bundle's processes, and this call
    /// waits up to [`HostOptions::retire_wait`] for that before deleting the tree. A tree still
    /// held at the deadline stays in the store's trash and is deleted by a later open.
    /// The bundle's data directory goes with it ([`PluginHost::uninstall_with`] may keep it).
    pub async fn uninstall(&self, id: &str) -> Result<Uninstalled, HostError> {
        self.uninstall_with(id, UninstallOptions::default()).await
    }

    /// [`PluginHost::uninstall`], keeping the bundle's data directory when `options` says so.
    pub async fn uninstall_with(
        &self,
        id: &str,
        options: UninstallOptions,
    ) -> Result<Uninstalled, HostError> {
        let (record, retired) = {
            let _changes = self.shared.changes.lock().await;
            self.catch_up_locked().await;
            let name = module_name(id);
            let (record, retired) = match self.bundle(id) {
                Ok(_) => {
                    self.unload_locked(id).await?;
                    self.run_reconcile_hooks();
                    let (record, retired) = self.shared.store.uninstall_deferred(id)?;
                    (Some(record), Some(retired))
                }
                Err(not_loaded) => {
                    if !self.shared.store.contains(id)? {
                        return Err(not_loaded);
                    }
                    let record = self.shared.store.remove(id)?;
                    let prefix = format!("installed bundle {id} cannot be loaded");
                    lock(&self.shared.load_problems).retain(|p| !p.starts_with(&prefix));
                    (record, None)
                }
            };
            self.committed_store_change();
            // What contributions keep for the bundle goes with its data (see seam.rs).
            if !options.keep_data {
                self.run_uninstall_hooks(id)?;
                let data = crate::paths::data_dir(&self.shared.options.plugins_dir, id, None);
                c2_bundle_collector::remove_data_dir(&data).map_err(|source| HostError::Io {
                    action: "remove the data directory",
                    path: data,
                    source,
                })?;
            }
            let mut policy = lock(&self.shared.policy);
            if !policy.is_safe_mode()
                && let Ok(revision) = policy.reset(Some(&name))
            {
                policy.confirm(revision).ok();
            }
            (record, retired)
        };
        // Without `changes` held: this host's own refresh must be able to run meanwhile.
        if let Some(retired) = retired {
            self.finish_retired(retired).await;
        }
        Ok(Uninstalled {
            id: id.to_owned(),
            record,
        })
    }

    /// The impact as people read it: a bundle without a process runtime or language servers
    /// has nothing to start or stop, so it is listed as enabled or disabled instead; in a
    /// project, a bundle whose runtime is user-only is also named in `user_runtimes`.
    pub(crate) fn describe_impact(&self, impact: c2_policy::Impact, scope: &Scope) -> ImpactView {
        let bundles = lock(&self.shared.bundles).clone();
        let bundle = |name: &String| {
            name.strip_prefix(crate::bundle::BUNDLE_PREFIX)
                .and_then(|id| bundles.get(id))
                .map(|module| module.bundle().clone())
        };
        let runs = |name: &String| {
            bundle(name).is_none_or(|bundle| {
                bundle.has_runtime() || !bundle.manifest.codetwo.language_servers.is_empty()
            })
        };
        let mut view = ImpactView::from(impact);
        let (starts, enables) = view.starts.drain(..).partition(|name| runs(name));
        let (stops, disables) = view.stops.drain(..).partition(|name| runs(name));
        view.starts = starts;
        view.stops = stops;
        view.enables = enables;
        view.disables = disables;
        if matches!(scope, Scope::Project(_)) {
            let mut user_runtimes: Vec<String> = view
                .starts
                .iter()
                .chain(&view.stops)
                .chain(&view.reloads)
                .filter(|name| {
                    bundle(name).is_some_and(|bundle| {
                        bundle.has_runtime() && !bundle.runtime_project_capable()
                    })
                })
                .cloned()
                .collect();
            user_runtimes.sort();
            user_runtimes.dedup();
            view.user_runtimes = user_runtimes;
        }
        view
    }

    /// Trusts the installed content of `id` (trust is bound to the content digest).
    /// Refused as `content_changed` when the files on disk are no longer the installed ones:
    /// the digest being trusted would not be that of the bytes that would run.
    pub async fn trust(&self, id: &str) -> Result<Applied, HostError> {
        self.catch_up().await;
        let module = self.bundle(id)?;
        self.shared
            .verify_content(module.bundle())
            .map_err(|message| HostError::command(ErrorKind::ContentChanged, message))?;
        let digest = module.bundle().record.digest.clone();
        let name = module.bundle().module_name().to_owned();
        self.change(name, Scope::User, ChangeKind::Trust(digest))
            .await
    }

    /// Withdraws trust: every realm's process stops and the stubs disappear.
    pub async fn untrust(&self, id: &str) -> Result<Applied, HostError> {
        self.catch_up().await;
        let module = self.bundle(id)?;
        let name = module.bundle().module_name().to_owned();
        self.change(name, Scope::User, ChangeKind::Untrust).await
    }

    /// Enables, disables or (projects only) inherits a bundle.
    pub async fn set_state(
        &self,
        id: &str,
        target: &Target,
        state: StateChange,
    ) -> Result<Applied, HostError> {
        self.catch_up().await;
        let module = self.bundle(id)?;
        let scope = self.scope_of(target)?;
        let kind = match state {
            StateChange::Enable => ChangeKind::Enable,
            StateChange::Disable => ChangeKind::Disable,
            StateChange::Inherit => ChangeKind::Inherit,
        };
        self.change(module.bundle().module_name().to_owned(), scope, kind)
            .await
    }

    /// Replaces a module's configuration (validated against its schema).
    pub async fn configure(
        &self,
        module: &str,
        target: &Target,
        config: Value,
    ) -> Result<Applied, HostError> {
        self.catch_up().await;
        let scope = self.scope_of(target)?;
        self.change(module.to_owned(), scope, ChangeKind::Configure(config))
            .await
    }

    /// Recovery: clears one plugin's policy, or all policy (leaving safe mode).
    /// Resetting one id that is neither installed nor named by the policy is
    /// [`HostError::NotInstalled`], and the policy is not written.
    pub async fn reset(&self, id: Option<&str>) -> Result<u64, HostError> {
        let _changes = self.shared.changes.lock().await;
        self.catch_up_locked().await;
        let module = id.map(module_name);
        if let (Some(id), Some(module)) = (id, module.as_deref()) {
            let loaded = lock(&self.shared.bundles).contains_key(id);
            let named = lock(&self.shared.policy).document().is_some_and(|d| {
                d.user.contains_key(module) || d.projects.values().any(|p| p.contains_key(module))
            });
            if !loaded && !named && !self.shared.store.contains(id)? {
                return Err(HostError::NotInstalled { id: id.to_owned() });
            }
        }
        let revision = lock(&self.shared.policy).reset(module.as_deref())?;
        self.reconcile_locked().await;
        lock(&self.shared.policy).confirm(revision)?;
        Ok(revision)
    }

    /// Invokes a command in the user realm or a project realm, as a frontend would. The first
    /// call to a bundle command starts its runtime (spawn, `initialize`, confirmation).
    ///
    /// A plugin's own JSON-RPC error is [`ErrorKind::CommandFailed`] with its code and data in
    /// [`HostError::plugin_error`]; the runtime's failures have their own kinds
    /// (`handshake_timeout`, `process_exited`, `crash_loop`, `deadline_exceeded`, ...).
    ///
    /// # Cancel safety
    ///
    /// Not cancel safe, by the protocol's design: dropping this future before it completes is
    /// the caller cancelling the call, and a plugin runtime has no per-request cancellation, so
    /// the host stops the plugin's process. Every other call in flight to that process fails
    /// with `cancelled`; the next call starts the process again. To stop waiting without that,
    /// give the call a deadline instead of dropping it ([`PluginHost::invoke_with`] with
    /// [`InvokeOptions::deadline`], or [`HostOptions::invoke_deadline`] for every call): it
    /// then ends with `deadline_exceeded` (the process is still stopped, as the protocol
    /// requires for an abandoned call). To let a call finish while no longer waiting for it,
    /// run it on a task (`tokio::spawn` with a clone of the host) and drop the task's handle,
    /// not the future.
    ///
    /// # Panics
    ///
    /// When polled outside a tokio runtime and [`HostOptions::runtime`] is `None`.
    pub async fn invoke(
        &self,
        target: &Target,
        name: &str,
        args: Value,
    ) -> Result<Value, HostError> {
        self.invoke_with(target, name, args, &InvokeOptions::default())
            .await
    }

    /// [`PluginHost::invoke`] with per-call options.
    ///
    /// # Cancel safety
    ///
    /// As [`PluginHost::invoke`]: dropping the future stops the plugin's process and fails the
    /// other calls in flight to it; a deadline ends the call with `deadline_exceeded` instead.
    ///
    /// # Panics
    ///
    /// When polled outside a tokio runtime and [`HostOptions::runtime`] is `None`.
    pub async fn invoke_with(
        &self,
        target: &Target,
        name: &str,
        args: Value,
        options: &InvokeOptions,
    ) -> Result<Value, HostError> {
        // A project realm is built by the kernel on first use from the desired state that
        // `realm` registered for it.
        let realm = self.realm(target)?;
        let call = self.on_runtime(self.shared.kernel.call(&realm, name, args));
        let outcome = match options.deadline {
            None => call.await,
            Some(limit) => match self.on_runtime(tokio::time::timeout(limit, call)).await {
                Ok(outcome) => outcome,
                Err(_) => {
                    return Err(HostError::command(
                        ErrorKind::DeadlineExceeded,
                        format!(
                            "`{name}`: no answer within the call's {limit:?} deadline; the call was cancelled (its process stopped) and the next call starts it again"
                        ),
                    ));
                }
            },
        };
        match outcome {
            Ok(value) => Ok(value),
            Err(KernelError::UnknownCommand { .. }) => Err(self
                .withheld_command(name, &realm)
                .unwrap_or_else(|| self.explain_unknown(name, &realm))),
            Err(error @ KernelError::FallbackBlocked { .. }) => Err(self
                .withheld_command(name, &realm)
                .unwrap_or_else(|| error.into())),
            Err(error) => Err(error.into()),
        }
    }

    /// `disabled` when `name` is a runtime command policy disables in `realm` for the bundle
    /// that declares it (and that bundle is otherwise runnable there).
    fn withheld_command(&self, name: &str, realm: &Realm) -> Option<HostError> {
        let scope = match realm {
            Realm::Global => Scope::User,
            Realm::Project(key) => Scope::Project(key.as_str().to_owned()),
        };
        let bundles = lock(&self.shared.bundles).clone();
        let component = format!("runtime-command:{name}");
        bundles.values().find_map(|module| {
            let bundle = module.bundle();
            let declares = bundle
                .manifest
                .codetwo
                .commands
                .iter()
                .any(|c| c.id == name);
            let scope = match &scope {
                Scope::Project(_) if !bundle.runtime_in(realm) => Scope::User,
                other => other.clone(),
            };
            // An untrusted bundle's commands are explained as such, not as a component choice.
            let withheld = declares
                && self.shared.is_trusted(bundle)
                && self.shared.withheld(bundle, &scope).contains(&component);
            withheld.then(|| {
                crate::components::disabled_error(
                    &bundle.record.id,
                    &component,
                    &realm_text(&match scope {
                        Scope::User => Realm::Global,
                        Scope::Project(key) => Realm::project(key),
                    }),
                )
            })
        })
    }

    /// Why a command is not there: a declared but untrusted, disabled, pending or failed bundle
    /// says so instead of "unknown command".
    fn explain_unknown(&self, name: &str, realm: &Realm) -> HostError {
        let bundles = lock(&self.shared.bundles).clone();
        let declaring = bundles.values().find(|m| {
            m.bundle()
                .manifest
                .codetwo
                .commands
                .iter()
                .any(|c| c.id == name)
        });
        let Some(module) = declaring else {
            return HostError::command(
                ErrorKind::UnknownCommand,
                format!("unknown command `{name}`"),
            )
            .advise(Advice::ListCommands);
        };
        let id = &module.bundle().record.id;
        if let Some(found) = self.shared.blocked().get(module.bundle().module_name()) {
            let message = format!("`{name}` is declared by {id}, which is blocked by {found}");
            return HostError::command(ErrorKind::Denied, message).advise(Advice::ListDenied);
        }
        if !self.shared.is_trusted(module.bundle()) {
            return HostError::command(
                ErrorKind::NotTrusted,
                format!(
                    "`{name}` is declared by {id}, which is not trusted, so its process never starts"
                ),
            )
            .advise(Advice::Trust(id));
        }
        let state = self
            .shared
            .kernel
            .catalog(realm)
            .into_iter()
            .find(|e| e.name == module.bundle().module_name())
            .map(|e| e.state);
        match state {
            Some(ModuleState::Pending { missing }) => HostError::command(
                ErrorKind::Pending,
                format!(
                    "`{name}` is declared by {id}, which waits for the services it injects: {}",
                    missing.join(", ")
                ),
            ),
            Some(ModuleState::Failed { reason }) => HostError::command(
                ErrorKind::ActivationFailed,
                format!("`{name}` is declared by {id}, which failed: {reason}"),
            ),
            _ => HostError::command(
                ErrorKind::Disabled,
                format!("`{name}` is declared by {id}, which is disabled here"),
            )
            .advise(Advice::Enable(id)),
        }
    }

    /// The pid of a bundle's live process in a realm (for tests and diagnostics).
    pub fn runtime_pid(&self, id: &str, target: &Target) -> Result<Option<u32>, HostError> {
        let realm = self.realm(target)?;
        Ok(self.bundle(id)?.instance(&realm).and_then(|i| i.pid()))
    }

    /// Ends the developer mode it holds, then unloads everything: every command disappears and
    /// every plugin process group is stopped, awaited. The host is unusable afterwards.
    pub async fn shutdown(&self) {
        self.end_held_development().await;
        let _changes = self.shared.changes.lock().await;
        // No refresh may bring anything back up; the watcher ends during the shutdown, joined last.
        let mut watch = lock(&self.shared.watch).take();
        watch.as_mut().map(c2_policy::StoreWatch::stop);
        self.on_runtime(self.shared.kernel.shutdown()).await;
        // The supervisor's pre-started shim is this process's too: a shut-down host leaves no
        // child (another host in this process just starts its next runtime cold).
        c2_supervisor::release_warm_shim();
    }
}
